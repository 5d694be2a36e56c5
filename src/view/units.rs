//! Every human number coldtrace prints: durations, sizes, ratios, uptimes, shortened text.
//! Pure formatting of one value; no tables, no terminal.
#![forbid(unsafe_code)]

use crate::record::metrics::Unit;

/// `1.23 ms`, `845 µs`, `2.50 s`.
pub fn human_ns(ns: f64) -> String {
    if ns >= 1e9 {
        format!("{:.2} s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.0} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

/// `+1.23 ms`, `-845 µs`: a difference of durations, with its sign.
pub fn signed_ns(ns: i64) -> String {
    let sign = if ns < 0 { '-' } else { '+' };
    format!("{sign}{}", human_ns(ns.unsigned_abs() as f64))
}

/// `12.3 MiB`, `900 KiB`.
pub fn human_kib(kib: f64) -> String {
    if kib >= 1024.0 * 1024.0 {
        format!("{:.2} GiB", kib / (1024.0 * 1024.0))
    } else if kib >= 1024.0 {
        format!("{:.1} MiB", kib / 1024.0)
    } else {
        format!("{kib:.0} KiB")
    }
}

/// `1.5 MiB` for bytes.
pub fn human_bytes(bytes: f64) -> String {
    if bytes < 1024.0 {
        format!("{bytes:.0} B")
    } else {
        human_kib(bytes / 1024.0)
    }
}

/// A value in its metric's unit.
pub fn human(unit: Unit, v: f64) -> String {
    match unit {
        Unit::Ns => human_ns(v),
        Unit::Us => human_ns(v * 1e3),
        Unit::Kib => human_kib(v),
        Unit::Bytes => human_bytes(v),
        Unit::Count => format!("{v:.0}"),
        Unit::Ratio if v > 0.0 && v < 0.1 => format!("{:.1}%", v * 100.0),
        Unit::Ratio => format!("{:.0}%", v * 100.0),
    }
}

/// `2h13m`, `95s`.
pub fn human_uptime(s: f64) -> String {
    let s = s as u64;
    if s >= 86_400 {
        format!("{}d{}h", s / 86_400, (s % 86_400) / 3600)
    } else if s >= 3600 {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

/// At most `max` characters of `text`, with `…` when cut.
pub fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        let mut cut: String = text.chars().take(max).collect();
        cut.push('…');
        cut
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_read_naturally() {
        assert_eq!(human_ns(1_234_567.0), "1.23 ms");
        assert_eq!(human_ns(845_000.0), "845 µs");
        assert_eq!(human_kib(2048.0), "2.0 MiB");
        assert_eq!(human(Unit::Ratio, 0.031), "3.1%");
        assert_eq!(human(Unit::Ratio, 0.5), "50%");
        assert_eq!(human_uptime(7980.0), "2h13m");
    }
}
