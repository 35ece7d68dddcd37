//! The validity verdict of a phase's measurement: what invalidates it (a rate not reached, connections missing)
//! and the warnings beside it (the generator, TLS, HTTP/2, the opening).

use loadgate_measure::{ConnectionOpening, Http2Stats, Problem, TlsStats, Validity};

use super::aggregate::{Ran, Totals};

/// An open load that sent less than this fraction of its target rate is invalid.
const RATE_TOLERANCE: f64 = 0.99;

/// The validity verdict: the problems that invalidate the measurement, then the warnings beside it.
pub(super) fn judge(t: &Totals, ran: &Ran, http2: Option<&Http2Stats>) -> Validity {
    let mut validity = Validity { valid: true, problems: Vec::new(), warnings: Vec::new() };
    if let (Some(target), Some(achieved)) = (ran.target_rate, ran.achieved_rate) {
        // In a request-count run the schedule may simply have ended: judge the requests that were due.
        if target > 0.0 && achieved < RATE_TOLERANCE * target {
            validity.problems.push(Problem {
                kind: "rate_not_reached".into(),
                message: format!(
                    "sent {} requests/s of the {} requests/s target ({:.1}%); {} requests that were due were never sent",
                    fmt_rate(achieved),
                    fmt_rate(target),
                    100.0 * achieved / target,
                    t.requests.unsent
                ),
            });
        }
    }
    if !ran.users && t.slots_connected < t.slots_expected {
        validity.problems.push(Problem {
            kind: "connections_missing".into(),
            message: format!(
                "opened {} of {} planned connections; {} connect attempts failed{}",
                t.slots_connected,
                t.slots_expected,
                t.errors.connect,
                t.first_connect_error.as_ref().map(|e| format!(" (first: {e})")).unwrap_or_default()
            ),
        });
    }
    generator_warnings(&mut validity.warnings, t);
    tls_warnings(&mut validity.warnings, &t.tls);
    if let Some(h) = http2.filter(|h| h.streams_granted > 0 && h.streams_granted < h.streams_asked) {
        validity.warnings.push(Problem {
            kind: "http2_streams_capped".into(),
            message: format!(
                "the server granted {} concurrent streams per connection (SETTINGS_MAX_CONCURRENT_STREAMS), fewer \
                 than the {} asked: each connection carried at most {}",
                h.streams_granted, h.streams_asked, h.streams_granted
            ),
        });
    }
    validity.valid = validity.problems.is_empty();
    validity
}

/// Warnings about the generator: saturated workers, requests the drain cut off, pipelined batches read by force,
/// ephemeral ports run out.
pub(super) fn generator_warnings(warnings: &mut Vec<Problem>, t: &Totals) {
    for w in &t.workers {
        if w.saturated {
            warnings.push(Problem {
                kind: "generator_saturated".into(),
                message: format!(
                    "worker {}{} used {:.0}% of its CPU: the generator may limit the measurement",
                    w.index,
                    w.cpu.map(|c| format!(" (CPU {c})")).unwrap_or_default(),
                    100.0 * w.utilization
                ),
            });
        }
    }
    if t.requests.incomplete > 0 {
        warnings.push(Problem {
            kind: "incomplete_requests".into(),
            message: format!(
                "{} requests were still in flight when the phase ended and the drain ran out",
                t.requests.incomplete
            ),
        });
    }
    // A batch read by force waited 10-200 ms for a mark it could not reach: a measurable share of them held the
    // load back (the target answered, the generator wrote the next batch late).
    let (batches_forced, batches_held) = (t.batches_forced, t.batches_held);
    if batches_forced > 0 && batches_forced.saturating_mul(100) >= batches_held {
        warnings.push(Problem {
            kind: "pipeline_batches_forced".into(),
            message: format!(
                "{batches_forced} of {batches_held} pipelined batches never reached their low-water mark (a response \
                 shorter than any before) and were read after waiting 10-200 ms, so their connections wrote their \
                 next batch late and the throughput is lower than the target's; `pipeline_reads: each` reads each \
                 response as it arrives"
            ),
        });
    }
    let address_unavailable = t.address_unavailable;
    if address_unavailable > 0 {
        warnings.push(Problem {
            kind: "ephemeral_ports_exhausted".into(),
            message: format!(
                "{address_unavailable} connects failed because no local port was free (EADDRNOTAVAIL): the machine ran \
                 out of ephemeral ports, usually to sockets in TIME_WAIT. Use keep-alive or fewer connections, widen \
                 net.ipv4.ip_local_port_range, or enable net.ipv4.tcp_tw_reuse"
            ),
        });
    }
}

/// Warnings about TLS: an unchecked certificate, failed handshakes or records.
pub(super) fn tls_warnings(warnings: &mut Vec<Problem>, tls: &TlsStats) {
    if tls.insecure {
        warnings.push(Problem {
            kind: "tls_insecure".into(),
            message: "INSECURE: the server's TLS certificate was not checked (`tls.insecure: true`, `-k`): the \
                      traffic is encrypted, but to a server nobody verified"
                .into(),
        });
    }
    if tls.errors.total() > 0 {
        let classes: Vec<String> = tls.errors.nonzero().iter().map(|(k, n)| format!("{k} {n}")).collect();
        warnings.push(Problem {
            kind: "tls_errors".into(),
            message: format!(
                "{} TLS failures ({}); first: {}",
                tls.errors.total(),
                classes.join(", "),
                tls.first_error.as_deref().unwrap_or("-")
            ),
        });
    }
}

/// Warnings about the opening. The connections still missing when the load ran are judged by
/// `connections_missing` (the slots keep trying during the load); these say what the opening met.
pub(super) fn opening_warnings(validity: &mut Validity, o: &ConnectionOpening, planned: u64) {
    let failed = o.failed.total();
    if failed > 0 {
        let f = &o.failed;
        let causes: Vec<String> = [
            ("refused", f.refused),
            ("timed out", f.timed_out),
            ("no local port", f.address_unavailable),
            ("other", f.other),
        ]
        .into_iter()
        .filter(|&(_, n)| n > 0)
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
        validity.warnings.push(Problem {
            kind: "connections_not_opened".into(),
            message: format!(
                "opened {} of {planned} connections before the load ({}){}; the rest were tried again during it",
                o.opened,
                causes.join(", "),
                o.first_error.as_ref().map(|e| format!(", first: {e}")).unwrap_or_default()
            ),
        });
    }
    if o.slow_connects > 0 {
        validity.warnings.push(Problem {
            kind: "slow_connects".into(),
            message: format!(
                "{} connects stalled while opening (a SYN the target's full accept queue dropped, most likely) and \
                 were tried again{}; the opening took {:.2} s at {:.0} connections/s (`connect_rate: {}`)",
                o.slow_connects,
                if o.backoffs > 0 { format!(", slowing the pace {} times", o.backoffs) } else { String::new() },
                o.duration_s,
                o.rate_per_s,
                o.connect_rate
            ),
        });
    }
}

fn fmt_rate(r: f64) -> String {
    if r >= 100.0 {
        format!("{r:.0}")
    } else {
        format!("{r:.1}")
    }
}
