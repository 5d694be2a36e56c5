//! The sentence that names what made the first run cold (`first_cold_cause`), with what it read
//! from storage. It words what record found; it computes nothing.
#![forbid(unsafe_code)]

use crate::record::cause::ColdCause;
use crate::view::explain::human_bytes;

/// `the first run was made cold by coldtrace's --evict (verified: 0.0 % of the evicted files
/// stayed cached); it read 12.31 MiB from storage (12 major faults)`; `None` when there is
/// nothing to name (no cold action, no hook, nothing read from storage).
pub fn cause_sentence(c: &ColdCause) -> Option<String> {
    let checked = |what: &str| match (c.verified, &c.verification) {
        (Some(true), Some(how)) => format!("coldtrace's {what} (verified: {how})"),
        (Some(false), Some(how)) => format!("coldtrace's {what} (not verified: {how})"),
        (None, Some(how)) => format!("coldtrace's {what} (cannot be verified: {how})"),
        _ => format!("coldtrace's {what}"),
    };
    let head = match c.cause {
        "evict" => format!("the first run was made cold by {}", checked("--evict")),
        "drop_caches" => format!(
            "the first run was made cold by {}",
            checked("--drop-caches")
        ),
        "setup" | "prepare" => format!(
            "the first run followed a --{} command (what it did to the caches is not \
             recorded)",
            c.cause
        ),
        "reclaim" => format!(
            "the machine had reclaimed the first run's pages: {} file pages refaulted \
             system-wide during it (workingset_refault_file)",
            c.workingset_refault_file.unwrap_or(0)
        ),
        "first_batch_since_boot" => {
            "the first run is the first coldtrace batch's since boot, and nothing it read had \
             been reclaimed (no refault)"
                .to_string()
        }
        "unknown" => "what made the first run cold is unknown: no cold action, hook, refault \
                      or new boot was seen (its pages were not cached this boot, or were \
                      dropped by something that leaves no trace, such as drop_caches)"
            .to_string(),
        _ => return None,
    };
    Some(format!("{head}{}", read_words(c)))
}

/// `; it read 12.31 MiB from storage (12 major faults)`, or `; it read nothing from storage`.
fn read_words(c: &ColdCause) -> String {
    let faults = c
        .major_faults
        .filter(|&n| n > 0.0)
        .map_or(String::new(), |n| {
            format!(" ({n:.0} major fault{})", if n == 1.0 { "" } else { "s" })
        });
    match c.read_bytes {
        Some(b) if b > 0.0 => format!("; it read {} from storage{faults}", human_bytes(b)),
        Some(_) if !faults.is_empty() => format!("; it read from storage{faults}"),
        Some(_) => "; it read nothing from storage".into(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cause(name: &'static str) -> ColdCause {
        ColdCause {
            cause: name,
            verified: None,
            verification: None,
            read_bytes: Some(75_182_080.0),
            major_faults: Some(85.0),
            workingset_refault_file: Some(19_683),
            first_batch_since_boot: Some(false),
        }
    }

    fn plain(text: Option<String>) -> String {
        text.unwrap().replace('\u{a0}', " ")
    }

    #[test]
    fn each_cause_is_named_with_what_the_run_read() {
        assert_eq!(
            plain(cause_sentence(&cause("reclaim"))),
            "the machine had reclaimed the first run's pages: 19683 file pages refaulted \
             system-wide during it (workingset_refault_file); it read 71.70 MiB from storage \
             (85 major faults)"
        );
        let mut evict = cause("evict");
        (evict.verified, evict.verification) = (
            Some(true),
            Some("0.0 % of the evicted files stayed cached".into()),
        );
        evict.read_bytes = Some(0.0);
        evict.major_faults = Some(0.0);
        assert_eq!(
            plain(cause_sentence(&evict)),
            "the first run was made cold by coldtrace's --evict (verified: 0.0 % of the \
             evicted files stayed cached); it read nothing from storage"
        );
        assert!(plain(cause_sentence(&cause("prepare")))
            .starts_with("the first run followed a --prepare command"));
        assert!(cause_sentence(&cause("none")).is_none());
    }
}
