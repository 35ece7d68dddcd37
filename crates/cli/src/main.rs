//! `loadgate`: the thin binary that wires spec -> plan -> engine -> results -> report.

mod args;
mod commands;
mod exit;
mod memory;
mod output;
mod progress;
mod render;

use std::process::ExitCode;

fn main() -> ExitCode {
    commands::main_impl().into()
}
