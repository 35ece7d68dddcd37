//! One function per command; each returns its exit code.

use clap::Parser;

use loadgate_spec::{LoadOptions, Spec, SpecError};

use loadgate_runner::reports::RerenderError;
use loadgate_runner::{BuiltinServer, Interrupt, RunRequest};

use crate::args::{
    Cli, Command, ImportArgs, PlanArgs, ReportArgs, RunArgs, SchemaArgs, ServeArgs, ValidateArgs, VarArgs,
};
use crate::exit::Exit;
use crate::output::Output;
use crate::render::Renderer;

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
    match cli.command {
        Command::Validate(a) => validate(&out, a),
        Command::Plan(a) => plan(&out, a),
        Command::Schema(a) => schema(&out, a),
        Command::Run(a) => run(&out, *a, Output::use_color(cli.color), cli.verbose),
        Command::Report(a) => report(&out, a),
        Command::Serve(a) => serve(&out, a),
        Command::Import(a) => import(&out, a),
    }
}

/// Loads a spec with the command line's variables and the process environment.
pub fn load_spec(path: &std::path::Path, vars: &VarArgs) -> Result<Spec, SpecError> {
    loadgate_spec::load_file(path, &LoadOptions::from_process_env(vars.sets.clone()))
}

fn print_warnings(out: &Output, file: &str, source: &str, spec: &Spec) {
    for w in &spec.warnings {
        out.error(&w.render(file, source));
    }
}

fn validate(out: &Output, args: ValidateArgs) -> Exit {
    let mut exit = Exit::Pass;
    for path in &args.specs {
        let file = path.display().to_string();
        match load_spec(path, &args.vars) {
            Ok(spec) => {
                let source = std::fs::read_to_string(path).unwrap_or_default();
                print_warnings(out, &file, &source, &spec);
                let plan = loadgate_plan::compile(&spec);
                let gated = plan.phases.iter().filter(|p| p.gate).count();
                out.info(&format!(
                    "{file}: ok ({} scenario{}, {} phase{}, {gated} gated, {} warning{})",
                    spec.scenarios.len(),
                    if spec.scenarios.len() == 1 { "" } else { "s" },
                    plan.phases.len(),
                    if plan.phases.len() == 1 { "" } else { "s" },
                    spec.warnings.len(),
                    if spec.warnings.len() == 1 { "" } else { "s" },
                ));
            }
            Err(e) => {
                out.error(&e.render());
                exit = exit.worst(Exit::InvalidInput);
            }
        }
    }
    exit
}

fn plan(out: &Output, args: PlanArgs) -> Exit {
    let file = args.spec.display().to_string();
    let spec = match load_spec(&args.spec, &args.vars) {
        Ok(s) => s,
        Err(e) => {
            out.error(&e.render());
            return Exit::InvalidInput;
        }
    };
    let source = std::fs::read_to_string(&args.spec).unwrap_or_default();
    print_warnings(out, &file, &source, &spec);
    let plan = loadgate_plan::compile(&spec);
    if args.json {
        match serde_json::to_string_pretty(&plan) {
            Ok(text) => out.data(&text),
            Err(e) => {
                out.error(&format!("error: cannot serialize the plan: {e}"));
                return Exit::RunFailed;
            }
        }
    } else {
        out.data(&plan.render_text());
    }
    Exit::Pass
}

fn schema(out: &Output, args: SchemaArgs) -> Exit {
    if args.results {
        out.data(&loadgate_results::json_schema());
    } else {
        out.data(&loadgate_spec::schema::spec_schema_json());
    }
    Exit::Pass
}

fn read_template(out: &Output, path: Option<&std::path::Path>) -> Result<Option<String>, Exit> {
    match path {
        None => Ok(None),
        Some(p) => std::fs::read_to_string(p).map(Some).map_err(|e| {
            out.error(&format!("error: cannot read the template {}: {e}", p.display()));
            Exit::InvalidInput
        }),
    }
}

fn run(out: &Output, args: RunArgs, color: bool, verbose: u8) -> Exit {
    let template = match read_template(out, args.template.as_deref()) {
        Ok(t) => t,
        Err(e) => return e,
    };
    let baseline = match &args.baseline {
        None => None,
        Some(p) => match std::fs::read_to_string(p)
            .map_err(|e| e.to_string())
            .and_then(|t| loadgate_results::from_json(&t).map_err(|e| e.to_string()))
        {
            Ok(b) => Some(b),
            Err(e) => {
                out.error(&format!("error: cannot read the baseline {}: {e}", p.display()));
                return Exit::InvalidInput;
            }
        },
    };
    // The specs to run: files, or one built from wrk-style flags.
    let mut loaded: Vec<(Spec, String, Option<std::path::PathBuf>)> = Vec::new();
    if args.flags.url.is_some() {
        let yaml = match loadgate_import::spec_from_flags(&args.flags.to_flag_run()) {
            Ok(y) => y,
            Err(e) => {
                out.error(&format!("error: {e}"));
                return Exit::InvalidInput;
            }
        };
        if args.flags.print_spec {
            out.data(&yaml);
            return Exit::Pass;
        }
        match loadgate_spec::load_str("(command line)", &yaml, &LoadOptions::from_process_env(args.vars.sets.clone())) {
            Ok(spec) => loaded.push((spec, "(command line)".to_owned(), std::env::current_dir().ok())),
            Err(e) => {
                out.error(&e.render());
                return Exit::InvalidInput;
            }
        }
    } else {
        if args.specs.is_empty() {
            out.error("error: give a spec file (`loadgate run specs/quickstart.yaml`) or a URL (`loadgate run --url http://127.0.0.1:8080/ -c 64 -d 10s`)");
            return Exit::InvalidInput;
        }
        // Every spec is checked before anything runs.
        let mut invalid = false;
        for path in &args.specs {
            match load_spec(path, &args.vars) {
                Ok(spec) => {
                    let source = std::fs::read_to_string(path).unwrap_or_default();
                    print_warnings(out, &path.display().to_string(), &source, &spec);
                    let dir =
                        path.parent().map(|p| if p.as_os_str().is_empty() { std::path::Path::new(".") } else { p });
                    loaded.push((spec, path.display().to_string(), dir.and_then(|d| d.canonicalize().ok())));
                }
                Err(e) => {
                    out.error(&e.render());
                    invalid = true;
                }
            }
        }
        if invalid {
            return Exit::InvalidInput;
        }
    }
    let interrupt = Interrupt::from_signals();
    let builtin = match std::env::current_exe() {
        Ok(exe) => BuiltinServer::Process { exe },
        Err(e) => {
            out.error(&format!("error: cannot find the loadgate executable to start the built-in server: {e}"));
            return Exit::RunFailed;
        }
    };
    let step_summary = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()).map(Into::into);
    let mut exit = Exit::Pass;
    for (spec, spec_file, source_dir) in loaded {
        if interrupt.is_interrupted() {
            break;
        }
        let plan = loadgate_plan::compile(&spec);
        let request = RunRequest {
            out_root: args.out.clone(),
            spec_file,
            source_dir,
            spec_warnings: spec.warnings.iter().map(|w| w.message.clone()).collect(),
            baseline: baseline.clone(),
            template: template.clone(),
            step_summary: step_summary.clone(),
            builtin: builtin.clone(),
            interrupt: interrupt.clone(),
            loadgate_version: env!("CARGO_PKG_VERSION").to_owned(),
        };
        let mut renderer = Renderer::new(out, color, verbose);
        exit = exit.worst(match loadgate_runner::run(&plan, &request, &mut renderer) {
            Ok(outcome) => renderer.outcome(&outcome),
            Err(e) => {
                out.error(&format!("error: {e}"));
                Exit::RunFailed
            }
        });
    }
    exit
}

fn report(out: &Output, args: ReportArgs) -> Exit {
    let template = match read_template(out, args.template.as_deref()) {
        Ok(t) => t,
        Err(e) => return e,
    };
    let text = match std::fs::read_to_string(&args.results) {
        Ok(t) => t,
        Err(e) => {
            out.error(&format!("error: cannot read {}: {e}", args.results.display()));
            return Exit::InvalidInput;
        }
    };
    let mut results = match loadgate_results::from_json(&text) {
        Ok(r) => r,
        Err(e) => {
            out.error(&format!("error: {}: {e}", args.results.display()));
            return Exit::InvalidInput;
        }
    };
    let dir = args.out.clone().unwrap_or_else(|| {
        args.results
            .parent()
            .map(|p| p.to_path_buf())
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or_else(|| ".".into())
    });
    match loadgate_runner::reports::rerender(&mut results, &dir, template.as_deref()) {
        Ok(written) => {
            let names: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
            out.info(&format!("wrote {}", names.join(" and ")));
        }
        Err(e) => {
            out.error(&format!("error: {e}"));
            return match e {
                RerenderError::Template(_) => Exit::InvalidInput,
                RerenderError::Output(_) => Exit::RunFailed,
            };
        }
    }
    out.data(&loadgate_report::summary_table(&results, false));
    Exit::of(results.outcome.status)
}

fn import(out: &Output, args: ImportArgs) -> Exit {
    let line = args.command.join(" ");
    match loadgate_import::import(&line) {
        Ok(imported) => {
            out.data(&imported.yaml);
            for note in &imported.notes {
                out.error(&format!("note: {note}"));
            }
            Exit::Pass
        }
        Err(e) => {
            out.error(&format!("error: {e}"));
            Exit::InvalidInput
        }
    }
}

fn serve(out: &Output, args: ServeArgs) -> Exit {
    let mut argv: Vec<String> =
        vec!["--kind".into(), args.kind, "--listen".into(), args.listen, "--status".into(), args.status.to_string()];
    argv.extend(["--threads".to_owned(), args.threads.to_string()]);
    if let Some(d) = args.delay {
        argv.extend(["--delay".to_owned(), d]);
    }
    if let Some(b) = args.body_size {
        argv.extend(["--body-size".to_owned(), b.to_string()]);
    }
    if args.chunked {
        argv.push("--chunked".into());
    }
    let cfg = match loadgate_server::ServeConfig::from_args(&argv) {
        Ok(c) => c,
        Err(e) => {
            out.error(&format!("error: {e}"));
            return Exit::InvalidInput;
        }
    };
    match loadgate_server::serve(&cfg, |addr| out.data(&loadgate_server::listening_line(addr))) {
        Ok(()) => Exit::Pass,
        Err(e) => {
            out.error(&format!("error: {e}"));
            Exit::RunFailed
        }
    }
}
