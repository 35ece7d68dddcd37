#!/usr/bin/env bash
# The third-party profilers of issue 41 against their fixture servers (tests/fixtures/profile/), each server
# pinned to CPU 0 and loaded by wrk on CPU 1, loopback only:
#   go      net/http/pprof's /debug/pprof/profile?seconds=2 (read with go tool pprof -traces)
#   python  py-spy record --format raw
#   jvm     async-profiler's asprof -e cpu, -e alloc and -e lock, -o collapsed
# and checks that each profile names the fixture's functions (parseRequest, renderResponse, slowPath, and their
# shared callee spin; renderResponse's allocation in alloc; lockedSection in lock). Exits 1 when one is missing,
# 2 when a tool cannot be had. Installs what is missing through .ci/install-profilers (py-spy from PyPI,
# async-profiler through Maven) and wrk from Debian when root. Takes about a minute once installed; kills every
# process it started on exit.
#
#   bash bench/profile-tools.sh [SECONDS_OF_LOAD]     # default 6 (each profile is 2 s inside it)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
fixtures="$root/tests/fixtures/profile"
load_secs=${1:-6}

work=$(mktemp -d)
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do
    for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$p" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- tools -------------------------------------------------------------------------------------------------
if ! command -v wrk >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk; } >/dev/null
  else
    echo "profile-tools: wrk missing and not root (apt-get install -y wrk)" >&2; exit 2
  fi
fi
# shellcheck source=../.ci/install-profilers
. "$root/.ci/install-profilers"
for v in LOADGATE_PYSPY LOADGATE_ASPROF LOADGATE_GO; do
  [ -n "${!v}" ] || { echo "profile-tools: $v could not be installed" >&2; exit 2; }
done
cpus=$(nproc)
[ "$cpus" -ge 2 ] || { echo "profile-tools: needs 2 CPUs (server on 0, wrk on 1), this machine has $cpus" >&2; exit 2; }

echo "building the fixtures in $work"
(cd "$fixtures/go" && GOFLAGS=-mod=mod CGO_ENABLED=0 "$LOADGATE_GO" build -o "$work/go-server" .)
javac -d "$work/jvm" "$fixtures/jvm/Server.java"

# --- helpers -----------------------------------------------------------------------------------------------
# start NAME CMD...: the command on CPU 0, its pid in $pid, its URL in $url once it printed `listening on`.
start() {
  local name=$1
  shift
  taskset -c 0 "$@" >"$work/$name.out" 2>"$work/$name.err" &
  pid=$!
  pids+=("$pid")
  for _ in $(seq 100); do
    if grep -q '^listening on http://' "$work/$name.out"; then
      url=$(sed -n 's/^listening on //p' "$work/$name.out" | head -n 1)
      curl -fsS -o /dev/null "$url/ready" && return 0
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
  echo "profile-tools: $name did not start:" >&2
  cat "$work/$name.err" >&2
  exit 1
}

# load NAME [CONNECTIONS]: wrk on CPU 1 against $url for $load_secs s, in the background.
load() {
  taskset -c 1 wrk -t1 -c"${2:-8}" -d"${load_secs}s" "$url/" >"$work/$1.wrk" 2>&1 &
  pids+=("$!")
  wrk_pid=$!
  sleep 1
}

finish_load() {
  wait "$wrk_pid" || true
  grep 'Requests/sec' "$work/$1.wrk" | sed "s/^/  $1 wrk: /" || true
}

failures=0
# expect LABEL FILE NAME...: each NAME appears as a frame in FILE (folded stacks or pprof traces).
expect() {
  local label=$1 file=$2 name n total
  shift 2
  for name in "$@"; do
    n=$(grep -c -- "$name" "$file" || true)
    if [ "$n" -gt 0 ]; then
      # Folded and raw files end each line with its count (pprof's traces do not: stacks only).
      total=""
      case $file in
        *.collapsed | *.raw) total=", $(grep -- "$name" "$file" | awk '{s += $NF} END {print s + 0}') counted" ;;
      esac
      printf '  ok    %-16s %-30s in %3s stacks%s\n' "$label" "$name" "$n" "$total"
    else
      printf '  MISS  %-16s %-30s (file: %s, %s lines)\n' "$label" "$name" "$file" "$(wc -l <"$file")"
      failures=$((failures + 1))
    fi
  done
}

# --- go: net/http/pprof --------------------------------------------------------------------------------------
echo "go: net/http/pprof"
start go "$work/go-server" -listen 127.0.0.1:0 -work 50us -slow 15us
load go
curl -fsS -o "$work/go-cpu.pprof.gz" "$url/debug/pprof/profile?seconds=2"
"$LOADGATE_GO" tool pprof -traces "$work/go-cpu.pprof.gz" >"$work/go-cpu.traces" 2>/dev/null
finish_load go
expect go-cpu "$work/go-cpu.traces" main.parseRequest main.renderResponse main.slowPath main.spin
kill "$pid"

# --- python: py-spy ------------------------------------------------------------------------------------------
# Python's own request handling costs a few hundred microseconds, so the named work is larger here; and two
# connections, not eight: with eight threads taking turns at the GIL, py-spy gave parseRequest a tenth of its
# CPU share (README.md), close to missing it in a short profile.
echo "python: py-spy $("$LOADGATE_PYSPY" --version | cut -d' ' -f2)"
start python python3 "$fixtures/python/server.py" -listen 127.0.0.1:0 -work 500us -slow 300us
load python 2
"$LOADGATE_PYSPY" record --format raw -d 3 -r 200 -o "$work/py-spy.raw" -p "$pid" >"$work/py-spy.log" 2>&1 ||
  { cat "$work/py-spy.log" >&2; failures=$((failures + 1)); touch "$work/py-spy.raw"; }
finish_load python
expect py-spy "$work/py-spy.raw" 'parseRequest (' 'renderResponse (' 'slowPath (' 'spin ('
kill "$pid"

# --- jvm: async-profiler -------------------------------------------------------------------------------------
echo "jvm: $("$LOADGATE_ASPROF" --version | head -n 1)"
SERVER_CLASSES="$work/jvm" start jvm "$fixtures/jvm/run-server.sh" -listen 127.0.0.1:0 -work 50us -slow 15us -lock 10us
load_secs=$((load_secs + 4)) load jvm
for ev in cpu alloc lock; do
  "$LOADGATE_ASPROF" -d 2 -e "$ev" -o collapsed -f "$work/ap-$ev.collapsed" "$pid" >"$work/ap-$ev.log" 2>&1 ||
    { cat "$work/ap-$ev.log" >&2; failures=$((failures + 1)); touch "$work/ap-$ev.collapsed"; }
done
finish_load jvm
expect asprof-cpu "$work/ap-cpu.collapsed" 'Server.parseRequest;' 'Server.renderResponse;' 'Server.slowPath;' 'Server.spin'
expect asprof-alloc "$work/ap-alloc.collapsed" 'Server.renderResponse;byte\[\]'
expect asprof-lock "$work/ap-lock.collapsed" 'Server.lockedSection;'
kill "$pid"

if [ "$failures" -gt 0 ]; then
  echo "profile-tools: $failures expected frame(s) missing" >&2
  exit 1
fi
echo "profile-tools: every profiler named every fixture function"
