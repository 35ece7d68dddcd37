//! HAR 1.2 (`log.entries[]`): the start is `startedDateTime`; method, URL, headers and `postData.text` are kept.
//! Entries of another origin than the chosen one (by default the first entry's), served from the cache
//! (`_fromCache`, or a `cache.beforeRequest` with hits), `data:` URLs, other schemes and WebSockets
//! (`_resourceType: websocket`, `_webSocketMessages`, `ws:`/`wss:` URLs, `Upgrade: websocket`) are skipped and
//! counted. A HAR is one JSON document: it is read whole, so it is refused above [`super::Limits::max_har_bytes`].

use serde::Deserialize;
use serde_json::Value;

use super::error::{LineError, ReplayError};
use super::record::{ClientKey, LogRecord, SkipReason, Skips, StartFrom};
use super::time;

#[derive(Deserialize)]
struct Har {
    log: Option<Log>,
}

#[derive(Deserialize)]
struct Log {
    entries: Option<Vec<Value>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Entry {
    started_date_time: String,
    request: Request,
    #[serde(default)]
    cache: Option<Value>,
    #[serde(default, rename = "_fromCache")]
    from_cache: Option<Value>,
    #[serde(default, rename = "_resourceType")]
    resource_type: Option<String>,
    #[serde(default, rename = "_webSocketMessages")]
    web_socket_messages: Option<Value>,
    #[serde(default)]
    response: Option<Response>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Request {
    method: String,
    url: String,
    #[serde(default)]
    headers: Vec<Header>,
    #[serde(default)]
    post_data: Option<PostData>,
}

#[derive(Deserialize)]
struct Header {
    name: String,
    value: String,
}

#[derive(Deserialize)]
struct PostData {
    #[serde(default)]
    text: Option<String>,
}

#[derive(Deserialize)]
struct Response {
    #[serde(default)]
    status: Option<i64>,
}

/// What a HAR gave: its entries as records, entries skipped by reason, entries that could not be read.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HarEntries {
    /// The entries kept, in file order.
    pub records: Vec<LogRecord>,
    /// The entries skipped, by reason.
    pub skips: Skips,
    /// Entries that could not be read (1-based entry numbers).
    pub bad: Vec<LineError>,
    /// The origin kept (`https://shop.example`).
    pub origin: String,
}

/// `scheme://host[:port]` of a URL, lower case, default ports left out; `None` when it has no `//` authority.
pub fn origin_of(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a).to_ascii_lowercase();
    let scheme = scheme.to_ascii_lowercase();
    let authority = match (scheme.as_str(), authority.rsplit_once(':')) {
        ("http", Some((h, "80"))) | ("https", Some((h, "443"))) => h.to_string(),
        _ => authority,
    };
    Some(format!("{scheme}://{authority}"))
}

fn cached(e: &Entry) -> bool {
    let truthy = |v: &Value| match v {
        Value::Bool(b) => *b,
        Value::String(s) => !s.is_empty(),
        Value::Null => false,
        _ => true,
    };
    e.from_cache.as_ref().is_some_and(truthy)
        || e.cache
            .as_ref()
            .and_then(|c| c.get("beforeRequest"))
            .and_then(|b| b.get("hitCount"))
            .and_then(Value::as_i64)
            .is_some_and(|h| h > 0)
}

fn websocket(e: &Entry) -> bool {
    let url = e.request.url.to_ascii_lowercase();
    e.resource_type.as_deref().is_some_and(|t| t.eq_ignore_ascii_case("websocket"))
        || e.web_socket_messages.is_some()
        || url.starts_with("ws:")
        || url.starts_with("wss:")
        || e.request
            .headers
            .iter()
            .any(|h| h.name.eq_ignore_ascii_case("upgrade") && h.value.eq_ignore_ascii_case("websocket"))
}

/// Reads a HAR document. `origin` chooses the origin to keep; `None` keeps the first http(s) entry's.
pub fn parse(text: &str, origin: Option<&str>) -> Result<HarEntries, ReplayError> {
    let har: Har = serde_json::from_str(text).map_err(|e| {
        ReplayError::Invalid(format!("not a HAR document (line {}, column {}): {e}", e.line(), e.column()))
    })?;
    let entries = har
        .log
        .ok_or_else(|| ReplayError::Invalid("not a HAR document: no `log` object".into()))?
        .entries
        .ok_or_else(|| ReplayError::Invalid("the HAR's `log` has no `entries`".into()))?;
    if entries.is_empty() {
        return Err(ReplayError::Empty("the HAR has no entries".into()));
    }
    let mut out = HarEntries { origin: origin.and_then(origin_of).unwrap_or_default(), ..HarEntries::default() };
    for (i, raw) in entries.into_iter().enumerate() {
        let n = i as u64 + 1;
        let e: Entry = match serde_json::from_value(raw) {
            Ok(e) => e,
            Err(err) => {
                out.bad.push(LineError::new(n, format!("entry {n}: {err}")));
                continue;
            }
        };
        let url = e.request.url.as_str();
        let skip = |out: &mut HarEntries, r: SkipReason| *out.skips.entry(r).or_insert(0) += 1;
        if url.len() >= 5 && url[..5].eq_ignore_ascii_case("data:") {
            skip(&mut out, SkipReason::DataUrl);
            continue;
        }
        if websocket(&e) {
            skip(&mut out, SkipReason::WebSocket);
            continue;
        }
        let Some(this_origin) = origin_of(url).filter(|o| o.starts_with("http://") || o.starts_with("https://")) else {
            skip(&mut out, SkipReason::OtherScheme);
            continue;
        };
        if out.origin.is_empty() {
            out.origin = this_origin.clone();
        }
        if this_origin != out.origin {
            skip(&mut out, SkipReason::OtherOrigin);
            continue;
        }
        if cached(&e) {
            skip(&mut out, SkipReason::Cached);
            continue;
        }
        let Some((start, resolution)) = time::rfc3339(&e.started_date_time) else {
            out.bad.push(LineError::new(
                n,
                format!("entry {n}: startedDateTime `{}` is not an ISO 8601 time", e.started_date_time),
            ));
            continue;
        };
        let status = e.response.and_then(|r| r.status).and_then(|s| u16::try_from(s).ok()).filter(|s| *s > 0);
        out.records.push(LogRecord {
            line: n,
            start,
            resolution,
            start_from: StartFrom::Arrival,
            method: e.request.method,
            target: e.request.url,
            status,
            headers: e.request.headers.into_iter().map(|h| (h.name, h.value)).collect(),
            body: e.request.post_data.and_then(|p| p.text).map(String::into_bytes),
            client: ClientKey::Unknown,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(url: &str, extra: &str) -> String {
        format!(
            r#"{{"startedDateTime":"2026-11-28T10:00:00.100Z","time":12.5,"request":{{"method":"GET","url":"{url}","httpVersion":"HTTP/1.1","headers":[{{"name":"Accept","value":"*/*"}}],"queryString":[],"cookies":[],"headersSize":-1,"bodySize":0}},"response":{{"status":200,"statusText":"OK","httpVersion":"HTTP/1.1","headers":[],"cookies":[],"content":{{"size":0,"mimeType":"text/html"}},"redirectURL":"","headersSize":-1,"bodySize":0}},"cache":{{}},"timings":{{"send":0,"wait":10,"receive":2.5}}{extra}}}"#
        )
    }

    fn har(entries: &[String]) -> String {
        format!(
            r#"{{"log":{{"version":"1.2","creator":{{"name":"test","version":"1"}},"entries":[{}]}}}}"#,
            entries.join(",")
        )
    }

    #[test]
    fn har_entries_of_other_origins_cache_data_and_websockets_are_skipped_and_counted() {
        let doc = har(&[
            entry("https://shop.example/", ""),
            entry("https://shop.example:443/api/cart", ""),
            entry("https://cdn.example/app.js", ""),
            entry("https://shop.example/logo.png", r#","_fromCache":"memory""#),
            entry(
                "https://shop.example/old.css",
                r#","cache":{"beforeRequest":{"lastAccess":"2026-11-28T09:00:00Z","eTag":"","hitCount":3}}"#,
            ),
            entry("data:image/png;base64,iVBORw0KGgo=", ""),
            entry("wss://shop.example/live", r#","_resourceType":"websocket""#),
            entry("chrome-extension://abc/x.js", ""),
        ]);
        let h = parse(&doc, None).unwrap();
        assert_eq!(h.origin, "https://shop.example");
        assert_eq!(h.records.len(), 2);
        assert_eq!(h.records[1].target, "https://shop.example:443/api/cart");
        assert_eq!(h.records[1].line, 2);
        let count = |r| h.skips.get(&r).copied().unwrap_or(0);
        assert_eq!(count(SkipReason::OtherOrigin), 1);
        assert_eq!(count(SkipReason::Cached), 2);
        assert_eq!(count(SkipReason::DataUrl), 1);
        assert_eq!(count(SkipReason::WebSocket), 1);
        assert_eq!(count(SkipReason::OtherScheme), 1);
    }

    #[test]
    fn a_chosen_origin_keeps_that_origins_entries_with_their_bodies() {
        let post = entry("https://cdn.example/upload", "").replace(
            r#""method":"GET""#,
            r#""method":"POST","postData":{"mimeType":"application/json","text":"{\"a\":1}"}"#,
        );
        let h = parse(&har(&[entry("https://shop.example/", ""), post]), Some("https://cdn.example:443")).unwrap();
        assert_eq!(h.records.len(), 1);
        assert_eq!(h.records[0].method, "POST");
        assert_eq!(h.records[0].body.as_deref(), Some(&br#"{"a":1}"#[..]));
    }

    #[test]
    fn a_har_without_entries_or_not_a_har_is_refused_and_a_bad_entry_is_located() {
        assert!(matches!(parse(r#"{"log":{"entries":[]}}"#, None), Err(ReplayError::Empty(_))));
        assert!(matches!(parse(r#"{"log":{}}"#, None), Err(ReplayError::Invalid(m)) if m.contains("no `entries`")));
        assert!(matches!(parse(r#"{"foo":1}"#, None), Err(ReplayError::Invalid(m)) if m.contains("no `log`")));
        assert!(matches!(parse("127.0.0.1 - - [", None), Err(ReplayError::Invalid(m)) if m.contains("line 1, column")));
        let bad = entry("https://a.example/", "").replace("2026-11-28T10:00:00.100Z", "noon");
        let h = parse(&har(&[entry("https://a.example/", ""), r#"{"request":{}}"#.into(), bad]), None).unwrap();
        assert_eq!(h.records.len(), 1);
        assert_eq!(h.bad.iter().map(|e| e.line).collect::<Vec<_>>(), vec![2, 3]);
    }
}
