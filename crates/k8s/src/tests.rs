use super::*;

const SPEC: &str = "version: 1\nname: Checkout_API.v2\nvars:\n  url: http://checkout:8080\n  token: \"\"\nsecrets:\n  vars: [token]\nhardware:\n  generator: { cpus: \"2-5\" }\ntarget:\n  base_url: \"{{ url }}\"\nscenarios:\n  buy:\n    request: { path: \"/buy?user={{ pick_line('data/users.txt') }}\", headers: { X-Token: \"{{ token }}\" } }\n    load: { open: { rate: 1000/s, connections: 64, duration: 30s } }\n";

fn plan(sets: &[(&str, &str)]) -> ExecutionPlan {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("loadgate-k8s-test-{}-{n}", std::process::id()));
    std::fs::create_dir_all(dir.join("data")).unwrap();
    std::fs::write(dir.join("data/users.txt"), "ann\nbob\n").unwrap();
    let opts = loadgate_spec::LoadOptions {
        sets: sets.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
        base_dir: Some(dir),
        ..Default::default()
    };
    let plan = loadgate_plan::compile(&loadgate_spec::load_str("checkout.yaml", SPEC, &opts).unwrap());
    let _ = std::fs::remove_dir_all(opts.base_dir.as_ref().unwrap());
    plan
}

fn request<'a>(plan: &'a ExecutionPlan, sets: &'a [(String, String)], secret_vars: &'a [String]) -> K8sRequest<'a> {
    K8sRequest {
        plan,
        spec_file_name: "checkout.yaml",
        spec_text: SPEC,
        files: vec![("data/users.txt".to_owned(), Some("ann\nbob\n".to_owned()))],
        shards: 4,
        image: "registry.example/loadgate:0.1.0",
        name: None,
        namespace: Some("load"),
        sets,
        secret_vars,
        secret_from: Some("checkout-load"),
        memory: "1Gi",
        base_url_template: Some("{{ url }}"),
    }
}

#[test]
fn renders_the_config_map_the_headless_service_and_the_indexed_job() {
    let plan = plan(&[]);
    let sets = vec![("url".to_owned(), "http://checkout.shop:8080".to_owned())];
    let secret_vars = vec!["token".to_owned()];
    let yaml = render(&request(&plan, &sets, &secret_vars)).unwrap();
    insta::assert_snapshot!(yaml.replace(&plan.hash, "[hash]"));
    let docs: Vec<serde_yaml::Value> =
        serde_yaml::Deserializer::from_str(&yaml).map(|d| serde_yaml::Value::deserialize(d).unwrap()).collect();
    assert_eq!(docs.len(), 3);
    assert_eq!(docs[0]["data"]["checkout.yaml"].as_str(), Some(SPEC), "the spec travels unchanged");
    let job = &docs[2]["spec"];
    assert_eq!(job["completionMode"].as_str(), Some("Indexed"));
    assert_eq!(job["completions"].as_u64(), Some(4));
    assert_eq!(job["parallelism"].as_u64(), Some(4));
    assert_eq!(job["backoffLimitPerIndex"].as_u64(), Some(0));
    let pod = &job["template"]["spec"];
    assert_eq!(pod["restartPolicy"].as_str(), Some("Never"));
    assert_eq!(pod["subdomain"].as_str(), Some("checkout-api-v2"));
    let c = &pod["containers"][0];
    assert_eq!(c["resources"]["requests"], c["resources"]["limits"]);
    assert_eq!(c["resources"]["limits"]["cpu"].as_str(), Some("4"), "the spec pins 4 CPUs");
    // Pod Security "restricted": what its admission checks, field by field.
    assert_eq!(pod["automountServiceAccountToken"].as_bool(), Some(false));
    assert_eq!(pod["securityContext"]["runAsNonRoot"].as_bool(), Some(true));
    assert_eq!(pod["securityContext"]["runAsUser"].as_u64(), Some(RUN_AS_USER));
    assert_eq!(pod["securityContext"]["runAsGroup"].as_u64(), Some(RUN_AS_USER));
    assert_eq!(pod["securityContext"]["seccompProfile"]["type"].as_str(), Some("RuntimeDefault"));
    let security = &c["securityContext"];
    assert_eq!(security["allowPrivilegeEscalation"].as_bool(), Some(false));
    assert_eq!(security["readOnlyRootFilesystem"].as_bool(), Some(true));
    assert_eq!(security["capabilities"]["drop"][0].as_str(), Some("ALL"));
    assert!(security["capabilities"]["add"].is_null(), "no capability is added");
    // The read-only root: a run writes only to the emptyDir mounted at SCRATCH_DIR.
    let mounts = c["volumeMounts"].as_sequence().unwrap();
    let scratch = mounts.iter().find(|m| m["mountPath"].as_str() == Some(SCRATCH_DIR)).expect("a scratch mount");
    let volume = pod["volumes"].as_sequence().unwrap().iter().find(|v| v["name"] == scratch["name"]).unwrap();
    assert!(volume["emptyDir"].is_mapping(), "{volume:?}");
    assert_eq!(job["ttlSecondsAfterFinished"].as_u64(), Some(TTL_SECONDS_AFTER_FINISHED));
    let args: Vec<&str> = c["args"].as_sequence().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
    assert_eq!(
        args,
        [
            "run",
            "/spec/checkout.yaml",
            "--shard-count",
            "4",
            "--barrier",
            "checkout-api-v2-0.checkout-api-v2:7878",
            "--out",
            "-",
            "--pin-within-affinity",
            "--set",
            "url=http://checkout.shop:8080"
        ]
    );
}

use serde::Deserialize as _;

#[test]
fn hostile_strings_stay_scalars() {
    let plan = plan(&[]);
    let sets = vec![("url".to_owned(), "x\"\n---\nkind: Pod\n: ' # \u{2028}".to_owned())];
    let mut req = request(&plan, &sets, &[]);
    req.image = "evil\"\nmalicious: true\n---\napiVersion: v1";
    req.spec_text = "a: 1\n  # indented\n\n\ttab\r\nlast\n\n";
    let yaml = render(&req).unwrap();
    let docs: Vec<serde_yaml::Value> =
        serde_yaml::Deserializer::from_str(&yaml).map(|d| serde_yaml::Value::deserialize(d).unwrap()).collect();
    assert_eq!(docs.len(), 3, "{yaml}");
    let c = &docs[2]["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(c["image"].as_str(), Some(req.image));
    assert_eq!(c["args"][10].as_str(), Some(format!("url={}", sets[0].1).as_str()));
    assert_eq!(docs[0]["data"]["checkout.yaml"].as_str(), Some(req.spec_text));
    // A literal block when the text is readable, and still exact.
    req.spec_text = "  leading\nmiddle\n\n\ntrailing blank lines\n\n\n";
    let yaml = render(&req).unwrap();
    let docs: Vec<serde_yaml::Value> =
        serde_yaml::Deserializer::from_str(&yaml).map(|d| serde_yaml::Value::deserialize(d).unwrap()).collect();
    assert_eq!(docs[0]["data"]["checkout.yaml"].as_str(), Some(req.spec_text), "{yaml}");
}

#[test]
fn names_are_dns_labels() {
    assert_eq!(dns_label("Checkout_API v2"), "checkout-api-v2");
    assert_eq!(dns_label("2fast"), "lg-2fast");
    assert_eq!(dns_label("---"), "loadgate");
    assert_eq!(dns_label(&"a".repeat(100)).len(), MAX_NAME_LEN);
    assert!(is_dns_label(&dns_label("x.y-_z..9"), MAX_NAME_LEN));
    let plan = plan(&[]);
    for bad in ["Upper", "a_b", "-a", "a-", "", "a.b"] {
        let mut req = request(&plan, &[], &[]);
        req.name = Some(bad);
        assert!(matches!(render(&req), Err(K8sError::Name(..))), "{bad}");
    }
}

#[test]
fn refuses_what_cannot_be_rendered_safely() {
    let plan = plan(&[]);
    let secret_vars = vec!["token".to_owned()];
    let sets = vec![("token".to_owned(), "hunter22".to_owned())];
    assert_eq!(render(&request(&plan, &sets, &secret_vars)), Err(K8sError::SecretSet("token".to_owned())));
    let mut req = request(&plan, &[], &[]);
    req.files = vec![("client.key".to_owned(), None)];
    assert_eq!(render(&req), Err(K8sError::File("client.key".to_owned())));
    req.files = vec![("../etc/passwd".to_owned(), Some(String::new()))];
    assert_eq!(render(&req), Err(K8sError::OutsideTree("../etc/passwd".to_owned())));
    let mut req = request(&plan, &[], &[]);
    req.shards = 0;
    assert_eq!(render(&req), Err(K8sError::Shards(0)));
    let mut req = request(&plan, &[], &[]);
    req.memory = "1 Gi";
    assert_eq!(render(&req), Err(K8sError::Memory("1 Gi".to_owned())));
    let builtin = plan_builtin();
    let mut req = request(&builtin, &[], &[]);
    req.base_url_template = None;
    assert_eq!(
        render(&req).unwrap_err().to_string(),
        "the target is the built-in server: on Kubernetes the shards load a server that is already running; set \
         the spec's `target.base_url` to its URL (`base_url: http://my-service:8080`, or `base_url: \"{{ url }}\"` \
         with `url` under `vars`, then `--set url=http://my-service:8080`)"
    );
}

#[test]
fn the_built_in_target_refusal_names_the_variable_the_spec_has_for_its_url() {
    let text = "version: 1\nname: b\nvars:\n  host: \"\"\n  api: \"\"\ntarget: { base_url: \"{{ api }}\", builtin: plaintext }\nscenarios:\n  s:\n    request: { path: / }\n    load: { closed: { connections: 1, duration: 1s } }\n";
    let plan = loadgate_plan::compile(&loadgate_spec::load_str("b.yaml", text, &Default::default()).unwrap());
    let mut req = request(&plan, &[], &[]);
    req.base_url_template = Some("{{ api }}");
    assert_eq!(
        render(&req).unwrap_err().to_string(),
        "the target is the built-in server: on Kubernetes the shards load a server that is already running; give \
         its URL with `--set api=http://my-service:8080` (the spec's `target.base_url` is `{{ api }}`)"
    );
    assert_eq!(base_url_variable("{{ env.URL }}{{ host }}/v1", &plan), Some("host"));
    assert_eq!(base_url_variable("{{ nope }} {{", &plan), None);
}

fn plan_builtin() -> ExecutionPlan {
    let text = "version: 1\nname: b\ntarget: { builtin: plaintext }\nscenarios:\n  s:\n    request: { path: / }\n    load: { closed: { connections: 1, duration: 1s } }\n";
    loadgate_plan::compile(&loadgate_spec::load_str("b.yaml", text, &Default::default()).unwrap())
}
