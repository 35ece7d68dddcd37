//! Parsing speed of the replay reader: `cargo run --release -p loadgate-import --example replay_parse [LINES]`
//! parses that many synthetic nginx lines (`$msec $request_time $connection`) and builds their schedule.

use std::time::Instant;

use loadgate_import::replay::{build, parse_log, Limits, LogFormat, MethodPolicy, ReplayOptions};

fn main() {
    let n: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(300_000);
    let format = "$remote_addr - $remote_user [$time_local] \"$request\" $status $body_bytes_sent \"$http_referer\" \
                  \"$http_user_agent\" $request_time $msec $connection";
    let mut log = String::new();
    for i in 0..n {
        let end = 1_795_902_601.0 + i as f64 / 5000.0;
        log.push_str(&format!(
            "10.0.{}.{} - - [28/Nov/2026:21:50:01 +0000] \"GET /api/items/{}?page={} HTTP/1.1\" 200 512 \"-\" \
             \"Mozilla/5.0 (X11; Linux x86_64) Firefox/125.0\" 0.{:03} {end:.3} {}\n",
            i % 200,
            i % 250,
            i % 1000,
            i % 7,
            i % 300,
            i / 10
        ));
    }
    let t = Instant::now();
    let parsed = parse_log(log.as_bytes(), &LogFormat::Nginx(format.into()), &Limits::default()).expect("parse");
    let parse = t.elapsed();
    let t = Instant::now();
    let options = ReplayOptions { methods: MethodPolicy::AsLogged, ..ReplayOptions::default() };
    let s = build(parsed, &options, &|_| None).expect("schedule");
    let schedule = t.elapsed();
    println!(
        "{n} lines, {} MB: parsed in {:.3} s ({:.0} lines/s), scheduled in {:.3} s ({:.0} requests/s), reorder peak {}",
        log.len() / 1_000_000,
        parse.as_secs_f64(),
        n as f64 / parse.as_secs_f64(),
        schedule.as_secs_f64(),
        s.requests.len() as f64 / schedule.as_secs_f64(),
        s.reorder_peak
    );
}
