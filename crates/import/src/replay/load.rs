//! A spec's `load: { replay: ... }` (`loadgate_model::replay::Replay`) as this module's options, the file opened
//! (a `.gz` decompressed as it is read), and the schedule's summary read once through in bounded memory.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::time::Duration;

use loadgate_model::replay::{Replay, ReplayBound, ReplayFormat, ReplaySummary};

use super::error::ReplayError;
use super::json::{DurationUnit, JsonMapping, TimeFormat, TimeIs};
use super::read::{Limits, LogFormat};
use super::schedule::{MethodPolicy, ReplayOptions, StatusPattern, Stream, StreamEnd, WindowBound};
use super::secret::SecretRules;

/// The seed of the spreading of second-resolution times in a replay load (fixed, so that the spec's summary
/// and the engine's schedule agree, whatever the scenario's seed).
pub const REPLAY_SEED: u64 = 0x7265_706c_6179; // "replay"

/// The width of the windows the fidelity report compares rates in.
pub const WINDOW: Duration = Duration::from_millis(10);

/// A JSON mapping's words as this module's.
pub fn json_mapping(f: &loadgate_model::replay::JsonFields) -> Result<JsonMapping, ReplayError> {
    let time_format = match f.time_format.as_str() {
        "rfc3339" => TimeFormat::Rfc3339,
        "epoch_seconds" => TimeFormat::EpochSeconds,
        "epoch_millis" => TimeFormat::EpochMillis,
        "common_log" => TimeFormat::CommonLog,
        other => {
            return Err(ReplayError::Format(format!(
                "`time_format: {other}` is not one of rfc3339, epoch_seconds, epoch_millis, common_log"
            )))
        }
    };
    let time_is = match f.time_is.as_str() {
        "start" => TimeIs::Start,
        "end" => TimeIs::End,
        other => return Err(ReplayError::Format(format!("`time_is: {other}` is not `start` or `end`"))),
    };
    let duration = match &f.duration {
        None => None,
        Some((field, unit)) => Some((
            field.clone(),
            match unit.as_str() {
                "s" => DurationUnit::Seconds,
                "ms" => DurationUnit::Millis,
                "us" => DurationUnit::Micros,
                other => return Err(ReplayError::Format(format!("`duration_unit: {other}` is not `s`, `ms` or `us`"))),
            },
        )),
    };
    let m = JsonMapping {
        time: f.time.clone(),
        time_format,
        time_is,
        method: f.method.clone(),
        path: f.path.clone(),
        status: f.status.clone(),
        duration,
        headers: f.headers.clone(),
        body: f.body.clone(),
        client: f.client.clone(),
    };
    m.check()?;
    Ok(m)
}

/// The spec's format as this module's.
pub fn log_format(format: &ReplayFormat) -> Result<LogFormat, ReplayError> {
    Ok(match format {
        ReplayFormat::NginxCombined => LogFormat::NginxCombined,
        ReplayFormat::Nginx { log_format } => LogFormat::Nginx(log_format.clone()),
        ReplayFormat::ApacheCommon => LogFormat::ApacheCommon,
        ReplayFormat::ApacheCombined => LogFormat::ApacheCombined,
        ReplayFormat::Apache { log_format } => LogFormat::Apache(log_format.clone()),
        ReplayFormat::Json { fields } => LogFormat::JsonLines(json_mapping(fields)?),
        ReplayFormat::Alb => LogFormat::Alb,
        ReplayFormat::Har { origin } => LogFormat::Har { origin: origin.clone() },
    })
}

/// The spec's replay as this module's format, limits and options.
pub fn options(r: &Replay) -> Result<(LogFormat, Limits, ReplayOptions), ReplayError> {
    let format = log_format(&r.format)?;
    let limits = Limits { max_bad_share: r.max_bad_share, ..Limits::default() };
    let bound = |b: ReplayBound| match b {
        ReplayBound::At(t) => WindowBound::At(t),
        ReplayBound::Offset(d) => WindowBound::Offset(d.0),
    };
    let status_filter = r.status_filter.iter().map(|s| StatusPattern::parse(s)).collect::<Result<Vec<_>, _>>()?;
    let mut secrets = SecretRules::default();
    secrets.query.extend(r.secret_query.iter().cloned());
    let options = ReplayOptions {
        seed: REPLAY_SEED,
        speed: r.speed,
        reorder_window: r.reorder_window.0,
        from: r.from.map(bound),
        to: r.to.map(bound),
        methods: if r.as_logged { MethodPolicy::AsLogged } else { MethodPolicy::Safe },
        method_filter: r.method_filter.clone(),
        path_filter: r.path_filter.clone(),
        status_filter,
        host: r.host.clone(),
        secrets,
        ..ReplayOptions::default()
    };
    Ok((format, limits, options))
}

/// Opens a log, decompressing it as it is read when it is gzip (`.gz`, or its magic bytes).
pub fn open(path: &Path) -> std::io::Result<Box<dyn BufRead + Send>> {
    let mut file = BufReader::with_capacity(256 << 10, std::fs::File::open(path)?);
    let gzip = file.fill_buf()?.starts_with(&[0x1f, 0x8b]);
    Ok(if gzip {
        Box::new(BufReader::with_capacity(256 << 10, flate2::bufread::MultiGzDecoder::new(file)))
    } else {
        Box::new(file)
    })
}

/// Starts streaming a spec's replay from its file.
pub fn stream(r: &Replay) -> Result<Stream<Box<dyn BufRead + Send>>, ReplayError> {
    let (format, limits, options) = options(r)?;
    let input = open(&r.path).map_err(|e| ReplayError::Io(format!("{}: {e}", r.file)))?;
    Stream::new(input, &format, &limits, &options, Box::new(|_| None))
}

/// The busiest [`WINDOW`] of a schedule whose requests come in `at` order (windows from the first request).
#[derive(Debug, Default, Clone)]
pub struct Windows {
    current: Option<u64>,
    in_current: u64,
    /// The most requests in one window.
    pub peak: u64,
}

impl Windows {
    /// Counts a request at `at` from the first.
    pub fn add(&mut self, at: Duration) -> u64 {
        let w = window_of(at);
        if self.current == Some(w) {
            self.in_current += 1;
        } else {
            self.current = Some(w);
            self.in_current = 1;
        }
        self.peak = self.peak.max(self.in_current);
        w
    }
}

/// The [`WINDOW`] a time from the schedule's start falls in.
pub fn window_of(at: Duration) -> u64 {
    u64::try_from(at.as_nanos() / WINDOW.as_nanos()).unwrap_or(u64::MAX)
}

/// Reads a spec's replay once through (bounded memory: one line and the reorder buffer) for its summary.
pub fn summarize_file(r: &Replay) -> Result<ReplaySummary, ReplayError> {
    let mut s = stream(r)?;
    let mut requests = 0u64;
    let mut last = Duration::ZERO;
    let mut windows = Windows::default();
    while let Some(q) = s.next_request()? {
        requests += 1;
        last = q.at;
        windows.add(q.at);
    }
    let end = s.finish()?;
    Ok(summary(requests, last, windows.peak, &end))
}

fn summary(requests: u64, last: Duration, peak: u64, end: &StreamEnd) -> ReplaySummary {
    ReplaySummary {
        lines: end.lines,
        requests,
        // Whole milliseconds, rounded up: the plan shows it, and the phase runs until the last request is due.
        duration: loadgate_model::units::Duration(Duration::from_millis(
            u64::try_from(last.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX),
        )),
        peak_per_10ms: peak,
        bad_lines: end.bad_lines,
        first_bad: end.first_bad.iter().map(ToString::to_string).collect(),
        skips: end.skips.iter().map(|(k, v)| (k.name().to_owned(), *v)).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadgate_model::replay::{JsonFields, ReplayConnections};

    fn replay(path: std::path::PathBuf, format: ReplayFormat) -> Replay {
        Replay {
            file: "access.log".into(),
            path,
            format,
            speed: 2.0,
            from: None,
            to: None,
            as_logged: false,
            method_filter: Vec::new(),
            path_filter: Some("^/a".into()),
            status_filter: Vec::new(),
            host: None,
            secret_query: Vec::new(),
            reorder_window: loadgate_model::units::Duration(Duration::from_secs(10)),
            max_bad_share: 0.01,
            connections: ReplayConnections::Pool,
            max_connections: 8,
            summary: ReplaySummary::default(),
        }
    }

    #[test]
    fn a_gzip_log_is_read_as_it_is_and_summarized_at_the_speed() {
        use std::io::Write as _;
        let mut log = String::new();
        for i in 0..100 {
            let path = if i % 4 == 0 { "/b" } else { "/a" };
            log.push_str(&format!(
                "{{\"time\":\"2026-11-28T10:00:{:02}.{:03}Z\",\"path\":\"{path}\"}}\n",
                i / 10,
                i % 10
            ));
        }
        let dir = std::env::temp_dir().join(format!("loadgate-replay-gz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("access.log.gz");
        let mut gz = flate2::write::GzEncoder::new(std::fs::File::create(&file).unwrap(), flate2::Compression::fast());
        gz.write_all(log.as_bytes()).unwrap();
        gz.finish().unwrap();
        let r = replay(file, ReplayFormat::Json { fields: Box::default() });
        let s = summarize_file(&r).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!((s.lines, s.requests, s.bad_lines), (100, 75, 0));
        assert_eq!(s.skips, vec![("path filter".to_owned(), 25)]);
        // From 10:00:00.001 to 10:00:09.009 at 2x: 4504 ms.
        assert_eq!(s.duration.0, Duration::from_millis(4_504));
        // Ten requests a millisecond apart each second: 9 of them (the path filter) in one 10 ms window.
        assert!(s.peak_per_10ms >= 7, "{}", s.peak_per_10ms);
    }

    #[test]
    fn a_json_mapping_with_unknown_words_is_a_format_error() {
        let bad = |f: JsonFields| matches!(json_mapping(&f), Err(ReplayError::Format(_)));
        assert!(bad(JsonFields { time_format: "unix".into(), ..JsonFields::default() }));
        assert!(bad(JsonFields { time_is: "middle".into(), ..JsonFields::default() }));
        assert!(bad(JsonFields { duration: Some(("d".into(), "h".into())), ..JsonFields::default() }));
        assert!(bad(JsonFields { time: "a..b".into(), ..JsonFields::default() }));
        assert!(json_mapping(&JsonFields::default()).is_ok());
    }
}
