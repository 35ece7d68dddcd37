//! What every end-to-end test file shares: the repository root and the real binary run with a clean
//! environment, so that paths and output are stable.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("repo root")
}

/// Runs loadgate from the repository root with a clean environment (PATH only, no colour).
pub fn loadgate(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_loadgate"))
        .args(args)
        .current_dir(root())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("NO_COLOR", "1")
        .output()
        .expect("run loadgate")
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
