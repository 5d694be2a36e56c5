//! Clocks: CLOCK_MONOTONIC and CLOCK_BOOTTIME readings, RFC 3339 UTC timestamps (no date crate).
//! Reading and formatting time only; what is timed is the runner's business.
#![forbid(unsafe_code)]

/// Now on CLOCK_MONOTONIC, in nanoseconds ([clock_gettime(2)]).
///
/// [clock_gettime(2)]: https://man7.org/linux/man-pages/man2/clock_gettime.2.html
pub fn monotonic_ns() -> u64 {
    coldtrace_syscalls::wait::monotonic_ns()
}

/// Seconds since boot on CLOCK_BOOTTIME (what `/proc/uptime` prints first; suspend included).
pub fn boottime_s() -> f64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Boottime);
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}

/// Now on CLOCK_REALTIME as an RFC 3339 UTC timestamp with milliseconds,
/// e.g. `2026-12-03T07:00:00.000Z`.
pub fn rfc3339_utc_now() -> String {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Realtime);
    rfc3339_utc(t.tv_sec, (t.tv_nsec / 1_000_000) as u32)
}

/// Formats seconds since the Unix epoch (and milliseconds) as RFC 3339 UTC.
pub fn rfc3339_utc(secs: i64, millis: u32) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian calendar
/// (Howard Hinnant's `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boottime_is_the_uptime() {
        let proc_uptime: f64 = std::fs::read_to_string("/proc/uptime")
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(
            (boottime_s() - proc_uptime).abs() < 0.5,
            "{} vs {proc_uptime}",
            boottime_s()
        );
    }

    #[test]
    fn known_dates() {
        assert_eq!(rfc3339_utc(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339_utc(951_782_400, 5), "2000-02-29T00:00:00.005Z");
        assert_eq!(
            rfc3339_utc(1_796_256_000 + 3661, 999),
            "2026-12-03T01:01:01.999Z"
        );
        assert_eq!(rfc3339_utc(-1, 0), "1969-12-31T23:59:59.000Z");
    }
}
