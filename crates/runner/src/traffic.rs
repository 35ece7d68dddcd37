//! `loadgate import log FILE` and `loadgate import har FILE`: a spec for a synthetic load made from recorded
//! traffic ([`loadgate_import::replay::synthesize`]): the file read bounded (a `.gz` file decompressed as it is
//! read), its requests scheduled as a replay would schedule them (GET and HEAD, secrets marked), then written as a
//! weighted request mix under the log's rate profile.

use std::io::{BufRead, BufReader};
use std::path::Path;

use loadgate_import::replay::{self, Limits, LogFormat, ReplayOptions, SynthSource, Synthesized};

use crate::error::JobError;

/// The words after `import` when they import recorded traffic (`log FILE [options]`, `har FILE [options]`): the
/// spec; `Ok(None)` when they are a load tool's command line instead.
pub fn import(words: &[String]) -> Result<Option<Synthesized>, JobError> {
    let Some((kind, rest)) = words.split_first() else { return Ok(None) };
    let har = match kind.as_str() {
        "log" => false,
        "har" => true,
        _ => return Ok(None),
    };
    let invalid = JobError::Invalid;
    let usage = if har {
        "loadgate import har FILE [--origin URL] [--url URL]"
    } else {
        "loadgate import log FILE [--format combined|common|apache-combined|alb] [--nginx-format FORMAT] \
         [--apache-format FORMAT] [--url URL]"
    };
    let (mut file, mut url, mut origin) = (None, None, None);
    let mut format = if har { LogFormat::Har { origin: None } } else { LogFormat::NginxCombined };
    let mut format_name = if har { "HAR 1.2".to_owned() } else { "nginx combined".to_owned() };
    let mut it = rest.iter();
    while let Some(w) = it.next() {
        let mut value =
            |flag: &str| it.next().cloned().ok_or_else(|| invalid(format!("`{flag}` needs a value: {usage}")));
        match w.as_str() {
            "--url" => url = Some(value("--url")?),
            "--origin" if har => origin = Some(value("--origin")?),
            "--format" if !har => {
                let name = value("--format")?;
                format = match name.as_str() {
                    "combined" | "nginx" => LogFormat::NginxCombined,
                    "common" | "apache-common" => LogFormat::ApacheCommon,
                    "apache-combined" => LogFormat::ApacheCombined,
                    "alb" => LogFormat::Alb,
                    other => {
                        return Err(invalid(format!(
                            "`{other}` is not a log format here: combined, common, apache-combined or alb (or \
                             --nginx-format / --apache-format with the server's own format string)"
                        )))
                    }
                };
                format_name = name;
            }
            "--nginx-format" if !har => {
                format = LogFormat::Nginx(value("--nginx-format")?);
                format_name = "nginx log_format".to_owned();
            }
            "--apache-format" if !har => {
                format = LogFormat::Apache(value("--apache-format")?);
                format_name = "Apache LogFormat".to_owned();
            }
            flag if flag.starts_with('-') => return Err(invalid(format!("unknown option `{flag}`: {usage}"))),
            path if file.is_none() => file = Some(path.to_owned()),
            extra => return Err(invalid(format!("one file at a time (`{extra}` too): {usage}"))),
        }
    }
    let Some(file) = file else { return Err(invalid(format!("no file: {usage}"))) };
    if har {
        format = LogFormat::Har { origin: origin.clone() };
    }
    let input = open(Path::new(&file)).map_err(|e| invalid(format!("cannot read {file}: {e}")))?;
    let parsed = replay::parse_log(input, &format, &Limits::default()).map_err(|e| invalid(format!("{file}: {e}")))?;
    let url = url.or_else(|| parsed.origin.clone());
    let schedule =
        replay::build(parsed, &ReplayOptions::default(), &|_| None).map_err(|e| invalid(format!("{file}: {e}")))?;
    if schedule.requests.is_empty() {
        return Err(invalid(format!(
            "{file}: no request to import ({} lines read, {} unreadable, {} skipped)",
            schedule.lines,
            schedule.bad_lines,
            schedule.skips.values().sum::<u64>()
        )));
    }
    Ok(Some(replay::synthesize(&schedule, &SynthSource { file, format: format_name, url })))
}

/// The file, decompressed as it is read when it is gzip (`.gz`, or its magic bytes).
fn open(path: &Path) -> std::io::Result<Box<dyn BufRead>> {
    let mut file = BufReader::new(std::fs::File::open(path)?);
    let gzip = file.fill_buf()?.starts_with(&[0x1f, 0x8b]);
    Ok(if gzip { Box::new(BufReader::new(flate2::bufread::MultiGzDecoder::new(file))) } else { Box::new(file) })
}
