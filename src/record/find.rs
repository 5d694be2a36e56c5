//! Which batch directories `report` reads: each operand as it is when it is a batch (or a
//! comparison), else every batch found below it. It lists directories; it reads no record.
//!
//! A batch directory holds `runs.jsonl`; a comparison directory holds `commands/` (with
//! `batch.json` or `commands/00/runs.jsonl`) and no `runs.jsonl`. Below any other directory the walk goes on, in name order, without following
//! symlinks (a link loop cannot trap it) and without entering a batch (its `runs/` is not
//! searched). This is how records gathered from many machines are read at once: a job array
//! writes one batch directory per task under a shared directory, and `report SHARED` reads
//! them all.
#![forbid(unsafe_code)]

use crate::record::reader::ReportError;
use std::fs;
use std::path::{Path, PathBuf};

/// How deep below an operand the walk looks for batches.
pub const MAX_DEPTH: usize = 16;

/// What a directory is to `report`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// It holds `runs.jsonl`.
    Batch,
    /// It holds `commands/` with `batch.json` or `commands/00/runs.jsonl`, and no `runs.jsonl`.
    Comparison,
    /// Neither: batches may be below it.
    Other,
}

/// What `dir` is (symlinks at `dir` itself are followed, as for any path the user names). A
/// `commands/` folder makes a comparison only beside its `batch.json` or with the first
/// command's records (`commands/00/runs.jsonl`): a source tree's `commands/` is no batch, and
/// the walk goes on below it.
pub fn kind(dir: &Path) -> Kind {
    let comparison = dir.join("commands").is_dir()
        && (exists_no_follow(&dir.join("batch.json"))
            || exists_no_follow(&dir.join("commands/00/runs.jsonl")));
    if exists_no_follow(&dir.join("runs.jsonl")) {
        Kind::Batch
    } else if comparison {
        Kind::Comparison
    } else {
        Kind::Other
    }
}

/// Whether `path` exists as a name, not following a symlink there (whatever it is: reading it
/// later checks its type and says so).
fn exists_no_follow(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok()
}

/// What the operands name: the batch and comparison directories found, and what was passed
/// over, each with why (one line a directory).
#[derive(Debug, Default)]
pub struct Found {
    /// Every batch or comparison directory, in order.
    pub dirs: Vec<PathBuf>,
    /// `DIR: why it was not read` for each directory left out: an operand that is no
    /// directory, one below which nothing was found, a directory that cannot be listed, one
    /// deeper than [`MAX_DEPTH`] below its operand.
    pub skipped: Vec<String>,
}

/// Every batch or comparison directory the operands name, in order: an operand that is one is
/// kept as given; below any other directory, every batch or comparison found, in name order.
/// What cannot be read is passed over and named in [`Found::skipped`].
///
/// # Errors
/// Nothing found at all: the first reason, one line naming its directory.
pub fn batch_dirs(operands: &[PathBuf]) -> Result<Found, ReportError> {
    let mut found = Found::default();
    for operand in operands {
        if let Err(why) = add_operand(operand, &mut found) {
            found.skipped.push(why);
        }
    }
    if found.dirs.is_empty() {
        let first = found.skipped.first().cloned();
        return Err(ReportError(
            first.unwrap_or_else(|| "no batch directory given".into()),
        ));
    }
    Ok(found)
}

/// The batches `operand` names, added to `found`; why none, when none.
fn add_operand(operand: &Path, found: &mut Found) -> Result<(), String> {
    let meta = fs::metadata(operand).map_err(|e| {
        format!(
            "{}: {}",
            operand.display(),
            crate::record::artifacts::explain(&e)
        )
    })?;
    if !meta.is_dir() {
        return Err(format!(
            "{}: not a batch directory (expected a directory with runs.jsonl, or one with \
             batch directories below it)",
            operand.display()
        ));
    }
    if kind(operand) != Kind::Other {
        found.dirs.push(operand.to_path_buf());
        return Ok(());
    }
    let before = found.dirs.len();
    walk(operand, 0, found);
    if found.dirs.len() == before {
        return Err(format!(
            "{}: no batch directory found in it or below it (a batch directory holds \
             runs.jsonl)",
            operand.display()
        ));
    }
    Ok(())
}

/// Adds the batches below `dir` (not `dir` itself) to `found`; what cannot be searched is
/// named in `found.skipped`.
fn walk(dir: &Path, depth: usize, found: &mut Found) {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            let why = crate::record::artifacts::explain(&e);
            found
                .skipped
                .push(format!("{}: cannot list it: {why}", dir.display()));
            return;
        }
    };
    let mut subdirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        // `file_type` does not follow symlinks: a link to a directory is not entered.
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect();
    subdirs.sort();
    for sub in subdirs {
        // A path too long to examine (past PATH_MAX) is named, not taken for "no batch".
        if let Err(e) = fs::symlink_metadata(sub.join("runs.jsonl")) {
            if e.kind() != std::io::ErrorKind::NotFound {
                let why = crate::record::artifacts::explain(&e);
                found
                    .skipped
                    .push(format!("{}: cannot examine it: {why}", sub.display()));
                continue;
            }
        }
        match kind(&sub) {
            Kind::Batch | Kind::Comparison => found.dirs.push(sub),
            Kind::Other if depth + 1 >= MAX_DEPTH => found.skipped.push(format!(
                "{}: not searched, {MAX_DEPTH} levels below where the search began; name it \
                 to read what is below it",
                sub.display()
            )),
            Kind::Other => walk(&sub, depth + 1, found),
        }
    }
}

/// Operands read from a list (`report -`): one path a line; blank lines are skipped, and a
/// trailing `\r` is not part of the path.
pub fn operands_from_list(list: &[u8]) -> Vec<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    list.split(|&b| b == b'\n')
        .map(|line| line.strip_suffix(b"\r").unwrap_or(line))
        .filter(|line| !line.iter().all(u8::is_ascii_whitespace))
        .map(|line| PathBuf::from(std::ffi::OsStr::from_bytes(line)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("coldtrace-find-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn batches_are_found_below_in_name_order_and_never_entered() {
        let root = scratch("walk");
        for batch in ["b/host2/001", "a/host1/002", "a/host1/001", "c"] {
            fs::create_dir_all(root.join(batch).join("runs/000")).unwrap();
            fs::write(root.join(batch).join("runs.jsonl"), b"").unwrap();
        }
        // A batch inside a batch's runs/ is never looked for; a comparison is one entry.
        fs::write(root.join("c/runs/000/runs.jsonl"), b"").unwrap();
        fs::create_dir_all(root.join("d/cmp/commands/00")).unwrap();
        fs::write(root.join("d/cmp/commands/00/runs.jsonl"), b"").unwrap();
        // A source tree's `commands/` is no comparison: the walk goes on below it.
        fs::create_dir_all(root.join("e/src/commands/deploy")).unwrap();
        fs::write(root.join("e/src/commands/deploy/main.rs"), b"fn main() {}").unwrap();
        fs::create_dir_all(root.join("e/src/commands/bench/runs")).unwrap();
        fs::write(root.join("e/src/commands/bench/runs.jsonl"), b"").unwrap();
        // A symlink loop is not followed.
        std::os::unix::fs::symlink(&root, root.join("a/loop")).unwrap();
        let found = batch_dirs(std::slice::from_ref(&root)).unwrap().dirs;
        let rel: Vec<String> = found
            .iter()
            .map(|p| p.strip_prefix(&root).unwrap().display().to_string())
            .collect();
        assert_eq!(
            rel,
            [
                "a/host1/001",
                "a/host1/002",
                "b/host2/001",
                "c",
                "d/cmp",
                "e/src/commands/bench"
            ]
        );
        // An operand that is a batch is kept as given.
        let direct = batch_dirs(&[root.join("c")]).unwrap().dirs;
        assert_eq!(direct, [root.join("c")]);
        let _ = fs::remove_dir_all(&root);
    }

    #[test]
    fn an_operand_without_batches_is_one_line_naming_it() {
        let root = scratch("empty");
        fs::create_dir_all(root.join("x/y")).unwrap();
        let e = batch_dirs(std::slice::from_ref(&root)).unwrap_err();
        assert!(e.0.contains("no batch directory found"), "{}", e.0);
        assert!(!e.0.contains('\n'));
        let e = batch_dirs(&[root.join("missing")]).unwrap_err();
        assert!(e.0.contains("missing"), "{}", e.0);
        let _ = fs::remove_dir_all(&root);
    }

    #[test]
    fn what_is_passed_over_is_named_with_why() {
        let root = scratch("skipped");
        let mut deep = root.join("deep");
        for level in 0..MAX_DEPTH {
            deep = deep.join(format!("{level}"));
        }
        fs::create_dir_all(&deep).unwrap();
        fs::write(deep.join("runs.jsonl"), b"").unwrap();
        fs::create_dir_all(root.join("ok")).unwrap();
        fs::write(root.join("ok/runs.jsonl"), b"").unwrap();
        let found = batch_dirs(&[root.clone(), root.join("missing")]).unwrap();
        assert_eq!(found.dirs, [root.join("ok")]);
        assert_eq!(found.skipped.len(), 2, "{:?}", found.skipped);
        assert!(
            found.skipped[0].contains("not searched, 16 levels below"),
            "{:?}",
            found.skipped
        );
        assert!(found.skipped[1].contains("missing"), "{:?}", found.skipped);
        let _ = fs::remove_dir_all(&root);
    }

    #[test]
    fn a_list_is_one_path_a_line() {
        let list = operands_from_list(b"a/b\n\n  \nc d\r\n/e\n");
        assert_eq!(
            list,
            [
                PathBuf::from("a/b"),
                PathBuf::from("c d"),
                PathBuf::from("/e")
            ]
        );
    }
}
