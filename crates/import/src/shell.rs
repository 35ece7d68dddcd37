//! Splitting a command line into words the way a POSIX shell does, without running anything.
//!
//! Single quotes keep everything literally; double quotes keep everything but `\"`, `\\`, `\$`, `` \` `` and
//! `\<newline>`; an unquoted backslash escapes the next character and `\<newline>` joins lines. Variables and
//! command substitutions (`$C`, `${C}`, `$(nproc)`) cannot be expanded here and stay in the word as written, so
//! a flag that needs a number reports them clearly. The command ends where the shell would end it (`|`, `;`,
//! `&`, `&&`, `||`, a `#` comment); redirections (`> out.txt`, `2>&1`) are dropped with their target.

use crate::ImportError;

/// The words of the first command of a shell line, and what was dropped around it.
#[derive(Debug, Default)]
pub(crate) struct Words {
    pub words: Vec<String>,
    /// Human-readable notes about what the shell syntax dropped.
    pub notes: Vec<String>,
}

pub(crate) fn split(line: &str) -> Result<Words, ImportError> {
    let chars: Vec<char> = line.chars().collect();
    let mut out = Words::default();
    let mut word: Option<String> = None;
    // Whether the word in progress holds only unquoted digits (a file descriptor before `>`).
    let mut digits_only = true;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            ' ' | '\t' | '\n' | '\r' => {
                if let Some(w) = word.take() {
                    out.words.push(w);
                }
                digits_only = true;
                i += 1;
            }
            '\\' => {
                match chars.get(i + 1) {
                    Some('\n') => {}
                    Some(&next) => {
                        word.get_or_insert_with(String::new).push(next);
                        digits_only = false;
                    }
                    None => word.get_or_insert_with(String::new).push('\\'),
                }
                i += 2;
            }
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                let start = i;
                i += 1;
                loop {
                    match chars.get(i) {
                        Some('\'') => break,
                        Some(&ch) => w.push(ch),
                        None => return Err(unterminated("single quote", start, &chars)),
                    }
                    i += 1;
                }
                digits_only = false;
                i += 1;
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                let start = i;
                i += 1;
                loop {
                    match chars.get(i) {
                        Some('"') => break,
                        Some('\\') => match chars.get(i + 1) {
                            Some('\n') => i += 1,
                            Some(&e @ ('"' | '\\' | '$' | '`')) => {
                                w.push(e);
                                i += 1;
                            }
                            _ => w.push('\\'),
                        },
                        Some(&ch) => w.push(ch),
                        None => return Err(unterminated("double quote", start, &chars)),
                    }
                    i += 1;
                }
                digits_only = false;
                i += 1;
            }
            '#' if word.is_none() => {
                let rest: String = chars[i..].iter().collect();
                out.notes.push(format!("the shell comment `{}` is ignored", one_line(&rest)));
                break;
            }
            '$' if matches!(chars.get(i + 1), Some('(' | '{')) => {
                // Keep `$(...)` and `${...}` whole, as written.
                let (open, close) = if chars[i + 1] == '(' { ('(', ')') } else { ('{', '}') };
                let w = word.get_or_insert_with(String::new);
                w.push('$');
                let mut depth = 0usize;
                i += 1;
                while let Some(&ch) = chars.get(i) {
                    w.push(ch);
                    i += 1;
                    if ch == open {
                        depth += 1;
                    } else if ch == close {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            break;
                        }
                    }
                }
                digits_only = false;
            }
            '`' => {
                let w = word.get_or_insert_with(String::new);
                w.push('`');
                i += 1;
                while let Some(&ch) = chars.get(i) {
                    w.push(ch);
                    i += 1;
                    if ch == '`' {
                        break;
                    }
                }
                digits_only = false;
            }
            '>' | '<' => {
                // A redirection: drop `N>` and the file it names.
                if word.as_deref().is_some_and(|w| digits_only && !w.is_empty()) {
                    word = None;
                }
                if let Some(w) = word.take() {
                    out.words.push(w);
                }
                let start = i;
                i += 1;
                while matches!(chars.get(i), Some('>' | '<' | '&' | '|')) {
                    i += 1;
                }
                while matches!(chars.get(i), Some(' ' | '\t')) {
                    i += 1;
                }
                // The target: a file (`> out.txt`) or a descriptor (`2>&1`).
                let mut quote: Option<char> = None;
                while let Some(&ch) = chars.get(i) {
                    match quote {
                        Some(q) if ch == q => quote = None,
                        Some(_) => {}
                        None if ch == '\'' || ch == '"' => quote = Some(ch),
                        None if ch.is_whitespace() || matches!(ch, '|' | ';' | '&' | '<' | '>') => break,
                        None => {}
                    }
                    i += 1;
                }
                let text: String = chars[start..i].iter().collect();
                out.notes.push(format!("the shell redirection `{}` is ignored", one_line(text.trim())));
                digits_only = true;
            }
            '&' if chars.get(i + 1) == Some(&'>') => {
                // `&> file`: treat like `>`.
                if let Some(w) = word.take() {
                    out.words.push(w);
                }
                let start = i;
                i += 2;
                while matches!(chars.get(i), Some(' ' | '\t')) {
                    i += 1;
                }
                while chars.get(i).is_some_and(|c| !c.is_whitespace()) {
                    i += 1;
                }
                let text: String = chars[start..i].iter().collect();
                out.notes.push(format!("the shell redirection `{}` is ignored", one_line(&text)));
            }
            '|' | ';' | '&' | '(' | ')' => {
                let rest: String = chars[i..].iter().collect();
                out.notes.push(format!(
                    "the shell ends the command at `{c}`: `{}` is not part of it (quote a URL that contains `&` or `;`)",
                    one_line(rest.trim())
                ));
                break;
            }
            _ => {
                word.get_or_insert_with(String::new).push(c);
                if !c.is_ascii_digit() {
                    digits_only = false;
                }
                i += 1;
            }
        }
    }
    if let Some(w) = word.take() {
        out.words.push(w);
    }
    Ok(out)
}

fn unterminated(what: &str, start: usize, chars: &[char]) -> ImportError {
    let context: String = chars[start..].iter().take(40).collect();
    ImportError::Shell {
        message: format!("the {what} at `{}` is never closed", one_line(&context)),
        expected: format!("a closing {what}, as a shell needs"),
    }
}

/// Text on one line, safe to show in a message or a YAML comment.
pub(crate) fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{feff}') { ' ' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        split(s).unwrap().words
    }

    #[test]
    fn quotes_and_escapes() {
        assert_eq!(words("wrk -H 'Host: a b' http://x/"), ["wrk", "-H", "Host: a b", "http://x/"]);
        assert_eq!(words(r#"hey -d "a \"b\" \$c \n" u"#), ["hey", "-d", r#"a "b" $c \n"#, "u"]);
        assert_eq!(words(r"ab a\ b"), ["ab", "a b"]);
        assert_eq!(words("ab ''"), ["ab", ""]);
        assert_eq!(words("ab x'y'\"z\""), ["ab", "xyz"]);
        assert_eq!(words("wrk \\\n  -c 1"), ["wrk", "-c", "1"]);
    }

    #[test]
    fn operators_end_the_command() {
        let w = split("wrk -c 1 http://x/ | tee out.txt").unwrap();
        assert_eq!(w.words, ["wrk", "-c", "1", "http://x/"]);
        assert_eq!(w.notes.len(), 1);
        assert_eq!(words("ab http://x/?a=1&b=2"), ["ab", "http://x/?a=1"]);
        assert_eq!(words("wrk http://x/ # comment"), ["wrk", "http://x/"]);
        assert_eq!(words("wrk a#b"), ["wrk", "a#b"]);
    }

    #[test]
    fn redirections_are_dropped() {
        assert_eq!(words("wrk http://x/ > out.txt 2>&1"), ["wrk", "http://x/"]);
        assert_eq!(words("wrk http://x/ 2> err.txt -c 5"), ["wrk", "http://x/", "-c", "5"]);
        assert_eq!(words("wrk http://x/ &> all.txt"), ["wrk", "http://x/"]);
    }

    #[test]
    fn substitutions_stay_literal() {
        assert_eq!(words("wrk -t $(nproc) -c ${C}"), ["wrk", "-t", "$(nproc)", "-c", "${C}"]);
        assert_eq!(words("wrk -t `nproc`"), ["wrk", "-t", "`nproc`"]);
    }

    #[test]
    fn unterminated_quotes_are_errors() {
        let e = split("wrk -H 'Host: x").unwrap_err();
        assert!(e.to_string().contains("single quote"), "{e}");
        assert!(split("wrk -H \"Host: x").is_err());
    }
}
