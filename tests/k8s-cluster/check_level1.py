#!/usr/bin/env python3
"""Level 1 of bench/k8s-local.sh: what the API server stored and what the Job controller made of `loadgate k8s`'s
objects, against what the renderer meant.

    check_level1.py RENDERED.json OBJECTS.json PODS.json N [EVENTS.json]

RENDERED.json is the rendered YAML as `kubectl create --dry-run=client -o json` reads it (no server involved);
OBJECTS.json the Job, Service and ConfigMap read back; PODS.json the Job's pods. Every value the renderer wrote
must be stored as written (the API may add defaults, never change or drop a value); each of the N pods must
carry its index, its host name and the container as rendered, plus the Job controller's JOB_COMPLETION_INDEX.
Exits 1 listing every difference.
"""
import json
import sys

problems = []


def subset(want, got, path):
    """Every key and value of `want` is in `got` (lists element by element, same length)."""
    if isinstance(want, dict):
        if not isinstance(got, dict):
            problems.append(f"{path}: rendered a mapping, stored {got!r}")
            return
        for k, v in want.items():
            if k not in got:
                problems.append(f"{path}.{k}: rendered {v!r}, dropped by the API server")
            else:
                subset(v, got[k], f"{path}.{k}")
    elif isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            problems.append(f"{path}: rendered {want!r}, stored {got!r}")
            return
        for i, (w, g) in enumerate(zip(want, got)):
            subset(w, g, f"{path}[{i}]")
    elif want != got:
        problems.append(f"{path}: rendered {want!r}, stored {got!r}")


def load_items(path):
    """The objects of a `kubectl ... -o json` output: a List's items, or JSON documents one after another."""
    text, docs, at = open(path).read(), [], 0
    decoder = json.JSONDecoder()
    while text[at:].strip():
        doc, end = decoder.raw_decode(text[at:].lstrip())
        at = len(text) - len(text[at:].lstrip()) + end
        docs.extend(doc["items"] if "items" in doc else [doc])
    return docs


def main():
    rendered = load_items(sys.argv[1])
    stored = load_items(sys.argv[2])
    pods = load_items(sys.argv[3])
    n = int(sys.argv[4])
    by_kind = {o["kind"]: o for o in stored}
    checked = []
    for r in rendered:
        kind = r["kind"]
        s = by_kind.get(kind)
        if s is None:
            problems.append(f"{kind} {r['metadata']['name']}: not stored")
            continue
        subset(r["metadata"].get("labels", {}), s["metadata"].get("labels", {}), f"{kind}.metadata.labels")
        for part in ("spec", "data"):
            if part in r:
                subset(r[part], s.get(part), f"{kind}.{part}")
        checked.append(kind)
    job = next(r for r in rendered if r["kind"] == "Job")
    name = job["metadata"]["name"]
    template = job["spec"]["template"]["spec"]
    container = template["containers"][0]

    # The pods the Job controller made: one per index, as the template says.
    indexes = sorted(int(p["metadata"]["annotations"].get("batch.kubernetes.io/job-completion-index", -1)) for p in pods)
    if indexes != list(range(n)):
        problems.append(f"pods' completion indexes {indexes}, expected 0..{n - 1}")
    uids = {p["metadata"]["labels"].get("batch.kubernetes.io/controller-uid") for p in pods}
    if len(uids) != 1 or None in uids:
        problems.append(f"pods' controller-uid labels (LOADGATE_RUN_ID) {uids}: expected one, shared")
    for p in pods:
        i = p["metadata"]["annotations"].get("batch.kubernetes.io/job-completion-index")
        ps = p["spec"]
        where = f"pod {p['metadata']['name']} (index {i})"
        if ps.get("hostname") != f"{name}-{i}" or ps.get("subdomain") != name:
            problems.append(f"{where}: hostname {ps.get('hostname')!r}, subdomain {ps.get('subdomain')!r}; the barrier "
                            f"`{name}-0.{name}` needs hostname {name}-{i} and subdomain {name}")
        for k, v in template.items():
            if k == "containers":
                continue
            subset(v, ps.get(k), f"{where}.spec.{k}")
        c = ps["containers"][0]
        for k, v in container.items():
            if k == "env":
                continue
            subset(v, c.get(k), f"{where}.containers[0].{k}")
        env = {e["name"]: e for e in c.get("env", [])}
        for e in container.get("env", []):
            subset(e, env.get(e["name"]), f"{where}.env[{e['name']}]")
        # The Job controller's own env var: the index from the pod's label (1.28+) or annotation.
        index_from = env.get("JOB_COMPLETION_INDEX", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
        if index_from not in (f"metadata.{m}['batch.kubernetes.io/job-completion-index']" for m in ("labels", "annotations")):
            problems.append(f"{where}: JOB_COMPLETION_INDEX (the shard's slice) from {index_from!r}")
        qos = p.get("status", {}).get("qosClass")
        if qos != "Guaranteed":
            problems.append(f"{where}: QoS class {qos!r}, the renderer means Guaranteed (requests = limits)")

    events = json.load(open(sys.argv[5]))["items"] if len(sys.argv) > 5 else []
    for e in events:
        if e.get("type") == "Warning":
            print(f"  event (Warning) {e['involvedObject']['kind']}/{e['involvedObject']['name']}: {e['reason']}: "
                  f"{e['message']}")

    print(f"  stored as rendered: {', '.join(checked)}; {len(pods)} pods, indexes {indexes}, one run id; each pod: "
          f"hostname {name}-<i>, subdomain {name}, args {container['args']}, env "
          f"{[e['name'] for e in pods[0]['spec']['containers'][0].get('env', [])] if pods else []}, resources "
          f"{container['resources']}, QoS Guaranteed, securityContext, volumes; the Job's podFailurePolicy "
          f"{[r['action'] for r in job['spec']['podFailurePolicy']['rules']]}, backoffLimitPerIndex "
          f"{job['spec']['backoffLimitPerIndex']}")
    if problems:
        for p in problems:
            print(f"  DIFFERS: {p}")
        sys.exit(1)


main()
