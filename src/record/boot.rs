//! The wire types of `coldtrace boot`: the armed state (`state.json`, schema
//! [`STATE_SCHEMA`]), the events of `DIR/boots.jsonl` ([`EVENT_SCHEMA`]) and what a boot's
//! runner saw around its batch (`DIR/boot-NN-<boot id>/boot.json`, [`FACTS_SCHEMA`]).
//! Serialized with [`crate::serialize_struct!`]; the state is read back field by field from
//! JSON, and a field that is missing or of the wrong type makes the whole state damaged (a
//! damaged state is disarmed, never guessed at).
#![forbid(unsafe_code)]

use crate::serialize_struct;
use serde_json::Value;

/// Schema name and version of the armed state.
pub const STATE_SCHEMA: &str = "coldtrace.boot-state/1";
/// Schema name and version of a line of `boots.jsonl`.
pub const EVENT_SCHEMA: &str = "coldtrace.boot-event/1";
/// Schema name and version of `boot.json`.
pub const FACTS_SCHEMA: &str = "coldtrace.boot/1";

/// What runs at each boot: what `coldtrace run` would execute, and how the boots go on.
#[derive(Clone, Debug, PartialEq)]
pub struct BootPlan {
    /// The command and its arguments, as given after `--`.
    pub argv: Vec<String>,
    /// `coldtrace run`'s options as given (without `-o`), in canonical spelling.
    pub run_options: Vec<String>,
    /// The working directory at arming.
    pub cwd: String,
    /// The environment at arming, `NAME=value`, in order.
    pub env: Vec<String>,
    /// The user and group that armed (the batch runs as them).
    pub uid: u32,
    /// See `uid`.
    pub gid: u32,
    /// Where each boot's batch directory goes (absolute).
    pub out_dir: String,
    /// How many boots run the batch.
    pub boots: u64,
    /// `--reboot`: reboot after a successful boot while boots remain.
    pub reboot: bool,
    /// `--reboot=COMMAND`: how (`None`: the system's own reboot).
    pub reboot_command: Option<String>,
    /// `--control SECONDS`: a second batch this long after the first, on the same boot.
    pub control_after_s: Option<f64>,
    /// `--after UNIT`s.
    pub after: Vec<String>,
    /// The unit's `TimeoutStartSec`.
    pub start_timeout_s: u64,
    /// The coldtrace binary that armed (the unit's `ExecStart`).
    pub coldtrace: String,
}
serialize_struct!(BootPlan {
    argv,
    run_options,
    cwd,
    env,
    uid,
    gid,
    out_dir,
    boots,
    reboot,
    reboot_command,
    control_after_s,
    after,
    start_timeout_s,
    coldtrace
});

/// A boot whose batch has started and not ended (yet, or ever).
#[derive(Clone, Debug, PartialEq)]
pub struct Running {
    /// Which of the armed boots (1-based).
    pub boot: u64,
    /// Its boot ID.
    pub boot_id: String,
    /// When its batch started, UTC.
    pub started_at: String,
    /// Seconds since boot then.
    pub uptime_s: Option<f64>,
    /// Its batch directory.
    pub dir: String,
}
serialize_struct!(Running {
    boot,
    boot_id,
    started_at,
    uptime_s,
    dir
});

/// A boot whose batch ended.
#[derive(Clone, Debug, PartialEq)]
pub struct Ran {
    /// Which of the armed boots (1-based).
    pub boot: u64,
    /// Its boot ID.
    pub boot_id: String,
    /// Its batch directory.
    pub dir: String,
    /// `coldtrace run`'s exit code (`None`: killed by a signal, or it could not start).
    pub exit_code: Option<i32>,
    /// The control batch's (`None`: none, or no code).
    pub control_exit_code: Option<i32>,
    /// When it ended, UTC.
    pub ended_at: String,
}
serialize_struct!(Ran {
    boot,
    boot_id,
    dir,
    exit_code,
    control_exit_code,
    ended_at
});

/// The armed state, `state.json`.
#[derive(Clone, Debug, PartialEq)]
pub struct BootState {
    /// [`STATE_SCHEMA`].
    pub schema: String,
    /// When it was armed, UTC.
    pub armed_at: String,
    /// The boot it was armed on (its batch never runs on that boot).
    pub armed_boot_id: Option<String>,
    /// What runs.
    pub plan: BootPlan,
    /// The unit installed (`None`: no systemd at arming; an init script runs `boot run`).
    pub unit: Option<String>,
    /// The unit's link in `multi-user.target.wants/`.
    pub wants_link: Option<String>,
    /// Boots that started their batch: incremented, and the state made durable, before each
    /// batch starts.
    pub boots_started: u64,
    /// The boot whose batch is under way — or never ended, if this is read on a later boot.
    pub running: Option<Running>,
    /// The boots whose batch ended.
    pub ran: Vec<Ran>,
}
serialize_struct!(BootState {
    schema,
    armed_at,
    armed_boot_id,
    plan,
    unit,
    wants_link,
    boots_started,
    running,
    ran
});

/// One line of `DIR/boots.jsonl`: what happened, when, on which boot.
#[derive(Clone, Debug, PartialEq)]
pub struct BootEvent {
    /// [`EVENT_SCHEMA`].
    pub schema: &'static str,
    /// `armed`, `started`, `ended`, `rebooting` or `disarmed`.
    pub event: &'static str,
    /// When, UTC.
    pub at: String,
    /// The boot ID at the time.
    pub boot_id: Option<String>,
    /// Seconds since boot at the time.
    pub uptime_s: Option<f64>,
    /// Which of the armed boots (1-based), when one is concerned.
    pub boot: Option<u64>,
    /// The batch directory concerned.
    pub dir: Option<String>,
    /// `coldtrace run`'s exit code (`ended`).
    pub exit_code: Option<i32>,
    /// Why (`disarmed`, a failed `ended`, `rebooting`'s command).
    pub why: Option<String>,
}
serialize_struct!(BootEvent {
    schema,
    event,
    at,
    boot_id,
    uptime_s,
    boot,
    dir,
    exit_code,
    why
});

/// A file the command runs from, stamped so that a change between boots shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileStamp {
    /// `executable`, `interpreter` or `library`.
    pub role: &'static str,
    /// Its path, symlinks resolved.
    pub path: String,
    /// `st_ino`.
    pub inode: Option<u64>,
    /// `st_size`, bytes.
    pub size: Option<u64>,
    /// `st_mtime`, ns since the epoch.
    pub mtime_ns: Option<i128>,
}
serialize_struct!(FileStamp {
    role,
    path,
    inode,
    size,
    mtime_ns
});

/// The machine at one instant of a boot.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Instant {
    /// Seconds since boot (`/proc/uptime`).
    pub uptime_s: Option<f64>,
    /// The page cache's size (`Cached` of `/proc/meminfo`), KiB.
    pub page_cache_kib: Option<u64>,
    /// `MemAvailable`, KiB.
    pub mem_available_kib: Option<u64>,
    /// Load average over 1 minute.
    pub load_avg_1m: Option<f64>,
    /// Tasks runnable at that instant (`/proc/loadavg`'s fourth field, before the slash).
    pub runnable_tasks: Option<u64>,
    /// `/proc/pressure/cpu` `some total=`, µs (`None`: PSI off or absent).
    pub psi_cpu_some_us: Option<u64>,
    /// `/proc/pressure/io` `some total=`, µs.
    pub psi_io_some_us: Option<u64>,
}
serialize_struct!(Instant {
    uptime_s,
    page_cache_kib,
    mem_available_kib,
    load_avg_1m,
    runnable_tasks,
    psi_cpu_some_us,
    psi_io_some_us
});

/// One batch `boot run` started: where, and how it ended.
#[derive(Clone, Debug, PartialEq)]
pub struct BatchEnd {
    /// The batch directory.
    pub dir: String,
    /// `coldtrace run`'s exit code (`None`: it died of a signal or could not start).
    pub exit_code: Option<i32>,
    /// Why it failed, in words (`None`: it succeeded).
    pub failure: Option<String>,
    /// The machine right before it started.
    pub before: Instant,
    /// The machine right after it ended.
    pub after: Instant,
}
serialize_struct!(BatchEnd {
    dir,
    exit_code,
    failure,
    before,
    after
});

/// `boot.json`: one boot's batch as its runner saw it.
#[derive(Clone, Debug, PartialEq)]
pub struct BootFacts {
    /// [`FACTS_SCHEMA`].
    pub schema: &'static str,
    /// Which of the armed boots (1-based).
    pub boot: u64,
    /// Of how many.
    pub boots: u64,
    /// The boot ID.
    pub boot_id: String,
    /// `uname -r`.
    pub kernel_release: Option<String>,
    /// `/proc/cmdline`.
    pub kernel_cmdline: Option<String>,
    /// When the batch started, UTC.
    pub started_at: String,
    /// The batch.
    pub batch: BatchEnd,
    /// The control batch, `--control` seconds later (`None` without it, or when the batch
    /// failed).
    pub control: Option<BatchEnd>,
    /// The command's executable, its interpreter and the libraries the dynamic loader maps.
    pub program_files: Vec<FileStamp>,
    /// Why `program_files` lacks the libraries (a static program has none to list).
    pub libraries_note: Option<String>,
}
serialize_struct!(BootFacts {
    schema,
    boot,
    boots,
    boot_id,
    kernel_release,
    kernel_cmdline,
    started_at,
    batch,
    control,
    program_files,
    libraries_note
});

/// Why a state file cannot be used: one line.
pub type Damage = String;

/// A field of an object read back, with what it should be.
struct Fields<'a>(&'a Value);

impl<'a> Fields<'a> {
    fn get(&self, name: &str) -> Result<&'a Value, Damage> {
        self.0.get(name).ok_or_else(|| format!("no field `{name}`"))
    }
    fn string(&self, name: &str) -> Result<String, Damage> {
        self.get(name)?
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| format!("`{name}` is not a string"))
    }
    fn opt_string(&self, name: &str) -> Result<Option<String>, Damage> {
        match self.get(name)? {
            Value::Null => Ok(None),
            v => v
                .as_str()
                .map(|s| Some(s.to_owned()))
                .ok_or_else(|| format!("`{name}` is neither a string nor null")),
        }
    }
    fn u64(&self, name: &str) -> Result<u64, Damage> {
        self.get(name)?
            .as_u64()
            .ok_or_else(|| format!("`{name}` is not a whole number"))
    }
    fn u32(&self, name: &str) -> Result<u32, Damage> {
        u32::try_from(self.u64(name)?).map_err(|_| format!("`{name}` is out of range"))
    }
    fn opt_f64(&self, name: &str) -> Result<Option<f64>, Damage> {
        match self.get(name)? {
            Value::Null => Ok(None),
            v => v
                .as_f64()
                .map(Some)
                .ok_or_else(|| format!("`{name}` is neither a number nor null")),
        }
    }
    fn opt_i32(&self, name: &str) -> Result<Option<i32>, Damage> {
        match self.get(name)? {
            Value::Null => Ok(None),
            v => v
                .as_i64()
                .and_then(|n| i32::try_from(n).ok())
                .map(Some)
                .ok_or_else(|| format!("`{name}` is not an exit code")),
        }
    }
    fn bool(&self, name: &str) -> Result<bool, Damage> {
        self.get(name)?
            .as_bool()
            .ok_or_else(|| format!("`{name}` is not true or false"))
    }
    fn strings(&self, name: &str) -> Result<Vec<String>, Damage> {
        let list = self
            .get(name)?
            .as_array()
            .ok_or_else(|| format!("`{name}` is not a list"))?;
        list.iter()
            .map(|v| v.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| format!("`{name}` holds something other than strings"))
    }
    fn object(&self, name: &str) -> Result<Fields<'a>, Damage> {
        let v = self.get(name)?;
        v.is_object()
            .then_some(Fields(v))
            .ok_or_else(|| format!("`{name}` is not an object"))
    }
}

impl BootPlan {
    fn parse(f: &Fields<'_>) -> Result<BootPlan, Damage> {
        let plan = BootPlan {
            argv: f.strings("argv")?,
            run_options: f.strings("run_options")?,
            cwd: f.string("cwd")?,
            env: f.strings("env")?,
            uid: f.u32("uid")?,
            gid: f.u32("gid")?,
            out_dir: f.string("out_dir")?,
            boots: f.u64("boots")?,
            reboot: f.bool("reboot")?,
            reboot_command: f.opt_string("reboot_command")?,
            control_after_s: f.opt_f64("control_after_s")?,
            after: f.strings("after")?,
            start_timeout_s: f.u64("start_timeout_s")?,
            coldtrace: f.string("coldtrace")?,
        };
        if plan.argv.is_empty() {
            return Err("`argv` is empty".into());
        }
        if !plan.out_dir.starts_with('/') {
            return Err("`out_dir` is not an absolute path".into());
        }
        Ok(plan)
    }
}

impl BootState {
    /// The state read back from `state.json`'s bytes.
    ///
    /// # Errors
    /// One line naming what is wrong: not JSON, another schema, a field missing or mistyped.
    pub fn parse(bytes: &[u8]) -> Result<BootState, Damage> {
        let doc: Value =
            serde_json::from_slice(bytes).map_err(|e| format!("not a JSON document ({e})"))?;
        let f = Fields(&doc);
        let schema = f.string("schema")?;
        if schema != STATE_SCHEMA {
            return Err(format!("schema `{schema}`, not `{STATE_SCHEMA}`"));
        }
        let running = match f.get("running")? {
            Value::Null => None,
            _ => {
                let r = f.object("running")?;
                Some(Running {
                    boot: r.u64("boot")?,
                    boot_id: r.string("boot_id")?,
                    started_at: r.string("started_at")?,
                    uptime_s: r.opt_f64("uptime_s")?,
                    dir: r.string("dir")?,
                })
            }
        };
        let ran = f
            .get("ran")?
            .as_array()
            .ok_or("`ran` is not a list")?
            .iter()
            .map(|v| {
                let r = Fields(v);
                Ok(Ran {
                    boot: r.u64("boot")?,
                    boot_id: r.string("boot_id")?,
                    dir: r.string("dir")?,
                    exit_code: r.opt_i32("exit_code")?,
                    control_exit_code: r.opt_i32("control_exit_code")?,
                    ended_at: r.string("ended_at")?,
                })
            })
            .collect::<Result<Vec<_>, Damage>>()?;
        let state = BootState {
            schema,
            armed_at: f.string("armed_at")?,
            armed_boot_id: f.opt_string("armed_boot_id")?,
            plan: BootPlan::parse(&f.object("plan")?)?,
            unit: f.opt_string("unit")?,
            wants_link: f.opt_string("wants_link")?,
            boots_started: f.u64("boots_started")?,
            running,
            ran,
        };
        if state.boots_started > state.plan.boots {
            return Err(format!(
                "{} boots started of {} armed",
                state.boots_started, state.plan.boots
            ));
        }
        Ok(state)
    }

    /// Boots still to run their batch.
    pub fn boots_left(&self) -> u64 {
        self.plan.boots.saturating_sub(self.boots_started)
    }
}

/// The directory name of boot `boot`'s batch: `boot-NN-<boot id>` (NN at least two digits).
pub fn boot_dir_name(boot: u64, boot_id: &str) -> String {
    let id: String = boot_id
        .chars()
        .filter(|c| c.is_ascii_hexdigit() || *c == '-')
        .collect();
    format!("boot-{boot:02}-{id}")
}

/// The control batch's directory name beside it.
pub fn control_dir_name(boot: u64, boot_id: &str) -> String {
    format!("{}-control", boot_dir_name(boot, boot_id))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> BootState {
        BootState {
            schema: STATE_SCHEMA.into(),
            armed_at: "2026-12-06T01:00:00.000Z".into(),
            armed_boot_id: Some("b0".into()),
            plan: BootPlan {
                argv: vec!["cat".into(), "/data".into()],
                run_options: vec!["--runs".into(), "5".into()],
                cwd: "/".into(),
                env: vec!["PATH=/bin".into()],
                uid: 0,
                gid: 0,
                out_dir: "/results".into(),
                boots: 3,
                reboot: true,
                reboot_command: Some("reboot -f".into()),
                control_after_s: Some(30.0),
                after: vec!["remote-fs.target".into()],
                start_timeout_s: 3600,
                coldtrace: "/usr/bin/coldtrace".into(),
            },
            unit: Some("/etc/systemd/system/coldtrace-boot.service".into()),
            wants_link: None,
            boots_started: 1,
            running: Some(Running {
                boot: 1,
                boot_id: "b1".into(),
                started_at: "2026-12-06T01:01:00.000Z".into(),
                uptime_s: Some(4.5),
                dir: "/results/boot-01-b1".into(),
            }),
            ran: vec![Ran {
                boot: 1,
                boot_id: "b1".into(),
                dir: "/results/boot-01-b1".into(),
                exit_code: Some(0),
                control_exit_code: None,
                ended_at: "2026-12-06T01:02:00.000Z".into(),
            }],
        }
    }

    #[test]
    fn the_state_reads_back_as_written() {
        let s = state();
        let text = serde_json::to_vec(&s).unwrap();
        assert_eq!(BootState::parse(&text).unwrap(), s);
        assert_eq!(s.boots_left(), 2);
    }

    #[test]
    fn a_damaged_state_names_what_is_wrong() {
        let mut doc: Value = serde_json::to_value(state()).unwrap();
        assert!(BootState::parse(b"{\"schema\": ")
            .unwrap_err()
            .contains("not a JSON"));
        doc["plan"]["boots"] = "three".into();
        let err = BootState::parse(doc.to_string().as_bytes()).unwrap_err();
        assert_eq!(err, "`boots` is not a whole number");
        doc["plan"]["boots"] = 3.into();
        doc["boots_started"] = 4.into();
        let err = BootState::parse(doc.to_string().as_bytes()).unwrap_err();
        assert!(err.contains("4 boots started of 3"), "{err}");
        doc["schema"] = "coldtrace.boot-state/9".into();
        let err = BootState::parse(doc.to_string().as_bytes()).unwrap_err();
        assert!(err.contains("schema"), "{err}");
    }

    #[test]
    fn boot_directories_are_numbered_and_named_by_the_boot() {
        assert_eq!(boot_dir_name(2, "ab-12\n/.."), "boot-02-ab-12");
        assert_eq!(control_dir_name(12, "ff"), "boot-12-ff-control");
    }
}
