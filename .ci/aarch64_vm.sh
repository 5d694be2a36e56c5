#!/usr/bin/env bash
# The aarch64 child, run on aarch64: an arm64 virtual machine under qemu's TCG (-M virt -cpu
# cortex-a57, Debian's arm64 cloud kernel, a busybox initramfs built here) runs
#   - the release's aarch64 binary: a batch through the spawner and one in-process
#     (--minimal), a --timeout (143), a command's exit code (7), a missing command (127);
#   - the syscalls crate's tests built for aarch64-unknown-linux-musl: its unit tests (the
#     spawn storms, the races, waiting, the child's fallbacks) and tests/spawn.rs, pidfd.rs
#     and parent_death.rs.
# Every result is checked here, on the host, from the console; a missing tool, a boot that does
# not finish or a wrong result fails the script.
#
#   .ci/aarch64_vm.sh AARCH64_COLDTRACE_BINARY [WORK_DIR]
#
# Installs what it needs (as root, Debian): qemu-system-arm, the arm64 architecture for apt
# (the kernel and busybox-static packages are downloaded and unpacked, not installed), and the
# aarch64-unknown-linux-musl Rust target; the tests are linked with the toolchain's rust-lld.
set -euo pipefail
cd "$(dirname "$0")/.."
binary=$(realpath "${1:?usage: .ci/aarch64_vm.sh AARCH64_COLDTRACE_BINARY [WORK_DIR]}")
work=$(realpath -m "${2:-target/aarch64-vm}")
say() { printf 'aarch64 vm: %s\n' "$*" >&2; }
fail() { say "FAIL: $*"; exit 1; }
started=$(date +%s)

# --- tools, kernel and busybox -----------------------------------------------------------------
if ! command -v qemu-system-aarch64 >/dev/null; then
  apt-get update -qq && apt-get install -y -qq qemu-system-arm >/dev/null
fi
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  dpkg --add-architecture arm64
  apt-get update -qq
fi
rm -rf "$work" && mkdir -p "$work/debs" "$work/root"
kernel_pkg=$(apt-cache depends linux-image-cloud-arm64:arm64 | sed -n 's/.*Depends: \(linux-image-[^:]*\).*/\1/p' | head -1)
[ -n "$kernel_pkg" ] || fail "no arm64 cloud kernel known to apt (apt-cache depends linux-image-cloud-arm64:arm64)"
(cd "$work/debs" && apt-get download -qq "$kernel_pkg:arm64" busybox-static:arm64 2>/dev/null) ||
  fail "apt-get download $kernel_pkg:arm64 busybox-static:arm64 failed"
for deb in "$work"/debs/*.deb; do dpkg-deb -x "$deb" "$work/unpacked"; done
kernel=$(ls "$work"/unpacked/boot/vmlinuz-*)
say "kernel $(basename "$kernel"), $(dpkg-deb -f "$work"/debs/busybox-static_*.deb Package Version | tr '\n' ' ')"

# --- the syscalls crate's tests, for aarch64 ---------------------------------------------------
rustup target add aarch64-unknown-linux-musl >/dev/null 2>&1 || fail "rustup target add aarch64-unknown-linux-musl"
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_LINKER=${CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_LINKER:-rust-lld}
tests=(--lib --test spawn --test pidfd --test parent_death)
cargo test --locked -q -p coldtrace-syscalls --target aarch64-unknown-linux-musl --no-run \
  "${tests[@]}" --message-format=json >"$work/build.json" || fail "building the tests for aarch64"
mkdir -p "$work/root/t"
python3 - "$work/build.json" "$work/root/t" <<'EOF'
import json, shutil, sys
for line in open(sys.argv[1]):
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("profile", {}).get("test") and m.get("executable"):
        shutil.copy(m["executable"], f"{sys.argv[2]}/{m['target']['name'].replace('-', '_')}")
EOF
ls "$work/root/t"
cp "$binary" "$work/root/t/coldtrace"

# --- the initramfs -----------------------------------------------------------------------------
root=$work/root
mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,run}
cp "$work/unpacked/bin/busybox" "$root/bin/busybox"
cat >"$root/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s
# The tests name some programs by their Debian paths (/usr/bin/cat, /bin/sleep): every applet
# is linked in both directories.
for dir in /bin /usr/bin; do
  for f in /bin/* /usr/bin/*; do [ -e "$dir/${f##*/}" ] || ln -s /bin/busybox "$dir/${f##*/}"; done
done
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
mount -t cgroup2 cgroup2 /sys/fs/cgroup
export PATH=/usr/bin:/bin:/usr/sbin:/sbin HOME=/tmp
echo "VM-UP $(uname -m) $(uname -r) $(nproc) CPUs"
result() { echo "VM-RESULT $1 $2"; }
# Left out, for busybox: argv_is_passed_exactly runs /bin/sh with argv[0] "not-the-path"
# (busybox chooses its applet by argv[0], and runs none), and child_descriptors_are_0_1_2_and
# _keep_fds expects `ls -l /proc/self/fd` to show its own open listing (busybox's ls closes it
# before it prints).
busybox_skips="--skip argv_is_passed_exactly --skip child_descriptors_are_0_1_2_and_keep_fds"
run() {
  name=$1 binary=$2; shift 2
  echo "VM-RUN $name at $(cut -d' ' -f1 /proc/uptime) s"
  "/t/$binary" --test-threads=2 $busybox_skips "$@"; result "$name" $?
}
run storms coldtrace_syscalls storm_tests::
run races coldtrace_syscalls race_tests::
run lib_others coldtrace_syscalls --skip storm_tests:: --skip race_tests::
run spawn spawn
run pidfd pidfd
run parent_death parent_death
echo "VM-RUN coldtrace at $(cut -d' ' -f1 /proc/uptime) s"
cd /tmp
# --explain: the full view, whose spawner line says the children came from the aarch64 spawner.
/t/coldtrace run -n 3 --explain -- true; result batch $?
/t/coldtrace run --minimal -n 3 -- true; result batch_in_process $?
/t/coldtrace run -n 1 --timeout 1 -- sleep 5; result timeout $?
/t/coldtrace run -n 1 -- sh -c 'exit 7'; result exit_code $?
/t/coldtrace run -n 1 -- no-such-command; result missing $?
echo "VM-DONE at $(cut -d' ' -f1 /proc/uptime) s"
poweroff -f
EOF
chmod +x "$root/init"
python3 .ci/initramfs.py "$root" "$work/initramfs.cpio.gz"
say "initramfs $(du -h "$work/initramfs.cpio.gz" | cut -f1)"

# --- boot and read the results -----------------------------------------------------------------
console=$work/console.log
booted=$(date +%s)
timeout 1500 qemu-system-aarch64 -M virt -cpu cortex-a57 -smp 2 -m 1536 -accel tcg,thread=multi \
  -kernel "$kernel" -initrd "$work/initramfs.cpio.gz" -append "console=ttyAMA0 panic=-1 quiet" \
  -display none -monitor none -serial "file:$console" -no-reboot </dev/null ||
  fail "qemu ended with $? ($(tail -5 "$console" 2>/dev/null))"
say "the VM ran for $(($(date +%s) - booted)) s"
grep -a '^VM-\|test result\|FAILED\|panicked\|^coldtrace\|spawner:\|outcome:' "$console" >&2 || true
grep -aq '^VM-UP aarch64' "$console" || fail "the VM never came up as aarch64 (see $console)"
grep -aq '^VM-DONE' "$console" || fail "the VM did not finish (see $console)"
expect() {
  got=$(sed -n "s/^VM-RESULT $1 \([0-9]*\).*/\1/p" "$console" | tr -d '\r')
  [ "$got" = "$2" ] || fail "$1: exit status ${got:-none}, expected $2"
}
expect storms 0; expect races 0; expect lib_others 0; expect spawn 0; expect pidfd 0; expect parent_death 0
expect batch 0; expect batch_in_process 0; expect timeout 143; expect exit_code 7; expect missing 127
grep -aq 'spawner: 3 children' "$console" || fail "the batch did not run through the aarch64 spawner"
say "every result as expected, in $(($(date +%s) - started)) s"
