//! The value syntaxes of the imported tools: wrk's SI numbers and times, Go and humantime durations, URLs,
//! headers and taskset CPU lists and masks.

use std::fmt;

/// The longest duration an import writes (a century; loadgate's durations are u64 nanoseconds).
const MAX_NANOS: u128 = 100 * 365 * 24 * 3600 * 1_000_000_000;

/// A duration in nanoseconds, printed the way loadgate writes durations (`5m`, `1h30m`, `250ms`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Dur(pub u64);

impl Dur {
    pub fn from_secs(s: u64) -> Dur {
        Dur(s.saturating_mul(1_000_000_000))
    }
    fn checked(nanos: f64) -> Option<Dur> {
        (nanos.is_finite() && nanos >= 0.0 && nanos <= MAX_NANOS as f64).then(|| Dur(nanos.round() as u64))
    }
}

impl fmt::Display for Dur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        if n == 0 {
            return f.write_str("0s");
        }
        if n % 1_000_000_000 == 0 {
            let mut rest = n / 1_000_000_000;
            for (size, unit) in [(3600, "h"), (60, "m"), (1, "s")] {
                if rest >= size {
                    write!(f, "{}{unit}", rest / size)?;
                    rest %= size;
                }
            }
            return Ok(());
        }
        for (size, unit) in [(1_000_000, "ms"), (1_000, "us")] {
            if n % size == 0 {
                return write!(f, "{}{unit}", n / size);
            }
        }
        write!(f, "{n}ns")
    }
}

/// A decimal number at the start of `s` (`12`, `1.5`, `.5`), and the rest.
fn leading_number(s: &str) -> Option<(f64, &str)> {
    let end = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let num = &s[..end];
    if num.is_empty() || num == "." || num.matches('.').count() > 1 {
        return None;
    }
    num.parse::<f64>().ok().map(|v| (v, &s[end..]))
}

/// wrk's `scan_metric`: a number with an optional SI suffix (`64`, `1k`, `1.5M`, `2G`), truncated to an integer.
pub(crate) fn wrk_metric(s: &str) -> Option<u64> {
    let (v, unit) = leading_number(s.trim())?;
    let scale = match unit.to_ascii_lowercase().as_str() {
        "" => 1e0,
        "k" => 1e3,
        "m" => 1e6,
        "g" => 1e9,
        _ => return None,
    };
    let n = (v * scale).trunc();
    (n.is_finite() && n <= u64::MAX as f64 / 2.0).then_some(n as u64)
}

/// wrk's `scan_time`: seconds with an optional unit (`15`, `15s`, `5m`, `1h`), truncated to whole seconds.
pub(crate) fn wrk_time(s: &str) -> Option<Dur> {
    let (v, unit) = leading_number(s.trim())?;
    let scale = match unit.to_ascii_lowercase().as_str() {
        "" | "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        _ => return None,
    };
    let secs = (v * scale).trunc();
    Dur::checked(secs * 1e9)
}

/// h2load's `<DURATION>`: an integer and an optional unit, `h`, `m`, `s` or `ms` (`10`, `10s`, `500ms`, `1h`);
/// a bare number is seconds.
pub(crate) fn h2load_time(s: &str) -> Option<Dur> {
    let t = s.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let n: u64 = t[..digits].parse().ok()?;
    let nanos_per_unit: u64 = match &t[digits..] {
        "" | "s" => 1_000_000_000,
        "ms" => 1_000_000,
        "m" => 60 * 1_000_000_000,
        "h" => 3600 * 1_000_000_000,
        _ => return None,
    };
    let nanos = n.checked_mul(nanos_per_unit)?;
    (u128::from(nanos) <= MAX_NANOS).then_some(Dur(nanos))
}

/// A plain non-negative integer, as `atoi` would accept when the whole text is digits (ab, hey).
pub(crate) fn integer(s: &str) -> Option<u64> {
    let t = s.trim();
    let t = t.strip_prefix('+').unwrap_or(t);
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    t.parse().ok()
}

/// A non-negative decimal number (`100`, `2.5`), as Go's `ParseFloat` or Rust's `f64` parse reads QPS.
pub(crate) fn decimal(s: &str) -> Option<f64> {
    let (v, rest) = leading_number(s.trim())?;
    (rest.is_empty() && v.is_finite()).then_some(v)
}

/// oha's `-n`: an integer with an optional `k` or `m` suffix (`10k`, `1.5m`).
pub(crate) fn oha_count(s: &str) -> Option<u64> {
    let t = s.trim().to_ascii_lowercase();
    let (num, scale) = match t.strip_suffix('k') {
        Some(n) => (n.to_owned(), 1e3),
        None => match t.strip_suffix('m') {
            Some(n) => (n.to_owned(), 1e6),
            None => return integer(&t),
        },
    };
    let v = decimal(&num)? * scale;
    (v <= u64::MAX as f64 / 2.0).then_some(v as u64)
}

/// Go's `time.ParseDuration`: `10s`, `1m30s`, `1.5h`, `300ms`, `0`.
pub(crate) fn go_duration(s: &str) -> Option<Dur> {
    let t = s.trim();
    let t = t.strip_prefix('+').unwrap_or(t);
    if t == "0" {
        return Some(Dur(0));
    }
    let mut rest = t;
    let mut total = 0.0;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let (v, after) = leading_number(rest)?;
        let unit_len = after.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(after.len());
        let scale = match &after[..unit_len] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        total += v * scale;
        rest = &after[unit_len..];
    }
    Dur::checked(total)
}

/// oha's `-z` and `-t`, read as oha reads them: with the humantime crate's `parse_duration` (`10s`, `3m`,
/// `1h 30m`, `500ms`, `2days`, `1hour 12min 5s`).
pub(crate) fn humantime(s: &str) -> Option<Dur> {
    let d = humantime::parse_duration(s.trim()).ok()?;
    let nanos = d.as_nanos();
    (nanos <= MAX_NANOS).then_some(Dur(nanos as u64))
}

/// A taskset/numactl CPU list (`0-7,16-23`, with util-linux's strides `0-31:2`), as sorted CPU ids: read by the
/// spec language's own parser, so an imported list is accepted exactly when a spec would accept it.
pub(crate) fn cpu_list(s: &str) -> Option<Vec<u32>> {
    let list: loadgate_model::units::CpuList = s.parse().ok()?;
    (!list.is_empty()).then(|| list.cpus().to_vec())
}

/// The largest CPU id loadgate accepts.
pub(crate) const MAX_CPU: u64 = loadgate_model::units::MAX_CPU_ID as u64;

/// A taskset affinity mask in hexadecimal (`0x3`, `ff`, `ffffffff,00000000`), as CPU ids.
pub(crate) fn cpu_mask(s: &str) -> Option<Vec<u32>> {
    let t = s.trim();
    let t = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")).unwrap_or(t);
    let hex: String = t.chars().filter(|c| *c != ',').collect();
    if hex.is_empty() || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    let mut cpus = Vec::new();
    for (pos, c) in hex.chars().rev().enumerate() {
        let nibble = c.to_digit(16)?;
        for bit in 0..4 {
            if nibble & (1 << bit) != 0 {
                let cpu = pos as u64 * 4 + bit;
                if cpu > MAX_CPU {
                    return None;
                }
                cpus.push(cpu as u32);
            }
        }
    }
    cpus.sort_unstable();
    (!cpus.is_empty()).then_some(cpus)
}

/// CPU ids in taskset syntax, with ranges: `0-7,16-23`.
pub(crate) fn format_cpus(cpus: &[u32]) -> String {
    let mut out = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        let mut end = start;
        while i + 1 < cpus.len() && cpus[i + 1] == end + 1 {
            i += 1;
            end = cpus[i];
        }
        out.push(if start == end { start.to_string() } else { format!("{start}-{end}") });
        i += 1;
    }
    out.join(",")
}

/// A target URL split for a spec: `http://host:port` and `/path?query`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TargetUrl {
    pub https: bool,
    /// `scheme://host[:port]`, without user information.
    pub base: String,
    pub host: String,
    /// The path and query, percent-encoded where a request line needs it; `/` when the URL has none.
    pub path: String,
    /// `user:password` from the URL, for a Basic `Authorization` header.
    pub userinfo: Option<String>,
    pub fragment: Option<String>,
}

/// Splits an http(s) URL with the one URL parser (`loadgate_model::url`); the error is what is wrong with it.
pub(crate) fn parse_url(text: &str) -> Result<TargetUrl, String> {
    let url = loadgate_model::url::HttpUrl::parse(text).map_err(|e| e.to_string())?;
    Ok(TargetUrl {
        https: url.https,
        base: url.base(),
        host: url.host.clone(),
        path: url.path.clone(),
        userinfo: url.userinfo.clone(),
        fragment: url.fragment.clone(),
    })
}

/// Splits a `Name: value` header line; `None` when it is not one.
pub(crate) fn header(line: &str) -> Option<(String, String)> {
    let (name, value) = line.split_once(':')?;
    let name = name.trim();
    let token = !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
    let value = value.trim();
    (token && !value.contains(['\r', '\n', '\0'])).then(|| (name.to_owned(), value.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_print_like_loadgate() {
        assert_eq!(Dur::from_secs(300).to_string(), "5m");
        assert_eq!(Dur::from_secs(5400).to_string(), "1h30m");
        assert_eq!(Dur(250_000_000).to_string(), "250ms");
        assert_eq!(Dur(1_500_000_000).to_string(), "1500ms");
    }

    #[test]
    fn wrk_units() {
        assert_eq!(wrk_time("15"), Some(Dur::from_secs(15)));
        assert_eq!(wrk_time("5m"), Some(Dur::from_secs(300)));
        assert_eq!(wrk_time("1h"), Some(Dur::from_secs(3600)));
        assert_eq!(wrk_time("10ms"), None);
        assert_eq!(wrk_metric("1k"), Some(1000));
        assert_eq!(wrk_metric("1.5M"), Some(1_500_000));
        assert_eq!(wrk_metric("x"), None);
    }

    #[test]
    fn h2load_units() {
        assert_eq!(h2load_time("10"), Some(Dur::from_secs(10)));
        assert_eq!(h2load_time("10s"), Some(Dur::from_secs(10)));
        assert_eq!(h2load_time("500ms"), Some(Dur(500_000_000)));
        assert_eq!(h2load_time("2m"), Some(Dur::from_secs(120)));
        assert_eq!(h2load_time("1h"), Some(Dur::from_secs(3600)));
        for bad in ["", "s", "1.5s", "10us", "-1", "1 s", "99999999999999999999"] {
            assert_eq!(h2load_time(bad), None, "{bad}");
        }
    }

    #[test]
    fn go_and_humantime() {
        assert_eq!(go_duration("1m30s"), Some(Dur::from_secs(90)));
        assert_eq!(go_duration("1.5h"), Some(Dur::from_secs(5400)));
        assert_eq!(go_duration("10"), None);
        assert_eq!(humantime("1h 30m"), Some(Dur::from_secs(5400)));
        assert_eq!(humantime("500ms"), Some(Dur(500_000_000)));
        assert_eq!(humantime("10"), None);
        assert_eq!(humantime("1hour 12min 5s"), Some(Dur::from_secs(4325)));
        assert_eq!(humantime("2days"), Some(Dur::from_secs(172_800)));
        assert_eq!(humantime("250us"), Some(Dur(250_000)));
    }

    #[test]
    fn cpus() {
        assert_eq!(cpu_list("16-19,2"), Some(vec![2, 16, 17, 18, 19]));
        assert_eq!(cpu_list("0-6:2"), Some(vec![0, 2, 4, 6]));
        assert_eq!(cpu_list("3-1"), None);
        assert_eq!(cpu_mask("0x3"), Some(vec![0, 1]));
        assert_eq!(cpu_mask("f0"), Some(vec![4, 5, 6, 7]));
        assert_eq!(cpu_mask("0"), None);
        assert_eq!(format_cpus(&[0, 1, 2, 5, 7, 8]), "0-2,5,7-8");
    }

    #[test]
    fn urls() {
        let u = parse_url("http://localhost:8080/api/orders?i=1").unwrap();
        assert_eq!((u.base.as_str(), u.path.as_str()), ("http://localhost:8080", "/api/orders?i=1"));
        let u = parse_url("HTTP://u:p@[::1]:80?q#frag").unwrap();
        assert_eq!((u.base.as_str(), u.path.as_str()), ("http://[::1]:80", "/?q"));
        assert_eq!(u.userinfo.as_deref(), Some("u:p"));
        assert_eq!(parse_url("http://h/a b").unwrap().path, "/a%20b");
        assert!(parse_url("localhost:8080").is_err());
        assert!(parse_url("ftp://x/").is_err());
        assert!(parse_url("http://h:0/").is_err());
        assert!(parse_url("http://h:99999/").is_err());
        assert!(parse_url("http://ho st/").is_err());
    }
}
