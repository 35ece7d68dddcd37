"""The Python side of tests/otava.rs: runs series through Apache Otava and MongoDB's signal-processing-algorithms.

Reads {"cases": [{"name", "series", "window", "max_pvalue", "min_magnitude"}]} as JSON on stdin and writes, per
case, the change points of:
- "otava": otava.analysis.compute_change_points as released;
- "otava_fixed": the same split, and Otava's merge with the neighbours of a dropped point both tested again
  (Otava's merge tests the point after it and the one after that, so the point before keeps its old test);
- "mongo": signal_processing_algorithms' e_divisive (permutation test, p 0.05, 100 permutations, numpy's
  global generator seeded with 1234: the result of a permutation test is random).
"""

import json
import math
import sys

import numpy as np
from otava.analysis import TTestSignificanceTester, compute_change_points, split
from signal_processing_algorithms.energy_statistics.energy_statistics import e_divisive


def number(x):
    x = float(x)
    return None if math.isnan(x) or math.isinf(x) else x


def described(points):
    return [
        {
            "index": int(p.index),
            "p_value": number(p.stats.pvalue),
            "mean_before": number(p.stats.mean_1),
            "mean_after": number(p.stats.mean_2),
            "stddev_before": number(p.stats.std_1),
            "stddev_after": number(p.stats.std_2),
        }
        for p in points
    ]


def merge_fixed(change_points, series, max_pvalue, min_magnitude):
    """Otava's merge (analysis.merge), with the two neighbours of the dropped point tested again."""
    tester = TTestSignificanceTester(max_pvalue)
    while change_points:
        weakest = max(change_points, key=lambda c: c.stats.pvalue)
        if weakest.stats.pvalue < max_pvalue:
            weakest = min(change_points, key=lambda c: c.stats.change_magnitude())
            if weakest.stats.change_magnitude() > min_magnitude:
                return change_points
        at = change_points.index(weakest)
        del change_points[at]
        intervals = tester.get_intervals(change_points)
        for k in (at - 1, at):
            if 0 <= k < len(change_points):
                change_points[k] = tester.change_point(change_points[k].to_candidate(), series, intervals)
    return change_points


def main():
    cases = json.load(sys.stdin)["cases"]
    out = []
    for case in cases:
        series = [float(v) for v in case["series"]]
        window, max_pvalue, min_magnitude = case["window"], case["max_pvalue"], case["min_magnitude"]
        stock, _ = compute_change_points(list(series), window, max_pvalue, min_magnitude)
        first = max_pvalue * 10 if max_pvalue < 0.05 else (max_pvalue * 2 if max_pvalue < 0.5 else max_pvalue)
        fixed = merge_fixed(split(list(series), window, first), list(series), max_pvalue, min_magnitude)
        np.random.seed(1234)
        mongo = sorted(int(i) for i in e_divisive(np.array(series), pvalue=0.05, permutations=100))
        out.append({"name": case["name"], "otava": described(stock), "otava_fixed": described(fixed), "mongo": mongo})
    json.dump({"cases": out}, sys.stdout)


if __name__ == "__main__":
    main()
