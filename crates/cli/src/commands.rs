//! One function per command; each returns its exit code.

use clap::Parser;

use loadgate_spec::{LoadOptions, Spec, SpecError};

use crate::args::{Cli, Command, PlanArgs, SchemaArgs, ValidateArgs, VarArgs};
use crate::exit::Exit;
use crate::output::Output;

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

fn schema(out: &Output, _args: SchemaArgs) -> Exit {
    out.data(&loadgate_spec::schema::spec_schema_json());
    Exit::Pass
}
