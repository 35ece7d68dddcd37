#!/bin/bash
# Alternating ABBA and duet trials of bench/gate-quality.sh (one A/A and one A/B trial per invocation, each
# alternation with its own NOISE_SEED, the same for both designs), so that the machine's quieter and busier minutes
# and the same stalls weigh on both designs alike. What docs/gating.md's duet tables were measured with:
#
#   OUT=/tmp/duet N=4 NOISE=stall-together RATE=400/s DELAY_A=20ms DELAY_B=23ms REP=1s LIMIT=1.05 CONNS=32 \
#     ARM=power DETECT=10% BUDGET=3m bench/gate-alternate.sh     # then $OUT/abba.tsv and $OUT/duet.tsv
#
# Every other variable is passed on to gate-quality.sh (LOADGATE, KIND, ...).
set -u
OUT=${OUT:-/tmp/duet-exp}; N=${N:-4}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
SCRIPT=${SCRIPT:-bench/gate-quality.sh}
for i in $(seq 1 "$N"); do
  for d in abba duet; do
    KEEP="$OUT/$d-$i" NOISE_SEED=$((1000 + i)) DESIGN=$d TRIALS=1 TRIALS_AB=1 "$SCRIPT" > "$OUT/$d-$i.txt" 2>&1
    echo "$(date +%T) $d $i done" >> "$OUT/progress.log"
  done
done
for d in abba duet; do cat "$OUT"/$d-*/trials.tsv > "$OUT/$d.tsv" 2>/dev/null; done
echo "all done" >> "$OUT/progress.log"
