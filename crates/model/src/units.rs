//! loadgate's unit types: durations, rates, byte sizes, CPU lists and percentages.
//!
//! Each type parses from the text a user writes (`500ms`, `32000/s`, `1KiB`, `0-7,16-23`, `0.1%`), displays
//! back in a canonical form, and serializes as that canonical text so plans and results stay readable.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Why a unit value did not parse: a sentence that completes "expected ..., found ...".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitError {
    /// What the value should look like, for example "a duration such as `500ms`, `15s` or `5m`".
    pub expected: &'static str,
    /// An optional hint on how to fix it, for example "add a unit: `100ms`".
    pub help: Option<String>,
}

impl UnitError {
    fn new(expected: &'static str) -> Self {
        Self { expected, help: None }
    }
    fn with_help(expected: &'static str, help: impl Into<String>) -> Self {
        Self { expected, help: Some(help.into()) }
    }
}

const DURATION_EXPECTED: &str = "a duration such as `500ms`, `15s`, `5m` or `1h30m`";

/// A span of time with a unit: `250us`, `500ms`, `15s`, `5m`, `1h`, or a sum such as `1m30s`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Duration(pub std::time::Duration);

impl Duration {
    pub const ZERO: Duration = Duration(std::time::Duration::ZERO);

    pub fn from_secs(s: u64) -> Self {
        Self(std::time::Duration::from_secs(s))
    }
    pub fn from_millis(ms: u64) -> Self {
        Self(std::time::Duration::from_millis(ms))
    }
    pub fn as_std(self) -> std::time::Duration {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0.as_secs_f64()
    }
    pub fn as_micros(self) -> u64 {
        u64::try_from(self.0.as_micros()).unwrap_or(u64::MAX)
    }
}

impl FromStr for Duration {
    type Err = UnitError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let s = text.trim();
        if s.is_empty() {
            return Err(UnitError::new(DURATION_EXPECTED));
        }
        if s.starts_with('-') {
            return Err(UnitError::with_help(DURATION_EXPECTED, "a duration cannot be negative"));
        }
        if s.chars().all(|c| c.is_ascii_digit() || c == '.') {
            return Err(UnitError::with_help(DURATION_EXPECTED, format!("add a unit: `{s}s` or `{s}ms`")));
        }
        let mut total_nanos: u128 = 0;
        let mut rest = s;
        while !rest.is_empty() {
            let num_len = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
            if num_len == 0 {
                return Err(UnitError::new(DURATION_EXPECTED));
            }
            let number: f64 = rest[..num_len].parse().map_err(|_| UnitError::new(DURATION_EXPECTED))?;
            rest = &rest[num_len..];
            let unit_len = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
            let unit = rest[..unit_len].trim();
            rest = rest[unit_len..].trim_start();
            let nanos_per_unit: f64 = match unit {
                "ns" => 1.0,
                "us" | "µs" => 1e3,
                "ms" => 1e6,
                "s" | "sec" | "secs" | "second" | "seconds" => 1e9,
                "m" | "min" | "mins" | "minute" | "minutes" => 60e9,
                "h" | "hr" | "hour" | "hours" => 3600e9,
                "d" | "day" | "days" => 86_400e9,
                "" => return Err(UnitError::with_help(DURATION_EXPECTED, "every number needs a unit, as in `1m30s`")),
                _ => {
                    return Err(UnitError::with_help(
                        DURATION_EXPECTED,
                        format!("unknown unit `{unit}`; use ns, us, ms, s, m, h or d"),
                    ))
                }
            };
            let nanos = number * nanos_per_unit;
            if !nanos.is_finite() || nanos > 1e20 {
                return Err(UnitError::with_help(DURATION_EXPECTED, "the duration is too large"));
            }
            total_nanos += nanos.round() as u128;
        }
        let nanos = u64::try_from(total_nanos)
            .map_err(|_| UnitError::with_help(DURATION_EXPECTED, "the duration is too large"))?;
        Ok(Duration(std::time::Duration::from_nanos(nanos)))
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let nanos = self.0.as_nanos();
        if nanos == 0 {
            return f.write_str("0s");
        }
        const UNITS: [(u128, &str); 6] = [
            (3_600_000_000_000, "h"),
            (60_000_000_000, "m"),
            (1_000_000_000, "s"),
            (1_000_000, "ms"),
            (1_000, "us"),
            (1, "ns"),
        ];
        // Whole seconds and above print as a sum (`1m30s`); below a second, in the largest exact unit.
        if nanos % 1_000_000_000 == 0 {
            let mut rest = nanos;
            for (size, unit) in &UNITS[..3] {
                if rest >= *size {
                    write!(f, "{}{unit}", rest / size)?;
                    rest %= size;
                }
            }
            return Ok(());
        }
        for (size, unit) in &UNITS[2..] {
            if nanos % size == 0 {
                return write!(f, "{}{unit}", nanos / size);
            }
        }
        write!(f, "{nanos}ns")
    }
}

/// A request rate: `32000/s`, `1.2k/s`, `600/m`, `10/ms`. Kept exactly as milli-requests per second so that a
/// split across workers sums back to what the spec asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Rate {
    /// Requests per second times 1000.
    pub millis_per_sec: u64,
}

const RATE_EXPECTED: &str = "a rate such as `32000/s`, `1.2k/s` or `600/m`";

impl Rate {
    pub fn per_sec(self) -> f64 {
        self.millis_per_sec as f64 / 1000.0
    }
    pub fn from_per_sec(r: u64) -> Self {
        Rate { millis_per_sec: r.saturating_mul(1000) }
    }
}

impl FromStr for Rate {
    type Err = UnitError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let s = text.trim();
        if s.starts_with('-') {
            return Err(UnitError::with_help(RATE_EXPECTED, "a rate cannot be negative"));
        }
        let Some((num, per)) = s.split_once('/') else {
            if s.parse::<f64>().is_ok() {
                return Err(UnitError::with_help(RATE_EXPECTED, format!("add the time unit: `{s}/s`")));
            }
            return Err(UnitError::new(RATE_EXPECTED));
        };
        let num = num.trim();
        let (digits, mult) = match num.chars().last() {
            Some('k' | 'K') => (&num[..num.len() - 1], 1e3),
            Some('M') => (&num[..num.len() - 1], 1e6),
            _ => (num, 1.0),
        };
        let value: f64 = digits.trim().parse().map_err(|_| UnitError::new(RATE_EXPECTED))?;
        let per_secs = match per.trim() {
            "s" | "sec" | "second" => 1.0,
            "ms" => 1e-3,
            "m" | "min" | "minute" => 60.0,
            "h" | "hour" => 3600.0,
            other => {
                return Err(UnitError::with_help(
                    RATE_EXPECTED,
                    format!("unknown time unit `{other}`; use s, ms, m or h"),
                ))
            }
        };
        let per_second = value * mult / per_secs;
        if !per_second.is_finite() || per_second > 1e12 {
            return Err(UnitError::with_help(RATE_EXPECTED, "the rate is too large"));
        }
        Ok(Rate { millis_per_sec: (per_second * 1000.0).round() as u64 })
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.millis_per_sec % 1000 == 0 {
            write!(f, "{}/s", self.millis_per_sec / 1000)
        } else {
            let v = self.millis_per_sec as f64 / 1000.0;
            write!(f, "{v}/s")
        }
    }
}

/// A size in bytes: `256`, `256B`, `4KiB`, `1kB`, `1MiB`, `1MB`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ByteSize(pub u64);

const BYTES_EXPECTED: &str = "a size such as `256B`, `4KiB` or `1MB`";

impl FromStr for ByteSize {
    type Err = UnitError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let s = text.trim();
        if s.starts_with('-') {
            return Err(UnitError::with_help(BYTES_EXPECTED, "a size cannot be negative"));
        }
        let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
        let value: f64 = s[..split].parse().map_err(|_| UnitError::new(BYTES_EXPECTED))?;
        let mult: f64 = match s[split..].trim() {
            "" | "B" | "b" => 1.0,
            "k" | "kB" | "KB" => 1e3,
            "KiB" | "Ki" => 1024.0,
            "M" | "MB" => 1e6,
            "MiB" | "Mi" => 1024.0 * 1024.0,
            "G" | "GB" => 1e9,
            "GiB" | "Gi" => 1024.0 * 1024.0 * 1024.0,
            other => {
                return Err(UnitError::with_help(
                    BYTES_EXPECTED,
                    format!("unknown unit `{other}`; use B, kB, KiB, MB, MiB, GB or GiB"),
                ))
            }
        };
        let bytes = value * mult;
        if !bytes.is_finite() || bytes > 1e15 {
            return Err(UnitError::with_help(BYTES_EXPECTED, "the size is too large"));
        }
        Ok(ByteSize(bytes.round() as u64))
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        if b >= 1 << 20 && b % (1 << 20) == 0 {
            write!(f, "{}MiB", b >> 20)
        } else if b >= 1 << 10 && b % (1 << 10) == 0 {
            write!(f, "{}KiB", b >> 10)
        } else {
            write!(f, "{b}B")
        }
    }
}

/// A set of CPU ids in taskset (util-linux) syntax: `0`, `0-7`, `0-7,16-23`, `0-31:2` (every second CPU of the
/// range). Kept sorted and without duplicates. The one parser of CPU lists: specs and `import` both use it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct CpuList(Vec<u32>);

const CPUS_EXPECTED: &str = "a CPU list in taskset syntax such as `1`, `0-7`, `0-7,16-23` or `0-31:2`";
/// The largest CPU id a spec may name; Linux's default `NR_CPUS` ceiling.
pub const MAX_CPU_ID: u32 = 8191;

impl CpuList {
    pub fn new(mut cpus: Vec<u32>) -> Self {
        cpus.sort_unstable();
        cpus.dedup();
        CpuList(cpus)
    }
    pub fn cpus(&self) -> &[u32] {
        &self.0
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn contains(&self, cpu: u32) -> bool {
        self.0.binary_search(&cpu).is_ok()
    }
    /// The CPUs present in both lists.
    /// The list split in two equal halves, for a duet's two targets (an odd last CPU is left out: a larger half
    /// would be a fixed advantage that swapping the halves every round does not cancel, since a server sizes its
    /// threads once, at its start); `None` below two CPUs (the targets must then share them).
    pub fn halves(&self) -> Option<[CpuList; 2]> {
        let half = self.0.len() / 2;
        if half == 0 {
            return None;
        }
        Some([CpuList(self.0[..half].to_vec()), CpuList(self.0[half..2 * half].to_vec())])
    }

    pub fn intersection(&self, other: &CpuList) -> CpuList {
        CpuList(self.0.iter().copied().filter(|c| other.contains(*c)).collect())
    }
}

impl FromStr for CpuList {
    type Err = UnitError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let s = text.trim();
        if s.is_empty() {
            return Err(UnitError::new(CPUS_EXPECTED));
        }
        let mut cpus = Vec::new();
        for part in s.split(',') {
            let part = part.trim();
            let parse = |t: &str| -> Result<u32, UnitError> {
                let t = t.trim();
                if t.starts_with('-') {
                    return Err(UnitError::with_help(CPUS_EXPECTED, "CPU ids cannot be negative"));
                }
                let id: u32 = t.parse().map_err(|_| {
                    UnitError::with_help(
                        CPUS_EXPECTED,
                        format!("`{t}` is not a CPU id; write numbers and ranges separated by commas"),
                    )
                })?;
                if id > MAX_CPU_ID {
                    return Err(UnitError::with_help(
                        CPUS_EXPECTED,
                        format!("CPU id {id} is above the largest Linux allows ({MAX_CPU_ID})"),
                    ));
                }
                Ok(id)
            };
            if part.is_empty() {
                return Err(UnitError::with_help(CPUS_EXPECTED, "remove the empty item between commas"));
            }
            // util-linux's stride: `0-31:2` is every second CPU from 0 to 31.
            let (range, stride) = match part.split_once(':') {
                Some((range, stride)) => {
                    let n: u32 = stride.trim().parse().ok().filter(|n| *n >= 1).ok_or_else(|| {
                        UnitError::with_help(
                            CPUS_EXPECTED,
                            format!(
                                "`{part}`: the stride after `:` must be a whole number of at least 1, as in `0-31:2`"
                            ),
                        )
                    })?;
                    (range.trim(), n)
                }
                None => (part, 1),
            };
            match range.split_once('-') {
                Some((lo, hi)) if !lo.trim().is_empty() => {
                    let (lo, hi) = (parse(lo)?, parse(hi)?);
                    if lo > hi {
                        return Err(UnitError::with_help(
                            CPUS_EXPECTED,
                            format!("the range `{range}` runs backwards; write `{hi}-{lo}`"),
                        ));
                    }
                    cpus.extend((lo..=hi).step_by(stride as usize));
                }
                _ if stride != 1 => {
                    return Err(UnitError::with_help(
                        CPUS_EXPECTED,
                        format!("`{part}`: a stride goes with a range, as in `0-31:2`"),
                    ))
                }
                _ => cpus.push(parse(range)?),
            }
        }
        Ok(CpuList::new(cpus))
    }
}

impl fmt::Display for CpuList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        let mut i = 0;
        while i < self.0.len() {
            let start = self.0[i];
            let mut end = start;
            while i + 1 < self.0.len() && self.0[i + 1] == end + 1 {
                i += 1;
                end = self.0[i];
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if start == end {
                write!(f, "{start}")?;
            } else {
                write!(f, "{start}-{end}")?;
            }
            i += 1;
        }
        Ok(())
    }
}

/// A fraction written as a percentage: `0.1%`, `5%`.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default)]
pub struct Percent(pub f64);

const PERCENT_EXPECTED: &str = "a percentage such as `0.1%` or `5%`";

impl FromStr for Percent {
    type Err = UnitError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let s = text.trim();
        let Some(num) = s.strip_suffix('%') else {
            if let Ok(v) = s.parse::<f64>() {
                return Err(UnitError::with_help(
                    PERCENT_EXPECTED,
                    format!("add `%`: `{v}%` (a fraction {v} would be `{}%`)", v * 100.0),
                ));
            }
            return Err(UnitError::new(PERCENT_EXPECTED));
        };
        let v: f64 = num.trim().parse().map_err(|_| UnitError::new(PERCENT_EXPECTED))?;
        if !(0.0..=100.0).contains(&v) {
            return Err(UnitError::with_help(PERCENT_EXPECTED, "a percentage lies between 0% and 100%"));
        }
        Ok(Percent(v / 100.0))
    }
}

impl fmt::Display for Percent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}%", trim_float(self.0 * 100.0))
    }
}

/// Formats a float without a trailing `.0` and without binary noise (`0.1`, not `0.1000000000000000055`).
pub fn trim_float(v: f64) -> String {
    let s = format!("{:.6}", v);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s.is_empty() || s == "-" {
        "0".to_owned()
    } else {
        s.to_owned()
    }
}

macro_rules! text_serde {
    ($($t:ty),*) => {$(
        impl Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = String::deserialize(d)?;
                text.parse().map_err(|e: UnitError| serde::de::Error::custom(format!("expected {}", e.expected)))
            }
        }
    )*};
}
text_serde!(Duration, Rate, ByteSize, CpuList, Percent);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!("500ms".parse::<Duration>().unwrap(), Duration::from_millis(500));
        assert_eq!("1m30s".parse::<Duration>().unwrap(), Duration::from_secs(90));
        assert_eq!("1.5s".parse::<Duration>().unwrap(), Duration::from_millis(1500));
        assert_eq!(Duration::from_secs(90).to_string(), "1m30s");
        assert_eq!(Duration::from_millis(1500).to_string(), "1500ms");
        assert!("100".parse::<Duration>().unwrap_err().help.unwrap().contains("100ms"));
        assert!("-1s".parse::<Duration>().is_err());
        assert!("5x".parse::<Duration>().is_err());
    }

    #[test]
    fn rates() {
        assert_eq!("32000/s".parse::<Rate>().unwrap(), Rate::from_per_sec(32000));
        assert_eq!("1.2k/s".parse::<Rate>().unwrap(), Rate::from_per_sec(1200));
        assert_eq!("600/m".parse::<Rate>().unwrap(), Rate::from_per_sec(10));
        assert_eq!(Rate { millis_per_sec: 500 }.to_string(), "0.5/s");
        assert!("-5/s".parse::<Rate>().is_err());
        assert!("5".parse::<Rate>().unwrap_err().help.unwrap().contains("5/s"));
    }

    #[test]
    fn a_duets_targets_get_halves_of_the_target_cpus_and_one_cpu_is_shared() {
        let halves = |s: &str| s.parse::<CpuList>().unwrap().halves().map(|[a, b]| (a.to_string(), b.to_string()));
        assert_eq!(halves("0"), None);
        assert_eq!(halves("2-5"), Some(("2-3".to_owned(), "4-5".to_owned())));
        assert_eq!(halves("0-2"), Some(("0".to_owned(), "1".to_owned())), "equal halves: the odd CPU is left out");
    }

    #[test]
    fn cpu_lists() {
        let l: CpuList = "0-3,8,16-17".parse().unwrap();
        assert_eq!(l.cpus(), &[0, 1, 2, 3, 8, 16, 17]);
        assert_eq!(l.to_string(), "0-3,8,16-17");
        assert!("3-1".parse::<CpuList>().is_err());
        assert!("a".parse::<CpuList>().is_err());
        assert!("1,,2".parse::<CpuList>().is_err());
        assert!("99999".parse::<CpuList>().is_err());
        assert_eq!("0-7:2,9".parse::<CpuList>().unwrap().cpus(), [0, 2, 4, 6, 9]);
        assert_eq!("0-7:2".parse::<CpuList>().unwrap().to_string(), "0,2,4,6");
        assert!("0-7:0".parse::<CpuList>().is_err());
        assert!("3:2".parse::<CpuList>().is_err());
        assert!("0-7:x".parse::<CpuList>().is_err());
    }

    #[test]
    fn sizes_and_percent() {
        assert_eq!("4KiB".parse::<ByteSize>().unwrap(), ByteSize(4096));
        assert_eq!("1MB".parse::<ByteSize>().unwrap(), ByteSize(1_000_000));
        assert_eq!("0.1%".parse::<Percent>().unwrap().to_string(), "0.1%");
        assert!("101%".parse::<Percent>().is_err());
    }
}
