//! loadgate's load engine: runs one phase of an [`ExecutionPlan`] against a target and measures it.
//!
//! # Library API
//!
//! ```text
//! run_phase(phase: &Phase, workers: &[WorkerPlan], target: &Target, stop: &StopSignal,
//!           on_tick: &mut dyn FnMut(&Tick<'_>) -> Control) -> Result<PhaseMeasurement, EngineError>
//! ```
//!
//! - `workers` has one entry per worker thread, as many as `phase.workers` (the load split). A worker with
//!   `cpu: Some(n)` pins its thread to CPU `n` with `sched_setaffinity` before anything else; `None` runs
//!   unpinned.
//! - [`Target`] is the resolved socket address and the `Host` header value.
//! - [`StopSignal`] ends the phase early from another thread (Ctrl-C, the target died); workers check it on
//!   their pacer tick (every 1 ms in open loads, 10 ms in closed ones), never per request.
//! - `on_tick` is called on the calling thread once per second of the phase with the interval's
//!   [`TimelinePoint`](loadgate_measure::TimelinePoint), the merged latency histogram of the interval and the
//!   cumulative one. Returning [`Control::Abort`] stops the phase (and sets `aborted` in the result).
//! - The result is a [`PhaseMeasurement`](loadgate_measure::PhaseMeasurement): what was measured, with no
//!   judgments (SLO evaluation belongs elsewhere; `loadgate_results::ScenarioResult` is built from it with
//!   `From`, with `verdicts` empty), and `started_at_offset` taken from the plan (`phase.start_offset`, or 0):
//!   the caller knows the run's real start and may overwrite it.
//! - [`EngineError`] means the phase could not run at all (a thread or runtime could not be created, pinning
//!   failed, the plan is inconsistent). Everything that happens on the network is counted in the result.
//!
//! # What is measured
//!
//! Latency is in microseconds, in histograms from [`loadgate_measure::new_histogram`].
//!
//! - `latency`: completion minus the request's **intended** send time. In open loads the intended time comes
//!   from the arrival schedule, so a stalled server shows in the percentiles (coordinated omission
//!   corrected). In closed loads the intended time is when the connection took the request: with keep-alive
//!   that is the send time (latency equals service time); without keep-alive it is before the connect, so
//!   latency includes the connect, as ab reports.
//! - `service_time`: actual send to completion. `send_lag`: actual send minus intended send (open loads only).
//!   An open load's pacer wakes at a request's intended time when a connection is free for it, at most once
//!   a millisecond for that, so an idle generator's send lag is tens of microseconds up to 1,000 requests/s
//!   per worker and spread over 0..1 ms above; it is part of `latency`, as it must be.
//! - `connect_time`: every successful TCP connect.
//!
//! Completion is the moment the response's last bytes reached the socket: the kernel's receive timestamp
//! (`SO_TIMESTAMPNS`), or the time of the read where the socket gives none. The worker may therefore read
//! responses late (an open load without pipelining whose due requests all have a free connection reads once
//! per pacer wake) without moving a single latency; it reads at once while reads come without timestamps.
//!
//! # Opening
//!
//! A keep-alive phase (closed, open, ramp) opens its connections before it measures (the `opening` module):
//! each worker's slots connect as its pacer lets them (`phase.load.connections.connect_rate`: `auto` starts at
//! 4 connects per millisecond per worker and halves when a connect stalls, a fixed rate is shared between the
//! workers, `unlimited` connects all at once), a stalled connect is abandoned and tried again at once rather
//! than left to the kernel's SYN retransmits, and the phase's start instant is taken once every slot of every
//! worker has tried. The opening's counts and duration are `connections.opening` in the result; its connects
//! are in `connect_time`; the workers' CPU, the timeline and the load's duration start after it. A slot whose
//! opening failed keeps trying during the load, as always.
//!
//! # Stop and drain
//!
//! A duration-bound phase stops issuing requests at the deadline; requests in flight then get
//! `min(timeout, 2 s)` to complete and the rest are reported as `incomplete`. Requests an open schedule wanted
//! sent before the stop but that never were (all connections busy) are reported as `unsent`. A request-count
//! phase runs each worker's exact quota; in closed loads the quota is split exactly over its connections. In
//! a request-count run a failed connect attempt uses up one request, so that a dead target cannot make the run
//! endless.
//!
//! # Load models
//!
//! One loop serves every model (see the `worker` module): `Arrival::Closed` keeps `pipeline` requests in
//! flight per connection (batch mode: write `pipeline`, wait for all; window mode: replace each as it
//! completes); `Constant` and `Ramp` issue requests at the intended times of the cumulative arrival function,
//! each worker scaled by its exact share; `Users` is the same open schedule where every arrival is a user that
//! opens its own connection, sends its one request and closes. A user phase ends as soon as the last user of
//! its last step has finished, whatever its deadline. A user phase's `connections` caps the users in
//! flight per worker (1024 when the plan gives 0); when every slot is busy, arriving users wait and their
//! latency grows. `keep_alive: false` opens a connection per request in any model.
//!
//! # Sessions
//!
//! A user phase with `phase.session` gives every user its steps instead of one request, on the same loop: the
//! user's slot connects with the first request step, and each time that connection has nothing in flight the
//! slot takes the session's next step on the same connection: a think time pauses the user (one timer per
//! user; users in a think time count as active), a request step is built into the connection's buffer and
//! sent. After the last step the user closes. A failed request (or a server that closes the connection) ends
//! the user's session. The first request's latency runs from the user's intended arrival, later ones from
//! their send. The request steps are the phase's entries: `by_request` has one breakdown per request step, in
//! session order, and `users_started`/`users_finished` count users, not requests. After the deadline, users in
//! their session get the usual drain once per request step plus the session's think times.
//!
//! # Requests, generated values and mixes
//!
//! A phase with one static request (no mix, `request.dynamic == None`) serializes it once and writes it from
//! repeated bytes: no per-request work beyond the copy into the socket. A request with generated values
//! (`{{ seq() }}`, `{{ uuid() }}`, ...) is compiled once per phase into literal bytes and generator slots
//! (checked before the load starts: a picked value with a space cannot reach the request line unencoded) and
//! serialized per request into its connection's reusable buffer, with `Content-Length` computed per request
//! when the body is generated. No allocation per request once the buffers have grown.
//!
//! A mix (`phase.mix`) picks an entry per request (per arrival in open loads, per send in closed ones) with
//! probability `weight / sum`; each entry may be static or generated. Requests of different entries can be in
//! flight on one pipelined connection: each remembers its entry. The result carries the totals as usual and
//! one [`RequestBreakdown`](loadgate_measure::RequestBreakdown) per entry in `by_request`, in the mix's order
//! (empty without a mix). Connect failures count against an entry only when the connection was for one
//! request (keep-alive off, users); with keep-alive they are in the totals only.
//!
//! Values come from per-worker xoshiro256** sources seeded from `phase.seed` and the worker's index (one
//! source chooses mix entries, another fills values), so two runs with the same seed, worker count and
//! request count send the same multiset of requests. `seq(start, step)` gives worker `w` of `n` the values
//! `start + (w + k n) step`, so no value repeats within a phase.
//!
//! # Errors
//!
//! Each request is counted once: completed, or failed as `read` (the server closed or reset before the
//! response ended), `write`, `timeout` (no response `phase.timeout` after sending; the connection is then
//! closed and reopened, and every request in flight on it counts as timed out) or `protocol` (a response that
//! cannot be framed). Failed connects count as `connect` errors and are retried with a backoff from 1 ms to
//! 100 ms. When a server closes a connection (`Connection: close` or end of stream) the slot reconnects and the
//! reconnect is counted; requests pipelined behind a `Connection: close` response are sent again on the new
//! connection.
//!
//! `connections.peak_open` is the sum of the workers' peaks (exact when they peak together, as with
//! keep-alive).
//!
//! # Validity
//!
//! The result is invalid (`validity.valid == false`) with problem `rate_not_reached` when an open load sent
//! less than 99% of its target rate, and `connections_missing` when not every planned connection was opened.
//! Warnings: `generator_saturated` (a worker used 90% or more of its CPU), `incomplete_requests`,
//! `ephemeral_ports_exhausted` (connects failed with `EADDRNOTAVAIL`).

// Response checks (issue 30): what the worker's inspector runs (`worker::inspect`).
pub(crate) mod check;
mod codec;
mod control;
mod data;
pub mod grpc;
mod h2;
pub mod hpack;
mod opening;
mod phase;
mod replay;
mod request;
mod rt;
mod schedule;
pub mod sse;
pub mod stream_metrics;
mod sys;
mod timeline;
pub mod tls;
mod transport;
mod vars;
mod worker;

pub use control::{Control, EngineError, OpeningProgress, StopSignal, Target};
pub use loadgate_plan::{ExecutionPlan, Phase, WorkerPlan};
pub use phase::{Progress, Tick};

/// Runs one phase: spawns one pinned worker thread per entry of `workers`, applies the phase's load, calls
/// `on_tick` every second, and returns the measured result. Blocks until the phase ends.
pub fn run_phase(
    phase: &Phase,
    workers: &[WorkerPlan],
    target: &Target,
    stop: &StopSignal,
    on_tick: &mut dyn FnMut(&Tick<'_>) -> Control,
) -> Result<loadgate_measure::PhaseMeasurement, EngineError> {
    phase::run(phase, workers, target, stop, &mut |_| {}, on_tick)
}

/// [`run_phase`], and `on_opening` told how the opening of the keep-alive connections goes while it lasts
/// over a second (see [`OpeningProgress`]).
pub fn run_phase_reporting(
    phase: &Phase,
    workers: &[WorkerPlan],
    target: &Target,
    stop: &StopSignal,
    on_opening: &mut dyn FnMut(&OpeningProgress),
    on_tick: &mut dyn FnMut(&Tick<'_>) -> Control,
) -> Result<loadgate_measure::PhaseMeasurement, EngineError> {
    phase::run(phase, workers, target, stop, on_opening, on_tick)
}

/// A duet phase: the phase run against each of `targets` at once, from the same workers (each worker's lanes
/// share its thread, its start and its schedule, so every intended instant sends one request to each target, in a
/// keyed random order per pair). Each target gets the phase's whole load: the generator sends `targets.len()`
/// times the plan's. One measurement per target, in order; `on_tick` is told each lane's seconds with its index.
/// With one target it is [`run_phase_reporting`].
pub fn run_phase_together(
    phase: &Phase,
    workers: &[WorkerPlan],
    targets: &[&Target],
    stop: &StopSignal,
    on_opening: &mut dyn FnMut(&OpeningProgress),
    on_tick: &mut dyn FnMut(usize, &Tick<'_>) -> Control,
) -> Result<Vec<loadgate_measure::PhaseMeasurement>, EngineError> {
    phase::run_lanes(phase, workers, targets, stop, on_opening, on_tick)
}
