//! What a run's profiles can do on this machine, decided once before its load: whether the kernel lets the
//! built-in sampler sample (and kernel stacks), whether an external profiler's program is there, and whether the
//! rounds are long enough for a useful number of samples. A profile that cannot be taken is one warning and the
//! run goes on without it; with `required: true` it is a refusal instead, and the run stops before its load.

use std::collections::BTreeSet;
use std::path::Path;

use loadgate_model::profile::{KernelStacks, Profile, ProfileSource, MIN_USEFUL_SAMPLES};
use loadgate_plan::Phase;
use loadgate_profile::Access;

/// What the run leaves out of its profiles.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Off {
    /// The built-in sampler may not sample here.
    pub(super) cpu: bool,
    /// External profilers whose program is not there (as the spec writes it).
    pub(super) programs: BTreeSet<String>,
}

impl Off {
    /// Whether the run leaves `profile` out.
    pub(super) fn leaves_out(&self, profile: &Profile) -> bool {
        match &profile.source {
            ProfileSource::Cpu(_) => self.cpu,
            ProfileSource::Command(c) => super::external::words(&c.run)
                .ok()
                .and_then(|w| w.into_iter().next())
                .is_some_and(|p| self.programs.contains(&p)),
            ProfileSource::Pprof(_) => false,
        }
    }
}

/// The decision: the warnings to say once, the refusal of a required profile, and what is left out.
#[derive(Debug, Default)]
pub(super) struct Readiness {
    pub(super) warnings: Vec<String>,
    pub(super) refusal: Option<String>,
    pub(super) off: Off,
}

impl Readiness {
    fn warn(&mut self, text: String) {
        if !self.warnings.contains(&text) {
            self.warnings.push(text);
        }
    }

    /// A profile that cannot be taken: refused when required, else a warning and left out.
    fn cannot(&mut self, profile: &Profile, why: String) {
        if profile.required {
            self.refusal.get_or_insert_with(|| format!("{why}; the profile is `required: true`, so no load was sent"));
        } else {
            self.warn(format!("{why}; the run goes on without it"));
        }
    }
}

/// What this machine allows and has, asked only when a profile needs it.
pub(super) trait Machine {
    /// What the built-in sampler may do here.
    fn access(&self) -> Access;
    /// Whether `program` (a path, or a name looked up on `PATH`) is an executable file.
    fn found(&self, program: &str) -> bool;
}

/// This machine.
pub(super) struct Here;

impl Machine for Here {
    fn access(&self) -> Access {
        loadgate_profile::probe()
    }

    fn found(&self, program: &str) -> bool {
        let executable = |p: &Path| {
            use std::os::unix::fs::PermissionsExt as _;
            p.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        };
        if program.contains('/') {
            return executable(Path::new(program));
        }
        std::env::var_os("PATH").is_some_and(|path| std::env::split_paths(&path).any(|d| executable(&d.join(program))))
    }
}

/// Decides what the profiles of `phases` can do on `machine`.
pub(super) fn readiness(phases: &[Phase], machine: &dyn Machine) -> Readiness {
    let mut ready = Readiness::default();
    let mut access: Option<Access> = None;
    for phase in phases {
        let Some(profile) = &phase.profile else { continue };
        match &profile.source {
            ProfileSource::Cpu(cpu) => match access.get_or_insert_with(|| machine.access()) {
                Access::Full => {}
                Access::UserOnly { advice, .. } => {
                    if cpu.kernel == KernelStacks::Auto {
                        ready.warn(format!("the CPU profiles cover user time only: {advice}"));
                    }
                }
                Access::Denied { advice, .. } => {
                    let why = format!("the CPU profile of {} cannot be taken: {advice}", phase.name);
                    ready.cannot(profile, why);
                    if !profile.required {
                        ready.off.cpu = true;
                    }
                }
            },
            ProfileSource::Command(c) => {
                let program = super::external::words(&c.run).ok().and_then(|w| w.into_iter().next());
                if let Some(program) = program.filter(|p| !p.contains('{') && !machine.found(p)) {
                    let why = format!(
                        "the profiler `{program}` of {} is not there ({})",
                        phase.name,
                        if program.contains('/') { "no such executable file" } else { "not found on PATH" }
                    );
                    ready.cannot(profile, why);
                    ready.off.programs.insert(program);
                }
            }
            ProfileSource::Pprof(_) => {}
        }
        few_samples(phase, profile, &mut ready);
    }
    ready
}

/// Warns about rounds too short for the samples a profile needs.
fn few_samples(phase: &Phase, profile: &Profile, ready: &mut Readiness) {
    let (Some(period_ns), Some(duration)) = (profile.period_ns(), phase.duration) else { return };
    let r = loadgate_model::profile::resolution(period_ns, duration.0.as_secs_f64(), None, 1, 50.0);
    if r.samples_per_cpu >= MIN_USEFUL_SAMPLES as f64 {
        return;
    }
    let knob = match profile.source {
        ProfileSource::Cpu(_) => "raise `profile.cpu.frequency`",
        _ => "lower the profiler's interval",
    };
    ready.warn(format!(
        "the profile of {} gathers at most {:.0} samples per busy CPU a round: fewer than {MIN_USEFUL_SAMPLES} say \
         little about any frame; lengthen the phase or {knob}",
        phase.name, r.samples_per_cpu
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fake {
        access: Access,
        programs: &'static [&'static str],
    }

    impl Machine for Fake {
        fn access(&self) -> Access {
            self.access.clone()
        }

        fn found(&self, program: &str) -> bool {
            self.programs.contains(&program)
        }
    }

    fn phases(profile: &str) -> Vec<Phase> {
        let yaml = format!(
            "version: 1\nname: r\ntarget: {{ base_url: \"http://127.0.0.1:8080\", start: {{ command: [./server] }} }}\nprofile: {profile}\nscenarios:\n  main:\n    request: {{ path: / }}\n    load: {{ closed: {{ connections: 1, duration: 2s }} }}\n"
        );
        let spec = loadgate_spec::load_str("r.yaml", &yaml, &loadgate_spec::LoadOptions::default()).expect("the spec");
        loadgate_plan::compile(&spec).phases
    }

    fn denied() -> Access {
        Access::Denied { errno: 13, paranoid: Some(3), advice: "kernel.perf_event_paranoid is 3".into() }
    }

    #[test]
    fn a_sampler_the_kernel_refuses_is_one_warning_and_left_out() {
        let r = readiness(&phases("{ cpu: true }"), &Fake { access: denied(), programs: &[] });
        assert_eq!(r.refusal, None);
        assert!(r.off.cpu);
        assert_eq!(r.warnings.len(), 1, "{:?}", r.warnings);
        assert!(r.warnings[0].contains("kernel.perf_event_paranoid is 3"), "{:?}", r.warnings);
        assert!(r.warnings[0].contains("goes on without it"), "{:?}", r.warnings);
    }

    #[test]
    fn a_required_sampler_the_kernel_refuses_stops_the_run_before_its_load() {
        let r = readiness(&phases("{ cpu: true, required: true }"), &Fake { access: denied(), programs: &[] });
        let refusal = r.refusal.expect("a refusal");
        assert!(refusal.contains("perf_event_paranoid") && refusal.contains("no load was sent"), "{refusal}");
    }

    #[test]
    fn user_stacks_only_are_said_once_unless_kernel_stacks_were_not_asked_for() {
        let user_only = || Access::UserOnly { paranoid: Some(2), advice: "kernel.perf_event_paranoid is 2".into() };
        let r = readiness(&phases("{ cpu: true }"), &Fake { access: user_only(), programs: &[] });
        assert!(!r.off.cpu && r.refusal.is_none());
        assert!(r.warnings.iter().any(|w| w.contains("user time only")), "{:?}", r.warnings);
        let r = readiness(&phases("{ cpu: { kernel: off } }"), &Fake { access: user_only(), programs: &[] });
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    }

    #[test]
    fn a_profiler_that_is_not_there_is_named_and_left_out() {
        let spec = "{ command: \"asprof -d {seconds} -o collapsed -f {out} {pid}\" }";
        let r = readiness(&phases(spec), &Fake { access: Access::Full, programs: &[] });
        assert!(r.off.programs.contains("asprof"));
        assert!(r.warnings[0].contains("`asprof`") && r.warnings[0].contains("not found on PATH"), "{:?}", r.warnings);
        let r = readiness(&phases(spec), &Fake { access: Access::Full, programs: &["asprof"] });
        assert!(r.warnings.is_empty() && r.off.programs.is_empty(), "{:?}", r.warnings);
    }

    #[test]
    fn a_required_profiler_that_is_not_there_is_a_refusal() {
        let spec = "{ command: { run: \"/opt/nowhere/asprof {pid} {out}\" }, required: true }";
        let r = readiness(&phases(spec), &Fake { access: Access::Full, programs: &[] });
        assert!(r.refusal.expect("a refusal").contains("no such executable file"));
    }

    #[test]
    fn rounds_too_short_for_two_hundred_samples_are_a_warning() {
        let r = readiness(&phases("{ cpu: { frequency: 49 } }"), &Fake { access: Access::Full, programs: &[] });
        assert!(r.warnings.iter().any(|w| w.contains("at most 98 samples")), "{:?}", r.warnings);
        let r = readiness(&phases("{ cpu: true }"), &Fake { access: Access::Full, programs: &[] });
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    }
}
