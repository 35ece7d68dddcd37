#!/usr/bin/env bash
# How trustworthy is the gate on a noisy machine? Many A/A trials (the same server twice) and A/B trials (the
# candidate 10% slower: the built-in delay server at 50 ms against 55 ms), each judged by loadgate's gate
# (A/B in one run, paired rounds, PASS / FAIL / INCONCLUSIVE) and by the naive gate (one run each, fail when the
# candidate's p99 exceeds 1.10x the baseline's; it is read from the first round of the same trial).
#
#   bench/gate-quality.sh                    # 50 A/A and 50 A/B trials
#   TRIALS=10 bench/gate-quality.sh          # quicker
#   NOISE=0 bench/gate-quality.sh            # without the noise injector
#   NOISE=stall bench/gate-quality.sh        # stalls: SIGSTOP of the target for 20-80 ms every 3-8 s, and CPU
#                                            # bursts on the generator's core (NOISE=1 or cpu: the CPU-burst profile)
#   ARM=power DETECT=10% BUDGET=3m bench/gate-quality.sh   # the detect/budget arm: loadgate plans the rounds
#                                            # (ARM=fixed, the default: repeat/max_repeat as REPEAT/MAX_REPEAT)
#   PROFILE=debug TRIALS=2 ARM=power BUDGET=20s RATE=400/s CONNS=32 bench/gate-quality.sh   # a smoke test
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
# inconclusive and invalid rates (INCONCLUSIVE by reason: budget, at the limit, other), and the load time per
# verdict, for both gates.
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
ARM=${ARM:-fixed}
DETECT=${DETECT:-10%}
BUDGET=${BUDGET:-3m}
case "$NOISE" in 1) NOISE=cpu ;; esac
HERE=$(cd "$(dirname "$0")" && pwd)
# PROFILE=profiling uses the build with debug info (`cargo build --profile profiling -p loadgate`), for perf.
PROFILE=${PROFILE:-release}
LOADGATE=${LOADGATE:-${CARGO_TARGET_DIR:-$HERE/../target}/$PROFILE/loadgate}
[ -x "$LOADGATE" ] || { echo "missing $LOADGATE (cargo build --profile $PROFILE -p loadgate)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "missing python3" >&2; exit 2; }

work=$(mktemp -d)
noise_pid=""
cleanup() {
  # shellcheck disable=SC2086
  [ -n "$noise_pid" ] && kill $noise_pid 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

burner() { # $1 = CPU: bench/burner.py's bursts of 20-300 ms, one every 0.1-1 s, the same seed everywhere
  taskset -c "$1" python3 "$HERE/burner.py" &
}

# The stall profile: every 3-8 s each running trial's target processes (the children of the loadgate the
# streams started, whose pids they write to $work/s*/pid) stop for 20-80 ms (SIGSTOP, then SIGCONT), as a
# runner's VM is descheduled; with CPU bursts on the generator's core.
staller() {
  python3 - "$work" <<'PY' &
import glob, os, random, signal, subprocess, sys, time
rng = random.Random(4321)
work = sys.argv[1]
while True:
    time.sleep(rng.uniform(3.0, 8.0))
    pids = []
    for f in glob.glob(os.path.join(work, "s*", "pid")):
        try:
            parent = open(f).read().strip()
            out = subprocess.run(["pgrep", "-P", parent], capture_output=True, text=True).stdout
            pids += [int(p) for p in out.split()]
        except (OSError, ValueError):
            pass
    stopped = []
    for p in pids:
        try:
            os.kill(p, signal.SIGSTOP)
            stopped.append(p)
        except OSError:
            pass
    time.sleep(rng.uniform(0.02, 0.08))
    for p in stopped:
        try:
            os.kill(p, signal.SIGCONT)
        except OSError:
            pass
PY
}

noise_pids=()
case "$NOISE" in
  cpu) burner "$TARGET_CPU"; noise_pids+=($!) ;;
  stall) burner "$GEN_CPU"; noise_pids+=($!); staller; noise_pids+=($!) ;;
esac
noise_pid="${noise_pids[*]:-}"

if [ "$ARM" = power ]; then
  GATING="{ detect: $DETECT, budget: $BUDGET }"
  ARM_TEXT="detect: $DETECT, budget: $BUDGET (rounds planned from an 8-round pilot of $REP per side)"
else
  GATING="{ repeat: $REPEAT, max_repeat: $MAX_REPEAT }"
  ARM_TEXT="$REPEAT-$MAX_REPEAT rounds of $REP per side"
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
gating: $GATING
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
      "$LOADGATE" run "$dir/spec.yaml" --out "$dir/out" -q >/dev/null 2>&1 &
      echo $! > "$dir/pid"
      wait "$(cat "$dir/pid")" || true
      rm -f "$dir/pid"
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
    cause = st.get("cause") or ("at_the_limit" if st.get("reason") == "at the limit" else "other")
    print("\t".join([sys.argv[2], st.get("status", "error"), naive, str(len(b)), f"{load:.1f}", f"{st.get('estimate', 0):.3f}", cause]))
except (OSError, KeyError, IndexError, ValueError):
    print("\t".join([sys.argv[2], "error", "error", "0", "0", "0", "other"]))
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

python3 - "$results" "$TRIALS" "$NOISE" "LIMIT=$LIMIT" "REPEAT=$REPEAT" "MAX_REPEAT=$MAX_REPEAT" "REP=$REP" "ARM=$ARM_TEXT" <<'PY'
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
noise = {"cpu": "CPU bursts on the target's core", "stall": "target stalls (SIGSTOP 20-80 ms every 3-8 s) and CPU bursts on the generator's core"}.get(sys.argv[3], "off")
print(f"{n_aa} A/A and {n_ab} A/B trials, noise: {noise}")
def reasons(kind):
    sel = [r for r in rows if r[0] == kind and r[1] == "inconclusive"]
    count = lambda c: sum(1 for r in sel if (r[6] if len(r) > 6 else "other") == c)
    budget, limit = count("budget"), count("at_the_limit")
    return f"{budget} / {limit} / {len(sel) - budget - limit}"
print()
env = dict(a.split("=", 1) for a in sys.argv[4:])
print("| gate | false alarms (A/A FAIL) | detection (A/B FAIL) | inconclusive A/A | inconclusive A/B | inconclusive reasons A/A, A/B (budget / at the limit / other) | invalid A/A, A/B | load per verdict (mean) |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
print(f"| loadgate (A/B paired rounds, `p99 <= baseline * {env['LIMIT']}`, {env['ARM']}) | {aa_fail:.1f}% | {ab_fail:.1f}% | {aa_inc:.1f}% | {ab_inc:.1f}% | {reasons('AA')}, {reasons('AB')} | {aa_inv:.1f}%, {ab_inv:.1f}% | {mean('AA', 4):.0f} s (A/A), {mean('AB', 4):.0f} s (A/B) |")
print(f"| naive (one run each, fail above 1.10x) | {aa_naive:.1f}% | {ab_naive:.1f}% | - | - | - | - | {2 * float(env['REP'].rstrip('ms')) / (1000 if env['REP'].endswith('ms') else 1):.0f} s |")
print()
print(f"mean rounds: A/A {mean('AA', 3):.1f}, A/B {mean('AB', 3):.1f}; mean estimated p99 ratio: A/A {mean('AA', 5):.3f}, A/B {mean('AB', 5):.3f} (the regression the A/B trials carry)")
PY
