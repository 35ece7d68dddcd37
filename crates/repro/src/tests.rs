use super::*;

const SPEC: &str = r#"
version: 1
name: repro-test
vars:
  token: ""
  rate: 100/s
secrets:
  vars: [token]
target:
  base_url: http://127.0.0.1:9
scenarios:
  s:
    request:
      path: "/x?user={{ pick_line('data/users.txt') }}"
      headers: { X-Token: "{{ token }}" }
    load: { open: { rate: "{{ rate }}", connections: 2, duration: 1s } }
"#;

/// A spec directory with its data file, the spec loaded from it, and the results.json of its run.
fn ci_run(dir: &Path, sets: &[(&str, &str)], overrides: RunOverrides) -> RunResults {
    std::fs::create_dir_all(dir.join("data")).unwrap();
    std::fs::write(dir.join("data/users.txt"), "ann\nbob\n").unwrap();
    std::fs::write(dir.join("spec.yaml"), SPEC).unwrap();
    let opts = loadgate_spec::LoadOptions {
        sets: sets.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
        ..Default::default()
    };
    let mut spec = loadgate_spec::load_file(&dir.join("spec.yaml"), &opts).unwrap();
    overrides.apply(&mut spec).unwrap();
    let plan = loadgate_plan::compile(&spec);
    let mut results = loadgate_results::fixture::sample_run();
    results.loadgate_version = "0.1.0".to_owned();
    results.spec.file = "specs/spec.yaml".to_owned();
    results.spec.plan_hash = plan.hash.clone();
    let mut vars = plan.vars.iter().map(|(k, v)| (k.clone(), v.value.clone())).collect();
    spec.secrets.redact_vars(&mut vars);
    results.spec.vars = vars;
    results.spec.source = Some(embed(SPEC, &spec, &overrides));
    results
}

fn options(work: &Path, original: &Path, secrets: &[(&str, &str)]) -> RebuildOptions {
    RebuildOptions {
        secrets: secrets.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
        env: BTreeMap::new(),
        work_dir: work.to_path_buf(),
        original_dir: original.to_path_buf(),
        loadgate_version: "0.1.0".to_owned(),
    }
}

#[test]
fn embeds_the_data_file_and_the_secret_names_never_their_values() {
    let ci = tempfile::tempdir().unwrap();
    let results = ci_run(ci.path(), &[("token", "s3cret"), ("rate", "200/s")], RunOverrides::default());
    let source = results.spec.source.as_ref().unwrap();
    assert_eq!(source.secret_vars, ["token"]);
    assert_eq!(source.files.len(), 1);
    assert_eq!(source.files[0].name, "data/users.txt");
    assert_eq!(source.files[0].text.as_deref(), Some("ann\nbob\n"));
    assert_eq!(results.spec.vars["token"], "***");
    assert_eq!(results.spec.vars["rate"], "200/s");
    let json = serde_json::to_string(&results.spec).unwrap();
    assert!(!json.contains("s3cret"));
}

#[test]
fn rebuilds_the_same_plan_elsewhere_with_the_secret_given_again() {
    let ci = tempfile::tempdir().unwrap();
    let overrides = RunOverrides {
        repeat: Some(3),
        on_inconclusive: Some(OnInconclusive::Fail),
        pacing: Some(loadgate_model::Pacing::Precise),
        connect_rate: Some("500/s".parse().unwrap()),
    };
    let results = ci_run(ci.path(), &[("token", "s3cret"), ("rate", "200/s")], overrides);
    // Somewhere else: the data file only in results.json.
    let work = tempfile::tempdir().unwrap();
    let nowhere = work.path().join("not-here");
    let rebuilt = rebuild(&results, &options(work.path(), &nowhere, &[("token", "s3cret")])).unwrap();
    assert_eq!(rebuilt.plan.hash, results.spec.plan_hash);
    assert_eq!(rebuilt.overrides, overrides);
    assert!(work.path().join("data/users.txt").is_file());
}

#[test]
fn refuses_without_the_secret_and_names_it() {
    let ci = tempfile::tempdir().unwrap();
    let results = ci_run(ci.path(), &[("token", "s3cret")], RunOverrides::default());
    let work = tempfile::tempdir().unwrap();
    let err = rebuild(&results, &options(work.path(), ci.path(), &[])).unwrap_err();
    assert!(matches!(&err, ReproError::MissingSecrets(n) if n == &["token"]), "{err}");
    assert!(err.to_string().contains("--secret token=VALUE"), "{err}");
}

#[test]
fn a_wrong_secret_or_another_version_is_a_different_plan_and_says_why() {
    let ci = tempfile::tempdir().unwrap();
    let mut results = ci_run(ci.path(), &[("token", "s3cret")], RunOverrides::default());
    let work = tempfile::tempdir().unwrap();
    let err = rebuild(&results, &options(work.path(), ci.path(), &[("token", "other")])).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, ReproError::PlanDiffers { .. }), "{text}");
    assert!(text.contains("check the values given for `token`"), "{text}");

    results.loadgate_version = "0.0.9".to_owned();
    let work = tempfile::tempdir().unwrap();
    let err = rebuild(&results, &options(work.path(), ci.path(), &[("token", "other")])).unwrap_err();
    assert!(err.to_string().contains("made by loadgate 0.0.9, this is loadgate 0.1.0"), "{err}");
}

#[test]
fn a_file_kept_by_digest_must_be_the_same_file() {
    let ci = tempfile::tempdir().unwrap();
    let mut results = ci_run(ci.path(), &[("token", "s3cret")], RunOverrides::default());
    // As if the file had been larger than the embedding limit.
    results.spec.source.as_mut().unwrap().files[0].text = None;
    let work = tempfile::tempdir().unwrap();
    let ok = rebuild(&results, &options(work.path(), ci.path(), &[("token", "s3cret")])).unwrap();
    assert_eq!(ok.plan.hash, results.spec.plan_hash);

    std::fs::write(ci.path().join("data/users.txt"), "carol\n").unwrap();
    let work = tempfile::tempdir().unwrap();
    let err = rebuild(&results, &options(work.path(), ci.path(), &[("token", "s3cret")])).unwrap_err();
    assert!(matches!(err, ReproError::FileChanged { .. }), "{err}");

    let work = tempfile::tempdir().unwrap();
    let err = rebuild(&results, &options(work.path(), &work.path().join("gone"), &[("token", "s3cret")])).unwrap_err();
    assert!(matches!(err, ReproError::FileMissing { .. }), "{err}");
}

#[test]
fn a_hostile_file_name_is_refused_and_nothing_is_written_outside() {
    let ci = tempfile::tempdir().unwrap();
    let mut results = ci_run(ci.path(), &[("token", "s3cret")], RunOverrides::default());
    results.spec.source.as_mut().unwrap().files[0].name = "../escape.txt".to_owned();
    let work = tempfile::tempdir().unwrap();
    let err = rebuild(&results, &options(work.path(), ci.path(), &[("token", "s3cret")])).unwrap_err();
    assert!(matches!(err, ReproError::OutsideTree(_)), "{err}");
    assert!(!work.path().parent().unwrap().join("escape.txt").exists());
}

#[test]
fn results_without_a_source_are_refused() {
    let results = loadgate_results::fixture::sample_run();
    let work = tempfile::tempdir().unwrap();
    let err = rebuild(&results, &options(work.path(), work.path(), &[])).unwrap_err();
    assert!(matches!(err, ReproError::NoSource { .. }), "{err}");
}

#[test]
fn tells_a_results_file_from_a_spec() {
    assert!(looks_like_results("{\n  \"schema_version\": 1,\n  \"spec\": {}\n}"));
    assert!(!looks_like_results(SPEC));
}

/// `--repeat N` is N rounds: below the spec's `repeat` it does not turn sequential mode on (a `max_repeat` left to
/// its default follows), a `max_repeat` the spec wrote stays, and one below N is refused.
#[test]
fn repeat_sets_an_implicit_max_repeat_and_respects_a_written_one() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("data")).unwrap();
    std::fs::write(dir.path().join("data/users.txt"), "ann\n").unwrap();
    let load = |gating: &str| {
        let text = SPEC.replace("scenarios:", &format!("gating: {gating}\nscenarios:"));
        let opts = loadgate_spec::LoadOptions { base_dir: Some(dir.path().to_path_buf()), ..Default::default() };
        loadgate_spec::load_str("spec.yaml", &text, &opts).unwrap()
    };
    let two = RunOverrides { repeat: Some(2), ..RunOverrides::default() };
    let mut spec = load("{ repeat: 5 }");
    two.apply(&mut spec).unwrap();
    assert_eq!((spec.gating.repeat, spec.gating.max_repeat), (2, 2));
    assert_eq!(loadgate_plan::compile(&spec).gating.looks(), vec![2], "one look, no sequential mode");

    let mut spec = load("{ repeat: 5, max_repeat: 12 }");
    two.apply(&mut spec).unwrap();
    assert_eq!((spec.gating.repeat, spec.gating.max_repeat), (2, 12));

    let mut spec = load("{ repeat: 5, max_repeat: 12 }");
    let err = RunOverrides { repeat: Some(20), ..RunOverrides::default() }.apply(&mut spec).unwrap_err();
    assert!(err.contains("--repeat 20 is above the spec's `gating.max_repeat: 12`"), "{err}");

    // The plan of `--repeat 5` on a spec of `repeat: 2` is the plan of a spec of `repeat: 5`.
    let mut spec = load("{ repeat: 2 }");
    RunOverrides { repeat: Some(5), ..RunOverrides::default() }.apply(&mut spec).unwrap();
    assert_eq!(loadgate_plan::compile(&spec).hash, loadgate_plan::compile(&load("{ repeat: 5 }")).hash);
}
