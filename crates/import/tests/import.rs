//! Every import must be a spec loadgate validates, and must mean what the command line meant.

use loadgate_import::{import, ImportError, Imported, Tool};
use loadgate_spec::{load_str, units, Load, LoadOptions, Spec, Stop, Target};

const SEEDS: &str = include_str!("fixtures/seed-command-lines.txt");

/// A command line and the checks its spec must pass.
type Case = (&'static str, fn(&Spec, &Imported));

fn lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#'))
}

/// The value the environment gives a credential an import reads from it (`{{ env.LOADGATE_AUTHORIZATION }}`).
const CREDENTIAL: &str = "credential-from-the-environment";

fn validate(line: &str, imported: &Imported) -> Spec {
    let mut opts = LoadOptions::default();
    for header in ["Authorization", "Cookie", "Proxy-Authorization", "X-Api-Key"] {
        opts.env.insert(loadgate_import::credential_env_name(header), CREDENTIAL.to_owned());
    }
    match load_str("imported.yaml", &imported.yaml, &opts) {
        Ok(spec) => spec,
        Err(e) => panic!("the import of\n  {line}\ndoes not validate:\n{e:?}\n{}", imported.yaml),
    }
}

/// The value of a flag in a command line, in either form (`-c 100`, `-c100`), after the tool name.
fn flag(line: &str, name: &str) -> Option<String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let tool = words.iter().position(|w| ["wrk", "wrk2", "ab", "apib", "hey", "oha"].contains(w))?;
    let words = &words[tool + 1..];
    for (i, w) in words.iter().enumerate() {
        if *w == name {
            return words.get(i + 1).map(|s| s.to_string());
        }
        if let Some(rest) = w.strip_prefix(name) {
            if name.len() == 2 && !rest.is_empty() && !rest.starts_with('-') {
                return Some(rest.to_owned());
            }
        }
    }
    None
}

fn url_path(line: &str) -> String {
    let url = line.split_whitespace().find(|w| w.starts_with("http://")).unwrap();
    let after = &url["http://".len()..];
    match after.find('/') {
        Some(i) => after[i..].to_owned(),
        None => "/".to_owned(),
    }
}

fn seconds(text: &str) -> units::Duration {
    let t = if text.bytes().all(|b| b.is_ascii_digit()) { format!("{text}s") } else { text.to_owned() };
    t.parse().unwrap()
}

fn single_cell(spec: &Spec) -> &loadgate_spec::Cell {
    let main = spec.scenarios.iter().find(|s| s.name == "main").expect("a `main` scenario");
    assert_eq!(main.cells.len(), 1);
    &main.cells[0]
}

#[test]
fn every_seed_command_line_imports_into_a_spec_that_validates_and_means_the_same() {
    let mut count = 0;
    for line in lines(SEEDS) {
        count += 1;
        let imported = import(line).unwrap_or_else(|e| panic!("{line}: {e}"));
        let spec = validate(line, &imported);
        assert!(spec.warnings.is_empty(), "{line}: {:?}", spec.warnings);
        let cell = single_cell(&spec);
        assert_eq!(cell.request.path, url_path(line), "{line}");
        assert_eq!(cell.request.method, "GET", "{line}");
        assert_eq!(cell.request.headers.len(), line.matches(" -H ").count(), "{line}");
        assert_eq!(cell.slos.len(), 1, "{line}");
        match &spec.target {
            Target::Url { base_url } => assert!(line.contains(&base_url.url), "{line}: {}", base_url.url),
            other => panic!("{line}: {other:?}"),
        }

        let connections: u64 = flag(line, "-c").unwrap().parse().unwrap();
        let (conns, pipeline, keep_alive, stop, rate) = match &cell.load {
            Load::Closed { connections, pipeline, keep_alive, stop, .. } => {
                (*connections, *pipeline, *keep_alive, Some(*stop), None)
            }
            Load::Open { connections, rate, duration, .. } => {
                (*connections, 1, true, Some(Stop::Duration(*duration)), Some(*rate))
            }
            other => panic!("{line}: {other:?}"),
        };
        assert_eq!(conns, connections, "{line}");

        match imported.tool {
            Tool::Wrk | Tool::Wrk2 => {
                assert_eq!(spec.hardware.threads, Some(flag(line, "-t").unwrap().parse().unwrap()), "{line}");
                assert_eq!(stop, Some(Stop::Duration(seconds(&flag(line, "-d").unwrap()))), "{line}");
                let timeout = flag(line, "--timeout").map(|t| seconds(&t)).unwrap_or(units::Duration::from_secs(2));
                assert_eq!(cell.timeout, timeout, "{line}");
                let depth = line.split(" -- ").nth(1).map(|d| d.trim().parse().unwrap()).unwrap_or(1);
                assert_eq!(pipeline, depth, "{line}");
                // wrk records one latency per pipelined batch: the import reads batches whole as it does.
                if let Load::Closed { pipeline_reads, .. } = &cell.load {
                    let whole = *pipeline_reads == loadgate_spec::PipelineReads::Batch;
                    assert_eq!(whole, depth > 1, "{line}");
                }
                let expected_rate = flag(line, "-R").map(|r| units::Rate::from_per_sec(r.parse().unwrap()));
                assert_eq!(rate, expected_rate, "{line}");
                assert_eq!(imported.tool == Tool::Wrk2, expected_rate.is_some(), "{line}");
                assert!(keep_alive);
            }
            Tool::Ab => {
                assert_eq!(stop, Some(Stop::Requests(flag(line, "-n").unwrap().parse().unwrap())), "{line}");
                assert_eq!(keep_alive, line.contains(" -k "), "{line}");
                assert_eq!(cell.timeout, units::Duration::from_secs(30), "{line}");
                assert_eq!(spec.hardware.threads, None);
            }
            Tool::Apib => {
                assert_eq!(stop, Some(Stop::Duration(seconds(&flag(line, "-d").unwrap()))), "{line}");
                let warmup = spec.scenarios.iter().find(|s| s.name == "warmup").expect("a warmup scenario");
                assert!(!warmup.gate);
                assert!(
                    matches!(warmup.cells[0].load, Load::Closed { stop: Stop::Duration(d), .. } if d == seconds("5"))
                );
                assert_eq!(spec.scenarios.last().map(|s| s.name.as_str()), Some("main"));
            }
            other => panic!("{line}: no {other} line in the seeds"),
        }

        match line.split_once("taskset -c ") {
            Some((_, rest)) => {
                let list = rest.split_whitespace().next().unwrap();
                assert_eq!(spec.hardware.generator_cpus.as_ref().map(|c| c.to_string()).as_deref(), Some(list));
                assert_eq!(spec.hardware.on_mismatch, loadgate_spec::OnMismatch::Warn);
            }
            None => assert_eq!(spec.hardware.generator_cpus, None, "{line}"),
        }
        assert!(imported.yaml.starts_with(
            "# yaml-language-server: $schema=https://loadgate.dev/schemas/loadgate.schema.json\n# imported from: "
        ));
        for note in &imported.notes {
            assert!(imported.yaml.contains(&format!("#   - {note}\n")), "{line}: note `{note}` is not in the YAML");
        }
    }
    assert!(count >= 60, "only {count} seed lines");
}

#[test]
fn seed_specifics_are_noted() {
    let tfb = lines(SEEDS).find(|l| l.contains("pipeline.lua")).unwrap();
    let imported = import(tfb).unwrap();
    assert!(imported.notes.iter().any(|n| n.contains("--latency")), "{:?}", imported.notes);

    let put = lines(SEEDS).find(|l| l.contains("put.lua")).unwrap();
    let imported = import(put).unwrap();
    assert!(imported.notes.iter().any(|n| n.contains("`put.lua`") && n.contains("not run")), "{:?}", imported.notes);
}

/// Examples of the tools the seeds do not use, with what each must mean.
#[test]
fn hey_and_oha_examples() {
    let cases: &[Case] = &[
        ("hey -n 1000 -c 20 http://127.0.0.1:8080/hello", |s, i| {
            assert_eq!(i.tool, Tool::Hey);
            let c = single_cell(s);
            assert!(matches!(c.load, Load::Closed { connections: 20, stop: Stop::Requests(1000), keep_alive: true, .. }));
            assert_eq!(c.timeout, units::Duration::from_secs(20));
        }),
        ("hey -z 30s -c 50 -q 10 -m PUT -T application/json -d '{\"k\": 1}' http://127.0.0.1:8080/put", |s, i| {
            let c = single_cell(s);
            match c.load {
                Load::Open { rate, duration, connections, .. } => {
                    assert_eq!(rate, units::Rate::from_per_sec(500), "-q is per worker: 10 x 50");
                    assert_eq!(duration, units::Duration::from_secs(30));
                    assert_eq!(connections, 50);
                }
                ref other => panic!("{other:?}"),
            }
            assert_eq!(c.request.method, "PUT");
            assert_eq!(c.request.body.as_deref(), Some("{\"k\": 1}"));
            assert!(c.request.headers.contains(&("Content-Type".into(), "application/json".into())));
            assert!(i.notes.iter().any(|n| n.contains("per") || n.contains("each of the 50 workers")));
        }),
        ("hey -n 200 -c 10 -q 2 -disable-keepalive -H 'X-A: 1' -H 'X-B: 2' -cpus 4 -t 0 http://h:1/x?y=1", |s, i| {
            let c = single_cell(s);
            assert!(matches!(c.load, Load::Open { connections: 10, .. }));
            assert_eq!(c.load.duration(), Some(units::Duration::from_secs(10)), "200 requests at 20/s");
            assert_eq!(s.hardware.threads, Some(4));
            assert_eq!(c.request.headers.len(), 2);
            assert_eq!(c.request.path, "/x?y=1");
            assert!(i.notes.iter().any(|n| n.contains("-t 0")));
            assert!(i.notes.iter().any(|n| n.contains("-disable-keepalive")));
        }),
        ("hey -c 8 -n 80 -disable-keepalive -a user:pass -host example.org http://127.0.0.1:9000/", |s, i| {
            let c = single_cell(s);
            assert!(matches!(c.load, Load::Closed { keep_alive: false, stop: Stop::Requests(80), .. }));
            assert!(c.request.headers.contains(&("Authorization".into(), CREDENTIAL.into())));
            assert!(i.credentials.contains(&("Authorization".into(), "Basic dXNlcjpwYXNz".into())));
            assert!(c.request.headers.contains(&("Host".into(), "example.org".into())));
        }),
        ("oha -z 10s -c 100 --no-tui http://127.0.0.1:3000/", |s, i| {
            assert_eq!(i.tool, Tool::Oha);
            let c = single_cell(s);
            assert!(matches!(c.load, Load::Closed { connections: 100, stop: Stop::Duration(d), .. } if d == units::Duration::from_secs(10)));
            assert!(i.notes.iter().any(|n| n.contains("without a timeout")));
        }),
        ("oha -n 10k -c 64 -q 2000 -t 5s -m POST -d 'a=1' -H 'Content-Type: application/x-www-form-urlencoded' http://127.0.0.1:3000/form", |s, _| {
            let c = single_cell(s);
            match c.load {
                Load::Open { rate, duration, connections, .. } => {
                    assert_eq!(rate, units::Rate::from_per_sec(2000), "oha's -q is the total rate");
                    assert_eq!(duration, units::Duration::from_secs(5), "10000 requests at 2000/s");
                    assert_eq!(connections, 64);
                }
                ref other => panic!("{other:?}"),
            }
            assert_eq!(c.timeout, units::Duration::from_millis(5000));
            assert_eq!(c.request.method, "POST");
            assert_eq!(c.request.body.as_deref(), Some("a=1"));
        }),
        ("oha -c 4 -n 40 --disable-keepalive -D body.json -A application/json --http2 http://[::1]:8080/v1", |s, i| {
            let c = single_cell(s);
            assert!(matches!(c.load, Load::Closed { keep_alive: false, stop: Stop::Requests(40), .. }));
            assert!(c.request.headers.contains(&("Accept".into(), "application/json".into())));
            assert!(i.notes.iter().any(|n| n.contains("body.json")));
            assert!(i.yaml.contains("protocol: http2"), "oha --http2 speaks h2c: {}", i.yaml);
        }),
    ];
    for (line, check) in cases {
        let imported = import(line).unwrap_or_else(|e| panic!("{line}: {e}"));
        let spec = validate(line, &imported);
        check(&spec, &imported);
    }
}

/// h2load: HTTP/2 unless `--h1` (or `-p http/1.1` for http, an ALPN list without h2 for https), imported as
/// `target.protocol: http2`; `-m` is HTTP/1.1 pipelining under `--h1`, and HTTP/2 streams (`streams`) otherwise.
#[test]
fn h2load_examples() {
    fn says_http2(i: &Imported) -> bool {
        i.yaml.contains("  protocol: http2  # h2load speaks HTTP/2 here")
    }
    let cases: &[Case] = &[
        ("h2load -n 100000 -c 100 -t 4 -m 10 https://localhost:8443/", |s, i| {
            assert_eq!(i.tool, Tool::H2load);
            let c = single_cell(s);
            assert!(matches!(
                c.load,
                Load::Closed { connections: 100, stop: Stop::Requests(100_000), pipeline: 1, keep_alive: true, .. }
            ));
            assert_eq!(s.hardware.threads, Some(4));
            assert!(says_http2(i), "{}", i.yaml);
            assert_eq!(c.streams, 10, "`-m 10`: 10 concurrent HTTP/2 streams per connection");
            assert!(i.notes.iter().any(|n| n.contains("does not check the server's certificate")), "{:?}", i.notes);
            assert!(i.yaml.contains("description: Imported from an h2load command line."));
        }),
        ("h2load --h1 -n 1000 -c 10 -m 16 -H 'Accept: text/plain' http://127.0.0.1:8080/plaintext", |s, i| {
            let c = single_cell(s);
            assert!(matches!(c.load, Load::Closed { connections: 10, stop: Stop::Requests(1000), pipeline: 16, .. }));
            assert_eq!(c.request.headers, [("Accept".to_owned(), "text/plain".to_owned())]);
            assert!(!says_http2(i), "{:?}", i.notes);
            assert!(i.yaml.contains("threads: 1  # h2load's default"), "{}", i.yaml);
        }),
        ("h2load -n 20 -c 2 http://h/", |s, i| {
            assert!(matches!(single_cell(s).load, Load::Closed { connections: 2, stop: Stop::Requests(20), .. }));
            assert!(says_http2(i) && i.yaml.contains("h2c with prior knowledge"), "{}", i.yaml);
        }),
        ("h2load -p http/1.1 -n 20 -c 2 -m 4 http://h/", |s, i| {
            assert!(matches!(single_cell(s).load, Load::Closed { pipeline: 4, .. }));
            assert!(!says_http2(i), "{:?}", i.notes);
        }),
        ("h2load --npn-list=http/1.1 -n 20 -c 2 https://h/", |_, i| assert!(!says_http2(i), "{:?}", i.notes)),
        ("h2load --h1 -p h2c -n 20 -c 2 http://h/", |_, i| assert!(says_http2(i), "the later `-p h2c` wins")),
        ("h2load -D 10s --warm-up-time 2 -c 16 --rps 100 https://127.0.0.1:8443/api", |s, i| {
            let c = single_cell(s);
            match c.load {
                Load::Open { rate, duration, connections, .. } => {
                    assert_eq!(rate, units::Rate::from_per_sec(1600), "--rps is per client: 100 x 16");
                    assert_eq!(duration, units::Duration::from_secs(10));
                    assert_eq!(connections, 16);
                }
                ref other => panic!("{other:?}"),
            }
            let warmup = s.scenarios.iter().find(|s| s.name == "warmup").expect("a warmup scenario");
            assert!(!warmup.gate);
            assert_eq!(warmup.cells[0].load.duration(), Some(units::Duration::from_secs(2)));
            assert!(i.notes.iter().any(|n| n.contains("each of the 16 clients: 1600/s in total")), "{:?}", i.notes);
        }),
        ("h2load --h1 -n 600 -c 4 --rps 50 -m 8 http://h/x", |s, i| {
            let c = single_cell(s);
            assert!(matches!(c.load, Load::Open { connections: 4, .. }));
            assert_eq!(c.load.duration(), Some(units::Duration::from_secs(3)), "600 requests at 200/s");
            assert!(i.notes.iter().any(|n| n.contains("`-m 8`") && n.contains("dropped")), "{:?}", i.notes);
        }),
        ("h2load -D 30 -n 5 -c 10 --h1 http://h/", |s, i| {
            let c = single_cell(s);
            assert!(
                matches!(c.load, Load::Closed { connections: 10, stop: Stop::Duration(d), .. } if d == units::Duration::from_secs(30))
            );
            assert!(i.notes.iter().any(|n| n.contains("`-n 5` is ignored with `-D`")), "{:?}", i.notes);
        }),
        (
            "h2load --h1 -n 10 -c 2 -m 4 -d post.json -H ':method: PUT' -H ':authority: example.org' -w 16 http://h/p",
            |s, i| {
                let c = single_cell(s);
                assert_eq!(c.request.method, "PUT", "`:method` overrides the POST of `-d`");
                assert!(c.request.headers.contains(&("Host".into(), "example.org".into())));
                assert!(matches!(c.load, Load::Closed { pipeline: 1, .. }), "`-d` turns HTTP/1.1 pipelining off");
                assert!(i.notes.iter().any(|n| n.contains("post.json")));
                assert!(i.notes.iter().any(|n| n.contains("`-w 16`") && n.contains("does not apply to HTTP/1.1")));
            },
        ),
        (
            "h2load -B https://10.0.0.1:8443 -n 4 -c 2 --header-table-size=8K https://ignored/a https://ignored/b",
            |s, i| {
                match &s.target {
                    Target::Url { base_url } => assert_eq!(base_url.url, "https://10.0.0.1:8443"),
                    other => panic!("{other:?}"),
                }
                assert_eq!(single_cell(s).request.path, "/a");
                assert!(i.notes.iter().any(|n| n.contains("its 2 URIs")), "{:?}", i.notes);
                assert!(i
                    .notes
                    .iter()
                    .any(|n| n.contains("`--header-table-size 8K`") && n.contains("not carried over")));
            },
        ),
        ("h2load http://h/", |s, i| {
            assert!(matches!(single_cell(s).load, Load::Closed { connections: 1, stop: Stop::Requests(1), .. }));
            assert!(i.yaml.contains("connections: 1  # h2load's default"), "{}", i.yaml);
            assert!(i.notes.iter().any(|n| n.contains("without a timeout")));
        }),
    ];
    for (line, check) in cases {
        let imported = import(line).unwrap_or_else(|e| panic!("{line}: {e}"));
        let spec = validate(line, &imported);
        check(&spec, &imported);
    }
}

#[test]
fn more_forms_of_the_seed_tools() {
    let cases: &[Case] = &[
        // wrk's defaults: 2 threads, 10 connections, 10 s, a 2 s timeout.
        ("wrk http://127.0.0.1:8080/", |s, i| {
            let c = single_cell(s);
            assert!(
                matches!(c.load, Load::Closed { connections: 10, stop: Stop::Duration(d), .. } if d == units::Duration::from_secs(10))
            );
            assert_eq!(s.hardware.threads, Some(2));
            assert_eq!(c.timeout, units::Duration::from_secs(2));
            assert!(i.yaml.contains("connections: 10  # wrk's default"));
        }),
        // Long options, `=` values, SI suffixes, options after the URL, hours.
        ("wrk --threads=4 --connections 2k --duration=1h http://h:81/a --timeout 1m", |s, _| {
            let c = single_cell(s);
            assert!(
                matches!(c.load, Load::Closed { connections: 2000, stop: Stop::Duration(d), .. } if d == units::Duration::from_secs(3600))
            );
            assert_eq!(c.timeout, units::Duration::from_secs(60));
        }),
        ("taskset 0xf0 wrk2 -t2 -c4 -d10 -R 1k --u_latency http://h/", |s, i| {
            assert_eq!(s.hardware.generator_cpus.as_ref().map(|c| c.to_string()).as_deref(), Some("4-7"));
            assert!(matches!(single_cell(s).load, Load::Open { rate, .. } if rate == units::Rate::from_per_sec(1000)));
            assert!(i.notes.iter().any(|n| n.contains("mask")));
        }),
        ("ab -k -t 30 -c 10 -s 5 -i -H 'Accept: */*' -C a=1 -C b=2 -A u:p http://h/x", |s, i| {
            let c = single_cell(s);
            assert!(
                matches!(c.load, Load::Closed { keep_alive: true, stop: Stop::Duration(d), .. } if d == units::Duration::from_secs(30))
            );
            assert_eq!(c.timeout, units::Duration::from_secs(5));
            assert_eq!(c.request.method, "HEAD");
            assert!(c.request.headers.contains(&("Cookie".into(), CREDENTIAL.into())));
            assert!(i.credentials.contains(&("Cookie".into(), "a=1; b=2".into())));
            assert!(i.notes.iter().any(|n| n.contains("50000")));
        }),
        ("ab -n 10 -c 2 -p post.json -T application/json http://h/p", |s, i| {
            let c = single_cell(s);
            assert_eq!(c.request.method, "POST");
            assert!(c.request.headers.contains(&("Content-Type".into(), "application/json".into())));
            assert!(i.notes.iter().any(|n| n.contains("post.json")));
        }),
        ("wrk -c 8 -t 2 -H 'Connection: close' -s ./scripts/report.lua http://h/ arg1", |s, i| {
            let c = single_cell(s);
            assert!(matches!(c.load, Load::Closed { keep_alive: false, .. }));
            assert!(c.request.headers.is_empty());
            assert!(i.notes.iter().any(|n| n.contains("report.lua") && n.contains("arg1")));
        }),
        ("wrk -c 8 -t 2 -d 1s -H 'X-T: {{ not a template }}' 'http://h/a b?q={x}'", |s, _| {
            let c = single_cell(s);
            assert_eq!(c.request.headers, [("X-T".to_owned(), "{{ not a template }}".to_owned())]);
            assert_eq!(c.request.path, "/a%20b?q={x}");
        }),
        ("apib -1 -x PUT -f data.bin -H 'K: v' http://h/one", |s, _| {
            let c = single_cell(s);
            assert!(matches!(c.load, Load::Closed { connections: 1, stop: Stop::Requests(1), .. }));
            assert_eq!(c.request.method, "PUT");
            assert_eq!(s.scenarios.len(), 1);
        }),
        ("wrk -t 1 -c 1 -d 1 http://h/ | tee out.txt", |_, i| {
            assert!(i.notes.iter().any(|n| n.contains("tee out.txt")));
        }),
    ];
    for (line, check) in cases {
        let imported = import(line).unwrap_or_else(|e| panic!("{line}: {e}"));
        let spec = validate(line, &imported);
        check(&spec, &imported);
    }
}

#[test]
fn https_is_kept_and_validates() {
    let imported = import("wrk -t1 -c1 https://example.org/x").unwrap();
    assert!(imported.yaml.contains("base_url: \"https://example.org\""));
    assert!(!imported.notes.iter().any(|n| n.contains("https")), "{:?}", imported.notes);
    let spec = load_str("x.yaml", &imported.yaml, &LoadOptions::default()).unwrap_or_else(|e| panic!("{e:?}"));
    assert!(format!("{:?}", spec.target).contains("port: 443"), "{:?}", spec.target);

    // oha's --insecure is carried over as `tls: { insecure: true }`, and validates (with its warning).
    let imported = import("oha -z 2s --insecure https://127.0.0.1:8443/").unwrap();
    assert!(imported.yaml.contains("tls: { insecure: true }"), "{}", imported.yaml);
    load_str("x.yaml", &imported.yaml, &LoadOptions::default()).unwrap_or_else(|e| panic!("{e:?}"));
}

#[test]
fn errors_name_the_flag_and_what_was_expected() {
    let cases: &[(&str, &str)] = &[
        (
            "curl -s http://h/",
            "`curl` is not a load generator loadgate can import; expected wrk, wrk2, ab, hey, oha, apib or h2load",
        ),
        ("", "the command line is empty"),
        ("wrk -t2 -c10", "the wrk command line has no URL"),
        ("ab -n 10", "the ab command line has no URL"),
        (
            "wrk -c lots http://h/",
            "wrk option `-c` expects a number of connections from 1 to 1000000 (`1k` is 1000), found `lots`",
        ),
        (
            "wrk -d 10ms http://h/",
            "wrk option `-d` expects a duration of at least 1 s: `30`, `30s`, `5m` or `1h`, found `10ms`",
        ),
        ("wrk --timeout=0 http://h/", "wrk option `--timeout` expects a timeout of at least 1 s"),
        (
            "wrk -t 8 -c 4 http://h/",
            "wrk options `-c` and `-t` do not fit together: wrk needs at least as many connections (4) as threads (8)",
        ),
        ("wrk -x http://h/", "wrk has no option `-x`"),
        ("wrk --bogus=1 http://h/", "wrk has no option `--bogus`"),
        ("wrk -c", "wrk option `-c` needs a value"),
        ("wrk2 -c 10 http://h/", "wrk2 needs option `-R`"),
        ("wrk -R fast http://h/", "wrk2 option `-R` expects a rate in requests per second"),
        (
            "wrk -s pipeline.lua http://h/ -- deep",
            "wrk option `-s pipeline.lua --` expects a pipeline depth from 1 to 1024, found `deep`",
        ),
        ("wrk -t $(nproc) http://h/", "wrk option `-t` expects a number of threads from 1 to 4096, found `$(nproc)`"),
        ("ab -n 10 -c 20 http://h/", "ab options `-n` and `-c` do not fit together"),
        ("ab -c 1 http://a/ http://b/", "ab takes one URL, but `http://b/` follows it"),
        ("ab -s 1.5 http://h/", "ab option `-s` expects a timeout in whole seconds"),
        ("ab -m 'NOT A METHOD' http://h/", "ab option `-m` expects an HTTP method such as GET, POST or PUT"),
        ("ab -h", "ab option `-h` runs no benchmark (it prints the usage)"),
        ("hey -n 5 -c 10 http://h/", "hey options `-n` and `-c` do not fit together"),
        ("hey -z forever http://h/", "hey option `-z` expects a Go duration such as `10s`"),
        ("hey -H nocolon http://h/", "hey option `-H` expects a header such as `Accept: text/plain`, found `nocolon`"),
        ("hey -q 0.0000001 http://h/", "hey option `-q` expects a rate above zero"),
        ("oha -n 10 -z 5s http://h/", "oha options `-n` and `-z` do not fit together"),
        ("oha -t soon http://h/", "oha option `-t` expects a timeout such as `10s` or `500ms`, found `soon`"),
        ("oha localhost:8080", "`localhost:8080` is not a URL oha can load: it has no `http://` scheme"),
        ("wrk ftp://h/", "`ftp://h/` is not a URL wrk can load: the scheme `ftp` is not HTTP"),
        ("wrk http://h:70000/", "`http://h:70000/` is not a URL wrk can load: `70000` is not a port (1 to 65535)"),
        ("taskset -c 9-1 wrk http://h/", "`taskset` option `-c` expects a CPU list such as `16-31`"),
        ("taskset zz wrk http://h/", "`taskset` option `mask` expects a hexadecimal affinity mask"),
        (
            "wrk -H 'unterminated http://h/",
            "cannot split the command line like a shell: the single quote at `'unterminated http://h/` is never closed",
        ),
        ("apib -k x http://h/", "apib option `-k` expects a keep-alive time in seconds"),
        (
            "h2load -n 5 -c 10 http://h/",
            "h2load options `-n` and `-c` do not fit together: h2load refuses fewer requests (5)",
        ),
        ("h2load -n 10 -c 2 -t 4 http://h/", "h2load options `-c` and `-t` do not fit together"),
        (
            "h2load -r 10 -D 5 http://h/",
            "h2load options `-r` and `-D` do not fit together: they are mutually exclusive",
        ),
        ("h2load --warm-up-time 5 -n 10 http://h/", "h2load options `--warm-up-time` and `-D` do not fit together"),
        ("h2load -i uris.txt", "h2load option `-i` runs no benchmark (it reads the URIs from a file"),
        ("h2load --timing-script-file=t.txt http://h/", "h2load option `--timing-script-file` runs no benchmark"),
        ("h2load -p spdy/3 http://h/", "h2load option `-p` expects `h2c` or `http/1.1`, found `spdy/3`"),
        ("h2load -D 1.5s http://h/", "h2load option `-D` expects a duration such as `10`, `10s`, `500ms` or `1m`"),
        (
            "h2load --h1 -m 2000 -n 2000 http://h/",
            "h2load option `-m` expects a pipeline depth from 1 to 1024 over HTTP/1.1",
        ),
        ("h2load -m 0 http://h/", "h2load option `-m` expects a number of streams from 1"),
        ("h2load -n 0 http://h/", "h2load option `-n` expects a number of requests above 0"),
        ("h2load -H ':path: /x' http://h/", "h2load option `-H` expects `:authority`, `:host`, `:method` or `:scheme`"),
        ("h2load http://h/ --rps fast", "h2load option `--rps` expects a rate per client"),
        ("h2load --bogus http://h/", "h2load has no option `--bogus`"),
        ("h2load -n 10", "the h2load command line has no URL"),
    ];
    for (line, expected) in cases {
        let e = import(line).expect_err(line);
        let msg = e.to_string();
        assert!(msg.starts_with(expected), "{line}\n  got:      {msg}\n  expected: {expected}...");
    }
    assert_eq!(import("   "), Err(ImportError::Empty));
}

mod snapshots {
    use super::*;

    fn yaml(line: &str) -> String {
        let imported = import(line).unwrap();
        validate(line, &imported);
        imported.yaml
    }

    #[test]
    fn wrk_with_taskset_and_pipeline() {
        insta::assert_snapshot!(yaml(
            "taskset -c 16-31 wrk -H 'Host: tfb-server' -H 'Accept: text/plain,text/html;q=0.9,application/xhtml+xml;q=0.9,application/xml;q=0.8,*/*;q=0.7' -H 'Connection: keep-alive' --latency -d 15 -c 4096 --timeout 8 -t 16 http://tfb-server:8080/plaintext -s pipeline.lua -- 16"
        ));
    }

    #[test]
    fn wrk2_with_rate() {
        insta::assert_snapshot!(yaml("wrk -t8 -c100 -d20s -R100000 http://127.0.0.1:3000/quacker?i=b9ogpt96K0NmkI"));
    }

    #[test]
    fn ab_with_keep_alive() {
        insta::assert_snapshot!(yaml("ab -k -c 100 -n 100000 http://127.0.0.1:3000/backend"));
    }

    #[test]
    fn ab_without_keep_alive() {
        insta::assert_snapshot!(yaml("ab -c 100 -n 300000 http://localhost:8080/backend"));
    }

    #[test]
    fn hey_with_a_per_worker_rate() {
        insta::assert_snapshot!(yaml(
            "hey -n 6000 -c 50 -q 2 -m POST -d '{\"id\": 1}' -T application/json http://127.0.0.1:8080/orders"
        ));
    }

    #[test]
    fn h2load_over_http2_with_streams() {
        insta::assert_snapshot!(yaml(
            "taskset -c 1 h2load -n 200000 -c 16 -m 16 -t 1 -H 'Accept-Encoding: gzip' https://nginx.test:8443/index.html"
        ));
    }

    #[test]
    fn h2load_h1_with_rps() {
        insta::assert_snapshot!(yaml("h2load --h1 -D 5 -c 64 --rps 160 http://127.0.0.1:8080/"));
    }

    #[test]
    fn apib_with_warmup() {
        insta::assert_snapshot!(yaml("apib -w 5 -c 250 -d 20 http://localhost:8080/goalmeister/ping"));
    }
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]

        /// Any text at all: an answer, never a panic.
        #[test]
        fn never_panics_on_any_text(line in any::<String>()) {
            let _ = import(&line);
        }
    }

    /// Text built from the pieces of real command lines (tools, flags, values, quotes, URLs), always ending in
    /// a URL: whenever the import succeeds for an http URL, the spec validates. A fair share must succeed, or
    /// the property says nothing.
    #[test]
    fn every_success_validates() {
        use proptest::strategy::ValueTree;
        use proptest::test_runner::TestRunner;
        let strategy = (tool(), prop::collection::vec(piece(), 0..6), url());
        let mut runner = TestRunner::deterministic();
        let (mut ok, total) = (0, 3000);
        for _ in 0..total {
            let (tool, words, url) = strategy.new_tree(&mut runner).unwrap().current();
            let line = format!("{tool} {} {url}", words.join(" "));
            let Ok(imported) = import(&line) else { continue };
            ok += 1;
            let _ = super::validate(&line, &imported);
        }
        eprintln!("{ok} of {total} generated command lines imported");
        assert!(ok * 10 >= total, "only {ok} of {total} generated command lines imported");
    }

    fn tool() -> impl Strategy<Value = &'static str> {
        prop::sample::select(vec![
            "wrk",
            "wrk2",
            "ab",
            "hey",
            "oha",
            "apib",
            "h2load",
            "h2load --h1",
            "taskset -c 0-3 wrk",
            "taskset 0x5 ab",
            "numactl -C 1 oha",
        ])
    }

    fn piece() -> impl Strategy<Value = String> {
        let flags = prop::sample::select(vec![
            "-c",
            "-t",
            "-d",
            "-n",
            "-R",
            "-q",
            "-z",
            "-k",
            "-i",
            "-H",
            "-m",
            "-T",
            "-A",
            "-s",
            "-p",
            "-w",
            "-x",
            "-1",
            "--timeout",
            "--latency",
            "--rate",
            "--disable-keepalive",
            "-disable-keepalive",
            "-cpus",
            "-D",
            "--",
            "-a",
            "-C",
            "--host",
            "-host",
            "-U",
            "--rps",
            "--h1",
            "--warm-up-time",
        ])
        .prop_map(str::to_owned);
        let values = prop::sample::select(vec![
            "0",
            "1",
            "2",
            "8",
            "16",
            "100",
            "1k",
            "2.5",
            "1000000",
            "99999999999",
            "10s",
            "5m",
            "1h",
            "500ms",
            "20",
            "pipeline.lua",
            "x.lua",
            "'Host: a'",
            "'X: {{ y }}'",
            "\"K: v\\\"q\"",
            "get",
            "PURGE",
            "u:p",
            "a=1",
            "'{\"a\": [1, 2]}'",
            "true",
            "null",
            "'#'",
            "'a: b: c'",
            "$'\\n'",
            "-1",
        ])
        .prop_map(str::to_owned);
        let free = "[ -~]{0,12}";
        prop_oneof![4 => flags, 4 => values, 1 => url(), 1 => free.prop_map(|s: String| s)]
    }

    fn url() -> impl Strategy<Value = String> {
        prop::sample::select(vec![
            "http://127.0.0.1:8080/",
            "http://h/a?b=c",
            "http://[::1]:9/x",
            "https://h/",
            "http://u:p@h:1/#f",
            "'http://h/a b'",
            "http://h/%7B%7B",
            "http://h/{{x}}",
            "http://h/é",
            "http://h:65535",
            "http://h/a:b#c",
        ])
        .prop_map(str::to_owned)
    }
}

/// hey skips certificate checks (`InsecureSkipVerify`), as wrk, ab and h2load do: its https lines get the note;
/// oha checks certificates unless `--insecure`, which becomes `tls: { insecure: true }`.
#[test]
fn hey_https_lines_note_the_unchecked_certificate_and_oha_insecure_carries_over() {
    let note = "does not check the server's certificate";
    let hey = import("hey -z 5s -c 10 https://example.com/x").unwrap();
    assert!(hey.notes.iter().any(|n| n.contains(note)), "{:?}", hey.notes);
    let plain = import("hey -z 5s -c 10 http://example.com/x").unwrap();
    assert!(!plain.notes.iter().any(|n| n.contains(note)), "{:?}", plain.notes);
    let oha = import("oha -z 5s -c 10 https://example.com/x").unwrap();
    assert!(!oha.notes.iter().any(|n| n.contains(note)), "{:?}", oha.notes);
    let insecure = import("oha --insecure -z 5s -c 10 https://example.com/x").unwrap();
    assert!(insecure.yaml.contains("tls: { insecure: true }"), "{}", insecure.yaml);
}

/// Credentials typed on the command line are sent base64-encoded in a Basic header, which the secrets scrubber
/// knows; the command line the spec quotes shows them as `***`, or an uploaded results.json would carry them.
#[test]
fn credentials_typed_on_the_command_line_are_not_quoted() {
    for line in [
        "ab -n 10 -c 1 -A alice:PassWord99 http://127.0.0.1:8080/",
        "hey -n 10 -c 1 -a alice:PassWord99 http://127.0.0.1:8080/",
        "wrk -c 2 -d 1s http://alice:PassWord99@127.0.0.1:8080/",
    ] {
        let i = import(line).unwrap();
        assert!(!i.yaml.contains("PassWord99"), "{line}:\n{}", i.yaml);
        assert!(i.yaml.contains("***"), "{line}:\n{}", i.yaml);
        // Nor in the header, which reads base64("alice:PassWord99") from the environment.
        assert!(!i.yaml.contains("YWxpY2U6UGFzc1dvcmQ5OQ=="), "{line}:\n{}", i.yaml);
        assert!(i.yaml.contains("Authorization: \"{{ env.LOADGATE_AUTHORIZATION }}\""), "{line}:\n{}", i.yaml);
        assert!(i.notes.iter().any(|n| n.contains("LOADGATE_AUTHORIZATION")), "{:?}", i.notes);
        assert_eq!(i.credentials, [("Authorization".to_owned(), "Basic YWxpY2U6UGFzc1dvcmQ5OQ==".to_owned())]);
    }
}

/// wrk's `pipeline.lua` over https imports without `pipeline_reads: batch`, which reads plain HTTP/1.1 only (the
/// spec would validate with a warning that it has no effect).
#[test]
fn wrk_pipelining_over_https_reads_each_response() {
    let line = "wrk -t2 -c64 -d10s -s pipeline.lua https://127.0.0.1:8443/ -- 16";
    let imported = import(line).unwrap();
    assert!(!imported.yaml.contains("pipeline_reads"), "{}", imported.yaml);
    let spec = validate(line, &imported);
    assert!(spec.warnings.iter().all(|w| !w.message.contains("pipeline_reads")), "{:?}", spec.warnings);
    let http = import(&line.replace("https://127.0.0.1:8443", "http://127.0.0.1:8080")).unwrap();
    assert!(http.yaml.contains("pipeline_reads: batch"), "{}", http.yaml);
}
