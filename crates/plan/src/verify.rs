//! Verification before the load (`verify:`, TechEmpower's verify): the phase that sends a scenario's requests
//! once (or a few times) and checks their responses. A pure function of the phase, so each shard and each side
//! of an A/B run verifies the same requests.

use loadgate_model::units::Duration;

use crate::model::*;

/// The verification phase of `phase`: a closed load of one connection on one worker, `requests` requests (or,
/// with a session, sessions), without pipelining, SLOs or a capacity search. A mix becomes a session of its
/// entries in their order, each keeping its name, so that every entry is sent and checked.
pub fn probe(phase: &Phase, requests: u32) -> Phase {
    let requests = u64::from(requests.clamp(1, 100));
    let mut p = phase.clone();
    if !p.mix.is_empty() && p.session.is_empty() {
        p.session =
            p.mix.iter().map(|m| SessionStep::Request { name: m.name.clone(), request: m.request.clone() }).collect();
        p.mix.clear();
    }
    p.load = LoadPlan {
        arrival: Arrival::Closed,
        stop: StopCondition::Requests { requests },
        connections: ConnectionPolicy {
            connections: 1,
            pipeline: 1,
            pipeline_mode: phase.load.connections.pipeline_mode,
            pipeline_reads: PipelineReads::default(),
            keep_alive: phase.load.connections.keep_alive,
            streams: 1,
            connect_rate: ConnectRate::default(),
        },
    };
    p.workers = vec![WorkerShare {
        worker: 0,
        connections: 1,
        requests: Some(requests),
        share: Share { numerator: 1, denominator: 1 },
        stripe: None,
    }];
    p.slos.clear();
    p.capacity = None;
    p.start_offset = None;
    p.duration = None;
    p.cooldown = Duration::default();
    p.repeat = None;
    p.gate = false;
    p
}

/// The requests a phase's results tell apart, with the names their checks and breakdowns carry: the session's
/// request steps, the mix's entries, or the single request (named [`SINGLE_REQUEST`]).
pub fn entries(phase: &Phase) -> Vec<(&str, &RequestPlan)> {
    if !phase.session.is_empty() {
        phase
            .session
            .iter()
            .filter_map(|s| match s {
                SessionStep::Request { name, request } => Some((name.as_str(), request)),
                SessionStep::Think { .. } => None,
            })
            .collect()
    } else if !phase.mix.is_empty() {
        phase.mix.iter().map(|m| (m.name.as_str(), &m.request)).collect()
    } else {
        vec![(SINGLE_REQUEST, &phase.request)]
    }
}

/// The name of a phase's single request (not a mix, not a session) in its check counts.
pub const SINGLE_REQUEST: &str = "request";

/// What makes two phases' verifications the same: their requests (a matrix of 100 cells over one request
/// verifies once).
pub fn probe_key(phase: &Phase) -> String {
    serde_json::to_string(&(&phase.request, &phase.mix, &phase.session, &phase.checks)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plan crate reads no YAML: the phase comes from the plan's own JSON, with an SLO added.
    fn phase_of(json: &str) -> Phase {
        let mut p: Phase = serde_json::from_str(json).expect("a phase");
        p.slos.push(loadgate_model::Slo::parse("p99 < 10ms").unwrap());
        p
    }

    const PHASE: &str = r#"{
        "index": 0, "scenario": "s", "name": "s", "matrix": [], "gate": true, "start_offset": null,
        "duration": "10s", "cooldown": "0s",
        "request": {"method": "GET", "path": "/a", "headers": [], "body": null, "dynamic": null},
        "mix": [
            {"name": "a", "weight": 9, "request": {"method": "GET", "path": "/a", "headers": [], "body": null, "dynamic": null}},
            {"name": "b", "weight": 1, "request": {"method": "POST", "path": "/b", "headers": [], "body": "x", "dynamic": null}}
        ],
        "timeout": "2s",
        "load": {"arrival": {"kind": "constant", "rate": "1000/s"}, "stop": {"kind": "duration", "duration": "10s"},
                 "connections": {"connections": 64, "pipeline": 1, "pipeline_mode": "window", "keep_alive": true}},
        "workers": [{"worker": 0, "connections": 32, "requests": null, "share": {"numerator": 1, "denominator": 2}},
                    {"worker": 1, "connections": 32, "requests": null, "share": {"numerator": 1, "denominator": 2}}],
        "slos": []
    }"#;

    #[test]
    fn a_mix_is_verified_entry_by_entry_on_one_connection() {
        let phase = phase_of(PHASE);
        let p = probe(&phase, 2);
        assert!(p.mix.is_empty());
        let names: Vec<&str> = p
            .session
            .iter()
            .filter_map(|s| match s {
                SessionStep::Request { name, .. } => Some(name.as_str()),
                SessionStep::Think { .. } => None,
            })
            .collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(p.load.arrival, Arrival::Closed);
        assert_eq!(p.load.stop, StopCondition::Requests { requests: 2 });
        assert_eq!(p.load.connections.connections, 1);
        assert_eq!(p.workers.len(), 1);
        assert_eq!(p.workers[0].requests, Some(2));
        assert!(p.slos.is_empty() && !p.gate && p.capacity.is_none());
        // Bounded: at most 100, at least 1.
        assert_eq!(probe(&phase, 1000).load.stop, StopCondition::Requests { requests: 100 });
        assert_eq!(probe(&phase, 0).load.stop, StopCondition::Requests { requests: 1 });
        // The same requests verify once.
        assert_eq!(probe_key(&phase), probe_key(&Phase { index: 3, name: "other".into(), ..phase.clone() }));
    }
}
