//! End-to-end tests of what a newcomer tripped over (issue 34): exit classes, refused command lines, messages,
//! what loadgate writes for the user to commit. Each runs the real binary and checks its exit code and message.

use std::process::Output;

mod common;
use common::{loadgate, text};

fn refused(out: &Output, code: i32, says: &str) {
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "expected exit {code} saying {says:?}:\n{err}{}", text(&out.stdout));
    assert!(err.contains(says), "expected {says:?} in:\n{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn a_url_flag_with_a_spec_is_refused_as_a_positional_url_is() {
    let positional = loadgate(&["run", "specs/quickstart.yaml", "http://127.0.0.1:9/"]);
    refused(&positional, 2, "give either spec files or one URL, not both");
    let flag = loadgate(&["run", "specs/quickstart.yaml", "--url", "http://127.0.0.1:9/"]);
    refused(&flag, 2, "give either spec files or one URL, not both");
    assert_eq!(text(&flag.stderr), text(&positional.stderr), "the same message");
}

#[test]
fn http2_over_http_to_a_server_without_h2c_is_named_before_the_load() {
    let (port, seen) = common::recording_server();
    let url = format!("http://127.0.0.1:{port}/");
    let out = loadgate(&["run", "--protocol", "http2", "-c", "1", "-d", "300ms", &url, "--out", "-"]);
    refused(&out, 3, "does not speak h2c");
    assert!(text(&out.stderr).contains("cannot be talked to"), "{}", text(&out.stderr));
    // The probe sends the preface only: no request of the load reached the server.
    let seen = seen.lock().unwrap();
    assert!(seen.iter().all(|r| r.starts_with("PRI ") || r.starts_with("SM ")), "{seen:?}");
}
