//! The HTML page of `report --html FILE`: a summary of every batch and command first, then the
//! picture's figures inline, one per directory, with a few words around them. Self-contained: no script, no external style, font or image,
//! and a Content-Security-Policy that forbids loading anything, so it shows the same offline.
#![forbid(unsafe_code)]

use super::svg::escape;
use crate::record::boots::BootSeries;
use crate::record::series::Picture;
use std::fmt::Write;

/// The page's own style (the figures carry theirs).
const PAGE_STYLE: &str = "body{font-family:'DejaVu Sans','Liberation Sans',Arial,Helvetica,\
sans-serif;margin:24px;color:#222;background:#fff;max-width:1000px}h1{font-size:22px;margin:0 0 \
8px}p{margin:0 0 16px;color:#444}figure{margin:0 0 24px}svg{max-width:100%;height:auto;\
border:1px solid #ddd}";

/// The whole page: the summary, each directory's figure, then the boots of each armed plan.
pub fn render_html(pictures: &[Picture], dirs: &[String], boots: &[BootSeries]) -> String {
    let mut page =
        String::from("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    page.push_str(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'\">\n<meta name=\"viewport\" content=\"width=device-width, \
         initial-scale=1\">\n<title>coldtrace report</title>\n",
    );
    let _ = writeln!(page, "<style>{PAGE_STYLE}</style>\n</head>\n<body>");
    page.push_str("<h1>coldtrace report</h1>\n");
    let _ = writeln!(
        page,
        "<p>{} drawn by coldtrace {}: {}. Every mark is a run recorded in runs.jsonl; hover \
         one for its index and value. Nothing on this page is loaded from the network.</p>",
        plural(dirs.len(), "directory", "directories"),
        env!("CARGO_PKG_VERSION"),
        escape(&dirs.join(", "))
    );
    if let Some(summary) = super::render_summary(pictures) {
        let _ = writeln!(page, "<figure>\n{summary}</figure>");
    }
    for figure in super::render_figures(pictures) {
        let _ = writeln!(page, "<figure>\n{figure}</figure>");
    }
    for figure in super::render_boots(boots) {
        let _ = writeln!(page, "<figure>\n{figure}</figure>");
    }
    page.push_str("</body>\n</html>\n");
    page
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}
