//! Arrival schedules: the cumulative arrival function of an open load and each worker's share of it.
//!
//! A schedule is a list of segments over which the rate moves linearly (constant, ramp, pause), with optional
//! jumps (users injected at once). `N(t)` is the number of arrivals expected by `t` seconds after the phase
//! start. Worker `w` with share `s` and prefix `P` (the shares of the workers before it) sends its `j`-th
//! request (from 0) at `T((j + P) / s)`, where `T(x) = inf { t : N(t) > x }`. By Hermite's identity the
//! workers' counts add up to exactly `ceil(N(t))` when shares are equal, and to within one request per worker
//! otherwise; a global arrival is never sent twice and none is skipped by rounding.

use loadgate_plan::{Arrival, UserStep};

#[derive(Debug, Clone, Copy, PartialEq)]
struct Segment {
    /// Start, in seconds from the phase start.
    t0: f64,
    /// Length in seconds; infinite for the last segment.
    dur: f64,
    /// Arrivals by `t0`, including a jump at `t0`.
    n0: f64,
    /// Rate at the start and at the end of the segment, per second.
    r0: f64,
    r1: f64,
}

impl Segment {
    fn slope(&self) -> f64 {
        if self.dur.is_finite() && self.dur > 0.0 {
            (self.r1 - self.r0) / self.dur
        } else {
            0.0
        }
    }

    /// Arrivals in `[t0, t0 + tau]` after the jump.
    fn arrivals_within(&self, tau: f64) -> f64 {
        self.r0 * tau + self.slope() * tau * tau / 2.0
    }

    /// `N` at the end of the segment (infinite for a last segment with a positive rate).
    fn n_end(&self) -> f64 {
        if self.dur.is_infinite() {
            if self.r0 > 0.0 {
                f64::INFINITY
            } else {
                self.n0
            }
        } else {
            self.n0 + self.arrivals_within(self.dur)
        }
    }
}

/// The whole phase's arrival function (share 1).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Schedule {
    segments: Vec<Segment>,
}

impl Schedule {
    /// The schedule of an open arrival; `None` for a closed loop.
    pub fn from_arrival(arrival: &Arrival) -> Option<Schedule> {
        let mut b = Builder::default();
        match arrival {
            // A replay's worker schedules are its requests' times (`WorkerSchedule::times`).
            Arrival::Closed | Arrival::Replay(_) => return None,
            Arrival::Constant { rate } => b.hold(rate.per_sec()),
            Arrival::Ramp { start, stages } => {
                let mut r = start.per_sec();
                for stage in stages {
                    let to = stage.to.per_sec();
                    b.linear(stage.over.as_secs_f64(), r, to);
                    r = to;
                }
                b.hold(r);
            }
            Arrival::Users { steps } => {
                for step in steps {
                    match step {
                        UserStep::AtOnce { users } => b.jump(*users as f64),
                        UserStep::Ramp { users, over } => {
                            let secs = over.as_secs_f64();
                            if secs > 0.0 {
                                let r = *users as f64 / secs;
                                b.linear(secs, r, r);
                            } else {
                                b.jump(*users as f64);
                            }
                        }
                        UserStep::PerSecond { rate, during } => {
                            b.linear(during.as_secs_f64(), rate.per_sec(), rate.per_sec())
                        }
                        UserStep::RampPerSecond { from, to, during } => {
                            b.linear(during.as_secs_f64(), from.per_sec(), to.per_sec())
                        }
                        UserStep::Pause { during } => b.linear(during.as_secs_f64(), 0.0, 0.0),
                    }
                }
                b.hold(0.0);
            }
        }
        Some(Schedule { segments: b.segments })
    }

    /// `N(t)`: arrivals expected by `t` seconds.
    pub fn count_at(&self, t: f64) -> f64 {
        let mut n = 0.0;
        for s in &self.segments {
            if t < s.t0 {
                break;
            }
            n = s.n0 + s.arrivals_within((t - s.t0).min(s.dur));
        }
        n
    }

    /// `T(x) = inf { t : N(t) > x }` in seconds, or `None` when fewer than `x` arrivals ever come. `cursor`
    /// remembers the segment of the previous call: calls with growing `x` cost O(1).
    pub fn time_of(&self, x: f64, cursor: &mut usize) -> Option<f64> {
        while let Some(s) = self.segments.get(*cursor) {
            if s.n0 > x {
                return Some(s.t0);
            }
            if s.n_end() > x {
                let need = x - s.n0;
                let k = s.slope();
                // Solve r0 * tau + k * tau^2 / 2 = need in the form that stays exact as k -> 0.
                let disc = (s.r0 * s.r0 + 2.0 * k * need).max(0.0);
                let denom = s.r0 + disc.sqrt();
                let tau = if denom > 0.0 { 2.0 * need / denom } else { 0.0 };
                return Some(s.t0 + tau.clamp(0.0, s.dur));
            }
            *cursor += 1;
        }
        None
    }
}

#[derive(Default)]
struct Builder {
    segments: Vec<Segment>,
    t: f64,
    n: f64,
}

impl Builder {
    fn jump(&mut self, users: f64) {
        self.n += users;
    }

    fn linear(&mut self, dur: f64, r0: f64, r1: f64) {
        if dur <= 0.0 {
            return;
        }
        let seg = Segment { t0: self.t, dur, n0: self.n, r0, r1 };
        self.n += seg.arrivals_within(dur);
        // Whole arrivals stay whole (`100/s during 0.3s` is 30 users, not 30.000000000000004): the next step
        // starts exactly there and the schedule ends after exactly the last one.
        let whole = self.n.round();
        if (self.n - whole).abs() < 1e-9 {
            self.n = whole;
        }
        self.t += dur;
        self.segments.push(seg);
    }

    fn hold(&mut self, rate: f64) {
        self.segments.push(Segment { t0: self.t, dur: f64::INFINITY, n0: self.n, r0: rate, r1: rate });
    }
}

/// One worker's part of a schedule: its share of an arrival function, or (a replay) its requests' own times.
#[derive(Debug, Clone)]
pub(crate) struct WorkerSchedule {
    kind: Kind,
}

#[derive(Debug, Clone)]
enum Kind {
    Rate {
        schedule: Schedule,
        share: f64,
        prefix: f64,
        cursor: usize,
    },
    /// The intended times of the worker's requests, in order (a replay).
    Times(std::sync::Arc<[std::time::Duration]>),
}

impl WorkerSchedule {
    /// `share` is this worker's fraction of the arrivals, `prefix` the sum of the shares before it.
    pub fn new(schedule: Schedule, share: f64, prefix: f64) -> Self {
        Self { kind: Kind::Rate { schedule, share, prefix: prefix.fract(), cursor: 0 } }
    }

    /// A schedule of the worker's own requests at these times from the phase start (in order).
    pub fn times(times: std::sync::Arc<[std::time::Duration]>) -> Self {
        Self { kind: Kind::Times(times) }
    }

    /// When the worker's `j`-th request (from 0) is due, in seconds from the phase start; `None`: never.
    pub fn time_of(&mut self, j: u64) -> Option<f64> {
        match &mut self.kind {
            Kind::Rate { schedule, share, prefix, cursor } => {
                if *share <= 0.0 {
                    return None;
                }
                let x = (j as f64 + *prefix) / *share;
                schedule.time_of(x, cursor)
            }
            Kind::Times(t) => t.get(usize::try_from(j).ok()?).map(std::time::Duration::as_secs_f64),
        }
    }

    /// How many of the worker's requests are due strictly before `t` seconds.
    pub fn due_before(&self, t: f64) -> u64 {
        match &self.kind {
            Kind::Rate { schedule, share, prefix, .. } => {
                if *share <= 0.0 {
                    return 0;
                }
                let v = (*share * schedule.count_at(t) - *prefix).ceil();
                if v > 0.0 {
                    v as u64
                } else {
                    0
                }
            }
            Kind::Times(times) => times.partition_point(|d| d.as_secs_f64() < t) as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadgate_model::units::{Duration, Rate};
    use loadgate_plan::RampStage;

    fn worker_times(arrival: &Arrival, shares: &[f64], until: f64) -> Vec<Vec<f64>> {
        let sched = Schedule::from_arrival(arrival).unwrap();
        let mut prefix = 0.0;
        shares
            .iter()
            .map(|&s| {
                let mut w = WorkerSchedule::new(sched.clone(), s, prefix);
                prefix += s;
                let mut out = Vec::new();
                let mut j = 0;
                while let Some(t) = w.time_of(j) {
                    if t >= until {
                        break;
                    }
                    out.push(t);
                    j += 1;
                }
                out
            })
            .collect()
    }

    #[test]
    fn constant_rate_splits_exactly() {
        let arrival = Arrival::Constant { rate: Rate::from_per_sec(1000) };
        let one = worker_times(&arrival, &[1.0], 1.0);
        assert_eq!(one[0].len(), 1000);
        assert_eq!(one[0][0], 0.0);
        assert!((one[0][1] - 0.001).abs() < 1e-12);
        let three = worker_times(&arrival, &[1.0 / 3.0; 3], 1.0);
        assert_eq!(three.iter().map(Vec::len).sum::<usize>(), 1000);
        let mut merged: Vec<f64> = three.concat();
        merged.sort_by(f64::total_cmp);
        for (a, b) in merged.iter().zip(&one[0]) {
            assert!((a - b).abs() < 1e-9, "{a} vs {b}");
        }
        let uneven = worker_times(&arrival, &[0.4, 0.3, 0.3], 1.0);
        let total: usize = uneven.iter().map(Vec::len).sum();
        assert!((999..=1001).contains(&total), "{total}");
    }

    #[test]
    fn ramp_integrates_the_linear_rate() {
        let arrival = Arrival::Ramp {
            start: Rate::from_per_sec(0),
            stages: vec![RampStage { to: Rate::from_per_sec(1000), over: Duration::from_secs(2) }],
        };
        let s = Schedule::from_arrival(&arrival).unwrap();
        assert!((s.count_at(2.0) - 1000.0).abs() < 1e-9);
        assert!((s.count_at(1.0) - 250.0).abs() < 1e-9);
        assert!((s.count_at(3.0) - 2000.0).abs() < 1e-9, "holds the last rate");
        let t = worker_times(&arrival, &[1.0], 2.0);
        assert_eq!(t[0].len(), 1000);
        let mut c = 0;
        assert!((s.time_of(250.0, &mut c).unwrap() - 1.0).abs() < 1e-9);
    }

    #[test]
    fn users_at_once_then_per_second_then_nothing() {
        let arrival = Arrival::Users {
            steps: vec![
                UserStep::AtOnce { users: 10 },
                UserStep::Pause { during: Duration::from_secs(1) },
                UserStep::PerSecond { rate: Rate::from_per_sec(100), during: Duration::from_secs(1) },
            ],
        };
        let w = worker_times(&arrival, &[1.0 / 3.0; 3], 100.0);
        assert_eq!(w.iter().map(Vec::len).sum::<usize>(), 110);
        let at_zero: usize = w.iter().map(|v| v.iter().filter(|&&t| t == 0.0).count()).sum();
        assert_eq!(at_zero, 10);
        assert!(w.iter().flatten().all(|&t| t == 0.0 || (1.0..2.0).contains(&t)));
        let sched = Schedule::from_arrival(&arrival).unwrap();
        let ws = WorkerSchedule::new(sched, 1.0, 0.0);
        assert_eq!(ws.due_before(0.5), 10);
        assert_eq!(ws.due_before(100.0), 110);
    }

    #[test]
    fn users_end_after_the_last_step() {
        let arrival = Arrival::Users {
            steps: vec![
                UserStep::PerSecond { rate: Rate::from_per_sec(100), during: Duration::from_millis(300) },
                UserStep::Ramp { users: 10, over: Duration::from_millis(100) },
                UserStep::RampPerSecond {
                    from: Rate::from_per_sec(10),
                    to: Rate::from_per_sec(100),
                    during: Duration::from_millis(200),
                },
            ],
        };
        for workers in [1, 2, 3, 7] {
            let w = worker_times(&arrival, &vec![1.0 / workers as f64; workers], f64::INFINITY);
            assert_eq!(w.iter().map(Vec::len).sum::<usize>(), 51, "{workers} workers");
            assert!(w.iter().flatten().all(|&t| t < 0.6 + 1e-9));
        }
        let s = Schedule::from_arrival(&arrival).unwrap();
        assert_eq!(s.count_at(1e9), 51.0);
    }

    #[test]
    fn a_replay_worker_is_due_at_its_requests_own_times() {
        let ms = std::time::Duration::from_millis;
        let mut w = WorkerSchedule::times(vec![ms(0), ms(0), ms(5), ms(1000)].into());
        assert_eq!(w.time_of(2), Some(0.005));
        assert_eq!(w.time_of(4), None);
        assert_eq!((w.due_before(0.0), w.due_before(0.001), w.due_before(0.006), w.due_before(5.0)), (0, 2, 3, 4));
    }
}
