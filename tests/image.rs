//! The container image under a real container engine: `Containerfile.host` built with podman from the binary under
//! test (FROM scratch, the shared libraries `ldd` lists copied in, no registry), then run: `--version`, its
//! layout (user, working directory, entrypoint, labels, no shell), the quickstart inside it against the built-in
//! server with its reports written to a mounted directory, and the pods `loadgate k8s` renders, run as their pod
//! spec says (command, args, env, user, read-only root, capabilities, volumes, resources, the barrier) against a
//! server on the host.
//!
//! podman is found through `LOADGATE_PODMAN` or the PATH; without it the test says so and skips (`.ci/run`
//! installs podman and runc and names it in `LOADGATE_PODMAN`, so CI always runs it, and fails without it). It runs rootful podman with its own storage in a temporary
//! directory (`--root`, `--runroot`, the `vfs` driver: no overlay needed, nothing shared with other images),
//! `--runtime runc` when runc is there (crun refuses a hybrid cgroup v1 layout), explicit ulimits (the defaults
//! cannot be set on every machine), and removes its containers and images when it ends, passed or failed.
//! `LOADGATE_IMAGE_BINARY` packages another binary (a release build) instead of the test's own.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

mod common;
use common::{loadgate, text};

fn find_podman() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("LOADGATE_PODMAN").filter(|p| !p.is_empty()) {
        // Named on purpose (as `.ci/run` does): its absence is a failure, never a skip.
        assert!(Path::new(&path).is_file(), "LOADGATE_PODMAN={} is not a file", Path::new(&path).display());
        return Some(PathBuf::from(path));
    }
    on_path("podman")
}

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/sbin")])
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// podman with storage of its own; removes what it made when dropped.
struct Podman {
    bin: PathBuf,
    runtime: Option<PathBuf>,
    state: tempfile::TempDir,
    images: Vec<String>,
    containers: Vec<String>,
}

impl Podman {
    fn new(bin: PathBuf) -> Podman {
        Podman {
            bin,
            runtime: on_path("runc"),
            state: tempfile::Builder::new().prefix("loadgate-podman-").tempdir().expect("podman state dir"),
            images: Vec::new(),
            containers: Vec::new(),
        }
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new(&self.bin);
        cmd.arg("--root")
            .arg(self.state.path().join("storage"))
            .arg("--runroot")
            .arg(self.state.path().join("run"))
            .args(["--storage-driver", "vfs", "--events-backend", "file"]);
        if let Some(runc) = &self.runtime {
            cmd.arg("--runtime").arg(runc);
        }
        cmd.stdin(Stdio::null());
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command().args(args).output().expect("run podman")
    }

    /// `podman run` with the options every container here needs, a name it removes, and `args` after them.
    fn container(&mut self, name: &str) -> Command {
        self.containers.push(name.to_owned());
        let mut cmd = self.command();
        cmd.args(["run", "--rm", "--name", name, "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"]);
        cmd
    }
}

impl Drop for Podman {
    fn drop(&mut self) {
        for c in &self.containers {
            let _ = self.command().args(["rm", "--force", "--ignore", c]).output();
        }
        for i in &self.images {
            let _ = self.command().args(["rmi", "--force", i]).output();
        }
        // The storage is this test's own (`--root`): whatever is left of it goes with its directory.
    }
}

fn ok(out: &Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what}: {}\nstdout: {}\nstderr: {}",
        out.status,
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// The shared libraries a dynamically linked binary loads, as `ldd` lists them (none for a static one).
fn shared_libraries(binary: &Path) -> Vec<PathBuf> {
    let out = Command::new("ldd").arg(binary).output().expect("run ldd");
    text(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().find(|w| w.starts_with('/')))
        .map(PathBuf::from)
        .collect()
}

/// The build context of Containerfile.host: the binary (without its debug info when objcopy is there: a debug
/// build's is most of its size), a root filesystem with its libraries, /etc/passwd and /tmp, and /work.
fn stage_context(binary: &Path, dir: &Path) {
    let target = dir.join("loadgate");
    let stripped =
        Command::new("objcopy").arg("--strip-debug").arg(binary).arg(&target).status().is_ok_and(|s| s.success());
    if !stripped {
        std::fs::copy(binary, &target).expect("copy the binary");
    }
    let rootfs = dir.join("rootfs");
    for lib in shared_libraries(binary) {
        let to = rootfs.join(lib.strip_prefix("/").unwrap());
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&lib, &to).unwrap_or_else(|e| panic!("copy {}: {e}", lib.display()));
    }
    std::fs::create_dir_all(rootfs.join("etc")).unwrap();
    std::fs::write(
        rootfs.join("etc/passwd"),
        "root:x:0:0:root:/:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/work:/sbin/nologin\n",
    )
    .unwrap();
    std::fs::write(rootfs.join("etc/group"), "root:x:0:\nnonroot:x:65532:\n").unwrap();
    // The working directory beside rootfs/, so that its COPY makes it the image user's.
    std::fs::create_dir_all(dir.join("work")).unwrap();
    std::fs::create_dir_all(rootfs.join("tmp")).unwrap();
    set_mode(&rootfs.join("tmp"), 0o1777);
    std::fs::copy(common::root().join("Containerfile.host"), dir.join("Containerfile.host")).unwrap();
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A directory on the host that the image's user (65532) may write, as an emptyDir or a mounted output.
fn writable_dir(parent: &Path, name: &str) -> PathBuf {
    let dir = parent.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    set_mode(&dir, 0o777);
    dir
}

fn mount(host: &Path, at: &str, read_only: bool) -> String {
    format!("type=bind,source={},destination={at}{}", host.display(), if read_only { ",ro" } else { "" })
}

#[test]
fn the_image_runs_loadgate_and_the_pods_loadgate_k8s_renders() {
    let Some(bin) = find_podman() else {
        // Straight to stderr, past the test harness's capture: a skip is said even when the test passes.
        use std::io::Write as _;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: podman not found (set LOADGATE_PODMAN or put it on the PATH; `apt-get install podman runc`): \
             the container image was not built or run"
        );
        return;
    };
    let binary = std::env::var_os("LOADGATE_IMAGE_BINARY")
        .map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_loadgate")), PathBuf::from);
    let mut podman = Podman::new(bin);
    let tag = format!("localhost/loadgate-test:{}", std::process::id());
    let version = text(&Command::new(&binary).arg("--version").output().expect("loadgate --version").stdout);
    let version = version.trim().to_owned();

    // Build: the context is staged in a directory of its own, as Containerfile.host's header says.
    let work = tempfile::tempdir().unwrap();
    let context = work.path().join("context");
    std::fs::create_dir_all(&context).unwrap();
    stage_context(&binary, &context);
    let started = std::time::Instant::now();
    let crate_version = version.split_whitespace().nth(1).unwrap_or("0.0.0").to_owned();
    podman.images.push(tag.clone());
    ok(
        &podman.run(&[
            "build",
            "--file",
            context.join("Containerfile.host").to_str().unwrap(),
            "--build-arg",
            &format!("VERSION={crate_version}"),
            "--tag",
            &tag,
            context.to_str().unwrap(),
        ]),
        "podman build",
    );
    eprintln!("image {tag} built in {:.1} s", started.elapsed().as_secs_f64());
    let size = ok(&podman.run(&["image", "inspect", "--format", "{{.Size}}", &tag]), "podman image inspect");
    eprintln!("image size: {} bytes", size.trim());

    // What the image is: loadgate's entrypoint, a numeric non-root user, /work, the OCI labels.
    let config: serde_json::Value = serde_json::from_str(&ok(
        &podman.run(&["image", "inspect", "--format", "{{json .Config}}", &tag]),
        "podman image inspect",
    ))
    .unwrap();
    assert_eq!(config["User"], "65532:65532", "{config:#}");
    assert_eq!(config["WorkingDir"], "/work", "{config:#}");
    assert_eq!(config["Entrypoint"], serde_json::json!(["loadgate"]), "{config:#}");
    assert_eq!(config["Labels"]["org.opencontainers.image.version"], crate_version.as_str(), "{config:#}");
    assert_eq!(config["Labels"]["org.opencontainers.image.title"], "loadgate", "{config:#}");
    assert!(config["Labels"]["org.opencontainers.image.source"].is_string(), "{config:#}");

    // `loadgate --version` through the entrypoint, and as `loadgate` found on the PATH (a pod's `command`).
    let name = format!("lg-image-{}", std::process::id());
    let out = podman.container(&format!("{name}-version")).args([&tag, "--version"]).output().unwrap();
    assert_eq!(ok(&out, "podman run IMAGE --version").trim(), version);
    let out = podman
        .container(&format!("{name}-path"))
        .args(["--entrypoint", "[\"loadgate\"]", &tag, "--version"])
        .output()
        .unwrap();
    assert_eq!(ok(&out, "podman run --entrypoint loadgate IMAGE --version").trim(), version);
    // No shell at run time.
    let out = podman.container(&format!("{name}-shell")).args(["--entrypoint", "/bin/sh", &tag, "-c", "true"]).output();
    assert!(!out.unwrap().status.success(), "the image has no shell");
    // The working directory is the image user's to write (`loadgate man --dir` writes a file per page there).
    let out = podman.container(&format!("{name}-workdir")).args([&tag, "man", "--dir", "man"]).output().unwrap();
    ok(&out, "loadgate man --dir man in /work");

    // The quickstart inside the container against the built-in server, its reports in a mounted directory.
    let reports = writable_dir(work.path(), "reports");
    let specs = common::root().join("specs");
    let out = podman
        .container(&format!("{name}-quickstart"))
        .args([
            "--network",
            "host",
            "--mount",
            &mount(&specs, "/specs", true),
            "--mount",
            &mount(&reports, "/out", false),
        ])
        .args([&tag, "run", "/specs/quickstart.yaml", "--set", "scale=0.2", "--out", "/out"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "the quickstart in the container:\n{}", text(&out.stderr));
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(reports.join("quickstart/results.json")).unwrap()).unwrap();
    assert_eq!(results["outcome"]["status"], "passed", "{:#}", results["outcome"]);
    assert!(results["scenarios"][1]["requests"]["sent"].as_u64().unwrap_or(0) > 0, "{:#}", results["scenarios"][1]);
    for report in ["junit.xml", "report.md", "report.html"] {
        assert!(reports.join("quickstart").join(report).is_file(), "{report} in the mounted directory");
    }

    run_the_rendered_pods(&mut podman, &tag, work.path());
}

/// `loadgate k8s` for a spec pinned to one generator CPU, two shards; each pod of the Job as podman runs it from
/// its pod spec, both in one network namespace of the host's (a server started there, the barrier's host name
/// resolving to 127.0.0.1 as the headless Service resolves it to shard 1's pod), as Kubernetes would run them.
fn run_the_rendered_pods(podman: &mut Podman, tag: &str, work: &Path) {
    use std::io::BufRead as _;
    let dir = work.join("k8s");
    std::fs::create_dir_all(dir.join("data")).unwrap();
    std::fs::write(dir.join("data/users.txt"), "ann\nbob\ncid\n").unwrap();
    let spec = dir.join("pods.yaml");
    std::fs::write(
        &spec,
        "version: 1\nname: pods\nvars:\n  url: \"\"\nhardware:\n  generator: { cpus: \"1\" }\n  on_mismatch: warn\n\
         target:\n  base_url: \"{{ url }}\"\nscenarios:\n  s:\n    request: { path: \"/plaintext?u={{ pick_line('data/users.txt') }}\" }\n    \
         load: { closed: { connections: 2, requests: 200 } }\n",
    )
    .unwrap();

    // The server: the host's loadgate in a network namespace of its own (its loopback up), which the pods join.
    let mut server = Command::new("unshare")
        .args([
            "--net",
            "--",
            "sh",
            "-c",
            "PATH=\"$PATH:/usr/sbin:/sbin\"; ip link set lo up && exec \"$0\" serve --kind plaintext",
        ])
        .arg(env!("CARGO_BIN_EXE_loadgate"))
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the server in a network namespace (unshare, ip)");
    let mut line = String::new();
    std::io::BufReader::new(server.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let url = line.trim().rsplit(' ').next().unwrap().to_owned();
    assert!(url.starts_with("http://127.0.0.1:"), "the server's line: {line}");
    let netns = format!("ns:/proc/{}/ns/net", server.id());

    let set = format!("url={url}");
    let out = loadgate(&["k8s", spec.to_str().unwrap(), "--shards", "2", "--image", tag, "--set", &set]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let docs: Vec<serde_yaml::Value> =
        text(&out.stdout).split("\n---\n").map(|d| serde_yaml::from_str(d).unwrap()).collect();
    let config_map = &docs[0];
    let job = &docs[2]["spec"];
    let pod = &job["template"]["spec"];
    let c = &pod["containers"][0];
    assert_eq!(c["image"].as_str(), Some(tag));
    let strings = |v: &serde_yaml::Value| -> Vec<String> {
        v.as_sequence().map_or(Vec::new(), |s| s.iter().map(|a| a.as_str().unwrap().to_owned()).collect())
    };
    let command = strings(&c["command"]);
    let args = strings(&c["args"]);
    assert!(args.iter().any(|a| a == "--pin-within-affinity"), "the spec pins: {args:?}");
    let barrier = &args[args.iter().position(|a| a == "--barrier").unwrap() + 1];
    let barrier_host = barrier.rsplit_once(':').unwrap().0.to_owned();

    // The pod's security context, as podman options (what a kubelet asks of its runtime).
    let pod_security = &pod["securityContext"];
    let security = &c["securityContext"];
    let user = pod_security["runAsUser"].as_u64().expect("runAsUser");
    let group = pod_security["runAsGroup"].as_u64().expect("runAsGroup");
    assert!(user != 0 && pod_security["runAsNonRoot"].as_bool() == Some(true), "{pod_security:?}");
    let mut options = vec!["--user".to_owned(), format!("{user}:{group}")];
    if security["readOnlyRootFilesystem"].as_bool() == Some(true) {
        // Only the pod's volumes are writable: no tmpfs podman would add on its own.
        options.extend(["--read-only".to_owned(), "--read-only-tmpfs=false".to_owned()]);
    }
    if security["allowPrivilegeEscalation"].as_bool() == Some(false) {
        options.extend(["--security-opt".to_owned(), "no-new-privileges".to_owned()]);
    }
    for cap in strings(&security["capabilities"]["drop"]) {
        options.extend(["--cap-drop".to_owned(), cap]);
    }
    assert!(security["capabilities"]["add"].is_null(), "{security:?}");
    // RuntimeDefault is podman's default seccomp profile: nothing to add.
    assert_eq!(pod_security["seccompProfile"]["type"].as_str(), Some("RuntimeDefault"));
    let cpus = c["resources"]["limits"]["cpu"].as_str().unwrap().parse::<usize>().unwrap();
    options.extend(["--cpus".to_owned(), cpus.to_string()]);
    if let Some(mem) = c["resources"]["limits"]["memory"].as_str().and_then(|m| m.strip_suffix("Gi")) {
        options.extend(["--memory".to_owned(), format!("{mem}g")]);
    }

    // The volumes as the kubelet mounts them: the ConfigMap's items at their paths, an emptyDir as a fresh
    // directory.
    let mut empty_dirs = Vec::new();
    for (i, m) in c["volumeMounts"].as_sequence().unwrap().iter().enumerate() {
        let volume = pod["volumes"].as_sequence().unwrap().iter().find(|v| v["name"] == m["name"]).unwrap();
        let at = m["mountPath"].as_str().unwrap();
        let read_only = m["readOnly"].as_bool() == Some(true);
        let host = if volume["configMap"].is_mapping() {
            let host = dir.join(format!("volume-{i}"));
            for item in volume["configMap"]["items"].as_sequence().unwrap() {
                let path = host.join(item["path"].as_str().unwrap());
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, config_map["data"][item["key"].as_str().unwrap()].as_str().unwrap()).unwrap();
            }
            host
        } else if volume["emptyDir"].is_mapping() {
            let host = writable_dir(&dir, &format!("volume-{i}"));
            empty_dirs.push(host.clone());
            host
        } else {
            panic!("a volume this test cannot play: {volume:?}");
        };
        options.extend(["--mount".to_owned(), mount(&host, at, read_only)]);
    }
    assert!(!empty_dirs.is_empty(), "a read-only root needs a writable volume");

    // The environment: the downward API's run id (one per Job) and the index an Indexed Job sets.
    let run_id = "0b3c6a52-7d1e-4c1b-9f0e-3f1d2a6b8c90";
    let mut env = Vec::new();
    for e in c["env"].as_sequence().unwrap() {
        let name = e["name"].as_str().unwrap();
        let value = match (e["value"].as_str(), e["valueFrom"]["fieldRef"]["fieldPath"].as_str()) {
            (Some(v), _) => v.to_owned(),
            (None, Some("metadata.labels['batch.kubernetes.io/controller-uid']")) => run_id.to_owned(),
            _ => panic!("an env entry this test cannot play: {e:?}"),
        };
        env.push(format!("{name}={value}"));
    }
    assert!(c["envFrom"].is_null(), "no Secret here");
    let job_name = docs[2]["metadata"]["name"].as_str().unwrap().to_owned();
    let available = std::thread::available_parallelism().map_or(1, |n| n.get());

    let shards = job["completions"].as_u64().unwrap() as usize;
    let pods: Vec<(std::process::Child, PathBuf)> = (0..shards)
        .map(|index| {
            let log = dir.join(format!("pod-{index}.log"));
            let file = std::fs::File::create(&log).unwrap();
            let mut cmd = podman.container(&format!("lg-image-{}-pod-{index}", std::process::id()));
            cmd.args(["--network", &netns, "--add-host", &format!("{barrier_host}:127.0.0.1")])
                .args(["--hostname", &format!("{job_name}-{index}")])
                // A static CPU manager gives each Guaranteed pod cores of its own.
                .args(["--cpuset-cpus", &((index * cpus) % available).to_string()])
                .args(&options)
                .args(["--env", &format!("JOB_COMPLETION_INDEX={index}")]);
            for e in &env {
                cmd.args(["--env", e]);
            }
            cmd.arg("--entrypoint").arg(serde_json::to_string(&command).unwrap()).arg(tag).args(&args);
            (cmd.stdout(file.try_clone().unwrap()).stderr(file).spawn().unwrap(), log)
        })
        .collect();
    let mut all = String::new();
    for (mut p, log) in pods {
        let status = p.wait().unwrap();
        let pod_log = std::fs::read_to_string(&log).unwrap();
        assert!(status.success(), "a pod failed ({status}):\n{pod_log}");
        // What the pod said besides its framed result (what `kubectl logs` would show a person).
        let mut in_frame = false;
        for line in pod_log.lines() {
            if line.starts_with("-----BEGIN LOADGATE SHARD") {
                in_frame = true;
            } else if line.starts_with("-----END LOADGATE SHARD") {
                in_frame = false;
            } else if !in_frame {
                eprintln!("{}: {line}", log.file_stem().unwrap().to_string_lossy());
            }
        }
        all.push_str(&pod_log);
    }
    let _ = server.kill();
    let _ = server.wait();
    for d in &empty_dirs {
        assert_eq!(std::fs::read_dir(d).unwrap().count(), 0, "`--out -` removes its scratch directory");
    }

    let log = dir.join("shards.log");
    std::fs::write(&log, &all).unwrap();
    let merged = dir.join("merged");
    let out = loadgate(&["merge", log.to_str().unwrap(), "--out", merged.to_str().unwrap()]);
    assert!(matches!(out.status.code(), Some(0 | 1 | 5)), "{}\n{all}", text(&out.stderr));
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(merged.join("pods/results.json")).unwrap()).unwrap();
    assert_eq!(results["scenarios"][0]["requests"]["sent"], 200, "every request of the plan, once");
    assert_eq!(results["shards"].as_array().map(Vec::len), Some(shards));
    for shard in results["shards"].as_array().unwrap() {
        assert_eq!(shard["run_id"].as_str(), Some(run_id), "the Job's run id: {shard:#}");
    }
}
