//! What every end-to-end test file shares: the repository root and the real binary run with a clean
//! environment, so that paths and output are stable.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("repo root")
}

/// The real binary, to run from the repository root with a clean environment (PATH only, no colour).
pub fn command(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_loadgate"));
    cmd.args(args)
        .current_dir(root())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("NO_COLOR", "1");
    cmd
}

/// Runs loadgate to completion (see [`command`]).
pub fn loadgate(args: &[&str]) -> Output {
    command(args).output().expect("run loadgate")
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Reads one HTTP/1.1 request for a purpose-built test server: its request line and its body (by
/// Content-Length). `None` when the peer closed or sent a short body.
pub fn read_request(r: &mut impl std::io::BufRead) -> Option<(String, Vec<u8>)> {
    let mut line = String::new();
    if r.read_line(&mut line).unwrap_or(0) == 0 {
        return None;
    }
    let mut length = 0usize;
    loop {
        let mut h = String::new();
        if r.read_line(&mut h).unwrap_or(0) == 0 {
            return None;
        }
        if h == "\r\n" {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                length = v.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0; length];
    r.read_exact(&mut body).ok()?;
    Some((line, body))
}

/// A server on loopback that answers 200 to everything and records `METHOD target body` per request.
pub fn recording_server() -> (u16, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use std::io::{BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let log = log.clone();
            std::thread::spawn(move || {
                let mut out = stream.try_clone().expect("clone");
                let mut r = BufReader::new(stream);
                while let Some((line, body)) = read_request(&mut r) {
                    let mut parts = line.split_whitespace();
                    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
                    log.lock().unwrap().push(format!("{method} {target} {}", String::from_utf8_lossy(&body)));
                    if out.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok").is_err() {
                        return;
                    }
                }
            });
        }
    });
    (port, seen)
}

/// Every file under `dir`, recursively.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = entry.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// Whether this machine refuses `perf_event_open` (a seccomp filter, `perf_event_paranoid` 3 or more): the
/// sampler's tests skip there, saying so.
pub fn perf_events_refused() -> bool {
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid").ok();
    paranoid.and_then(|p| p.trim().parse::<i32>().ok()).is_none_or(|p| p > 2)
}

/// A program on the PATH.
pub fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?.to_str()?.split(':').map(|d| Path::new(d).join(name)).find(|p| p.is_file())
}

/// Whether the tests run as root.
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("Uid:")).map(|l| l.split_whitespace().nth(1) == Some("0")))
        .unwrap_or(false)
}
