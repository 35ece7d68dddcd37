//! The `profile:` section: what loadgate records inside the target while a measured phase runs.
//!
//! One source per profile: the built-in sampler of the target's process tree (`cpu`), an external profiler run
//! beside each measured phase (`command`), or a Go server's `/debug/pprof` endpoint (`pprof`). A spec-wide
//! `profile:` applies to every scenario; a scenario's own `profile:` replaces it, and `profile: off` turns it off
//! there.

use serde::{Deserialize, Serialize};

use crate::units::Duration;

/// The built-in sampler's default frequency: 999 Hz, off the 1 kHz of timers so that sampling does not lock step
/// with periodic work (perf's and async-profiler's habit of an odd frequency).
pub const DEFAULT_CPU_FREQUENCY: u32 = 999;
/// The highest frequency the built-in sampler accepts: beyond, its own cost shows in the target's numbers.
pub const MAX_CPU_FREQUENCY: u32 = 10_000;
/// What one sample of an external profiler stands for when the spec does not say: async-profiler's and py-spy's
/// default of 100 samples a second.
pub const DEFAULT_COMMAND_INTERVAL: std::time::Duration = std::time::Duration::from_millis(10);
/// The fewest samples a round should have for a profile to say anything about a frame: below, `plan` warns.
pub const MIN_USEFUL_SAMPLES: u64 = 200;
/// How many frames the gate tests at most (chosen on the pooled counts, without looking at the sign).
pub const MAX_TESTED_FRAMES: usize = 30;
/// The family-wise error rate at which frames are named as slower.
pub const FRAME_FAMILY_WISE: f64 = 0.01;

/// A profile of the target, as the spec asks for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    pub source: ProfileSource,
    /// Refuse to run (exit 3 before any load) when the profile cannot be taken, instead of warning and running
    /// unprofiled.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
}

/// Where a profile's stacks come from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProfileSource {
    /// The built-in sampler: a software `cpu-clock` event on every thread of the target's process tree.
    Cpu(CpuProfile),
    /// An external profiler started beside each measured phase; it writes folded stacks to `{out}`.
    Command(CommandProfile),
    /// A Go server's pprof endpoint, fetched for each measured phase.
    Pprof(PprofProfile),
}

/// `profile.cpu`: the built-in sampler.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuProfile {
    /// Samples per second of CPU time, per thread.
    pub frequency: u32,
    /// How call stacks are walked.
    pub unwind: Unwind,
    /// Whether kernel frames are asked for.
    pub kernel: KernelStacks,
}

impl Default for CpuProfile {
    fn default() -> Self {
        CpuProfile { frequency: DEFAULT_CPU_FREQUENCY, unwind: Unwind::Auto, kernel: KernelStacks::Auto }
    }
}

impl CpuProfile {
    /// The sample period in nanoseconds of CPU time.
    pub fn period_ns(&self) -> u64 {
        1_000_000_000 / u64::from(self.frequency.max(1))
    }
}

/// How the built-in sampler walks a user stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unwind {
    /// Frame pointers where the code keeps them, DWARF unwind tables from a copy of the user stack where not.
    #[default]
    Auto,
    /// Frame pointers only (the kernel's call chain): cheapest, wrong where the code omits them.
    FramePointers,
    /// DWARF from a copy of the user stack for every sample: works without frame pointers, costs more.
    Dwarf,
}

/// Whether kernel frames are sampled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KernelStacks {
    /// Kernel frames where the kernel allows them (CAP_PERFMON, or `perf_event_paranoid` 1 or lower), user time
    /// only otherwise, said in the report.
    #[default]
    Auto,
    /// User frames only.
    Off,
}

/// `profile.command`: an external profiler.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandProfile {
    /// The command line with `{pid}`, `{seconds}` and `{out}` placeholders, split into words like a start
    /// command.
    pub run: String,
    /// What the profiler records: it names the output files and says how the counts read.
    pub event: ProfileEvent,
    /// What one count of a `cpu` or `wall` profile stands for (async-profiler's `-i`, py-spy's `--rate`).
    pub interval: Duration,
}

/// What an external profiler or pprof endpoint records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProfileEvent {
    /// On-CPU samples: each count is `interval` of CPU time.
    #[default]
    Cpu,
    /// Wall-clock samples: each count is `interval` of a thread's time, running or not.
    Wall,
    /// Allocations: counts are what the profiler writes (samples, or bytes with async-profiler's `--total`).
    Alloc,
    /// Lock contention: counts are what the profiler writes (samples, or nanoseconds with `--total`).
    Lock,
}

impl ProfileEvent {
    /// The word in file names and reports.
    pub fn name(self) -> &'static str {
        match self {
            ProfileEvent::Cpu => "cpu",
            ProfileEvent::Wall => "wall",
            ProfileEvent::Alloc => "alloc",
            ProfileEvent::Lock => "lock",
        }
    }

    /// Whether a count stands for a span of time (`interval`), so that counts convert to microseconds per request.
    pub fn is_time(self) -> bool {
        matches!(self, ProfileEvent::Cpu | ProfileEvent::Wall)
    }
}

/// `profile.pprof`: a Go server's profile endpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PprofProfile {
    /// The endpoint's URL, without `seconds` (added for each phase): `http://127.0.0.1:6060/debug/pprof/profile`;
    /// or a path (`/debug/pprof/profile`), fetched from each side's `base_url` (a Go server serving pprof on its
    /// own listener; the one form an A/B run takes, its two sides being two servers).
    pub url: String,
    pub kind: PprofKind,
}

/// Which pprof profile is fetched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PprofKind {
    /// `/debug/pprof/profile?seconds=N`: CPU samples over the phase.
    #[default]
    Cpu,
    /// `/debug/pprof/allocs`: allocation sites (a delta over the phase: `?seconds=N`).
    Allocs,
    /// `/debug/pprof/heap`: live heap (a delta over the phase).
    Heap,
    /// `/debug/pprof/mutex`: contended mutexes (a delta over the phase).
    Mutex,
    /// `/debug/pprof/block`: blocking on synchronisation (a delta over the phase).
    Block,
}

impl PprofProfile {
    /// The URL fetched for a side whose target answers at `base_url`: the spec's URL, or its path on `base_url`.
    pub fn url_for(&self, base_url: &str) -> String {
        if self.url.starts_with('/') {
            format!("{}{}", base_url.trim_end_matches('/'), self.url)
        } else {
            self.url.clone()
        }
    }
}

impl PprofKind {
    pub fn name(self) -> &'static str {
        match self {
            PprofKind::Cpu => "cpu",
            PprofKind::Allocs => "allocs",
            PprofKind::Heap => "heap",
            PprofKind::Mutex => "mutex",
            PprofKind::Block => "block",
        }
    }
}

impl Profile {
    /// The word that names this profile's files and report sections: `cpu`, `alloc`, `lock`, `wall`, `heap`...
    pub fn event_name(&self) -> &'static str {
        match &self.source {
            ProfileSource::Cpu(_) => "cpu",
            ProfileSource::Command(c) => c.event.name(),
            ProfileSource::Pprof(p) => p.kind.name(),
        }
    }

    /// What one count stands for in nanoseconds, where counts are time and the period is known before the run
    /// (pprof's comes with each profile).
    pub fn period_ns(&self) -> Option<u64> {
        match &self.source {
            ProfileSource::Cpu(c) => Some(c.period_ns()),
            ProfileSource::Command(c) if c.event.is_time() => u64::try_from(c.interval.0.as_nanos()).ok(),
            ProfileSource::Command(_) | ProfileSource::Pprof(_) => None,
        }
    }

    /// Whether the profile needs a process id of the target (a started target): pprof works on any URL.
    pub fn needs_pid(&self) -> bool {
        !matches!(self.source, ProfileSource::Pprof(_))
    }

    /// One line for the plan and the reports.
    pub fn describe(&self) -> String {
        let required = if self.required { ", required" } else { "" };
        match &self.source {
            ProfileSource::Cpu(c) => {
                let unwind = match c.unwind {
                    Unwind::Auto => "frame pointers or DWARF",
                    Unwind::FramePointers => "frame pointers",
                    Unwind::Dwarf => "DWARF",
                };
                let kernel = match c.kernel {
                    KernelStacks::Auto => "user and kernel where allowed",
                    KernelStacks::Off => "user only",
                };
                format!(
                    "cpu-clock sampling of the target's process tree at {} Hz ({unwind}; {kernel}){required}",
                    c.frequency
                )
            }
            ProfileSource::Command(c) => {
                let per = if c.event.is_time() {
                    format!(", one count = {}", crate::units::Duration(c.interval.0))
                } else {
                    String::new()
                };
                format!("`{}` beside each measured phase ({} profile{per}){required}", c.run, c.event.name())
            }
            ProfileSource::Pprof(p) if p.url.starts_with('/') => {
                format!("{} from {} on each side's base_url for each measured phase{required}", p.kind.name(), p.url)
            }
            ProfileSource::Pprof(p) => format!("{} from {} for each measured phase{required}", p.kind.name(), p.url),
        }
    }
}

/// Expected samples per round and what they can resolve, for `plan`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Resolution {
    /// Samples a round gathers per busy CPU of the target.
    pub samples_per_cpu: f64,
    /// CPU microseconds per request that one sample stands for, where the round's requests are known.
    pub us_per_sample_per_request: Option<f64>,
    /// The smallest change of a frame costing `reference_us` per request that stands out of sampling noise at the
    /// frame's test (three standard errors of the paired difference over `rounds`), in microseconds per request.
    pub smallest_change_us: Option<f64>,
    /// The frame cost the smallest change is stated for.
    pub reference_us: f64,
}

/// What a round of `round_secs` seconds at `requests` requests resolves with a sample every `period_ns` of CPU,
/// over `rounds` paired rounds, for a frame costing `reference_us` per request.
///
/// A frame costing `c` microseconds per request gathers `n = c x R / p` samples a round (R requests, p the period
/// in microseconds), a Poisson count: its per-round estimate has a standard error of `sqrt(n) x p / R =
/// sqrt(c x p / R)` microseconds per request, and the paired difference of two sides over `k` rounds
/// `sqrt(2 c p / (R k))`.
pub fn resolution(
    period_ns: u64,
    round_secs: f64,
    requests: Option<f64>,
    rounds: u32,
    reference_us: f64,
) -> Resolution {
    let period_us = period_ns as f64 / 1_000.0;
    let samples_per_cpu = if period_us > 0.0 { round_secs * 1e6 / period_us } else { 0.0 };
    let per_request = requests.filter(|r| *r > 0.0).map(|r| period_us / r);
    let smallest = requests.filter(|r| *r > 0.0).map(|r| {
        let k = f64::from(rounds.max(1));
        3.0 * (2.0 * reference_us * period_us / (r * k)).sqrt()
    });
    Resolution { samples_per_cpu, us_per_sample_per_request: per_request, smallest_change_us: smallest, reference_us }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_cpu_period_is_a_999th_of_a_second() {
        assert_eq!(CpuProfile::default().period_ns(), 1_001_001);
    }

    #[test]
    fn a_two_second_round_at_2000_per_second_resolves_a_fraction_of_a_microsecond() {
        let r = resolution(1_001_001, 2.0, Some(4_000.0), 10, 50.0);
        assert!((r.samples_per_cpu - 1998.0).abs() < 1.0);
        let per = r.us_per_sample_per_request.unwrap();
        assert!((per - 0.25).abs() < 0.01, "{per}");
        // 3 x sqrt(2 x 50 x 1001 / (4000 x 10)) = 4.74
        let s = r.smallest_change_us.unwrap();
        assert!((s - 4.74).abs() < 0.05, "{s}");
    }

    #[test]
    fn without_a_known_request_count_only_the_samples_are_told() {
        let r = resolution(10_000_000, 1.0, None, 10, 50.0);
        assert_eq!(r.samples_per_cpu, 100.0);
        assert!(r.us_per_sample_per_request.is_none() && r.smallest_change_us.is_none());
    }

    #[test]
    fn a_pprof_path_is_fetched_from_each_sides_base_url_and_a_url_as_written() {
        let p = |url: &str| PprofProfile { url: url.into(), kind: PprofKind::Cpu };
        assert_eq!(
            p("/debug/pprof/profile").url_for("http://127.0.0.1:8081/"),
            "http://127.0.0.1:8081/debug/pprof/profile"
        );
        assert_eq!(p("/debug/pprof/heap").url_for("http://h:1/api"), "http://h:1/api/debug/pprof/heap");
        let absolute = "http://127.0.0.1:6060/debug/pprof/profile";
        assert_eq!(p(absolute).url_for("http://127.0.0.1:8081"), absolute);
    }

    #[test]
    fn events_that_are_not_time_have_no_period() {
        let p = Profile {
            source: ProfileSource::Command(CommandProfile {
                run: "asprof -e alloc -o collapsed -f {out} {pid}".into(),
                event: ProfileEvent::Alloc,
                interval: Duration(DEFAULT_COMMAND_INTERVAL),
            }),
            required: false,
        };
        assert_eq!(p.period_ns(), None);
        assert_eq!(p.event_name(), "alloc");
    }
}
