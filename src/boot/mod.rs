//! `coldtrace boot`: a batch at each of the next boots. `arm` saves what `run` would execute
//! and installs a unit that calls `boot run` at boot; `boot run` runs that boot's batch with
//! its guards; `status` shows the state; `disarm` removes the unit and the state from any
//! state. Between `cli` (which parses) and what it runs: the batch itself is a `coldtrace
//! run` process that `boot run` starts, so nothing here measures.
//!
//! Nothing can leave a machine rebooting forever: the count of boots is decremented and made
//! durable before each batch starts, a boot that finds the previous boot's batch never ended
//! disarms instead of running, a failed batch disarms and never reboots, the kernel
//! command-line word `coldtrace.disarm` disarms from the boot loader, and a reboot happens
//! only when `--reboot` was given, after a batch that succeeded, while boots remain.
#![forbid(unsafe_code)]

pub mod arm;
pub mod disarm;
pub mod events;
pub mod facts;
pub mod run;
pub mod spawn;
pub mod status;
pub mod store;
pub mod unit;

use std::path::PathBuf;

/// Where the state and the unit are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Places {
    /// `--state-dir`, or [`store::DEFAULT_STATE_DIR`].
    pub state_dir: PathBuf,
    /// `--unit-dir`, or [`unit::DEFAULT_UNIT_DIR`].
    pub unit_dir: PathBuf,
    /// Whether `--unit-dir` was given: a unit is then installed there even where systemd is
    /// not running (an image being prepared), and systemd is not asked to reload.
    pub unit_dir_given: bool,
}

impl Places {
    /// The `ExecStart` of the unit: `coldtrace boot run`, with `--state-dir` when it is not
    /// the default.
    pub fn boot_run_command(&self, coldtrace: &str) -> Vec<String> {
        let mut words = vec![coldtrace.to_string(), "boot".into(), "run".into()];
        if self.state_dir != std::path::Path::new(store::DEFAULT_STATE_DIR) {
            words.push("--state-dir".into());
            words.push(self.state_dir.display().to_string());
        }
        words
    }
}

/// What a boot action returns: what to print and the exit code.
#[derive(Debug, Default)]
pub struct Said {
    /// For stdout.
    pub text: String,
    /// 0, 1 (a batch failed, a guard disarmed) or 125.
    pub exit_code: u8,
}
