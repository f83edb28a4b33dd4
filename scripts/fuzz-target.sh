#!/usr/bin/env bash
# Fuzzes one target for make fuzz (mk/fuzz.mk):
#
#   scripts/fuzz-target.sh PACKAGE TARGET FUZZTIME MINIMIZETIME [go test flags...]
#
# It exits 0 when the target ran its time without a failure, 1 when it
# failed. A failure that writes a failing input under the package's
# testdata/fuzz/TARGET/ is the target's, and stands.
#
# One failure is Go's own and is run again, once: at the end of a
# -fuzztime, Go 1.26's fuzzing coordinator can report its own deadline as
# the target's failure ("context deadline exceeded", no failing input
# written). Its deadline's context is seen done before the workers' child
# context is, and the check meant to pass over the expected stop compares
# against the child's (go.dev/issue/75804, fixed in Go 1.27); a loaded
# machine widens the window. The second run stands whatever it says, so a
# target that fails so twice fails.
set -uo pipefail

if (($# < 4)); then
  echo "usage: scripts/fuzz-target.sh PACKAGE TARGET FUZZTIME MINIMIZETIME [go test flags...]" >&2
  exit 2
fi
pkg=$1 target=$2 fuzztime=$3 minimizetime=$4
shift 4

dir=$(go list -f '{{.Dir}}' "$pkg") || exit 1
corpus="$dir/testdata/fuzz/$target"

# inputs lists the corpus's files, sorted, one a line.
inputs() { if [[ -d $corpus ]]; then (cd "$corpus" && ls -1); fi; }

run() {
  go test -run '^$' -fuzz "^$target\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimizetime" "$@" "$pkg" </dev/null 2>&1 | tee "$log"
}

log=$(mktemp)
trap 'rm -f "$log"' EXIT
before=$(inputs)
if run "$@"; then
  exit 0
fi
if [[ $(inputs) != "$before" ]] || grep -q 'Failing input written' "$log" || ! grep -qx '    context deadline exceeded' "$log"; then
  exit 1
fi
echo "fuzz: $target: Go's fuzzing coordinator reported its own deadline, with no failing input (go.dev/issue/75804); running it again"
run "$@"
