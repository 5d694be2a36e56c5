//! The watched files around a run, in proportion to what the command reads: the trees are
//! walked once per batch; the whole tree is checked where it matters — before a run made cold
//! (was the eviction complete: the cold action's own check) and after it (what it brought in),
//! and at the first run — and between those only the working set is probed: the files the
//! first run brought into the page cache, grown by any file a later run brings in (seen
//! exactly in the page-in ledger, where there is one). The tree's total between whole checks is
//! the last check's, with the working set as it is now (`cache.tree_checked_at_run` names the
//! run of that check). It measures through the cache module; building the record is step.rs's
//! job.
#![forbid(unsafe_code)]

use crate::batch::command::CommandBatch;
use crate::batch::error::{BatchError, NotRun};
use crate::batch::outcome::FirstPagedIn;
use crate::batch::progress::{Observer, Ticker};
use crate::batch::signals::Signals;
use crate::measure::cache::{
    key_of, CacheError, Check, Checked, FileTable, PagedFile, PagedIn, Residency, Stop,
    WatchedFile, WorkingSet,
};
use crate::measure::page_ins::{FileKey, PageIns};
use crate::record::run::{CacheRecord, Role, WorkingSetRecord};
use coldtrace_syscalls::Signal;

/// Files that gained pages kept per record, largest first.
pub const PAGED_IN_TOP: usize = 20;

/// A slow step is said once, with how long it took, when it took at least this long.
const SLOW_NS: u64 = 500_000_000;

/// Watched sets of at most this many files are checked whole before and after every run (a
/// check costs about 5 µs of CPU per file here, so at most a few ms a run).
pub const WHOLE_TREE_FILES: u64 = 512;

impl CommandBatch<'_> {
    /// Whether this command's runs are watched (`--watch`, `--evict`).
    pub(super) fn watches_files(&self) -> bool {
        !self.plan.cold.watch.is_empty()
    }

    /// Walks the watched trees at the first run, and again only when something says they
    /// changed: the page-in ledger saw a run bring in files the walk did not find, on a device
    /// of the walked ones, and a walked directory was modified since (one `stat` each). Tells
    /// `observer` how many files were found so far and, when it was slow, how long it took. A
    /// signal stops the walk at once (the run then does not happen).
    pub(super) fn walk_watched(
        &mut self,
        signals: &Signals,
        observer: &mut dyn Observer,
    ) -> Result<(), NotRun> {
        if !self.watches_files() {
            return Ok(());
        }
        if let Some(table) = self.table.as_mut() {
            if self.suspects.is_empty() {
                return Ok(());
            }
            let suspects = std::mem::take(&mut self.suspects);
            if !table.changed() {
                // Elsewhere on the same file system: not looked for again.
                self.outside.extend(suspects);
                return Ok(());
            }
            // The new table knows no residency yet: the next run checks it whole.
            self.checked = None;
        }
        let began = crate::measure::clock::monotonic_ns();
        let ticker = Ticker::new(observer, began);
        const WHAT: &str = "walking";
        let stop = || signals.pending_interrupt();
        let seen = |n| ticker.tick(WHAT, Some((n, None)));
        seen(0);
        let cold = &self.plan.cold;
        let table = match FileTable::walk(&cold.evict, &cold.watch, &stop, &seen) {
            Ok(table) => table,
            Err(CacheError::Interrupted(sig)) => return Err(NotRun::Interrupted(sig)),
            Err(e) => return Err(BatchError::own(format!("--evict/--watch: {e}")).into()),
        };
        if self.context.file_set.is_none() {
            self.context.file_set = Some(table.identity().clone());
        }
        self.say_slow(WHAT, table.files(), began, &ticker);
        self.split_unknown = Some(crate::batch::page_ins::split_unknown(&cold.watch));
        self.table = Some(table);
        Ok(())
    }

    /// Says once per step (`what`) how long it took, when it took at least [`SLOW_NS`].
    pub(super) fn say_slow(&mut self, what: &'static str, files: u64, began: u64, ticker: &Ticker) {
        let took = crate::measure::clock::monotonic_ns().saturating_sub(began);
        if took < SLOW_NS || self.slow_said.contains(&what) {
            return;
        }
        self.slow_said.push(what);
        ticker.notice(&format!(
            "{what} {files} watched files took {:.2} s",
            took as f64 / 1e9
        ));
    }

    /// Checks the whole tree now (with `evict`, evicting the files under an `--evict` root
    /// first), telling `ticker` how far it has come; `each` sees every file. The working set's
    /// files are updated from it. `None` before the walk.
    pub(super) fn check_watched(
        &mut self,
        evict: bool,
        signals: &Signals,
        ticker: &Ticker,
        each: &mut dyn FnMut(&Checked<'_>),
    ) -> Result<Option<Check>, Signal> {
        let Some(table) = self.table.as_mut() else {
            return Ok(None);
        };
        let total = table.files();
        let what = if evict { "evicting" } else { "checking" };
        let began = crate::measure::clock::monotonic_ns();
        let stop = || signals.pending_interrupt();
        // An eviction is said at once; a check only once it turns out slow.
        let done = |n| match evict {
            true => ticker.tick(what, Some((n, Some(total)))),
            false => ticker.tick_if_slow(what, Some((n, Some(total)))),
        };
        done(0);
        let ws = &mut self.working_set;
        let check = table.check(
            evict,
            &stop,
            &mut |c| {
                if let Some(ws) = ws.as_mut() {
                    ws.checked(c.file, c.now);
                }
                each(c);
            },
            &done,
        )?;
        if !evict {
            self.say_slow(what, total, began, ticker);
        }
        self.checked = Some((check.residency.clone(), self.next_index));
        Ok(Some(check))
    }

    /// Whether the run about to start checks the whole tree: the first counted run, a run
    /// made cold, any run before the first whole check, and every run of a small set.
    fn whole_check_due(&self) -> bool {
        let role = self.role_of(self.next_index);
        let small = self
            .table
            .as_ref()
            .is_some_and(|t| t.files() <= WHOLE_TREE_FILES);
        small || role == Role::First || self.cold_due(role) || self.checked.is_none()
    }

    /// The residency of the watched files right before the run (`None` without
    /// `--watch`/`--evict`): the whole tree where a whole check is due (the cold action's, made
    /// just now, when it made one), else the working set probed and the rest as last checked.
    pub(super) fn watch_before(
        &mut self,
        signals: &Signals,
        observer: &mut dyn Observer,
    ) -> Result<Option<Residency>, Signal> {
        if self.table.is_none() {
            return Ok(None);
        }
        self.run_whole = self.whole_check_due();
        let residency = if self.run_whole {
            match self.fresh_check.take() {
                Some(residency) => residency,
                None => {
                    let ticker = Ticker::new(observer, crate::measure::clock::monotonic_ns());
                    match self.check_watched(false, signals, &ticker, &mut |_| {})? {
                        Some(check) => check.residency,
                        None => return Ok(None),
                    }
                }
            }
        } else {
            let stop = || signals.pending_interrupt();
            let (Some(ws), Some((checked, _))) = (self.working_set.as_mut(), &self.checked) else {
                return Ok(None);
            };
            ws.probe(&stop, &mut |_| {});
            if let Some(sig) = stop() {
                return Err(sig);
            }
            ws.tree_now(checked)
        };
        self.working_set_before = self
            .working_set
            .as_ref()
            .filter(|ws| ws.first_run().0 > 0)
            .map(WorkingSet::residency);
        Ok(Some(residency))
    }

    /// The residency after the run and what each watched file gained during it: from the
    /// page-in ledger where there is one (every file, exactly), else from each probed file's
    /// residency before and after — every file's where the whole tree was checked before the
    /// run, or where the run read from storage (`read_bytes` above 0: then files outside the
    /// working set may have been brought in, and join it). The probes give up as soon as `stop`
    /// says.
    pub(super) fn watch_after(
        &mut self,
        before: Option<Residency>,
        ledger: Option<&PageIns>,
        read_bytes: u64,
        stop: Stop<'_>,
    ) -> Option<(CacheRecord, Vec<PagedFile>)> {
        self.located.clear();
        let before = before?;
        let ledger = ledger.filter(|_| self.split_unknown.as_ref().is_some_and(Option::is_none));
        let first = self.role_of(self.next_index) == Role::First;
        let mut seen = Gains {
            ledger,
            page: rustix::param::page_size() as u64,
            paged: PagedIn::default(),
            all: Vec::new(),
            first,
        };
        // With a ledger, what the run brought in is known file by file: only those files are
        // probed again, the others are as the check right before the run found them (but a
        // small set is checked whole, as before the run).
        let small = self
            .table
            .as_ref()
            .is_some_and(|t| t.files() <= WHOLE_TREE_FILES);
        let whole = match ledger {
            Some(_) => self.run_whole && small,
            None => self.run_whole || read_bytes > 0,
        };
        let after = if whole {
            self.after_whole(&mut seen, stop)
        } else {
            self.after_working_set(&mut seen, stop)
        };
        let after = match after {
            Ok(after) => after?,
            Err(sig) => before.interrupted(sig),
        };
        let known = Some(&seen.paged).filter(|p| p.known_files > 0);
        let cache = CacheRecord {
            before,
            after,
            paged_in_bytes: known.map(|p| p.bytes),
            paged_in_files: known.map(|p| p.files),
            paged_in_from: Some(match (ledger, whole) {
                (Some(_), _) => "page-in ledger",
                (None, true) => "every watched file",
                (None, false) => "working set",
            }),
            working_set_before: self.working_set_before.as_ref().map(WorkingSetRecord::of),
            tree_checked_at_run: self.checked.as_ref().map(|c| c.1),
        };
        let top = seen.paged.top.clone();
        if first {
            let read = (read_bytes, ledger.is_some());
            self.keep_first_paged_in(seen.paged, seen.all, read);
        }
        Some((cache, top))
    }

    /// The whole tree checked after the run: each file's gain from the ledger, or from its
    /// residency at the check before the run and now. The first run's files make the working
    /// set; a later run's new files join it.
    fn after_whole(
        &mut self,
        seen: &mut Gains<'_>,
        stop: Stop<'_>,
    ) -> Result<Option<Residency>, Signal> {
        let Some(table) = self.table.as_mut() else {
            return Ok(None);
        };
        let mut ws = match self.working_set.take() {
            Some(ws) if !seen.first => ws,
            _ => WorkingSet::new(self.keep_open),
        };
        let located = &mut self.located;
        let check = table.check(
            false,
            stop,
            &mut |c| {
                ws.checked(c.file, c.now);
                let key = key_of(c.file);
                if let Some(l) = seen.ledger {
                    if l.files.contains_key(&key) {
                        located.insert(key, (c.file.path.clone(), c.file.under_evict()));
                    }
                }
                if let Some(bytes) = seen.gain(key, c.before, c.now) {
                    seen.add(c.file, bytes);
                    ws.add(c.file, bytes, seen.first, c.now, c.now);
                }
            },
            &|_| {},
        );
        self.working_set = Some(ws);
        let check = check?;
        if let Some(l) = seen.ledger {
            seen.paged.known_files = table.files();
            // Not in the walk: elsewhere, or created in a watched tree since it was walked.
            for key in l.files.keys().filter(|k| !located.contains_key(k)) {
                if table.on_watched_device(key) && !self.outside.contains(key) {
                    self.suspects.push(*key);
                }
            }
        }
        self.checked = Some((check.residency.clone(), self.next_index));
        Ok(Some(check.residency))
    }

    /// The working set probed after the run, the rest of the tree as last checked. Files the
    /// ledger saw the run bring in that the set does not hold are looked up in the walk (one
    /// pass over it) and join the set (the first run's make it).
    fn after_working_set(
        &mut self,
        seen: &mut Gains<'_>,
        stop: Stop<'_>,
    ) -> Result<Option<Residency>, Signal> {
        if seen.first || self.working_set.is_none() {
            self.working_set = Some(WorkingSet::new(self.keep_open));
        }
        let (Some(ws), Some((checked, _)), Some(table)) = (
            self.working_set.as_mut(),
            self.checked.as_ref(),
            self.table.as_mut(),
        ) else {
            return Ok(None);
        };
        if let Some(l) = seen.ledger {
            let new: Vec<FileKey> = l
                .files
                .keys()
                .filter(|k| !ws.contains(k) && !self.outside.contains(k))
                .copied()
                .collect();
            let found = table.find(&new);
            for (key, file, at_check) in &found {
                let bytes = l.files.get(key).map_or(0, |p| p.saturating_mul(seen.page));
                ws.add(file, bytes, seen.first, *at_check, None);
            }
            // Not in the walk: elsewhere, or created in a watched tree since it was walked.
            for key in new.iter().filter(|k| !ws.contains(k)) {
                match table.on_watched_device(key) {
                    true => self.suspects.push(*key),
                    false => {
                        self.outside.insert(*key);
                    }
                }
            }
            for (key, pages) in &l.files {
                if let Some(file) = ws.file(key) {
                    self.located
                        .insert(*key, (file.path.clone(), file.under_evict()));
                    seen.add(file, pages.saturating_mul(seen.page));
                }
            }
            seen.paged.known_files = table.files();
        }
        let probed = ws.len() as u64;
        ws.probe(stop, &mut |g| {
            if seen.ledger.is_none() {
                seen.add(g.file, g.bytes);
            }
        });
        if let Some(sig) = stop() {
            return Err(sig);
        }
        if seen.ledger.is_none() {
            seen.paged.known_files = probed;
        }
        Ok(Some(ws.tree_now(checked)))
    }

    /// Keeps the first run's top files for the table (with what it read from storage, and
    /// whether its gains are the ledger's) and writes every file it paged
    /// in, largest first, to `runs/NNN/paged_in.tsv` (a failure to write it is said, not
    /// fatal).
    fn keep_first_paged_in(
        &mut self,
        paged: PagedIn,
        mut all: Vec<PagedFile>,
        (read_bytes, from_ledger): (u64, bool),
    ) {
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
        self.first_paged_in = Some(FirstPagedIn {
            paged,
            artifact,
            read_bytes,
            from_ledger,
        });
    }
}

/// What the watched files gained during a run, as it is found.
struct Gains<'l> {
    /// The run's page-in ledger, when it can name watched files.
    ledger: Option<&'l PageIns>,
    page: u64,
    paged: PagedIn,
    /// Every file that gained pages (kept for the first run's list).
    all: Vec<PagedFile>,
    first: bool,
}

impl Gains<'_> {
    /// What the file `key` gained: the ledger's pages, else its residency now less before
    /// (`None`: nothing, or unknown). Without a ledger, a file known before and now is covered.
    fn gain(&mut self, key: FileKey, before: Option<u64>, now: Option<u64>) -> Option<u64> {
        let bytes = match self.ledger {
            Some(l) => l.files.get(&key).map(|p| p.saturating_mul(self.page)),
            None => {
                let (before, now) = before.zip(now)?;
                self.paged.known_files += 1;
                now.checked_sub(before)
            }
        };
        bytes.filter(|&b| b > 0)
    }

    /// `file` gained `bytes`.
    fn add(&mut self, file: &WatchedFile, bytes: u64) {
        self.paged.add(&file.path, bytes, PAGED_IN_TOP);
        if self.first {
            self.all.push(PagedFile {
                path: file.path.clone(),
                bytes,
            });
        }
    }
}
