//! The page-in ledger around a run ([`crate::measure::page_ins`]): its events opened on the
//! run's cgroup leaf (again only when the leaf changes), and the run's ledger made into its
//! record — every file put in its watched tree through the walk of the watched files, the
//! files the first run wrote named by a search, the first run's whole list written to
//! `runs/NNN/page_ins.tsv`.
#![forbid(unsafe_code)]

use crate::batch::command::CommandBatch;
use crate::batch::group::GroupState;
use crate::batch::shared::Shared;
use crate::measure::page_ins::names;
use crate::measure::page_ins::tracer::PageInTracer;
use crate::measure::page_ins::{FileKey, FileKeys, Ledger, PageIns};
use crate::record::page_ins::{How, LedgerLine, PageInsRecord, Place, Placing, Under};
use crate::record::run::Role;
use std::cell::RefCell;
use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::path::PathBuf;

/// The ledger's events, and the leaf they were opened on (or tried on).
pub(crate) struct PageInEvents {
    leaf: Option<PathBuf>,
    tracer: Result<RefCell<PageInTracer>, String>,
}

impl PageInEvents {
    /// The events in `events` ([`Shared::page_ins`], borrowed apart from the rest of
    /// [`Shared`]), when they could be had.
    pub(crate) fn tracer(events: &Option<PageInEvents>) -> Option<&RefCell<PageInTracer>> {
        events.as_ref()?.tracer.as_ref().ok()
    }
}

impl Shared<'_> {
    /// After the reap: the run's ledger (`None`: none was begun), with the online CPUs as the
    /// tree tracer read them at the run's end, when it did (one read serves both).
    pub(crate) fn end_page_ins(&self) -> Option<Ledger> {
        let tree = match &self.tree {
            Some(Ok(tracer)) => Some(tracer.borrow()),
            _ => None,
        };
        let online = tree.as_ref().and_then(|t| t.online_at_end());
        PageInEvents::tracer(&self.page_ins)?
            .borrow_mut()
            .end(online)
    }

    /// Opens the ledger's events on the leaf the next run is born in, unless they follow it
    /// already (or were refused on it): a leaf serves run after run, so this is once per batch
    /// but where a run left processes running.
    pub(crate) fn follow_page_ins(&mut self) {
        let leaf = self.group.leaf();
        let path = leaf.map(|l| l.path().to_path_buf());
        if self.page_ins.as_ref().is_some_and(|e| e.leaf == path) {
            return;
        }
        let tracer = match (leaf, &self.group) {
            (Some(leaf), _) => PageInTracer::open(leaf.fd()).map(|t| {
                if let Some(dir) = &t.mounted {
                    let what = "the page cache's tracepoint format";
                    eprintln!("{}", crate::measure::tree::tracefs::mounted_note(dir, what));
                }
                RefCell::new(t)
            }),
            (None, GroupState::Unavailable(why)) => Err(format!(
                "the page-in ledger counts the run's cgroup, and there is none: {why}"
            )),
            (None, _) => {
                Err("the page-in ledger counts the run's cgroup, and there is none".into())
            }
        };
        self.page_ins = Some(PageInEvents { leaf: path, tracer });
    }

    /// Why there is no ledger (`None`: there is one, or none was tried).
    pub(crate) fn page_ins_why(&self) -> Option<&str> {
        self.page_ins
            .as_ref()?
            .tracer
            .as_ref()
            .err()
            .map(String::as_str)
    }
}

/// The files of a run's page-in ledger found in the walk of the watched trees: the path each
/// was found under, and whether that is under an `--evict` root.
pub(crate) type Located = HashMap<FileKey, (PathBuf, bool), BuildHasherDefault<DefaultHasher>>;

/// Files written, named by the search after the first run.
type Found = HashMap<FileKey, Place, BuildHasherDefault<DefaultHasher>>;

impl CommandBatch<'_> {
    /// The record of a run's `ledger` (`None` when none was tried: `--minimal`); `why` says
    /// why there is none. Its files are put in their trees by what the watch of the run found
    /// ([`CommandBatch::located`]); after the first run, the files it wrote that the walk does
    /// not hold are looked for under the watched roots and the working directory
    /// ([`CommandBatch::name_written`]), and every line goes to `runs/NNN/page_ins.tsv`.
    pub(super) fn page_ins_record(
        &mut self,
        ledger: Option<Ledger>,
        why: Option<&str>,
    ) -> Option<PageInsRecord> {
        let ledger = match (ledger, why) {
            (Some(ledger), _) => ledger,
            (None, Some(why)) => return Some(PageInsRecord::unknown(why)),
            (None, None) => return None,
        };
        let split_unknown = self.split_unknown.clone().flatten();
        let first = self.role_of(self.next_index) == Role::First;
        let searched = first && split_unknown.is_none();
        let (named, names_reason) = match &ledger {
            Ok(ins) if searched => self.name_written(ins),
            _ => (Found::default(), None),
        };
        let located = &self.located;
        let began = ledger.as_ref().map_or(0, |ins| ins.began_unix_ns);
        let written = |key: &FileKey| ledger.as_ref().is_ok_and(|i| i.written_pages(key) > 0);
        let mut locate = |key: FileKey| {
            if let Some((path, evicted)) = located.get(&key) {
                let under = if *evicted { Under::Evict } else { Under::Watch };
                let created = (searched && written(&key))
                    .then(|| names::born_since(path, began))
                    .flatten();
                return Some(Place {
                    path: path.clone(),
                    under,
                    created,
                });
            }
            named.get(&key).cloned()
        };
        let mut all = Vec::new();
        let placing = Placing {
            page_bytes: rustix::param::page_size() as u64,
            split_unknown: split_unknown.as_deref(),
            searched,
            names_reason: names_reason.as_deref(),
            locate: &mut locate,
        };
        let record = PageInsRecord::of(&ledger, placing, &mut |line| {
            if first {
                all.push(line.clone());
            }
        });
        if first && ledger.is_ok() {
            self.write_page_ins(all);
        }
        Some(record)
    }

    /// Names the files `ins` says the run wrote that the walk of the watched trees does not
    /// hold (files it created), by a bounded search of the `--evict` roots, the `--watch`
    /// roots and the working directory, in that order; with each, whether it was born during
    /// the run. Also why some were looked for and not named, when the search's bound cut it.
    fn name_written(&self, ins: &PageIns) -> (Found, Option<String>) {
        let wanted: FileKeys = ins
            .written
            .keys()
            .filter(|k| !self.located.contains_key(*k))
            .copied()
            .collect();
        if wanted.is_empty() {
            return (Found::default(), None);
        }
        let cold = &self.plan.cold;
        let watched = cold.watch.iter().filter(|w| !cold.evict.contains(w));
        let mut roots: Vec<(PathBuf, Under)> = cold
            .evict
            .iter()
            .map(|r| (r.clone(), Under::Evict))
            .collect();
        roots.extend(watched.map(|r| (r.clone(), Under::Watch)));
        roots.extend(self.cwd.as_ref().map(|c| (PathBuf::from(c), Under::Cwd)));
        let paths: Vec<PathBuf> = roots.iter().map(|r| r.0.clone()).collect();
        let search = names::find(&wanted, &paths, names::ENTRIES);
        let reason = (search.cut && search.found.len() < wanted.len()).then(|| {
            format!(
                "the search for the files written stopped after {} directory entries; {} of \
                 {} were not found",
                search.entries,
                wanted.len() - search.found.len(),
                wanted.len()
            )
        });
        let found = search
            .found
            .into_iter()
            .map(|(key, (path, at))| {
                let created = names::born_since(&path, ins.began_unix_ns);
                let place = Place {
                    path,
                    under: roots[at].1,
                    created,
                };
                (key, place)
            })
            .collect();
        (found, reason)
    }

    /// Writes every line of the first run's ledger, largest first, to `runs/NNN/page_ins.tsv`
    /// (`bytes`, `how` — `read` or `written` —, `device`, `inode`, `under`, `created` — `yes`
    /// or `no` for a file written and named —, `path`; `-` where there is none); a failure
    /// to write it is said, not fatal. A run that added nothing to the page cache gets no
    /// file: `runs/` holds only what a run left to keep.
    fn write_page_ins(&mut self, mut all: Vec<LedgerLine>) {
        let Some(dir) = &self.dir else { return };
        if all.is_empty() {
            return;
        }
        all.sort_by(|a, b| {
            let (a_, b_) = (&a.file, &b.file);
            b_.bytes
                .cmp(&a_.bytes)
                .then_with(|| a_.key.cmp(&b_.key))
                .then_with(|| (a.how == How::Written).cmp(&(b.how == How::Written)))
        });
        let mut text = String::from("bytes\thow\tdevice\tinode\tunder\tcreated\tpath\n");
        for line in &all {
            let f = &line.file;
            let path = f.path.as_ref().map_or("-".into(), |p| {
                crate::text::escape_controls(&p.to_string_lossy())
            });
            let under = f.under.map_or("-", Under::name);
            let created = match line.created {
                Some(true) => "yes",
                Some(false) => "no",
                None => "-",
            };
            let FileKey { major, minor, ino } = f.key;
            text.push_str(&format!(
                "{}\t{}\t{major}:{minor}\t{ino}\t{under}\t{created}\t{path}\n",
                f.bytes,
                line.how.name()
            ));
        }
        if let Err(e) = dir.write_run_file(self.next_index, "page_ins.tsv", text.as_bytes()) {
            self.notices.push(e.message);
        }
    }
}

/// Why the page-in ledger's files cannot be put in the watched trees (`None`: they can): a
/// watched root on btrfs or overlayfs, where the page cache names a file by another device
/// than `stat` gives.
pub(crate) fn split_unknown(roots: &[PathBuf]) -> Option<String> {
    const BTRFS_MAGIC: rustix::fs::FsWord = 0x9123_683e;
    roots.iter().find_map(|root| {
        let kind = match rustix::fs::statfs(root).ok()?.f_type {
            crate::measure::cache::OVERLAYFS_MAGIC => "overlayfs",
            BTRFS_MAGIC => "btrfs",
            _ => return None,
        };
        Some(format!(
            "{} is on {kind}, where the page cache names a file by another device than stat \
             gives: its page-ins cannot be told from others",
            root.display()
        ))
    })
}
