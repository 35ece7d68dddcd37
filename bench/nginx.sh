# Sourced by the bench scripts: one nginx worker pinned to a CPU that answers GET / with the 13-byte
# `Hello, World!` and GET /json with a 297-byte JSON user record (`$work/www/user.json`, one line, its `token` the
# last key: what the response-check cases of bench.sh check), and counts the requests it answered (stub_status),
# stopped and cleaned up on exit.
#
#   . "$HERE/nginx.sh"                       # makes the scratch directory $work, removed on exit
#   nginx_start CPU PORT [TLS_PORT [H2C_PORT]]
#   served                                   # requests nginx has answered so far
#
# PORT speaks HTTP/1.1; TLS_PORT `ssl http2` (HTTP/1.1 or h2 by ALPN) with a self-signed P-256 certificate for
# localhost and 127.0.0.1 made by openssl ($work/cert.pem) and a session cache; H2C_PORT `http2` alone (h2c,
# prior knowledge). Both HTTP/2 ports allow 128 concurrent streams.

work=$(mktemp -d)
nginx_cleanup() {
  if [ -f "$work/nginx.pid" ]; then kill "$(cat "$work/nginx.pid")" 2>/dev/null || true; fi
  sleep 0.5
  rm -rf "$work"
}
trap nginx_cleanup EXIT

nginx_start() {
  local cpu=$1 port=$2 tls_port=${3:-} h2c_port=${4:-} tls="" h2c=""
  NGINX_PORT=$port
  mkdir -p "$work/tmp" "$work/www"
  # No newline at the end: the body is the one line.
  printf '%s' '{"id":4711,"name":"Ada Lovelace","email":"ada@example.com","active":true,"roles":["admin","editor"],"address":{"street":"12 St James'"'"'s Square","city":"London","zip":"SW1Y 4JH"},"orders":[{"id":1,"total":12.5},{"id":2,"total":99.99}],"token":"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiI0NzExIn0.c2lnbmF0dXJl"}' >"$work/www/user.json"
  # nginx's worker (nobody, under a root master) reads it: it may pass through $work (0700 from mktemp) into www/.
  chmod 711 "$work"; chmod 755 "$work/www"; chmod 644 "$work/www/user.json"
  if [ -n "$tls_port" ]; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=localhost \
      -addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null
    tls="server {
    listen 127.0.0.1:$tls_port ssl http2 backlog=65535 reuseport;
    ssl_certificate $work/cert.pem;
    ssl_certificate_key $work/key.pem;
    ssl_session_cache shared:SSL:10m;
    http2_max_concurrent_streams 128;
    location = / { return 200 \"Hello, World!\"; }
  }"
  fi
  if [ -n "$h2c_port" ]; then
    h2c="server {
    listen 127.0.0.1:$h2c_port http2 backlog=65535 reuseport;
    http2_max_concurrent_streams 128;
    location = / { return 200 \"Hello, World!\"; }
  }"
  fi
  cat > "$work/nginx.conf" <<CONF
worker_processes 1;
pid $work/nginx.pid;
error_log $work/error.log warn;
worker_rlimit_nofile 20000;
events { worker_connections 19000; multi_accept on; }
http {
  access_log off;
  keepalive_requests 1000000000;
  keepalive_timeout 120s;
  client_body_temp_path $work/tmp; proxy_temp_path $work/tmp; fastcgi_temp_path $work/tmp;
  uwsgi_temp_path $work/tmp; scgi_temp_path $work/tmp;
  default_type text/plain;
  server {
    listen 127.0.0.1:$port backlog=65535 reuseport;
    location = / { return 200 "Hello, World!"; }
    location = /json { default_type application/json; alias $work/www/user.json; }
    location = /nginx_status { stub_status; }
  }
  $tls
  $h2c
}
CONF
  taskset -c "$cpu" nginx -c "$work/nginx.conf" -p "$work"
  for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/" >/dev/null && break; sleep 0.1; done
}

served() { curl -sf "http://127.0.0.1:$NGINX_PORT/nginx_status" | awk 'NR==3 {print $3}'; }
