//! The lines of `coldtrace cleanup`: one per thing found (`removed`, `left`, `not removed`,
//! or under `--dry-run` `would remove` and `would leave`), folded to the width, then a summary
//! line; and the one error line when something of coldtrace's was not removed.
#![forbid(unsafe_code)]

use super::{Fate, Thing};
use crate::text::escape_controls;
use crate::view::units::fold;

/// Every thing's line, then the summary.
pub fn lines(things: &[Thing], dry_run: bool, width: usize) -> String {
    let mut out = String::new();
    for thing in things {
        let text = format!(
            "{}: {} {}: {}",
            verb(thing.fate, dry_run),
            thing.kind,
            escape_controls(&thing.path),
            escape_controls(&thing.why)
        );
        for line in fold(&text, width, "", "    ") {
            out.push_str(&line);
            out.push('\n');
        }
    }
    let count = |fate: Fate| things.iter().filter(|t| t.fate == fate).count();
    let (removed, left) = (count(Fate::Removed), count(Fate::Left));
    let summary = match (things.is_empty(), dry_run) {
        (true, _) => "nothing coldtrace left was found".to_string(),
        (false, true) => format!(
            "would remove {}, would leave {} (--dry-run: nothing changed)",
            count(Fate::WouldRemove),
            left
        ),
        (false, false) => match count(Fate::NotRemoved) {
            0 => format!("removed {removed}, left {left}"),
            n => format!("removed {removed}, left {left}, could not remove {n}"),
        },
    };
    out.push_str(&summary);
    out.push('\n');
    out
}

/// How a fate is said.
fn verb(fate: Fate, dry_run: bool) -> &'static str {
    match (fate, dry_run) {
        (Fate::Removed, _) => "removed",
        (Fate::WouldRemove, _) => "would remove",
        (Fate::Left, true) => "would leave",
        (Fate::Left, false) => "left",
        (Fate::NotRemoved, _) => "not removed",
    }
}

/// The error line when something of coldtrace's could not be removed (`None`: all was).
pub fn failure(things: &[Thing]) -> Option<String> {
    let failed: Vec<&Thing> = things
        .iter()
        .filter(|t| t.fate == Fate::NotRemoved)
        .collect();
    let first = failed.first()?;
    let more = match failed.len() {
        1 => String::new(),
        n => format!(" (and {} more, said above)", n - 1),
    };
    Some(format!(
        "cleanup could not remove the {} {}{more}: {}",
        first.kind, first.path, first.why
    ))
}
