#!/usr/bin/env bash
# 1 s SIGSTOP of nginx 3 s into a 10 s run at 2,000/s over 50 connections: HTTPS/1.1, h2 over TLS, h2c, plain.
# Run under the bench lock: flock /tmp/loadgate-bench.lock bench/freeze.sh (nginx on ports 18490-18492, CPU 0; loadgate on CPU 1).
set -u
W=$(mktemp -d); trap 'kill "$(cat "$W/nginx.pid" 2>/dev/null)" 2>/dev/null; sleep 0.5; rm -rf "$W"' EXIT
HERE=$(cd "$(dirname "$0")" && pwd)
LG=${LOADGATE:-$HERE/../target/release/loadgate}
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=localhost \
  -addext subjectAltName=IP:127.0.0.1 -keyout $W/key.pem -out $W/cert.pem 2>/dev/null
cat > $W/nginx.conf <<CONF
worker_processes 1;
pid $W/nginx.pid;
error_log $W/error.log warn;
events { worker_connections 4096; }
http {
  access_log off; keepalive_requests 1000000000; keepalive_timeout 120s;
  client_body_temp_path $W; proxy_temp_path $W; fastcgi_temp_path $W; uwsgi_temp_path $W; scgi_temp_path $W;
  server { listen 127.0.0.1:18490; location = / { return 200 "Hello, World!"; } location = /s { stub_status; } }
  server { listen 127.0.0.1:18491 ssl http2; ssl_certificate $W/cert.pem; ssl_certificate_key $W/key.pem;
           location = / { return 200 "Hello, World!"; } }
  server { listen 127.0.0.1:18492 http2; location = / { return 200 "Hello, World!"; } }
}
CONF
taskset -c 0 nginx -c $W/nginx.conf -p $W
sleep 0.5
NPID=$(cat $W/nginx.pid)
WORKER=$(pgrep -P "$NPID" | head -1)
served() { curl -sf http://127.0.0.1:18490/s | awk 'NR==3 {print $3}'; }
for c in "plain|http://127.0.0.1:18490/|" "https|https://127.0.0.1:18491/|-k" "h2|https://127.0.0.1:18491/|-k --http2" "h2c|http://127.0.0.1:18492/|--http2"; do
  IFS='|' read -r name url flags <<<"$c"
  before=$(served)
  (sleep 3; kill -STOP "$WORKER"; sleep 1; kill -CONT "$WORKER") &
  taskset -c 1 $LG -q run --url "$url" $flags -t 1 -c 50 -d 10s -R 2000 --out $W/out-$name --json > $W/$name.json 2>$W/$name.err
  wait
  after=$(served)
  python3 - "$W/$name.json" "$name" "$((after - before - 1))" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["scenarios"][0]
l = r["latency"]["percentiles"]; mx = r["latency"]["max_us"]
print(f"{sys.argv[2]}: completed {r['requests']['completed']} (server {sys.argv[3]}), errors {sum(v for v in r['errors'].values() if isinstance(v, int))}, "
      f"p50 {l['p50']/1000:.2f} ms, p99 {l['p99']/1000:.1f} ms, p99.9 {l['p99.9']/1000:.1f} ms, max {mx/1000:.1f} ms, http2 {r.get('http2', {}).get('connections', '-')}")
PY
done

