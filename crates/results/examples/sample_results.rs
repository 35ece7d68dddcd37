//! Prints the sample run's `results.json` (see `loadgate_results::fixture`), for checking it with other tools:
//! `cargo run -p loadgate-results --example sample_results > results.json`.

fn main() {
    match loadgate_results::to_json(&loadgate_results::fixture::sample_run()) {
        Ok(text) => print!("{text}"),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
