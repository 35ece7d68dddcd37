//! The one parser of the http(s) URLs loadgate loads (`base_url`, `--url`, a positional URL, an imported command
//! line, a target's address): the `url` crate's (WHATWG), with the scheme checked first so that every caller can
//! say what is wrong in its own words (a located diagnostic in a spec, a sentence on the command line).

/// An `http://` or `https://` URL, split as loadgate uses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpUrl {
    pub https: bool,
    /// The host as a request's `Host` names it: lower case, an IPv6 address in brackets (`[::1]`).
    pub host: String,
    /// The port: the one written, or the scheme's default.
    pub port: u16,
    /// Whether the URL writes its port.
    pub explicit_port: bool,
    /// `user:password` as written before `@` (percent-encoded as written), if any.
    pub userinfo: Option<String>,
    /// The path, percent-encoded where a request line needs it (`/` at least), with `?query` if any.
    pub path: String,
    /// Whether the URL has a query (`?...`).
    pub has_query: bool,
    pub fragment: Option<String>,
}

/// What is wrong with a URL, in words a message can take after "the URL ...".
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UrlError {
    /// No `scheme:` at all (`localhost:8080`, `127.0.0.1/x`).
    NoScheme,
    /// A scheme other than `http://` or `https://` (`ftp://x`, `htp:/x`, `http:/x`): the scheme and what
    /// follows its colon.
    NotHttp { scheme: String, after: String },
    /// The rest does not make an http(s) URL: why.
    Invalid(String),
}

impl std::fmt::Display for UrlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UrlError::NoScheme => f.write_str("it has no `http://` scheme"),
            UrlError::NotHttp { scheme, .. } => write!(f, "the scheme `{scheme}` is not HTTP"),
            UrlError::Invalid(why) => f.write_str(why),
        }
    }
}

/// The scheme of a URL-like text and what follows its colon: `htp:/x` -> (`htp`, `/x`). `localhost:8080` has
/// none (a port follows the colon).
fn scheme_of(text: &str) -> Option<(&str, &str)> {
    let (scheme, after) = text.split_once(':')?;
    let is_scheme = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    (is_scheme && !after.is_empty() && !after.starts_with(|c: char| c.is_ascii_digit())).then_some((scheme, after))
}

impl HttpUrl {
    /// Parses an `http://` or `https://` URL (the scheme in any case, as the `url` crate reads it).
    pub fn parse(text: &str) -> Result<HttpUrl, UrlError> {
        let text = text.trim();
        let Some((scheme, after)) = scheme_of(text) else { return Err(UrlError::NoScheme) };
        let https = match scheme.to_ascii_lowercase().as_str() {
            "http" if after.starts_with("//") => false,
            "https" if after.starts_with("//") => true,
            _ => return Err(UrlError::NotHttp { scheme: scheme.to_owned(), after: after.to_owned() }),
        };
        // The authority as written: the port written or not, the user information.
        let rest = &after[2..];
        let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
        let (userinfo, hostport) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u.to_owned()), h),
            None => (None, authority),
        };
        if hostport.is_empty() || hostport.starts_with(':') {
            return Err(UrlError::Invalid("it has no host".to_owned()));
        }
        let written_port = match hostport.rsplit_once(']') {
            Some((_, p)) => p.strip_prefix(':'),
            None => hostport.rsplit_once(':').map(|(_, p)| p),
        };
        if let Some(p) = written_port {
            if !p.bytes().all(|b| b.is_ascii_digit()) || !matches!(p.parse::<u16>(), Ok(1..)) {
                return Err(UrlError::Invalid(format!("`{p}` is not a port (1 to 65535)")));
            }
        }
        let url = url::Url::parse(text).map_err(|e| {
            UrlError::Invalid(match e {
                url::ParseError::EmptyHost => "it has no host".to_owned(),
                url::ParseError::InvalidPort => "its port is not a port (1 to 65535)".to_owned(),
                url::ParseError::InvalidIpv4Address => "its IPv4 address is not one".to_owned(),
                url::ParseError::InvalidIpv6Address => "its IPv6 address is not one (or has no closing `]`)".to_owned(),
                url::ParseError::InvalidDomainCharacter | url::ParseError::IdnaError => {
                    let host = hostport.rsplit_once(':').map_or(hostport, |(h, _)| h);
                    format!("`{host}` is not a host name or IP address")
                }
                other => other.to_string(),
            })
        })?;
        let host = url.host_str().filter(|h| !h.is_empty()).ok_or(UrlError::Invalid("it has no host".to_owned()))?;
        let port = url.port_or_known_default().unwrap_or(if https { 443 } else { 80 });
        let mut path = url.path().to_owned();
        if let Some(q) = url.query() {
            path.push('?');
            path.push_str(q);
        }
        Ok(HttpUrl {
            https,
            host: host.to_owned(),
            port,
            explicit_port: written_port.is_some(),
            userinfo: userinfo.filter(|u| !u.is_empty()),
            path,
            has_query: url.query().is_some(),
            fragment: url.fragment().map(str::to_owned),
        })
    }

    /// `http` or `https`.
    pub fn scheme(&self) -> &'static str {
        if self.https {
            "https"
        } else {
            "http"
        }
    }

    /// `scheme://host[:port]`, the port as the URL wrote it (or not), without user information.
    pub fn base(&self) -> String {
        if self.explicit_port {
            format!("{}://{}:{}", self.scheme(), self.host, self.port)
        } else {
            format!("{}://{}", self.scheme(), self.host)
        }
    }

    /// The `Host` header: the port left out where it is the scheme's default.
    pub fn host_header(&self) -> String {
        let default = if self.https { 443 } else { 80 };
        if self.port == default {
            self.host.clone()
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_urls_split_and_agree_whatever_the_schemes_case() {
        let u = HttpUrl::parse("HTTP://LocalHost:8080/api/orders?i=1#top").unwrap();
        assert_eq!((u.https, u.host.as_str(), u.port, u.explicit_port), (false, "localhost", 8080, true));
        assert_eq!((u.path.as_str(), u.has_query, u.fragment.as_deref()), ("/api/orders?i=1", true, Some("top")));
        assert_eq!(u.base(), "http://localhost:8080");
        let u = HttpUrl::parse("https://u:p@[::1]/x y").unwrap();
        assert_eq!((u.host.as_str(), u.port, u.userinfo.as_deref()), ("[::1]", 443, Some("u:p")));
        assert_eq!(
            (u.path.as_str(), u.base(), u.host_header()),
            ("/x%20y", "https://[::1]".to_owned(), "[::1]".to_owned())
        );
        assert_eq!(HttpUrl::parse("http://h:80").unwrap().base(), "http://h:80");
        assert_eq!(HttpUrl::parse("http://h").unwrap().path, "/");
    }

    #[test]
    fn what_is_wrong_is_said() {
        assert_eq!(HttpUrl::parse("localhost:8080"), Err(UrlError::NoScheme));
        assert!(matches!(HttpUrl::parse("ftp://x/"), Err(UrlError::NotHttp { .. })));
        assert!(matches!(HttpUrl::parse("http:/x"), Err(UrlError::NotHttp { .. })));
        for (bad, says) in [
            ("http://h:0/", "`0` is not a port"),
            ("http://h:99999/", "`99999` is not a port"),
            ("http://ho st/", "is not a host name"),
            ("http:///x", "no host"),
            ("http://[::1/", "IPv6"),
        ] {
            let e = HttpUrl::parse(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
