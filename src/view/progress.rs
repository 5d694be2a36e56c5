//! The progress line on a terminal, like hyperfine's: a bar, the run and its role (warm-up,
//! first, cold, warm), the running estimate (mean ± σ of the warm runs so far) and the time
//! left; and notices as they happen. It draws a batch's events; it decides nothing about it.
//!
//! Drawn only where the line can be redrawn (a terminal, `TERM` not `dumb`; it has no colour,
//! so `NO_COLOR` keeps it, as hyperfine does), never with `-q`, and never while the command
//! itself writes to the terminal. A slow step before a run (an eviction) is named on it while
//! it goes on, and counted in the time left. It is redrawn
//! when a run starts (at most every [`REDRAW_NS`] for fast runs) and, for a run longer than a
//! second, from the waiting loop a few times a second (see [`crate::measure::waiting`]).
#![forbid(unsafe_code)]

use crate::batch::{BatchStart, Observer, Preparing, RunEnd, RunStart};
use crate::measure::clock::monotonic_ns;
use crate::record::metrics::Unit;
use crate::record::run::Role;
use crate::view::terminal::{self, Stream};
use crate::view::units::{clock_time, display_width, fold, shorten, Scale};
use std::io::Write;

/// Between two runs the line is redrawn at most this often (fast runs would flood the terminal).
pub const REDRAW_NS: u64 = 50_000_000;

/// A notice as printed: `coldtrace: ` and the text folded to `width`, indented after the first
/// line.
pub fn notice_text(text: &str, width: usize) -> String {
    let mut out = String::new();
    for line in fold(text, width, "coldtrace: ", "  ") {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// Mean and sample standard deviation, updated one value at a time (Welford): a long batch
/// keeps three numbers per command, not its values.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Running {
    n: u64,
    mean: f64,
    m2: f64,
}

impl Running {
    /// Adds a value.
    pub fn push(&mut self, v: f64) {
        self.n += 1;
        let delta = v - self.mean;
        self.mean += delta / self.n as f64;
        self.m2 += delta * (v - self.mean);
    }

    /// `212.3 ± 16.2 ms` (the mean alone for one value), or `None` for none.
    pub fn estimate(&self) -> Option<String> {
        let sd = (self.n >= 2).then(|| (self.m2 / (self.n - 1) as f64).sqrt());
        let scale = Scale::for_values(Unit::Ns, [self.mean, sd.unwrap_or(0.0)]);
        match (self.n, sd) {
            (0, _) => None,
            (_, Some(sd)) => Some(format!(
                "{} ± {} {}",
                scale.cell(self.mean),
                scale.cell(sd),
                scale.unit
            )),
            (_, None) => Some(scale.with_unit(self.mean)),
        }
    }
}

/// What the line says, at one moment.
#[derive(Clone, Debug, Default)]
pub struct Progress {
    /// The commands (more than one in a comparison: the current one is named).
    pub commands: Vec<String>,
    /// Runs in all.
    pub total: u64,
    /// Runs finished.
    pub done: u64,
    /// The run in progress.
    pub current: Option<RunStart>,
    /// How long it has been running, once the waiting loop says so.
    pub running_ns: Option<u64>,
    /// A slow step before it (an eviction), how long it has taken so far, and how many files
    /// it has done.
    pub preparing: Option<Preparing>,
    /// Time since the current run's turn began (its `--prepare`, cold action and the run), for
    /// the time left.
    pub in_run_ns: Option<u64>,
    /// Each command's warm runs so far.
    pub warm: Vec<Running>,
    /// Each command's first run.
    pub first_ns: Vec<Option<u64>>,
    /// Time since the first run started, when a run has finished.
    pub elapsed_ns: Option<u64>,
}

fn role_word(run: &RunStart) -> &'static str {
    match (run.role, run.cold) {
        (Role::Warmup, _) => "warm-up",
        (Role::First, true) => "first (cold)",
        (Role::First, false) => "first",
        (Role::Warm, true) => "cold",
        (Role::Warm, false) => "warm",
        (Role::Cold, _) => "cold",
    }
}

impl Progress {
    /// The line, at most `width - 1` columns (the last column would wrap on some terminals).
    pub fn line(&self, width: usize) -> String {
        let width = width.saturating_sub(1);
        let command = self.current.map_or(0, |r| r.command);
        let name = match (self.commands.len() > 1, self.commands.get(command)) {
            (true, Some(c)) => format!("[{command}] {c} "),
            _ => String::new(),
        };
        let number = (self.done + 1).min(self.total.max(1));
        let mut tail = format!(" {number}/{}", self.total);
        if let Some(run) = &self.current {
            tail.push_str(&format!(" {}", role_word(run)));
        }
        if let Some(step) = self.preparing {
            tail.push_str(&format!(" · {}", step.what));
            match step.files {
                Some((done, Some(all))) => tail.push_str(&format!(" {done}/{all} files")),
                Some((done, None)) => tail.push_str(&format!(" {done} files")),
                None => {}
            }
            tail.push_str(&format!(" {:.1} s", step.for_ns as f64 / 1e9));
        } else if let Some(ns) = self.running_ns {
            tail.push_str(&format!(" {:.1} s", ns as f64 / 1e9));
        }
        let warm = self.warm.get(command).and_then(Running::estimate);
        let first = self.first_ns.get(command).copied().flatten();
        match (warm, first) {
            (Some(w), _) => tail.push_str(&format!("  mean {w}")),
            (None, Some(f)) => {
                let scale = Scale::for_values(Unit::Ns, [f as f64]);
                tail.push_str(&format!("  first {}", scale.with_unit(f as f64)));
            }
            (None, None) => {}
        }
        if let Some(eta) = self.eta_ns() {
            tail.push_str(&format!("  ETA {}", clock_time(eta)));
        }
        // In a comparison the command's name says whose runs these are.
        let lead = if name.is_empty() { "coldtrace " } else { "" };
        let fixed = display_width(lead) + display_width(&tail) + 2;
        let room = width.saturating_sub(fixed);
        let bar_width = room.saturating_sub(display_width(&name)).clamp(5, 30);
        let name = shorten(&name, room.saturating_sub(bar_width));
        let line = format!("{lead}{name}▕{}▏{tail}", self.bar(bar_width));
        shorten(&line, width)
    }

    fn bar(&self, width: usize) -> String {
        let total = self.total.max(1);
        let full = ((self.done.min(total) * width as u64) / total) as usize;
        format!("{}{}", "█".repeat(full), "░".repeat(width - full))
    }

    /// Time left: the time per run so far (its eviction and the commands around it included)
    /// times the runs left, less what the current run's turn has already taken.
    fn eta_ns(&self) -> Option<f64> {
        let elapsed = self.elapsed_ns? as f64;
        if self.done == 0 {
            return None;
        }
        let in_run = self.in_run_ns.or(self.running_ns).unwrap_or(0) as f64;
        let per_run = (elapsed - in_run).max(0.0) / self.done as f64;
        let left = per_run * self.total.saturating_sub(self.done) as f64;
        Some((left - in_run).max(0.0))
    }
}

/// Shows a batch's progress on a terminal, and notices unless quiet.
pub struct ProgressLine {
    draw: bool,
    quiet: bool,
    drawn: bool,
    width: usize,
    started_ns: Option<u64>,
    /// When the current run's turn began.
    turn_ns: Option<u64>,
    last_draw_ns: Option<u64>,
    said: Vec<String>,
    state: Progress,
}

impl ProgressLine {
    /// Notices unless `quiet`; the line only where escape codes are allowed, without `quiet`,
    /// and when the command's own output does not go to the terminal (`command_on_terminal`).
    pub fn new(quiet: bool, command_on_terminal: bool) -> ProgressLine {
        ProgressLine {
            draw: !quiet && !command_on_terminal && terminal::redraw_allowed(Stream::Stderr),
            quiet,
            drawn: false,
            width: terminal::width(Stream::Stderr),
            started_ns: None,
            turn_ns: None,
            last_draw_ns: None,
            said: Vec::new(),
            state: Progress::default(),
        }
    }

    fn redraw(&mut self, now: u64) {
        let line = self.state.line(self.width);
        eprint!("\r\x1b[2K{line}");
        let _ = std::io::stderr().flush();
        self.drawn = true;
        self.last_draw_ns = Some(now);
    }

    /// Redraws from inside a run's turn, the times brought up to now.
    fn tick(&mut self) {
        let now = monotonic_ns();
        if let Some(started) = self.started_ns {
            self.state.elapsed_ns = Some(now.saturating_sub(started));
        }
        self.state.in_run_ns = self.turn_ns.map(|t| now.saturating_sub(t));
        self.redraw(now);
    }

    fn clear(&mut self) {
        if self.drawn {
            eprint!("\r\x1b[2K");
            let _ = std::io::stderr().flush();
            self.drawn = false;
        }
    }
}

impl Observer for ProgressLine {
    fn batch_started(&mut self, batch: &BatchStart<'_>) {
        let n = batch.commands.len();
        self.state = Progress {
            commands: batch.commands.to_vec(),
            total: batch.total_runs,
            warm: vec![Running::default(); n],
            first_ns: vec![None; n],
            ..Progress::default()
        };
    }

    fn run_started(&mut self, run: &RunStart) {
        let now = monotonic_ns();
        let started = *self.started_ns.get_or_insert(now);
        self.state.current = Some(*run);
        self.state.running_ns = None;
        self.state.preparing = None;
        self.state.in_run_ns = None;
        self.turn_ns = Some(now);
        self.state.elapsed_ns = (self.state.done > 0).then(|| now.saturating_sub(started));
        let due = self
            .last_draw_ns
            .is_none_or(|t| now.saturating_sub(t) >= REDRAW_NS);
        if self.draw && self.state.total > 1 && due {
            self.width = terminal::width(Stream::Stderr);
            self.redraw(now);
        }
    }

    fn wants_ticks(&self) -> bool {
        self.draw && self.state.total > 1
    }

    fn running(&mut self, running_ns: u64) {
        self.state.running_ns = Some(running_ns);
        self.state.preparing = None;
        self.tick();
    }

    fn preparing(&mut self, step: &Preparing) {
        self.state.preparing = Some(*step);
        if self.draw && self.state.total > 1 {
            self.tick();
        }
    }

    fn run_finished(&mut self, end: &RunEnd) {
        self.state.done += 1;
        let c = end.run.command;
        if let (Some(wall), true) = (end.wall_ns, end.counted) {
            match end.run.role {
                Role::First => {
                    if let Some(f) = self.state.first_ns.get_mut(c) {
                        *f = Some(wall);
                    }
                }
                Role::Warm => {
                    if let Some(w) = self.state.warm.get_mut(c) {
                        w.push(wall as f64);
                    }
                }
                Role::Warmup | Role::Cold => {}
            }
        }
    }

    fn total_runs(&mut self, total: u64) {
        self.state.total = total;
    }

    fn notice(&mut self, text: &str) {
        if self.quiet || self.said.iter().any(|s| s == text) {
            return;
        }
        self.said.push(text.to_string());
        let was_drawn = self.drawn;
        self.clear();
        let width = terminal::width(Stream::Stderr);
        eprint!(
            "{}",
            notice_text(&crate::text::escape_controls(text), width)
        );
        if was_drawn {
            self.redraw(monotonic_ns());
        }
    }

    fn finished(&mut self) {
        self.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(command: usize, role: Role, cold: bool) -> Option<RunStart> {
        Some(RunStart {
            command,
            index: 0,
            role,
            cold,
        })
    }

    #[test]
    fn the_running_estimate_is_the_sample_mean_and_deviation() {
        let mut r = Running::default();
        assert_eq!(r.estimate(), None);
        r.push(200e6);
        assert_eq!(r.estimate().as_deref(), Some("200 ms"));
        r.push(220e6);
        r.push(240e6);
        assert_eq!(r.estimate().as_deref(), Some("220 ± 20 ms"));
        r.push(241e6);
        assert_eq!(r.estimate().as_deref(), Some("225.2 ± 19.4 ms"));
    }

    #[test]
    fn the_first_run_is_shown_before_anything_finished() {
        let p = Progress {
            commands: vec!["sleep 2".into()],
            total: 3,
            current: run(0, Role::First, false),
            warm: vec![Running::default()],
            first_ns: vec![None],
            ..Progress::default()
        };
        assert_eq!(
            p.line(80),
            "coldtrace ▕░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░▏ 1/3 first"
        );
    }

    #[test]
    fn a_comparison_names_its_command_and_the_line_fits() {
        let mut warm = Running::default();
        for v in [98e6, 99e6, 101e6] {
            warm.push(v);
        }
        let p = Progress {
            commands: vec![
                "python3 -c 'import json'".into(),
                "python3 -S -c 'import json'".into(),
            ],
            total: 20,
            done: 7,
            current: run(1, Role::Warm, true),
            running_ns: Some(1_250_000_000),
            warm: vec![Running::default(), warm],
            first_ns: vec![None, Some(120e6 as u64)],
            elapsed_ns: Some(7_000_000_000),
            preparing: None,
            in_run_ns: None,
        };
        let line = p.line(80);
        assert!(line.starts_with("[1] python3 -S -c 'imp…▕█░░░░▏"), "{line}");
        assert!(
            // 7 runs in the 5.75 s before this one's 1.25 s: 13 more at 0.82 s, less 1.25 s.
            line.ends_with("▏ 8/20 cold 1.2 s  mean 99.33 ± 1.53 ms  ETA 00:09"),
            "{line}"
        );
        let wide = p.line(120);
        assert!(
            wide.starts_with("[1] python3 -S -c 'import json' ▕███"),
            "{wide}"
        );
        for width in [40, 60, 80, 120] {
            assert!(display_width(&p.line(width)) < width, "{}", p.line(width));
        }
    }

    #[test]
    fn a_slow_eviction_is_named_and_counted_in_the_time_left() {
        // Four runs done in 8 s, each a 1.5 s eviction and a 0.5 s run; the fifth has spent
        // 1.2 s evicting.
        let p = Progress {
            commands: vec!["cat data".into()],
            total: 10,
            done: 4,
            current: run(0, Role::Cold, true),
            preparing: Some(Preparing {
                what: "evicting",
                for_ns: 1_200_000_000,
                files: None,
            }),
            in_run_ns: Some(1_200_000_000),
            warm: vec![Running::default()],
            first_ns: vec![Some(500_000_000)],
            elapsed_ns: Some(9_200_000_000),
            ..Progress::default()
        };
        let line = p.line(80);
        // Six runs of 2 s left, less the 1.2 s this one has taken: 10.8 s.
        assert!(
            line.contains(" 5/10 cold · evicting 1.2 s  first 500 ms  ETA 00:11"),
            "{line}"
        );
        let files = Progress {
            preparing: Some(Preparing {
                what: "evicting",
                for_ns: 1_200_000_000,
                files: Some((12_288, Some(46_526))),
            }),
            ..p
        };
        let line = files.line(80);
        assert!(
            line.contains(" 5/10 cold · evicting 12288/46526 files 1.2 s  first 500 ms"),
            "{line}"
        );
        assert!(display_width(&line) < 80, "{line}");
    }
}
