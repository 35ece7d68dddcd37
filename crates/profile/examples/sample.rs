//! Samples a command (or a running pid) and prints the profile's figures and its folded stacks:
//! `cargo run -p loadgate-profile --example sample -- [--fp] [--user] [--stack BYTES] SECONDS (PID | COMMAND ARGS...)`.

use std::process::Command;
use std::time::{Duration, Instant};

use loadgate_profile::{probe, Sampler, SamplerOptions, TreeCpu};

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut opts = SamplerOptions::default();
    while args.first().is_some_and(|a| a.starts_with("--")) {
        match args.remove(0).as_str() {
            "--fp" => opts.dwarf = false,
            "--user" => opts.kernel = false,
            "--stack" => opts.stack_bytes = args.remove(0).parse().unwrap_or(8192),
            other => {
                eprintln!("unknown option {other}");
                std::process::exit(2);
            }
        }
    }
    if args.len() < 2 {
        eprintln!("usage: sample [--fp] [--user] [--stack BYTES] SECONDS (PID | COMMAND ARGS...)");
        std::process::exit(2);
    }
    let secs: f64 = args[0].parse().unwrap_or(1.0);
    eprintln!("access: {:?}", probe());
    let (pid, mut child) = match args[1].parse::<u32>() {
        Ok(pid) if args.len() == 2 => (pid, None),
        _ => {
            let c = Command::new(&args[1]).args(&args[2..]).spawn().unwrap_or_else(|e| {
                eprintln!("cannot start {}: {e}", args[1]);
                std::process::exit(1)
            });
            (c.id(), Some(c))
        }
    };
    let cpu0 = TreeCpu::read(pid).ok();
    let started = Instant::now();
    let sampler = match Sampler::start(pid, &opts) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let deadline = started + Duration::from_secs_f64(secs);
    while Instant::now() < deadline {
        if let Some(c) = child.as_mut() {
            if c.try_wait().ok().flatten().is_some() {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let cpu1 = TreeCpu::read(pid).ok();
    let raw = match sampler.stop() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let t = Instant::now();
    let p = raw.symbolize();
    eprintln!("symbolized in {:?}", t.elapsed());
    if let (Some(a), Some(b)) = (cpu0, cpu1) {
        let d = b.since(&a);
        eprintln!(
            "tree CPU {:.3} s (±{:.3}), samples x period {:.3} s",
            d.ns as f64 / 1e9,
            d.error_bound_ns as f64 / 1e9,
            (p.stats.samples * p.period_ns) as f64 / 1e9
        );
    }
    eprintln!("{:#?}", p.stats);
    // SAFETY: getrusage writes into the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let own = ru.ru_utime.tv_sec as f64
        + ru.ru_stime.tv_sec as f64
        + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) as f64 / 1e6;
    eprintln!("sampler process CPU (sampling + symbolizing): {own:.3} s");
    print!("{}", p.folded());
    if let Some(mut c) = child {
        let _ = c.wait();
    }
}
