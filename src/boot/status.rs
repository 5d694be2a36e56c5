//! `coldtrace boot status`: the armed plan and what ran, from the state and the unit as they
//! are — a partial state (a unit without its state, a state without its unit, a damaged
//! state) is said as such, with `boot disarm` as the way out.
#![forbid(unsafe_code)]

use crate::boot::store::{Found, StateDir};
use crate::boot::{unit, Places, Said};
use crate::record::boot::BootState;

/// `coldtrace boot status`: exit 0 armed or not, 1 for a partial or damaged state.
pub fn status(places: &Places) -> Said {
    let found = match StateDir::open(&places.state_dir) {
        Ok(Some(dir)) => dir.read(),
        Ok(None) => Found::Missing,
        Err(e) => Found::Damaged(e),
    };
    // The unit where the state says it was installed, else where --unit-dir says.
    let (mut unit_path, mut link) = unit::paths(&places.unit_dir);
    if let Found::Armed(state) = &found {
        if let (Some(u), Some(l)) = (&state.unit, &state.wants_link) {
            (unit_path, link) = (u.into(), l.into());
        }
    }
    let there = |p: &std::path::Path| std::fs::symlink_metadata(p).is_ok();
    let (unit_there, link_there) = (there(&unit_path), there(&link));
    let mut out = String::new();
    let partial = match found {
        Found::Missing => {
            out.push_str(&format!(
                "not armed (no state in {})\n",
                places.state_dir.display()
            ));
            unit_there || link_there
        }
        Found::Damaged(why) => {
            out.push_str(&format!(
                "a damaged state in {}: {why}\n",
                places.state_dir.display()
            ));
            true
        }
        Found::Armed(state) => {
            out.push_str(&armed(&state));
            state.unit.is_some() && !(unit_there && link_there)
        }
    };
    for (path, there) in [(&unit_path, unit_there), (&link, link_there)] {
        out.push_str(&format!(
            "  {} {}\n",
            if there { "present:" } else { "absent: " },
            path.display()
        ));
    }
    if partial {
        out.push_str("a partial state: `coldtrace boot disarm` removes whatever is there\n");
    }
    Said {
        text: out,
        exit_code: u8::from(partial),
    }
}

fn armed(state: &BootState) -> String {
    let plan = &state.plan;
    let mut out = format!(
        "armed on {} (boot {}): {} boot{}, {} started, {} left\n",
        state.armed_at,
        state.armed_boot_id.as_deref().unwrap_or("?"),
        plan.boots,
        if plan.boots == 1 { "" } else { "s" },
        state.boots_started,
        state.boots_left(),
    );
    out.push_str(&plan_lines(plan));
    if state.unit.is_none() {
        out.push_str("  no unit: an init script runs `coldtrace boot run`\n");
    }
    for r in &state.ran {
        out.push_str(&format!(
            "  boot {} ({}): {} — exit {}\n",
            r.boot,
            r.boot_id,
            r.dir,
            r.exit_code.map_or("none".into(), |c| c.to_string())
        ));
    }
    if let Some(r) = &state.running {
        out.push_str(&format!(
            "  boot {} ({}): started {} and not ended{}\n",
            r.boot,
            r.boot_id,
            r.started_at,
            match crate::measure::context::read_boot_id() {
                Some(now) if now != r.boot_id => " — it never will: the next boot run disarms",
                _ => "",
            }
        ));
    }
    out
}

/// The plan, a line per part; the environment by its names (its values stay in the state
/// file, readable by its owner only).
pub fn plan_lines(plan: &crate::record::boot::BootPlan) -> String {
    let names: Vec<&str> = plan
        .env
        .iter()
        .map(|e| e.split_once('=').map_or(e.as_str(), |(n, _)| n))
        .collect();
    let mut out = format!(
        "  command: {}\n  options: {}\n  cwd:     {}\n  user:    uid {} gid {}\n  \
         env:     {} variables: {}\n  results: {}\n",
        crate::text::quote(&plan.argv),
        crate::text::quote(&plan.run_options),
        plan.cwd,
        plan.uid,
        plan.gid,
        names.len(),
        crate::view::units::shorten(&names.join(" "), 60),
        plan.out_dir
    );
    let reboot = match (plan.reboot, &plan.reboot_command) {
        (false, _) => "no (reboot by hand)".to_string(),
        (true, None) => "yes, after each boot that succeeds while boots remain".into(),
        (true, Some(cmd)) => format!("yes, with `{cmd}`"),
    };
    out.push_str(&format!("  reboot:  {reboot}\n"));
    if let Some(s) = plan.control_after_s {
        out.push_str(&format!("  control: a second batch {s} s after each\n"));
    }
    out
}
