//! Line formats given as format strings: nginx `log_format` (`$remote_addr - $remote_user [$time_local] ...`)
//! and Apache `LogFormat` (`%h %l %u %t "%r" %>s %b`), compiled into one matcher: literals and fields, a field
//! running to the next literal (a quoted field skips `\"`), the last to the end of the line.
//!
//! Time semantics differ by server: nginx writes a line when the request ENDS, so `$msec` and `$time_local` are
//! end times and the start is `$msec - $request_time` (or `$time_local - $request_time`); without
//! `$request_time` the start is taken to be the write time (an approximation: late by the request's duration,
//! and out of order where a slow request ends after faster later ones). Apache's `%t` is when the request
//! ARRIVED, so it is the start.

use super::error::{LineError, ReplayError};
use super::record::{ClientKey, LogRecord, Micros, Resolution, StartFrom};
use super::time;

/// nginx's predefined `combined` format.
pub const NGINX_COMBINED: &str = r#"$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent""#;
/// Apache's Common Log Format.
pub const APACHE_COMMON: &str = r#"%h %l %u %t "%r" %>s %b"#;
/// Apache's combined format.
pub const APACHE_COMBINED: &str = r#"%h %l %u %t "%r" %>s %b "%{Referer}i" "%{User-agent}i""#;

/// Which server wrote the format, and so what its times mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    /// nginx: times are when the line was written (the request's end).
    Nginx,
    /// Apache httpd: `%t` is the request's arrival.
    Apache,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Field {
    RemoteAddr,
    /// `$time_local`, `%t`: `10/Oct/2000:13:55:36 -0700`, with or without brackets.
    TimeLocal,
    /// `$time_iso8601`.
    TimeIso,
    /// `$msec`: seconds with milliseconds.
    Msec,
    /// `$request_time`: seconds with milliseconds.
    RequestTime,
    /// `$request`, `%r`: `GET /path HTTP/1.1`.
    Request,
    /// `$request_method`, `%m`.
    Method,
    /// `$request_uri`: path and query.
    Uri,
    /// `$status`, `%>s`, `%s`.
    Status,
    /// `$connection`.
    Connection,
    /// A request header (`$http_user_agent`, `%{Referer}i`), by its canonical name.
    Header(String),
    /// A field that is read over and not used.
    Ignored,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Literal(String),
    Field(Field),
}

/// A compiled line format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineFormat {
    server: Server,
    tokens: Vec<Token>,
}

fn header_name(raw: &str) -> String {
    raw.split(['_', '-'])
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut c = p.chars();
            match c.next() {
                Some(f) => f.to_ascii_uppercase().to_string() + &c.as_str().to_ascii_lowercase(),
                None => String::new(),
            }
        })
        .collect::<Vec<_>>()
        .join("-")
}

fn nginx_field(name: &str) -> Field {
    match name {
        "remote_addr" | "binary_remote_addr" => Field::RemoteAddr,
        "time_local" => Field::TimeLocal,
        "time_iso8601" => Field::TimeIso,
        "msec" => Field::Msec,
        "request_time" => Field::RequestTime,
        "request" => Field::Request,
        "request_method" => Field::Method,
        "request_uri" => Field::Uri,
        "status" => Field::Status,
        "connection" => Field::Connection,
        "host" => Field::Header("Host".into()),
        _ => match name.strip_prefix("http_") {
            Some(h) => Field::Header(header_name(h)),
            None => Field::Ignored,
        },
    }
}

impl LineFormat {
    /// Compiles an nginx `log_format` string, as written in nginx.conf (the quotes around its parts may be left
    /// in: `'$remote_addr - ' '"$request"'` is joined as nginx joins it).
    pub fn nginx(format: &str) -> Result<LineFormat, ReplayError> {
        let format = unquote_nginx(format);
        let mut tokens = Vec::new();
        let mut lit = String::new();
        let mut chars = format.char_indices().peekable();
        while let Some((_, c)) = chars.next() {
            if c != '$' {
                lit.push(c);
                continue;
            }
            let braced = chars.peek().map(|&(_, c)| c) == Some('{');
            if braced {
                chars.next();
            }
            let mut name = String::new();
            while let Some(&(_, c)) = chars.peek() {
                if c.is_ascii_alphanumeric() || c == '_' {
                    name.push(c);
                    chars.next();
                } else {
                    break;
                }
            }
            if braced && chars.next().map(|(_, c)| c) != Some('}') {
                return Err(ReplayError::Format(format!("`${{{name}` is not closed with `}}`")));
            }
            if name.is_empty() {
                lit.push('$');
                continue;
            }
            push_field(&mut tokens, &mut lit, nginx_field(&name), &name)?;
        }
        finish(Server::Nginx, tokens, lit)
    }

    /// Compiles an Apache `LogFormat` string (`\"` is read as `"`).
    pub fn apache(format: &str) -> Result<LineFormat, ReplayError> {
        let format = format.replace("\\\"", "\"");
        let mut tokens = Vec::new();
        let mut lit = String::new();
        let mut chars = format.chars().peekable();
        while let Some(c) = chars.next() {
            if c != '%' {
                lit.push(c);
                continue;
            }
            // Modifiers: `%>s`, `%<s`, `%400,501{User-agent}i`.
            while matches!(chars.peek(), Some('<' | '>' | '!' | ',' | '0'..='9')) {
                chars.next();
            }
            let mut arg = None;
            if chars.peek() == Some(&'{') {
                chars.next();
                let mut a = String::new();
                loop {
                    match chars.next() {
                        Some('}') => break,
                        Some(c) => a.push(c),
                        None => return Err(ReplayError::Format(format!("`%{{{a}` is not closed with `}}`"))),
                    }
                }
                arg = Some(a);
            }
            let Some(d) = chars.next() else {
                return Err(ReplayError::Format("the format ends with a lone `%`".into()));
            };
            let field = match (d, arg.as_deref()) {
                ('%', _) => {
                    lit.push('%');
                    continue;
                }
                ('h' | 'a', _) => Field::RemoteAddr,
                ('t', None) => Field::TimeLocal,
                ('t', Some(_)) => {
                    return Err(ReplayError::Format(
                        "`%{...}t` time formats are not read: use `%t` for the arrival time".into(),
                    ))
                }
                ('r', _) => Field::Request,
                ('m', _) => Field::Method,
                ('s', _) => Field::Status,
                ('i', Some(h)) => Field::Header(header_name(h)),
                _ => Field::Ignored,
            };
            push_field(&mut tokens, &mut lit, field, &d.to_string())?;
        }
        finish(Server::Apache, tokens, lit)
    }

    /// Reads one line. `Ok(None)` for an empty line.
    pub fn parse(&self, line_no: u64, line: &str) -> Result<Option<LogRecord>, LineError> {
        let line = line.trim_end_matches(['\r', '\n']);
        if line.trim().is_empty() {
            return Ok(None);
        }
        let err = |m: String| LineError::new(line_no, m);
        let mut pos = 0usize;
        let mut values = Values::default();
        for (i, tok) in self.tokens.iter().enumerate() {
            let rest = &line[pos..];
            match tok {
                Token::Literal(l) => {
                    if !rest.starts_with(l.as_str()) {
                        return Err(err(format!(
                            "expected `{l}` at column {}, found `{}` (is the log in this format?)",
                            pos + 1,
                            excerpt(rest)
                        )));
                    }
                    pos += l.len();
                }
                Token::Field(f) => {
                    let next = match self.tokens.get(i + 1) {
                        Some(Token::Literal(l)) => Some(l.as_str()),
                        _ => None,
                    };
                    let len = field_len(f, rest, next)
                        .ok_or_else(|| err(format!("expected `{}` after column {}", next.unwrap_or(""), pos + 1)))?;
                    values.set(f, &rest[..len]);
                    pos += len;
                }
            }
        }
        self.record(line_no, values).map(Some).map_err(err)
    }

    fn record(&self, line: u64, v: Values<'_>) -> Result<LogRecord, String> {
        let (method, target) = match (v.request, v.method, v.uri) {
            (_, Some(m), Some(u)) => (m.to_string(), u.to_string()),
            (Some(r), _, _) => {
                let mut parts = r.split(' ');
                match (parts.next(), parts.next(), parts.next(), parts.next()) {
                    (Some(m), Some(t), _, None)
                        if !m.is_empty() && m.bytes().all(|b| b.is_ascii_uppercase()) && !t.is_empty() =>
                    {
                        (m.to_string(), t.to_string())
                    }
                    _ => return Err(format!("request `{}` is not `METHOD TARGET PROTOCOL`", excerpt(r))),
                }
            }
            _ => return Err("the line has no request".into()),
        };
        let status = match v.status {
            None | Some("-") => None,
            Some(s) => Some(s.parse::<u16>().map_err(|_| format!("status `{}` is not a number", excerpt(s)))?),
        };
        let duration: Option<Micros> = match v.request_time {
            None | Some("-") => None,
            Some(s) => {
                Some(time::decimal_seconds(s).ok_or_else(|| format!("$request_time `{}` is not seconds", excerpt(s)))?)
            }
        };
        let (written, resolution) = if let Some(m) = v.msec {
            (
                time::decimal_seconds(m).ok_or_else(|| format!("$msec `{}` is not seconds", excerpt(m)))?,
                Resolution::Fine,
            )
        } else if let Some(t) = v.time_local {
            (
                time::common_log(t)
                    .ok_or_else(|| format!("time `{}` is not `10/Oct/2000:13:55:36 -0700`", excerpt(t)))?,
                Resolution::Second,
            )
        } else if let Some(t) = v.time_iso {
            time::rfc3339(t).ok_or_else(|| format!("time `{}` is not RFC 3339", excerpt(t)))?
        } else {
            return Err("the line has no time".into());
        };
        let (start, start_from) = match (self.server, duration) {
            (Server::Apache, _) => (written, StartFrom::Arrival),
            (Server::Nginx, Some(d)) => (written.saturating_sub(d), StartFrom::EndLessDuration),
            (Server::Nginx, None) => (written, StartFrom::WriteTime),
        };
        let headers: Vec<(String, String)> = v
            .headers
            .iter()
            .filter(|(_, val)| *val != "-" && !val.is_empty())
            .map(|(n, val)| (n.to_string(), unescape(val)))
            .collect();
        let client = match v.connection.and_then(|c| c.parse::<u64>().ok()) {
            Some(c) => ClientKey::Connection(c),
            None => ClientKey::Peer {
                addr: v.remote_addr.unwrap_or("").to_string(),
                user_agent: headers.iter().find(|(n, _)| n == "User-Agent").map(|(_, v)| v.clone()).unwrap_or_default(),
            },
        };
        Ok(LogRecord { line, start, resolution, start_from, method, target, status, headers, body: None, client })
    }
}

/// nginx's and Apache's escapes of a quoted value (`\x22`, `\"`) read back.
fn unescape(s: &str) -> String {
    if !s.contains('\\') {
        return s.to_string();
    }
    let mut out = Vec::with_capacity(s.len());
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1] == b'x' {
            if let Ok(v) = u8::from_str_radix(std::str::from_utf8(&b[i + 2..i + 4]).unwrap_or("zz"), 16) {
                out.push(v);
                i += 4;
                continue;
            }
        }
        if b[i] == b'\\' && i + 1 < b.len() && (b[i + 1] == b'"' || b[i + 1] == b'\\') {
            out.push(b[i + 1]);
            i += 2;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[derive(Default)]
struct Values<'a> {
    remote_addr: Option<&'a str>,
    time_local: Option<&'a str>,
    time_iso: Option<&'a str>,
    msec: Option<&'a str>,
    request_time: Option<&'a str>,
    request: Option<&'a str>,
    method: Option<&'a str>,
    uri: Option<&'a str>,
    status: Option<&'a str>,
    connection: Option<&'a str>,
    headers: Vec<(&'a str, &'a str)>,
}

impl<'a> Values<'a> {
    fn set(&mut self, f: &'a Field, v: &'a str) {
        match f {
            Field::RemoteAddr => self.remote_addr = Some(v),
            Field::TimeLocal => self.time_local = Some(v),
            Field::TimeIso => self.time_iso = Some(v),
            Field::Msec => self.msec = Some(v),
            Field::RequestTime => self.request_time = Some(v),
            Field::Request => self.request = Some(v),
            Field::Method => self.method = Some(v),
            Field::Uri => self.uri = Some(v),
            Field::Status => self.status = Some(v),
            Field::Connection => self.connection = Some(v),
            Field::Header(h) => self.headers.push((h.as_str(), v)),
            Field::Ignored => {}
        }
    }
}

/// How many bytes of `rest` a field takes: a bracketed time to its `]`, an unbracketed `$time_local` its 26
/// bytes, another field up to the next literal (skipping `\"` when the literal starts with a quote), the last
/// field to the end.
fn field_len(f: &Field, rest: &str, next: Option<&str>) -> Option<usize> {
    if *f == Field::TimeLocal {
        if rest.starts_with('[') {
            return rest.find(']').map(|i| i + 1);
        }
        if rest.len() >= 26 && rest.is_char_boundary(26) {
            return Some(26);
        }
    }
    let Some(lit) = next else {
        return Some(rest.len());
    };
    let mut from = 0;
    loop {
        let i = from + rest.get(from..)?.find(lit)?;
        if lit.starts_with('"') && i > 0 && rest.as_bytes()[i - 1] == b'\\' {
            from = i + 1;
            continue;
        }
        return Some(i);
    }
}

/// At most 40 characters of a logged value for a message, never its query (a token may be there).
fn excerpt(s: &str) -> String {
    let (shown, query) = match s.split_once('?') {
        Some((before, _)) => (before, true),
        None => (s, false),
    };
    let mut e: String = shown.chars().take(40).collect();
    if query {
        e.push_str("?…");
    } else if e.len() < shown.len() {
        e.push('…');
    }
    e
}

fn push_field(tokens: &mut Vec<Token>, lit: &mut String, field: Field, name: &str) -> Result<(), ReplayError> {
    if lit.is_empty() && matches!(tokens.last(), Some(Token::Field(_))) {
        return Err(ReplayError::Format(format!(
            "`{name}` follows another field with nothing between them: the two cannot be told apart"
        )));
    }
    if !lit.is_empty() {
        tokens.push(Token::Literal(std::mem::take(lit)));
    }
    tokens.push(Token::Field(field));
    Ok(())
}

fn finish(server: Server, mut tokens: Vec<Token>, lit: String) -> Result<LineFormat, ReplayError> {
    if !lit.is_empty() {
        tokens.push(Token::Literal(lit));
    }
    let has = |f: &Field| tokens.iter().any(|t| t == &Token::Field(f.clone()));
    if !(has(&Field::TimeLocal) || has(&Field::Msec) || has(&Field::TimeIso)) {
        return Err(ReplayError::Format(match server {
            Server::Nginx => "the format has no time: add `$msec` (or `$time_local`)".into(),
            Server::Apache => "the format has no time: add `%t`".into(),
        }));
    }
    if !(has(&Field::Request) || (has(&Field::Method) && has(&Field::Uri))) {
        return Err(ReplayError::Format(
            "the format has no request: add `$request` (`%r`), or `$request_method` and `$request_uri`".into(),
        ));
    }
    Ok(LineFormat { server, tokens })
}

/// nginx.conf writes a format as quoted parts (`'$a ' '"$b"'`): joined, without the quotes. A string that does
/// not start with a quote is taken as it is.
fn unquote_nginx(s: &str) -> String {
    let t = s.trim();
    if !t.starts_with('\'') {
        return t.to_string();
    }
    let mut out = String::new();
    let mut in_q = false;
    for c in t.chars() {
        match (c, in_q) {
            ('\'', _) => in_q = !in_q,
            (c, true) => out.push(c),
            (_, false) => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const CUSTOM: &str = "'$remote_addr - $remote_user [$time_local] \"$request\" $status $body_bytes_sent \
                          \"$http_referer\" \"$http_user_agent\" $request_time $msec $connection'";

    #[test]
    fn an_nginx_combined_line_starts_at_its_write_time_to_the_second() {
        let f = LineFormat::nginx(NGINX_COMBINED).unwrap();
        let line = r#"203.0.113.9 - - [28/Nov/2026:10:15:32 +0000] "GET /api/items?page=2 HTTP/1.1" 200 5120 "https://shop.example/" "Mozilla/5.0 (X11; Linux x86_64) Firefox/125.0""#;
        let r = f.parse(7, line).unwrap().unwrap();
        assert_eq!(r.line, 7);
        assert_eq!(r.method, "GET");
        assert_eq!(r.target, "/api/items?page=2");
        assert_eq!(r.status, Some(200));
        assert_eq!(r.resolution, Resolution::Second);
        assert_eq!(r.start_from, StartFrom::WriteTime);
        assert_eq!(r.start, time::common_log("28/Nov/2026:10:15:32 +0000").unwrap());
        assert_eq!(
            r.client,
            ClientKey::Peer {
                addr: "203.0.113.9".into(),
                user_agent: "Mozilla/5.0 (X11; Linux x86_64) Firefox/125.0".into()
            }
        );
        assert!(r.headers.contains(&("Referer".into(), "https://shop.example/".into())));
    }

    #[test]
    fn a_custom_nginx_format_starts_at_msec_less_request_time_on_its_connection() {
        let f = LineFormat::nginx(CUSTOM).unwrap();
        let line = r#"127.0.0.1 - - [28/Nov/2026:21:50:01 +0000] "POST /orders HTTP/1.1" 201 17 "-" "curl/8.5.0" 0.250 1795902601.500 42"#;
        let r = f.parse(1, line).unwrap().unwrap();
        assert_eq!(r.start, 1_795_902_601_250_000);
        assert_eq!(r.resolution, Resolution::Fine);
        assert_eq!(r.start_from, StartFrom::EndLessDuration);
        assert_eq!(r.client, ClientKey::Connection(42));
        assert_eq!(r.method, "POST");
        assert_eq!(r.headers, vec![("User-Agent".to_string(), "curl/8.5.0".to_string())]);
    }

    #[test]
    fn time_local_less_request_time_keeps_second_resolution() {
        let f = LineFormat::nginx(r#"$remote_addr [$time_local] "$request" $status $request_time"#).unwrap();
        let r = f.parse(1, r#"10.0.0.1 [01/Jan/2026:00:00:10 +0000] "GET / HTTP/1.1" 200 2.500"#).unwrap().unwrap();
        assert_eq!(r.start, time::common_log("01/Jan/2026:00:00:10 +0000").unwrap() - 2_500_000);
        assert_eq!(r.resolution, Resolution::Second);
    }

    #[test]
    fn escaped_quotes_in_a_user_agent_do_not_end_the_field() {
        let f = LineFormat::nginx(NGINX_COMBINED).unwrap();
        let line =
            r#"10.0.0.2 - bob [28/Nov/2026:10:15:32 +0000] "GET / HTTP/1.1" 200 1 "-" "evil \x22quoted\x22 agent""#;
        let r = f.parse(1, line).unwrap().unwrap();
        assert_eq!(r.headers, vec![("User-Agent".to_string(), "evil \"quoted\" agent".to_string())]);
        let a = LineFormat::apache(APACHE_COMBINED).unwrap();
        let line = r#"10.0.0.2 - - [28/Nov/2026:10:15:32 +0000] "GET / HTTP/1.1" 200 1 "-" "say \"hi\" now""#;
        let r = a.parse(1, line).unwrap().unwrap();
        assert_eq!(r.headers, vec![("User-Agent".to_string(), "say \"hi\" now".to_string())]);
    }

    #[test]
    fn an_apache_common_line_starts_at_its_arrival() {
        let f = LineFormat::apache(APACHE_COMMON).unwrap();
        let r = f
            .parse(3, r#"127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326"#)
            .unwrap()
            .unwrap();
        assert_eq!(r.start_from, StartFrom::Arrival);
        assert_eq!(r.start, time::common_log("10/Oct/2000:13:55:36 -0700").unwrap());
        assert_eq!(r.target, "/apache_pb.gif");
        assert_eq!(r.status, Some(200));
        assert_eq!(r.client, ClientKey::Peer { addr: "127.0.0.1".into(), user_agent: String::new() });
    }

    #[test]
    fn a_line_in_another_format_is_a_located_error_naming_the_column() {
        let f = LineFormat::nginx(NGINX_COMBINED).unwrap();
        let e = f.parse(12, r#"{"time":"2026-01-01T00:00:00Z"}"#).unwrap_err();
        assert_eq!(e.line, 12);
        assert_eq!(e.message, "expected ` - ` after column 1");
        let e = f.parse(13, r#"1.2.3.4 - - [28/Nov/2026:10:15:32 +0000] "\x16\x03\x01" 400 0 "-" "-""#).unwrap_err();
        assert!(e.message.contains("is not `METHOD TARGET PROTOCOL`"), "{e}");
        let e = f.parse(14, r#"1.2.3.4 - - [28/Nov/2026:99:15:32 +0000] "GET / HTTP/1.1" 200 0 "-" "-""#).unwrap_err();
        assert!(e.message.contains("is not `10/Oct/2000:13:55:36 -0700`"), "{e}");
    }

    #[test]
    fn formats_without_a_time_or_request_or_with_adjacent_fields_are_refused() {
        assert!(
            matches!(LineFormat::nginx("$remote_addr \"$request\""), Err(ReplayError::Format(m)) if m.contains("no time"))
        );
        assert!(matches!(LineFormat::nginx("$msec $status"), Err(ReplayError::Format(m)) if m.contains("no request")));
        assert!(
            matches!(LineFormat::nginx("$msec$status \"$request\""), Err(ReplayError::Format(m)) if m.contains("cannot be told apart"))
        );
        assert!(LineFormat::apache("%t %{%s}t \"%r\"").is_err());
    }

    #[test]
    fn no_line_makes_the_matcher_panic() {
        let f = LineFormat::nginx(CUSTOM).unwrap();
        let a = LineFormat::apache(APACHE_COMBINED).unwrap();
        for line in ["", "[", "\"", "1.2.3.4 - - [", "1.2.3.4 - - [x] \"GET / HTTP/1.1\" 200 1 \"-\" \"\\", "é - - [é"]
        {
            let _ = f.parse(1, line);
            let _ = a.parse(1, line);
        }
    }
}
