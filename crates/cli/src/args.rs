//! The command line. Only parsing lives here; the domain types live in the libraries.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Declarative benchmark-as-code: YAML specs, an embedded load engine, CI gates.
///
/// Exit codes: 0 every gated SLO held; 1 an SLO failed; 2 the spec or command line is invalid (nothing ran);
/// 3 the run could not be carried out; 4 the run is invalid as a measurement (the generator fell short).
#[derive(Debug, Parser)]
#[command(name = "loadgate", version, propagate_version = true, max_term_width = 110)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,

    /// Print less: only errors and the final verdict.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,

    /// Print more (repeat for more detail).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,

    /// When to use colour: auto (a terminal without NO_COLOR), always, never.
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto, env = "LOADGATE_COLOR")]
    pub color: ColorChoice,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Parse, template and check specs; runs nothing.
    Validate(ValidateArgs),
    /// Compile a spec into its execution plan and print it; runs nothing.
    Plan(PlanArgs),
    /// Print the JSON Schema of the spec language.
    Schema(SchemaArgs),
}

/// Variables for a spec.
#[derive(Debug, Args, Clone, Default)]
pub struct VarArgs {
    /// Override a spec variable: `--set connections=256`. Wins over `LOADGATE_VAR_<NAME>` and the spec's default.
    #[arg(long = "set", value_name = "NAME=VALUE", value_parser = parse_set)]
    pub sets: Vec<(String, String)>,
}

fn parse_set(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_owned(), v.to_owned())),
        _ => Err(format!("`{s}` is not NAME=VALUE (for example `--set connections=256`)")),
    }
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Spec files to check.
    #[arg(required = true, value_name = "SPEC")]
    pub specs: Vec<PathBuf>,
    #[command(flatten)]
    pub vars: VarArgs,
}

#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The spec file.
    #[arg(value_name = "SPEC")]
    pub spec: PathBuf,
    /// Print the plan as JSON for machines.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub vars: VarArgs,
}

#[derive(Debug, Args)]
pub struct SchemaArgs {}
