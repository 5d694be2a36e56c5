//! A directory coldtrace writes in, opened once ([`DirHandle`]), and the rule for the `-o DIR`
//! directory ([`claim_out_dir`]). Files and directories only; no records.
//!
//! Every file and subdirectory is made relative to the directory's descriptor
//! ([openat(2)], [mkdirat(2)], [renameat(2)]), each component opened `O_NOFOLLOW |
//! O_DIRECTORY`: swapping the directory, or `runs/` inside it, for a symlink while a batch runs
//! moves nothing of the batch anywhere else — the descriptor still names the directory that was
//! opened, and a symlink is never a component. A directory coldtrace writes in must belong to
//! the user coldtrace runs as: another user could otherwise rename, replace or read what it
//! writes there while it runs.
//!
//! [openat(2)]: https://man7.org/linux/man-pages/man2/openat.2.html
//! [mkdirat(2)]: https://man7.org/linux/man-pages/man2/mkdirat.2.html
//! [renameat(2)]: https://man7.org/linux/man-pages/man2/renameat.2.html
#![forbid(unsafe_code)]

use crate::record::artifacts::{explain, explain_created, ArtifactError};
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{AtFlags, Mode, OFlags, CWD};
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// A directory opened once; every write in it is relative to its descriptor.
pub struct DirHandle {
    fd: OwnedFd,
    /// The path it was opened by, for messages.
    path: PathBuf,
}

fn failed(what: &str, path: &Path, why: String) -> ArtifactError {
    ArtifactError {
        message: format!("{what} {}: {why}", path.display()),
    }
}

/// Opens `name` below `at` as a directory, never through a symlink; `Err(Ok(uid))` when it
/// belongs to another user.
fn open_dir(
    at: impl AsFd,
    name: &Path,
    shown: PathBuf,
) -> Result<DirHandle, Result<u32, ArtifactError>> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(at, name, flags, Mode::empty())
        .map_err(|e| Err(failed("cannot open", &shown, explain_created(&e.into()))))?;
    let stat = rustix::fs::fstat(&fd)
        .map_err(|e| Err(failed("cannot examine", &shown, explain(&e.into()))))?;
    if stat.st_uid != rustix::process::geteuid().as_raw() {
        return Err(Ok(stat.st_uid));
    }
    Ok(DirHandle { fd, path: shown })
}

/// [`open_dir`] of a directory inside the batch: another user's is an error.
fn open_own(at: impl AsFd, name: &Path, shown: PathBuf) -> Result<DirHandle, ArtifactError> {
    open_dir(at, name, shown.clone()).map_err(|e| {
        e.map_or_else(
            |e| e,
            |uid| {
                let why = format!(
                    "it belongs to another user (uid {uid}); remove it or choose a new --out"
                );
                failed("refusing", &shown, why)
            },
        )
    })
}

impl DirHandle {
    /// A directory the user named for a file of theirs (an export's): followed through
    /// symlinks, anyone's (`/tmp` is root's).
    pub fn open_named(path: &Path) -> io::Result<DirHandle> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(CWD, path, flags, Mode::empty())?;
        Ok(DirHandle {
            fd,
            path: path.to_path_buf(),
        })
    }

    /// The path it was opened by.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The subdirectory `name`, made (mode 0755 under the umask) unless it exists; with
    /// `fresh`, an existing one is an error. Never a symlink, always the user's own.
    pub fn subdir(&self, name: &str, fresh: bool) -> Result<DirHandle, ArtifactError> {
        let shown = self.path.join(name);
        match rustix::fs::mkdirat(&self.fd, name, Mode::from_raw_mode(0o755)) {
            Ok(()) => {}
            Err(rustix::io::Errno::EXIST) if !fresh => {}
            Err(e) => return Err(failed("cannot create", &shown, explain_created(&e.into()))),
        }
        open_own(&self.fd, Path::new(name), shown)
    }

    /// Creates the new file `name` for writing and reading back: `O_CREAT | O_EXCL |
    /// O_NOFOLLOW`, mode 0644 under the umask. An existing file or a symlink there is an error.
    pub fn create_file(&self, name: &str) -> Result<File, ArtifactError> {
        self.create_mode(name, 0o644)
            .map_err(|e| failed("cannot create", &self.path.join(name), explain_created(&e)))
    }

    /// Creates the new file `name` (`O_CREAT | O_EXCL | O_NOFOLLOW`) with `mode` under the
    /// umask.
    pub fn create_mode(&self, name: &str, mode: u32) -> io::Result<File> {
        let flags =
            OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(&self.fd, name, flags, Mode::from_raw_mode(mode))?;
        Ok(File::from(fd))
    }

    /// Writes `name` atomically with what `write` streams: the temporary file `.NAME.tmp`
    /// (`O_EXCL`), fsync, [`renameat(2)`](https://man7.org/linux/man-pages/man2/renameat.2.html)
    /// over `name`, fsync of the directory. A reader sees the old file or the whole new one; a
    /// failure removes the temporary file only if it is the one this call made.
    pub fn write_atomic_with(
        &self,
        name: &str,
        write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    ) -> Result<(), ArtifactError> {
        let tmp = format!(".{name}.tmp");
        let fail =
            |e: &io::Error| failed("cannot write", &self.path.join(name), explain_created(e));
        let file = self.create_mode(&tmp, 0o644).map_err(|e| fail(&e))?;
        let result = (|| -> io::Result<()> {
            let mut out = io::BufWriter::new(&file);
            write(&mut out)?;
            out.flush()?;
            drop(out);
            file.sync_all()?;
            rustix::fs::renameat(&self.fd, tmp.as_str(), &self.fd, name)?;
            rustix::fs::fsync(&self.fd)?;
            Ok(())
        })();
        result.map_err(|e| {
            self.remove_own(&tmp, &file);
            fail(&e)
        })
    }

    /// Removes `name` if it is still the file `ours` (same device and inode): never a file
    /// someone else put there.
    pub fn remove_own(&self, name: &str, ours: &File) {
        let (Ok(theirs), Ok(mine)) = (
            rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW),
            rustix::fs::fstat(ours),
        ) else {
            return;
        };
        if (theirs.st_dev, theirs.st_ino) == (mine.st_dev, mine.st_ino) {
            let _ = rustix::fs::unlinkat(&self.fd, name, AtFlags::empty());
        }
    }

    /// Renames `from` over `to` when `to` is a regular file or does not exist (anything else
    /// there — a symlink, a device, a directory — is left alone and is an error).
    pub fn rename_over_regular(&self, from: &str, to: &str) -> io::Result<()> {
        match rustix::fs::statat(&self.fd, to, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st)
                if rustix::fs::FileType::from_raw_mode(st.st_mode)
                    != rustix::fs::FileType::RegularFile =>
            {
                return Err(io::Error::other(
                    "it is no longer a regular file; it was left as it is",
                ))
            }
            Ok(_) | Err(rustix::io::Errno::NOENT) => {}
            Err(e) => return Err(e.into()),
        }
        rustix::fs::renameat(&self.fd, from, &self.fd, to).map_err(io::Error::from)
    }

    /// Flushes the directory's entries to stable storage.
    pub fn sync(&self) -> io::Result<()> {
        rustix::fs::fsync(&self.fd).map_err(io::Error::from)
    }
}

/// Claims `root` as a batch directory, the `-o DIR` rule: a new directory is made (its parents
/// too); an existing one is taken only when it is empty, a real directory (not a symlink) and
/// the user's own. Every refusal is one line that says how to go on, with the next free name
/// (`b-2`) where one helps.
pub fn claim_out_dir(root: &Path) -> Result<DirHandle, ArtifactError> {
    if root.as_os_str().is_empty() {
        // "" joined with a file name is that name in the current directory.
        return Err(ArtifactError {
            message: "--out: the path is empty; give a new or empty directory".into(),
        });
    }
    if let Some(kind) = kernel_file_system_at(root) {
        return Err(ArtifactError {
            message: format!(
                "--out {}: is on {kind}, a file system the kernel makes; give a directory on a \
                 disk or tmpfs",
                root.display()
            ),
        });
    }
    // Made here, or found: at most twice (a directory made by someone else in between is
    // examined like any existing one).
    for _ in 0..2 {
        match std::fs::symlink_metadata(root) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(refusal(
                    root,
                    "is a symlink; give the real directory, or a new one",
                ))
            }
            Ok(meta) if !meta.is_dir() => {
                return Err(refusal(
                    root,
                    "exists and is not a directory; choose a new path",
                ))
            }
            Ok(_) => return claim_existing(root),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                if let Some(made) = make_new(root)? {
                    return Ok(made);
                }
            }
            Err(e) => return Err(failed("--out", root, explain(&e))),
        }
    }
    Err(refusal(
        root,
        "appeared and vanished while coldtrace examined it; try again",
    ))
}

/// The kernel-made file system `root` is on, or would be made on (that of its nearest
/// existing ancestor), if it is one ([`crate::untrusted::kernel_file_system`]).
fn kernel_file_system_at(root: &Path) -> Option<&'static str> {
    let existing = root
        .ancestors()
        .find(|p| !p.as_os_str().is_empty() && std::fs::symlink_metadata(p).is_ok());
    let f_type = rustix::fs::statfs(existing.unwrap_or(Path::new(".")))
        .ok()?
        .f_type;
    crate::untrusted::kernel_file_system(f_type)
}

/// `--out ROOT: WHY, e.g. -o NAME-2` (the suggestion when a free name is found).
fn refusal(root: &Path, why: &str) -> ArtifactError {
    let suggestion =
        next_free_name(root).map_or_else(String::new, |p| format!(", e.g. -o {}", p.display()));
    ArtifactError {
        message: format!("--out {}: {why}{suggestion}", root.display()),
    }
}

/// An existing directory, taken when it is the user's own and empty.
fn claim_existing(root: &Path) -> Result<DirHandle, ArtifactError> {
    let dir = open_dir(CWD, root, root.to_path_buf()).map_err(|e| {
        e.map_or_else(
            |e| e,
            |uid| {
                let why = format!(
                    "belongs to another user (uid {uid}), who could change it while coldtrace \
                     writes in it; choose a directory of your own"
                );
                refusal(root, &why)
            },
        )
    })?;
    let mut entries = rustix::fs::Dir::read_from(&dir.fd)
        .map_err(|e| failed("cannot list --out", root, explain(&e.into())))?;
    let occupied =
        entries.any(|entry| entry.is_ok_and(|e| !matches!(e.file_name().to_bytes(), b"." | b"..")));
    if occupied {
        return Err(refusal(
            root,
            "exists and is not empty; coldtrace never reuses a batch directory: choose a new one",
        ));
    }
    Ok(dir)
}

/// Makes `root` (and its parents); `None` when it appeared meanwhile.
fn make_new(root: &Path) -> Result<Option<DirHandle>, ArtifactError> {
    if let Some(parent) = root.parent().filter(|p| !p.as_os_str().is_empty()) {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(parent)
            .map_err(|e| failed("cannot create --out", root, explain(&e)))?;
    }
    match rustix::fs::mkdirat(CWD, root, Mode::from_raw_mode(0o755)) {
        Ok(()) => open_own(CWD, root, root.to_path_buf()).map(Some),
        Err(rustix::io::Errno::EXIST) => Ok(None),
        Err(e) => Err(failed("cannot create --out", root, explain(&e.into()))),
    }
}

/// The first of `NAME-2`, `NAME-3`, … (after `NAME-K`: `NAME-K+1`, …) beside `root` that does
/// not exist; `None` after 1,000 tries.
pub fn next_free_name(root: &Path) -> Option<PathBuf> {
    let name = root.file_name()?.to_str()?;
    let (base, first) = match name.rsplit_once('-') {
        Some((base, n)) if !base.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
            match n.parse::<u64>() {
                Ok(n) if n < u64::MAX - 1000 => (base, n + 1),
                _ => (name, 2),
            }
        }
        _ => (name, 2),
    };
    (first..first + 1000)
        .map(|k| root.with_file_name(format!("{base}-{k}")))
        .find(|p| std::fs::symlink_metadata(p).is_err_and(|e| e.kind() == io::ErrorKind::NotFound))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("coldtrace-dir-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn the_next_free_name_counts_on_from_a_number_already_there() {
        let root = scratch("next");
        std::fs::create_dir(root.join("b")).unwrap();
        assert_eq!(next_free_name(&root.join("b")), Some(root.join("b-2")));
        std::fs::create_dir(root.join("b-2")).unwrap();
        std::fs::write(root.join("b-3"), b"").unwrap();
        assert_eq!(next_free_name(&root.join("b")), Some(root.join("b-4")));
        assert_eq!(next_free_name(&root.join("b-2")), Some(root.join("b-4")));
        assert_eq!(next_free_name(&root.join("x-")), Some(root.join("x--2")));
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn an_empty_directory_is_taken_and_a_full_one_refused_with_a_new_name() {
        let root = scratch("claim");
        let empty = root.join("e");
        std::fs::create_dir(&empty).unwrap();
        assert!(claim_out_dir(&empty).is_ok());
        std::fs::write(empty.join("x"), b"").unwrap();
        let e = claim_out_dir(&empty).err().unwrap().message;
        assert!(e.contains("not empty") && e.contains("-o "), "{e}");
        assert!(
            e.ends_with(&format!("{}", root.join("e-2").display())),
            "{e}"
        );
        let made = claim_out_dir(&root.join("new/deeper")).unwrap();
        let sub = made.subdir("runs", false).unwrap();
        assert!(made.subdir("runs", true).is_err(), "fresh: it exists");
        assert!(sub.create_file("f").is_ok());
        assert!(sub.create_file("f").is_err(), "O_EXCL");
        let _ = std::fs::remove_dir_all(&root);
    }
}
