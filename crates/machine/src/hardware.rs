//! The machine: which CPUs exist and may be used, whether the spec's pinning fits, and the fingerprint every
//! report carries.
//!
//! # Pinning checks
//!
//! [`check_pinning`] compares the generator's and the target's CPU lists with the CPUs loadgate may use: the
//! online CPUs (`/sys/devices/system/cpu/online`) that are also in loadgate's own affinity mask (a container's
//! cpuset or a `taskset` around loadgate narrows it). A CPU the spec names that cannot be used is a *mismatch*
//! and `on_mismatch` decides:
//!
//! * `fail`: [`PinningDecision::Fail`] (the CLI exits 3);
//! * `skip`: [`PinningDecision::Skip`] (the CLI exits 0 with the note);
//! * `warn`: [`PinningDecision::Run`] with a warning; each side keeps the CPUs of its list that exist, and runs
//!   unpinned when none of them does. A generator worker planned on a missing CPU runs unpinned
//!   ([`effective_worker_cpus`]), so the worker count the plan chose never changes.
//!
//! [`check_pinning_within_affinity`] (`run --pin-within-affinity`, in a container or pod whose CPU ids are not
//! the spec's) first maps the spec's CPUs onto the allowed ones, the i-th onto the i-th
//! ([`map_within_affinity`]), and fails when fewer are allowed than the spec names.
//!
//! Two findings are always warnings, never mismatches, and are checked on the CPUs actually applied: generator
//! and target sharing CPUs, and SMT siblings (hyperthreads of one core) split between the generator and the
//! target.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use loadgate_measure::{CpuMapping, Machine, Pinning};
use loadgate_model::units::CpuList;
use loadgate_model::OnMismatch;

use crate::MachineError;

const SYSFS_CPU: &str = "/sys/devices/system/cpu";

/// The CPUs of this machine as Linux shows them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CpuTopology {
    /// Online CPUs.
    pub online: CpuList,
    /// CPUs loadgate's own affinity mask allows (online CPUs when unknown).
    pub allowed: CpuList,
    /// Per online CPU: the CPUs sharing its core (itself included).
    pub siblings: BTreeMap<u32, CpuList>,
    /// Per online CPU: its physical package (socket).
    pub package: BTreeMap<u32, u32>,
    /// Per online CPU: its core id within the package.
    pub core: BTreeMap<u32, u32>,
}

impl CpuTopology {
    /// Reads `/sys/devices/system/cpu` and this process's affinity.
    pub fn read() -> Result<Self, MachineError> {
        let allowed = current_affinity().ok();
        Self::from_sysfs(Path::new(SYSFS_CPU), allowed)
    }

    /// Reads a sysfs CPU directory laid out as `/sys/devices/system/cpu` (tests pass a fake one).
    pub fn from_sysfs(root: &Path, allowed: Option<CpuList>) -> Result<Self, MachineError> {
        let online_path = root.join("online");
        let text = std::fs::read_to_string(&online_path)
            .map_err(|source| MachineError::Read { path: online_path.clone(), source })?;
        let online: CpuList = text.trim().parse().map_err(|_| MachineError::Parse {
            path: online_path.clone(),
            detail: format!("`{}` is not a CPU list", text.trim()),
        })?;
        let mut topo = CpuTopology {
            allowed: match allowed {
                Some(a) => a.intersection(&online),
                None => online.clone(),
            },
            online,
            ..CpuTopology::default()
        };
        for &cpu in topo.online.cpus() {
            let dir = root.join(format!("cpu{cpu}/topology"));
            let read = |name: &str| std::fs::read_to_string(dir.join(name)).ok().map(|s| s.trim().to_owned());
            let siblings = read("thread_siblings_list")
                .or_else(|| read("core_cpus_list"))
                .and_then(|s| s.parse::<CpuList>().ok())
                .unwrap_or_else(|| CpuList::new(vec![cpu]));
            topo.siblings.insert(cpu, siblings);
            if let Some(p) = read("physical_package_id").and_then(|s| s.parse::<i64>().ok()) {
                topo.package.insert(cpu, u32::try_from(p.max(0)).unwrap_or(0));
            }
            if let Some(c) = read("core_id").and_then(|s| s.parse::<i64>().ok()) {
                topo.core.insert(cpu, u32::try_from(c.max(0)).unwrap_or(0));
            }
        }
        Ok(topo)
    }

    /// `0-1`, or `0-1 (online: 0-31)` when loadgate's affinity allows fewer CPUs than are online.
    pub fn describe(&self) -> String {
        if self.allowed == self.online {
            format!("{}", self.online)
        } else {
            format!("{} (of online CPUs {})", self.allowed, self.online)
        }
    }
}

/// The CPUs the calling thread may run on (`sched_getaffinity`).
pub fn current_affinity() -> Result<CpuList, MachineError> {
    // SAFETY: an all-zero cpu_set_t is the valid empty set; sched_getaffinity writes at most its size.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: set is a valid, writable cpu_set_t of the size passed.
    if unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) } != 0 {
        return Err(MachineError::Affinity { cpus: "(query)".to_owned(), source: std::io::Error::last_os_error() });
    }
    let capacity = 8 * std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: CPU_ISSET reads within the set for indices below its capacity.
    let cpus = (0..capacity).filter(|&c| unsafe { libc::CPU_ISSET(c, &set) }).map(|c| c as u32).collect();
    Ok(CpuList::new(cpus))
}

/// The `Cpus_allowed_list` of a process (`tid: None`) or of one of its threads, from `/proc/PID/status` or
/// `/proc/PID/task/TID/status`: the pinning really applied.
pub fn cpus_allowed(pid: u32, tid: Option<u32>) -> Result<CpuList, MachineError> {
    let path = match tid {
        Some(t) => PathBuf::from(format!("/proc/{pid}/task/{t}/status")),
        None => PathBuf::from(format!("/proc/{pid}/status")),
    };
    let text = std::fs::read_to_string(&path).map_err(|source| MachineError::Read { path: path.clone(), source })?;
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .ok_or_else(|| MachineError::Parse { path: path.clone(), detail: "no Cpus_allowed_list line".to_owned() })?;
    line.trim()
        .parse()
        .map_err(|_| MachineError::Parse { path, detail: format!("`{}` is not a CPU list", line.trim()) })
}

/// What to do about the spec's pinning on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PinningDecision {
    /// Run with these CPUs (possibly fewer than asked, with warnings, under `warn`).
    Run(AppliedPinning),
    /// `on_mismatch: fail` and a CPU is missing: do not run (exit 3).
    Fail { message: String },
    /// `on_mismatch: skip` and a CPU is missing: do not run, exit 0 with the note.
    Skip { message: String },
}

/// The pinning to apply, and what a reader must know about it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AppliedPinning {
    pub generator_requested: Option<CpuList>,
    pub target_requested: Option<CpuList>,
    /// The generator CPUs to use; `None`: unpinned.
    pub generator: Option<CpuList>,
    /// The target CPUs to use; `None`: unpinned.
    pub target: Option<CpuList>,
    /// Sentences for every report: mismatches handled under `warn`, overlap, split SMT siblings.
    pub warnings: Vec<String>,
    /// `--pin-within-affinity`: each CPU the spec names and the allowed CPU it was mapped onto (empty: the
    /// spec's CPU ids are used as they are).
    pub mapping: Vec<(u32, u32)>,
}

impl AppliedPinning {
    /// The results model's form, with the CPU each worker thread runs on.
    pub fn to_results(&self, workers: Vec<Option<u32>>) -> Pinning {
        let text = |c: &Option<CpuList>| c.as_ref().map(ToString::to_string);
        Pinning {
            generator_requested: text(&self.generator_requested),
            generator_applied: text(&self.generator),
            target_requested: text(&self.target_requested),
            target_applied: text(&self.target),
            workers,
            warnings: self.warnings.clone(),
            cpu_map: self.mapping.iter().map(|&(spec, cpu)| CpuMapping { spec, cpu }).collect(),
        }
    }

    /// The CPU each planned worker runs on, given each worker's planned CPU (`None`: unpinned): its planned CPU
    /// (mapped, under `--pin-within-affinity`) when the applied generator list holds it, unpinned otherwise.
    pub fn worker_cpus(&self, planned: &[Option<u32>]) -> Vec<Option<u32>> {
        let map = |cpu: u32| self.mapping.iter().find(|(spec, _)| *spec == cpu).map_or(cpu, |&(_, used)| used);
        planned
            .iter()
            .map(|cpu| cpu.map(map).filter(|c| self.generator.as_ref().is_some_and(|g| g.contains(*c))))
            .collect()
    }
}

/// The spec's pinned CPUs mapped onto the CPUs this process may use (`--pin-within-affinity`): in a container
/// the CPU ids a cpuset or Kubernetes' static CPU manager hands out are arbitrary (a pod pinned to `2-5` may
/// get `7-10`). The CPUs the spec names (generator and target together, in ascending order) map, the i-th onto
/// the i-th of `allowed`, so that lists keep their sizes, their overlaps and their order. Refused when fewer
/// CPUs are allowed than the spec names.
pub fn map_within_affinity(
    allowed: &CpuList,
    generator: Option<&CpuList>,
    target: Option<&CpuList>,
) -> Result<Vec<(u32, u32)>, String> {
    let named: BTreeSet<u32> = generator.into_iter().chain(target).flat_map(|l| l.cpus().iter().copied()).collect();
    if named.len() > allowed.len() {
        let list = CpuList::new(named.iter().copied().collect());
        return Err(format!(
            "--pin-within-affinity: the spec pins {} {} {list} but this process may use only {} {} {allowed}; \
             give the process (or the pod) at least {} CPUs, or pin fewer in `hardware`",
            named.len(),
            cpus_word(&list),
            allowed.len(),
            cpus_word(allowed),
            named.len()
        ));
    }
    Ok(named.into_iter().zip(allowed.cpus().iter().copied()).collect())
}

/// `list` with each CPU replaced by the one `mapping` gives it.
fn remap(list: &CpuList, mapping: &[(u32, u32)]) -> CpuList {
    CpuList::new(
        list.cpus().iter().map(|c| mapping.iter().find(|(spec, _)| spec == c).map_or(*c, |&(_, used)| used)).collect(),
    )
}

/// [`check_pinning`] of the spec's lists mapped onto `topo.allowed` by [`map_within_affinity`]: the
/// requested lists stay the spec's, the applied ones are the mapped CPUs, and a warning names the mapping.
pub fn check_pinning_within_affinity(
    topo: &CpuTopology,
    generator: Option<&CpuList>,
    target: Option<&CpuList>,
    on_mismatch: OnMismatch,
) -> PinningDecision {
    let mapping = match map_within_affinity(&topo.allowed, generator, target) {
        Ok(m) => m,
        Err(message) => return PinningDecision::Fail { message },
    };
    let gen_mapped = generator.map(|g| remap(g, &mapping));
    let target_mapped = target.map(|t| remap(t, &mapping));
    match check_pinning(topo, gen_mapped.as_ref(), target_mapped.as_ref(), on_mismatch) {
        PinningDecision::Run(mut applied) => {
            applied.generator_requested = generator.cloned();
            applied.target_requested = target.cloned();
            if mapping.iter().any(|(spec, used)| spec != used) {
                let pairs: Vec<String> = mapping.iter().map(|(spec, used)| format!("{spec}->{used}")).collect();
                applied.warnings.insert(
                    0,
                    format!(
                        "--pin-within-affinity: the spec's CPUs mapped onto the CPUs this process may use ({}): {}",
                        topo.allowed,
                        pairs.join(", ")
                    ),
                );
            }
            applied.mapping = mapping;
            PinningDecision::Run(applied)
        }
        other => other,
    }
}

/// The spec's generator CPUs split into `count` disjoint parts, in ascending order, as even as whole CPUs allow
/// (local shards: shard `i` runs on part `i - 1`). `None` when the spec pins fewer generator CPUs than
/// `count`: the shards then share CPUs.
pub fn shard_parts(generator: &CpuList, count: u32) -> Option<Vec<CpuList>> {
    let cpus = generator.cpus();
    let n = usize::try_from(count).ok().filter(|&n| n > 0 && n <= cpus.len())?;
    let (each, extra) = (cpus.len() / n, cpus.len() % n);
    let mut start = 0;
    let parts = (0..n)
        .map(|i| {
            let len = each + usize::from(i < extra);
            let part = CpuList::new(cpus[start..start + len].to_vec());
            start += len;
            part
        })
        .collect();
    Some(parts)
}

/// [`check_pinning`] with the spec's generator CPUs folded onto a shard's part (`run --shard-cpus`): the j-th
/// generator CPU (ascending) runs on the `j mod len`-th CPU of `part`, so the workers keep their planned order
/// and a part with fewer CPUs than the spec's takes them round-robin. The target's CPUs stay the spec's.
pub fn check_pinning_on_part(
    topo: &CpuTopology,
    generator: Option<&CpuList>,
    target: Option<&CpuList>,
    part: &CpuList,
    on_mismatch: OnMismatch,
) -> PinningDecision {
    let Some(spec) = generator else {
        return check_pinning(topo, None, target, on_mismatch);
    };
    let used = part.cpus();
    if used.is_empty() {
        return check_pinning(topo, generator, target, on_mismatch);
    }
    let mapping: Vec<(u32, u32)> =
        spec.cpus().iter().enumerate().map(|(j, &cpu)| (cpu, used[j % used.len()])).collect();
    match check_pinning(topo, Some(part), target, on_mismatch) {
        PinningDecision::Run(mut applied) => {
            applied.generator_requested = Some(spec.clone());
            if mapping.iter().any(|(spec, used)| spec != used) {
                let pairs: Vec<String> = mapping.iter().map(|(spec, used)| format!("{spec}->{used}")).collect();
                applied.warnings.insert(
                    0,
                    format!(
                        "--shard-cpus {part}: this shard's part of the spec's generator CPUs: {}",
                        pairs.join(", ")
                    ),
                );
            }
            applied.mapping = mapping;
            PinningDecision::Run(applied)
        }
        other => other,
    }
}

fn cpus_word(list: &CpuList) -> &'static str {
    if list.len() == 1 {
        "CPU"
    } else {
        "CPUs"
    }
}

/// Checks the spec's CPU lists against the machine and applies `on_mismatch` (see the module doc).
pub fn check_pinning(
    topo: &CpuTopology,
    generator: Option<&CpuList>,
    target: Option<&CpuList>,
    on_mismatch: OnMismatch,
) -> PinningDecision {
    let usable = &topo.allowed;
    let mut mismatches = Vec::new();
    let mut warnings = Vec::new();
    let mut resolve = |side: &str, asked: Option<&CpuList>| -> Option<CpuList> {
        let asked = asked?;
        let kept = asked.intersection(usable);
        if kept.len() == asked.len() {
            return Some(kept);
        }
        let what = format!(
            "the spec pins the {side} to {} {asked} but this machine has {} {}",
            cpus_word(asked),
            cpus_word(usable),
            topo.describe()
        );
        let fallback = if kept.is_empty() {
            format!("the {side} runs unpinned")
        } else {
            format!("the {side} runs on {} {} only", cpus_word(&kept), kept)
        };
        mismatches.push(what.clone());
        warnings.push(format!("{what}; {fallback}"));
        (!kept.is_empty()).then_some(kept)
    };
    let gen_applied = resolve("generator", generator);
    let target_applied = resolve("target", target);
    if !mismatches.is_empty() {
        match on_mismatch {
            OnMismatch::Fail => {
                return PinningDecision::Fail { message: format!("{} (on_mismatch: fail)", mismatches.join("; ")) }
            }
            OnMismatch::Skip => {
                return PinningDecision::Skip {
                    message: format!(
                        "{}; the spec does not apply to this machine (on_mismatch: skip)",
                        mismatches.join("; ")
                    ),
                }
            }
            OnMismatch::Warn => {}
        }
    }
    if let (Some(g), Some(t)) = (&gen_applied, &target_applied) {
        let shared = g.intersection(t);
        if !shared.is_empty() {
            warnings.push(format!(
                "the generator and the target share {} {shared}: they compete for it and the numbers describe both",
                cpus_word(&shared)
            ));
        }
        let mut seen = BTreeSet::new();
        for &gc in g.cpus() {
            let Some(sib) = topo.siblings.get(&gc) else {
                continue;
            };
            let target_side: Vec<u32> =
                sib.cpus().iter().copied().filter(|c| *c != gc && t.contains(*c) && !g.contains(*c)).collect();
            if target_side.is_empty() || !seen.insert(sib.clone()) {
                continue;
            }
            let gen_side = sib.intersection(g);
            let tgt_side = CpuList::new(target_side);
            warnings.push(format!(
                "CPUs {sib} are SMT siblings of one core, split between the generator ({gen_side}) and the target \
                 ({tgt_side}): they share the core's execution units"
            ));
        }
    }
    PinningDecision::Run(AppliedPinning {
        generator_requested: generator.cloned(),
        target_requested: target.cloned(),
        generator: gen_applied,
        target: target_applied,
        warnings,
        mapping: Vec::new(),
    })
}

/// The CPU each planned worker runs on, given each worker's planned CPU (`None`: unpinned): its planned CPU when
/// the applied generator list holds it, unpinned otherwise.
pub fn effective_worker_cpus(planned: &[Option<u32>], generator: Option<&CpuList>) -> Vec<Option<u32>> {
    planned.iter().map(|cpu| cpu.filter(|c| generator.is_some_and(|g| g.contains(*c)))).collect()
}

/// The machine fingerprint. Every field is best effort: what cannot be read is `None`. `repo_dir`, when given
/// and inside a git work tree (and `git` is installed), sets the commit and dirty state.
pub fn fingerprint(repo_dir: Option<&Path>) -> Machine {
    let topo = CpuTopology::read().ok();
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let mut m = Machine {
        hostname: hostname(),
        cpu_model: cpu_model(&cpuinfo),
        kernel: kernel(),
        memory_bytes: std::fs::read_to_string("/proc/meminfo").ok().and_then(|t| mem_total(&t)),
        virtualization: virtualization(&cpuinfo),
        ..Machine::default()
    };
    if let Some(t) = &topo {
        m.online_cpus = Some(t.online.to_string());
        m.logical_cpus = u32::try_from(t.online.len()).ok();
        let sockets: BTreeSet<u32> = t.package.values().copied().collect();
        let cores: BTreeSet<(u32, u32)> =
            t.online.cpus().iter().filter_map(|c| Some((*t.package.get(c)?, *t.core.get(c)?))).collect();
        if !sockets.is_empty() {
            m.sockets = u32::try_from(sockets.len()).ok();
            if !cores.is_empty() {
                m.cores_per_socket = u32::try_from(cores.len() / sockets.len()).ok();
            }
        }
        m.threads_per_core = t.siblings.values().map(CpuList::len).max().and_then(|n| u32::try_from(n).ok());
        let governors: BTreeSet<String> = t
            .online
            .cpus()
            .iter()
            .filter_map(|c| std::fs::read_to_string(format!("{SYSFS_CPU}/cpu{c}/cpufreq/scaling_governor")).ok())
            .map(|g| g.trim().to_owned())
            .filter(|g| !g.is_empty())
            .collect();
        if !governors.is_empty() {
            m.governor = Some(governors.into_iter().collect::<Vec<_>>().join(","));
        }
    }
    if let Some(dir) = repo_dir {
        if let Some((commit, dirty)) = git_state(dir) {
            m.git_commit = Some(commit);
            m.git_dirty = Some(dirty);
        }
    }
    m
}

fn hostname() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname").ok().map(|h| h.trim().to_owned()).filter(|h| !h.is_empty())
}

fn cpu_model(cpuinfo: &str) -> Option<String> {
    for key in ["model name", "Model", "Hardware", "cpu model", "uarch", "Processor"] {
        let found = cpuinfo.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == key && !v.trim().is_empty()).then(|| v.trim().to_owned())
        });
        if found.is_some() {
            return found;
        }
    }
    None
}

fn mem_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

fn kernel() -> Option<String> {
    // SAFETY: an all-zero utsname is valid storage for uname to fill.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: u is valid, writable storage.
    if unsafe { libc::uname(&mut u) } != 0 {
        return None;
    }
    let field = |f: &[libc::c_char]| {
        let bytes: Vec<u8> = f.iter().take_while(|c| **c != 0).map(|c| *c as u8).collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    Some(format!("{} {} {}", field(&u.sysname), field(&u.release), field(&u.machine)))
}

/// `none`, `kvm`, `docker`, `docker on kvm`, `vm (unknown hypervisor)`...: the names systemd-detect-virt gives,
/// found in-process (it is not installed everywhere, and it would cost two processes per run).
fn virtualization(cpuinfo: &str) -> Option<String> {
    let read = |path: &str| std::fs::read_to_string(path).ok();
    let container = container_of(&read, &|path| Path::new(path).exists());
    let flagged = cpuinfo.lines().any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "hypervisor"));
    let dmi: Vec<String> = ["sys_vendor", "product_name", "board_vendor", "bios_vendor", "product_version"]
        .iter()
        .filter_map(|f| read(&format!("/sys/class/dmi/id/{f}")))
        .collect();
    let vm = vm_of(cpuid_hypervisor().as_ref(), &dmi)
        .map(str::to_owned)
        .or_else(|| read("/sys/hypervisor/type").map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()))
        .or_else(|| flagged.then(|| "vm (unknown hypervisor)".to_owned()));
    Some(match (container, vm) {
        (Some(c), Some(v)) => format!("{c} on {v}"),
        (Some(c), None) => c,
        (None, Some(v)) => v,
        (None, None) => "none".to_owned(),
    })
}

/// The hypervisor's 12-byte signature (CPUID leaf 0x4000_0000), when the CPU says it runs under one.
#[cfg(target_arch = "x86_64")]
fn cpuid_hypervisor() -> Option<[u8; 12]> {
    use std::arch::x86_64::__cpuid;
    // Leaf 1, ECX bit 31: running under a hypervisor.
    if __cpuid(1).ecx & (1 << 31) == 0 {
        return None;
    }
    let r = __cpuid(0x4000_0000);
    let mut sig = [0u8; 12];
    for (i, word) in [r.ebx, r.ecx, r.edx].into_iter().enumerate() {
        sig[4 * i..4 * i + 4].copy_from_slice(&word.to_le_bytes());
    }
    Some(sig)
}

#[cfg(not(target_arch = "x86_64"))]
fn cpuid_hypervisor() -> Option<[u8; 12]> {
    None
}

/// The hypervisor named by its CPUID signature, or by the firmware's DMI strings (vendor, product, board, BIOS),
/// as systemd-detect-virt names them; a cloud's DMI name (amazon, google) is preferred to the KVM under it.
fn vm_of(signature: Option<&[u8; 12]>, dmi: &[String]) -> Option<&'static str> {
    const SIGNATURES: &[(&[u8], &str)] = &[
        (b"KVMKVMKVM", "kvm"),
        (b"Linux KVM Hv", "kvm"),
        (b"XenVMMXenVMM", "xen"),
        (b"TCGTCGTCGTCG", "qemu"),
        (b"VMwareVMware", "vmware"),
        (b"Microsoft Hv", "microsoft"),
        (b"bhyve bhyve ", "bhyve"),
        (b"QNXQVMBSQG", "qnx"),
        (b"ACRNACRNACRN", "acrn"),
        (b" lrpepyh  vr", "parallels"),
        (b"SRESRESRESRE", "sre"),
        (b"Apple VZ", "apple"),
    ];
    const DMI: &[(&str, &str)] = &[
        ("Amazon EC2", "amazon"),
        ("Google Compute Engine", "google"),
        ("Google", "google"),
        ("KVM", "kvm"),
        ("OpenStack", "kvm"),
        ("KubeVirt", "kvm"),
        ("QEMU", "qemu"),
        ("VMware", "vmware"),
        ("VMW", "vmware"),
        ("innotek GmbH", "oracle"),
        ("VirtualBox", "oracle"),
        ("Oracle Corporation", "oracle"),
        ("Xen", "xen"),
        ("Bochs", "bochs"),
        ("Parallels", "parallels"),
        ("BHYVE", "bhyve"),
        ("Hyper-V", "microsoft"),
        ("Apple Virtualization", "apple"),
    ];
    let from_dmi = dmi.iter().find_map(|field| {
        let field = field.trim();
        DMI.iter().find(|(prefix, _)| field.starts_with(prefix)).map(|(_, name)| *name)
    });
    let from_cpuid = signature.and_then(|sig| {
        let sig = sig.split(|&b| b == 0).next().unwrap_or(sig);
        SIGNATURES.iter().find(|(s, _)| *s == sig).map(|(_, name)| *name)
    });
    match (from_dmi, from_cpuid) {
        (Some(cloud @ ("amazon" | "google")), _) => Some(cloud),
        (_, Some(hv)) => Some(hv),
        (dmi, None) => dmi,
    }
}

/// The container this process runs in, as systemd-detect-virt `--container` names it: WSL, OpenVZ, what the
/// container manager wrote (`/run/systemd/container`, `/run/host/container-manager`, PID 1's `container=`),
/// Docker's `/.dockerenv`, Podman's `/run/.containerenv`. `read` and `exists` look at the file system.
fn container_of(read: &dyn Fn(&str) -> Option<String>, exists: &dyn Fn(&str) -> bool) -> Option<String> {
    if read("/proc/sys/kernel/osrelease").is_some_and(|r| r.contains("Microsoft") || r.contains("WSL")) {
        return Some("wsl".to_owned());
    }
    if exists("/proc/vz") && !exists("/proc/bc") {
        return Some("openvz".to_owned());
    }
    let named = |text: Option<String>| text.map(|t| t.trim().to_owned()).filter(|t| !t.is_empty());
    if let Some(name) = named(read("/run/host/container-manager")).or_else(|| named(read("/run/systemd/container"))) {
        return Some(name);
    }
    let pid1 = read("/proc/1/environ").and_then(|env| {
        env.split('\0').find_map(|kv| kv.strip_prefix("container=").map(str::to_owned)).filter(|v| !v.is_empty())
    });
    if pid1.is_some() {
        return pid1;
    }
    if exists("/run/.containerenv") {
        return Some("podman".to_owned());
    }
    exists("/.dockerenv").then(|| "docker".to_owned())
}

/// The commit and dirty state (tracked files changed) of the git work tree holding `dir`.
pub fn git_state(dir: &Path) -> Option<(String, bool)> {
    let run = |args: &[&str]| -> Option<String> {
        let out = Command::new("git").arg("-C").arg(dir).args(args).output().ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let commit = run(&["rev-parse", "HEAD"])?.trim().to_owned();
    if commit.is_empty() {
        return None;
    }
    let dirty = !run(&["status", "--porcelain", "--untracked-files=no"])?.trim().is_empty();
    Some((commit, dirty))
}

/// The kernel affinity mask for `cpus` (built before a fork, so that the child only applies it).
pub fn cpu_set(cpus: &CpuList) -> Result<libc::cpu_set_t, MachineError> {
    // SAFETY: cpu_set_t is a plain bit array for which all-zero is the valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let capacity = 8 * std::mem::size_of::<libc::cpu_set_t>();
    for &cpu in cpus.cpus() {
        let cpu = cpu as usize;
        if cpu >= capacity {
            return Err(MachineError::Affinity {
                cpus: cpus.to_string(),
                source: std::io::Error::other(format!("CPU {cpu} is above the {capacity} CPUs an affinity mask holds")),
            });
        }
        // SAFETY: cpu is below the set's capacity, checked above.
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    Ok(set)
}

/// Pins the calling thread to `cpus`.
pub fn pin_current_thread(cpus: &CpuList) -> Result<(), MachineError> {
    let set = cpu_set(cpus)?;
    // SAFETY: set is a valid cpu_set_t of the size passed.
    if unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) } != 0 {
        return Err(MachineError::Affinity { cpus: cpus.to_string(), source: std::io::Error::last_os_error() });
    }
    Ok(())
}

/// Pins every thread of the processes `pids` (each process's `/proc/<pid>/task`) to `cpus`: a running target
/// moved to other CPUs (a duet's targets swap their halves between rounds). A process or thread that ended
/// meanwhile is skipped; a thread that cannot move does not stop the others: the first such error is returned
/// after every thread was tried. The threads pinned.
pub fn pin_processes(pids: &[u32], cpus: &CpuList) -> Result<usize, MachineError> {
    let set = cpu_set(cpus)?;
    let (mut pinned, mut failed) = (0, None);
    for pid in pids {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { continue };
        for tid in tasks.flatten().filter_map(|t| t.file_name().to_str()?.parse::<libc::pid_t>().ok()) {
            // SAFETY: set is a valid cpu_set_t of the size passed.
            if unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) } == 0 {
                pinned += 1;
            } else {
                let e = std::io::Error::last_os_error();
                if e.raw_os_error() != Some(libc::ESRCH) && failed.is_none() {
                    failed = Some(MachineError::Affinity { cpus: cpus.to_string(), source: e });
                }
            }
        }
    }
    failed.map_or(Ok(pinned), Err)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topo(online: &str, siblings: &[&str]) -> CpuTopology {
        let online: CpuList = online.parse().unwrap();
        let mut t = CpuTopology { allowed: online.clone(), online, ..CpuTopology::default() };
        for group in siblings {
            let g: CpuList = group.parse().unwrap();
            for &c in g.cpus() {
                t.siblings.insert(c, g.clone());
            }
        }
        t
    }

    fn cpus(s: &str) -> CpuList {
        s.parse().unwrap()
    }

    #[test]
    fn hypervisors_are_named_as_systemd_detect_virt_names_them() {
        let sig = |s: &[u8]| {
            let mut a = [0u8; 12];
            a[..s.len()].copy_from_slice(s);
            a
        };
        let dmi = |fields: &[&str]| fields.iter().map(|f| format!("{f}\n")).collect::<Vec<_>>();
        assert_eq!(vm_of(Some(&sig(b"KVMKVMKVM")), &[]), Some("kvm"));
        assert_eq!(vm_of(Some(&sig(b"Microsoft Hv")), &[]), Some("microsoft"));
        assert_eq!(vm_of(Some(&sig(b"VMwareVMware")), &dmi(&["VMware, Inc."])), Some("vmware"));
        assert_eq!(vm_of(Some(&sig(b"KVMKVMKVM")), &dmi(&["Amazon EC2", "m7i.large"])), Some("amazon"));
        assert_eq!(vm_of(Some(&sig(b"KVMKVMKVM")), &dmi(&["Google", "Google Compute Engine"])), Some("google"));
        assert_eq!(vm_of(None, &dmi(&["innotek GmbH", "VirtualBox"])), Some("oracle"));
        assert_eq!(vm_of(None, &dmi(&["QEMU", "Standard PC (Q35 + ICH9, 2009)"])), Some("qemu"));
        assert_eq!(vm_of(Some(&sig(b"NoSuchHv")), &[]), None);
        assert_eq!(vm_of(None, &dmi(&["Dell Inc.", "PowerEdge R650"])), None);
    }

    #[test]
    fn containers_are_named_from_what_their_managers_leave() {
        let look = |files: &'static [(&'static str, &'static str)]| {
            let read = move |p: &str| files.iter().find(|(f, _)| *f == p).map(|(_, c)| (*c).to_owned());
            let exists = move |p: &str| files.iter().any(|(f, _)| *f == p);
            container_of(&read, &exists)
        };
        assert_eq!(look(&[("/.dockerenv", "")]), Some("docker".to_owned()));
        assert_eq!(look(&[("/run/.containerenv", "")]), Some("podman".to_owned()));
        assert_eq!(look(&[("/run/systemd/container", "lxc\n"), ("/.dockerenv", "")]), Some("lxc".to_owned()));
        assert_eq!(
            look(&[("/proc/1/environ", "PATH=/bin\0container=systemd-nspawn\0")]),
            Some("systemd-nspawn".to_owned())
        );
        assert_eq!(
            look(&[("/proc/sys/kernel/osrelease", "5.15.90.1-microsoft-standard-WSL2\n")]),
            Some("wsl".to_owned())
        );
        assert_eq!(look(&[("/proc/vz", "")]), Some("openvz".to_owned()));
        assert_eq!(look(&[("/proc/vz", ""), ("/proc/bc", "")]), None, "an OpenVZ host");
        assert_eq!(look(&[("/proc/1/environ", "PATH=/bin\0")]), None);
    }

    #[test]
    fn missing_cpus_under_each_policy() {
        let t = topo("0-1", &["0", "1"]);
        let g = cpus("16-31");
        match check_pinning(&t, Some(&g), None, OnMismatch::Fail) {
            PinningDecision::Fail { message } => assert_eq!(
                message,
                "the spec pins the generator to CPUs 16-31 but this machine has CPUs 0-1 (on_mismatch: fail)"
            ),
            other => panic!("{other:?}"),
        }
        match check_pinning(&t, Some(&g), None, OnMismatch::Skip) {
            PinningDecision::Skip { message } => {
                assert!(message.starts_with("the spec pins the generator to CPUs 16-31 but this machine has CPUs 0-1"));
                assert!(message.ends_with("(on_mismatch: skip)"));
            }
            other => panic!("{other:?}"),
        }
        match check_pinning(&t, Some(&g), Some(&cpus("0,5")), OnMismatch::Warn) {
            PinningDecision::Run(p) => {
                assert_eq!(p.generator, None);
                assert_eq!(p.target, Some(cpus("0")));
                assert_eq!(
                    p.warnings,
                    vec![
                        "the spec pins the generator to CPUs 16-31 but this machine has CPUs 0-1; the generator runs unpinned",
                        "the spec pins the target to CPUs 0,5 but this machine has CPUs 0-1; the target runs on CPU 0 only",
                    ]
                );
                let r = p.to_results(vec![None]);
                assert_eq!(r.generator_requested.as_deref(), Some("16-31"));
                assert_eq!(r.generator_applied, None);
                assert_eq!(r.target_applied.as_deref(), Some("0"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn fitting_pinning_has_no_warning() {
        let t = topo("0-1", &["0", "1"]);
        let d = check_pinning(&t, Some(&cpus("1")), Some(&cpus("0")), OnMismatch::Fail);
        let PinningDecision::Run(p) = d else { panic!("{d:?}") };
        assert!(p.warnings.is_empty(), "{:?}", p.warnings);
        assert_eq!(p.generator, Some(cpus("1")));
    }

    #[test]
    fn overlap_and_split_siblings_are_warned() {
        let t = topo("0-3", &["0,2", "1,3"]);
        let PinningDecision::Run(p) = check_pinning(&t, Some(&cpus("2-3")), Some(&cpus("0,3")), OnMismatch::Fail)
        else {
            panic!()
        };
        assert_eq!(p.warnings.len(), 2, "{:?}", p.warnings);
        assert!(p.warnings[0].contains("share CPU 3"), "{}", p.warnings[0]);
        assert_eq!(
            p.warnings[1],
            "CPUs 0,2 are SMT siblings of one core, split between the generator (2) and the target (0): they share \
             the core's execution units"
        );
    }

    #[test]
    fn affinity_narrower_than_online_is_described() {
        let mut t = topo("0-31", &[]);
        t.allowed = cpus("0-1");
        let PinningDecision::Fail { message } = check_pinning(&t, Some(&cpus("4")), None, OnMismatch::Fail) else {
            panic!()
        };
        assert_eq!(message, "the spec pins the generator to CPU 4 but this machine has CPUs 0-1 (of online CPUs 0-31) (on_mismatch: fail)");
    }

    #[test]
    fn local_shards_get_disjoint_parts_of_the_generator_cpus() {
        let parts =
            |list: &str, n| shard_parts(&cpus(list), n).map(|p| p.iter().map(ToString::to_string).collect::<Vec<_>>());
        assert_eq!(parts("0-3", 2), Some(vec!["0-1".to_owned(), "2-3".to_owned()]));
        assert_eq!(parts("0-4", 2), Some(vec!["0-2".to_owned(), "3-4".to_owned()]));
        assert_eq!(parts("1,3,5", 3), Some(vec!["1".to_owned(), "3".to_owned(), "5".to_owned()]));
        assert_eq!(parts("1", 2), None, "fewer CPUs than shards: they share");
        assert_eq!(parts("0-3", 0), None);

        // Shard 2 of 2 of a spec pinning 0-3 with 4 workers: its part 2-3, the workers folded round-robin.
        let t = topo("0-7", &[]);
        let PinningDecision::Run(p) =
            check_pinning_on_part(&t, Some(&cpus("0-3")), None, &cpus("2-3"), OnMismatch::Fail)
        else {
            panic!()
        };
        assert_eq!((p.generator_requested.clone(), p.generator.clone()), (Some(cpus("0-3")), Some(cpus("2-3"))));
        assert_eq!(p.mapping, vec![(0, 2), (1, 3), (2, 2), (3, 3)]);
        let workers: Vec<Option<u32>> = (0..4).map(Some).collect();
        assert_eq!(p.worker_cpus(&workers), vec![Some(2), Some(3), Some(2), Some(3)]);
        assert!(p.warnings[0].starts_with("--shard-cpus 2-3: "), "{:?}", p.warnings);
    }

    #[test]
    fn pinning_within_affinity_maps_the_ith_pinned_cpu_onto_the_ith_allowed() {
        // A pod pinned to 2-5 by its spec, given CPUs 7-10 by the static CPU manager.
        let mut t = topo("0-15", &[]);
        t.allowed = cpus("7-10");
        let PinningDecision::Run(p) = check_pinning_within_affinity(&t, Some(&cpus("2-5")), None, OnMismatch::Fail)
        else {
            panic!()
        };
        assert_eq!(p.generator_requested, Some(cpus("2-5")));
        assert_eq!(p.generator, Some(cpus("7-10")));
        assert_eq!(p.mapping, vec![(2, 7), (3, 8), (4, 9), (5, 10)]);
        assert_eq!(
            p.warnings,
            vec![
                "--pin-within-affinity: the spec's CPUs mapped onto the CPUs this process may use (7-10): 2->7, \
                  3->8, 4->9, 5->10"
            ]
        );
        let workers = [Some(3), Some(5)];
        assert_eq!(p.worker_cpus(&workers), vec![Some(8), Some(10)]);
        let results = p.to_results(p.worker_cpus(&workers));
        assert_eq!(results.cpu_map[0], CpuMapping { spec: 2, cpu: 7 });
        assert_eq!(results.generator_applied.as_deref(), Some("7-10"));

        // Generator and target together keep their order and their overlap.
        t.allowed = cpus("4,6,8");
        let PinningDecision::Run(p) =
            check_pinning_within_affinity(&t, Some(&cpus("1-2")), Some(&cpus("0")), OnMismatch::Fail)
        else {
            panic!()
        };
        assert_eq!((p.generator, p.target), (Some(cpus("6,8")), Some(cpus("4"))));
    }

    #[test]
    fn pinning_within_affinity_refuses_fewer_allowed_cpus_than_pinned() {
        let mut t = topo("0-15", &[]);
        t.allowed = cpus("7-8");
        let PinningDecision::Fail { message } =
            check_pinning_within_affinity(&t, Some(&cpus("2-5")), None, OnMismatch::Warn)
        else {
            panic!()
        };
        assert_eq!(
            message,
            "--pin-within-affinity: the spec pins 4 CPUs 2-5 but this process may use only 2 CPUs 7-8; give the \
             process (or the pod) at least 4 CPUs, or pin fewer in `hardware`"
        );
        // Nothing pinned, nothing mapped.
        assert_eq!(map_within_affinity(&cpus("7-8"), None, None), Ok(Vec::new()));
    }

    #[test]
    fn workers_on_missing_cpus_run_unpinned() {
        let workers = [Some(1), Some(17), None];
        assert_eq!(effective_worker_cpus(&workers, Some(&cpus("0-1"))), vec![Some(1), None, None]);
        assert_eq!(effective_worker_cpus(&workers, None), vec![None, None, None]);
    }

    #[test]
    fn reads_a_fake_sysfs() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("online"), "0-3\n").unwrap();
        for (cpu, sib, core) in [(0, "0,2", 0), (1, "1,3", 1), (2, "0,2", 0), (3, "1,3", 1)] {
            let d = dir.path().join(format!("cpu{cpu}/topology"));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("thread_siblings_list"), sib).unwrap();
            std::fs::write(d.join("physical_package_id"), "0").unwrap();
            std::fs::write(d.join("core_id"), core.to_string()).unwrap();
        }
        let t = CpuTopology::from_sysfs(dir.path(), Some(cpus("0-1"))).unwrap();
        assert_eq!(t.online, cpus("0-3"));
        assert_eq!(t.allowed, cpus("0-1"));
        assert_eq!(t.siblings[&2], cpus("0,2"));
        assert_eq!(t.core[&3], 1);
        let err = CpuTopology::from_sysfs(&dir.path().join("nope"), None).unwrap_err();
        assert!(err.to_string().starts_with("cannot read "), "{err}");
    }

    #[test]
    fn fingerprint_of_this_machine() {
        let m = fingerprint(None);
        assert!(m.logical_cpus.unwrap_or(0) >= 1);
        assert!(m.memory_bytes.unwrap_or(0) > 0);
        assert!(m.kernel.as_deref().unwrap_or("").starts_with("Linux "));
        assert!(m.virtualization.is_some());
        assert_eq!(m.git_commit, None);
        let here = fingerprint(Some(Path::new(env!("CARGO_MANIFEST_DIR"))));
        if let Some(c) = here.git_commit {
            assert_eq!(c.len(), 40);
            assert!(here.git_dirty.is_some());
        }
        let not_repo = tempfile::tempdir().unwrap();
        assert_eq!(fingerprint(Some(not_repo.path())).git_commit, None);
    }

    #[test]
    fn parsers() {
        assert_eq!(mem_total("MemTotal:       16315400 kB\nMemFree: 1 kB\n"), Some(16_315_400 * 1024));
        assert_eq!(cpu_model("processor\t: 0\nmodel name\t: AMD EPYC 7B13\n").as_deref(), Some("AMD EPYC 7B13"));
        assert_eq!(cpu_model(""), None);
    }

    #[test]
    fn a_running_process_is_moved_to_other_cpus_with_all_its_threads() {
        let mut child = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let cpus: CpuList = "0".parse().unwrap();
        let pinned = pin_processes(&[child.id(), u32::MAX - 1], &cpus).unwrap();
        let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(pinned, 1, "sleep has one thread; a process that is gone is skipped");
        let allowed = status.lines().find(|l| l.starts_with("Cpus_allowed_list:")).unwrap();
        assert_eq!(allowed.split_whitespace().last(), Some("0"), "{allowed}");
    }
}
