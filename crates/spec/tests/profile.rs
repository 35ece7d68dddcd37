//! `profile:` as the reader makes it: one source, the spec's profile on every scenario, a scenario's own
//! replacing it or turning it off, and the refusals that need the spec as a whole.

use loadgate_model::profile::{
    KernelStacks, PprofKind, Profile, ProfileEvent, ProfileSource, Unwind, DEFAULT_CPU_FREQUENCY,
};
use loadgate_spec::{load_str, LoadOptions};

fn spec(profile: &str, scenario_profile: &str) -> String {
    format!(
        r#"version: 1
name: profiled
target: {{ builtin: plaintext }}
{profile}
scenarios:
  main:
    request: {{ path: / }}
    load: {{ open: {{ rate: 100/s, connections: 8, duration: 2s }} }}
  other:
    request: {{ path: / }}
    load: {{ open: {{ rate: 100/s, connections: 8, duration: 2s }} }}
{scenario_profile}
"#
    )
}

fn profiles(text: &str) -> Vec<Option<Profile>> {
    let spec = load_str("spec.yaml", text, &LoadOptions::default()).unwrap_or_else(|e| panic!("{}", e.render()));
    spec.scenarios.into_iter().map(|s| s.profile).collect()
}

fn refusal(text: &str) -> String {
    load_str("spec.yaml", text, &LoadOptions::default()).expect_err("refused").render()
}

#[test]
fn the_spec_wide_profile_applies_to_every_scenario() {
    let got = profiles(&spec("profile: { cpu: {} }", ""));
    assert_eq!(got.len(), 2);
    for p in got {
        let Some(Profile { source: ProfileSource::Cpu(cpu), required: false }) = p else { panic!("{p:?}") };
        assert_eq!(cpu.frequency, DEFAULT_CPU_FREQUENCY);
        assert_eq!((cpu.unwind, cpu.kernel), (Unwind::Auto, KernelStacks::Auto));
    }
}

#[test]
fn cpu_true_is_the_short_form_of_the_defaults() {
    let got = profiles(&spec("profile: { cpu: true, required: true }", ""));
    assert!(matches!(&got[0], Some(Profile { source: ProfileSource::Cpu(c), required: true }) if c.frequency == 999));
}

#[test]
fn a_scenario_may_turn_the_profile_off_or_replace_it() {
    let off = profiles(&spec("profile: { cpu: { frequency: 499 } }", "    profile: off"));
    assert!(off[0].is_some() && off[1].is_none(), "{off:?}");
    let replaced = profiles(&spec(
        "profile: { cpu: { frequency: 499 } }",
        "    profile: { command: { run: \"asprof -d {seconds} -e alloc -o collapsed -f {out} {pid}\", event: alloc } }",
    ));
    let Some(Profile { source: ProfileSource::Command(c), .. }) = &replaced[1] else { panic!("{replaced:?}") };
    assert_eq!(c.event, ProfileEvent::Alloc);
    assert!(c.run.starts_with("asprof"));
}

#[test]
fn the_command_short_form_is_its_command_line() {
    let got = profiles(&spec(
        "profile: { command: \"py-spy record --pid {pid} --duration {seconds} --format raw --output {out}\" }",
        "",
    ));
    let Some(Profile { source: ProfileSource::Command(c), .. }) = &got[0] else { panic!("{got:?}") };
    assert_eq!(c.event, ProfileEvent::Cpu);
    assert_eq!(c.interval.0, std::time::Duration::from_millis(10));
}

#[test]
fn a_pprof_kind_is_read_from_its_url() {
    let text = spec("profile: { pprof: { url: \"http://127.0.0.1:6060/debug/pprof/mutex\" } }", "")
        .replace("{ builtin: plaintext }", "{ base_url: \"http://127.0.0.1:8080\" }");
    let got = profiles(&text);
    let Some(Profile { source: ProfileSource::Pprof(p), .. }) = &got[0] else { panic!("{got:?}") };
    assert_eq!(p.kind, PprofKind::Mutex);
}

#[test]
fn a_sampler_needs_a_target_loadgate_starts() {
    let text =
        spec("profile: { cpu: {} }", "").replace("{ builtin: plaintext }", "{ base_url: \"http://127.0.0.1:8080\" }");
    let err = refusal(&text);
    assert!(err.contains("`profile.cpu` needs a target loadgate starts"), "{err}");
}

#[test]
fn an_ab_run_with_a_candidate_given_by_url_cannot_be_sampled() {
    let text = spec("profile: { cpu: {} }", "").replace(
        "target: { builtin: plaintext }",
        "target: { builtin: plaintext }\ncandidate: { base_url: \"http://127.0.0.1:8080\" }",
    );
    let err = refusal(&text);
    assert!(err.contains("needs a target loadgate starts"), "{err}");
}

#[test]
fn a_command_without_pid_or_out_is_refused() {
    let err = refusal(&spec("profile: { command: \"perf record -o /tmp/x\" }", ""));
    assert!(err.contains("has no `{pid}`") && err.contains("has no `{out}`"), "{err}");
}

#[test]
fn pprof_needs_timed_phases_of_a_second_or_more() {
    let text = spec("profile: { pprof: { url: \"http://127.0.0.1:6060/debug/pprof/profile\" } }", "")
        .replace("duration: 2s", "duration: 500ms");
    let err = refusal(&text);
    assert!(err.contains("cannot be profiled through pprof") && err.contains("phases of 500ms"), "{err}");
}

#[test]
fn a_profile_stays_in_the_serialized_spec_so_plans_and_results_show_it() {
    let spec = load_str("spec.yaml", &spec("profile: { cpu: {} }", ""), &LoadOptions::default()).expect("valid");
    let json = serde_json::to_string(&spec).expect("json");
    assert!(json.contains("\"profile\":{\"source\":{\"cpu\""), "{json}");
}
