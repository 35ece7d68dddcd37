#!/usr/bin/env bash
# An engine change against its own before: two builds of the engine's `drive` example (the engine alone, wrk-like:
# `cargo build --release -p loadgate-engine --example drive`), in alternating pairs per load mode, against the one
# nginx of bench/nginx.sh. For a change that must not touch the hot path (a move of code between modules).
#
#   BEFORE=/tmp/drive-before AFTER=target/release/examples/drive PAIRS=10 bench/engine-ab.sh
#   METHOD=cpu DUR=3 PAIRS=10 BEFORE=... AFTER=... bench/engine-ab.sh closed open
#
# Modes (default all four): closed (64 connections), pipeline (64 connections x 16, batches read whole), open
# (50 connections at RATE/s, default 1,000 under callgrind and 20,000 with METHOD=cpu), h2 (h2c, 16 connections x
# 16 streams). nginx runs pinned to NGINX_CPU (0), the driver to GEN_CPU (1); requests are counted by nginx.
#
# METHOD=callgrind (the default) counts the instructions the worker thread executed per request under
# `valgrind --tool=callgrind --separate-threads=yes` (REQUESTS requests per run, default 4,000; OPEN_REQUESTS,
# default 2,000, for open): a count that other users of a shared machine cannot move, unlike CPU time (an open
# load's count still moves with its wake-ups, which depend on time). METHOD=cpu takes the driver's rusage
# (user + system) per request over DUR seconds (default 3).
# Each pair runs both builds back to back, the order swapped every other pair. Prints every pair, then per mode the
# median of the pairs' ratios (after / before), their Hodges-Lehmann estimate and its 95% confidence interval (the
# Walsh averages between the exact Wilcoxon signed-rank critical ranks).
set -euo pipefail

NGINX_CPU=${NGINX_CPU:-0}
GEN_CPU=${GEN_CPU:-1}
PAIRS=${PAIRS:-10}
METHOD=${METHOD:-callgrind}
DUR=${DUR:-3}
PORT=${PORT:-18180}
H2C_PORT=${H2C_PORT:-$((PORT + 2))}
HERE=$(cd "$(dirname "$0")" && pwd)
MODES=${*:-closed pipeline open h2}
: "${BEFORE:?BEFORE=path of the drive example built before the change}"
: "${AFTER:?AFTER=path of the drive example built after it}"
for tool in nginx curl taskset /usr/bin/time python3; do
  command -v "$tool" >/dev/null || { echo "missing $tool" >&2; exit 2; }
done
[ "$METHOD" != callgrind ] || command -v valgrind >/dev/null || { echo "missing valgrind" >&2; exit 2; }
for b in "$BEFORE" "$AFTER"; do [ -x "$b" ] || { echo "$b is not an executable" >&2; exit 2; }; done

. "$HERE/nginx.sh"
nginx_start "$NGINX_CPU" "$PORT" "" "$H2C_PORT"

args() {
  local mode=$1 rate
  if [ "$METHOD" = callgrind ]; then rate=${RATE:-1000}; else rate=${RATE:-20000}; fi
  case $mode in
    closed) echo "http://127.0.0.1:$PORT/ -c 64" ;;
    pipeline) echo "http://127.0.0.1:$PORT/ -c 64 --pipeline 16 --batch-reads" ;;
    open) echo "http://127.0.0.1:$PORT/ -c 50 -R $rate" ;;
    h2) echo "http://127.0.0.1:$H2C_PORT/ --http2 -c 16 --streams 16" ;;
    *) echo "unknown mode $mode" >&2; exit 2 ;;
  esac
}

# measure BINARY MODE: prints "cost requests": instructions (callgrind) or CPU microseconds (cpu) per request.
measure() {
  local bin=$1 mode=$2 before after n
  before=$(served)
  if [ "$METHOD" = callgrind ]; then
    n=${REQUESTS:-4000}
    [ "$mode" = open ] && n=${OPEN_REQUESTS:-2000}
    rm -f "$work"/cg.out*
    # shellcheck disable=SC2046
    taskset -c "$GEN_CPU" valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$work/cg.out" \
      "$bin" $(args "$mode") -n "$n" >"$work/out" 2>"$work/err"
    after=$(served)
    # The worker is the process's second thread (the first runs the phase and merges the seconds).
    local ir
    ir=$(awk '/^(summary|totals):/ {print $2; exit}' "$work"/cg.out-02 2>/dev/null || true)
    [ -n "$ir" ] || { echo "no callgrind output for the worker thread" >&2; cat "$work/err" >&2; exit 2; }
    echo "$ir $((after - before - 1))" | awk '{printf "%.1f %d\n", $1 / $2, $2}'
  else
    # shellcheck disable=SC2046
    /usr/bin/time -f "%U %S" -o "$work/time" taskset -c "$GEN_CPU" "$bin" $(args "$mode") -d "${DUR}s" >"$work/out"
    after=$(served)
    read -r u s <"$work/time"
    echo "$u $s $((after - before - 1))" | awk '{printf "%.3f %d\n", ($1 + $2) * 1e6 / $3, $3}'
  fi
}

unit=$([ "$METHOD" = callgrind ] && echo "instructions/req" || echo "us CPU/req")
echo "nginx on CPU $NGINX_CPU, drive on CPU $GEN_CPU, $PAIRS pairs per mode, $METHOD ($unit); requests counted by nginx"
echo
echo "| mode | pair | before $unit | after $unit | ratio |"
echo "| --- | --- | --- | --- | --- |"
: >"$work/ratios"
for mode in $MODES; do
  for i in $(seq "$PAIRS"); do
    if [ $((i % 2)) = 1 ]; then
      b=$(measure "$BEFORE" "$mode"); a=$(measure "$AFTER" "$mode")
    else
      a=$(measure "$AFTER" "$mode"); b=$(measure "$BEFORE" "$mode")
    fi
    r=$(awk -v a="${a% *}" -v b="${b% *}" 'BEGIN {printf "%.4f", a / b}')
    echo "| $mode | $i | ${b% *} | ${a% *} | $r |"
    echo "$mode $r" >>"$work/ratios"
  done
done

echo
echo "| mode | pairs | median ratio | Hodges-Lehmann | 95% interval |"
echo "| --- | --- | --- | --- | --- |"
python3 - "$work/ratios" <<'PY'
import sys
from collections import defaultdict

by = defaultdict(list)
for line in open(sys.argv[1]):
    mode, r = line.split()
    by[mode].append(float(r))


def wilcoxon_critical(n, alpha=0.05):
    """The largest c with P(W+ <= c) <= alpha / 2 under the null (exact, from the signed-rank distribution)."""
    counts = [1]
    for k in range(1, n + 1):
        nxt = [0] * (len(counts) + k)
        for s, c in enumerate(counts):
            nxt[s] += c
            nxt[s + k] += c
        counts = nxt
    total, acc, c = 2 ** n, 0, -1
    for s, k in enumerate(counts):
        acc += k
        if acc / total > alpha / 2:
            break
        c = s
    return c


for mode, rs in by.items():
    n = len(rs)
    walsh = sorted((rs[i] + rs[j]) / 2 for i in range(n) for j in range(i, n))
    m = len(walsh)
    hl = (walsh[(m - 1) // 2] + walsh[m // 2]) / 2
    c = wilcoxon_critical(n)
    interval = f"[{walsh[c]:.4f}, {walsh[m - c - 1]:.4f}]" if c >= 0 else "(too few pairs)"
    srt = sorted(rs)
    med = (srt[(n - 1) // 2] + srt[n // 2]) / 2
    print(f"| {mode} | {n} | {med:.4f} | {hl:.4f} | {interval} |")
PY
