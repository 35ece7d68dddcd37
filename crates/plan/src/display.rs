//! The plan as a person reads it (`loadgate plan SPEC`).

use std::fmt::Write as _;

use loadgate_model::units::Duration;

use crate::model::*;

fn describe_target(t: &TargetPlan) -> String {
    let mut s = describe_server(t);
    if let Some(tls) = t.tls() {
        s.push_str(&describe_tls(tls, matches!(t, TargetPlan::Builtin { .. })));
    }
    s
}

/// `; TLS 1.2/1.3, ...`: what the client checks and offers.
fn describe_tls(tls: &TlsPlan, builtin: bool) -> String {
    let mut s = String::from("; TLS 1.2/1.3 (ALPN http/1.1)");
    if builtin {
        s.push_str(", self-signed certificate made at start and trusted");
    } else if tls.insecure {
        s.push_str(", INSECURE: the certificate is not checked");
    } else if let Some(ca) = &tls.ca {
        let _ = write!(s, ", CA {ca}");
    } else {
        s.push_str(", Mozilla's roots");
    }
    if let Some(name) = &tls.server_name {
        let _ = write!(s, ", server name {name}");
    }
    if let Some(cert) = &tls.client_cert {
        let _ = write!(s, ", client certificate {cert}");
    }
    s.push_str(if tls.resume { ", sessions resumed" } else { ", full handshakes (resume: false)" });
    s
}

fn describe_server(t: &TargetPlan) -> String {
    match t {
        TargetPlan::Url { base_url, .. } => format!("{base_url} (already running)"),
        TargetPlan::Command { base_url, command, ready, .. } => {
            let probe = match ready {
                ReadyProbe::HttpGet { path, status, timeout, .. } => {
                    format!("ready when GET {path} answers {status}, within {timeout}")
                }
                ReadyProbe::Tcp { timeout, .. } => format!("ready when it accepts TCP, within {timeout}"),
            };
            format!("{base_url}, started as `{}`; {probe}", command.join(" "))
        }
        TargetPlan::Builtin { server, .. } => {
            let mut s = format!("built-in {:?} server", server.kind).to_lowercase();
            if let Some(d) = server.delay {
                let _ = write!(s, ", delay {d}");
            }
            if let Some(w) = server.work {
                let _ = write!(s, ", {w} of CPU per request");
            }
            if let Some(w) = server.slow_path.filter(|w| !w.0.is_zero()) {
                let _ = write!(s, " (+{w} in slow_path)");
            }
            if server.status != 200 {
                let _ = write!(s, ", status {}", server.status);
            }
            if let Some(b) = server.body_size {
                let _ = write!(s, ", {b}-byte body");
            }
            if server.chunked {
                s.push_str(", chunked");
            }
            s.push_str(" (`loadgate serve` on a free loopback port)");
            s
        }
    }
}

/// One line describing a phase's load: `closed, 256 connections, pipeline 16 (batch), 15s`.
pub fn describe_load(load: &LoadPlan) -> String {
    describe_load_on(load, true)
}

/// A replay's line: the file, its format and speed, what the schedule holds, and what was skipped.
fn describe_replay(r: &loadgate_model::replay::Replay, c: &ConnectionPolicy) -> String {
    use loadgate_model::replay::ReplayConnections;
    let sum = &r.summary;
    let speed = if r.speed == 1.0 { "as logged".to_owned() } else { format!("at {}x", r.speed) };
    let conns = match r.connections {
        ReplayConnections::Pool => format!("a pool of at most {} connections", c.connections),
        ReplayConnections::New => format!("a new connection per request (at most {} at once)", c.connections),
    };
    let mut s = format!(
        "replay of {} ({}), {speed}: {} requests over {}, at most {} in 10 ms, over {conns}",
        r.file,
        r.format.name(),
        sum.requests,
        sum.duration,
        sum.peak_per_10ms,
    );
    let _ = write!(s, "; {} lines read", sum.lines);
    if sum.bad_lines > 0 {
        let _ = write!(s, ", {} unreadable (first: {})", sum.bad_lines, sum.first_bad.join("; "));
    }
    for (why, n) in &sum.skips {
        let _ = write!(s, ", {n} skipped ({why})");
    }
    s
}

/// [`describe_load`] against a target spoken to over plain HTTP/1.1 (`plain`) or not (HTTPS, HTTP/2), where
/// `pipeline_reads: batch` has no effect.
fn describe_load_on(load: &LoadPlan, plain: bool) -> String {
    let c = &load.connections;
    let stop = match load.stop {
        StopCondition::Duration { duration } => format!("for {duration}"),
        StopCondition::Requests { requests } => format!("for {requests} requests"),
    };
    match &load.arrival {
        Arrival::Closed => {
            let mut s = format!("closed, {} connection{}", c.connections, if c.connections == 1 { "" } else { "s" });
            if c.pipeline > 1 {
                let _ = write!(
                    s,
                    ", pipeline {} ({}{})",
                    c.pipeline,
                    if c.pipeline_mode == loadgate_model::PipelineMode::Batch { "batch" } else { "window" },
                    match (c.pipeline_reads.is_each(), plain) {
                        (true, _) => "",
                        (false, true) => ", batches read whole",
                        (false, false) =>
                            ", each response read as it arrives: batches are read whole over plain HTTP/1.1 only",
                    }
                );
            }
            if !c.keep_alive {
                s.push_str(", new connection per request");
            }
            format!("{s}, {stop}")
        }
        Arrival::Constant { rate } => format!("open, {rate} over {} connections, {stop}", c.connections),
        Arrival::Ramp { start, stages } => {
            let st: Vec<String> = stages.iter().map(|s| format!("{} over {}", s.to, s.over)).collect();
            format!("ramp from {start}: {} over {} connections", st.join(", then "), c.connections)
        }
        Arrival::Replay(r) => describe_replay(r, c),
        Arrival::Users { steps } => {
            let st: Vec<String> = steps
                .iter()
                .map(|s| match s {
                    UserStep::AtOnce { users } => format!("{users} users at once"),
                    UserStep::Ramp { users, over } => format!("{users} users over {over}"),
                    UserStep::PerSecond { rate, during } => format!("{} users/s for {during}", rate.per_sec()),
                    UserStep::RampPerSecond { from, to, during } => {
                        format!("{} to {} users/s over {during}", from.per_sec(), to.per_sec())
                    }
                    UserStep::Pause { during } => format!("nothing for {during}"),
                })
                .collect();
            format!("users: {} (at most {} at once)", st.join(", then "), c.connections)
        }
    }
}

/// One line describing a capacity search: `capacity search 1000/s to 200000/s over 16 connections: steps of 5s,
/// x2 up, then bisection to 2%, confirmed once; at most 10m (16 steps, 1m20s, at worst)`.
pub fn describe_capacity(c: &CapacitySearch, load: &LoadPlan) -> String {
    let confirm = match c.confirm {
        0 => "not confirmed".to_owned(),
        1 => "confirmed once".to_owned(),
        n => format!("confirmed {n} times"),
    };
    let pause = if c.pause == Duration::ZERO { String::new() } else { format!(" ({} apart)", c.pause) };
    format!(
        "capacity search {} to {} over {} connections: steps of {}{pause}, x{} up, then bisection to {}, {confirm}; \
         at most {} ({} steps, {}, at worst)",
        c.from,
        c.to,
        load.connections.connections,
        c.duration,
        loadgate_model::units::trim_float(c.step),
        c.precision,
        c.max_duration,
        c.worst_case_steps(),
        c.worst_case_duration()
    )
}

fn body_text(body: &str, r: &RequestPlan) -> String {
    match r.dynamic.as_ref().and_then(|d| d.body.as_ref()) {
        Some(_) => format!("body {body}"),
        None => format!("{} byte body", body.len()),
    }
}

fn opt_duration(d: Option<Duration>) -> String {
    d.map(|d| d.to_string()).unwrap_or_else(|| "?".to_owned())
}

impl ExecutionPlan {
    /// The line a run starts with: `running api (3 phases, pacing precise, plan 9f2c...)`.
    pub fn headline(&self) -> String {
        let n = self.phases.len();
        let pacing = self.open_pacing().map_or_else(String::new, |p| format!(", pacing {}", p.name()));
        format!("running {} ({n} phase{}{pacing}, plan {})", self.name, if n == 1 { "" } else { "s" }, self.hash)
    }

    /// A clear, aligned summary of the plan for a person.
    pub fn render_text(&self) -> String {
        let mut out = String::new();
        self.write_header(&mut out);
        self.write_gating(&mut out);
        self.write_machine(&mut out);
        self.write_vars(&mut out);
        let _ = writeln!(out, "  wall time    {}", self.wall_text());
        let _ = writeln!(out);

        let name_w = self.phases.iter().map(|p| p.name.len()).max().unwrap_or(5).max(5);
        let _ = writeln!(out, "  {:>3}  {:<name_w$}  {:>8}  {:>8}  load", "#", "phase", "start", "length");
        let plain = self.target.plain_http1() && self.candidate.as_ref().is_none_or(TargetPlan::plain_http1);
        for p in &self.phases {
            write_phase(&mut out, p, name_w, plain);
            if let Some(profile) = &p.profile {
                let rounds = if p.gate { p.repeat.unwrap_or(self.gating.repeat) } else { 1 };
                write_profile(&mut out, p, profile, rounds, &" ".repeat(name_w + 7));
            }
        }
        for sweep in &self.sweeps {
            let _ = writeln!(out);
            let _ = writeln!(
                out,
                "  sweep {} over {} ({} cells, judged after the last){}",
                sweep.scenario,
                sweep.over,
                sweep.cells.len(),
                if sweep.gate { "" } else { ", not gated" }
            );
            for slo in &sweep.slos {
                let _ = writeln!(out, "    slo      {slo}");
            }
        }
        out
    }

    /// The plan's name and hash, its shard, its description, the target and the A/B candidate.
    fn write_header(&self, out: &mut String) {
        let _ = writeln!(out, "plan {} (hash {})", self.name, self.hash);
        if let Some(slice) = self.shard {
            let _ = writeln!(out, "  shard {slice}: this generator's slice of the plan; each worker runs one stripe of the whole plan's load");
        }
        if let Some(d) = &self.description {
            let _ = writeln!(out, "  {d}");
        }
        let _ = writeln!(out);
        let _ = writeln!(out, "  target       {}", describe_target(&self.target));
        if let Some(c) = &self.candidate {
            let how = match self.gating.order {
                crate::RoundOrder::Abba => "every gated phase runs on both, rounds in ABBA order".to_owned(),
                crate::RoundOrder::Shuffle => {
                    "every gated phase runs on both, rounds in a seeded shuffled order".to_owned()
                }
                crate::RoundOrder::Duet => {
                    let by_url = [Some(&self.target), self.candidate.as_ref()]
                        .into_iter()
                        .flatten()
                        .any(|t| matches!(t, crate::TargetPlan::Url { .. }));
                    let pinned = self.hardware.target_cpus.as_ref().filter(|_| !by_url);
                    let cpus = match pinned.map(|c| (c, c.halves())) {
                        Some((_, Some([a, b]))) => {
                            format!("the targets get CPUs {a} and {b}, swapped every round")
                        }
                        Some((cpus, None)) => format!(
                            "both targets share CPU {cpus}, so CPU-bound servers slow each other (the solo rounds \
                             measure by how much)"
                        ),
                        None => "the targets are not pinned".to_owned(),
                    };
                    format!(
                        "duet rounds: every gated phase loads both at once, each with the phase's whole load, so the \
                         generator sends twice it; {cpus}"
                    )
                }
            };
            let _ = writeln!(out, "  candidate    {} (A/B: {how})", describe_target(c));
        }
    }

    /// How gated phases are repeated and judged, unless the plan has no `gating` of its own.
    fn write_gating(&self, out: &mut String) {
        if self.gating.is_default() {
            return;
        }
        let g = &self.gating;
        let _ = writeln!(out, "  gating       {}", g.sentence(&g.looks(), None, loadgate_model::GatingReader::Plan));
    }

    /// The generator's workers and their CPUs, the target's CPUs, the mismatch and saturation policies, the seed.
    fn write_machine(&self, out: &mut String) {
        let workers: Vec<String> = self
            .hardware
            .workers
            .iter()
            .map(|w| match w.cpu {
                Some(c) => format!("w{}->cpu{c}", w.index),
                None => format!("w{}", w.index),
            })
            .collect();
        let pinned = if self.hardware.generator_cpus.is_some() { "pinned" } else { "unpinned" };
        // Only open loads use it.
        let pacing = if !self.pacing().is_default() {
            ", pacing precise (open loads poll until each request is due)"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "  generator    {} worker{} {pinned}: {}{pacing}",
            workers.len(),
            if workers.len() == 1 { "" } else { "s" },
            workers.join(" ")
        );
        let _ = writeln!(
            out,
            "  target cpus  {}",
            self.hardware.target_cpus.as_ref().map(|c| c.to_string()).unwrap_or_else(|| "not pinned".to_owned())
        );
        let _ = writeln!(
            out,
            "  on mismatch  {}",
            serde_json::to_value(self.hardware.on_mismatch)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default()
        );
        let _ = writeln!(
            out,
            "  saturation   {}",
            match self.hardware.saturation {
                loadgate_model::SaturationPolicy::Auto => "auto (invalid for open loads, a warning for closed loads)",
                loadgate_model::SaturationPolicy::Invalid => "invalid",
                loadgate_model::SaturationPolicy::Warn => "warn",
            }
        );
        let _ = writeln!(out, "  seed         {}", self.seed);
    }

    /// The resolved variables, aligned, each with where its value came from.
    fn write_vars(&self, out: &mut String) {
        let width = self.vars.keys().map(String::len).max().unwrap_or(0);
        for (i, (k, v)) in self.vars.iter().enumerate() {
            let label = if i == 0 { "vars" } else { "" };
            let source = match v.source {
                VarSource::Default => "default",
                VarSource::Environment => "environment",
                VarSource::CommandLine => "--set",
            };
            let _ = writeln!(out, "  {label:<12} {k:<width$} = {} ({source})", v.value);
        }
    }

    /// How long the run should take: one pass, or what repetitions, A/B sides and sequential gating make of it.
    fn wall_text(&self) -> String {
        match self.wall_time() {
            None => "unknown (a phase stops after a request count)".to_owned(),
            Some(w) if w.expected == w.pass => w.pass.to_string(),
            Some(w) => {
                let mut text = format!("{} ({} a pass, gated phases repeated", w.expected, w.pass);
                match (&self.candidate, self.gating.order) {
                    (None, _) => {}
                    (Some(_), crate::RoundOrder::Duet) => text.push_str(", both sides at once in duet rounds"),
                    (Some(_), _) => text.push_str(", every phase on both sides"),
                }
                text.push(')');
                if w.most > w.expected {
                    text.push_str(&format!(", up to {} if sequential gating adds every round it may", w.most));
                }
                text
            }
        }
    }
}

/// A phase's row of the table (`name_w`: the name column's width; `plain`: every target is plain HTTP/1.1) and
/// its lines below: requests, headers, the workers' split, SLOs, cooldown.
fn write_phase(out: &mut String, p: &Phase, name_w: usize, plain: bool) {
    let gate = if p.gate { "" } else { "  [not gated]" };
    let _ = writeln!(
        out,
        "  {:>3}  {:<name_w$}  {:>8}  {:>8}  {}{gate}",
        p.index,
        p.name,
        opt_duration(p.start_offset),
        opt_duration(p.duration),
        match &p.capacity {
            Some(c) => describe_capacity(c, &p.load),
            None => describe_load_on(&p.load, plain),
        }
    );
    let pad = " ".repeat(name_w + 7);
    write_requests(out, p, &pad);
    if !p.request.headers.is_empty() {
        let hs: Vec<String> = p.request.headers.iter().map(|(k, _)| k.clone()).collect();
        let _ = writeln!(out, "  {pad}headers  {}", hs.join(", "));
    }
    let _ = writeln!(out, "  {pad}split    {}", split_text(p));
    for s in &p.slos {
        let abort = match s.abort_on_fail {
            Some(a) if p.capacity.is_some() && a.delay == Duration::ZERO => " (ends a step when breached)".to_owned(),
            Some(a) if p.capacity.is_some() => format!(" (ends a step when breached after {})", a.delay),
            Some(a) if a.delay == Duration::ZERO => " (aborts the run when breached)".to_owned(),
            Some(a) => format!(" (aborts the run when breached after {})", a.delay),
            None => String::new(),
        };
        let judged = match (&p.capacity, s.metric) {
            (Some(_), crate::Metric::Capacity) => " (judged on the rate the search finds)",
            (Some(_), _) => " (each step)",
            (None, _) => "",
        };
        let _ = writeln!(out, "  {pad}slo      {s}{abort}{judged}");
    }
    if p.cooldown != Duration::ZERO {
        let _ = writeln!(out, "  {pad}cooldown {}", p.cooldown);
    }
}

/// The frame cost the plan states a profile's resolution for: a handler's worth of CPU, in microseconds per request.
const REFERENCE_FRAME_US: f64 = 50.0;

/// A profiled phase's lines: what records the profile, the samples a round gathers and the smallest change of a
/// frame's CPU per request they can tell apart from sampling noise.
fn write_profile(out: &mut String, p: &Phase, profile: &loadgate_model::profile::Profile, rounds: u32, pad: &str) {
    let _ = writeln!(out, "  {pad}profile  {}", profile.describe());
    let Some(period_ns) = profile.period_ns() else {
        let _ = writeln!(out, "  {pad}         counts as the profiler writes them, per request and round");
        return;
    };
    let Some(secs) = p.duration.map(|d| d.0.as_secs_f64()) else {
        let _ = writeln!(out, "  {pad}         samples per round unknown: the phase stops after a request count");
        return;
    };
    let requests = match &p.load.arrival {
        Arrival::Constant { rate } => Some(rate.per_sec() * secs),
        _ => None,
    };
    let r = loadgate_model::profile::resolution(period_ns, secs, requests, rounds, REFERENCE_FRAME_US);
    let mut line = format!("about {} samples per busy CPU per round", thousands(r.samples_per_cpu));
    if let (Some(per), Some(smallest)) = (r.us_per_sample_per_request, r.smallest_change_us) {
        let over = if rounds > 1 { format!(" over {rounds} paired rounds") } else { " in one round".to_owned() };
        line.push_str(&format!(
            "; one sample = {per:.3} us/request; a frame of {:.0} us/request shows a change of {smallest:.2} \
             us/request{over}",
            r.reference_us
        ));
    }
    let _ = writeln!(out, "  {pad}         {line}");
    if r.samples_per_cpu < loadgate_model::profile::MIN_USEFUL_SAMPLES as f64 {
        let _ = writeln!(
            out,
            "  {pad}         warning: fewer than {} samples a round say little about any frame: lengthen the \
             phase or raise `profile.cpu.frequency`",
            loadgate_model::profile::MIN_USEFUL_SAMPLES
        );
    }
}

/// `12,345` from 12345.4.
fn thousands(x: f64) -> String {
    let n = x.round().max(0.0) as u64;
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// What a phase sends, each line indented by `pad`: its session's steps, its request, or its mix; then the timeout.
fn write_requests(out: &mut String, p: &Phase, pad: &str) {
    if !p.session.is_empty() {
        for (i, step) in p.session.iter().enumerate() {
            let label = if i == 0 { "session" } else { "" };
            match step {
                SessionStep::Request { name, request } => {
                    let _ = writeln!(out, "  {pad}{label:<8} {}. {name}: {}", i + 1, request_text(request));
                }
                SessionStep::Think { duration } => {
                    let _ = writeln!(out, "  {pad}{label:<8} {}. think {duration}", i + 1);
                }
            }
        }
        let _ = writeln!(out, "  {pad}timeout  {}", p.timeout);
    } else if matches!(p.load.arrival, Arrival::Replay(_)) {
        let _ = writeln!(
            out,
            "  {pad}request  the file's, each with its method, path, headers and body; timeout {}",
            p.timeout
        );
    } else if p.mix.is_empty() {
        let _ = writeln!(out, "  {pad}request  {}, timeout {}", request_text(&p.request), p.timeout);
    } else {
        let total: u64 = p.mix.iter().map(|m| u64::from(m.weight)).sum();
        for m in &p.mix {
            let _ = writeln!(out, "  {pad}request  {} ({}/{total}): {}", m.name, m.weight, request_text(&m.request));
        }
        let _ = writeln!(out, "  {pad}timeout  {}", p.timeout);
    }
}

/// `POST /path (body ...)`: a request's method, path and body.
fn request_text(r: &RequestPlan) -> String {
    let mut text = format!("{} {}", r.method, r.path);
    if let Some(b) = &r.body {
        let _ = write!(text, " ({})", body_text(b, r));
    }
    text
}

/// How a phase is split over the workers: `w0: 8c 1/2 stripe 1/4, ...`.
fn split_text(p: &Phase) -> String {
    let split: Vec<String> = p
        .workers
        .iter()
        .map(|w| {
            let mut s = format!("w{}: {}c", w.worker, w.connections);
            if let Some(r) = w.requests {
                let _ = write!(s, " {r}req");
            }
            if !matches!(p.load.arrival, Arrival::Closed) {
                let _ = write!(s, " {}/{}", w.share.numerator, w.share.denominator);
            }
            if let Some(st) = w.stripe {
                let _ = write!(s, " stripe {}/{}", st.stream + 1, st.streams);
            }
            s
        })
        .collect();
    split.join(", ")
}
