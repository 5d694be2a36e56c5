//! The documents are kept true to the repository: the README's two commands are the ones CI
//! runs, every document is listed in the README, every relative link reaches a file (and a
//! heading, when it names one), and the product's text speaks of the product — no wording from
//! how the work was organised.
#![forbid(unsafe_code)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(relative: &str) -> String {
    std::fs::read_to_string(root().join(relative)).unwrap_or_else(|e| panic!("{relative}: {e}"))
}

/// The README's test command, which `.ci/run` calls verbatim.
const TEST_COMMAND: &str = "rustup target add x86_64-unknown-linux-musl && cargo test --workspace";

#[test]
fn the_readme_builds_and_runs_a_real_command_and_ci_runs_its_test_command() {
    let readme = read("README.md");
    let run = readme
        .lines()
        .find(|l| {
            l.starts_with(
                "rustup target add x86_64-unknown-linux-musl && cargo run --release -- run ",
            )
        })
        .expect("the README's build-and-run command");
    assert!(
        run.contains(" -- "),
        "the command measured is given after --: {run}"
    );
    assert!(
        readme.lines().any(|l| l == TEST_COMMAND),
        "the README's test command, alone on its line: {TEST_COMMAND}"
    );
    let ci = read(".ci/run");
    assert!(
        ci.lines().any(|l| l.trim() == TEST_COMMAND),
        ".ci/run calls the README's test command verbatim: {TEST_COMMAND}"
    );
}

#[test]
fn the_readme_stays_one_short_page() {
    let lines = read("README.md").lines().count();
    assert!(
        lines <= 330,
        "README.md has {lines} lines: keep it short and put the detail in a file of docs/"
    );
}

#[test]
fn every_document_is_listed_in_the_readme() {
    let readme = read("README.md");
    let section = &readme[readme
        .find("\n## Documentation\n")
        .expect("a Documentation section")..];
    let mut documents: Vec<String> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".md"))
        .map(|name| format!("docs/{name}"))
        .collect();
    documents.extend(["CONTRIBUTING.md", "syscalls/README.md", "fuzz/README.md"].map(String::from));
    for document in documents {
        assert!(
            section.contains(&format!("]({document})")),
            "{document} is not linked from the README's Documentation section"
        );
    }
}

/// The Markdown files that link to each other.
fn markdown_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = [
        "README.md",
        "CONTRIBUTING.md",
        "syscalls/README.md",
        "fuzz/README.md",
    ]
    .iter()
    .map(PathBuf::from)
    .collect();
    for entry in std::fs::read_dir(root().join("docs")).expect("docs/") {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name.ends_with(".md") {
            files.push(Path::new("docs").join(name));
        }
    }
    files
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Lines outside fenced code blocks.
fn prose(text: &str) -> Vec<&str> {
    let mut fenced = false;
    let mut lines = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            lines.push(line);
        }
    }
    lines
}

fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    for line in prose(text) {
        let Some(heading) = line.strip_prefix('#').map(|h| h.trim_start_matches('#')) else {
            continue;
        };
        let base = anchor(heading);
        let mut name = base.clone();
        let mut n = 0;
        while seen.contains(&name) {
            n += 1;
            name = format!("{base}-{n}");
        }
        seen.insert(name);
    }
    seen
}

/// Every `](target)` of a line.
fn link_targets(line: &str) -> Vec<&str> {
    let mut targets = Vec::new();
    let mut rest = line;
    while let Some(start) = rest.find("](") {
        rest = &rest[start + 2..];
        let Some(end) = rest.find(')') else { break };
        targets.push(&rest[..end]);
        rest = &rest[end..];
    }
    targets
}

#[test]
fn every_relative_link_reaches_its_file_and_heading() {
    let mut broken = Vec::new();
    for file in markdown_files() {
        let text = read(file.to_str().unwrap());
        let dir = file.parent().unwrap_or(Path::new(""));
        for (number, line) in text.lines().enumerate() {
            if !prose(line).contains(&line) {
                continue;
            }
            for target in link_targets(line) {
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                let (path, fragment) = target.split_once('#').unwrap_or((target, ""));
                let path = if path.is_empty() {
                    file.clone()
                } else {
                    dir.join(path)
                };
                let at = format!("{}:{}: {target}", file.display(), number + 1);
                let Ok(linked) = std::fs::metadata(root().join(&path)) else {
                    broken.push(format!("{at}: no such file"));
                    continue;
                };
                let heading_found = || {
                    linked.is_file() && anchors(&read(path.to_str().unwrap())).contains(fragment)
                };
                if !fragment.is_empty() && !heading_found() {
                    broken.push(format!("{at}: no such heading"));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// The text files of the repository, build output and fuzz inputs left out.
fn text_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let entry = entry.unwrap();
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.file_type().unwrap().is_dir() {
            if !matches!(name.as_str(), ".git" | "target" | "corpus" | "artifacts") {
                text_files(&path, found);
            }
            continue;
        }
        let extension = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        let in_ci = path.parent().and_then(Path::file_name) == Some(".ci".as_ref());
        if in_ci
            || matches!(
                extension,
                "md" | "rs" | "toml" | "sh" | "c" | "py" | "yml" | "yaml"
            )
        {
            found.push(path);
        }
    }
}

/// Where a line speaks of how the work was organised rather than of the product: a "stop"
/// (a unit of work) or a numbered issue. "stops the batch" is fine.
fn organisation_wording(line: &str) -> Option<&'static str> {
    let line = line.to_lowercase();
    // Spelt in pieces, so that this file does not match itself.
    if line.contains(&["this", " stop"].concat()) {
        return Some("a unit of work named");
    }
    if line.contains(&["stop", "'s"].concat()) {
        return Some("a unit of work's possessive");
    }
    let issue = ["issue", " "].concat();
    let numbered = line
        .match_indices(&issue)
        .any(|(at, _)| line[at + issue.len()..].starts_with(|c: char| c.is_ascii_digit()));
    numbered.then_some("an issue number")
}

#[test]
fn the_product_speaks_of_the_product() {
    let mut files = Vec::new();
    text_files(root(), &mut files);
    assert!(
        files.len() > 100,
        "only {} text files found under {}",
        files.len(),
        root().display()
    );
    let mut found = Vec::new();
    for file in files {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        for (number, line) in text.lines().enumerate() {
            if let Some(what) = organisation_wording(line) {
                let shown = file.strip_prefix(root()).unwrap_or(&file).display();
                found.push(format!("{shown}:{}: {what}: {}", number + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "say what the product does, with the date and machine of a figure, not how the work \
         was organised:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_wording_check_finds_what_it_looks_for() {
    let stop = ["measured in this", " stop"].concat();
    assert_eq!(organisation_wording(&stop), Some("a unit of work named"));
    assert_eq!(
        organisation_wording(&["The Stop", "'s runs"].concat()),
        Some("a unit of work's possessive")
    );
    assert_eq!(
        organisation_wording(&["(Issue", " 8)"].concat()),
        Some("an issue number")
    );
    assert_eq!(
        organisation_wording("a request to stop stops the batch"),
        None
    );
    assert_eq!(organisation_wording("an issue with the cache"), None);
}
