//! The target of a run once it is up: where the load goes, and the process if loadgate started one.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;

use loadgate_engine::tls::{TlsClient, TlsSettings};
use loadgate_model::units::CpuList;
use loadgate_plan::{TargetPlan, TlsPlan};
use loadgate_results::TargetInfo;
use loadgate_server::{ServeConfig, ServerHandle};
use loadgate_target::launch::{self, LaunchSpec};

use crate::event::{Event, Observer};

/// How long the probe of a target given by URL waits for its handshake.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

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
            TargetPlan::Url { base_url, tls, .. } => {
                let (addr, host) = resolve(base_url)?;
                let tls = tls.as_ref().map(|t| tls_client(t, base_url, opts.source_dir, None)).transpose()?;
                if !launch::tcp_reachable(addr, Duration::from_secs(5)) {
                    return Err(format!(
                        "the target {base_url} cannot be reached: it does not accept connections at {addr}"
                    ));
                }
                // Probed before the load as a started target is: a target the load cannot talk to (a certificate
                // it refuses, another protocol) is a run that cannot be carried out, not a measurement.
                let cannot = |why: String| format!("the target {base_url} cannot be talked to: {why}");
                match &tls {
                    Some(client) => {
                        loadgate_target::tls_handshake(probe_tls(client), &[addr], plan.protocol(), PROBE_TIMEOUT)
                            .map_err(cannot)?;
                    }
                    None if plan.protocol() == loadgate_model::Protocol::Http2 => {
                        loadgate_target::speaks_h2c(&[addr], PROBE_TIMEOUT).map_err(cannot)?;
                    }
                    None => {}
                }
                if opts.cpus.is_some() {
                    observer.event(&Event::Warning(
                        "`hardware.target.cpus` applies only to targets loadgate starts; the target given by URL runs as it is"
                            .to_owned(),
                    ));
                }
                RunningTarget::new(addr, host, tls, base_url.clone(), "url", None)
            }
            TargetPlan::Command { base_url, tls, command, env, cwd, ready, stop_grace, protocol, .. } => {
                let (addr, host) = resolve(base_url)?;
                let tls = tls.as_ref().map(|t| tls_client(t, base_url, opts.source_dir, None)).transpose()?;
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
                let waited = process
                    .wait_ready_as(base_url, ready, tls.as_ref().map(probe_tls), *protocol)
                    .map_err(|e| e.to_string())?;
                let mut t = RunningTarget::new(addr, host, tls, base_url.clone(), "command", Some(process));
                t.ready_after = Some(waited);
                t
            }
            TargetPlan::Builtin { server, tls, protocol } => {
                let mut cfg = ServeConfig::new(behaviour(server));
                cfg.threads = opts.cpus.map(|c| c.len()).unwrap_or(1).max(1);
                // HTTPS: a certificate made now, which the server serves and loadgate trusts (nothing insecure).
                let client = match tls {
                    None => None,
                    Some(t) => {
                        let (cert, key, cert_pem) =
                            loadgate_server::tls::write_self_signed(opts.log_dir).map_err(|e| e.to_string())?;
                        cfg.tls = Some(loadgate_server::ServeTls::Files { cert, key });
                        let plan = TlsPlan { ca: None, insecure: false, server_name: None, ..t.clone() };
                        Some(tls_client(&plan, "https://127.0.0.1", None, Some(cert_pem.into_bytes()))?)
                    }
                };
                let scheme = if client.is_some() { "https" } else { "http" };
                match opts.builtin {
                    BuiltinServer::Process { exe } => {
                        let mut spec = LaunchSpec::new(Vec::new(), opts.log_dir);
                        spec.cpus = opts.cpus.cloned();
                        spec.log_name = "builtin-target".to_owned();
                        let (process, addr) = launch::Target::start_builtin(exe, &cfg, &spec, Duration::from_secs(10))
                            .map_err(|e| e.to_string())?;
                        let base_url = format!("{scheme}://{addr}");
                        process
                            .wait_ready_as(
                                &base_url,
                                &launch::builtin_ready_probe(Duration::from_secs(10)),
                                client.as_ref().map(probe_tls),
                                *protocol,
                            )
                            .map_err(|e| e.to_string())?;
                        RunningTarget::new(addr, addr.to_string(), client, base_url, "builtin", Some(process))
                    }
                    BuiltinServer::InProcess => {
                        let handle = loadgate_server::spawn_in_process(&cfg).map_err(|e| e.to_string())?;
                        let addr = handle.addr();
                        let mut t =
                            RunningTarget::new(addr, addr.to_string(), client, handle.base_url(), "builtin", None);
                        t.in_process = Some(handle);
                        t
                    }
                }
            }
        };
        let mut target = target;
        target.engine.protocol = plan.protocol();
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
        tls: Option<TlsClient>,
        base_url: String,
        kind: &'static str,
        process: Option<launch::Target>,
    ) -> Self {
        RunningTarget {
            engine: loadgate_engine::Target { addr, host, tls, protocol: loadgate_model::Protocol::Http1 },
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

    /// Moves every thread of the started process's tree to `cpus` (a duet's targets swap CPUs between rounds);
    /// nothing for a target loadgate did not start.
    pub fn set_cpus(&self, cpus: &CpuList) -> Result<(), String> {
        loadgate_machine::hardware::pin_processes(&self.pids(), cpus).map(|_| ()).map_err(|e| e.to_string())
    }

    /// Every process of the started process's tree now, its pid first; empty without a process.
    pub fn pids(&self) -> Vec<u32> {
        let Some(p) = &self.process else { return Vec::new() };
        let mut pids = vec![p.pid()];
        pids.extend(p.processes().iter().map(|s| s.pid).filter(|pid| *pid != p.pid()));
        pids
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

/// Splits `http://host:port/prefix` (or `https://...`) into host, port and the scheme's default port, with the
/// one URL parser (`loadgate_model::url`).
fn host_port(base_url: &str) -> Option<(String, u16, u16)> {
    let url = loadgate_model::url::HttpUrl::parse(base_url).ok()?;
    Some((url.host.clone(), url.port, if url.https { 443 } else { 80 }))
}

/// How a readiness probe speaks TLS to the target: as the load does, and saying what a failure means in the
/// load's words.
fn probe_tls(client: &TlsClient) -> loadgate_target::ProbeTls {
    let explainer = client.clone();
    loadgate_target::ProbeTls::new(client.rustls_config(), client.server_name(), move |e| explainer.explain(e))
}

/// The TLS client of a target: the spec's `tls` with its files read (relative to the spec's directory), or
/// `trusted` as the only CA (a certificate loadgate made for the built-in server).
fn tls_client(
    plan: &TlsPlan,
    base_url: &str,
    source_dir: Option<&Path>,
    trusted: Option<Vec<u8>>,
) -> Result<TlsClient, String> {
    let read = |name: &Option<String>| -> Result<Option<Vec<u8>>, String> {
        let Some(name) = name else { return Ok(None) };
        let path = match source_dir {
            Some(base) if Path::new(name).is_relative() => base.join(name),
            _ => PathBuf::from(name),
        };
        std::fs::read(&path).map(Some).map_err(|e| format!("cannot read the TLS file {}: {e}", path.display()))
    };
    let server_name = match &plan.server_name {
        Some(name) => name.clone(),
        None => host_port(base_url).map(|(h, _, _)| h).ok_or_else(|| format!("`{base_url}` has no host"))?,
    };
    let settings = TlsSettings {
        server_name,
        ca_pem: match trusted {
            Some(pem) => Some(pem),
            None => read(&plan.ca)?,
        },
        insecure: plan.insecure,
        client_cert_pem: read(&plan.client_cert)?,
        client_key_pem: read(&plan.client_key)?,
        resume: plan.resume,
    };
    TlsClient::new(&settings).map_err(|e| format!("TLS to {base_url}: {e}"))
}

/// The socket address and `Host` header of a base URL.
pub fn resolve(base_url: &str) -> Result<(SocketAddr, String), String> {
    let (host, port, default_port) =
        host_port(base_url).ok_or_else(|| format!("`{base_url}` is not an http:// or https://host:port URL"))?;
    let lookup = host.trim_start_matches('[').trim_end_matches(']').to_owned();
    let addr = (lookup.as_str(), port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {host}: {e}"))?
        .next()
        .ok_or_else(|| format!("{host} resolves to no address"))?;
    let host_header = if port == default_port { host } else { format!("{host}:{port}") };
    Ok((addr, host_header))
}

/// The built-in server's behaviour as the plan asks for it (the server has its own type and knows no plan).
fn behaviour(s: &loadgate_plan::BuiltinServer) -> loadgate_server::ServerBehaviour {
    loadgate_server::ServerBehaviour {
        kind: s.kind,
        delay: s.delay,
        status: s.status,
        body_size: s.body_size,
        chunked: s.chunked,
        work: s.work,
        slow_path: s.slow_path,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_into_host_and_port() {
        assert_eq!(host_port("http://127.0.0.1:8080/x"), Some(("127.0.0.1".into(), 8080, 80)));
        assert_eq!(host_port("http://example"), Some(("example".into(), 80, 80)));
        assert_eq!(host_port("http://[::1]:9000"), Some(("[::1]".into(), 9000, 80)));
        assert_eq!(host_port("https://example"), Some(("example".into(), 443, 443)));
        assert_eq!(host_port("https://[::1]/p"), Some(("[::1]".into(), 443, 443)));
        assert_eq!(host_port("ftp://example"), None);
        assert_eq!(host_port("HTTP://Example:81"), Some(("example".into(), 81, 80)));
    }
}
