//! `profile`: what loadgate records inside the target while a measured phase runs: the built-in sampler
//! (`cpu`), an external profiler (`command`), or a Go server's pprof endpoint (`pprof`).

use loadgate_model::profile::{
    CommandProfile, CpuProfile, KernelStacks, PprofKind, PprofProfile, Profile, ProfileEvent, ProfileSource, Unwind,
    DEFAULT_COMMAND_INTERVAL, MAX_CPU_FREQUENCY,
};

use super::fields::read_choice;
use super::keys::{COMMAND_PROFILE_KEYS, CPU_PROFILE_KEYS, PPROF_KEYS, PROFILE_KEYS};
use crate::diag::Diagnostic;
use crate::node::{Node, NodeKind, Path};
use crate::read::Cx;
use loadgate_model::spec::Load;
use loadgate_model::units::Duration;

/// The placeholders an external profiler's command line may hold.
const PLACEHOLDERS: &[&str] = &["pid", "seconds", "out"];

/// The pprof kinds by the last segment of their endpoint's path.
const PPROF_KINDS: &[(&str, PprofKind)] = &[
    ("cpu", PprofKind::Cpu),
    ("profile", PprofKind::Cpu),
    ("allocs", PprofKind::Allocs),
    ("heap", PprofKind::Heap),
    ("mutex", PprofKind::Mutex),
    ("block", PprofKind::Block),
];

/// What a profile needs of the targets, known before the profile is read: whether every target is a process
/// loadgate starts (so that it knows its process id).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct ProfileCx {
    pub(super) started: bool,
    /// The spec has a `candidate`: two servers, so one pprof URL cannot serve both sides.
    pub(super) ab: bool,
}

/// Reads the spec-wide `profile:`.
pub(super) fn read_profile(cx: &mut Cx<'_>, node: &Node, path: &Path, pcx: ProfileCx) -> Option<Profile> {
    let f = cx.map(node, path, PROFILE_KEYS, "`profile`")?;
    let which = cx.one_of(&f, &["cpu", "command", "pprof"], "`profile`")?;
    let required = match f.get("required") {
        Some((n, p)) => cx.boolean(n, &p, "`profile.required`")?,
        None => false,
    };
    let (n, p) = f.get(which)?;
    let source = match which {
        "cpu" => ProfileSource::Cpu(read_cpu(cx, n, &p)?),
        "command" => ProfileSource::Command(read_command(cx, n, &p)?),
        _ => ProfileSource::Pprof(read_pprof(cx, n, &p, pcx)?),
    };
    if !f.unknown.is_empty() {
        return None;
    }
    let profile = Profile { source, required };
    if profile.needs_pid() && !pcx.started {
        cx.error(
            Diagnostic::error(&p, f.key_span(which), format!("`profile.{which}` needs a target loadgate starts"))
                .expected("`target.start` or `target.builtin` (and the same for `candidate`): their process ids are what is profiled")
                .found("a target given by `base_url` alone: loadgate does not know its process")
                .help("start the server from the spec (`target: { start: { command: ... }, base_url: ... }`), or profile a Go server through `profile: { pprof: { url: http://host:6060/debug/pprof/profile } }`"),
        );
        return None;
    }
    Some(profile)
}

/// A pprof profile is fetched with `?seconds=N`, and pprof counts whole seconds: every phase of a profiled
/// scenario must be bounded by time and last a second or more. An external profiler told `{seconds}` needs phases
/// bounded by time too: a phase bounded by a request count has no length to tell it.
pub(super) fn check_rounds(
    cx: &mut Cx<'_>,
    profile: &Profile,
    scenario: &str,
    loads: &[&Load],
    span: Option<crate::node::Span>,
    path: &Path,
) -> bool {
    if let ProfileSource::Command(c) = &profile.source {
        if c.run.contains("{seconds}") && loads.iter().any(|l| l.duration().is_none()) {
            cx.error(
                Diagnostic::error(path, span, format!("scenario `{scenario}` cannot tell its profiler `{{seconds}}`"))
                    .expected("phases bounded by time (`duration`): `{seconds}` is the phase's length")
                    .found("phases bounded by a request count, not by time")
                    .help("give the load a `duration`, or use a command line without `{seconds}`: loadgate interrupts such a profiler (SIGINT) when the phase ends"),
            );
            return false;
        }
        return true;
    }
    if !matches!(profile.source, ProfileSource::Pprof(_)) {
        return true;
    }
    for load in loads {
        match load.duration() {
            Some(d) if d.0 >= std::time::Duration::from_secs(1) => {}
            found => {
                let found = match found {
                    Some(d) => format!("phases of {d}"),
                    None => "phases bounded by a request count, not by time".to_owned(),
                };
                cx.error(
                    Diagnostic::error(path, span, format!("scenario `{scenario}` cannot be profiled through pprof"))
                        .expected("phases of 1s or more: pprof profiles whole seconds (`?seconds=N`)")
                        .found(found)
                        .help("give the load a `duration` of at least 1s, or profile the scenario with `profile: { cpu: {} }`"),
                );
                return false;
            }
        }
    }
    true
}

/// Reads a scenario's own `profile:`: `off` (or `false`) turns the spec-wide profile off for it; a mapping
/// replaces it.
pub(super) fn read_scenario_profile(
    cx: &mut Cx<'_>,
    node: &Node,
    path: &Path,
    pcx: ProfileCx,
) -> Option<Option<Profile>> {
    match &node.kind {
        NodeKind::Bool(false) => Some(None),
        NodeKind::Str(s) if s == "off" => Some(None),
        NodeKind::Map(_) => read_profile(cx, node, path, pcx).map(Some),
        _ => {
            cx.error(
                Diagnostic::error(path, node.span, "a scenario's `profile` must be a profile or `off`")
                    .expected("`off`, or a mapping such as `profile: { cpu: { frequency: 499 } }`")
                    .found(node.describe()),
            );
            None
        }
    }
}

fn read_cpu(cx: &mut Cx<'_>, node: &Node, path: &Path) -> Option<CpuProfile> {
    if matches!(node.kind, NodeKind::Bool(true)) {
        return Some(CpuProfile::default());
    }
    if matches!(node.kind, NodeKind::Null) {
        return Some(CpuProfile::default());
    }
    let f = cx.map(node, path, CPU_PROFILE_KEYS, "`profile.cpu`")?;
    let mut cpu = CpuProfile::default();
    let mut ok = true;
    if let Some((n, p)) = f.get("frequency") {
        match cx.uint(n, &p, "`profile.cpu.frequency`", 1) {
            Some(hz) if hz <= u64::from(MAX_CPU_FREQUENCY) => cpu.frequency = hz as u32,
            Some(hz) => {
                cx.error(
                    Diagnostic::error(&p, n.span, format!("a sampling frequency of {hz} Hz would cost the target more than it tells"))
                        .expected(format!("at most {MAX_CPU_FREQUENCY} samples a second per thread"))
                        .help("the default, 999 Hz, gathers about 2,000 samples per busy CPU in a 2-second round; lengthen the rounds for more"),
                );
                ok = false;
            }
            None => ok = false,
        }
    }
    if let Some((n, p)) = f.get("unwind") {
        match read_choice(
            cx,
            n,
            &p,
            "`unwind`",
            &[("auto", Unwind::Auto), ("frame_pointers", Unwind::FramePointers), ("dwarf", Unwind::Dwarf)],
        ) {
            Some(u) => cpu.unwind = u,
            None => ok = false,
        }
    }
    if let Some((n, p)) = f.get("kernel") {
        match read_choice(cx, n, &p, "`kernel`", &[("auto", KernelStacks::Auto), ("off", KernelStacks::Off)]) {
            Some(k) => cpu.kernel = k,
            None => ok = false,
        }
    }
    (ok && f.unknown.is_empty()).then_some(cpu)
}

fn read_command(cx: &mut Cx<'_>, node: &Node, path: &Path) -> Option<CommandProfile> {
    // `command: "asprof ..."` is the short form of `command: { run: "asprof ..." }`.
    let (run_node, run_path, fields) = match &node.kind {
        NodeKind::Str(_) => (node, path.clone(), None),
        _ => {
            let f = cx.map(node, path, COMMAND_PROFILE_KEYS, "`profile.command`")?;
            let (n, p) = cx.required(&f, "run", "`profile.command`")?;
            (n, p, Some(f))
        }
    };
    let run = cx.string(run_node, &run_path, "`profile.command.run`")?;
    let mut ok = check_placeholders(cx, run_node, &run_path, &run);
    let mut event = ProfileEvent::Cpu;
    let mut interval = Duration(DEFAULT_COMMAND_INTERVAL);
    if let Some(f) = &fields {
        if let Some((n, p)) = f.get("event") {
            match read_choice(
                cx,
                n,
                &p,
                "`event`",
                &[
                    ("cpu", ProfileEvent::Cpu),
                    ("wall", ProfileEvent::Wall),
                    ("alloc", ProfileEvent::Alloc),
                    ("lock", ProfileEvent::Lock),
                ],
            ) {
                Some(e) => event = e,
                None => ok = false,
            }
        }
        if let Some((n, p)) = f.get("interval") {
            match cx.unit::<Duration>(n, &p, "`profile.command.interval`") {
                Some(d) if !d.0.is_zero() && d.0 <= std::time::Duration::from_secs(1) => interval = d,
                Some(d) => {
                    cx.error(
                        Diagnostic::error(&p, n.span, format!("an interval of {d} cannot be a sampling interval"))
                            .expected("a duration above zero and at most 1s: what one count of the profiler stands for")
                            .help("async-profiler's default is `-i 10ms` for cpu; py-spy's `--rate 100` is 10ms"),
                    );
                    ok = false;
                }
                None => ok = false,
            }
        }
        ok &= f.unknown.is_empty();
    }
    ok.then_some(CommandProfile { run, event, interval })
}

/// Every `{name}` of the command line is a known placeholder, and `{pid}` and `{out}` are there: the profiler must
/// know what to profile and where loadgate reads the stacks.
fn check_placeholders(cx: &mut Cx<'_>, node: &Node, path: &Path, run: &str) -> bool {
    let mut ok = true;
    if run.trim().is_empty() {
        cx.error(
            Diagnostic::error(path, node.span, "`profile.command.run` is empty").expected(
                "a profiler's command line, such as `asprof -d {seconds} -e cpu -o collapsed -f {out} {pid}`",
            ),
        );
        return false;
    }
    let mut rest = run;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            cx.error(
                Diagnostic::error(path, node.span, "`profile.command.run` has a `{` that is never closed")
                    .expected("placeholders written `{pid}`, `{seconds}` or `{out}`"),
            );
            return false;
        };
        let name = &after[..close];
        if !PLACEHOLDERS.contains(&name) {
            let suggestion = loadgate_model::suggest::did_you_mean(name, PLACEHOLDERS.iter().copied());
            let mut d = Diagnostic::error(path, node.span, format!("`{{{name}}}` is not a placeholder loadgate fills"))
                .expected("`{pid}` (the target's process id), `{seconds}` (the phase's length) or `{out}` (the file to write)");
            if let Some(s) = suggestion {
                d = d.help(format!("did you mean `{{{s}}}`?"));
            }
            cx.error(d);
            ok = false;
        }
        rest = &after[close + 1..];
    }
    for needed in ["pid", "out"] {
        if !run.contains(&format!("{{{needed}}}")) {
            let what =
                if needed == "pid" { "the target's process id" } else { "the file loadgate reads the stacks from" };
            cx.error(
                Diagnostic::error(path, node.span, format!("`profile.command.run` has no `{{{needed}}}`"))
                    .expected(format!("`{{{needed}}}` where the profiler takes {what}"))
                    .help("for async-profiler: `asprof -d {seconds} -e cpu -o collapsed -f {out} {pid}`; for py-spy: `py-spy record --pid {pid} --duration {seconds} --format raw --output {out}`"),
            );
            ok = false;
        }
    }
    ok
}

fn read_pprof(cx: &mut Cx<'_>, node: &Node, path: &Path, pcx: ProfileCx) -> Option<PprofProfile> {
    let f = cx.map(node, path, PPROF_KEYS, "`profile.pprof`")?;
    let (un, up) = cx.required(&f, "url", "`profile.pprof`")?;
    let url = cx.string(un, &up, "`profile.pprof.url`")?;
    // A path (`/debug/pprof/profile`) is fetched from each side's base_url.
    let endpoint_path = if url.starts_with('/') {
        (!url.contains(['?', '#']) && !url.chars().any(char::is_whitespace)).then(|| url.clone())
    } else {
        match loadgate_model::url::HttpUrl::parse(&url) {
            Ok(u) if !u.https && u.userinfo.is_none() && !u.has_query && u.fragment.is_none() => Some(u.path),
            _ => None,
        }
    };
    let Some(endpoint_path) = endpoint_path else {
        cx.error(
            Diagnostic::error(&up, un.span, "`profile.pprof.url` is not a pprof endpoint loadgate can fetch")
                .expected("an http:// URL without a query or credentials, such as `http://127.0.0.1:6060/debug/pprof/profile` (pprof is served on a plain debug port), or a path such as `/debug/pprof/profile` on the target's base_url")
                .found(un.describe()),
        );
        return None;
    };
    if pcx.ab && !url.starts_with('/') {
        cx.error(
            Diagnostic::error(&up, un.span, "one pprof URL cannot profile both sides of an A/B run")
                .expected("a path such as `/debug/pprof/profile`, fetched from each side's base_url (the target's and the candidate's)")
                .found(format!("`{url}`, which is one of the two servers at most"))
                .help("serve net/http/pprof on each server's own listener and write `profile: { pprof: { url: /debug/pprof/profile } }`"),
        );
        return None;
    }
    let last = endpoint_path.trim_end_matches('/').rsplit('/').next().unwrap_or_default();
    let by_path = PPROF_KINDS.iter().find(|(k, _)| *k == last).map(|(_, k)| *k);
    let kind = match f.get("kind") {
        Some((n, p)) => {
            let kind = read_choice(cx, n, &p, "`kind`", PPROF_KINDS)?;
            if let Some(other) = by_path.filter(|k| *k != kind) {
                cx.error(
                    Diagnostic::error(
                        &p,
                        n.span,
                        format!("`kind: {}` but the URL names the {} profile", kind.name(), other.name()),
                    )
                    .expected("a kind that matches the endpoint, or no `kind` (it is read from the URL)"),
                );
                return None;
            }
            kind
        }
        None => by_path.unwrap_or_default(),
    };
    f.unknown.is_empty().then_some(PprofProfile { url, kind })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_placeholders_are_the_ones_the_runner_fills() {
        assert_eq!(super::PLACEHOLDERS, &["pid", "seconds", "out"]);
    }
}
