//! Profiles of a process tree under load, as `perf record -p` takes them, without `perf`.
//!
//! - [`probe`] tells what sampling this process may do here ([`Access`]): user and kernel stacks, user stacks
//!   only (`kernel.perf_event_paranoid` 2 without `CAP_PERFMON`), or nothing (paranoid 3 and more, as Debian and
//!   Ubuntu ship, or a seccomp filter such as Docker's default), with one sentence naming what to change.
//! - [`Sampler::start`] samples the tree of a pid with a software `cpu-clock` event per thread and CPU (rings
//!   shared per CPU, `inherit` for threads and children created later, a rescan for those that raced the
//!   attach); [`Sampler::stop`] returns a [`RawProfile`] of unresolved stacks, bounded by
//!   [`SamplerOptions::max_stacks`]. Unwinding is DWARF CFI over the copied user stack (framehop), with the
//!   kernel's frame-pointer chain where DWARF yields at most one frame.
//! - [`RawProfile::symbolize`] names the frames after the run from the files the tree had mapped (held open
//!   since they were mapped), separate debug files, JIT perf maps and `/proc/kallsyms`: a [`Profile`] with
//!   stacks root first and [`ProfileStats`] (samples, lost, symbolized share, depth, coverage).
//! - [`TreeCpu::read`] reads the tree's CPU time from per-thread `schedstat`; [`CpuReading::since`] gives the
//!   time between two readings ([`CpuDelta`]), threads and children that exited in between included.
//! - [`allow_any_tracer`] lets an external profiler attach under Yama `ptrace_scope` 1 (call it in the
//!   target's `pre_exec`).
//!
//! Linux only; DWARF unwinding on x86_64 and aarch64 (elsewhere frame pointers only).

mod collect;
mod cpu;
mod elf;
mod error;
mod maps;
mod probe;
mod ptrace;
mod raw;
mod record;
mod sampler;
mod symbolize;
mod sys;
mod tree;
mod unwind;

pub use cpu::{CpuDelta, CpuReading, CpuSource, TreeCpu};
pub use error::ProfileError;
pub use probe::{paranoid, probe, Access};
pub use ptrace::allow_any_tracer;
pub use raw::{Counts, RawProfile};
pub use sampler::{Sampler, SamplerOptions};
pub use symbolize::{demangle, Profile, ProfileStats, SymbolizeOptions};
