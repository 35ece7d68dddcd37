//! What loadgate records inside the target while a side's measured phase runs, as [attachments](crate::attach):
//! the CPU time of the target's process tree at the phase's edges (`target_cpu_per_request`, for every started
//! target), and the phase's `profile:` (the built-in sampler, an external profiler, or a pprof endpoint), whose
//! stacks come back with the side's round and are summed up when the instance is judged ([`summarize`]).

use std::io::{Read as _, Write as _};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use loadgate_model::profile::{CommandProfile, CpuProfile, KernelStacks, PprofProfile, ProfileSource, Unwind};
use loadgate_profile::{CpuReading, Sampler, SamplerOptions, TreeCpu};
use loadgate_results::frames::{
    differential, folded_file_name, scenario_profile, FrameOptions, PairedRound, RoundProfile,
};
use loadgate_results::stacks::{parse_folded, FoldedLimits, Stacks};
use loadgate_results::{ScenarioProfile, ScenarioResult, TargetCpuTime};
use serde::{Deserialize, Serialize};

use crate::attach::{Attachment, AttachmentOutput, PhaseOutcome, Running, SideContext};

/// The name of a profile's attachment output.
pub const PROFILE: &str = "profile";
/// The most bytes of an external profiler's standard error kept for a message.
const MAX_STDERR: usize = 4096;
/// The most bytes a pprof endpoint may answer.
const MAX_PPROF_BYTES: usize = 32 << 20;
/// How long past the phase an external profiler or a pprof endpoint may take to finish.
const GRACE: Duration = Duration::from_secs(20);

/// The attachments every run has: the target's CPU time, and its profile where a phase asks for one.
pub fn attachments() -> Vec<Arc<dyn Attachment>> {
    vec![Arc::new(TargetCpuMeter), Arc::new(Profiler)]
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
            result.target_cpu = Some(TargetCpuTime { cpu_ns: delta.ns, requests: outcome.completed });
        }
        AttachmentOutput { name: "target_cpu".into(), data: Vec::new(), completed: outcome.completed }
    }
}

/// One side's stacks of one round, as its attachment output carries them.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct RoundStacks {
    /// `cpu`, `command` or `pprof`.
    source: String,
    /// What a sample counts (`cpu`, `alloc`, `contentions`, ...).
    sample_type: String,
    /// CPU nanoseconds a sample stands for; `None` when samples are not time.
    ns_per_sample: Option<f64>,
    stacks: Stacks,
    notes: Vec<String>,
}

/// Takes each measured phase's `profile:`.
#[derive(Debug)]
struct Profiler;

impl Attachment for Profiler {
    fn start(&self, side: &SideContext<'_>) -> Result<Box<dyn Running>, String> {
        let Some(profile) = &side.phase.profile else { return Ok(Box::new(Idle)) };
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
            ProfileSource::Pprof(pprof) => Ok(start_pprof(pprof, seconds)),
        }
    }
}

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

fn failed(source: &str, note: String) -> RoundStacks {
    RoundStacks {
        source: source.into(),
        sample_type: source.into(),
        ns_per_sample: None,
        stacks: Stacks::new(),
        notes: vec![note],
    }
}

fn output(round: RoundStacks, outcome: &PhaseOutcome) -> AttachmentOutput {
    AttachmentOutput {
        name: PROFILE.into(),
        data: serde_json::to_vec(&round).unwrap_or_default(),
        completed: outcome.completed,
    }
}

/// Splits a command line into words: whitespace separates, single and double quotes group (no shell).
fn words(line: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if quote.is_some() {
        return Err("the profiler's command line has a quote that is never closed".into());
    }
    if in_word {
        out.push(word);
    }
    Ok(out)
}

fn start_command(c: &CommandProfile, pid: u32, seconds: u64, label: &str) -> Result<Box<dyn Running>, String> {
    let dir = std::env::temp_dir().join(format!("loadgate-profile-{}-{pid}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot make a directory for the profiler's output: {e}"))?;
    let out = dir.join(format!("{}.folded", label.replace(|c: char| !c.is_ascii_alphanumeric(), "_")));
    let _ = std::fs::remove_file(&out);
    let fill = |w: &str| {
        w.replace("{pid}", &pid.to_string())
            .replace("{seconds}", &seconds.to_string())
            .replace("{out}", &out.display().to_string())
    };
    let argv: Vec<String> = words(&c.run)?.iter().map(|w| fill(w)).collect();
    let Some((program, args)) = argv.split_first() else { return Err("the profiler's command line is empty".into()) };
    let child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("the profiler `{program}` could not start: {e}"))?;
    Ok(Box::new(CommandRun {
        child,
        program: program.clone(),
        out,
        started: Instant::now(),
        seconds,
        event: c.event.name(),
        ns_per_sample: c.event.is_time().then(|| c.interval.0.as_nanos() as f64),
    }))
}

struct CommandRun {
    child: Child,
    program: String,
    out: std::path::PathBuf,
    started: Instant,
    seconds: u64,
    event: &'static str,
    ns_per_sample: Option<f64>,
}

impl Running for CommandRun {
    fn stop(mut self: Box<Self>, outcome: &PhaseOutcome, _: Option<&mut ScenarioResult>) -> AttachmentOutput {
        let deadline = self.started + Duration::from_secs(self.seconds) + GRACE;
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
                _ => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    break None;
                }
            }
        };
        let ran = self.started.elapsed();
        let mut stderr = Vec::new();
        if let Some(mut e) = self.child.stderr.take() {
            let _ = e.by_ref().take(MAX_STDERR as u64).read_to_end(&mut stderr);
        }
        let stderr = String::from_utf8_lossy(&stderr).trim().to_owned();
        let said = if stderr.is_empty() { String::new() } else { format!("; it said: {stderr}") };
        let program = &self.program;
        let round = match status {
            None => failed(
                "command",
                format!(
                    "the profiler `{program}` was still running {:.0?} after the phase and was stopped{said}",
                    GRACE
                ),
            ),
            Some(s) if !s.success() => failed("command", format!("the profiler `{program}` failed ({s}){said}")),
            Some(_) => match std::fs::read(&self.out) {
                Err(e) => failed("command", format!("the profiler `{program}` wrote no stacks to {{out}} ({e}){said}")),
                Ok(bytes) => match parse_folded(&bytes, FoldedLimits::default()) {
                    Err(e) => {
                        failed("command", format!("the profiler `{program}` wrote what is not folded stacks: {e}"))
                    }
                    Ok(stacks) => {
                        let mut notes = Vec::new();
                        let expected = Duration::from_secs(self.seconds);
                        if ran + Duration::from_millis(500) < expected.min(outcome.duration) {
                            notes.push(format!("the profiler ran {ran:.1?} of a {:.1?} phase", outcome.duration));
                        }
                        RoundStacks {
                            source: "command".into(),
                            sample_type: self.event.into(),
                            ns_per_sample: self.ns_per_sample,
                            stacks,
                            notes,
                        }
                    }
                },
            },
        };
        let _ = std::fs::remove_file(&self.out);
        output(round, outcome)
    }
}

fn start_pprof(p: &PprofProfile, seconds: u64) -> Box<dyn Running> {
    let (url, kind) = (p.url.clone(), p.kind);
    let handle = std::thread::spawn(move || fetch(&url, seconds));
    Box::new(PprofRun { handle, kind: kind.name() })
}

struct PprofRun {
    handle: std::thread::JoinHandle<Result<Vec<u8>, String>>,
    kind: &'static str,
}

impl Running for PprofRun {
    fn stop(self: Box<Self>, outcome: &PhaseOutcome, _: Option<&mut ScenarioResult>) -> AttachmentOutput {
        let round = match self.handle.join() {
            Err(_) => failed("pprof", "the pprof fetch failed".into()),
            Ok(Err(e)) => failed("pprof", e),
            Ok(Ok(body)) => match loadgate_results::pprof::decode(&body, None) {
                Err(e) => failed("pprof", format!("the pprof endpoint answered what is not a profile: {e}")),
                Ok(p) => RoundStacks {
                    source: "pprof".into(),
                    sample_type: if self.kind == "cpu" { "cpu".into() } else { p.sample_type.clone() },
                    ns_per_sample: p.ns_per_unit(),
                    stacks: p.stacks,
                    notes: Vec::new(),
                },
            },
        };
        output(round, outcome)
    }
}

/// GETs `url?seconds=N` over plain HTTP/1.1 (pprof endpoints are debug ports): the body, chunked or not.
fn fetch(url: &str, seconds: u64) -> Result<Vec<u8>, String> {
    let parsed = loadgate_model::url::HttpUrl::parse(url).map_err(|e| format!("the pprof URL: {e}"))?;
    if parsed.https {
        return Err("the pprof endpoint is https, which loadgate does not fetch profiles over: serve pprof over http on a loopback debug port".into());
    }
    let addr = std::net::ToSocketAddrs::to_socket_addrs(&(parsed.host.trim_matches(['[', ']']), parsed.port))
        .map_err(|e| format!("the pprof endpoint {url}: {e}"))?
        .next()
        .ok_or_else(|| format!("the pprof endpoint {url} has no address"))?;
    let timeout = Duration::from_secs(seconds) + GRACE;
    let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5))
        .map_err(|e| format!("the pprof endpoint {url} could not be reached: {e}"))?;
    let _ = s.set_read_timeout(Some(timeout));
    let request = format!(
        "GET {}?seconds={seconds} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nAccept-Encoding: identity\r\n\r\n",
        parsed.path,
        parsed.host_header()
    );
    s.write_all(request.as_bytes()).map_err(|e| format!("the pprof endpoint {url}: {e}"))?;
    let mut raw = Vec::new();
    s.take(MAX_PPROF_BYTES as u64 + 65_536)
        .read_to_end(&mut raw)
        .map_err(|e| format!("the pprof endpoint {url}: {e}"))?;
    let head_end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| format!("the pprof endpoint {url} answered no HTTP response"))?;
    let head = String::from_utf8_lossy(&raw[..head_end]).to_ascii_lowercase();
    let status = head.split_whitespace().nth(1).unwrap_or_default().to_owned();
    let body = &raw[head_end + 4..];
    if status != "200" {
        let text = String::from_utf8_lossy(&body[..body.len().min(300)]).trim().to_owned();
        return Err(format!("the pprof endpoint {url} answered {status}: {text}"));
    }
    if head.contains("transfer-encoding: chunked") {
        dechunk(body).ok_or_else(|| format!("the pprof endpoint {url} sent a broken chunked body"))
    } else {
        Ok(body.to_vec())
    }
}

fn dechunk(mut body: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let line_end = body.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&body[..line_end]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        body = &body[line_end + 2..];
        if size == 0 {
            return Some(out);
        }
        if body.len() < size + 2 || out.len() + size > MAX_PPROF_BYTES {
            return None;
        }
        out.extend_from_slice(&body[..size]);
        body = &body[size + 2..];
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
    let first = rounds.first()?;
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

    #[test]
    fn a_command_line_splits_into_words_with_quotes_grouping() {
        assert_eq!(
            words("asprof -d {seconds} -f '{out} x' {pid}").unwrap(),
            ["asprof", "-d", "{seconds}", "-f", "{out} x", "{pid}"]
        );
        assert_eq!(words("a \"\" b").unwrap(), ["a", "", "b"]);
        assert!(words("a 'b").is_err());
    }

    #[test]
    fn a_chunked_body_is_joined_and_a_broken_one_refused() {
        assert_eq!(dechunk(b"3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n").unwrap(), b"abcde");
        assert!(dechunk(b"5\r\nab").is_none());
        assert!(dechunk(b"zz\r\n").is_none());
    }

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
