//! Splitting a command line into words the way a POSIX shell does, without running anything.
//!
//! Single quotes keep everything literally; double quotes keep everything but `\"`, `\\`, `\$`, `` \` `` and
//! `\<newline>`; an unquoted backslash escapes the next character and `\<newline>` joins lines. Variables and
//! command substitutions (`$C`, `${C}`, `$(nproc)`) cannot be expanded here and stay in the word as written, so
//! a flag that needs a number reports them clearly. The command ends where the shell would end it (`|`, `;`,
//! `&`, `&&`, `||`, a `#` comment), so a line is split into its commands; redirections (`> out.txt`, `2>&1`)
//! are dropped with their target.

use crate::tool::ImportError;

/// The words of one command of a shell line, and what was dropped from it.
#[derive(Debug, Default)]
pub(crate) struct Words {
    pub words: Vec<String>,
    /// Human-readable notes about what the shell syntax dropped.
    pub notes: Vec<String>,
    /// The operator that ended this command (`|`, `;`, `&&`, ...), if any.
    pub ended_by: Option<String>,
}

/// Splits a line into its commands (at least one, possibly without words).
pub(crate) fn split_commands(line: &str) -> Result<Vec<Words>, ImportError> {
    let chars: Vec<char> = line.chars().collect();
    let mut commands = Vec::new();
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
                if let Some(w) = word.take() {
                    out.words.push(w);
                }
                let mut op = String::from(c);
                i += 1;
                if matches!(
                    (c, chars.get(i)),
                    ('&', Some('&')) | ('|', Some('|')) | ('|', Some('&')) | (';', Some(';'))
                ) {
                    op.push(chars[i]);
                    i += 1;
                }
                out.ended_by = Some(op);
                commands.push(std::mem::take(&mut out));
                digits_only = true;
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
    commands.push(out);
    Ok(commands)
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

    fn split(s: &str) -> Result<Words, ImportError> {
        split_commands(s).map(|mut c| c.remove(0))
    }

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
        let c = split_commands("ulimit -n 9 && wrk -c 1 http://x/ | tee out.txt").unwrap();
        let all: Vec<&[String]> = c.iter().map(|c| c.words.as_slice()).collect();
        assert_eq!(all, [&["ulimit", "-n", "9"][..], &["wrk", "-c", "1", "http://x/"], &["tee", "out.txt"]]);
        assert_eq!(c[0].ended_by.as_deref(), Some("&&"));
        assert_eq!(c[1].ended_by.as_deref(), Some("|"));
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
