#!/usr/bin/env bash
# Symbolization of loadgate's built-in sampler against `perf record --call-graph dwarf` on the same process in the
# same seconds (issue 41): CPU-bound servers at saturation, each started by loadgate (`profile: { cpu: {} }`, a
# closed load of 32 connections) while perf samples the very same pid at the same frequency. Per server: the share
# of samples whose leaf frame has a name, and the median stack depth, ours / perf's.
#
#   nginx   Debian's nginx-light (stripped; its debug symbols come from the debian-debug archive: the script says
#           whether /usr/lib/debug has them), one process (`master_process off`), a 400-byte JSON file
#   rust    loadgate's own built-in `cpu` kind (`serve --kind cpu --work 50us --slow-path 15us`), release build
#   python  tests/fixtures/profile/python/server.py (CPython's interpreter frames)
#
#   bash bench/profile-symbols.sh [SECONDS]   # default 8 s of load per server; perf needs root or paranoid <= 1
#   LOADGATE=path/to/loadgate bash bench/profile-symbols.sh   # a release binary already built
#
# Server on CPU 0, loadgate on CPU 1 (the spec pins them); loopback only; every process started here is stopped on
# exit. perf is read with --no-inline: the sampler names no inlined frames (a function inlined into another counts
# as the other), so both depths count real frames.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
secs=${1:-8}
[ "$secs" -ge 6 ] || { echo "at least 6 seconds per server (perf records all but the first 2 and last 2)" >&2; exit 2; }
perf=$(command -v perf || ls /usr/bin/perf_* 2>/dev/null | head -n 1 || true)
[ -n "$perf" ] || { echo "perf is needed (Debian: linux-perf)" >&2; exit 2; }
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || { echo "nginx is needed (Debian: nginx-light)" >&2; exit 2; }
nginx=$(command -v nginx || echo /usr/sbin/nginx)
lg=${LOADGATE:-}
if [ -z "$lg" ]; then
  (cd "$root" && cargo build -q --release --locked -p loadgate)
  lg="$root/target/release/loadgate"
fi

work=$(mktemp -d)
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  pkill -f "$work/" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# perf's samples of PID: the share whose leaf is named and the median depth, from `perf script`.
perf_stats() {
  "$perf" script --no-inline -i "$1" -F ip,sym 2>/dev/null | python3 -c '
import sys
stacks, cur = [], []
for line in sys.stdin:
    line = line.rstrip("\n")
    if not line.strip():
        if cur: stacks.append(cur); cur = []
        continue
    parts = line.split(None, 1)
    cur.append(parts[1] if len(parts) > 1 else "[unknown]")
if cur: stacks.append(cur)
named = sum(1 for s in stacks if s and "[unknown]" not in s[0])
depths = sorted(len(s) for s in stacks)
med = depths[(len(depths) - 1) // 2] if depths else 0
print(f"{len(stacks)} {100.0 * named / max(1, len(stacks)):.1f} {med}")'
}

# measure ID LABEL TARGET_YAML MATCH [PATH]: loadgate against the target, perf beside it on the target's pid
# (found by MATCH); prints a row.
measure() {
  local name=$1 label=$2 target=$3 match=$4 path=${5:-/}
  local spec="$work/$name.yaml" out="$work/out-$name"
  cat >"$spec" <<YAML
version: 1
name: symbols-$name
hardware: { target: { cpus: "0" }, generator: { cpus: "1" } }
target:
$target
profile: { cpu: { frequency: 999 } }
scenarios:
  main:
    request: { path: "$path" }
    load: { closed: { connections: 32, duration: ${secs}s } }
YAML
  "$lg" run "$spec" --out "$out" >"$work/$name.log" 2>&1 &
  local run=$!
  pids+=("$run")
  local pid=""
  for _ in $(seq 1 100); do
    pid=$(pgrep -f "$match" | head -n 1 || true)
    [ -n "$pid" ] && break
    sleep 0.1
  done
  [ -n "$pid" ] || { echo "$name: the server did not start" >&2; cat "$work/$name.log" >&2; return 1; }
  sleep 2
  "$perf" record -q -F 999 --call-graph dwarf,32768 -p "$pid" -o "$work/$name.perf" -- sleep $((secs - 4)) \
    >/dev/null 2>&1 || true
  wait "$run" || true
  # Ours from the folded file, by the rule perf's numbers follow: a leaf is unnamed when it is `[unknown]`, a bare
  # address, or only its file (`[nginx]`); the depth leaves out the process-name root.
  local ours
  ours=$(python3 -c '
import re, sys
total = named = 0
depths = []
for line in open(sys.argv[1]):
    stack, _, count = line.rstrip("\n").rpartition(" ")
    n = int(count)
    frames = stack.split(";")
    leaf = frames[-1]
    unknown = leaf == "[unknown]" or re.fullmatch(r"0x[0-9a-f]+", leaf) or re.fullmatch(r"\[[^\s=\[\]]+\]", leaf)
    total += n
    named += 0 if unknown else n
    depths.append((len(frames) - 1, n))
depths.sort()
half, seen, med = (total + 1) // 2, 0, 0
for d, n in depths:
    seen += n
    if seen >= half:
        med = d
        break
print(total, f"{100.0 * named / max(1, total):.1f}", med)' "$out/symbols-$name/profile-main.folded")
  read -r os on od <<<"$ours"
  read -r ps pn pd <<<"$(perf_stats "$work/$name.perf")"
  printf '| %-40s | %6s / %-6s | %5s%% / %5s%% | %3s / %-3s |\n' "$label" "$os" "$ps" "$on" "$pn" "$od" "$pd"
}

echo "loadgate $("$lg" --version | head -n 1), perf $("$perf" --version 2>/dev/null), $(date -u +%Y-%m-%dT%H:%MZ), ${secs}s per server"
echo "kernel.perf_event_paranoid $(cat /proc/sys/kernel/perf_event_paranoid), running as $(id -un)"
echo
echo "| server | samples (ours / perf) | leaf named | median depth |"
echo "| --- | --- | --- | --- |"

# nginx: one process serving a static file.
port=$(free_port)
mkdir -p "$work/www" "$work/tmp"
head -c 400 /dev/zero | tr '\0' 'x' >"$work/www/index.json"
cat >"$work/nginx.conf" <<CONF
master_process off;
daemon off;
worker_processes 1;
pid $work/nginx.pid;
error_log $work/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $work/tmp; proxy_temp_path $work/tmp; fastcgi_temp_path $work/tmp;
  uwsgi_temp_path $work/tmp; scgi_temp_path $work/tmp;
  keepalive_requests 1000000000;
  server { listen 127.0.0.1:$port; root $work/www; }
}
CONF
debug="without its debug symbols"
build_id=$(readelf -n "$nginx" 2>/dev/null | awk '/Build ID/ { print $3 }' || true)
if [ -n "$build_id" ] && [ -f "/usr/lib/debug/.build-id/${build_id:0:2}/${build_id:2}.debug" ]; then
  debug="with its debug symbols (/usr/lib/debug)"
fi
measure nginx "nginx-light, stripped, $debug" \
  "  base_url: http://127.0.0.1:$port
  start: { command: [$nginx, -c, $work/nginx.conf], ready: { tcp: true } }" "$nginx -c $work/nginx.conf" /index.json

# loadgate's built-in cpu kind: Rust, release.
port=$(free_port)
measure rust "rust (serve --kind cpu, release)" \
  "  base_url: http://127.0.0.1:$port
  start: { command: [$lg, serve, --kind, cpu, --work, 50us, --slow-path, 15us, --listen, 127.0.0.1:$port], ready: { tcp: true } }" \
  "serve --kind cpu --work 50us --slow-path 15us --listen 127.0.0.1:$port"

# CPython.
port=$(free_port)
measure python "python (CPython $(python3 -c 'import platform; print(platform.python_version())'))" \
  "  base_url: http://127.0.0.1:$port
  start: { command: [python3, $root/tests/fixtures/profile/python/server.py, -listen, 127.0.0.1:$port, -work, 500us], ready: { tcp: true } }" \
  "server.py -listen 127.0.0.1:$port"
