//! What a spawn hands to the unsafe room that needs allocation or owned descriptors: the exec
//! image (pointer arrays built only from borrowed C strings), what comes back from the clone,
//! and the descriptor ranges the child closes.
#![forbid(unsafe_code)]

use crate::errno::Errno;
use alloc::vec::Vec;
use core::ffi::{c_char, c_int, CStr};
use core::marker::PhantomData;
use rustix::fd::OwnedFd;

/// The program image to execute: path, argv and envp as NUL-terminated pointer arrays whose
/// strings are borrowed for `'a`; optionally, the shell that runs the file where the kernel
/// finds no executable format in it ([`ExecImage::or_through_shell`]).
///
/// The unsafe room relies on this type: its fields are private, [`ExecImage::new`] is its
/// only constructor and [`ExecImage::or_through_shell`] its only change, so the pointers are
/// always those of live C strings borrowed for `'a` (or `'static`), each array ends in a null
/// pointer, and nothing mutates them once the image is built.
pub struct ExecImage<'a> {
    path: &'a CStr,
    argv: Vec<*const c_char>,
    envp: Vec<*const c_char>,
    /// `(SHELL, [SHELL, "--", path, argv[1..]…, NULL])`, or `None`.
    shell: Option<(&'static CStr, Vec<*const c_char>)>,
    _strings: PhantomData<&'a CStr>,
}

impl<'a> ExecImage<'a> {
    /// Builds the pointer arrays (in the parent, before any clone).
    pub fn new<A, E>(path: &'a CStr, argv: A, envp: E) -> ExecImage<'a>
    where
        A: IntoIterator<Item = &'a CStr>,
        E: IntoIterator<Item = &'a CStr>,
    {
        let arrays = |it: &mut dyn Iterator<Item = &'a CStr>| {
            let mut v: Vec<*const c_char> = it.map(CStr::as_ptr).collect();
            v.push(core::ptr::null());
            v
        };
        let (argv, envp) = (arrays(&mut argv.into_iter()), arrays(&mut envp.into_iter()));
        ExecImage {
            path,
            argv,
            envp,
            shell: None,
            _strings: PhantomData,
        }
    }

    /// Where `execve` fails with `ENOEXEC` (a script without a `#!` line), the same child then
    /// runs `SHELL -- PATH ARGS…` (`argv[0]` is `shell`, then `--`, the path, and the
    /// arguments after the image's `argv[0]`) with the same environment, as glibc's `execvp`
    /// does with `/bin/sh`. The `--` makes a bare path that starts with `-` the script, never
    /// an option of the shell (`sh -x` would turn tracing on and take the next argument as the
    /// script); the shell's `$0` is still the path. The arrays are built here, in the parent,
    /// before any clone. Only the in-process spawn honours it (the spawner program has no
    /// shell fallback).
    ///
    /// # References
    /// [execvp(3)](https://man7.org/linux/man-pages/man3/execvp.3.html) (NOTES: ENOEXEC)
    pub fn or_through_shell(mut self, shell: &'static CStr) -> ExecImage<'a> {
        let args = self.argv.iter().skip(1).take_while(|p| !p.is_null());
        let mut argv = Vec::with_capacity(self.argv.len() + 3);
        argv.extend([shell.as_ptr(), c"--".as_ptr(), self.path.as_ptr()]);
        argv.extend(args.copied());
        argv.push(core::ptr::null());
        self.shell = Some((shell, argv));
        self
    }

    /// The shell's path and argv array (null-terminated), or two null pointers.
    pub(crate) fn shell_ptrs(&self) -> (*const c_char, *const *const c_char) {
        match &self.shell {
            Some((shell, argv)) => (shell.as_ptr(), argv.as_ptr()),
            None => (core::ptr::null(), core::ptr::null()),
        }
    }

    /// The path, NUL-terminated.
    pub(crate) fn path_ptr(&self) -> *const c_char {
        self.path.as_ptr()
    }

    /// The argv array, null-terminated.
    pub(crate) fn argv_ptr(&self) -> *const *const c_char {
        self.argv.as_ptr()
    }

    /// The envp array, null-terminated.
    pub(crate) fn envp_ptr(&self) -> *const *const c_char {
        self.envp.as_ptr()
    }
}

/// Why a spawn did not reach the program.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum SpawnFailure {
    /// The parent's own step failed before any child existed (so trying again is harmless).
    NotStarted(Errno),
    /// The child reported this stage and error, and has been reaped.
    Child(u32, Errno),
    /// The child started, then the calling thread's mask could not be restored: the child has
    /// been killed and reaped.
    MaskNotRestored(Errno),
}

/// The gaps above 2 between the sorted, kept descriptors `keep` (each ≥ 3), up to `u32::MAX`.
pub(crate) fn gaps(keep: &[c_int]) -> Vec<[usize; 2]> {
    let mut ranges = Vec::with_capacity(keep.len() + 1);
    let mut from = 3usize;
    for &fd in keep {
        let fd = fd as usize;
        if fd > from {
            ranges.push([from, fd - 1]);
        }
        from = fd + 1;
    }
    ranges.push([from, u32::MAX as usize]);
    ranges
}

/// A started child: its PID and, when asked for and the kernel knows `CLONE_PIDFD`, its pidfd.
pub(crate) struct Spawned {
    pub pid: i32,
    pub pidfd: Option<OwnedFd>,
    /// `CLONE_PIDFD` was passed, yet the slot still holds -1: the kernel (< 5.2) ignored it.
    pub pidfd_ignored: bool,
    /// The child's write to the parent's memory was seen: `CLONE_VM` really shares it.
    pub memory_shared: bool,
}

/// What one clone gave: the started child, or the errno of a clone that started none; and what
/// the child wrote in this process's memory before `execve` (whether its marker arrived, the
/// stage and errno of a failure: nothing arrives where the memory is a copy).
pub(crate) struct Cloned {
    pub started: Result<Spawned, Errno>,
    pub stage: u32,
    pub errno: i32,
}

#[cfg(test)]
mod tests {
    #[test]
    fn gaps_leave_exactly_the_kept_descriptors() {
        assert_eq!(super::gaps(&[]), [[3, u32::MAX as usize]]);
        let expected = [[4, 6], [8, u32::MAX as usize]];
        assert_eq!(super::gaps(&[3, 7]), expected);
        assert_eq!(super::gaps(&[5, 6]), [[3, 4], [7, u32::MAX as usize]]);
    }
}
