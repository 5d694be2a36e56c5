//! `coldtrace context`'s human view: the machine and what can be measured on it, one line each.
//! It renders a context document; reading the machine is measure's job.
#![forbid(unsafe_code)]

use crate::record::context::ContextDocument;
use crate::view::units::{fold, human_kib, human_uptime};
use std::fmt::Write;

/// The context block as aligned `name  value` lines, each folded to `width` columns (a long
/// path or CPU model continues under its value).
pub fn render_context(c: &ContextDocument, width: usize) -> String {
    let mut out = String::new();
    for line in lines(c).lines() {
        let (name, value) = line.split_at(line.len().min(14));
        for folded in fold(value, width, name, &" ".repeat(14)) {
            let _ = writeln!(out, "{folded}");
        }
    }
    out
}

fn lines(c: &ContextDocument) -> String {
    let s = &c.system;
    let q = |v: &Option<String>| v.clone().unwrap_or_else(|| "?".into());
    let kib = |v: Option<u64>| v.map_or("?".into(), |k| human_kib(k as f64));
    let yes = |b: bool| if b { "yes" } else { "no" };
    let cap = &c.capabilities;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "kernel        {} {}",
        q(&s.kernel_release),
        q(&s.kernel_version)
    );
    let _ = writeln!(out, "boot id       {}", q(&s.boot_id));
    let _ = writeln!(
        out,
        "uptime        {}",
        s.uptime_s.map_or("?".into(), human_uptime)
    );
    let _ = writeln!(
        out,
        "cpu           {} × {}",
        s.cpu_count.map_or("?".into(), |n| n.to_string()),
        q(&s.cpu_model)
    );
    let _ = writeln!(
        out,
        "memory        {} total, {} available",
        kib(s.mem_total_kib),
        kib(s.mem_available_kib)
    );
    let _ = writeln!(
        out,
        "load          {}",
        match (s.load_avg_1m, s.load_avg_5m, s.load_avg_15m) {
            (Some(a), Some(b), Some(c)) => format!("{a:.2} {b:.2} {c:.2}"),
            _ => "?".into(),
        }
    );
    let _ = writeln!(out, "cachestat     {}", yes(cap.cachestat));
    let _ = writeln!(out, "PSI           {}", yes(cap.psi));
    let _ = writeln!(
        out,
        "drop_caches   {}",
        if cap.drop_caches_permitted {
            "permitted"
        } else {
            "not permitted (needs root and a writable /proc/sys)"
        }
    );
    let _ = writeln!(out, "task I/O acct {}", yes(cap.task_io_accounting));
    let _ = writeln!(
        out,
        "clear_refs    {}",
        if cap.clear_refs_writable {
            "writable (the RSS floor is reset before each spawn)"
        } else {
            "not writable"
        }
    );
    let _ = writeln!(
        out,
        "perf paranoid {}",
        cap.perf_event_paranoid
            .map_or("?".into(), |p| p.to_string())
    );
    if let Some(v) = &c.environment.virtual_env {
        let _ = writeln!(out, "VIRTUAL_ENV   {v}");
    }
    if let Some(v) = &c.environment.conda_prefix {
        let _ = writeln!(out, "CONDA_PREFIX  {v}");
    }
    out
}
