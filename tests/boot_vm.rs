//! `coldtrace boot` proven in real boots: a virtual machine made on the fly and booted again
//! and again under qemu's TCG — the Debian kernel from /boot, a busybox initramfs built here
//! that loads the virtio modules, mounts a workload-and-state disk and a results disk (ext4
//! images made with `mkfs.ext4 -d`, read back with `debugfs -R rdump`), and runs what the unit
//! would run, `coldtrace boot run`. The guest's first boot arms (`boot arm --reboot`, as a user
//! arms and reboots); each armed boot runs its batch and reboots the next; the qemu process
//! ends with every guest reboot (`-no-reboot`) and is started again on the same disks.
//!
//! A last test boots systemd itself: a Debian root file system (mmdebstrap) armed from a chroot,
//! where the unit runs after the file systems and reboots through `systemctl reboot`.
//!
//! These tests need qemu-system-x86, a kernel in /boot (linux-image-cloud-amd64), busybox-static,
//! e2fsprogs, systemd and mmdebstrap (and root for the last), and a few minutes of one CPU: they are `#[ignore]`d so that `cargo test` on a
//! fresh machine stays the README's command, and `.ci/run` installs the packages and runs them
//! with `cargo test --test boot_vm -- --ignored --test-threads 1`. Run by hand, they fail — never skip —
//! when a package is missing, naming it. Set `COLDTRACE_VM_KEEP=DIR` to keep the disks, the
//! results and the consoles in DIR.
#![forbid(unsafe_code)]

mod common;

use common::TempDir;
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const MODULES: [&str; 6] = [
    "virtio/virtio_ring",
    "virtio/virtio",
    "virtio/virtio_pci_modern_dev",
    "virtio/virtio_pci_legacy_dev",
    "virtio/virtio_pci",
    "block/virtio_blk",
];
/// The longest one boot may take under TCG before the test gives up on it.
const BOOT_LIMIT: Duration = Duration::from_secs(240);
/// The workload: this many files of this many bytes, read by a static `cat` from the disk.
const FILES: usize = 4;
const FILE_BYTES: usize = 1 << 20;

fn tool(name: &str, package: &str) -> PathBuf {
    for dir in ["/usr/bin", "/usr/sbin", "/bin", "/sbin"] {
        let p = Path::new(dir).join(name);
        if p.exists() {
            return p;
        }
    }
    panic!("{name} is missing: apt-get install {package} (these tests boot a VM)");
}

/// The newest kernel in /boot and its release.
fn kernel() -> (PathBuf, String) {
    let mut kernels: Vec<PathBuf> = std::fs::read_dir("/boot")
        .map(|d| d.filter_map(|e| Some(e.ok()?.path())).collect())
        .unwrap_or_default();
    kernels.retain(|p| {
        p.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("vmlinuz-"))
    });
    kernels.sort();
    let k = kernels
        .pop()
        .expect("no kernel in /boot: apt-get install linux-image-cloud-amd64");
    let release = k.file_name().unwrap().to_string_lossy()["vmlinuz-".len()..].to_string();
    (k, release)
}

/// A cpio archive in the "newc" format the kernel unpacks as its initramfs.
#[derive(Default)]
struct Cpio(Vec<u8>, u32);

impl Cpio {
    fn entry(&mut self, name: &str, mode: u32, data: &[u8]) {
        self.1 += 1;
        let header = format!(
            "070701{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}",
            self.1,
            mode,
            0,
            0,
            1,
            0,
            data.len(),
            0,
            0,
            0,
            0,
            name.len() + 1,
            0
        );
        self.0.extend_from_slice(header.as_bytes());
        self.0.extend_from_slice(name.as_bytes());
        self.0.push(0);
        self.pad();
        self.0.extend_from_slice(data);
        self.pad();
    }
    fn pad(&mut self) {
        while self.0.len() % 4 != 0 {
            self.0.push(0);
        }
    }
    fn dir(&mut self, name: &str) {
        self.entry(name, 0o040755, &[]);
    }
    fn file(&mut self, name: &str, mode: u32, data: &[u8]) {
        self.entry(name, 0o100000 | mode, data);
    }
    fn finish(mut self) -> Vec<u8> {
        self.entry("TRAILER!!!", 0, &[]);
        self.0
    }
}

/// The guest's init: modules, disks, then arm (first boot) or `coldtrace boot run`.
const INIT: &str = r#"#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin:/sbin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci virtio_blk; do
  insmod /lib/modules/$m.ko || echo "coldtrace-vm: insmod $m failed"
done
mkdir -p /disk /results /var/lib/coldtrace
mount -t ext4 /dev/vda /disk && mount -t ext4 /dev/vdb /results || echo "coldtrace-vm: mount failed"
mount --bind /disk/state /var/lib/coldtrace
echo "coldtrace-vm: up $(cut -d' ' -f1 /proc/uptime) s, boot $(cat /proc/sys/kernel/random/boot_id)"
down() { sync; umount /var/lib/coldtrace; umount /results; umount /disk; }
if [ -f /disk/arm.sh ]; then
  cd /disk/workload && sh /disk/arm.sh; echo "coldtrace-vm: arm exit $?"
  cd / && mv /disk/arm.sh /disk/armed.sh && down && echo "coldtrace-vm: rebooting" && reboot -f
fi
cd /
/bin/coldtrace boot run; echo "coldtrace-vm: boot run exit $?"
/bin/coldtrace boot status; echo "coldtrace-vm: boot status exit $?"
down; echo "coldtrace-vm: powering off"; poweroff -f
"#;

struct Vm {
    dir: PathBuf,
    kernel: PathBuf,
    initrd: PathBuf,
    disk: PathBuf,
    results: PathBuf,
    consoles: Vec<String>,
    /// Words added to the kernel's command line of the next boots.
    cmdline: String,
    /// The guest's memory, MiB.
    memory_mib: u32,
}

/// Packs the initramfs: busybox, coldtrace, the virtio modules, init.
fn initramfs(dir: &Path, release: &str) -> PathBuf {
    let mut cpio = Cpio::default();
    for d in [
        "bin",
        "sbin",
        "dev",
        "proc",
        "sys",
        "lib",
        "lib/modules",
        "var",
        "var/lib",
        "tmp",
    ] {
        cpio.dir(d);
    }
    let busybox = std::fs::read(tool("busybox", "busybox-static")).unwrap();
    assert!(
        !busybox.windows(14).any(|w| w == b"/lib64/ld-linu"),
        "/bin/busybox is dynamically linked: apt-get install busybox-static"
    );
    cpio.file("bin/busybox", 0o755, &busybox);
    let coldtrace = std::fs::read(env!("CARGO_BIN_EXE_coldtrace")).unwrap();
    assert!(
        !coldtrace.windows(14).any(|w| w == b"/lib64/ld-linu"),
        "the coldtrace binary is dynamically linked; the guest has no C library (build for \
         the musl target, the default of .cargo/config.toml)"
    );
    cpio.file("bin/coldtrace", 0o755, &coldtrace);
    for m in MODULES {
        let path = format!("/lib/modules/{release}/kernel/drivers/{m}.ko");
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let name = m.rsplit('/').next().unwrap();
        cpio.file(&format!("lib/modules/{name}.ko"), 0o644, &bytes);
    }
    cpio.file("init", 0o755, INIT.as_bytes());
    let path = dir.join("initrd.cpio");
    std::fs::write(&path, cpio.finish()).unwrap();
    path
}

/// Deterministic bytes (xorshift), so that no two files share pages.
fn bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn mkfs(image: &Path, from: Option<&Path>) {
    let mut c = Command::new(tool("mkfs.ext4", "e2fsprogs"));
    c.args(["-q", "-F", "-E", "root_owner=0:0"]);
    if let Some(from) = from {
        c.arg("-d").arg(from);
    }
    let out = c.arg(image).arg("64M").output().unwrap();
    assert!(out.status.success(), "mkfs.ext4: {out:?}");
}

impl Vm {
    /// A VM whose first boot runs `arm` (a shell line, run in /disk/workload).
    fn new(tmp: &TempDir, arm: &str) -> Vm {
        let dir = tmp.path().to_path_buf();
        let (kernel, release) = kernel();
        let initrd = initramfs(&dir, &release);
        let tree = dir.join("disk-tree");
        std::fs::create_dir_all(tree.join("workload/data")).unwrap();
        std::fs::create_dir_all(tree.join("state")).unwrap();
        std::fs::copy(tool("busybox", "busybox-static"), tree.join("workload/cat")).unwrap();
        for i in 0..FILES {
            let name = tree.join(format!("workload/data/{}", (b'a' + i as u8) as char));
            std::fs::write(name, bytes(i as u64 + 7, FILE_BYTES)).unwrap();
        }
        std::fs::write(tree.join("arm.sh"), arm).unwrap();
        let disk = dir.join("disk.img");
        let results = dir.join("results.img");
        mkfs(&disk, Some(&tree));
        mkfs(&results, None);
        Vm {
            dir,
            kernel,
            initrd,
            disk,
            results,
            consoles: Vec::new(),
            cmdline: "quiet".into(),
            memory_mib: 512,
        }
    }

    /// One boot: qemu started, its console read until it exits — or, with `kill_at`, killed
    /// `kill_after` once a console line contains `kill_at`. The console's text.
    fn boot(&mut self, kill_at: Option<(&str, Duration)>) -> String {
        let mut qemu = Command::new(tool("qemu-system-x86_64", "qemu-system-x86"))
            .args(["-accel", "tcg", "-smp", "1", "-nographic"])
            .arg("-m")
            .arg(self.memory_mib.to_string())
            .args([
                "-no-user-config",
                "-nodefaults",
                "-no-reboot",
                "-serial",
                "stdio",
            ])
            .arg("-kernel")
            .arg(&self.kernel)
            .arg("-initrd")
            .arg(&self.initrd)
            .arg("-append")
            .arg(format!("console=ttyS0 panic=-1 {}", self.cmdline))
            .args(self.drives())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("qemu-system-x86_64 did not start");
        let started = Instant::now();
        let (tx, rx) = std::sync::mpsc::channel();
        let stdout = qemu.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let mut console = String::new();
        let mut kill_deadline = None;
        loop {
            match rx.recv_timeout(Duration::from_millis(200)) {
                Ok(line) => {
                    let line = line.replace('\r', "");
                    if kill_at.is_some_and(|(at, _)| line.contains(at)) && kill_deadline.is_none() {
                        kill_deadline = Some(Instant::now() + kill_at.unwrap().1);
                    }
                    console.push_str(&line);
                    console.push('\n');
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            }
            if kill_deadline.is_some_and(|d| Instant::now() >= d) {
                qemu.kill().unwrap();
                console.push_str("coldtrace-vm-test: killed the VM mid-batch\n");
                break;
            }
            if started.elapsed() > BOOT_LIMIT {
                qemu.kill().unwrap();
                panic!("a boot took over {BOOT_LIMIT:?}; console:\n{console}");
            }
        }
        qemu.wait().unwrap();
        eprintln!(
            "--- boot {} ({:.1} s):\n{console}",
            self.consoles.len(),
            started.elapsed().as_secs_f64()
        );
        self.consoles.push(console.clone());
        console
    }

    /// `-drive` for each disk (one when the results are on the root disk).
    fn drives(&self) -> Vec<String> {
        let mut disks = vec![&self.disk];
        if self.results != self.disk {
            disks.push(&self.results);
        }
        disks
            .iter()
            .flat_map(|d| {
                [
                    "-drive".into(),
                    format!("file={},format=raw,if=virtio", d.display()),
                ]
            })
            .collect()
    }

    /// Boots until a boot powers off rather than reboots, at most `max` boots.
    fn boot_until_off(&mut self, max: usize) {
        for _ in 0..max {
            if self.boot(None).contains("coldtrace-vm: powering off") {
                return;
            }
        }
        panic!("{max} boots and the guest never powered off");
    }

    /// The results disk's `path`, copied out with debugfs.
    fn results(&self, path: &str) -> PathBuf {
        rdump(&self.results, path, &self.dir.join("out"))
    }

    /// The workload disk's `path`.
    fn disk(&self, path: &str) -> PathBuf {
        rdump(&self.disk, path, &self.dir.join("disk-out"))
    }
}

fn rdump(image: &Path, path: &str, into: &Path) -> PathBuf {
    std::fs::create_dir_all(into).unwrap();
    let out = Command::new(tool("debugfs", "e2fsprogs"))
        .arg("-R")
        .arg(format!("rdump {path} {}", into.display()))
        .arg(image)
        .output()
        .unwrap();
    assert!(out.status.success(), "debugfs: {out:?}");
    into.join(Path::new(path).file_name().unwrap())
}

fn records(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("runs.jsonl"))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The `event` of each line of `boots.jsonl`, in order.
fn event_kinds(dir: &Path) -> Vec<String> {
    events(dir)
        .iter()
        .map(|e| e["event"].as_str().unwrap().to_string())
        .collect()
}

fn events(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("boots.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Copies what a run left into `COLDTRACE_VM_KEEP`, when set.
fn keep(vm: &Vm, name: &str) {
    if let Some(to) = std::env::var_os("COLDTRACE_VM_KEEP") {
        let to = PathBuf::from(to).join(name);
        let _ = std::fs::create_dir_all(&to);
        let _ = Command::new("cp")
            .arg("-a")
            .arg(vm.dir.join("out"))
            .arg(&to)
            .status();
        for (i, c) in vm.consoles.iter().enumerate() {
            let _ = std::fs::File::create(to.join(format!("console-{i}.txt")))
                .and_then(|mut f| f.write_all(c.as_bytes()));
        }
    }
}

const ARM: &str = "/bin/coldtrace boot arm --boots 3 --reboot='sync; reboot -f' \
                   --control 2 -o /results/ct -n 5 --watch /disk/workload --counters -- \
                   /disk/workload/cat data/a data/b data/c data/d\n";

#[test]
#[ignore = "boots a VM under qemu (about a minute): .ci/run runs it with --ignored"]
fn three_real_boots_each_run_one_cold_batch_then_the_plan_disarms() {
    let tmp = TempDir::new("boot-vm");
    let mut vm = Vm::new(&tmp, ARM);
    vm.boot_until_off(6);
    let arming = &vm.consoles[0];
    assert!(
        arming.contains("/bin/coldtrace boot run") && arming.contains("arm exit 0"),
        "arming without systemd names the one command an init script runs:\n{arming}"
    );
    assert_eq!(
        vm.consoles.len(),
        4,
        "the arming boot and three armed boots"
    );
    let ct = vm.results("/ct");
    keep(&vm, "three-boots");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&ct)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() && !p.to_string_lossy().ends_with("-control"))
        .collect();
    dirs.sort();
    let names: Vec<String> = dirs
        .iter()
        .map(|d| d.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 3, "{names:?}");
    let mut boot_ids = Vec::new();
    for (i, dir) in dirs.iter().enumerate() {
        assert!(
            names[i].starts_with(&format!("boot-0{}-", i + 1)),
            "{names:?}"
        );
        let runs = records(dir);
        assert_eq!(runs.len(), 5, "{}", dir.display());
        let id = runs[0]["boot_id"].as_str().unwrap().to_string();
        assert!(names[i].ends_with(&id), "{} on boot {id}", names[i]);
        assert!(runs.iter().all(|r| r["boot_id"] == id.as_str()));
        boot_ids.push(id);
        check_cold_then_warm(dir, &runs);
        // The control batch, later on the same boot: a fresh process on a warm system.
        let control = records(&PathBuf::from(format!("{}-control", dir.display())));
        assert_eq!(control.len(), 5);
        assert!(control.iter().all(|r| r["child_io"]["read_bytes"] == 0));
        assert!(control[0]["uptime_s"].as_f64() > runs[4]["uptime_s"].as_f64());
    }
    boot_ids.sort();
    boot_ids.dedup();
    assert_eq!(boot_ids.len(), 3, "three different boot IDs: {boot_ids:?}");
    let events = events(&ct);
    assert_eq!(
        event_kinds(&ct),
        [
            "armed",
            "started",
            "ended",
            "rebooting",
            "started",
            "ended",
            "rebooting",
            "started",
            "ended",
            "disarmed"
        ]
    );
    assert_eq!(events[9]["why"], "all 3 boots have run");
    let last = vm.consoles.last().unwrap();
    assert!(
        last.contains("not armed"),
        "status after the last boot:\n{last}"
    );
    let state = vm.disk("/state");
    let left: Vec<_> = std::fs::read_dir(&state).unwrap().collect();
    assert!(left.is_empty(), "the state directory is emptied: {left:?}");
    check_report(&ct);
}

/// The first run of a boot read the workload from the disk; the warm runs read nothing.
fn check_cold_then_warm(dir: &Path, runs: &[Value]) {
    let read = |r: &Value| r["child_io"]["read_bytes"].as_u64().unwrap();
    let pgpgin_kib = |r: &Value| r["system_delta"]["pgpgin"].as_u64().unwrap();
    let data = (FILES * FILE_BYTES) as u64;
    assert_eq!(runs[0]["role"], "first");
    assert!(
        read(&runs[0]) >= data && pgpgin_kib(&runs[0]) >= data / 1024,
        "{}: the first run read {} bytes, pgpgin {} KiB",
        dir.display(),
        read(&runs[0]),
        pgpgin_kib(&runs[0])
    );
    for r in &runs[1..] {
        assert_eq!(
            read(r),
            0,
            "{}: a warm run read from the disk",
            dir.display()
        );
    }
    for r in runs {
        let up = r["uptime_s"].as_f64().unwrap();
        assert!(up > 0.0 && up < 600.0, "time since boot {up}");
    }
    // Kernel 6.1 in a TCG guest: no cachestat (the residency came through mincore, above) and
    // no hardware PMU — its events are null with the reason, the software ones counted.
    let counter = |name: &str| {
        runs[0]["counters"]
            .as_array()
            .and_then(|c| c.iter().find(|e| e["event"] == name))
            .cloned()
            .unwrap_or_else(|| panic!("no {name} in {}", runs[0]["counters"]))
    };
    assert!(counter("task-clock")["value"].as_f64().unwrap() > 0.0);
    let instructions = counter("instructions");
    assert!(
        instructions["value"].is_null() && instructions["unavailable_reason"].is_string(),
        "{instructions}"
    );
    // What made it cold is the boot itself: nothing written to drop_caches since, no refault.
    let batch: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("batch.json")).unwrap()).unwrap();
    let cause = &batch["first_cold_cause"];
    assert_eq!(cause["cause"], "boot", "{}: {cause}", dir.display());
    assert_eq!(cause["since_boot"]["drop_pagecache"], 0, "{cause}");
    let facts: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("boot.json")).unwrap()).unwrap();
    assert!(facts["batch"]["before"]["page_cache_kib"]
        .as_u64()
        .is_some());
    assert_eq!(facts["batch"]["exit_code"], 0);
    assert_eq!(facts["program_files"][0]["role"], "executable");
    assert!(facts["program_files"][0]["inode"].as_u64().is_some());
}

/// `report DIR` on the host shows the three boots and the penalty's interval across them.
fn check_report(ct: &Path) {
    let out = Command::new(env!("CARGO_BIN_EXE_coldtrace"))
        .arg("report")
        .arg(ct)
        .env("COLUMNS", "80")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    eprintln!("--- report:\n{text}");
    assert!(out.status.success(), "{out:?}");
    assert!(text.contains("3 boots"), "{text}");
    assert!(text.contains("95 % interval"), "{text}");
}

#[test]
#[ignore = "boots a VM under qemu (about a minute): .ci/run runs it with --ignored"]
fn a_boot_killed_mid_batch_disarms_at_the_next_boot_instead_of_running_again() {
    let tmp = TempDir::new("boot-vm-killed");
    let arm = "/bin/coldtrace boot arm --boots 3 --reboot='sync; reboot -f' -o /results/ct \
               -n 3 -- /bin/sleep 20\n";
    let mut vm = Vm::new(&tmp, arm);
    vm.boot(None);
    vm.boot(Some(("the batch starts", Duration::from_secs(3))));
    let next = vm.boot(None);
    assert!(
        next.contains("never ended it") && next.contains("boot run exit 1"),
        "the next boot disarms:\n{next}"
    );
    assert!(
        next.contains("powering off"),
        "and does not reboot:\n{next}"
    );
    let ct = vm.results("/ct");
    keep(&vm, "killed");
    let events = events(&ct);
    assert_eq!(event_kinds(&ct), ["armed", "started", "disarmed"]);
    let why = events[2]["why"].as_str().unwrap();
    assert!(
        why.starts_with("boot 1 (boot ID ") && why.contains("never ended"),
        "{why}"
    );
    let dirs: Vec<String> = std::fs::read_dir(&ct)
        .unwrap()
        .filter_map(|e| {
            let e = e.unwrap();
            e.path()
                .is_dir()
                .then(|| e.file_name().to_string_lossy().into_owned())
        })
        .collect();
    // The killed boot's own directory may or may not have reached the disk (nothing synced
    // it before the kill); no other boot's batch ever started.
    assert!(
        dirs.iter().all(|d| d.starts_with("boot-01-")),
        "no second batch: {dirs:?}"
    );
    let left: Vec<_> = std::fs::read_dir(vm.disk("/state")).unwrap().collect();
    assert!(left.is_empty(), "the state directory is emptied: {left:?}");
}

#[test]
#[ignore = "boots a VM under qemu: .ci/run runs it with --ignored"]
fn the_kernel_command_line_word_disarms_from_the_boot_loader() {
    let tmp = TempDir::new("boot-vm-cmdline");
    let mut vm = Vm::new(&tmp, ARM);
    vm.boot(None);
    vm.cmdline = "quiet coldtrace.disarm".into();
    let next = vm.boot(None);
    assert!(
        next.contains("disarmed: the kernel command line holds coldtrace.disarm"),
        "{next}"
    );
    assert!(
        next.contains("boot run exit 1") && next.contains("powering off"),
        "{next}"
    );
    let ct = vm.results("/ct");
    assert_eq!(event_kinds(&ct), ["armed", "disarmed"], "nothing ran");
}

#[test]
#[ignore = "needs systemd-analyze (apt-get install systemd): .ci/run runs it with --ignored"]
fn the_unit_boot_arm_would_install_passes_systemd_analyze_verify() {
    let tmp = TempDir::new("boot-unit");
    let out = Command::new(env!("CARGO_BIN_EXE_coldtrace"))
        .current_dir(tmp.path())
        .args([
            "boot",
            "arm",
            "--dry-run",
            "--state-dir",
            "st",
            "--unit-dir",
            "units",
        ])
        .args([
            "--after",
            "network-online.target",
            "-o",
            "res",
            "-n",
            "5",
            "--",
            "true",
        ])
        .env("COLDTRACE_STATE_DIR", "")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let start = text.find("# Installed by").expect("the unit");
    let end = text.find("WantedBy=multi-user.target\n").expect("its end") + 27;
    let unit = &text[start..end];
    let exec = unit.lines().find(|l| l.starts_with("ExecStart=")).unwrap();
    let real = std::fs::canonicalize(env!("CARGO_BIN_EXE_coldtrace")).unwrap();
    assert!(exec.starts_with(&format!(
        "ExecStart={} boot run --state-dir ",
        real.display()
    )));
    let path = tmp.join("coldtrace-boot.service");
    std::fs::write(&path, unit).unwrap();
    let verify = Command::new(tool("systemd-analyze", "systemd"))
        .arg("verify")
        .arg(&path)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&verify.stderr).to_string()
        + &String::from_utf8_lossy(&verify.stdout);
    assert!(
        verify.status.success() && said.trim().is_empty(),
        "{said}\n{unit}"
    );
    // The same check fails where it should: a unit naming a program that is not there.
    std::fs::write(
        &path,
        unit.replace(&real.display().to_string(), "/no/such/coldtrace"),
    )
    .unwrap();
    let bad = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        !bad.status.success(),
        "systemd-analyze verify accepted a missing ExecStart"
    );
}

/// The unit's own test: a Debian root file system with systemd (mmdebstrap), coldtrace armed
/// into it from a chroot with `--unit-dir` (as an image is prepared: no systemd runs there),
/// the power-off that ends the test as a unit ordered after coldtrace's.
const END_UNIT: &str = "[Unit]
Description=coldtrace VM test: say when the file systems were up, power off once disarmed
After=coldtrace-boot.service multi-user.target
[Service]
Type=oneshot
ExecStart=/usr/local/bin/coldtrace-vm-end
[Install]
WantedBy=multi-user.target
";
const END_SCRIPT: &str = "#!/bin/sh
at() { systemctl show -P ActiveEnterTimestampMonotonic \"$1\"; }
echo \"coldtrace-vm: local-fs.target at $(at local-fs.target) us, remote-fs.target at $(at remote-fs.target) us\" > /dev/console
if [ ! -e /var/lib/coldtrace/boot/state.json ]; then
  echo 'coldtrace-vm: powering off' > /dev/console
  systemctl poweroff
fi
";

fn run(command: &mut Command, what: &str) {
    let out = command.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(out.status.success(), "{what}: {out:?}");
}

/// The batch directory of boot `boot` in `ct`.
fn last_boot_dir(ct: &Path, boot: usize) -> PathBuf {
    let prefix = format!("boot-0{boot}-");
    std::fs::read_dir(ct)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            name.starts_with(&prefix) && !name.ends_with("-control")
        })
        .unwrap_or_else(|| panic!("no boot {boot} in {}", ct.display()))
}

/// The root file system's coldtrace, workload and end unit.
fn populate(root: &Path) {
    std::fs::copy(
        env!("CARGO_BIN_EXE_coldtrace"),
        root.join("usr/local/bin/coldtrace"),
    )
    .unwrap();
    std::fs::create_dir_all(root.join("opt/workload/data")).unwrap();
    std::fs::copy(
        tool("busybox", "busybox-static"),
        root.join("opt/workload/cat"),
    )
    .unwrap();
    for i in 0..FILES {
        let name = root.join(format!("opt/workload/data/{}", (b'a' + i as u8) as char));
        std::fs::write(name, bytes(i as u64 + 7, FILE_BYTES)).unwrap();
    }
    let units = root.join("etc/systemd/system");
    std::fs::write(units.join("coldtrace-vm-end.service"), END_UNIT).unwrap();
    let script = root.join("usr/local/bin/coldtrace-vm-end");
    std::fs::write(&script, END_SCRIPT).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::create_dir_all(units.join("multi-user.target.wants")).unwrap();
    std::os::unix::fs::symlink(
        "/etc/systemd/system/coldtrace-vm-end.service",
        units.join("multi-user.target.wants/coldtrace-vm-end.service"),
    )
    .unwrap();
}

/// `coldtrace boot arm` run in a chroot of `root` (with /proc), the unit put in its
/// /etc/systemd/system by `--unit-dir`.
fn arm_in_chroot(root: &Path) {
    run(
        Command::new("mount")
            .args(["-t", "proc", "proc"])
            .arg(root.join("proc")),
        "mount",
    );
    let armed = Command::new("chroot")
        .arg(root)
        .args([
            "/bin/sh",
            "-c",
            "cd /opt/workload && /usr/local/bin/coldtrace boot arm \
               --unit-dir /etc/systemd/system --boots 2 --reboot -o /var/results/ct -n 3 \
               --watch /opt/workload --counters -- /opt/workload/cat data/a data/b data/c data/d",
        ])
        .output();
    run(Command::new("umount").arg(root.join("proc")), "umount");
    let armed = armed.unwrap();
    assert!(armed.status.success(), "arming in the chroot: {armed:?}");
}

/// A Debian root file system with systemd, the workload, coldtrace armed for 2 boots with
/// the default `--reboot` (`systemctl reboot`), in an ext4 image.
fn systemd_vm(tmp: &TempDir) -> Vm {
    assert!(
        rustix::process::geteuid().is_root(),
        "the systemd VM needs root (mmdebstrap --mode=root, chroot, mount)"
    );
    let dir = tmp.path().to_path_buf();
    let root = dir.join("root");
    let codename = std::fs::read_to_string("/etc/os-release")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VERSION_CODENAME=").map(str::to_owned))
        .unwrap_or_else(|| "bookworm".into());
    run(
        Command::new(tool("mmdebstrap", "mmdebstrap"))
            .args([
                "--quiet",
                "--variant=minbase",
                "--include=systemd-sysv,udev",
            ])
            .args(["--mode=root", &codename])
            .arg(&root),
        "mmdebstrap",
    );
    populate(&root);
    arm_in_chroot(&root);
    let image = dir.join("root.img");
    let out = Command::new(tool("mkfs.ext4", "e2fsprogs"))
        .args(["-q", "-F", "-d"])
        .arg(&root)
        .arg(&image)
        .arg("1G")
        .output()
        .unwrap();
    assert!(out.status.success(), "mkfs.ext4: {out:?}");
    let (kernel, release) = kernel();
    let initrd = PathBuf::from(format!("/boot/initrd.img-{release}"));
    assert!(initrd.exists(), "{}: missing", initrd.display());
    Vm {
        dir,
        kernel,
        initrd,
        disk: image.clone(),
        results: image,
        consoles: Vec::new(),
        cmdline: "root=/dev/vda rw".into(),
        memory_mib: 1024,
    }
}

#[test]
#[ignore = "builds a Debian root file system (mmdebstrap, root) and boots systemd under qemu \
            (about 5 minutes): .ci/run runs it with --ignored"]
fn under_systemd_the_unit_runs_after_the_file_systems_and_reboots_through_systemctl() {
    let tmp = TempDir::new("boot-vm-systemd");
    let mut vm = systemd_vm(&tmp);
    vm.boot_until_off(4);
    assert_eq!(
        vm.consoles.len(),
        2,
        "two armed boots, the second powers off"
    );
    let ct = vm.results("/var/results/ct");
    keep(&vm, "systemd");
    assert_eq!(
        event_kinds(&ct),
        [
            "armed",
            "started",
            "ended",
            "rebooting",
            "started",
            "ended",
            "disarmed"
        ]
    );
    assert_eq!(events(&ct)[3]["why"], "systemctl reboot");
    let mut ids = Vec::new();
    for boot in 1..=2 {
        let dir = last_boot_dir(&ct, boot);
        let runs = records(&dir);
        check_cold_then_warm(&dir, &runs);
        ids.push(runs[0]["boot_id"].as_str().unwrap().to_string());
    }
    assert_ne!(ids[0], ids[1]);
    // On the last boot (the first reboots before the end unit runs), the unit ran after the
    // local and remote file systems were up.
    let console = vm.consoles.last().unwrap();
    let at = |target: &str| -> f64 {
        let after = console
            .split(&format!("{target} at "))
            .nth(1)
            .unwrap_or_else(|| panic!("the end unit said nothing of {target}:\n{console}"));
        after.split(' ').next().unwrap().parse::<f64>().unwrap() / 1e6
    };
    let last = last_boot_dir(&ct, 2);
    let facts: Value =
        serde_json::from_str(&std::fs::read_to_string(last.join("boot.json")).unwrap()).unwrap();
    let started = facts["batch"]["before"]["uptime_s"].as_f64().unwrap();
    for target in ["local-fs.target", "remote-fs.target"] {
        assert!(
            at(target) > 0.0 && at(target) < started,
            "{target} at {} s, batch at {started} s",
            at(target)
        );
    }
    let units = vm.disk("/etc/systemd/system");
    assert!(
        !units.join("coldtrace-boot.service").exists(),
        "the unit is removed"
    );
    assert!(std::fs::symlink_metadata(
        units.join("multi-user.target.wants/coldtrace-boot.service")
    )
    .is_err());
    let state = vm.disk("/var/lib/coldtrace");
    assert!(!state.join("boot").exists(), "the state is removed");
}
