//! The lines of `coldtrace cleanup`: one per thing found (`removed`, `left`, `not removed`,
//! or under `--dry-run` `would remove` and `would leave`), folded to the width, then a summary
//! line; and the one error line when something of coldtrace's was not removed.
#![forbid(unsafe_code)]

use super::{Fate, Thing};
use crate::text::escape_controls;
use crate::view::units::{display_width, fold};

/// Every thing's line, then the summary.
pub fn lines(things: &[Thing], dry_run: bool, width: usize) -> String {
    let mut out = String::new();
    for thing in things {
        for line in thing_lines(thing, dry_run, width) {
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

/// One thing's lines: `VERB: KIND PATH: WHY` folded at `width`, later lines indented. A path
/// too long for a line of its own is never shortened (it is what the user acts on): it stands
/// alone on the second line, whole.
fn thing_lines(thing: &Thing, dry_run: bool, width: usize) -> Vec<String> {
    let head = format!("{}: {}", verb(thing.fate, dry_run), thing.kind);
    let path = format!("{}:", escape_controls(&thing.path));
    let why = escape_controls(&thing.why);
    if display_width(&path) + INDENT.len() <= width {
        return fold(&format!("{head} {path} {why}"), width, "", INDENT);
    }
    let mut lines = vec![head, format!("{INDENT}{path}")];
    lines.extend(fold(&why, width, INDENT, INDENT));
    lines
}

/// The indent of a thing's later lines.
const INDENT: &str = "    ";

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

#[cfg(test)]
mod tests {
    use super::*;

    fn thing(fate: Fate, path: &str) -> Thing {
        Thing::new("group", path, fate, "its batch is still running".into())
    }

    #[test]
    fn each_thing_is_said_within_the_width_and_a_long_path_whole() {
        let short = thing(Fate::Left, "/sys/fs/cgroup/coldtrace-1-2");
        let long_path = format!("/sys/fs/cgroup/{}/coldtrace-1-2", "a".repeat(80));
        let long = thing(Fate::NotRemoved, &long_path);
        let text = lines(&[short, long], false, 80);
        let shown: Vec<&str> = text.lines().collect();
        assert_eq!(
            shown[0],
            "left: group /sys/fs/cgroup/coldtrace-1-2: its batch is still running"
        );
        assert_eq!(shown[1], "not removed: group");
        assert_eq!(shown[2], format!("    {long_path}:"));
        assert_eq!(shown[3], "    its batch is still running");
        assert_eq!(shown[4], "removed 0, left 1, could not remove 1");
        assert!(shown
            .iter()
            .filter(|l| !l.contains("aaaa"))
            .all(|l| l.chars().count() <= 80));
        let failed = failure(&[thing(Fate::NotRemoved, "/x")]).unwrap();
        assert_eq!(
            failed,
            "cleanup could not remove the group /x: its batch is still running"
        );
        assert_eq!(failure(&[thing(Fate::Left, "/x")]), None);
    }

    #[test]
    fn a_dry_run_says_would() {
        let text = lines(
            &[thing(Fate::WouldRemove, "/a"), thing(Fate::Left, "/b")],
            true,
            80,
        );
        assert!(text.starts_with("would remove: group /a:"), "{text}");
        assert!(text.contains("would leave: group /b:"), "{text}");
        assert!(text.ends_with("would remove 1, would leave 1 (--dry-run: nothing changed)\n"));
        assert_eq!(lines(&[], false, 80), "nothing coldtrace left was found\n");
    }
}
