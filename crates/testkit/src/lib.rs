//! What loadgate's tests share (a dev-dependency only, never a dependency of a crate that ships): a small
//! deterministic generator, so that a test's noisy series are the same on every machine and every run, and the
//! real restrictions a test puts a process under ([`refuse_perf_events`]).

use std::os::unix::process::CommandExt as _;
use std::process::Command;

/// Makes `cmd` run under a seccomp filter that refuses `perf_event_open` with EPERM, as Docker's default seccomp
/// profile does (and nothing else): the kernel's own refusal, for tests of what a profile does without sampling.
pub fn refuse_perf_events(cmd: &mut Command) -> &mut Command {
    // SAFETY: between fork and exec only async-signal-safe calls (two prctl) on memory the closure owns.
    unsafe {
        cmd.pre_exec(|| {
            const LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
            const JEQ_K: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
            const RET_K: u16 = 0x06; // BPF_RET | BPF_K
            let nr = libc::SYS_perf_event_open as u32;
            let mut filter = [
                libc::sock_filter { code: LD_W_ABS, jt: 0, jf: 0, k: 0 }, // the system call's number
                libc::sock_filter { code: JEQ_K, jt: 0, jf: 1, k: nr },
                libc::sock_filter { code: RET_K, jt: 0, jf: 0, k: 0x0005_0000 | libc::EPERM as u32 }, // ERRNO
                libc::sock_filter { code: RET_K, jt: 0, jf: 0, k: 0x7fff_0000 },                      // ALLOW
            ];
            let prog = libc::sock_fprog { len: filter.len() as u16, filter: filter.as_mut_ptr() };
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                || libc::prctl(libc::PR_SET_SECCOMP, 2, &prog as *const libc::sock_fprog) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    }
}

/// SplitMix64 (Steele, Lea and Flood), with uniform and Gaussian (Box-Muller) draws from it.
#[derive(Debug, Clone)]
pub struct Noise(pub u64);

impl Noise {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        loadgate_model::splitmix64(&mut self.0)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in (0, 1): never 0, so its logarithm is finite.
    pub fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// Uniform in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// Standard normal (Box-Muller over two [`Noise::uniform`] draws).
    pub fn gaussian(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

#[cfg(test)]
mod tests {
    use super::Noise;

    #[test]
    fn draws_are_in_range_and_repeat_with_the_seed() {
        let mut a = Noise(7);
        let draws: Vec<f64> = (0..1000).map(|_| a.uniform()).collect();
        assert!(draws.iter().all(|u| *u > 0.0 && *u < 1.0));
        let mut b = Noise(7);
        assert_eq!(draws, (0..1000).map(|_| b.uniform()).collect::<Vec<_>>());
        let mean = (0..20_000).map(|_| a.gaussian()).sum::<f64>() / 20_000.0;
        assert!(mean.abs() < 0.05, "{mean}");
        assert!((0..1000).all(|_| a.below(3) < 3));
    }
}
