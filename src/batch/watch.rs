//! The watched files around a run: their residency right before it and right after it, and
//! which of them the run brought into the page cache (the top ones for the record, every one in
//! `runs/NNN/paged_in.tsv` for the first run). It measures through the cache module and keeps
//! nothing per file in the heap across the spawn; building the record is step.rs's job.
#![forbid(unsafe_code)]

use crate::batch::command::CommandBatch;
use crate::batch::outcome::FirstPagedIn;
use crate::measure::cache::{
    CacheError, FileSet, PagedFile, PagedIn, Residency, Stop, WatchedFile, WorkingSet,
};
use crate::record::run::{CacheRecord, Role, WorkingSetRecord};
use coldtrace_syscalls::Signal;

/// Files that gained pages kept per record, largest first.
pub const PAGED_IN_TOP: usize = 20;

impl CommandBatch<'_> {
    /// Whether this command's runs are watched (`--watch`, `--evict`): each run then walks the
    /// files before and after it.
    pub(super) fn watches_files(&self) -> bool {
        !self.plan.cold.watch.is_empty()
    }

    /// The residency of the watched files now, each file's remembered for [`Self::watch_after`]
    /// (`None` without `--watch`/`--evict`, or when the paths cannot be walked any more). The
    /// tree is walked afresh and dropped at once; the walk and the probes give up (with the
    /// signal) as soon as `stop` says.
    pub(super) fn watch_before(&mut self, stop: Stop<'_>) -> Result<Option<Residency>, Signal> {
        let roots = &self.plan.cold.watch;
        if roots.is_empty() {
            return Ok(None);
        }
        let set = match FileSet::collect_until(roots, stop) {
            Ok(set) => set,
            Err(CacheError::Interrupted(sig)) => return Err(sig),
            Err(_) => return Ok(None),
        };
        let residency = match &mut self.ledger {
            Some(ledger) => ledger.before(&set, stop).map(Some),
            None => set.residency_until(stop).map(Some).map_err(|(_, sig)| sig),
        }?;
        self.working_set_before = self
            .working_set
            .as_mut()
            .filter(|ws| !ws.is_empty())
            .and_then(|ws| ws.residency(stop));
        Ok(residency)
    }

    /// The residency after the run and what each watched file gained during it. The probes
    /// give up as soon as `stop` says (the files not probed are unknown).
    pub(super) fn watch_after(
        &mut self,
        before: Option<Residency>,
        stop: Stop<'_>,
    ) -> Option<(CacheRecord, Vec<PagedFile>)> {
        let before = before?;
        let first = self.role_of(self.next_index) == Role::First;
        let mut all = Vec::new();
        let mut working_set = WorkingSet::new().filter(|_| first);
        let (after, paged) = match &mut self.ledger {
            Some(ledger) => {
                let keep = |f: &WatchedFile, bytes: u64| {
                    if first {
                        all.push(PagedFile {
                            path: f.path.clone(),
                            bytes,
                        });
                    }
                    if let Some(ws) = working_set.as_mut() {
                        ws.add(f, bytes);
                    }
                };
                let (after, paged) = ledger.after(PAGED_IN_TOP, stop, &mut { keep });
                (after, Some(paged))
            }
            None => {
                let set = FileSet::collect_until(&self.plan.cold.watch, stop).ok()?;
                match set.residency_until(stop) {
                    Ok(r) | Err((r, _)) => (r, None),
                }
            }
        };
        let known = paged.as_ref().filter(|p| p.known_files > 0);
        let cache = CacheRecord {
            before,
            after,
            paged_in_bytes: known.map(|p| p.bytes),
            paged_in_files: known.map(|p| p.files),
            working_set_before: self.working_set_before.as_ref().map(WorkingSetRecord::of),
        };
        if first {
            self.working_set = working_set;
        }
        let top = paged.as_ref().map_or(Vec::new(), |p| p.top.clone());
        if let (true, Some(paged)) = (first, paged) {
            self.keep_first_paged_in(paged, all);
        }
        Some((cache, top))
    }

    /// Keeps the first run's top files for the table and writes every file it paged in, largest
    /// first, to `runs/NNN/paged_in.tsv` (a failure to write it is said, not fatal).
    fn keep_first_paged_in(&mut self, paged: PagedIn, mut all: Vec<PagedFile>) {
        all.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.path.cmp(&b.path)));
        let mut text = String::from("bytes\tpath\n");
        for f in &all {
            let path = crate::text::escape_controls(&f.path.to_string_lossy());
            text.push_str(&format!("{}\t{path}\n", f.bytes));
        }
        let artifact = match &self.dir {
            Some(dir) => match dir.write_run_file(self.next_index, "paged_in.tsv", text.as_bytes())
            {
                Ok(rel) => Some(rel),
                Err(e) => {
                    self.notices.push(e.message);
                    None
                }
            },
            None => None,
        };
        self.first_paged_in = Some(FirstPagedIn { paged, artifact });
    }
}
