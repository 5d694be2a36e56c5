//! A table laid out to fit a width: columns with (multi-line) headers and alignment, gaps that
//! narrow, labels that shorten with an ellipsis, and the same table as Markdown. Layout only:
//! which rows and cells a table has is the caller's business.
//!
//! Fitting, in order, until the table fits: two-space gaps; one-space gaps (the first ones
//! widened back to two with what room is left); shrinkable columns
//! (labels, commands) shortened down to their minimum, the first declared first; optional
//! columns left out, the least important first. A table that still does not fit has its lines
//! cut with `…`: a terminal never wraps them.
#![forbid(unsafe_code)]

use crate::view::units::{display_width, shorten, shorten_start};

/// How a column's cells are aligned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    /// Text.
    Left,
    /// Numbers.
    Right,
}

/// One column: its header (lines separated by `\n`, bottom-aligned), alignment, and how narrow
/// it may become (`None`: never shortened).
#[derive(Clone, Debug)]
struct Column {
    header: String,
    align: Align,
    min: Option<usize>,
    /// A cell that is a path (holds a `/`) is shortened at its start (`…vm/task1`), keeping
    /// the end, whose last part is what tells paths apart; other cells (labels) at their end.
    keep_end: bool,
    /// Left out when the table does not fit otherwise: the lowest rank first.
    optional: Option<u8>,
    /// Never shortened so far that two different cells look the same (`gzip -1 -c d…` twice).
    distinct: bool,
}

/// A table of text cells.
#[derive(Clone, Debug, Default)]
pub struct Grid {
    indent: usize,
    columns: Vec<Column>,
    rows: Vec<Vec<String>>,
}

/// `cell` shortened to `w` columns: a path at its start when `keep_end` (its last part tells
/// paths apart), anything else at its end.
fn fit(cell: &str, w: usize, keep_end: bool) -> String {
    if keep_end && cell.contains('/') {
        shorten_start(cell, w)
    } else {
        shorten(cell, w)
    }
}

impl Grid {
    /// An empty table whose lines start with `indent` spaces.
    pub fn new(indent: usize) -> Grid {
        Grid {
            indent,
            ..Grid::default()
        }
    }

    /// Adds a column that is never shortened.
    pub fn column(mut self, header: &str, align: Align) -> Grid {
        self.columns.push(Column {
            header: header.to_string(),
            align,
            min: None,
            keep_end: false,
            optional: None,
            distinct: false,
        });
        self
    }

    /// Adds a column that may be shortened (with `…`) down to `min` columns.
    pub fn shrinkable(mut self, header: &str, align: Align, min: usize) -> Grid {
        self = self.column(header, align);
        if let Some(c) = self.columns.last_mut() {
            c.min = Some(min);
        }
        self
    }

    /// As [`Grid::shrinkable`], but a path is shortened at its start, keeping its end.
    /// A shrinkable column (see [`Grid::shrinkable_keeping_end`]) whose cells, shortened, still
    /// tell their rows apart: it is never narrower than the width at which two different cells
    /// would be shortened alike (other columns are left out first).
    pub fn shrinkable_distinct(mut self, header: &str, align: Align, min: usize) -> Grid {
        self = self.shrinkable_keeping_end(header, align, min);
        if let Some(c) = self.columns.last_mut() {
            c.distinct = true;
        }
        self
    }

    pub fn shrinkable_keeping_end(mut self, header: &str, align: Align, min: usize) -> Grid {
        self = self.shrinkable(header, align, min);
        if let Some(c) = self.columns.last_mut() {
            c.keep_end = true;
        }
        self
    }

    /// Adds a column left out when the table cannot fit otherwise; of several, the lowest
    /// `rank` goes first.
    pub fn optional(mut self, header: &str, align: Align, rank: u8) -> Grid {
        self = self.column(header, align);
        if let Some(c) = self.columns.last_mut() {
            c.optional = Some(rank);
        }
        self
    }

    /// Adds a row (missing cells are empty, extra cells are dropped).
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// Whether the table has no rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    fn cell(&self, row: usize, col: usize) -> &str {
        self.rows[row].get(col).map_or("", String::as_str)
    }

    fn header_lines(&self) -> usize {
        self.columns
            .iter()
            .map(|c| c.header.lines().count().max(1))
            .max()
            .unwrap_or(0)
    }

    /// Each column's width when nothing is shortened.
    fn natural_widths(&self) -> Vec<usize> {
        (0..self.columns.len())
            .map(|c| {
                let header = self.columns[c].header.lines().map(display_width);
                let cells = (0..self.rows.len()).map(|r| display_width(self.cell(r, c)));
                header.chain(cells).max().unwrap_or(0)
            })
            .collect()
    }

    fn total(&self, widths: &[Option<usize>], gap: usize) -> usize {
        let shown: Vec<usize> = widths.iter().flatten().copied().collect();
        self.indent + shown.iter().sum::<usize>() + gap * shown.len().saturating_sub(1)
    }

    /// Column widths (`None`: left out) and the gap before each shown column but the first,
    /// for `width` columns: the widest layout that fits.
    fn layout(&self, width: usize) -> (Vec<Option<usize>>, Vec<usize>) {
        let mut shown: Vec<bool> = vec![true; self.columns.len()];
        loop {
            let widths = self.layout_shown(&shown, width);
            let drop = self
                .columns
                .iter()
                .enumerate()
                .filter(|(i, c)| shown[*i] && c.optional.is_some())
                .min_by_key(|(i, c)| (c.optional, std::cmp::Reverse(*i)))
                .map(|(i, _)| i);
            match drop {
                Some(i) if self.total(&widths, 1) > width => shown[i] = false,
                _ => return (widths.clone(), self.gaps(&widths, width)),
            }
        }
    }

    /// Two-space gaps where they fit, the first ones first; one space elsewhere.
    fn gaps(&self, widths: &[Option<usize>], width: usize) -> Vec<usize> {
        let n = widths.iter().flatten().count().saturating_sub(1);
        let mut spare = width.saturating_sub(self.total(widths, 1));
        (0..n)
            .map(|_| {
                let wide = spare > 0;
                spare = spare.saturating_sub(1);
                1 + usize::from(wide)
            })
            .collect()
    }

    fn layout_shown(&self, shown: &[bool], width: usize) -> Vec<Option<usize>> {
        let mut widths: Vec<Option<usize>> = self
            .natural_widths()
            .into_iter()
            .zip(shown)
            .map(|(w, &s)| s.then_some(w))
            .collect();
        let mut excess = self.total(&widths, 1).saturating_sub(width);
        for (c, (w, column)) in widths.iter_mut().zip(&self.columns).enumerate() {
            let min = match column.min {
                Some(min) if column.distinct => Some(self.distinct_width(c, min)),
                min => min,
            };
            if let (Some(w), Some(min)) = (w.as_mut(), min) {
                let cut = excess.min(w.saturating_sub(min));
                *w -= cut;
                excess -= cut;
            }
        }
        widths
    }

    /// The narrowest width, from `min`, at which column `c`'s different cells stay different
    /// once shortened.
    fn distinct_width(&self, c: usize, min: usize) -> usize {
        let cells: Vec<&str> = (0..self.rows.len()).map(|r| self.cell(r, c)).collect();
        let natural = cells.iter().map(|t| display_width(t)).max().unwrap_or(0);
        let keep_end = self.columns[c].keep_end;
        (min..natural)
            .find(|&w| {
                let mut seen: Vec<(String, &str)> = Vec::new();
                cells.iter().all(|&cell| {
                    let shown = fit(cell, w, keep_end);
                    let clash = seen.iter().any(|(s, full)| *s == shown && *full != cell);
                    seen.push((shown, cell));
                    !clash
                })
            })
            .unwrap_or(natural.max(min))
    }

    /// The width the table takes when laid out for `width` (at most `width` if it fits).
    pub fn fitted_width(&self, width: usize) -> usize {
        let (widths, gaps) = self.layout(width);
        self.total(&widths, 0) + gaps.iter().sum::<usize>()
    }

    /// The table's lines, none wider than `width` columns, without trailing spaces.
    pub fn lines(&self, width: usize) -> Vec<String> {
        let (widths, gaps) = self.layout(width);
        let header_lines = self.header_lines();
        let mut out = Vec::with_capacity(header_lines + self.rows.len());
        for line in 0..header_lines {
            let cells: Vec<String> = self
                .columns
                .iter()
                .map(|c| {
                    let lines: Vec<&str> = c.header.lines().collect();
                    let skip = header_lines - lines.len().max(1);
                    line.checked_sub(skip)
                        .and_then(|i| lines.get(i))
                        .map_or(String::new(), |s| s.to_string())
                })
                .collect();
            out.push(self.join(&cells, &widths, &gaps, width));
        }
        for r in 0..self.rows.len() {
            let cells: Vec<String> = (0..self.columns.len())
                .map(|c| self.cell(r, c).to_string())
                .collect();
            out.push(self.join(&cells, &widths, &gaps, width));
        }
        out
    }

    fn join(
        &self,
        cells: &[String],
        widths: &[Option<usize>],
        gaps: &[usize],
        width: usize,
    ) -> String {
        let mut line = " ".repeat(self.indent);
        let mut shown = 0;
        for (cell, (w, column)) in cells.iter().zip(widths.iter().zip(&self.columns)) {
            let Some(w) = *w else { continue };
            if shown > 0 {
                line.push_str(&" ".repeat(gaps.get(shown - 1).copied().unwrap_or(1)));
            }
            shown += 1;
            let text = fit(cell, w, column.keep_end);
            let pad = " ".repeat(w.saturating_sub(display_width(&text)));
            match column.align {
                Align::Left => {
                    line.push_str(&text);
                    line.push_str(&pad);
                }
                Align::Right => {
                    line.push_str(&pad);
                    line.push_str(&text);
                }
            }
        }
        shorten(line.trim_end(), width)
    }

    /// The whole table as Markdown (nothing shortened; `|` in a cell escaped).
    pub fn markdown(&self) -> String {
        let esc = crate::text::markdown_text;
        let mut out = String::new();
        let headers: Vec<String> = self
            .columns
            .iter()
            .map(|c| {
                esc(&c
                    .header
                    .lines()
                    .filter(|l| !l.is_empty())
                    .collect::<Vec<_>>()
                    .join(" ")
                    .replace("/ ", "/"))
            })
            .collect();
        out.push_str(&format!("| {} |\n|", headers.join(" | ")));
        for c in &self.columns {
            out.push_str(match c.align {
                Align::Left => "---|",
                Align::Right => "---:|",
            });
        }
        out.push('\n');
        for r in 0..self.rows.len() {
            let cells: Vec<String> = (0..self.columns.len())
                .map(|c| esc(self.cell(r, c)))
                .collect();
            out.push_str(&format!("| {} |\n", cells.join(" | ")));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Grid {
        let mut g = Grid::new(2)
            .shrinkable("metric", Align::Left, 6)
            .column("first", Align::Right)
            .column("first/\nwarm", Align::Right);
        g.row(vec![
            "a rather long label".into(),
            "1.5".into(),
            "0.98×".into(),
        ]);
        g.row(vec!["wall".into(), "213.9".into()]);
        g
    }

    #[test]
    fn a_distinct_column_is_never_shortened_until_two_rows_look_alike() {
        let table = |distinct: bool| {
            let mut g = Grid::new(0);
            g = match distinct {
                true => g.shrinkable_distinct("batch", Align::Left, 8),
                false => g.shrinkable_keeping_end("batch", Align::Left, 8),
            };
            g = g
                .optional("optional", Align::Right, 0)
                .column("numbers", Align::Right);
            for name in ["gzip -c data-file-1.bin", "gzip -c data-file-2.bin", "ls"] {
                g.row(vec![name.into(), "1".into(), "2".into()]);
            }
            g.lines(30)
        };
        let cut = table(false);
        assert_eq!(cut[1][..12], cut[2][..12], "{cut:?}");
        assert!(cut[0].contains("optional"), "{cut:?}");
        // Kept apart: the optional column is left out to make room.
        let kept = table(true);
        assert_eq!(
            kept,
            [
                "batch                  numbers",
                "gzip -c data-file-1.b…       2",
                "gzip -c data-file-2.b…       2",
                "ls                           2",
            ]
        );
    }

    #[test]
    fn a_wide_table_keeps_two_space_gaps() {
        let lines = sample().lines(120);
        assert_eq!(
            lines,
            [
                "                              first/",
                "  metric               first    warm",
                "  a rather long label    1.5   0.98×",
                "  wall                 213.9",
            ]
        );
    }

    #[test]
    fn a_narrow_table_narrows_gaps_then_shortens_labels() {
        let lines = sample().lines(30);
        assert!(lines.iter().all(|l| display_width(l) <= 30), "{lines:#?}");
        assert_eq!(lines[2], "  a rather long…    1.5  0.98×");
        let tiny = sample().lines(12);
        assert!(tiny.iter().all(|l| display_width(l) <= 12), "{tiny:#?}");
    }

    #[test]
    fn optional_columns_go_before_anything_is_cut() {
        let mut g = Grid::new(0)
            .shrinkable("label", Align::Left, 5)
            .column("a", Align::Right)
            .optional("range", Align::Right, 0)
            .optional("mean", Align::Right, 1);
        g.row(vec![
            "longlabel".into(),
            "1".into(),
            "1 … 2".into(),
            "1.5".into(),
        ]);
        assert_eq!(g.lines(80)[1], "longlabel  1  1 … 2   1.5");
        assert_eq!(g.lines(18)[1], "long… 1 1 … 2  1.5");
        assert_eq!(g.lines(17)[1], "longlabel  1  1.5");
        assert_eq!(g.lines(9)[1], "longla… 1");
    }

    #[test]
    fn markdown_has_every_cell_and_escapes_bars() {
        let mut g = Grid::new(0)
            .column("a", Align::Left)
            .column("b", Align::Right);
        g.row(vec!["x|y".into(), "1".into()]);
        assert_eq!(g.markdown(), "| a | b |\n|---|---:|\n| x\\|y | 1 |\n");
    }
}
