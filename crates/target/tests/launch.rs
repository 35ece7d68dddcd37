//! The launcher against real child processes: start, ready, pinning, logs, crashes, stop, no orphans.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use loadgate_machine::hardware::{self, CpuTopology, PinningDecision};
use loadgate_machine::procfs;
use loadgate_machine::sample::{Sampler, SamplerConfig};
use loadgate_model::units::{CpuList, Duration as SpecDuration};
use loadgate_model::Protocol;
use loadgate_plan::ReadyProbe;
use loadgate_plan::{BuiltinKind, OnMismatch};
use loadgate_server::ServeConfig;
use loadgate_target::launch::{builtin_ready_probe, LaunchSpec, Target};
use loadgate_target::TargetError;

const SERVE_BIN: &str = env!("CARGO_BIN_EXE_loadgate-target-serve");

fn sh(script: &str, dir: &Path) -> LaunchSpec {
    let mut s = LaunchSpec::new(vec!["sh".into(), "-c".into(), script.into()], dir);
    s.stop_grace = Duration::from_secs(3);
    s
}

fn http_probe(path: &str, timeout_ms: u64) -> ReadyProbe {
    ReadyProbe::HttpGet {
        path: path.to_owned(),
        status: 200,
        timeout: SpecDuration::from_millis(timeout_ms),
        interval: SpecDuration::from_millis(50),
    }
}

/// A loopback port nothing listens on (bound then released).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn assert_group_gone(pgid: u32) {
    let live = procfs::live_group_members(pgid);
    assert!(live.is_empty(), "process group {pgid} still has {live:?}");
}

fn wait_for(mut cond: impl FnMut() -> bool) {
    let t = Instant::now();
    while !cond() {
        assert!(t.elapsed() < Duration::from_secs(30), "condition never held");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn builtin_cfg(kind: BuiltinKind) -> ServeConfig {
    let mut c = ServeConfig::new(loadgate_server::ServerBehaviour {
        kind,
        delay: (kind == BuiltinKind::Delay).then(|| SpecDuration::from_millis(10)),
        status: 200,
        body_size: None,
        chunked: false,
        work: None,
        slow_path: None,
    });
    c.threads = 2;
    c
}

fn http_get(url: String) -> (u16, String) {
    std::thread::spawn(move || {
        let r = reqwest::blocking::Client::builder().no_proxy().build().unwrap().get(url).send().unwrap();
        (r.status().as_u16(), r.text().unwrap())
    })
    .join()
    .unwrap()
}

#[test]
fn python_http_server_pinned_ready_and_stopped() {
    let logs = tempfile::tempdir().unwrap();
    let www = tempfile::tempdir().unwrap();
    std::fs::write(www.path().join("hello.txt"), "hi from python").unwrap();
    let port = free_port();
    let mut spec = LaunchSpec::new(
        vec![
            "python3".into(),
            "-u".into(),
            "-m".into(),
            "http.server".into(),
            "--bind".into(),
            "127.0.0.1".into(),
            port.to_string(),
        ],
        logs.path(),
    );
    spec.cwd = Some(www.path().to_owned());
    spec.cpus = Some(CpuList::new(vec![0]));
    spec.env.insert("PYTHONDONTWRITEBYTECODE".into(), "1".into());
    let target = Target::start(&spec).unwrap();
    let pid = target.pid();
    let base = format!("http://127.0.0.1:{port}");
    target.wait_ready(&base, &http_probe("/hello.txt", 30_000)).unwrap();
    assert_eq!(http_get(format!("{base}/hello.txt")), (200, "hi from python".to_owned()));
    // The pinning really applied, to the process and each of its threads.
    assert_eq!(hardware::cpus_allowed(pid, None).unwrap().to_string(), "0");
    for entry in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let tid: u32 = entry.unwrap().file_name().to_str().unwrap().parse().unwrap();
        assert_eq!(hardware::cpus_allowed(pid, Some(tid)).unwrap().to_string(), "0");
    }
    assert_eq!(procfs::read_stat(Path::new(&format!("/proc/{pid}/stat"))).unwrap().pgrp, pid, "own process group");
    assert!(target.exited().is_none());
    let report = target.stop().unwrap();
    assert!(!report.killed, "python stops on SIGTERM");
    let exit = report.exit.unwrap();
    assert!(exit.requested);
    assert_eq!(exit.signal, Some(libc::SIGTERM));
    assert_group_gone(pid);
    // The request was logged by python to stderr.
    let err = std::fs::read_to_string(logs.path().join("target.stderr.log")).unwrap();
    assert!(err.contains("GET /hello.txt"), "{err}");
    // Stopping again is harmless and returns the same report.
    assert_eq!(target.stop().unwrap().exit.unwrap().status, exit.status);
}

#[test]
fn builtin_server_as_a_separate_pinned_process() {
    let logs = tempfile::tempdir().unwrap();
    let mut spec = LaunchSpec::new(Vec::new(), logs.path());
    spec.cpus = Some(CpuList::new(vec![1]));
    spec.log_name = "builtin".into();
    let cfg = builtin_cfg(BuiltinKind::Plaintext);
    let (target, addr) = Target::start_builtin(Path::new(SERVE_BIN), &cfg, &spec, Duration::from_secs(30)).unwrap();
    assert!(addr.ip().is_loopback());
    assert_ne!(addr.port(), 0);
    let base = format!("http://{addr}");
    target.wait_ready(&base, &builtin_ready_probe(Duration::from_secs(30))).unwrap();
    target
        .wait_ready(
            &base,
            &ReadyProbe::Tcp { timeout: SpecDuration::from_secs(30), interval: SpecDuration::from_millis(20) },
        )
        .unwrap();
    assert_eq!(http_get(format!("{base}/plaintext")), (200, "Hello, World!".to_owned()));
    let pid = target.pid();
    assert_eq!(hardware::cpus_allowed(pid, None).unwrap().to_string(), "1");
    let stat = procfs::read_stat(Path::new(&format!("/proc/{pid}/stat"))).unwrap();
    assert!(stat.num_threads >= 3, "main thread and two server threads: {stat:?}");
    let stdout = std::fs::read_to_string(logs.path().join("builtin.stdout.log")).unwrap();
    assert_eq!(stdout, format!("listening on http://{addr}\n"));
    // A graceful shutdown: SIGTERM handled, exit status 0.
    let report = target.stop().unwrap();
    assert!(!report.killed);
    assert_eq!(report.exit.unwrap().code, Some(0));
    assert_group_gone(pid);
    let stderr = std::fs::read_to_string(logs.path().join("builtin.stderr.log")).unwrap();
    assert!(stderr.contains("shut down"), "{stderr}");
}

#[test]
fn builtin_that_cannot_start_quotes_its_log() {
    let logs = tempfile::tempdir().unwrap();
    let spec = LaunchSpec::new(Vec::new(), logs.path());
    let mut cfg = builtin_cfg(BuiltinKind::Plaintext);
    cfg.server.status = 42;
    let err = Target::start_builtin(Path::new(SERVE_BIN), &cfg, &spec, Duration::from_secs(30)).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, TargetError::NoListenLine { .. }), "{text}");
    assert!(text.contains("exited with status 3"), "{text}");
    assert!(text.contains("status 42 is not a final HTTP status"), "{text}");
}

#[test]
fn a_process_tree_leaves_no_orphan() {
    let logs = tempfile::tempdir().unwrap();
    let target = Target::start(&sh("sleep 300 & sleep 300 & echo started; wait", logs.path())).unwrap();
    let pgid = target.pgid();
    wait_for(|| procfs::live_group_members(pgid).len() == 3);
    assert_eq!(target.processes().len(), 3);
    let report = target.stop().unwrap();
    assert!(!report.killed);
    assert_group_gone(pgid);
}

#[test]
fn a_target_ignoring_sigterm_is_killed_after_the_grace() {
    let logs = tempfile::tempdir().unwrap();
    // An ignored signal stays ignored across fork and exec: both sh and sleep ignore SIGTERM.
    let mut spec = sh("trap '' TERM; sleep 300 & echo ready; wait", logs.path());
    spec.stop_grace = Duration::from_millis(300);
    let target = Target::start(&spec).unwrap();
    let pgid = target.pgid();
    wait_for(|| procfs::live_group_members(pgid).len() == 2);
    let report = target.stop().unwrap();
    assert!(report.killed);
    assert!(report.took >= Duration::from_millis(300));
    assert_eq!(report.exit.unwrap().signal, Some(libc::SIGKILL));
    assert_group_gone(pgid);
}

#[test]
fn drop_stops_the_target_even_on_panic() {
    let logs = tempfile::tempdir().unwrap();
    let spec = sh("sleep 300", logs.path());
    let (tx, rx) = std::sync::mpsc::channel();
    let result = std::panic::catch_unwind(move || {
        let target = Target::start(&spec).unwrap();
        tx.send(target.pgid()).unwrap();
        panic!("an SLO evaluation blew up");
    });
    assert!(result.is_err());
    assert_group_gone(rx.recv().unwrap());
}

#[test]
fn a_target_that_never_becomes_ready_quotes_its_log() {
    let logs = tempfile::tempdir().unwrap();
    let target = Target::start(&sh(
        "echo booting the frobnicator; echo cannot bind: address in use >&2; sleep 300",
        logs.path(),
    ))
    .unwrap();
    let pgid = target.pgid();
    let base = format!("http://127.0.0.1:{}", free_port());
    let err = target.wait_ready(&base, &http_probe("/health", 600)).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, TargetError::NotReady { .. }), "{text}");
    assert!(text.starts_with("the target did not become ready within"), "{text}");
    assert!(text.contains("/health failed"), "{text}");
    assert!(text.contains("booting the frobnicator"), "{text}");
    assert!(text.contains("cannot bind: address in use"), "{text}");
    assert!(text.contains("target.stderr.log"), "{text}");
    let err = target
        .wait_ready(
            &base,
            &ReadyProbe::Tcp { timeout: SpecDuration::from_millis(300), interval: SpecDuration::from_millis(50) },
        )
        .unwrap_err();
    assert!(err.to_string().contains("TCP connect to 127.0.0.1:"), "{err}");
    drop(target);
    assert_group_gone(pgid);
}

#[test]
fn a_wrong_status_is_not_ready() {
    let logs = tempfile::tempdir().unwrap();
    let spec = LaunchSpec::new(Vec::new(), logs.path());
    let (target, addr) = Target::start_builtin(
        Path::new(SERVE_BIN),
        &builtin_cfg(BuiltinKind::Plaintext),
        &spec,
        Duration::from_secs(30),
    )
    .unwrap();
    let probe = ReadyProbe::HttpGet {
        path: "/status/503".into(),
        status: 200,
        timeout: SpecDuration::from_millis(400),
        interval: SpecDuration::from_millis(50),
    };
    let err = target.wait_ready(&format!("http://{addr}"), &probe).unwrap_err();
    assert!(err.to_string().contains("answered 503, expected 200"), "{err}");
}

#[test]
fn a_target_exiting_before_ready_is_reported_with_its_status() {
    let logs = tempfile::tempdir().unwrap();
    let target = Target::start(&sh("echo fatal: no config file >&2; exit 7", logs.path())).unwrap();
    let err = target.wait_ready(&format!("http://127.0.0.1:{}", free_port()), &http_probe("/", 30_000)).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, TargetError::ExitedBeforeReady { .. }), "{text}");
    assert!(text.contains("exited with status 7"), "{text}");
    assert!(text.contains("fatal: no config file"), "{text}");
}

#[test]
fn a_crash_mid_run_is_detected_with_its_status() {
    let logs = tempfile::tempdir().unwrap();
    let spec = LaunchSpec::new(Vec::new(), logs.path());
    let (target, addr) = Target::start_builtin(
        Path::new(SERVE_BIN),
        &builtin_cfg(BuiltinKind::Plaintext),
        &spec,
        Duration::from_secs(30),
    )
    .unwrap();
    target.wait_ready(&format!("http://{addr}"), &builtin_ready_probe(Duration::from_secs(30))).unwrap();
    let run_start = Instant::now();
    let (tx, rx) = std::sync::mpsc::channel();
    target.on_exit(move |e| tx.send(e.clone()).unwrap());
    std::thread::sleep(Duration::from_millis(100));
    // Killed from outside, as an OOM killer would.
    // SAFETY: signalling a child we started.
    assert_eq!(unsafe { libc::kill(target.pid() as i32, libc::SIGKILL) }, 0);
    let info = rx.recv_timeout(Duration::from_secs(30)).unwrap();
    assert!(!info.requested);
    assert_eq!(info.signal, Some(libc::SIGKILL));
    assert_eq!(info.status, "killed by signal 9 (SIGKILL)");
    let exit = info.to_target_exit(run_start);
    assert!(exit.at_seconds >= 0.1, "{exit:?}");
    assert_eq!(target.exited().unwrap(), info);
    // A callback registered after the exit runs at once.
    let (tx2, rx2) = std::sync::mpsc::channel();
    target.on_exit(move |e| tx2.send(e.status.clone()).unwrap());
    assert_eq!(rx2.try_recv().unwrap(), "killed by signal 9 (SIGKILL)");
    // Stopping a dead target is fine and leaves nothing.
    let report = target.stop().unwrap();
    assert!(!report.exit.unwrap().requested);
    assert_group_gone(target.pgid());
}

#[test]
fn an_exit_code_mid_run_is_detected() {
    let logs = tempfile::tempdir().unwrap();
    let target = Target::start(&sh("sleep 0.2; exit 3", logs.path())).unwrap();
    let info = target.wait_exit_timeout(Duration::from_secs(30)).unwrap();
    assert_eq!(info.code, Some(3));
    assert_eq!(info.status, "exited with status 3");
    assert!(info.after >= Duration::from_millis(200));
    assert!(!info.requested);
}

#[test]
fn env_cwd_and_logs() {
    let logs = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let mut spec = sh("echo \"FOO=$FOO\"; pwd; echo to-stderr >&2", &logs.path().join("nested/out"));
    spec.env.insert("FOO".into(), "bar baz".into());
    spec.cwd = Some(work.path().to_owned());
    let target = Target::start(&spec).unwrap();
    target.wait_exit_timeout(Duration::from_secs(30)).unwrap();
    let files: Vec<PathBuf> = target.log_files();
    let out = std::fs::read_to_string(&files[0]).unwrap();
    let canonical = std::fs::canonicalize(work.path()).unwrap();
    assert_eq!(out, format!("FOO=bar baz\n{}\n", canonical.display()));
    assert_eq!(std::fs::read_to_string(&files[1]).unwrap(), "to-stderr\n");
    let tail = target.log_tail(20);
    assert!(tail.contains("  FOO=bar baz\n") && tail.contains("  to-stderr\n"), "{tail}");
}

#[test]
fn a_missing_program_is_a_clear_error() {
    let logs = tempfile::tempdir().unwrap();
    let err = Target::start(&LaunchSpec::new(vec!["/nonexistent/server".into()], logs.path())).unwrap_err();
    assert!(err.to_string().starts_with("cannot start the target `/nonexistent/server`: "), "{err}");
    let err = Target::start(&LaunchSpec::new(Vec::new(), logs.path())).unwrap_err();
    assert_eq!(err.to_string(), "cannot launch the target: the command is empty");
}

#[test]
fn impossible_cpu_lists_under_fail_warn_and_skip() {
    let topo = CpuTopology::read().unwrap();
    let beyond = topo.online.cpus().last().copied().unwrap() + 1;
    let asked = CpuList::new((beyond..beyond + 16).collect());
    let machine = topo.describe();
    let head = format!("the spec pins the generator to CPUs {asked} but this machine has CPUs {machine}");
    match hardware::check_pinning(&topo, Some(&asked), None, OnMismatch::Fail) {
        PinningDecision::Fail { message } => {
            assert_eq!(message, format!("{head} (on_mismatch: fail)"))
        }
        other => panic!("{other:?}"),
    }
    match hardware::check_pinning(&topo, Some(&asked), None, OnMismatch::Skip) {
        PinningDecision::Skip { message } => assert!(message.starts_with(&head), "{message}"),
        other => panic!("{other:?}"),
    }
    match hardware::check_pinning(&topo, Some(&asked), None, OnMismatch::Warn) {
        PinningDecision::Run(p) => {
            assert_eq!(p.generator, None);
            assert_eq!(p.warnings, vec![format!("{head}; the generator runs unpinned")]);
        }
        other => panic!("{other:?}"),
    }
    // Launching pinned to a CPU that does not exist fails before exec, with a sentence.
    let logs = tempfile::tempdir().unwrap();
    let mut spec = sh("sleep 300", logs.path());
    spec.cpus = Some(CpuList::new(vec![beyond]));
    let err = Target::start(&spec).unwrap_err();
    assert!(err.to_string().contains(&format!("pinned to CPUs `{beyond}`")), "{err}");
}

#[test]
fn the_sampler_follows_a_busy_target_tree() {
    let logs = tempfile::tempdir().unwrap();
    // The busy loop runs in a child of the shell: the tree, not just the main process, is measured.
    let target = Target::start(&sh("sh -c 'while :; do :; done' & wait", logs.path())).unwrap();
    wait_for(|| procfs::live_group_members(target.pgid()).len() == 2);
    let mut cfg = SamplerConfig::for_target(Some(target.pid()));
    cfg.interval = Duration::from_millis(250);
    let sampler = Sampler::start(cfg).unwrap();
    std::thread::sleep(Duration::from_millis(1100));
    let samples = sampler.stop();
    target.stop().unwrap();
    assert!(samples.target.len() >= 4, "{samples:?}");
    assert!(samples.target.iter().all(|s| s.rss_bytes > 0), "{samples:?}");
    let peak = samples.target.iter().map(|s| s.cpu).fold(0.0, f64::max);
    assert!(peak > 0.05, "a spinning shell uses CPU: {samples:?}");
}

/// A server no one here wrote: nginx (when installed), master and workers, pinned and stopped.
#[test]
fn nginx_master_and_workers_are_pinned_and_stopped() {
    let Some(nginx) = ["/usr/sbin/nginx", "/usr/bin/nginx"].into_iter().find(|p| Path::new(p).exists()) else {
        eprintln!("nginx is not installed: skipped");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let root = dir.path().join("www");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("index.html"), "hello from nginx").unwrap();
    let conf = format!(
        "daemon off;\nworker_processes 2;\npid {pid};\nerror_log stderr;\nevents {{ worker_connections 64; }}\n\
         http {{\n access_log off;\n client_body_temp_path {tmp}/body;\n proxy_temp_path {tmp}/proxy;\n \
         fastcgi_temp_path {tmp}/fastcgi;\n uwsgi_temp_path {tmp}/uwsgi;\n scgi_temp_path {tmp}/scgi;\n \
         server {{ listen 127.0.0.1:{port}; root {root}; }}\n}}\n",
        pid = dir.path().join("nginx.pid").display(),
        tmp = dir.path().display(),
        root = root.display(),
    );
    std::fs::write(dir.path().join("nginx.conf"), conf).unwrap();
    let mut spec = LaunchSpec::new(
        vec![nginx.into(), "-p".into(), dir.path().display().to_string(), "-c".into(), "nginx.conf".into()],
        dir.path().join("logs"),
    );
    spec.cpus = Some(CpuList::new(vec![0]));
    let target = Target::start(&spec).unwrap();
    let base = format!("http://127.0.0.1:{port}");
    target.wait_ready(&base, &http_probe("/", 30_000)).unwrap();
    assert_eq!(http_get(format!("{base}/")), (200, "hello from nginx".to_owned()));
    let pgid = target.pgid();
    wait_for(|| procfs::live_group_members(pgid).len() == 3);
    for pid in procfs::live_group_members(pgid) {
        assert_eq!(hardware::cpus_allowed(pid, None).unwrap().to_string(), "0", "pid {pid}");
    }
    let report = target.stop().unwrap();
    assert!(!report.killed);
    assert_group_gone(pgid);
}

#[test]
fn a_target_outlives_the_thread_that_started_it() {
    let logs = tempfile::tempdir().unwrap();
    let spec = sh("sleep 300", logs.path());
    // Started from a thread that ends at once: the parent-death signal must not fire.
    let target = std::thread::spawn(move || Target::start(&spec).unwrap()).join().unwrap();
    assert!(spec_has_pdeathsig());
    assert!(target.wait_exit_timeout(Duration::from_millis(300)).is_none(), "{:?}", target.exited());
    let pgid = target.pgid();
    drop(target);
    assert_group_gone(pgid);
}

fn spec_has_pdeathsig() -> bool {
    LaunchSpec::new(vec!["x".into()], "/tmp").die_with_parent
}

/// With `target.protocol: http2` over `http://`, an `http_get` probe speaks h2c with prior knowledge as the load
/// will: the built-in server (h2c beside HTTP/1.1) is ready; a server that only speaks HTTP/1.1 never is.
#[test]
fn an_http2_probe_speaks_h2c_with_prior_knowledge() {
    let logs = tempfile::tempdir().unwrap();
    let spec = LaunchSpec::new(Vec::new(), logs.path());
    let (target, addr) = Target::start_builtin(
        Path::new(SERVE_BIN),
        &builtin_cfg(BuiltinKind::Plaintext),
        &spec,
        Duration::from_secs(30),
    )
    .unwrap();
    let base = format!("http://{addr}");
    target.wait_ready_as(&base, &http_probe("/plaintext", 30_000), None, Protocol::Http2).unwrap();
    drop(target);

    // An HTTP/1.1-only server: answers every connection with an HTTP/1.1 200, whatever it was sent.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let h1 = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            let mut buf = [0u8; 1024];
            let _ = std::io::Read::read(&mut conn, &mut buf);
            let _ = std::io::Write::write_all(&mut conn, b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
        }
    });
    let sleeper = Target::start(&sh("sleep 30", logs.path())).unwrap();
    let base = format!("http://{h1}");
    sleeper.wait_ready(&base, &http_probe("/", 30_000)).unwrap();
    let err = sleeper.wait_ready_as(&base, &http_probe("/", 600), None, Protocol::Http2).unwrap_err();
    assert!(err.to_string().contains("h2c GET"), "{err}");
}

/// A client configuration trusting only `cert_pem`, sending `localhost` in SNI, as the load's would.
fn probe_tls(cert_pem: &str) -> loadgate_target::ProbeTls {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::CertificateDer::pem_slice_iter(cert_pem.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let config =
        rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    loadgate_target::ProbeTls::new(config, name, |e| format!("TLS: {e}"))
}

/// A TLS server offering only the ALPN protocol `alpn` (`h2` or `http/1.1`) that answers every request 200 in
/// it, on a thread of its own.
fn one_protocol_tls_server(cert_pem: &str, key_pem: &str, alpn: &'static [u8]) -> std::net::SocketAddr {
    use rustls::pki_types::pem::PemObject;
    let chain = rustls::pki_types::CertificateDer::pem_slice_iter(cert_pem.as_bytes()).collect::<Result<Vec<_>, _>>();
    let key = rustls::pki_types::PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).unwrap();
    let mut config =
        rustls::ServerConfig::builder_with_provider(std::sync::Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(chain.unwrap(), key)
            .unwrap();
    config.alpn_protocols = vec![alpn.to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(std::sync::Arc::new(config));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            while let Ok((tcp, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(tcp).await else { return };
                    if alpn != b"h2" {
                        let mut buf = [0u8; 1024];
                        let _ = tokio::io::AsyncReadExt::read(&mut tls, &mut buf).await;
                        let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
                        let _ = tokio::io::AsyncWriteExt::write_all(&mut tls, ok).await;
                        let _ = tokio::io::AsyncWriteExt::shutdown(&mut tls).await;
                        return;
                    }
                    let Ok(mut conn) = h2::server::handshake(tls).await else { return };
                    while let Some(Ok((_, mut respond))) = conn.accept().await {
                        let _ = respond.send_response(http::Response::builder().status(200).body(()).unwrap(), true);
                    }
                });
            }
        });
    });
    addr
}

/// Over `https://` an `http_get` probe offers ALPN as the load does and speaks what the server picked: the
/// built-in server (h2 and HTTP/1.1) is ready under every protocol; a server offering only `h2` is ready under
/// `http2` and `auto`, and never under `http1` (no protocol in common); one offering only `http/1.1` is ready under
/// `auto` (spoken in HTTP/1.1), and never under `http2`.
#[test]
fn an_https_probe_offers_alpn_as_the_load() {
    let dir = tempfile::tempdir().unwrap();
    let made = loadgate_server::tls::self_signed(&["localhost", "127.0.0.1"]).unwrap();
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert, &made.cert_pem).unwrap();
    std::fs::write(&key, &made.key_pem).unwrap();
    let spec = LaunchSpec::new(Vec::new(), dir.path());
    let mut cfg = builtin_cfg(BuiltinKind::Plaintext);
    cfg.tls = Some(loadgate_server::ServeTls::Files { cert, key });
    let (target, addr) = Target::start_builtin(Path::new(SERVE_BIN), &cfg, &spec, Duration::from_secs(30)).unwrap();
    let base = format!("https://{addr}");
    for protocol in [Protocol::Http1, Protocol::Http2, Protocol::Auto] {
        let tls = Some(probe_tls(&made.cert_pem));
        target.wait_ready_as(&base, &http_probe("/plaintext", 30_000), tls, protocol).unwrap();
    }
    drop(target);

    let h2_only = one_protocol_tls_server(&made.cert_pem, &made.key_pem, b"h2");
    let sleeper = Target::start(&sh("sleep 30", dir.path())).unwrap();
    let base = format!("https://{h2_only}");
    for protocol in [Protocol::Http2, Protocol::Auto] {
        let tls = Some(probe_tls(&made.cert_pem));
        sleeper.wait_ready_as(&base, &http_probe("/", 30_000), tls, protocol).unwrap();
    }
    let tls = Some(probe_tls(&made.cert_pem));
    let err = sleeper.wait_ready_as(&base, &http_probe("/", 600), tls, Protocol::Http1).unwrap_err();
    assert!(err.to_string().contains("TLS"), "{err}");

    let h1_only = one_protocol_tls_server(&made.cert_pem, &made.key_pem, b"http/1.1");
    let base = format!("https://{h1_only}");
    for protocol in [Protocol::Http1, Protocol::Auto] {
        let tls = Some(probe_tls(&made.cert_pem));
        sleeper.wait_ready_as(&base, &http_probe("/", 30_000), tls, protocol).unwrap();
    }
    let tls = Some(probe_tls(&made.cert_pem));
    let err = sleeper.wait_ready_as(&base, &http_probe("/", 600), tls, Protocol::Http2).unwrap_err();
    assert!(err.to_string().contains("TLS"), "{err}");
}
