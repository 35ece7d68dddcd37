//! A stand-in for `loadgate serve`, for the launcher's tests: `loadgate-target-serve [serve] ARGS...` takes the
//! same arguments, prints the same single `listening on` line and exits on SIGTERM or SIGINT.

use std::io::Write;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let cfg = match loadgate_server::ServeConfig::from_args(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("loadgate-target-serve: {e}");
            std::process::exit(2);
        }
    };
    let result = loadgate_server::serve(&cfg, |addr| {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{}", loadgate_server::listening_line(addr, cfg.tls.is_some()));
        let _ = out.flush();
    });
    if let Err(e) = result {
        eprintln!("loadgate-target-serve: {e}");
        std::process::exit(3);
    }
    eprintln!("loadgate-target-serve: shut down");
}
