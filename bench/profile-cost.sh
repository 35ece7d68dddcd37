#!/usr/bin/env bash
# What does `profile: cpu` cost the target? (issue 41: "at the default period, the target's saturated throughput
# drops by at most 2%, Hodges-Lehmann 95% upper bound over at least 12 paired rounds")
#
# PAIRS pairs of runs of the built-in cpu kind (WORK of CPU per request, one thread pinned to TARGET_CPU)
# saturated by a closed load (CONNS connections, generator on GEN_CPU) for DURATION, one run without `profile:`
# and one with `profile: { cpu: {} }` (the default period, 999 Hz), the order alternating (off-on, on-off, ...)
# so that neither arm always goes first. Each run starts its own target. The drop of a pair is
# 1 - throughput(on) / throughput(off); printed: every pair, the Hodges-Lehmann estimate of the drop (the median
# of the Walsh averages) and its exact one-sided 95% upper bound (Wilcoxon signed rank).
#
#   bench/profile-cost.sh                  # 12 pairs of 4 s runs
#   PAIRS=24 DURATION=6s bench/profile-cost.sh
#   KEEP=dir bench/profile-cost.sh         # keep every run's results.json
#
# Knobs: WORK (50us), CONNS (8), TARGET_CPU (0), GEN_CPU (1), FREQUENCY (empty: the default), LOADGATE.
# Prints the time it took.
set -euo pipefail

PAIRS=${PAIRS:-12}
DURATION=${DURATION:-4s}
WORK=${WORK:-50us}
CONNS=${CONNS:-8}
TARGET_CPU=${TARGET_CPU:-0}
GEN_CPU=${GEN_CPU:-1}
FREQUENCY=${FREQUENCY:-}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
LOADGATE=${LOADGATE:-${CARGO_TARGET_DIR:-$ROOT/target}/release/loadgate}
[ -x "$LOADGATE" ] || { echo "missing $LOADGATE (cargo build --release -p loadgate)" >&2; exit 2; }

started=$(date +%s)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

if [ -n "$FREQUENCY" ]; then cpu="{ frequency: $FREQUENCY }"; else cpu="{}"; fi
spec() { # $1 = file, $2 = on or off
  local profile=""
  [ "$2" = on ] && profile="profile: { cpu: $cpu }"
  cat > "$1" <<YAML
version: 1
name: cost
hardware:
  generator: { cpus: "$GEN_CPU" }
  target: { cpus: "$TARGET_CPU" }
  on_mismatch: warn
  saturation: warn
target: { builtin: { kind: cpu, work: $WORK } }
$profile
scenarios:
  main:
    request: { path: / }
    load: { closed: { connections: $CONNS, duration: $DURATION } }
YAML
}

run() { # $1 = on or off, $2 = pair: prints the throughput
  spec "$work/$1.yaml" "$1"
  rm -rf "$work/out"
  "$LOADGATE" run "$work/$1.yaml" --out "$work/out" > "$work/stdout" 2>&1 || true
  if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP"; cp "$work/out/cost/results.json" "$KEEP/cost-$1-$2.json" 2>/dev/null || true; fi
  python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
s = r["scenarios"][0]
p = s.get("profile") or {}
tc = s.get("target_cpu") or {}
cpu = tc["cpu_ns"] / 1e3 / tc["requests"] if tc.get("requests") else float("nan")
print("%.1f %.2f %d" % (s["throughput"], cpu, p.get("samples", 0)))
' "$work/out/cost/results.json" 2>/dev/null || { tail -n 5 "$work/stdout" >&2; echo "nan nan 0"; }
}

echo "profile-cost: $PAIRS pairs, closed load of $CONNS connections for $DURATION against the cpu kind (work $WORK)," \
  "target on CPU $TARGET_CPU, generator on CPU $GEN_CPU; load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
: > "$work/pairs.tsv"
for i in $(seq 1 "$PAIRS"); do
  if [ $((i % 2)) = 1 ]; then order="off on"; else order="on off"; fi
  declare -A got=()
  for arm in $order; do got[$arm]=$(run "$arm" "$i"); done
  echo "$i ${order// /-} ${got[off]} ${got[on]}" >> "$work/pairs.tsv"
  printf '.' >&2
done
echo >&2

python3 - "$work/pairs.tsv" <<'PY'
import math, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
print("| pair | order | throughput off (req/s) | throughput on (req/s) | drop | target CPU/request off, on (us) | samples on |")
print("| --- | --- | --- | --- | --- | --- | --- |")
drops = []
for i, order, off, cpu_off, _, on, cpu_on, samples in rows:
    off, on = float(off), float(on)
    if math.isnan(off) or math.isnan(on) or off <= 0:
        print(f"| {i} | {order} | {off} | {on} | - | - | - |")
        continue
    d = 1.0 - on / off
    drops.append(d)
    print(f"| {i} | {order} | {off:.0f} | {on:.0f} | {100 * d:+.2f}% | {float(cpu_off):.2f}, {float(cpu_on):.2f} | {samples} |")
def hodges_lehmann(xs):
    """The Hodges-Lehmann estimate of xs and its exact one-sided 95% upper bound (Wilcoxon signed rank)."""
    n = len(xs)
    walsh = sorted((xs[i] + xs[j]) / 2 for i in range(n) for j in range(i, n))
    m = len(walsh)
    hl = (walsh[(m - 1) // 2] + walsh[m // 2]) / 2
    # The exact null distribution of the signed-rank statistic W+ (counts of the 2^n sign patterns).
    dist = [1]
    for k in range(1, n + 1):
        new = [0] * (len(dist) + k)
        for w, c in enumerate(dist):
            new[w] += c
            new[w + k] += c
        dist = new
    total = 2 ** n
    # The largest c with P(W+ <= c - 1) <= 5%: the upper bound is the (m + 1 - c)-th Walsh average.
    cum, c = 0, 0
    for w, cnt in enumerate(dist):
        if (cum + cnt) / total > 0.05:
            break
        cum += cnt
        c = w + 1
    upper = walsh[m - c] if c >= 1 else walsh[-1]
    return hl, upper, 1 - cum / total
n = len(drops)
if n < 2:
    sys.exit("too few pairs")
hl, upper, cover = hodges_lehmann(drops)
print()
print(f"{n} pairs: drop of throughput with profile: cpu, Hodges-Lehmann {100 * hl:+.2f}%, one-sided upper bound {100 * upper:+.2f}%"
      f" (exact coverage {100 * cover:.1f}%); goal: upper bound <= 2%: {'met' if upper <= 0.02 else 'NOT met'}")
# The same from the target's CPU time per request (schedstat): a saturated target on a CPU of its own serves
# 1 / (CPU per request), so 1 - off/on is the drop of that capacity, whatever share of the CPU a neighbour took.
cap = [1.0 - float(r[3]) / float(r[6]) for r in rows if not (math.isnan(float(r[3])) or math.isnan(float(r[6])))]
if len(cap) >= 2:
    hl, upper, cover = hodges_lehmann(cap)
    print(f"{len(cap)} pairs: drop of the capacity 1 / target_cpu_per_request, Hodges-Lehmann {100 * hl:+.2f}%,"
          f" one-sided upper bound {100 * upper:+.2f}% (exact coverage {100 * cover:.1f}%)")
PY
echo "profile-cost: took $(( $(date +%s) - started )) s; load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
