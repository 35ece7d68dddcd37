//! `loadgate k8s`: the rendered manifests, through the real binary, validated against the Kubernetes schemas
//! offline with `kubernetes-validate` (PyPI) when it is there: `LOADGATE_KUBERNETES_VALIDATE=/path/to/it` (as
//! `.ci/run` sets it, so CI always validates) or on the PATH; without it the validation is skipped and says so.

use std::path::PathBuf;

mod common;
use common::{loadgate, text};

fn validator() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("LOADGATE_KUBERNETES_VALIDATE").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join("kubernetes-validate")).find(|p| p.is_file())
}

fn render(args: &[&str]) -> std::process::Output {
    let mut all = vec!["k8s"];
    all.extend_from_slice(args);
    loadgate(&all)
}

#[test]
fn the_manifests_of_a_sharded_run_are_valid_kubernetes_objects() {
    let out = render(&[
        "specs/tfb-plaintext.yaml",
        "--shards",
        "20",
        "--image",
        "registry.example/loadgate:0.1.0",
        "--namespace",
        "load",
        "--secret-from",
        "tfb-secrets",
        "--set",
        "url=http://tfb-server:8080",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let yaml = text(&out.stdout);
    let hash = yaml.split("(plan ").nth(1).and_then(|r| r.split(')').next()).unwrap().to_owned();
    insta::assert_snapshot!(yaml.replace(&hash, "[hash]"));

    let Some(validate) = validator() else {
        eprintln!(
            "note: kubernetes-validate not found (set LOADGATE_KUBERNETES_VALIDATE): the schemas were not checked"
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("manifests.yaml");
    std::fs::write(&file, &yaml).unwrap();
    let checked =
        std::process::Command::new(&validate).arg("--strict").arg(&file).output().expect("run kubernetes-validate");
    let report = format!("{}{}", text(&checked.stdout), text(&checked.stderr));
    assert!(checked.status.success(), "kubernetes-validate refused the manifests:\n{report}");
    for object in ["configmap/tfb-plaintext", "service/tfb-plaintext", "job/tfb-plaintext"] {
        assert!(report.contains(&format!("passed for resource {object}")), "{report}");
    }
}

#[test]
fn what_cannot_be_rendered_safely_is_refused_with_exit_2() {
    let spec = "specs/tfb-plaintext.yaml";
    let url = "url=http://tfb-server:8080";
    let cases: [(&[&str], &str); 4] = [
        (&[spec, "--shards", "2", "--image", "x", "--set", url, "--name", "Bad_Name"], "is not a valid name"),
        (&[spec, "--shards", "0", "--image", "x", "--set", url], "1 to 10000 shards"),
        (&[spec, "--shards", "2", "--image", "x"], "the built-in server"),
        (&[spec, "--shards", "2", "--image", " ", "--set", url], "the image is empty"),
    ];
    for (args, message) in cases {
        let out = render(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(text(&out.stderr).contains(message), "{args:?}: {}", text(&out.stderr));
        assert!(out.stdout.is_empty(), "nothing is rendered");
    }
}
