//! Numbers for people: `1.25ms`, `94,737/s`, `0.12%`, `61.3MiB`, `1,234`.
//!
//! Every report formats through these functions so the terminal, JUnit and Markdown agree to the digit.

/// A latency in microseconds: `850us`, `1.25ms`, `143.2ms`, `2.50s`.
///
/// Values below 100 in their unit keep two decimals, larger ones one, so a table column stays readable.
pub fn latency_us(us: f64) -> String {
    if !us.is_finite() {
        return "n/a".to_owned();
    }
    let (value, unit) = if us < 1_000.0 {
        (us, "us")
    } else if us < 1_000_000.0 {
        (us / 1_000.0, "ms")
    } else {
        (us / 1_000_000.0, "s")
    };
    if unit == "us" {
        format!("{}us", value.round())
    } else if value >= 100.0 {
        format!("{value:.1}{unit}")
    } else {
        format!("{value:.2}{unit}")
    }
}

/// A latency in whole microseconds, as [`latency_us`].
pub fn latency(us: u64) -> String {
    latency_us(us as f64)
}

/// A duration in seconds: `15.00s`, `2m30.0s`.
pub fn seconds(s: f64) -> String {
    if !s.is_finite() {
        return "n/a".to_owned();
    }
    if s < 60.0 {
        format!("{s:.2}s")
    } else {
        let minutes = (s / 60.0).floor();
        format!("{}m{:04.1}s", minutes as u64, s - minutes * 60.0)
    }
}

/// A whole number with thousands separators: `1,234,567`.
pub fn count(n: u64) -> String {
    group_thousands(&n.to_string())
}

/// A rate per second: `94,737/s` from 100/s up, `12.50/s` below.
pub fn rate(per_sec: f64) -> String {
    format!("{}/s", number(per_sec))
}

/// A non-negative number with thousands separators: whole from 100 up (`94,737`), two decimals below (`12.50`).
pub fn number(v: f64) -> String {
    if !v.is_finite() {
        return "n/a".to_owned();
    }
    if v.abs() >= 100.0 {
        let rounded = v.round();
        let sign = if rounded < 0.0 { "-" } else { "" };
        format!("{sign}{}", group_thousands(&format!("{:.0}", rounded.abs())))
    } else {
        format!("{v:.2}")
    }
}

/// A fraction as a percentage: `0%`, `0.0012%`, `0.12%`, `12.5%`, `100%`.
pub fn ratio(fraction: f64) -> String {
    if !fraction.is_finite() {
        return "n/a".to_owned();
    }
    let pct = fraction * 100.0;
    if pct == 0.0 {
        "0%".to_owned()
    } else if (99.995..=100.0).contains(&pct) {
        "100%".to_owned()
    } else if pct >= 10.0 {
        format!("{pct:.1}%")
    } else if pct >= 0.01 {
        format!("{pct:.2}%")
    } else {
        format!("{pct:.4}%")
    }
}

/// A byte count in binary units: `512B`, `1.50KiB`, `61.32MiB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if n < 1024 {
        return format!("{n}B");
    }
    let mut value = n as f64 / 1024.0;
    let mut unit = UNITS[0];
    for next in &UNITS[1..] {
        if value < 1024.0 {
            break;
        }
        value /= 1024.0;
        unit = next;
    }
    format!("{value:.2}{unit}")
}

fn group_thousands(digits: &str) -> String {
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_for_people() {
        assert_eq!(latency(850), "850us");
        assert_eq!(latency(1_250), "1.25ms");
        assert_eq!(latency(143_200), "143.2ms");
        assert_eq!(latency(2_500_000), "2.50s");
        assert_eq!(rate(94_736.8), "94,737/s");
        assert_eq!(rate(12.5), "12.50/s");
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(count(999), "999");
        assert_eq!(ratio(0.0), "0%");
        assert_eq!(ratio(0.0012), "0.12%");
        assert_eq!(ratio(0.000012), "0.0012%");
        assert_eq!(ratio(0.125), "12.5%");
        assert_eq!(ratio(1.0), "100%");
        assert_eq!(bytes(512), "512B");
        assert_eq!(bytes(64_300_000), "61.32MiB");
        assert_eq!(seconds(15.0), "15.00s");
        assert_eq!(seconds(150.0), "2m30.0s");
    }
}
