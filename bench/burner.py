"""CPU noise for the bench scripts (gate-quality.sh, profile-noise.sh): bursts of 20-300 ms of busy loop at random
times, one every 0.1-1 s, from a fixed seed (NOISE_SEED, default 1234) so that every run meets the same noise. Pin it
with taskset."""
import os
import random
import time

rng = random.Random(int(os.environ.get("NOISE_SEED", "1234")))
while True:
    time.sleep(rng.uniform(0.1, 1.0))
    end = time.perf_counter() + rng.uniform(0.02, 0.3)
    while time.perf_counter() < end:
        pass
