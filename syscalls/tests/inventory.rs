//! The inventory in `syscalls/README.md` is kept true: its per-file counts of lines, `unsafe`
//! blocks, `unsafe fn` and extern declarations are recomputed here from `src/raw/`, and no
//! other source file of the workspace may contain an unsafe block, fn, impl or extern block.
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};

#[derive(Debug, PartialEq, Eq, Default, Clone, Copy)]
struct Counts {
    lines: usize,
    blocks: usize,
    unsafe_fns: usize,
    extern_fns: usize,
}

fn code_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter(|l| !l.trim_start().starts_with("//"))
}

fn count(text: &str) -> Counts {
    let mut c = Counts {
        lines: text.lines().count(),
        ..Counts::default()
    };
    let mut in_extern = false;
    for line in code_lines(text) {
        c.blocks += line.matches("unsafe {").count();
        c.unsafe_fns += line.matches("unsafe fn ").count();
        if line.trim_start().starts_with("extern \"C\" {") {
            in_extern = true;
        } else if in_extern && line.trim_start().starts_with("fn ") {
            c.extern_fns += 1;
        } else if in_extern && line.starts_with('}') {
            in_extern = false;
        }
    }
    c
}

/// Rows of the README's inventory table: `| \`raw/mod.rs\` | 265 | 17 | 1 (…) | 0 | all |`.
fn readme_rows(readme: &str) -> Vec<(String, Counts)> {
    let number = |cell: &str| -> usize {
        let digits: String = cell
            .trim()
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits
            .parse()
            .unwrap_or_else(|_| panic!("not a count: {cell:?}"))
    };
    readme
        .lines()
        .filter(|l| l.starts_with("| `raw/"))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let file = cells[1].trim_matches('`').to_string();
            let counts = Counts {
                lines: number(cells[2]),
                blocks: number(cells[3]),
                unsafe_fns: number(cells[4]),
                extern_fns: number(cells[5]),
            };
            (file, counts)
        })
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            if !path.ends_with("target") && !path.ends_with(".git") {
                rust_files(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn the_readme_inventory_matches_the_unsafe_room() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(crate_dir.join("README.md")).expect("README.md");
    let rows = readme_rows(&readme);
    let mut files = Vec::new();
    rust_files(&crate_dir.join("src/raw"), &mut files);
    assert_eq!(
        rows.len(),
        files.len(),
        "one README row per file of src/raw/: {rows:?}"
    );
    let mut total = Counts::default();
    for (file, claimed) in &rows {
        let text = std::fs::read_to_string(crate_dir.join("src").join(file)).expect(file);
        let actual = count(&text);
        assert_eq!(&actual, claimed, "{file}: the README's counts are stale");
        if file != "raw/test_support.rs" {
            total.lines += actual.lines;
            total.blocks += actual.blocks;
            total.unsafe_fns += actual.unsafe_fns;
            total.extern_fns += actual.extern_fns;
        }
    }
    let sentence = format!(
        "{} blocks, {} `unsafe fn`, {} extern fns, {} lines",
        total.blocks, total.unsafe_fns, total.extern_fns, total.lines
    );
    assert!(
        readme.contains(&sentence),
        "the README's totals should read: {sentence}"
    );
}

#[test]
fn no_unsafe_outside_the_room() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for dir in [
        "src",
        "tests",
        "syscalls/src",
        "syscalls/tests",
        "syscalls/examples",
        "fuzz",
    ] {
        if root.join(dir).is_dir() {
            rust_files(&root.join(dir), &mut files);
        }
    }
    let room = root.join("syscalls/src/raw");
    let mut offenders = Vec::new();
    let this_file = Path::new(file!()).file_name().expect("a file name");
    for file in files.iter().filter(|f| !f.starts_with(&room)) {
        if file.file_name() == Some(this_file) {
            continue; // the patterns below, as strings
        }
        let text = std::fs::read_to_string(file).expect("a source file");
        let hits = code_lines(&text).any(|l| {
            ["unsafe {", "unsafe fn", "unsafe impl", "extern \"C\" {"]
                .iter()
                .any(|pat| l.contains(pat))
        });
        if hits {
            offenders.push(file.display().to_string());
        }
    }
    assert!(
        offenders.is_empty(),
        "unsafe code outside syscalls/src/raw/: {offenders:?}"
    );
}
