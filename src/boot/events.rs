//! `DIR/boots.jsonl`: one line per event of an armed plan (armed, a boot's batch started or
//! ended, rebooting, disarmed and why), appended and flushed to storage as it happens, so
//! that what a killed boot left is still said. It outlives the state: after a disarm, it is
//! the record of why.
#![forbid(unsafe_code)]

use crate::record::boot::{BootEvent, EVENT_SCHEMA};
use std::io::Write;
use std::path::Path;

/// The file's name in the output directory.
pub const EVENTS_FILE: &str = "boots.jsonl";

/// An event of this instant on this boot.
pub fn now(event: &'static str) -> BootEvent {
    BootEvent {
        schema: EVENT_SCHEMA,
        event,
        at: crate::measure::clock::rfc3339_utc_now(),
        boot_id: crate::measure::context::read_boot_id(),
        uptime_s: crate::measure::context::read_uptime_s(),
        boot: None,
        dir: None,
        exit_code: None,
        why: None,
    }
}

/// Appends `event` to `out_dir/boots.jsonl` and syncs it.
///
/// # Errors
/// One line naming the file.
pub fn append(out_dir: &Path, event: &BootEvent) -> Result<(), String> {
    use std::os::unix::fs::OpenOptionsExt;
    let path = out_dir.join(EVENTS_FILE);
    let line = serde_json::to_string(event).unwrap_or_default() + "\n";
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o644)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(&path)
        .and_then(|mut f| f.write_all(line.as_bytes()).and_then(|()| f.sync_data()))
        .map_err(|e| format!("{}: {e}", path.display()))
}
