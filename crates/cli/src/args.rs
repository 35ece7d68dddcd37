//! The command line. Only parsing lives here; the domain types live in the libraries.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use loadgate_model::output::OutputSpec;
use loadgate_model::units::{CpuList, Duration, UnitError};
use loadgate_runner::serve::{ServeConfig, ServeTls, ServerBehaviour};
use loadgate_runner::source::{self, Vars};

/// Declarative benchmark-as-code: YAML specs, an embedded load engine, CI gates.
///
/// Exit codes: 0 every gated SLO held; 1 an SLO failed; 2 the spec or command line is invalid (nothing ran);
/// 3 the run could not be carried out; 4 the run is invalid as a measurement (the generator fell short);
/// 5 inconclusive (a check over repetitions could not tell; `--on-inconclusive` maps it to 0 or 1).
#[derive(Debug, Parser)]
#[command(name = "loadgate", version, propagate_version = true, max_term_width = 110)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,

    /// Print less: only errors and the final verdict.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,

    /// Print more (repeat for more detail).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,

    /// When to use colour: auto (a terminal without NO_COLOR), always, never.
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto, env = "LOADGATE_COLOR")]
    pub color: ColorChoice,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum InconclusiveArg {
    Inconclusive,
    Fail,
    Pass,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AnnotationsArg {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Parse, template and check specs; runs nothing.
    Validate(ValidateArgs),
    /// Compile a spec into its execution plan and print it; runs nothing.
    Plan(PlanArgs),
    /// Print the JSON Schema of the spec language (or of results.json with `--results`).
    Schema(SchemaArgs),
    /// Run specs: start the target, apply the load, gate on the SLOs, write the reports.
    ///
    /// With a URL instead of SPEC, wrk/wrk2-style flags describe a one-scenario run: `loadgate run -c 64 -d 10s
    /// [-R 20000] http://host:8080/` (or `--url URL`).
    Run(Box<RunArgs>),
    /// Re-render junit.xml, report.md, report.html and the SVG plots from a saved results.json; runs nothing.
    Report(ReportArgs),
    /// Put runs side by side: N results.json files (builds, commits, configurations) matched by scenario instance,
    /// with the change of each against the first (and the previous), judged over repetitions.
    ///
    /// Prints a table per metric; `--out DIR` also writes compare.md (seed 003's table), compare.html (a plot per
    /// metric: sweep curves with each run's knee, or grouped bars) and compare.json. Runs of different plans or
    /// machines are compared with a warning naming the difference.
    Compare(CompareArgs),
    /// Keep a history of runs (a SQLite file or PostgreSQL), show each metric's series with its change points,
    /// and judge a spec's `history:` checks (drift, change points) against it.
    History(HistoryArgs),
    /// Merge the shard results of one run (files, or logs holding framed shard results) into one run: check
    /// that every shard is there once, add the histograms, gate, write the reports.
    ///
    /// From a Kubernetes Job (`loadgate k8s`): `kubectl logs -l batch.kubernetes.io/job-name=NAME --tail=-1
    /// --max-log-requests=N > shards.log` (under a selector kubectl keeps only each pod's last 10 lines without
    /// `--tail=-1`, and reads at most 5 pods without `--max-log-requests`), then `loadgate merge shards.log`.
    /// Exit codes as `loadgate run`: 0 pass, 1 an SLO failed, 4 invalid as a measurement (a shard missing,
    /// duplicated, of another run, late or unfinished: each is named), 2 a file that holds no shard result.
    Merge(MergeArgs),
    /// Run a CI run again from its results.json: rebuild the same plan from the spec it embeds (or say why it
    /// cannot), run it as `loadgate run` does, and print this run beside the artifact's numbers.
    ///
    /// The spec, its variables, `--repeat`, `--on-inconclusive` and the data files it read come from the
    /// artifact; a secret variable's value does not (give it with `--secret`), nor does an environment value the
    /// spec read. Refused (exit 2) with the reason when the plan cannot be rebuilt identically. The run itself is
    /// one process on this machine, also for an artifact merged from shards. Exit codes as `loadgate run`.
    Repro(ReproArgs),
    /// Print Kubernetes manifests (a ConfigMap with the spec, a headless Service, an Indexed Job) that run the
    /// spec in N shards; collect with `kubectl logs` and merge with `loadgate merge`.
    ///
    /// The YAML goes to stdout: `loadgate k8s SPEC --shards 4 --image IMAGE > load.yaml; kubectl apply -f
    /// load.yaml`. Needs Kubernetes 1.29 or later (`backoffLimitPerIndex`). The spec's target must be a server
    /// that is already running (`target.base_url`), not `builtin` or `start`. Each pod gets whole CPUs, requests =
    /// limits (the CPUs the spec pins for the generator, else its worker threads), and runs with
    /// `--pin-within-affinity` when the spec pins. Collect and merge: `kubectl logs -l
    /// batch.kubernetes.io/job-name=NAME --tail=-1 --max-log-requests=N > shards.log; loadgate merge shards.log`.
    /// See docs/scale-out.md.
    K8s(K8sArgs),
    /// Run the built-in reference server (what `target: { builtin: ... }` starts).
    Serve(ServeArgs),
    /// Turn a wrk, wrk2, ab, hey, oha, apib or h2load command line, or recorded traffic (`log FILE`, `har FILE`),
    /// into a spec (printed on stdout).
    Import(ImportArgs),
    /// Print a shell completion script: `loadgate completions bash > /etc/bash_completion.d/loadgate`.
    Completions(CompletionsArgs),
    /// Print the man page (roff) on stdout, or write one page per command into a directory.
    ///
    /// `loadgate man | man -l -` reads it; `loadgate man --dir /usr/local/share/man/man1` installs
    /// loadgate.1, loadgate-run.1, ...
    Man(ManArgs),
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, powershell or elvish.
    #[arg(value_name = "SHELL", value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write loadgate.1 and one page per command (loadgate-run.1, ...) into DIR instead of printing loadgate.1.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The command line, quoted as one argument: `loadgate import 'taskset -c 16-31 wrk -t16 -c64 -d1m http://h/x'`.
    /// Several arguments are joined with spaces. Or recorded traffic: `log FILE [--format
    /// combined|common|apache-combined|alb] [--nginx-format F] [--apache-format F] [--url URL]`, `har FILE [--origin
    /// URL] [--url URL]`: a synthetic load with the traffic's request mix and rate (secrets as `env` references).
    #[arg(value_name = "COMMAND", required = true, num_args = 1.., trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<String>,
}

/// Variables for a spec.
#[derive(Debug, Args, Clone, Default)]
pub struct VarArgs {
    /// Override a spec variable: `--set connections=256`. Wins over `LOADGATE_VAR_<NAME>` and the spec's default.
    #[arg(long = "set", value_name = "NAME=VALUE", value_parser = source::assignment)]
    pub sets: Vec<(String, String)>,
    /// Like `--set`, and the value is secret: it is replaced by `***` in every report and printout.
    #[arg(long = "secret", value_name = "NAME=VALUE", value_parser = source::assignment)]
    pub secrets: Vec<(String, String)>,
    /// Let `pick_line` and `pick_csv` read files outside the spec's directory tree (refused by default: a spec
    /// from a pull request must not read the runner's files).
    #[arg(long)]
    pub allow_data_outside_spec_dir: bool,
    /// The largest data file `pick_line` and `pick_csv` read, in bytes (default 16 MiB).
    #[arg(long, value_name = "BYTES")]
    pub max_data_file_bytes: Option<u64>,
}

impl VarArgs {
    /// The variables as the spec loader takes them.
    pub fn to_vars(&self) -> Vars {
        Vars {
            sets: self.sets.clone(),
            secrets: self.secrets.clone(),
            allow_data_outside_spec_dir: self.allow_data_outside_spec_dir,
            max_data_file_bytes: self.max_data_file_bytes,
        }
    }
}

fn parse_linger(s: &str) -> Result<std::time::Duration, String> {
    unit(s).map(|d: loadgate_model::units::Duration| d.0)
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Spec files to check.
    #[arg(required = true, value_name = "SPEC")]
    pub specs: Vec<PathBuf>,
    #[command(flatten)]
    pub vars: VarArgs,
}

#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The spec file.
    #[arg(value_name = "SPEC")]
    pub spec: PathBuf,
    /// Print the plan as JSON for machines.
    #[arg(long)]
    pub json: bool,
    /// Show slice I of N of the plan (what `loadgate run SPEC --shard I/N` runs), I from 1.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<loadgate_plan::Slice>,
    #[command(flatten)]
    pub vars: VarArgs,
}

#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// Print the schema of results.json instead of the spec's.
    #[arg(long)]
    pub results: bool,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Spec files, run one after the other; or one URL (`http://` or `https://`), as wrk takes it: `loadgate run
    /// -c 10 -d 2s http://127.0.0.1:8080/`.
    #[arg(value_name = "SPEC|URL")]
    pub specs: Vec<String>,
    /// Where the reports go: `<DIR>/<spec name>/`. `-` prints results.json on stdout and leaves no files (the
    /// terminal summary then goes to stderr).
    #[arg(long, value_name = "DIR", default_value = "loadgate-out", env = "LOADGATE_OUT")]
    pub out: PathBuf,
    /// Print results.json on stdout when the run ends (one document per spec), besides writing the reports; the
    /// terminal summary then goes to stderr.
    #[arg(long)]
    pub json: bool,
    /// Print wrk's latency distribution (50%, 75%, 90%, 99%) after each scenario instance.
    #[arg(long)]
    pub latency: bool,
    /// Print wrk2's HdrHistogram output after each scenario instance: the latency distribution to 100% and the
    /// detailed percentile spectrum, and for open loads the same for the uncorrected latency (service time).
    #[arg(short = 'U', long = "u_latency", visible_alias = "u-latency")]
    pub u_latency: bool,
    /// On GitHub Actions (`GITHUB_ACTIONS=true`), print an `::error` annotation per failed SLO (and `::warning`
    /// per inconclusive one): auto (on GitHub Actions), always, never.
    #[arg(long, value_name = "WHEN", value_enum, default_value_t = AnnotationsArg::Auto, env = "LOADGATE_ANNOTATIONS")]
    pub annotations: AnnotationsArg,
    #[command(flatten)]
    pub vars: VarArgs,
    /// A results.json to compare against, for SLOs such as `p99 <= baseline * 1.10`.
    #[arg(long, value_name = "FILE", env = "LOADGATE_BASELINE")]
    pub baseline: Option<PathBuf>,
    /// Record the run in this history store (a SQLite file or a `postgres://` URL) and judge the spec's
    /// `history:` checks against it. A run invalid as a measurement, failed or interrupted is not recorded.
    #[arg(long, value_name = "STORE", env = "LOADGATE_HISTORY")]
    pub history: Option<String>,
    #[command(flatten)]
    pub history_meta: RunMetaArgs,
    /// A minijinja template that replaces the built-in Markdown report.
    #[arg(long, value_name = "FILE")]
    pub template: Option<PathBuf>,
    /// Run every gated scenario instance N times (rounds interleaved) and judge its SLOs over the repetitions
    /// (overrides the spec's `gating.repeat`).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: Option<u32>,
    /// How fast keep-alive connections open before each phase measures: auto (paced from what the target
    /// takes), unlimited, or a rate such as 2000/s (overrides every load's `connect_rate`).
    #[arg(long, value_name = "RATE", value_parser = unit::<loadgate_model::ConnectRate>)]
    pub connect_rate: Option<loadgate_model::ConnectRate>,
    /// How open loads wait for each request's intended send time: default, or precise (poll until due, for
    /// a pinned, dedicated generator core; overrides `hardware.generator.pacing`).
    #[arg(long, value_name = "MODE", value_enum)]
    pub pacing: Option<PacingArg>,
    /// What an inconclusive verdict makes of the run: inconclusive (exit 5), fail (exit 1) or pass (exit 0).
    #[arg(long, value_name = "WHAT", value_enum)]
    pub on_inconclusive: Option<InconclusiveArg>,
    /// After the run, write its results (every repetition with its histograms, the plan hash, the machine) to
    /// FILE, to commit and compare later runs with (`--baseline FILE`).
    #[arg(long, value_name = "FILE")]
    pub save_baseline: Option<PathBuf>,
    /// Map the spec's pinned CPUs (`hardware.generator.cpus`, `hardware.target.cpus`) onto the CPUs this process
    /// may use (its affinity): the i-th pinned CPU becomes the i-th allowed one (the target's count only when
    /// loadgate starts the target). For a container or pod whose CPU ids are not the spec's (Kubernetes' static
    /// CPU manager gives a pod pinned to 2-5 CPUs such as 7-10).
    /// Refused (exit 3) when fewer CPUs are allowed than the spec pins; results.json's `pinning.cpu_map` records
    /// the mapping.
    #[arg(long, env = "LOADGATE_PIN_WITHIN_AFFINITY", value_parser = clap::builder::BoolishValueParser::new())]
    pub pin_within_affinity: bool,
    /// This shard's part of the spec's generator CPUs (`run --shards N` gives each local shard a disjoint
    /// one): the spec's generator CPUs are folded onto it round-robin; the plan does not change.
    #[arg(long, value_name = "CPUS", requires = "shard", hide = true, value_parser = unit::<CpuList>)]
    pub shard_cpus: Option<CpuList>,
    /// This shard's spec is the one a run from command-line flags made of them (`run --url URL --shards N`):
    /// its results name it `(command line)`, as the run's own, and embed it as that run does (not with a
    /// credential header).
    #[arg(long, requires = "shard", hide = true)]
    pub from_flags: bool,
    /// Stream live metrics while the run goes, to `prometheus=URL` (Prometheus remote write, native
    /// histograms: `http://HOST:9090/api/v1/write`) or `otlp=URL` (OTLP/HTTP protobuf:
    /// `http://HOST:4318/v1/metrics`). Repeatable; plain http. Replaces the spec's `outputs:`; `--output none`
    /// sends nowhere. An endpoint that is down or slow never slows the load: what it could not take is dropped,
    /// counted and reported (and in `export.json`).
    #[arg(long = "output", value_name = "KIND=URL", value_parser = source::output)]
    pub outputs: Vec<Option<OutputSpec>>,
    /// A request header sent with every push of the `--output`s given here (`X-Scope-OrgID: team`,
    /// `Authorization: Bearer TOKEN`). Repeatable. Its value is sent to the endpoint and written nowhere.
    #[arg(long = "output-header", value_name = "NAME: VALUE", value_parser = source::output_header, requires = "outputs")]
    pub output_headers: Vec<(String, String)>,
    /// Serve the live metrics on `http://ADDR/metrics` for a Prometheus that scrapes (text format; histograms
    /// as classic buckets at the native histogram's boundaries), for example `127.0.0.1:9464`. At the end of
    /// the run it waits up to `--metrics-linger` for a scrape of the final values.
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<String>,
    /// How long `--metrics-listen` waits at the end for a scrape of the final values.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = parse_linger)]
    pub metrics_linger: std::time::Duration,
    /// While the run goes, write the results so far to results.partial.json in the reports directory this
    /// often (30s, 5m; 0s: never), so that a run killed before its end (SIGKILL, the OOM killer) leaves what it
    /// measured: `loadgate report results.partial.json` renders it, marked incomplete. A run that writes its
    /// reports removes it.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = unit::<Duration>)]
    pub checkpoint: loadgate_model::units::Duration,
    #[command(flatten)]
    pub shards: ShardArgs,
    #[command(flatten)]
    pub flags: FlagArgs,
}

/// `--pacing`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PacingArg {
    Default,
    Precise,
}

/// A value in loadgate's units: a duration (`5s`), a connect rate (`2000/s`), a CPU list in taskset syntax (`0-3`).
fn unit<T: std::str::FromStr<Err = UnitError>>(text: &str) -> Result<T, String> {
    text.parse().map_err(|e: UnitError| format!("expected {}", e.expected))
}

/// One run on several generators (see docs/scale-out.md).
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = "Shards (one run on several generators)")]
#[group(id = "shard_or_count", multiple = true, args = ["shard", "shard_count"])]
pub struct ShardArgs {
    /// Run slice I of N of the plan (I from 1) and write a shard result, `<DIR>/<spec name>/shard-I-of-N.json`
    /// (with `--out -`, framed on stdout); `loadgate merge` adds the shards into one run.
    #[arg(long, value_name = "I/N", conflicts_with_all = ["shard_count", "shards"])]
    pub shard: Option<loadgate_plan::Slice>,
    /// Run slice JOB_COMPLETION_INDEX + 1 of N (the index a Kubernetes Indexed Job gives each pod, from 0).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=10_000), conflicts_with = "shards")]
    pub shard_count: Option<u32>,
    /// Run N shards as processes on this machine, then merge them (what `loadgate merge` does) into
    /// `<DIR>/<spec name>/`.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub shards: Option<u32>,
    /// The identity shared by the shards of one run: `loadgate merge` refuses a shard of another run. Default:
    /// the plan's hash.
    #[arg(long, value_name = "ID", env = "LOADGATE_RUN_ID")]
    pub run_id: Option<String>,
    /// Start the first phase at this time (RFC 3339, `2026-11-24T21:00:00Z`); each shard records its skew.
    #[arg(long, value_name = "TIME", requires = "shard_or_count")]
    pub start_at: Option<String>,
    /// Meet the other shards before the first phase: shard 1 listens on PORT (all interfaces), the others
    /// connect to HOST:PORT; all start together a moment after the last one arrived.
    #[arg(long, value_name = "HOST:PORT", requires = "shard_or_count", conflicts_with = "start_at")]
    pub barrier: Option<String>,
    /// How long a shard waits at the barrier for the others (default 5m).
    #[arg(long, value_name = "DURATION", default_value = "5m")]
    pub barrier_timeout: String,
}

/// A one-scenario run from the flags people type from memory (wrk, wrk2, ab).
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = "Spec-less run (wrk/wrk2 flags)")]
pub struct FlagArgs {
    /// The URL to load: `http://host:port/path?query` or `https://...` (or give it as the last argument, as in wrk).
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// Connections to keep open.
    #[arg(short = 'c', long, value_name = "N")]
    pub connections: Option<u64>,
    /// How long to run: `10s`, `1m` (a bare number is seconds, as in wrk).
    #[arg(short = 'd', long, value_name = "DURATION")]
    pub duration: Option<String>,
    /// Stop after this many requests instead of a duration (ab `-n`).
    #[arg(short = 'n', long, value_name = "N", conflicts_with = "duration")]
    pub requests: Option<u64>,
    /// Worker threads (default: 1).
    #[arg(short = 't', long, value_name = "N")]
    pub threads: Option<u32>,
    /// Open loop at this constant rate, requests per second (wrk2 `-R`).
    #[arg(short = 'R', long, value_name = "RATE")]
    pub rate: Option<String>,
    /// Per-request timeout: `8s` (a bare number is seconds, as in wrk).
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<String>,
    /// A request header, `-H 'Name: value'`; repeatable.
    #[arg(short = 'H', long = "header", value_name = "HEADER")]
    pub headers: Vec<String>,
    /// The method (default GET).
    #[arg(short = 'm', long, value_name = "METHOD")]
    pub method: Option<String>,
    /// A request body.
    #[arg(long, value_name = "TEXT")]
    pub body: Option<String>,
    /// HTTP/1.1 pipelining depth.
    #[arg(long, value_name = "N")]
    pub pipeline: Option<u32>,
    /// When a pipelined batch's responses are read: `each` as it arrives (default; each completes at its own
    /// arrival) or `batch`, the whole batch in one read when it can all be there (a fifth to a quarter of the
    /// generator's CPU; its responses complete when its last bytes arrived, as wrk records a pipelined batch).
    #[arg(long, value_name = "READS", value_parser = ["each", "batch"], requires = "pipeline")]
    pub pipeline_reads: Option<String>,
    /// A new connection per request (ab without `-k`).
    #[arg(long)]
    pub no_keepalive: bool,
    /// For an https URL: do not check the server's certificate (curl, oha `-k`/`--insecure`); reported loudly.
    #[arg(short = 'k', long)]
    pub insecure: bool,
    /// Speak HTTP/2: h2 over TLS for an https URL, h2c with prior knowledge for http (as `--protocol http2`).
    #[arg(long, conflicts_with = "protocol")]
    pub http2: bool,
    /// The HTTP version: `http1`, `http2` or `auto` (over TLS, what the server picks by ALPN).
    #[arg(long, value_name = "PROTOCOL", value_parser = ["http1", "http2", "auto"])]
    pub protocol: Option<String>,
    /// HTTP/2 concurrent streams per connection (h2load `-m`).
    #[arg(long, value_name = "N")]
    pub streams: Option<u32>,
    /// An SLO to gate on, such as `p99 < 50ms`; repeatable.
    #[arg(long = "slo", value_name = "SLO")]
    pub slos: Vec<String>,
    /// Print the equivalent spec instead of running it.
    #[arg(long)]
    pub print_spec: bool,
}

impl FlagArgs {
    /// The flags as the import library reads them.
    pub fn to_flag_run(&self) -> loadgate_runner::source::FlagRun {
        loadgate_runner::source::FlagRun {
            url: self.url.clone(),
            connections: self.connections,
            duration: self.duration.clone(),
            requests: self.requests,
            threads: self.threads,
            rate: self.rate.clone(),
            timeout: self.timeout.clone(),
            headers: self.headers.clone(),
            method: self.method.clone(),
            body: self.body.clone(),
            pipeline: self.pipeline,
            pipeline_reads: self.pipeline_reads.clone(),
            no_keepalive: self.no_keepalive,
            slos: self.slos.clone(),
            insecure: self.insecure,
            protocol: if self.http2 { Some("http2".to_owned()) } else { self.protocol.clone() },
            streams: self.streams,
            pacing: None,
            connect_rate: None,
        }
    }
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Shard result files (`shard-1-of-4.json`), or any text holding `LOADGATE SHARD` frames (`kubectl logs`);
    /// `-` reads standard input (`kubectl logs -l ... | loadgate merge -`).
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// Where the merged reports go: `<DIR>/<spec name>/`; `-` prints results.json on stdout and writes no files.
    #[arg(long, value_name = "DIR", default_value = "loadgate-out", env = "LOADGATE_OUT")]
    pub out: PathBuf,
    /// A minijinja template that replaces the built-in Markdown report.
    #[arg(long, value_name = "FILE")]
    pub template: Option<PathBuf>,
    /// Earlier results (a results.json): relative SLOs (`p99 <= baseline * 1.10`) are judged on the merge
    /// against it, as `loadgate run --baseline` judges them.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Record the merged run in this history store and judge the spec's `history:` checks on it (as `run
    /// --history`); the shards themselves are never recorded.
    #[arg(long, value_name = "STORE", env = "LOADGATE_HISTORY")]
    pub history: Option<String>,
    #[command(flatten)]
    pub history_meta: RunMetaArgs,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A results.json written by `loadgate run`.
    #[arg(value_name = "RESULTS")]
    pub results: PathBuf,
    /// Where to write junit.xml, report.md, report.html and the SVG plots (default: beside RESULTS).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// A minijinja template that replaces the built-in Markdown report.
    #[arg(long, value_name = "FILE")]
    pub template: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ReproArgs {
    /// A results.json written by `loadgate run` (a CI artifact).
    #[arg(value_name = "RESULTS")]
    pub results: PathBuf,
    /// Where this run's reports go: `<DIR>/<spec name>/`.
    #[arg(long, value_name = "DIR", default_value = "loadgate-out", env = "LOADGATE_OUT")]
    pub out: PathBuf,
    /// The value of a secret variable of the CI run (results.json keeps its name, never its value).
    #[arg(long = "secret", value_name = "NAME=VALUE", value_parser = source::assignment)]
    pub secrets: Vec<(String, String)>,
    /// The baseline the CI run compared with, for SLOs such as `p99 <= baseline * 1.10`.
    #[arg(long, value_name = "FILE", env = "LOADGATE_BASELINE")]
    pub baseline: Option<PathBuf>,
    /// Map the spec's pinned CPUs onto the CPUs this process may use, as `run --pin-within-affinity` does (a
    /// pod's run reproduced in a container whose CPU ids are not the spec's).
    #[arg(long, env = "LOADGATE_PIN_WITHIN_AFFINITY", value_parser = clap::builder::BoolishValueParser::new())]
    pub pin_within_affinity: bool,
}

#[derive(Debug, Args)]
pub struct K8sArgs {
    /// The spec file (its data files travel in the ConfigMap).
    #[arg(value_name = "SPEC")]
    pub spec: PathBuf,
    /// How many shards (pods) run the plan, each slice I of N (1 to 10000).
    #[arg(long, value_name = "N")]
    pub shards: u32,
    /// The container image with `loadgate` on its PATH.
    #[arg(long, value_name = "IMAGE")]
    pub image: String,
    /// The name of the Job, Service and ConfigMap (a DNS label; default: derived from the spec's name).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// The namespace of the three objects (default: the one `kubectl` uses).
    #[arg(long, value_name = "NS")]
    pub namespace: Option<String>,
    /// Override a spec variable, here and in every pod: `--set NAME=VALUE` (for a spec whose `target.base_url`
    /// is `{{ url }}`: `--set url=http://my-service:8080`).
    #[arg(long = "set", value_name = "NAME=VALUE", value_parser = source::assignment)]
    pub sets: Vec<(String, String)>,
    /// A Kubernetes Secret whose keys become every pod's environment (`LOADGATE_VAR_<NAME>` for a secret
    /// variable, or what the spec reads with `{{ env.NAME }}`); secret values are never written into a manifest.
    #[arg(long, value_name = "SECRET")]
    pub secret_from: Option<String>,
    /// Memory per pod, requests = limits (a Kubernetes quantity).
    #[arg(long, value_name = "QUANTITY", default_value = "1Gi")]
    pub memory: String,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// plaintext, echo, delay or cpu.
    #[arg(long, default_value = "plaintext", value_parser = loadgate_runner::serve::kind)]
    pub kind: loadgate_model::BuiltinKind,
    /// With `--kind cpu` only (and required there): the CPU time each request costs (`50us`), spent in the named
    /// functions `parse_request` and `render_response`.
    #[arg(long, value_parser = unit::<Duration>)]
    pub work: Option<Duration>,
    /// With `--kind cpu` only: CPU time added to each request in a callee of `slow_path` (`15us`).
    #[arg(long, value_parser = unit::<Duration>)]
    pub slow_path: Option<Duration>,
    /// The address to listen on; port 0 picks a free one.
    #[arg(long, default_value = "127.0.0.1:0", value_parser = socket_addr)]
    pub listen: std::net::SocketAddr,
    /// With `--kind delay` only (and required there): how long each response waits (`20ms`). Other kinds refuse
    /// it; every kind answers the `/delay/{ms}` route.
    #[arg(long, value_parser = unit::<Duration>)]
    pub delay: Option<Duration>,
    /// The status of every response.
    #[arg(long, default_value_t = 200)]
    pub status: u16,
    /// With `--kind plaintext` or `delay`: the response body size in bytes (default: `Hello, World!`). `echo`
    /// refuses it (it sends the request's body back).
    #[arg(long)]
    pub body_size: Option<u64>,
    /// Send bodies chunked.
    #[arg(long)]
    pub chunked: bool,
    /// Server threads (0: one per CPU loadgate may use).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Serve HTTPS with a self-signed certificate made at start (for localhost, 127.0.0.1 and ::1).
    #[arg(long)]
    pub tls: bool,
    /// Serve HTTPS with this PEM certificate chain (with `--tls-key`).
    #[arg(long, requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of `--tls-cert`.
    #[arg(long, requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
}

/// The server's configuration, field by field (the runner starts the built-in server with the flags
/// [`ServeConfig::to_args`] writes: each of them is a flag here).
impl From<ServeArgs> for ServeConfig {
    fn from(args: ServeArgs) -> Self {
        let tls = match (args.tls_cert, args.tls_key) {
            (Some(cert), Some(key)) => Some(ServeTls::Files { cert, key }),
            _ => args.tls.then_some(ServeTls::SelfSigned),
        };
        let server = ServerBehaviour {
            kind: args.kind,
            delay: args.delay,
            status: args.status,
            body_size: args.body_size,
            chunked: args.chunked,
            work: args.work,
            slow_path: args.slow_path,
        };
        ServeConfig { server, listen: args.listen, threads: args.threads, tls }
    }
}

fn socket_addr(text: &str) -> Result<std::net::SocketAddr, String> {
    text.parse().map_err(|_| format!("`{text}` is not a socket address such as `127.0.0.1:0`"))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AgainstArg {
    /// Every run against the first.
    First,
    /// Every run against the first and against the run before it.
    Previous,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TableFormat {
    /// Aligned tables for a terminal.
    Text,
    /// GitHub-flavoured Markdown.
    Markdown,
    /// The self-contained HTML page (plots inline).
    Html,
    /// JSON (`compare.json`, or the series with their change points).
    Json,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Two or more results.json files, in order: the first is the reference of every change.
    #[arg(value_name = "RESULTS", required = true, num_args = 2..)]
    pub results: Vec<PathBuf>,
    /// A label per run, in order (default: the run's short git commit, else its directory's name).
    #[arg(long = "label", value_name = "LABEL")]
    pub labels: Vec<String>,
    /// The metrics to compare, as an SLO names them (`throughput`, `p50`, `p99.9`, `error_rate`, `capacity`,
    /// ...); repeat or separate with commas. Default: throughput, p50, p99.
    #[arg(long = "metric", value_name = "METRIC", value_delimiter = ',')]
    pub metrics: Vec<String>,
    /// Which changes to show: each run against the first, or also against the run before it.
    #[arg(long, value_enum, default_value_t = AgainstArg::First)]
    pub against: AgainstArg,
    /// The confidence of the intervals over repetitions (`95%` or `0.95`).
    #[arg(long, value_name = "CONFIDENCE", default_value = "95%", value_parser = source::fraction)]
    pub confidence: f64,
    /// A change whose whole interval lies within 1 +/- this is `no change` (`2%` or `0.02`).
    #[arg(long, value_name = "FRACTION", default_value = "2%", value_parser = source::fraction)]
    pub noise: f64,
    /// What to print on stdout.
    #[arg(long, value_enum, default_value_t = TableFormat::Text)]
    pub format: TableFormat,
    /// Also write compare.md, compare.html, compare.json and the plots (compare-*.svg) into DIR.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Exit 1 when a change is judged slower or worse (over repetitions; single runs are never judged).
    #[arg(long)]
    pub fail_on_regression: bool,
}

#[derive(Debug, Args)]
pub struct HistoryArgs {
    #[command(subcommand)]
    pub command: HistoryCommand,
}

/// Where the history is kept.
#[derive(Debug, Args, Clone)]
pub struct StoreArg {
    /// A SQLite file (created when missing) or a PostgreSQL URL (`postgres://user@host/db`; a password is read
    /// from the URL or from PGPASSWORD, never printed).
    #[arg(long, value_name = "STORE", env = "LOADGATE_HISTORY")]
    pub store: String,
}

/// Change-point detection settings (the spec's `history.detection`, Apache Otava's names).
#[derive(Debug, Args, Clone)]
pub struct DetectionArgs {
    /// The significance a change point needs.
    #[arg(long, value_name = "P", default_value_t = 0.001)]
    pub p_value: f64,
    /// The smallest relative change that counts (`5%` or `0.05`).
    #[arg(long, value_name = "FRACTION", default_value = "0", value_parser = source::fraction)]
    pub min_magnitude: f64,
    /// The fewest runs on each side of a change point.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub min_segment: u32,
    /// The sliding window of the first pass, in runs.
    #[arg(long, value_name = "N", default_value_t = 50)]
    pub window: u32,
}

#[derive(Debug, Subcommand)]
pub enum HistoryCommand {
    /// Record runs (results.json files) in the store; a run already there is left as it is.
    Add(HistoryAddArgs),
    /// The series of a spec's instances and metrics over the runs, with their change points.
    Show(HistoryShowArgs),
    /// Judge a spec's `history:` checks (drift, change points) on the newest run in the store; exit codes as
    /// `loadgate run` (0 pass, 1 a check failed, 5 not enough history to tell).
    Check(HistoryCheckArgs),
    /// Write every run of the store as JSON lines (oldest first) on stdout or into a file.
    Export(HistoryExportArgs),
    /// Add the runs of a JSON-lines file (from `history export`) to the store, all or none.
    Import(HistoryImportArgs),
}

/// What identifies a run besides its results.
#[derive(Debug, Args, Clone)]
pub struct RunMetaArgs {
    /// The git branch the run measured (default: GITHUB_HEAD_REF, GITHUB_REF_NAME, CI_COMMIT_REF_NAME, or the
    /// checked-out branch of the current directory).
    #[arg(long, value_name = "BRANCH", env = "LOADGATE_BRANCH")]
    pub branch: Option<String>,
    /// A label for the run (`v1.4.0`, `nightly`): a history check's `reference: { label: ... }` finds it.
    #[arg(long, value_name = "LABEL")]
    pub label: Option<String>,
    /// The git commit measured (default: the one results.json recorded).
    #[arg(long, value_name = "SHA")]
    pub commit: Option<String>,
}

#[derive(Debug, Args)]
pub struct HistoryAddArgs {
    /// results.json files written by `loadgate run` or `loadgate merge`.
    #[arg(value_name = "RESULTS", required = true)]
    pub results: Vec<PathBuf>,
    #[command(flatten)]
    pub store: StoreArg,
    #[command(flatten)]
    pub meta: RunMetaArgs,
}

#[derive(Debug, Args)]
pub struct HistoryShowArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// Only this spec's runs (its `name`).
    #[arg(long, value_name = "NAME")]
    pub spec: Option<String>,
    /// Only these scenario instances (`plaintext[connections=256]`); repeat for more.
    #[arg(long = "instance", value_name = "NAME")]
    pub instances: Vec<String>,
    /// The metrics, as an SLO names them; repeat or separate with commas. Default: throughput, p50, p99.
    #[arg(long = "metric", value_name = "METRIC", value_delimiter = ',')]
    pub metrics: Vec<String>,
    /// Only runs of this branch (default: every branch).
    #[arg(long, value_name = "BRANCH")]
    pub branch: Option<String>,
    /// Only runs on the machine with this fingerprint (as `history show` prints it).
    #[arg(long, value_name = "FINGERPRINT")]
    pub machine: Option<String>,
    /// Only runs started at or after this time (RFC 3339, or a date `2026-11-01`).
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
    /// Only the newest N runs.
    #[arg(long, value_name = "N")]
    pub last: Option<usize>,
    #[command(flatten)]
    pub detection: DetectionArgs,
    /// What to print on stdout.
    #[arg(long, value_enum, default_value_t = TableFormat::Text)]
    pub format: TableFormat,
    /// Also write history.md, history.html, history.json and a trend plot per series (trend-*.svg) into DIR.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct HistoryCheckArgs {
    /// The spec whose `history:` section to judge.
    #[arg(value_name = "SPEC")]
    pub spec: PathBuf,
    #[command(flatten)]
    pub vars: VarArgs,
    #[command(flatten)]
    pub store: StoreArg,
    /// Where to write history.md, junit.xml and the trend plots of the checks (default: nothing is written).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct HistoryExportArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// The file to write (default: stdout).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct HistoryImportArgs {
    /// A JSON-lines file written by `history export` (`-`: stdin).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    #[command(flatten)]
    pub store: StoreArg,
}
