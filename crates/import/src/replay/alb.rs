//! AWS Application Load Balancer access logs: space-separated fields, some quoted. The start is
//! `request_creation_time` (field 22), the request `"GET https://host:443/path?q HTTP/1.1"` (field 13), the
//! client `ip:port` (field 4, the port dropped) with the user agent (field 14).

use super::error::LineError;
use super::record::{ClientKey, LogRecord, StartFrom};
use super::time;

const REQUEST: usize = 12;
const USER_AGENT: usize = 13;
const CLIENT: usize = 3;
const STATUS: usize = 8;
const CREATED: usize = 21;

/// Splits an ALB line into its fields: quoted fields without their quotes (`\"` inside kept as `"`).
fn fields(line: &str) -> Result<Vec<&str>, String> {
    let mut out = Vec::with_capacity(32);
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() {
        while i < b.len() && b[i] == b' ' {
            i += 1;
        }
        if i >= b.len() {
            break;
        }
        if b[i] == b'"' {
            let start = i + 1;
            let mut j = start;
            while j < b.len() && !(b[j] == b'"' && b[j - 1] != b'\\') {
                j += 1;
            }
            if j >= b.len() {
                return Err(format!("field {} opens a quote that is not closed", out.len() + 1));
            }
            out.push(&line[start..j]);
            i = j + 1;
        } else {
            let start = i;
            while i < b.len() && b[i] != b' ' {
                i += 1;
            }
            out.push(&line[start..i]);
        }
        if out.len() > 64 {
            return Err("more than 64 fields".into());
        }
    }
    Ok(out)
}

/// Reads one ALB line. `Ok(None)` for an empty line.
pub fn parse(line_no: u64, line: &str) -> Result<Option<LogRecord>, LineError> {
    let line = line.trim_end_matches(['\r', '\n']);
    if line.trim().is_empty() {
        return Ok(None);
    }
    let err = |m: String| LineError::new(line_no, m);
    let f = fields(line).map_err(err)?;
    if f.len() <= CREATED {
        return Err(err(format!(
            "{} fields, an ALB line has at least {} (is the log in this format?)",
            f.len(),
            CREATED + 1
        )));
    }
    let (start, resolution) = time::rfc3339(f[CREATED]).ok_or_else(|| {
        err(format!("request_creation_time (field {}) `{}` is not an RFC 3339 time", CREATED + 1, f[CREATED]))
    })?;
    let mut parts = f[REQUEST].split(' ');
    let (method, url) = match (parts.next(), parts.next()) {
        (Some(m), Some(u)) if !m.is_empty() && m != "-" && !u.is_empty() => (m, u),
        _ => return Err(err(format!("request (field {}) `{}` is not `METHOD URL PROTOCOL`", REQUEST + 1, f[REQUEST]))),
    };
    let status = f[STATUS].parse::<u16>().ok();
    let addr = f[CLIENT].rsplit_once(':').map_or(f[CLIENT], |(a, _)| a);
    let ua = f[USER_AGENT].replace("\\\"", "\"");
    let mut headers = Vec::new();
    if ua != "-" && !ua.is_empty() {
        headers.push(("User-Agent".to_string(), ua.clone()));
    }
    Ok(Some(LogRecord {
        line: line_no,
        start,
        resolution,
        start_from: StartFrom::Arrival,
        method: method.to_string(),
        target: url.to_string(),
        status,
        headers,
        body: None,
        client: ClientKey::Peer { addr: addr.to_string(), user_agent: if ua == "-" { String::new() } else { ua } },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::record::Resolution;

    const LINE: &str = r#"https 2018-07-02T22:23:00.186641Z app/my-loadbalancer/50dc6c495c0c9188 192.168.131.39:2817 10.0.0.1:80 0.086 0.048 0.037 200 200 0 57 "GET https://www.example.com:443/api/items?id=7 HTTP/1.1" "curl/7.46.0" ECDHE-RSA-AES128-GCM-SHA256 TLSv1.2 arn:aws:elasticloadbalancing:us-east-2:123456789012:targetgroup/my-targets/73e2d6bc24d8a067 "Root=1-58337281-1d84f3d73c47ec4e58577259" "www.example.com" "arn:aws:acm:us-east-2:123456789012:certificate/12345678-1234-1234-1234-123456789012" 1 2018-07-02T22:22:48.364000Z "authenticate,forward" "-" "-" "10.0.0.1:80" "200" "-" "-" TID_123456"#;

    #[test]
    fn an_alb_line_starts_at_its_request_creation_time_not_its_write_time() {
        let r = parse(4, LINE).unwrap().unwrap();
        assert_eq!(r.start, time::rfc3339("2018-07-02T22:22:48.364Z").unwrap().0);
        assert_eq!(r.resolution, Resolution::Fine);
        assert_eq!(r.method, "GET");
        assert_eq!(r.target, "https://www.example.com:443/api/items?id=7");
        assert_eq!(r.status, Some(200));
        assert_eq!(r.client, ClientKey::Peer { addr: "192.168.131.39".into(), user_agent: "curl/7.46.0".into() });
    }

    #[test]
    fn a_short_or_unquoted_alb_line_is_a_located_error() {
        let e = parse(9, "http 2018-07-02T22:23:00.186641Z app/x 1.2.3.4:1").unwrap_err();
        assert_eq!(e.line, 9);
        assert!(e.message.contains("4 fields"), "{e}");
        let e = parse(10, r#"http 2018 "GET / HTTP/1.1"#).unwrap_err();
        assert!(e.message.contains("not closed"), "{e}");
        let bad_time = LINE.replace("2018-07-02T22:22:48.364000Z", "yesterday");
        assert!(parse(11, &bad_time).unwrap_err().message.contains("request_creation_time"));
        let bad_req = LINE.replace("GET https://www.example.com:443/api/items?id=7 HTTP/1.1", "- - -");
        assert!(parse(12, &bad_req).unwrap_err().message.contains("METHOD URL PROTOCOL"));
    }
}
