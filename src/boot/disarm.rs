//! Disarming, from any state: whatever is there of the unit, its link and the state is
//! removed, each named as it goes — a whole armed state, a unit whose state was removed by
//! hand, a state whose unit was, a damaged state, a temporary file left by a crash, or
//! nothing at all. The unit is looked for where the state says and where `--unit-dir` (or the
//! default) says, so a damaged or missing state does not hide it.
#![forbid(unsafe_code)]

use crate::boot::store::{Found, StateDir};
use crate::boot::{events, unit, Places, Said};
use crate::record::boot::BootState;
use std::path::{Path, PathBuf};

/// What a disarm did.
#[derive(Debug, Default)]
pub struct Removed {
    /// Each path removed.
    pub removed: Vec<String>,
    /// What could not be removed, and why.
    pub failed: Vec<String>,
}

/// Removes the unit, its link and the state directory's files; `state`, when known, names
/// where its unit was installed.
pub fn remove_everything(places: &Places, state: Option<&BootState>) -> Removed {
    let mut done = Removed::default();
    let (unit_path, link_path) = unit::paths(&places.unit_dir);
    let mut units: Vec<PathBuf> = vec![link_path, unit_path];
    if let Some(s) = state {
        for p in [&s.wants_link, &s.unit].into_iter().flatten() {
            let p = PathBuf::from(p);
            if !units.contains(&p) {
                units.push(p);
            }
        }
    }
    for path in &units {
        match unit::remove(path) {
            Ok(true) => done.removed.push(path.display().to_string()),
            Ok(false) => {}
            Err(e) => done.failed.push(e),
        }
    }
    match StateDir::open(&places.state_dir) {
        Ok(Some(dir)) => {
            let (removed, failed) = dir.remove_all();
            done.removed.extend(removed);
            done.failed.extend(failed);
        }
        Ok(None) => {}
        Err(e) => done.failed.push(e),
    }
    if !done.removed.is_empty() {
        crate::boot::arm::reload_systemd(places);
    }
    done
}

/// Disarms because of `why`: everything removed, and the reason appended to the results'
/// `boots.jsonl` when the state says where they are. Returns the lines to say.
pub fn disarm_because(places: &Places, state: Option<&BootState>, why: &str) -> Vec<String> {
    let done = remove_everything(places, state);
    if let Some(s) = state {
        let mut event = events::now("disarmed");
        event.why = Some(why.to_string());
        if let Err(e) = events::append(Path::new(&s.plan.out_dir), &event) {
            eprintln!("coldtrace: boot: cannot record why it disarmed: {e}");
        }
    }
    let mut lines = vec![format!("disarmed: {why}")];
    lines.extend(done.removed.iter().map(|p| format!("  removed {p}")));
    lines.extend(done.failed.iter().map(|f| format!("  NOT removed: {f}")));
    lines
}

/// `coldtrace boot disarm`.
pub fn disarm(places: &Places) -> Said {
    let state = match StateDir::open(&places.state_dir) {
        Ok(Some(dir)) => dir.read(),
        _ => Found::Missing,
    };
    let (state, found) = match state {
        Found::Armed(s) => {
            let found = format!(
                "armed, {} of {} boots started",
                s.boots_started, s.plan.boots
            );
            (Some(*s), found)
        }
        Found::Damaged(why) => (None, format!("a damaged state ({why})")),
        Found::Missing => (None, "no state".to_string()),
    };
    let done = remove_everything(places, state.as_ref());
    if let Some(s) = &state {
        let mut event = events::now("disarmed");
        event.why = Some("coldtrace boot disarm".into());
        let _ = events::append(Path::new(&s.plan.out_dir), &event);
    }
    let mut text = String::new();
    if done.removed.is_empty() && done.failed.is_empty() {
        text.push_str(&format!(
            "nothing to remove: not armed (no state in {}, no {} in {})\n",
            places.state_dir.display(),
            unit::UNIT_NAME,
            places.unit_dir.display()
        ));
    } else {
        text.push_str(&format!("disarmed (found {found}):\n"));
    }
    for p in &done.removed {
        text.push_str(&format!("  removed {p}\n"));
    }
    for f in &done.failed {
        text.push_str(&format!("  NOT removed: {f}\n"));
    }
    if let Some(s) = &state {
        text.push_str(&format!(
            "the batches already run stay in {}\n",
            s.plan.out_dir
        ));
    }
    Said {
        text,
        exit_code: if done.failed.is_empty() { 0 } else { 125 },
    }
}
