//! The target of a run once it is up: where the load goes, and the process if loadgate started one.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;

use loadgate_model::units::CpuList;
use loadgate_plan::TargetPlan;
use loadgate_results::TargetInfo;
use loadgate_server::{ServeConfig, ServerHandle};
use loadgate_target::launch::{self, LaunchSpec};

use crate::event::{Event, Observer};

/// How a `builtin:` target is started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BuiltinServer {
    /// As a child process, `EXE serve ...` (the loadgate binary): pinned to the spec's target CPUs, measured
    /// apart from the generator, stopped with its process group. What `loadgate run` does.
    Process { exe: PathBuf },
    /// On threads of this process: no pinning and no separate resource figures, but no binary needed. For
    /// library users and tests.
    InProcess,
}

/// Where and how to start a target.
#[derive(Debug, Clone)]
pub struct TargetOptions<'a> {
    /// The CPUs a started target is pinned to (the pinning decision's target CPUs).
    pub cpus: Option<&'a CpuList>,
    /// Where a started target's logs go.
    pub log_dir: &'a Path,
    /// The spec's directory: a relative `cwd` of a start command is relative to it.
    pub source_dir: Option<&'a Path>,
    pub builtin: &'a BuiltinServer,
}

/// A target that accepts requests. Dropping it stops what loadgate started.
#[derive(Debug)]
pub struct RunningTarget {
    /// Where the engine sends the load.
    pub engine: loadgate_engine::Target,
    pub base_url: String,
    /// `url`, `command` or `builtin`.
    pub kind: &'static str,
    /// The child process, for a command or a built-in server loadgate started as a process.
    pub process: Option<launch::Target>,
    /// For a command loadgate started: how long it took to become ready.
    pub ready_after: Option<Duration>,
    /// The built-in server on this process's threads ([`BuiltinServer::InProcess`]).
    in_process: Option<ServerHandle>,
}

impl RunningTarget {
    /// Starts (or, for a URL, checks) the target a plan names, and waits until it is ready.
    pub fn start(plan: &TargetPlan, opts: &TargetOptions<'_>, observer: &mut dyn Observer) -> Result<Self, String> {
        let target = match plan {
            TargetPlan::Url { base_url } => {
                let (addr, host) = resolve(base_url)?;
                if !launch::tcp_reachable(addr, Duration::from_secs(5)) {
                    return Err(format!("the target {base_url} does not accept connections at {addr}"));
                }
                if opts.cpus.is_some() {
                    observer.event(&Event::Warning(
                        "`hardware.target.cpus` applies only to targets loadgate starts; the target given by URL runs as it is"
                            .to_owned(),
                    ));
                }
                RunningTarget::new(addr, host, base_url.clone(), "url", None)
            }
            TargetPlan::Command { base_url, command, env, cwd, ready, stop_grace } => {
                let (addr, host) = resolve(base_url)?;
                let mut spec = LaunchSpec::new(command.clone(), opts.log_dir);
                spec.env = env.clone();
                spec.cwd = cwd.as_ref().map(|c| match opts.source_dir {
                    Some(base) if Path::new(c).is_relative() => base.join(c),
                    _ => PathBuf::from(c),
                });
                spec.cpus = opts.cpus.cloned();
                spec.stop_grace = stop_grace.as_std();
                observer.event(&Event::TargetStarting { command: command.join(" ") });
                let process = launch::Target::start(&spec).map_err(|e| e.to_string())?;
                let waited = process.wait_ready(base_url, ready).map_err(|e| e.to_string())?;
                let mut t = RunningTarget::new(addr, host, base_url.clone(), "command", Some(process));
                t.ready_after = Some(waited);
                t
            }
            TargetPlan::Builtin { server } => {
                let mut cfg = ServeConfig::new(server.clone());
                cfg.threads = opts.cpus.map(|c| c.len()).unwrap_or(1).max(1);
                match opts.builtin {
                    BuiltinServer::Process { exe } => {
                        let mut spec = LaunchSpec::new(Vec::new(), opts.log_dir);
                        spec.cpus = opts.cpus.cloned();
                        spec.log_name = "builtin-target".to_owned();
                        let (process, addr) = launch::Target::start_builtin(exe, &cfg, &spec, Duration::from_secs(10))
                            .map_err(|e| e.to_string())?;
                        let base_url = format!("http://{addr}");
                        process
                            .wait_ready(&base_url, &launch::builtin_ready_probe(Duration::from_secs(10)))
                            .map_err(|e| e.to_string())?;
                        RunningTarget::new(addr, addr.to_string(), base_url, "builtin", Some(process))
                    }
                    BuiltinServer::InProcess => {
                        let handle = loadgate_server::spawn_in_process(&cfg).map_err(|e| e.to_string())?;
                        let addr = handle.addr();
                        let mut t = RunningTarget::new(addr, addr.to_string(), handle.base_url(), "builtin", None);
                        t.in_process = Some(handle);
                        t
                    }
                }
            }
        };
        observer.event(&Event::TargetReady {
            kind: target.kind,
            base_url: &target.base_url,
            pid: target.pid(),
            waited: target.ready_after,
        });
        Ok(target)
    }

    fn new(
        addr: SocketAddr,
        host: String,
        base_url: String,
        kind: &'static str,
        process: Option<launch::Target>,
    ) -> Self {
        RunningTarget {
            engine: loadgate_engine::Target { addr, host },
            base_url,
            kind,
            process,
            ready_after: None,
            in_process: None,
        }
    }

    /// The started process's pid.
    pub fn pid(&self) -> Option<u32> {
        self.process.as_ref().map(launch::Target::pid)
    }

    /// The results model's description of this target (samples and exit are filled in later).
    pub fn info(&self) -> TargetInfo {
        TargetInfo {
            kind: self.kind.to_owned(),
            base_url: self.base_url.clone(),
            pid: self.pid(),
            exited: None,
            samples: Vec::new(),
            log_files: self
                .process
                .as_ref()
                .map(|p| p.log_files().iter().map(|f| f.display().to_string()).collect())
                .unwrap_or_default(),
        }
    }

    /// Stops what loadgate started (SIGTERM to the process group, SIGKILL after the grace period).
    pub fn stop(&mut self) -> Result<(), String> {
        if let Some(server) = self.in_process.take() {
            server.shutdown();
        }
        match &self.process {
            Some(p) => p.stop().map(|_| ()).map_err(|e| e.to_string()),
            None => Ok(()),
        }
    }
}

fn host_header(host: &str, port: u16) -> String {
    if port == 80 {
        host.to_owned()
    } else {
        format!("{host}:{port}")
    }
}

/// Splits `http://host:port/prefix` into host and port.
fn host_port(base_url: &str) -> Option<(String, u16)> {
    let rest = base_url.strip_prefix("http://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    if let Some(stripped) = authority.strip_prefix('[') {
        let (h, p) = stripped.split_once(']')?;
        let port = p.strip_prefix(':').map(|p| p.parse().ok()).unwrap_or(Some(80))?;
        return Some((format!("[{h}]"), port));
    }
    match authority.rsplit_once(':') {
        Some((h, p)) => Some((h.to_owned(), p.parse().ok()?)),
        None => Some((authority.to_owned(), 80)),
    }
}

/// The socket address and `Host` header of a base URL.
pub fn resolve(base_url: &str) -> Result<(SocketAddr, String), String> {
    let (host, port) = host_port(base_url).ok_or_else(|| format!("`{base_url}` is not an http://host:port URL"))?;
    let lookup = host.trim_start_matches('[').trim_end_matches(']').to_owned();
    let addr = (lookup.as_str(), port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {host}: {e}"))?
        .next()
        .ok_or_else(|| format!("{host} resolves to no address"))?;
    Ok((addr, host_header(&host, port)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_into_host_and_port() {
        assert_eq!(host_port("http://127.0.0.1:8080/x"), Some(("127.0.0.1".into(), 8080)));
        assert_eq!(host_port("http://example"), Some(("example".into(), 80)));
        assert_eq!(host_port("http://[::1]:9000"), Some(("[::1]".into(), 9000)));
        assert_eq!(host_header("h", 80), "h");
        assert_eq!(host_header("h", 81), "h:81");
    }
}
