#!/usr/bin/env bash
# How trustworthy is the gate on a noisy machine? Many A/A trials (the same server twice) and A/B trials (the
# candidate 10% slower: the built-in delay server at 50 ms against 55 ms), each judged by loadgate's gate
# (A/B in one run, paired rounds, PASS / FAIL / INCONCLUSIVE) and by the naive gate (one run each, fail when the
# candidate's p99 exceeds 1.10x the baseline's; it is read from the first round of the same trial).
#
#   bench/gate-quality.sh                    # 50 A/A and 50 A/B trials
#   TRIALS=10 bench/gate-quality.sh          # quicker
#   NOISE=0 bench/gate-quality.sh            # without the noise injector
#   STREAMS=2 bench/gate-quality.sh          # two streams of trials at once (each one more neighbour)
#   KEEP=dir bench/gate-quality.sh           # keep every trial's results.json
#   DELAY_A=2ms DELAY_B=2200us CONNS=16 bench/gate-quality.sh   # the 2.0 / 2.2 ms case (see docs/gating.md)
#
# Why 50 / 55 ms: a server that shares its core with a busy neighbour waits for the CPU after each wake-up, which
# adds a few milliseconds to its tail whatever it serves. At 2.0 / 2.2 ms that tail is larger than the service
# time, so the candidate's p99 is only about 3-4% above the baseline's: not the 10% p99 regression the gate must
# catch. At 50 / 55 ms the candidate's p99 is about 10% above the baseline's under the same noise (the script
# prints the measured ratio).
#
# The noise injector burns the target's CPU (TARGET_CPU, default 0) in bursts of 20-300 ms at random times
# (1-10 bursts a second), as a shared CI runner's neighbours do. The server is pinned to TARGET_CPU and the
# generator to GEN_CPU (default 1). Prints a table: false alarms (FAIL on A/A), detection (FAIL on A/B),
# inconclusive and invalid rates, and the load time per verdict, for both gates.
set -euo pipefail

TRIALS=${TRIALS:-50}
TRIALS_AB=${TRIALS_AB:-$TRIALS}  # fewer A/B trials than A/A ones: the A/B trials stop after this many
NOISE=${NOISE:-1}
TARGET_CPU=${TARGET_CPU:-0}
GEN_CPU=${GEN_CPU:-1}
DELAY_A=${DELAY_A:-50ms}
DELAY_B=${DELAY_B:-55ms}
RATE=${RATE:-2000/s}
CONNS=${CONNS:-256}
REP=${REP:-500ms}
REPEAT=${REPEAT:-12}
MAX_REPEAT=${MAX_REPEAT:-160}
LIMIT=${LIMIT:-1.05}
HERE=$(cd "$(dirname "$0")" && pwd)
# PROFILE=profiling uses the build with debug info (`cargo build --profile profiling -p loadgate`), for perf.
PROFILE=${PROFILE:-release}
LOADGATE=${LOADGATE:-${CARGO_TARGET_DIR:-$HERE/../target}/$PROFILE/loadgate}
[ -x "$LOADGATE" ] || { echo "missing $LOADGATE (cargo build --profile $PROFILE -p loadgate)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "missing python3" >&2; exit 2; }

work=$(mktemp -d)
noise_pid=""
cleanup() {
  [ -n "$noise_pid" ] && kill "$noise_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ "$NOISE" = 1 ]; then
  taskset -c "$TARGET_CPU" python3 - <<'PY' &
import random, time
rng = random.Random(1234)
while True:
    time.sleep(rng.uniform(0.1, 1.0))
    end = time.perf_counter() + rng.uniform(0.02, 0.3)
    while time.perf_counter() < end:
        pass
PY
  noise_pid=$!
fi

spec() { # $1 = file, $2 = candidate delay
  cat > "$1" <<YAML
version: 1
name: gate
hardware:
  generator: { cpus: "$GEN_CPU" }
  target: { cpus: "$TARGET_CPU" }
  on_mismatch: warn
target: { builtin: { kind: delay, delay: $DELAY_A } }
candidate: { builtin: { kind: delay, delay: $2 } }
gating: { repeat: $REPEAT, max_repeat: $MAX_REPEAT }
scenarios:
  main:
    request: { path: / }
    load: { open: { rate: $RATE, connections: $CONNS, duration: $REP } }
    slo: ["p99 <= baseline * $LIMIT"]
YAML
}

# One stream of trials: A/A and A/B alternate, so that a quieter or busier hour of the machine weighs on both
# alike. STREAMS=N runs N streams at once (trials TRIALS/N each, numbered apart), one more neighbour each.
stream() { # $1 = stream number
  local dir="$work/s$1" t kind delay n
  mkdir -p "$dir"
  : > "$dir/trials.tsv"
  for n in $(seq 1 $((TRIALS / STREAMS))); do
    t=$(( (n - 1) * STREAMS + $1 ))
    for kind in AA AB; do
      if [ "$kind" = AB ] && [ "$t" -gt "$TRIALS_AB" ]; then continue; fi
      if [ "$kind" = AA ]; then delay=$DELAY_A; else delay=$DELAY_B; fi
      spec "$dir/spec.yaml" "$delay"
      rm -rf "$dir/out"
      "$LOADGATE" run "$dir/spec.yaml" --out "$dir/out" -q >/dev/null 2>&1 || true
      # KEEP=DIR keeps every trial's results.json (DIR/AA-1.json, DIR/AB-1.json, ...) for a closer look.
      if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp "$dir/out/gate/results.json" "$KEEP/$kind-$t.json" 2>/dev/null || true; fi
      python3 - "$dir/out/gate/results.json" "$kind" >> "$dir/trials.tsv" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
    s = r["scenarios"][0]
    st = s["verdicts"][0].get("statistics") or {}
    if r["outcome"]["exit_code"] in (3, 4):
        st = dict(st, status="invalid")
    b, a = s["repetitions"], s["ab_baseline"]["repetitions"]
    naive = "fail" if b[0]["latency"]["percentiles"]["p99"] > 1.10 * a[0]["latency"]["percentiles"]["p99"] else "pass"
    load = sum(x["duration"] for x in b) + sum(x["duration"] for x in a)
    print("\t".join([sys.argv[2], st.get("status", "error"), naive, str(len(b)), f"{load:.1f}", f"{st.get('estimate', 0):.3f}"]))
except (OSError, KeyError, IndexError, ValueError):
    print("\t".join([sys.argv[2], "error", "error", "0", "0", "0"]))
PY
      printf '.' >&2
      if [ -n "${KEEP:-}" ]; then cat "$work"/s*/trials.tsv > "$KEEP/trials.tsv"; fi
    done
  done
}

STREAMS=${STREAMS:-1}
streams=()
for i in $(seq 1 "$STREAMS"); do
  stream "$i" &
  streams+=($!)
done
# Wait for the streams only: the noise injector runs until the cleanup stops it.
wait "${streams[@]}"
results="$work/trials.tsv"
cat "$work"/s*/trials.tsv > "$results"
echo >&2

python3 - "$results" "$TRIALS" "$NOISE" "LIMIT=$LIMIT" "REPEAT=$REPEAT" "MAX_REPEAT=$MAX_REPEAT" "REP=$REP" <<'PY'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
def rate(kind, col, value):
    sel = [r for r in rows if r[0] == kind]
    return 100.0 * sum(1 for r in sel if r[col] == value) / max(1, len(sel)), len(sel)
def mean(kind, col):
    sel = [float(r[col]) for r in rows if r[0] == kind]
    return sum(sel) / max(1, len(sel))
aa_fail, n_aa = rate("AA", 1, "fail"); ab_fail, n_ab = rate("AB", 1, "fail")
aa_inc, _ = rate("AA", 1, "inconclusive"); ab_inc, _ = rate("AB", 1, "inconclusive")
aa_inv, _ = rate("AA", 1, "invalid"); ab_inv, _ = rate("AB", 1, "invalid")
aa_naive, _ = rate("AA", 2, "fail"); ab_naive, _ = rate("AB", 2, "fail")
print(f"{n_aa} A/A and {n_ab} A/B trials, noise injector {'on' if sys.argv[3] == '1' else 'off'}")
print()
env = dict(a.split("=", 1) for a in sys.argv[4:])
print("| gate | false alarms (A/A FAIL) | detection (A/B FAIL) | inconclusive A/A | inconclusive A/B | invalid A/A, A/B | load per verdict |")
print("| --- | --- | --- | --- | --- | --- | --- |")
print(f"| loadgate (A/B paired rounds, `p99 <= baseline * {env['LIMIT']}`, {env['REPEAT']}-{env['MAX_REPEAT']} rounds of {env['REP']} per side) | {aa_fail:.1f}% | {ab_fail:.1f}% | {aa_inc:.1f}% | {ab_inc:.1f}% | {aa_inv:.1f}%, {ab_inv:.1f}% | {mean('AA', 4):.0f} s (A/A), {mean('AB', 4):.0f} s (A/B) |")
print(f"| naive (one run each, fail above 1.10x) | {aa_naive:.1f}% | {ab_naive:.1f}% | - | - | - | {2 * float(env['REP'].rstrip('ms')) / (1000 if env['REP'].endswith('ms') else 1):.0f} s |")
print()
print(f"mean rounds: A/A {mean('AA', 3):.1f}, A/B {mean('AB', 3):.1f}; mean estimated p99 ratio: A/A {mean('AA', 5):.3f}, A/B {mean('AB', 5):.3f} (the regression the A/B trials carry)")
PY
