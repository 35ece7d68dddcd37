//! The replay parsers and schedule on the sample files in `tests/data/replay/` (see its README: the nginx logs
//! are real nginx output).

use std::path::Path;
use std::time::Duration;

use loadgate_import::replay::{
    parse_log, replay, summarize, ClientKey, DurationUnit, JsonMapping, Limits, LogFormat, MethodPolicy, ReplayOptions,
    SkipReason, StartFrom, TimeFormat, TimeIs,
};

const TIMED: &str = "$remote_addr - $remote_user [$time_local] \"$request\" $status $body_bytes_sent \
                     \"$http_referer\" \"$http_user_agent\" $request_time $msec $connection";

fn data(name: &str) -> Vec<u8> {
    std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/replay").join(name)).unwrap()
}

fn no_env(_: &str) -> Option<String> {
    None
}

fn as_logged() -> ReplayOptions {
    ReplayOptions { methods: MethodPolicy::AsLogged, ..ReplayOptions::default() }
}

#[test]
fn a_real_nginx_log_with_msec_and_request_time_is_reordered_by_start_and_keeps_every_line() {
    let log = data("nginx-timed.log");
    let parsed = parse_log(&log[..], &LogFormat::Nginx(TIMED.into()), &Limits::default()).unwrap();
    assert_eq!((parsed.lines, parsed.bad, parsed.records.len()), (300, 0, 300));
    assert!(parsed.records.iter().all(|r| r.start_from == StartFrom::EndLessDuration));
    assert!(parsed.records.iter().all(|r| matches!(r.client, ClientKey::Connection(_))));
    let out_of_order = parsed.records.windows(2).filter(|w| w[1].start < w[0].start).count();
    assert!(out_of_order > 0, "the sample's starts are out of order in file order");
    let s = replay(&log[..], &LogFormat::Nginx(TIMED.into()), &Limits::default(), &as_logged(), &no_env).unwrap();
    assert_eq!(s.requests.len(), 300);
    assert!(s.requests.windows(2).all(|w| w[0].at <= w[1].at));
    // The default method policy skips the POSTs and DELETEs and counts them.
    let safe =
        replay(&log[..], &LogFormat::Nginx(TIMED.into()), &Limits::default(), &ReplayOptions::default(), &no_env)
            .unwrap();
    let unsafe_methods = parsed.records.iter().filter(|r| r.method != "GET" && r.method != "HEAD").count() as u64;
    assert!(unsafe_methods > 0);
    assert_eq!(safe.skips.get(&SkipReason::UnsafeMethod).copied(), Some(unsafe_methods));
    assert_eq!(safe.requests.len() as u64 + unsafe_methods, 300);
    // The access_token query parameter is sent but never shown.
    let with_token = safe.requests.iter().find(|r| r.path_and_query().contains("access_token=tok")).unwrap();
    assert!(with_token.redacted().path_and_query.contains("access_token=***"));
}

#[test]
fn the_same_runs_combined_log_starts_at_write_times_spread_within_the_second() {
    let log = data("nginx-combined.log");
    let s = replay(&log[..], &LogFormat::NginxCombined, &Limits::default(), &as_logged(), &no_env).unwrap();
    assert_eq!(s.requests.len(), 200);
    let sum = summarize(&s.requests);
    assert_eq!(sum.requests, 200);
    assert!(sum.peak_per_second >= 1 && sum.clients >= 1);
    // Spread: no two requests at the very same microsecond, although many share their logged second.
    let mut ats: Vec<_> = s.requests.iter().map(|r| r.at).collect();
    ats.dedup();
    assert!(ats.len() > 190, "{}", ats.len());
}

#[test]
fn an_apache_common_log_replays_at_twice_the_speed_in_half_the_time() {
    let log = data("apache-common.log");
    let one = replay(&log[..], &LogFormat::ApacheCommon, &Limits::default(), &as_logged(), &no_env).unwrap();
    let two = replay(
        &log[..],
        &LogFormat::ApacheCommon,
        &Limits::default(),
        &ReplayOptions { speed: 2.0, ..as_logged() },
        &no_env,
    )
    .unwrap();
    assert_eq!(one.requests.len(), 60);
    let (d1, d2) = (one.requests.last().unwrap().at, two.requests.last().unwrap().at);
    assert!(d1.abs_diff(d2 * 2) <= Duration::from_micros(1), "{d1:?} {d2:?}");
    assert!(one.requests.iter().all(|r| r.logged_status.is_some()));
}

#[test]
fn a_json_lines_log_with_end_times_and_durations_keeps_headers_bodies_and_hides_the_token() {
    let m = JsonMapping {
        time: "ts".into(),
        time_format: TimeFormat::EpochMillis,
        time_is: TimeIs::End,
        duration: Some(("took_ms".into(), DurationUnit::Millis)),
        method: "req.method".into(),
        path: "req.uri".into(),
        headers: Some("req.headers".into()),
        body: Some("req.body".into()),
        ..JsonMapping::default()
    };
    let log = data("app.jsonl");
    let s = replay(&log[..], &LogFormat::JsonLines(m), &Limits::default(), &as_logged(), &no_env).unwrap();
    assert_eq!(s.requests.len(), 40);
    let post = s.requests.iter().find(|r| r.method == "POST").unwrap();
    assert!(post.body.as_ref().is_some_and(|b| b.starts_with(b"{\"sku\"")));
    let shown = serde_json::to_string(&s.requests.iter().map(|r| r.redacted()).collect::<Vec<_>>()).unwrap();
    assert!(!shown.contains("eyJhbGciOiJIUzI1NiJ9") && !shown.contains("k-5f2a"), "{shown}");
    assert!(shown.contains(r#"["Authorization","***"]"#));
}

#[test]
fn an_alb_log_in_write_order_is_scheduled_by_request_creation_time() {
    let log = data("alb.log");
    let parsed = parse_log(&log[..], &LogFormat::Alb, &Limits::default()).unwrap();
    assert_eq!(parsed.records.len(), 20);
    assert!(parsed.records.windows(2).any(|w| w[1].start < w[0].start));
    let s = replay(&log[..], &LogFormat::Alb, &Limits::default(), &as_logged(), &no_env).unwrap();
    assert!(s.requests.windows(2).all(|w| w[0].at <= w[1].at));
    assert!(s.requests.iter().all(|r| r.redacted().headers[0] == ("Host".into(), "shop.example.com:443".into())));
}

#[test]
fn a_har_keeps_its_origins_requests_with_bodies_and_skips_the_rest_by_reason() {
    let log = data("shop.har");
    let s = replay(&log[..], &LogFormat::Har { origin: None }, &Limits::default(), &as_logged(), &no_env).unwrap();
    let kept: Vec<_> = s.requests.iter().map(|r| format!("{} {}", r.method, r.redacted().path_and_query)).collect();
    assert_eq!(
        kept,
        vec![
            "GET /",
            "GET /static/app.js",
            "GET /api/items?page=1&access_token=***",
            "POST /api/cart",
            "HEAD /api/health"
        ]
    );
    let count = |r| s.skips.get(&r).copied().unwrap_or(0);
    assert_eq!(
        [SkipReason::OtherOrigin, SkipReason::DataUrl, SkipReason::Cached, SkipReason::WebSocket].map(count),
        [1, 1, 1, 1]
    );
    let post = &s.requests[3];
    assert_eq!(post.body.as_deref(), Some(&br#"{"sku":17,"qty":1}"#[..]));
    assert_eq!(post.at, Duration::from_millis(702));
    let names: Vec<_> = post.headers.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, vec!["Host", "accept", "user-agent", "content-type", "cookie"]);
    let everything = format!("{:?} {:?}", s.requests, s.requests.iter().map(|r| r.redacted()).collect::<Vec<_>>());
    for secret in ["s3cr3t-session", "tok-live-123", "eyJ.live.token"] {
        assert!(!everything.contains(secret), "{secret}");
    }
}

#[test]
fn a_log_declared_in_the_wrong_format_is_refused_naming_its_first_lines() {
    let log = data("nginx-timed.log");
    let e = parse_log(&log[..], &LogFormat::Alb, &Limits::default()).unwrap_err();
    assert!(e.to_string().starts_with("100 of 100 lines could not be read"), "{e}");
    let e = parse_log(&log[..], &LogFormat::Har { origin: None }, &Limits::default()).unwrap_err();
    assert!(e.to_string().starts_with("not a HAR document (line 1, column"), "{e}");
}

mod no_panic {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

        #[test]
        fn no_line_makes_a_parser_or_the_schedule_panic(lines in proptest::collection::vec(
            prop_oneof![
                "\\PC{0,80}",
                "[0-9.\\- \\[\\]\"a-zA-Z:/+]{0,120}",
                Just(r#"1.2.3.4 - - [01/Jan/2026:00:00:00 +0000] "GET / HTTP/1.1" 200 1 "-" "x" 999999999999.999 1.000 7"#.to_string()),
                Just(r#"{"time":"-262143-01-01T00:00:00Z","path":"/"}"#.to_string()),
            ],
            0..20,
        ), speed in 0.001f64..1000.0) {
            let log = lines.join("\n");
            let limits = Limits { max_bad_share: 1.0, ..Limits::default() };
            let opts = ReplayOptions { speed, reorder_window: Duration::from_secs(u64::MAX / 4_000_000), ..as_logged() };
            for f in [
                LogFormat::Nginx(TIMED.into()),
                LogFormat::NginxCombined,
                LogFormat::ApacheCombined,
                LogFormat::Alb,
                LogFormat::JsonLines(JsonMapping::default()),
                LogFormat::Har { origin: None },
            ] {
                let _ = replay(log.as_bytes(), &f, &limits, &opts, &no_env);
            }
        }
    }
}
