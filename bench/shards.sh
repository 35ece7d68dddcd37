#!/usr/bin/env bash
# Local shards against one process (issue 14): the same spec at the same total open-loop rate and connections,
# run by one loadgate process and by `loadgate run --shards 2`, against nginx (one worker on NGINX_CPU, default
# 0; the generators pinned by the spec to GEN_CPU, default 1). Requests are counted at the server (nginx
# stub_status). Then: a shard killed mid-run (the merge must be invalid, exit 4), a shard started 2 s late (it
# must be flagged and the merge invalid), and the merge time of 20 realistic shard results.
#
#   flock /tmp/loadgate-bench.lock bench/shards.sh          # RUNS=3 DUR=10 RATE=20000 CONNS=64
#
# Prints one row per run and the medians; ratios are shards/one-process, measured in the same script.
set -euo pipefail

NGINX_CPU=${NGINX_CPU:-0}
GEN_CPU=${GEN_CPU:-1}
RUNS=${RUNS:-3}
DUR=${DUR:-10}
RATE=${RATE:-20000}
CONNS=${CONNS:-64}
PORT=${PORT:-18090}
HERE=$(cd "$(dirname "$0")" && pwd)
LOADGATE=${LOADGATE:-${CARGO_TARGET_DIR:-$HERE/../target}/release/loadgate}

for tool in nginx curl taskset python3; do
  command -v "$tool" >/dev/null || { echo "missing $tool" >&2; exit 2; }
done
[ -x "$LOADGATE" ] || { echo "missing $LOADGATE (cargo build --release -p loadgate)" >&2; exit 2; }

. "$HERE/nginx.sh"
nginx_start "$NGINX_CPU" "$PORT"

cat > "$work/spec.yaml" <<SPEC
version: 1
name: shards-bench
hardware:
  generator: { cpus: "$GEN_CPU" }
  on_mismatch: warn
target:
  base_url: http://127.0.0.1:$PORT
scenarios:
  open:
    request: { path: / }
    load: { open: { rate: $RATE/s, connections: $CONNS, duration: ${DUR}s } }
    slo: [errors == 0]
SPEC

# one LABEL ARGS...: runs loadgate, prints "label exit served completed achieved target p50_us p99_us".
one() {
  local label=$1; shift
  local out="$work/out-$label" before after code=0
  rm -rf "$out"
  before=$(served)
  "$LOADGATE" run "$work/spec.yaml" --out "$out" -q "$@" >"$work/log" 2>&1 || code=$?
  after=$(served)
  python3 - "$out/shards-bench/results.json" "$label" "$code" "$((after - before - 1))" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
s = r["scenarios"][0]
lat = s["latency"]
print(sys.argv[2], sys.argv[3], sys.argv[4], s["requests"]["completed"], round(s["load"]["achieved_rate"], 1),
      round(s["load"]["target_rate"], 1), lat["percentiles"]["p50"], lat["percentiles"]["p99"])
PY
}

echo "# $RUNS runs, ${DUR}s, $RATE/s open, $CONNS connections; nginx on CPU $NGINX_CPU, generators on CPU $GEN_CPU"
echo "label exit served completed achieved_rate target_rate p50_us p99_us"
for i in $(seq "$RUNS"); do
  one "one-$i" | tee -a "$work/rows"
  one "shards-$i" --shards 2 | tee -a "$work/rows"
done
python3 - "$work/rows" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
def med(kind, col):
    return statistics.median(float(r[col]) for r in rows if r[0].startswith(kind))
for kind in ("one", "shards"):
    print(f"median {kind:6}: achieved {med(kind, 4):.1f}/s of {med(kind, 5):.0f}/s ({100 * med(kind, 4) / med(kind, 5):.2f}%), "
          f"p50 {med(kind, 6):.0f}us p99 {med(kind, 7):.0f}us")
ok = all(r[2] == r[3] for r in rows)
print(f"merged count == server count in every run: {ok}")
print(f"ratio shards/one: p50 {med('shards', 6) / med('one', 6):.2f}, p99 {med('shards', 7) / med('one', 7):.2f}, "
      f"achieved {med('shards', 4) / med('one', 4):.4f}")
PY

# A shard killed mid-run: the merge is invalid (exit 4), never a pass.
out="$work/out-killed"
"$LOADGATE" run "$work/spec.yaml" --out "$out" -q --shards 2 >"$work/killed.log" 2>&1 &
parent=$!
sleep $((DUR / 2))
victim=$(pgrep -f -- "--shard 2/2 .*--out $out" | head -1 || true)
[ -n "$victim" ] && kill -9 "$victim"
code=0; wait "$parent" || code=$?
echo "killed shard 2/2 (pid ${victim:-none}) mid-run: merged exit $code; $(grep -o 'shard 2/2[^;"]*missing[^;"]*' "$out/shards-bench/results.json" | head -1)"

# A shard started 2 s late: flagged, and the merge is invalid.
out="$work/out-late"
start=$(python3 -c 'import datetime; print((datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=2)).strftime("%Y-%m-%dT%H:%M:%S.%fZ"))')
"$LOADGATE" run "$work/spec.yaml" --out "$out" -q --shard 1/2 --run-id late --start-at "$start" >/dev/null 2>&1 &
first=$!
sleep 4
"$LOADGATE" run "$work/spec.yaml" --out "$out" -q --shard 2/2 --run-id late --start-at "$start" >/dev/null 2>&1 || true
wait "$first" || true
code=0
"$LOADGATE" merge "$out"/shards-bench/shard-*-of-2.json --out "$work/merged-late" -q >/dev/null 2>&1 || code=$?
skew=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["shard"]["start_skew_ms"])' "$out/shards-bench/shard-2-of-2.json")
echo "shard 2/2 started 2 s late: skew ${skew} ms, merged exit $code"

# The merge of 20 realistic shard results: one real shard result (this run's), relabelled 1..20.
src=$(ls "$work"/out-shards-1/shards-bench/shard-1-of-2.json)
mkdir -p "$work/twenty"
python3 - "$src" "$work/twenty" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for i in range(1, 21):
    r["shard"]["index"], r["shard"]["count"], r["shard"]["late"] = i, 20, False
    json.dump(r, open(f"{sys.argv[2]}/shard-{i}-of-20.json", "w"))
PY
size=$(stat -c %s "$work/twenty/shard-1-of-20.json")
t0=$(date +%s.%N)
"$LOADGATE" merge "$work"/twenty/*.json --out "$work/merged-20" -q >/dev/null 2>&1 || true
t1=$(date +%s.%N)
echo "merge of 20 shard results (${size} bytes each): $(python3 -c "print(round($t1 - $t0, 3))") s"
