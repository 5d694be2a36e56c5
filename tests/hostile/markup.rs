//! Text the user gave — a command, a label, a directory's name — that a Markdown viewer would
//! read as markup: in `--export-markdown` and `report --markdown` it is shown as written and
//! never becomes HTML, a link, a code span, emphasis, math or a broken table row.

use super::common::{ct, Output, TempDir};
use super::{assert_no_raw_controls, DEADLINE};

const IMG: &str = "<img src=x onerror=alert(1)>";
const IMG_SHOWN: &str = "&lt;img src=x onerror=alert(1)&gt;";

/// `coldtrace ARGS` in `dir`, exit 0, no raw control character on stderr.
fn ok(dir: &TempDir, args: &[&str]) -> Output {
    let out = ct(dir.path(), args).run_within(DEADLINE);
    out.expect_code(0);
    assert_no_raw_controls(&out);
    out
}

/// `report --markdown` of a batch labelled `label`.
fn reported_with_label(dir: &TempDir, label: &str) -> String {
    ok(
        dir,
        &[
            "run", "-q", "-n", "2", "-o", "b", "--label", label, "--", "true",
        ],
    );
    ok(dir, &["report", "--markdown", "b"]).stdout
}

/// Every line of `md` that starts a table row is one whole row: it ends with `|`.
fn assert_rows_whole(md: &str) {
    for line in md.lines().filter(|l| l.starts_with('|')) {
        assert!(line.ends_with('|'), "a broken row: {line}\n{md}");
    }
}

/// Every `ch` in `md` is backslash-escaped.
fn assert_escaped(md: &str, ch: char) {
    let bytes = md.as_bytes();
    for (i, c) in md.char_indices() {
        if c == ch {
            assert!(i > 0 && bytes[i - 1] == b'\\', "a raw {ch} at {i}:\n{md}");
        }
    }
}

#[test]
fn an_exported_markdown_table_holds_a_command_s_html_as_entities() {
    let dir = TempDir::new("mdexport");
    let script = format!("echo '{IMG}' && true");
    ok(
        &dir,
        &[
            "run",
            "-q",
            "-n",
            "2",
            "--export-markdown",
            "run.md",
            "--",
            "sh",
            "-c",
            &script,
        ],
    );
    let cmp = format!("sh -c \"echo '{IMG}'\"");
    ok(
        &dir,
        &[
            "compare",
            "-q",
            "-n",
            "2",
            "--export-markdown",
            "cmp.md",
            "true",
            &cmp,
        ],
    );
    for name in ["run.md", "cmp.md"] {
        let md = std::fs::read_to_string(dir.join(name)).unwrap();
        assert!(!md.contains("<img"), "{name}:\n{md}");
        assert!(md.contains(IMG_SHOWN), "{name}:\n{md}");
        assert_rows_whole(&md);
    }
    let run = std::fs::read_to_string(dir.join("run.md")).unwrap();
    assert!(run.contains("&amp;&amp; true"), "{run}");
    // A command with nothing HTML would read keeps hyperfine's code span.
    let cmp = std::fs::read_to_string(dir.join("cmp.md")).unwrap();
    assert!(cmp.contains("| `true` |"), "{cmp}");
}

#[test]
fn a_label_that_is_a_link_stays_text_in_report_markdown() {
    let dir = TempDir::new("mdlink");
    let label = "[click](javascript:alert(1)) ![i](http://x/y.png)";
    let md = reported_with_label(&dir, label);
    assert!(!md.contains("[click]("), "{md}");
    assert!(
        md.contains("\\[click\\](javascript:alert(1)) !\\[i\\](http://x/y.png)"),
        "{md}"
    );
    assert_escaped(&md, '[');
    assert_rows_whole(&md);
}

#[test]
fn backticks_in_a_label_open_no_code_span_in_report_markdown() {
    // Inside a code span an entity is shown as written: `&lt;b&gt;` would be what a viewer
    // shows of `<b>`. The backticks are escaped, so the entities are read as entities.
    let dir = TempDir::new("mdtick");
    let label = "`<b>`|`x`";
    let md = reported_with_label(&dir, label);
    assert!(md.contains("\\`&lt;b&gt;\\`\\|\\`x\\`"), "{md}");
    assert_escaped(&md, '`');
    assert_rows_whole(&md);
}

#[test]
fn emphasis_strikethrough_and_math_in_a_label_are_text() {
    let dir = TempDir::new("mdemph");
    let label = "*bold* _it_ ~del~ $x^2$ a\\b";
    let md = reported_with_label(&dir, label);
    assert!(
        md.contains("\\*bold\\* \\_it\\_ \\~del\\~ \\$x^2\\$ a\\\\b"),
        "{md}"
    );
    for ch in ['~', '$'] {
        assert_escaped(&md, ch);
    }
    assert_rows_whole(&md);
}

#[test]
fn a_directory_report_cannot_read_is_listed_as_text() {
    let dir = TempDir::new("mdskip");
    ok(&dir, &["run", "-q", "-n", "2", "-o", "good", "--", "true"]);
    let bad = "[x](javascript:alert(1)) *b*";
    std::fs::create_dir(dir.join(bad)).unwrap();
    std::fs::write(dir.join(bad).join("runs.jsonl"), "not json\n").unwrap();
    let out = ct(dir.path(), ["report", "--markdown", "good", bad]).run_within(DEADLINE);
    out.expect_code(1);
    assert_no_raw_controls(&out);
    let md = &out.stdout;
    let item = md
        .lines()
        .find(|l| l.starts_with("- skipped"))
        .unwrap_or_else(|| panic!("no skipped item:\n{md}"));
    assert!(
        item.contains("\\[x\\](javascript:alert(1)) \\*b\\*"),
        "{item}"
    );
}

#[test]
fn a_comparison_named_as_markup_has_a_title_of_text() {
    let dir = TempDir::new("mdtitle");
    let name = "c [x](javascript:alert(1)) `t` <i>";
    ok(
        &dir,
        &["compare", "-q", "-n", "2", "-o", name, "true", "echo"],
    );
    let md = ok(&dir, &["report", "--markdown", name]).stdout;
    let title = md
        .lines()
        .find(|l| l.starts_with("**comparison"))
        .unwrap_or_else(|| panic!("no title:\n{md}"));
    assert!(
        title.contains("c \\[x\\](javascript:alert(1)) \\`t\\` &lt;i&gt;"),
        "{title}"
    );
    assert_rows_whole(&md);
}
