//! An armed `coldtrace boot` plan is never disarmed by cleanup (it would cancel the batches of
//! the next boots): it is said, with the command that disarms it.
#![forbid(unsafe_code)]

use super::{Fate, Thing};
use crate::boot::store::{Found, StateDir, DEFAULT_STATE_DIR};
use std::path::Path;

/// The plan in the default boot state directory, if there is one.
pub fn boot() -> Vec<Thing> {
    let (fate, why) = match StateDir::open(Path::new(DEFAULT_STATE_DIR)) {
        Ok(None) => return Vec::new(),
        Ok(Some(dir)) => match dir.read() {
            Found::Missing => return Vec::new(),
            Found::Armed(_) => (
                Fate::Left,
                "armed for the next boots: cleanup never disarms it (`coldtrace boot disarm` \
                 does)"
                    .to_string(),
            ),
            Found::Damaged(why) => (
                Fate::Left,
                format!("damaged ({why}): `coldtrace boot disarm` removes it"),
            ),
        },
        Err(why) => (
            Fate::Left,
            format!("cannot be read here ({why}): `coldtrace boot status` as its owner"),
        ),
    };
    vec![Thing::new("boot plan", DEFAULT_STATE_DIR, fate, why)]
}
