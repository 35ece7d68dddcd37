//! The lines the terminal shows while a run goes and after a command: a second's progress, the opening of a phase's
//! connections, a finished round, a merge, the verdicts of `history check`. Pure: the binary prints them.

use loadgate_results::{format, OutcomeStatus, RunResults, ScenarioResult, TimelinePoint, Verdict};

/// A second of a phase: `12,000 req/s  p99 1.20ms  errors 0  non-2xx 0  conns 64`.
pub fn tick_line(p: &TimelinePoint) -> String {
    format!(
        "{} req/s  p99 {}  errors {}  non-2xx {}  conns {}",
        format::count(p.completed),
        format::latency(p.p99_us),
        format::count(p.errors),
        format::count(p.non_2xx),
        format::count(p.connections_open)
    )
}

/// The opening of a phase's keep-alive connections after `secs` seconds: how far it got, or (`done`) how it ended.
pub fn opening_line(connections: u64, opened: u64, failed: u64, secs: f64, done: bool) -> String {
    let (connections, opened_n, failed) = (format::count(connections), format::count(opened), format::count(failed));
    if done {
        format!("opened {opened_n} of {connections} connections in {secs:.1} s, {failed} failed")
    } else {
        let rate = format::rate(if secs > 0.0 { opened as f64 / secs } else { 0.0 });
        format!("opening {connections} connections: {opened_n} open, {failed} failed, {rate}")
    }
}

/// A finished round of `phase`: `orders round 3 B: 2,000/s, p99 1.20ms`; round 0 is a duet's solo round; `side` is
/// named in an A/B run.
pub fn round_line(phase: &str, round: u32, side: Option<&str>, result: &ScenarioResult) -> String {
    let p99 = result.latency.percentiles.get("p99").copied().unwrap_or_default();
    let round = if round == 0 { "solo".to_owned() } else { format!("round {round}") };
    let side = side.map(|s| format!(" {s}")).unwrap_or_default();
    let stopped = result.aborted.as_deref().map(|a| format!(" (stopped: {a})")).unwrap_or_default();
    format!("{phase} {round}{side}: {}, p99 {}{stopped}", format::rate(result.throughput), format::latency(p99))
}

/// What `loadgate merge` merged: `merged 2 shards of run `nightly-41``.
pub fn merged_line(results: &RunResults) -> String {
    let n = results.shards.len();
    let run_id = results.shards.first().map_or("", |s| s.run_id.as_str());
    format!("merged {n} shard{} of run `{run_id}`", if n == 1 { "" } else { "s" })
}

/// A verdict of `history check` on `instance`: `  FAIL         api/get: p99 <= ... (why)`.
pub fn history_check_line(instance: &str, v: &Verdict) -> String {
    let word = match v.outcome() {
        OutcomeStatus::Passed => "pass",
        OutcomeStatus::Inconclusive => "INCONCLUSIVE",
        _ => "FAIL",
    };
    format!("  {word:<12} {instance}: {} ({})", v.slo, v.explain())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_opening_line_says_its_rate_while_it_goes_and_its_time_when_done() {
        assert_eq!(opening_line(1000, 250, 0, 0.5, false), "opening 1,000 connections: 250 open, 0 failed, 500/s");
        assert_eq!(opening_line(1000, 998, 2, 1.25, true), "opened 998 of 1,000 connections in 1.2 s, 2 failed");
    }

    #[test]
    fn a_round_line_names_the_solo_round_and_the_side_only_when_given() {
        let r = loadgate_results::fixture::sweep_cell(1, 2000.0, 1.0);
        let line = round_line("orders", 0, Some("A"), &r);
        assert!(line.starts_with("orders solo A: 2,000/s, p99 "), "{line}");
        let line = round_line("orders", 3, None, &r);
        assert!(line.starts_with("orders round 3: 2,000/s, p99 ") && !line.contains("stopped"), "{line}");
    }
}
