//! One function per command; each returns its exit code.

use std::path::Path;

use clap::{CommandFactory, Parser};
use loadgate_model::secrets::Redactor;
use loadgate_runner::job::{Distribution, SpecInput};
use loadgate_runner::options::{OnInconclusive, Pacing, RunFlags};
use loadgate_runner::placement::ShardFlags;
use loadgate_runner::reports::RerenderError;
use loadgate_runner::serve::{ServeConfig, ServeError, ServeTls};
use loadgate_runner::source::{FlagRun, RunSpecs};
use loadgate_runner::{Job, RunError};

use crate::args::{
    AnnotationsArg, Cli, ColorChoice, Command, ImportArgs, InconclusiveArg, K8sArgs, ManArgs, MergeArgs, PacingArg,
    PlanArgs, ReportArgs, ReproArgs, RunArgs, ServeArgs, ValidateArgs,
};
use crate::exit::{fail, job_failed, Exit};
use crate::output::Output;
use crate::render::{Renderer, Views};
use crate::specs::load_all;

pub fn main_impl() -> Exit {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => Exit::Pass,
                _ => Exit::InvalidInput,
            };
        }
    };
    let out = Output::new(cli.quiet);
    let result = match cli.command {
        Command::Validate(a) => validate(&out, a),
        Command::Plan(a) => plan(&out, a),
        Command::Schema(a) => {
            out.data(&if a.results {
                loadgate_results::json_schema()
            } else {
                loadgate_runner::source::spec_schema_json()
            });
            Ok(Exit::Pass)
        }
        Command::Run(a) => run(&out, *a, cli.color, cli.verbose),
        Command::Completions(a) => {
            let mut cmd = Cli::command();
            let mut buf = Vec::new();
            clap_complete::generate(a.shell, &mut cmd, "loadgate", &mut buf);
            out.document(&String::from_utf8_lossy(&buf));
            Ok(Exit::Pass)
        }
        Command::Man(a) => man(&out, a),
        Command::Report(a) => report(&out, a),
        Command::Compare(a) => crate::memory::compare(&out, a),
        Command::History(a) => crate::memory::history(&out, a),
        Command::Merge(a) => merge(&out, a, cli.color, cli.verbose),
        Command::Repro(a) => repro(&out, a, cli.color, cli.verbose),
        Command::K8s(a) => k8s(&out, a),
        Command::Serve(a) => serve(&out, a),
        Command::Import(a) => import(&out, a),
    };
    result.unwrap_or_else(|exit| exit)
}

fn validate(out: &Output, args: ValidateArgs) -> Result<Exit, Exit> {
    let (loaded, exit) = match load_all(out, &args.specs, &args.vars) {
        Ok(l) => (l, Exit::Pass),
        Err(l) => (l, Exit::InvalidInput),
    };
    for input in &loaded {
        out.info(&loadgate_runner::job::validated_line(input));
    }
    Ok(exit)
}

fn plan(out: &Output, args: PlanArgs) -> Result<Exit, Exit> {
    let loaded = load_all(out, std::slice::from_ref(&args.spec), &args.vars).map_err(|_| Exit::InvalidInput)?;
    let spec = &loaded[0].spec;
    let plan = loadgate_runner::job::compile(spec, args.shard).map_err(job_failed(out))?;
    let text = if args.json {
        serde_json::to_string_pretty(&plan)
            .map_err(|e| fail(out, Exit::RunFailed)(format!("cannot serialize the plan: {e}")))?
    } else {
        plan.render_text()
    };
    out.data(&spec.secrets.scrub(&text));
    Ok(Exit::Pass)
}

/// The specs of `loadgate run`: files, or one built from wrk-style flags and a URL (`--url`, or the one
/// positional argument, wrk's order), as [`loadgate_runner::source::run_specs`] reads them. Says which it took.
fn run_specs(out: &Output, args: &RunArgs) -> Result<Vec<SpecInput>, Exit> {
    let f = &args.flags;
    let flags = FlagRun {
        pacing: args.pacing.map(|p| pacing_of(p).name().to_owned()),
        connect_rate: args.connect_rate.map(|r| r.to_string()),
        ..f.to_flag_run()
    };
    let vars = args.vars.to_vars();
    match loadgate_runner::source::run_specs(&args.specs, flags, f.http2, f.print_spec, &vars)
        .map_err(job_failed(out))?
    {
        RunSpecs::Files(paths) => {
            for path in &paths {
                out.info(&format!("spec file {}", path.display()));
            }
            load_all(out, &paths, &args.vars).map_err(|_| Exit::InvalidInput)
        }
        RunSpecs::Print { yaml, notes } => {
            out.data(&yaml);
            for note in notes {
                out.error(&format!("note: {note}"));
            }
            Ok(Vec::new())
        }
        RunSpecs::Flags(made) => {
            out.info(&format!(
                "URL {} (a one-scenario run from the command-line flags; `--print-spec` shows its spec)",
                made.url
            ));
            for warning in &made.warnings {
                out.error(warning);
            }
            Ok(vec![made.input])
        }
    }
}

/// Whether to print GitHub Actions annotations.
fn annotations_wanted(choice: AnnotationsArg) -> bool {
    match choice {
        AnnotationsArg::Always => true,
        AnnotationsArg::Never => false,
        AnnotationsArg::Auto => std::env::var("GITHUB_ACTIONS").is_ok_and(|v| v == "true"),
    }
}

fn run(out: &Output, args: RunArgs, color: ColorChoice, verbose: u8) -> Result<Exit, Exit> {
    // `--out -` and `--json` keep stdout for results.json: the summaries go to stderr. A shard's framed result
    // (`--shard I/N --out -`) goes into a log with everything else: one stream, unless a person watches stderr.
    let to_stdout = args.out.as_os_str() == "-";
    let framed = to_stdout && (args.shards.shard.is_some() || args.shards.shard_count.is_some());
    let out = &if framed && !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        out.one_stream()
    } else if to_stdout || args.json {
        out.reserving_stdout()
    } else {
        *out
    };
    let (options, _scratch) = loadgate_runner::options::run(run_flags(&args)).map_err(job_failed(out))?;
    let specs = run_specs(out, &args)?;
    if !matches!(options.distribution, Distribution::Whole) && specs.len() != 1 {
        return Err(fail(out, Exit::InvalidInput)("shards run one spec at a time: give exactly one SPEC".to_owned()));
    }
    let shown = Shown {
        color: out.use_color(color),
        verbose,
        views: Views { latency: args.latency, u_latency: args.u_latency, no_files: to_stdout },
        annotate: annotations_wanted(args.annotations),
        to_stdout,
    };
    let mut exit = Exit::Pass;
    for loaded in specs {
        if options.interrupt.is_interrupted() {
            break;
        }
        let job = Job::from_spec(loaded, options.clone()).map_err(job_failed(out))?;
        exit = exit.worst(run_job(out, job, &args, &options.out_root, &shown));
    }
    Ok(exit)
}

/// How `loadgate run` shows a job.
struct Shown {
    color: bool,
    verbose: u8,
    views: Views,
    annotate: bool,
    /// `--out -`: results.json (or a shard's frame) on stdout.
    to_stdout: bool,
}

/// Runs one spec's job and shows it: the events, the shard result, the annotations, results.json on stdout when
/// asked, the saved baseline; its exit code.
fn run_job(out: &Output, job: Job, args: &RunArgs, out_root: &Path, shown: &Shown) -> Exit {
    let secrets = job.secrets().clone();
    let (name, shard) = (job.plan().map(|p| p.name.clone()).unwrap_or_default(), job.shard());
    let mut renderer = Renderer::new(out, shown.color, shown.verbose, &secrets, shown.views);
    let outcome = match job.run(&mut renderer) {
        Ok(outcome) => outcome,
        Err(e) => return run_error(out, e),
    };
    let mut exit = Exit::Pass;
    if let Some(results) = &outcome.results {
        if let Some(slice) = shard {
            // With `--out -`, framed on stdout.
            let written = if shown.to_stdout {
                let framed = loadgate_results::shards::frame(results).map_err(|e| e.to_string());
                framed.map(|framed| out.document(&secrets.scrub(&framed)))
            } else {
                loadgate_runner::job::write_shard_result(results, &out_root.join(&name), slice, &secrets)
                    .map(|path| out.info(&format!("shard result: {}", path.display())))
            };
            if let Err(e) = written {
                exit = fail(out, Exit::RunFailed)(e);
            }
        }
        if shown.annotate {
            // Workflow commands are read from stdout; on stderr when stdout carries results.json.
            for line in loadgate_report::github_annotations(results) {
                out.data(&secrets.scrub(&line));
            }
        }
        if (shown.to_stdout && shard.is_none()) || args.json {
            print_results(out, results, &secrets);
        }
        if let Some(path) = &args.save_baseline {
            if let Err(e) = loadgate_runner::reports::save_baseline(results, path, &secrets) {
                return exit.worst(fail(out, Exit::RunFailed)(e));
            }
            out.info(&format!("baseline saved to {}", path.display()));
        }
    }
    exit.worst(renderer.outcome(&outcome))
}

/// results.json on stdout (`--out -`, `--json`), its secrets scrubbed.
fn print_results(out: &Output, results: &loadgate_results::RunResults, secrets: &Redactor) {
    match loadgate_results::to_json(results) {
        Ok(json) => out.document(&secrets.scrub(&json)),
        Err(e) => out.error(&format!("error: cannot serialize results.json: {e}")),
    }
}

/// A run that could not begin: an output directory that cannot be used is a wrong `--out` (nothing ran).
fn run_error(out: &Output, e: RunError) -> Exit {
    match e {
        e @ RunError::OutputDir { .. } => fail(out, Exit::InvalidInput)(e.to_string()),
        e => fail(out, Exit::RunFailed)(e.to_string()),
    }
}

/// `loadgate run`'s options besides its specs, for [`loadgate_runner::options::run`].
fn run_flags(args: &RunArgs) -> RunFlags {
    let a = &args.shards;
    RunFlags {
        out: args.out.clone(),
        vars: args.vars.to_vars(),
        baseline: args.baseline.clone(),
        template: args.template.clone(),
        history: crate::memory::history_request(args.history.as_deref(), &args.history_meta),
        repeat: args.repeat,
        on_inconclusive: args.on_inconclusive.map(|on| match on {
            InconclusiveArg::Inconclusive => OnInconclusive::Inconclusive,
            InconclusiveArg::Fail => OnInconclusive::Fail,
            InconclusiveArg::Pass => OnInconclusive::Pass,
        }),
        pacing: args.pacing.map(pacing_of),
        connect_rate: args.connect_rate,
        pin_within_affinity: args.pin_within_affinity,
        shard_cpus: args.shard_cpus.clone(),
        from_flags: args.from_flags,
        outputs: args.outputs.clone(),
        output_headers: args.output_headers.clone(),
        metrics_listen: args.metrics_listen.clone(),
        metrics_linger: args.metrics_linger,
        checkpoint: args.checkpoint.as_std(),
        shards: ShardFlags {
            shard: a.shard,
            shard_count: a.shard_count,
            shards: a.shards,
            run_id: a.run_id.clone(),
            start_at: a.start_at.clone(),
            barrier: a.barrier.clone(),
            barrier_timeout: a.barrier_timeout.clone(),
            metrics_listen: false,
        },
    }
}

fn merge(out: &Output, args: MergeArgs, color: ColorChoice, verbose: u8) -> Result<Exit, Exit> {
    // `--out -`: results.json on stdout, the summaries on stderr, no files (as `run --out -`).
    let to_stdout = args.out.as_os_str() == "-";
    let out = &if to_stdout { out.reserving_stdout() } else { *out };
    let history = crate::memory::history_request(args.history.as_deref(), &args.history_meta);
    let (options, _scratch) =
        loadgate_runner::options::merge(&args.out, args.baseline.as_deref(), args.template.as_deref(), history)
            .map_err(job_failed(out))?;
    let job = Job::merge(&args.files, options).map_err(job_failed(out))?;
    let views = Views { no_files: to_stdout, ..Views::default() };
    let secrets = job.secrets().clone();
    let mut renderer = Renderer::new(out, out.use_color(color), verbose, &secrets, views);
    let outcome = job.run(&mut renderer).map_err(|e| fail(out, Exit::InvalidInput)(e.to_string()))?;
    if let Some(results) = &outcome.results {
        out.info(&loadgate_report::merged_line(results));
        if to_stdout {
            print_results(out, results, &secrets);
        }
    }
    Ok(renderer.outcome(&outcome))
}

/// `loadgate repro RESULTS`: rebuild the CI run's plan from the spec results.json embeds, run it as `loadgate run`
/// does, print the two runs side by side.
fn repro(out: &Output, args: ReproArgs, color: ColorChoice, verbose: u8) -> Result<Exit, Exit> {
    let path = args.results.display();
    let options = loadgate_runner::options::repro(&args.out, args.baseline.as_deref(), args.pin_within_affinity)
        .map_err(job_failed(out))?;
    let (job, ci) = Job::reproduce(&args.results, args.secrets.clone(), options).map_err(job_failed(out))?;
    let plan_hash = job.plan().map(|p| p.hash.clone()).unwrap_or_default();
    out.info(&format!(
        "reproducing {} from {path}: plan {plan_hash} rebuilt identically (loadgate {})",
        ci.spec.name, ci.loadgate_version
    ));
    let secrets = job.secrets().clone();
    let views = Views { latency: false, u_latency: false, no_files: false };
    let mut renderer = Renderer::new(out, out.use_color(color), verbose, &secrets, views);
    match job.run(&mut renderer) {
        Ok(outcome) => {
            let exit = renderer.outcome(&outcome);
            if let Some(here) = &outcome.results {
                out.data(&secrets.scrub(&loadgate_report::repro_comparison(&ci, here)));
            }
            Ok(exit)
        }
        Err(e) => Err(run_error(out, e)),
    }
}

/// `loadgate k8s SPEC --shards N --image IMAGE`: the manifests of a sharded run on stdout.
fn k8s(out: &Output, args: K8sArgs) -> Result<Exit, Exit> {
    let options = loadgate_runner::k8s::K8sOptions {
        shards: args.shards,
        image: args.image,
        name: args.name,
        namespace: args.namespace,
        sets: args.sets,
        secret_from: args.secret_from,
        memory: args.memory,
    };
    let yaml = loadgate_runner::k8s::manifests(&args.spec, &options).map_err(job_failed(out))?;
    out.document(&yaml);
    Ok(Exit::Pass)
}

fn report(out: &Output, args: ReportArgs) -> Result<Exit, Exit> {
    let template = loadgate_runner::options::template(args.template.as_deref()).map_err(job_failed(out))?;
    let mut results = loadgate_runner::source::read_results(&args.results).map_err(job_failed(out))?;
    let beside = args.results.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let dir = args.out.clone().unwrap_or_else(|| beside.to_path_buf());
    let written = loadgate_runner::reports::rerender(&mut results, &dir, template.as_deref()).map_err(|e| {
        let exit = if matches!(e, RerenderError::Template(_)) { Exit::InvalidInput } else { Exit::RunFailed };
        fail(out, exit)(e.to_string())
    })?;
    let names: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
    out.info(&format!("wrote {}", names.join(", ")));
    out.data(&loadgate_report::summary_table(&results, false));
    Ok(Exit::of(results.outcome.status))
}

/// `loadgate import`: a load tool's command line, or recorded traffic (`log FILE`, `har FILE`), as a spec.
fn import(out: &Output, args: ImportArgs) -> Result<Exit, Exit> {
    let (yaml, notes) = loadgate_runner::source::import_spec(&args.command).map_err(job_failed(out))?;
    out.data(&yaml);
    for note in &notes {
        out.error(&format!("note: {note}"));
    }
    Ok(Exit::Pass)
}

/// `loadgate serve`: the built-in server in the foreground.
fn serve(out: &Output, args: ServeArgs) -> Result<Exit, Exit> {
    let cfg = ServeConfig::from(args);
    if cfg.tls == Some(ServeTls::SelfSigned) {
        out.error(
            "note: serving HTTPS with a self-signed certificate made now: clients need `-k` (`tls.insecure: true`)",
        );
    }
    loadgate_runner::serve::serve(&cfg, |line| out.data(&line)).map_err(|e| match e {
        ServeError::Invalid(m) => fail(out, Exit::InvalidInput)(m),
        ServeError::Failed(m) => fail(out, Exit::RunFailed)(m),
    })?;
    Ok(Exit::Pass)
}

/// `loadgate man`: the man page of loadgate (roff) on stdout, or with `--dir` one page per command in DIR.
fn man(out: &Output, args: ManArgs) -> Result<Exit, Exit> {
    // `loadgate help` is clap's, not a page: loadgate.1 would name a loadgate-help(1) that is never written.
    let cmd = Cli::command().disable_help_subcommand(true);
    let render = |cmd: clap::Command| -> Result<Vec<u8>, Exit> {
        let mut buf = Vec::new();
        clap_mangen::Man::new(cmd)
            .render(&mut buf)
            .map_err(|e| fail(out, Exit::RunFailed)(format!("cannot render the man page: {e}")))?;
        Ok(buf)
    };
    let Some(dir) = args.dir else {
        out.document(&String::from_utf8_lossy(&render(cmd)?));
        return Ok(Exit::Pass);
    };
    std::fs::create_dir_all(&dir)
        .map_err(|e| fail(out, Exit::InvalidInput)(format!("cannot create {}: {e}", dir.display())))?;
    let mut cmd = cmd;
    cmd.build();
    let mut pages = vec![("loadgate.1".to_owned(), cmd.clone())];
    for sub in cmd.get_subcommands() {
        // The page's NAME and SYNOPSIS read `loadgate-run` / `loadgate run`, as git's pages do.
        // clap names commands with 'static strings: a few bytes per page, for a process that ends right after.
        let name: &'static str = format!("loadgate-{}", sub.get_name()).leak();
        let page = sub.clone().name(name).bin_name(format!("loadgate {}", sub.get_name()));
        pages.push((format!("{name}.1"), page));
    }
    for (file, page) in pages {
        let path = dir.join(&file);
        std::fs::write(&path, render(page)?)
            .map_err(|e| fail(out, Exit::RunFailed)(format!("cannot write {}: {e}", path.display())))?;
        out.info(&format!("wrote {}", path.display()));
    }
    Ok(Exit::Pass)
}

/// `--pacing`'s value (`hardware.generator.pacing`).
fn pacing_of(p: PacingArg) -> Pacing {
    match p {
        PacingArg::Default => Pacing::Default,
        PacingArg::Precise => Pacing::Precise,
    }
}
