//! Slices of a plan: for random plans and 1..64 shards, the shards together are the one-generator plan.

use loadgate_plan::{shard, ExecutionPlan, Share, Slice, StopCondition, WorkerShare};
use proptest::prelude::*;

/// A plan from a spec with `threads` workers, `connections`, and a closed load with a request quota or an
/// open load at `rate`.
fn plan(threads: u32, connections: u64, requests: Option<u64>, rate: u64) -> ExecutionPlan {
    let load = match requests {
        Some(n) => format!("closed: {{ connections: {connections}, requests: {n} }}"),
        None => format!("open: {{ rate: {rate}/s, connections: {connections}, duration: 10s }}"),
    };
    let yaml = format!(
        "version: 1\nname: sharded\nhardware:\n  generator: {{ threads: {threads} }}\ntarget:\n  base_url: http://127.0.0.1:9\n\
         scenarios:\n  s:\n    request: {{ path: \"/x?id={{{{ seq() }}}}\" }}\n    load: {{ {load} }}\n"
    );
    let spec = loadgate_spec::load_str("sharded.yaml", &yaml, &loadgate_spec::LoadOptions::default())
        .unwrap_or_else(|e| panic!("{}\n{yaml}", e.render()));
    loadgate_plan::compile(&spec)
}

fn gcd(a: u128, b: u128) -> u128 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// `a + b` reduced.
fn add(a: (u128, u128), b: Share) -> (u128, u128) {
    if b.numerator == 0 {
        return a;
    }
    let (n, d) = (a.0 * u128::from(b.denominator) + u128::from(b.numerator) * a.1, a.1 * u128::from(b.denominator));
    let g = gcd(n, d);
    (n / g, d / g)
}

fn same(a: (u128, u128), b: Share) -> bool {
    a.0 * u128::from(b.denominator.max(1)) == u128::from(b.numerator) * a.1
}

/// The global arrival positions `x = (j + prefix) / share` below `limit` a worker sends, when they are whole
/// numbers (`None` when one is not).
fn positions(share: Share, prefix: Share, limit: u128) -> Option<Vec<u128>> {
    if share.numerator == 0 {
        return Some(Vec::new());
    }
    let (a, b) = (u128::from(prefix.numerator), u128::from(prefix.denominator.max(1)));
    let (c, d) = (u128::from(share.numerator), u128::from(share.denominator));
    let mut out = Vec::new();
    for j in 0.. {
        // x = (j + a/b) / (c/d) = (j b + a) d / (b c)
        let num = (j * b + a) * d;
        let den = b * c;
        if num % den != 0 {
            return None;
        }
        let x = num / den;
        if x >= limit {
            break;
        }
        out.push(x);
    }
    Some(out)
}

/// Every shard of `plan` over `n`.
fn shards(plan: &ExecutionPlan, n: u32) -> Vec<ExecutionPlan> {
    (1..=n).map(|i| shard(plan, Slice::new(i, n).unwrap()).unwrap()).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn shards_union_to_the_whole_plan(
        threads in 1u32..6,
        connections in 1u64..300,
        requests in proptest::option::of(0u64..100_000),
        rate in 1u64..100_000,
        n in 1u32..64,
    ) {
        let whole = plan(threads, connections, requests, rate);
        let parts = shards(&whole, n);
        for (p, phase) in whole.phases.iter().enumerate() {
            let w = phase.workers.len();
            // Every stripe of every shard, by its place.
            let mut stripes: Vec<(u64, &WorkerShare)> = Vec::new();
            for (i, part) in parts.iter().enumerate() {
                prop_assert_eq!(part.hash.as_str(), whole.hash.as_str());
                prop_assert_eq!(part.shard, Some(Slice { index: i as u32 + 1, count: n }));
                let ph = &part.phases[p];
                prop_assert_eq!(ph.workers.len(), w);
                for s in &ph.workers {
                    let st = s.stripe.expect("a shard's worker has a stripe");
                    prop_assert_eq!(st.streams, (w as u64) * u64::from(n));
                    prop_assert_eq!(st.stream % u64::from(n), i as u64, "stripes interleave the shards");
                    stripes.push((st.stream, s));
                }
            }
            stripes.sort_by_key(|(g, _)| *g);
            // Places are a permutation of 0..W*N: `seq()` values never repeat across shards.
            let places: Vec<u64> = stripes.iter().map(|(g, _)| *g).collect();
            prop_assert_eq!(places, (0..(w as u64) * u64::from(n)).collect::<Vec<_>>());
            // Shares tile [0, 1) in the stripes' order.
            let mut prefix = (0u128, 1u128);
            for (g, s) in &stripes {
                prop_assert!(same(prefix, s.stripe.unwrap().prefix), "stripe {} starts where the one before ends", g);
                prefix = add(prefix, s.share);
            }
            let total = phase.workers.iter().fold((0u128, 1u128), |acc, w| add(acc, w.share));
            prop_assert_eq!(prefix, total);
            // Each worker's connections and quota are its stripes' sums.
            for (k, worker) in phase.workers.iter().enumerate() {
                let mine: Vec<&WorkerShare> =
                    stripes.iter().filter(|(g, _)| *g / u64::from(n) == k as u64).map(|(_, s)| *s).collect();
                prop_assert_eq!(mine.iter().map(|s| s.connections).sum::<u64>(), worker.connections);
                prop_assert_eq!(mine.iter().map(|s| s.requests).sum::<Option<u64>>(), worker.requests);
            }
            if let StopCondition::Requests { requests } = phase.load.stop {
                let quota: u64 = parts
                    .iter()
                    .map(|s| match s.phases[p].load.stop {
                        StopCondition::Requests { requests } => requests,
                        StopCondition::Duration { .. } => 0,
                    })
                    .sum();
                prop_assert_eq!(quota, requests);
            }
            prop_assert_eq!(
                parts.iter().map(|s| s.phases[p].load.connections.connections).sum::<u64>(),
                phase.load.connections.connections
            );
            // Where every stripe's share is equal (the connections divide evenly), the stripes send exactly the
            // whole plan's arrivals, each once, interleaved across the shards. (Unequal shares are striped in
            // proportion, as the whole plan's unequal workers are.)
            let limit = 4 * (w as u128) * u128::from(n);
            if stripes.iter().all(|(_, s)| s.share == stripes[0].1.share) {
                let sent: Option<Vec<Vec<u128>>> =
                    stripes.iter().map(|(_, s)| positions(s.share, s.stripe.unwrap().prefix, limit)).collect();
                let sent = sent.expect("equal shares send whole positions");
                let mut all: Vec<u128> = sent.into_iter().flatten().collect();
                all.sort_unstable();
                prop_assert_eq!(all, (0..limit).collect::<Vec<_>>());
            }
        }
    }
}

#[test]
fn shard_one_of_one_is_the_whole_plan_but_for_its_label() {
    let whole = plan(3, 10, None, 1000);
    let mut one = shard(&whole, Slice::new(1, 1).unwrap()).unwrap();
    assert_eq!(one.shard, Some(Slice { index: 1, count: 1 }));
    one.shard = None;
    for phase in &mut one.phases {
        for w in &mut phase.workers {
            let st = w.stripe.take().unwrap();
            assert_eq!(st.stream, w.worker as u64);
        }
    }
    assert_eq!(one, whole);
}

#[test]
fn even_splits_send_every_arrival_once() {
    // 4 connections on 2 workers over 2 shards: every stripe has a quarter of the arrivals.
    let whole = plan(2, 4, None, 1000);
    let parts = shards(&whole, 2);
    let mut all = Vec::new();
    for part in &parts {
        for s in &part.phases[0].workers {
            all.extend(positions(s.share, s.stripe.unwrap().prefix, 40).unwrap());
        }
    }
    all.sort_unstable();
    assert_eq!(all, (0..40).collect::<Vec<_>>());
}

#[test]
fn slices_parse_and_refuse() {
    assert_eq!("2/4".parse::<Slice>().unwrap(), Slice { index: 2, count: 4 });
    assert!("0/4".parse::<Slice>().is_err());
    assert!("5/4".parse::<Slice>().is_err());
    assert!("x".parse::<Slice>().is_err());
    let whole = plan(1, 1, None, 1);
    let one = shard(&whole, Slice::new(1, 2).unwrap()).unwrap();
    assert!(shard(&one, Slice::new(1, 2).unwrap()).is_err());
}
