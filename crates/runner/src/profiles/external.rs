//! The external sources of a profile: a profiler's command line run beside the phase, and a pprof endpoint
//! fetched over it.

use std::io::{Read as _, Write as _};
use std::os::unix::process::CommandExt as _;
use std::process::{Child, ChildStderr, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use loadgate_model::profile::{CommandProfile, PprofKind};
use loadgate_results::pprof::{self, PprofError, PprofStacks};
use loadgate_results::stacks::{parse_folded, FoldedLimits};
use loadgate_results::ScenarioResult;

use super::round::{failed, output, RoundStacks};
use crate::attach::{AttachmentOutput, PhaseOutcome, Running};
use crate::scratch::ScratchDir;

/// The most bytes of an external profiler's standard error kept for a message.
const MAX_STDERR: usize = 4096;
/// The most bytes a pprof endpoint may answer.
const MAX_PPROF_BYTES: usize = 32 << 20;
/// How long past the phase an external profiler or a pprof endpoint may take to finish.
const GRACE: Duration = Duration::from_secs(20);

/// Splits a command line into words: whitespace separates, single and double quotes group (no shell).
pub(super) fn words(line: &str) -> Result<Vec<String>, String> {
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

pub(super) fn start_command(
    c: &CommandProfile,
    pid: u32,
    seconds: u64,
    label: &str,
) -> Result<Box<dyn Running>, String> {
    // A directory of loadgate's own (0700, a fresh name): the profiler writes there as loadgate's user (for
    // async-profiler, the JVM itself writes `-f`: it must run as the same user and see the same /tmp).
    let scratch = ScratchDir::new().map_err(|e| format!("cannot make a directory for the profiler's output: {e}"))?;
    let out = scratch.path().join(format!("{}.folded", label.replace(|c: char| !c.is_ascii_alphanumeric(), "_")));
    let fill = |w: &str| {
        w.replace("{pid}", &pid.to_string())
            .replace("{seconds}", &seconds.to_string())
            .replace("{out}", &out.display().to_string())
    };
    let argv: Vec<String> = words(&c.run)?.iter().map(|w| fill(w)).collect();
    let Some((program, args)) = argv.split_first() else { return Err("the profiler's command line is empty".into()) };
    // A group of its own, so that an overrunning profiler is killed with whatever it started (a shell's `sleep`
    // would hold the standard error open, and the run with it).
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("the profiler `{program}` could not start: {e}"))?;
    let stderr = child.stderr.take().map(StderrTail::read);
    Ok(Box::new(CommandRun {
        child,
        stderr,
        _scratch: scratch,
        program: program.clone(),
        out,
        started: Instant::now(),
        seconds,
        timed: c.run.contains("{seconds}"),
        event: c.event.name(),
        ns_per_sample: c.event.is_time().then_some(c.interval.0.as_nanos() as f64),
    }))
}

/// The first [`MAX_STDERR`] bytes a profiler writes to its standard error, read on a thread of its own while it
/// runs, the rest drained: a chatty profiler never blocks on a full pipe, and one whose children keep the pipe
/// open never blocks the run.
struct StderrTail {
    kept: Arc<Mutex<Vec<u8>>>,
    done: mpsc::Receiver<()>,
}

impl StderrTail {
    fn read(mut pipe: ChildStderr) -> StderrTail {
        let kept = Arc::new(Mutex::new(Vec::new()));
        let (tx, done) = mpsc::channel();
        let sink = Arc::clone(&kept);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = pipe.read(&mut buf) {
                if let Ok(mut k) = sink.lock() {
                    let room = MAX_STDERR.saturating_sub(k.len());
                    k.extend_from_slice(&buf[..n.min(room)]);
                }
            }
            let _ = tx.send(());
        });
        StderrTail { kept, done }
    }

    /// What was written, once the pipe closed or `wait` passed, as one line of text without control characters.
    fn text(self, wait: Duration) -> String {
        let _ = self.done.recv_timeout(wait);
        let bytes = self.kept.lock().map(|k| k.clone()).unwrap_or_default();
        printable(&String::from_utf8_lossy(&bytes))
    }
}

/// A profiler's message as one line: lines joined by ` | `, control characters escaped (`\u{1b}`), so that it
/// cannot drive the terminal that shows it.
fn printable(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if !out.is_empty() {
            out.push_str(" | ");
        }
        for c in line.chars() {
            if c.is_control() {
                out.extend(c.escape_default());
            } else {
                out.push(c);
            }
        }
    }
    out
}

struct CommandRun {
    child: Child,
    stderr: Option<StderrTail>,
    /// Where `{out}` is; removed with it when the round's stacks are read.
    _scratch: ScratchDir,
    program: String,
    out: std::path::PathBuf,
    started: Instant,
    seconds: u64,
    /// Told `{seconds}`: it stops by itself when the phase does.
    timed: bool,
    event: &'static str,
    ns_per_sample: Option<f64>,
}

impl CommandRun {
    /// A round whose profile failed, under this profile's event (so that a later round's stacks read alike).
    fn failed(&self, note: String) -> RoundStacks {
        RoundStacks { sample_type: self.event.into(), ns_per_sample: self.ns_per_sample, ..failed("command", note) }
    }
}

impl Running for CommandRun {
    fn stop(mut self: Box<Self>, outcome: &PhaseOutcome, _: Option<&mut ScenarioResult>) -> AttachmentOutput {
        let deadline = self.started + Duration::from_secs(self.seconds) + GRACE;
        // A profiler not told `{seconds}` runs until interrupted, and one whose phase ended early (interrupted,
        // aborted) should stop now rather than at the end of `{seconds}`: in a group of its own, it never sees the
        // terminal's Ctrl-C, so it is interrupted as Ctrl-C would, and writes what it has. Only while it runs, so
        // that its pid is still its group's id.
        let early = outcome.duration + Duration::from_secs(1) < Duration::from_secs(self.seconds);
        if (!self.timed || early) && matches!(self.child.try_wait(), Ok(None)) {
            loadgate_target::launch::interrupt_tree(self.child.id());
        }
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
                _ => {
                    // Still running, so its pid is still its group's id.
                    loadgate_target::launch::kill_tree(self.child.id());
                    let _ = self.child.wait();
                    break None;
                }
            }
        };
        let ran = self.started.elapsed();
        let stderr = self.stderr.take().map(|s| s.text(Duration::from_secs(1))).unwrap_or_default();
        let said = if stderr.is_empty() { String::new() } else { format!("; it said: {stderr}") };
        let program = &self.program;
        let round = match status {
            None => self.failed(format!(
                "the profiler `{program}` was still running {:.0?} after the phase and was stopped{said}",
                GRACE
            )),
            Some(s) if !s.success() => self.failed(format!("the profiler `{program}` failed ({s}){said}")),
            Some(_) => match std::fs::read(&self.out) {
                Err(e) => self.failed(format!("the profiler `{program}` wrote no stacks to {{out}} ({e}){said}")),
                Ok(bytes) => match parse_folded(&bytes, FoldedLimits::default()) {
                    Err(e) => {
                        self.failed(format!("the profiler `{program}` wrote what is not folded stacks: {e}{said}"))
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
        output(round, outcome)
    }
}

/// Fetches `url` (the side's pprof endpoint) over the phase, on a thread of its own.
pub(super) fn start_pprof(url: String, kind: PprofKind, seconds: u64) -> Box<dyn Running> {
    let handle = std::thread::spawn(move || fetch(&url, seconds));
    Box::new(PprofRun { handle, kind })
}

struct PprofRun {
    handle: std::thread::JoinHandle<Result<Vec<u8>, String>>,
    kind: PprofKind,
}

impl Running for PprofRun {
    fn stop(self: Box<Self>, outcome: &PhaseOutcome, _: Option<&mut ScenarioResult>) -> AttachmentOutput {
        let failed = |note: String| RoundStacks { sample_type: self.kind.name().into(), ..failed("pprof", note) };
        let round = match self.handle.join() {
            Err(_) => failed("the pprof fetch failed".into()),
            Ok(Err(e)) => failed(e),
            Ok(Ok(body)) => match decode_pprof(&body, self.kind) {
                Err(e) => failed(format!("the pprof endpoint answered what is not a profile: {e}")),
                Ok(p) => RoundStacks {
                    source: "pprof".into(),
                    sample_type: if self.kind == PprofKind::Cpu { "cpu".into() } else { p.sample_type.clone() },
                    ns_per_sample: p.ns_per_unit(),
                    stacks: p.stacks,
                    notes: Vec::new(),
                },
            },
        };
        output(round, outcome)
    }
}

/// Reads a pprof profile: a CPU profile by its sample counts (`samples/count`, each the profile's period of CPU
/// time), so that its counts are samples as every other source's are, not nanoseconds; other kinds by their
/// default sample type.
fn decode_pprof(body: &[u8], kind: PprofKind) -> Result<PprofStacks, PprofError> {
    if kind != PprofKind::Cpu {
        return pprof::decode(body, None);
    }
    match pprof::decode(body, Some("samples")) {
        Ok(p) if p.ns_per_unit().is_some() => Ok(p),
        Err(e @ (PprofError::TooLarge { .. } | PprofError::TooLargeDecoded { .. } | PprofError::Gzip(_))) => Err(e),
        _ => pprof::decode(body, None),
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
    // Bounded in bytes and in time as a whole (a read timeout alone would let a trickle go on for ever).
    let deadline = Instant::now() + timeout;
    let mut raw = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        let n = s.read(&mut buf).map_err(|e| format!("the pprof endpoint {url}: {e}"))?;
        if n == 0 {
            break;
        }
        raw.extend_from_slice(&buf[..n]);
        if raw.len() > MAX_PPROF_BYTES + 65_536 {
            return Err(format!("the pprof endpoint {url} answered more than {} MiB", MAX_PPROF_BYTES >> 20));
        }
        if Instant::now() > deadline {
            return Err(format!("the pprof endpoint {url} was still answering {GRACE:.0?} after the phase"));
        }
    }
    let head_end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| format!("the pprof endpoint {url} answered no HTTP response"))?;
    let head = String::from_utf8_lossy(&raw[..head_end]).to_ascii_lowercase();
    let status = printable(head.split_whitespace().nth(1).unwrap_or_default());
    let body = &raw[head_end + 4..];
    if status != "200" {
        let text = printable(&String::from_utf8_lossy(&body[..body.len().min(300)]));
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
    fn a_go_cpu_profile_counts_samples_of_its_period_not_nanoseconds() {
        let body = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../results/tests/data/go-cpu.pprof.gz"))
            .expect("the Go CPU profile sample");
        let p = decode_pprof(&body, PprofKind::Cpu).expect("decodes");
        assert_eq!(p.sample_type, "samples");
        assert_eq!(p.ns_per_unit(), Some(10_000_000.0));
        let ns = pprof::decode(&body, Some("cpu")).expect("cpu nanoseconds");
        assert_eq!(p.stacks.total() * 10_000_000, ns.stacks.total());
        assert!(decode_pprof(b"not a profile", PprofKind::Cpu).is_err());
    }

    #[test]
    fn a_profilers_message_is_one_line_without_control_characters() {
        assert_eq!(
            printable("\u{1b}[31merror\u{1b}[0m: no such process\n\n  try again \n"),
            "\\u{1b}[31merror\\u{1b}[0m: no such process | try again"
        );
        assert_eq!(printable(""), "");
    }

    #[test]
    fn a_chunked_body_is_joined_and_a_broken_one_refused() {
        assert_eq!(dechunk(b"3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n").unwrap(), b"abcde");
        assert!(dechunk(b"5\r\nab").is_none());
        assert!(dechunk(b"zz\r\n").is_none());
    }
}
