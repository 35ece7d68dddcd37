//! The time formats logs write, read into microseconds since the epoch: pure functions, no panic on any input.

use super::record::{Micros, Resolution};

/// A decimal number of seconds (`1700000000.123`, `0.042`, `-`-free) as microseconds; digits past the sixth
/// decimal are cut. `None` for anything else (signs, exponents, empty parts, overflow).
pub fn decimal_seconds(s: &str) -> Option<Micros> {
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    if int.is_empty() || !int.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if int.len() > 12 {
        return None;
    }
    let whole: i64 = int.parse().ok()?;
    let mut micros: i64 = 0;
    for (i, b) in frac.bytes().take(6).enumerate() {
        micros += i64::from(b - b'0') * 10_i64.pow(5 - i as u32);
    }
    whole.checked_mul(1_000_000)?.checked_add(micros)
}

/// Whole milliseconds since the epoch (`1700000000123`) as microseconds.
pub fn epoch_millis(s: &str) -> Option<Micros> {
    if s.is_empty() || s.len() > 16 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<i64>().ok()?.checked_mul(1_000)
}

/// The common log time `10/Oct/2000:13:55:36 -0700` (nginx `$time_local`, Apache `%t`; brackets allowed).
pub fn common_log(s: &str) -> Option<Micros> {
    let s = s.strip_prefix('[').unwrap_or(s);
    let s = s.strip_suffix(']').unwrap_or(s);
    let t = chrono::DateTime::parse_from_str(s, "%d/%b/%Y:%H:%M:%S %z").ok()?;
    Some(t.timestamp_micros())
}

/// An RFC 3339 time (`2018-07-02T22:22:48.364000Z`, `2024-05-01T10:00:00+02:00`) and whether it had a fraction
/// of a second.
pub fn rfc3339(s: &str) -> Option<(Micros, Resolution)> {
    let t = chrono::DateTime::parse_from_rfc3339(s).ok()?;
    let fine = s.contains('.');
    Some((t.timestamp_micros(), if fine { Resolution::Fine } else { Resolution::Second }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_seconds_keep_microseconds_and_refuse_anything_but_digits() {
        assert_eq!(decimal_seconds("1700000000.123"), Some(1_700_000_000_123_000));
        assert_eq!(decimal_seconds("0.042"), Some(42_000));
        assert_eq!(decimal_seconds("3"), Some(3_000_000));
        assert_eq!(decimal_seconds("0.1234567"), Some(123_456));
        for bad in ["", "-1", ".5", "1e3", "1.2.3", "99999999999999999"] {
            assert_eq!(decimal_seconds(bad), None, "{bad}");
        }
    }

    #[test]
    fn common_log_times_carry_their_offset() {
        let a = common_log("[10/Oct/2000:13:55:36 -0700]").unwrap();
        let b = common_log("10/Oct/2000:20:55:36 +0000").unwrap();
        assert_eq!(a, b);
        assert_eq!(common_log("10/Foo/2000:13:55:36 -0700"), None);
    }

    #[test]
    fn rfc3339_times_say_whether_they_had_a_fraction() {
        assert_eq!(rfc3339("1970-01-01T00:00:01.5Z"), Some((1_500_000, Resolution::Fine)));
        assert_eq!(rfc3339("1970-01-01T01:00:01+01:00"), Some((1_000_000, Resolution::Second)));
        assert_eq!(rfc3339("yesterday"), None);
    }
}
