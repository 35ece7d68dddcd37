//! `loadgate import`: turns a wrk, wrk2, ab, hey, oha, apib or h2load command line into a loadgate spec.
//!
//! ```
//! let imported = loadgate_import::import(
//!     "taskset -c 16-31 wrk -t16 -c1000 -d5m --timeout 10s http://localhost:8080/api/orders",
//! )
//! .unwrap();
//! assert_eq!(imported.tool, loadgate_import::Tool::Wrk);
//! assert!(imported.yaml.contains("connections: 1000"));
//! ```
//!
//! The command line is split like a POSIX shell splits it (quotes, backslashes, line continuations,
//! redirections dropped). A line may hold several commands (`ulimit -n 65536 && wrk ... | tee log`): the
//! first that runs a known tool is imported and the others are noted. Before the tool may come a shell prompt (`$`,
//! `user@host:~$`), environment assignments (`A=b`), and the wrappers `sudo`, `env`, `time`, `nice`,
//! `nohup`, `exec`, `taskset` (`-c LIST`, `--cpu-list LIST` or a hexadecimal mask) and `numactl`
//! (`-C`/`--physcpubind`). The tool is recognised by its program name, with or without a path: `wrk`,
//! `wrk2` (and `wrk` given `-R`/`--rate`, which is wrk2), `ab`, `hey`, `oha`, `apib` and `h2load`.
//!
//! Each tool's flags are read with that tool's own syntax and defaults (`wrk -d 5` is five seconds, `ab`
//! without `-n` sends one request, wrk's timeout is 2 s unless `--timeout` says otherwise) and mapped onto
//! the spec:
//!
//! | tool flag | spec |
//! | --- | --- |
//! | `taskset -c LIST`, numactl `-C LIST` | `hardware.generator.cpus`, with `on_mismatch: warn` |
//! | wrk/apib/h2load `-t`, hey `-cpus` | `hardware.generator.threads` |
//! | `-c` | `connections` |
//! | wrk `-d`, hey/oha `-z`, ab `-t`, apib `-d`, h2load `-D` | `duration` of a closed load |
//! | ab/hey/oha/h2load `-n` | `requests` of a closed load |
//! | wrk2 `-R`, oha `-q`, hey `-q` × `-c`, h2load `--rps` × `-c` | an `open` load at that total rate |
//! | ab without `-k`, hey/oha `-disable-keepalive`, apib `-k 0` | `keep_alive: false` |
//! | wrk `-s pipeline.lua -- N`, h2load `--h1 -m N` | `pipeline: N` (wrk's with `pipeline_reads: batch`: wrk records one latency per batch) |
//! | `-H 'K: V'`, `-T`, `-A`, `-C`, `-a`/`-A user:pass`, `--host`, h2load `-H ':authority: H'` | request `headers` |
//! | `-m`, ab `-i`, ab `-p`/`-u`, h2load `-d` (POST), `-H ':method: M'` | request `method` |
//! | hey/oha `-d` | request `body` |
//! | `--timeout`, ab `-s`, hey/oha `-t` | scenario `timeout` |
//! | apib `-w`, h2load `--warm-up-time` | a `warmup` scenario with `gate: false` |
//!
//! Everything that cannot be carried over (Lua scripts other than `pipeline.lua`, bodies read from files,
//! proxies, HTTP/2, output options, `--latency`) is listed in [`Imported::notes`] and as `#` comments at the
//! top of the YAML. h2load speaks HTTP/2 unless `--h1` (or `-p http/1.1`, or an ALPN list without h2), which
//! loadgate's engine does not speak yet: the import says so first, and says that `-m` streams and HTTP/2
//! settings (`-w`, `-W`, header table sizes) are not supported, rather than dropping them. The spec gets one
//! default SLO, `error_rate < 1%`, commented as added by the import.
//!
//! The result validates with `loadgate_spec::load_str` for every `http://` and `https://` URL; oha's
//! `--insecure` becomes `target.tls: { insecure: true }`.
//!
//! Every problem is an [`ImportError`] naming the flag and what was expected; no input makes [`import`]
//! panic.
//!
//! [`replay`] reads access logs (nginx, Apache, JSON lines, AWS ALB) and HAR files into a schedule of requests at
//! their logged start times, for the replay load (issue 44).

mod args;
mod credential;
mod draft;
mod flags;
pub mod replay;
mod shell;
mod tool;
mod tools;
mod values;

pub use credential::{credential_env_name, credential_note, credential_reference};
pub use draft::SCHEMA_URL;
pub use flags::{flag_credentials, printable_spec_from_flags, spec_from_flags, without_userinfo, FlagRun};
pub use tool::{ImportError, Tool};

/// An imported command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Imported {
    /// The spec, starting with the schema modeline and `# imported from: <command line>`.
    pub yaml: String,
    /// Things not carried over (or carried over differently), also present as comments in `yaml`.
    pub notes: Vec<String>,
    /// The tool the command line runs.
    pub tool: Tool,
    /// The credential headers the command line sends, with their values: not in `yaml`, which reads each from
    /// the environment ([`credential_reference`]).
    pub credentials: Vec<(String, String)>,
}

/// Imports one command line. See the crate documentation for what is understood.
pub fn import(command_line: &str) -> Result<Imported, ImportError> {
    let commands = shell::split_commands(command_line)?;
    // The first command that runs a known tool is the one imported (`ulimit -n 65536 && wrk ...`).
    let mut first_error = None;
    let mut chosen = None;
    for (index, command) in commands.iter().enumerate() {
        let mut prefix = Prefix::default();
        let rest = match strip_prefixes(&command.words, &mut prefix) {
            Ok(rest) => rest,
            Err(e) => {
                first_error.get_or_insert(e);
                continue;
            }
        };
        let Some((program, args)) = rest.split_first() else { continue };
        match tool_of(program) {
            Some(tool) => {
                chosen = Some((index, tool, args, prefix));
                break;
            }
            None => {
                first_error.get_or_insert(ImportError::UnknownTool { program: shell::one_line(program) });
            }
        }
    }
    let Some((index, tool, args, prefix)) = chosen else {
        return Err(first_error.unwrap_or(ImportError::Empty));
    };
    let mut notes = prefix.notes;
    for (i, other) in commands.iter().enumerate() {
        notes.extend(other.notes.iter().filter(|_| i == index).cloned());
        if i != index && !other.words.is_empty() {
            let text = shell::one_line(&other.words.join(" "));
            let next_to = if i < index { "before" } else { "after" };
            let hint = if i == index + 1 && commands[index].ended_by.as_deref() == Some("&") {
                " (the shell ends a command at an unquoted `&`: quote a URL that contains one)"
            } else {
                ""
            };
            notes.push(format!("the command `{text}` {next_to} {tool} is not carried over{hint}"));
        }
    }
    let mut draft = tools::read(tool, args, command_line)?;
    draft.cpus = prefix.cpus;
    notes.append(&mut draft.notes);
    for n in notes {
        draft.note(n);
    }
    for (name, _) in draft.headers.clone().iter().filter(|(k, _)| loadgate_model::secrets::is_credential_header(k, &[]))
    {
        draft.note(credential_note(name));
    }
    let credentials =
        draft.headers.iter().filter(|(k, _)| loadgate_model::secrets::is_credential_header(k, &[])).cloned().collect();
    Ok(Imported { yaml: draft.render(), notes: draft.notes.clone(), tool: draft.tool, credentials })
}

/// The tool a program name runs: `wrk`, `/usr/local/bin/wrk2`, `./ab`, `oha.exe`.
fn tool_of(program: &str) -> Option<Tool> {
    let base = program.rsplit(['/', '\\']).next().unwrap_or(program);
    let base = base.strip_suffix(".exe").unwrap_or(base);
    Some(match base {
        "wrk" => Tool::Wrk,
        "wrk2" => Tool::Wrk2,
        "ab" | "ab2" => Tool::Ab,
        "hey" => Tool::Hey,
        "oha" => Tool::Oha,
        "apib" => Tool::Apib,
        "h2load" => Tool::H2load,
        _ => return None,
    })
}

#[derive(Debug, Default)]
struct Prefix {
    cpus: Option<(Vec<u32>, String)>,
    notes: Vec<String>,
}

/// Skips what may come before the tool: a prompt, assignments and wrapper commands, taking the CPU pinning
/// from taskset and numactl.
fn strip_prefixes<'w>(words: &'w [String], prefix: &mut Prefix) -> Result<&'w [String], ImportError> {
    let mut rest = words;
    // A pasted shell prompt: `$`, `%`, `user@host:~$`.
    if let Some(first) = rest.first() {
        if first == "$" || first == "%" || (first.ends_with('$') && first.contains(['@', ':'])) {
            rest = &rest[1..];
        }
    }
    loop {
        let Some(first) = rest.first() else { return Ok(rest) };
        let is_assignment = first.split_once('=').is_some_and(|(name, _)| {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        });
        if is_assignment {
            prefix.notes.push(format!("the environment assignment `{first}` is not carried over"));
            rest = &rest[1..];
            continue;
        }
        match first.as_str() {
            "sudo" | "env" | "time" | "nohup" | "exec" | "command" | "builtin" => {
                // Their own options are skipped, with the value of those that take one (`sudo -u bench`).
                let with_value: &[&str] = match first.as_str() {
                    "sudo" => &["-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "-R"],
                    "env" => &["-u", "-C", "-S", "--unset", "--chdir", "--split-string"],
                    "time" => &["-f", "-o", "--format", "--output"],
                    "exec" => &["-a"],
                    _ => &[],
                };
                rest = &rest[1..];
                while let Some(w) = rest.first().filter(|w| w.starts_with('-') && w.len() > 1) {
                    if w == "--" {
                        rest = &rest[1..];
                        break;
                    }
                    let skip = if with_value.contains(&w.as_str()) { 2 } else { 1 };
                    rest = rest.get(skip..).unwrap_or_default();
                }
            }
            "nice" => {
                rest = &rest[1..];
                if rest.first().is_some_and(|w| w == "-n" || w == "--adjustment") {
                    rest = rest.get(2..).unwrap_or_default();
                } else if rest.first().is_some_and(|w| w.starts_with('-')) {
                    rest = &rest[1..];
                }
            }
            "taskset" => rest = taskset(&rest[1..], prefix)?,
            "numactl" => rest = numactl(&rest[1..], prefix)?,
            _ => return Ok(rest),
        }
    }
}

fn set_cpus(prefix: &mut Prefix, cpus: Vec<u32>, source: String) {
    if let Some((_, old)) = &prefix.cpus {
        prefix.notes.push(format!("`{old}` is overridden by `{source}`, which the tool runs under"));
    }
    prefix.cpus = Some((cpus, source));
}

fn taskset<'w>(args: &'w [String], prefix: &mut Prefix) -> Result<&'w [String], ImportError> {
    let bad = |flag: &str, value: &str, expected: &str| ImportError::BadPrefix {
        prefix: "taskset".into(),
        flag: flag.into(),
        value: value.into(),
        expected: expected.into(),
    };
    const LIST: &str = "a CPU list such as `16-31` or `0-7,16-23` (CPU ids up to 8191)";
    let mut list_mode = false;
    let mut i = 0;
    while let Some(w) = args.get(i) {
        if w == "--" {
            i += 1;
            break;
        }
        if !w.starts_with('-') {
            break;
        }
        match w.as_str() {
            "-c" | "--cpu-list" => list_mode = true,
            "-a" | "--all-tasks" => {}
            "-ac" | "-ca" => list_mode = true,
            "-p" | "--pid" | "-pc" | "-cp" => {
                return Err(bad(w, w, "a command to start; `-p` changes a running process, which runs no benchmark"))
            }
            w if w.starts_with("-c") && w.len() > 2 => {
                // `-c16-31`
                let spec = &w[2..];
                let cpus = values::cpu_list(spec).ok_or_else(|| bad("-c", spec, LIST))?;
                set_cpus(prefix, cpus, format!("taskset -c {spec}"));
                return Ok(args.get(i + 1..).unwrap_or_default());
            }
            w if w.starts_with("--cpu-list=") => {
                let spec = &w["--cpu-list=".len()..];
                let cpus = values::cpu_list(spec).ok_or_else(|| bad("--cpu-list", spec, LIST))?;
                set_cpus(prefix, cpus, format!("taskset -c {spec}"));
                return Ok(args.get(i + 1..).unwrap_or_default());
            }
            other => return Err(bad(other, other, "`-c LIST` or a hexadecimal mask before the command")),
        }
        i += 1;
    }
    let Some(spec) = args.get(i) else {
        return Err(bad("-c", "", "a CPU list or mask followed by the command to run"));
    };
    if list_mode {
        let cpus = values::cpu_list(spec).ok_or_else(|| bad("-c", spec, LIST))?;
        set_cpus(prefix, cpus, format!("taskset -c {spec}"));
    } else {
        let cpus = values::cpu_mask(spec).ok_or_else(|| {
            bad("mask", spec, "a hexadecimal affinity mask that selects at least one CPU, such as `0x3` or `ff00`")
        })?;
        let source = format!("taskset {spec}");
        prefix
            .notes
            .push(format!("the affinity mask `{spec}` is written as the CPU list {}", values::format_cpus(&cpus)));
        set_cpus(prefix, cpus, source);
    }
    Ok(args.get(i + 1..).unwrap_or_default())
}

fn numactl<'w>(args: &'w [String], prefix: &mut Prefix) -> Result<&'w [String], ImportError> {
    let mut i = 0;
    while let Some(w) = args.get(i) {
        if w == "--" {
            return Ok(args.get(i + 1..).unwrap_or_default());
        }
        if !w.starts_with('-') {
            return Ok(&args[i..]);
        }
        let (name, inline) = match w.split_once('=') {
            Some((n, v)) => (n, Some(v.to_owned())),
            None => (w.as_str(), None),
        };
        let takes_value = matches!(
            name,
            "-C" | "--physcpubind"
                | "-N"
                | "--cpunodebind"
                | "-m"
                | "--membind"
                | "-i"
                | "--interleave"
                | "-p"
                | "--preferred"
                | "-P"
                | "--preferred-many"
        );
        let value = if takes_value && inline.is_none() {
            i += 1;
            args.get(i).cloned()
        } else {
            inline
        };
        if name == "-C" || name == "--physcpubind" {
            let v = value.unwrap_or_default();
            let cpus = values::cpu_list(&v).ok_or_else(|| ImportError::BadPrefix {
                prefix: "numactl".into(),
                flag: name.into(),
                value: v.clone(),
                expected: "a CPU list such as `16-31` (CPU ids up to 8191)".into(),
            })?;
            set_cpus(prefix, cpus, format!("numactl {name} {v}"));
        } else {
            prefix.notes.push(format!("numactl `{w}` (a NUMA node or memory policy) is not carried over"));
        }
        i += 1;
    }
    Ok(&[])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_detection() {
        assert_eq!(import("/usr/bin/wrk http://h/").unwrap().tool, Tool::Wrk);
        assert_eq!(import("./wrk -R 10 http://h/").unwrap().tool, Tool::Wrk2);
        assert_eq!(import("wrk2 -R 10 http://h/").unwrap().tool, Tool::Wrk2);
        assert_eq!(import("ab http://h/").unwrap().tool, Tool::Ab);
        assert_eq!(import("sudo -E nice -n 5 hey http://h/").unwrap().tool, Tool::Hey);
        assert_eq!(import("user@box:~$ X=1 oha http://h/").unwrap().tool, Tool::Oha);
        assert_eq!(import("sudo -u bench env -u X time -p wrk http://h/").unwrap().tool, Tool::Wrk);
        let i = import("ulimit -n 65536 && taskset -c 2 wrk http://h/ > out.txt; echo done").unwrap();
        assert_eq!(i.tool, Tool::Wrk);
        assert!(i.notes.iter().any(|n| n.contains("`ulimit -n 65536` before wrk")), "{:?}", i.notes);
        assert!(i.notes.iter().any(|n| n.contains("`echo done` after wrk")), "{:?}", i.notes);
        assert!(i.notes.iter().any(|n| n.contains("> out.txt")), "{:?}", i.notes);
    }

    #[test]
    fn unknown_tool_and_empty() {
        let e = import("curl http://h/").unwrap_err();
        assert!(e.to_string().contains("`curl` is not a load generator"), "{e}");
        assert_eq!(import("   ").unwrap_err(), ImportError::Empty);
        let e = import("taskset -c 1").unwrap_err();
        assert!(e.to_string().contains("command"), "{e}");
    }

    #[test]
    fn taskset_forms() {
        for (line, cpus) in [
            ("taskset -c 16-31 wrk http://h/", "16-31"),
            ("taskset --cpu-list 0,2 wrk http://h/", "0,2"),
            ("taskset -c3 wrk http://h/", "3"),
            ("taskset 0x3 wrk http://h/", "0-1"),
            ("taskset -a -c 0-6:2 wrk http://h/", "0,2,4,6"),
            ("numactl --physcpubind=4-5 --membind=0 wrk http://h/", "4-5"),
        ] {
            let y = import(line).unwrap().yaml;
            assert!(y.contains(&format!("cpus: \"{cpus}\"")), "{line}\n{y}");
        }
        let e = import("taskset -c x wrk http://h/").unwrap_err();
        assert!(e.to_string().contains("taskset") && e.to_string().contains("`-c`"), "{e}");
        assert!(import("taskset -p 1 wrk http://h/").is_err());
        assert!(import("taskset 0 wrk http://h/").is_err());
    }
}
