//! Checkpoints: while a run goes, the results so far are written every interval (`run --checkpoint`, 60 s by
//! default) to `results.partial.json` in the reports' directory, atomically (a temporary file renamed over the
//! last one), the instance in progress with what it has measured so far. Ctrl-C and SIGTERM stop the run,
//! which then writes `results.json` with what it measured, as ever; the checkpoint is what survives a death no
//! process can catch (SIGKILL, the OOM killer, a lost machine): `loadgate report results.partial.json` renders
//! it, marked incomplete. A run that ends and writes its reports removes its checkpoint.
//!
//! The checkpoint is written on the thread that runs the phase, at the engine's once-a-second tick, never on
//! a worker's: the load does not wait for it.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use loadgate_engine::Tick;
use loadgate_model::secrets::Redactor;
use loadgate_results::{Checkpoint, RunResults, ScenarioResult};

use crate::clock::now_rfc3339;

/// The checkpoint's file name, in the run's reports directory.
pub const CHECKPOINT_FILE: &str = "results.partial.json";

/// The checkpoint interval `loadgate run` uses unless `--checkpoint` says otherwise.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(60);

/// Writes a run's checkpoints.
#[derive(Debug)]
pub struct Checkpointer {
    path: PathBuf,
    every: Duration,
    /// Where the run's seconds count from.
    origin: Instant,
    secrets: Redactor,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    /// The run's results as of its last judged instance.
    base: Option<RunResults>,
    last: Instant,
    /// The last write failed (said once, not every interval).
    failed: bool,
}

impl Checkpointer {
    /// Checkpoints of the run whose reports go to `dir`, every `every`.
    pub fn new(dir: &Path, every: Duration, origin: Instant, secrets: Redactor) -> Checkpointer {
        Checkpointer {
            path: dir.join(CHECKPOINT_FILE),
            every,
            origin,
            secrets,
            state: Mutex::new(State { base: None, last: Instant::now(), failed: false }),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The results the next checkpoints start from (the instances judged so far).
    pub fn set_base(&self, results: &RunResults) {
        if let Ok(mut s) = self.state.lock() {
            s.base = Some(results.clone());
        }
    }

    /// A tick of a phase that started `offset` seconds into the run: writes a checkpoint when one is due.
    /// Returns the error of a write that failed, the first time one does.
    pub fn tick(&self, tick: &Tick<'_>, offset: f64) -> Option<String> {
        let Ok(mut s) = self.state.lock() else { return None };
        if s.last.elapsed() < self.every {
            return None;
        }
        s.last = Instant::now();
        let base = s.base.as_ref()?;
        let mut results = base.clone();
        let mut current = ScenarioResult::from(tick.progress.measurement());
        current.started_at_offset = offset;
        let in_progress = Some(current.name.clone());
        // Repetitions of an instance judged already: the checkpoint keeps the judged ones.
        if !results.scenarios.iter().any(|r| r.index == current.index) {
            results.scenarios.push(current);
        }
        let written = self.write(&mut results, in_progress);
        match written {
            Err(e) if !s.failed => {
                s.failed = true;
                Some(e)
            }
            Err(_) => None,
            Ok(()) => {
                s.failed = false;
                None
            }
        }
    }

    fn write(&self, results: &mut RunResults, in_progress: Option<String>) -> Result<(), String> {
        results.finished_at = None;
        results.checkpoint = Some(Checkpoint {
            written_at: now_rfc3339(),
            run_seconds: self.origin.elapsed().as_secs_f64(),
            in_progress,
        });
        results.outcome = loadgate_results::outcome(results);
        let failed = |e: &dyn std::fmt::Display| format!("cannot write the checkpoint {}: {e}", self.path.display());
        if !self.secrets.is_empty() {
            // Secrets are replaced in the whole text (one may span any two writes).
            let json = loadgate_results::to_json(results).map_err(|e| e.to_string())?;
            return crate::reports::write_atomic(&self.path, &self.secrets.scrub(&json)).map_err(|e| failed(&e));
        }
        // Nothing to replace: streamed to the file, so a long run's checkpoint never sits in memory whole.
        crate::reports::write_atomic_with(&self.path, |file| {
            let mut w = std::io::BufWriter::new(file);
            loadgate_results::write_json(results, &mut w)?;
            std::io::Write::flush(&mut w)
        })
        .map_err(|e| failed(&e))
    }

    /// The run wrote its reports: its checkpoint is out of date.
    pub fn remove(&self) {
        let _ = std::fs::remove_file(&self.path);
    }
}
