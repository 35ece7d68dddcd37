//! `loadgate k8s`: the Kubernetes renderer's request made from a spec file as a job is made (read once, loaded,
//! compiled, its files embedded), rendered by [`loadgate_k8s::render`].

use std::path::Path;

use crate::error::JobError;

/// What `loadgate k8s` is given besides the spec file.
#[derive(Debug, Clone)]
pub struct K8sOptions {
    /// How many shards (pods) run the plan.
    pub shards: u32,
    pub image: String,
    pub name: Option<String>,
    pub namespace: Option<String>,
    /// `--set NAME=VALUE`: given to the spec here and to every pod.
    pub sets: Vec<(String, String)>,
    /// A Secret whose keys are the spec's secret variables.
    pub secret_from: Option<String>,
    /// The memory of each pod (`1Gi`).
    pub memory: String,
}

/// The manifests (ConfigMap, Service, Indexed Job) of a sharded run of the spec at `spec_path`.
pub fn manifests(spec_path: &Path, options: &K8sOptions) -> Result<String, JobError> {
    let opts = loadgate_spec::LoadOptions::from_process_env(options.sets.clone());
    // Read once, bounded, as spec files are read: the manifests embed the text that was validated.
    let text = loadgate_spec::read_spec_file(spec_path).map_err(|e| JobError::Diagnostic(e.render()))?;
    let spec = loadgate_spec::load_file_text(spec_path, &text, &opts).map_err(|e| JobError::Diagnostic(e.render()))?;
    let plan = crate::job::compile(&spec, None)?;
    let source = loadgate_repro::embed(&text, &spec, &loadgate_repro::RunOverrides::default());
    let file_name = spec_path.file_name().map_or_else(|| "spec.yaml".to_owned(), |n| n.to_string_lossy().into_owned());
    // `target.base_url` as written (`{{ url }}`), to name the variable to `--set` when the target is built in.
    let raw = loadgate_spec::yaml_to_json(&text).ok();
    let base_url_template = raw.as_ref().and_then(|v| v["target"]["base_url"].as_str());
    let request = loadgate_k8s::K8sRequest {
        plan: &plan,
        spec_file_name: &file_name,
        spec_text: &text,
        files: source.files.into_iter().map(|f| (f.name, f.text)).collect(),
        shards: options.shards,
        image: &options.image,
        name: options.name.as_deref(),
        namespace: options.namespace.as_deref(),
        sets: &options.sets,
        secret_vars: spec.secrets.vars(),
        secret_from: options.secret_from.as_deref(),
        memory: &options.memory,
        base_url_template,
    };
    loadgate_k8s::render(&request).map_err(|e| JobError::Invalid(e.to_string()))
}
