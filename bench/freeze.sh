#!/usr/bin/env bash
# 1 s SIGSTOP of nginx 3 s into a 10 s run at 2,000/s over 50 connections: HTTPS/1.1, h2 over TLS, h2c, plain.
# Run under the bench lock: flock /tmp/loadgate-bench.lock bench/freeze.sh (nginx on ports 18490-18492, CPU 0; loadgate on CPU 1).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
LG=${LOADGATE:-$HERE/../target/release/loadgate}
. "$HERE/nginx.sh"
nginx_start 0 18490 18491 18492
NPID=$(cat $work/nginx.pid)
WORKER=$(pgrep -P "$NPID" | head -1)
for c in "plain|http://127.0.0.1:18490/|" "https|https://127.0.0.1:18491/|-k" "h2|https://127.0.0.1:18491/|-k --http2" "h2c|http://127.0.0.1:18492/|--http2"; do
  IFS='|' read -r name url flags <<<"$c"
  before=$(served)
  (sleep 3; kill -STOP "$WORKER"; sleep 1; kill -CONT "$WORKER") &
  taskset -c 1 $LG -q run --url "$url" $flags -t 1 -c 50 -d 10s -R 2000 --out $work/out-$name --json > $work/$name.json 2>$work/$name.err
  wait
  after=$(served)
  python3 - "$work/$name.json" "$name" "$((after - before - 1))" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["scenarios"][0]
l = r["latency"]["percentiles"]; mx = r["latency"]["max_us"]
print(f"{sys.argv[2]}: completed {r['requests']['completed']} (server {sys.argv[3]}), errors {sum(v for v in r['errors'].values() if isinstance(v, int))}, "
      f"p50 {l['p50']/1000:.2f} ms, p99 {l['p99']/1000:.1f} ms, p99.9 {l['p99.9']/1000:.1f} ms, max {mx/1000:.1f} ms, http2 {r.get('http2', {}).get('connections', '-')}")
PY
done

