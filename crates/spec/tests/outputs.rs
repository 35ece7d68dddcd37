//! `outputs:` as the reader makes them: kinds, URLs, headers, and the header credentials kept as secrets.

use loadgate_model::output::OutputKind;
use loadgate_spec::{load_str, LoadOptions};

const SPEC: &str = r#"version: 1
name: outputs
target: { builtin: plaintext }
outputs:
  - type: prometheus
    url: http://user:pa55word@127.0.0.1:9090/api/v1/write
    headers: { X-Scope-OrgID: perf, Authorization: "Bearer t0ken-value" }
  - type: otlp
    url: http://127.0.0.1:4318/v1/metrics
scenarios:
  main:
    request: { path: / }
    load: { closed: { connections: 8, duration: 1s } }
"#;

#[test]
fn outputs_are_read_with_their_headers() {
    let spec = load_str("spec.yaml", SPEC, &LoadOptions::default()).unwrap_or_else(|e| panic!("{}", e.render()));
    assert_eq!(spec.outputs.len(), 2);
    assert_eq!(spec.outputs[0].kind, OutputKind::PrometheusRemoteWrite);
    assert_eq!(spec.outputs[0].headers[0], ("X-Scope-OrgID".to_owned(), "perf".to_owned()));
    assert_eq!(spec.outputs[1].kind, OutputKind::Otlp);
    assert!(spec.outputs[1].headers.is_empty());
    // The credential header, its token and the URL's password are secrets; the tenant id is not.
    let scrubbed = spec.secrets.scrub("Bearer t0ken-value t0ken-value pa55word perf");
    assert!(!scrubbed.contains("t0ken-value") && !scrubbed.contains("pa55word"), "{scrubbed}");
    assert!(scrubbed.ends_with("perf"), "{scrubbed}");
    // Nothing of an output reaches the spec's serialized form (what plans and snapshots are made of).
    let json = serde_json::to_string(&spec).expect("json");
    assert!(!json.contains("9090") && !json.contains("t0ken"), "{json}");
}

#[test]
fn more_than_eight_outputs_are_refused() {
    let many: String =
        (0..9).map(|i| format!("  - {{ type: otlp, url: \"http://127.0.0.1:{}/v1/metrics\" }}\n", 4000 + i)).collect();
    let text = SPEC
        .replace(SPEC.split("outputs:\n").nth(1).and_then(|r| r.split("scenarios:").next()).expect("outputs"), &many);
    let err = load_str("spec.yaml", &text, &LoadOptions::default()).expect_err("refused").render();
    assert!(err.contains("`outputs` names 9 outputs"), "{err}");
}
