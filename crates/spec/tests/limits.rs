//! The bounds of `loadgate_spec::limits`, each refused with a message that names it.

use loadgate_spec::{limits, load_str, LoadOptions, SpecError};

fn refused(text: &str) -> SpecError {
    match load_str("spec.yaml", text, &LoadOptions::default()) {
        Ok(_) => panic!("the spec should be refused"),
        Err(e) => e,
    }
}

fn scenario(name: &str, matrix: &str) -> String {
    format!(
        "  {name}:\n    request: {{ path: \"/{{{{ a }}}}\" }}\n    matrix: {{ a: [{matrix}] }}\n    load: {{ closed: {{ connections: 8, duration: 1s }} }}\n"
    )
}

#[test]
fn a_spec_larger_than_the_limit_is_refused_before_it_is_parsed() {
    let text = format!("description: \"{}\"\n", "x".repeat(limits::MAX_SPEC_BYTES));
    let e = refused(&text).render();
    assert!(e.contains("a spec may be"), "{e}");
}

#[test]
fn names_fit_a_file_name() {
    let body = "target: { builtin: plaintext }\nscenarios:\n  main:\n    request: { path: / }\n    load: { closed: { connections: 8, duration: 1s } }\n";
    let ok = format!("version: 1\nname: {}\n{body}", "a".repeat(limits::MAX_NAME_CHARS));
    assert!(load_str("spec.yaml", &ok, &LoadOptions::default()).is_ok());
    let long = format!("version: 1\nname: {}\n{body}", "a".repeat(limits::MAX_NAME_CHARS + 1));
    let e = refused(&long).render();
    assert!(e.contains("`name` is 101 characters long"), "{e}");
    let long_scenario = format!("version: 1\nname: n\n{}", body.replace("main:", &format!("{}:", "s".repeat(101))));
    let e = refused(&long_scenario).render();
    assert!(e.contains("is 101 characters long"), "{e}");
}

#[test]
fn the_cells_of_all_matrices_together_are_bounded() {
    let values = (0..100).map(|i| i.to_string()).collect::<Vec<_>>().join(", ");
    // 100 x 100 cells in one scenario is the most; two scenarios of 6,000 cells are too many together.
    let mut text = "version: 1\nname: m\ntarget: { builtin: plaintext }\nscenarios:\n".to_owned();
    let values_60 = (0..60).map(|i| i.to_string()).collect::<Vec<_>>().join(", ");
    for s in ["one", "two"] {
        text.push_str(
            &scenario(s, &values_60)
                .replace("matrix: { a: [", &format!("matrix: {{ b: [{values}], a: ["))
                .replace("/{{ a }}", "/{{ a }}/{{ b }}"),
        );
    }
    let e = refused(&text).render();
    assert!(e.contains("scenario `two` takes the spec past 10000 scenario instances"), "{e}");
    assert!(!e.contains("scenario `one`"), "{e}");
}

#[test]
fn at_most_200_problems_are_shown_and_the_others_are_counted() {
    let keys: String = (0..300).map(|i| format!("  unknown{i}: 1\n")).collect();
    let text = format!("version: 1\nname: n\ntarget:\n{keys}  builtin: plaintext\nscenarios: {{}}\n");
    let e = refused(&text);
    assert_eq!(e.diagnostics.error_count(), 301);
    let rendered = e.render();
    assert_eq!(rendered.matches("\nerror: ").count() + usize::from(rendered.starts_with("error: ")), 200);
    assert!(rendered.contains("note: 101 more problems are not shown"), "{rendered}");
    assert!(rendered.ends_with("spec.yaml: 301 errors"), "{rendered}");
}

#[test]
fn a_long_line_is_shown_around_the_error() {
    let text = format!("version: 1\nname: n\ndescription: [{}, {{{{ nope }}}}]\n", "1, ".repeat(2000));
    let e = refused(&text).render();
    let longest = e.lines().map(str::len).max().unwrap_or(0);
    assert!(longest < 300, "a diagnostic shows at most 200 characters of a line:\n{e}");
}
