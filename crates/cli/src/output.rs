//! Where the binary writes what people read: one place for stdout and stderr.

use std::io::{IsTerminal, Write};

use crate::args::ColorChoice;

#[derive(Debug, Clone, Copy)]
pub struct Output {
    pub quiet: bool,
}

impl Output {
    pub fn new(quiet: bool) -> Self {
        Output { quiet }
    }

    /// Whether to colour terminal output: `--color`, then `NO_COLOR`, then whether stdout is a terminal.
    pub fn use_color(choice: ColorChoice) -> bool {
        match choice {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stdout().is_terminal()
            }
        }
    }

    /// The main output of a command (plans, schemas, summaries): always printed.
    pub fn data(&self, text: &str) {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        if !text.ends_with('\n') {
            let _ = out.write_all(b"\n");
        }
        let _ = out.flush();
    }

    /// Progress and information: hidden by `-q`.
    pub fn info(&self, text: &str) {
        if !self.quiet {
            self.data(text);
        }
    }

    /// Errors and warnings, always on stderr.
    pub fn error(&self, text: &str) {
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(text.as_bytes());
        if !text.ends_with('\n') {
            let _ = err.write_all(b"\n");
        }
    }
}
