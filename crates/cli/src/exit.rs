//! Exit codes, defined once. CI scripts rely on them; never renumber.

use std::process::ExitCode;

use loadgate_runner::memory::MemoryError;
use loadgate_runner::JobError;

use crate::output::Output;

/// What a loadgate run ended in, as a process exit code.
///
/// | code | meaning |
/// | --- | --- |
/// | 0 | every gated SLO held (or nothing was gated) |
/// | 1 | an SLO failed |
/// | 2 | the spec or the command line is invalid; nothing ran |
/// | 3 | the run could not be carried out (target never ready, target died, pinning impossible with `fail`, interrupted) |
/// | 4 | the run is invalid as a measurement: the generator did not deliver what the plan asked |
/// | 5 | no SLO failed, but a check over repetitions could not tell (`gating.on_inconclusive`) |
///
/// When several apply, the highest-ranked wins: 2 > 3 > 4 > 1 > 5 > 0. An invalid measurement outranks an SLO
/// failure because its numbers describe the generator, not the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Exit {
    Pass = 0,
    SloFailed = 1,
    InvalidInput = 2,
    RunFailed = 3,
    InvalidMeasurement = 4,
    Inconclusive = 5,
}

/// The exit codes from the weakest to the strongest: when several apply, the strongest wins.
const PRECEDENCE: [Exit; 6] =
    [Exit::Pass, Exit::Inconclusive, Exit::SloFailed, Exit::InvalidMeasurement, Exit::RunFailed, Exit::InvalidInput];

impl Exit {
    /// The outcome that wins when both apply: the later in [`PRECEDENCE`].
    pub fn worst(self, other: Exit) -> Exit {
        let rank = |e: Exit| PRECEDENCE.iter().position(|p| *p == e);
        if rank(other) > rank(self) {
            other
        } else {
            self
        }
    }

    /// The exit code of a run's outcome (the mapping is `OutcomeStatus::exit_code`, defined once).
    pub fn of(status: loadgate_results::OutcomeStatus) -> Exit {
        [Exit::Pass, Exit::SloFailed, Exit::InvalidInput, Exit::RunFailed, Exit::InvalidMeasurement, Exit::Inconclusive]
            .into_iter()
            .find(|e| i32::from(e.code()) == status.exit_code())
            .unwrap_or(Exit::RunFailed)
    }

    pub fn code(self) -> u8 {
        self as u8
    }
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> ExitCode {
        ExitCode::from(e.code())
    }
}

/// Prints `error: ...` and gives `exit`: the `?` of the commands.
pub fn fail(out: &Output, exit: Exit) -> impl FnOnce(String) -> Exit + '_ {
    move |message| {
        out.error(&format!("error: {message}"));
        exit
    }
}

/// A job that could not be built: exit 2 for what the user gave, 3 for what this machine could not do.
pub fn job_failed(out: &Output) -> impl Fn(JobError) -> Exit + '_ {
    move |e| match e {
        JobError::Diagnostic(rendered) => {
            out.error(&rendered);
            Exit::InvalidInput
        }
        JobError::Invalid(m) => fail(out, Exit::InvalidInput)(m),
        JobError::Machine(m) => fail(out, Exit::RunFailed)(m),
    }
}

/// A history command's error: bad input exits 2, a store that failed 3, a history with nothing to judge 5.
pub fn memory_failed(out: &Output) -> impl Fn(MemoryError) -> Exit + '_ {
    move |e| match e {
        MemoryError::Input(m) => fail(out, Exit::InvalidInput)(m),
        MemoryError::Store(m) => fail(out, Exit::RunFailed)(m),
        MemoryError::Nothing(m) => fail(out, Exit::Inconclusive)(m),
    }
}

#[cfg(test)]
mod tests {
    use super::Exit;

    #[test]
    fn precedence() {
        assert_eq!(Exit::SloFailed.worst(Exit::InvalidMeasurement), Exit::InvalidMeasurement);
        assert_eq!(Exit::InvalidMeasurement.worst(Exit::RunFailed), Exit::RunFailed);
        assert_eq!(Exit::Pass.worst(Exit::SloFailed), Exit::SloFailed);
        assert_eq!(Exit::RunFailed.worst(Exit::InvalidInput), Exit::InvalidInput);
        assert_eq!(Exit::Inconclusive.worst(Exit::SloFailed), Exit::SloFailed);
        assert_eq!(Exit::Pass.worst(Exit::Inconclusive), Exit::Inconclusive);
        for status in [
            loadgate_results::OutcomeStatus::Passed,
            loadgate_results::OutcomeStatus::SloFailed,
            loadgate_results::OutcomeStatus::RunFailed,
            loadgate_results::OutcomeStatus::InvalidMeasurement,
            loadgate_results::OutcomeStatus::Incomplete,
            loadgate_results::OutcomeStatus::Inconclusive,
        ] {
            assert_eq!(i32::from(Exit::of(status).code()), status.exit_code(), "{status:?}");
        }
    }
}
