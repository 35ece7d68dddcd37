//! The spec reader's fuzz target. No input panics, and none makes the reader use more than its bounds: arbitrary
//! bytes, YAML-shaped text, mutations of real specs, and the worst cases (deep nesting, alias bombs, huge
//! templates, exploding matrices) all end in `Ok` or a located error, with at most 256 MiB of heap at any time.
//!
//! `LOADGATE_FUZZ_CASES=N` sets the number of inputs of the cheap generators (512 by default; the costly ones run a
//! fraction of it); `.ci/run` runs a bounded number.
//! Every input that once failed is kept in `fuzz-corpus/` and loaded by `the_corpus_loads_within_bounds`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use loadgate_spec::{load_str, LoadOptions};
use proptest::prelude::*;

const QUICKSTART: &str = include_str!("../../../specs/quickstart.yaml");
const TFB: &str = include_str!("../../../specs/tfb-plaintext.yaml");

/// The heap one input may use at its peak.
const MAX_HEAP: isize = 256 << 20;

/// Counts the heap each thread holds, and its peak, so that every input is checked against [`MAX_HEAP`] while the
/// tests run in parallel.
struct Counting;

thread_local! {
    static HELD: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn count(delta: isize) {
    // `try_with`: a thread being torn down has no counters left; its allocations are not counted.
    let _ = HELD.try_with(|held| {
        let now = held.get().saturating_add(delta);
        held.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

// SAFETY: every call is forwarded to the system allocator unchanged; only counters are updated around it.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as isize);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-(layout.size() as isize));
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size as isize - layout.size() as isize);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Loads one input: `Ok`, or an error that names the file and a location; and at most [`MAX_HEAP`] more heap than
/// before at any time.
fn check(text: &str) {
    let base = HELD.with(Cell::get);
    PEAK.with(|p| p.set(base));
    let opts = LoadOptions::default();
    if let Err(e) = load_str("fuzz.yaml", text, &opts) {
        assert!(e.diagnostics.has_errors());
        let rendered = e.render();
        assert!(rendered.contains("--> fuzz.yaml:"), "{rendered}");
    }
    let peak = PEAK.with(Cell::get) - base;
    assert!(peak <= MAX_HEAP, "{peak} bytes of heap for an input of {} bytes", text.len());
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
        Just("\t".to_owned()),
        Just(", ".to_owned()),
        Just("'".to_owned()),
        Just("\"".to_owned()),
        Just("!!str".to_owned()),
        Just("!!int".to_owned()),
        Just("? ".to_owned()),
        Just("---".to_owned()),
        Just("1e400".to_owned()),
        Just("18446744073709551616".to_owned()),
        Just("~".to_owned()),
        "[a-z0-9/%.]{0,6}".prop_map(|s| s),
    ];
    prop::collection::vec(token, 0..60).prop_map(|v| v.join(" "))
}

/// A spec whose scenario reads `{{ v }}` from a matrix and whose values are the given template.
fn spec_with_template(template: &str, where_: usize) -> String {
    let t = template.replace('\\', "\\\\").replace('"', "\\\"");
    let (description, path, matrix) = match where_ % 3 {
        0 => (format!("\"{t}\""), "/".to_owned(), String::new()),
        1 => ("x".to_owned(), format!("/{{{{ v }}}}{t}"), "    matrix: { v: [1, 2] }\n".to_owned()),
        _ => ("x".to_owned(), "/{{ v }}".to_owned(), format!("    matrix: {{ v: [\"{t}\", 2] }}\n")),
    };
    format!(
        "version: 1\nname: t\ndescription: {description}\nvars: {{ big: \"{}\" }}\ntarget: {{ builtin: plaintext }}\nscenarios:\n  main:\n    request: {{ path: \"{path}\" }}\n{matrix}    load: {{ closed: {{ connections: 8, duration: 1s }} }}\n",
        "y".repeat(50_000)
    )
}

/// Template pieces that build large values, run long, or nest deep, for [`huge_templates`].
fn template_piece() -> impl Strategy<Value = String> {
    let n = prop_oneof![Just(10u64), Just(1000), Just(100_000), Just(100_000_000), Just(1_000_000_000_000)];
    prop_oneof![
        n.clone().prop_map(|n| format!("{{{{ 'x' * {n} }}}}")),
        n.clone().prop_map(|n| format!("{{{{ [1, 2] * {n} }}}}")),
        n.clone().prop_map(|n| format!("{{{{ ([1] * {n}) == ([1] * {n}) }}}}")),
        n.clone().prop_map(|n| format!("{{{{ 3 in [1] * {n} }}}}")),
        n.clone().prop_map(|n| format!("{{{{ (['a'] * {n}) | join(big) }}}}")),
        n.clone().prop_map(|n| format!("{{% for i in range({n}) %}}{{{{ big }}}}{{% endfor %}}")),
        n.clone().prop_map(|n| format!("{{% for i in range({n}) %}}{{% for j in range({n}) %}}{{% endfor %}}{{% endfor %}}")),
        n.clone().prop_map(|n| format!("{{{{ big | replace('y', 'y' * {n}) }}}}")),
        n.clone().prop_map(|n| format!("{{{{ big | indent({n}) }}}}")),
        n.prop_map(|n| format!("{{{{ '%{n}s' | format(1) }}}}")),
        (1usize..64).prop_map(|k| format!(
            "{{% set ns = namespace(s=big) %}}{{% for i in range({k}) %}}{{% set ns.s = ns.s ~ ns.s %}}{{% endfor %}}{{{{ ns.s | length }}}}"
        )),
        (1usize..3000).prop_map(|k| format!("{{{{ big{} }}}}", " ~ big".repeat(k))),
        (1usize..3000).prop_map(|k| format!("{{{{ 1{} }}}}", " + 1".repeat(k))),
        (1usize..500).prop_map(|k| format!("{{{{ {}1{} }}}}", "(".repeat(k), ")".repeat(k))),
        (1usize..500).prop_map(|k| format!("{{{{ big{} }}}}", "|upper".repeat(k))),
        (1usize..100).prop_map(|k| format!(
            "{{% macro f(n) %}}{{% if n > 0 %}}{{{{ f(n - 1) }}}}{{{{ f(n - 1) }}}}{{% endif %}}{{% endmacro %}}{{{{ f({k}) }}}}"
        )),
        Just("{{ big == big }}{{ big < big }}{{ big in big }}{{ big[::-1] }}{{ big[40000] }}".to_owned()),
        Just("{{ pick_line('/dev/zero') }}{{ pick_csv('../../etc/passwd', 'x') }}".to_owned()),
        Just("{{ random_string(1048576) }}{{ pick(['a'] * 1000000) }}".to_owned()),
        Just("{{ range(100000) | list | length }}{{ big | list | length }}".to_owned()),
        Just("{{ 1 < big < 3 }}{% include 'template 0' %}{{ debug() }}".to_owned()),
        "[ -~]{0,40}".prop_map(|s| s),
    ]
}

/// Inputs per generator: `LOADGATE_FUZZ_CASES` (512 by default), divided by how costly one input of the generator
/// is. (`PROPTEST_CASES`, when set, overrides this with the same number for every generator.)
fn cases(cost: u32) -> u32 {
    let total = std::env::var("LOADGATE_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(512u32);
    (total / cost).max(1)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(1), .. ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        check(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn arbitrary_yaml(text in yamlish()) {
        check(&text);
    }

    #[test]
    fn mutated_specs(pos in 0usize..4000, len in 0usize..40, insert in "[ -~\n\t]{0,12}", which in 0usize..2) {
        let base = if which == 0 { QUICKSTART } else { TFB };
        let mut chars: Vec<char> = base.chars().collect();
        let pos = pos.min(chars.len());
        let end = (pos + len).min(chars.len());
        chars.splice(pos..end, insert.chars());
        check(&chars.into_iter().collect::<String>());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(8), .. ProptestConfig::default() })]

    /// Flow, block and mixed nesting, balanced or not, up to a megabyte.
    #[test]
    fn deep_nesting(depth in 1usize..200_000, kind in 0usize..6, balanced in any::<bool>()) {
        let text = match kind {
            0 => format!("{}1{}", "[".repeat(depth), if balanced { "]".repeat(depth) } else { String::new() }),
            1 => format!("{}1{}", "{a: ".repeat(depth), if balanced { "}".repeat(depth) } else { String::new() }),
            2 => (0..depth.min(700)).map(|i| format!("{}- \n", "  ".repeat(i))).collect(),
            3 => (0..depth.min(700)).map(|i| format!("{}k{i}:\n", " ".repeat(i))).collect(),
            4 => format!("a: {}", "[{".repeat(depth / 2)),
            _ => format!("{}x", "- ".repeat(depth.min(400_000))),
        };
        check(&text);
    }

    /// Templates built from the pieces that once cost gigabytes or minutes.
    #[test]
    fn huge_templates(pieces in prop::collection::vec(template_piece(), 1..5), where_ in 0usize..3) {
        check(&spec_with_template(&pieces.concat(), where_));
    }

}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(16), .. ProptestConfig::default() })]

    /// Alias bombs of any width and depth, padded (the old budget grew with the file).
    #[test]
    fn alias_bombs(width in 1usize..20, depth in 1usize..20, padding in 0usize..50_000, as_key in any::<bool>()) {
        let mut text = format!("a0: &a0 [{}]\n", vec!["lol"; width].join(","));
        for i in 1..depth {
            text.push_str(&format!("a{i}: &a{i} [{}]\n", vec![format!("*a{}", i - 1); width].join(",")));
        }
        if as_key {
            text.push_str(&format!("? *a{}\n: x\n", depth - 1));
        }
        text.push_str("pad:\n");
        text.push_str(&"  - 0\n".repeat(padding / 6));
        check(&text);
    }

    /// Matrices of many cells, over many scenarios: products that explode, and zipped lists that add up. (A
    /// matrix at the limit, which takes seconds to read in a debug build, is `tests/cli.rs`'s.)
    #[test]
    fn exploding_matrices(vars in 3usize..6, values in 25usize..100, scenarios in 1usize..20, zip in any::<bool>()) {
        let scenarios = if zip { scenarios.min(5) } else { scenarios };
        let list = (0..values).map(|i| i.to_string()).collect::<Vec<_>>().join(", ");
        let matrix = (0..vars).map(|v| format!("v{v}: [{list}]")).collect::<Vec<_>>().join(", ");
        let path = (0..vars).map(|v| format!("{{{{ v{v} }}}}")).collect::<Vec<_>>().join("/");
        let mut text = "version: 1\nname: m\ntarget: { builtin: plaintext }\nscenarios:\n".to_owned();
        for s in 0..scenarios {
            text.push_str(&format!(
                "  s{s}:\n    request: {{ path: \"/{path}\" }}\n    matrix: {{ {matrix} }}\n    matrix_mode: {}\n    load: {{ closed: {{ connections: 8, duration: 1s }} }}\n",
                if zip { "zip" } else { "product" }
            ));
        }
        check(&text);
    }
}

#[test]
fn deep_nesting_and_huge_numbers() {
    check(&"[".repeat(10_000));
    check(&format!("a: {}", "[".repeat(200)));
    check("version: 1\nname: x\ntarget: {builtin: plaintext}\nscenarios: {a: {request: {path: /}, load: {closed: {connections: 99999999999999999999999, duration: 1s}}}}");
    check("version: 1\nname: x\ntarget: {builtin: plaintext}\nscenarios: {a: {request: {path: /}, load: {open: {connections: 1, duration: 99999999999h, rate: 1e300/s}}}}");
}

/// Every input that once failed, and the worst case of each kind: refused or accepted, never a panic, always
/// within the heap bound.
#[test]
fn the_corpus_loads_within_bounds() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz-corpus");
    let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    assert!(files.len() >= 10, "the corpus holds the worst cases of the issue");
    for file in files {
        let bytes = std::fs::read(&file).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        // A file may say how to blow itself up: `# repeat N` repeats the rest of it N times.
        let text = match text.strip_prefix("# repeat ").and_then(|r| r.split_once('\n')) {
            Some((n, rest)) => rest.repeat(n.trim().parse().unwrap()),
            None => text.into_owned(),
        };
        check(&text);
    }
}
