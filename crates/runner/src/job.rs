//! A [`Job`]: what the user gave (a validated spec from a file or from command-line flags, a results.json to
//! reproduce, shard results to merge) turned into what runs, in one place: the options that change the plan
//! applied, the spec embedded for `loadgate repro`, the plan compiled and sliced for a shard, the [`RunRequest`]
//! built. `loadgate run`, `run --shards N`, `repro` and `merge` each build a `Job` and [`Job::run`] it; the
//! binary parses arguments, renders events and maps the outcome to an exit code.

use std::path::{Path, PathBuf};

use loadgate_model::secrets::Redactor;
use loadgate_model::Spec;
use loadgate_plan::{ExecutionPlan, ShardOptions, Slice};
pub use loadgate_repro::RunOverrides;
use loadgate_results::{RunResults, ShardPart};

use crate::event::Observer;
use crate::interrupt::Interrupt;
use crate::memory::HistoryRequest;
use crate::request::{RunOutcome, RunRequest};
use crate::shard_merge::{LocalShards, MergeOptions};
use crate::shards::{ShardRun, StartSync};
use crate::target::BuiltinServer;

pub use crate::error::JobError;
pub use crate::scratch::ScratchDir;
pub use crate::source::SpecInput;
use crate::RunError;

/// How a job's plan is run.
#[derive(Debug, Clone, Default)]
pub enum Distribution {
    /// On this generator, whole.
    #[default]
    Whole,
    /// Slice `slice` of the plan, as one shard of a run on several generators (`--shard I/N`).
    Slice { slice: Slice, start: StartSync, run_id: Option<String> },
    /// `--shards N`: N shard processes of `exe` on this machine, merged. `options` are what every shard gets
    /// of the command line (`--set`, `--pacing`, ...).
    Local { count: u32, exe: PathBuf, options: ShardOptions, run_id: Option<String> },
}

/// What a job needs besides its spec.
#[derive(Debug, Clone)]
pub struct JobOptions {
    /// Reports go to `<out_root>/<spec name>/`.
    pub out_root: PathBuf,
    /// The options of the command line that change the plan (`--repeat`, `--pacing`, ...).
    pub overrides: RunOverrides,
    pub distribution: Distribution,
    /// `--baseline`: earlier results for relative SLOs.
    pub baseline: Option<RunResults>,
    /// `--template`: replaces the built-in Markdown report.
    pub template: Option<String>,
    /// A file the final Markdown report is appended to (GitHub's `GITHUB_STEP_SUMMARY`).
    pub step_summary: Option<PathBuf>,
    /// How a `builtin:` target starts.
    pub builtin: BuiltinServer,
    pub interrupt: Interrupt,
    /// `--pin-within-affinity`.
    pub pin_within_affinity: bool,
    /// `--shard-cpus` (given by `run --shards N` to each local shard).
    pub shard_cpus: Option<loadgate_model::units::CpuList>,
    /// `--history STORE`.
    pub history: Option<HistoryRequest>,
    /// `--from-flags`: this shard runs the spec a run from command-line flags made (named as the run's own).
    pub from_flags: bool,
    /// Live metrics while the run goes (`--output`, `--metrics-listen`); nothing when empty.
    pub export: loadgate_export::ExportConfig,
    /// Whether the spec's `outputs:` are sent to besides `export` (the command line gave no `--output`).
    pub spec_outputs: bool,
    /// `--checkpoint`: how often the results so far are written while the run goes (`None`: never).
    pub checkpoint: Option<std::time::Duration>,
}

impl JobOptions {
    /// Options with defaults: reports under `out_root`, the built-in server in this process, nothing else.
    pub fn new(out_root: impl Into<PathBuf>) -> JobOptions {
        JobOptions {
            out_root: out_root.into(),
            overrides: RunOverrides::default(),
            distribution: Distribution::Whole,
            baseline: None,
            template: None,
            step_summary: None,
            builtin: BuiltinServer::InProcess,
            interrupt: Interrupt::new(),
            pin_within_affinity: false,
            shard_cpus: None,
            history: None,
            from_flags: false,
            export: loadgate_export::ExportConfig::new(Vec::new(), None),
            spec_outputs: true,
            checkpoint: None,
        }
    }
}

/// What runs: a plan with its request, local shards, or a merge.
#[derive(Debug)]
enum Work {
    Run(Box<ExecutionPlan>),
    Local { plan: Box<ExecutionPlan>, local: Box<LocalShards> },
    Merge { plan: Option<Box<ExecutionPlan>>, parts: Vec<ShardPart>, dir: PathBuf, interrupted: bool },
}

/// A run ready to go.
#[derive(Debug)]
pub struct Job {
    request: RunRequest,
    secrets: Redactor,
    work: Work,
    /// The live export, when the job has outputs (runs only, never a merge).
    export: Option<loadgate_export::ExportConfig>,
    /// Files the run reads (the spec a run from flags gives its shards, a reproduced spec), removed after it.
    _scratch: Option<ScratchDir>,
}

impl Job {
    /// The job of a validated spec: the options that change the plan applied (and kept with the embedded spec),
    /// the plan compiled, sliced for a shard.
    pub fn from_spec(input: SpecInput, options: JobOptions) -> Result<Job, JobError> {
        let SpecInput { mut spec, file, dir, text, flags_yaml } = input;
        // A shard of a run from flags: named as the run's own, and embedded as it would be (not with a credential).
        let (file, text) = if options.from_flags {
            ("(command line)".to_owned(), text.filter(|t| spec.secrets.scrub(t) == *t))
        } else {
            (file, text)
        };
        let source = text.map(|t| loadgate_repro::embed(&t, &spec, &options.overrides));
        options.overrides.apply(&mut spec).map_err(JobError::Invalid)?;
        let slice = match &options.distribution {
            Distribution::Slice { slice, .. } => Some(*slice),
            _ => None,
        };
        let plan = compile(&spec, slice)?;
        let shard = match &options.distribution {
            Distribution::Slice { slice, start, run_id } => {
                let run_id = run_id.clone().unwrap_or_else(|| plan.hash.clone());
                Some(ShardRun { slice: *slice, run_id, start: start.clone() })
            }
            _ => None,
        };
        let request = request(&spec, file, dir, source, shard, &options);
        let work = match &options.distribution {
            Distribution::Local { count, exe, options: shard_options, run_id } => {
                // What a shard would refuse (a planned gate, shares that do not split) is refused here, once.
                Slice::new(1, *count)
                    .and_then(|first| loadgate_plan::shard(&plan, first))
                    .map_err(|e| JobError::Invalid(e.to_string()))?;
                // A run from flags has no spec file: its shards run the spec the flags made, from a private file.
                let flags_spec = flags_yaml.as_deref().map(flags_spec_dir).transpose()?;
                let spec = flags_spec
                    .as_ref()
                    .map_or_else(|| request.spec_file.clone(), |f| f.path().join(FLAGS_SPEC).display().to_string());
                let local = LocalShards {
                    exe: exe.clone(),
                    spec,
                    from_flags: flags_spec.is_some(),
                    options: shard_options.clone(),
                    count: *count,
                    run_id: run_id.clone().unwrap_or_else(|| {
                        format!("{}-{}-{}", plan.hash, std::process::id(), crate::clock::now_rfc3339())
                    }),
                };
                (Work::Local { plan: Box::new(plan), local: Box::new(local) }, flags_spec)
            }
            _ => (Work::Run(Box::new(plan)), None),
        };
        let (work, scratch) = work;
        let export = export_config(&spec, &options);
        Ok(Job { secrets: spec.secrets.clone(), request, work, export, _scratch: scratch })
    }

    /// `loadgate repro`: the plan of the run the results.json at `path` describes, rebuilt identically from the
    /// spec it embeds, to run again as `loadgate run` would; with that run's results, to compare. `secrets`: the
    /// values of its secret variables.
    pub fn reproduce(
        path: &Path,
        secrets: Vec<(String, String)>,
        options: JobOptions,
    ) -> Result<(Job, RunResults), JobError> {
        let ci = crate::source::read_results(path)?;
        let path = path.display();
        let work = ScratchDir::new()
            .map_err(|e| JobError::Machine(format!("cannot create a temporary directory to rebuild the spec: {e}")))?;
        let original_dir = spec_dir_of(&ci);
        let opts = loadgate_repro::RebuildOptions {
            secrets,
            env: std::env::vars().collect(),
            work_dir: work.path().to_path_buf(),
            original_dir: original_dir.clone(),
            loadgate_version: env!("CARGO_PKG_VERSION").to_owned(),
        };
        let rebuilt = loadgate_repro::rebuild(&ci, &opts)
            .map_err(|e| JobError::Invalid(e.to_string().replace("results.json holds", &format!("{path} holds"))))?;
        // The spec's directory as CI had it, relative to here, when it exists: the target's relative paths
        // (a start command's `cwd`) resolve there.
        let dir = original_dir.canonicalize().ok().filter(|d| d.is_dir()).or_else(|| work.path().canonicalize().ok());
        let source = Some(loadgate_repro::embed(&rebuilt.text, &rebuilt.spec, &rebuilt.overrides));
        // The CI run's spec file, so that this run's results read as a run of the same spec (and reproduce).
        let request = request(&rebuilt.spec, ci.spec.file.clone(), dir, source, None, &options);
        // Never the spec's `outputs:`: a rerun on a laptop would mix into the team's series (`--output` sends).
        let export = export_config(&rebuilt.spec, &JobOptions { spec_outputs: false, ..options.clone() });
        let secrets = rebuilt.spec.secrets.clone();
        let job = Job { secrets, request, work: Work::Run(Box::new(rebuilt.plan)), export, _scratch: Some(work) };
        Ok((job, ci))
    }

    /// `loadgate merge`: the shard results in `files` (one run's, checked by the merge; read by
    /// [`crate::source::read_shard_results`]) into `<out_root>/<spec name>/`, judged with the whole plan when it
    /// can be rebuilt from the spec they embed (sweep SLOs, `history:` checks).
    pub fn merge(files: &[PathBuf], options: JobOptions) -> Result<Job, JobError> {
        let parts = crate::source::read_shard_results(files)?;
        let Some(first) = parts.first() else {
            return Err(JobError::Invalid("no shard result to merge".to_owned()));
        };
        // The name comes from a file: it names a directory only when it is a spec name.
        let name = first.results.spec.name.clone();
        let plain = !name.is_empty()
            && name != "."
            && name != ".."
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
        if !plain {
            return Err(JobError::Invalid(format!("the shard results name the spec `{name}`, not a spec name")));
        }
        let needs_plan = options.history.is_some() || first.results.sweeps.iter().any(|s| !s.verdicts.is_empty());
        let plan = if needs_plan { rebuild_plan(&first.results).map(Box::new) } else { None };
        let mut request = RunRequest::new(&options.out_root);
        request.baseline = options.baseline;
        request.template = options.template;
        request.history = options.history;
        request.step_summary = options.step_summary;
        let dir = options.out_root.join(&name);
        let interrupted = options.interrupt.is_interrupted();
        Ok(Job {
            request,
            secrets: Redactor::default(),
            work: Work::Merge { plan, parts, dir, interrupted },
            export: None,
            _scratch: None,
        })
    }

    /// The compiled plan (for a merge, the one rebuilt from the shards' spec, when it could be).
    pub fn plan(&self) -> Option<&ExecutionPlan> {
        match &self.work {
            Work::Run(plan) | Work::Local { plan, .. } => Some(plan),
            Work::Merge { plan, .. } => plan.as_deref(),
        }
    }

    /// The request the run gets.
    pub fn request(&self) -> &RunRequest {
        &self.request
    }

    /// The values that must not reach anything printed or written.
    pub fn secrets(&self) -> &Redactor {
        &self.secrets
    }

    /// The slice this job runs, when it is one shard of a run.
    pub fn shard(&self) -> Option<Slice> {
        self.request.shard.as_ref().map(|s| s.slice)
    }

    /// Runs the job: the plan through [`crate::run()`], local shards through [`crate::shard_merge::run_local`], a
    /// merge through [`crate::shard_merge::merge_and_report`]. Blocks until it ends; events go to `observer`.
    pub fn run(self, observer: &mut dyn Observer) -> Result<RunOutcome, RunError> {
        let Job { request, work, export, .. } = self;
        match work {
            Work::Run(plan) => match export {
                Some(config) => {
                    let run_id = match &request.shard {
                        Some(s) => s.run_id.clone(),
                        None => format!(
                            "{}-{}",
                            plan.hash.chars().take(12).collect::<String>(),
                            crate::clock::now_rfc3339()
                        ),
                    };
                    let shard = request
                        .shard
                        .as_ref()
                        .map(|s| format!("{}/{}", s.slice.index, s.slice.count))
                        .unwrap_or_default();
                    let mut exporting =
                        crate::export::Exporting::start(config, run_id, shard, observer).map_err(RunError::Export)?;
                    let outcome = crate::run(&plan, &request, &mut exporting);
                    exporting.close(None);
                    outcome
                }
                None => crate::run(&plan, &request, observer),
            },
            Work::Local { plan, local, .. } => crate::shard_merge::run_local(&plan, &local, &request, observer),
            Work::Merge { plan, parts, dir, interrupted } => {
                if let Some(previous) = crate::prepare::own_output_dir(&dir)? {
                    let (dir, previous) = (dir.display(), previous.display());
                    observer.event(&crate::Event::Warning(format!(
                        "the reports of an earlier run in {dir} were moved to {previous}"
                    )));
                }
                let options = MergeOptions { plan: plan.as_deref(), request: &request, interrupted };
                crate::shard_merge::merge_and_report(parts, options, &dir, observer)
            }
        }
    }
}

/// The plan of a validated spec (what `loadgate plan`, `validate` and `k8s` show and render), or its slice
/// `slice` (the plan a shard runs).
pub fn compile(spec: &Spec, slice: Option<Slice>) -> Result<ExecutionPlan, JobError> {
    let plan = loadgate_plan::compile(spec);
    match slice {
        Some(slice) => loadgate_plan::shard(&plan, slice).map_err(|e| JobError::Invalid(e.to_string())),
        None => Ok(plan),
    }
}

/// What `loadgate validate` says of a spec that holds: `api.yaml: ok (2 scenarios, 5 phases, 4 gated, 0
/// warnings)`.
pub fn validated_line(input: &SpecInput) -> String {
    let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    let phases = compile(&input.spec, None).map_or_else(|_| Vec::new(), |plan| plan.phases);
    format!(
        "{}: ok ({}, {}, {} gated, {})",
        input.file,
        plural(input.spec.scenarios.len(), "scenario"),
        plural(phases.len(), "phase"),
        phases.iter().filter(|p| p.gate).count(),
        plural(input.spec.warnings.len(), "warning"),
    )
}

/// The live export of a spec's run: the command line's outputs, else the spec's `outputs:` (unless `--output
/// none`), and `--metrics-listen`; `None` without any.
fn export_config(spec: &Spec, options: &JobOptions) -> Option<loadgate_export::ExportConfig> {
    let mut config = options.export.clone();
    if options.spec_outputs {
        config.outputs.extend(spec.outputs.iter().cloned());
    }
    (!config.is_empty()).then_some(config)
}

/// The one place a [`RunRequest`] is built from a spec and the options.
fn request(
    spec: &Spec,
    spec_file: String,
    source_dir: Option<PathBuf>,
    source: Option<loadgate_results::SpecSource>,
    shard: Option<ShardRun>,
    options: &JobOptions,
) -> RunRequest {
    RunRequest {
        out_root: options.out_root.clone(),
        spec_file,
        source_dir,
        spec_warnings: spec.warnings.iter().map(|w| w.message.clone()).collect(),
        baseline: options.baseline.clone(),
        template: options.template.clone(),
        // A shard's slice writes no step summary: its merge writes the run's, once.
        step_summary: options.step_summary.clone().filter(|_| shard.is_none()),
        builtin: options.builtin.clone(),
        interrupt: options.interrupt.clone(),
        loadgate_version: env!("CARGO_PKG_VERSION").to_owned(),
        secrets: spec.secrets.clone(),
        shard,
        source,
        pin_within_affinity: options.pin_within_affinity,
        shard_cpus: options.shard_cpus.clone(),
        history: options.history.clone(),
        checkpoint: options.checkpoint,
        attachments: crate::profiles::attachments(),
    }
}

/// The spec file of a run's artifact, as its directory is from here.
fn spec_dir_of(results: &RunResults) -> PathBuf {
    Path::new(&results.spec.file)
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// The whole plan of a shard result, rebuilt from the spec it embeds (as `loadgate repro` does), when it can be.
fn rebuild_plan(results: &RunResults) -> Option<ExecutionPlan> {
    let work = ScratchDir::new().ok()?;
    let opts = loadgate_repro::RebuildOptions {
        secrets: Vec::new(),
        env: std::env::vars().collect(),
        work_dir: work.path().to_path_buf(),
        original_dir: spec_dir_of(results),
        loadgate_version: env!("CARGO_PKG_VERSION").to_owned(),
    };
    loadgate_repro::rebuild(results, &opts).ok().map(|r| r.plan)
}

/// A shard's result written as `<dir>/shard-I-of-N.json` (secrets scrubbed), for `loadgate merge`; its path.
pub fn write_shard_result(
    results: &RunResults,
    dir: &Path,
    slice: Slice,
    secrets: &Redactor,
) -> Result<PathBuf, String> {
    let json = loadgate_results::to_json(results).map_err(|e| e.to_string())?;
    let path = dir.join(slice.file_name());
    std::fs::create_dir_all(dir)
        .and_then(|()| crate::reports::write_atomic(&path, &secrets.scrub(&json)))
        .map_err(|e| format!("cannot write the shard result {}: {e}", path.display()))?;
    Ok(path)
}

const FLAGS_SPEC: &str = "command-line.yaml";

/// A scratch directory holding `yaml` as the spec of a run from flags, readable by this user only.
fn flags_spec_dir(yaml: &str) -> Result<ScratchDir, JobError> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let fail = |e: std::io::Error| JobError::Machine(format!("cannot write the flags' spec for the shards: {e}"));
    let dir = ScratchDir::new().map_err(fail)?;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(dir.path().join(FLAGS_SPEC))
        .map_err(fail)?;
    file.write_all(yaml.as_bytes()).map_err(fail)?;
    Ok(dir)
}
