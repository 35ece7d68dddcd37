//! The sampler against real processes: a C burner built here with and without frame pointers and stripped
//! with a debug link, a child that execs and exits while sampled, the tree's CPU time, and the sampler run
//! with privileges dropped. Skipped (with a message) when `cc` is missing or the kernel refuses sampling.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use loadgate_profile::{probe, Access, CpuDelta, Profile, Sampler, SamplerOptions, SymbolizeOptions, TreeCpu};

const SOURCE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/burn.c");

struct Builds {
    fp: PathBuf,
    nofp: PathBuf,
    stripped: PathBuf,
    /// Stripped without a debug link; its debug file is under `debug_dir/.build-id/`.
    by_build_id: Option<PathBuf>,
    debug_dir: PathBuf,
}

fn cc(args: &[&str]) -> bool {
    Command::new("cc").args(args).status().is_ok_and(|s| s.success())
}

/// The burner built three ways (once per test binary, under cargo's temporary folder for integration tests),
/// or `None` (saying so) when there is no C compiler.
fn build() -> Option<&'static Builds> {
    static BUILDS: std::sync::OnceLock<Option<Builds>> = std::sync::OnceLock::new();
    BUILDS.get_or_init(build_once).as_ref()
}

fn build_once() -> Option<Builds> {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("profile-burn");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("build folder");
    let p = |n: &str| dir.join(n).to_str().expect("utf-8 path").to_owned();
    let (fp, nofp, stripped, debug) = (p("burn-fp"), p("burn-nofp"), p("burn-stripped"), p("burn.debug"));
    if !cc(&["-O2", "-g", "-fno-omit-frame-pointer", "-mno-omit-leaf-frame-pointer", "-pthread", SOURCE, "-o", &fp]) {
        eprintln!("skipped: no working `cc`");
        return None;
    }
    assert!(cc(&["-O2", "-g", "-fomit-frame-pointer", "-pthread", SOURCE, "-o", &nofp]));
    let run = |prog: &str, args: &[&str]| Command::new(prog).args(args).status().is_ok_and(|s| s.success());
    let stripped_ok = run("objcopy", &["--only-keep-debug", &nofp, &debug])
        && run("strip", &["-o", &stripped, &nofp])
        && run("objcopy", &["--add-gnu-debuglink", &debug, &stripped]);
    if !stripped_ok {
        eprintln!("skipped: no objcopy/strip");
        return None;
    }
    let debug_dir = dir.join("debug");
    let by_build_id = build_id(Path::new(&nofp)).and_then(|id| {
        let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
        let place = debug_dir.join(".build-id").join(&hex[..2]);
        std::fs::create_dir_all(&place).ok()?;
        std::fs::copy(&debug, place.join(format!("{}.debug", &hex[2..]))).ok()?;
        let out = p("burn-by-build-id");
        run("strip", &["-o", &out, &nofp]).then(|| PathBuf::from(out))
    });
    Some(Builds { fp: fp.into(), nofp: nofp.into(), stripped: stripped.into(), by_build_id, debug_dir })
}

/// The GNU build id of an ELF file.
fn build_id(path: &Path) -> Option<Vec<u8>> {
    use object::Object;
    let data = std::fs::read(path).ok()?;
    let file = object::File::parse(&*data).ok()?;
    file.build_id().ok().flatten().filter(|id| id.len() >= 2).map(<[u8]>::to_vec)
}

/// Whether this machine lets this process sample at all (a refusal is reported, not failed).
fn sampling_allowed() -> bool {
    match probe() {
        Access::Denied { advice, .. } => {
            eprintln!("skipped: sampling denied here: {advice}");
            false
        }
        _ => true,
    }
}

/// Runs `prog args` under the sampler until it exits.
fn profile_of(prog: &Path, args: &[&str], opts: &SamplerOptions) -> Profile {
    let mut child = Command::new(prog).args(args).spawn().expect("spawn");
    let sampler = Sampler::start(child.id(), opts).expect("sampler starts");
    child.wait().expect("wait");
    let raw = sampler.stop().expect("sampler stops");
    raw.symbolize()
}

/// Share of samples whose stack has `chain` (root to leaf, consecutive frames).
fn share_with(p: &Profile, chain: &[&str]) -> f64 {
    let total: u64 = p.stacks.iter().map(|s| s.1).sum();
    let with: u64 =
        p.stacks.iter().filter(|(frames, _)| frames.windows(chain.len()).any(|w| w == chain)).map(|s| s.1).sum();
    with as f64 / total.max(1) as f64
}

fn describe(p: &Profile) -> String {
    let mut s = format!("{:?}\n", p.stats);
    for (frames, n) in p.stacks.iter().take(8) {
        s.push_str(&format!("{n} {}\n", frames.join(";")));
    }
    s
}

fn check_burn(p: &Profile, what: &str) {
    let text = describe(p);
    assert!(p.stats.samples >= 50, "{what}: too few samples\n{text}");
    assert!(p.stats.symbolized_share >= 0.9, "{what}: symbolized share\n{text}");
    assert!(share_with(p, &["outer", "middle", "leaf_burn"]) >= 0.7, "{what}: outer;middle;leaf_burn\n{text}");
    let under_main: u64 = p.stacks.iter().filter(|(f, _)| f.iter().any(|n| n == "main")).map(|s| s.1).sum();
    assert!(under_main as f64 >= 0.7 * p.stats.samples as f64, "{what}: under main\n{text}");
    eprintln!("{what}:\n{text}");
}

#[test]
fn a_frame_pointer_build_is_sampled_and_symbolized_with_its_call_chain() {
    let Some(b) = build() else { return };
    if !sampling_allowed() {
        return;
    }
    let p = profile_of(&b.fp, &["run", "0.6"], &SamplerOptions::default());
    check_burn(&p, "frame pointers, DWARF on");
    let fp_only = SamplerOptions { dwarf: false, ..SamplerOptions::default() };
    let p = profile_of(&b.fp, &["run", "0.6"], &fp_only);
    check_burn(&p, "frame pointers only");
    assert_eq!(p.stats.dwarf_share, 0.0);
}

#[test]
fn a_build_without_frame_pointers_is_unwound_with_dwarf() {
    let Some(b) = build() else { return };
    if !sampling_allowed() {
        return;
    }
    let p = profile_of(&b.nofp, &["run", "0.6"], &SamplerOptions::default());
    check_burn(&p, "no frame pointers");
    assert!(p.stats.dwarf_share >= 0.9, "{}", describe(&p));
}

#[test]
fn a_stripped_build_is_symbolized_through_its_debug_link() {
    let Some(b) = build() else { return };
    if !sampling_allowed() {
        return;
    }
    let p = profile_of(&b.stripped, &["run", "0.6"], &SamplerOptions::default());
    check_burn(&p, "stripped with .gnu_debuglink");
}

#[test]
fn a_stripped_build_is_symbolized_through_its_build_id_in_a_debug_folder() {
    let Some(b) = build() else { return };
    let Some(exe) = b.by_build_id.clone() else {
        eprintln!("skipped: the compiler wrote no build id");
        return;
    };
    if !sampling_allowed() {
        return;
    }
    let mut child = Command::new(&exe).args(["run", "0.6"]).spawn().expect("spawn");
    let sampler = Sampler::start(child.id(), &SamplerOptions::default()).expect("sampler starts");
    child.wait().expect("wait");
    let raw = sampler.stop().expect("stop");
    let without = raw.symbolize();
    assert!(share_with(&without, &["outer", "middle", "leaf_burn"]) < 0.1, "{}", describe(&without));
    let opts = SymbolizeOptions { debug_dirs: vec![b.debug_dir.clone()] };
    check_burn(&raw.symbolize_with(&opts), "stripped, debug file by build id");
}

#[test]
fn threads_started_after_the_sampler_are_sampled_from_their_start() {
    let Some(b) = build() else { return };
    if !sampling_allowed() {
        return;
    }
    let p = profile_of(&b.nofp, &["threads", "0.8"], &SamplerOptions::default());
    let text = describe(&p);
    let in_threads: u64 = p
        .stacks
        .iter()
        .filter(|(f, _)| f.iter().any(|n| n == "start_thread") && f.iter().any(|n| n == "leaf_burn"))
        .map(|s| s.1)
        .sum();
    assert!(in_threads as f64 >= 0.7 * p.stats.samples as f64, "{text}");
    assert!(p.stats.threads_seen >= 5, "{text}");
}

#[test]
fn a_child_that_execs_and_exits_while_sampled_still_symbolizes() {
    let Some(b) = build() else { return };
    if !sampling_allowed() {
        return;
    }
    let p = profile_of(&b.nofp, &["spawn", "0.6"], &SamplerOptions::default());
    let text = describe(&p);
    assert!(share_with(&p, &["child_work", "middle", "leaf_burn"]) >= 0.2, "the exec'd child's samples\n{text}");
    assert!(share_with(&p, &["outer", "middle", "leaf_burn"]) >= 0.2, "the parent's\n{text}");
    assert!(p.stats.processes_seen >= 2, "{text}");
    assert!(p.stats.symbolized_share >= 0.9, "{text}");
}

/// Starts `burn cpu MS MODE`, reads the tree's CPU before and after the burn, and returns the nanoseconds.
fn cpu_of_burn(prog: &Path, ms: u32, mode: &str, setup: impl FnOnce(u32)) -> CpuDelta {
    let mut child = Command::new(prog)
        .args(["cpu", &ms.to_string(), mode])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    let pid = child.id();
    setup(pid);
    let before = TreeCpu::read(pid).expect("first reading");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(b"g").expect("go");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("done line");
    assert_eq!(line.trim(), "done");
    let after = TreeCpu::read(pid).expect("second reading");
    let again = TreeCpu::read(pid).expect("third reading");
    drop(stdin);
    child.wait().expect("wait");
    let d = after.since(&before);
    assert!(again.since(&before).ns >= d.ns, "readings are monotonic");
    eprintln!("{mode}: {ms} ms burned, read {} ns (bound {} ns, {:?})", d.ns, d.error_bound_ns, d.source);
    d
}

#[test]
fn the_tree_cpu_counts_threads_and_children_that_exited_between_readings() {
    let Some(b) = build() else { return };
    for mode in ["self", "threads", "fork"] {
        let d = cpu_of_burn(&b.fp, 200, mode, |_| {});
        let ns = d.ns;
        assert!(ns >= 100_000_000, "{mode}: {ns} ns for 200 ms of CPU");
        assert!(ns <= 600_000_000, "{mode}: {ns} ns for 200 ms of CPU");
    }
}

/// A new cgroup (v2, else v1 `cpuacct`) removed on drop, when this process may make one (root).
struct TempCgroup(PathBuf);

impl TempCgroup {
    fn new() -> Option<TempCgroup> {
        let name = format!("loadgate-profile-test-{}", std::process::id());
        ["/sys/fs/cgroup", "/sys/fs/cgroup/cpuacct", "/sys/fs/cgroup/cpu,cpuacct"].iter().find_map(|base| {
            let base = Path::new(base);
            let usable = base.join("cgroup.procs").exists()
                && (base.join("cgroup.controllers").exists() || base.join("cpuacct.usage").exists());
            let dir = base.join(&name);
            (usable && std::fs::create_dir(&dir).is_ok()).then_some(TempCgroup(dir))
        })
    }
}

impl Drop for TempCgroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

#[test]
fn the_tree_cpu_uses_the_cgroup_counter_when_the_tree_is_alone_in_it() {
    let Some(b) = build() else { return };
    let Some(cg) = TempCgroup::new() else {
        eprintln!("skipped: cannot make a cgroup here (not root, or no cpu accounting)");
        return;
    };
    let procs = cg.0.join("cgroup.procs");
    let d = cpu_of_burn(&b.fp, 200, "fork", |pid| {
        std::fs::write(&procs, pid.to_string()).expect("move the burner into its cgroup");
    });
    assert_eq!(d.source, loadgate_profile::CpuSource::Cgroup, "{d:?}");
    assert!(d.ns >= 100_000_000 && d.ns <= 600_000_000, "{d:?}");
}

const AS_NOBODY: &str = "LOADGATE_PROFILE_TEST_AS_NOBODY";

#[test]
fn the_sampler_works_with_privileges_dropped() {
    if let Ok(prog) = std::env::var(AS_NOBODY) {
        // The re-executed test, as an unprivileged user: sample a child of our own.
        let access = probe();
        eprintln!("unprivileged probe: {access:?}");
        let mut child = Command::new(&prog).args(["run", "0.6"]).spawn().expect("spawn");
        match Sampler::start(child.id(), &SamplerOptions::default()) {
            Ok(s) => {
                child.wait().expect("wait");
                let raw = s.stop().expect("stop");
                let p = raw.symbolize();
                if matches!(access, Access::UserOnly { .. }) {
                    assert!(!p.stats.kernel_stacks, "user stacks only");
                }
                check_burn(&p, "unprivileged");
            }
            Err(e) => {
                child.wait().expect("wait");
                eprintln!("refused cleanly: {e}");
                assert!(!matches!(access, Access::Full | Access::UserOnly { .. }), "{e}");
            }
        }
        return;
    }
    // SAFETY: getuid has no preconditions.
    if unsafe { libc::getuid() } != 0 {
        eprintln!("not root: this test is the unprivileged case already");
        if !sampling_allowed() {
            return;
        }
    }
    let Some(b) = build() else { return };
    // The test binary and the burner, where the unprivileged user can reach them.
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let (copy, burner) = (dir.path().join("sampling-test"), dir.path().join("burn-fp"));
    std::fs::copy(std::env::current_exe().expect("test binary"), &copy).expect("copy the test binary");
    std::fs::copy(&b.fp, &burner).expect("copy the burner");
    for f in [&copy, &burner] {
        std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let mut cmd = Command::new(&copy);
    cmd.args(["--exact", "the_sampler_works_with_privileges_dropped", "--nocapture"])
        .env(AS_NOBODY, &burner)
        .current_dir(dir.path());
    // SAFETY: getuid has no preconditions.
    if unsafe { libc::getuid() } == 0 {
        cmd.uid(65534).gid(65534);
    }
    let out = cmd.output().expect("re-run the test as nobody");
    let text = format!("{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    eprintln!("{text}");
    assert!(out.status.success(), "the unprivileged run failed:\n{text}");
    assert!(text.contains("1 passed"), "{text}");
}

#[test]
fn jit_code_is_named_from_its_perf_map() {
    if !cfg!(target_arch = "x86_64") {
        eprintln!("skipped: the JIT'ed code of the burner is x86_64 machine code");
        return;
    }
    let Some(b) = build() else { return };
    if !sampling_allowed() {
        return;
    }
    let mut child = Command::new(&b.nofp).args(["jit", "0.6"]).spawn().expect("spawn");
    let pid = child.id();
    let sampler = Sampler::start(pid, &SamplerOptions::default()).expect("sampler starts");
    assert!(child.wait().expect("wait").success());
    let p = sampler.stop().expect("stop").symbolize();
    let _ = std::fs::remove_file(format!("/tmp/perf-{pid}.map"));
    let text = describe(&p);
    assert!(share_with(&p, &["jit_caller", "jit_loop"]) >= 0.7, "{text}");
    assert!(p.stats.symbolized_share >= 0.9, "{text}");
}

#[test]
fn a_rust_program_has_demangled_names_without_hashes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = dir.path().join("burnrs");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let built = Command::new(&rustc)
        .args(["-O", "-g", "--edition", "2021"])
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/burn.rs"))
        .arg("-o")
        .arg(&exe)
        .status()
        .is_ok_and(|s| s.success());
    if !built {
        eprintln!("skipped: no working `{rustc}`");
        return;
    }
    if !sampling_allowed() {
        return;
    }
    let p = profile_of(&exe, &["20000"], &SamplerOptions::default());
    let text = describe(&p);
    assert!(share_with(&p, &["burn::main", "burn::outer", "burn::middle", "burn::leaf_burn"]) >= 0.7, "{text}");
    assert!(
        p.stacks.iter().flat_map(|s| &s.0).all(|f| !f.contains("::h") || !f.ends_with(|c: char| c.is_ascii_hexdigit())),
        "hash suffixes left:\n{text}"
    );
    assert!(p.stats.symbolized_share >= 0.9, "{text}");
}

#[test]
fn a_go_program_is_unwound_through_its_compressed_debug_frame() {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("goburn");
    let built = Command::new("go")
        .args(["build", "-o"])
        .arg(&out)
        .arg(".")
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/goburn"))
        .env("GOFLAGS", "-mod=mod")
        .status()
        .is_ok_and(|s| s.success());
    if !built {
        eprintln!("skipped: no working `go`");
        return;
    }
    if !sampling_allowed() {
        return;
    }
    let p = profile_of(&out, &["10000"], &SamplerOptions::default());
    let text = describe(&p);
    assert!(share_with(&p, &["main.outer", "main.middle", "main.leafBurn"]) >= 0.7, "{text}");
    assert!(p.stats.symbolized_share >= 0.9, "{text}");
}

#[test]
fn a_jvm_with_frame_pointers_and_a_perf_map_shows_its_java_frames() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("javaburn");
    let _ = std::fs::create_dir_all(&dir);
    let compiled = Command::new("javac")
        .arg("-d")
        .arg(&dir)
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/Burn.java"))
        .status()
        .is_ok_and(|s| s.success());
    if !compiled {
        eprintln!("skipped: no working `javac`");
        return;
    }
    if !sampling_allowed() {
        return;
    }
    let flags = ["-XX:+PreserveFramePointer", "-XX:+UnlockDiagnosticVMOptions", "-XX:+DumpPerfMapAtExit"];
    let mut child = Command::new("java")
        .args(flags)
        .args(["-XX:-Inline", "-cp"])
        .arg(&dir)
        .args(["Burn", "30000"])
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn java");
    let pid = child.id();
    let sampler = Sampler::start(pid, &SamplerOptions::default()).expect("sampler starts");
    let status = child.wait().expect("wait");
    let p = sampler.stop().expect("stop").symbolize();
    let _ = std::fs::remove_file(format!("/tmp/perf-{pid}.map"));
    if !status.success() {
        eprintln!("skipped: this JVM refused {flags:?}");
        return;
    }
    let text = describe(&p);
    let java = ["long Burn.outer(long)", "long Burn.middle(long)", "long Burn.leafBurn(long)"];
    assert!(share_with(&p, &java) >= 0.5, "{text}");
    assert!(p.stats.symbolized_share >= 0.9, "{text}");
}

#[test]
fn a_pid_that_is_not_running_is_refused_by_name() {
    let mut child = Command::new("true").spawn().expect("spawn true");
    let pid = child.id();
    child.wait().expect("wait");
    match Sampler::start(pid, &SamplerOptions::default()) {
        Err(e @ loadgate_profile::ProfileError::NoProcess { .. }) => {
            assert!(e.to_string().contains("not running"), "{e}")
        }
        Err(e) => panic!("unexpected error: {e}"),
        Ok(_) => panic!("a reaped pid was sampled"),
    }
    assert!(TreeCpu::read(pid).is_err());
}

/// Installs a seccomp filter on the calling thread that answers ENOSYS to `perf_event_open`, as Docker's
/// default profile does.
fn block_perf_event_open() -> bool {
    let filter = [
        libc::sock_filter { code: 0x20, jt: 0, jf: 0, k: 0 },
        libc::sock_filter { code: 0x15, jt: 0, jf: 1, k: libc::SYS_perf_event_open as u32 },
        libc::sock_filter { code: 0x06, jt: 0, jf: 0, k: 0x0005_0000 | libc::ENOSYS as u32 },
        libc::sock_filter { code: 0x06, jt: 0, jf: 0, k: 0x7fff_0000 },
    ];
    let prog = libc::sock_fprog { len: filter.len() as u16, filter: filter.as_ptr() as *mut libc::sock_filter };
    // SAFETY: prctl with a valid filter program that outlives the call; it changes only this thread.
    unsafe {
        libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
            && libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER,
                &prog as *const libc::sock_fprog as libc::c_ulong,
                0,
                0,
            ) == 0
    }
}

#[test]
fn a_seccomp_filter_that_blocks_perf_events_is_reported_with_advice() {
    let mut child = Command::new("sleep").arg("5").spawn().expect("spawn sleep");
    let pid = child.id();
    // The filter lives on a thread of its own, which ends with it.
    let outcome = std::thread::spawn(move || {
        if !block_perf_event_open() {
            return None;
        }
        Some((probe(), Sampler::start(pid, &SamplerOptions::default()).err()))
    })
    .join()
    .expect("the filtered thread");
    let _ = child.kill();
    let _ = child.wait();
    let Some((access, err)) = outcome else {
        eprintln!("skipped: cannot install a seccomp filter here");
        return;
    };
    match access {
        Access::Denied { errno, advice, .. } => {
            assert_eq!(errno, libc::ENOSYS);
            assert!(advice.contains("seccomp"), "{advice}");
        }
        other => panic!("probe under a seccomp filter: {other:?}"),
    }
    match err {
        Some(e @ loadgate_profile::ProfileError::Denied { .. }) => {
            assert!(e.to_string().contains("seccomp"), "{e}")
        }
        other => panic!("sampler under a seccomp filter: {other:?}"),
    }
}

#[test]
fn a_launched_target_may_allow_any_tracer_before_exec() {
    let mut cmd = Command::new("true");
    // SAFETY: the hook makes one system call (prctl), which is async-signal-safe.
    unsafe {
        cmd.pre_exec(loadgate_profile::allow_any_tracer);
    }
    let status = cmd.status().expect("spawn with the hook");
    assert!(status.success());
}
