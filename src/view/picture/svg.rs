//! A small SVG writer: shapes, text and groups as strings, every piece of text escaped for
//! XML. It knows nothing about batches; what to draw where is decided by the panels.
#![forbid(unsafe_code)]

use std::fmt::Write;

/// Text made safe inside an XML element or attribute: control characters written as Rust
/// escapes first (XML 1.0 allows no C0 control but tab and newline, not even as `&#1;`), then
/// `& < > " '` as entities.
pub fn escape(text: &str) -> String {
    let visible = crate::text::escape_controls(text);
    let mut out = String::with_capacity(visible.len());
    for c in visible.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

/// A coordinate with at most one decimal (sub-pixel precision is noise in the file).
fn n(v: f64) -> String {
    let v = if v.is_finite() { v } else { 0.0 };
    let r = (v * 10.0).round() / 10.0;
    if r == r.trunc() {
        format!("{}", r as i64)
    } else {
        format!("{r:.1}")
    }
}

/// How a text is anchored at its point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anchor {
    /// The text starts at the point.
    Start,
    /// The text is centred on it.
    Middle,
    /// The text ends at it.
    End,
}

impl Anchor {
    fn name(self) -> &'static str {
        match self {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        }
    }
}

/// The SVG being written: elements appended in drawing order (later ones on top).
#[derive(Default)]
pub struct Svg {
    body: String,
}

impl Svg {
    /// A rectangle; `class` selects its colour in the style sheet.
    pub fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, class: &str) {
        let (x, w) = if w < 0.0 { (x + w, -w) } else { (x, w) };
        let _ = writeln!(
            self.body,
            r#"<rect class="{class}" x="{}" y="{}" width="{}" height="{}"/>"#,
            n(x),
            n(y),
            n(w),
            n(h.max(0.0))
        );
    }

    /// A rectangle with a tooltip (its `<title>`).
    pub fn titled_rect(&mut self, x: f64, y: f64, w: f64, h: f64, class: &str, tip: &str) {
        let (x, w) = if w < 0.0 { (x + w, -w) } else { (x, w) };
        let _ = writeln!(
            self.body,
            r#"<rect class="{class}" x="{}" y="{}" width="{}" height="{}"><title>{}</title></rect>"#,
            n(x),
            n(y),
            n(w),
            n(h.max(0.0)),
            escape(tip)
        );
    }

    /// A straight line.
    pub fn line(&mut self, x1: f64, y1: f64, x2: f64, y2: f64, class: &str) {
        let _ = writeln!(
            self.body,
            r#"<line class="{class}" x1="{}" y1="{}" x2="{}" y2="{}"/>"#,
            n(x1),
            n(y1),
            n(x2),
            n(y2)
        );
    }

    /// A marker centred on (x, y): `shape` is one of the marker shapes below, `tip` its
    /// tooltip (an SVG `<title>`, shown by browsers on hover).
    pub fn marker(&mut self, shape: Shape, x: f64, y: f64, class: &str, tip: &str) {
        let r = shape.radius();
        let element = match shape {
            Shape::Dot | Shape::Ring => format!(
                r#"<circle class="{class}" cx="{}" cy="{}" r="{}">"#,
                n(x),
                n(y),
                n(r)
            ),
            Shape::Diamond => format!(
                r#"<path class="{class}" d="M{} {}l{r} {r}l-{r} {r}l-{r} -{r}z">"#,
                n(x),
                n(y - r)
            ),
            Shape::Triangle => format!(
                r#"<path class="{class}" d="M{} {}l{r} {}h-{}z">"#,
                n(x),
                n(y - r),
                n(r * 1.8),
                n(r * 2.0)
            ),
            Shape::Cross => format!(
                r#"<path class="{class}" d="M{} {}l{d} {d}m0 -{d}l-{d} {d}">"#,
                n(x - r * 0.7),
                n(y - r * 0.7),
                d = n(r * 1.4)
            ),
        };
        let tag = if element.starts_with("<circle") {
            "circle"
        } else {
            "path"
        };
        let _ = writeln!(self.body, "{element}<title>{}</title></{tag}>", escape(tip));
    }

    /// A vertical range (the runs of one kind in a bucket): a line with short caps.
    pub fn range(&mut self, x: f64, y_low: f64, y_high: f64, class: &str, tip: &str) {
        let _ = writeln!(
            self.body,
            r#"<path class="{class}" d="M{x} {lo}V{hi}M{l} {lo}h3M{l} {hi}h3"><title>{}</title></path>"#,
            escape(tip),
            x = n(x),
            lo = n(y_low),
            hi = n(y_high),
            l = n(x - 1.5)
        );
    }

    /// A text at (x, y) (the baseline), escaped.
    pub fn text(&mut self, x: f64, y: f64, anchor: Anchor, class: &str, text: &str) {
        let _ = writeln!(
            self.body,
            r#"<text class="{class}" x="{}" y="{}" text-anchor="{}">{}</text>"#,
            n(x),
            n(y),
            anchor.name(),
            escape(text)
        );
    }

    /// A text turned 90° counter-clockwise around (x, y): a vertical axis's title.
    pub fn vertical_text(&mut self, x: f64, y: f64, class: &str, text: &str) {
        let _ = writeln!(
            self.body,
            r#"<text class="{class}" x="{}" y="{}" text-anchor="middle" transform="rotate(-90 {} {})">{}</text>"#,
            n(x),
            n(y),
            n(x),
            n(y),
            escape(text)
        );
    }

    /// Opens a group moved down by `dy`; close it with [`Svg::close`].
    pub fn open(&mut self, dy: f64) {
        let _ = writeln!(self.body, r#"<g transform="translate(0 {})">"#, n(dy));
    }

    /// Closes the group opened last.
    pub fn close(&mut self) {
        self.body.push_str("</g>\n");
    }

    /// The whole document, `width` × `height` pixels, with its style sheet and a title.
    pub fn document(&self, width: f64, height: f64, title: &str, style: &str) -> String {
        format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" \
             viewBox=\"0 0 {w} {h}\" role=\"img\">\n<title>{}</title>\n<style>{style}</style>\n\
             <rect class=\"page\" x=\"0\" y=\"0\" width=\"{w}\" height=\"{h}\"/>\n{}</svg>\n",
            escape(title),
            self.body,
            w = n(width),
            h = n(height)
        )
    }
}

/// The marker shapes: each kind of run has its own, so the picture reads without colour too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// A filled circle (a warm run).
    Dot,
    /// A hollow circle (a warm-up).
    Ring,
    /// A diamond (the first run).
    Diamond,
    /// A triangle (a disturbed run).
    Triangle,
    /// A cross (a rejected run).
    Cross,
}

impl Shape {
    fn radius(self) -> f64 {
        match self {
            Shape::Dot | Shape::Ring => 2.6,
            Shape::Diamond => 6.0,
            Shape::Triangle => 4.5,
            Shape::Cross => 4.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_for_xml_and_control_characters_are_made_visible() {
        assert_eq!(
            escape("a<b & 'c' \"d\">"),
            "a&lt;b &amp; &apos;c&apos; &quot;d&quot;&gt;"
        );
        assert_eq!(escape("x\u{1}y\n"), "x\\u{1}y\\n");
        let mut svg = Svg::default();
        svg.text(1.0, 2.0, Anchor::End, "t", "</text><script>");
        assert!(svg.body.contains("&lt;/text&gt;&lt;script&gt;"));
        assert!(!svg.body.contains("<script>"));
    }

    #[test]
    fn coordinates_are_short_and_finite() {
        assert_eq!(n(3.04), "3");
        assert_eq!(n(-2.26), "-2.3");
        assert_eq!(n(f64::NAN), "0");
        let mut svg = Svg::default();
        svg.rect(10.0, 0.0, -4.0, -1.0, "r");
        assert!(
            svg.body.contains(r#"x="6" y="0" width="4" height="0""#),
            "{}",
            svg.body
        );
    }
}
