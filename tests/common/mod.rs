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
