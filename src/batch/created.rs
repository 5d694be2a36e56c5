//! The files the first run created under the command's working directory and the watched
//! trees ([`crate::measure::created`]): its window's start noted right before it, the search
//! made right after it (outside its timed window), and at the batch's end which of those files
//! the later runs left as written — the caches a first run wrote
//! ([`crate::record::cause::WroteCaches`]).
#![forbid(unsafe_code)]

use crate::batch::command::CommandBatch;
use crate::measure::created::{self, Created};
use crate::record::cause::{WroteCaches, PATHS};
use crate::record::run::Role;
use std::path::PathBuf;

/// The first run's window on the real-time clock, and what was created in it.
#[derive(Debug, Default)]
pub(crate) struct FirstCreated {
    began_ns: Option<u64>,
    found: Option<Created>,
}

impl CommandBatch<'_> {
    /// The roots looked in: the working directory, then the `--evict` and `--watch` roots.
    fn created_roots(&self) -> Vec<PathBuf> {
        let cold = &self.plan.cold;
        let mut roots: Vec<PathBuf> = self.cwd.iter().map(PathBuf::from).collect();
        for root in cold.evict.iter().chain(&cold.watch) {
            if !roots.contains(root) {
                roots.push(root.clone());
            }
        }
        roots
    }

    /// Right before the first run (not with `--minimal`): where its window starts.
    pub(super) fn note_first_began(&mut self) {
        self.first_created.began_ns = Some(created::now_ns());
    }

    /// Right after a run, if it is the first: the files born under the roots since it began, but for the
    /// batch's own directory and the state file (another batch may end meanwhile and replace
    /// it, as under a home directory's `.local/state`).
    pub(super) fn search_created(&mut self, role: Role) {
        let Some(began) = self.first_created.began_ns.filter(|_| role == Role::First) else {
            return;
        };
        let window = (began, created::now_ns());
        let roots = self.created_roots();
        let state = self.context.boot_marker.state_file.as_deref();
        let own: Vec<&std::path::Path> = self.dir.iter().map(|d| d.root()).chain(state).collect();
        self.first_created.found = Some(created::created_between(
            &roots,
            &own,
            window,
            created::ENTRIES,
        ));
    }

    /// At the batch's end: the files the first run created, split by whether a later run
    /// wrote them again (`None`: not looked for).
    pub(super) fn wrote_caches(&self) -> Option<WroteCaches> {
        let found = self.first_created.found.as_ref()?;
        let roots = self.created_roots();
        let mut kept: Vec<_> = found
            .files
            .iter()
            .filter(|f| created::unchanged(f))
            .collect();
        kept.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.path.cmp(&b.path)));
        // Relative to the working directory where under it, else whole.
        let cwd = self.cwd.as_deref().map(std::path::Path::new);
        let shown = |f: &&created::CreatedFile| {
            let path = cwd.and_then(|c| f.path.strip_prefix(c).ok());
            crate::text::escape_controls(&path.unwrap_or(&f.path).to_string_lossy())
        };
        let mut unknown = Vec::new();
        if found.cut {
            unknown.push(format!(
                "the search stopped after {} directory entries",
                found.entries
            ));
        }
        if found.more > 0 {
            unknown.push(format!(
                "{} more files created were counted and not followed",
                found.more
            ));
        }
        if found.no_birth_time {
            unknown.push("a changed directory's file system keeps no birth time".into());
        }
        Some(WroteCaches {
            files: kept.len() as u64,
            bytes: kept.iter().map(|f| f.bytes).sum(),
            rewritten_files: (found.files.len() - kept.len()) as u64,
            paths: kept.iter().take(PATHS).map(shown).collect(),
            roots: roots.iter().map(|r| r.display().to_string()).collect(),
            unknown_reason: (!unknown.is_empty()).then(|| unknown.join("; ")),
        })
    }
}
