//! Where the binary writes what people read: one place for stdout and stderr.

use std::borrow::Cow;
use std::io::{IsTerminal, Write};
use std::sync::Mutex;

use loadgate_model::secrets::Redactor;

use crate::args::ColorChoice;

/// The secret values of every spec loaded so far: whatever the binary prints passes through them (the target's
/// command line, an instance named after a secret matrix value, a message quoting a request).
static SECRETS: Mutex<Option<Redactor>> = Mutex::new(None);

/// From now on, `secrets`' values are replaced by `***` in everything printed.
pub fn keep_secret(secrets: &Redactor) {
    if secrets.is_empty() {
        return;
    }
    let mut kept = SECRETS.lock().unwrap_or_else(|e| e.into_inner());
    *kept = Some(kept.take().map_or_else(|| secrets.clone(), |old| old.and(secrets)));
}

/// `text` with the secrets kept so far replaced.
pub fn scrub(text: &str) -> Cow<'_, str> {
    match SECRETS.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
        Some(r) => Cow::Owned(r.scrub(text)),
        None => Cow::Borrowed(text),
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Output {
    pub quiet: bool,
    /// stdout carries a document (`run --json`, `--out -`): everything else goes to stderr.
    pub stdout_reserved: bool,
    /// Everything goes to stdout, errors too (a shard's `--out -` into a log, see [`Output::one_stream`]).
    pub one_stream: bool,
}

impl Output {
    pub fn new(quiet: bool) -> Self {
        Output { quiet, stdout_reserved: false, one_stream: false }
    }

    /// The same output with everything on stdout, in the order it was written: for a shard's framed result
    /// (`run --shard I/N --out -`) when stderr is not a terminal. A log collector reads stdout and stderr apart
    /// (conmon, `kubectl logs` of a runtime that splits long writes) and may put a stderr line inside a frame
    /// line it had read half of; one stream cannot be cut that way.
    pub fn one_stream(self) -> Self {
        Output { stdout_reserved: false, one_stream: true, ..self }
    }

    /// The same output with stdout kept for a document.
    pub fn reserving_stdout(self) -> Self {
        Output { stdout_reserved: true, ..self }
    }

    /// A document on stdout (results.json for `run --json`): never mixed with anything else.
    pub fn document(&self, text: &str) {
        write_line(&mut std::io::stdout().lock(), &scrub(text));
    }

    /// Whether to colour terminal output: `--color`, then `NO_COLOR`, then whether the stream the summaries go
    /// to (stdout, or stderr when stdout carries a document) is a terminal.
    pub fn use_color(&self, choice: ColorChoice) -> bool {
        match choice {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                    && if self.stdout_reserved {
                        std::io::stderr().is_terminal()
                    } else {
                        std::io::stdout().is_terminal()
                    }
            }
        }
    }

    /// The main output of a command (plans, schemas, summaries): always printed (on stderr when stdout carries a
    /// document).
    pub fn data(&self, text: &str) {
        if self.stdout_reserved {
            return self.error(text);
        }
        write_line(&mut std::io::stdout().lock(), &scrub(text));
    }

    /// Progress and information: hidden by `-q`.
    pub fn info(&self, text: &str) {
        if !self.quiet {
            self.data(text);
        }
    }

    /// Errors and warnings, on stderr (on stdout in [one stream](Output::one_stream)).
    pub fn error(&self, text: &str) {
        if self.one_stream {
            write_line(&mut std::io::stdout().lock(), &scrub(text));
        } else {
            write_line(&mut std::io::stderr().lock(), &scrub(text));
        }
    }
}

/// `text` and a newline unless it ends with one, in one write, flushed. A closed stream (`loadgate ... | head`) is
/// not an error.
fn write_line(stream: &mut impl Write, text: &str) {
    let line = if text.ends_with('\n') { Cow::Borrowed(text) } else { Cow::Owned(format!("{text}\n")) };
    let _ = stream.write_all(line.as_bytes());
    let _ = stream.flush();
}
