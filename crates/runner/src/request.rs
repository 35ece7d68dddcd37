//! What a run needs besides the plan ([`RunRequest`]) and how it ended ([`RunOutcome`]).

use std::path::PathBuf;

use loadgate_results::{OutcomeStatus, RunResults};

use crate::interrupt::Interrupt;
use crate::target::BuiltinServer;

/// Everything a run needs besides the plan.
#[derive(Debug, Clone)]
pub struct RunRequest {
    /// Reports go to `<out_root>/<plan name>/`.
    pub out_root: PathBuf,
    /// The spec file as the user named it, for the reports (`(command line)` for a spec built from flags).
    pub spec_file: String,
    /// The spec's directory: relative paths in it (a start command's `cwd`) and the git state are read there.
    pub source_dir: Option<PathBuf>,
    /// The spec's validation warnings, kept in the reports.
    pub spec_warnings: Vec<String>,
    /// Earlier results for relative SLOs (`p99 <= baseline * 1.10`).
    pub baseline: Option<RunResults>,
    /// A minijinja template that replaces the built-in Markdown report.
    pub template: Option<String>,
    /// A file the final Markdown report is appended to (GitHub's `GITHUB_STEP_SUMMARY`).
    pub step_summary: Option<PathBuf>,
    /// How a `builtin:` target starts.
    pub builtin: BuiltinServer,
    pub interrupt: Interrupt,
    /// The version written into results.json.
    pub loadgate_version: String,
    /// Values that must not reach a report (the spec's [`loadgate_model::Spec::secrets`]).
    pub secrets: loadgate_model::secrets::Redactor,
    /// This run is one shard of a run on several generators (`--shard I/N`): its start is synchronised and
    /// its results carry a [`loadgate_results::ShardInfo`]. The plan is then the shard's slice.
    pub shard: Option<crate::shards::ShardRun>,
    /// The spec's text and files, embedded in results.json for `loadgate repro` (`None`: not kept).
    pub source: Option<loadgate_results::SpecSource>,
    /// Map the spec's pinned CPUs onto the CPUs this process may use (`run --pin-within-affinity`, for a
    /// container whose CPU ids are not the spec's): see [`crate::prepare::decide_pinning`].
    pub pin_within_affinity: bool,
    /// This shard's part of the spec's generator CPUs (`run --shard-cpus`, given by `run --shards N` to each
    /// local shard): the spec's generator CPUs are folded onto it (see [`crate::prepare::decide_pinning_on_part`]).
    pub shard_cpus: Option<loadgate_model::units::CpuList>,
    /// Record the run in a history store and judge the plan's `history:` checks against it (see [`crate::memory`]).
    pub history: Option<crate::memory::HistoryRequest>,
    /// Write the results so far to `results.partial.json` this often while the run goes (see
    /// [`crate::checkpoint`]); `None` or zero: never.
    pub checkpoint: Option<std::time::Duration>,
    /// Started just before each side's measured phase and stopped just after it, in every round (see
    /// [`crate::attach`]); what they give comes with that side's result.
    pub attachments: Vec<std::sync::Arc<dyn crate::attach::Attachment>>,
}

impl RunRequest {
    /// The run's reports directory: `<out_root>/<plan name>/`; a shard keeps its own reports beside its shard
    /// result (`shard-2-of-4.json`): `<name>/shard-2-of-4/`.
    pub fn dir_of(&self, plan: &loadgate_plan::ExecutionPlan) -> PathBuf {
        match &self.shard {
            Some(s) => self.out_root.join(&plan.name).join(s.slice.file_name().trim_end_matches(".json")),
            None => self.out_root.join(&plan.name),
        }
    }

    /// A request with defaults: reports under `out_root`, the built-in server in this process, no baseline.
    pub fn new(out_root: impl Into<PathBuf>) -> Self {
        RunRequest {
            out_root: out_root.into(),
            spec_file: String::new(),
            source_dir: None,
            spec_warnings: Vec::new(),
            baseline: None,
            template: None,
            step_summary: None,
            builtin: BuiltinServer::InProcess,
            interrupt: Interrupt::new(),
            loadgate_version: env!("CARGO_PKG_VERSION").to_owned(),
            secrets: Default::default(),
            shard: None,
            source: None,
            pin_within_affinity: false,
            shard_cpus: None,
            history: None,
            checkpoint: None,
            attachments: Vec::new(),
        }
    }
}

/// How a run ended.
#[derive(Debug)]
pub struct RunOutcome {
    /// The reports' directory.
    pub dir: PathBuf,
    /// What was measured and decided (`None` when the spec was skipped on this machine).
    pub results: Option<RunResults>,
    /// `on_mismatch: skip` applied: the spec does not fit this machine and nothing ran.
    pub skipped: Option<String>,
    /// Report files that could not be written (a full disk): the run then could not be carried out.
    pub write_failures: Vec<crate::reports::WriteFailure>,
}

impl RunOutcome {
    /// The run's verdict, with a report that could not be written counted as a run that could not be
    /// carried out.
    pub fn status(&self) -> OutcomeStatus {
        let status = self.results.as_ref().map(|r| r.outcome.status).unwrap_or(OutcomeStatus::Passed);
        if self.write_failures.is_empty() || status == OutcomeStatus::RunFailed {
            status
        } else if status == OutcomeStatus::Incomplete {
            OutcomeStatus::Incomplete
        } else {
            OutcomeStatus::RunFailed
        }
    }
}
