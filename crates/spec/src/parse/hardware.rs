//! `hardware`: CPU pinning of the generator and the target, and what to do when the machine cannot honour it.

use crate::diag::Diagnostic;
use crate::node::{Node, Path};
use crate::read::Cx;
use crate::units::CpuList;
use crate::{OnMismatch, SaturationPolicy};
use loadgate_model::spec::*;

use super::fields::enum_error;
use super::keys::{GENERATOR_KEYS, HARDWARE_KEYS, TARGET_CPU_KEYS};

pub(super) fn read_hardware(cx: &mut Cx<'_>, node: &Node, path: &Path) -> Option<Hardware> {
    let f = cx.map(node, path, HARDWARE_KEYS, "`hardware`")?;
    let mut hw = Hardware::default();
    let mut ok = true;
    if let Some((n, p)) = f.get("generator") {
        if let Some(g) = cx.map(n, &p, GENERATOR_KEYS, "`hardware.generator`") {
            if let Some((n, p)) = g.get("cpus") {
                hw.generator_cpus = cx.unit::<CpuList>(n, &p, "`cpus`");
                ok &= hw.generator_cpus.is_some();
            }
            if let Some((n, p)) = g.get("threads") {
                let t = cx.uint(n, &p, "`threads`", 1);
                ok &= t.is_some();
                if let Some(t) = t {
                    if t > 4096 {
                        cx.error(
                            Diagnostic::error(&p, n.span, "`threads` is too large")
                                .expected("at most 4096 worker threads")
                                .found(n.describe()),
                        );
                        ok = false;
                    }
                    hw.threads = u32::try_from(t).ok();
                }
            }
            if let Some((n, p)) = g.get("pacing") {
                match cx.string(n, &p, "`pacing`").as_deref() {
                    Some("default") => hw.pacing = crate::Pacing::Default,
                    Some("precise") => hw.pacing = crate::Pacing::Precise,
                    Some(other) => {
                        cx.error(enum_error(&p, n, "`pacing`", other, &["default", "precise"]));
                        ok = false;
                    }
                    None => ok = false,
                }
            }
        } else {
            ok = false;
        }
    }
    if let Some((n, p)) = f.get("target") {
        if let Some(t) = cx.map(n, &p, TARGET_CPU_KEYS, "`hardware.target`") {
            if let Some((n, p)) = t.get("cpus") {
                hw.target_cpus = cx.unit::<CpuList>(n, &p, "`cpus`");
                ok &= hw.target_cpus.is_some();
            }
        } else {
            ok = false;
        }
    }
    if let Some((n, p)) = f.get("saturation") {
        match cx.string(n, &p, "`saturation`").as_deref() {
            Some("auto") => hw.saturation = SaturationPolicy::Auto,
            Some("invalid") => hw.saturation = SaturationPolicy::Invalid,
            Some("warn") => hw.saturation = SaturationPolicy::Warn,
            Some(other) => {
                cx.error(enum_error(&p, n, "`saturation`", other, &["auto", "invalid", "warn"]));
                ok = false;
            }
            None => ok = false,
        }
    }
    if let Some((n, p)) = f.get("on_mismatch") {
        match cx.string(n, &p, "`on_mismatch`").as_deref() {
            Some("fail") => hw.on_mismatch = OnMismatch::Fail,
            Some("warn") => hw.on_mismatch = OnMismatch::Warn,
            Some("skip") => hw.on_mismatch = OnMismatch::Skip,
            Some(other) => {
                cx.error(enum_error(&p, n, "`on_mismatch`", other, &["fail", "warn", "skip"]));
                ok = false;
            }
            None => ok = false,
        }
    }
    ok.then_some(hw)
}
