//! A program of the spawner's table as `execve` takes it: parsed from the bytes `DEFINE`
//! carried (`[argc u32][envc u32] path\0 argv…\0 envp…\0`) into NUL-terminated strings and the
//! two null-terminated pointer arrays.
#![forbid(unsafe_code)]

use core::ffi::{c_char, CStr};
use core::marker::PhantomData;

/// The image to execute. The unsafe room relies on this type as the library relies on its
/// `ExecImage`: the fields are private and [`Image::parse`] is the only constructor, so the
/// pointers are always those of NUL-terminated strings inside the borrowed bytes, each array
/// ends in a null pointer, and nothing mutates them while the image lives.
pub struct Image<'a> {
    path: &'a CStr,
    argv: *const *const c_char,
    envp: *const *const c_char,
    _bytes: PhantomData<&'a [u8]>,
}

impl<'a> Image<'a> {
    /// Parses `bytes`, writing the argv and envp arrays into `pointers`. `None` when the bytes
    /// are not a program (a missing NUL, counts that do not match) or `pointers` is too short.
    pub fn parse(bytes: &'a [u8], pointers: &'a mut [*const c_char]) -> Option<Image<'a>> {
        let (argc, envc, mut rest) = match bytes {
            [a0, a1, a2, a3, e0, e1, e2, e3, rest @ ..] => (
                u32::from_ne_bytes([*a0, *a1, *a2, *a3]) as usize,
                u32::from_ne_bytes([*e0, *e1, *e2, *e3]) as usize,
                rest,
            ),
            _ => return None,
        };
        let path = next(&mut rest)?;
        let needed = argc.checked_add(envc)?.checked_add(2)?;
        let pointers = pointers.get_mut(..needed)?;
        let (argv, envp) = pointers.split_at_mut(argc + 1);
        for array in [argv, envp] {
            let (last, strings) = array.split_last_mut()?;
            for slot in strings {
                *slot = next(&mut rest)?.as_ptr();
            }
            *last = core::ptr::null();
        }
        if !rest.is_empty() {
            return None;
        }
        let (argv, envp) = pointers.split_at(argc + 1);
        Some(Image {
            path,
            argv: argv.as_ptr(),
            envp: envp.as_ptr(),
            _bytes: PhantomData,
        })
    }

    /// The path, NUL-terminated.
    pub fn path(&self) -> *const c_char {
        self.path.as_ptr()
    }

    /// The argv array, null-terminated.
    pub fn argv(&self) -> *const *const c_char {
        self.argv
    }

    /// The envp array, null-terminated.
    pub fn envp(&self) -> *const *const c_char {
        self.envp
    }
}

/// The NUL-terminated string at the start of `rest`, which then starts after its NUL.
fn next<'a>(rest: &mut &'a [u8]) -> Option<&'a CStr> {
    let s = CStr::from_bytes_until_nul(rest).ok()?;
    *rest = rest.get(s.to_bytes().len() + 1..)?;
    Some(s)
}
