//! Prints the spec for a command line: `cargo run -p loadgate-import --example import -- 'wrk -c 64 http://h/'`.

fn main() {
    let line = std::env::args().skip(1).collect::<Vec<_>>().join(" ");
    match loadgate_import::import(&line) {
        Ok(imported) => print!("{}", imported.yaml),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    }
}
