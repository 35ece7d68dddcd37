//! A small table-driven option parser that reads the three option styles the imported tools use: getopt
//! (wrk, ab, apib, taskset: `-c100`, `-kc 100`, `--timeout=8`, unambiguous `--conn` prefixes), clap (oha:
//! like getopt without prefixes, `-c=100` allowed) and Go's `flag` package (hey: `-disable-keepalive`,
//! `-n=100`, `--z 10s`).
//!
//! Options are accepted before and after positional arguments, as GNU getopt does; `--` ends the options.

use crate::tool::{ImportError, Tool};

/// One option a tool understands.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Opt {
    /// The name the tool-specific code matches on.
    pub key: &'static str,
    pub short: Option<char>,
    pub long: &'static [&'static str],
    pub takes_value: bool,
}

pub(crate) const fn flag(key: &'static str, short: Option<char>, long: &'static [&'static str]) -> Opt {
    Opt { key, short, long, takes_value: false }
}

pub(crate) const fn value(key: &'static str, short: Option<char>, long: &'static [&'static str]) -> Opt {
    Opt { key, short, long, takes_value: true }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    Getopt,
    Clap,
    GoFlag,
}

/// One option as it appeared.
#[derive(Debug, Clone)]
pub(crate) struct Given {
    pub key: &'static str,
    /// The option as the user wrote it (`-c`, `--timeout`), for messages.
    pub written: String,
    pub value: Option<String>,
}

#[derive(Debug, Default)]
pub(crate) struct Parsed {
    pub opts: Vec<Given>,
    pub positionals: Vec<String>,
}

impl Parsed {
    /// The last value given for `key` (later options win, as in every tool here).
    pub fn last(&self, key: &str) -> Option<&Given> {
        self.opts.iter().rev().find(|g| g.key == key)
    }
    pub fn has(&self, key: &str) -> bool {
        self.opts.iter().any(|g| g.key == key)
    }
    pub fn all<'a>(&'a self, key: &'a str) -> impl Iterator<Item = &'a Given> + 'a {
        self.opts.iter().filter(move |g| g.key == key)
    }
}

pub(crate) fn parse(tool: Tool, table: &[Opt], style: Style, args: &[String]) -> Result<Parsed, ImportError> {
    let mut out = Parsed::default();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        if arg == "--" {
            out.positionals.extend(args[i..].iter().cloned());
            break;
        }
        if arg == "-" || !arg.starts_with('-') {
            out.positionals.push(arg.clone());
            continue;
        }
        let long_form = style == Style::GoFlag || arg.starts_with("--");
        if long_form {
            let body = arg.trim_start_matches('-');
            let dashes = &arg[..arg.len() - body.len()];
            if dashes.len() > 2 {
                return Err(unknown(tool, arg));
            }
            let (name, inline) = match body.split_once('=') {
                Some((n, v)) => (n, Some(v.to_owned())),
                None => (body, None),
            };
            let opt = find_long(tool, table, style, name, arg)?;
            let written = format!("{dashes}{name}");
            let value = if opt.takes_value {
                match inline {
                    Some(v) => Some(v),
                    None => match args.get(i) {
                        Some(v) => {
                            i += 1;
                            Some(v.clone())
                        }
                        None => return Err(missing(tool, &written)),
                    },
                }
            } else {
                match inline.as_deref() {
                    None => None,
                    // Go's boolean flags take `=true` / `=false`.
                    Some(v) if style == Style::GoFlag => match v {
                        "1" | "t" | "T" | "true" | "TRUE" | "True" => None,
                        "0" | "f" | "F" | "false" | "FALSE" | "False" => continue,
                        _ => {
                            return Err(ImportError::BadValue {
                                tool,
                                flag: written,
                                value: v.to_owned(),
                                expected: "`true` or `false`".to_owned(),
                            })
                        }
                    },
                    Some(_) => {
                        return Err(ImportError::BadValue {
                            tool,
                            flag: written,
                            value: inline.unwrap_or_default(),
                            expected: "no value (this option is a switch)".to_owned(),
                        })
                    }
                }
            };
            out.opts.push(Given { key: opt.key, written, value });
            continue;
        }
        // A cluster of short options: `-kc100`, `-c 100`, `-L`.
        let cluster: Vec<char> = arg.chars().skip(1).collect();
        let mut j = 0;
        while j < cluster.len() {
            let c = cluster[j];
            j += 1;
            let written = format!("-{c}");
            let Some(opt) = table.iter().find(|o| o.short == Some(c)) else {
                return Err(unknown(tool, &written));
            };
            if !opt.takes_value {
                out.opts.push(Given { key: opt.key, written, value: None });
                continue;
            }
            let mut rest: String = cluster[j..].iter().collect();
            if style == Style::Clap {
                if let Some(r) = rest.strip_prefix('=') {
                    rest = r.to_owned();
                }
            }
            let value = if j < cluster.len() {
                rest
            } else {
                match args.get(i) {
                    Some(v) => {
                        i += 1;
                        v.clone()
                    }
                    None => return Err(missing(tool, &written)),
                }
            };
            out.opts.push(Given { key: opt.key, written, value: Some(value) });
            break;
        }
    }
    Ok(out)
}

fn find_long<'t>(tool: Tool, table: &'t [Opt], style: Style, name: &str, arg: &str) -> Result<&'t Opt, ImportError> {
    if let Some(o) = table.iter().find(|o| o.long.contains(&name)) {
        return Ok(o);
    }
    if style == Style::Getopt && !name.is_empty() {
        // getopt_long accepts any unambiguous prefix of a long option.
        let mut matches = table.iter().filter(|o| o.long.iter().any(|l| l.starts_with(name)));
        if let (Some(o), None) = (matches.next(), matches.next()) {
            return Ok(o);
        }
    }
    Err(unknown(tool, arg.split('=').next().unwrap_or(arg)))
}

fn unknown(tool: Tool, flag: &str) -> ImportError {
    ImportError::UnknownFlag { tool, flag: flag.to_owned() }
}

fn missing(tool: Tool, flag: &str) -> ImportError {
    ImportError::MissingValue { tool, flag: flag.to_owned() }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &[Opt] = &[
        value("connections", Some('c'), &["connections"]),
        value("timeout", None, &["timeout"]),
        flag("keepalive", Some('k'), &["keepalive"]),
        flag("latency", Some('L'), &["latency"]),
    ];

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn getopt_forms() {
        let p =
            parse(Tool::Wrk, TABLE, Style::Getopt, &s(&["-kc100", "u", "--timeout=8", "--lat", "--", "-c"])).unwrap();
        assert_eq!(p.last("connections").unwrap().value.as_deref(), Some("100"));
        assert_eq!(p.last("timeout").unwrap().value.as_deref(), Some("8"));
        assert!(p.has("keepalive") && p.has("latency"));
        assert_eq!(p.positionals, ["u", "-c"]);
    }

    #[test]
    fn errors_name_the_flag() {
        let e = parse(Tool::Wrk, TABLE, Style::Getopt, &s(&["-x"])).unwrap_err();
        assert!(e.to_string().contains("`-x`"), "{e}");
        let e = parse(Tool::Wrk, TABLE, Style::Getopt, &s(&["-c"])).unwrap_err();
        assert!(e.to_string().contains("`-c`"), "{e}");
        let e = parse(Tool::Wrk, TABLE, Style::Getopt, &s(&["--latency=1"])).unwrap_err();
        assert!(e.to_string().contains("--latency"), "{e}");
    }

    #[test]
    fn go_flags() {
        let table = &[value("n", None, &["n"]), flag("dk", None, &["disable-keepalive"])];
        let p = parse(Tool::Hey, table, Style::GoFlag, &s(&["-n=5", "--disable-keepalive=false", "u"])).unwrap();
        assert_eq!(p.last("n").unwrap().value.as_deref(), Some("5"));
        assert!(!p.has("dk"));
    }
}
