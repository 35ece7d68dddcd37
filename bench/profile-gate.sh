#!/usr/bin/env bash
# Does the profiled gate name what got slower, and nothing when nothing did? (issue 41's "Done when")
#
# TRIALS A/B trials (the candidate spends +15 us per request in a callee of `slow_path`) and as many A/A trials
# (the same server twice), alternating, each one `loadgate run` of an A/B spec: a constant 2,000 requests/s,
# REPEAT paired rounds of REP per side, `profile: { cpu: {} }`, the server pinned to TARGET_CPU and the
# generator to GEN_CPU, gated on `target_cpu_per_request <= baseline * LIMIT`. Counted from each results.json:
# the verdict of target_cpu_per_request, and the frames `where:` names (scenarios[].profile.differential.named).
#
#   bench/profile-gate.sh                  # the built-in cpu kind (SERVER=cpu): 20 A/B and 20 A/A trials
#   SERVER=go bench/profile-gate.sh        # the Go fixture (tests/fixtures/profile/go, frame pointers), plus a
#                                          # cross-check of its own /debug/pprof/profile (CROSSCHECK=0: none)
#   TRIALS=5 REPEAT=8 bench/profile-gate.sh   # quicker
#   KEEP=dir bench/profile-gate.sh         # keep every trial's results.json and the table of trials
#
# Knobs: WORK (50us: the handler), SLOW_A (5us: the baseline's slow_path; at 0 the frame is never sampled on the
# baseline's side and is listed apart, not named: docs/profiles.md), SLOW_B (20us: the candidate's),
# RATE (2000/s), CONNS (8), REP (2s), REPEAT (10), LIMIT (1.10), TARGET_CPU (0), GEN_CPU (1), LOADGATE (the
# binary; default target/release/loadgate), LOADGATE_GO (go; default /usr/local/go/bin/go or the PATH's),
# FREQUENCY (the sampler's, in Hz; empty: the default).
# Prints the time it took. Kills what it started on exit.
set -euo pipefail

SERVER=${SERVER:-cpu}
TRIALS=${TRIALS:-20}
TRIALS_AA=${TRIALS_AA:-$TRIALS}
WORK=${WORK:-50us}
SLOW_A=${SLOW_A:-5us}
SLOW_B=${SLOW_B:-20us}
RATE=${RATE:-2000/s}
CONNS=${CONNS:-8}
REP=${REP:-2s}
REPEAT=${REPEAT:-10}
LIMIT=${LIMIT:-1.10}
TARGET_CPU=${TARGET_CPU:-0}
GEN_CPU=${GEN_CPU:-1}
CROSSCHECK=${CROSSCHECK:-1}
FREQUENCY=${FREQUENCY:-}
if [ -n "$FREQUENCY" ]; then cpu_profile="{ frequency: $FREQUENCY }"; else cpu_profile="{}"; fi
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
LOADGATE=${LOADGATE:-${CARGO_TARGET_DIR:-$ROOT/target}/release/loadgate}
[ -x "$LOADGATE" ] || { echo "missing $LOADGATE (cargo build --release -p loadgate)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "missing python3" >&2; exit 2; }
case "$SERVER" in cpu | go) ;; *) echo "SERVER is cpu or go, not $SERVER" >&2; exit 2 ;; esac

started=$(date +%s)
work=$(mktemp -d)
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ "$SERVER" = go ]; then
  GO=${LOADGATE_GO:-$(command -v go || echo /usr/local/go/bin/go)}
  [ -x "$GO" ] || { echo "missing go (LOADGATE_GO)" >&2; exit 2; }
  (cd "$ROOT/tests/fixtures/profile/go" && GOFLAGS=-mod=mod CGO_ENABLED=0 "$GO" build -o "$work/go-server" .)
fi

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# side SLOW: the YAML of one side (the target or the candidate) with SLOW in slow_path.
side() {
  if [ "$SERVER" = cpu ]; then
    echo "{ builtin: { kind: cpu, work: $WORK, slow_path: $1 } }"
  else
    local port
    port=$(free_port)
    echo "{ start: { command: [\"$work/go-server\", -listen, \"127.0.0.1:$port\", -work, $WORK, -slow, $1], ready: { http_get: /ready } }, base_url: \"http://127.0.0.1:$port\" }"
  fi
}

spec() { # $1 = file, $2 = the candidate's slow_path
  cat > "$1" <<YAML
version: 1
name: pgate
hardware:
  generator: { cpus: "$GEN_CPU" }
  target: { cpus: "$TARGET_CPU" }
  on_mismatch: warn
target: $(side "$SLOW_A")
candidate: $(side "$2")
gating: { repeat: $REPEAT }
profile: { cpu: $cpu_profile }
scenarios:
  main:
    request: { path: / }
    load: { open: { rate: $RATE, connections: $CONNS, duration: $REP } }
    slo:
      - target_cpu_per_request <= baseline * $LIMIT
YAML
}

# One row per trial (JSON): what the gate said and what where: named.
extract() { # $1 = results.json, $2 = AA or AB, $3 = exit code, $4 = seconds
  python3 - "$@" <<'PY'
import json, sys
path, kind, code, secs = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
row = {"kind": kind, "exit": code, "seconds": secs}
try:
    r = json.load(open(path))
    s = r["scenarios"][0]
    v = next(v for v in s["verdicts"] if v["metric"] == "target_cpu_per_request")
    st = v.get("statistics") or {}
    row.update(status=st.get("status", "pass" if v["passed"] else "fail"), estimate=st.get("estimate"),
               interval=[st.get("lower"), st.get("upper")], observed_us=v.get("observed"))
    p, pa = s.get("profile") or {}, (s.get("ab_baseline") or {}).get("profile") or {}
    d = p.get("differential") or {}
    row.update(
        named=[(n["name"], round(n["estimate_us"], 2), n["p_adjusted"]) for n in d.get("named", [])],
        faster=[(n["name"], round(n["estimate_us"], 2)) for n in d.get("faster", [])],
        one_sided=[(n["name"], n["side"], round(n["us_per_request"], 2)) for n in d.get("one_sided", [])],
        tested=len(d.get("tested", [])), rounds=d.get("rounds"), smallest_p=d.get("smallest_p"),
        samples=[pa.get("samples"), p.get("samples")],
        unknown=[pa.get("unknown_share"), p.get("unknown_share")],
        depth=[pa.get("depth_p50"), p.get("depth_p50")],
        sampled_us=[(pa.get("table") or {}).get("total_us_per_request"), (p.get("table") or {}).get("total_us_per_request")],
        cpu_us=[sum(x["target_cpu"]["cpu_ns"] for x in reps) / 1e3 / max(1, sum(x["target_cpu"]["requests"] for x in reps))
                for reps in (s["ab_baseline"]["repetitions"], s["repetitions"]) if all(x.get("target_cpu") for x in reps)],
        notes=p.get("notes", []),
    )
    if not d:
        row["error"] = "no differential"
except (OSError, KeyError, IndexError, ValueError, StopIteration, TypeError) as e:
    row["error"] = f"{type(e).__name__}: {e}"
print(json.dumps(row))
PY
}

# The cross-check (SERVER=go, before the trials): one run of the Go server at the candidate's slow path, profiled
# by loadgate's sampler while its own net/http/pprof profiles 8 s of the same phase, and the server's CPU time in
# that window read from its threads' schedstat. slowPath's CPU per request from both: sampled (samples x period
# over requests) and as its share of the samples times the CPU time per request that schedstat measured.
crosscheck() {
  local port lg gs a b
  port=$(free_port)
  cat > "$work/cross.yaml" <<YAML
version: 1
name: cross
hardware:
  generator: { cpus: "$GEN_CPU" }
  target: { cpus: "$TARGET_CPU" }
  on_mismatch: warn
target: { start: { command: ["$work/go-server", -listen, "127.0.0.1:$port", -work, $WORK, -slow, $SLOW_B], ready: { http_get: /ready } }, base_url: "http://127.0.0.1:$port" }
profile: { cpu: $cpu_profile }
scenarios:
  main:
    request: { path: / }
    load: { open: { rate: $RATE, connections: $CONNS, duration: 16s } }
YAML
  rm -rf "$work/cross-out"
  "$LOADGATE" run "$work/cross.yaml" --out "$work/cross-out" > "$work/cross.stdout" 2>&1 &
  lg=$!
  pids+=("$lg")
  for _ in $(seq 100); do
    curl -fsS -o /dev/null "http://127.0.0.1:$port/ready" 2>/dev/null && break
    sleep 0.1
  done
  gs=$(pgrep -f -- "-listen 127.0.0.1:$port" | head -n 1)
  sleep 3
  a=$(cat /proc/"$gs"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {printf "%.0f\n", s}')
  curl -fsS -o "$work/go-cpu.pprof.gz" "http://127.0.0.1:$port/debug/pprof/profile?seconds=8"
  b=$(cat /proc/"$gs"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {printf "%.0f\n", s}')
  wait "$lg" || true
  "$GO" tool pprof -traces "$work/go-cpu.pprof.gz" > "$work/go-cpu.traces" 2>/dev/null
  if [ -n "${KEEP:-}" ]; then
    mkdir -p "$KEEP"
    cp "$work/go-cpu.pprof.gz" "$work/cross-out/cross/results.json" "$work/cross-out/cross/profile-main.folded" "$KEEP/" 2>/dev/null || true
  fi
  python3 - "$work/cross-out/cross" "$work/go-cpu.traces" "$RATE" "$((b - a))" <<'PY'
import json, re, sys
run, traces, rate, window_ns = sys.argv[1], sys.argv[2], float(sys.argv[3].split("/")[0]), float(sys.argv[4])
r = json.load(open(f"{run}/results.json"))
s = r["scenarios"][0]
p = s["profile"]
tc = s.get("target_cpu") or (s["repetitions"][0].get("target_cpu") if s.get("repetitions") else None)
cpu_per_request = tc["cpu_ns"] / 1e3 / tc["requests"]
# loadgate's sampler: from the folded stacks (the count after the last space).
lg_total = lg_slow = 0
for line in open(f"{run}/profile-main.folded"):
    stack, _, count = line.rstrip("\n").rpartition(" ")
    n = int(count)
    lg_total += n
    if "main.slowPath" in stack.split(";"):
        lg_slow += n
lg_sampled = lg_slow * p["ns_per_sample"] / 1e3 / p["requests"]
# Go's pprof: each trace's value and frames.
units = {"ns": 1e-3, "us": 1.0, "µs": 1.0, "ms": 1e3, "s": 1e6}
def us(text):
    m = re.fullmatch(r"([0-9.]+)(ns|us|µs|ms|s)", text)
    return float(m.group(1)) * units[m.group(2)] if m else 0.0
go_total = go_slow = 0.0
for b in open(traces).read().split("-----------+")[1:]:
    lines = [l for l in b.splitlines() if l.strip() and not l.lstrip().startswith("-")]
    if not lines:
        continue
    head = lines[0].split()
    if len(head) < 2:
        continue
    v = us(head[0])
    frames = [head[1]] + [l.strip() for l in lines[1:]]
    go_total += v
    if "main.slowPath" in frames:
        go_slow += v
# The requests in pprof's 8 s window: the phase's achieved throughput (a saturated server completes fewer than the rate).
requests = (s.get("throughput") or rate) * 8
print("Cross-check with Go's own pprof (one 16 s run at the rate, slow path at the candidate's; pprof over 8 s of it):")
print()
print("| | samples | sampled CPU / CPU measured | main.slowPath share | main.slowPath us/request, sampled | main.slowPath us/request, share x measured CPU/request |")
print("| --- | --- | --- | --- | --- | --- |")
print(f"| loadgate `profile: cpu` (999 Hz, whole phase) | {lg_total} | {p['table']['total_us_per_request'] / cpu_per_request:.1%} of schedstat's {cpu_per_request:.1f} us/request"
      f" | {lg_slow / lg_total:.1%} | {lg_sampled:.1f} | {lg_slow / lg_total * cpu_per_request:.1f} |")
go_cpu_per_request = window_ns / 1e3 / requests
share = go_slow / go_total if go_total else float("nan")
print(f"| Go `/debug/pprof/profile?seconds=8` (100 Hz) | {go_total / 1e4:.0f} | {go_total * 1e3 / window_ns:.1%} of the {window_ns / 1e9:.2f} s schedstat measured in the window"
      f" | {share:.1%} | {go_slow / requests:.1f} | {share * go_cpu_per_request:.1f} |")
print()
PY
}

if [ "$SERVER" = go ] && [ "$CROSSCHECK" = 1 ]; then crosscheck || echo "profile-gate: the cross-check failed" >&2; fi

echo "profile-gate: SERVER=$SERVER, $TRIALS A/B and $TRIALS_AA A/A trials, $RATE, $REPEAT paired rounds of $REP," \
  "work $WORK, slow_path $SLOW_A -> $SLOW_B, gate target_cpu_per_request <= baseline * $LIMIT" >&2
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
: > "$work/trials.jsonl"
for t in $(seq 1 "$((TRIALS > TRIALS_AA ? TRIALS : TRIALS_AA))"); do
  for kind in AB AA; do
    if [ "$kind" = AB ] && [ "$t" -gt "$TRIALS" ]; then continue; fi
    if [ "$kind" = AA ] && [ "$t" -gt "$TRIALS_AA" ]; then continue; fi
    if [ "$kind" = AB ]; then slow=$SLOW_B; else slow=$SLOW_A; fi
    spec "$work/spec.yaml" "$slow"
    rm -rf "$work/out"
    t0=$(date +%s.%N)
    code=0
    "$LOADGATE" run "$work/spec.yaml" --out "$work/out" > "$work/stdout" 2> "$work/stderr" || code=$?
    t1=$(date +%s.%N)
    extract "$work/out/pgate/results.json" "$kind" "$code" "$(echo "$t1 - $t0" | bc)" >> "$work/trials.jsonl"
    if [ -n "${KEEP:-}" ]; then
      mkdir -p "$KEEP"
      cp "$work/out/pgate/results.json" "$KEEP/$SERVER-$kind-$t.json" 2>/dev/null || true
      cp "$work/stdout" "$KEEP/$SERVER-$kind-$t.txt"
      cp "$work/trials.jsonl" "$KEEP/$SERVER-trials.jsonl"
    fi
    if grep -q '"error"' <(tail -n 1 "$work/trials.jsonl"); then
      echo >&2; echo "trial $kind-$t: $(tail -n 1 "$work/trials.jsonl")" >&2; tail -n 5 "$work/stderr" >&2
    fi
    printf '.' >&2
  done
done
echo >&2

python3 - "$work/trials.jsonl" "$SERVER" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
slow = "slowPath" if sys.argv[2] == "go" else "slow_path"
ab = [r for r in rows if r["kind"] == "AB"]
aa = [r for r in rows if r["kind"] == "AA"]
def first_is_slow(r):
    return bool(r.get("named")) and slow in r["named"][0][0]
def count(sel, f):
    return sum(1 for r in sel if f(r))
print(f"A/B: {len(ab)} trials; FAIL on target_cpu_per_request {count(ab, lambda r: r.get('status') == 'fail')}/{len(ab)};"
      f" {slow} named first {count(ab, first_is_slow)}/{len(ab)};"
      f" both {count(ab, lambda r: r.get('status') == 'fail' and first_is_slow(r))}/{len(ab)}")
print(f"A/A: {len(aa)} trials; a frame named {count(aa, lambda r: bool(r.get('named')))}/{len(aa)};"
      f" FAIL on target_cpu_per_request {count(aa, lambda r: r.get('status') == 'fail')}/{len(aa)};"
      f" INCONCLUSIVE {count(aa, lambda r: r.get('status') == 'inconclusive')}/{len(aa)}")
for name, sel in (("A/B", ab), ("A/A", aa)):
    est = [r["estimate"] for r in sel if r.get("estimate") is not None]
    cpu = [r["cpu_us"] for r in sel if len(r.get("cpu_us") or []) == 2]
    samples = [r["samples"] for r in sel if None not in (r.get("samples") or [None])]
    unknown = [max(r["unknown"]) for r in sel if None not in (r.get("unknown") or [None])]
    if est:
        print(f"  {name} estimate of target_cpu_per_request B/A: median {statistics.median(est):.3f} (min {min(est):.3f}, max {max(est):.3f})")
    if cpu:
        print(f"  {name} target CPU per request: baseline median {statistics.median(c[0] for c in cpu):.1f} us, candidate {statistics.median(c[1] for c in cpu):.1f} us")
    if samples:
        print(f"  {name} samples per trial and side: median {statistics.median(s for pair in samples for s in pair):.0f}; unnamed leaves at most {max(unknown):.3%}")
    seconds = [r["seconds"] for r in sel]
    if seconds:
        print(f"  {name} wall time per trial: median {statistics.median(seconds):.0f} s")
print()
print("| trial | exit | target_cpu_per_request | B/A estimate | named (us/request, p adj.) | one-sided |")
print("| --- | --- | --- | --- | --- | --- |")
seen = {}
for r in rows:
    seen[r["kind"]] = seen.get(r["kind"], 0) + 1
    named = "; ".join(f"{n} {e:+.1f} (p {p:.4f})" for n, e, p in r.get("named", [])) or "-"
    one = "; ".join(f"{n} ({s}, {u:.1f})" for n, s, u in r.get("one_sided", [])[:3]) or "-"
    est = f"{r['estimate']:.3f}" if r.get("estimate") is not None else "-"
    print(f"| {r['kind']} {seen[r['kind']]} | {r['exit']} | {r.get('status', r.get('error'))} | {est} | {named} | {one} |")
PY

echo "profile-gate: took $(( $(date +%s) - started )) s; load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
