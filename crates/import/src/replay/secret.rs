//! Secrets in logged requests: credential headers (`Authorization`, `Cookie`, `Proxy-Authorization`,
//! `X-Api-Key`, plus the user's) and query parameters by name (`access_token`, `api_key`, `token`, `key`,
//! `signature` by default, configurable, and any name that reads like a credential: `refresh_token`,
//! `client_secret`, `X-Amz-Signature`, `password`). Their values are held as [`Secret`]s, whose `Debug` and `Display` print
//! `***` and which no serializer sees: only [`Secret::expose`] gives the value, for the bytes sent. A mapping
//! name -> environment variable replaces a logged value with the environment's (the log's being stale or
//! not to be reused).

use std::collections::BTreeMap;
use std::fmt;

use loadgate_model::secrets::{is_credential_header, REDACTED};

use super::error::ReplayError;

/// The query parameters secret by default.
pub const DEFAULT_SECRET_QUERY: &[&str] = &["access_token", "api_key", "token", "key", "signature"];

/// A value that is never shown: `Debug` and `Display` print `***`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a value.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }
    /// The value, for the bytes sent to the target and nothing else.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

/// A header's or a query parameter's value: plain, or secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// Shown as it is.
    Plain(String),
    /// Never shown.
    Secret(Secret),
}

impl Value {
    /// The value to send.
    pub fn expose(&self) -> &str {
        match self {
            Value::Plain(s) => s,
            Value::Secret(s) => s.expose(),
        }
    }
    /// The value to show: `***` for a secret.
    pub fn shown(&self) -> &str {
        match self {
            Value::Plain(s) => s,
            Value::Secret(_) => REDACTED,
        }
    }
    /// Whether it is secret.
    pub fn is_secret(&self) -> bool {
        matches!(self, Value::Secret(_))
    }
}

/// A request header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// Its name as logged.
    pub name: String,
    /// Its value.
    pub value: Value,
}

/// A query parameter, as logged (not percent-decoded, so the query is sent byte for byte as it was).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryParam {
    /// Its name.
    pub name: String,
    /// Its value; `None` for a name without `=`.
    pub value: Option<Value>,
}

/// Which names are secret and where replacements come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretRules {
    /// Headers secret beyond loadgate's credential headers.
    pub headers: Vec<String>,
    /// Query parameters secret (default [`DEFAULT_SECRET_QUERY`]), compared without case.
    pub query: Vec<String>,
    /// A header or query parameter name -> the environment variable whose value replaces the logged one (the
    /// name is then secret too).
    pub from_env: BTreeMap<String, String>,
}

impl Default for SecretRules {
    fn default() -> Self {
        SecretRules {
            headers: Vec::new(),
            query: DEFAULT_SECRET_QUERY.iter().map(|s| s.to_string()).collect(),
            from_env: BTreeMap::new(),
        }
    }
}

impl SecretRules {
    fn env_for(&self, name: &str) -> Option<&String> {
        self.from_env.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v)
    }

    /// Whether a header's value is secret.
    pub fn header_is_secret(&self, name: &str) -> bool {
        is_credential_header(name, &self.headers) || self.env_for(name).is_some()
    }

    /// Whether a query parameter's value is secret: a name of the list, one that reads like a credential
    /// (holding `token`, `secret`, `signature`, `credential`, `password`, `passwd`, `apikey` or `api_key`, as
    /// `refresh_token`, `client_secret`, `X-Amz-Signature`, `X-Amz-Credential` do), or one the environment replaces.
    pub fn query_is_secret(&self, name: &str) -> bool {
        const CREDENTIAL_WORDS: [&str; 8] =
            ["token", "secret", "signature", "credential", "password", "passwd", "apikey", "api_key"];
        let lower = name.to_ascii_lowercase();
        self.query.iter().any(|q| q.eq_ignore_ascii_case(name))
            || CREDENTIAL_WORDS.iter().any(|w| lower.contains(w))
            || self.env_for(name).is_some()
    }

    /// A logged header, its value marked.
    pub fn header(&self, name: String, value: String) -> Header {
        let value = if self.header_is_secret(&name) { Value::Secret(Secret(value)) } else { Value::Plain(value) };
        Header { name, value }
    }

    /// Splits `/path?a=1&token=x` into the path and its parameters, secret values marked. A fragment is dropped
    /// (browsers never send it).
    pub fn split_target(&self, path_and_query: &str) -> (String, Vec<QueryParam>) {
        let without_fragment = path_and_query.split('#').next().unwrap_or("");
        let Some((path, query)) = without_fragment.split_once('?') else {
            return (without_fragment.to_string(), Vec::new());
        };
        let params = query
            .split('&')
            .map(|p| match p.split_once('=') {
                Some((n, v)) => QueryParam {
                    name: n.to_string(),
                    value: Some(if self.query_is_secret(n) {
                        Value::Secret(Secret(v.to_string()))
                    } else {
                        Value::Plain(v.to_string())
                    }),
                },
                None => QueryParam { name: p.to_string(), value: None },
            })
            .collect();
        (path.to_string(), params)
    }

    /// Replaces the values named in [`SecretRules::from_env`] with the environment's (`env` looks a variable
    /// up). A variable that is not set is an error naming it, never its logged value.
    pub fn replace_from_env(
        &self,
        headers: &mut [Header],
        query: &mut [QueryParam],
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<(), ReplayError> {
        let lookup = |name: &str, var: &str| {
            env(var)
                .map(|v| Value::Secret(Secret(v)))
                .ok_or_else(|| ReplayError::MissingSecret { name: name.to_string(), var: var.to_string() })
        };
        for h in headers.iter_mut() {
            if let Some(var) = self.env_for(&h.name) {
                h.value = lookup(&h.name, var)?;
            }
        }
        for q in query.iter_mut() {
            if let Some(var) = self.env_for(&q.name) {
                q.value = Some(lookup(&q.name, var)?);
            }
        }
        Ok(())
    }
}

/// Joins a path and its parameters, each value as `value` gives it (exposed or shown).
pub fn join_target(path: &str, query: &[QueryParam], value: fn(&Value) -> &str) -> String {
    let mut s = path.to_string();
    for (i, q) in query.iter().enumerate() {
        s.push(if i == 0 { '?' } else { '&' });
        s.push_str(&q.name);
        if let Some(v) = &q.value {
            s.push('=');
            s.push_str(value(v));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_headers_and_named_query_parameters_are_secret_and_print_as_stars() {
        let rules = SecretRules { headers: vec!["X-Session".into()], ..SecretRules::default() };
        let h = rules.header("authorization".into(), "Bearer abc.def".into());
        assert!(h.value.is_secret());
        assert_eq!(format!("{h:?}"), r#"Header { name: "authorization", value: Secret(***) }"#);
        assert!(rules.header("X-Session".into(), "s".into()).value.is_secret());
        assert!(!rules.header("Accept".into(), "*/*".into()).value.is_secret());
        let (path, q) = rules.split_target("/api/items?page=2&API_KEY=sk_live_123&flag&sig#frag");
        assert_eq!(path, "/api/items");
        assert_eq!(join_target(&path, &q, Value::expose), "/api/items?page=2&API_KEY=sk_live_123&flag&sig");
        assert_eq!(join_target(&path, &q, Value::shown), "/api/items?page=2&API_KEY=***&flag&sig");
        assert!(!format!("{q:?}").contains("sk_live_123"));
    }

    #[test]
    fn values_named_for_the_environment_are_replaced_and_an_unset_variable_is_named() {
        let rules = SecretRules {
            from_env: BTreeMap::from([
                ("Authorization".into(), "PROD_AUTH".into()),
                ("tenant".into(), "TENANT".into()),
            ]),
            ..SecretRules::default()
        };
        let mut headers = vec![rules.header("Authorization".into(), "Bearer logged".into())];
        let (_, mut query) = rules.split_target("/?tenant=old&page=1");
        assert!(query[0].value.as_ref().is_some_and(Value::is_secret));
        let env = |v: &str| (v == "PROD_AUTH" || v == "TENANT").then(|| format!("fresh-{v}"));
        rules.replace_from_env(&mut headers, &mut query, &env).unwrap();
        assert_eq!(headers[0].value.expose(), "fresh-PROD_AUTH");
        assert_eq!(join_target("/", &query, Value::expose), "/?tenant=fresh-TENANT&page=1");
        let none = |_: &str| None;
        let e = rules.replace_from_env(&mut headers, &mut query, &none).unwrap_err();
        assert_eq!(
            e.to_string(),
            "secret `Authorization` is to be read from the environment variable `PROD_AUTH`, which is not set"
        );
    }
}
