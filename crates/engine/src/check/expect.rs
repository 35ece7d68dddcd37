//! What checks share: captured variables (the [`Vars`] a check's expected text reads) and regexes with their
//! per-worker caches.

use loadgate_model::generate::Segment;
use loadgate_model::Expected;
use regex_automata::meta::{Cache, Regex};
use regex_automata::util::primitives::NonMaxUsize;
use regex_automata::Input;

/// A user's captured values, by slot. The engine's per-user state implements it.
pub(crate) trait Vars {
    /// The value of a set variable; `None` when it was not captured.
    fn var(&self, slot: u16) -> Option<&[u8]>;
}

/// No variables (a request outside a session).
pub(crate) struct NoVars;

impl Vars for NoVars {
    fn var(&self, _: u16) -> Option<&[u8]> {
        None
    }
}

/// Values by slot (tests, and callers that keep them so).
impl Vars for [Option<Vec<u8>>] {
    fn var(&self, slot: u16) -> Option<&[u8]> {
        self.get(slot as usize)?.as_deref()
    }
}

/// Whether `value` is the expected text; `Err(slot)` when a variable it uses is unset.
pub(crate) fn expected_eq(e: &Expected, vars: &(impl Vars + ?Sized), value: &[u8]) -> Result<bool, u16> {
    let mut rest = value;
    let mut equal = true;
    for s in &e.0 {
        let part: &[u8] = match s {
            Segment::Text(t) => t.as_bytes(),
            Segment::Var { slot, .. } => vars.var(*slot).ok_or(*slot)?,
            Segment::Gen { .. } => &[],
        };
        if equal && rest.starts_with(part) {
            rest = &rest[part.len()..];
        } else {
            equal = false;
        }
    }
    Ok(equal && rest.is_empty())
}

/// Appends the expected text to `out`; `Err(slot)` when a variable is unset.
pub(crate) fn write_expected(e: &Expected, vars: &(impl Vars + ?Sized), out: &mut Vec<u8>) -> Result<(), u16> {
    for s in &e.0 {
        match s {
            Segment::Text(t) => out.extend_from_slice(t.as_bytes()),
            Segment::Var { slot, .. } => out.extend_from_slice(vars.var(*slot).ok_or(*slot)?),
            Segment::Gen { .. } => {}
        }
    }
    Ok(())
}

/// Whether the expected text uses a variable.
pub(crate) fn has_vars(e: &Expected) -> bool {
    e.0.iter().any(|s| matches!(s, Segment::Var { .. }))
}

/// The regex size limits: a spec's regex compiles within 1 MiB.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// A compiled regex: searches take a [`Cache`] made for it ([`Re::cache`]), one per worker.
#[derive(Debug, Clone)]
pub(crate) struct Re {
    regex: Regex,
    /// Whether the pattern has a group 1 (a capture takes it rather than the whole match).
    group1: bool,
    pub(crate) source: String,
}

impl Re {
    pub(crate) fn new(source: &str) -> Result<Re, String> {
        let config = Regex::config()
            .nfa_size_limit(Some(REGEX_SIZE_LIMIT))
            .onepass_size_limit(Some(REGEX_SIZE_LIMIT))
            .dfa_size_limit(Some(REGEX_SIZE_LIMIT))
            .hybrid_cache_capacity(REGEX_SIZE_LIMIT);
        let regex = Regex::builder()
            .configure(config)
            .build(source)
            .map_err(|e| format!("the regex `{source}` does not compile: {e}"))?;
        let group1 = regex.group_info().group_len(regex_automata::PatternID::ZERO) > 1;
        Ok(Re { regex, group1, source: source.to_string() })
    }

    pub(crate) fn cache(&self) -> Cache {
        self.regex.create_cache()
    }

    pub(crate) fn is_match(&self, cache: &mut Cache, hay: &[u8]) -> bool {
        self.regex.search_with(cache, &Input::new(hay).earliest(true)).is_some()
    }

    /// The value a capture takes: group 1 when the pattern has one (`None` when it did not take part), else the
    /// whole match.
    pub(crate) fn extract<'h>(&self, cache: &mut Cache, hay: &'h [u8]) -> Option<&'h [u8]> {
        let mut slots: [Option<NonMaxUsize>; 4] = [None; 4];
        self.regex.search_slots_with(cache, &Input::new(hay), &mut slots)?;
        let (a, b) = if self.group1 { (slots[2], slots[3]) } else { (slots[0], slots[1]) };
        Some(&hay[a?.get()..b?.get()])
    }
}
