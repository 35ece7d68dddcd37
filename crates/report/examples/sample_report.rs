//! Writes the reports of the hand-built sample run (`loadgate_results::fixture::sample_run`) into a directory:
//! report.md, report.html and the SVG plots, to look at them in a browser without running a load.
//!
//! `cargo run -p loadgate-report --example sample_report -- DIR`

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = PathBuf::from(std::env::args().nth(1).ok_or("usage: sample_report DIR")?);
    std::fs::create_dir_all(&dir)?;
    let r = loadgate_results::fixture::sample_run();
    let mut plots = Vec::new();
    for f in loadgate_plot::figures(&r) {
        let svg = loadgate_plot::render(&r, &f)?;
        std::fs::write(dir.join(&f.file), &svg)?;
        plots.push((f, svg));
    }
    std::fs::write(dir.join("report.html"), loadgate_report::html(&r, &plots)?)?;
    std::fs::write(dir.join("report.md"), loadgate_report::markdown(&r, None)?)?;
    println!("wrote {} plots, report.html and report.md to {}", plots.len(), dir.display());
    Ok(())
}
