//! JSON lines: one object a line, read through a small field mapping (which field holds the time and in which
//! format, the method, the path or URL, the status, the duration, the headers, the body, the client). A field is
//! named by its key or a dotted path (`request.method`).

use serde_json::Value;

use super::error::{LineError, ReplayError};
use super::record::{ClientKey, LogRecord, Micros, Resolution, StartFrom};
use super::time;

/// How the time field is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeFormat {
    /// `2026-11-28T10:00:00.123Z` (a string).
    Rfc3339,
    /// Seconds since the epoch, with a fraction or not (a number or a string).
    EpochSeconds,
    /// Milliseconds since the epoch (a number or a string).
    EpochMillis,
    /// `28/Nov/2026:10:00:00 +0000`.
    CommonLog,
}

/// Whether the time is the request's start or when it was logged (its end).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeIs {
    /// The request's arrival.
    Start,
    /// When the request ended: the start is the time less the duration (or the time itself without one).
    End,
}

/// The unit of the duration field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DurationUnit {
    /// Seconds (a fraction allowed).
    Seconds,
    /// Milliseconds (a fraction allowed).
    Millis,
    /// Microseconds.
    Micros,
}

/// Which field holds what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonMapping {
    /// The time field (default `time`).
    pub time: String,
    /// Its format (default RFC 3339).
    pub time_format: TimeFormat,
    /// Whether it is the start or the end (default the start).
    pub time_is: TimeIs,
    /// The method field (default `method`; a line without it is a GET).
    pub method: String,
    /// The path-and-query or absolute URL field (default `path`).
    pub path: String,
    /// The status field (default `status`).
    pub status: String,
    /// The duration field and its unit (default none).
    pub duration: Option<(String, DurationUnit)>,
    /// A field holding the request headers as an object (default none).
    pub headers: Option<String>,
    /// A field holding the request body as a string (default none).
    pub body: Option<String>,
    /// A field naming the client (default none; then the `remote_addr` and `user_agent` fields, if present).
    pub client: Option<String>,
}

impl Default for JsonMapping {
    fn default() -> Self {
        JsonMapping {
            time: "time".into(),
            time_format: TimeFormat::Rfc3339,
            time_is: TimeIs::Start,
            method: "method".into(),
            path: "path".into(),
            status: "status".into(),
            duration: None,
            headers: None,
            body: None,
            client: None,
        }
    }
}

fn get<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(v, |v, k| v.get(k))
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

impl JsonMapping {
    /// Checks the mapping: no empty field names.
    pub fn check(&self) -> Result<(), ReplayError> {
        for (what, f) in [("time", &self.time), ("method", &self.method), ("path", &self.path)] {
            if f.is_empty() || f.split('.').any(str::is_empty) {
                return Err(ReplayError::Format(format!(
                    "the `{what}` field name `{f}` is empty or has an empty part"
                )));
            }
        }
        Ok(())
    }

    /// Reads one line. `Ok(None)` for an empty line.
    pub fn parse(&self, line_no: u64, line: &str) -> Result<Option<LogRecord>, LineError> {
        if line.trim().is_empty() {
            return Ok(None);
        }
        let err = |m: String| LineError::new(line_no, m);
        let v: Value = serde_json::from_str(line).map_err(|e| err(format!("not JSON: {e}")))?;
        if !v.is_object() {
            return Err(err("not a JSON object".into()));
        }
        let field = |name: &str| -> Result<String, LineError> {
            get(&v, name).and_then(text).ok_or_else(|| err(format!("no string or number field `{name}`")))
        };
        let raw_time = field(&self.time)?;
        let (t, resolution): (Micros, Resolution) = match self.time_format {
            TimeFormat::Rfc3339 => time::rfc3339(&raw_time),
            TimeFormat::EpochSeconds => time::decimal_seconds(&raw_time)
                .map(|t| (t, if raw_time.contains('.') { Resolution::Fine } else { Resolution::Second })),
            TimeFormat::EpochMillis => time::epoch_millis(&raw_time).map(|t| (t, Resolution::Fine)),
            TimeFormat::CommonLog => time::common_log(&raw_time).map(|t| (t, Resolution::Second)),
        }
        .ok_or_else(|| err(format!("`{}` value `{raw_time}` is not a {:?} time", self.time, self.time_format)))?;
        let duration = match &self.duration {
            None => None,
            Some((name, unit)) => match get(&v, name).and_then(text) {
                None => None,
                Some(d) => {
                    let secs = time::decimal_seconds(&d)
                        .ok_or_else(|| err(format!("`{name}` value `{d}` is not a non-negative number")))?;
                    Some(match unit {
                        DurationUnit::Seconds => secs,
                        DurationUnit::Millis => secs / 1_000,
                        DurationUnit::Micros => secs / 1_000_000,
                    })
                }
            },
        };
        let (start, start_from) = match (self.time_is, duration) {
            (TimeIs::Start, _) => (t, StartFrom::Arrival),
            (TimeIs::End, Some(d)) => (t.saturating_sub(d), StartFrom::EndLessDuration),
            (TimeIs::End, None) => (t, StartFrom::WriteTime),
        };
        let method = get(&v, &self.method).and_then(text).unwrap_or_else(|| "GET".into());
        let target = field(&self.path)?;
        let status = get(&v, &self.status).and_then(text).and_then(|s| s.parse::<u16>().ok());
        let mut headers = Vec::new();
        if let Some(h) = &self.headers {
            if let Some(obj) = get(&v, h).and_then(Value::as_object) {
                for (k, val) in obj {
                    if let Some(val) = text(val) {
                        headers.push((k.clone(), val));
                    }
                }
            }
        }
        let body = self.body.as_ref().and_then(|b| get(&v, b)).and_then(Value::as_str).map(|s| s.as_bytes().to_vec());
        let ua = headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("user-agent"))
            .map(|(_, v)| v.clone())
            .or_else(|| get(&v, "user_agent").and_then(text))
            .unwrap_or_default();
        let client = match &self.client {
            Some(c) => ClientKey::Peer { addr: get(&v, c).and_then(text).unwrap_or_default(), user_agent: ua },
            None => match get(&v, "remote_addr").and_then(text) {
                Some(addr) => ClientKey::Peer { addr, user_agent: ua },
                None if ua.is_empty() => ClientKey::Unknown,
                None => ClientKey::Peer { addr: String::new(), user_agent: ua },
            },
        };
        Ok(Some(LogRecord {
            line: line_no,
            start,
            resolution,
            start_from,
            method,
            target,
            status,
            headers,
            body,
            client,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_line_maps_its_fields_and_keeps_headers_and_body() {
        let m = JsonMapping {
            headers: Some("request.headers".into()),
            body: Some("request.body".into()),
            method: "request.method".into(),
            path: "request.uri".into(),
            ..JsonMapping::default()
        };
        let line = r#"{"time":"2026-11-28T10:00:00.125Z","status":201,"remote_addr":"10.1.2.3","request":{"method":"POST","uri":"/orders?x=1","headers":{"Content-Type":"application/json","User-Agent":"app/2.1"},"body":"{\"sku\":7}"}}"#;
        let r = m.parse(5, line).unwrap().unwrap();
        assert_eq!(r.method, "POST");
        assert_eq!(r.target, "/orders?x=1");
        assert_eq!(r.status, Some(201));
        assert_eq!(r.body.as_deref(), Some(&br#"{"sku":7}"#[..]));
        assert_eq!(r.resolution, Resolution::Fine);
        assert_eq!(r.client, ClientKey::Peer { addr: "10.1.2.3".into(), user_agent: "app/2.1".into() });
        assert_eq!(r.start, time::rfc3339("2026-11-28T10:00:00.125Z").unwrap().0);
    }

    #[test]
    fn an_end_time_in_epoch_millis_less_a_duration_in_millis_is_the_start() {
        let m = JsonMapping {
            time: "ts".into(),
            time_format: TimeFormat::EpochMillis,
            time_is: TimeIs::End,
            duration: Some(("took_ms".into(), DurationUnit::Millis)),
            ..JsonMapping::default()
        };
        let r = m.parse(1, r#"{"ts":1795902601500,"took_ms":"12.5","path":"/a"}"#).unwrap().unwrap();
        assert_eq!(r.start, 1_795_902_601_500_000 - 12_500);
        assert_eq!(r.start_from, StartFrom::EndLessDuration);
        assert_eq!(r.method, "GET");
        let m = JsonMapping { time_format: TimeFormat::EpochSeconds, ..JsonMapping::default() };
        let r = m.parse(1, r#"{"time":1795902601,"path":"/a"}"#).unwrap().unwrap();
        assert_eq!(r.resolution, Resolution::Second);
    }

    #[test]
    fn json_lines_that_are_broken_or_miss_a_field_are_located_errors() {
        let m = JsonMapping::default();
        assert!(m.parse(3, "{\"time\":").unwrap_err().message.starts_with("not JSON"));
        assert_eq!(m.parse(4, "[1,2]").unwrap_err().message, "not a JSON object");
        assert!(m.parse(5, r#"{"path":"/"}"#).unwrap_err().message.contains("`time`"));
        assert!(m.parse(6, r#"{"time":"noon","path":"/"}"#).unwrap_err().message.contains("not a Rfc3339 time"));
        assert!(m.parse(7, r#"{"time":"2026-11-28T10:00:00Z"}"#).unwrap_err().message.contains("`path`"));
        assert!(JsonMapping { time: "a..b".into(), ..JsonMapping::default() }.check().is_err());
    }
}
