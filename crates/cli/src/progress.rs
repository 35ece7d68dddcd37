//! Live progress while a phase runs: an indicatif bar on a terminal, one plain line a second otherwise (CI).

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use loadgate_plan::Phase;
use loadgate_results::TimelinePoint;

use crate::output::Output;

pub enum Progress {
    Bar(ProgressBar),
    /// One plain line a second, where errors go: on stderr, or on stdout when the output is
    /// [one stream](crate::output::Output::one_stream).
    Lines {
        name: String,
        out: Output,
    },
    Quiet,
}

impl Progress {
    pub fn start(phase: &Phase, color: bool, out: &Output) -> Progress {
        if out.quiet {
            return Progress::Quiet;
        }
        let name = crate::output::scrub(&phase.name).into_owned();
        let tagged = if phase.gate { name } else { format!("{name} (not gated)") };
        if std::io::stderr().is_terminal() {
            let len = phase.duration.map(|d| d.as_std().as_secs().max(1)).unwrap_or(0);
            let bar = if len > 0 { ProgressBar::new(len) } else { ProgressBar::new_spinner() };
            bar.set_draw_target(ProgressDrawTarget::stderr_with_hz(4));
            let template = if color {
                "{prefix:.bold} [{bar:24.cyan/blue}] {pos}/{len}s {msg}"
            } else {
                "{prefix} [{bar:24}] {pos}/{len}s {msg}"
            };
            let style = if len > 0 {
                ProgressStyle::with_template(template).map(|s| s.progress_chars("=> "))
            } else {
                ProgressStyle::with_template("{prefix} {spinner} {elapsed} {msg}")
            };
            if let Ok(style) = style {
                bar.set_style(style);
            }
            bar.set_prefix(tagged);
            bar.enable_steady_tick(Duration::from_millis(250));
            Progress::Bar(bar)
        } else {
            Progress::Lines { name: tagged, out: *out }
        }
    }

    pub fn tick(&mut self, phase: &Phase, elapsed: Duration, p: &TimelinePoint) {
        let msg = loadgate_report::tick_line(p);
        match self {
            Progress::Bar(bar) => {
                bar.set_position(elapsed.as_secs());
                bar.set_message(crate::output::scrub(&msg).into_owned());
            }
            Progress::Lines { name, out } => {
                let total = phase.duration.map(|d| format!("/{}", d)).unwrap_or_default();
                out.error(&format!("{name} {:.0}s{total}  {msg}", elapsed.as_secs_f64()));
            }
            Progress::Quiet => {}
        }
    }

    /// While the phase's connections open: a line about once a second, and one when done (on a terminal, the
    /// bar's message, and the last line printed above it).
    pub fn opening(&mut self, connections: u64, opened: u64, failed: u64, elapsed: Duration, done: bool) {
        let line = loadgate_report::opening_line(connections, opened, failed, elapsed.as_secs_f64(), done);
        match self {
            Progress::Bar(bar) if done => {
                bar.println(crate::output::scrub(&format!("{} {line}", bar.prefix())));
                bar.set_message("");
            }
            Progress::Bar(bar) => bar.set_message(crate::output::scrub(&line).into_owned()),
            Progress::Lines { name, out } => out.error(&format!("{name} {line}")),
            Progress::Quiet => {}
        }
    }

    pub fn finish(&mut self) {
        if let Progress::Bar(bar) = self {
            bar.finish_and_clear();
        }
    }
}
