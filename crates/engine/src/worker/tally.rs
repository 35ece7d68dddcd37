//! A worker's check counts: per request entry (the single request, a mix entry or a session step), each check's
//! passes and failures with its first failing examples, and the responses the checks judged. Kept on the worker
//! thread like every other count; summed across workers at the end of the phase (`phase::aggregate::checks_result`).

use loadgate_measure::{CheckExample, CheckedResponses, MAX_CHECK_EXAMPLES};

/// One check's counts on one worker.
#[derive(Debug, Default, Clone)]
pub(crate) struct CheckCount {
    pub passed: u64,
    pub failed: u64,
    pub examples: Vec<CheckExample>,
}

/// The counts of every check of every entry, flat: entry `e`'s checks are `counts[starts[e]..starts[e + 1]]`.
#[derive(Debug, Default)]
pub(crate) struct CheckTally {
    starts: Vec<usize>,
    pub counts: Vec<CheckCount>,
    /// Per entry.
    pub checked: Vec<CheckedResponses>,
}

impl CheckTally {
    /// `per_entry[e]`: how many checks (captures included) entry `e` has.
    pub fn new(per_entry: &[usize]) -> Self {
        let mut starts = Vec::with_capacity(per_entry.len() + 1);
        let mut at = 0;
        for n in per_entry {
            starts.push(at);
            at += n;
        }
        starts.push(at);
        CheckTally {
            starts,
            counts: vec![CheckCount::default(); at],
            checked: vec![CheckedResponses::default(); per_entry.len()],
        }
    }

    /// Entry `e`'s counts.
    pub fn entry(&self, e: usize) -> &[CheckCount] {
        match (self.starts.get(e), self.starts.get(e + 1)) {
            (Some(&a), Some(&b)) => &self.counts[a..b],
            _ => &[],
        }
    }

    /// Check `i` of entry `e` held or failed; a failure's example is made only while fewer than the bound are
    /// kept, so a steady stream of failures costs a count.
    pub fn count(&mut self, e: usize, i: usize, passed: bool, example: impl FnOnce() -> CheckExample) {
        let (Some(&start), Some(&end)) = (self.starts.get(e), self.starts.get(e + 1)) else { return };
        if start + i >= end {
            return;
        }
        let c = &mut self.counts[start + i];
        if passed {
            c.passed += 1;
        } else {
            c.failed += 1;
            if c.examples.len() < MAX_CHECK_EXAMPLES {
                c.examples.push(example());
            }
        }
    }

    /// A response of entry `e` was judged: `failed` when a check failed though the status was otherwise a
    /// success (2xx, or accepted by a status check: `accepted_non_2xx`).
    pub fn response(&mut self, e: usize, failed: bool, accepted_non_2xx: bool) {
        if let Some(c) = self.checked.get_mut(e) {
            c.responses += 1;
            c.failed += u64::from(failed);
            c.accepted_non_2xx += u64::from(accepted_non_2xx);
        }
    }
}

/// Adds another worker's counts (the same plan), keeping the first examples up to the bound.
impl std::ops::AddAssign<&CheckTally> for CheckTally {
    fn add_assign(&mut self, other: &CheckTally) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            a.passed += b.passed;
            a.failed += b.failed;
            for e in &b.examples {
                if a.examples.len() >= MAX_CHECK_EXAMPLES {
                    break;
                }
                a.examples.push(e.clone());
            }
        }
        for (a, b) in self.checked.iter_mut().zip(&other.checked) {
            *a += b;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_entry_and_check_with_bounded_examples() {
        let mut t = CheckTally::new(&[2, 0, 1]);
        for n in 0..10 {
            t.count(0, 1, false, || CheckExample { status: 200 + n, ..Default::default() });
        }
        t.count(0, 0, true, CheckExample::default);
        t.count(2, 0, true, CheckExample::default);
        // Out of range: ignored, never a panic.
        t.count(1, 0, true, CheckExample::default);
        t.count(9, 0, true, CheckExample::default);
        assert_eq!(t.entry(0)[0].passed, 1);
        assert_eq!(t.entry(0)[1].failed, 10);
        assert_eq!(t.entry(0)[1].examples.len(), MAX_CHECK_EXAMPLES);
        assert_eq!(t.entry(0)[1].examples[0].status, 200);
        assert!(t.entry(1).is_empty());
        assert_eq!(t.entry(2)[0].passed, 1);
        t.response(0, true, false);
        t.response(0, false, true);
        let mut sum = CheckTally::new(&[2, 0, 1]);
        sum += &t;
        sum += &t;
        assert_eq!(sum.entry(0)[1].failed, 20);
        assert_eq!(sum.entry(0)[1].examples.len(), MAX_CHECK_EXAMPLES);
        assert_eq!(sum.checked[0], CheckedResponses { responses: 4, failed: 2, accepted_non_2xx: 2 });
    }
}
