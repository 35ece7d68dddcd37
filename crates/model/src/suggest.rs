//! "Did you mean" suggestions for misspelt keys, names and values.

/// The closest candidate to `found`, if one is close enough to be a likely typo.
pub fn did_you_mean<'a>(found: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let found_lower = found.to_ascii_lowercase();
    let mut best: Option<(f64, &'a str)> = None;
    for candidate in candidates {
        let score = strsim::jaro_winkler(&found_lower, &candidate.to_ascii_lowercase());
        let distance = strsim::damerau_levenshtein(&found_lower, &candidate.to_ascii_lowercase());
        let close = score >= 0.85 || distance <= 1 || (distance <= 2 && candidate.len() >= 5);
        if close && best.is_none_or(|(s, _)| score > s) {
            best = Some((score, candidate));
        }
    }
    best.map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::did_you_mean;

    #[test]
    fn suggests_close_names_only() {
        assert_eq!(did_you_mean("conections", ["connections", "duration"]), Some("connections"));
        assert_eq!(did_you_mean("pipline", ["pipeline", "keep_alive"]), Some("pipeline"));
        assert_eq!(did_you_mean("zzz", ["pipeline", "keep_alive"]), None);
    }
}
