//! A phase's timeline, bounded: however long a phase runs, it keeps at most [`MAX_POINTS`] points, so an
//! hours-long soak's memory and its results stay flat.
//!
//! A phase planned longer than [`MAX_POINTS`] seconds (less two: its drain's tail and a margin) gets points
//! of several whole seconds each from its start (its planned seconds over that, rounded up): the workers' seconds are merged into the point being
//! filled, histograms added, so every point is exact (its percentiles are its own responses'). A phase that runs
//! on past [`MAX_POINTS`] points anyway (a request count, a ramp that outlives its plan) merges its points two by
//! two and doubles their width; a point merged after the fact keeps the larger median, 99th percentile and
//! maximum of its two parts (the worst of them, as the report's grouped rows show) and sums its counts.

use loadgate_measure::TimelinePoint;

use hdrhistogram::Histogram;

use crate::worker::Snapshot;

/// The most points a phase's timeline keeps (an hour of seconds).
pub(crate) const MAX_POINTS: usize = 3600;

/// The points of a phase so far, and the one being filled.
pub(crate) struct Timeline {
    /// Seconds per point.
    width: u64,
    max: usize,
    points: Vec<TimelinePoint>,
    /// The point being filled: its first and last second and its seconds merged so far.
    open: Option<(u64, u64, Snapshot)>,
}

impl Timeline {
    /// A timeline for a phase planned to last `planned_secs` (`None`: not known), of at most `max` points.
    pub(crate) fn new(planned_secs: Option<f64>, max: usize) -> Timeline {
        let max = max.max(4) & !1;
        // A planned phase never reaches `max`: its points stay exact.
        let width = planned_secs.map_or(1, |s| (s / (max - 2) as f64).ceil().max(1.0) as u64);
        Timeline { width, max, points: Vec::new(), open: None }
    }

    /// Seconds per point.
    #[cfg(test)]
    pub(crate) fn width(&self) -> u64 {
        self.width
    }

    /// The points so far (the point being filled is not among them).
    pub(crate) fn points(&self) -> &[TimelinePoint] {
        &self.points
    }

    /// Adds second `index` (merged over the workers). A point ends with the second that completes its width;
    /// `point` makes it from its first second, its merged snapshot and its end (seconds from the phase start).
    pub(crate) fn add(&mut self, index: u64, snap: Snapshot, point: &dyn Fn(u64, &Snapshot, f64) -> TimelinePoint) {
        self.fold(index, snap);
        if (index + 1) % self.width == 0 {
            self.close(index as f64 + 1.0, point);
        }
    }

    /// Adds the phase's last seconds (a partial one among them) and ends the timeline at `elapsed`.
    pub(crate) fn finish(
        mut self,
        rest: Vec<(u64, Snapshot)>,
        elapsed: f64,
        point: &dyn Fn(u64, &Snapshot, f64) -> TimelinePoint,
    ) -> Vec<TimelinePoint> {
        let mut tail = None;
        for (index, snap) in rest {
            if let Some(&(first, last, _)) = self.open.as_ref() {
                // A second outside the open point's width starts a point of its own.
                if index / self.width != first / self.width {
                    self.close(last as f64 + 1.0, point);
                }
            }
            self.fold(index, snap);
            tail = Some(index);
        }
        if let Some(&(_, last, _)) = self.open.as_ref() {
            // The last point ends with the phase; a partial last second ends where the phase did.
            let t = match tail {
                Some(index) => (index as f64 + 1.0).min(elapsed.max(index as f64)),
                None => last as f64 + 1.0,
            };
            self.close(t, point);
        }
        self.points
    }

    fn fold(&mut self, index: u64, snap: Snapshot) {
        match &mut self.open {
            Some((_, last, into)) => {
                merge_in_time(into, &snap);
                *last = index;
            }
            None => self.open = Some((index, index, snap)),
        }
    }

    fn close(&mut self, t: f64, point: &dyn Fn(u64, &Snapshot, f64) -> TimelinePoint) {
        if let Some((first, _, snap)) = self.open.take() {
            self.points.push(point(first, &snap, t));
            if self.points.len() >= self.max {
                self.halve();
            }
        }
    }

    /// Merges the points two by two and doubles the width of the points to come.
    fn halve(&mut self) {
        let old = std::mem::take(&mut self.points);
        let mut it = old.into_iter();
        while let Some(a) = it.next() {
            match it.next() {
                Some(b) => self.points.push(merge_points(&a, &b)),
                None => self.points.push(a),
            }
        }
        self.width *= 2;
    }
}

/// Adds a later second of the phase into `into`: counts add, histograms add, the most open connections and
/// in flight are the larger.
fn merge_in_time(into: &mut Snapshot, s: &Snapshot) {
    into.sent += s.sent;
    into.completed += s.completed;
    into.errors += s.errors;
    into.non_2xx += s.non_2xx;
    into.connections_open = into.connections_open.max(s.connections_open);
    into.in_flight = into.in_flight.max(s.in_flight);
    into.full &= s.full;
    add_histogram(&mut into.latency, &s.latency);
    add_histogram(&mut into.service_time, &s.service_time);
}

/// Two neighbouring points as one: counts add; latencies, connections and users are the larger.
fn merge_points(a: &TimelinePoint, b: &TimelinePoint) -> TimelinePoint {
    let max = |x: Option<u64>, y: Option<u64>| match (x, y) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, y) => x.or(y),
    };
    // The rate asked for over both: each part's rate over its own span.
    let target_rate = match (a.target_rate, b.target_rate) {
        (Some(ra), Some(rb)) => {
            let width_b = b.t - a.t;
            // `a`'s span is not known here: the points of a timeline (but its last) are equally wide.
            let width_a = width_b.max(1e-9);
            Some((ra * width_a + rb * width_b) / (width_a + width_b).max(1e-9))
        }
        (x, y) => x.or(y),
    };
    TimelinePoint {
        t: b.t,
        sent: a.sent + b.sent,
        completed: a.completed + b.completed,
        errors: a.errors + b.errors,
        non_2xx: a.non_2xx + b.non_2xx,
        target_rate,
        p50_us: a.p50_us.max(b.p50_us),
        p99_us: a.p99_us.max(b.p99_us),
        max_us: a.max_us.max(b.max_us),
        connections_open: a.connections_open.max(b.connections_open),
        users_active: max(a.users_active, b.users_active),
        in_flight: max(a.in_flight, b.in_flight),
        service_p50_us: max(a.service_p50_us, b.service_p50_us),
    }
}

/// Adds `from` into `into`; values outside `into`'s range count at its highest.
pub(crate) fn add_histogram(into: &mut Histogram<u64>, from: &Histogram<u64>) {
    if into.add(from).is_err() {
        merge_by_values(into, from);
    }
}

pub(crate) fn merge_by_values(into: &mut Histogram<u64>, from: &Histogram<u64>) {
    for v in from.iter_recorded() {
        let _ = into.record_n(v.value_iterated_to().min(into.high()), v.count_at_value());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadgate_measure::new_histogram;

    fn second(index: u64, latency_us: u64) -> Snapshot {
        let mut latency = new_histogram();
        latency.record(latency_us).unwrap();
        Snapshot {
            interval: index,
            sent: 1,
            completed: 1,
            errors: 0,
            non_2xx: 0,
            latency,
            service_time: new_histogram(),
            connections_open: index,
            in_flight: 1,
            full: true,
            totals: Default::default(),
            error_kinds: Default::default(),
            status: Default::default(),
            send_lag: new_histogram(),
        }
    }

    fn point(first: u64, s: &Snapshot, t: f64) -> TimelinePoint {
        TimelinePoint {
            t,
            sent: s.sent,
            completed: s.completed,
            p50_us: loadgate_measure::value_at_percentile(&s.latency, 50.0),
            max_us: s.latency.max(),
            connections_open: s.connections_open,
            target_rate: Some(first as f64),
            ..Default::default()
        }
    }

    #[test]
    fn a_short_phase_keeps_a_point_per_second() {
        let mut tl = Timeline::new(Some(10.0), MAX_POINTS);
        assert_eq!(tl.width(), 1);
        for i in 0..10 {
            tl.add(i, second(i, 100 + i), &point);
        }
        let points = tl.finish(vec![(10, second(10, 5))], 10.004, &point);
        assert_eq!(points.len(), 11);
        assert_eq!(points[0].t, 1.0);
        assert_eq!(points[9].t, 10.0);
        assert!((points[10].t - 10.004).abs() < 1e-9);
    }

    #[test]
    fn a_long_planned_phase_gets_wider_points_with_exact_percentiles() {
        // 100 seconds in at most 10 points: 13 seconds each (100 / 8, rounded up), never merged after the fact.
        let mut tl = Timeline::new(Some(100.0), 10);
        assert_eq!(tl.width(), 13);
        for i in 0..100 {
            tl.add(i, second(i, 1000 + i), &point);
        }
        let points = tl.finish(vec![(100, second(100, 7))], 100.01, &point);
        assert_eq!(points.iter().map(|p| p.sent).sum::<u64>(), 101);
        assert_eq!(points.len(), 8);
        assert_eq!(points.iter().map(|p| p.t).collect::<Vec<_>>(), [13.0, 26.0, 39.0, 52.0, 65.0, 78.0, 91.0, 100.01]);
        // Each point's percentiles are its own seconds': the first point's median is its 7th second's.
        assert_eq!(points[0].max_us, 1012);
        assert_eq!(points[0].p50_us, 1006);
        assert_eq!(points.last().map(|p| p.max_us), Some(1099));
        assert_eq!(points.last().map(|p| p.connections_open), Some(100));
    }

    #[test]
    fn a_phase_that_runs_on_stays_bounded() {
        let max = 8;
        let mut tl = Timeline::new(None, max);
        for i in 0..1000 {
            tl.add(i, second(i, 10 + i % 7), &point);
            assert!(tl.points().len() < max, "{} points after {i} s", tl.points().len());
        }
        let points = tl.finish(vec![(1000, second(1000, 1))], 1000.5, &point);
        assert!(points.len() <= max);
        assert_eq!(points.iter().map(|p| p.sent).sum::<u64>(), 1001);
        assert_eq!(points.iter().map(|p| p.completed).sum::<u64>(), 1001);
        assert!(points.windows(2).all(|w| w[0].t < w[1].t), "{points:?}");
        assert!((points.last().unwrap().t - 1000.5).abs() < 1e-9);
        // Connections: the most open in each point, so the last point's is its last second's.
        assert_eq!(points.last().unwrap().connections_open, 1000);
    }
}
