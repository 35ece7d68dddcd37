//! What loadgate records inside the target while a side's measured phase runs, as [attachments](crate::attach):
//! the CPU time of the target's process tree at the phase's edges (`target_cpu_per_request`, for every started
//! target), and the phase's `profile:` (the built-in sampler, an external profiler, or a pprof endpoint), whose
//! stacks come back with the side's round and are summed up when the instance is judged ([`summarize`]).

mod external;
mod ready;
mod round;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use loadgate_model::profile::{CpuProfile, KernelStacks, ProfileSource, Unwind};
use loadgate_profile::{CpuReading, Sampler, SamplerOptions, TreeCpu};
use loadgate_results::frames::{
    differential, folded_file_name, scenario_profile, FrameOptions, PairedRound, RoundProfile,
};
use loadgate_results::stacks::Stacks;
use loadgate_results::{ScenarioProfile, ScenarioResult, TargetCpuTime};

use crate::attach::{Attachment, AttachmentOutput, PhaseOutcome, Running, SideContext};

use external::{start_command, start_pprof};
pub use round::PROFILE;
use round::{failed, output, RoundStacks};

/// The attachments every run has: the target's CPU time, and its profile where a phase asks for one.
pub fn attachments() -> Vec<Arc<dyn Attachment>> {
    vec![Arc::new(TargetCpuMeter), Arc::new(Profiler::default())]
}

/// Nothing to do for this side.
struct Idle;

impl Running for Idle {
    fn stop(self: Box<Self>, outcome: &PhaseOutcome, _: Option<&mut ScenarioResult>) -> AttachmentOutput {
        AttachmentOutput { name: String::new(), data: Vec::new(), completed: outcome.completed }
    }
}

/// Reads the CPU time of the target's process tree at the edges of each side's phase.
#[derive(Debug)]
struct TargetCpuMeter;

struct CpuSpan {
    pid: u32,
    start: CpuReading,
}

impl Attachment for TargetCpuMeter {
    fn start(&self, side: &SideContext<'_>) -> Result<Box<dyn Running>, String> {
        // A capacity search's steps run inside one attachment span: its CPU would not match its deciding step's
        // requests.
        let (Some(pid), None) = (side.target_pid, &side.phase.capacity) else { return Ok(Box::new(Idle)) };
        match TreeCpu::read(pid) {
            Ok(start) => Ok(Box::new(CpuSpan { pid, start })),
            Err(_) => Ok(Box::new(Idle)),
        }
    }
}

impl Running for CpuSpan {
    fn stop(self: Box<Self>, outcome: &PhaseOutcome, result: Option<&mut ScenarioResult>) -> AttachmentOutput {
        if let (Ok(end), Some(result)) = (TreeCpu::read(self.pid), result) {
            let delta = end.since(&self.start);
            match idle_tree(delta.ns, outcome.completed) {
                None => result.target_cpu = Some(TargetCpuTime { cpu_ns: delta.ns, requests: outcome.completed }),
                Some(why) => {
                    let warning = loadgate_results::Problem { kind: "target_cpu".into(), message: why };
                    if !result.validity.warnings.iter().any(|w| w.message == warning.message) {
                        result.validity.warnings.push(warning);
                    }
                }
            }
        }
        AttachmentOutput { name: "target_cpu".into(), data: Vec::new(), completed: outcome.completed }
    }
}

/// The most CPU a request may cost the target's process tree for the tree to count as doing none of the work:
/// no HTTP server answers a request in a microsecond of CPU (the system calls alone cost more).
const IDLE_TREE_NS_PER_REQUEST: u64 = 1_000;
/// The fewest requests a round must complete before an idle tree is called a wrapper.
const IDLE_TREE_MIN_REQUESTS: u64 = 200;

/// Why the target's process tree cannot be the server that answered `completed` requests while it spent `cpu_ns`
/// of CPU: a wrapper (`docker run`, `sudo`, a shell that hands the work on) whose server runs outside it.
fn idle_tree(cpu_ns: u64, completed: u64) -> Option<String> {
    // Without per-thread schedstat a thread's CPU is read in 10 ms ticks, too coarse to call a tree idle.
    let exact = std::path::Path::new("/proc/self/schedstat").exists();
    let idle = completed >= IDLE_TREE_MIN_REQUESTS && cpu_ns < completed.saturating_mul(IDLE_TREE_NS_PER_REQUEST);
    (exact && idle).then(|| {
        "the target's process tree did almost no work while the server answered (under 1 us of CPU per request): \
         the server runs outside the tree loadgate started (a wrapper such as `docker run` or `sudo` hands the work \
         to a process it does not parent), so its CPU per request is not measured and it is not profiled; start \
         the server itself as the target, or profile it through `pprof:`"
            .to_owned()
    })
}

/// Takes each measured phase's `profile:`, but for what the run found it cannot take before its load.
#[derive(Debug, Default)]
struct Profiler {
    off: Mutex<ready::Off>,
}

impl Attachment for Profiler {
    fn prepare(&self, plan: &loadgate_plan::ExecutionPlan) -> Result<Vec<String>, String> {
        let ready = ready::readiness(&plan.phases, &ready::Here);
        if let Some(refusal) = ready.refusal {
            return Err(refusal);
        }
        *self.off.lock().unwrap_or_else(PoisonError::into_inner) = ready.off;
        Ok(ready.warnings)
    }

    fn start(&self, side: &SideContext<'_>) -> Result<Box<dyn Running>, String> {
        let Some(profile) = &side.phase.profile else { return Ok(Box::new(Idle)) };
        if self.off.lock().unwrap_or_else(PoisonError::into_inner).leaves_out(profile) {
            return Ok(Box::new(Idle));
        }
        let seconds = side.phase.duration.map_or(1, |d| d.0.as_secs_f64().ceil().max(1.0) as u64);
        let label = format!("{} round {} ({})", side.phase.name, side.round, side.side.letter());
        match &profile.source {
            ProfileSource::Cpu(cpu) => {
                let pid = side.target_pid.ok_or("the profile needs the target's process, and this target has none")?;
                start_sampler(pid, cpu)
            }
            ProfileSource::Command(command) => {
                let pid = side.target_pid.ok_or("the profile needs the target's process, and this target has none")?;
                start_command(command, pid, seconds, &label)
            }
            ProfileSource::Pprof(pprof) => Ok(start_pprof(pprof.url_for(side.base_url), pprof.kind, seconds)),
        }
    }
}

/// Fewer samples in a round than this is said in the profile's notes.
const FEW_SAMPLES: u64 = 50;

fn start_sampler(pid: u32, cpu: &CpuProfile) -> Result<Box<dyn Running>, String> {
    let options = SamplerOptions {
        period: Duration::from_nanos(cpu.period_ns()),
        dwarf: cpu.unwind != Unwind::FramePointers,
        kernel: cpu.kernel == KernelStacks::Auto,
        ..SamplerOptions::default()
    };
    let sampler = Sampler::start(pid, &options).map_err(|e| format!("the CPU profile could not start: {e}"))?;
    let cpu_start = TreeCpu::read(pid).ok();
    Ok(Box::new(SamplerRun { sampler, pid, cpu_start }))
}

struct SamplerRun {
    sampler: Sampler,
    pid: u32,
    cpu_start: Option<CpuReading>,
}

impl Running for SamplerRun {
    fn stop(self: Box<Self>, outcome: &PhaseOutcome, _: Option<&mut ScenarioResult>) -> AttachmentOutput {
        let cpu_ns = self.cpu_start.zip(TreeCpu::read(self.pid).ok()).map(|(a, b)| b.since(&a).ns);
        if let Some(why) = cpu_ns.and_then(|ns| idle_tree(ns, outcome.completed)) {
            drop(self.sampler.stop());
            return output(failed("cpu", why), outcome);
        }
        let round = match self.sampler.stop() {
            Ok(raw) => {
                let profile = raw.symbolize();
                let mut notes = Vec::new();
                if !profile.stats.kernel_stacks {
                    let share = cpu_ns.map(|ns| profile.sampled_share(ns) * 100.0);
                    notes.push(match share {
                        Some(s) => format!("covers user time, {s:.0}% of the target's CPU: the kernel refuses kernel stacks here (CAP_PERFMON or kernel.perf_event_paranoid <= 1 adds them)"),
                        None => "covers user time only: the kernel refuses kernel stacks here".to_owned(),
                    });
                }
                if profile.stats.jit_unnamed * 20 >= profile.stats.samples.max(1) {
                    notes.push(format!(
                        "{:.0}% of samples end in JIT code that no perf map names (no /tmp/perf-PID.map for process \
                         {}): a JVM needs -XX:+PreserveFramePointer and `jcmd PID Compiler.perfmap` at the end of \
                         each round (or async-profiler through `profile.command`), Node.js --perf-basic-prof",
                        profile.stats.jit_unnamed as f64 * 100.0 / profile.stats.samples.max(1) as f64,
                        profile.stats.jit_without_map.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
                    ));
                }
                if profile.stats.samples < FEW_SAMPLES && outcome.completed > 0 {
                    notes.push(format!(
                        "rounds with fewer than {FEW_SAMPLES} samples: a frame's change cannot be told from \
                         sampling noise there; lengthen the phase or raise `profile.cpu.frequency`"
                    ));
                }
                if profile.stats.lost > 0 {
                    notes.push(format!("{} samples lost: the sampler's rings were full", profile.stats.lost));
                }
                let mut stacks = Stacks::new();
                for (frames, n) in &profile.stacks {
                    stacks.add(frames, *n);
                }
                RoundStacks {
                    source: "cpu".into(),
                    sample_type: "cpu".into(),
                    ns_per_sample: Some(profile.period_ns as f64),
                    stacks,
                    notes,
                }
            }
            Err(e) => failed("cpu", format!("the CPU profile failed: {e}")),
        };
        output(round, outcome)
    }
}

/// The rounds of one side as kept: each round's stacks with the requests it completed, and the notes.
fn rounds_of(attached: &[Vec<AttachmentOutput>]) -> Vec<(RoundStacks, u64)> {
    attached
        .iter()
        .filter_map(|outs| {
            let o = outs.iter().find(|o| o.name == PROFILE)?;
            let round: RoundStacks = serde_json::from_slice(&o.data).ok()?;
            Some((round, o.completed))
        })
        .collect()
}

/// One side's profile over its kept rounds: stacks merged, the table, the notes, the folded file's name.
fn side_profile(instance: &str, side: Option<&str>, rounds: &[(RoundStacks, u64)]) -> Option<ScenarioProfile> {
    // What the samples are is told by a round that has some (a failed round knows only its source).
    let first = rounds.iter().find(|(r, _)| !r.stacks.is_empty()).or(rounds.first())?;
    let mut merged = Stacks::new();
    let mut notes: Vec<String> = Vec::new();
    let mut requests = 0u64;
    for (r, completed) in rounds {
        merged.merge(&r.stacks);
        requests = requests.saturating_add(*completed);
        for n in &r.notes {
            if !notes.contains(n) {
                notes.push(n.clone());
            }
        }
    }
    let (source, sample_type, ns) = (&first.0.source, &first.0.sample_type, first.0.ns_per_sample);
    let mut p = scenario_profile(source, sample_type, &merged, ns, requests, Some(folded_file_name(instance, side)));
    p.notes = notes;
    p.stacks = Some(merged);
    Some(p)
}

/// Sets a judged instance's profile from what its rounds' attachments gave: the candidate's (or the only side's)
/// on `merged`, the baseline's on `merged.ab_baseline`, and in an A/B run the frames that changed over the paired
/// rounds (Westfall-Young max-T over at most 30 frames, family-wise 1%).
pub fn summarize(merged: &mut ScenarioResult, attached: &[Vec<Vec<AttachmentOutput>>; 2], ab: bool) {
    let name = merged.name.clone();
    if !ab {
        merged.profile = side_profile(&name, None, &rounds_of(&attached[0]));
        return;
    }
    let (a, b) = (rounds_of(&attached[0]), rounds_of(&attached[1]));
    merged.profile = side_profile(&name, Some("candidate"), &b);
    if let Some(base) = merged.ab_baseline.as_deref_mut() {
        base.profile = side_profile(&name, Some("baseline"), &a);
    }
    let pairs: Vec<PairedRound> = a
        .iter()
        .zip(&b)
        .filter(|((x, _), (y, _))| !x.stacks.is_empty() && !y.stacks.is_empty())
        .map(|((x, xn), (y, yn))| PairedRound {
            baseline: RoundProfile {
                stacks: x.stacks.clone(),
                ns_per_sample: x.ns_per_sample.unwrap_or(1_000.0),
                requests: *xn,
            },
            candidate: RoundProfile {
                stacks: y.stacks.clone(),
                ns_per_sample: y.ns_per_sample.unwrap_or(1_000.0),
                requests: *yn,
            },
        })
        .collect();
    if pairs.len() < 2 {
        return;
    }
    match differential(&pairs, &FrameOptions::default()) {
        Ok(d) => {
            if let Some(p) = &mut merged.profile {
                p.differential = Some(d);
            }
        }
        Err(e) => {
            if let Some(p) = &mut merged.profile {
                p.notes.push(format!("no frame was tested: {e}"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(stacks: &[(&str, u64)], completed: u64) -> Vec<AttachmentOutput> {
        let mut s = Stacks::new();
        for (line, n) in stacks {
            let frames: Vec<&str> = line.split(';').collect();
            s.add(&frames, *n);
        }
        let r = RoundStacks {
            source: "cpu".into(),
            sample_type: "cpu".into(),
            ns_per_sample: Some(1e6),
            stacks: s,
            notes: vec!["n".into()],
        };
        vec![AttachmentOutput { name: PROFILE.into(), data: serde_json::to_vec(&r).unwrap(), completed }]
    }

    #[test]
    fn one_sides_rounds_are_merged_into_its_profile_with_notes_once() {
        let mut merged = loadgate_results::fixture::sweep_cell(1, 1000.0, 1.0);
        let attached = [vec![round(&[("main;a", 10)], 100), round(&[("main;a", 5), ("main;b", 5)], 100)], Vec::new()];
        summarize(&mut merged, &attached, false);
        let p = merged.profile.expect("a profile");
        assert_eq!((p.samples, p.requests), (20, 200));
        assert_eq!(p.notes, ["n"]);
        assert!(p.folded_file.unwrap().starts_with("profile-"));
        assert_eq!(p.stacks.unwrap().total(), 20);
    }

    #[test]
    fn rounds_without_a_profile_give_none() {
        let mut merged = loadgate_results::fixture::sweep_cell(1, 1000.0, 1.0);
        let attached =
            [vec![vec![AttachmentOutput { name: "target_cpu".into(), data: Vec::new(), completed: 1 }]], Vec::new()];
        summarize(&mut merged, &attached, false);
        assert!(merged.profile.is_none());
    }
}
