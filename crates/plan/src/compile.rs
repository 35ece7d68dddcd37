//! Spec -> ExecutionPlan.

use sha2::{Digest, Sha256};

use loadgate_model::units::Duration;
use loadgate_model::{Load, Ready, Spec, Stop, Target};

use crate::model::*;

/// Compiles a validated spec into its execution plan. Pure and deterministic: the same spec and variables give
/// the same plan, and the same hash, on any machine.
pub fn compile(spec: &Spec) -> ExecutionPlan {
    let hardware = hardware_plan(spec);
    let worker_count = hardware.workers.len();
    let mut phases = Vec::new();
    let mut offset: Option<Duration> = Some(Duration::ZERO);
    let seed = spec.seed.unwrap_or_else(|| {
        let digest = Sha256::digest(spec.name.as_bytes());
        u64::from_be_bytes([digest[0], digest[1], digest[2], digest[3], digest[4], digest[5], digest[6], digest[7]])
    });
    for scenario in &spec.scenarios {
        for cell in &scenario.cells {
            let name = if cell.bindings.is_empty() {
                scenario.name.clone()
            } else {
                let parts: Vec<String> = cell.bindings.iter().map(|(k, v)| format!("{k}={v}")).collect();
                format!("{}[{}]", scenario.name, parts.join(","))
            };
            let mut load = load_plan(&cell.load);
            load.connections.streams = cell.streams.max(1);
            if let (Arrival::Users { .. }, StopCondition::Duration { duration }) = (&load.arrival, &mut load.stop) {
                // A profile of `at_once` steps only injects everything at the start and takes no time: its
                // users get up to the request timeout to finish (the phase ends as soon as they have).
                if duration.0.is_zero() {
                    *duration = cell.timeout;
                }
            }
            let workers = split(&load, worker_count);
            let duration = cell.load.duration();
            let phase = Phase {
                index: phases.len(),
                scenario: scenario.name.clone(),
                name,
                matrix: cell.bindings.clone(),
                gate: scenario.gate,
                repeat: scenario.repeat,
                start_offset: offset,
                duration,
                cooldown: scenario.cooldown,
                request: request_plan(&cell.request),
                mix: cell
                    .mix
                    .iter()
                    .map(|m| MixEntry { name: m.name.clone(), weight: m.weight, request: request_plan(&m.request) })
                    .collect(),
                timeout: cell.timeout,
                load,
                workers,
                capacity: match &cell.load {
                    Load::Capacity { search, .. } => Some(*search),
                    _ => None,
                },
                slos: cell.slos.clone(),
                seed: seed ^ mix64(phases.len() as u64),
                session: cell
                    .session
                    .iter()
                    .map(|s| match s {
                        loadgate_model::SessionStep::Request { name, request } => {
                            SessionStep::Request { name: name.clone(), request: request_plan(request) }
                        }
                        loadgate_model::SessionStep::Think { duration } => SessionStep::Think { duration: *duration },
                    })
                    .collect(),
                profile: scenario.profile.clone(),
                checks: PhaseChecks {
                    cookies: cell.cookies,
                    failed_checks: cell.failed_checks,
                    variables: cell.variables.clone(),
                    verify: verifies(spec.verify.scenarios, cell),
                    check_body_limit: cell.check_body_limit,
                },
            };
            offset = match (offset, duration) {
                (Some(o), Some(d)) => Some(Duration(o.0 + d.0 + scenario.cooldown.0)),
                _ => None,
            };
            phases.push(phase);
        }
    }
    let mut plan = ExecutionPlan {
        format_version: PLAN_FORMAT_VERSION,
        name: spec.name.clone(),
        description: spec.description.clone(),
        seed,
        vars: spec
            .vars
            .iter()
            .map(|(k, v)| {
                let source = match v.source {
                    loadgate_model::VarSource::Default => VarSource::Default,
                    loadgate_model::VarSource::Environment => VarSource::Environment,
                    loadgate_model::VarSource::CommandLine => VarSource::CommandLine,
                };
                (k.clone(), ResolvedVar { value: v.value.clone(), source })
            })
            .collect(),
        hardware,
        target: target_plan(&spec.target),
        candidate: spec.candidate.as_ref().map(target_plan),
        gating: spec.gating.clone(),
        expected_duration: offset.map(|o| {
            // The last phase's cooldown does not delay anything.
            let last_cooldown = spec.scenarios.last().map(|s| s.cooldown.0).unwrap_or_default();
            Duration(o.0.saturating_sub(last_cooldown))
        }),
        sweeps: spec
            .scenarios
            .iter()
            .filter_map(|s| {
                let sweep = s.sweep.as_ref()?;
                Some(SweepPlan {
                    scenario: s.name.clone(),
                    gate: s.gate,
                    over: sweep.over.clone(),
                    slos: sweep.slos.clone(),
                    cells: phases.iter().filter(|p| p.scenario == s.name).map(|p| p.name.clone()).collect(),
                })
            })
            .collect(),
        phases,
        history: spec.history.clone(),
        verify: spec.verify,
        hash: String::new(),
        shard: None,
    };
    plan.hash = plan_hash(&plan);
    plan
}

/// The plan's identity: SHA-256 over its canonical JSON, with the hash itself blank and where each variable's
/// value came from left out (the same values from `--set` or the environment are the same plan).
pub fn plan_hash(plan: &ExecutionPlan) -> String {
    let mut canonical = plan.clone();
    canonical.hash = String::new();
    for var in canonical.vars.values_mut() {
        var.source = VarSource::Default;
    }
    let json = serde_json::to_vec(&canonical).unwrap_or_default();
    let digest = Sha256::digest(&json);
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// A phase index hashed into 64 well-mixed bits (the splitmix64 finalizer), so that neighbouring phases get
/// unrelated seeds.
fn mix64(index: u64) -> u64 {
    loadgate_model::splitmix64(&mut { index })
}

/// Whether a cell is verified before the load: its own `verify:` decides, else the spec's (`auto`: when one of
/// its requests has checks); never a replay.
fn verifies(mode: loadgate_model::VerifyScenarios, cell: &loadgate_model::Cell) -> bool {
    use loadgate_model::VerifyScenarios;
    // A replay's requests are the file's and carry no checks: nothing to verify (its cell's request is never sent).
    if matches!(cell.load, Load::Replay(_)) {
        return false;
    }
    if let Some(own) = cell.verify {
        return own;
    }
    let has_checks = !cell.request.checks.is_empty()
        || cell.mix.iter().any(|m| !m.request.checks.is_empty())
        || cell.session.iter().any(|s| match s {
            loadgate_model::SessionStep::Request { request, .. } => !request.checks.is_empty(),
            loadgate_model::SessionStep::Think { .. } => false,
        });
    match mode {
        VerifyScenarios::Auto => has_checks,
        VerifyScenarios::All => true,
        VerifyScenarios::Off => false,
    }
}

fn request_plan(r: &loadgate_model::Request) -> RequestPlan {
    RequestPlan {
        method: r.method.clone(),
        path: r.path.clone(),
        headers: r.headers.clone(),
        body: r.body.clone(),
        dynamic: r.dynamic.clone(),
        checks: r.checks.clone(),
        captures: r.captures.clone(),
    }
}

fn hardware_plan(spec: &Spec) -> HardwarePlan {
    let hw = &spec.hardware;
    let threads = match (hw.threads, &hw.generator_cpus) {
        (Some(t), _) => t as usize,
        (None, Some(cpus)) => cpus.len().max(1),
        (None, None) => 1,
    };
    let workers = (0..threads)
        .map(|index| WorkerPlan {
            index,
            cpu: hw.generator_cpus.as_ref().filter(|c| !c.is_empty()).map(|c| c.cpus()[index % c.len()]),
            pacing: hw.pacing,
        })
        .collect();
    HardwarePlan {
        generator_cpus: hw.generator_cpus.clone(),
        target_cpus: hw.target_cpus.clone(),
        on_mismatch: hw.on_mismatch,
        saturation: hw.saturation,
        workers,
    }
}

fn target_plan(t: &Target) -> TargetPlan {
    match t {
        Target::Url { base_url } => TargetPlan::Url {
            base_url: base_url.url.clone(),
            protocol: base_url.protocol,
            tls: base_url.tls.as_ref().map(tls_plan),
        },
        Target::Command { base_url, start } => TargetPlan::Command {
            base_url: base_url.url.clone(),
            protocol: base_url.protocol,
            tls: base_url.tls.as_ref().map(tls_plan),
            command: start.command.clone(),
            env: start.env.clone(),
            cwd: start.cwd.clone(),
            ready: match &start.ready {
                Ready::HttpGet { path, status, timeout, interval } => {
                    ReadyProbe::HttpGet { path: path.clone(), status: *status, timeout: *timeout, interval: *interval }
                }
                Ready::Tcp { timeout, interval } => ReadyProbe::Tcp { timeout: *timeout, interval: *interval },
            },
            stop_grace: start.stop_grace,
        },
        Target::Builtin { server } => TargetPlan::Builtin {
            server: BuiltinServer {
                kind: server.kind,
                delay: server.delay,
                status: server.status,
                body_size: server.body_size.map(|b| b.0),
                chunked: server.chunked,
                work: server.work,
                slow_path: server.slow_path,
            },
            protocol: server.protocol,
            tls: server.tls.as_ref().map(tls_plan),
        },
    }
}

fn tls_plan(t: &loadgate_model::spec::TlsOptions) -> TlsPlan {
    TlsPlan {
        ca: t.ca.clone(),
        insecure: t.insecure,
        client_cert: t.client_cert.clone(),
        client_key: t.client_key.clone(),
        resume: t.resume,
        server_name: t.server_name.clone(),
    }
}

/// How long a replay's phase runs past its last request's intended time (so that it is sent).
const REPLAY_TAIL: std::time::Duration = std::time::Duration::from_millis(10);

fn load_plan(load: &Load) -> LoadPlan {
    match load {
        Load::Closed { connections, stop, pipeline, pipeline_mode, pipeline_reads, keep_alive, connect_rate } => {
            LoadPlan {
                arrival: Arrival::Closed,
                stop: match stop {
                    Stop::Duration(d) => StopCondition::Duration { duration: *d },
                    Stop::Requests(r) => StopCondition::Requests { requests: *r },
                },
                connections: ConnectionPolicy {
                    connections: *connections,
                    pipeline: *pipeline,
                    pipeline_mode: *pipeline_mode,
                    pipeline_reads: *pipeline_reads,
                    keep_alive: *keep_alive,
                    streams: 1,
                    connect_rate: *connect_rate,
                },
            }
        }
        Load::Open { rate, duration, connections, connect_rate } => LoadPlan {
            arrival: Arrival::Constant { rate: *rate },
            stop: StopCondition::Duration { duration: *duration },
            connections: open_connections(*connections, *connect_rate),
        },
        Load::Ramp { connections, start_rate, stages, connect_rate } => LoadPlan {
            arrival: Arrival::Ramp { start: *start_rate, stages: stages.clone() },
            stop: StopCondition::Duration { duration: load.duration().unwrap_or_default() },
            connections: open_connections(*connections, *connect_rate),
        },
        // A capacity search's load is its first step; the runner runs the others at their rates.
        Load::Capacity { search, connections, connect_rate } => LoadPlan {
            arrival: Arrival::Constant { rate: search.from },
            stop: StopCondition::Duration { duration: search.duration },
            connections: open_connections(*connections, *connect_rate),
        },
        // The phase ends a tick after the schedule's last request is due.
        Load::Replay(r) => LoadPlan {
            arrival: Arrival::Replay(r.clone()),
            stop: StopCondition::Duration {
                duration: loadgate_model::units::Duration(r.summary.duration.0 + REPLAY_TAIL),
            },
            connections: ConnectionPolicy {
                keep_alive: r.connections == loadgate_model::replay::ReplayConnections::Pool,
                ..open_connections(r.max_connections, ConnectRate::Auto)
            },
        },
        Load::Users { steps, max_connections } => LoadPlan {
            arrival: Arrival::Users { steps: steps.clone() },
            stop: StopCondition::Duration { duration: load.duration().unwrap_or_default() },
            connections: ConnectionPolicy {
                connections: *max_connections,
                pipeline: 1,
                pipeline_mode: loadgate_model::PipelineMode::Batch,
                pipeline_reads: loadgate_model::PipelineReads::Each,
                keep_alive: false,
                streams: 1,
                connect_rate: ConnectRate::Auto,
            },
        },
    }
}

fn open_connections(connections: u64, connect_rate: ConnectRate) -> ConnectionPolicy {
    ConnectionPolicy {
        connections,
        pipeline: 1,
        pipeline_mode: loadgate_model::PipelineMode::Batch,
        pipeline_reads: loadgate_model::PipelineReads::Each,
        keep_alive: true,
        streams: 1,
        connect_rate,
    }
}

/// Splits `total` into `parts` integers that differ by at most one and sum to `total`; the first ones get the
/// remainder.
pub fn split_even(total: u64, parts: usize) -> Vec<u64> {
    if parts == 0 {
        return Vec::new();
    }
    let n = parts as u64;
    (0..n).map(|i| total / n + u64::from(i < total % n)).collect()
}

/// Splits `total` in proportion to `weights` exactly (largest remainder), so the parts sum to `total`.
pub fn split_weighted(total: u64, weights: &[u64]) -> Vec<u64> {
    let sum: u128 = weights.iter().map(|w| u128::from(*w)).sum();
    if sum == 0 {
        return vec![0; weights.len()];
    }
    let mut parts: Vec<u64> = weights.iter().map(|w| (u128::from(total) * u128::from(*w) / sum) as u64).collect();
    let mut remainders: Vec<(u128, usize)> =
        weights.iter().enumerate().map(|(i, w)| ((u128::from(total) * u128::from(*w)) % sum, i)).collect();
    // Largest remainder first; ties go to the lower index, so the split is deterministic.
    remainders.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let assigned: u64 = parts.iter().sum();
    for (_, i) in remainders.into_iter().take((total - assigned) as usize) {
        parts[i] += 1;
    }
    parts
}

fn split(load: &LoadPlan, workers: usize) -> Vec<WorkerShare> {
    let conns = split_even(load.connections.connections, workers);
    let requests = match load.stop {
        StopCondition::Requests { requests } => Some(split_weighted(requests, &conns)),
        StopCondition::Duration { .. } => None,
    };
    let total = load.connections.connections;
    conns
        .iter()
        .enumerate()
        .map(|(i, c)| WorkerShare {
            worker: i,
            connections: *c,
            requests: requests.as_ref().map(|r| r[i]),
            share: Share { numerator: *c, denominator: total },
            stripe: None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_are_exact() {
        assert_eq!(split_even(10, 3), vec![4, 3, 3]);
        assert_eq!(split_even(2, 4), vec![1, 1, 0, 0]);
        assert_eq!(split_weighted(100, &[4, 3, 3]), vec![40, 30, 30]);
        assert_eq!(split_weighted(10, &[1, 1, 1]), vec![4, 3, 3]);
        assert_eq!(split_weighted(7, &[1, 0, 1]), vec![4, 0, 3]);
        for total in [0u64, 1, 7, 1000, 300_000] {
            for parts in 1..20 {
                let even = split_even(total, parts);
                assert_eq!(even.iter().sum::<u64>(), total);
                let weighted = split_weighted(total, &even);
                assert_eq!(weighted.iter().sum::<u64>(), total);
            }
        }
    }
}
