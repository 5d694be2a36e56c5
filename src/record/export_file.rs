//! A file the user named for coldtrace to write — an export (`--export-*`) or a picture
//! (`report --svg`, `--html`): checked before anything runs ([`check_all`]) and written
//! ([`write`]) in one place. It writes bytes it is given; what they say is the view's.
//!
//! What the path is decides how it is written:
//! - `/dev/stdout`, `/dev/stderr` (and `/dev/fd/1`, `/proc/self/fd/2`, …): coldtrace's own
//!   descriptor, written as it is (a pipe, a terminal, a file the shell opened);
//! - a character device or a FIFO (`/dev/null`, `mkfifo`): written through, never replaced;
//!   a FIFO without a reader is an error, not a wait;
//! - a regular file (a symlink to one is followed to it): replaced atomically — a temporary
//!   file with an unpredictable name made with `O_EXCL` beside it, given the replaced file's
//!   mode and owner, fsynced, then [renameat(2)] over it (the rename happens only over a regular
//!   file); on failure only that temporary file is removed;
//! - a new name: created the same way;
//! - anything else (a directory, a block device, a socket, a symlink to nothing, another user's
//!   file that coldtrace could not give back to them, a file of a file system the kernel makes:
//!   procfs, sysfs, tracefs…): refused in one line.
//!
//! Before the first run every target is checked as it would be written (its directory
//! writable, the file writable), no two exports may name one file, and none may lie inside a
//! batch directory that the same command reads or writes.
//!
//! [renameat(2)]: https://man7.org/linux/man-pages/man2/renameat.2.html
#![forbid(unsafe_code)]

pub use crate::plan::{own_descriptor, Target};
use crate::record::artifacts::{explain, ArtifactError};
use crate::record::dir::DirHandle;
use rustix::fs::{Access, AtFlags, OFlags, CWD};
use std::fs::Metadata;
use std::io::{self, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// How a target is written.
#[derive(Debug, PartialEq, Eq)]
enum Way {
    /// coldtrace's own stdout (1) or stderr (2).
    Descriptor(u8),
    /// A character device or a FIFO, written through.
    Through(PathBuf),
    /// A regular file `name` in `dir` (both resolved), replaced or made; `keep` is the mode,
    /// owner and group of the file it replaces.
    Replace {
        dir: PathBuf,
        name: String,
        keep: Option<(u32, u32, u32)>,
    },
}

/// How `path` would be written now, or why it cannot be.
fn way(path: &Path) -> Result<Way, String> {
    if path.as_os_str().is_empty() || path.file_name().is_none() {
        return Err("expected a file name".into());
    }
    if let Some(fd) = own_descriptor(path) {
        return descriptor_open_for_writing(fd).map(|()| Way::Descriptor(fd));
    }
    match std::fs::metadata(path) {
        Ok(meta) => existing(path, &meta),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if std::fs::symlink_metadata(path).is_ok() {
                return Err(
                    "is a symlink to nothing; coldtrace makes no file through a \
                            symlink: remove it or give the real path"
                        .into(),
                );
            }
            new_file(path)
        }
        Err(e) => Err(explain(&e)),
    }
}

fn descriptor_open_for_writing(fd: u8) -> Result<(), String> {
    use std::os::fd::AsFd;
    let flags = if fd == 1 {
        rustix::fs::fcntl_getfl(io::stdout().as_fd())
    } else {
        rustix::fs::fcntl_getfl(io::stderr().as_fd())
    }
    .map_err(|e| explain(&e.into()))?;
    let mode = flags & OFlags::RWMODE;
    if mode == OFlags::WRONLY || mode == OFlags::RDWR {
        Ok(())
    } else {
        Err(format!(
            "coldtrace's descriptor {fd} is not open for writing"
        ))
    }
}

/// An existing file: written through, replaced, or refused.
fn existing(path: &Path, meta: &Metadata) -> Result<Way, String> {
    let kind = meta.file_type();
    if kind.is_dir() {
        return Err("is a directory; give a file name inside it".into());
    }
    if kind.is_char_device() || kind.is_fifo() {
        writable(path)?;
        return Ok(Way::Through(path.to_path_buf()));
    }
    if !kind.is_file() {
        let what = if kind.is_block_device() {
            "a block device"
        } else {
            "a socket"
        };
        return Err(format!(
            "is {what}; an export goes to a file, a FIFO or a character device"
        ));
    }
    let real = std::fs::canonicalize(path).map_err(|e| explain(&e))?;
    let me = rustix::process::geteuid().as_raw();
    if meta.uid() != me && me != 0 {
        return Err(format!(
            "belongs to another user (uid {}); coldtrace would replace it with a file of its \
             own: remove it or choose another path",
            meta.uid()
        ));
    }
    let (dir, name) = split(&real)?;
    not_made_by_the_kernel(&dir)?;
    writable(&real)?;
    directory_writable(&dir)?;
    Ok(Way::Replace {
        dir,
        name,
        keep: Some((meta.mode() & 0o777, meta.uid(), meta.gid())),
    })
}

/// A new file in an existing directory.
fn new_file(path: &Path) -> Result<Way, String> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !parent.is_dir() {
        return Err("its directory does not exist; create it first".into());
    }
    let dir = std::fs::canonicalize(parent).map_err(|e| explain(&e))?;
    not_made_by_the_kernel(&dir)?;
    directory_writable(&dir)?;
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or("the file name is not valid UTF-8; choose another")?;
    Ok(Way::Replace {
        dir,
        name: name.to_string(),
        keep: None,
    })
}

/// Refuses a directory on a file system the kernel makes (procfs, sysfs, tracefs…): its files
/// are the kernel's controls, never an export's place.
fn not_made_by_the_kernel(dir: &Path) -> Result<(), String> {
    let f_type = rustix::fs::statfs(dir)
        .map_err(|e| explain(&e.into()))?
        .f_type;
    match crate::untrusted::kernel_file_system(f_type) {
        Some(kind) => Err(format!(
            "is on {kind}, a file system the kernel makes; an export goes to a file on a disk \
             or tmpfs, a FIFO or a character device"
        )),
        None => Ok(()),
    }
}

fn split(real: &Path) -> Result<(PathBuf, String), String> {
    match (real.parent(), real.file_name().and_then(|n| n.to_str())) {
        (Some(dir), Some(name)) => Ok((dir.to_path_buf(), name.to_string())),
        _ => Err("the resolved file name is not valid UTF-8; choose another path".into()),
    }
}

fn writable(path: &Path) -> Result<(), String> {
    rustix::fs::accessat(CWD, path, Access::WRITE_OK, AtFlags::EACCESS)
        .map_err(|e| format!("cannot be written: {}", explain(&e.into())))
}

fn directory_writable(dir: &Path) -> Result<(), String> {
    let access = Access::WRITE_OK | Access::EXEC_OK;
    rustix::fs::accessat(CWD, dir, access, AtFlags::EACCESS).map_err(|e| {
        format!(
            "its directory {} is not writable: {}",
            dir.display(),
            explain(&e.into())
        )
    })
}

/// Where a target lands, to compare with others and with batch directories: its resolved
/// path (a descriptor or a device: none) and its identity when it exists (device, inode).
type Landing = (Option<PathBuf>, Option<(u64, u64)>);

fn landing(target: &Target<'_>, way: &Way) -> Landing {
    use std::os::fd::AsFd;
    let id = |st: rustix::fs::Stat| Some((st.st_dev, st.st_ino));
    match way {
        Way::Descriptor(1) => (
            None,
            rustix::fs::fstat(io::stdout().as_fd()).ok().and_then(id),
        ),
        Way::Descriptor(_) => (
            None,
            rustix::fs::fstat(io::stderr().as_fd()).ok().and_then(id),
        ),
        Way::Through(_) => (
            None,
            std::fs::metadata(target.path)
                .ok()
                .map(|m| (m.dev(), m.ino())),
        ),
        Way::Replace { dir, name, .. } => {
            let path = dir.join(name);
            let id = std::fs::metadata(&path).ok().map(|m| (m.dev(), m.ino()));
            (Some(path), id)
        }
    }
}

/// `path` with its longest existing prefix resolved (a batch directory that is not made yet).
fn resolved(path: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut at = path;
    loop {
        if let Ok(real) = std::fs::canonicalize(at) {
            return rest.iter().rev().fold(real, |p, c| p.join(c));
        }
        match (at.parent(), at.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                at = if parent.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    parent
                };
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// Checks every target before anything runs: each one can be written as [`write`] would
/// write it, no two name one file, and none lies inside one of `batch_dirs` (batch
/// directories read or written by the same command). One line naming the first problem.
pub fn check_all(targets: &[Target<'_>], batch_dirs: &[&Path]) -> Result<(), String> {
    let batches: Vec<(&Path, PathBuf)> = batch_dirs.iter().map(|d| (*d, resolved(d))).collect();
    let mut seen: Vec<(&Target<'_>, Landing)> = Vec::new();
    for target in targets {
        let shown = target.path.display();
        // Resolved before anything else: an export may name a batch directory not made yet.
        let inside = (own_descriptor(target.path).is_none())
            .then(|| resolved(target.path))
            .and_then(|p| batches.iter().find(|(_, b)| p.starts_with(b)));
        if let Some((batch, _)) = inside {
            return Err(format!(
                "{} {shown}: is inside the batch directory {}, whose files coldtrace reads and \
                 writes; put it beside the batch",
                target.flag,
                batch.display()
            ));
        }
        let way = way(target.path).map_err(|why| format!("{} {shown}: {why}", target.flag))?;
        let (path, id) = landing(target, &way);
        let same = seen
            .iter()
            .find(|(_, (p, i))| (path.is_some() && *p == path) || (id.is_some() && *i == id));
        if let Some((other, _)) = same {
            return Err(format!(
                "{} and {} both name {shown}; give each export its own file",
                other.flag, target.flag
            ));
        }
        seen.push((target, (path, id)));
    }
    Ok(())
}

/// Writes what `write` streams to `target` (see the module's notes for how).
///
/// # Errors
/// One line naming the flag, the path and what went wrong.
pub fn write(
    target: Target<'_>,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), ArtifactError> {
    let fail = |why: String| ArtifactError {
        message: format!("{} {}: {why}", target.flag, target.path.display()),
    };
    match way(target.path).map_err(fail)? {
        Way::Descriptor(1) => buffered(&mut io::stdout().lock(), write),
        Way::Descriptor(_) => buffered(&mut io::stderr().lock(), write),
        Way::Through(path) => write_through(&path, write),
        Way::Replace { dir, name, keep } => replace(&dir, &name, keep, write),
    }
    .map_err(|e| fail(format!("cannot write it: {}", explain(&e))))
}

fn buffered(
    out: &mut dyn Write,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let mut buffer = io::BufWriter::new(out);
    write(&mut buffer)?;
    buffer.flush()
}

/// A character device or a FIFO: opened without blocking (a FIFO without a reader is ENXIO,
/// not a wait), checked on the descriptor, then written with blocking writes.
fn write_through(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let flags = OFlags::WRONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    let fd = rustix::fs::open(path, flags, rustix::fs::Mode::empty()).map_err(|e| {
        if e == rustix::io::Errno::NXIO {
            io::Error::other("a FIFO with no reader (ENXIO); start its reader first")
        } else {
            e.into()
        }
    })?;
    let kind = rustix::fs::FileType::from_raw_mode(rustix::fs::fstat(&fd)?.st_mode);
    if !matches!(
        kind,
        rustix::fs::FileType::CharacterDevice | rustix::fs::FileType::Fifo
    ) {
        return Err(io::Error::other("it changed into another kind of file"));
    }
    rustix::fs::fcntl_setfl(&fd, OFlags::WRONLY)?;
    buffered(&mut std::fs::File::from(fd), write)
}

/// A name no one can guess (`getrandom`; the time and process ID if that fails: `O_EXCL`
/// keeps a collision from doing harm).
fn unpredictable() -> u64 {
    let mut bytes = [0u8; 8];
    if rustix::rand::getrandom(&mut bytes, rustix::rand::GetRandomFlags::NONBLOCK) == Ok(8) {
        return u64::from_ne_bytes(bytes);
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    nanos ^ (u64::from(std::process::id()) << 32)
}

/// A regular file replaced (or made) atomically in `dir`, with `keep`'s mode and owner.
fn replace(
    dir: &Path,
    name: &str,
    keep: Option<(u32, u32, u32)>,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let dir = DirHandle::open_named(dir)?;
    // A replaced file's contents may be private: the new one is the user's alone until it
    // has the old one's owner and mode.
    let mode = if keep.is_some() { 0o600 } else { 0o644 };
    let (tmp, file) = (0..8)
        .find_map(|_| {
            let tmp = format!(".{name}.{:016x}.tmp", unpredictable());
            match dir.create_mode(&tmp, mode) {
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => None,
                made => Some(made.map(|f| (tmp, f))),
            }
        })
        .unwrap_or_else(|| Err(io::Error::other("no free temporary name")))?;
    let result = (|| -> io::Result<()> {
        if let Some((mode, uid, gid)) = keep {
            give_back(&file, mode, uid, gid)?;
        }
        buffered(&mut &file, write)?;
        file.sync_all()?;
        dir.rename_over_regular(&tmp, name)?;
        dir.sync()
    })();
    if result.is_err() {
        dir.remove_own(&tmp, &file);
    }
    result
}

/// The replaced file's owner, group and mode, on the new one (before anything is written).
fn give_back(file: &std::fs::File, mode: u32, uid: u32, gid: u32) -> io::Result<()> {
    let st = rustix::fs::fstat(file)?;
    if st.st_uid != uid {
        let (uid, gid) = (
            rustix::fs::Uid::from_raw(uid),
            rustix::fs::Gid::from_raw(gid),
        );
        rustix::fs::fchown(file, Some(uid), Some(gid))?;
    } else if st.st_gid != gid {
        // A group the user is not in cannot be given: the file keeps the user's own.
        let _ = rustix::fs::fchown(file, None, Some(rustix::fs::Gid::from_raw(gid)));
    }
    rustix::fs::fchmod(file, rustix::fs::Mode::from_raw_mode(mode))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_standard_outputs_are_recognised_by_every_name() {
        for (path, fd) in [
            ("/dev/stdout", Some(1)),
            ("/dev/stderr", Some(2)),
            ("/dev/fd/1", Some(1)),
            ("/proc/self/fd/2", Some(2)),
            ("/dev/fd/3", None),
            ("/dev/stdin", None),
            ("stdout", None),
        ] {
            assert_eq!(own_descriptor(Path::new(path)), fd, "{path}");
        }
    }

    #[test]
    fn a_path_not_made_yet_is_resolved_through_what_exists() {
        let tmp = std::env::temp_dir().canonicalize().unwrap();
        assert_eq!(resolved(&tmp.join("no/such/dir")), tmp.join("no/such/dir"));
        assert_eq!(resolved(Path::new(".")), std::env::current_dir().unwrap());
    }
}
