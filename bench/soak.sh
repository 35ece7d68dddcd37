#!/usr/bin/env bash
# A soak against nginx (issue 33): CONNS keep-alive connections at a steady open rate for DUR, loadgate's memory
# (VmRSS, VmHWM) and open file descriptors sampled from /proc every SAMPLE seconds, the final report's counts
# against the requests nginx counted. With KILL_AT (seconds), a second run of the same load against a second
# nginx goes at the same time and is killed with SIGKILL at KILL_AT: its checkpoint (results.partial.json,
# written every CHECKPOINT) is rendered with `loadgate report` and must say it is incomplete.
#
#   OUT=/tmp/soak bench/soak.sh                                 # 16,384 connections, 5,000/s, 30 minutes
#   DUR=120 SAMPLE=10 CONNS=1000 KILL_AT=60 OUT=/tmp/s bench/soak.sh   # a short rehearsal
#
# nginx runs one worker pinned to NGINX_CPU (default 0), loadgate pinned to GEN_CPU (default 1) with taskset.
# With PROM=1 (the default when `prometheus` is on the PATH) a Prometheus with the remote-write receiver and native
# histograms (its data in $OUT/prom) takes the soak run's live series (`--output prometheus=...`); at the end the
# series are queried back and set beside results.json: the request count, the p99 from the native histogram, and
# the per-minute request rate Prometheus saw over the run.
# Writes $OUT/samples.tsv (t_s, rss_kib, hwm_kib, fds, served), $OUT/summary.txt and the runs' directories.
set -euo pipefail

NGINX_CPU=${NGINX_CPU:-0}
GEN_CPU=${GEN_CPU:-1}
CONNS=${CONNS:-16384}
RATE=${RATE:-5000}
DUR=${DUR:-1800}
SAMPLE=${SAMPLE:-60}
KILL_AT=${KILL_AT:-}
CHECKPOINT=${CHECKPOINT:-60s}
PORT=${PORT:-18090}
KILL_PORT=${KILL_PORT:-18095}
PROM_PORT=${PROM_PORT:-18099}
if command -v prometheus >/dev/null; then PROM=${PROM:-1}; else PROM=${PROM:-0}; fi
OUT=${OUT:?set OUT to a directory for the samples and the runs}
HERE=$(cd "$(dirname "$0")" && pwd)
LOADGATE=${LOADGATE:-${CARGO_TARGET_DIR:-$HERE/../target}/release/loadgate}

for tool in nginx curl taskset jq; do
  command -v "$tool" >/dev/null || { echo "missing $tool" >&2; exit 2; }
done
[ -x "$LOADGATE" ] || { echo "missing $LOADGATE (cargo build --release -p loadgate)" >&2; exit 2; }
ulimit -n "$(ulimit -Hn)"
mkdir -p "$OUT"
rm -rf "$OUT/run" "$OUT/killed" "$OUT/prom"

output=()
prom_pid=""
if [ "$PROM" = 1 ]; then
  mkdir -p "$OUT/prom"
  printf 'global:\n  scrape_interval: 15s\nscrape_configs: []\n' >"$OUT/prom/prometheus.yml"
  prometheus --config.file="$OUT/prom/prometheus.yml" --storage.tsdb.path="$OUT/prom/data" \
    --web.listen-address="127.0.0.1:$PROM_PORT" --web.enable-remote-write-receiver \
    --enable-feature=native-histograms >"$OUT/prom/prometheus.log" 2>&1 &
  prom_pid=$!
  for _ in $(seq 120); do curl -fs "http://127.0.0.1:$PROM_PORT/-/ready" >/dev/null && break; sleep 0.5; done
  output=(--output "prometheus=http://127.0.0.1:$PROM_PORT/api/v1/write")
fi
# An instant query's first value, or "none".
prom_query() {
  curl -fsG "http://127.0.0.1:$PROM_PORT/api/v1/query" --data-urlencode "query=$1" ${2:+--data-urlencode "time=$2"} |
    jq -r '.data.result[0].value[1] // "none"'
}

# The run killed at KILL_AT, in a subshell with an nginx of its own (nginx.sh keeps one per shell).
killed_run() {
  . "$HERE/nginx.sh"
  nginx_start "$NGINX_CPU" "$KILL_PORT"
  local pid t=0 before
  before=$(served)
  taskset -c "$GEN_CPU" "$LOADGATE" -q run --out "$OUT/killed" --checkpoint "$CHECKPOINT" \
    --url "http://127.0.0.1:$KILL_PORT/" -t 1 -c "$CONNS" -R "$RATE" -d "${DUR}s" >"$OUT/killed.log" 2>&1 &
  pid=$!
  sleep "$KILL_AT"
  kill -KILL "$pid"
  wait "$pid" 2>/dev/null || true
  echo "killed run: SIGKILL at ${KILL_AT}s; nginx served $(( $(served) - before - 1 ))" >"$OUT/killed.txt"
  local partial
  partial=$(ls "$OUT"/killed/*/results.partial.json 2>/dev/null | head -1)
  if [ -z "$partial" ]; then
    echo "no checkpoint written" >>"$OUT/killed.txt"
    return
  fi
  ls -l --time-style=+%T "$partial" >>"$OUT/killed.txt"
  "$LOADGATE" report "$partial" --out "$OUT/killed-report" >>"$OUT/killed.txt" 2>&1 || echo "report exit $?" >>"$OUT/killed.txt"
  jq -r '"checkpoint: \(.checkpoint) outcome: \(.outcome.status) \(.outcome.reasons[0])",
    (.scenarios[] | "\(.name): sent \(.requests.sent) completed \(.requests.completed) errors \(.errors) p50 \(.latency.percentiles.p50) us p99 \(.latency.percentiles.p99) us timeline points \(.timeline | length) aborted \(.aborted)")' \
    "$partial" >>"$OUT/killed.txt"
  grep -i -m3 'incomplete' "$OUT/killed-report/report.md" >>"$OUT/killed.txt" || echo "report.md does not say incomplete" >>"$OUT/killed.txt"
}

if [ -n "$KILL_AT" ]; then
  killed_run &
  killed=$!
fi

. "$HERE/nginx.sh"
# nginx.sh's trap, and Prometheus stopped with it.
trap 'nginx_cleanup; [ -z "$prom_pid" ] || kill "$prom_pid" 2>/dev/null || true' EXIT
nginx_start "$NGINX_CPU" "$PORT"
before=$(served)
start=$(date +%s)
taskset -c "$GEN_CPU" "$LOADGATE" -q run --out "$OUT/run" --checkpoint "$CHECKPOINT" "${output[@]}" \
  --url "http://127.0.0.1:$PORT/" -t 1 -c "$CONNS" -R "$RATE" -d "${DUR}s" >"$OUT/run.log" 2>&1 &
pid=$!
printf 't_s\trss_kib\thwm_kib\tfds\tserved\n' >"$OUT/samples.tsv"
while kill -0 "$pid" 2>/dev/null; do
  rss=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
  hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
  fds=$(ls "/proc/$pid/fd" 2>/dev/null | wc -l || true)
  [ -n "$rss" ] && printf '%s\t%s\t%s\t%s\t%s\n' "$(( $(date +%s) - start ))" "$rss" "$hwm" "$fds" \
    "$(( $(served) - before ))" >>"$OUT/samples.tsv"
  for _ in $(seq "$SAMPLE"); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
done
rc=0
wait "$pid" || rc=$?
after=$(served)
{
  echo "soak: $CONNS connections, $RATE/s, ${DUR}s; loadgate exit $rc; nginx served $((after - before - 1))"
  # Flat: every sample after the first minute within 5% of the first such sample.
  awk -F '\t' 'NR > 1 && $1 >= 60 { if (!base) base = $2; d = ($2 - base) / base; if (d > max) max = d; if (d < min) min = d;
      if (!f0) f0 = $4; if ($4 > fmax) fmax = $4; n++ }
    END { printf "RSS after the first minute: %d samples, %.1f%% to +%.1f%% of %d KiB; fds %d first, %d most\n", n, min * 100, max * 100, base, f0, fmax }' \
    "$OUT/samples.tsv"
  jq -r '"outcome: \(.outcome.status); checkpoint field: \(.checkpoint)",
    (.scenarios[] | "\(.name): sent \(.requests.sent) completed \(.requests.completed) incomplete \(.requests.incomplete) unsent \(.requests.unsent) errors \(.errors) achieved \(.load.achieved_rate) /s p50 \(.latency.percentiles.p50) us p99 \(.latency.percentiles.p99) us p99.9 \(.latency.percentiles["p99.9"]) us; timeline points \(.timeline | length); connections opened \(.connections.opened) peak \(.connections.peak_open)")' \
    "$OUT"/run/*/results.json
  ls "$OUT"/run/*/ | tr '\n' ' '
  echo
  if [ "$PROM" = 1 ]; then
    end=$(date +%s)
    sleep 3
    # Queried now: the final push is stamped in the second loadgate ended, after `end` (whole seconds).
    echo "Prometheus (remote write, queried back): requests $(prom_query 'sum(loadgate_requests_total)'), \
p99 $(prom_query 'histogram_quantile(0.99, sum(loadgate_latency_seconds))') s, \
p99.9 $(prom_query 'histogram_quantile(0.999, sum(loadgate_latency_seconds))') s; \
export.json: $(jq -c '[.outputs[] | {offered, sent, dropped, failed}]' "$OUT"/run/*/export.json)"
    # The request rate per minute as Prometheus saw it, after the first minute: steady load is a flat line.
    curl -fsG "http://127.0.0.1:$PROM_PORT/api/v1/query_range" \
      --data-urlencode 'query=sum(rate(loadgate_requests_total[1m]))' \
      --data-urlencode "start=$((start + 120))" --data-urlencode "end=$((end - 30))" --data-urlencode step=60 |
      jq -r '[.data.result[0].values[][1] | tonumber] | if length == 0 then "no rate samples" else
        "rate per minute from Prometheus: \(length) samples, \(min | floor) to \(max | floor) /s" end'
  fi
} >"$OUT/summary.txt" 2>&1
if [ -n "$KILL_AT" ]; then wait "$killed" || true; fi
cat "$OUT/summary.txt"
[ -z "$KILL_AT" ] || cat "$OUT/killed.txt"
