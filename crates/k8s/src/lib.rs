//! Kubernetes manifests for a sharded run (`loadgate k8s`), a pure function of the plan and the spec's files.
//!
//! Three documents: a ConfigMap holding the spec and its data files, a headless Service through which the
//! shards find shard 1's barrier, and an Indexed Job of N pods, each running slice `JOB_COMPLETION_INDEX + 1`
//! of N of the plan and printing its shard result framed on stdout (`--out -`), collected with `kubectl logs`
//! and merged by `loadgate merge`. A load pod never runs load twice: `backoffLimitPerIndex: 0`,
//! `restartPolicy: Never` and a pod failure policy that fails the index on any failure or disruption.
//!
//! The pods are what a namespace under Pod Security's "restricted" profile admits: non-root as the image's user
//! ([`RUN_AS_USER`]), no privilege escalation, every capability dropped, the runtime's seccomp profile, a
//! read-only root filesystem with an `emptyDir` at [`SCRATCH_DIR`] for what a run writes, no service account
//! token; the finished Job is removed after [`TTL_SECONDS_AFTER_FINISHED`].
//!
//! Every string the user controls (the image, variables, names) is written as a double-quoted YAML scalar
//! (JSON's escaping, which YAML reads the same), so no input can add a key or a document; names are checked
//! or derived as DNS labels.

use std::fmt::Write as _;

use loadgate_model::yaml::quote;
use loadgate_plan::{ExecutionPlan, TargetPlan};
use serde_json::{json, Value};

/// The port shard 1's barrier listens on (the shard contract's default).
pub const BARRIER_PORT: u16 = 7878;

/// The most shards a Job may have here (Kubernetes allows 100,000 completions with `backoffLimitPerIndex`).
pub const MAX_SHARDS: u32 = 10_000;

/// The user and group the pods run as: the image's non-root user (`Containerfile`: `USER 65532:65532`, the
/// `nonroot` of distroless images), so that Pod Security's "restricted" profile admits the pods.
pub const RUN_AS_USER: u64 = 65532;

/// The directory the pods may write (an `emptyDir`; the root filesystem is read-only): `--out -` works in a
/// temporary directory there.
pub const SCRATCH_DIR: &str = "/tmp";

/// How long a finished Job and its pods (and so their logs) are kept before Kubernetes deletes them: a day, time
/// enough to collect the logs and merge them (`kubectl delete` after the merge is still the tidy end).
pub const TTL_SECONDS_AFTER_FINISHED: u64 = 86_400;

/// The longest name a Job may have so that its pods' host names (`<job>-<index>`) stay DNS labels.
pub const MAX_NAME_LEN: usize = 52;

/// What to render besides the plan.
#[derive(Debug, Clone)]
pub struct K8sRequest<'a> {
    /// The compiled plan (its name, pinning, target, expected duration).
    pub plan: &'a ExecutionPlan,
    /// The spec file's name (a ConfigMap key and the file the pods run).
    pub spec_file_name: &'a str,
    /// The spec's text.
    pub spec_text: &'a str,
    /// The files the spec read, as `(name relative to the spec, text)`; `None` text: a file that cannot travel
    /// in a ConfigMap (a TLS file, a data file over 1 MiB).
    pub files: Vec<(String, Option<String>)>,
    /// N.
    pub shards: u32,
    /// The container image with loadgate on its PATH.
    pub image: &'a str,
    /// The name of the Job, Service and ConfigMap (default: derived from the spec's name).
    pub name: Option<&'a str>,
    pub namespace: Option<&'a str>,
    /// `--set NAME=VALUE` given to `loadgate k8s`, passed to every pod.
    pub sets: &'a [(String, String)],
    /// The variables whose values are secret (they must come from `secret_from`, never from `--set`).
    pub secret_vars: &'a [String],
    /// A Kubernetes Secret whose keys become the pods' environment (`LOADGATE_VAR_<NAME>`, `{{ env.NAME }}`).
    pub secret_from: Option<&'a str>,
    /// Memory per pod (requests = limits), a Kubernetes quantity: `1Gi`.
    pub memory: &'a str,
    /// The spec's `target.base_url` as written, before templating (`{{ url }}`), to name the variable that
    /// points the shards at a server when the target cannot run on Kubernetes.
    pub base_url_template: Option<&'a str>,
}

/// Why manifests cannot be rendered. All are the user's input (exit 2).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum K8sError {
    #[error("--shards {0}: a sharded run has 1 to {MAX_SHARDS} shards")]
    Shards(u32),
    #[error(
        "`{0}` is not a valid name: a DNS label of lowercase letters, digits and `-`, starting with a letter, \
         ending with a letter or digit, at most {1} characters"
    )]
    Name(String, usize),
    /// The plan cannot be sliced (a planned gate, shares that do not split over the shards).
    #[error("{0}")]
    Slice(#[from] loadgate_plan::ShardError),
    #[error("the image is empty: give the image that has loadgate on its PATH (`--image registry/loadgate:0.1.0`)")]
    Image,
    #[error("`{0}` is not a Kubernetes memory quantity (`512Mi`, `2Gi`)")]
    Memory(String),
    #[error("the target is {0}: on Kubernetes the shards load a server that is already running; {1}")]
    Target(&'static str, String),
    #[error(
        "`{0}` is a secret variable: its value must not be written into a manifest; put `LOADGATE_VAR_{0}` in a \
         Kubernetes Secret and name it with `--secret-from SECRET`"
    )]
    SecretSet(String),
    #[error(
        "the spec reads `{0}`, which cannot travel in a ConfigMap (a TLS file, or a data file over 1 MiB): \
         bake it into the image beside the spec, or mount it yourself"
    )]
    File(String),
    #[error("the spec and its files are {0} bytes, more than the 1 MiB a ConfigMap holds")]
    TooLarge(usize),
    #[error("`{0}` is outside the spec's directory: the pods read data files from the spec's directory only")]
    OutsideTree(String),
}

/// Whether `s` is an RFC 1035 label of at most `max` characters (what Service and Job names need).
pub fn is_dns_label(s: &str, max: usize) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= max
        && b[0].is_ascii_lowercase()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
}

/// A DNS label derived from a spec's name: lowercase, every run of other characters one `-`, starting with a
/// letter (`lg-` before a digit), at most [`MAX_NAME_LEN`] characters.
pub fn dns_label(spec_name: &str) -> String {
    let mut out = String::new();
    for c in spec_name.chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert_str(0, "lg-");
    }
    out.truncate(MAX_NAME_LEN);
    let out = out.trim_end_matches('-').to_owned();
    if out.is_empty() {
        "loadgate".to_owned()
    } else {
        out
    }
}

/// A Kubernetes quantity of memory: digits with an optional binary or decimal suffix.
fn is_memory_quantity(q: &str) -> bool {
    let digits = q.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &q[digits.len()..];
    !digits.is_empty()
        && digits.bytes().all(|c| c.is_ascii_digit())
        && ["", "k", "M", "G", "T", "Ki", "Mi", "Gi", "Ti"].contains(&suffix)
}

/// A ConfigMap key for a file name: `[-._a-zA-Z0-9]+`.
fn config_key(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_') { c } else { '_' }).collect()
}

/// Whole CPUs per pod: the generator's pinned CPUs, else its worker threads, at least one.
pub fn cpus_per_pod(plan: &ExecutionPlan) -> usize {
    plan.hardware.generator_cpus.as_ref().map_or(plan.hardware.workers.len(), |c| c.len()).max(1)
}

/// The spec variable `target.base_url` is made of (`{{ url }}`, `{{ url }}/api`), when it names one the plan has.
pub fn base_url_variable<'t>(template: &'t str, plan: &ExecutionPlan) -> Option<&'t str> {
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        let end = after.find("}}")?;
        let name = after[..end].trim();
        if plan.vars.contains_key(name) {
            return Some(name);
        }
        rest = &after[end + 2..];
    }
    None
}

/// How to point a spec whose target is the built-in server at a running one: `--set` of the variable its
/// `target.base_url` is made of, or else the key to set.
fn point_at_a_server(req: &K8sRequest<'_>) -> String {
    match req.base_url_template.and_then(|t| base_url_variable(t, req.plan)) {
        Some(var) => format!(
            "give its URL with `--set {var}=http://my-service:8080` (the spec's `target.base_url` is `{}`)",
            req.base_url_template.unwrap_or_default()
        ),
        None => "set the spec's `target.base_url` to its URL (`base_url: http://my-service:8080`, or \
                 `base_url: \"{{ url }}\"` with `url` under `vars`, then `--set url=http://my-service:8080`)"
            .to_owned(),
    }
}

/// The ConfigMap, the headless Service and the Indexed Job, as one multi-document YAML text.
pub fn render(req: &K8sRequest<'_>) -> Result<String, K8sError> {
    if req.shards == 0 || req.shards > MAX_SHARDS {
        return Err(K8sError::Shards(req.shards));
    }
    // What each pod would refuse at its start is refused here.
    loadgate_plan::shard(req.plan, loadgate_plan::Slice::new(1, req.shards)?)?;
    let name = match req.name {
        Some(n) if is_dns_label(n, MAX_NAME_LEN) => n.to_owned(),
        Some(n) => return Err(K8sError::Name(n.to_owned(), MAX_NAME_LEN)),
        None => dns_label(&req.plan.name),
    };
    if let Some(ns) = req.namespace.filter(|ns| !is_dns_label(ns, 63)) {
        return Err(K8sError::Name(ns.to_owned(), 63));
    }
    if let Some(s) = req.secret_from.filter(|s| !is_dns_label(s, 63)) {
        return Err(K8sError::Name(s.to_owned(), 63));
    }
    if req.image.trim().is_empty() {
        return Err(K8sError::Image);
    }
    if !is_memory_quantity(req.memory) {
        return Err(K8sError::Memory(req.memory.to_owned()));
    }
    match &req.plan.target {
        TargetPlan::Url { .. } => {}
        TargetPlan::Command { .. } => {
            return Err(K8sError::Target(
                "a command loadgate starts",
                "remove `target.start` from the spec and point `target.base_url` at the server".to_owned(),
            ))
        }
        TargetPlan::Builtin { .. } => return Err(K8sError::Target("the built-in server", point_at_a_server(req))),
    }
    if let Some((k, _)) = req.sets.iter().find(|(k, _)| req.secret_vars.contains(k)) {
        return Err(K8sError::SecretSet(k.clone()));
    }

    // The ConfigMap: the spec under its file name, each data file under a key of its own, mounted at its path.
    let spec_key = config_key(req.spec_file_name);
    let mut data = serde_json::Map::new();
    let mut items = vec![json!({ "key": spec_key, "path": spec_key })];
    data.insert(spec_key.clone(), Value::String(req.spec_text.to_owned()));
    for (i, (file, text)) in req.files.iter().enumerate() {
        let path = std::path::Path::new(file);
        if path.is_absolute()
            || path.components().any(|c| !matches!(c, std::path::Component::Normal(_) | std::path::Component::CurDir))
        {
            return Err(K8sError::OutsideTree(file.clone()));
        }
        let text = text.as_ref().ok_or_else(|| K8sError::File(file.clone()))?;
        let key = format!("file-{}-{}", i + 1, config_key(path.file_name().map_or("", |n| n.to_str().unwrap_or(""))));
        items.push(json!({ "key": key, "path": file }));
        data.insert(key, Value::String(text.clone()));
    }
    let size: usize = data.iter().map(|(k, v)| k.len() + v.as_str().map_or(0, str::len)).sum();
    if size > 1_000_000 {
        return Err(K8sError::TooLarge(size));
    }

    let labels = json!({ "app.kubernetes.io/name": "loadgate", "app.kubernetes.io/instance": name });
    let metadata = |kind_labels: &Value| {
        let mut m = json!({ "name": name, "labels": kind_labels });
        if let Some(ns) = req.namespace {
            m["namespace"] = json!(ns);
        }
        m
    };
    let config_map = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(&labels),
        "data": Value::Object(data),
    });
    let service = json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(&labels),
        "spec": {
            "clusterIP": "None",
            // Shard 1's name must resolve before it is ready (a load pod has no readiness probe to pass).
            "publishNotReadyAddresses": true,
            "selector": { "batch.kubernetes.io/job-name": name },
            "ports": [{ "name": "barrier", "port": BARRIER_PORT, "targetPort": BARRIER_PORT, "protocol": "TCP" }],
        },
    });

    // The CPUs a static CPU manager gives the pod are not the ones the spec names: the run maps the spec's
    // pinned generator CPUs onto them (the target is a `base_url` server, never pinned by the pods).
    let command = loadgate_plan::ShardCommand {
        spec: format!("/spec/{spec_key}"),
        place: loadgate_plan::ShardPlace::Indexed(req.shards),
        run_id: None,
        barrier: Some(format!("{name}-0.{name}:{BARRIER_PORT}")),
        out: "-".to_owned(),
        cpus: None,
        quiet: false,
        from_flags: false,
        options: loadgate_plan::ShardOptions {
            sets: req.sets.to_vec(),
            pin_within_affinity: req.plan.hardware.generator_cpus.is_some(),
            ..loadgate_plan::ShardOptions::default()
        },
    };
    let args = command.args();
    let cpu = cpus_per_pod(req.plan).to_string();
    let resources = json!({ "cpu": cpu, "memory": req.memory });
    let mut container = json!({
        "name": "loadgate",
        "image": req.image,
        "command": ["loadgate"],
        "args": args,
        "env": [{
            "name": "LOADGATE_RUN_ID",
            "valueFrom": { "fieldRef": { "fieldPath": "metadata.labels['batch.kubernetes.io/controller-uid']" } },
        }],
        "ports": [{ "name": "barrier", "containerPort": BARRIER_PORT, "protocol": "TCP" }],
        // Guaranteed QoS with whole CPUs: a static CPU manager gives the pod exclusive cores.
        "resources": { "requests": resources, "limits": resources },
        "volumeMounts": [
            { "name": "spec", "mountPath": "/spec", "readOnly": true },
            { "name": "scratch", "mountPath": SCRATCH_DIR },
        ],
        // Pod Security "restricted": no privilege, no capability, the runtime's seccomp profile, a read-only root
        // filesystem (the pod writes only to its emptyDir).
        "securityContext": {
            "allowPrivilegeEscalation": false,
            "readOnlyRootFilesystem": true,
            "runAsNonRoot": true,
            "capabilities": { "drop": ["ALL"] },
        },
    });
    if let Some(secret) = req.secret_from {
        container["envFrom"] = json!([{ "secretRef": { "name": secret } }]);
    }
    let mut job_spec = json!({
        "completionMode": "Indexed",
        "completions": req.shards,
        "parallelism": req.shards,
        // A load pod never runs load twice: no retry of an index, whatever failed.
        "backoffLimitPerIndex": 0,
        // The finished Job and its pods' logs stay a day for `kubectl logs`, then Kubernetes removes them.
        "ttlSecondsAfterFinished": TTL_SECONDS_AFTER_FINISHED,
        "podFailurePolicy": {
            "rules": [
                { "action": "FailIndex", "onExitCodes": { "containerName": "loadgate", "operator": "NotIn", "values": [0] } },
                { "action": "FailIndex", "onPodConditions": [{ "type": "DisruptionTarget", "status": "True" }] },
            ],
        },
        "template": {
            "metadata": { "labels": labels },
            "spec": {
                "subdomain": name,
                "restartPolicy": "Never",
                // A load pod talks to its target and its barrier, never to the API server.
                "automountServiceAccountToken": false,
                "enableServiceLinks": false,
                "securityContext": {
                    "runAsNonRoot": true,
                    "runAsUser": RUN_AS_USER,
                    "runAsGroup": RUN_AS_USER,
                    "fsGroup": RUN_AS_USER,
                    "seccompProfile": { "type": "RuntimeDefault" },
                },
                "containers": [container],
                "volumes": [
                    { "name": "spec", "configMap": { "name": name, "items": items } },
                    { "name": "scratch", "emptyDir": { "sizeLimit": "256Mi" } },
                ],
            },
        },
    });
    if let Some(wall) = req.plan.wall_time() {
        // The load (with every round sequential gating may add), the barrier's wait (5 minutes at most) and as
        // long again for start and reports.
        let deadline = (wall.most.as_secs_f64().ceil() as u64).saturating_mul(2).saturating_add(600);
        job_spec["activeDeadlineSeconds"] = json!(deadline);
    }
    let job = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata(&labels),
        "spec": job_spec,
    });

    let mut out = String::new();
    let _ = writeln!(
        out,
        "# loadgate k8s: {} in {} shards (plan {}). Apply, wait, collect and merge:\n\
         #   kubectl apply -f manifests.yaml\n\
         #   kubectl wait --for=condition=complete --timeout=1h job/{name}\n\
         #   kubectl logs -l batch.kubernetes.io/job-name={name} --tail=-1 --max-log-requests={} > shards.log\n\
         #   loadgate merge shards.log",
        yaml_comment(&req.plan.name),
        req.shards,
        req.plan.hash,
        req.shards.max(5),
    );
    for (i, doc) in [config_map, service, job].iter().enumerate() {
        if i > 0 {
            out.push_str("---\n");
        }
        emit(&mut out, doc, 0);
    }
    Ok(out)
}

/// Text safe in a `#` comment line.
fn yaml_comment(s: &str) -> String {
    s.chars().map(|c| if c.is_control() { ' ' } else { c }).collect()
}

/// Writes a JSON value as block-style YAML: mappings and sequences as blocks, every string double-quoted (or a
/// literal block for readable multi-line text), numbers and booleans plain.
fn emit(out: &mut String, v: &Value, indent: usize) {
    let pad = " ".repeat(indent);
    match v {
        Value::Object(map) => {
            for (k, v) in map {
                let _ = write!(out, "{pad}{}:", key(k));
                value_after_key(out, v, indent);
            }
        }
        Value::Array(items) => {
            for item in items {
                let _ = write!(out, "{pad}-");
                match item {
                    Value::Object(m) if !m.is_empty() => {
                        // The first key on the dash's line, the others under it.
                        let mut first = true;
                        for (k, v) in m {
                            if first {
                                let _ = write!(out, " {}:", key(k));
                                first = false;
                            } else {
                                let _ = write!(out, "{pad}  {}:", key(k));
                            }
                            value_after_key(out, v, indent + 2);
                        }
                    }
                    _ => value_after_key(out, item, indent),
                }
            }
        }
        _ => {
            let _ = writeln!(out, "{pad}{}", scalar(v));
        }
    }
}

fn value_after_key(out: &mut String, v: &Value, indent: usize) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            out.push('\n');
            emit(out, v, indent + 2);
        }
        Value::Array(a) if !a.is_empty() => {
            out.push('\n');
            emit(out, v, indent + 2);
        }
        Value::String(s) if literal_block_ok(s) => {
            let chomp = if s.ends_with("\n\n") {
                "+"
            } else if s.ends_with('\n') {
                ""
            } else {
                "-"
            };
            let _ = writeln!(out, " |{}{chomp}", 2);
            let pad = " ".repeat(indent + 2);
            let body = s.strip_suffix('\n').unwrap_or(s);
            for line in body.split('\n') {
                if line.is_empty() {
                    out.push('\n');
                } else {
                    let _ = writeln!(out, "{pad}{line}");
                }
            }
        }
        _ => {
            let _ = writeln!(out, " {}", scalar(v));
        }
    }
}

/// Multi-line text that a literal block carries unchanged: printable characters, tabs and line feeds only.
fn literal_block_ok(s: &str) -> bool {
    s.contains('\n')
        && s.chars().all(|c| {
            c == '\n' || c == '\t' || !(c.is_control() || matches!(c, '\u{feff}' | '\u{2028}' | '\u{2029}' | '\u{85}'))
        })
}

fn key(k: &str) -> String {
    if !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric()) && k.starts_with(|c: char| c.is_ascii_alphabetic())
    {
        k.to_owned()
    } else {
        quote(k)
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::Object(_) => "{}".to_owned(),
        Value::Array(_) => "[]".to_owned(),
        Value::String(s) => quote(s),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests;
