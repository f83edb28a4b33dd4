#!/usr/bin/env bash
# Prints the path of a Chromium for the console's browser tests
# (pkg/console), installing Debian's package when none is found.
#
#   scripts/chromium.sh
#
# $CHROMIUM, when set, must name the program; otherwise chromium (or
# chromium-browser) on the PATH. When neither is there and this runs as
# root, `apt-get install -y chromium` installs it (after an apt-get update);
# otherwise it says how to install it and exits 1, so that make test fails
# rather than passes without the browser tests.
set -euo pipefail

if [[ -n "${CHROMIUM:-}" ]]; then
  if command -v "$CHROMIUM"; then
    exit 0
  fi
  echo "chromium.sh: CHROMIUM=$CHROMIUM names no program" >&2
  exit 1
fi

find_chromium() {
  command -v chromium || command -v chromium-browser
}

if find_chromium; then
  exit 0
fi
if [[ "$(id -u)" != 0 ]]; then
  echo "chromium.sh: Chromium is not installed, and installing it takes root:" >&2
  echo "  sudo apt-get install -y chromium    (Debian's package; or set CHROMIUM to a Chromium binary)" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null; then
  echo "chromium.sh: Chromium is not installed and this machine has no apt-get: install Chromium, or set CHROMIUM to one" >&2
  exit 1
fi
echo "chromium.sh: installing Debian's chromium for the console's browser tests" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
apt-get install -y -qq chromium >&2
find_chromium
