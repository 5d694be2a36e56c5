//! An armed `coldtrace boot` plan is never disarmed by cleanup (it would cancel the batches of
//! the next boots): it is said, with the command that disarms it. The plans looked for are the
//! one in the default state directory and the one the installed unit runs (`boot arm
//! --state-dir` elsewhere: its `ExecStart` names that directory).
#![forbid(unsafe_code)]

use super::{Fate, Thing};
use crate::boot::store::{Found, StateDir, DEFAULT_STATE_DIR};
use crate::boot::unit;
use std::path::{Path, PathBuf};

/// The plans found, each said.
pub fn boot() -> Vec<Thing> {
    let mut dirs = vec![PathBuf::from(DEFAULT_STATE_DIR)];
    dirs.extend(unit_state_dir().filter(|d| d.as_path() != Path::new(DEFAULT_STATE_DIR)));
    dirs.iter().filter_map(|dir| plan(dir)).collect()
}

/// The plan in the boot state directory `dir`, if there is one.
fn plan(dir: &Path) -> Option<Thing> {
    let disarm = match dir == Path::new(DEFAULT_STATE_DIR) {
        true => "`coldtrace boot disarm`".to_string(),
        false => format!("`coldtrace boot disarm --state-dir {}`", dir.display()),
    };
    let why = match StateDir::open(dir) {
        Ok(None) => return None,
        Ok(Some(opened)) => match opened.read() {
            Found::Missing => return None,
            Found::Armed(_) => {
                format!("armed for the next boots: cleanup never disarms it ({disarm} does)")
            }
            Found::Damaged(why) => format!("damaged ({why}): {disarm} removes it"),
        },
        Err(why) => format!("cannot be read here ({why}): `coldtrace boot status` as its owner"),
    };
    Some(Thing::new(
        "boot plan",
        dir.display().to_string(),
        Fate::Left,
        why,
    ))
}

/// The state directory the installed unit's `ExecStart` names with `--state-dir`, if any.
fn unit_state_dir() -> Option<PathBuf> {
    let (unit_path, _) = unit::paths(Path::new(unit::DEFAULT_UNIT_DIR));
    let text = crate::untrusted::read_bounded(&unit_path, 64 << 10).ok()?;
    let text = String::from_utf8_lossy(&text);
    let exec = text.lines().find_map(|l| l.strip_prefix("ExecStart="))?;
    let words = crate::text::split(exec).ok()?;
    let at = words.iter().position(|w| w == "--state-dir")?;
    words.get(at + 1).map(PathBuf::from)
}
