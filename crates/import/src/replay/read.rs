//! Reading a log within stated limits: lines one at a time (a line never longer than
//! [`Limits::max_line_bytes`], at most [`Limits::max_lines`] lines and [`Limits::max_bytes`] bytes), each
//! parsed by its format; lines that fail are counted and the first few kept, and reading stops with an error
//! only when more than [`Limits::max_bad_share`] of the lines failed (or the first 100 all failed: a log in
//! another format than declared).

use std::io::{BufRead, Read};

use super::error::{LineError, ReplayError};
use super::har;
use super::json::JsonMapping;
use super::record::{LogRecord, Skips};
use super::text::{self, LineFormat};

/// The bounds on what a log may cost. Memory is bounded by them: one line buffer of at most `max_line_bytes`,
/// and one record per kept line (about 200 bytes plus its strings), so at most `max_lines` records.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    /// Lines read at most (default 20,000,000).
    pub max_lines: u64,
    /// Bytes read at most (default 8 GiB).
    pub max_bytes: u64,
    /// One line's bytes at most (default 64 KiB).
    pub max_line_bytes: usize,
    /// A HAR's bytes at most: it is read whole (default 256 MiB).
    pub max_har_bytes: u64,
    /// The share of lines that may fail before the log is refused (default 0.01: 1%).
    pub max_bad_share: f64,
    /// How many failed lines are named (default 5).
    pub first_errors: usize,
    /// Requests the reorder buffer holds at most (default 1,000,000).
    pub max_reorder: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_lines: 20_000_000,
            max_bytes: 8 << 30,
            max_line_bytes: 64 << 10,
            max_har_bytes: 256 << 20,
            max_bad_share: 0.01,
            first_errors: 5,
            max_reorder: 1_000_000,
        }
    }
}

/// A log's format.
#[derive(Debug, Clone, PartialEq)]
pub enum LogFormat {
    /// nginx's predefined `combined`.
    NginxCombined,
    /// An nginx `log_format` string.
    Nginx(String),
    /// Apache's Common Log Format.
    ApacheCommon,
    /// Apache's combined format.
    ApacheCombined,
    /// An Apache `LogFormat` string.
    Apache(String),
    /// JSON lines with a field mapping.
    JsonLines(JsonMapping),
    /// AWS Application Load Balancer access logs.
    Alb,
    /// HAR 1.2, keeping one origin (default: the first entry's).
    Har {
        /// The origin to keep (`https://shop.example`).
        origin: Option<String>,
    },
}

/// What reading a log gave.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ParsedLog {
    /// The requests, in file order (not time order).
    pub records: Vec<LogRecord>,
    /// Lines (HAR: entries) read.
    pub lines: u64,
    /// Lines that could not be read.
    pub bad: u64,
    /// The first of them.
    pub first_bad: Vec<LineError>,
    /// Entries skipped while reading (HAR), by reason.
    pub skips: Skips,
    /// HAR: the origin kept.
    pub origin: Option<String>,
    /// Records read (streamed: handed out rather than kept in `records`).
    pub kept: u64,
}

enum Parser {
    Line(LineFormat),
    Json(JsonMapping),
    Alb,
}

impl Parser {
    fn parse(&self, n: u64, line: &str) -> Result<Option<LogRecord>, LineError> {
        match self {
            Parser::Line(f) => f.parse(n, line),
            Parser::Json(m) => m.parse(n, line),
            Parser::Alb => super::alb::parse(n, line),
        }
    }
}

/// Reads a log in `format` within `limits`, every record at once (for an import; a replay streams through
/// [`Records`]).
pub fn parse_log<R: BufRead>(input: R, format: &LogFormat, limits: &Limits) -> Result<ParsedLog, ReplayError> {
    let mut records = Records::new(input, format, limits)?;
    let mut kept = Vec::new();
    while let Some(r) = records.next_record()? {
        kept.push(r);
    }
    let mut out = records.into_parsed();
    out.records = kept;
    finish(out, limits)
}

/// A log's records one at a time, in file order, within the limits: the memory held is one line (a HAR: the
/// file, read whole within [`Limits::max_har_bytes`]). [`Records::finish`] checks the share of bad lines and
/// that anything was read.
pub struct Records<R> {
    input: R,
    source: Source,
    limits: Limits,
    buf: Vec<u8>,
    bytes: u64,
    /// What was read so far (its `records` stay empty).
    out: ParsedLog,
}

enum Source {
    Lines(Parser),
    /// A HAR's entries, read whole, handed out in order.
    Har(std::vec::IntoIter<LogRecord>),
}

impl<R: BufRead> Records<R> {
    /// Starts reading `input` in `format` (a HAR is read and parsed here).
    pub fn new(mut input: R, format: &LogFormat, limits: &Limits) -> Result<Self, ReplayError> {
        let parser = match format {
            LogFormat::NginxCombined => Parser::Line(LineFormat::nginx(text::NGINX_COMBINED)?),
            LogFormat::Nginx(f) => Parser::Line(LineFormat::nginx(f)?),
            LogFormat::ApacheCommon => Parser::Line(LineFormat::apache(text::APACHE_COMMON)?),
            LogFormat::ApacheCombined => Parser::Line(LineFormat::apache(text::APACHE_COMBINED)?),
            LogFormat::Apache(f) => Parser::Line(LineFormat::apache(f)?),
            LogFormat::JsonLines(m) => {
                m.check()?;
                Parser::Json(m.clone())
            }
            LogFormat::Alb => Parser::Alb,
            LogFormat::Har { origin } => {
                let mut out = read_har(&mut input, origin.as_deref(), limits)?;
                let records = std::mem::take(&mut out.records);
                return Ok(Records {
                    input,
                    source: Source::Har(records.into_iter()),
                    limits: limits.clone(),
                    buf: Vec::new(),
                    bytes: 0,
                    out,
                });
            }
        };
        Ok(Records {
            input,
            source: Source::Lines(parser),
            limits: limits.clone(),
            buf: Vec::with_capacity(512),
            bytes: 0,
            out: ParsedLog::default(),
        })
    }

    /// The next record, `None` at the end of the input.
    pub fn next_record(&mut self) -> Result<Option<LogRecord>, ReplayError> {
        let parser = match &mut self.source {
            Source::Har(it) => return Ok(it.next()),
            Source::Lines(p) => &*p,
        };
        let (limits, out, buf) = (&self.limits, &mut self.out, &mut self.buf);
        loop {
            buf.clear();
            let cap = limits.max_line_bytes as u64 + 1;
            let n = (&mut self.input).take(cap).read_until(b'\n', buf).map_err(|e| ReplayError::Io(e.to_string()))?;
            if n == 0 {
                return Ok(None);
            }
            out.lines += 1;
            let line_no = out.lines;
            self.bytes += n as u64;
            if buf.len() > limits.max_line_bytes && buf.last() != Some(&b'\n') {
                return Err(ReplayError::TooLarge(format!(
                    "line {line_no} is longer than {} bytes (the limit of one line)",
                    limits.max_line_bytes
                )));
            }
            if out.lines > limits.max_lines {
                return Err(ReplayError::TooLarge(format!(
                    "the log has more than {} lines (the limit)",
                    limits.max_lines
                )));
            }
            if self.bytes > limits.max_bytes {
                return Err(ReplayError::TooLarge(format!(
                    "the log is larger than {} bytes (the limit)",
                    limits.max_bytes
                )));
            }
            let parsed = match std::str::from_utf8(buf) {
                Ok(line) => parser.parse(line_no, line),
                Err(e) => Err(LineError::new(line_no, format!("not UTF-8 at byte {}", e.valid_up_to() + 1))),
            };
            match parsed {
                Ok(Some(r)) => {
                    out.kept += 1;
                    return Ok(Some(r));
                }
                Ok(None) => {}
                Err(e) => {
                    out.bad += 1;
                    if out.first_bad.len() < limits.first_errors {
                        out.first_bad.push(e);
                    }
                    if out.bad == out.lines && out.lines >= 100 {
                        return Err(too_many(out, limits));
                    }
                }
            }
        }
    }

    /// What was read (without the records), for counts.
    pub fn parsed(&self) -> &ParsedLog {
        &self.out
    }

    /// Checks, at the end, the share of bad lines and that the log held anything; gives the counts.
    pub fn finish(self) -> Result<ParsedLog, ReplayError> {
        let limits = self.limits.clone();
        let out = self.into_parsed();
        finish(out, &limits)
    }

    fn into_parsed(self) -> ParsedLog {
        self.out
    }
}

fn too_many(out: &ParsedLog, limits: &Limits) -> ReplayError {
    ReplayError::TooManyBadLines {
        failed: out.bad,
        read: out.lines,
        max_share_percent: limits.max_bad_share * 100.0,
        first: out.first_bad.clone(),
    }
}

fn finish(out: ParsedLog, limits: &Limits) -> Result<ParsedLog, ReplayError> {
    if out.bad > 0 && out.bad as f64 > out.lines as f64 * limits.max_bad_share {
        return Err(too_many(&out, limits));
    }
    if out.records.is_empty() && out.kept == 0 && out.skips.is_empty() {
        return Err(ReplayError::Empty("the log has no requests".into()));
    }
    Ok(out)
}

fn read_har<R: Read>(input: R, origin: Option<&str>, limits: &Limits) -> Result<ParsedLog, ReplayError> {
    let mut text = String::new();
    input.take(limits.max_har_bytes + 1).read_to_string(&mut text).map_err(|e| ReplayError::Io(e.to_string()))?;
    if text.len() as u64 > limits.max_har_bytes {
        return Err(ReplayError::TooLarge(format!(
            "the HAR is larger than {} bytes (a HAR is read whole; the limit)",
            limits.max_har_bytes
        )));
    }
    let h = har::parse(&text, origin)?;
    let lines = (h.records.len() + h.bad.len()) as u64 + h.skips.values().sum::<u64>();
    let out = ParsedLog {
        lines,
        bad: h.bad.len() as u64,
        first_bad: h.bad.into_iter().take(limits.first_errors).collect(),
        kept: h.records.len() as u64,
        records: h.records,
        skips: h.skips,
        origin: Some(h.origin),
    };
    finish(out, limits)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"10.0.0.1 - - [28/Nov/2026:10:00:00 +0000] "GET / HTTP/1.1" 200 1 "-" "curl/8""#;

    #[test]
    fn a_few_bad_lines_are_counted_and_named_within_the_allowed_share() {
        let mut log = String::new();
        for i in 0..200 {
            log.push_str(if i == 50 { "garbage" } else { GOOD });
            log.push('\n');
        }
        let p = parse_log(log.as_bytes(), &LogFormat::NginxCombined, &Limits::default()).unwrap();
        assert_eq!((p.lines, p.bad, p.records.len()), (200, 1, 199));
        assert_eq!(p.first_bad[0].line, 51);
    }

    #[test]
    fn more_bad_lines_than_the_share_refuse_the_log_naming_the_first() {
        let log = format!("{GOOD}\nbad one\n{GOOD}\nbad two\n");
        let e = parse_log(log.as_bytes(), &LogFormat::NginxCombined, &Limits::default()).unwrap_err();
        let ReplayError::TooManyBadLines { failed, read, first, .. } = &e else { panic!("{e}") };
        assert_eq!((*failed, *read), (2, 4));
        assert_eq!(first.iter().map(|e| e.line).collect::<Vec<_>>(), vec![2, 4]);
        assert!(e.to_string().starts_with("2 of 4 lines could not be read (more than 1% allowed); first: line 2:"));
    }

    #[test]
    fn a_log_in_another_format_stops_after_a_hundred_lines() {
        let log = format!("{GOOD}\n").repeat(10_000);
        let e = parse_log(log.as_bytes(), &LogFormat::Alb, &Limits::default()).unwrap_err();
        assert!(matches!(e, ReplayError::TooManyBadLines { read: 100, .. }), "{e}");
    }

    #[test]
    fn lines_bytes_and_line_length_are_capped() {
        let log = format!("{GOOD}\n").repeat(10);
        let small = Limits { max_lines: 5, ..Limits::default() };
        assert!(
            matches!(parse_log(log.as_bytes(), &LogFormat::NginxCombined, &small), Err(ReplayError::TooLarge(m)) if m.contains("more than 5 lines"))
        );
        let small = Limits { max_bytes: 100, ..Limits::default() };
        assert!(
            matches!(parse_log(log.as_bytes(), &LogFormat::NginxCombined, &small), Err(ReplayError::TooLarge(m)) if m.contains("100 bytes"))
        );
        let long = format!("{GOOD}\n{}\n", "x".repeat(1000));
        let small = Limits { max_line_bytes: 200, ..Limits::default() };
        assert!(
            matches!(parse_log(long.as_bytes(), &LogFormat::NginxCombined, &small), Err(ReplayError::TooLarge(m)) if m.starts_with("line 2 is longer than 200 bytes"))
        );
        let small = Limits { max_har_bytes: 10, ..Limits::default() };
        assert!(matches!(
            parse_log(&b"{\"log\":{\"entries\":[]}}"[..], &LogFormat::Har { origin: None }, &small),
            Err(ReplayError::TooLarge(_))
        ));
    }

    #[test]
    fn an_empty_log_and_a_non_utf8_line_are_named() {
        assert!(matches!(
            parse_log(&b"\n\n"[..], &LogFormat::NginxCombined, &Limits::default()),
            Err(ReplayError::Empty(_))
        ));
        let mut log = format!("{GOOD}\n").repeat(200).into_bytes();
        log.extend_from_slice(b"\xff\xfe\n");
        let p = parse_log(&log[..], &LogFormat::NginxCombined, &Limits::default()).unwrap();
        assert_eq!(p.first_bad[0].to_string(), "line 201: not UTF-8 at byte 1");
    }
}
