//! `loadgate`: the thin binary over the runner: arguments into a `Job`, its events rendered, its outcome an exit
//! code.

mod args;
mod commands;
mod exit;
mod memory;
mod output;
mod progress;
mod render;
mod specs;

use std::process::ExitCode;

fn main() -> ExitCode {
    commands::main_impl().into()
}
