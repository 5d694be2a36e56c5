//! The systemd unit that runs `coldtrace boot run` at boot: its text, installing it (the unit
//! file and its link in `multi-user.target.wants/`, as `systemctl enable` makes them) and
//! removing it. See [systemd.service(5)], [systemd.unit(5)] and [systemd.syntax(7)].
//!
//! [systemd.service(5)]: https://man7.org/linux/man-pages/man5/systemd.service.5.html
//! [systemd.unit(5)]: https://man7.org/linux/man-pages/man5/systemd.unit.5.html
//! [systemd.syntax(7)]: https://man7.org/linux/man-pages/man7/systemd.syntax.7.html
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};

/// The unit's file name.
pub const UNIT_NAME: &str = "coldtrace-boot.service";
/// Where units of the local administrator go.
pub const DEFAULT_UNIT_DIR: &str = "/etc/systemd/system";
/// The target whose `.wants/` holds the unit's link.
pub const WANTED_BY: &str = "multi-user.target";

/// Whether systemd is this machine's init, as `sd_booted(3)` tells it: `/run/systemd/system`
/// exists.
pub fn systemd_runs() -> bool {
    Path::new("/run/systemd/system").is_dir()
}

/// The unit's path and its link's in `unit_dir`.
pub fn paths(unit_dir: &Path) -> (PathBuf, PathBuf) {
    (
        unit_dir.join(UNIT_NAME),
        unit_dir.join(format!("{WANTED_BY}.wants")).join(UNIT_NAME),
    )
}

/// One word of `ExecStart=` as systemd reads it: quoted when it holds a blank or a quote,
/// `%` (specifiers) and `$` (variables) doubled, backslashes and quotes escaped.
pub fn exec_word(word: &str) -> String {
    let escaped = word
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('%', "%%")
        .replace('$', "$$");
    if escaped.is_empty() || escaped.contains(|c: char| c.is_whitespace() || c == '\'') {
        format!("\"{escaped}\"")
    } else {
        escaped
    }
}

/// What the unit says.
pub struct UnitText<'a> {
    /// The command that runs at boot, word by word.
    pub exec: &'a [String],
    /// `--after` units.
    pub after: &'a [String],
    /// `TimeoutStartSec`.
    pub start_timeout_s: u64,
    /// How many boots, for the comment.
    pub boots: u64,
}

impl UnitText<'_> {
    /// The unit file.
    pub fn render(&self) -> String {
        let exec: Vec<String> = self.exec.iter().map(|w| exec_word(w)).collect();
        let mut after = vec!["local-fs.target".to_string(), "remote-fs.target".into()];
        after.extend(self.after.iter().cloned());
        let wants = if self.after.is_empty() {
            String::new()
        } else {
            format!("Wants={}\n", self.after.join(" "))
        };
        format!(
            "# Installed by `coldtrace boot arm`: the armed batch runs at each of the next {} \
             boots,\n\
             # then coldtrace removes this unit itself. `coldtrace boot status` shows the plan;\n\
             # `coldtrace boot disarm` removes the unit and the state from any state.\n\
             # At boot there is no login session: no XDG_RUNTIME_DIR and no user D-Bus.\n\
             [Unit]\n\
             Description=coldtrace: the armed batch of this boot\n\
             After={}\n\
             {wants}\
             \n\
             [Service]\n\
             Type=oneshot\n\
             ExecStart={}\n\
             TimeoutStartSec={}\n\
             StandardOutput=journal+console\n\
             StandardError=journal+console\n\
             \n\
             [Install]\n\
             WantedBy={WANTED_BY}\n",
            self.boots,
            after.join(" "),
            exec.join(" "),
            self.start_timeout_s,
        )
    }
}

/// Writes the unit into `unit_dir` (atomically: a temporary file renamed over it, mode 0644)
/// and links it from `multi-user.target.wants/`. Returns the unit's path and the link's.
///
/// # Errors
/// One line naming the file that could not be written.
pub fn install(unit_dir: &Path, text: &str) -> Result<(PathBuf, PathBuf), String> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let (unit, link) = paths(unit_dir);
    std::fs::create_dir_all(unit_dir).map_err(|e| format!("{}: {e}", unit_dir.display()))?;
    let tmp = unit_dir.join(format!(".{UNIT_NAME}.{}.tmp", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(&tmp)
        .and_then(|mut f| f.write_all(text.as_bytes()).and_then(|()| f.sync_all()))
        .and_then(|()| std::fs::rename(&tmp, &unit));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(format!("{}: {e}", unit.display()));
    }
    let wants = link.parent().unwrap_or(unit_dir);
    std::fs::create_dir_all(wants).map_err(|e| format!("{}: {e}", wants.display()))?;
    match std::fs::symlink_metadata(&link) {
        Ok(_) => std::fs::remove_file(&link).map_err(|e| format!("{}: {e}", link.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("{}: {e}", link.display())),
    }
    std::os::unix::fs::symlink(&unit, &link).map_err(|e| format!("{}: {e}", link.display()))?;
    Ok((unit, link))
}

/// Removes `path` if it is there (a file or a symlink, never followed): `Ok(true)` when it
/// was removed, `Ok(false)` when there was nothing.
///
/// # Errors
/// One line naming it.
pub fn remove(path: &Path) -> Result<bool, String> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => Err(format!(
            "{}: a directory, not the unit coldtrace installed; left as it is",
            path.display()
        )),
        Ok(_) => std::fs::remove_file(path)
            .map(|()| true)
            .map_err(|e| format!("{}: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exec_words_are_quoted_and_escaped_as_systemd_reads_them() {
        assert_eq!(exec_word("/usr/bin/coldtrace"), "/usr/bin/coldtrace");
        assert_eq!(exec_word("/opt/my tools/ct"), "\"/opt/my tools/ct\"");
        assert_eq!(exec_word("50%"), "50%%");
        assert_eq!(exec_word("$HOME"), "$$HOME");
        assert_eq!(exec_word("a\"b"), "a\\\"b");
        assert_eq!(exec_word(""), "\"\"");
    }

    #[test]
    fn the_unit_orders_after_the_file_systems_and_what_was_asked() {
        let exec = [
            "/usr/bin/coldtrace".to_string(),
            "boot".into(),
            "run".into(),
        ];
        let after = ["nvidia-persistenced.service".to_string()];
        let text = UnitText {
            exec: &exec,
            after: &after,
            start_timeout_s: 600,
            boots: 3,
        }
        .render();
        assert!(text.contains(
            "After=local-fs.target remote-fs.target nvidia-persistenced.service\n\
             Wants=nvidia-persistenced.service\n"
        ));
        assert!(text.contains("ExecStart=/usr/bin/coldtrace boot run\n"));
        assert!(text.contains("Type=oneshot\n") && text.contains("TimeoutStartSec=600\n"));
        assert!(text.contains("WantedBy=multi-user.target\n"));
        let plain = UnitText {
            exec: &exec,
            after: &[],
            start_timeout_s: 600,
            boots: 3,
        }
        .render();
        assert!(!plain.contains("Wants="));
    }
}
