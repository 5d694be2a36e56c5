//! The boots of an armed plan, side by side: for each batch directory that `boot run` wrote
//! (`DIR/boot-NN-<boot id>/`, with its `boot.json`), the boot's first run after boot, its warm
//! runs, its control batch, what the machine was doing; across the boots, the first-after-boot
//! penalty with an interval (the boots are the samples), and what changed from one boot to the
//! next (the kernel, the command's executable and libraries). Decided here, once, for every
//! view; it reads `boot.json`, `boots.jsonl` and the first record, and renders nothing.
//!
//! Each boot's first run is judged by its batch's verdict ([`crate::record::verdict`]), kept in
//! its row; the sample a boot gives the interval is the verdict's measured difference (first
//! run minus the reference warm run, [`boot_penalty`]) whether or not it stands out at that
//! boot's count — leaving out the boots where it did not would bias the mean upwards.
#![forbid(unsafe_code)]

use crate::record::boot::control_dir_name;
use crate::record::reader::BatchRow;
use crate::record::verdict::Verdict;
use crate::serialize_struct;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A file's path, inode, size and mtime (ns), as `boot.json` stamped it.
pub(crate) type Stamp = (String, Option<u64>, Option<u64>, Option<i128>);

/// One boot's batch (and control batch), as `report` shows it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BootRow {
    /// Which of the armed boots (1-based), of how many.
    pub boot: u64,
    /// See `boot`.
    pub boots: u64,
    /// The boot ID.
    pub boot_id: String,
    /// The batch directory.
    pub dir: String,
    /// `uname -r` on that boot.
    pub kernel_release: Option<String>,
    /// Seconds since boot when the first run started.
    pub uptime_s: Option<f64>,
    /// The page cache's size (`Cached`) right before the batch, KiB.
    pub page_cache_kib: Option<u64>,
    /// Tasks runnable right before the batch.
    pub runnable_tasks: Option<u64>,
    /// The 1-minute load right before the batch.
    pub load_avg_1m: Option<f64>,
    /// The first run's wall time, ns.
    pub first_wall_ns: Option<f64>,
    /// The warm runs' median wall time, ns.
    pub warm_median_wall_ns: Option<f64>,
    /// The first-after-boot penalty, ns ([`boot_penalty`]).
    pub penalty_ns: Option<f64>,
    /// The batch's verdict on its first run (whether the penalty stands out, in which states).
    pub verdict: Option<Verdict>,
    /// What the first run read from storage, bytes (`/proc/PID/io` read_bytes).
    pub first_read_bytes: Option<u64>,
    /// Its major faults.
    pub first_major_faults: Option<u64>,
    /// How busy the machine was during the first run: the share of its wall time during which
    /// some task waited for a CPU (system-wide PSI); `None` where PSI is off.
    pub first_cpu_wait_share: Option<f64>,
    /// The control batch's first run and penalty, `--control` later on the same boot.
    pub control_first_wall_ns: Option<f64>,
    /// See `control_first_wall_ns`.
    pub control_penalty_ns: Option<f64>,
    /// The control batch's verdict.
    pub control_verdict: Option<Verdict>,
    /// What changed since the previous boot listed, one phrase each.
    pub changes: Vec<String>,
    /// The command's files: `path inode size mtime`, for the comparison.
    pub(crate) files: Vec<Stamp>,
}
serialize_struct!(BootRow {
    boot,
    boots,
    boot_id,
    dir,
    kernel_release,
    uptime_s,
    page_cache_kib,
    runnable_tasks,
    load_avg_1m,
    first_wall_ns,
    warm_median_wall_ns,
    penalty_ns,
    verdict,
    first_read_bytes,
    first_major_faults,
    first_cpu_wait_share,
    control_first_wall_ns,
    control_penalty_ns,
    control_verdict,
    changes
});

/// The share of a first run's wall time during which some task waited for a CPU from which a
/// boot is called busy: its first run is then the machine's contention as much as the boot's.
const BUSY_CPU_WAIT_SHARE: f64 = 0.2;

impl BootRow {
    /// The share of the first run some task spent waiting for a CPU, where it makes the boot
    /// busy ([`BUSY_CPU_WAIT_SHARE`] or more).
    pub fn busy_share(&self) -> Option<f64> {
        self.first_cpu_wait_share
            .filter(|&s| s >= BUSY_CPU_WAIT_SHARE)
    }
}

/// A penalty across boots: its mean and a 95 % interval (Student's t on the boots' values).
#[derive(Clone, Debug, PartialEq)]
pub struct AcrossBoots {
    /// Boots with a penalty.
    pub boots: usize,
    /// Their mean, ns.
    pub mean_ns: f64,
    /// The 95 % interval of the mean, ns (`None` with one boot).
    pub low_ns: Option<f64>,
    /// See `low_ns`.
    pub high_ns: Option<f64>,
    /// Why the interval is too wide to lean on, when it is.
    pub wide: Option<String>,
}
serialize_struct!(AcrossBoots {
    boots,
    mean_ns,
    low_ns,
    high_ns,
    wide
});

/// The boots of one results directory.
#[derive(Clone, Debug, PartialEq)]
pub struct BootSeries {
    /// The results directory (`boot arm -o DIR`).
    pub dir: String,
    /// Its boots, in order.
    pub rows: Vec<BootRow>,
    /// The first-after-boot penalty across them.
    pub penalty: Option<AcrossBoots>,
    /// The control batches' penalty across them.
    pub control_penalty: Option<AcrossBoots>,
    /// Why the plan disarmed (`boots.jsonl`'s last `disarmed`), if it did.
    pub disarmed: Option<String>,
}
serialize_struct!(BootSeries {
    dir,
    rows,
    penalty,
    control_penalty,
    disarmed
});

/// The sample a boot's batch gives: its verdict's first run minus the reference warm run
/// (the row's own penalty for a batch without a verdict's figures).
pub fn boot_penalty(row: &BatchRow) -> Option<f64> {
    row.verdict
        .as_ref()
        .and_then(|v| v.penalty_ns)
        .or(row.first_penalty_ns)
}

/// Two-sided 95 % quantiles of Student's t for 1 to 30 degrees of freedom.
const T95: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
];

/// The t quantile for `df` degrees of freedom (beyond 30: 1.96 + 2.4/df, within 0.002).
fn t95(df: usize) -> f64 {
    match df {
        0 => f64::INFINITY,
        1..=30 => T95[df - 1],
        _ => 1.96 + 2.4 / df as f64,
    }
}

/// The mean of `values` with its 95 % interval: with so few samples (a boot each), Student's t
/// rather than a bootstrap, whose percentile interval of 3 values is at most their range and
/// covers far less than 95 %.
pub fn across(values: &[f64]) -> Option<AcrossBoots> {
    let n = values.len();
    if n == 0 {
        return None;
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    if n == 1 {
        return Some(AcrossBoots {
            boots: 1,
            mean_ns: mean,
            low_ns: None,
            high_ns: None,
            wide: Some("one boot: no interval; arm more boots".into()),
        });
    }
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let half = t95(n - 1) * (var / n as f64).sqrt();
    let (low, high) = (mean - half, mean + half);
    let wide = if low <= 0.0 && high >= 0.0 {
        Some(format!(
            "it includes no penalty at all: {n} boots cannot tell this penalty from none"
        ))
    } else if half > mean.abs() / 2.0 || n < 5 {
        Some(format!(
            "wide: {n} boots are {n} samples; 10 or more boots narrow it"
        ))
    } else {
        None
    };
    Some(AcrossBoots {
        boots: n,
        mean_ns: mean,
        low_ns: Some(low),
        high_ns: Some(high),
        wide,
    })
}

/// `boot.json` of a batch directory, when `boot run` wrote one.
fn facts(dir: &Path) -> Option<Value> {
    let bytes = crate::untrusted::read_bounded(&dir.join("boot.json"), 16 << 20).ok()?;
    let doc: Value = serde_json::from_slice(&bytes).ok()?;
    (doc.get("schema")?.as_str()? == crate::record::boot::FACTS_SCHEMA).then_some(doc)
}

/// The first record with role `first` of a batch: read bytes, major faults, and the share of
/// its window during which some task waited for a CPU.
fn first_record(dir: &Path) -> (Option<u64>, Option<u64>, Option<f64>) {
    use std::io::BufRead;
    let Ok(opened) =
        crate::untrusted::open(&dir.join("runs.jsonl"), crate::untrusted::Want::Record)
    else {
        return (None, None, None);
    };
    let reader = std::io::BufReader::new(std::fs::File::from(opened.fd));
    for line in reader.lines().map_while(Result::ok).take(10_000) {
        let Ok(r) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if r.get("role").and_then(Value::as_str) != Some("first") {
            continue;
        }
        let at = |p: &[&str]| p.iter().try_fold(&r, |v, k| v.get(k));
        let u = |p: &[&str]| at(p).and_then(Value::as_u64);
        let share = match (
            u(&["system_delta", "psi_cpu_some_us"]),
            u(&["system_delta", "window_ns"]).or(u(&["wall_ns"])),
        ) {
            (Some(us), Some(ns)) if ns > 0 => Some((us as f64 * 1000.0 / ns as f64).min(1.0)),
            _ => None,
        };
        return (
            u(&["child_io", "read_bytes"]),
            u(&["rusage", "major_faults"]),
            share,
        );
    }
    (None, None, None)
}

fn boot_row(row: &BatchRow, doc: &Value, control: Option<&BatchRow>) -> BootRow {
    let at = |p: &[&str]| p.iter().try_fold(doc, |v, k| v.get(k));
    let u = |p: &[&str]| at(p).and_then(Value::as_u64);
    let (read, majors, busy) = first_record(Path::new(&row.dir));
    let files = at(&["program_files"])
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .map(|f| {
                    (
                        f.get("path")
                            .and_then(Value::as_str)
                            .unwrap_or("?")
                            .to_string(),
                        f.get("inode").and_then(Value::as_u64),
                        f.get("size").and_then(Value::as_u64),
                        f.get("mtime_ns").and_then(Value::as_i64).map(i128::from),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    BootRow {
        boot: u(&["boot"]).unwrap_or(0),
        boots: u(&["boots"]).unwrap_or(0),
        boot_id: at(&["boot_id"])
            .and_then(Value::as_str)
            .unwrap_or("?")
            .into(),
        dir: row.dir.clone(),
        kernel_release: at(&["kernel_release"])
            .and_then(Value::as_str)
            .map(Into::into),
        uptime_s: row.uptime_s,
        page_cache_kib: u(&["batch", "before", "page_cache_kib"]),
        runnable_tasks: u(&["batch", "before", "runnable_tasks"]),
        load_avg_1m: at(&["batch", "before", "load_avg_1m"]).and_then(Value::as_f64),
        first_wall_ns: row.first_wall_ns,
        warm_median_wall_ns: row.warm_median_wall_ns,
        penalty_ns: boot_penalty(row),
        verdict: row.verdict.clone(),
        first_read_bytes: read,
        first_major_faults: majors,
        first_cpu_wait_share: busy,
        control_first_wall_ns: control.and_then(|c| c.first_wall_ns),
        control_penalty_ns: control.and_then(boot_penalty),
        control_verdict: control.and_then(|c| c.verdict.clone()),
        changes: Vec::new(),
        files,
    }
}

/// What changed from `before` to `after`: the kernel, and each of the command's files.
fn changes(before: &BootRow, after: &BootRow) -> Vec<String> {
    let mut said = Vec::new();
    if before.kernel_release != after.kernel_release {
        said.push(format!(
            "kernel {} → {}",
            before.kernel_release.as_deref().unwrap_or("?"),
            after.kernel_release.as_deref().unwrap_or("?")
        ));
    }
    for (path, inode, size, mtime) in &after.files {
        match before.files.iter().find(|f| &f.0 == path) {
            None if !before.files.is_empty() => said.push(format!("{path} is new")),
            Some((_, i, s, m)) if (i, s, m) != (inode, size, mtime) => {
                let mut what = Vec::new();
                if i != inode {
                    what.push("inode");
                }
                if s != size {
                    what.push("size");
                }
                if m != mtime {
                    what.push("mtime");
                }
                said.push(format!("{path} changed ({})", what.join(", ")));
            }
            _ => {}
        }
    }
    for (path, ..) in &before.files {
        if !after.files.is_empty() && !after.files.iter().any(|f| &f.0 == path) {
            said.push(format!("{path} is gone"));
        }
    }
    said
}

/// Why the plan disarmed: the last `disarmed` line of `DIR/boots.jsonl`.
fn disarmed(dir: &Path) -> Option<String> {
    let bytes = crate::untrusted::read_bounded(&dir.join("boots.jsonl"), 16 << 20).ok()?;
    String::from_utf8_lossy(&bytes)
        .lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e.get("event").and_then(Value::as_str) == Some("disarmed"))
        .and_then(|e| e.get("why")?.as_str().map(str::to_owned))
}

/// The boot series among `rows`: batch directories with a `boot.json`, grouped by the
/// directory that holds them, each with its control batch (its row, when listed too).
pub fn series(rows: &[BatchRow]) -> Vec<BootSeries> {
    let mut found: Vec<(PathBuf, Vec<BootRow>)> = Vec::new();
    for row in rows {
        let dir = Path::new(&row.dir);
        let Some(doc) = facts(dir) else { continue };
        let parent = dir.parent().unwrap_or(Path::new(".")).to_path_buf();
        let boot = doc.get("boot").and_then(Value::as_u64).unwrap_or(0);
        let id = doc.get("boot_id").and_then(Value::as_str).unwrap_or("");
        let control_dir = parent.join(control_dir_name(boot, id));
        let control = rows.iter().find(|r| Path::new(&r.dir) == control_dir);
        let boot_row = boot_row(row, &doc, control);
        match found.iter_mut().find(|(p, _)| *p == parent) {
            Some((_, list)) => list.push(boot_row),
            None => found.push((parent, vec![boot_row])),
        }
    }
    found
        .into_iter()
        .map(|(dir, mut rows)| {
            rows.sort_by_key(|r| r.boot);
            for i in 1..rows.len() {
                rows[i].changes = changes(&rows[i - 1], &rows[i]);
            }
            let of = |f: fn(&BootRow) -> Option<f64>| {
                across(&rows.iter().filter_map(f).collect::<Vec<_>>())
            };
            BootSeries {
                penalty: of(|r| r.penalty_ns),
                control_penalty: of(|r| r.control_penalty_ns),
                disarmed: disarmed(&dir),
                dir: dir.display().to_string(),
                rows,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_boots_give_a_wide_t_interval_and_one_boot_none() {
        let a = across(&[136.3e6, 139.8e6, 73.4e6]).unwrap();
        assert_eq!(a.boots, 3);
        assert!((a.mean_ns - 116.5e6).abs() < 1e3, "{a:?}");
        // s = 37.37 ms, t(2) = 4.303: half-width 92.8 ms.
        let half = a.high_ns.unwrap() - a.mean_ns;
        assert!((half - 92.85e6).abs() < 0.1e6, "{a:?}");
        assert!(
            a.wide.as_deref().unwrap().starts_with("wide: 3 boots"),
            "{a:?}"
        );
        let one = across(&[5e6]).unwrap();
        assert_eq!((one.low_ns, one.high_ns), (None, None));
        assert!(across(&[]).is_none());
        let noise = across(&[-2e6, 3e6, 1e6]).unwrap();
        assert!(noise.wide.unwrap().contains("cannot tell"));
        let tight = across(&[100e6, 101e6, 99e6, 100e6, 100.5e6, 99.5e6]).unwrap();
        assert_eq!(tight.wide, None, "{tight:?}");
    }

    #[test]
    fn a_change_of_kernel_or_of_a_file_is_named() {
        let row = |kernel: &str, ino: u64| BootRow {
            kernel_release: Some(kernel.into()),
            files: vec![("/usr/bin/python3.11".into(), Some(ino), Some(10), Some(5))],
            ..BootRow::default()
        };
        assert!(changes(&row("6.1", 7), &row("6.1", 7)).is_empty());
        assert_eq!(
            changes(&row("6.1", 7), &row("6.2", 8)),
            ["kernel 6.1 → 6.2", "/usr/bin/python3.11 changed (inode)"]
        );
    }
}
