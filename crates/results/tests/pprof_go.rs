//! Real Go CPU and heap profiles read into stacks: a small Go program burns CPU in named functions under
//! `pprof.StartCPUProfile` and allocates in one, and the reader must find them with their nesting. Needs `go`
//! (on the PATH, in `/usr/local/go/bin`, or named by `LOADGATE_GO`); skips, saying so, without it.

use std::path::PathBuf;
use std::process::Command;

use loadgate_results::frames::time_table;
use loadgate_results::pprof;

const PROGRAM: &str = r#"package main

import (
	"os"
	"runtime/pprof"
	"syscall"
	"time"
)

var sink uint64
var kept [][]byte

//go:noinline
func allocate() {
	for i := 0; i < 64; i++ {
		kept = append(kept, make([]byte, 64<<10))
	}
}

//go:noinline
func burn(n int) uint64 {
	x := sink
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

//go:noinline
func slowPath() {
	sink += burn(4000)
}

//go:noinline
func handler() {
	sink += burn(1000)
	slowPath()
}

func cpu() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func main() {
	allocate()
	f, err := os.Create(os.Args[1])
	if err != nil {
		panic(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		panic(err)
	}
	// A second of CPU (about 100 samples), however loaded the machine, within a minute.
	end := time.Now().Add(60 * time.Second)
	for cpu() < time.Second && time.Now().Before(end) {
		for i := 0; i < 100; i++ {
			handler()
		}
	}
	pprof.StopCPUProfile()
	f.Close()
	h, err := os.Create(os.Args[2])
	if err != nil {
		panic(err)
	}
	if err := pprof.WriteHeapProfile(h); err != nil {
		panic(err)
	}
	h.Close()
}
"#;

fn go() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("LOADGATE_GO") {
        return Some(PathBuf::from(p));
    }
    let on_path = Command::new("go").arg("version").output().is_ok_and(|o| o.status.success());
    if on_path {
        return Some(PathBuf::from("go"));
    }
    let local = PathBuf::from("/usr/local/go/bin/go");
    local.exists().then_some(local)
}

#[test]
fn a_real_go_cpu_profile_names_its_functions_with_their_nesting() {
    let Some(go) = go() else {
        eprintln!("skipped: no `go` on the PATH, in /usr/local/go/bin or in LOADGATE_GO");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("main.go"), PROGRAM).unwrap();
    std::fs::write(dir.path().join("go.mod"), "module burn\n\ngo 1.21\n").unwrap();
    let out = dir.path().join("cpu.pprof");
    let heap = dir.path().join("heap.pprof");
    let status = Command::new(&go)
        .arg("run")
        .arg(".")
        .arg(&out)
        .arg(&heap)
        .current_dir(dir.path())
        .env("GOFLAGS", "-mod=mod")
        .env("GOCACHE", dir.path().join("cache"))
        .env("GOPATH", dir.path().join("gopath"))
        .env("GOTOOLCHAIN", "local")
        .status()
        .unwrap();
    assert!(status.success(), "go run failed: {status}");
    let bytes = std::fs::read(&out).unwrap();
    assert_eq!(&bytes[..2], &[0x1f, 0x8b], "Go writes profiles gzipped");

    let p = pprof::decode(&bytes, Some("samples")).unwrap();
    assert_eq!(p.sample_types, vec!["samples/count", "cpu/nanoseconds"]);
    assert_eq!((p.period_type.as_str(), p.period_unit.as_str()), ("cpu", "nanoseconds"));
    assert_eq!(p.ns_per_unit(), Some(p.period as f64));
    assert!(p.stacks.total() >= 30, "{} samples in a second of CPU", p.stacks.total());

    // Every stack through slowPath has handler above it and main.main above that; burn is under both.
    let (mut under_slow, mut burn_in_slow, mut total) = (0u64, 0u64, 0u64);
    for (frames, count) in p.stacks.iter() {
        total += count;
        let at = |name: &str| frames.iter().position(|f| *f == name);
        if let Some(slow) = at("main.slowPath") {
            under_slow += count;
            let handler = at("main.handler").expect("slowPath without handler above it");
            let main = at("main.main").expect("handler without main.main above it");
            assert!(main < handler && handler < slow, "{frames:?}");
            if at("main.burn").is_some_and(|b| b > slow) {
                burn_in_slow += count;
            }
        }
    }
    // slowPath burns 4 of every 5 units of work.
    assert!(under_slow * 10 >= total * 6, "{under_slow} of {total} samples under main.slowPath");
    assert!(burn_in_slow * 10 >= under_slow * 9, "{burn_in_slow} of {under_slow} under slowPath in burn");

    let table = time_table(&p.stacks, p.ns_per_unit(), 1, 5);
    let burn = table.by_self.iter().find(|f| f.name == "main.burn");
    assert!(burn.is_some_and(|b| b.self_pct >= 50.0), "{table:#?}");
    let cpu = pprof::decode(&bytes, None).unwrap();
    assert_eq!(cpu.sample_type, "cpu");
    assert_eq!(cpu.stacks.total(), p.stacks.total() * p.period as u64);

    // The heap profile: 4 MiB allocated in main.allocate, in bytes.
    let heap = pprof::decode(&std::fs::read(&heap).unwrap(), Some("alloc_space")).unwrap();
    assert_eq!(heap.unit, "bytes");
    assert_eq!(heap.ns_per_unit(), None);
    let in_allocate: u64 =
        heap.stacks.iter().filter(|(frames, _)| frames.contains(&"main.allocate")).map(|(_, c)| c).sum();
    assert!(in_allocate >= 2 << 20, "{in_allocate} bytes allocated in main.allocate");
    let inuse = pprof::decode(&std::fs::read(dir.path().join("heap.pprof")).unwrap(), Some("inuse_space")).unwrap();
    assert!(inuse.stacks.total() > 0);
}
