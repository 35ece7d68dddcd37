//! Checks, captures and verification as the reader makes them (`docs/design/checks.md`).

use loadgate_model::check::{CaptureSource, CheckKind, JsonExpected, JsonOp, TextOp};
use loadgate_model::{FailedChecks, Segment, VerifyScenarios};
use loadgate_spec::{load_str, LoadOptions, SessionStep, Spec};

fn load(text: &str) -> Spec {
    match load_str("spec.yaml", text, &LoadOptions::default()) {
        Ok(spec) => spec,
        Err(e) => panic!("the spec should be valid:\n{}", e.render()),
    }
}

fn refused(text: &str) -> String {
    match load_str("spec.yaml", text, &LoadOptions::default()) {
        Ok(_) => panic!("the spec should be refused:\n{text}"),
        Err(e) => e.render(),
    }
}

const EVERY_CHECK: &str = r#"version: 1
name: every-check
vars: { expected: "Hello, World!" }
target: { builtin: plaintext }
verify: { scenarios: all, requests: 3 }
defaults: { failed_checks: separate, check_body_limit: 1MiB }
scenarios:
  single:
    request:
      path: /json
      check:
        - status: [2xx, 304]
        - { header: Content-Type, matches: '^application/json', contains: json, equals: application/json }
        - { header: Server, exists: false }
        - { body_contains: Hello }
        - { body_matches: 'Hel+o' }
        - { body_equals: "{{ expected }}" }
        - { body_size: 13B }
        - { body_size: { min: 1B, max: 64KiB }, name: size-range }
        - { json: $.message, equals: "Hello, World!", type: string }
        - { json: "$.items[0].n", equals: 1, gt: 0, ge: 1, lt: 2, le: 1 }
        - { json: $.ok, equals: true, name: ok }
        - { json: $.none, equals: null, name: none }
        - { json: "$['a key'][*]", exists: false, name: a-key }
    load: { closed: { connections: 2, requests: 10 } }
    slo: ["checks == 100%", "check_failures{check=a-key} == 0"]
  flow:
    failed_checks: errors
    verify: false
    session:
      - name: login
        method: POST
        path: /login
        body: '{"token": "tok-{{ seq() }}"}'
        check: [{ status: 200 }]
        capture:
          token: { json: $.json.token }
          id: { header: Location, regex: '/items/(\d+)$', default: "0", max_length: 64B }
          csrf: { regex: 'name="csrf" value="([^"]+)"' }
          sid: { cookie: session }
      - { think: 10ms }
      - name: me
        path: "/items/{{ id }}"
        query: { t: "{{ token }}" }
        headers: { Authorization: "{{ 'Bearer ' ~ token }}" }
        body: "csrf={{ csrf }}"
        check:
          - { json: $.token, equals: "{{ token }}", name: same-token }
          - { header: X-Id, equals: "id-{{ id }}" }
    load: { closed: { connections: 2, requests: 10 } }
    slo: ["check_failures{check=capture:token} == 0", "checks{request=me, check=same-token} == 100%"]
"#;

#[test]
fn every_check_and_capture_kind_is_read() {
    let spec = load(EVERY_CHECK);
    assert_eq!(spec.verify.scenarios, VerifyScenarios::All);
    assert_eq!(spec.verify.requests, 3);

    let single = &spec.scenarios[0].cells[0];
    assert_eq!(single.failed_checks, FailedChecks::Separate);
    assert_eq!(single.check_body_limit, 1 << 20);
    assert!(!single.cookies);
    assert_eq!(single.verify, None);
    let checks = &single.request.checks;
    let names: Vec<&str> = checks.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "status",
            "header:content-type",
            "header:server",
            "body_contains",
            "body_matches",
            "body_equals",
            "body_size",
            "size-range",
            "json:$.message",
            "json:$.items[0].n",
            "ok",
            "none",
            "a-key"
        ]
    );
    let CheckKind::Status { set } = &checks[0].kind else { panic!("{:?}", checks[0]) };
    assert!(set.contains(204) && set.contains(304) && !set.contains(301));
    assert!(matches!(&checks[1].kind, CheckKind::Header { name, ops } if name == "content-type" && ops.len() == 4));
    assert!(matches!(&checks[2].kind, CheckKind::Header { ops, .. } if ops == &[TextOp::Exists(false)]));
    let CheckKind::BodyEquals { expected } = &checks[5].kind else { panic!() };
    assert_eq!(expected.as_literal().as_deref(), Some("Hello, World!"));
    assert_eq!(checks[6].kind, CheckKind::BodySize { min: Some(13), max: Some(13) });
    assert_eq!(checks[7].kind, CheckKind::BodySize { min: Some(1), max: Some(65536) });
    let CheckKind::Json { ops, .. } = &checks[9].kind else { panic!() };
    assert!(ops.contains(&JsonOp::Equals(JsonExpected::Number(1.0))), "{ops:?}");
    assert_eq!(ops.len(), 6, "exists and five comparisons: {ops:?}");
    let CheckKind::Json { ops, .. } = &checks[8].kind else { panic!() };
    assert!(
        matches!(&ops[1], JsonOp::Equals(JsonExpected::Text(e)) if e.as_literal().as_deref() == Some("Hello, World!"))
    );
    assert!(
        matches!(&checks[10].kind, CheckKind::Json { ops, .. } if ops.contains(&JsonOp::Equals(JsonExpected::Bool(true))))
    );
    assert!(
        matches!(&checks[11].kind, CheckKind::Json { ops, .. } if ops.contains(&JsonOp::Equals(JsonExpected::Null)))
    );

    let flow = &spec.scenarios[1].cells[0];
    assert_eq!(flow.failed_checks, FailedChecks::Errors);
    assert_eq!(flow.verify, Some(false));
    assert!(flow.cookies, "on by default with a session");
    let vars: Vec<(&str, u32)> = flow.variables.iter().map(|v| (v.name.as_str(), v.max_len)).collect();
    assert_eq!(vars, [("token", 4096), ("id", 64), ("csrf", 4096), ("sid", 4096)]);
    let SessionStep::Request { request: login, .. } = &flow.session[0] else { panic!() };
    let sources: Vec<&CaptureSource> = login.captures.iter().map(|c| &c.source).collect();
    assert!(matches!(sources[0], CaptureSource::Json { selector } if selector.text == "$.json.token"));
    assert!(matches!(sources[1], CaptureSource::Header { name, regex: Some(_) } if name == "location"));
    assert!(matches!(sources[2], CaptureSource::Regex { .. }));
    assert!(matches!(sources[3], CaptureSource::Cookie { name } if name == "session"));
    assert_eq!(login.captures[1].default.as_deref(), Some("0"));
    let slots: Vec<u16> = login.captures.iter().map(|c| c.slot).collect();
    assert_eq!(slots, [0, 1, 2, 3]);

    let SessionStep::Request { request: me, .. } = &flow.session[2] else { panic!() };
    let dynamic = me.dynamic.as_ref().expect("captured values make the request dynamic");
    assert!(dynamic.path.contains(&Segment::Var { slot: 1, encode: false }), "{:?}", dynamic.path);
    assert!(
        dynamic.path.contains(&Segment::Var { slot: 0, encode: true }),
        "query values are encoded: {:?}",
        dynamic.path
    );
    let auth = &dynamic.headers.iter().find(|(k, _)| k == "Authorization").unwrap().1;
    assert_eq!(auth, &[Segment::Text("Bearer ".into()), Segment::Var { slot: 0, encode: false }]);
    assert_eq!(
        dynamic.body.as_deref(),
        Some(&[Segment::Text("csrf=".into()), Segment::Var { slot: 2, encode: false }][..])
    );
    assert!(me.path.contains("{{ id }}"), "{}", me.path);
    let CheckKind::Json { ops, .. } = &me.checks[0].kind else { panic!() };
    assert!(
        matches!(&ops[1], JsonOp::Equals(JsonExpected::Text(e)) if e.0 == [Segment::Var { slot: 0, encode: false }]),
        "{ops:?}"
    );
    let CheckKind::Header { ops, .. } = &me.checks[1].kind else { panic!() };
    assert!(
        matches!(&ops[1], TextOp::Equals(e) if e.0 == [Segment::Text("id-".into()), Segment::Var { slot: 1, encode: false }])
    );
}

#[test]
fn sessions_run_under_every_load_model_but_never_pipelined() {
    let session = "    session:\n      - { name: a, path: / }\n      - { name: b, path: /b }\n";
    for load in [
        "{ closed: { connections: 2, duration: 1s } }",
        "{ open: { rate: 10/s, duration: 1s, connections: 2 } }",
        "{ ramp: { connections: 2, stages: [{ to: 10/s, over: 1s }] } }",
        "{ capacity: { from: 10/s, to: 100/s, duration: 1s, connections: 2 } }",
        "{ users: { at_once: 2 } }",
    ] {
        let text = format!(
            "version: 1\nname: s\ntarget: {{ builtin: plaintext }}\nscenarios:\n  main:\n{session}    load: {load}\n"
        );
        let spec = load_str("spec.yaml", &text, &LoadOptions::default());
        assert!(spec.is_ok(), "{load}: {}", spec.err().map(|e| e.render()).unwrap_or_default());
    }
    let text = format!(
        "version: 1\nname: s\ntarget: {{ builtin: plaintext, protocol: http2 }}\nscenarios:\n  main:\n{session}    \
         load: {{ closed: {{ connections: 2, duration: 1s, streams: 8 }} }}\n"
    );
    let e = refused(&text);
    assert!(e.contains("a session waits for each response: `streams: 8` is refused"), "{e}");
}

#[test]
fn a_capture_marker_survives_matrix_memoization() {
    // Two cells render the same template text; each gets its own variables' markers.
    let text =
        "version: 1\nname: m\ntarget: { builtin: plaintext }\nscenarios:\n  main:\n    matrix: { n: [1, 2] }\n    \
                session:\n      - { name: a, path: /a, capture: { t: { json: $.t } } }\n      \
                - { name: b, path: \"/b/{{ t }}/{{ n }}\" }\n    load: { users: { at_once: \"{{ n }}\" } }\n";
    let spec = load(text);
    for cell in &spec.scenarios[0].cells {
        let SessionStep::Request { request, .. } = &cell.session[1] else { panic!() };
        let path = &request.dynamic.as_ref().unwrap().path;
        assert!(path.contains(&Segment::Var { slot: 0, encode: false }), "{path:?}");
    }
}

#[test]
fn captures_and_checks_are_refused_where_they_cannot_work() {
    let e = refused(
        "version: 1\nname: x\ntarget: { builtin: plaintext }\nscenarios:\n  main:\n    \
         request: { path: \"/{{ token }}\", check: [{ status: 200 }] }\n    load: { closed: { connections: 1, requests: 1 } }\n",
    );
    assert!(e.contains("undefined variable `token`"), "outside a session a capture name is undefined: {e}");
    let e = refused(
        "version: 1\nname: x\ntarget: { builtin: plaintext }\nscenarios:\n  main:\n    session:\n      \
         - { name: a, path: /a, capture: { t: { json: $.t } } }\n      - { name: b, method: \"{{ t }}\", path: /b }\n    \
         load: { users: { at_once: 1 } }\n",
    );
    assert!(e.contains("a captured value cannot be used here"), "{e}");
}
