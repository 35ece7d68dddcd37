//! Symbolization after the run: each unresolved frame of a `RawProfile` becomes a function name, from the
//! mapped file's `.symtab`/`.dynsym` and a separate debug file (build id under `/usr/lib/debug/.build-id`, or
//! `.gnu_debuglink` beside the binary, in its `.debug` folder or under `/usr/lib/debug`), JIT perf maps
//! (`/tmp/perf-PID.map`) for anonymous code, and `/proc/kallsyms` for kernel addresses. Names are demangled
//! (Rust legacy and v0, C++) and Rust hash suffixes (`::h0123456789abcdef`) are stripped, so a frame keeps its
//! name across builds. No inlined frames are produced (a function inlined into another counts as the other).
//!
//! Frames that do not resolve: `[name-of-file]` for an address in a mapped file without a covering symbol
//! (e.g. a stripped library without debug file), `[unknown]` for anonymous memory without a perf map or an
//! address in no known mapping, `[kernel]` for a kernel address when `/proc/kallsyms` hides addresses.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use crate::elf::{debug_candidates, Image, Symbols};
use crate::raw::{Frame, MappedFile, RawProfile, Source};

/// How frames are resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SymbolizeOptions {
    /// Folders of separate debug files, each searched by build id (`.build-id/ab/cdef….debug`) and by
    /// `.gnu_debuglink` name under the binary's folder. Default: `/usr/lib/debug`.
    pub debug_dirs: Vec<PathBuf>,
}

impl Default for SymbolizeOptions {
    fn default() -> Self {
        SymbolizeOptions { debug_dirs: vec![PathBuf::from("/usr/lib/debug")] }
    }
}

/// A symbolized profile.
#[derive(Clone, Debug, PartialEq)]
pub struct Profile {
    /// Distinct stacks with their sample counts, most samples first. Frames are root first; the root frame is
    /// the sampled process's name (its `comm`, as `perf script`'s folded output has the thread's), then the
    /// kernel frames follow the user ones at the leaf end.
    pub stacks: Vec<(Vec<String>, u64)>,
    /// CPU nanoseconds a sample stands for.
    pub period_ns: u64,
    pub stats: ProfileStats,
}

/// What a profile covers and how well it resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct ProfileStats {
    /// Samples taken (kept or dropped).
    pub samples: u64,
    /// Records the kernel dropped because a ring was full (samples, mostly).
    pub lost: u64,
    /// Samples not kept because the table of distinct stacks was full.
    pub dropped_stacks: u64,
    /// Share of kept samples whose leaf frame resolved to a function name.
    pub symbolized_share: f64,
    /// Share of all kept frames (weighted by samples, the process-name root left out) that did not resolve.
    pub unknown_share: f64,
    /// Share of kept samples unwound with DWARF (the rest: the kernel's frame-pointer chain).
    pub dwarf_share: f64,
    /// Frames per sample (the process-name root left out): `(depth, samples)`, by depth.
    pub depths: Vec<(u32, u64)>,
    /// The median of `depths` (the lower median on a tie).
    pub depth_median: u32,
    /// Whether kernel frames were sampled; false means the profile covers user time only.
    pub kernel_stacks: bool,
    pub threads_seen: u64,
    pub processes_seen: u64,
    /// Kept samples whose leaf is in anonymous executable memory (JIT code) that no perf map names.
    pub jit_unnamed: u64,
    /// The processes with such samples: JIT code without `/tmp/perf-PID.map` (or without its addresses).
    pub jit_without_map: Vec<u32>,
}

impl Profile {
    /// The share of the tree's CPU time (from [`crate::CpuDelta`] over the same span) that the samples stand
    /// for: about 1 with kernel stacks, the user-time share when only user stacks were sampled ("covers user
    /// time, 52% of the target's CPU"). 0 when `cpu_ns` is 0.
    pub fn sampled_share(&self, cpu_ns: u64) -> f64 {
        if cpu_ns == 0 {
            return 0.0;
        }
        self.stats.samples as f64 * self.period_ns as f64 / cpu_ns as f64
    }

    /// The stacks in the folded format (`root;...;leaf count` per line) that flamegraph.pl, inferno and
    /// speedscope read; a `;` or line break inside a name becomes `:` or a space.
    pub fn folded(&self) -> String {
        let mut out = String::new();
        for (frames, n) in &self.stacks {
            let names: Vec<String> = frames.iter().map(|f| f.replace(';', ":").replace(['\n', '\r'], " ")).collect();
            out.push_str(&names.join(";"));
            out.push(' ');
            out.push_str(&n.to_string());
            out.push('\n');
        }
        out
    }
}

/// The symbol tables of one file, loaded on first use.
fn load_symbols(file: &MappedFile, debug_dirs: &[PathBuf]) -> Symbols {
    let mut syms = Symbols::default();
    match &file.source {
        Source::Disk(f) => {
            let _ = syms.add_file(f);
        }
        Source::Memory(b) => {
            let _ = syms.add_bytes(b);
        }
        Source::Missing => {}
    }
    if let Some(image) = file.image.as_deref() {
        for cand in debug_candidates(&file.path, image, debug_dirs) {
            let Ok(f) = fs::File::open(&cand) else { continue };
            if let (Some(want), Ok(dbg)) = (image.build_id.as_deref(), Image::read_file(&f)) {
                if dbg.build_id.as_deref().is_some_and(|got| got != want) {
                    continue;
                }
            }
            if syms.add_file(&f).is_ok() {
                break;
            }
        }
    }
    syms.finish();
    syms
}

/// A sorted table of (start, end, name) from a perf map or kallsyms.
#[derive(Default)]
struct RangeTable(Vec<(u64, u64, String)>);

impl RangeTable {
    fn lookup(&self, addr: u64) -> Option<&str> {
        let i = self.0.partition_point(|e| e.0 <= addr).checked_sub(1)?;
        let (_, end, name) = &self.0[i];
        (addr < *end).then_some(name.as_str())
    }
}

/// The most bytes of a perf map read (a JVM's can reach tens of MB).
const PERF_MAP_LIMIT: u64 = 256 << 20;

/// A text file's first `PERF_MAP_LIMIT` bytes (lossy UTF-8).
fn read_capped(path: &str) -> Option<String> {
    use std::io::Read;
    let mut bytes = Vec::new();
    fs::File::open(path).ok()?.take(PERF_MAP_LIMIT).read_to_end(&mut bytes).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// Reads `/tmp/perf-PID.map` (`START SIZE name`, hexadecimal without `0x`).
fn perf_map(pid: u32) -> RangeTable {
    let Some(text) = read_capped(&format!("/tmp/perf-{pid}.map")) else {
        return RangeTable::default();
    };
    RangeTable(parse_perf_map(&text))
}

fn parse_perf_map(text: &str) -> Vec<(u64, u64, String)> {
    let mut v: Vec<(u64, u64, String)> = text
        .lines()
        .filter_map(|l| {
            let mut it = l.splitn(3, ' ');
            let start = u64::from_str_radix(it.next()?.trim_start_matches("0x"), 16).ok()?;
            let size = u64::from_str_radix(it.next()?.trim_start_matches("0x"), 16).ok()?;
            Some((start, start.saturating_add(size), it.next()?.trim().to_owned()))
        })
        .collect();
    v.sort_by_key(|e| e.0);
    v
}

/// Reads `/proc/kallsyms` (text symbols; an entry ends where the next begins). Empty when addresses are hidden.
fn kallsyms() -> RangeTable {
    let Ok(text) = fs::read_to_string("/proc/kallsyms") else {
        return RangeTable::default();
    };
    let mut v: Vec<(u64, String)> = text
        .lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let addr = u64::from_str_radix(it.next()?, 16).ok()?;
            let kind = it.next()?;
            let name = it.next()?;
            (addr != 0 && matches!(kind, "t" | "T" | "w" | "W")).then(|| (addr, name.to_owned()))
        })
        .collect();
    v.sort_by_key(|e| e.0);
    let mut out = Vec::with_capacity(v.len());
    for i in 0..v.len() {
        let end = v.get(i + 1).map_or(v[i].0.saturating_add(4096), |n| n.0.max(v[i].0.saturating_add(1)));
        out.push((v[i].0, end, std::mem::take(&mut v[i].1)));
    }
    RangeTable(out)
}

/// Demangles a Rust or C++ symbol and strips a Rust hash suffix; other names are returned as they are.
pub fn demangle(name: &str) -> String {
    if let Ok(d) = rustc_demangle::try_demangle(name) {
        return strip_hash(&format!("{d:#}")).to_owned();
    }
    if name.starts_with("_Z") {
        if let Ok(sym) = cpp_demangle::Symbol::new(name.as_bytes()) {
            if let Ok(s) = sym.demangle() {
                return s;
            }
        }
    }
    strip_hash(name).to_owned()
}

/// `a::b::h0123456789abcdef` -> `a::b`.
fn strip_hash(name: &str) -> &str {
    match name.rsplit_once("::h") {
        Some((head, hash)) if hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()) => head,
        _ => name,
    }
}

fn file_label(path: &Path) -> String {
    let base = path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
    format!("[{base}]")
}

impl RawProfile {
    /// Resolves every frame to a name and merges stacks that resolve alike (debug files under
    /// `/usr/lib/debug`).
    pub fn symbolize(&self) -> Profile {
        self.symbolize_with(&SymbolizeOptions::default())
    }

    /// `symbolize` with other debug folders.
    pub fn symbolize_with(&self, opts: &SymbolizeOptions) -> Profile {
        let mut symbols: HashMap<u32, Symbols> = HashMap::new();
        let mut maps: HashMap<u32, RangeTable> = HashMap::new();
        let mut kernel: Option<RangeTable> = None;
        let mut names: HashMap<Frame, Option<String>> = HashMap::new();
        let mut merged: HashMap<Vec<String>, u64> = HashMap::new();
        let (mut kept, mut leaf_ok, mut frames_total, mut frames_unknown) = (0u64, 0u64, 0u64, 0u64);
        let mut depths: HashMap<u32, u64> = HashMap::new();
        let (mut jit_unnamed, mut jit_pids) = (0u64, std::collections::BTreeSet::new());
        for ((comm, frames), &n) in &self.stacks {
            let mut out = Vec::with_capacity(frames.len() + 1);
            out.push(self.comms.get(*comm as usize).cloned().unwrap_or_else(|| "[unknown]".into()));
            for (i, f) in frames.iter().rev().enumerate() {
                let resolved = names
                    .entry(*f)
                    .or_insert_with(|| resolve(self, opts, *f, &mut symbols, &mut maps, &mut kernel))
                    .clone();
                let is_leaf = i + 1 == frames.len();
                match resolved {
                    Some(name) => {
                        if is_leaf {
                            leaf_ok += n;
                        }
                        out.push(name);
                    }
                    None => {
                        if let (true, Frame::Anon { pid, .. }) = (is_leaf, f) {
                            jit_unnamed += n;
                            jit_pids.insert(*pid);
                        }
                        frames_unknown += n;
                        out.push(self.placeholder(*f));
                    }
                }
            }
            frames_total += n * frames.len() as u64;
            kept += n;
            *depths.entry(frames.len() as u32).or_default() += n;
            *merged.entry(out).or_default() += n;
        }
        let mut stacks: Vec<(Vec<String>, u64)> = merged.into_iter().collect();
        stacks.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let mut depths: Vec<(u32, u64)> = depths.into_iter().collect();
        depths.sort_unstable();
        let share = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        let c = &self.counts;
        Profile {
            stacks,
            period_ns: self.period_ns,
            stats: ProfileStats {
                samples: c.samples,
                lost: c.lost,
                dropped_stacks: c.dropped_stacks,
                symbolized_share: share(leaf_ok, kept),
                unknown_share: share(frames_unknown, frames_total),
                dwarf_share: share(c.dwarf_unwound.min(c.samples), c.samples),
                depth_median: lower_median(&depths),
                depths,
                kernel_stacks: self.kernel_stacks,
                threads_seen: c.threads_seen,
                processes_seen: c.processes_seen,
                jit_unnamed,
                jit_without_map: jit_pids.into_iter().collect(),
            },
        }
    }

    fn placeholder(&self, f: Frame) -> String {
        match f {
            Frame::Kernel(_) => "[kernel]".to_owned(),
            Frame::File { file, .. } => {
                self.files.get(file as usize).map_or_else(|| "[unknown]".to_owned(), |m| file_label(&m.path))
            }
            Frame::Anon { .. } | Frame::Unmapped => "[unknown]".to_owned(),
        }
    }
}

fn resolve(
    raw: &RawProfile,
    opts: &SymbolizeOptions,
    f: Frame,
    symbols: &mut HashMap<u32, Symbols>,
    maps: &mut HashMap<u32, RangeTable>,
    kernel: &mut Option<RangeTable>,
) -> Option<String> {
    match f {
        Frame::Kernel(addr) => kernel.get_or_insert_with(kallsyms).lookup(addr).map(str::to_owned),
        Frame::File { file, offset } => {
            let mapped = raw.files.get(file as usize)?;
            let svma = mapped.image.as_deref()?.svma(offset)?;
            let syms = symbols.entry(file).or_insert_with(|| load_symbols(mapped, &opts.debug_dirs));
            syms.lookup(svma).map(demangle)
        }
        Frame::Anon { pid, addr } => maps.entry(pid).or_insert_with(|| perf_map(pid)).lookup(addr).map(demangle),
        Frame::Unmapped => None,
    }
}

fn lower_median(depths: &[(u32, u64)]) -> u32 {
    let total: u64 = depths.iter().map(|d| d.1).sum();
    if total == 0 {
        return 0;
    }
    let half = total.div_ceil(2);
    let mut seen = 0;
    for &(d, n) in depths {
        seen += n;
        if seen >= half {
            return d;
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_names_lose_their_hash_and_cpp_names_are_demangled() {
        assert_eq!(demangle("_ZN7example4main17h0123456789abcdefE"), "example::main");
        assert_eq!(demangle("_ZN3foo3barEv"), "foo::bar()");
        assert_eq!(demangle("main"), "main");
        assert_eq!(demangle("a::b::h0123456789abcdef"), "a::b");
        assert_eq!(demangle("a::b::hxyz"), "a::b::hxyz");
    }

    #[test]
    fn a_perf_map_line_gives_a_range_and_a_name_with_spaces() {
        let t = RangeTable(parse_perf_map("7f00 10 Interpreter\n7f20 0x20 LFoo;::bar (int)\nbad\n"));
        assert_eq!(t.lookup(0x7f05), Some("Interpreter"));
        assert_eq!(t.lookup(0x7f10), None);
        assert_eq!(t.lookup(0x7f3f), Some("LFoo;::bar (int)"));
    }

    #[test]
    fn the_median_depth_is_the_lower_median_over_samples() {
        assert_eq!(lower_median(&[(1, 1), (5, 1)]), 1);
        assert_eq!(lower_median(&[(1, 1), (3, 5), (9, 1)]), 3);
        assert_eq!(lower_median(&[]), 0);
    }

    #[test]
    fn folded_lines_escape_separators_inside_names() {
        let p = Profile {
            stacks: vec![(vec!["app".into(), "a;b".into(), "c".into()], 3)],
            period_ns: 1,
            stats: ProfileStats {
                samples: 3,
                lost: 0,
                dropped_stacks: 0,
                symbolized_share: 1.0,
                unknown_share: 0.0,
                dwarf_share: 0.0,
                depths: vec![],
                depth_median: 0,
                kernel_stacks: false,
                threads_seen: 1,
                processes_seen: 1,
                jit_unnamed: 0,
                jit_without_map: vec![],
            },
        };
        assert_eq!(p.folded(), "app;a:b;c 3\n");
        assert_eq!(p.sampled_share(6), 0.5);
        assert_eq!(p.sampled_share(0), 0.0);
    }
}
