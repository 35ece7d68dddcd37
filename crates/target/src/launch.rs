//! Starting, probing, watching and stopping the server under test.
//!
//! [`Target::start`] runs a command in its own process group (its pgid is its pid), pinned to CPUs with
//! `sched_setaffinity` in the child before `exec`, stdin from `/dev/null`, stdout and stderr to
//! `<log_dir>/<log_name>.stdout.log` and `.stderr.log`. A watcher thread waits for the process and records when
//! and how it exited ([`Target::exited`], [`Target::on_exit`]). [`Target::stop`] sends SIGTERM to the process
//! group (and to any descendant that left it), waits for the grace period, then sends SIGKILL; dropping a
//! [`Target`] stops it, so a target is never left behind by an error or a panic.
//!
//! The target must stay in the foreground: a server that daemonizes (forks, the parent exits, the child calls
//! `setsid`) looks like a target that exited, and its daemon escapes the process group. Run nginx with
//! `daemon off;`.

use std::collections::BTreeMap;
use std::io::{BufRead, Read, Seek, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use loadgate_measure::TargetExit;
use loadgate_model::units::CpuList;
use loadgate_model::Protocol;
use loadgate_plan::ReadyProbe;

use crate::error::Failed;
use crate::h2c_probe;
use crate::tls_probe::{self, ProbeTls};
use crate::watchdog::Watchdog;
use crate::TargetError;
use loadgate_machine::procfs;
use loadgate_server::{parse_listening_line, ServeConfig};

/// How many lines of each log an error quotes.
pub const LOG_TAIL_LINES: usize = 20;
/// How long [`Target::stop`] waits after SIGKILL before it reports the group as unkillable.
const KILL_WAIT: Duration = Duration::from_secs(5);

/// What to start and how.
#[derive(Debug, Clone, PartialEq)]
pub struct LaunchSpec {
    /// The program and its arguments; the program is looked up in `PATH` when it has no slash.
    pub argv: Vec<String>,
    /// Variables added to (or replacing those of) loadgate's own environment.
    pub env: BTreeMap<String, String>,
    /// The working directory; loadgate's own when `None`.
    pub cwd: Option<PathBuf>,
    /// The CPUs the target may run on; unpinned when `None`.
    pub cpus: Option<CpuList>,
    /// Where the stdout and stderr logs go; created if missing.
    pub log_dir: PathBuf,
    /// The logs are `<log_name>.stdout.log` and `<log_name>.stderr.log`.
    pub log_name: String,
    /// How long [`Target::stop`] waits after SIGTERM before it sends SIGKILL.
    pub stop_grace: Duration,
    /// Ask the kernel to send SIGTERM to the target when loadgate dies, even by SIGKILL (`PR_SET_PDEATHSIG`).
    /// The signal follows the thread that forked, so every target is forked by one launcher thread that lives
    /// as long as the process. Only the target's main process gets the signal, so a watchdog process
    /// ([`crate::watchdog`]) also stops the whole process group once loadgate is gone.
    pub die_with_parent: bool,
}

impl LaunchSpec {
    /// A command with no extra environment, loadgate's working directory, unpinned, logs named `target.*` in
    /// `log_dir`, a 5-second stop grace, and a parent-death signal.
    pub fn new(argv: Vec<String>, log_dir: impl Into<PathBuf>) -> Self {
        LaunchSpec {
            argv,
            env: BTreeMap::new(),
            cwd: None,
            cpus: None,
            log_dir: log_dir.into(),
            log_name: "target".to_owned(),
            stop_grace: Duration::from_secs(5),
            die_with_parent: true,
        }
    }
}

/// When and how the target exited.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExitInfo {
    pub at: Instant,
    /// Time from the start of the target to its exit.
    pub after: Duration,
    /// The exit code when it exited normally.
    pub code: Option<i32>,
    /// The signal that ended it, if any.
    pub signal: Option<i32>,
    /// `exited with status 1`, `killed by signal 9 (SIGKILL)`.
    pub status: String,
    /// `true` when loadgate had asked it to stop: an expected exit, not a crash.
    pub requested: bool,
}

impl ExitInfo {
    /// Seconds from `run_start` to the exit (0 if it exited before).
    pub fn at_seconds(&self, run_start: Instant) -> f64 {
        self.at.saturating_duration_since(run_start).as_secs_f64()
    }

    /// The results model's form, timed from `run_start`.
    pub fn to_target_exit(&self, run_start: Instant) -> TargetExit {
        TargetExit { at_seconds: self.at_seconds(run_start), status: self.status.clone() }
    }
}

/// What [`Target::stop`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StopReport {
    /// How the main process exited; `None` if the watcher had not recorded it yet.
    pub exit: Option<ExitInfo>,
    /// `true` when SIGTERM was not enough and SIGKILL was sent.
    pub killed: bool,
    /// How long stopping took.
    pub took: Duration,
}

type ExitCallback = Box<dyn FnOnce(&ExitInfo) + Send>;

struct ExitState {
    exit: Mutex<Option<ExitInfo>>,
    cond: Condvar,
    stop_requested: AtomicBool,
    callback: Mutex<Option<ExitCallback>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A started target. Dropping it stops it (SIGTERM, grace, SIGKILL).
pub struct Target {
    pid: u32,
    started: Instant,
    state: Arc<ExitState>,
    stdout_log: PathBuf,
    stderr_log: PathBuf,
    grace: Duration,
    stopping: Mutex<Option<StopReport>>,
    /// Stops the group if loadgate dies without stopping it (see [`crate::watchdog`]).
    watchdog: Mutex<Option<Watchdog>>,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target").field("pid", &self.pid).field("stdout_log", &self.stdout_log).finish_non_exhaustive()
    }
}

impl Target {
    /// Starts the command. Returns once the process runs (not once it is ready: see [`Target::wait_ready`]).
    pub fn start(spec: &LaunchSpec) -> Result<Target, TargetError> {
        Self::start_inner(spec, None)
    }

    /// Starts the built-in server as a separate process: `exe serve <cfg args>` (for loadgate itself, `exe` is
    /// `std::env::current_exe()`), with `spec.argv` ignored. Waits for its `listening on` line for at most
    /// `timeout` and returns the target with the address it listens on.
    pub fn start_builtin(
        exe: &Path,
        cfg: &ServeConfig,
        spec: &LaunchSpec,
        timeout: Duration,
    ) -> Result<(Target, SocketAddr), TargetError> {
        let mut argv = vec![exe.to_string_lossy().into_owned(), "serve".to_owned()];
        argv.extend(cfg.to_args());
        let spec = LaunchSpec { argv, ..spec.clone() };
        let (listen_tx, listen_rx) = std::sync::mpsc::channel();
        let target = Self::start_inner(&spec, Some(listen_tx))?;
        let deadline = Instant::now() + timeout;
        loop {
            let step = deadline.saturating_duration_since(Instant::now()).min(Duration::from_millis(50));
            match listen_rx.recv_timeout(step) {
                Ok(addr) => return Ok((target, addr)),
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    // stdout closed without the line: the server exited or closed its stdout.
                    let exit = target.wait_exit_timeout(Duration::from_secs(1));
                    let reason = match exit {
                        Some(e) => e.status,
                        None => "its stdout closed".to_owned(),
                    };
                    return Err(TargetError::NoListenLine { reason, log_tail: target.log_tail(LOG_TAIL_LINES) });
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    if Instant::now() >= deadline {
                        return Err(TargetError::NoListenLine {
                            reason: format!("nothing after {:.1}s", timeout.as_secs_f64()),
                            log_tail: target.log_tail(LOG_TAIL_LINES),
                        });
                    }
                }
            }
        }
    }

    fn start_inner(
        spec: &LaunchSpec,
        listen_tx: Option<std::sync::mpsc::Sender<SocketAddr>>,
    ) -> Result<Target, TargetError> {
        let Some(program) = spec.argv.first().filter(|p| !p.is_empty()) else {
            return Err(TargetError::InvalidLaunch("the command is empty".to_owned()));
        };
        std::fs::create_dir_all(&spec.log_dir)
            .map_err(|source| TargetError::LogFile { path: spec.log_dir.clone(), source })?;
        let stdout_log = spec.log_dir.join(format!("{}.stdout.log", spec.log_name));
        let stderr_log = spec.log_dir.join(format!("{}.stderr.log", spec.log_name));
        let create =
            |p: &Path| std::fs::File::create(p).map_err(|source| TargetError::LogFile { path: p.to_owned(), source });
        let out_file = create(&stdout_log)?;
        let err_file = create(&stderr_log)?;

        let mut cmd = Command::new(program);
        cmd.args(&spec.argv[1..]).envs(&spec.env).stdin(Stdio::null()).stderr(err_file).process_group(0);
        if listen_tx.is_some() {
            cmd.stdout(Stdio::piped());
        } else {
            cmd.stdout(
                out_file.try_clone().map_err(|source| TargetError::LogFile { path: stdout_log.clone(), source })?,
            );
        }
        if let Some(cwd) = &spec.cwd {
            cmd.current_dir(cwd);
        }
        let described = match &spec.cpus {
            Some(c) => format!("{program}` pinned to CPUs `{c}"),
            None => program.clone(),
        };
        let cpu_set = match &spec.cpus {
            Some(cpus) => Some(loadgate_machine::hardware::cpu_set(cpus)?),
            None => None,
        };
        let die_with_parent = spec.die_with_parent;
        // SAFETY: getpid has no preconditions.
        let parent = unsafe { libc::getpid() };
        // SAFETY: the closure runs in the forked child before exec and only makes async-signal-safe system
        // calls (sched_setaffinity, prctl, getppid) on data prepared before the fork.
        unsafe {
            cmd.pre_exec(move || {
                // Under Yama's ptrace_scope 1 (Debian's and Ubuntu's default) only a process's ancestors may trace
                // it, and an external profiler loadgate runs beside the target (`profile: { command: py-spy ... }`)
                // is the target's sibling. Naming loadgate the target's tracer lets loadgate and its own children
                // attach (Yama allows the named tracer's descendants), no one else; the relation survives exec.
                // Without Yama the call fails with EINVAL and changes nothing, so its result is not checked.
                libc::prctl(libc::PR_SET_PTRACER, parent as libc::c_ulong, 0, 0, 0);
                if let Some(set) = &cpu_set {
                    if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                if die_with_parent {
                    if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong, 0, 0, 0) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    // The parent may have died between fork and prctl.
                    if libc::getppid() != parent {
                        return Err(std::io::Error::other("loadgate exited while starting the target"));
                    }
                }
                Ok(())
            });
        }
        let started = Instant::now();
        let mut child =
            spawn_on_launcher_thread(cmd).map_err(|source| TargetError::Spawn { program: described, source })?;
        let pid = child.id();

        if let (Some(tx), Some(stdout)) = (listen_tx, child.stdout.take()) {
            let mut file = out_file;
            std::thread::Builder::new()
                .name("loadgate-target-stdout".to_owned())
                .spawn(move || {
                    let mut reader = std::io::BufReader::new(stdout);
                    let mut line = Vec::new();
                    let mut tx = Some(tx);
                    while let Ok(n) = reader.read_until(b'\n', &mut line) {
                        if n == 0 {
                            break;
                        }
                        let _ = file.write_all(&line);
                        if let Some(addr) = parse_listening_line(&String::from_utf8_lossy(&line)) {
                            if let Some(tx) = tx.take() {
                                let _ = tx.send(addr);
                            }
                        }
                        line.clear();
                    }
                })
                .map_err(|e| TargetError::InvalidLaunch(format!("cannot start the stdout reader: {e}")))?;
        }

        let state = Arc::new(ExitState {
            exit: Mutex::new(None),
            cond: Condvar::new(),
            stop_requested: AtomicBool::new(false),
            callback: Mutex::new(None),
        });
        let watcher_state = state.clone();
        let watcher = std::thread::Builder::new().name("loadgate-target-watch".to_owned()).spawn(move || {
            let status = child.wait();
            let at = Instant::now();
            let (code, signal, status) = match status {
                Ok(s) => (s.code(), s.signal(), describe_status(s.code(), s.signal())),
                Err(e) => (None, None, format!("could not be waited for: {e}")),
            };
            let info = ExitInfo {
                at,
                after: at.saturating_duration_since(started),
                code,
                signal,
                status,
                requested: watcher_state.stop_requested.load(Ordering::SeqCst),
            };
            *lock(&watcher_state.exit) = Some(info.clone());
            watcher_state.cond.notify_all();
            let callback = lock(&watcher_state.callback).take();
            if let Some(cb) = callback {
                cb(&info);
            }
        });
        // A target that must die with loadgate gets a watchdog: PR_SET_PDEATHSIG reaches the direct child only,
        // not what a wrapper (`sh -c ...`) started.
        let watchdog =
            if die_with_parent {
                Some(Watchdog::arm(pid, spec.stop_grace).map_err(|e| {
                    TargetError::InvalidLaunch(format!("cannot start the target's watchdog process: {e}"))
                }))
            } else {
                None
            };
        let target = Target {
            pid,
            started,
            state,
            stdout_log,
            stderr_log,
            grace: spec.stop_grace,
            stopping: Mutex::new(None),
            watchdog: Mutex::new(None),
        };
        match watchdog {
            Some(Ok(w)) => *lock(&target.watchdog) = Some(w),
            Some(Err(e)) => {
                drop(target);
                return Err(e);
            }
            None => {}
        }
        if let Err(e) = watcher {
            // Without a watcher nothing reaps the child; stop it now (the drop does) and report.
            drop(target);
            return Err(TargetError::InvalidLaunch(format!("cannot start the exit watcher: {e}")));
        }
        Ok(target)
    }

    /// The target's pid, which is also its process group id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The process group id (equal to the pid).
    pub fn pgid(&self) -> u32 {
        self.pid
    }

    /// When the process was started.
    pub fn started_at(&self) -> Instant {
        self.started
    }

    /// The stdout and stderr log files.
    pub fn log_files(&self) -> Vec<PathBuf> {
        vec![self.stdout_log.clone(), self.stderr_log.clone()]
    }

    /// Set once the target's main process has exited.
    pub fn exited(&self) -> Option<ExitInfo> {
        lock(&self.state.exit).clone()
    }

    /// Calls `callback` (on the watcher thread) when the main process exits; at once, on this thread, if it has
    /// already exited. A second call replaces a callback not yet called. Check [`ExitInfo::requested`] to tell a
    /// crash from a stop loadgate asked for.
    pub fn on_exit(&self, callback: impl FnOnce(&ExitInfo) + Send + 'static) {
        let mut slot = lock(&self.state.callback);
        let exited = lock(&self.state.exit).clone();
        match exited {
            Some(info) => {
                drop(slot);
                callback(&info);
            }
            None => *slot = Some(Box::new(callback)),
        }
    }

    /// Waits at most `timeout` for the main process to exit.
    pub fn wait_exit_timeout(&self, timeout: Duration) -> Option<ExitInfo> {
        let guard = lock(&self.state.exit);
        let (guard, _) = self
            .state
            .cond
            .wait_timeout_while(guard, timeout, |e| e.is_none())
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        guard.clone()
    }

    /// The last `lines` lines of the stdout and stderr logs, each under a `==> file <==` header; empty logs are
    /// left out, and `(both logs are empty)` is returned when there is nothing.
    pub fn log_tail(&self, lines: usize) -> String {
        let mut out = String::new();
        for path in [&self.stdout_log, &self.stderr_log] {
            let tail = tail_lines(path, lines);
            if tail.is_empty() {
                continue;
            }
            out.push_str(&format!("==> {} <==\n", path.display()));
            for l in tail {
                out.push_str("  ");
                out.push_str(&l);
                out.push('\n');
            }
        }
        if out.is_empty() {
            out.push_str("(both logs are empty)\n");
        }
        out
    }

    /// Probes `base_url` until the target is ready, it exits, or the probe's timeout passes. Returns how long it
    /// took. Runs on a thread of its own, so it may be called from inside an async runtime (it blocks).
    pub fn wait_ready(&self, base_url: &str, probe: &ReadyProbe) -> Result<Duration, TargetError> {
        self.wait_ready_tls(base_url, probe, None)
    }

    /// [`Target::wait_ready`] for an `https://` base URL: an `http_get` probe speaks TLS as the load will
    /// ([`ProbeTls`]: the same client configuration, server name and checks) and fails at once on a certificate
    /// the load would refuse. A `tcp` probe only connects.
    pub fn wait_ready_tls(
        &self,
        base_url: &str,
        probe: &ReadyProbe,
        tls: Option<ProbeTls>,
    ) -> Result<Duration, TargetError> {
        self.wait_ready_as(base_url, probe, tls, Protocol::Http1)
    }

    /// [`Target::wait_ready_tls`] speaking `target.protocol` as the load will: with `http2` over a plain
    /// `http://` URL an `http_get` probe speaks h2c with prior knowledge (the connection starts with the HTTP/2
    /// preface), so a server that cannot answer it is not ready for the load. Over TLS the probe offers ALPN as
    /// the load does (`http2`: `h2` only; `auto`: `h2` then `http/1.1`) and speaks whichever the server picked;
    /// `auto` over plain TCP is HTTP/1.1, as the load.
    pub fn wait_ready_as(
        &self,
        base_url: &str,
        probe: &ReadyProbe,
        tls: Option<ProbeTls>,
        protocol: Protocol,
    ) -> Result<Duration, TargetError> {
        let prior_knowledge = protocol == Protocol::Http2 && tls.is_none();
        let (timeout, interval) = match probe {
            ReadyProbe::HttpGet { timeout, interval, .. } | ReadyProbe::Tcp { timeout, interval } => {
                (timeout.as_std(), interval.as_std().max(Duration::from_millis(10)))
            }
        };
        let url = url::Url::parse(base_url)
            .map_err(|e| TargetError::InvalidLaunch(format!("the base URL `{base_url}` does not parse: {e}")))?;
        let addrs = || -> Result<Vec<SocketAddr>, TargetError> {
            url.socket_addrs(|| None)
                .map_err(|e| TargetError::InvalidLaunch(format!("cannot resolve `{base_url}`: {e}")))
        };
        let mut attempt: Box<dyn FnMut(Duration) -> Result<(), Failed> + Send> = match (probe, tls) {
            (ReadyProbe::HttpGet { path, status, .. }, Some(tls)) => {
                let full = join_url(base_url, path);
                let (host, target) = host_and_target(base_url, &url, &full)?;
                let addrs = addrs()?;
                let expected = *status;
                let tls = tls.offering(protocol);
                Box::new(move |per_try: Duration| {
                    let got = match protocol {
                        Protocol::Http1 => tls_probe::get_status(&tls, &addrs, &host, &target, per_try)?,
                        Protocol::Http2 | Protocol::Auto => {
                            tls_probe::get_status_alpn(&tls, &addrs, &host, &target, per_try, protocol)?
                        }
                    };
                    if got == expected {
                        Ok(())
                    } else {
                        Err(Failed::retry(format!("GET {full} answered {got}, expected {expected}")))
                    }
                })
            }
            (ReadyProbe::HttpGet { path, status, .. }, None) if prior_knowledge => {
                let full = join_url(base_url, path);
                let (host, target) = host_and_target(base_url, &url, &full)?;
                let addrs = addrs()?;
                let expected = *status;
                Box::new(move |per_try: Duration| match h2c_probe::get_status(&addrs, &host, &target, per_try)? {
                    got if got == expected => Ok(()),
                    got => Err(Failed::retry(format!("h2c GET {full} answered {got}, expected {expected}"))),
                })
            }
            (ReadyProbe::HttpGet { path, status, .. }, None) => {
                let full = join_url(base_url, path);
                let (host, target) = host_and_target(base_url, &url, &full)?;
                let addrs = addrs()?;
                let expected = *status;
                Box::new(move |per_try: Duration| match tls_probe::get_status_plain(&addrs, &host, &target, per_try)? {
                    got if got == expected => Ok(()),
                    got => Err(Failed::retry(format!("GET {full} answered {got}, expected {expected}"))),
                })
            }
            (ReadyProbe::Tcp { .. }, _) => {
                let addrs = addrs()?;
                Box::new(move |per_try: Duration| {
                    let mut last = String::from("no address to connect to");
                    for a in &addrs {
                        match TcpStream::connect_timeout(a, per_try) {
                            Ok(_) => return Ok(()),
                            Err(e) => last = format!("TCP connect to {a} failed: {e}"),
                        }
                    }
                    Err(Failed::retry(last))
                })
            }
        };
        let begin = Instant::now();
        let deadline = begin + timeout;
        let outcome = std::thread::scope(|s| {
            s.spawn(|| -> Result<Duration, Failed> {
                let mut last = Failed::retry("no attempt finished".to_owned());
                loop {
                    if self.exited().is_some() {
                        return Err(last);
                    }
                    let remaining = deadline.saturating_duration_since(Instant::now());
                    if remaining.is_zero() {
                        return Err(last);
                    }
                    let per_try = interval.max(Duration::from_secs(1)).min(remaining);
                    match attempt(per_try) {
                        Ok(()) => return Ok(begin.elapsed()),
                        Err(e) if e.fatal => return Err(e),
                        Err(e) => last = e,
                    }
                    let remaining = deadline.saturating_duration_since(Instant::now());
                    // Sleep until the next attempt, waking early if the target exits.
                    if self.wait_exit_timeout(interval.min(remaining)).is_some() {
                        return Err(last);
                    }
                }
            })
            .join()
            .unwrap_or_else(|_| Err(Failed::retry("the readiness probe panicked".to_owned())))
        });
        match outcome {
            Ok(took) => Ok(took),
            Err(last) => {
                if let Some(exit) = self.exited() {
                    return Err(TargetError::ExitedBeforeReady {
                        status: exit.status,
                        log_tail: self.log_tail(LOG_TAIL_LINES),
                    });
                }
                if last.fatal {
                    return Err(TargetError::ProbeRefused { reason: last.message });
                }
                Err(TargetError::NotReady {
                    waited: begin.elapsed().as_secs_f64(),
                    last: last.message,
                    log_tail: self.log_tail(LOG_TAIL_LINES),
                })
            }
        }
    }

    /// Stops the target: SIGTERM to its process group and to any descendant outside it, up to the grace period
    /// for them to exit, then SIGKILL. Returns once no process of the group is left running. Safe to call more
    /// than once and from several threads (later calls return the first report).
    pub fn stop(&self) -> Result<StopReport, TargetError> {
        let mut done = lock(&self.stopping);
        if let Some(report) = done.as_ref() {
            return Ok(report.clone());
        }
        let begin = Instant::now();
        self.state.stop_requested.store(true, Ordering::SeqCst);
        let pgid = self.pid;
        signal_tree(self.root(), pgid, libc::SIGTERM);
        let mut killed = false;
        if !wait_group_gone(self.root(), pgid, self.grace) {
            killed = true;
            signal_tree(self.root(), pgid, libc::SIGKILL);
            if !wait_group_gone(self.root(), pgid, KILL_WAIT) {
                let left = procfs::live_group_members(pgid);
                return Err(TargetError::Stop {
                    pgid,
                    reason: format!("processes {left:?} survived SIGKILL for {}s", KILL_WAIT.as_secs()),
                });
            }
        }
        let exit = self.wait_exit_timeout(Duration::from_secs(2));
        if let Some(w) = lock(&self.watchdog).take() {
            w.disarm();
        }
        let report = StopReport { exit, killed, took: begin.elapsed() };
        *done = Some(report.clone());
        Ok(report)
    }

    /// The main process's pid while it has not been reaped; once reaped, its pid may belong to someone else.
    fn root(&self) -> Option<u32> {
        if self.exited().is_some() {
            None
        } else {
            Some(self.pid)
        }
    }

    /// Every process of the target's tree (the group, the main process, their descendants), zombies included.
    pub fn processes(&self) -> Vec<procfs::ProcStat> {
        procfs::process_tree(self.root(), Some(self.pid))
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        if let Err(e) = self.stop() {
            eprintln!("loadgate: {e}");
        }
    }
}

/// Kills a helper loadgate started in a process group of its own (`CommandExt::process_group(0)`, so its pid is
/// the group's id) while it still runs: the group, and every descendant of it that left the group. An external
/// profiler that overran goes with whatever it started, which would otherwise hold its pipes open.
pub fn kill_tree(pid: u32) {
    signal_tree(Some(pid), pid, libc::SIGKILL);
}

/// Interrupts such a helper (SIGINT to its group and the descendants that left it), as Ctrl-C would: a profiler
/// stops and writes what it has.
pub fn interrupt_tree(pid: u32) {
    signal_tree(Some(pid), pid, libc::SIGINT);
}

/// Sends `sig` to the process group `pgid` and to every descendant of the tree that left the group.
fn signal_tree(root: Option<u32>, pgid: u32, sig: libc::c_int) {
    let outside: Vec<u32> = procfs::process_tree(root, Some(pgid))
        .into_iter()
        .filter(|p| p.pgrp != pgid && !p.is_zombie())
        .map(|p| p.pid)
        .collect();
    // SAFETY: kill has no memory-safety preconditions; a negative pid addresses the process group.
    unsafe {
        libc::kill(-(pgid as libc::pid_t), sig);
        for pid in outside {
            libc::kill(pid as libc::pid_t, sig);
        }
    }
}

/// Waits until neither the group nor any descendant of it or of `root` runs; `false` on timeout.
fn wait_group_gone(root: Option<u32>, pgid: u32, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        let group_empty = procfs::live_group_members(pgid).is_empty();
        if group_empty && procfs::process_tree(root, Some(pgid)).iter().all(procfs::ProcStat::is_zombie) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

type SpawnJob = (Command, std::sync::mpsc::Sender<std::io::Result<std::process::Child>>);

/// Forks `cmd` on the launcher thread: one thread, started on first use and never ending, so that a
/// parent-death signal fires when loadgate dies and not when some short-lived thread that started a target
/// exits.
fn spawn_on_launcher_thread(cmd: Command) -> std::io::Result<std::process::Child> {
    static LAUNCHER: std::sync::OnceLock<Mutex<Option<std::sync::mpsc::Sender<SpawnJob>>>> = std::sync::OnceLock::new();
    let slot = LAUNCHER.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<SpawnJob>();
        let started = std::thread::Builder::new().name("loadgate-launcher".to_owned()).spawn(move || {
            for (mut cmd, reply) in rx {
                let _ = reply.send(cmd.spawn());
            }
        });
        Mutex::new(started.ok().map(|_| tx))
    });
    let sender = lock(slot).clone().ok_or_else(|| std::io::Error::other("the launcher thread could not be started"))?;
    let (reply_tx, reply_rx) = std::sync::mpsc::channel();
    sender.send((cmd, reply_tx)).map_err(|_| std::io::Error::other("the launcher thread is gone"))?;
    reply_rx.recv().map_err(|_| std::io::Error::other("the launcher thread is gone"))?
}

/// `exited with status 1`, `killed by signal 9 (SIGKILL)`.
pub fn describe_status(code: Option<i32>, signal: Option<i32>) -> String {
    match (code, signal) {
        (Some(c), _) => format!("exited with status {c}"),
        (None, Some(s)) => format!("killed by signal {s} ({})", signal_name(s)),
        (None, None) => "ended for an unknown reason".to_owned(),
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGUSR2 => "SIGUSR2",
        _ => "signal",
    }
}

fn join_url(base: &str, path: &str) -> String {
    let base = base.trim_end_matches('/');
    if path.starts_with('/') {
        format!("{base}{path}")
    } else {
        format!("{base}/{path}")
    }
}

/// The last `n` lines of a file (reading at most its last 64 KiB).
fn tail_lines(path: &Path, n: usize) -> Vec<String> {
    const MAX: u64 = 64 * 1024;
    let Ok(mut f) = std::fs::File::open(path) else {
        return Vec::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let start = len.saturating_sub(MAX);
    if f.seek(std::io::SeekFrom::Start(start)).is_err() {
        return Vec::new();
    }
    let mut buf = Vec::new();
    if f.read_to_end(&mut buf).is_err() {
        return Vec::new();
    }
    let text = String::from_utf8_lossy(&buf);
    let mut lines: Vec<&str> = text.lines().collect();
    if start > 0 && !lines.is_empty() {
        lines.remove(0);
    }
    let from = lines.len().saturating_sub(n);
    lines[from..].iter().map(|l| (*l).to_owned()).collect()
}

/// The `Host` (or `:authority`) of `base_url` and the path and query of the probe URL `full`.
fn host_and_target(base_url: &str, url: &url::Url, full: &str) -> Result<(String, String), TargetError> {
    let joined = url::Url::parse(full)
        .map_err(|e| TargetError::InvalidLaunch(format!("the probe URL `{full}` does not parse: {e}")))?;
    let target = match joined.query() {
        Some(q) => format!("{}?{q}", joined.path()),
        None => joined.path().to_owned(),
    };
    let host = match (url.host_str(), url.port()) {
        (Some(h), Some(p)) => format!("{h}:{p}"),
        (Some(h), None) => h.to_owned(),
        (None, _) => return Err(TargetError::InvalidLaunch(format!("the base URL `{base_url}` has no host"))),
    };
    Ok((host, target))
}

/// The readiness probe a built-in target uses: HTTP GET `/ready` answered 200.
pub fn builtin_ready_probe(timeout: Duration) -> ReadyProbe {
    ReadyProbe::HttpGet {
        path: "/ready".to_owned(),
        status: 200,
        timeout: loadgate_model::units::Duration(timeout),
        interval: loadgate_model::units::Duration::from_millis(50),
    }
}

/// Connects to `addr` once: `true` when something accepts.
pub fn tcp_reachable(addr: impl ToSocketAddrs, timeout: Duration) -> bool {
    addr.to_socket_addrs().map(|mut a| a.any(|a| TcpStream::connect_timeout(&a, timeout).is_ok())).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_read_well() {
        assert_eq!(describe_status(Some(1), None), "exited with status 1");
        assert_eq!(describe_status(None, Some(9)), "killed by signal 9 (SIGKILL)");
    }

    #[test]
    fn urls_join() {
        assert_eq!(join_url("http://127.0.0.1:1/", "/ready"), "http://127.0.0.1:1/ready");
        assert_eq!(join_url("http://127.0.0.1:1", "ready"), "http://127.0.0.1:1/ready");
    }

    #[test]
    fn tail_keeps_last_lines() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("log");
        let text: String = (0..50).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&p, text).unwrap();
        let t = tail_lines(&p, 3);
        assert_eq!(t, vec!["line 47", "line 48", "line 49"]);
        assert!(tail_lines(&dir.path().join("missing"), 3).is_empty());
    }
}
