//! The files a run writes: results.json, junit.xml, report.md, report.html, the SVG plots
//! ([`loadgate_plot::figures`]) and one `.hgrm` per finished scenario instance, each rewritten atomically (a
//! temporary file renamed over the old one) after every phase, so that a crash, a dying target, Ctrl-C or a
//! full disk leaves the last complete set.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use loadgate_model::secrets::Redactor;
use loadgate_plot::Figure;
use loadgate_results::RunResults;

/// A report file that could not be written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteFailure {
    pub path: PathBuf,
    pub error: String,
}

impl std::fmt::Display for WriteFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot write {}: {}", self.path.display(), self.error)
    }
}

/// Writes one run's reports into its directory.
#[derive(Debug)]
pub struct ReportWriter {
    dir: PathBuf,
    template: Option<String>,
    written_hgrm: Vec<String>,
    /// Every file is written through it: no secret reaches a report.
    secrets: Redactor,
}

impl ReportWriter {
    /// Reports go to `dir` (which must exist); `template` replaces the built-in Markdown report; `secrets`
    /// are replaced in every file.
    pub fn new(dir: impl Into<PathBuf>, template: Option<String>, secrets: Redactor) -> Self {
        ReportWriter { dir: dir.into(), template, written_hgrm: Vec::new(), secrets }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes every report. Each file is written on its own: one that fails (a full disk) does not stop the
    /// others. Returns the files that failed. The sweeps are the caller's to bring up to date (the runner judges
    /// their SLOs); without them the reports derive the knees themselves.
    pub fn write_all(&mut self, results: &mut RunResults) -> Vec<WriteFailure> {
        let results = &*results;
        let mut failures = Vec::new();
        let rendered = [
            ("results.json", loadgate_results::to_json(results).map_err(|e| e.to_string())),
            ("junit.xml", loadgate_report::junit(results).map_err(|e| e.to_string())),
            ("report.md", loadgate_report::markdown(results, self.template.as_deref()).map_err(|e| e.to_string())),
        ];
        for (name, content) in rendered {
            let written = content
                .and_then(|c| write_atomic(&self.dir.join(name), &self.secrets.scrub(&c)).map_err(|e| e.to_string()));
            if let Err(error) = written {
                failures.push(WriteFailure { path: self.dir.join(name), error });
            }
        }
        failures.extend(self.write_plots(results));
        failures.extend(self.write_folded(results));
        for s in &results.scenarios {
            let name = format!("{}.hgrm", loadgate_report::file_stem(&s.name));
            if self.written_hgrm.contains(&name) {
                continue;
            }
            match write_atomic(&self.dir.join(&name), &loadgate_results::hgrm(&s.histograms.latency)) {
                Ok(()) => self.written_hgrm.push(name),
                Err(e) => failures.push(WriteFailure { path: self.dir.join(&name), error: e.to_string() }),
            }
        }
        failures
    }

    /// Writes each profiled instance's folded stacks beside results.json (`profile-<instance>[-<side>].folded`), the
    /// format flamegraph.pl, inferno and speedscope read; names scrubbed of secrets like every file of the run.
    fn write_folded(&self, results: &RunResults) -> Vec<WriteFailure> {
        let mut failures = Vec::new();
        let profiles = results.scenarios.iter().flat_map(|s| {
            [s.profile.as_ref(), s.ab_baseline.as_deref().and_then(|b| b.profile.as_ref())].into_iter().flatten()
        });
        for p in profiles {
            let (Some(file), Some(stacks)) = (&p.folded_file, &p.stacks) else { continue };
            let path = self.dir.join(file);
            if let Err(e) = write_atomic(&path, &self.secrets.scrub(&stacks.to_folded())) {
                failures.push(WriteFailure { path, error: e.to_string() });
            }
        }
        failures
    }

    /// Draws every plot of the run, writes each SVG and report.html (the plots inline). A plot that cannot be
    /// drawn is a failure of its file; the page is written without it.
    fn write_plots(&self, results: &RunResults) -> Vec<WriteFailure> {
        let (plots, mut failures) = draw_plots(results, &self.dir);
        for (figure, svg) in &plots {
            let path = self.dir.join(&figure.file);
            if let Err(e) = write_atomic(&path, &self.secrets.scrub(svg)) {
                failures.push(WriteFailure { path, error: e.to_string() });
            }
        }
        let path = self.dir.join("report.html");
        let written = loadgate_report::html(results, &plots)
            .map_err(|e| e.to_string())
            .and_then(|page| write_atomic(&path, &self.secrets.scrub(&page)).map_err(|e| e.to_string()));
        if let Err(error) = written {
            failures.push(WriteFailure { path, error });
        }
        failures
    }

    /// Appends the Markdown report to a file such as GitHub's `GITHUB_STEP_SUMMARY`.
    pub fn append_markdown(&self, results: &RunResults, path: &Path) -> Result<(), WriteFailure> {
        let fail = |error: String| WriteFailure { path: path.to_owned(), error };
        // The plots are files beside report.md, not beside a job summary: no links to them.
        let md =
            loadgate_report::markdown_summary(results, self.template.as_deref()).map_err(|e| fail(e.to_string()))?;
        let md = self.secrets.scrub(&md);
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut f| f.write_all(md.as_bytes()).and_then(|()| f.write_all(b"\n")))
            .map_err(|e| fail(e.to_string()))
    }
}

/// Draws the plots of a run: the ones drawn, and a failure (of the file it would have been) for each that
/// could not be.
fn draw_plots(results: &RunResults, dir: &Path) -> (Vec<(Figure, String)>, Vec<WriteFailure>) {
    let mut plots = Vec::new();
    let mut failures = Vec::new();
    for figure in loadgate_plot::figures(results) {
        match loadgate_plot::render(results, &figure) {
            Ok(svg) => plots.push((figure, svg)),
            Err(e) => failures.push(WriteFailure { path: dir.join(&figure.file), error: e.to_string() }),
        }
    }
    (plots, failures)
}

/// Writes `content` to `path` through a temporary file in the same directory, renamed over `path`.
pub fn write_atomic(path: &Path, content: &str) -> std::io::Result<()> {
    write_atomic_with(path, |mut file| std::io::Write::write_all(&mut file, content.as_bytes()))
}

/// [`write_atomic`] with the content written by `fill` into the temporary file.
pub fn write_atomic_with(
    path: &Path,
    fill: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    let result =
        std::fs::File::create(&tmp).and_then(|mut file| fill(&mut file)).and_then(|()| std::fs::rename(&tmp, path));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Why saved results could not be rendered again.
#[derive(Debug, thiserror::Error)]
pub enum RerenderError {
    /// The Markdown template given does not render (the user's input is wrong).
    #[error("cannot render report.md: {0}")]
    Template(String),
    /// A file could not be rendered or written.
    #[error("{0}")]
    Output(String),
}

/// `loadgate report`: renders junit.xml, report.md, the SVG plots and report.html again from a saved
/// results.json into `dir`.
pub fn rerender(results: &mut RunResults, dir: &Path, template: Option<&str>) -> Result<Vec<PathBuf>, RerenderError> {
    // The sweeps as judged when the run wrote them (their SLOs need the plan); derived for older files.
    if results.sweeps.is_empty() {
        results.sweeps = loadgate_results::sweeps(results);
    }
    let output = RerenderError::Output;
    std::fs::create_dir_all(dir).map_err(|e| output(format!("cannot create {}: {e}", dir.display())))?;
    let junit = loadgate_report::junit(results).map_err(|e| output(format!("cannot render junit.xml: {e}")))?;
    let md = loadgate_report::markdown(results, template).map_err(|e| RerenderError::Template(e.to_string()))?;
    let (plots, failures) = draw_plots(results, dir);
    if let Some(f) = failures.first() {
        return Err(output(f.to_string()));
    }
    let page = loadgate_report::html(results, &plots).map_err(|e| output(format!("cannot render report.html: {e}")))?;
    let mut files =
        vec![("junit.xml".to_owned(), junit), ("report.md".to_owned(), md), ("report.html".to_owned(), page)];
    files.extend(plots.into_iter().map(|(f, svg)| (f.file, svg)));
    let mut written = Vec::new();
    for (name, content) in files {
        let path = dir.join(name);
        write_atomic(&path, &content).map_err(|e| output(format!("cannot write {}: {e}", path.display())))?;
        written.push(path);
    }
    Ok(written)
}

/// Writes a run's results as a baseline to commit (`--save-baseline FILE`): every repetition with its
/// histograms, the plan hash, the machine fingerprint and loadgate's version, secrets replaced. Never written
/// implicitly: a baseline changes only when someone saves it.
pub fn save_baseline(results: &RunResults, path: &Path, secrets: &Redactor) -> Result<(), String> {
    let json = loadgate_results::to_json(results).map_err(|e| format!("cannot serialize the baseline: {e}"))?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    write_atomic(path, &secrets.scrub(&json)).map_err(|e| format!("cannot write the baseline {}: {e}", path.display()))
}
