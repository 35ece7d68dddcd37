#!/usr/bin/env python3
"""Level 2 of bench/k8s-local.sh: the pods' timeline and the merged count against the server's.

    timeline.py PODS.json JOB.json MERGED_DIR SERVED N

Prints, per pod, when it was created, scheduled, its container started, the shards' common start (the barrier's
release), when its load started (that plus its recorded skew) and when the container ended; then the merged
`completed` against SERVED (nginx's count over the Job). Exits 1 unless the Job completed with N pods that each
ran once and exited 0, and the counts are equal.
"""
import datetime
import glob
import json
import sys


def ts(s):
    return datetime.datetime.fromisoformat(s.replace("Z", "+00:00")) if s else None


def main():
    pods = json.load(open(sys.argv[1]))["items"]
    job = json.load(open(sys.argv[2]))
    files = glob.glob(f"{sys.argv[3]}/**/results.json", recursive=True)
    served, n = int(sys.argv[4]), int(sys.argv[5])
    ok = True
    results = json.load(open(files[0])) if files else None
    shards = {s["index"]: s for s in (results or {}).get("shards", [])}
    t0 = min(ts(p["metadata"]["creationTimestamp"]) for p in pods)
    rel = lambda t: f"{(t - t0).total_seconds():+7.3f}s" if t else "      -"
    print(f"  timeline (seconds after the first pod was created, {t0.isoformat()}):")
    print("  index pod                            created scheduled  started   barrier  load@    ended   exit host")
    for p in sorted(pods, key=lambda p: int(p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"])):
        i = int(p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"])
        conds = {c["type"]: c for c in p["status"].get("conditions", [])}
        cs = p["status"].get("containerStatuses", [{}])[0]
        term = cs.get("state", {}).get("terminated", {})
        shard = shards.get(i + 1, {})
        planned = ts(shard.get("planned_start"))
        load = planned + datetime.timedelta(milliseconds=shard["start_skew_ms"]) if planned and shard.get("start_skew_ms") is not None else None
        print(f"  {i:5} {p['metadata']['name']:30} {rel(ts(p['metadata']['creationTimestamp']))} "
              f"{rel(ts(conds.get('PodScheduled', {}).get('lastTransitionTime')))} {rel(ts(term.get('startedAt')))} "
              f"{rel(planned)} {rel(load)} {rel(ts(term.get('finishedAt')))} {term.get('exitCode')!s:>4} "
              f"{shard.get('host', '-')}")
        if term.get("exitCode") != 0 or cs.get("restartCount", 0) != 0:
            ok = False
        if shard:
            print(f"        shard {i + 1}/{shard['count']}: skew {shard.get('start_skew_ms')} ms, late {shard.get('late')}, "
                  f"status {shard.get('status')}")
    st = job["status"]
    print(f"  job: succeeded {st.get('succeeded')}, failed {st.get('failed', 0)}, completedIndexes "
          f"{st.get('completedIndexes')!r}, start {st.get('startTime')}, completion {st.get('completionTime')}")
    if len(pods) != n or st.get("succeeded") != n:
        ok = False
    if results is None:
        print("  no merged results.json")
        sys.exit(1)
    completed = sum(s["requests"]["completed"] for s in results["scenarios"])
    sent = sum(s["requests"]["sent"] for s in results["scenarios"])
    print(f"  merged: {len(results.get('shards', []))} shards, sent {sent}, completed {completed}; nginx served "
          f"{served}: {'equal' if completed == served else 'DIFFERENT'}; outcome {results['outcome']['status']}; "
          f"{results['started_at']} .. {results.get('finished_at')}")
    for s in results["scenarios"]:
        load = s.get("load", {})
        lat = s.get("latency", {}).get("percentiles", {})
        print(f"  scenario {s.get('name', s.get('instance'))}: achieved {load.get('achieved_rate')}/s of "
              f"{load.get('target_rate')}/s, p50 {lat.get('p50')} us, p99 {lat.get('p99')} us")
    if completed != served or len(results.get("shards", [])) != n:
        ok = False
    sys.exit(0 if ok else 1)


main()
