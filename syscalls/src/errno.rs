//! [`Errno`]: the kernel's error numbers, as a transparent newtype.
//!
//! Like rustix's `Errno`, this is not an exhaustive enum: the kernel may return values that this
//! crate does not name, and they must survive intact.
#![forbid(unsafe_code)]

use core::fmt;

/// Splits a raw system call return register into a value or an [`Errno`].
#[inline(always)]
pub(crate) fn check(ret: usize) -> Result<usize, Errno> {
    match crate::abi::errno_of(ret) {
        0 => Ok(ret),
        e => Err(Errno::from_raw(e)),
    }
}

/// An error number returned by a system call (the positive value, as in `errno`).
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Errno(i32);

macro_rules! errnos {
    ($($name:ident = $value:expr, $cname:literal, $text:literal;)*) => {
        impl Errno {
            $(#[doc = $text] pub const $name: Errno = Errno($value);)*

            /// The C name of this error (`"ENOENT"`), if it is a standard one.
            pub const fn name(self) -> Option<&'static str> {
                match self.0 {
                    $($value => Some($cname),)*
                    _ => None,
                }
            }

            /// The usual `strerror` text of this error, if it is a standard one.
            pub const fn message(self) -> Option<&'static str> {
                match self.0 {
                    $($value => Some($text),)*
                    _ => None,
                }
            }
        }
    };
}

// Generic Linux numbers (asm-generic/errno-base.h and errno.h): identical on x86_64 and aarch64.
errnos! {
    PERM = 1, "EPERM", "Operation not permitted";
    NOENT = 2, "ENOENT", "No such file or directory";
    SRCH = 3, "ESRCH", "No such process";
    INTR = 4, "EINTR", "Interrupted system call";
    IO = 5, "EIO", "Input/output error";
    NXIO = 6, "ENXIO", "No such device or address";
    TOOBIG = 7, "E2BIG", "Argument list too long";
    NOEXEC = 8, "ENOEXEC", "Exec format error";
    BADF = 9, "EBADF", "Bad file descriptor";
    CHILD = 10, "ECHILD", "No child processes";
    AGAIN = 11, "EAGAIN", "Resource temporarily unavailable";
    NOMEM = 12, "ENOMEM", "Cannot allocate memory";
    ACCES = 13, "EACCES", "Permission denied";
    FAULT = 14, "EFAULT", "Bad address";
    BUSY = 16, "EBUSY", "Device or resource busy";
    EXIST = 17, "EEXIST", "File exists";
    XDEV = 18, "EXDEV", "Invalid cross-device link";
    NODEV = 19, "ENODEV", "No such device";
    NOTDIR = 20, "ENOTDIR", "Not a directory";
    ISDIR = 21, "EISDIR", "Is a directory";
    INVAL = 22, "EINVAL", "Invalid argument";
    NFILE = 23, "ENFILE", "Too many open files in system";
    MFILE = 24, "EMFILE", "Too many open files";
    TXTBSY = 26, "ETXTBSY", "Text file busy";
    FBIG = 27, "EFBIG", "File too large";
    NOSPC = 28, "ENOSPC", "No space left on device";
    SPIPE = 29, "ESPIPE", "Illegal seek";
    ROFS = 30, "EROFS", "Read-only file system";
    MLINK = 31, "EMLINK", "Too many links";
    PIPE = 32, "EPIPE", "Broken pipe";
    NAMETOOLONG = 36, "ENAMETOOLONG", "File name too long";
    NOSYS = 38, "ENOSYS", "Function not implemented";
    LOOP = 40, "ELOOP", "Too many levels of symbolic links";
    OPNOTSUPP = 95, "EOPNOTSUPP", "Operation not supported";
    DQUOT = 122, "EDQUOT", "Disk quota exceeded";
}

impl Errno {
    /// Wraps a positive error number.
    pub const fn from_raw(raw: i32) -> Self {
        Errno(raw)
    }

    /// The positive error number.
    pub const fn raw(self) -> i32 {
        self.0
    }

    /// Converts rustix's error into ours (same numbers).
    pub fn from_rustix(e: rustix::io::Errno) -> Self {
        Errno(e.raw_os_error())
    }
}

/// `Ok` for 0, else the errno (for calls that return 0 or an errno).
pub(crate) fn zero_or(e: i32) -> Result<(), Errno> {
    match e {
        0 => Ok(()),
        e => Err(Errno(e)),
    }
}

impl From<rustix::io::Errno> for Errno {
    fn from(e: rustix::io::Errno) -> Self {
        Errno::from_rustix(e)
    }
}

impl fmt::Debug for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "{name}"),
            None => write!(f, "Errno({})", self.0),
        }
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.message(), self.name()) {
            (Some(text), Some(name)) => write!(f, "{text} ({name})"),
            _ => write!(f, "error {}", self.0),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for Errno {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_messages_match_the_numbers() {
        assert_eq!(Errno::NOENT.raw(), 2);
        assert_eq!(Errno::NOENT.name(), Some("ENOENT"));
        assert_eq!(Errno::TOOBIG.name(), Some("E2BIG"));
        assert_eq!(Errno::from_raw(9999).name(), None);
        assert_eq!(
            alloc::format!("{}", Errno::ACCES),
            "Permission denied (EACCES)"
        );
        assert_eq!(alloc::format!("{}", Errno::from_raw(9999)), "error 9999");
    }

    #[test]
    fn rustix_numbers_agree() {
        assert_eq!(Errno::from(rustix::io::Errno::NOENT), Errno::NOENT);
        assert_eq!(Errno::from(rustix::io::Errno::TOOBIG), Errno::TOOBIG);
        assert_eq!(Errno::from(rustix::io::Errno::NOEXEC), Errno::NOEXEC);
    }
}
