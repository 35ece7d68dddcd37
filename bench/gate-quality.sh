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
#   NOISE=stall-together bench/gate-quality.sh   # machine-wide stalls (issue 46): every 3-8 s BOTH targets of a
#                                            # running trial are frozen together for 20-80 ms (SIGSTOP, SIGCONT), as a
#                                            # VM's steal time or a neighbour's burst does, and CPU bursts on the
#                                            # generator's core: the issue's profile (the same noise as `stall`, which
#                                            # already stops every target the trial's loadgate started)
#   NOISE=stall-apart bench/gate-quality.sh  # independent stalls: each target process on its own timer (every 3-8 s,
#                                            # 20-80 ms), so a stall hits one side at a time; CPU bursts on the
#                                            # generator's core as above
#   NOISE=gen-freeze bench/gate-quality.sh   # the generator (the trial's loadgate process) frozen for 20-80 ms every
#                                            # 3-8 s; no target stalls, no CPU bursts
#                                            # (every timer is drawn from a fixed seed, so runs meet the same noise)
#   DESIGN=duet bench/gate-quality.sh        # duet rounds (`gating: { order: duet }`): both targets loaded at the same
#                                            # instants by the same workers, the generator sending twice the load
#                                            # (DESIGN=abba, the default: the sides in alternating rounds)
#   ARM=power DETECT=10% BUDGET=3m bench/gate-quality.sh   # the detect/budget arm: loadgate plans the rounds
#                                            # (ARM=fixed, the default: repeat/max_repeat as REPEAT/MAX_REPEAT)
#   PROFILE=debug TRIALS=2 ARM=power BUDGET=20s RATE=400/s CONNS=32 bench/gate-quality.sh   # a smoke test
#   STREAMS=2 bench/gate-quality.sh          # two streams of trials at once (each one more neighbour)
#   KEEP=dir bench/gate-quality.sh           # keep every trial's results.json
#   DELAY_A=2ms DELAY_B=2200us CONNS=16 bench/gate-quality.sh   # the 2.0 / 2.2 ms case (see docs/gating.md)
#   KIND=cpu DELAY_A=1000us DELAY_B=1030us RATE=250/s DESIGN=duet NOISE=0 bench/gate-quality.sh
#                                            # CPU-bound servers (the built-in `cpu` kind burns DELAY_x of CPU per
#                                            # request; both targets on TARGET_CPU): +3% near a 1.05 limit
#   RATE=400/s DELAY_A=20ms DELAY_B=23ms REP=1s LIMIT=1.05 ARM=power DETECT=10% BUDGET=3m CONNS=32 DESIGN=duet NOISE=stall-together TRIALS=50 TRIALS_AB=30 bench/gate-quality.sh
#                                            # issue 46's settings: 20 ms service time at 400 requests/s, a +15%
#                                            # candidate, rounds of 1 s; run it with DESIGN=abba too, and with
#                                            # NOISE=stall-apart and NOISE=gen-freeze, for the issue's table
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
# verdict, for both gates; for loadgate's gate also the design, the median per-trial robust spread of the per-round
# log-ratio ln(p99_B / p99_A) (1.4826 x MAD over the kept rounds), the mean side-seconds (both sides' round
# durations added) and wall seconds of load per verdict (a duet round counts once: the longer of its two sides),
# and the median rounds the planner asked for (results.json's scenarios[].power_plan.rounds_needed, ARM=power)
# against the median rounds used.
#
# trials.tsv (KEEP=dir keeps it), one line per trial: kind (AA, AB), status, naive gate, rounds, side-seconds of
# load, estimated ratio, INCONCLUSIVE cause; then design (abba, shuffle or duet, as results.json's gating.order
# says), wall seconds of load, robust spread of the per-round log-ratio, planned rounds ("-" where not planned or
# not computable).
set -euo pipefail

TRIALS=${TRIALS:-50}
TRIALS_AB=${TRIALS_AB:-$TRIALS}  # fewer A/B trials than A/A ones: the A/B trials stop after this many
NOISE=${NOISE:-1}
TARGET_CPU=${TARGET_CPU:-0}
GEN_CPU=${GEN_CPU:-1}
DELAY_A=${DELAY_A:-50ms}
DELAY_B=${DELAY_B:-55ms}
KIND=${KIND:-delay}  # delay: the server sleeps DELAY_x per request; cpu: it burns DELAY_x of CPU
case "$KIND" in delay) KEY=delay ;; cpu) KEY=work ;; *) echo "KIND is delay or cpu" >&2; exit 2 ;; esac
RATE=${RATE:-2000/s}
CONNS=${CONNS:-256}
REP=${REP:-500ms}
REPEAT=${REPEAT:-12}
MAX_REPEAT=${MAX_REPEAT:-160}
LIMIT=${LIMIT:-1.05}
ARM=${ARM:-fixed}
DESIGN=${DESIGN:-abba}
DETECT=${DETECT:-10%}
BUDGET=${BUDGET:-3m}
case "$NOISE" in 1) NOISE=cpu ;; esac
case "$NOISE" in 0|cpu|stall|stall-together|stall-apart|gen-freeze) ;;
  *) echo "unknown NOISE=$NOISE (0, 1 or cpu, stall, stall-together, stall-apart, gen-freeze)" >&2; exit 2 ;; esac
case "$DESIGN" in abba|duet) ;; *) echo "unknown DESIGN=$DESIGN (abba or duet)" >&2; exit 2 ;; esac
HERE=$(cd "$(dirname "$0")" && pwd)
# PROFILE=profiling uses the build with debug info (`cargo build --profile profiling -p loadgate`), for perf.
PROFILE=${PROFILE:-release}
LOADGATE=${LOADGATE:-${CARGO_TARGET_DIR:-$HERE/../target}/$PROFILE/loadgate}
[ -x "$LOADGATE" ] || { echo "missing $LOADGATE (cargo build --profile $PROFILE -p loadgate)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "missing python3" >&2; exit 2; }

work=$(mktemp -d)
noise_pid=""
cleanup() {
  # The noise first: a staller catches SIGTERM and continues the processes it stopped before it exits; wait for it
  # (at most about 2 s) so that no stopped process is left behind it.
  local p i
  if [ -n "$noise_pid" ]; then
    # shellcheck disable=SC2086
    kill $noise_pid 2>/dev/null || true
    for i in $(seq 1 20); do
      # shellcheck disable=SC2086
      kill -0 $noise_pid 2>/dev/null || break
      sleep 0.1
    done
    # shellcheck disable=SC2086
    kill -KILL $noise_pid 2>/dev/null || true
  fi
  # Then, whatever happened to the staller: continue every running trial's loadgate and its targets, so that none
  # stays stopped (a stopped process keeps a pending SIGINT or SIGTERM until it is continued).
  for f in "$work"/s*/pid; do
    [ -f "$f" ] || continue
    p=$(cat "$f" 2>/dev/null) || continue
    [ -n "$p" ] || continue
    kill -CONT "$p" 2>/dev/null || true
    for i in $(pgrep -P "$p" 2>/dev/null); do kill -CONT "$i" 2>/dev/null || true; done
  done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

burner() { # $1 = CPU: bench/burner.py's bursts of 20-300 ms, one every 0.1-1 s, the same seed everywhere
  taskset -c "$1" python3 "$HERE/burner.py" &
}

# The stallers. Every running trial's loadgate writes its pid to $work/s*/pid (one per stream); its targets are
# its children. $1 = what stops:
#   together (NOISE=stall, stall-together): every 3-8 s all the targets of every running trial stop together for
#     20-80 ms (SIGSTOP, then SIGCONT), as a runner's VM is descheduled;
#   apart (NOISE=stall-apart): each target process on its own timer (first stall 3-8 s after it is seen, then every
#     3-8 s after the last one ended), stopped for 20-80 ms, so a stall hits one side at a time;
#   gen (NOISE=gen-freeze): the loadgate process itself (the generator) stops for 20-80 ms every 3-8 s.
# The draws come from a fixed seed, NOISE_SEED (default 4321: the together timer draws exactly as the first staller
# did); one trial per invocation with the same seed meets the same stalls at the same moments of every trial, so a
# driver that runs one trial at a time should vary it. On SIGTERM (the
# cleanup) or SIGHUP, or when the script is gone (its parent changed), a staller continues what it stopped and exits.
staller() {
  python3 - "$work" "$1" "${NOISE_SEED:-4321}" <<'PY' &
import glob, os, random, signal, subprocess, sys, time
work, mode = sys.argv[1], sys.argv[2]
parent = os.getppid()  # the script: when it is gone (even killed outright), the staller is reparented and ends
rng = random.Random(int(sys.argv[3]))
stopped = set()

def leave(*_):
    raise SystemExit(0)

signal.signal(signal.SIGTERM, leave)
signal.signal(signal.SIGHUP, leave)

def orphaned():
    return os.getppid() != parent

def loadgates():
    pids = []
    for f in glob.glob(os.path.join(work, "s*", "pid")):
        try:
            pids.append(int(open(f).read().strip()))
        except (OSError, ValueError):
            pass
    return pids

def targets():
    pids = []
    for parent_pid in loadgates():
        try:
            out = subprocess.run(["pgrep", "-P", str(parent_pid)], capture_output=True, text=True).stdout
            pids += [int(p) for p in out.split()]
        except (OSError, ValueError):
            pass
    return pids

def stop(p):  # noted before the signal, so that a SIGTERM between the two still continues it
    stopped.add(p)
    try:
        os.kill(p, signal.SIGSTOP)
    except OSError:
        stopped.discard(p)

def cont(p):
    try:
        os.kill(p, signal.SIGCONT)
    except OSError:
        pass
    stopped.discard(p)

def stall_all(pick):  # the together and gen profiles: one timer for everything pick() returns
    while not orphaned():
        time.sleep(rng.uniform(3.0, 8.0))
        if orphaned():
            break
        for p in pick():
            stop(p)
        time.sleep(rng.uniform(0.02, 0.08))
        for p in list(stopped):
            cont(p)

def stall_apart():  # one timer per target process: the next stall (or the end of the current one) per pid
    due = {}  # pid -> (time, "stop" or "cont")
    looked = 0.0
    while not orphaned():
        for p, (at, what) in sorted(due.items(), key=lambda kv: kv[1][0]):
            if at > time.monotonic():
                continue
            if what == "stop":
                stop(p)
                due[p] = (time.monotonic() + rng.uniform(0.02, 0.08), "cont")
            else:
                cont(p)
                due[p] = (time.monotonic() + rng.uniform(3.0, 8.0), "stop")
        # Look for new targets (and forget gone ones) every 0.2 s, never during a stall (pgrep takes milliseconds
        # that would lengthen it).
        if not stopped and time.monotonic() >= looked + 0.2:
            alive = set(targets())
            looked = time.monotonic()
            for p in alive:
                if p not in due:
                    due[p] = (looked + rng.uniform(3.0, 8.0), "stop")
            for p in list(due):
                if p not in alive:
                    del due[p]
        nxt = min([at for at, _ in due.values()] + [looked + 0.2])
        time.sleep(max(0.0, nxt - time.monotonic()))

try:
    if mode == "together":
        stall_all(targets)
    elif mode == "apart":
        stall_apart()
    elif mode == "gen":
        stall_all(loadgates)
finally:
    for p in list(stopped):
        cont(p)
PY
}

noise_pids=()
case "$NOISE" in
  cpu) burner "$TARGET_CPU"; noise_pids+=($!) ;;
  stall|stall-together) burner "$GEN_CPU"; noise_pids+=($!); staller together; noise_pids+=($!) ;;
  stall-apart) burner "$GEN_CPU"; noise_pids+=($!); staller apart; noise_pids+=($!) ;;
  gen-freeze) staller gen; noise_pids+=($!) ;;
esac
noise_pid="${noise_pids[*]:-}"

if [ "$ARM" = power ]; then
  GATING="detect: $DETECT, budget: $BUDGET"
  ARM_TEXT="detect: $DETECT, budget: $BUDGET (rounds planned from an 8-round pilot of $REP per side)"
else
  GATING="repeat: $REPEAT, max_repeat: $MAX_REPEAT"
  ARM_TEXT="$REPEAT-$MAX_REPEAT rounds of $REP per side"
fi
if [ "$DESIGN" = duet ]; then GATING="$GATING, order: duet"; fi
GATING="{ $GATING }"

spec() { # $1 = file, $2 = candidate delay
  cat > "$1" <<YAML
version: 1
name: gate
hardware:
  generator: { cpus: "$GEN_CPU" }
  target: { cpus: "$TARGET_CPU" }
  on_mismatch: warn
target: { builtin: { kind: $KIND, $KEY: $DELAY_A } }
candidate: { builtin: { kind: $KIND, $KEY: $2 } }
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
      python3 - "$dir/out/gate/results.json" "$kind" "$DESIGN" >> "$dir/trials.tsv" <<'PY'
import json, math, sys
# The first 7 columns as before; then design, wall seconds of load, spread of ln(p99_B / p99_A), planned rounds.
def spread(b, a):  # 1.4826 x MAD of the per-round log-ratio over the kept rounds (repetitions), paired by round
    def p99s(reps):
        out = {}
        for i, x in enumerate(reps):
            try:
                out[x.get("round", i + 1)] = float(x["latency"]["percentiles"]["p99"])
            except (KeyError, TypeError, ValueError):
                pass
        return out
    pb, pa = p99s(b), p99s(a)
    d = sorted(math.log(pb[k] / pa[k]) for k in pb if k in pa and pb[k] > 0 and pa[k] > 0)
    if len(d) < 2:
        return "-"
    med = lambda v: (v[(len(v) - 1) // 2] + v[len(v) // 2]) / 2
    m = med(d)
    return f"{1.4826 * med(sorted(abs(x - m) for x in d)):.4f}"
def wall(b, a, duet):  # a duet round's sides run at once: the longer one counts; otherwise both, one after the other
    if not duet:
        return sum(x["duration"] for x in b) + sum(x["duration"] for x in a)
    rb = {x.get("round", i + 1): x["duration"] for i, x in enumerate(b)}
    ra = {x.get("round", i + 1): x["duration"] for i, x in enumerate(a)}
    return sum(max(rb.get(k, 0.0), ra.get(k, 0.0)) for k in set(rb) | set(ra))
def planned(r, s, st):  # the power plan's rounds (pilot included); "-" without a plan or without detect
    plan = s.get("power_plan") or st.get("power_plan") or {}
    n = plan.get("rounds_needed") if isinstance(plan, dict) else None
    return str(n) if isinstance(n, (int, float)) and not isinstance(n, bool) else "-"
design = sys.argv[3]
try:
    r = json.load(open(sys.argv[1]))
    design = (r.get("gating") or {}).get("order") or design
    s = r["scenarios"][0]
    st = s["verdicts"][0].get("statistics") or {}
    if r["outcome"]["exit_code"] in (3, 4):
        st = dict(st, status="invalid")
    b, a = s["repetitions"], s["ab_baseline"]["repetitions"]
    naive = "fail" if b[0]["latency"]["percentiles"]["p99"] > 1.10 * a[0]["latency"]["percentiles"]["p99"] else "pass"
    load = sum(x["duration"] for x in b) + sum(x["duration"] for x in a)
    cause = st.get("cause") or ("at_the_limit" if st.get("reason") == "at the limit" else "other")
    extra = [design, f"{wall(b, a, design == 'duet'):.1f}", spread(b, a), planned(r, s, st)]
    print("\t".join([sys.argv[2], st.get("status", "error"), naive, str(len(b)), f"{load:.1f}", f"{st.get('estimate', 0):.3f}", cause] + extra))
except (OSError, KeyError, IndexError, ValueError, TypeError, AttributeError):
    print("\t".join([sys.argv[2], "error", "error", "0", "0", "0", "other", design, "0", "-", "-"]))
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

python3 - "$results" "$TRIALS" "$NOISE" "LIMIT=$LIMIT" "REPEAT=$REPEAT" "MAX_REPEAT=$MAX_REPEAT" "REP=$REP" "ARM=$ARM_TEXT" "DESIGN=$DESIGN" <<'PY'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
def rate(kind, col, value):
    sel = [r for r in rows if r[0] == kind]
    return 100.0 * sum(1 for r in sel if r[col] == value) / max(1, len(sel)), len(sel)
def mean(kind, col):
    sel = [float(r[col]) for r in rows if r[0] == kind]
    return sum(sel) / max(1, len(sel))
def numbers(kind, col):  # the column's numeric values (rows without it, or with "-", left out)
    out = []
    for r in rows:
        if r[0] == kind and len(r) > col:
            try:
                out.append(float(r[col]))
            except ValueError:
                pass
    return out
def median(v):
    v = sorted(v)
    return (v[(len(v) - 1) // 2] + v[len(v) // 2]) / 2 if v else None
def average(v):
    return sum(v) / len(v) if v else None
def fmt(x, f):
    return "-" if x is None else format(x, f)
aa_fail, n_aa = rate("AA", 1, "fail"); ab_fail, n_ab = rate("AB", 1, "fail")
aa_inc, _ = rate("AA", 1, "inconclusive"); ab_inc, _ = rate("AB", 1, "inconclusive")
aa_inv, _ = rate("AA", 1, "invalid"); ab_inv, _ = rate("AB", 1, "invalid")
aa_naive, _ = rate("AA", 2, "fail"); ab_naive, _ = rate("AB", 2, "fail")
noise = {"cpu": "CPU bursts on the target's core",
         "stall": "target stalls (SIGSTOP 20-80 ms every 3-8 s) and CPU bursts on the generator's core",
         "stall-together": "machine-wide stalls (both targets SIGSTOPped together 20-80 ms every 3-8 s) and CPU bursts on the generator's core",
         "stall-apart": "independent stalls (each target SIGSTOPped on its own timer, 20-80 ms every 3-8 s) and CPU bursts on the generator's core",
         "gen-freeze": "generator freezes (the loadgate process SIGSTOPped 20-80 ms every 3-8 s)"}.get(sys.argv[3], "off")
print(f"{n_aa} A/A and {n_ab} A/B trials, noise: {noise}")
def reasons(kind):
    sel = [r for r in rows if r[0] == kind and r[1] == "inconclusive"]
    count = lambda c: sum(1 for r in sel if (r[6] if len(r) > 6 else "other") == c)
    budget, limit = count("budget"), count("at_the_limit")
    return f"{budget} / {limit} / {len(sel) - budget - limit}"
def rounds(kind):  # median planned rounds (trials with a plan) against median rounds used (all trials)
    return f"{fmt(median(numbers(kind, 10)), '.0f')} vs {fmt(median(numbers(kind, 3)), '.0f')}"
print()
env = dict(a.split("=", 1) for a in sys.argv[4:])
design = env["DESIGN"]
rep = float(env['REP'].rstrip('ms')) / (1000 if env['REP'].endswith('ms') else 1)
print("| gate | false alarms (A/A FAIL) | detection (A/B FAIL) | inconclusive A/A | inconclusive A/B | inconclusive reasons A/A, A/B (budget / at the limit / other) | invalid A/A, A/B | load per verdict (mean side-seconds) | wall seconds of load per verdict (mean) | spread of ln(p99 B/A) per round (median of trials' 1.4826 x MAD) | rounds planned vs used (median) |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
print(f"| loadgate ({design}: A/B paired rounds, `p99 <= baseline * {env['LIMIT']}`, {env['ARM']}) | {aa_fail:.1f}% | {ab_fail:.1f}% | {aa_inc:.1f}% | {ab_inc:.1f}% | {reasons('AA')}, {reasons('AB')} | {aa_inv:.1f}%, {ab_inv:.1f}% | {mean('AA', 4):.0f} s (A/A), {mean('AB', 4):.0f} s (A/B) | {fmt(average(numbers('AA', 8)), '.0f')} s (A/A), {fmt(average(numbers('AB', 8)), '.0f')} s (A/B) | {fmt(median(numbers('AA', 9)), '.3f')} (A/A), {fmt(median(numbers('AB', 9)), '.3f')} (A/B) | {rounds('AA')} (A/A), {rounds('AB')} (A/B) |")
print(f"| naive (one run each, fail above 1.10x) | {aa_naive:.1f}% | {ab_naive:.1f}% | - | - | - | - | {2 * rep:.0f} s | {(rep if design == 'duet' else 2 * rep):.1f} s | - | - |")
print()
print(f"mean rounds: A/A {mean('AA', 3):.1f}, A/B {mean('AB', 3):.1f}; mean estimated p99 ratio: A/A {mean('AA', 5):.3f}, A/B {mean('AB', 5):.3f} (the regression the A/B trials carry)")
PY
