//! What stops a batch: coldtrace's own error ([`BatchError`]: one line and an exit code) and
//! why a run did not happen ([`NotRun`]). Error values only; nothing here runs or prints.
#![forbid(unsafe_code)]

use crate::record::artifacts::ArtifactError;
use crate::untrusted::OpenError;
use coldtrace_syscalls::Signal;
use std::path::Path;

/// A batch that could not run: one line and the exit code it maps to.
#[derive(Debug)]
pub struct BatchError {
    /// One line for the user.
    pub message: String,
    /// 125 (coldtrace's own error), 126 (not executable) or 127 (not found).
    pub exit_code: u8,
    /// The kernel's error when the program was not found or is not executable.
    pub cannot_start: Option<coldtrace_syscalls::Errno>,
}

impl BatchError {
    /// coldtrace's own error (exit code 125).
    pub(crate) fn own(message: impl Into<String>) -> BatchError {
        BatchError {
            message: message.into(),
            exit_code: 125,
            cannot_start: None,
        }
    }
}

impl From<ArtifactError> for BatchError {
    fn from(e: ArtifactError) -> Self {
        BatchError::own(e.message)
    }
}

/// Why a run did not happen: coldtrace's own error, or a signal that asked to stop before the
/// spawn (during the cold action, a FIFO's wait, the residency probe, or just before it).
pub(super) enum NotRun {
    Failed(BatchError),
    Interrupted(Signal),
}

impl From<BatchError> for NotRun {
    fn from(e: BatchError) -> Self {
        NotRun::Failed(e)
    }
}

impl From<ArtifactError> for NotRun {
    fn from(e: ArtifactError) -> Self {
        NotRun::Failed(e.into())
    }
}

/// `--stdin PATH: why it cannot be opened`.
pub(super) fn stdin_error(path: &Path, e: &OpenError) -> BatchError {
    BatchError::own(format!("--stdin {}: {e}", path.display()))
}
