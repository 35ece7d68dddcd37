//! `loadgate import log|har FILE`: a spec for a repeatable synthetic load made from a log's schedule, instead of
//! a replay of it. The request mix with weights (the most frequent requests, by method and path with query), the
//! observed rate as ramp stages, and every secret (a credential header, a secret query parameter) written as a
//! reference to the environment, never its value.

use std::collections::HashMap;
use std::fmt::Write as _;

use loadgate_model::yaml::quote;

use super::schedule::Schedule;
use super::secret::Value;
use crate::credential::{credential_env_name, credential_reference};
use crate::draft::{literal, SCHEMA_URL};

/// The most distinct requests the mix names; the rest is said in a note.
pub const MAX_MIX: usize = 50;
/// The most ramp stages the rate profile is cut into.
const MAX_STAGES: u64 = 30;
/// The shortest stage: a rate measured over less says more about noise than about the traffic.
const MIN_STAGE_MS: u64 = 10_000;
/// The response time the connections are sized for at the peak rate.
const SIZED_FOR_MS: f64 = 100.0;
/// The largest weight a spec takes.
const MAX_WEIGHT: u64 = 1_000_000;

/// What the spec is made from besides the schedule.
#[derive(Debug, Clone)]
pub struct SynthSource {
    /// The file as the user named it.
    pub file: String,
    /// Its format, as the notes name it (`nginx combined`, `HAR`).
    pub format: String,
    /// The target's base URL: given, or a HAR's origin; `None` writes a placeholder and says so.
    pub url: Option<String>,
}

/// The spec written, and what the user must know of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Synthesized {
    pub yaml: String,
    pub notes: Vec<String>,
}

/// One request of the mix: its method, target (secrets as references) and credential headers, and how often it
/// came.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct MixKey {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
}

/// The written value of a query parameter or header: as logged, or a reference to the environment when secret.
fn written(name: &str, value: &Value, referenced: &mut Vec<String>) -> String {
    match value {
        Value::Plain(v) => literal(v),
        Value::Secret(_) => {
            let env = credential_env_name(name);
            if !referenced.contains(&env) {
                referenced.push(env);
            }
            credential_reference(name)
        }
    }
}

/// The spec of a synthetic load like the log's: see the module documentation.
pub fn synthesize(schedule: &Schedule, source: &SynthSource) -> Synthesized {
    let mut notes = Vec::new();
    let mut referenced: Vec<String> = Vec::new();
    let mut counts: HashMap<MixKey, (u64, u64)> = HashMap::new();
    let mut not_paths = 0u64;
    for (i, r) in schedule.requests.iter().enumerate() {
        // A request target that is not a path (`*`, a scanner's junk, an absolute URL the log kept as sent) is no
        // request a spec can send to the target.
        if !r.path.starts_with('/') {
            not_paths += 1;
            continue;
        }
        // Logged text stays literal through the spec's templates (a `{{` in a path is not an expression).
        let mut target = literal(&r.path);
        for (j, q) in r.query.iter().enumerate() {
            target.push(if j == 0 { '?' } else { '&' });
            target.push_str(&literal(&q.name));
            if let Some(v) = &q.value {
                target.push('=');
                target.push_str(&written(&q.name, v, &mut referenced));
            }
        }
        // Only the headers whose values are secret (a session, a token) are kept, as references: the others
        // (user agents, caches, encodings) are the generator's own.
        let headers: Vec<(String, String)> = r
            .headers
            .iter()
            .filter(|h| matches!(h.value, Value::Secret(_)))
            .map(|h| (literal(&h.name), written(&h.name, &h.value, &mut referenced)))
            .collect();
        let entry = counts.entry(MixKey { method: r.method.clone(), target, headers }).or_insert((0, i as u64));
        entry.0 += 1;
    }
    let total: u64 = counts.values().map(|c| c.0).sum();
    let mut mix: Vec<(MixKey, u64, u64)> = counts.into_iter().map(|(k, (n, first))| (k, n, first)).collect();
    // The most frequent first; ties in the order the log first sent them.
    mix.sort_by(|a, b| b.1.cmp(&a.1).then(a.2.cmp(&b.2)));
    if mix.len() > MAX_MIX {
        let left: u64 = mix[MAX_MIX..].iter().map(|m| m.1).sum();
        notes.push(format!(
            "{} more distinct requests ({:.1}% of the requests) are left out of the mix: it names the {MAX_MIX} most \
             frequent",
            mix.len() - MAX_MIX,
            left as f64 * 100.0 / total.max(1) as f64
        ));
        mix.truncate(MAX_MIX);
    }
    if not_paths > 0 {
        let s = if not_paths == 1 { "" } else { "s" };
        notes.push(format!("{not_paths} request{s} skipped: the target is not a path"));
    }
    // Weights keep their ratios within the spec's largest weight.
    let top = mix.first().map_or(1, |m| m.1);
    let scale = if top > MAX_WEIGHT { top as f64 / MAX_WEIGHT as f64 } else { 1.0 };
    if scale > 1.0 {
        notes.push(format!("the weights are the counts divided by {scale:.1} (a weight is at most {MAX_WEIGHT})"));
    }
    for (reason, n) in &schedule.skips {
        notes.push(format!("{n} request{} skipped: {}", if *n == 1 { "" } else { "s" }, reason.name()));
    }
    if schedule.bad_lines > 0 {
        notes.push(format!("{} lines could not be read", schedule.bad_lines));
    }
    for env in &referenced {
        notes.push(format!(
            "a secret the log holds is read from the environment (`{{{{ env.{env} }}}}`, kept secret as every `env` \
             value is): set {env} before running the spec"
        ));
    }
    let url = source.url.clone().unwrap_or_else(|| {
        notes.push(
            "the log names no server: target.base_url is http://localhost:8080; point it at the server to load"
                .to_owned(),
        );
        "http://localhost:8080".to_owned()
    });
    let (ramp, ramp_notes) = ramp(schedule);
    notes.extend(ramp_notes);

    let mut y = String::new();
    let _ = writeln!(y, "# yaml-language-server: $schema={SCHEMA_URL}");
    let _ = writeln!(y, "# imported from: loadgate import of {} ({})", one_line(&source.file), source.format);
    let _ = writeln!(
        y,
        "# {total} requests in the log's mix; a synthetic load with its mix and rate profile, not a replay of it"
    );
    for n in &notes {
        let _ = writeln!(y, "# note: {}", one_line(n));
    }
    let _ = writeln!(y, "version: 1");
    let _ = writeln!(y, "name: {}", quote(&spec_name(&source.file)));
    let _ = writeln!(y, "target:\n  base_url: {}", quote(&url));
    let _ = writeln!(y, "scenarios:\n  imported:\n    requests:");
    let width = mix.len().to_string().len();
    for (i, (key, n, _)) in mix.iter().enumerate() {
        let n = ((*n as f64 / scale).round() as u64).clamp(1, MAX_WEIGHT);
        let (method, path) = (quote(&literal(&key.method)), quote(&key.target));
        let _ = write!(y, "      r{:0width$}: {{ weight: {n}, method: {method}, path: {path}", i + 1);
        if !key.headers.is_empty() {
            let headers: Vec<String> = key.headers.iter().map(|(k, v)| format!("{}: {}", quote(k), quote(v))).collect();
            let _ = write!(y, ", headers: {{ {} }}", headers.join(", "));
        }
        let _ = writeln!(y, " }}");
    }
    y.push_str(&ramp);
    Synthesized { yaml: y, notes }
}

/// The log's rate as ramp stages: the span cut into equal stages (at least 10 s each, at most 30), each stage's
/// rate the requests that started in it over its length, joined linearly; connections sized for 100 ms at the
/// peak.
fn ramp(schedule: &Schedule) -> (String, Vec<String>) {
    let mut notes = Vec::new();
    let starts: Vec<u64> = schedule.requests.iter().map(|r| r.at.as_millis() as u64).collect();
    let span_ms = starts.iter().max().copied().unwrap_or(0).max(1);
    let stages = (span_ms / MIN_STAGE_MS).clamp(1, MAX_STAGES);
    let stage_ms = span_ms.div_ceil(stages).max(1);
    let mut per_stage = vec![0u64; stages as usize];
    for s in &starts {
        let i = ((s / stage_ms) as usize).min(per_stage.len() - 1);
        per_stage[i] += 1;
    }
    let rates: Vec<f64> = per_stage.iter().map(|n| *n as f64 * 1000.0 / stage_ms as f64).collect();
    let peak = rates.iter().copied().fold(0.0, f64::max);
    let connections = ((peak * SIZED_FOR_MS / 1000.0).ceil() as u64).clamp(4, 10_000);
    notes.push(format!(
        "the rate follows the log's in {stages} linear stage{} of {}: a ramp through each stage's rate, not its \
         bursts; connections ({connections}) are sized for {SIZED_FOR_MS:.0} ms responses at the peak of {}",
        if stages == 1 { "" } else { "s" },
        duration(stage_ms),
        rate(peak)
    ));
    let mut y = String::new();
    let _ = writeln!(y, "    load:\n      ramp:\n        connections: {connections}");
    let _ = writeln!(y, "        start_rate: {}", rate(rates[0]));
    let _ = writeln!(y, "        stages:");
    for r in &rates {
        let _ = writeln!(y, "          - {{ to: {}, over: {} }}", rate(*r), duration(stage_ms));
    }
    (y, notes)
}

/// `12.5/s` with at most three decimals.
fn rate(per_s: f64) -> String {
    let text = format!("{per_s:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}/s")
}

/// `10s`, `1500ms`.
fn duration(ms: u64) -> String {
    if ms % 1000 == 0 {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

/// The spec's name from the file's: letters, digits, `-`, `_` and `.` only.
fn spec_name(file: &str) -> String {
    let base = file.rsplit('/').next().unwrap_or(file);
    let base = base.trim_end_matches(".gz");
    let name: String =
        base.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '-' }).collect();
    let name = name.trim_matches(|c: char| !c.is_ascii_alphanumeric()).to_owned();
    if name.is_empty() {
        "imported".to_owned()
    } else {
        name
    }
}

fn one_line(text: &str) -> String {
    text.replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::{replay, Limits, LogFormat, ReplayOptions};

    fn data(name: &str) -> Vec<u8> {
        std::fs::read(format!("{}/tests/data/replay/{name}", env!("CARGO_MANIFEST_DIR"))).expect("sample")
    }

    fn synth(name: &str, format: &LogFormat, url: Option<&str>) -> Synthesized {
        let s = replay(&data(name)[..], format, &Limits::default(), &ReplayOptions::default(), &|_| None)
            .expect("schedule");
        let source = SynthSource { file: name.to_owned(), format: "test".to_owned(), url: url.map(str::to_owned) };
        synthesize(&s, &source)
    }

    fn timed() -> LogFormat {
        LogFormat::Nginx(
            "$remote_addr - $remote_user [$time_local] \"$request\" $status $body_bytes_sent \"$http_referer\" \
             \"$http_user_agent\" $request_time $msec $connection"
                .to_owned(),
        )
    }

    #[test]
    fn the_mix_weighs_each_request_by_how_often_the_log_sent_it() {
        let s = synth("nginx-timed.log", &timed(), Some("http://127.0.0.1:8080"));
        // GET and HEAD only: the log's POST and DELETE are skipped and said.
        assert!(!s.yaml.contains("method: \"POST\"") && !s.yaml.contains("method: \"DELETE\""), "{}", s.yaml);
        assert!(s.notes.iter().any(|n| n.contains("skipped: method not GET or HEAD")), "{:?}", s.notes);
        let weights: Vec<u64> =
            s.yaml.lines().filter_map(|l| l.split("weight: ").nth(1)?.split(',').next()?.parse().ok()).collect();
        assert!(weights.windows(2).all(|w| w[0] >= w[1]), "{weights:?}");
        assert!(s.yaml.contains("method: \"HEAD\", path: \"/static/app.css\""), "{}", s.yaml);
    }

    #[test]
    fn secret_query_parameters_become_references_to_the_environment() {
        let s = synth("nginx-timed.log", &timed(), None);
        assert!(!s.yaml.contains("tok1") && !s.yaml.contains("tok7"), "{}", s.yaml);
        assert!(s.yaml.contains("access_token={{ env.LOADGATE_ACCESS_TOKEN }}"), "{}", s.yaml);
        assert!(s.notes.iter().any(|n| n.contains("set LOADGATE_ACCESS_TOKEN")), "{:?}", s.notes);
        assert!(s.notes.iter().any(|n| n.contains("base_url is http://localhost:8080")), "{:?}", s.notes);
    }

    #[test]
    fn a_har_keeps_its_credential_headers_as_references_only() {
        let s = synth("shop.har", &LogFormat::Har { origin: None }, Some("https://shop.example"));
        assert!(s.yaml.contains("{{ env.LOADGATE_"), "{}", s.yaml);
        for line in s.yaml.lines().filter(|l| l.contains("headers:")) {
            assert!(line.contains("{{ env.LOADGATE_"), "{line}");
        }
    }

    #[test]
    fn weights_beyond_what_a_spec_takes_keep_their_ratios() {
        let line = |i: u64, path: &str| {
            format!("127.0.0.1 - - [28/Nov/2026:21:54:50 +0000] \"GET {path} HTTP/1.1\" 200 3 \"-\" \"t\" 0.001 {}.{:03} {i}\n", 1_795_902_890 + i / 1000, i % 1000)
        };
        let mut log = String::new();
        for i in 0..3_000u64 {
            log.push_str(&line(i, if i % 3 == 0 { "/b" } else { "/a" }));
        }
        log.push_str(&line(3_000, "*"));
        let s = replay(log.as_bytes(), &timed(), &Limits::default(), &ReplayOptions::default(), &|_| None)
            .expect("schedule");
        let mut s = s;
        // As if the log had sent each request a thousand times more.
        let copies: Vec<_> = s.requests.iter().flat_map(|r| std::iter::repeat_n(r.clone(), 1000)).collect();
        s.requests = copies;
        let made = synthesize(&s, &SynthSource { file: "big.log".into(), format: "test".into(), url: None });
        assert!(made.yaml.contains("r1: { weight: 1000000, method: \"GET\", path: \"/a\" }"), "{}", made.yaml);
        assert!(made.yaml.contains("r2: { weight: 500000, method: \"GET\", path: \"/b\" }"), "{}", made.yaml);
        assert!(made.notes.iter().any(|n| n.contains("divided by 2.0")), "{:?}", made.notes);
        assert!(
            made.notes.iter().any(|n| n.contains("1000 requests skipped: the target is not a path")),
            "{:?}",
            made.notes
        );
    }

    #[test]
    fn the_rate_is_one_stage_per_ten_seconds_at_most_thirty() {
        let s = synth("nginx-timed.log", &timed(), Some("http://h"));
        let stages = s.yaml.lines().filter(|l| l.trim_start().starts_with("- { to:")).count();
        assert!((1..=30).contains(&stages), "{}", s.yaml);
        assert_eq!(rate(12.5), "12.5/s");
        assert_eq!(rate(3.0), "3/s");
        assert_eq!(duration(10_000), "10s");
        assert_eq!(spec_name("/var/log/nginx/access.log.gz"), "access.log");
    }
}
