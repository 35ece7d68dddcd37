//! Reproducing a run from its `results.json` (`loadgate repro`).
//!
//! A run embeds what rebuilding its plan needs ([`embed`]): the spec's text, the text of the data files it read
//! (up to [`MAX_EMBEDDED_FILE_BYTES`] each; larger ones and TLS files by their SHA-256 only), the names of its
//! secret variables (never their values) and the command-line options that change the plan. [`rebuild`] writes
//! the spec and its files into a directory of the caller's, validates and compiles the spec there with the run's
//! variables, and checks that the plan hash is the artifact's; when it is not, it says what differs as far as it
//! can tell. Running the rebuilt plan is the runner's business, exactly as for `loadgate run`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

use loadgate_model::spec::{FileKind, Spec};
use loadgate_model::OnInconclusive;
use loadgate_plan::ExecutionPlan;
use loadgate_results::{RunResults, SourceFile, SpecSource};
use sha2::{Digest, Sha256};

/// The largest data file whose text results.json embeds; larger ones are kept by their digest only.
pub const MAX_EMBEDDED_FILE_BYTES: u64 = 1 << 20;

/// The options of `loadgate run` that change the plan besides the spec and its variables.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunOverrides {
    /// `--repeat N`.
    pub repeat: Option<u32>,
    /// `--on-inconclusive`.
    pub on_inconclusive: Option<OnInconclusive>,
    /// `--pacing`.
    pub pacing: Option<loadgate_model::Pacing>,
    /// `--connect-rate`.
    pub connect_rate: Option<loadgate_model::ConnectRate>,
}

impl RunOverrides {
    /// Applies the options to a validated spec, before it is compiled. `--repeat N` sets `max_repeat` to `N` too
    /// when the spec left it to its default; above a `max_repeat` the spec wrote it is refused (the message says
    /// why), so that `--repeat` never turns sequential mode on, nor quietly off.
    pub fn apply(&self, spec: &mut Spec) -> Result<(), String> {
        if let Some(n) = self.repeat {
            spec.gating.set_repeat(n)?;
        }
        if let Some(on) = self.on_inconclusive {
            spec.gating.on_inconclusive = on;
        }
        if let Some(p) = self.pacing {
            spec.hardware.pacing = p;
        }
        if let Some(rate) = self.connect_rate {
            for cell in spec.scenarios.iter_mut().flat_map(|s| s.cells.iter_mut()) {
                cell.load.set_connect_rate(rate);
            }
        }
        Ok(())
    }
}

fn pacing_word(p: loadgate_model::Pacing) -> &'static str {
    match p {
        loadgate_model::Pacing::Default => "default",
        loadgate_model::Pacing::Precise => "precise",
    }
}

fn pacing_from_word(word: &str) -> Option<loadgate_model::Pacing> {
    match word {
        "default" => Some(loadgate_model::Pacing::Default),
        "precise" => Some(loadgate_model::Pacing::Precise),
        _ => None,
    }
}

fn inconclusive_word(on: OnInconclusive) -> &'static str {
    match on {
        OnInconclusive::Inconclusive => "inconclusive",
        OnInconclusive::Fail => "fail",
        OnInconclusive::Pass => "pass",
    }
}

fn inconclusive_from_word(word: &str) -> Option<OnInconclusive> {
    match word {
        "inconclusive" => Some(OnInconclusive::Inconclusive),
        "fail" => Some(OnInconclusive::Fail),
        "pass" => Some(OnInconclusive::Pass),
        _ => None,
    }
}

/// Hex SHA-256 of some bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// What results.json keeps of a spec so that its run can be reproduced: its text, the files it read, the names
/// of its secret variables and the options that changed the plan. A file that can no longer be read is kept
/// with an empty digest (a rebuild then refuses, naming it).
pub fn embed(text: &str, spec: &Spec, overrides: &RunOverrides) -> SpecSource {
    let files = spec
        .files_read
        .iter()
        .map(|f| {
            let bytes = std::fs::read(&f.path).unwrap_or_default();
            let data = f.kind == FileKind::Data;
            let text = (data && bytes.len() as u64 <= MAX_EMBEDDED_FILE_BYTES)
                .then(|| String::from_utf8(bytes.clone()).ok())
                .flatten();
            SourceFile {
                name: f.name.clone(),
                kind: if data { "data" } else { "tls" }.to_owned(),
                sha256: sha256_hex(&bytes),
                text,
            }
        })
        .collect();
    SpecSource {
        text: text.to_owned(),
        secret_vars: spec.secrets.vars().to_vec(),
        repeat: overrides.repeat,
        on_inconclusive: overrides.on_inconclusive.map(|o| inconclusive_word(o).to_owned()),
        pacing: overrides.pacing.map(|p| pacing_word(p).to_owned()),
        connect_rate: overrides.connect_rate.map(|r| r.to_string()),
        files,
    }
}

/// Why a run cannot be reproduced identically. Every case is the user's input (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum ReproError {
    #[error(
        "{file} holds no spec to rebuild (written by loadgate {version}): the run was made from command-line flags \
         with a credential header, which results.json keeps only scrubbed (run that command line again), or by a \
         loadgate from before results.json embedded its spec"
    )]
    NoSource { file: String, version: String },
    #[error("the CI run's {} secret: give {} (the artifact keeps secret names, never their values)",
        if .0.len() == 1 { format!("variable `{}` is", .0[0]) } else { format!("variables {} are", quoted(.0)) },
        .0.iter().map(|n| format!("`--secret {n}=VALUE`")).collect::<Vec<_>>().join(" "))]
    MissingSecrets(Vec<String>),
    #[error(
        "the spec read `{0}` outside its directory (`--allow-data-outside-spec-dir`); a reproduction rebuilds \
         only the files of the spec's own tree"
    )]
    OutsideTree(String),
    #[error(
        "the spec read `{name}`, which results.json keeps by its digest only ({why}), and it is not at `{}`: \
         run `loadgate repro` where the spec's directory is, as CI had it",
        path.display()
    )]
    FileMissing { name: String, why: &'static str, path: PathBuf },
    #[error(
        "`{name}` at `{}` is not the file the CI run read (SHA-256 {found}, the run's {expected}): check out \
         the commit the run was made from",
        path.display()
    )]
    FileChanged { name: String, path: PathBuf, expected: String, found: String },
    #[error("results.json is inconsistent: the embedded text of `{0}` does not match its digest")]
    Corrupt(String),
    #[error("cannot write the spec to rebuild it: {0}")]
    Io(String),
    #[error("the embedded spec no longer validates{hint}:\n{rendered}")]
    Invalid { rendered: String, hint: String },
    #[error("the plan cannot be rebuilt identically: its hash is {here}, the CI run's {ci}; {}", reasons.join("; "))]
    PlanDiffers { ci: String, here: String, reasons: Vec<String> },
}

fn quoted(names: &[String]) -> String {
    names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
}

/// What [`rebuild`] needs besides the artifact.
#[derive(Debug, Clone)]
pub struct RebuildOptions {
    /// `--secret NAME=VALUE`: the values of the run's secret variables.
    pub secrets: Vec<(String, String)>,
    /// The process environment (`{{ env.NAME }}` reads it, as in the CI run).
    pub env: BTreeMap<String, String>,
    /// An empty directory where the spec and its embedded files are written and read back.
    pub work_dir: PathBuf,
    /// Where the spec's directory is here (the artifact's spec file's directory, relative to the current
    /// one): files results.json keeps by digest only are read there.
    pub original_dir: PathBuf,
    /// This loadgate's version.
    pub loadgate_version: String,
}

/// The plan of a CI run, rebuilt identically.
#[derive(Debug)]
pub struct Rebuilt {
    pub spec: Spec,
    pub plan: ExecutionPlan,
    /// The spec file written into the work directory.
    pub spec_path: PathBuf,
    /// The options of the CI run that changed the plan, applied again.
    pub overrides: RunOverrides,
    /// The embedded spec's text, to embed in this run's results in turn.
    pub text: String,
}

/// Rebuilds the plan of the run `results` describes, or says why it cannot be rebuilt identically.
pub fn rebuild(results: &RunResults, opts: &RebuildOptions) -> Result<Rebuilt, ReproError> {
    let source = results.spec.source.as_ref().ok_or_else(|| ReproError::NoSource {
        file: "results.json".to_owned(),
        version: results.loadgate_version.clone(),
    })?;
    let given: BTreeMap<&str, &str> = opts.secrets.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    // A variable is secret when the run said so, or when its value was scrubbed (it held a secret value).
    let secret: BTreeSet<&str> = source
        .secret_vars
        .iter()
        .map(String::as_str)
        .chain(results.spec.vars.iter().filter(|(_, v)| v.as_str() == "***").map(|(k, _)| k.as_str()))
        .collect();
    let missing: Vec<String> = secret.iter().filter(|n| !given.contains_key(*n)).map(|n| (*n).to_owned()).collect();
    if !missing.is_empty() {
        return Err(ReproError::MissingSecrets(missing));
    }

    let io = |e: std::io::Error| ReproError::Io(e.to_string());
    let file_name = Path::new(&results.spec.file)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| !n.is_empty() && n != "." && n != "..")
        .unwrap_or_else(|| "spec.yaml".to_owned());
    let spec_path = opts.work_dir.join(&file_name);
    std::fs::write(&spec_path, &source.text).map_err(io)?;
    let mut largest = 0u64;
    for file in &source.files {
        let name = Path::new(&file.name);
        if name.is_absolute() || name.components().any(|c| !matches!(c, Component::Normal(_) | Component::CurDir)) {
            return Err(ReproError::OutsideTree(file.name.clone()));
        }
        let bytes = match &file.text {
            Some(text) => {
                if sha256_hex(text.as_bytes()) != file.sha256 {
                    return Err(ReproError::Corrupt(file.name.clone()));
                }
                text.clone().into_bytes()
            }
            None => {
                let path = opts.original_dir.join(name);
                let why = if file.kind == "tls" { "a TLS file is never embedded" } else { "larger than 1 MiB" };
                let bytes = std::fs::read(&path).map_err(|_| ReproError::FileMissing {
                    name: file.name.clone(),
                    why,
                    path: path.clone(),
                })?;
                let found = sha256_hex(&bytes);
                if found != file.sha256 {
                    return Err(ReproError::FileChanged {
                        name: file.name.clone(),
                        path,
                        expected: file.sha256.clone(),
                        found,
                    });
                }
                bytes
            }
        };
        largest = largest.max(bytes.len() as u64);
        let dest = opts.work_dir.join(name);
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent).map_err(io)?;
        }
        std::fs::write(&dest, bytes).map_err(io)?;
    }

    // Every variable as the run resolved it (a `--set` wins over the environment and the default, so the
    // environment here cannot change them), the secret ones from `--secret`.
    let mut sets: Vec<(String, String)> = results
        .spec
        .vars
        .iter()
        .filter(|(k, _)| !secret.contains(k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    sets.extend(opts.secrets.iter().cloned());
    let mut load = loadgate_spec::LoadOptions {
        sets,
        env: opts.env.clone(),
        base_dir: Some(opts.work_dir.clone()),
        ..loadgate_spec::LoadOptions::default()
    };
    load.max_data_file_bytes = load.max_data_file_bytes.max(largest);
    load.secret_vars = secret.iter().map(|s| (*s).to_owned()).collect();
    let version_hint = version_note(results, opts);
    let mut spec =
        loadgate_spec::load_str(&results.spec.file, &source.text, &load).map_err(|e| ReproError::Invalid {
            rendered: e.render(),
            hint: version_hint.as_ref().map(|v| format!(" ({v})")).unwrap_or_default(),
        })?;
    let overrides = RunOverrides {
        repeat: source.repeat,
        on_inconclusive: source.on_inconclusive.as_deref().and_then(inconclusive_from_word),
        pacing: source.pacing.as_deref().and_then(pacing_from_word),
        connect_rate: source.connect_rate.as_deref().and_then(|r| r.parse().ok()),
    };
    overrides.apply(&mut spec).map_err(|why| ReproError::Invalid { rendered: why, hint: String::new() })?;
    let plan = loadgate_plan::compile(&spec);
    if plan.hash != results.spec.plan_hash {
        let mut reasons: Vec<String> = version_hint.into_iter().collect();
        let mut here: BTreeMap<String, String> = plan.vars.iter().map(|(k, v)| (k.clone(), v.value.clone())).collect();
        spec.secrets.redact_vars(&mut here);
        let differ: Vec<String> = here
            .keys()
            .chain(results.spec.vars.keys())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .filter(|k| here.get(*k) != results.spec.vars.get(*k))
            .cloned()
            .collect();
        if !differ.is_empty() {
            reasons.push(format!("the variables {} differ", quoted(&differ)));
        }
        if source.text.contains("env.") {
            reasons.push(
                "the spec reads the environment (`{{ env.NAME }}`), whose values results.json never keeps: set \
                 them as the CI run had them"
                    .to_owned(),
            );
        }
        if !secret.is_empty() {
            reasons.push(format!(
                "check the values given for {}",
                quoted(&secret.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>())
            ));
        }
        if reasons.is_empty() {
            reasons
                .push("the spec and its files are the run's, so something the plan depends on differs here".to_owned());
        }
        return Err(ReproError::PlanDiffers { ci: results.spec.plan_hash.clone(), here: plan.hash.clone(), reasons });
    }
    Ok(Rebuilt { spec, plan, spec_path, overrides, text: source.text.clone() })
}

fn version_note(results: &RunResults, opts: &RebuildOptions) -> Option<String> {
    (results.loadgate_version != opts.loadgate_version).then(|| {
        format!(
            "the run was made by loadgate {}, this is loadgate {}: install that version to rebuild its plan",
            results.loadgate_version, opts.loadgate_version
        )
    })
}

/// Whether a file's text looks like a results.json rather than a spec: `loadgate run results.json` then says
/// to use `loadgate repro`.
pub fn looks_like_results(text: &str) -> bool {
    let head = text.trim_start();
    head.starts_with('{') && head.get(..4096).unwrap_or(head).contains("\"schema_version\"")
}

#[cfg(test)]
mod tests;
