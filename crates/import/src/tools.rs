//! Each tool's flags, defaults and quirks, mapped onto a [`Draft`].
//!
//! Sources read for the flags and defaults: wg/wrk and giltene/wrk2 `src/wrk.c` (threads 2, connections 10,
//! duration 10 s, timeout 2 s; SI suffixes on numbers and times), Apache httpd `support/ab.c` (one request,
//! concurrency 1, timeout 30 s, HTTP/1.0, keep-alive only with `-k`), rakyll/hey `hey.go` (200 requests, 50
//! workers, `-q` per worker, timeout 20 s), hatoo/oha `src/lib.rs` (200 requests, 50 connections, `-q` in
//! total, no timeout), apigee/apib's usage (concurrency 1, 60 s) and nghttp2's `doc/h2load.1.rst` (1 request,
//! 1 client, 1 thread, 1 stream per connection, HTTP/2 unless `--h1`, `--rps` per client, no timeout).

use crate::args::{self, flag, value, Given, Opt, Parsed, Style};
use crate::draft::{Draft, Load, Stop, Val};
use crate::tool::{ImportError, Tool};
use crate::values::{self, Dur, TargetUrl};

const MAX_CONNECTIONS: u64 = 1_000_000;
const MAX_THREADS: u64 = 4096;
const MAX_PIPELINE: u64 = 1024;
const MAX_REQUESTS: u64 = 1_000_000_000_000;
/// The highest rate loadgate accepts, in thousandths of a request per second.
const MAX_RATE_MILLIS: f64 = 1e15;

pub(crate) fn read(tool: Tool, args: &[String], command_line: &str) -> Result<Draft, ImportError> {
    match tool {
        Tool::Wrk | Tool::Wrk2 => wrk(tool, args, command_line),
        Tool::Ab => ab(args, command_line),
        Tool::Hey => hey(args, command_line),
        Tool::Oha => oha(args, command_line),
        Tool::Apib => apib(args, command_line),
        Tool::H2load => h2load(args, command_line),
    }
}

fn text(g: &Given) -> &str {
    g.value.as_deref().unwrap_or_default()
}

fn bad(tool: Tool, g: &Given, expected: &str) -> ImportError {
    ImportError::BadValue { tool, flag: g.written.clone(), value: text(g).to_owned(), expected: expected.to_owned() }
}

/// Reads the last value of `key` with `parse`, checking it lies in `min..=max`.
fn number(
    tool: Tool,
    p: &Parsed,
    key: &str,
    parse: fn(&str) -> Option<u64>,
    (min, max): (u64, u64),
    expected: &str,
) -> Result<Option<u64>, ImportError> {
    match p.last(key) {
        None => Ok(None),
        Some(g) => match parse(text(g)) {
            Some(v) if (min..=max).contains(&v) => Ok(Some(v)),
            _ => Err(bad(tool, g, expected)),
        },
    }
}

fn duration(
    tool: Tool,
    p: &Parsed,
    key: &str,
    parse: fn(&str) -> Option<Dur>,
    allow_zero: bool,
    expected: &str,
) -> Result<Option<Dur>, ImportError> {
    match p.last(key) {
        None => Ok(None),
        Some(g) => match parse(text(g)) {
            Some(d) if allow_zero || d.0 > 0 => Ok(Some(d)),
            _ => Err(bad(tool, g, expected)),
        },
    }
}

fn no_benchmark(tool: Tool, p: &Parsed, keys: &[(&str, &str)]) -> Result<(), ImportError> {
    for (key, what) in keys {
        if let Some(g) = p.last(key) {
            return Err(ImportError::NoBenchmark { tool, flag: g.written.clone(), what: (*what).to_owned() });
        }
    }
    Ok(())
}

fn seconds(v: u64) -> Option<Dur> {
    (v <= 100 * 365 * 24 * 3600).then(|| Dur::from_secs(v))
}

fn secs_int(s: &str) -> Option<Dur> {
    values::integer(s).and_then(seconds)
}

fn start(tool: Tool, url: TargetUrl, command_line: &str, load: Load) -> Draft {
    let mut d = Draft {
        tool,
        command_line: command_line.to_owned(),
        cpus: None,
        threads: None,
        url,
        method: "GET".to_owned(),
        headers: Vec::new(),
        body: None,
        timeout: None,
        load,
        warmup: None,
        insecure: false,
        http2: false,
        streams: 1,
        notes: Vec::new(),
        credentials: Vec::new(),
    };
    if let Some(f) = d.url.fragment.take() {
        d.note(format!("the URL fragment `#{f}` is dropped (clients never send it)"));
    }
    if let Some(user) = d.url.userinfo.take() {
        d.set_basic_auth(&user);
        d.note("the credentials in the URL are sent as a Basic `Authorization` header");
    }
    d
}

fn url(tool: Tool, positional: Option<&String>) -> Result<TargetUrl, ImportError> {
    let Some(text) = positional else { return Err(ImportError::MissingUrl { tool }) };
    values::parse_url(text).map_err(|reason| ImportError::BadUrl { tool, url: text.clone(), reason })
}

fn headers(tool: Tool, d: &mut Draft, p: &Parsed, key: &str) -> Result<(), ImportError> {
    for g in p.all(key) {
        let (name, value) =
            values::header(text(g)).ok_or_else(|| bad(tool, g, "a header such as `Accept: text/plain`"))?;
        d.set_header(&name, &value);
    }
    Ok(())
}

fn header_value(tool: Tool, d: &mut Draft, p: &Parsed, key: &str, name: &str) -> Result<(), ImportError> {
    if let Some(g) = p.last(key) {
        let v = text(g).trim();
        if v.contains(['\r', '\n', '\0']) {
            return Err(bad(tool, g, "a header value on one line"));
        }
        d.set_header(name, v);
    }
    Ok(())
}

fn method(tool: Tool, d: &mut Draft, g: &Given) -> Result<(), ImportError> {
    let m = text(g);
    let upper = m.to_ascii_uppercase();
    if upper.is_empty() || !upper.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(bad(tool, g, "an HTTP method such as GET, POST or PUT"));
    }
    // hey upper-cases methods itself; the others send them as written.
    if upper != m && tool != Tool::Hey {
        d.note(format!("the method `{m}` is sent as `{upper}` (loadgate methods are upper case)"));
    }
    d.method = upper;
    Ok(())
}

fn threads(tool: Tool, p: &Parsed, key: &str, parse: fn(&str) -> Option<u64>) -> Result<Option<u32>, ImportError> {
    Ok(number(tool, p, key, parse, (1, MAX_THREADS), "a number of threads from 1 to 4096")?.map(|t| t as u32))
}

fn rate_millis(tool: Tool, g: &Given, per_sec: f64) -> Result<u64, ImportError> {
    let millis = (per_sec * 1000.0).round();
    if !(1.0..=MAX_RATE_MILLIS).contains(&millis) {
        return Err(bad(tool, g, "a rate above zero (at least 0.001 requests per second, at most 10^12)"));
    }
    Ok(millis as u64)
}

/// How long `requests` take at a rate, rounded up to a millisecond.
fn duration_for(requests: u64, rate_millis: u64) -> Dur {
    let secs = requests as f64 * 1000.0 / rate_millis as f64;
    let ms = (secs * 1000.0).ceil().clamp(1.0, 3.0e12);
    Dur(ms as u64 * 1_000_000)
}

/// Applies what every tool shares once the draft is complete: a `Connection: close` header.
fn finish(mut d: Draft) -> Draft {
    let close =
        d.headers.iter().position(|(n, v)| n.eq_ignore_ascii_case("connection") && v.eq_ignore_ascii_case("close"));
    if let Some(pos) = close {
        match &mut d.load {
            Load::Closed { keep_alive, pipeline: 1, .. } => {
                *keep_alive = false;
                d.headers.remove(pos);
                d.note("the header `Connection: close` becomes `keep_alive: false`");
            }
            _ => d.note("the header `Connection: close` is kept, but this load model keeps connections open"),
        }
    }
    d
}

// ---------------------------------------------------------------------------------------------------------
// wrk and wrk2

const WRK: &[Opt] = &[
    value("threads", Some('t'), &["threads"]),
    value("connections", Some('c'), &["connections"]),
    value("duration", Some('d'), &["duration"]),
    value("script", Some('s'), &["script"]),
    value("header", Some('H'), &["header"]),
    flag("latency", Some('L'), &["latency"]),
    value("timeout", Some('T'), &["timeout"]),
    flag("version", Some('v'), &["version"]),
    flag("help", Some('h'), &["help"]),
    // wrk2
    value("rate", Some('R'), &["rate"]),
    flag("u_latency", Some('U'), &["u_latency"]),
    flag("batch_latency", Some('B'), &["batch_latency"]),
];

fn wrk(program: Tool, args: &[String], command_line: &str) -> Result<Draft, ImportError> {
    let parsed = args::parse(program, WRK, Style::Getopt, args)?;
    let p = &parsed;
    let tool = if p.has("rate") { Tool::Wrk2 } else { program };
    no_benchmark(tool, p, &[("help", "it prints the usage")])?;
    let threads = threads(tool, p, "threads", values::wrk_metric)?;
    let connections = number(
        tool,
        p,
        "connections",
        values::wrk_metric,
        (1, MAX_CONNECTIONS),
        "a number of connections from 1 to 1000000 (`1k` is 1000)",
    )?;
    let dur = duration(
        tool,
        p,
        "duration",
        values::wrk_time,
        false,
        "a duration of at least 1 s: `30`, `30s`, `5m` or `1h`",
    )?;
    let timeout =
        duration(tool, p, "timeout", values::wrk_time, false, "a timeout of at least 1 s: `8`, `8s` or `1m`")?;
    let threads = threads.map(Val::given).unwrap_or(Val::default(2));
    let connections = connections.map(Val::given).unwrap_or(Val::default(10));
    if connections.v < u64::from(threads.v) {
        return Err(ImportError::Conflict {
            tool,
            flags: "`-c` and `-t`".into(),
            problem: format!(
                "{tool} needs at least as many connections ({}) as threads ({})",
                connections.v, threads.v
            ),
        });
    }
    let duration = dur.map(Val::given).unwrap_or(Val::default(Dur::from_secs(10)));
    let target = url(tool, p.positionals.first())?;
    let script_args: Vec<String> = p.positionals.iter().skip(1).cloned().collect();

    let mut pipeline = 1u32;
    let mut notes = Vec::new();
    match p.last("script") {
        Some(g) if text(g).rsplit('/').next() == Some("pipeline.lua") => match script_args.first() {
            Some(depth) => match values::integer(depth) {
                Some(n) if (1..=MAX_PIPELINE).contains(&n) => pipeline = n as u32,
                _ => {
                    return Err(ImportError::BadValue {
                        tool,
                        flag: format!("{} pipeline.lua --", g.written),
                        value: depth.clone(),
                        expected: "a pipeline depth from 1 to 1024".into(),
                    })
                }
            },
            None => notes.push("`pipeline.lua` was given no depth (`-- 16`): one request at a time".to_owned()),
        },
        Some(g) => {
            let args_text = if script_args.is_empty() {
                String::new()
            } else {
                format!(" with arguments `{}`", script_args.join(" "))
            };
            notes.push(format!(
                "the Lua script `{}`{args_text} is not run: loadgate does not run Lua; write what it sends into `request:` (method, path, headers, body)",
                text(g)
            ));
        }
        None if !script_args.is_empty() => notes.push(format!(
            "the arguments after the URL (`{}`) are only read by a Lua script; there is none",
            script_args.join(" ")
        )),
        None => {}
    }
    let load = match p.last("rate") {
        Some(g) => {
            let r = values::wrk_metric(text(g)).filter(|r| *r >= 1).ok_or_else(|| {
                bad(tool, g, "a rate in requests per second (all connections together), such as `2000` or `10k`")
            })?;
            if pipeline > 1 {
                notes.push(format!(
                    "`pipeline.lua -- {pipeline}` is dropped: loadgate's open (constant-rate) load sends one request per arrival"
                ));
            }
            Load::Open { rate_millis: rate_millis(tool, g, r as f64)?, duration, connections }
        }
        None if tool == Tool::Wrk2 => {
            return Err(ImportError::MissingFlag {
                tool,
                flag: "-R".into(),
                expected: "the constant rate wrk2 requires, in requests per second (`-R 2000`)".into(),
            })
        }
        // wrk records one latency per pipelined batch, when its last response is in: reading batches whole
        // measures the same way (over plain HTTP/1.1; over https each response is read as it arrives).
        None => Load::Closed {
            connections,
            stop: Stop::Duration(duration),
            pipeline,
            keep_alive: true,
            batch_reads: pipeline > 1 && !target.https,
        },
    };
    if target.https {
        notes.push(unchecked_certificate(tool));
    }
    let mut d = start(tool, target, command_line, load);
    d.threads = Some(threads);
    d.timeout = Some(timeout.map(Val::given).unwrap_or(Val::default(Dur::from_secs(2))));
    headers(tool, &mut d, p, "header")?;
    if p.has("latency") {
        d.note("`--latency` is not needed: loadgate always reports the latency distribution");
    }
    if let Some(g) = p.last("u_latency").or(p.last("batch_latency")) {
        d.note(format!(
            "`{}` is not needed: loadgate measures latency from each request's intended send time",
            g.written
        ));
    }
    for n in notes {
        d.note(n);
    }
    Ok(finish(d))
}

/// The note of a tool that never checks an https server's certificate (wrk, wrk2, ab, h2load, hey), where loadgate
/// does.
fn unchecked_certificate(tool: Tool) -> String {
    format!(
        "{tool} does not check the server's certificate; loadgate does: for a self-signed test server add \
         `tls: {{ insecure: true }}` (or its CA as `tls.ca`) to `target`"
    )
}

// ---------------------------------------------------------------------------------------------------------
// ab

const AB: &[Opt] = &[
    value("n", Some('n'), &[]),
    value("c", Some('c'), &[]),
    value("t", Some('t'), &[]),
    value("s", Some('s'), &[]),
    value("b", Some('b'), &[]),
    value("T", Some('T'), &[]),
    value("p", Some('p'), &[]),
    value("u", Some('u'), &[]),
    value("v", Some('v'), &[]),
    flag("l", Some('l'), &[]),
    flag("r", Some('r'), &[]),
    flag("k", Some('k'), &[]),
    flag("V", Some('V'), &[]),
    flag("h", Some('h'), &[]),
    flag("w", Some('w'), &[]),
    flag("i", Some('i'), &[]),
    value("x", Some('x'), &[]),
    value("y", Some('y'), &[]),
    value("z", Some('z'), &[]),
    value("C", Some('C'), &[]),
    value("H", Some('H'), &[]),
    value("P", Some('P'), &[]),
    value("A", Some('A'), &[]),
    value("g", Some('g'), &[]),
    value("X", Some('X'), &[]),
    flag("d", Some('d'), &[]),
    value("e", Some('e'), &[]),
    flag("S", Some('S'), &[]),
    flag("q", Some('q'), &[]),
    value("B", Some('B'), &[]),
    value("m", Some('m'), &[]),
    value("Z", Some('Z'), &[]),
    value("f", Some('f'), &[]),
    value("E", Some('E'), &[]),
    flag("I", Some('I'), &[]),
];

fn ab(args: &[String], command_line: &str) -> Result<Draft, ImportError> {
    let tool = Tool::Ab;
    let parsed = args::parse(tool, AB, Style::Getopt, args)?;
    let p = &parsed;
    no_benchmark(tool, p, &[("h", "it prints the usage"), ("V", "it prints the version")])?;
    let requests = number(tool, p, "n", values::integer, (1, MAX_REQUESTS), "a number of requests such as `10000`")?;
    let concurrency = number(tool, p, "c", values::integer, (1, 20_000), "a concurrency from 1 to 20000 (ab's limit)")?;
    let time_limit = duration(tool, p, "t", secs_int, false, "a time limit in whole seconds, such as `30`")?;
    let timeout = duration(tool, p, "s", secs_int, false, "a timeout in whole seconds, such as `30`")?;
    let connections = concurrency.map(Val::given).unwrap_or(Val::default(1));
    let requests = requests.map(Val::given).unwrap_or(Val::default(1));
    if time_limit.is_none() && requests.v < connections.v {
        return Err(ImportError::Conflict {
            tool,
            flags: "`-n` and `-c`".into(),
            problem: format!(
                "ab refuses a concurrency ({}) above the number of requests ({})",
                connections.v, requests.v
            ),
        });
    }
    let target = match p.positionals.as_slice() {
        [] => return Err(ImportError::MissingUrl { tool }),
        [u] => url(tool, Some(u))?,
        [_, extra, ..] => return Err(ImportError::ExtraArgument { tool, argument: extra.clone() }),
    };
    let keep_alive = p.has("k");
    let stop = match time_limit {
        Some(t) => Stop::Duration(Val::given(t)),
        None => Stop::Requests(requests),
    };
    let load = Load::Closed { connections, stop, pipeline: 1, keep_alive, batch_reads: false };
    let https = target.https;
    let mut d = start(tool, target, command_line, load);
    d.timeout = Some(timeout.map(Val::given).unwrap_or(Val::default(Dur::from_secs(30))));
    if https {
        d.note(unchecked_certificate(tool));
    }
    if time_limit.is_some() {
        d.note(format!(
            "ab `-t` also stops after {} requests; loadgate runs for the whole time limit",
            if p.has("n") { requests.v } else { 50_000 }
        ));
    }
    d.note(if keep_alive {
        "ab sends HTTP/1.0 with `Connection: Keep-Alive`; loadgate sends HTTP/1.1 and keeps connections open"
    } else {
        "ab sends HTTP/1.0 and opens a connection per request; loadgate sends HTTP/1.1 with `keep_alive: false`"
    });
    // The method and body options, in the order given: the last one wins, as in ab.
    let mut body_file = None;
    for g in &p.opts {
        match g.key {
            "i" => d.method = "HEAD".into(),
            "m" => method(tool, &mut d, g)?,
            "p" | "u" => {
                d.method = if g.key == "p" { "POST" } else { "PUT" }.into();
                body_file = Some(g);
            }
            _ => {}
        }
    }
    if let Some(g) = body_file {
        d.note(format!("ab `{} {}` sends that file as the body: paste its contents into `body:`", g.written, text(g)));
        if !p.has("T") {
            d.set_header("Content-Type", "text/plain");
        }
    }
    header_value(tool, &mut d, p, "T", "Content-Type")?;
    let cookies: Vec<&str> = p.all("C").map(text).collect();
    if let Some(g) = p.last("C") {
        if cookies.iter().any(|c| c.contains(['\r', '\n', '\0'])) {
            return Err(bad(tool, g, "a cookie such as `session=1234`"));
        }
        d.set_header("Cookie", &cookies.join("; "));
    }
    if let Some(g) = p.last("A") {
        if !text(g).contains(':') {
            return Err(bad(tool, g, "`user:password`"));
        }
        d.set_basic_auth(text(g));
    }
    headers(tool, &mut d, p, "H")?;
    for (key, what) in [
        ("X", "a proxy"),
        ("P", "proxy credentials"),
        ("b", "the TCP window size"),
        ("B", "the local address"),
        ("Z", "the TLS cipher suite"),
        ("f", "the TLS protocol"),
        ("E", "the client certificate"),
    ] {
        if let Some(g) = p.last(key) {
            d.note(format!("ab `{} {}` ({what}) is not carried over", g.written, text(g)));
        }
    }
    Ok(finish(d))
}

// ---------------------------------------------------------------------------------------------------------
// hey

const HEY: &[Opt] = &[
    value("m", None, &["m"]),
    value("H", None, &["H"]),
    value("h", None, &["h"]),
    value("d", None, &["d"]),
    value("D", None, &["D"]),
    value("A", None, &["A"]),
    value("T", None, &["T"]),
    value("a", None, &["a"]),
    value("host", None, &["host"]),
    value("U", None, &["U"]),
    value("o", None, &["o"]),
    value("c", None, &["c"]),
    value("n", None, &["n"]),
    value("q", None, &["q"]),
    value("t", None, &["t"]),
    value("z", None, &["z"]),
    flag("h2", None, &["h2"]),
    value("cpus", None, &["cpus"]),
    flag("disable-compression", None, &["disable-compression"]),
    flag("disable-keepalive", None, &["disable-keepalive"]),
    flag("disable-redirects", None, &["disable-redirects"]),
    value("x", None, &["x"]),
    flag("help", None, &["help"]),
];

fn hey(args: &[String], command_line: &str) -> Result<Draft, ImportError> {
    let tool = Tool::Hey;
    let parsed = args::parse(tool, HEY, Style::GoFlag, args)?;
    let p = &parsed;
    no_benchmark(tool, p, &[("help", "it prints the usage")])?;
    if let Some(g) = p.last("h") {
        return Err(bad(tool, g, "nothing: hey refuses the deprecated `-h`; write headers with `-H`"));
    }
    let requests = number(tool, p, "n", values::integer, (1, MAX_REQUESTS), "a number of requests such as `1000`")?;
    let workers = number(tool, p, "c", values::integer, (1, MAX_CONNECTIONS), "a number of workers from 1 to 1000000")?;
    let dur = duration(tool, p, "z", values::go_duration, true, "a Go duration such as `10s`, `3m` or `1h30m`")?
        .filter(|d| d.0 > 0);
    let timeout =
        number(tool, p, "t", values::integer, (0, 100 * 365 * 24 * 3600), "a timeout in whole seconds (0 for none)")?;
    let requests = requests.map(Val::given).unwrap_or(Val::default(200));
    let connections = workers.map(Val::given).unwrap_or(Val::default(50));
    if dur.is_none() && requests.v < connections.v {
        return Err(ImportError::Conflict {
            tool,
            flags: "`-n` and `-c`".into(),
            problem: format!("hey refuses fewer requests ({}) than workers ({})", requests.v, connections.v),
        });
    }
    let target = match p.positionals.as_slice() {
        [] => return Err(ImportError::MissingUrl { tool }),
        [u, ..] => url(tool, Some(u))?,
    };
    let keep_alive = !p.has("disable-keepalive");
    let mut notes = Vec::new();
    let load = match p.last("q") {
        Some(g) => {
            let q = values::decimal(text(g))
                .ok_or_else(|| bad(tool, g, "a rate per worker in requests per second, such as `50` or `2.5`"))?;
            if q == 0.0 {
                closed(connections, dur, requests, keep_alive)
            } else {
                let millis = rate_millis(tool, g, q * connections.v as f64)?;
                notes.push(format!(
                    "hey's `-q {q}` limits each of the {} workers: {} in total",
                    connections.v,
                    crate::draft::rate_text(millis)
                ));
                let duration = match dur {
                    Some(z) => Val::given(z),
                    None => {
                        let d = duration_for(requests.v, millis);
                        notes.push(format!(
                            "hey stops after {} requests; at {} that takes {d}, which is the open load's duration",
                            requests.v,
                            crate::draft::rate_text(millis)
                        ));
                        Val::given(d)
                    }
                };
                if !keep_alive {
                    notes.push(
                        "`-disable-keepalive` is not carried over: loadgate's open load keeps connections open".into(),
                    );
                }
                Load::Open { rate_millis: millis, duration, connections }
            }
        }
        None => closed(connections, dur, requests, keep_alive),
    };
    if target.https {
        // hey's transport sets `InsecureSkipVerify: true` (requester/requester.go).
        notes.push(unchecked_certificate(tool));
    }
    let mut d = start(tool, target, command_line, load);
    d.timeout = match timeout {
        Some(0) => {
            d.note("`-t 0` (no timeout) cannot be written: loadgate's default timeout applies");
            None
        }
        Some(t) => seconds(t).map(Val::given),
        None => Some(Val::default(Dur::from_secs(20))),
    };
    d.threads = threads(tool, p, "cpus", values::integer)?.map(Val::given);
    if let Some(g) = p.last("m") {
        method(tool, &mut d, g)?;
    }
    if let Some(g) = p.last("d") {
        d.body = Some(text(g).to_owned());
    }
    if let Some(g) = p.last("D") {
        d.note(format!("hey `{} {}` sends that file as the body: paste its contents into `body:`", g.written, text(g)));
    }
    if p.has("T") || p.has("d") || p.has("D") {
        d.set_header("Content-Type", p.last("T").map(text).unwrap_or("text/html").trim());
    }
    headers(tool, &mut d, p, "H")?;
    header_value(tool, &mut d, p, "A", "Accept")?;
    if let Some(g) = p.last("a") {
        if !text(g).contains(':') {
            return Err(bad(tool, g, "`user:password`"));
        }
        d.set_basic_auth(text(g));
    }
    header_value(tool, &mut d, p, "host", "Host")?;
    if let Some(g) = p.last("U") {
        let ua = format!("{} hey/0.0.1", text(g).trim());
        if ua.contains(['\r', '\n', '\0']) {
            return Err(bad(tool, g, "a user agent on one line"));
        }
        d.set_header("User-Agent", &ua);
    }
    if p.has("h2") {
        d.note("`-h2` is not carried over: loadgate speaks HTTP/1.1");
    }
    if let Some(g) = p.last("x") {
        d.note(format!("the proxy `{} {}` is not carried over", g.written, text(g)));
    }
    for n in notes {
        d.note(n);
    }
    Ok(finish(d))
}

fn closed(connections: Val<u64>, dur: Option<Dur>, requests: Val<u64>, keep_alive: bool) -> Load {
    let stop = match dur {
        Some(z) => Stop::Duration(Val::given(z)),
        None => Stop::Requests(requests),
    };
    Load::Closed { connections, stop, pipeline: 1, keep_alive, batch_reads: false }
}

// ---------------------------------------------------------------------------------------------------------
// oha

const OHA: &[Opt] = &[
    value("n", Some('n'), &[]),
    value("c", Some('c'), &[]),
    value("p", Some('p'), &[]),
    value("z", Some('z'), &[]),
    flag("w", Some('w'), &["wait-ongoing-requests-after-deadline"]),
    value("q", Some('q'), &[]),
    value("burst-delay", None, &["burst-delay"]),
    value("burst-rate", None, &["burst-rate"]),
    flag("rand-regex-url", None, &["rand-regex-url"]),
    flag("urls-from-file", None, &["urls-from-file"]),
    value("max-repeat", None, &["max-repeat"]),
    value("dump-urls", None, &["dump-urls"]),
    flag("latency-correction", None, &["latency-correction"]),
    flag("no-tui", None, &["no-tui"]),
    flag("json", Some('j'), &["json"]),
    value("fps", None, &["fps"]),
    value("m", Some('m'), &["method"]),
    value("H", Some('H'), &[]),
    value("proxy-header", None, &["proxy-header"]),
    value("t", Some('t'), &[]),
    value("connect-timeout", None, &["connect-timeout"]),
    value("A", Some('A'), &[]),
    value("d", Some('d'), &[]),
    value("D", Some('D'), &[]),
    value("Z", Some('Z'), &[]),
    value("F", Some('F'), &["form"]),
    value("T", Some('T'), &[]),
    value("a", Some('a'), &[]),
    value("aws-session", None, &["aws-session"]),
    value("aws-sigv4", None, &["aws-sigv4"]),
    value("x", Some('x'), &[]),
    value("proxy-http-version", None, &["proxy-http-version"]),
    flag("proxy-http2", None, &["proxy-http2"]),
    value("http-version", None, &["http-version"]),
    flag("http2", None, &["http2"]),
    value("host", None, &["host"]),
    flag("disable-compression", None, &["disable-compression"]),
    value("r", Some('r'), &["redirect"]),
    flag("disable-keepalive", None, &["disable-keepalive"]),
    flag("no-pre-lookup", None, &["no-pre-lookup"]),
    flag("ipv6", None, &["ipv6"]),
    flag("ipv4", None, &["ipv4"]),
    value("cacert", None, &["cacert"]),
    value("cert", None, &["cert"]),
    value("key", None, &["key"]),
    flag("insecure", None, &["insecure"]),
    value("connect-to", None, &["connect-to"]),
    flag("no-color", None, &["no-color", "disable-color"]),
    value("unix-socket", None, &["unix-socket"]),
    value("vsock-addr", None, &["vsock-addr"]),
    flag("stats-success-breakdown", None, &["stats-success-breakdown"]),
    value("db-url", None, &["db-url"]),
    flag("debug", None, &["debug"]),
    value("o", Some('o'), &["output"]),
    value("output-format", None, &["output-format"]),
    value("u", Some('u'), &["time-unit"]),
    flag("help", Some('h'), &["help"]),
    flag("version", Some('V'), &["version"]),
];

fn oha(args: &[String], command_line: &str) -> Result<Draft, ImportError> {
    let tool = Tool::Oha;
    let parsed = args::parse(tool, OHA, Style::Clap, args)?;
    let p = &parsed;
    no_benchmark(
        tool,
        p,
        &[
            ("help", "it prints the usage"),
            ("version", "it prints the version"),
            ("dump-urls", "it prints generated URLs"),
            ("debug", "it sends one request and prints it"),
        ],
    )?;
    if let Some(g) = p.last("urls-from-file") {
        return Err(ImportError::NoBenchmark {
            tool,
            flag: g.written.clone(),
            what: "loadgate cannot read the file of URLs it names; import with one of its URLs instead".into(),
        });
    }
    let requests =
        number(tool, p, "n", values::oha_count, (1, MAX_REQUESTS), "a number of requests such as `1000` or `10k`")?;
    let conns =
        number(tool, p, "c", values::integer, (1, MAX_CONNECTIONS), "a number of connections from 1 to 1000000")?;
    let dur = duration(tool, p, "z", values::humantime, false, "a duration such as `10s`, `3m` or `1h 30m`")?;
    let timeout = duration(tool, p, "t", values::humantime, false, "a timeout such as `10s` or `500ms`")?;
    if let (Some(n), Some(z)) = (p.last("n"), p.last("z")) {
        return Err(ImportError::Conflict {
            tool,
            flags: format!("`{}` and `{}`", n.written, z.written),
            problem: "oha stops either after a number of requests or after a duration, not both".into(),
        });
    }
    let requests = requests.map(Val::given).unwrap_or(Val::default(200));
    let connections = conns.map(Val::given).unwrap_or(Val::default(50));
    let target = match p.positionals.as_slice() {
        [] => return Err(ImportError::MissingUrl { tool }),
        [u] => url(tool, Some(u))?,
        [_, extra, ..] => return Err(ImportError::ExtraArgument { tool, argument: extra.clone() }),
    };
    let keep_alive = !p.has("disable-keepalive");
    let mut notes = Vec::new();
    let load = match p.last("q") {
        Some(g) => {
            let q = values::decimal(text(g))
                .ok_or_else(|| bad(tool, g, "a rate in requests per second, such as `1000` or `2.5`"))?;
            let millis = rate_millis(tool, g, q)?;
            let duration = match dur {
                Some(z) => Val::given(z),
                None => {
                    let d = duration_for(requests.v, millis);
                    notes.push(format!(
                        "oha stops after {} requests; at {} that takes {d}, which is the open load's duration",
                        requests.v,
                        crate::draft::rate_text(millis)
                    ));
                    Val::given(d)
                }
            };
            if !keep_alive {
                notes.push(
                    "`--disable-keepalive` is not carried over: loadgate's open load keeps connections open".into(),
                );
            }
            Load::Open { rate_millis: millis, duration, connections }
        }
        None => closed(connections, dur, requests, keep_alive),
    };
    let mut d = start(tool, target, command_line, load);
    d.timeout = timeout.map(Val::given);
    if timeout.is_none() {
        d.note("oha waits for answers without a timeout by default; loadgate's default timeout applies");
    }
    if let Some(g) = p.last("m") {
        method(tool, &mut d, g)?;
    }
    headers(tool, &mut d, p, "H")?;
    header_value(tool, &mut d, p, "A", "Accept")?;
    header_value(tool, &mut d, p, "T", "Content-Type")?;
    if let Some(g) = p.last("a") {
        if !text(g).contains(':') {
            return Err(bad(tool, g, "`user:password`"));
        }
        if p.has("aws-sigv4") {
            d.note("AWS SigV4 signing (`--aws-sigv4`) is not carried over");
        } else {
            d.set_basic_auth(text(g));
        }
    }
    header_value(tool, &mut d, p, "host", "Host")?;
    if let Some(g) = p.last("d") {
        d.body = Some(text(g).to_owned());
    }
    for key in ["D", "Z"] {
        if let Some(g) = p.last(key) {
            d.note(format!(
                "oha `{} {}` reads the body from that file: paste its contents into `body:`",
                g.written,
                text(g)
            ));
        }
    }
    if let Some(g) = p.last("F") {
        d.note(format!("the multipart form `{} {}` is not carried over: write it into `body:`", g.written, text(g)));
    }
    let http_version = p.last("http-version").map(|g| text(g).trim().to_owned());
    if p.has("http2") || http_version.as_deref().is_some_and(|v| v == "2" || v == "2.0") {
        d.http2 = true;
        if let Some(g) = p.last("p") {
            match text(g).trim().parse::<u32>() {
                Ok(n) if (1..=65_536).contains(&n) => d.streams = n,
                _ => return Err(bad(tool, g, "a number of HTTP/2 streams per connection from 1 to 65536")),
            }
        }
    } else if http_version.as_deref().is_some_and(|v| v != "1.1") {
        d.note("the HTTP version is not carried over: loadgate speaks HTTP/1.1 and HTTP/2");
    } else if let Some(g) = p.last("p").filter(|g| text(g).trim() != "1") {
        d.note(format!("`{} {}` (HTTP/2 streams per connection) applies with `--http2` only", g.written, text(g)));
    }
    if p.has("rand-regex-url") {
        d.note("`--rand-regex-url` is not carried over: the URL is requested literally, not as a regular expression");
    }
    if p.has("burst-delay") || p.has("burst-rate") {
        d.note("bursts (`--burst-delay`, `--burst-rate`) are not carried over");
    }
    if p.has("insecure") {
        if d.url.https {
            d.insecure = true;
        } else {
            d.note("`--insecure` is not carried over: the URL is plain http");
        }
    }
    for (key, what) in [
        ("cacert", "a CA file: copy it next to the spec and set `target.tls.ca`"),
        ("cert", "a client certificate: copy it next to the spec and set `target.tls.client_cert`"),
        ("key", "a client key: copy it next to the spec and set `target.tls.client_key`"),
        ("connect-timeout", "the connect timeout"),
        ("x", "a proxy"),
        ("connect-to", "a DNS override"),
        ("unix-socket", "a Unix socket"),
        ("vsock-addr", "a VSOCK address"),
    ] {
        if let Some(g) = p.last(key) {
            d.note(format!("oha `{} {}` ({what}) is not carried over", g.written, text(g)));
        }
    }
    for n in notes {
        d.note(n);
    }
    Ok(finish(d))
}

// ---------------------------------------------------------------------------------------------------------
// apib

const APIB: &[Opt] = &[
    value("c", Some('c'), &["concurrency"]),
    value("d", Some('d'), &["duration"]),
    value("w", Some('w'), &["warmup"]),
    value("k", Some('k'), &["keep-alive"]),
    value("K", Some('K'), &["think-time"]),
    value("t", Some('t'), &["num-threads"]),
    value("H", Some('H'), &["header"]),
    value("x", Some('x'), &["method"]),
    value("f", Some('f'), &["input-file"]),
    flag("1", Some('1'), &["one"]),
    flag("v", Some('v'), &["verbose"]),
    value("N", Some('N'), &["name"]),
    flag("S", Some('S'), &["csv-output"]),
    flag("T", Some('T'), &["header-line"]),
    flag("h", Some('h'), &["help"]),
];

fn apib(args: &[String], command_line: &str) -> Result<Draft, ImportError> {
    let tool = Tool::Apib;
    let parsed = args::parse(tool, APIB, Style::Getopt, args)?;
    let p = &parsed;
    no_benchmark(tool, p, &[("h", "it prints the usage"), ("T", "it prints the CSV header line")])?;
    let conns = number(tool, p, "c", values::integer, (1, MAX_CONNECTIONS), "a concurrency from 1 to 1000000")?;
    let dur = duration(tool, p, "d", secs_int, false, "a duration in whole seconds, such as `60`")?;
    let warmup = duration(tool, p, "w", secs_int, true, "a warmup in whole seconds, such as `5`")?;
    let keep = match p.last("k") {
        None => None,
        Some(g) => Some(
            text(g)
                .trim()
                .parse::<i64>()
                .map_err(|_| bad(tool, g, "a keep-alive time in seconds (`0` turns keep-alive off, `-1` keeps it)"))?,
        ),
    };
    let connections = conns.map(Val::given).unwrap_or(Val::default(1));
    let target = match p.positionals.as_slice() {
        [] => return Err(ImportError::MissingUrl { tool }),
        [u] => url(tool, Some(u))?,
        [_, extra, ..] => return Err(ImportError::ExtraArgument { tool, argument: extra.clone() }),
    };
    let keep_alive = keep != Some(0);
    let stop = if p.has("1") {
        Stop::Requests(Val::given(1))
    } else {
        Stop::Duration(dur.map(Val::given).unwrap_or(Val::default(Dur::from_secs(60))))
    };
    let connections = if p.has("1") { Val::given(1) } else { connections };
    let load = Load::Closed { connections, stop, pipeline: 1, keep_alive, batch_reads: false };
    let mut d = start(tool, target, command_line, load);
    d.warmup = warmup.filter(|w| w.0 > 0 && !p.has("1"));
    d.threads = threads(tool, p, "t", values::integer)?.map(Val::given);
    if let Some(k) = keep.filter(|k| *k > 0) {
        d.note(format!("apib `-k {k}` reconnects every {k} s; loadgate keeps connections open"));
    }
    if let Some(g) = p.last("f") {
        d.method = "POST".into();
        d.note(format!(
            "apib `{} {}` sends that file as the body: paste its contents into `body:`",
            g.written,
            text(g)
        ));
    }
    if let Some(g) = p.last("x") {
        method(tool, &mut d, g)?;
    }
    headers(tool, &mut d, p, "H")?;
    if let Some(g) = p.last("K") {
        d.note(format!("the think time `{} {}` is not carried over", g.written, text(g)));
    }
    Ok(finish(d))
}

// ---------------------------------------------------------------------------------------------------------
// h2load

const H2LOAD: &[Opt] = &[
    value("n", Some('n'), &["requests"]),
    value("c", Some('c'), &["clients"]),
    value("t", Some('t'), &["threads"]),
    value("i", Some('i'), &["input-file"]),
    value("m", Some('m'), &["max-concurrent-streams"]),
    value("w", Some('w'), &["window-bits"]),
    value("W", Some('W'), &["connection-window-bits"]),
    value("H", Some('H'), &["header"]),
    value("ciphers", None, &["ciphers"]),
    value("tls13-ciphers", None, &["tls13-ciphers"]),
    value("p", Some('p'), &["no-tls-proto"]),
    value("d", Some('d'), &["data"]),
    value("r", Some('r'), &["rate"]),
    value("rate-period", None, &["rate-period"]),
    value("D", Some('D'), &["duration"]),
    value("warm-up-time", None, &["warm-up-time"]),
    value("T", Some('T'), &["connection-active-timeout"]),
    value("N", Some('N'), &["connection-inactivity-timeout"]),
    value("timing-script-file", None, &["timing-script-file"]),
    value("B", Some('B'), &["base-uri"]),
    value("npn-list", None, &["npn-list", "alpn-list"]),
    flag("h1", None, &["h1"]),
    value("header-table-size", None, &["header-table-size"]),
    value("encoder-header-table-size", None, &["encoder-header-table-size"]),
    value("log-file", None, &["log-file"]),
    value("qlog-file-base", None, &["qlog-file-base"]),
    value("connect-to", None, &["connect-to"]),
    value("rps", None, &["rps"]),
    value("groups", None, &["groups"]),
    flag("no-udp-gso", None, &["no-udp-gso"]),
    flag("v", Some('v'), &["verbose"]),
    flag("version", None, &["version"]),
    flag("help", Some('h'), &["help"]),
];

/// h2load's default ALPN list, most preferred first.
const H2LOAD_ALPN: &str = "h2,h2-16,h2-14,http/1.1";

/// Whether h2load speaks HTTP/2 to the URL: over TLS, when its ALPN list offers h2 (the server may still pick
/// HTTP/1.1); over plain http, unless `-p http/1.1` (h2c with prior knowledge by default). `--h1` sets both to
/// HTTP/1.1; the options are read in order, the last one winning, as h2load reads them.
fn h2load_http2(tool: Tool, p: &Parsed, https: bool) -> Result<bool, ImportError> {
    let mut alpn = H2LOAD_ALPN.to_owned();
    let mut cleartext_h2 = true;
    for g in &p.opts {
        match g.key {
            "h1" => {
                alpn = "http/1.1".to_owned();
                cleartext_h2 = false;
            }
            "npn-list" => alpn = text(g).to_owned(),
            "p" => {
                cleartext_h2 = match text(g).trim().to_ascii_lowercase().as_str() {
                    "h2c" => true,
                    "http/1.1" => false,
                    _ => return Err(bad(tool, g, "`h2c` or `http/1.1`")),
                }
            }
            _ => {}
        }
    }
    Ok(if https { alpn.split(',').any(|proto| proto.starts_with("h2")) } else { cleartext_h2 })
}

fn h2load(args: &[String], command_line: &str) -> Result<Draft, ImportError> {
    let tool = Tool::H2load;
    let parsed = args::parse(tool, H2LOAD, Style::Getopt, args)?;
    let p = &parsed;
    no_benchmark(tool, p, &[("help", "it prints the usage"), ("version", "it prints the version")])?;
    for key in ["i", "timing-script-file"] {
        if let Some(g) = p.last(key) {
            return Err(ImportError::NoBenchmark {
                tool,
                flag: g.written.clone(),
                what: "it reads the URIs from a file, which loadgate cannot see; import with one of its URIs instead"
                    .into(),
            });
        }
    }
    let requests = number(tool, p, "n", values::integer, (0, MAX_REQUESTS), "a number of requests such as `10000`")?;
    let clients = number(tool, p, "c", values::integer, (1, MAX_CONNECTIONS), "a number of clients from 1 to 1000000")?;
    let threads = threads(tool, p, "t", values::integer)?;
    let streams = number(tool, p, "m", values::integer, (1, u64::from(u32::MAX)), "a number of streams from 1")?;
    let dur = duration(tool, p, "D", values::h2load_time, false, "a duration such as `10`, `10s`, `500ms` or `1m`")?;
    let warmup =
        duration(tool, p, "warm-up-time", values::h2load_time, true, "a duration such as `5`, `5s` or `500ms`")?;
    let timing = dur.is_some();
    let clients = clients.map(Val::given).unwrap_or(Val::default(1));
    let threads = threads.map(Val::given).unwrap_or(Val::default(1));
    let requests = match (requests, p.last("n")) {
        (Some(0), Some(g)) if !timing => {
            return Err(bad(tool, g, "a number of requests above 0 (or `-D` for a duration)"));
        }
        (Some(n), _) => Val::given(n),
        (None, _) => Val::default(1),
    };
    let conflict = |flags: &str, problem: String| ImportError::Conflict { tool, flags: flags.into(), problem };
    if !timing && requests.v < clients.v {
        return Err(conflict(
            "`-n` and `-c`",
            format!("h2load refuses fewer requests ({}) than clients ({})", requests.v, clients.v),
        ));
    }
    if clients.v < u64::from(threads.v) {
        return Err(conflict(
            "`-c` and `-t`",
            format!("h2load needs at least as many clients ({}) as threads ({})", clients.v, threads.v),
        ));
    }
    if let (Some(r), Some(d)) = (p.last("r"), p.last("D")) {
        return Err(conflict(&format!("`{}` and `{}`", r.written, d.written), "they are mutually exclusive".into()));
    }
    if let (Some(w), None) = (p.last("warm-up-time"), dur) {
        return Err(conflict(
            &format!("`{}` and `-D`", w.written),
            "a warm-up time needs a timing-based run (`-D`)".into(),
        ));
    }
    let mut target = match p.positionals.first() {
        Some(u) => url(tool, Some(u))?,
        None => return Err(ImportError::MissingUrl { tool }),
    };
    let mut notes = Vec::new();
    if let Some(g) = p.last("B") {
        let base = text(g);
        if base.starts_with("unix:") {
            notes.push(format!("the base URI `{} {base}` (a Unix socket) is not carried over", g.written));
        } else {
            let b = values::parse_url(base).map_err(|reason| bad(tool, g, &format!("an http(s) URI ({reason})")))?;
            target = TargetUrl { path: target.path, fragment: target.fragment, ..b };
        }
    }
    if p.positionals.len() > 1 {
        notes.push(format!(
            "h2load takes turns over its {} URIs; only the first ({}) is loaded: write the others into a `mix:`",
            p.positionals.len(),
            target.path
        ));
    }
    let http2 = h2load_http2(tool, p, target.https)?;
    let body_file = p.last("d");
    let streams = streams.unwrap_or(1);
    let pipeline = match p.last("m") {
        _ if http2 || body_file.is_some() => 1,
        Some(g) if streams > MAX_PIPELINE => {
            return Err(bad(tool, g, "a pipeline depth from 1 to 1024 over HTTP/1.1"));
        }
        _ => streams as u32,
    };
    if http2 {
        if let Some(g) = p.last("m").filter(|_| streams > 65_536) {
            return Err(bad(tool, g, "a number of HTTP/2 streams per connection from 1 to 65536"));
        }
    } else if streams > 1 && body_file.is_some() {
        notes.push("with `-d`, h2load pipelines no HTTP/1.1 requests: `-m` does not apply".to_owned());
    }
    if target.https {
        notes.push(unchecked_certificate(tool));
    }
    for key in ["w", "W", "header-table-size", "encoder-header-table-size"] {
        if let Some(g) = p.last(key) {
            notes.push(if http2 {
                format!(
                    "`{} {}` (an HTTP/2 setting) is not carried over: loadgate opens its windows fully and asks for \
                     no response header table",
                    g.written,
                    text(g)
                )
            } else {
                format!("`{} {}` (an HTTP/2 setting) does not apply to HTTP/1.1", g.written, text(g))
            });
        }
    }
    if timing {
        if let Some(g) = p.last("n") {
            notes.push(format!("`{} {}` is ignored with `-D`, as h2load ignores it", g.written, text(g)));
        }
    }
    let load = match p.last("rps") {
        Some(g) => {
            let per_client = values::decimal(text(g))
                .ok_or_else(|| bad(tool, g, "a rate per client in requests per second, such as `100` or `2.5`"))?;
            let millis = rate_millis(tool, g, per_client * clients.v as f64)?;
            notes.push(format!(
                "h2load's `{} {}` paces each of the {} clients: {} in total",
                g.written,
                text(g),
                clients.v,
                crate::draft::rate_text(millis)
            ));
            if pipeline > 1 {
                notes.push(format!(
                    "`-m {pipeline}` (HTTP/1.1 pipelining) is dropped: loadgate's open load sends one request per arrival"
                ));
            }
            let duration = match dur {
                Some(d) => Val::given(d),
                None => {
                    let d = duration_for(requests.v, millis);
                    notes.push(format!(
                        "h2load stops after {} requests; at {} that takes {d}, which is the open load's duration",
                        requests.v,
                        crate::draft::rate_text(millis)
                    ));
                    Val::given(d)
                }
            };
            Load::Open { rate_millis: millis, duration, connections: clients }
        }
        None => {
            let stop = match dur {
                Some(d) => Stop::Duration(Val::given(d)),
                None => Stop::Requests(requests),
            };
            Load::Closed { connections: clients, stop, pipeline, keep_alive: true, batch_reads: false }
        }
    };
    let mut d = start(tool, target, command_line, load);
    d.http2 = http2;
    d.streams = if http2 { u32::try_from(streams).unwrap_or(1) } else { 1 };
    d.threads = Some(threads);
    d.warmup = warmup.filter(|w| w.0 > 0);
    // The protocol and the load first: they change what the numbers mean.
    for n in notes {
        d.note(n);
    }
    d.note("h2load waits for answers without a timeout; loadgate's default timeout applies");
    if let Some(g) = body_file {
        d.method = "POST".into();
        d.note(format!("h2load `{} {}` posts that file: paste its contents into `body:`", g.written, text(g)));
    }
    for g in p.all("H") {
        let h = text(g);
        let Some(pseudo) = h.strip_prefix(':') else {
            let (name, value) =
                values::header(h).ok_or_else(|| bad(tool, g, "a header such as `Accept: text/plain`"))?;
            d.set_header(&name, &value);
            continue;
        };
        let (name, value) = pseudo
            .split_once(':')
            .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim()))
            .filter(|(n, v)| !n.is_empty() && !v.is_empty() && !v.contains(['\r', '\n', '\0']))
            .ok_or_else(|| bad(tool, g, "a header such as `Accept: text/plain` or `:authority: example.org`"))?;
        match name.as_str() {
            "authority" | "host" => d.set_header("Host", value),
            "method" => method(tool, &mut d, &Given { value: Some(value.to_owned()), ..g.clone() })?,
            "scheme" => d.note(format!("the pseudo-header `:scheme: {value}` is not carried over")),
            _ => return Err(bad(tool, g, "`:authority`, `:host`, `:method` or `:scheme`, or a regular header")),
        }
    }
    for (key, what) in [
        ("r", "connections opened at a fixed rate; loadgate opens its connections at the start"),
        ("rate-period", "the period of `-r`"),
        ("T", "the connection active timeout"),
        ("N", "the connection inactivity timeout"),
        ("ciphers", "the TLS 1.2 cipher suites; loadgate uses rustls's"),
        ("tls13-ciphers", "the TLS 1.3 cipher suites; loadgate uses rustls's"),
        ("groups", "the TLS key exchange groups; loadgate uses rustls's"),
        ("connect-to", "another address to connect to"),
        ("log-file", "a per-request log; results.json keeps the histograms"),
        ("qlog-file-base", "QUIC logs"),
    ] {
        if let Some(g) = p.last(key) {
            d.note(format!("h2load `{} {}` ({what}) is not carried over", g.written, text(g)));
        }
    }
    Ok(finish(d))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_duration() {
        assert_eq!(duration_for(1000, 100_000), Dur::from_secs(10));
        assert_eq!(duration_for(1, 3_000), Dur(334_000_000));
    }
}
