//! Opening many keep-alive connections through the real binary: paced, measured apart from the load, reported.
//!
//! The server accepts one connection every millisecond behind the standard library's accept queue, so a burst
//! of connects overflows it and the kernel drops SYNs. Nothing asserts how fast anything is.

mod common;

use std::io::{BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use common::{command, read_request, text};

/// A keep-alive server that accepts slowly; every request gets `ok`. Returns its URL.
fn slow_accepting_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    std::thread::spawn(move || loop {
        let Ok((stream, _)) = listener.accept() else { continue };
        std::thread::spawn(move || answer(stream));
        std::thread::sleep(Duration::from_millis(1));
    });
    url
}

fn answer(stream: TcpStream) {
    let mut w = stream.try_clone().unwrap();
    let mut r = BufReader::new(stream);
    while read_request(&mut r).is_some() {
        if w.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok").is_err() {
            return;
        }
    }
}

fn run_json(args: &[&str]) -> (Option<i32>, serde_json::Value, String) {
    let out = command(args).output().expect("run loadgate");
    let stderr = text(&out.stderr);
    let json = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}\n{stderr}"));
    (out.status.code(), json, stderr)
}

#[test]
fn many_connections_open_before_the_load_and_the_run_says_how() {
    let url = slow_accepting_server();
    let (code, json, stderr) = run_json(&["run", "-c", "300", "-d", "300ms", "--out", "-", &url]);
    assert_eq!(code, Some(0), "{stderr}");
    let s = &json["scenarios"][0];
    let o = &s["connections"]["opening"];
    assert_eq!(o["connect_rate"], "auto", "{o}");
    assert_eq!(o["opened"], 300, "{o}");
    assert_eq!(s["connections"]["opened"], 300, "{s}");
    assert_eq!(s["validity"]["valid"], true, "{}", s["validity"]);
    assert!(stderr.contains("Opened before the load: 300 of 300 in "), "{stderr}");
}

#[test]
fn connect_rate_paces_the_opening_from_the_command_line() {
    let url = slow_accepting_server();
    let (code, json, stderr) =
        run_json(&["run", "-c", "40", "-d", "200ms", "--connect-rate", "200/s", "--out", "-", &url]);
    assert_eq!(code, Some(0), "{stderr}");
    let o = &json["scenarios"][0]["connections"]["opening"];
    assert_eq!(o["connect_rate"], "200/s", "{o}");
    assert_eq!(o["opened"], 40, "{o}");
    // 40 connects at 200/s cannot take less than ~0.2 s.
    assert!(o["duration_s"].as_f64().unwrap() >= 0.15, "{o}");

    let out = command(&["run", "-c", "4", "-d", "1s", "--connect-rate", "fast", &url]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("`auto`, `unlimited`, or a rate"), "{}", text(&out.stderr));
}

#[test]
fn an_opening_that_lasts_seconds_shows_its_progress_on_stderr_and_none_under_quiet() {
    let url = slow_accepting_server();
    // 300 connects at 150/s take about two seconds: at least one report a second, then one line when done.
    let args = ["run", "-c", "300", "-d", "200ms", "--connect-rate", "150/s", "--out", "-", &url];
    let (code, json, stderr) = run_json(&args);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(json["scenarios"][0]["connections"]["opening"]["opened"], 300);
    assert!(stderr.contains("main opening 300 connections: "), "{stderr}");
    assert!(stderr.contains(" open, 0 failed, "), "{stderr}");
    assert!(stderr.contains("main opened 300 of 300 connections in "), "{stderr}");
    let (Some(progress), Some(done)) = (stderr.find("main opening 300"), stderr.find("main opened 300 of 300")) else {
        panic!("{stderr}")
    };
    assert!(progress < done, "{stderr}");

    let mut quiet = vec!["-q"];
    quiet.extend_from_slice(&args);
    let (code, _, stderr) = run_json(&quiet);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stderr.contains("opening 300 connections"), "{stderr}");
    assert!(!stderr.contains("opened 300 of 300 connections"), "{stderr}");
}
