//! Wall-clock times as results.json writes them (RFC 3339, UTC) and as `--start-at` reads them.

use std::time::SystemTime;

/// `t` as RFC 3339 UTC (`2026-11-23T10:00:00Z`, or `2026-11-23T10:00:00.250Z` with `millis`).
pub fn rfc3339(t: SystemTime, millis: bool) -> String {
    let format = if millis { chrono::SecondsFormat::Millis } else { chrono::SecondsFormat::Secs };
    chrono::DateTime::<chrono::Utc>::from(t).to_rfc3339_opts(format, true)
}

/// Reads an RFC 3339 time: `2026-11-23T10:00:00Z`, with optional fractional seconds and a `+HH:MM` or `-HH:MM`
/// offset instead of `Z`. A date that does not exist (`2026-02-31`) is refused, not rolled into the next month.
pub fn parse_rfc3339(text: &str) -> Result<SystemTime, String> {
    let t = text.trim();
    let parsed = chrono::DateTime::parse_from_rfc3339(t)
        .map_err(|e| format!("`{text}` is not an RFC 3339 time such as 2026-11-23T10:00:00Z ({e})"))?;
    Ok(parsed.into())
}

/// Now, as `2026-11-23T10:00:00Z`.
pub fn now_rfc3339() -> String {
    rfc3339(SystemTime::now(), false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn rfc3339_round_trips() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_millis(1_795_000_000_250);
        let s = rfc3339(t, true);
        assert_eq!(parse_rfc3339(&s).unwrap(), t);
        assert_eq!(parse_rfc3339("1970-01-01T01:00:00+01:00").unwrap(), SystemTime::UNIX_EPOCH);
        assert!(parse_rfc3339("yesterday").is_err());
        assert!(parse_rfc3339("2026-13-01T00:00:00Z").is_err());
        assert!(parse_rfc3339("2026-02-31T00:00:00Z").is_err(), "no such day: not rolled into March");
        assert!(parse_rfc3339("2028-02-29T00:00:00Z").is_ok());
        assert_eq!(rfc3339(SystemTime::UNIX_EPOCH, false), "1970-01-01T00:00:00Z");
    }

    #[test]
    fn dates_are_rfc3339() {
        let d = now_rfc3339();
        assert_eq!(d.len(), 20, "{d}");
        assert!(d.ends_with('Z'));
    }
}
