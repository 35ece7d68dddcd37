#!/usr/bin/env bash
# loadgate vs wrk/ab against nginx, as in issue 3.
#
#   bench/bench.sh                  # all cases, 3 runs each, 10 s per run
#   RUNS=1 DUR=5 bench/bench.sh closed pipeline
#   RUNS=10 LOCK=/tmp/loadgate-bench.lock bench/bench.sh pipeline   # 10 pairs, the lock held per pair
#   BASELINE=/tmp/loadgate-before RUNS=10 bench/bench.sh pipeline     # also an older build, in every pair
#   RUNS=12 bench/bench.sh check-text check-json                      # (or CASES="check-text check-json")
#
# nginx (Debian) runs one worker pinned to NGINX_CPU (default 0) and answers GET / with the 13-byte
# `Hello, World!`; every generator runs pinned to GEN_CPU (default 1) with `taskset`. loadgate and the peer
# alternate within each case. Requests are counted at the server (nginx stub_status), not taken from any
# tool's own report; the generator's CPU time and peak RSS come from its rusage (`/usr/bin/time`).
# loadgate is the real CLI (`loadgate run --url ...`; LOADGATE, default target/release/loadgate; build it with
# `cargo build --release -p loadgate`). The open-loop case compares with h2load (`apt-get install nghttp2-client`)
# and, when it is installed (`cargo install oha`), with oha.
# Prints one table row per case: medians of RUNS runs and the loadgate/peer ratios. Each run is a pair (the peer
# and loadgate back to back, the order swapped every other pair, so a drift of the machine hits both sides alike);
# with RUNS > 1 a second table gives, per case, the median of the pairs' own ratios and their spread (min-max and
# the interquartile range), so that a claim of parity is an interval, not one lucky run. CPU/req is the
# generator's rusage (user + system); CPU busy/req is everything its CPU did during the run (wall time less the CPU's
# idle time in /proc/stat), which also counts the network's interrupt work done while no process ran there. LOCK=FILE takes
# `flock FILE` around each pair only (other users of the machine can measure between pairs).
# BASELINE=BINARY runs a second loadgate build (an engine change's "before") with the same arguments in every
# pair, the three arms' order walking through all six orders, and adds its per-pair ratios (this loadgate / baseline)
# to the spread table: a change to the engine is judged against its own before on the same machine, not only
# against the peer.
# The `memory` case holds 10,000 keep-alive connections with each of loadgate and wrk and compares their resident
# sets (peak from rusage, steady from /proc mid-run); loadgate above MEM_MAX_RATIO (default 1.0) times wrk's peak is
# printed as a REGRESSION and the script exits 1 after its tables.
# The response-check cases (check-text, check-json) have loadgate on both arms: the same spec with its checks (the
# loadgate arm) and without them (the peer arm), so their CPU/req ratio is the cost of checking (the goal: at most
# 1.3x for check-json). Both specs come from `run --url ... --print-spec`, as the other cases' flags, with
# `verify: off` so that both arms send the same requests.
set -euo pipefail

NGINX_CPU=${NGINX_CPU:-0}
GEN_CPU=${GEN_CPU:-1}
RUNS=${RUNS:-3}
DUR=${DUR:-10}
PORT=${PORT:-18080}
LOCK=${LOCK:-}
BASELINE=${BASELINE:-}
HERE=$(cd "$(dirname "$0")" && pwd)
# PROFILE=profiling uses the build with debug info (`cargo build --profile profiling -p loadgate`), for perf.
PROFILE=${PROFILE:-release}
LOADGATE=${LOADGATE:-${CARGO_TARGET_DIR:-$HERE/../target}/$PROFILE/loadgate}
CASES=${*:-${CASES:-closed pipeline pipeline-each open open-oha conns10k conns16k memory opening pacing nokeepalive https https-nokeepalive https-full h2 h2c https-open check-text check-json}}
# The TLS cases (https*, h2) use nginx's `ssl` on PORT+1 (HTTP/1.1 and h2 by ALPN) with a self-signed certificate
# made by openssl; h2c uses `http2` on PORT+2 (prior knowledge). TLS_PORT and H2C_PORT override them.
TLS_PORT=${TLS_PORT:-$((PORT + 1))}
H2C_PORT=${H2C_PORT:-$((PORT + 2))}

for tool in nginx wrk ab curl taskset /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "missing $tool" >&2; exit 2; }
done
[ -x "$LOADGATE" ] || { echo "missing $LOADGATE (cargo build --profile $PROFILE -p loadgate)" >&2; exit 2; }
[ -z "$BASELINE" ] || [ -x "$BASELINE" ] || { echo "BASELINE=$BASELINE is not an executable" >&2; exit 2; }
HAVE_H2LOAD=0; command -v h2load >/dev/null && HAVE_H2LOAD=1
HAVE_OHA=0; command -v oha >/dev/null && HAVE_OHA=1

. "$HERE/nginx.sh"
nginx_start "$NGINX_CPU" "$PORT" "$TLS_PORT" "$H2C_PORT"

# idle_ticks: the generator CPU's idle and iowait time so far, in USER_HZ ticks (precise on a tickless kernel).
idle_ticks() { awk -v c="cpu$GEN_CPU" '$1 == c {print $5 + $6}' /proc/stat; }

# run NAME CMD...: prints "requests user_s sys_s rss_kib busy_s" measured at the server, from rusage and from
# /proc/stat: busy_s is the wall time of the run less the generator CPU's idle time, everything that CPU did while
# the generator ran, including the network's interrupt work the kernel charges to whichever process is on the CPU
# (or to none while the CPU is idle), which rusage counts only when it lands on the generator.
run() {
  local before after i0 i1 t0 t1
  if [ "${SETTLE:-0}" = 1 ]; then
    # Sockets in TIME_WAIT from earlier runs make every connect scan for a free port: let them drain (<= 70 s).
    for _ in $(seq 70); do [ "$(ss -Htan state time-wait | wc -l)" -lt 1000 ] && break; sleep 1; done
  fi
  before=$(served)
  i0=$(idle_ticks); t0=$(date +%s%N)
  local rc=0
  /usr/bin/time -f "%U %S %M" -o "$work/time" taskset -c "$GEN_CPU" "$@" >"$work/out" 2>&1 || rc=$?
  t1=$(date +%s%N); i1=$(idle_ticks)
  # A command that could not run at all (loadgate's exit 2: invalid input, such as a flag an older BASELINE does
  # not know; 126/127: not executable, not found) would leave a line of nonsense: stop instead.
  if { [ "$rc" = 2 ] && { [ "$1" = "$LOADGATE" ] || [ "$1" = "$BASELINE" ]; }; } || [ "$rc" = 126 ] || [ "$rc" = 127 ]; then
    echo "bench: '$*' exited with $rc:" >&2
    grep -v '^Command exited' "$work/out" | head -20 >&2
    exit 2
  fi
  after=$(served)
  sleep 1
  read -r u s rss <"$work/time"
  echo "$((after - before - 1)) $u $s $rss $(awk -v t="$((t1 - t0))" -v i="$((i1 - i0))" -v hz="$(getconf CLK_TCK)" \
    'BEGIN {b = t / 1e9 - i / hz; printf "%.3f", (b > 0 ? b : 0)}')"
}

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

# spread: numbers on stdin -> "median min max q1 q3" (quartiles by linear interpolation between ranks).
spread() {
  sort -g | awk '{a[NR]=$1}
    function q(p,  h, l) { h = (NR - 1) * p + 1; l = int(h); return l >= NR ? a[NR] : a[l] + (h - l) * (a[l+1] - a[l]) }
    END { if (NR) printf "%.3f %.3f %.3f %.3f %.3f\n", q(0.5), a[1], a[NR], q(0.25), q(0.75) }'
}

# pair PEER "PEER CMD" "LOADGATE CMD" RUN_INDEX: one run of each, under LOCK if set, in an order that changes from
# pair to pair so that no arm always runs in the same place (the place in a sequence of runs moved a result by
# several percent on a noisy VM): with two arms the peer goes first in even pairs; with BASELINE (three arms) the
# pairs walk through all six orders, each arm taking each place twice in six pairs.
pair() {
  local peer=$1 peer_cmd=$2 lg_cmd=$3 i=$4 order arm
  if [ -n "$LOCK" ]; then exec 9>"$LOCK"; flock 9; fi
  if [ -n "$BASELINE" ]; then
    local orders=("p l b" "b p l" "l b p" "b l p" "p b l" "l p b")
    order=${orders[$((i % 6))]}
  elif [ $((i % 2)) = 0 ]; then order="p l"; else order="l p"; fi
  for arm in $order; do
    case $arm in
      p) if [ "$peer" != "-" ]; then eval "run $peer_cmd" >>"$work/peer.txt"; fi ;;
      l) eval "run $lg_cmd" >>"$work/lg.txt"; cp "$work/out" "$work/last-loadgate.txt" ;;
      b) eval "run ${lg_cmd//"$LOADGATE"/"$BASELINE"}" >>"$work/base.txt" ;;
    esac
  done
  if [ -n "$LOCK" ]; then flock -u 9; exec 9>&-; fi
}

# ratio_spread NAME AGAINST A_FILE B_FILE: the per-pair ratios A/B (req/s, CPU per request) of two files of run
# lines, appended to the spread table as a row.
ratio_spread() {
  local name=$1 against=$2
  paste -d ' ' "$3" "$4" | awk '{
    lc = $1 > 0 ? ($2+$3)/$1 : 0; pc = $6 > 0 ? ($7+$8)/$6 : 0
    lb = $1 > 0 ? $5/$1 : 0; pb = $6 > 0 ? $10/$6 : 0
    printf "%.4f %.4f %.4f\n", ($6 > 0 ? $1/$6 : 0), (pc > 0 ? lc/pc : 0), (pb > 0 ? lb/pb : 0) }' >"$work/ratios.txt"
  if [ "$RUNS" -gt 1 ]; then
    read -r rm rlo rhi rq1 rq3 < <(cut -d' ' -f1 "$work/ratios.txt" | spread)
    read -r cm clo chi cq1 cq3 < <(cut -d' ' -f2 "$work/ratios.txt" | spread)
    read -r bm blo bhi bq1 bq3 < <(cut -d' ' -f3 "$work/ratios.txt" | spread)
    printf "| %s | %s | %s | %.2fx | %.2f-%.2fx | %.2f-%.2fx | %.2fx | %.2f-%.2fx | %.2f-%.2fx | %.2fx | %.2f-%.2fx | %.2f-%.2fx |\n" \
      "$name" "$against" "$RUNS" "$rm" "$rlo" "$rhi" "$rq1" "$rq3" "$cm" "$clo" "$chi" "$cq1" "$cq3" \
      "$bm" "$blo" "$bhi" "$bq1" "$bq3" >>"$work/spread.md"
  fi
  echo "    pairs against $against (req/s ratio, CPU/req ratio, CPU busy/req ratio): $(tr '\n' ';' <"$work/ratios.txt")" >&2
}

# case NAME PEER_NAME "PEER CMD" "LOADGATE CMD"
row() {
  local name=$1 peer=$2 peer_cmd=$3 lg_cmd=$4
  : >"$work/peer.txt"; : >"$work/lg.txt"; : >"$work/base.txt"
  for i in $(seq 0 $((RUNS - 1))); do
    pair "$peer" "$peer_cmd" "$lg_cmd" "$i"
  done
  stats() { # file -> "rps us_per_req rss_mib"
    local f=$1
    local rps cpu rss
    rps=$(awk -v d="$DUR" '{print $1/d}' "$f" | median)
    cpu=$(awk '{ if ($1 > 0) print ($2+$3)*1e6/$1; else print 0 }' "$f" | median)
    rss=$(awk '{print $4/1024}' "$f" | median)
    echo "$rps $cpu $rss"
  }
  read -r lr lc lm < <(stats "$work/lg.txt")
  if [ "$peer" != "-" ]; then
    read -r pr pc pm < <(stats "$work/peer.txt")
    awk -v n="$name" -v p="$peer" -v pr="$pr" -v pc="$pc" -v pm="$pm" -v lr="$lr" -v lc="$lc" -v lm="$lm" 'BEGIN {
      printf "| %s | %s | %.0f | %.2f | %.1f | %.0f | %.2f | %.1f | %.2fx | %.2fx | %.2fx |\n",
        n, p, pr, pc, pm, lr, lc, lm, lr/pr, lc/pc, lm/pm }'
    # Per pair: loadgate/peer req/s and CPU/req ratios (the raw lines stay in the log for the record).
    ratio_spread "$name" "$peer" "$work/lg.txt" "$work/peer.txt"
  else
    awk -v n="$name" -v lr="$lr" -v lc="$lc" -v lm="$lm" 'BEGIN {
      printf "| %s | - | - | - | - | %.0f | %.2f | %.1f | - | - | - |\n", n, lr, lc, lm }'
  fi
  if [ -n "$BASELINE" ]; then
    read -r br bc bm < <(stats "$work/base.txt")
    echo "    baseline $BASELINE: $br req/s, $bc us CPU/req, $bm MiB (medians)" >&2
    ratio_spread "$name" "baseline $(basename "$BASELINE")" "$work/lg.txt" "$work/base.txt"
  fi
  echo "    last loadgate run: $(head -1 "$work/last-loadgate.txt"); $(grep -m1 '^rate' "$work/last-loadgate.txt" || true)" >&2
}

# opening_run MODE RUN: one 16,384-connection run with `--connect-rate MODE`, its opening read from results.json,
# the listen queue's overflows counted by the kernel (nstat) and the requests counted by nginx.
opening_run() {
  local mode=$1 i=$2 ov0 ov1 before after
  for _ in $(seq 70); do [ "$(ss -Htan state time-wait | wc -l)" -lt 1000 ] && break; sleep 1; done
  rm -rf "$work/op"
  ov0=$(nstat -az TcpExtListenOverflows | awk '/ListenOverflows/ {print $2}')
  before=$(served)
  taskset -c "$GEN_CPU" "$LOADGATE" -q run --out "$work/op" --connect-rate "$mode" --url "$URL" -t 1 -c 16384 \
    -d "${DUR}s" >"$work/out" 2>&1 || true
  after=$(served)
  ov1=$(nstat -az TcpExtListenOverflows | awk '/ListenOverflows/ {print $2}')
  jq -r --arg mode "$mode" --arg i "$i" --arg ov "$((ov1 - ov0))" --arg rps "$(((after - before - 1) / DUR))" '
    .scenarios[0] as $s | $s.connections.opening as $o |
    "| \($mode) | \($i) | \($o.opened) | \($o.failed | add) | \($o.duration_s * 100 | round / 100) | \($o.rate_per_s | round) | \($o.slow_connects) | \($o.backoffs) | \($ov) | \($s.connections.peak_open) | \($rps) | \($s.validity.valid) |"
  ' "$work"/op/*/results.json
}

# pacing_run MODE RATE: one open-loop run at RATE requests/s (one worker, PACING_CONNS connections, default 50)
# with `--pacing MODE`:
# send lag and latency from results.json, CPU per request (rusage, requests counted by nginx) and wake-ups (the
# voluntary context switches of the process).
pacing_run() {
  local mode=$1 rate=$2 before after u s w
  rm -rf "$work/pc"
  before=$(served)
  /usr/bin/time -f "%U %S %w" -o "$work/time" taskset -c "$GEN_CPU" "$LOADGATE" -q run --out "$work/pc" \
    --pacing "$mode" --url "$URL" -t 1 -c "${PACING_CONNS:-50}" -d "${DUR}s" -R "$rate" >"$work/out" 2>&1 || true
  after=$(served)
  read -r u s w <"$work/time"
  jq -r --arg mode "$mode" --arg rate "$rate" --arg u "$u" --arg s "$s" --arg w "$w" --arg n "$((after - before - 1))" \
    --arg c "${PACING_CONNS:-50}" '
    .scenarios[0] as $r | $r.send_lag.percentiles as $l |
    "| \($mode) | \($rate) | \($c) | \($l.p50) | \($l.p90) | \($l.p99) | \($l["p99.9"]) | \($r.latency.percentiles.p50) | \($r.service_time.percentiles.p50) | \((((($u | tonumber) + ($s | tonumber)) * 1e8 / ($n | tonumber)) | round) / 100) | \($w) | \($r.workers[0].spin_seconds // 0 | . * 100 | round / 100) |"
  ' "$work"/pc/*/results.json
}

# memory_run FILE CMD...: runs CMD pinned to GEN_CPU; appends "peak_kib steady_kib" to FILE: the peak resident set
# from rusage (`/usr/bin/time`, everything the process ever held, its reports included) and the median of its
# VmRSS, sampled from /proc every half second, over the middle half of the run (the connections open, the load
# going).
memory_run() {
  local file=$1 tpid pid peak steady
  shift
  for _ in $(seq 70); do [ "$(ss -Htan state time-wait | wc -l)" -lt 1000 ] && break; sleep 1; done
  /usr/bin/time -f "%M" -o "$work/mem.time" taskset -c "$GEN_CPU" "$@" >"$work/out" 2>&1 &
  tpid=$!
  pid=""
  for _ in $(seq 100); do pid=$(pgrep -P "$tpid" | head -1) && [ -n "$pid" ] && break; sleep 0.05; done
  : >"$work/mem.samples"
  while kill -0 "$tpid" 2>/dev/null; do
    awk -v t="$(date +%s.%N)" '/^VmRSS/ {print t, $2}' "/proc/$pid/status" 2>/dev/null >>"$work/mem.samples" || true
    sleep 0.5
  done
  wait "$tpid" || true
  peak=$(tail -1 "$work/mem.time")
  steady=$(awk 'NR == 1 {t0 = $1} {t[NR] = $1; v[NR] = $2} END {
      span = t[NR] - t0; for (i = 1; i <= NR; i++) if (t[i] >= t0 + span / 4 && t[i] <= t0 + span * 3 / 4) print v[i] }' \
    "$work/mem.samples" | median)
  echo "$peak ${steady:-0}" >>"$file"
}

# memory_row NAME CONNS: loadgate and wrk each holding CONNS keep-alive connections to nginx, RUNS pairs in
# alternating order; prints the medians and the ratios, and marks a loadgate above MEM_MAX_RATIO (default 1.0)
# times wrk's peak as a regression (the script then exits 1).
memory_row() {
  local name=$1 conns=$2 i
  : >"$work/mem.wrk"; : >"$work/mem.lg"
  for i in $(seq 0 $((RUNS - 1))); do
    if [ $((i % 2)) = 0 ]; then
      memory_run "$work/mem.wrk" wrk -t1 -c"$conns" -d"${DUR}s" "$URL"
      memory_run "$work/mem.lg" $LG "$URL" -t 1 -c "$conns" -d "${DUR}s"
    else
      memory_run "$work/mem.lg" $LG "$URL" -t 1 -c "$conns" -d "${DUR}s"
      memory_run "$work/mem.wrk" wrk -t1 -c"$conns" -d"${DUR}s" "$URL"
    fi
  done
  local wp ws lp ls
  wp=$(cut -d' ' -f1 "$work/mem.wrk" | median); ws=$(cut -d' ' -f2 "$work/mem.wrk" | median)
  lp=$(cut -d' ' -f1 "$work/mem.lg" | median); ls=$(cut -d' ' -f2 "$work/mem.lg" | median)
  awk -v n="$name" -v wp="$wp" -v ws="$ws" -v lp="$lp" -v ls="$ls" -v max="${MEM_MAX_RATIO:-1.0}" 'BEGIN {
    printf "| %s | %.1f | %.1f | %.1f | %.1f | %.2fx | %.2fx | %s |\n", n, wp / 1024, ws / 1024, lp / 1024, ls / 1024,
      lp / wp, (ws > 0 ? ls / ws : 0), (lp / wp > max ? "**REGRESSION**: above " max "x wrk" : "ok") }' | tee -a "$work/memory.md"
  echo "    RSS KiB per run (peak steady): wrk $(tr '\n' ';' <"$work/mem.wrk") loadgate $(tr '\n' ';' <"$work/mem.lg")" >&2
}

# check_specs NAME PATH CHECKS: writes $work/NAME-unchecked.yaml, the spec of `run --url http://127.0.0.1:PORT/PATH
# -t 1 -c 64 -d DUR` (--print-spec), and $work/NAME-checked.yaml, the same with `check: CHECKS` on its request and
# `verify: off` (no request before the load: both arms send the same requests).
check_specs() {
  local name=$1 path=$2 checks=$3
  "$LOADGATE" run --url "http://127.0.0.1:$PORT$path" -t 1 -c 64 -d "${DUR}s" --print-spec >"$work/$name-unchecked.yaml"
  awk -v checks="$checks" '{ print } /^    request:$/ { print "      check: " checks }
    END { print "verify: off" }' "$work/$name-unchecked.yaml" >"$work/$name-checked.yaml"
  grep -q '^      check: ' "$work/$name-checked.yaml" || { echo "$name: could not write the spec" >&2; exit 2; }
}

URL="http://127.0.0.1:$PORT/"
TLS_URL="https://127.0.0.1:$TLS_PORT/"
H2C_URL="http://127.0.0.1:$H2C_PORT/"
LG="$LOADGATE -q run --out $work/lg --url"
echo "nginx on CPU $NGINX_CPU, generators on CPU $GEN_CPU, $RUNS runs of ${DUR}s, medians; requests counted by nginx"
echo
echo "| case | peer | peer req/s | peer us CPU/req | peer RSS MiB | loadgate req/s | loadgate us CPU/req | loadgate RSS MiB | req/s ratio | CPU/req ratio | RSS ratio |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for c in $CASES; do
  case $c in
    closed) row "closed, 64 connections" wrk "wrk -t1 -c64 -d${DUR}s $URL" "$LG $URL -t 1 -c 64 -d ${DUR}s" ;;
    # wrk records one latency per pipelined batch, when its last response is in: loadgate measures the same way
    # with `--pipeline-reads batch` (each batch read whole). `pipeline-each` reads each response as it arrives (the
    # default), timing each on its own, against the same wrk run.
    pipeline) row "pipeline 16, 256 connections, batches read whole" "wrk+pipeline.lua" \
      "wrk -t1 -c256 -d${DUR}s -s $HERE/pipeline.lua $URL -- 16" \
      "$LG $URL -t 1 -c 256 -d ${DUR}s --pipeline 16 --pipeline-reads batch" ;;
    pipeline-each) row "pipeline 16, 256 connections, each response read as it arrives" "wrk+pipeline.lua" \
      "wrk -t1 -c256 -d${DUR}s -s $HERE/pipeline.lua $URL -- 16" "$LG $URL -t 1 -c 256 -d ${DUR}s --pipeline 16" ;;
    open)
      # 20,000 requests/s over 50 connections; h2load's --rps is per client (50 x 400).
      if [ "$HAVE_H2LOAD" = 1 ]; then
        row "open loop 20000/s, 50 connections" "h2load --rps" "h2load --h1 -t 1 -c 50 --rps 400 -D $DUR $URL" \
          "$LG $URL -t 1 -c 50 -d ${DUR}s -R 20000"
      else
        row "open loop 20000/s, 50 connections" - - "$LG $URL -t 1 -c 50 -d ${DUR}s -R 20000"
      fi ;;
    open-oha)
      # oha's open loop (`-q`) with its coordinated-omission correction on, as loadgate always measures.
      if [ "$HAVE_OHA" = 1 ]; then
        row "open loop 20000/s, 50 connections" "oha -q --latency-correction" \
          "oha --no-tui --latency-correction -c 50 -q 20000 -z ${DUR}s $URL" "$LG $URL -t 1 -c 50 -d ${DUR}s -R 20000"
      fi ;;
    nokeepalive) row "no keep-alive, 32 concurrent" ab "ab -q -c 32 -t $DUR -n 100000000 $URL" \
      "$LG $URL -t 1 -c 32 -d ${DUR}s --no-keepalive" ;;
    conns10k) SETTLE=1 row "10,000 keep-alive connections" wrk "wrk -t1 -c10000 -d${DUR}s $URL" "$LG $URL -t 1 -c 10000 -d ${DUR}s" ;;
    conns16k) SETTLE=1 row "16,384 keep-alive connections" - - "$LG $URL -t 1 -c 16384 -d ${DUR}s" ;;
    memory)
      # Memory per connection (issue 33): the resident set of 10,000 keep-alive connections, loadgate vs wrk.
      echo
      echo "| memory | wrk peak MiB | wrk steady MiB | loadgate peak MiB | loadgate steady MiB | peak ratio | steady ratio | |"
      echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
      memory_row "10,000 keep-alive connections" 10000
      echo ;;
    https) row "HTTPS keep-alive, 64 connections" "wrk (OpenSSL)" "wrk -t1 -c64 -d${DUR}s $TLS_URL" \
      "$LG $TLS_URL -k -t 1 -c 64 -d ${DUR}s" ;;
    https-nokeepalive) row "HTTPS keep-alive off, 32 concurrent" ab "ab -q -c 32 -t $DUR -n 100000000 $TLS_URL" \
      "$LG $TLS_URL -k -t 1 -c 32 -d ${DUR}s --no-keepalive" ;;
    https-full)
      # ab makes a full handshake per connection; loadgate's default resumes sessions (as browsers do), so this
      # row runs it with `target.tls.resume: false` (a spec printed by --print-spec, the key added).
      "$LOADGATE" run --url "$TLS_URL" -k -t 1 -c 32 -d "${DUR}s" --no-keepalive --print-spec |
        sed 's/tls: { insecure: true }/tls: { insecure: true, resume: false }/' >"$work/full.yaml"
      grep -q 'resume: false' "$work/full.yaml" || { echo "https-full: could not write the spec" >&2; exit 2; }
      row "HTTPS keep-alive off, full handshakes, 32 concurrent" ab "ab -q -c 32 -t $DUR -n 100000000 $TLS_URL" \
        "$LOADGATE -q run --out $work/lg $work/full.yaml" ;;
    h2) row "HTTP/2 over TLS, 16 connections x 16 streams" "h2load -m 16" "h2load -t 1 -c 16 -m 16 -D $DUR $TLS_URL" \
      "$LG $TLS_URL -k --http2 -t 1 -c 16 --streams 16 -d ${DUR}s" ;;
    h2c) row "h2c, 16 connections x 16 streams" "h2load -m 16" "h2load -t 1 -c 16 -m 16 -D $DUR $H2C_URL" \
      "$LG $H2C_URL --http2 -t 1 -c 16 --streams 16 -d ${DUR}s" ;;
    https-open)
      # 10,000 requests/s over 50 connections (h2load: 50 x 200 per client).
      row "HTTPS open loop 10000/s, 50 connections" "h2load --h1 --rps" \
        "h2load --h1 -t 1 -c 50 --rps 200 -D $DUR $TLS_URL" "$LG $TLS_URL -k -t 1 -c 50 -d ${DUR}s -R 10000" ;;
    opening)
      # Opening 16,384 keep-alive connections: `--connect-rate auto` and `unlimited` (wrk's way) alternating.
      command -v jq >/dev/null || { echo "missing jq" >&2; exit 2; }
      echo
      echo "| connect_rate | run | opened | failed | opening s | connects/s | slow connects | backoffs | listen overflows | peak open | req/s (nginx) | valid |"
      echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
      for i in $(seq "$RUNS"); do
        for mode in ${OPENING_MODES:-auto unlimited}; do opening_run "$mode" "$i"; done
      done
      echo ;;
    pacing)
      # Send lag by pacing mode and rate per worker; the modes alternate at each rate.
      command -v jq >/dev/null || { echo "missing jq" >&2; exit 2; }
      echo
      echo "| pacing | rate/s | connections | send lag p50 us | p90 us | p99 us | p99.9 us | latency p50 us | service p50 us | us CPU/req | wake-ups | spin s |"
      echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
      for rate in ${PACING_RATES:-1000 5000 20000}; do
        for _ in $(seq "$RUNS"); do
          for mode in ${PACING_MODES:-default precise}; do pacing_run "$mode" "$rate"; done
        done
      done
      echo ;;
    check-text)
      # Two checks on nginx's 13-byte `Hello, World!`: the status, and the body streamed against the text.
      check_specs check-text / '[{ status: 200 }, { body_equals: "Hello, World!" }]'
      row "closed, 64 connections, status and body_equals on 13 bytes" "loadgate unchecked" \
        "$LOADGATE -q run --out $work/pu $work/check-text-unchecked.yaml" \
        "$LOADGATE -q run --out $work/lg $work/check-text-checked.yaml" ;;
    check-json)
      # One JSON check on the 297-byte /json: `$.token` is the last key, so the whole document is tokenized before
      # it resolves (the worst case for one selector).
      check_specs check-json /json '[{ json: $.token, equals: "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiI0NzExIn0.c2lnbmF0dXJl" }]'
      row "closed, 64 connections, one JSON check on 297 bytes" "loadgate unchecked" \
        "$LOADGATE -q run --out $work/pu $work/check-json-unchecked.yaml" \
        "$LOADGATE -q run --out $work/lg $work/check-json-checked.yaml" ;;
    *) echo "unknown case $c" >&2; exit 2 ;;
  esac
done
if [ -s "$work/memory.md" ] && grep -q REGRESSION "$work/memory.md"; then
  echo "bench: loadgate's memory per connection grew past wrk's (the memory case)" >&2
  MEMORY_REGRESSED=1
fi
if [ -s "$work/spread.md" ]; then
  echo
  echo "Per-pair ratios over $RUNS pairs: median, min-max, interquartile range"
  echo
  echo "| case | peer | pairs | req/s ratio | min-max | IQR | CPU/req ratio | min-max | IQR | CPU busy/req ratio | min-max | IQR |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
  cat "$work/spread.md"
fi
[ -z "${MEMORY_REGRESSED:-}" ] || exit 1
