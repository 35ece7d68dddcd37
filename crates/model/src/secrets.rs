//! Secrets: the values that must never reach an artifact (results.json, junit.xml, report.md, the step
//! summary, `plan --json`, `--print-spec`, the terminal).
//!
//! A value is secret when it came from the process environment through `{{ env.NAME }}`, when it is the value
//! of a variable marked secret (`secrets: { vars: [...] }` in the spec, or `--secret NAME=VALUE`), or when it
//! is sent in a header that carries credentials ([`CREDENTIAL_HEADERS`], plus the spec's `secrets.headers`).
//! Every artifact is written through a [`Redactor`], which replaces each such value with [`REDACTED`].

use std::collections::BTreeMap;

/// What a secret value is replaced with.
pub const REDACTED: &str = "***";

/// Headers whose values are always secret (compared without regard to case).
pub const CREDENTIAL_HEADERS: &[&str] = &["authorization", "cookie", "proxy-authorization", "x-api-key"];

/// Values shorter than this are not replaced in free text (replacing every `1` would destroy a report); they
/// are still replaced where they stand whole (a secret variable's value, a credential header's value).
pub const MIN_SCRUBBED_LEN: usize = 3;

/// Whether a header's value is secret: one of [`CREDENTIAL_HEADERS`] or of the spec's own list.
pub fn is_credential_header(name: &str, extra: &[String]) -> bool {
    CREDENTIAL_HEADERS.iter().any(|h| h.eq_ignore_ascii_case(name))
        || extra.iter().any(|h| h.eq_ignore_ascii_case(name))
}

/// Replaces secret values in everything loadgate writes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Redactor {
    /// Secret values, longest first (so that a secret containing another is replaced whole).
    values: Vec<String>,
    /// Names of variables whose values are secret.
    vars: Vec<String>,
}

impl Redactor {
    /// A redactor for these values and secret variable names.
    pub fn new(values: impl IntoIterator<Item = String>, vars: impl IntoIterator<Item = String>) -> Self {
        let mut values: Vec<String> = values.into_iter().filter(|v| !v.is_empty()).collect();
        values.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        values.dedup();
        let mut vars: Vec<String> = vars.into_iter().collect();
        vars.sort();
        vars.dedup();
        Redactor { values, vars }
    }

    /// Both redactors' secrets in one.
    pub fn and(&self, other: &Redactor) -> Redactor {
        Redactor::new(
            self.values().iter().chain(other.values()).cloned(),
            self.vars().iter().chain(other.vars()).cloned(),
        )
    }

    /// Whether there is nothing to redact.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty() && self.vars.is_empty()
    }

    /// The secret values (for a caller that merges redactors).
    pub fn values(&self) -> &[String] {
        &self.values
    }

    /// The secret variables' names.
    pub fn vars(&self) -> &[String] {
        &self.vars
    }

    /// `text` with every secret value (of [`MIN_SCRUBBED_LEN`] characters or more) replaced by [`REDACTED`].
    /// JSON and XML escaping are undone for the search, so a secret with a quote or an ampersand in it is found
    /// in results.json and junit.xml too.
    pub fn scrub(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for v in self.values.iter().filter(|v| v.chars().count() >= MIN_SCRUBBED_LEN) {
            for form in forms(v) {
                if out.contains(&form) {
                    out = out.replace(&form, REDACTED);
                }
            }
        }
        out
    }

    /// Replaces the values of secret variables (whatever their length) in a name -> value map.
    pub fn redact_vars(&self, vars: &mut BTreeMap<String, String>) {
        for (name, value) in vars.iter_mut() {
            if self.vars.contains(name) || self.values.iter().any(|v| v == value) {
                *value = REDACTED.to_owned();
            }
        }
    }
}

/// A value as it may appear in text loadgate writes: as is, escaped for JSON, for XML, for HTML, and
/// percent-encoded.
fn forms(v: &str) -> Vec<String> {
    let mut forms = vec![v.to_owned()];
    let json: String = v
        .chars()
        .flat_map(|c| match c {
            '"' => "\\\"".chars().collect::<Vec<_>>(),
            '\\' => "\\\\".chars().collect(),
            '\n' => "\\n".chars().collect(),
            '\t' => "\\t".chars().collect(),
            '\r' => "\\r".chars().collect(),
            c => vec![c],
        })
        .collect();
    let xml = v
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;");
    // As minijinja's HTML escaping writes it (report.html).
    let html = v
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#x27;")
        .replace('/', "&#x2f;");
    // Percent-encoded, as a request's query or path carries it (upper- and lower-case hex).
    let percent = |upper: bool| {
        let mut out = String::with_capacity(v.len() * 3);
        for b in v.bytes() {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
                out.push(b as char);
            } else if upper {
                out.push_str(&format!("%{b:02X}"));
            } else {
                out.push_str(&format!("%{b:02x}"));
            }
        }
        out
    };
    for f in [json, xml, html, percent(true), percent(false)] {
        if !forms.contains(&f) {
            forms.push(f);
        }
    }
    forms
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_of_a_secret_is_replaced() {
        let r = Redactor::new(["s3cr\"et&<x>".to_owned(), "ab".to_owned()], ["token".to_owned()]);
        assert_eq!(r.scrub("a s3cr\"et&<x> b"), "a *** b");
        assert_eq!(r.scrub(r#"{"v":"s3cr\"et&<x>"}"#), r#"{"v":"***"}"#);
        assert_eq!(r.scrub("<p v=\"s3cr&quot;et&amp;&lt;x&gt;\"/>"), "<p v=\"***\"/>");
        assert_eq!(r.scrub("ab stays in free text"), "ab stays in free text");
        let mut vars = BTreeMap::from([("token".to_owned(), "x".to_owned()), ("n".to_owned(), "ab".to_owned())]);
        r.redact_vars(&mut vars);
        assert_eq!(vars["token"], REDACTED);
        assert_eq!(vars["n"], REDACTED, "a whole value that is secret is replaced whatever its length");
    }

    #[test]
    fn html_escaped_and_percent_encoded_forms_are_replaced() {
        let r = Redactor::new(["Zq9/Xy+Pw=K&L<M'".to_owned()], []);
        assert_eq!(r.scrub("GET /p?k=Zq9%2FXy%2BPw%3DK%26L%3CM%27 HTTP/1.1"), "GET /p?k=*** HTTP/1.1");
        assert_eq!(
            r.scrub("k=zq9%2fxy%2bpw%3dk%26l%3cm%27"),
            "k=zq9%2fxy%2bpw%3dk%26l%3cm%27",
            "case of the value kept"
        );
        assert_eq!(r.scrub("k=Zq9%2fXy%2bPw%3dK%26L%3cM%27"), "k=***");
        assert_eq!(r.scrub("<p>top Zq9&#x2f;Xy+Pw=K&amp;L&lt;M&#x27;</p>"), "<p>top ***</p>");
    }

    #[test]
    fn longer_secrets_are_replaced_first_and_credential_headers_are_known() {
        let r = Redactor::new(["abc".to_owned(), "abcdef".to_owned()], []);
        assert_eq!(r.scrub("abcdef abc"), "*** ***");
        assert!(is_credential_header("AUTHORIZATION", &[]));
        assert!(is_credential_header("X-Internal", &["x-internal".to_owned()]));
        assert!(!is_credential_header("Accept", &[]));
    }
}
