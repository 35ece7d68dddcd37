//! What a job is made of, read and checked: spec files (every one loaded, so that every error is reported before
//! anything runs), a run made of command-line flags (the spec the flags make), a results.json to reproduce and
//! shard results to merge, and the values of the command line's options (`NAME=VALUE`, a fraction, an output).
//! Nothing is printed here: what the user should read comes back as messages, and a source that does not fit as a
//! [`JobError`].

use std::path::{Path, PathBuf};

use loadgate_model::output::OutputSpec;
use loadgate_model::secrets::Redactor;
use loadgate_model::Spec;
use loadgate_results::{RunResults, ShardPart};

use crate::error::JobError;

pub use loadgate_import::{import, FlagRun, ImportError, Imported};
pub use loadgate_spec::schema::spec_schema_json;
pub use loadgate_spec::LoadOptions;

/// A spec's variables and data-file limits, as given (`--set`, `--secret`, `--allow-data-outside-spec-dir`,
/// `--max-data-file-bytes`).
#[derive(Debug, Clone, Default)]
pub struct Vars {
    pub sets: Vec<(String, String)>,
    /// Like `sets`, and secret: replaced by `***` in every report and printout.
    pub secrets: Vec<(String, String)>,
    pub allow_data_outside_spec_dir: bool,
    /// Default: the loader's (16 MiB).
    pub max_data_file_bytes: Option<u64>,
}

impl Vars {
    /// The spec loader's options: the values set and secret, the process environment.
    pub fn load_options(&self) -> LoadOptions {
        let mut sets = self.sets.clone();
        sets.extend(self.secrets.iter().cloned());
        let mut opts = LoadOptions::from_process_env(sets);
        opts.secret_vars = self.secrets.iter().map(|(k, _)| k.clone()).collect();
        opts.allow_data_outside_spec_dir = self.allow_data_outside_spec_dir;
        if let Some(max) = self.max_data_file_bytes {
            opts.max_data_file_bytes = max;
        }
        opts
    }
}

/// A spec that validated, as the user gave it.
#[derive(Debug, Clone)]
pub struct SpecInput {
    pub spec: Spec,
    /// The spec file as the user named it (`(command line)` for a spec made of flags).
    pub file: String,
    /// The spec's directory: its relative paths and its git state are read there.
    pub dir: Option<PathBuf>,
    /// The spec's text, embedded in results.json for `loadgate repro` (`None`: not kept, as for a spec made of
    /// flags with a credential header: the artifact could only keep it scrubbed).
    pub text: Option<String>,
    /// The spec's YAML when it was made of command-line flags: what local shards are given to run.
    pub flags_yaml: Option<String>,
}

/// The specs of spec files: those that validated, and the warnings and errors to show, in the files' order.
#[derive(Debug, Default)]
pub struct SpecFiles {
    pub specs: Vec<SpecInput>,
    /// Each rendered with its location (secret values scrubbed), for stderr.
    pub messages: Vec<String>,
    /// At least one file did not load.
    pub invalid: bool,
}

/// Loads every spec file (all of them, so that every error is reported before anything runs). Each file is read
/// once, bounded (a regular file of at most 1 MiB: never a FIFO, a device or /proc), and that text is what is
/// checked, loaded, quoted in messages and embedded in results.json; a results.json given in a spec's place is
/// named as such.
pub fn load_files(paths: &[PathBuf], opts: &LoadOptions) -> SpecFiles {
    let mut files = SpecFiles::default();
    for path in paths {
        let file = path.display().to_string();
        let text = match loadgate_spec::read_spec_file(path) {
            Ok(text) => text,
            Err(e) => {
                let results =
                    loadgate_spec::file_head(path, 4096).is_some_and(|h| loadgate_repro::looks_like_results(&h));
                files.messages.push(if results { results_not_spec(&file) } else { e.render() });
                files.invalid = true;
                continue;
            }
        };
        if loadgate_repro::looks_like_results(&text) {
            files.messages.push(results_not_spec(&file));
            files.invalid = true;
            continue;
        }
        match loadgate_spec::load_file_text(path, &text, opts) {
            Ok(spec) => {
                files.messages.extend(spec.warnings.iter().map(|w| spec.secrets.scrub(&w.render(&file, &text))));
                let dir = path.parent().map(|p| if p.as_os_str().is_empty() { Path::new(".") } else { p });
                let dir = dir.and_then(|d| d.canonicalize().ok());
                files.specs.push(SpecInput { spec, file, dir, text: Some(text), flags_yaml: None });
            }
            Err(e) => {
                files.messages.push(e.render());
                files.invalid = true;
            }
        }
    }
    files
}

fn results_not_spec(file: &str) -> String {
    let file = loadgate_spec::diag::escape_controls(file);
    format!(
        "error: {file} is a results.json, not a spec: `loadgate repro {file}` runs the spec it embeds again and \
         compares the two runs"
    )
}

/// What `loadgate run`'s arguments name: spec files, or one URL to load with the command-line flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunSource {
    Files(Vec<PathBuf>),
    Url(String),
}

/// Whether a positional argument of `run` is a URL rather than a spec file: it starts with a scheme loadgate
/// knows, as wrk requires.
fn is_url(arg: &str) -> bool {
    let lower = arg.get(..8).unwrap_or(arg).to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://")
}

/// `NAME=VALUE` (`--set`, `--secret`): the name trimmed, the value as given.
pub fn assignment(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_owned(), v.to_owned())),
        _ => Err(format!("`{text}` is not NAME=VALUE (for example `--set connections=256`)")),
    }
}

/// `95%` or `0.95`: a fraction from 0 to 1.
pub fn fraction(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let value = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|v| v / 100.0),
        None => t.parse::<f64>(),
    }
    .map_err(|_| format!("`{text}` is not a fraction: write `5%` or `0.05`"))?;
    if (0.0..=1.0).contains(&value) {
        Ok(value)
    } else {
        Err(format!("`{text}` is not between 0% and 100%"))
    }
}

/// One `--output`: `KIND=URL`, or `none` (`None`: the spec's `outputs:` switched off).
pub fn output(text: &str) -> Result<Option<OutputSpec>, String> {
    if text.trim() == "none" {
        return Ok(None);
    }
    OutputSpec::parse_flag(text).map(Some)
}

/// An `--output-header`, `NAME: VALUE`: a header name (an HTTP token) and a value without a line break.
pub fn output_header(text: &str) -> Result<(String, String), String> {
    let (name, value) = text
        .split_once(':')
        .ok_or_else(|| "not `NAME: VALUE` (for example `--output-header 'X-Scope-OrgID: perf'`)".to_owned())?;
    let name = name.trim();
    let token = !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
    if !token {
        return Err(format!("`{name}` is not a header name (letters, digits and `-`)"));
    }
    if value.contains(['\r', '\n']) {
        return Err("a header value cannot contain a line break".to_owned());
    }
    Ok((name.to_owned(), value.trim().to_owned()))
}

/// The options of a run without a spec given in `flags` (they need a URL), as the command line names them, in
/// its order: `http2` says the protocol was given as `--http2`, `print_spec` that `--print-spec` was given.
pub fn flags_given(flags: &FlagRun, http2: bool, print_spec: bool) -> Vec<&'static str> {
    let f = flags;
    let given = [
        (f.connections.is_some(), "-c"),
        (f.duration.is_some(), "-d"),
        (f.requests.is_some(), "-n"),
        (f.threads.is_some(), "-t"),
        (f.rate.is_some(), "-R"),
        (f.timeout.is_some(), "--timeout"),
        (!f.headers.is_empty(), "-H"),
        (f.method.is_some(), "-m"),
        (f.body.is_some(), "--body"),
        (f.pipeline.is_some(), "--pipeline"),
        (f.pipeline_reads.is_some(), "--pipeline-reads"),
        (f.no_keepalive, "--no-keepalive"),
        (f.insecure, "-k"),
        (http2, "--http2"),
        (f.protocol.is_some() && !http2, "--protocol"),
        (f.streams.is_some(), "--streams"),
        (!f.slos.is_empty(), "--slo"),
        (print_spec, "--print-spec"),
    ];
    given.into_iter().filter_map(|(set, name)| set.then_some(name)).collect()
}

/// `loadgate import`: recorded traffic (`log FILE ...`, `har FILE ...`, read by [`crate::traffic::import`]) or a
/// load tool's command line (its words joined with spaces), as a spec's YAML and the notes to show with it.
pub fn import_spec(words: &[String]) -> Result<(String, Vec<String>), JobError> {
    if let Some(made) = crate::traffic::import(words)? {
        return Ok((made.yaml, made.notes));
    }
    let imported = import(&words.join(" ")).map_err(|e| JobError::Invalid(e.to_string()))?;
    Ok((imported.yaml, imported.notes))
}

/// The source of `loadgate run`: its positional `args` (spec files, or one URL, wrk's order) and `--url`, checked.
/// `flags_given` names the run-from-flags options given (`-c`, `-d`, ...), which need a URL.
pub fn run_source(args: &[String], url: Option<&str>, flags_given: &[&str]) -> Result<RunSource, JobError> {
    let invalid = |m: &str| Err(JobError::Invalid(m.to_owned()));
    let urls: Vec<&String> = args.iter().filter(|a| is_url(a)).collect();
    match (url, urls.as_slice()) {
        (Some(u), []) if args.is_empty() => return Ok(RunSource::Url(u.to_owned())),
        (None, [u]) if args.len() == 1 => return Ok(RunSource::Url((*u).clone())),
        (None, []) => {}
        (None, [_]) | (Some(_), []) => {
            return invalid(
                "give either spec files or one URL, not both: a URL runs one scenario from the command-line flags",
            )
        }
        (None, _) => return invalid("give one URL: a spec-less run loads one URL (write a spec for several)"),
        (Some(_), _) => return invalid("give the URL once: as `--url URL` or as the last argument, not both"),
    }
    if args.is_empty() {
        return invalid("give a spec file (`loadgate run specs/quickstart.yaml`) or a URL (`loadgate run -c 64 -d 10s http://127.0.0.1:8080/`)");
    }
    if !flags_given.is_empty() {
        let (verb, need) = if flags_given.len() == 1 { ("describes", "needs") } else { ("describe", "need") };
        return Err(JobError::Invalid(format!(
            "{} {verb} a run without a spec and {need} a URL (`loadgate run -c 64 -d 10s http://127.0.0.1:8080/`); a spec sets these in its `load:` and `request:`",
            flags_given.join(", ")
        )));
    }
    let paths: Vec<PathBuf> = args.iter().map(PathBuf::from).collect();
    for (arg, path) in args.iter().zip(&paths) {
        if !path.exists() && !arg.contains('/') && arg.contains(':') {
            return Err(JobError::Invalid(format!(
                "`{arg}` is neither a spec file nor a URL; a URL starts with its scheme: `http://{arg}`"
            )));
        }
    }
    Ok(RunSource::Files(paths))
}

/// What `loadgate run`'s arguments make: spec files to load, the spec of `--print-spec` to print, or a run made of
/// command-line flags.
#[derive(Debug)]
pub enum RunSpecs {
    Files(Vec<PathBuf>),
    /// The spec `--print-spec` prints, with a note per credential header ([`printable_flag_spec`]).
    Print {
        yaml: String,
        notes: Vec<String>,
    },
    Flags(Box<FlagSpec>),
}

/// The specs of `loadgate run`: its positional `args` ([`run_source`]: spec files, or one URL, wrk's order) and
/// the run-from-flags options in `flags` (with `--url`; `http2`, `print_spec`: as [`flags_given`] takes them).
pub fn run_specs(
    args: &[String],
    flags: FlagRun,
    http2: bool,
    print_spec: bool,
    vars: &Vars,
) -> Result<RunSpecs, JobError> {
    let given = flags_given(&flags, http2, print_spec);
    let url = match run_source(args, flags.url.as_deref(), &given)? {
        RunSource::Files(paths) => return Ok(RunSpecs::Files(paths)),
        RunSource::Url(url) => url,
    };
    let flags = FlagRun { url: Some(url), ..flags };
    if print_spec {
        let (yaml, notes) = printable_flag_spec(&flags)?;
        return Ok(RunSpecs::Print { yaml, notes });
    }
    Ok(RunSpecs::Flags(Box::new(flag_spec(&flags, &vars.load_options())?)))
}

/// A run made of command-line flags: its spec, the URL as shown (no credential) and the spec's warnings.
#[derive(Debug)]
pub struct FlagSpec {
    pub input: SpecInput,
    pub url: String,
    /// Located in the spec the flags made (a flag with no effect, such as `--streams` without `--http2`).
    pub warnings: Vec<String>,
}

/// The spec `flags` make (they hold every option that changes the plan, so that `--print-spec` prints the
/// equivalent spec), loaded with `opts`. The credential headers (given with -H, or made of the URL's
/// `user:password@`) are secret in the spec's errors, which quote its lines, as everywhere else.
pub fn flag_spec(flags: &FlagRun, opts: &LoadOptions) -> Result<FlagSpec, JobError> {
    let yaml = loadgate_import::spec_from_flags(flags).map_err(JobError::Invalid)?;
    let credentials = Redactor::new(loadgate_import::flag_credentials(flags), []);
    let file = "(command line)".to_owned();
    let spec = loadgate_spec::load_str(&file, &yaml, opts)
        .map_err(|e| JobError::Diagnostic(credentials.scrub(&e.render())))?;
    let url = spec.secrets.scrub(&loadgate_import::without_userinfo(flags.url.as_deref().unwrap_or_default()));
    let warnings = spec.warnings.iter().map(|w| spec.secrets.scrub(&w.render(&file, &yaml))).collect();
    // Embedded for `loadgate repro` unless it holds a credential: the artifact would keep it scrubbed, which
    // rebuilds another plan (such a run is refused by `repro` with "run that command line again").
    let text = (spec.secrets.scrub(&yaml) == yaml).then(|| yaml.clone());
    let input = SpecInput { spec, file, dir: std::env::current_dir().ok(), text, flags_yaml: Some(yaml) };
    Ok(FlagSpec { input, url, warnings })
}

/// `--print-spec`: the spec `flags` make, to keep (its credentials are references to the environment, not values,
/// nor `***`, which the printed spec would send as it is), with a note per credential header.
pub fn printable_flag_spec(flags: &FlagRun) -> Result<(String, Vec<String>), JobError> {
    loadgate_import::spec_from_flags(flags).map_err(JobError::Invalid)?;
    let credentials = Redactor::new(loadgate_import::flag_credentials(flags), []);
    let (printable, referenced) = loadgate_import::printable_spec_from_flags(flags).map_err(JobError::Invalid)?;
    let notes = referenced.iter().map(|h| loadgate_import::credential_note(h)).collect();
    Ok((credentials.scrub(&printable), notes))
}

/// The largest results.json read: the histograms of a few hundred instances, with room to spare.
const MAX_RESULTS_BYTES: u64 = 256 << 20;

/// A results.json (of `repro`, `--baseline`, `compare`, `history add`), read bounded in size and checked, the
/// file named in every error.
pub fn read_results(path: &Path) -> Result<RunResults, JobError> {
    use std::io::Read as _;
    let name = path.display();
    let too_big =
        || JobError::Invalid(format!("{name} is more than the {MAX_RESULTS_BYTES} bytes a results.json may be"));
    let file = std::fs::File::open(path).map_err(|e| JobError::Invalid(format!("cannot read {name}: {e}")))?;
    if file.metadata().is_ok_and(|m| m.is_dir()) {
        return Err(JobError::Invalid(format!("{name} is a directory, not a results.json")));
    }
    if file.metadata().is_ok_and(|m| m.is_file() && m.len() > MAX_RESULTS_BYTES) {
        return Err(too_big());
    }
    // A pipe (`<(curl ...)`) is read too, bounded the same.
    let mut text = String::new();
    file.take(MAX_RESULTS_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| JobError::Invalid(format!("cannot read {name}: {e}")))?;
    if text.len() as u64 > MAX_RESULTS_BYTES {
        return Err(too_big());
    }
    loadgate_results::from_json(&text).map_err(|e| JobError::Invalid(format!("{name}: {e}")))
}

/// The shard results in `files` (result files, or any text holding framed shard results, such as `kubectl
/// logs`; `-` is standard input).
pub fn read_shard_results(files: &[PathBuf]) -> Result<Vec<ShardPart>, JobError> {
    let mut parts = Vec::new();
    for file in files {
        let (name, text) = if file.as_os_str() == "-" {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin().lock(), &mut text)
                .map_err(|e| JobError::Invalid(format!("cannot read standard input: {e}")))?;
            ("standard input".to_owned(), text)
        } else {
            let name = file.display().to_string();
            let text =
                std::fs::read_to_string(file).map_err(|e| JobError::Invalid(format!("cannot read {name}: {e}")))?;
            (name, text)
        };
        let found =
            loadgate_results::shards::read_shards(&name, &text).map_err(|e| JobError::Invalid(e.to_string()))?;
        parts.extend(found);
    }
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_url_as_the_one_argument_or_as_url_is_a_run_from_flags() {
        let url = RunSource::Url("http://h/".to_owned());
        assert_eq!(run_source(&strings(&["http://h/"]), None, &["-c"]).expect("url"), url);
        assert_eq!(run_source(&[], Some("http://h/"), &[]).expect("--url"), url);
    }

    #[test]
    fn spec_files_are_files_and_refuse_the_flags_of_a_run_without_a_spec() {
        let files = run_source(&strings(&["a.yaml", "b.yaml"]), None, &[]).expect("files");
        assert_eq!(files, RunSource::Files(vec![PathBuf::from("a.yaml"), PathBuf::from("b.yaml")]));
        let e = run_source(&strings(&["a.yaml"]), None, &["-c", "-d"]).expect_err("flags");
        assert!(e.to_string().starts_with("-c, -d describe a run without a spec and need a URL"), "{e}");
    }

    #[test]
    fn a_url_and_files_together_nothing_at_all_or_a_url_without_scheme_are_refused() {
        assert!(run_source(&strings(&["a.yaml", "http://h/"]), None, &[]).is_err());
        assert!(run_source(&strings(&["http://a/", "http://b/"]), None, &[]).is_err());
        assert!(run_source(&strings(&["http://a/"]), Some("http://a/"), &[]).is_err());
        assert!(run_source(&[], None, &[]).expect_err("nothing").to_string().starts_with("give a spec file"));
        let e = run_source(&strings(&["localhost:8080"]), None, &[]).expect_err("no scheme");
        assert!(e.to_string().contains("`http://localhost:8080`"), "{e}");
    }

    #[test]
    fn the_flags_of_a_run_without_a_spec_are_named_as_given_in_the_command_lines_order() {
        let flags = FlagRun {
            connections: Some(8),
            protocol: Some("http2".to_owned()),
            slos: vec!["p99 < 5ms".to_owned()],
            pacing: Some("precise".to_owned()),
            ..FlagRun::default()
        };
        assert_eq!(flags_given(&flags, true, false), ["-c", "--http2", "--slo"]);
        assert_eq!(flags_given(&flags, false, true), ["-c", "--protocol", "--slo", "--print-spec"]);
        assert!(flags_given(&FlagRun::default(), false, false).is_empty());
    }

    #[test]
    fn fractions_are_percentages_or_plain_numbers_from_zero_to_one() {
        assert_eq!(fraction("95%"), Ok(0.95));
        assert_eq!(fraction(" 0.02 "), Ok(0.02));
        assert!(fraction("120%").expect_err("above 1").contains("between 0% and 100%"));
        assert!(fraction("five").expect_err("a word").contains("is not a fraction"));
    }

    #[test]
    fn an_output_header_needs_a_token_for_its_name_and_one_line_for_its_value() {
        assert_eq!(output_header("X-Scope-OrgID: perf"), Ok(("X-Scope-OrgID".to_owned(), "perf".to_owned())));
        assert!(output_header("no colon").is_err());
        assert!(output_header("Bad Name: v").expect_err("space").contains("is not a header name"));
        assert!(output_header("X: a\nb").expect_err("line break").contains("line break"));
        assert_eq!(assignment(" n =v=1"), Ok(("n".to_owned(), "v=1".to_owned())));
        assert!(assignment("=v").is_err());
    }

    #[test]
    fn a_results_json_in_a_specs_place_is_named_as_such() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("results.json");
        std::fs::write(&path, r#"{"schema_version": 1, "loadgate_version": "0", "spec": {}, "outcome": {}}"#)
            .expect("write");
        let files = load_files(std::slice::from_ref(&path), &LoadOptions::default());
        assert!(files.invalid && files.specs.is_empty());
        assert!(files.messages[0].contains("is a results.json, not a spec"), "{:?}", files.messages);
    }
}
