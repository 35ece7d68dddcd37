//! The options of `loadgate run`, `merge` and `repro` as the command line gives them (plain values, no argument
//! parser), made into [`JobOptions`] in one place: `--out -` given a scratch directory, the files the options
//! name read (`--baseline`, `--template`), the executable that starts the built-in server found, the shard
//! flags' [`Distribution`](crate::job::Distribution) decided with the options every local shard gets
//! ([`ShardOptions`], which `plan::ShardCommand` writes into each shard's argument list), the options that change
//! the plan ([`RunOverrides`]) and the live export's outputs.

use std::path::{Path, PathBuf};

use loadgate_model::output::OutputSpec;
use loadgate_model::units::CpuList;
pub use loadgate_model::{ConnectRate, OnInconclusive, Pacing};
use loadgate_plan::ShardOptions;
use loadgate_results::RunResults;

use crate::error::JobError;
use crate::export::ExportConfig;
use crate::interrupt::Interrupt;
use crate::job::{JobOptions, RunOverrides, ScratchDir};
use crate::memory::HistoryRequest;
use crate::placement::ShardFlags;
use crate::source::Vars;
use crate::target::BuiltinServer;

/// `loadgate run`'s options besides its specs, as given.
#[derive(Debug, Clone, Default)]
pub struct RunFlags {
    /// `--out DIR`; `-`: results.json on stdout, the reports in a scratch directory that is removed.
    pub out: PathBuf,
    pub vars: Vars,
    pub baseline: Option<PathBuf>,
    pub template: Option<PathBuf>,
    pub history: Option<HistoryRequest>,
    pub repeat: Option<u32>,
    pub on_inconclusive: Option<OnInconclusive>,
    pub pacing: Option<Pacing>,
    pub connect_rate: Option<ConnectRate>,
    pub pin_within_affinity: bool,
    pub shard_cpus: Option<CpuList>,
    pub from_flags: bool,
    /// The `--output`s in order (`None`: `--output none`).
    pub outputs: Vec<Option<OutputSpec>>,
    /// Sent with every push of the `--output`s given.
    pub output_headers: Vec<(String, String)>,
    pub metrics_listen: Option<String>,
    pub metrics_linger: std::time::Duration,
    pub checkpoint: std::time::Duration,
    /// `--shard`, `--shards`, ... (its `metrics_listen` is set from [`RunFlags::metrics_listen`]).
    pub shards: ShardFlags,
}

/// The job options of `loadgate run`, with the scratch directory that holds the reports of `--out -` (kept until
/// the run ends).
pub fn run(flags: RunFlags) -> Result<(JobOptions, Option<ScratchDir>), JobError> {
    let (out_root, scratch) = out_root(&flags.out, "run")?;
    let exe = exe()?;
    let shards = ShardFlags { metrics_listen: flags.metrics_listen.is_some(), ..flags.shards.clone() };
    // What every local shard process gets of this command line: what changes its plan, and its own series to
    // export (labelled `shard`; the spec's `outputs:` reach them with the spec).
    let shard_options = ShardOptions {
        sets: flags.vars.sets.clone(),
        secrets: flags.vars.secrets.clone(),
        allow_data_outside_spec_dir: flags.vars.allow_data_outside_spec_dir,
        max_data_file_bytes: flags.vars.max_data_file_bytes,
        repeat: flags.repeat,
        connect_rate: flags.connect_rate,
        pacing: flags.pacing,
        pin_within_affinity: flags.pin_within_affinity,
        outputs: flags.outputs.clone(),
        output_headers: flags.output_headers.clone(),
    };
    let distribution = crate::placement::distribution(&shards, &exe, shard_options).map_err(JobError::Invalid)?;
    // The `--output`s given, each with the `--output-header`s (`--output none` adds none).
    let outputs = flags.outputs.iter().flatten().map(|spec| {
        let mut spec = spec.clone();
        spec.headers.extend(flags.output_headers.iter().cloned());
        spec
    });
    Ok((
        JobOptions {
            out_root,
            overrides: RunOverrides {
                repeat: flags.repeat,
                on_inconclusive: flags.on_inconclusive,
                pacing: flags.pacing,
                connect_rate: flags.connect_rate,
            },
            distribution,
            baseline: baseline(flags.baseline.as_deref())?,
            template: template(flags.template.as_deref())?,
            step_summary: step_summary(),
            builtin: BuiltinServer::Process { exe },
            interrupt: Interrupt::from_signals(),
            pin_within_affinity: flags.pin_within_affinity,
            shard_cpus: flags.shard_cpus,
            history: flags.history,
            from_flags: flags.from_flags,
            export: ExportConfig {
                linger: flags.metrics_linger,
                ..ExportConfig::new(outputs.collect(), flags.metrics_listen)
            },
            spec_outputs: flags.outputs.is_empty(),
            checkpoint: Some(flags.checkpoint),
        },
        scratch,
    ))
}

/// The job options of `loadgate merge` (`out`: as `run --out`), with the scratch directory of `--out -`.
pub fn merge(
    out: &Path,
    baseline_file: Option<&Path>,
    template_file: Option<&Path>,
    history: Option<HistoryRequest>,
) -> Result<(JobOptions, Option<ScratchDir>), JobError> {
    let template = template(template_file)?;
    let (out_root, scratch) = out_root(out, "merge")?;
    let options = JobOptions {
        baseline: baseline(baseline_file)?,
        template,
        history,
        step_summary: step_summary(),
        ..JobOptions::new(out_root)
    };
    Ok((options, scratch))
}

/// The job options of `loadgate repro`: its reports under `out`, the built-in server a process.
pub fn repro(out: &Path, baseline_file: Option<&Path>, pin_within_affinity: bool) -> Result<JobOptions, JobError> {
    let exe = exe()?;
    Ok(JobOptions {
        baseline: baseline(baseline_file)?,
        step_summary: step_summary(),
        builtin: BuiltinServer::Process { exe },
        interrupt: Interrupt::from_signals(),
        pin_within_affinity,
        ..JobOptions::new(out)
    })
}

/// Where the reports go: `out`, or with `out` `-` a scratch directory (for the `what` named in its error).
fn out_root(out: &Path, what: &str) -> Result<(PathBuf, Option<ScratchDir>), JobError> {
    if out.as_os_str() != "-" {
        return Ok((out.to_path_buf(), None));
    }
    let scratch = ScratchDir::new()
        .map_err(|e| JobError::Machine(format!("cannot create a temporary directory for the {what}: {e}")))?;
    Ok((scratch.path().to_path_buf(), Some(scratch)))
}

/// This executable, which starts the built-in server as a process.
fn exe() -> Result<PathBuf, JobError> {
    std::env::current_exe().map_err(|e| {
        JobError::Machine(format!("cannot find the loadgate executable to start the built-in server: {e}"))
    })
}

/// The results `--baseline FILE` names (of `run`, `merge` and `repro`), read and checked.
fn baseline(path: Option<&Path>) -> Result<Option<RunResults>, JobError> {
    let read = |p: &Path| {
        crate::source::read_results(p)
            .map_err(|e| JobError::Invalid(format!("cannot read the baseline {}: {e}", p.display())))
    };
    path.map(read).transpose()
}

/// The minijinja template `--template FILE` names (of `run`, `merge` and `report`).
pub fn template(path: Option<&Path>) -> Result<Option<String>, JobError> {
    let read = |p: &Path| {
        std::fs::read_to_string(p)
            .map_err(|e| JobError::Invalid(format!("cannot read the template {}: {e}", p.display())))
    };
    path.map(read).transpose()
}

/// `GITHUB_STEP_SUMMARY`, when set: the final Markdown report is appended to it.
fn step_summary() -> Option<PathBuf> {
    std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()).map(Into::into)
}
