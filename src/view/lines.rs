//! The plain sentences under a table (why the first run was slow, what stayed cached, what
//! looks disturbed), wrapped to fit 80 columns. It lays out text; what to say is decided by the
//! table that calls it.
#![forbid(unsafe_code)]

use crate::view::style::Style;
use std::fmt::Write;

/// The width human output fits in.
pub const WIDTH: usize = 80;

/// Writes `  TEXT` wrapped at [`WIDTH`], later lines indented by four spaces.
pub fn sentence(out: &mut String, text: &str) {
    labelled(out, None, text, &Style { on: false });
}

/// Writes `  LABEL: TEXT` wrapped at [`WIDTH`] (later lines indented by four spaces), the label
/// in the warning colour: something that needs a second look.
pub fn warning(out: &mut String, label: &str, text: &str, style: &Style) {
    labelled(out, Some(label), text, style);
}

/// Writes `  MARK TEXT` wrapped at [`WIDTH`], the mark (`✗`) in the warning colour.
pub fn marked(out: &mut String, mark: &str, text: &str, style: &Style) {
    put(out, mark, " ", text, style);
}

fn labelled(out: &mut String, label: Option<&str>, text: &str, style: &Style) {
    match label {
        Some(label) => put(out, label, ": ", text, style),
        None => put(out, "", "", text, style),
    }
}

fn put(out: &mut String, label: &str, separator: &str, text: &str, style: &Style) {
    let used = 2 + label.chars().count() + separator.chars().count();
    let lines = crate::text::wrap_words(text, WIDTH.saturating_sub(used), WIDTH - 4);
    let shown = if label.is_empty() {
        String::new()
    } else {
        format!("{}{separator}", style.warn(label))
    };
    let mut first = true;
    for line in &lines {
        if first {
            let _ = writeln!(out, "  {shown}{line}");
            first = false;
        } else {
            let _ = writeln!(out, "    {line}");
        }
    }
    if lines.is_empty() && !label.is_empty() {
        let _ = writeln!(out, "  {shown}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_line_fits_and_later_lines_are_indented() {
        let mut out = String::new();
        let text = "residency unknown for 38534 of 38534 files: 38534 cachestat refused \
                    with EPERM (no write permission); attribution needs write access or root";
        warning(
            &mut out,
            "cached before/after unknown",
            text,
            &Style { on: false },
        );
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines.len() >= 2, "{out}");
        assert!(lines[0].starts_with("  cached before/after unknown: residency"));
        for line in &lines[1..] {
            assert!(
                line.starts_with("    ") && !line.starts_with("     "),
                "{out}"
            );
        }
        for line in &lines {
            assert!(line.chars().count() <= WIDTH, "{line}");
        }
    }
}
