//! The command line of one shard process (`loadgate run SPEC --shard I/N ...`), written here and nowhere else:
//! for the local shards of `run --shards N` (the runner starts them) and for the pods of `loadgate k8s` (the
//! renderer writes their `args`), from the options the command line gave (the CLI fills [`ShardOptions`]).

use loadgate_model::output::OutputSpec;
use loadgate_model::units::CpuList;
use loadgate_model::{ConnectRate, Pacing};

use crate::model::Slice;

/// Which slice a shard process runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShardPlace {
    /// `--shard I/N`.
    Slice(Slice),
    /// `--shard-count N`: the index comes from `JOB_COMPLETION_INDEX` (the pods of a Kubernetes Indexed Job).
    Indexed(u32),
}

/// What a shard process is given of the command line besides its place: the options that change its plan
/// (variables, data files, repetitions, connect rate, pacing), the pinning map and where it sends live metrics.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ShardOptions {
    /// `--set NAME=VALUE`.
    pub sets: Vec<(String, String)>,
    /// `--secret NAME=VALUE`.
    pub secrets: Vec<(String, String)>,
    pub allow_data_outside_spec_dir: bool,
    pub max_data_file_bytes: Option<u64>,
    pub repeat: Option<u32>,
    pub connect_rate: Option<ConnectRate>,
    pub pacing: Option<Pacing>,
    /// `--pin-within-affinity`.
    pub pin_within_affinity: bool,
    /// `--output`s in order; `None` is `--output none`.
    pub outputs: Vec<Option<OutputSpec>>,
    /// `--output-header NAME: VALUE`.
    pub output_headers: Vec<(String, String)>,
}

/// One shard process's `loadgate run` command line.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardCommand {
    /// The spec file, as the shard process reads it.
    pub spec: String,
    pub place: ShardPlace,
    /// `--run-id`: the identity the shards of one run share.
    pub run_id: Option<String>,
    /// `--barrier HOST:PORT`: where the shards meet before the first phase.
    pub barrier: Option<String>,
    /// `--out`: the directory of reports, or `-` (the shard result framed on stdout).
    pub out: String,
    /// `--shard-cpus`: this shard's part of the spec's generator CPUs.
    pub cpus: Option<CpuList>,
    /// `--quiet --annotations never`: a shard whose output no one reads but its log.
    pub quiet: bool,
    /// `--from-flags`: the spec is the one a run from command-line flags made.
    pub from_flags: bool,
    pub options: ShardOptions,
}

impl ShardCommand {
    /// The arguments after the executable: `run SPEC [--quiet --annotations never] [--from-flags] (--shard I/N |
    /// --shard-count N) [--run-id ID] [--barrier HOST:PORT] --out OUT [--shard-cpus CPUS]`, then the options.
    pub fn args(&self) -> Vec<String> {
        let mut argv = vec!["run".to_owned(), self.spec.clone()];
        let mut flag = |name: &str, value: Option<String>| {
            argv.push(name.to_owned());
            argv.extend(value);
        };
        if self.quiet {
            flag("--quiet", None);
            flag("--annotations", Some("never".to_owned()));
        }
        if self.from_flags {
            flag("--from-flags", None);
        }
        match self.place {
            ShardPlace::Slice(slice) => flag("--shard", Some(slice.to_string())),
            ShardPlace::Indexed(count) => flag("--shard-count", Some(count.to_string())),
        }
        if let Some(id) = &self.run_id {
            flag("--run-id", Some(id.clone()));
        }
        if let Some(barrier) = &self.barrier {
            flag("--barrier", Some(barrier.clone()));
        }
        flag("--out", Some(self.out.clone()));
        if let Some(cpus) = &self.cpus {
            flag("--shard-cpus", Some(cpus.to_string()));
        }
        let o = &self.options;
        if o.pin_within_affinity {
            flag("--pin-within-affinity", None);
        }
        for (k, v) in &o.sets {
            flag("--set", Some(format!("{k}={v}")));
        }
        for (k, v) in &o.secrets {
            flag("--secret", Some(format!("{k}={v}")));
        }
        if o.allow_data_outside_spec_dir {
            flag("--allow-data-outside-spec-dir", None);
        }
        if let Some(n) = o.max_data_file_bytes {
            flag("--max-data-file-bytes", Some(n.to_string()));
        }
        if let Some(n) = o.repeat {
            flag("--repeat", Some(n.to_string()));
        }
        if let Some(rate) = &o.connect_rate {
            flag("--connect-rate", Some(rate.to_string()));
        }
        if let Some(p) = o.pacing {
            flag("--pacing", Some(p.name().to_owned()));
        }
        for output in &o.outputs {
            let value = output.as_ref().map_or_else(|| "none".to_owned(), |o| format!("{}={}", o.kind.name(), o.url));
            flag("--output", Some(value));
        }
        for (name, value) in &o.output_headers {
            flag("--output-header", Some(format!("{name}: {value}")));
        }
        argv
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(place: ShardPlace) -> ShardCommand {
        ShardCommand {
            spec: "spec.yaml".to_owned(),
            place,
            run_id: None,
            barrier: None,
            out: "-".to_owned(),
            cpus: None,
            quiet: false,
            from_flags: false,
            options: ShardOptions::default(),
        }
    }

    #[test]
    fn a_pod_runs_its_index_of_the_count_and_frames_its_result_on_stdout() {
        let mut pod = command(ShardPlace::Indexed(4));
        pod.barrier = Some("lg-0.lg:7878".to_owned());
        pod.options.pin_within_affinity = true;
        pod.options.sets = vec![("url".to_owned(), "http://web:80".to_owned())];
        assert_eq!(
            pod.args(),
            [
                "run",
                "spec.yaml",
                "--shard-count",
                "4",
                "--barrier",
                "lg-0.lg:7878",
                "--out",
                "-",
                "--pin-within-affinity",
                "--set",
                "url=http://web:80"
            ]
        );
    }

    #[test]
    fn a_local_shard_is_quiet_and_gets_its_slice_run_id_barrier_cpus_and_every_option() {
        let mut local = command(ShardPlace::Slice(Slice { index: 2, count: 3 }));
        local.quiet = true;
        local.from_flags = true;
        local.run_id = Some("r".to_owned());
        local.barrier = Some("127.0.0.1:9".to_owned());
        local.out = "out".to_owned();
        local.cpus = Some("2-3".parse().expect("cpus"));
        local.options = ShardOptions {
            secrets: vec![("token".to_owned(), "s".to_owned())],
            allow_data_outside_spec_dir: true,
            max_data_file_bytes: Some(10),
            repeat: Some(5),
            connect_rate: Some(ConnectRate::Unlimited),
            pacing: Some(Pacing::Precise),
            outputs: vec![None],
            output_headers: vec![("X-Scope-OrgID".to_owned(), "team".to_owned())],
            ..ShardOptions::default()
        };
        let args = local.args().join(" ");
        assert_eq!(
            args,
            "run spec.yaml --quiet --annotations never --from-flags --shard 2/3 --run-id r --barrier 127.0.0.1:9 \
             --out out --shard-cpus 2-3 --secret token=s --allow-data-outside-spec-dir --max-data-file-bytes 10 \
             --repeat 5 --connect-rate unlimited --pacing precise --output none --output-header X-Scope-OrgID: team"
        );
    }
}
