//! What a spec's errors show: never a secret, never a raw control character, and the right place.

use std::collections::{BTreeMap, BTreeSet};

use loadgate_spec::{load_str, LoadOptions, SpecError};

/// A spec around one scenario body (indented under `main:`), with `top` added at the top level.
fn spec_with(top: &str, scenario: &str) -> String {
    format!("version: 1\nname: diag\n{top}target: {{ builtin: plaintext }}\nscenarios:\n  main:\n{scenario}")
}

fn refused_with(text: &str, opts: &LoadOptions) -> String {
    match load_str("spec.yaml", text, opts) {
        Ok(_) => panic!("the spec should be refused:\n{text}"),
        Err(e) => e.render(),
    }
}

fn refused(text: &str) -> String {
    refused_with(text, &LoadOptions::default())
}

fn refusal(text: &str) -> SpecError {
    load_str("spec.yaml", text, &LoadOptions::default()).expect_err("the spec should be refused")
}

const REQUEST: &str = "    request: { path: / }\n";

#[test]
fn secrets_and_environment_values_never_show_in_errors() {
    // A value read from the environment by a template is secret in errors, wherever it shows.
    let opts = LoadOptions {
        env: BTreeMap::from([
            ("MYSEC".to_owned(), "EnvSecretValue42".to_owned()),
            ("SHORT".to_owned(), "ab".to_owned()),
        ]),
        ..LoadOptions::default()
    };
    let text = spec_with(
        "",
        &format!("{REQUEST}    load: {{ closed: {{ connections: \"{{{{ env.MYSEC }}}}\", duration: 1s }} }}\n"),
    );
    let e = refused_with(&text, &opts);
    assert!(!e.contains("EnvSecretValue42"), "{e}");
    assert!(e.contains("found: `***`"), "{e}");
    // One too short to be replaced in free text is hidden where it stands whole.
    let text = spec_with(
        "",
        &format!("{REQUEST}    load: {{ closed: {{ connections: \"{{{{ env.SHORT }}}}\", duration: 1s }} }}\n"),
    );
    let e = refused_with(&text, &opts);
    assert!(e.contains("found: `***`"), "{e}");

    // `--secret NAME=VALUE`: in the found value and in the help that quotes it.
    let secret = |name: &str, value: &str| LoadOptions {
        sets: vec![(name.to_owned(), value.to_owned())],
        secret_vars: BTreeSet::from([name.to_owned()]),
        ..LoadOptions::default()
    };
    let text = "version: 1\nname: tok\nvars: { token: \"\" }\ntarget: { base_url: \"{{ token }}\" }\nscenarios:\n  main:\n    request: { path: / }\n    load: { closed: { connections: 1, requests: 5 } }\n";
    let e = refused_with(text, &secret("token", "PlainSecret123"));
    assert!(!e.contains("PlainSecret123"), "{e}");
    assert!(e.contains("help: write `http://***`"), "{e}");
    // A `--secret` naming no variable is named as `--secret`, without its value.
    let e = refused_with(text, &secret("tokn", "PlainSecret123"));
    assert!(e.contains("`--secret tokn=***` names no variable of this spec"), "{e}");
    assert!(e.contains("did you mean `--secret token=***`?"), "{e}");
    assert!(!e.contains("PlainSecret123"), "{e}");
    let e =
        refused_with(text, &LoadOptions { sets: vec![("tokn".to_owned(), "8".to_owned())], ..LoadOptions::default() });
    assert!(e.contains("`--set tokn=8` names no variable of this spec"), "{e}");

    // A variable the spec marks secret: its value, given in the environment, is hidden too.
    let text = "version: 1\nname: tok\nvars: { token: \"\" }\nsecrets: { vars: [token] }\ntarget: { base_url: \"{{ token }}\" }\nscenarios:\n  main:\n    request: { path: / }\n    load: { closed: { connections: 1, requests: 5 } }\n";
    let opts = LoadOptions {
        env: BTreeMap::from([("LOADGATE_VAR_token".to_owned(), "VarSecret777".to_owned())]),
        ..LoadOptions::default()
    };
    let e = refused_with(text, &opts);
    assert!(!e.contains("VarSecret777"), "{e}");
}

/// A control character in the spec (a key with an escape sequence and a line break that starts a CI workflow
/// command) is shown escaped: the rendering has no raw control character and no line of its own for the input.
#[test]
fn control_characters_are_shown_escaped() {
    let text = spec_with(
        "",
        &format!("{REQUEST}    load: {{ closed: {{ connections: 1, requests: 5 }} }}\n    \"bad\\u001b[31mkey\\n::error::x\": 1\n"),
    );
    let e = refused(&text);
    assert!(e.contains("unknown key `bad\\u{1b}[31mkey\\n::error::x`"), "{e}");
    assert!(!e.chars().any(|c| c.is_control() && c != '\n'), "{e:?}");
    assert!(!e.lines().any(|l| l.starts_with("::")), "{e}");
}

/// The line and column of an error, and the caret under it, are right whatever ends the lines (`\r\n`, a lone `\r`)
/// and however wide the characters before it are (a CJK character takes two columns of a terminal).
#[test]
fn errors_point_at_the_right_place() {
    let body =
        "    request: { path: \"/日本語\", headers: 5 }\n    load: { closed: { connections: 1, requests: 5 } }\n";
    for ending in ["\n", "\r\n", "\r"] {
        let text = spec_with("", body).replace('\n', ending);
        let err = refusal(&text);
        let d = err.diagnostics.sorted().into_iter().next().expect("one error");
        let span = d.span.expect("located");
        assert_eq!((span.line, span.col), (6, 39), "with {ending:?} line endings");
        let e = err.render();
        let quoted = e.lines().find(|l| l.starts_with("6 | ")).unwrap_or_else(|| panic!("{e}"));
        assert_eq!(quoted, "6 |     request: { path: \"/日本語\", headers: 5 }", "{e}");
        let caret = e.lines().find(|l| l.trim_start().starts_with("| ") && l.contains('^')).unwrap();
        let before = &caret[caret.find("| ").unwrap() + 2..caret.find('^').unwrap()];
        // 38 characters before the `5`, three of them two columns wide.
        assert_eq!(before.len(), 41, "{e}");
    }
}
