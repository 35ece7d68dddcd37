//! `outputs`: where a run's live metrics go while it runs (Prometheus remote write, OTLP/HTTP). Nothing here
//! reaches the plan or the results: an output's header values are credentials as often as not.

use loadgate_model::output::{check_url, OutputKind, OutputSpec};

use super::fields::read_choice;
use super::keys::OUTPUT_KEYS;
use super::request::read_headers;
use crate::diag::Diagnostic;
use crate::node::{Node, Path};
use crate::read::Cx;

/// The most outputs a spec may name: each is a sender of its own.
pub(crate) const MAX_OUTPUTS: usize = 8;

const KINDS: &[(&str, OutputKind)] = &[
    ("prometheus_remote_write", OutputKind::PrometheusRemoteWrite),
    ("prometheus", OutputKind::PrometheusRemoteWrite),
    ("otlp", OutputKind::Otlp),
];

/// Reads `outputs: [ { type, url, headers } ]`.
pub(super) fn read_outputs(cx: &mut Cx<'_>, node: &Node, path: &Path) -> Option<Vec<OutputSpec>> {
    let items = cx.list(node, path, "`outputs`")?;
    if items.len() > MAX_OUTPUTS {
        cx.error(
            Diagnostic::error(path, node.span, format!("`outputs` names {} outputs", items.len()))
                .expected(format!("at most {MAX_OUTPUTS}: each output is a sender of its own"))
                .help("send to one collector (Prometheus, an OpenTelemetry Collector) and fan out from there"),
        );
        return None;
    }
    let mut out = Vec::with_capacity(items.len());
    let mut ok = true;
    for (i, item) in items.iter().enumerate() {
        match read_output(cx, item, &path.index(i)) {
            Some(o) => out.push(o),
            None => ok = false,
        }
    }
    ok.then_some(out)
}

fn read_output(cx: &mut Cx<'_>, node: &Node, path: &Path) -> Option<OutputSpec> {
    let f = cx.map(node, path, OUTPUT_KEYS, "an output")?;
    let kind = cx.required(&f, "type", "an output").and_then(|(n, p)| read_choice(cx, n, &p, "`type`", KINDS));
    let url = cx.required(&f, "url", "an output").and_then(|(n, p)| {
        let url = cx.string(n, &p, "`url`")?;
        match check_url(&url) {
            Ok(()) => Some(url),
            Err(why) => {
                cx.error(
                    Diagnostic::error(&p, n.span, "`url` is not an endpoint loadgate can send to")
                        .expected("`http://host:port/path`, for example `http://127.0.0.1:9090/api/v1/write`")
                        .found(why),
                );
                None
            }
        }
    });
    let headers = match f.get("headers") {
        Some((n, p)) => read_headers(cx, n, &p),
        None => Some(Vec::new()),
    };
    if !f.unknown.is_empty() {
        return None;
    }
    Some(OutputSpec { kind: kind?, url: url?, headers: headers? })
}
