//! Writing YAML scalars: what `loadgate import`, `--print-spec` and the Kubernetes manifests write for values
//! the user controls.

use std::fmt::Write as _;

/// A YAML double-quoted scalar that reads back as exactly `s`: quotes, backslashes and every control character
/// escaped, and the characters YAML 1.1 reads as line breaks or a byte order mark (U+0085, U+2028, U+2029,
/// U+FEFF) too; anything else as it is.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\0' => out.push_str("\\0"),
            c if c.is_control() || matches!(c, '\u{85}' | '\u{2028}' | '\u{2029}' | '\u{feff}') => {
                let n = c as u32;
                if n <= 0xff {
                    let _ = write!(out, "\\x{n:02x}");
                } else {
                    let _ = write!(out, "\\u{n:04x}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::quote;

    #[test]
    fn escapes_what_yaml_would_read_otherwise() {
        assert_eq!(quote("plain"), "\"plain\"");
        assert_eq!(quote("a\"b\\c\n\u{1}"), r#""a\"b\\c\n\x01""#);
        assert_eq!(quote("\0\t\r"), r#""\0\t\r""#);
        assert_eq!(quote("\u{85}\u{2028}\u{2029}\u{feff}"), r#""\x85\u2028\u2029\ufeff""#);
        assert_eq!(quote("é ünï"), "\"é ünï\"");
    }
}
