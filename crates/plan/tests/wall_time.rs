//! A plan's wall time counts its repetitions: `loadgate plan` shows it and `loadgate k8s` sets the Job's deadline
//! from it.

use loadgate_model::units::Duration;

fn plan(extra: &str, scenarios: &str) -> loadgate_plan::ExecutionPlan {
    let yaml = format!("version: 1\nname: w\ntarget:\n  base_url: http://127.0.0.1:9\n{extra}scenarios:\n{scenarios}");
    let spec = loadgate_spec::load_str("w.yaml", &yaml, &loadgate_spec::LoadOptions::default())
        .unwrap_or_else(|e| panic!("{}\n{yaml}", e.render()));
    loadgate_plan::compile(&spec)
}

const TWO_PHASES: &str = "  warm:\n    gate: false\n    cooldown: 1s\n    request: { path: / }\n    \
                          load: { closed: { connections: 1, duration: 2s } }\n  \
                          main:\n    request: { path: / }\n    load: { closed: { connections: 1, duration: 3s } }\n";

#[test]
fn one_pass_without_repetitions() {
    let w = plan("", TWO_PHASES).wall_time().unwrap();
    // 2 s, the 1 s cooldown, 3 s; the last phase has no cooldown.
    assert_eq!(w.pass, Duration::from_secs(6));
    assert_eq!(w.expected, w.pass);
    assert_eq!(w.most, w.pass);
}

#[test]
fn gated_phases_repeat_on_both_sides_and_sequential_gating_bounds_the_most() {
    let gating = "gating: { repeat: 4, max_repeat: 10 }\n";
    let w = plan(gating, TWO_PHASES).wall_time().unwrap();
    assert_eq!(w.pass, Duration::from_secs(6));
    // The warmup once (with its cooldown), the gated phase 4 times: 3 + 4 x 3.
    assert_eq!(w.expected, Duration::from_secs(15));
    assert_eq!(w.most, Duration::from_secs(33));

    let ab = format!("{gating}candidate:\n  base_url: http://127.0.0.1:10\n");
    let w = plan(&ab, TWO_PHASES).wall_time().unwrap();
    // Every instance on both sides.
    assert_eq!(w.expected, Duration::from_secs(30));
    assert_eq!(w.most, Duration::from_secs(66));
}

#[test]
fn a_request_count_makes_it_unknown() {
    let p = plan("", "  s:\n    request: { path: / }\n    load: { closed: { connections: 1, requests: 100 } }\n");
    assert_eq!(p.wall_time(), None);
}
