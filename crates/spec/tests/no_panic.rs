//! No input panics: arbitrary bytes, arbitrary YAML, and mutations of real specs all end in `Ok` or a located
//! error.

use loadgate_spec::{load_str, LoadOptions};
use proptest::prelude::*;

const QUICKSTART: &str = include_str!("../../../specs/quickstart.yaml");
const TFB: &str = include_str!("../../../specs/tfb-plaintext.yaml");

fn check(text: &str) {
    let opts = LoadOptions::default();
    if let Err(e) = load_str("fuzz.yaml", text, &opts) {
        assert!(e.diagnostics.has_errors());
        let rendered = e.render();
        assert!(rendered.contains("--> fuzz.yaml:"), "{rendered}");
    }
}

/// YAML-shaped text built from the spec's own vocabulary, so that the fuzzer reaches deep into the reader.
fn yamlish() -> impl Strategy<Value = String> {
    let token = prop_oneof![
        Just("version".to_owned()),
        Just("name".to_owned()),
        Just("target".to_owned()),
        Just("builtin".to_owned()),
        Just("scenarios".to_owned()),
        Just("load".to_owned()),
        Just("closed".to_owned()),
        Just("open".to_owned()),
        Just("users".to_owned()),
        Just("ramp".to_owned()),
        Just("connections".to_owned()),
        Just("duration".to_owned()),
        Just("rate".to_owned()),
        Just("matrix".to_owned()),
        Just("slo".to_owned()),
        Just("request".to_owned()),
        Just("path".to_owned()),
        Just("hardware".to_owned()),
        Just("cpus".to_owned()),
        Just("vars".to_owned()),
        Just("{{ x }}".to_owned()),
        Just("{{".to_owned()),
        Just("&a".to_owned()),
        Just("*a".to_owned()),
        Just("p99 < 1ms".to_owned()),
        Just("10s".to_owned()),
        Just("-1".to_owned()),
        Just("0-3".to_owned()),
        Just("[".to_owned()),
        Just("]".to_owned()),
        Just("{".to_owned()),
        Just("}".to_owned()),
        Just(":".to_owned()),
        Just("- ".to_owned()),
        Just("\n".to_owned()),
        Just("\n  ".to_owned()),
        Just("\n    ".to_owned()),
        Just(", ".to_owned()),
        Just("'".to_owned()),
        Just("\"".to_owned()),
        Just("!!str".to_owned()),
        Just("1e400".to_owned()),
        Just("18446744073709551616".to_owned()),
        Just("~".to_owned()),
        "[a-z0-9/%.]{0,6}".prop_map(|s| s),
    ];
    prop::collection::vec(token, 0..60).prop_map(|v| v.join(" "))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, .. ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        check(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn arbitrary_yaml(text in yamlish()) {
        check(&text);
    }

    #[test]
    fn mutated_specs(pos in 0usize..4000, len in 0usize..40, insert in "[ -~\n]{0,12}", which in 0usize..2) {
        let base = if which == 0 { QUICKSTART } else { TFB };
        let mut chars: Vec<char> = base.chars().collect();
        let pos = pos.min(chars.len());
        let end = (pos + len).min(chars.len());
        chars.splice(pos..end, insert.chars());
        check(&chars.into_iter().collect::<String>());
    }
}

#[test]
fn deep_nesting_and_huge_numbers() {
    check(&"[".repeat(10_000));
    check(&format!("a: {}", "[".repeat(200)));
    check("version: 1\nname: x\ntarget: {builtin: plaintext}\nscenarios: {a: {request: {path: /}, load: {closed: {connections: 99999999999999999999999, duration: 1s}}}}");
    check("version: 1\nname: x\ntarget: {builtin: plaintext}\nscenarios: {a: {request: {path: /}, load: {open: {connections: 1, duration: 99999999999h, rate: 1e300/s}}}}");
}
