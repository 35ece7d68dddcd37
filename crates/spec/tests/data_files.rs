//! Data files (`pick_line`, `pick_csv`) are read from the spec's directory tree, within a size limit, and only
//! where per-request generators work; the options of `LoadOptions` relax the first two.

use std::path::Path;

use loadgate_spec::{load_file, Generator, LoadOptions, Spec};

fn spec(dir: &Path, path: &str) -> std::path::PathBuf {
    let file = dir.join("spec.yaml");
    let text = format!(
        "version: 1\nname: data\ntarget: {{ builtin: plaintext }}\nscenarios:\n  main:\n    request: {{ path: \"{path}\" }}\n    load: {{ closed: {{ connections: 8, duration: 1s }} }}\n"
    );
    std::fs::write(&file, text).unwrap();
    file
}

fn picked(spec: &Spec) -> Vec<String> {
    let request = &spec.scenarios[0].cells[0].request;
    let dynamic = request.dynamic.as_ref().expect("a generated path");
    match &dynamic.generators[..] {
        [Generator::Pick { values }] => values.clone(),
        other => panic!("one pick generator, found {other:?}"),
    }
}

fn refusal(result: Result<Spec, loadgate_spec::SpecError>) -> String {
    match result {
        Ok(_) => panic!("the spec should be refused"),
        Err(e) => e.render(),
    }
}

#[test]
fn data_files_are_read_relative_to_the_spec_and_inside_its_tree() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("specs");
    std::fs::create_dir_all(dir.join("data")).unwrap();
    std::fs::write(dir.join("data/keys.txt"), "a\nb\n").unwrap();
    std::fs::write(root.path().join("outside.txt"), "secret\n").unwrap();
    // A link inside the tree to a file inside the tree is fine; one that leads out is not.
    std::os::unix::fs::symlink(dir.join("data/keys.txt"), dir.join("inside-link.txt")).unwrap();
    std::os::unix::fs::symlink(root.path().join("outside.txt"), dir.join("outside-link.txt")).unwrap();
    let opts = LoadOptions::default();

    let ok = load_file(&spec(&dir, "/{{ pick_line('data/keys.txt') }}"), &opts).unwrap();
    assert_eq!(picked(&ok), ["a", "b"]);
    let ok = load_file(&spec(&dir, "/{{ pick_line('inside-link.txt') }}"), &opts).unwrap();
    assert_eq!(picked(&ok), ["a", "b"]);

    for name in ["../outside.txt", "outside-link.txt", "data/../../outside.txt"] {
        let err = refusal(load_file(&spec(&dir, &format!("/{{{{ pick_line('{name}') }}}}")), &opts));
        assert!(err.contains("is outside the spec's directory"), "{name}: {err}");
        assert!(err.contains("--allow-data-outside-spec-dir"), "{name}: {err}");
    }
    let absolute = root.path().join("outside.txt").display().to_string();
    let err = refusal(load_file(&spec(&dir, &format!("/{{{{ pick_line('{absolute}') }}}}")), &opts));
    assert!(err.contains("is outside the spec's directory"), "{err}");

    // The option lets any file be read.
    let allowed = LoadOptions { allow_data_outside_spec_dir: true, ..LoadOptions::default() };
    for name in ["../outside.txt", "outside-link.txt", absolute.as_str()] {
        let ok = load_file(&spec(&dir, &format!("/{{{{ pick_line('{name}') }}}}")), &allowed).unwrap();
        assert_eq!(picked(&ok), ["secret"], "{name}");
    }
}

#[test]
fn data_files_are_bounded_and_regular() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("small.txt"), "x\n".repeat(100)).unwrap();
    let small = LoadOptions { max_data_file_bytes: 100, ..LoadOptions::default() };
    let err = refusal(load_file(&spec(dir.path(), "/{{ pick_line('small.txt') }}"), &small));
    assert!(err.contains("`small.txt` is 200 bytes, more than the 100 bytes a data file may be"), "{err}");
    assert!(err.contains("--max-data-file-bytes"), "{err}");
    let ok = load_file(&spec(dir.path(), "/{{ pick_line('small.txt') }}"), &LoadOptions::default()).unwrap();
    assert_eq!(picked(&ok).len(), 100);

    // A device is not a data file, even when reading outside the tree is allowed.
    let allowed = LoadOptions { allow_data_outside_spec_dir: true, ..LoadOptions::default() };
    let err = refusal(load_file(&spec(dir.path(), "/{{ pick_line('/dev/zero') }}"), &allowed));
    assert!(err.contains("`/dev/zero` is not a regular file"), "{err}");
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let err = refusal(load_file(&spec(dir.path(), "/{{ pick_line('sub') }}"), &allowed));
    assert!(err.contains("not a regular file"), "{err}");
}

#[test]
fn data_files_are_not_opened_where_generators_are_an_error() {
    let dir = tempfile::tempdir().unwrap();
    // A FIFO would block whoever opens it: the load only finishes if nothing opens it.
    let fifo = dir.path().join("fifo");
    let status = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(status.success());
    let file = dir.path().join("spec.yaml");
    std::fs::write(
        &file,
        "version: 1\nname: data\ntarget: { builtin: plaintext }\nscenarios:\n  main:\n    request: { path: / }\n    load: { closed: { connections: 8, duration: 1s } }\n    slo: [\"p99 < {{ pick_line('fifo') }}\"]\n",
    )
    .unwrap();
    let err = refusal(load_file(&file, &LoadOptions::default()));
    assert!(err.contains("per-request generators only work in a request"), "{err}");
}

fn generators(spec: &Spec) -> Vec<Generator> {
    spec.scenarios[0].cells[0].request.dynamic.as_ref().expect("a generated path").generators.clone()
}

#[test]
fn pick_csv_reads_rfc4180_quotes_embedded_commas_and_line_breaks() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("users.csv"),
        "id, name ,city\r\n1,\"Smith, John\",Oslo\r\n2,\"O\"\"Brien\",\"Cork\"\n3,\"two\nlines\",\"Bergen, Norway\"\n\n",
    )
    .unwrap();
    let opts = LoadOptions::default();
    let ok = load_file(&spec(dir.path(), "/{{ pick_csv('users.csv', 'city') }}"), &opts).unwrap();
    assert_eq!(picked(&ok), ["Oslo", "Cork", "Bergen, Norway"]);
    let ok = load_file(&spec(dir.path(), "/{{ pick_csv('users.csv', 'name') }}"), &opts).unwrap();
    assert_eq!(picked(&ok), ["Smith, John", "O\"Brien", "two\nlines"]);

    let err = refusal(load_file(&spec(dir.path(), "/{{ pick_csv('users.csv', 'town') }}"), &opts));
    assert!(err.contains("no column `town`; the header has: id, name, city"), "{err}");
    std::fs::write(dir.path().join("short.csv"), "id,city\n1,Oslo\n2\n").unwrap();
    let err = refusal(load_file(&spec(dir.path(), "/{{ pick_csv('short.csv', 'city') }}"), &opts));
    assert!(err.contains("line 3: the row has 1 fields and no `city`"), "{err}");
}

#[test]
fn generator_functions_take_keyword_arguments_as_documented() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("keys.txt"), "a\nb\n").unwrap();
    std::fs::write(dir.path().join("users.csv"), "id,city\n1,Oslo\n").unwrap();
    let opts = LoadOptions::default();
    let load = |path: &str| load_file(&spec(dir.path(), path), &opts);
    for (path, expected) in [
        ("/{{ seq(start=100, step=2) }}", Generator::Seq { start: 100, step: 2 }),
        ("/{{ seq(100, 2) }}", Generator::Seq { start: 100, step: 2 }),
        ("/{{ seq(100, step=2) }}", Generator::Seq { start: 100, step: 2 }),
        ("/{{ seq(step=3) }}", Generator::Seq { start: 0, step: 3 }),
        ("/{{ seq() }}", Generator::Seq { start: 0, step: 1 }),
        ("/{{ random_int(min=1, max=9) }}", Generator::RandomInt { min: 1, max: 9 }),
        ("/{{ random_string(len=8) }}", Generator::RandomString { len: 8 }),
        ("/{{ random_hex(len=8) }}", Generator::RandomHex { len: 8 }),
        ("/{{ pick(values=['x', 'y']) }}", Generator::Pick { values: vec!["x".into(), "y".into()] }),
        ("/{{ pick_line(file='keys.txt') }}", Generator::Pick { values: vec!["a".into(), "b".into()] }),
        ("/{{ pick_csv(file='users.csv', column='city') }}", Generator::Pick { values: vec!["Oslo".into()] }),
    ] {
        let spec = load(path).unwrap_or_else(|e| panic!("{path}: {}", e.render()));
        assert_eq!(generators(&spec), [expected], "{path}");
    }
    for (path, message) in [
        ("/{{ seq(1, start=2) }}", "`start` is given twice"),
        ("/{{ seq(begin=2) }}", "begin"),
        ("/{{ random_int(min=1) }}", "`max` is missing"),
        ("/{{ random_string() }}", "`len` is missing"),
    ] {
        let err = refusal(load(path));
        assert!(err.contains(message), "{path}: {err}");
    }
}
