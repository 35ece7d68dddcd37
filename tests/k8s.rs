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

/// The refusal of a built-in target says what to set for the spec at hand: the variable its `target.base_url`
/// is made of (tfb-plaintext's `url`), or `target.base_url` itself when it has none (the quickstart).
#[test]
fn the_built_in_target_refusal_says_what_this_spec_needs() {
    let out = render(&["specs/tfb-plaintext.yaml", "--shards", "3", "--image", "x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("`--set url=http://my-service:8080`"), "{}", text(&out.stderr));
    let out = render(&["specs/quickstart.yaml", "--shards", "3", "--image", "x"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("set the spec's `target.base_url` to its URL"), "{err}");
    assert!(!err.contains("give its URL with"), "quickstart has no variable for its URL: {err}");
}

/// The Job's pods, played by processes on loopback: the rendered ConfigMap laid out as the volume mounts it,
/// each pod's args as rendered (the barrier's host name, which only the cluster's DNS resolves, replaced by
/// 127.0.0.1), `JOB_COMPLETION_INDEX` and `LOADGATE_RUN_ID` as Kubernetes sets them, stdout and stderr in one log
/// as `kubectl logs` gives them; `loadgate merge` of that log is one run with every request of the plan.
#[test]
fn the_rendered_pods_run_the_shard_contract_and_their_logs_merge() {
    use std::io::BufRead as _;
    let mut server = common::command(&["serve", "--kind", "plaintext"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("start loadgate serve");
    let mut line = String::new();
    std::io::BufReader::new(server.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let url = line.trim().rsplit(' ').next().unwrap().to_owned();

    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("data")).unwrap();
    std::fs::write(dir.path().join("data/users.txt"), "ann\nbob\ncid\n").unwrap();
    let spec = dir.path().join("pods.yaml");
    std::fs::write(
        &spec,
        "version: 1\nname: pods\nvars:\n  url: \"\"\ntarget:\n  base_url: \"{{ url }}\"\nscenarios:\n  s:\n    request: { path: \"/plaintext?u={{ pick_line('data/users.txt') }}\" }\n    load: { closed: { connections: 2, requests: 200 } }\n",
    )
    .unwrap();
    let set = format!("url={url}");
    let out = render(&[spec.to_str().unwrap(), "--shards", "2", "--image", "loadgate:test", "--set", &set]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // The renderer writes `---` only between documents (text in a literal block is indented).
    let docs: Vec<serde_yaml::Value> =
        text(&out.stdout).split("\n---\n").map(|d| serde_yaml::from_str(d).unwrap()).collect();

    // The ConfigMap as its volume mounts it.
    let volume = dir.path().join("spec-volume");
    let pod = &docs[2]["spec"]["template"]["spec"];
    for item in pod["volumes"][0]["configMap"]["items"].as_sequence().unwrap() {
        let path = volume.join(item["path"].as_str().unwrap());
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, docs[0]["data"][item["key"].as_str().unwrap()].as_str().unwrap()).unwrap();
    }
    let barrier_port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let args: Vec<String> = pod["containers"][0]["args"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .map(|a| match a.strip_prefix("/spec/") {
            Some(file) => volume.join(file).display().to_string(),
            None if a.ends_with(":7878") => format!("127.0.0.1:{barrier_port}"),
            None => a.to_owned(),
        })
        .collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let log = dir.path().join("shards.log");
    let pods: Vec<std::process::Child> = (0..2)
        .map(|index| {
            let file = std::fs::File::create(dir.path().join(format!("pod-{index}.log"))).unwrap();
            common::command(&args)
                .env("JOB_COMPLETION_INDEX", index.to_string())
                .env("LOADGATE_RUN_ID", "0b3c6a52-7d1e-4c1b-9f0e-3f1d2a6b8c90")
                .stdout(file.try_clone().unwrap())
                .stderr(file)
                .spawn()
                .unwrap()
        })
        .collect();
    for mut p in pods {
        assert!(p.wait().unwrap().success(), "a pod failed; see its log");
    }
    let _ = server.kill();
    let _ = server.wait();
    let mut all = String::new();
    for index in 0..2 {
        all.push_str(&std::fs::read_to_string(dir.path().join(format!("pod-{index}.log"))).unwrap());
    }
    std::fs::write(&log, &all).unwrap();

    let merged_dir = dir.path().join("merged");
    let out = loadgate(&["merge", log.to_str().unwrap(), "--out", merged_dir.to_str().unwrap()]);
    assert!(matches!(out.status.code(), Some(0 | 1 | 5)), "{}\n{}", text(&out.stderr), all);
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(merged_dir.join("pods/results.json")).unwrap()).unwrap();
    assert_eq!(results["scenarios"][0]["requests"]["sent"], 200, "every request of the plan, once");
    assert_eq!(results["shards"].as_array().map(Vec::len), Some(2));
}
