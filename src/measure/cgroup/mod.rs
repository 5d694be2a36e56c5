//! A cgroup v2 per batch, where one can be had, and one leaf of it per run: what cgroups are
//! exact at — the tree's CPU time (`cpu.stat`), its own I/O and memory stalls (the group's PSI,
//! not the system's), killing the whole tree at once (`cgroup.kill`), and the processes left
//! in it after the command exited.
//!
//! Each run's command is born in its leaf (`clone3` with `CLONE_INTO_CGROUP`: see
//! [`coldtrace_syscalls::SpawnOptions::cgroup`]), never moved there by a write to
//! `cgroup.procs` inside the timed window (that costs 0.23 ms, and sometimes an RCU grace
//! period of 13.7 ms, measured on this project's machine). A leaf serves run after run while
//! nothing is left in it; a run that leaves processes running keeps its leaf, and the next run
//! gets a new one. Figures are differences between the leaf's counters after the run and after
//! the run before (a new leaf starts at zero).
//!
//! The group is made below coldtrace's own cgroup (`/proc/self/cgroup`, line `0::`), in the
//! cgroup2 file system found in `/proc/self/mountinfo` (`/sys/fs/cgroup`, or
//! `/sys/fs/cgroup/unified` in a hybrid layout). That takes root, or a delegated subtree
//! (`systemd-run --user --scope -p Delegate=yes`). Where it cannot be done (cgroup v1 only, a
//! read-only `/sys/fs/cgroup` in a container, no delegation) the reason is kept and recorded,
//! and every run goes on without.
//!
//! Named `coldtrace-PID-START` (the PID and start time of the coldtrace that made it, for a
//! reader; a new name if that one exists), the group is marked as coldtrace's with an extended
//! attribute that names the batch (`leftovers.rs`), and held by its batch with an exclusive
//! [flock(2)] on the group's directory for as long as the batch runs: the kernel drops that
//! lock when coldtrace exits, however it ends. A PID means nothing in another PID namespace (a
//! container beside the host, a batch under `unshare --pid`), where a live batch's group would
//! look abandoned: there, whether a group's batch still runs is asked of the lock. The group is
//! removed at the end of the batch when it is empty.
//! When runs left processes running in it, an empty child `finished` marks that the batch ended
//! and left them on purpose. The next batch ([`leftovers`]) names what such a group still holds
//! and leaves it; a populated group without the mark belongs to a coldtrace that was killed
//! mid-batch: what it holds is killed.
//!
//! [cgroups(7)]: https://man7.org/linux/man-pages/man7/cgroups.7.html
//! [flock(2)]: https://man7.org/linux/man-pages/man2/flock.2.html
#![forbid(unsafe_code)]

mod leftovers;

pub use leftovers::{
    deal_with, groups_below, leftovers, standing, survey, Leftover, LeftoverAction, Maker,
    Standing, GROUP_WALK_LIMIT,
};

use crate::measure::descendants::Proc;
use crate::measure::procfs;
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{Mode, OFlags};
use std::path::{Path, PathBuf};

/// The prefix of a batch's group name.
pub const PREFIX: &str = "coldtrace-";
/// The mark of a batch that finished and left processes running on purpose.
pub const FINISHED: &str = "finished";

/// Where coldtrace's own cgroup v2 directory is: the cgroup2 mount of `mountinfo` joined with
/// the `0::` path of `cgroup` (both texts of this process's `/proc` files).
///
/// # Errors
/// Why there is none, in words.
pub fn own_directory(mountinfo: &str, cgroup: &str) -> Result<PathBuf, String> {
    let Some(path) = cgroup.lines().find_map(|l| l.strip_prefix("0::")) else {
        return Err("cgroup v2 is not in use here (cgroup v1 only)".into());
    };
    let Some((root, mount_point)) = mountinfo.lines().find_map(cgroup2_mount) else {
        return Err("no cgroup2 file system is mounted (cgroup v1 only)".into());
    };
    // A mount of a subtree (its root is not "/") holds the paths below that root.
    let relative = match root.as_str() {
        "/" => path,
        r => path
            .strip_prefix(r)
            .ok_or_else(|| format!("this process's cgroup {path} is outside the mount of {r}"))?,
    };
    let relative = relative.trim_matches('/');
    let mut dir = PathBuf::from(mount_point);
    if !relative.is_empty() {
        dir.push(relative);
    }
    Ok(dir)
}

/// The mount point of the cgroup2 file system in `mountinfo` text (`None`: none mounted).
pub fn mount_point(mountinfo: &str) -> Option<PathBuf> {
    mountinfo
        .lines()
        .find_map(cgroup2_mount)
        .map(|(_, mount_point)| PathBuf::from(mount_point))
}

/// The root and mount point of a `mountinfo` line of a cgroup2 file system.
fn cgroup2_mount(line: &str) -> Option<(String, String)> {
    let (fields, rest) = line.split_once(" - ")?;
    if rest.split_ascii_whitespace().next()? != "cgroup2" {
        return None;
    }
    let mut fields = fields.split_ascii_whitespace();
    let root = fields.nth(3)?;
    let mount_point = fields.next()?;
    Some((unescape(root), unescape(mount_point)))
}

/// `mountinfo`'s octal escapes (`\040` for a space) undone.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes.get(i + 1..i + 4).and_then(|d| {
            let s = std::str::from_utf8(d).ok()?;
            u8::from_str_radix(s, 8).ok()
        });
        match (bytes[i], octal) {
            (b'\\', Some(b)) => {
                out.push(b);
                i += 4;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The cgroup counters of a leaf at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reading {
    /// `cpu.stat` `usage_usec`, `user_usec`, `system_usec`.
    pub cpu_us: [Option<u64>; 3],
    /// PSI `total=` in µs: cpu some, io some, io full, memory some, memory full.
    pub stall_us: [Option<u64>; 5],
}

/// What a run's leaf says of the run: its tree's CPU time and stalls.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunGroup {
    /// The leaf, as a path.
    pub path: String,
    /// CPU time of the tree: all, user, system (ns; µs resolution).
    pub cpu_ns: [Option<u64>; 3],
    /// Stall time of the tree (ns; µs resolution): cpu some, io some, io full, memory some,
    /// memory full.
    pub stall_ns: [Option<u64>; 5],
}

/// A value of a `key N` line of a flat-keyed cgroup file.
fn keyed(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok()).flatten()
    })
}

/// The `total=` of the `some` or `full` line of a PSI file.
fn psi_total(text: &str, which: &str) -> Option<u64> {
    text.lines()
        .find(|l| l.starts_with(which))?
        .split_ascii_whitespace()
        .find_map(|f| f.strip_prefix("total="))?
        .parse()
        .ok()
}

/// A leaf: one cgroup directory that runs are born in.
pub struct Leaf {
    path: PathBuf,
    dir: OwnedFd,
    /// `cpu.stat`, `cpu.pressure`, `io.pressure`, `memory.pressure`, `cgroup.events` (each
    /// `None` where it cannot be opened), read into a buffer on the stack: a heap buffer kept
    /// per file would be resident at every spawn, on a vfork child's max RSS floor.
    files: [Option<OwnedFd>; 5],
    /// The counters after the last run (zero at creation).
    last: Reading,
    /// `cgroup.kill` was written: no child may be born in it again (see [`Leaf::kill`]).
    killed: std::cell::Cell<bool>,
}

impl Leaf {
    fn create(path: PathBuf) -> std::io::Result<Leaf> {
        rustix::fs::mkdir(&path, Mode::from_raw_mode(0o755))?;
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let dir = match rustix::fs::open(&path, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(e) => {
                let _ = rustix::fs::rmdir(&path);
                return Err(e.into());
            }
        };
        let file = |name: &str| procfs::open(&path.join(name).to_string_lossy());
        let zero = |_| Some(0);
        Ok(Leaf {
            files: [
                "cpu.stat",
                "cpu.pressure",
                "io.pressure",
                "memory.pressure",
                "cgroup.events",
            ]
            .map(file),
            last: Reading {
                cpu_us: [0; 3].map(zero),
                stall_us: [0; 5].map(zero),
            },
            path,
            dir,
            killed: std::cell::Cell::new(false),
        })
    }

    /// Its directory, for `CLONE_INTO_CGROUP`.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.dir.as_fd()
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The counters now.
    fn read(&self) -> Reading {
        let mut buf = [0u8; SMALL];
        let cpu = read_small(self.files[0].as_ref(), &mut buf);
        let cpu_us = ["usage_usec", "user_usec", "system_usec"].map(|k| keyed(cpu, k));
        let mut psi = [[None; 2]; 3];
        for (totals, file) in psi.iter_mut().zip(&self.files[1..4]) {
            let text = read_small(file.as_ref(), &mut buf);
            *totals = [psi_total(text, "some"), psi_total(text, "full")];
        }
        let [[cpu_some, _], [io_some, io_full], [memory_some, memory_full]] = psi;
        Reading {
            cpu_us,
            stall_us: [cpu_some, io_some, io_full, memory_some, memory_full],
        }
    }

    /// What the leaf counted since the last call (or its creation), as the run's figures.
    pub fn after_run(&mut self) -> RunGroup {
        let now = self.read();
        let delta = |a: Option<u64>, b: Option<u64>| Some(a?.checked_sub(b?)?.saturating_mul(1000));
        let mut run = RunGroup {
            path: self.path.display().to_string(),
            ..RunGroup::default()
        };
        for i in 0..3 {
            run.cpu_ns[i] = delta(now.cpu_us[i], self.last.cpu_us[i]);
        }
        for i in 0..5 {
            run.stall_ns[i] = delta(now.stall_us[i], self.last.stall_us[i]);
        }
        self.last = now;
        run
    }

    /// Makes it ready for another run, if it can be: a leaf is reused from run to run, and a
    /// command can freeze its own (`cgroup.freeze`), which would freeze the next command at
    /// its birth, before `execve`. A frozen leaf (`cgroup.events` `frozen 1`) is thawed
    /// (`cgroup.freeze` 0) and read again; `false` when it stays frozen, or `cgroup.events`
    /// cannot be read: then it must not be reused.
    fn ready_again(&self) -> bool {
        let mut buf = [0u8; SMALL];
        match keyed(read_small(self.files[4].as_ref(), &mut buf), "frozen") {
            Some(0) => return true,
            Some(_) => {}
            None => return false,
        }
        let thawed = procfs::open_for_writing(self.path.join("cgroup.freeze"))
            .and_then(|fd| rustix::io::write(&fd, b"0"));
        thawed.is_ok() && keyed(read_small(self.files[4].as_ref(), &mut buf), "frozen") == Some(0)
    }

    /// Whether a live process is in it (`cgroup.events` `populated 1`).
    pub fn populated(&self) -> bool {
        let mut buf = [0u8; SMALL];
        keyed(read_small(self.files[4].as_ref(), &mut buf), "populated") == Some(1)
    }

    /// The live processes in it (`cgroup.procs`; zombies left out), at most
    /// [`crate::measure::descendants::WALK_LIMIT`]; `cgroup.procs` is read only when the leaf
    /// is populated (the usual case reads nothing into the heap).
    pub fn processes(&self) -> Vec<Proc> {
        if self.files[4].is_some() && !self.populated() {
            return Vec::new();
        }
        members(&self.path)
    }

    /// SIGKILL to every process in it at once (`cgroup.kill`, Linux ≥ 5.14). The leaf is
    /// then retired ([`BatchGroup::end_run`]): on this project's machine (kernel 6.18), every
    /// child born with `CLONE_INTO_CGROUP` in a group once killed this way was killed at birth.
    ///
    /// # Errors
    /// The kernel's, `ENOENT` where the kernel has no `cgroup.kill`.
    pub fn kill(&self) -> rustix::io::Result<()> {
        self.killed.set(true);
        kill_group(&self.path)
    }
}

/// The size of the stack buffer small cgroup files are read into (`cpu.stat` with every
/// controller on is ~400 bytes, a PSI file ~120).
const SMALL: usize = 1024;

/// The text of a small cgroup file (at most [`SMALL`] bytes), read from its start into `buf`
/// (one record: a short read is its end, [`procfs::pread_small`]); empty when it cannot be
/// read.
fn read_small<'b>(fd: Option<&OwnedFd>, buf: &'b mut [u8; SMALL]) -> &'b str {
    fd.and_then(|fd| procfs::pread_small(fd, buf))
        .and_then(|text| std::str::from_utf8(text).ok())
        .unwrap_or("")
}

/// The live processes of the cgroup at `dir` (zombies left out).
fn members(dir: &Path) -> Vec<Proc> {
    let procs = dir.join("cgroup.procs");
    let text = procfs::read_text(&procs.to_string_lossy(), 1 << 20).unwrap_or_default();
    text.split_ascii_whitespace()
        .filter_map(|p| p.parse::<i32>().ok())
        .take(crate::measure::descendants::WALK_LIMIT)
        .filter_map(Proc::read)
        .filter(|p| !p.is_zombie())
        .collect()
}

/// Writes `1` to `dir/cgroup.kill`.
fn kill_group(dir: &Path) -> rustix::io::Result<()> {
    let fd = procfs::open_for_writing(dir.join("cgroup.kill"))?;
    rustix::io::write(&fd, b"1").map(|_| ())
}

/// This batch's cgroup: a directory below coldtrace's own, and the leaves of its runs.
pub struct BatchGroup {
    dir: PathBuf,
    /// The group's directory, locked (`LOCK_EX`) while this batch runs; see the module's doc.
    _held: OwnedFd,
    /// The leaf the next run is born in (made on first use).
    leaf: Option<Leaf>,
    /// Leaves that runs left processes in, kept until the end of the batch.
    kept: Vec<Leaf>,
    next: u64,
    /// Why the group's PSI files cannot be read, if they cannot.
    psi_unavailable: Option<String>,
}

impl BatchGroup {
    /// Makes this batch's group below `own` (coldtrace's own cgroup directory).
    ///
    /// # Errors
    /// Why it cannot be had, in words.
    pub fn create(own: &Path) -> Result<BatchGroup, String> {
        let (pid, start) = own_identity();
        let (dir, held) = hold_new_group(own, &format!("{PREFIX}{pid}-{start}"))?;
        // A child born in it is moved from coldtrace's cgroup: that takes write access to the
        // cgroup.procs of their common ancestor, coldtrace's own (cgroups(7), delegation).
        let procs = own.join("cgroup.procs");
        let access = rustix::fs::Access::WRITE_OK;
        if rustix::fs::access(&procs, access).is_err() {
            let _ = rustix::fs::rmdir(&dir);
            return Err(format!(
                "no write access to {}: runs cannot be born in a cgroup below it",
                procs.display()
            ));
        }
        let psi_unavailable = psi_unavailable(&dir);
        Ok(BatchGroup {
            dir,
            _held: held,
            leaf: None,
            kept: Vec::new(),
            next: 0,
            psi_unavailable,
        })
    }

    /// Its directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Why PSI figures are missing from the runs' records (`None`: they are there).
    pub fn psi_unavailable(&self) -> Option<&str> {
        self.psi_unavailable.as_deref()
    }

    /// The leaf the next run is born in: the last one if it is empty and not frozen (thawed
    /// if it was), else a new one (`run-NNN`, numbered by the run that first used it).
    ///
    /// # Errors
    /// Why no leaf could be made.
    pub fn leaf(&mut self, index: u64) -> Result<&mut Leaf, String> {
        if self.leaf.as_ref().is_some_and(|leaf| !leaf.ready_again()) {
            // Kept, not removed: a frozen leaf may still hold a process on its way out.
            self.kept.extend(self.leaf.take());
            self.next = self.next.max(index);
        }
        if self.leaf.is_none() {
            self.next = self.next.max(index);
            let path = self.dir.join(format!("run-{:03}", self.next));
            let leaf = Leaf::create(path.clone())
                .map_err(|e| format!("cannot make {}: {e}", path.display()))?;
            self.leaf = Some(leaf);
        }
        self.leaf.as_mut().ok_or_else(|| "no leaf".to_string())
    }

    /// The leaf the next run is born in, once made ([`BatchGroup::leaf`]).
    pub fn current_leaf(&self) -> Option<&Leaf> {
        self.leaf.as_ref()
    }

    /// After run `index`: what its leaf counted. A leaf the run `left` processes in is kept
    /// (they stay there) and a killed one is removed; either way the next run gets a new one.
    pub fn end_run(&mut self, index: u64, left: bool) -> Option<RunGroup> {
        let leaf = self.leaf.as_mut()?;
        let counted = leaf.after_run();
        if left || leaf.killed.get() {
            if let Some(leaf) = self.leaf.take() {
                if left || rustix::fs::rmdir(&leaf.path).is_err() {
                    self.kept.push(leaf);
                }
            }
            self.next = index.saturating_add(1);
        }
        Some(counted)
    }

    /// The end of the batch: empty leaves removed, the group too when nothing is left in it;
    /// otherwise it is marked [`FINISHED`] and stays, with what the runs left running.
    fn finish(&mut self) {
        let mut left = false;
        for leaf in self
            .leaf
            .take()
            .into_iter()
            .chain(std::mem::take(&mut self.kept))
        {
            if leaf.populated() || rustix::fs::rmdir(&leaf.path).is_err() {
                left = true;
            }
        }
        if left {
            let _ = rustix::fs::mkdir(self.dir.join(FINISHED), Mode::from_raw_mode(0o755));
        } else {
            let _ = rustix::fs::rmdir(&self.dir);
        }
    }
}

impl Drop for BatchGroup {
    /// [`BatchGroup::finish`], however the batch ends (coldtrace killed with SIGKILL aside:
    /// then the next batch finds the group, see [`leftovers`]).
    fn drop(&mut self) {
        self.finish();
    }
}

/// This process's PID and start time as `/proc/self/stat` gives them: the PID in the
/// namespace of the `/proc` mounted here (under `unshare --pid` with the host's `/proc`, the
/// host's PID, not 1), so that two batches beside each other name their groups apart.
fn own_identity() -> (i32, u64) {
    let mut buf = Vec::with_capacity(512);
    let text = procfs::read_small_once("/proc/self/stat", &mut buf).unwrap_or_default();
    let pid = std::str::from_utf8(text)
        .ok()
        .and_then(|t| t.split(' ').next()?.parse().ok())
        .unwrap_or_else(|| rustix::process::getpid().as_raw_nonzero().get());
    let start = crate::measure::descendants::parse_stat(pid, text).map_or(0, |p| p.start_ticks);
    (pid, start)
}

/// Makes a new group directory below `own`, named `name` (or `name-2`, `name-3`… when that
/// exists: another batch's, in another PID namespace, or a directory left by one), and locks
/// it. Nothing here waits: a lock already taken on the directory just made (another batch's
/// [`leftovers`] looking at it, or anyone else: any user can lock a directory they can read)
/// makes this try the next name, and the one made is removed. A directory found removed after
/// the lock (by such a look, finding it empty) is made again.
fn hold_new_group(own: &Path, name: &str) -> Result<(PathBuf, OwnedFd), String> {
    let mut why = String::new();
    for attempt in 1..=8u32 {
        let dir = match attempt {
            1 => own.join(name),
            n => own.join(format!("{name}-{n}")),
        };
        match rustix::fs::mkdir(&dir, Mode::from_raw_mode(0o755)) {
            Ok(()) => {}
            Err(rustix::io::Errno::EXIST) => {
                why = format!("{} exists", dir.display());
                continue;
            }
            Err(e) => return Err(cannot_create(own, e)),
        }
        let held = match lock_group(&dir, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(fd) => fd,
            Err(e) => {
                why = format!("{} was locked by another process ({e})", dir.display());
                let _ = rustix::fs::rmdir(&dir);
                continue;
            }
        };
        // Still the directory at `dir` (not removed, nor made again by someone else)?
        let same = rustix::fs::stat(&dir)
            .ok()
            .zip(rustix::fs::fstat(&held).ok());
        if same.is_some_and(|(at, locked)| (at.st_dev, at.st_ino) == (locked.st_dev, locked.st_ino))
        {
            return mark(&held).map(|()| (dir.clone(), held)).map_err(|why| {
                let _ = rustix::fs::rmdir(&dir);
                format!("cannot mark {} as coldtrace's: {why}", dir.display())
            });
        }
        why = format!("{} was removed as it was made", dir.display());
    }
    Err(format!(
        "no group of its own could be made below {} (last: {why})",
        own.display()
    ))
}

/// Marks the group `held` (its directory) as this batch's ([`leftovers::MARK`]): later batches
/// touch no group without it.
fn mark(held: &OwnedFd) -> Result<(), String> {
    let maker = Maker::this_process().ok_or("/proc/self cannot be read")?;
    let text = maker.text();
    rustix::fs::fsetxattr(
        held,
        leftovers::MARK,
        text.as_bytes(),
        rustix::fs::XattrFlags::CREATE,
    )
    .map_err(|e| format!("user extended attributes: {}", std::io::Error::from(e)))
}

/// A group's directory, opened and locked with `operation` ([flock(2)]).
///
/// [flock(2)]: https://man7.org/linux/man-pages/man2/flock.2.html
fn lock_group(dir: &Path, operation: rustix::fs::FlockOperation) -> rustix::io::Result<OwnedFd> {
    let fd = rustix::fs::open(
        dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
        Mode::empty(),
    )?;
    rustix::fs::flock(&fd, operation)?;
    Ok(fd)
}

/// Why a group cannot be made below `own`, in words.
fn cannot_create(own: &Path, e: rustix::io::Errno) -> String {
    let own = own.display();
    match e {
        rustix::io::Errno::ROFS => format!("{own} is read-only (a container's cgroup file system)"),
        rustix::io::Errno::ACCESS | rustix::io::Errno::PERM => format!(
            "not allowed to make a cgroup below {own} (as root, or in a delegated subtree: \
             systemd-run --user --scope -p Delegate=yes)"
        ),
        e => format!(
            "cannot make a cgroup below {own}: {}",
            std::io::Error::from(e)
        ),
    }
}

/// Why the PSI files of the cgroup at `dir` cannot be read (`None`: they can).
fn psi_unavailable(dir: &Path) -> Option<String> {
    let path = dir.join("io.pressure");
    match procfs::read_text(&path.to_string_lossy(), 4096) {
        Some(text) if psi_total(&text, "some").is_some() => None,
        Some(_) => Some(format!("{} does not read as PSI", path.display())),
        None => Some(
            "PSI is off in this kernel (CONFIG_PSI, or booted without psi=1): no stall figures"
                .into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    #[test]
    fn the_own_directory_is_found_in_a_hybrid_layout_a_subtree_and_not_without_v2() {
        let at = |mountinfo: &str, cgroup: &str| own_directory(mountinfo, cgroup);
        assert_eq!(
            at(MOUNTINFO, "1:cpu:/\n0::/user.slice/a.scope\n"),
            Ok(PathBuf::from("/sys/fs/cgroup/unified/user.slice/a.scope"))
        );
        assert_eq!(
            at(MOUNTINFO, "0::/\n"),
            Ok(PathBuf::from("/sys/fs/cgroup/unified"))
        );
        // A container's mount of its own subtree, its path with a space (escaped as \040).
        let sub = "7 1 0:9 /kube/pod\\040a /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
        assert_eq!(
            at(sub, "0::/kube/pod a/x\n"),
            Ok(PathBuf::from("/sys/fs/cgroup/x"))
        );
        assert!(at(sub, "0::/elsewhere\n").unwrap_err().contains("outside"));
        let v1 = "32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n";
        assert!(at(v1, "0::/\n").unwrap_err().contains("v1 only"));
        assert!(at(MOUNTINFO, "4:memory:/x\n")
            .unwrap_err()
            .contains("v1 only"));
    }

    #[test]
    fn counters_and_pressure_totals_are_read_by_name() {
        let stat = "usage_usec 1200\nuser_usec 1000\nsystem_usec 200\nnr_periods 0\n";
        assert_eq!(keyed(stat, "user_usec"), Some(1000));
        assert_eq!(keyed(stat, "usage"), None);
        let psi = "some avg10=0.00 avg60=0.00 avg300=0.00 total=35\n\
                   full avg10=0.00 avg60=0.00 avg300=0.00 total=12\n";
        assert_eq!(psi_total(psi, "some"), Some(35));
        assert_eq!(psi_total(psi, "full"), Some(12));
        assert_eq!(psi_total("", "some"), None);
    }
}
