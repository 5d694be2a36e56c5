//! The child's discipline, checked rather than promised: `child_entry` — the code that runs in
//! a `CLONE_VM | CLONE_VFORK` child on the parent's memory — may reach nothing but its own
//! functions, system calls (`syscall`, `svc #0`) and memcpy/memset. Not a panic path, not the
//! allocator, not an indirect call (an unknown target could be anything, a panic hook
//! included).
//!
//! The check disassembles with `objdump -d` (binutils) and follows static control flow from
//! `child_entry`: fall-through, branches, direct calls and tail jumps. Blocks that only
//! unwinding could reach (the abort-on-unwind pad of an `extern "C"` fn) are not reachable
//! without a call, and every call is checked. Three builds per architecture: a debug test
//! binary (overflow checks, UB checks, no inlining unless forced), the `release-symbols`
//! profile (the shipped optimisation with symbols kept), built into its own target directory,
//! and the spawner program as coldtrace's build script compiles it, symbols kept (its children
//! run the same `raw/child.rs`).
//!
//! x86_64: this test binary and builds for this host. aarch64: cross-built for
//! `aarch64-unknown-linux-musl` (linked with the toolchain's rust-lld) and disassembled with
//! `aarch64-linux-gnu-objdump` (binutils-aarch64-linux-gnu). The compiler's machine outliner
//! moves common instruction sequences of `child_entry` into `OUTLINED_FUNCTION_*` helpers at
//! `opt-level = "z"`; the check follows them like the child's own functions. The aarch64
//! checks need the aarch64 target (they add it with rustup) and that package, and build
//! coldtrace once more: they are `#[ignore]`d, so that `cargo test` stays the README's
//! command, and `.ci/run` runs them with `-- --ignored`. Run by hand, they fail — never skip —
//! when a tool is missing, naming it.
#![forbid(unsafe_code)]
#![cfg(target_arch = "x86_64")]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A function of the disassembly: its instructions as (address, text).
struct Function {
    name: String,
    start: u64,
    end: u64,
    insns: Vec<(u64, String)>,
}

/// The architecture a binary is disassembled for.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Arch {
    X86_64,
    Aarch64,
}

/// What one instruction does to the control flow.
#[derive(Debug, PartialEq, Eq)]
enum Flow {
    /// Falls through to the next instruction.
    Next,
    /// A direct call: the callee runs, then the next instruction.
    Call(u64),
    /// A direct jump: no fall-through.
    Jump(u64),
    /// A conditional direct branch: the target or the next instruction.
    Branch(u64),
    /// A call or jump through a register or memory.
    Indirect,
    /// Returns or traps (`ret`, `ud2`, `udf`): nothing after it on this path.
    End,
    /// Never allowed in the child (a debugger trap, a hypervisor call).
    Forbidden,
}

/// The target of a direct branch: the address right before ` <name>` in its operands
/// (`jmp 9c21b <name+0x1>`, `cbz x0, 21089c <name+0x140>`).
fn direct_target(operands: &str) -> Option<u64> {
    let before = &operands[..operands.find(" <")?];
    let last = before.rsplit([' ', ',', '\t']).next()?;
    u64::from_str_radix(last, 16).ok()
}

impl Arch {
    fn objdump(self) -> (&'static str, &'static [&'static str], &'static str) {
        match self {
            Arch::X86_64 => ("objdump", &["-M", "att"], "binutils"),
            Arch::Aarch64 => (
                "aarch64-linux-gnu-objdump",
                &[],
                "binutils-aarch64-linux-gnu",
            ),
        }
    }

    fn flow(self, insn: &str) -> Flow {
        let insn = insn.split("//").next().unwrap_or(insn).trim();
        let (op, operands) = insn
            .split_once([' ', '\t'])
            .map_or((insn, ""), |(o, r)| (o, r.trim()));
        let op = op.trim_start_matches("notrack").trim();
        let target = direct_target(operands);
        match self {
            Arch::X86_64 => match op {
                _ if op.starts_with("call") => target.map_or(Flow::Indirect, Flow::Call),
                _ if op.starts_with("jmp") => target.map_or(Flow::Indirect, Flow::Jump),
                _ if op.starts_with('j') => target.map_or(Flow::Indirect, Flow::Branch),
                _ if op.starts_with("ret") || op == "ud2" || op.starts_with("hlt") => Flow::End,
                "int3" | "int" | "sysenter" => Flow::Forbidden,
                _ => Flow::Next,
            },
            Arch::Aarch64 => match op {
                "bl" => target.map_or(Flow::Indirect, Flow::Call),
                "b" => target.map_or(Flow::Indirect, Flow::Jump),
                "cbz" | "cbnz" | "tbz" | "tbnz" => target.map_or(Flow::Indirect, Flow::Branch),
                _ if op.starts_with("b.") => target.map_or(Flow::Indirect, Flow::Branch),
                // LLVM's trap (x86_64's `ud2`); any other `brk` is a debugger's breakpoint.
                "brk" if operands == "#0x1" => Flow::End,
                "ret" | "udf" => Flow::End,
                "brk" | "hlt" | "hvc" | "smc" | "eret" => Flow::Forbidden,
                _ if op.starts_with("br") || op.starts_with("blr") => Flow::Indirect,
                _ => Flow::Next,
            },
        }
    }

    /// Bytes of stack one instruction takes: x86_64's `push` and `sub $n,%rsp`, aarch64's
    /// `sub sp, sp, #n` and stores that move sp down first (`stp x29, x30, [sp, #-64]!`).
    fn stack_bytes(self, insn: &str) -> u64 {
        let hex = |imm: &str| u64::from_str_radix(imm.trim_start_matches("0x"), 16).ok();
        let (op, operands) = insn.split_once([' ', '\t']).unwrap_or((insn, ""));
        let operands = operands.split("//").next().unwrap_or("").trim();
        match self {
            Arch::X86_64 => match op {
                "push" => 8,
                "sub" => operands
                    .strip_suffix(",%rsp")
                    .and_then(|imm| imm.strip_prefix('$'))
                    .and_then(hex)
                    .unwrap_or(0),
                _ => 0,
            },
            Arch::Aarch64 => {
                if op == "sub" && operands.starts_with("sp, sp, #") {
                    let imm = &operands["sp, sp, #".len()..];
                    let (n, shift) = match imm.split_once(", lsl #") {
                        Some((n, s)) => (n, s.parse().unwrap_or(0)),
                        None => (imm, 0),
                    };
                    hex(n).map_or(0, |n| n << shift)
                } else if operands.ends_with("]!") && operands.contains("[sp, #-") {
                    let n = operands
                        .rsplit("#-")
                        .next()
                        .unwrap_or("")
                        .trim_end_matches("]!");
                    n.parse().unwrap_or(0)
                } else {
                    0
                }
            }
        }
    }

    /// Bytes a call pushes (x86_64's return address; aarch64's `bl` keeps it in x30).
    fn return_address_bytes(self) -> u64 {
        match self {
            Arch::X86_64 => 8,
            Arch::Aarch64 => 0,
        }
    }
}

fn disassemble(binary: &Path, arch: Arch) -> Vec<Function> {
    let (tool, options, package) = arch.objdump();
    let out = Command::new(tool)
        .args(["-d", "--no-show-raw-insn", "-C"])
        .args(options)
        .arg(binary)
        .output()
        .unwrap_or_else(|e| panic!("run {tool}: {e} (apt-get install {package}; .ci/run does)"));
    assert!(out.status.success(), "objdump failed: {:?}", out);
    let text = String::from_utf8_lossy(&out.stdout);
    let mut functions: Vec<Function> = Vec::new();
    for line in text.lines() {
        if let Some((addr, rest)) = line.split_once(" <") {
            if let (Ok(start), Some(name)) =
                (u64::from_str_radix(addr, 16), rest.strip_suffix(">:"))
            {
                functions.push(Function {
                    name: name.to_string(),
                    start,
                    end: start,
                    insns: Vec::new(),
                });
                continue;
            }
        }
        let Some((addr, insn)) = line.trim_start().split_once(":\t") else {
            continue;
        };
        let (Ok(addr), Some(f)) = (u64::from_str_radix(addr, 16), functions.last_mut()) else {
            continue;
        };
        f.insns.push((addr, insn.trim().to_string()));
        f.end = addr + 1;
    }
    functions
}

/// The child's module in the library and in the spawner program.
const CHILD_MODULES: [&str; 2] = [
    "coldtrace_syscalls::raw::child::",
    "coldtrace_spawner::raw::child::",
];

fn allowed_callee(name: &str) -> bool {
    CHILD_MODULES.iter().any(|m| name.starts_with(m))
        || name.starts_with("OUTLINED_FUNCTION_")
        || matches!(name, "memcpy" | "memset" | "memmove")
}

/// Walks every instruction reachable from `entry`; returns the reachable functions, or the
/// first forbidden thing found with the path to it.
fn check_child_code(functions: &[Function], arch: Arch) -> Result<BTreeSet<String>, String> {
    let by_start: BTreeMap<u64, usize> = functions
        .iter()
        .enumerate()
        .map(|(i, f)| (f.start, i))
        .collect();
    let entry = functions
        .iter()
        .position(|f| {
            CHILD_MODULES
                .iter()
                .any(|m| f.name == format!("{m}child_entry"))
        })
        .ok_or("no child_entry symbol in the binary")?;
    let mut seen_functions = BTreeSet::new();
    let mut pending = vec![entry];
    while let Some(fi) = pending.pop() {
        let f = &functions[fi];
        if !seen_functions.insert(f.name.clone()) {
            continue;
        }
        if matches!(f.name.as_str(), "memcpy" | "memset" | "memmove") {
            continue; // the C library's; leaves, as the allow-list says
        }
        let index: BTreeMap<u64, usize> = f
            .insns
            .iter()
            .enumerate()
            .map(|(i, (a, _))| (*a, i))
            .collect();
        // A call into another function (checked, then followed), or a jump within this one.
        let mut callee = |addr: u64, insn: &str, target: u64| -> Result<(), String> {
            let ti = by_start.get(&target).ok_or_else(|| {
                format!(
                    "{}: {addr:x}: `{insn}` into the middle of a function",
                    f.name
                )
            })?;
            let name = &functions[*ti].name;
            if !allowed_callee(name) {
                return Err(format!("{}: {addr:x}: `{insn}` reaches {name}", f.name));
            }
            pending.push(*ti);
            Ok(())
        };
        let mut seen = BTreeSet::new();
        let mut work = vec![0usize];
        while let Some(mut i) = work.pop() {
            while let Some((addr, insn)) = f.insns.get(i) {
                if !seen.insert(i) {
                    break;
                }
                match arch.flow(insn) {
                    Flow::Next => {}
                    Flow::Call(target) => callee(*addr, insn, target)?,
                    Flow::Jump(target) | Flow::Branch(target) => match index.get(&target) {
                        Some(&ti) => work.push(ti),
                        None => callee(*addr, insn, target)?,
                    },
                    Flow::Indirect => {
                        return Err(format!("{}: {addr:x}: indirect `{insn}`", f.name))
                    }
                    Flow::Forbidden => return Err(format!("{}: {addr:x}: `{insn}`", f.name)),
                    Flow::End => break,
                }
                if matches!(arch.flow(insn), Flow::Jump(_)) {
                    break; // no fall-through
                }
                i += 1;
            }
        }
    }
    Ok(seen_functions)
}

/// The least stack a child is given: `MIN_STACK_BYTES` in `src/clone_args.rs` (the spawner's
/// stack has no guard page below it, so this bound is what keeps a child inside it).
const MIN_STACK_BYTES: u64 = 16 * 1024;

/// An upper bound of the stack the child code can use: the frames of every function it
/// reaches added up, as if all were on one call chain — every instruction that moves the stack
/// pointer down, and the return address of the call into it (x86_64). [`check_child_code`]
/// lets no indirect call through, and the child's functions do not recurse (each is
/// `#[inline(always)]` into `child_entry`).
fn stack_bound(functions: &[Function], reached: &BTreeSet<String>, arch: Arch) -> u64 {
    functions
        .iter()
        .filter(|f| reached.contains(&f.name))
        .map(|f| {
            let own: u64 = f.insns.iter().map(|(_, i)| arch.stack_bytes(i)).sum();
            own + arch.return_address_bytes()
        })
        .sum()
}

fn assert_clean(binary: &Path, what: &str, arch: Arch) {
    let functions = disassemble(binary, arch);
    match check_child_code(&functions, arch) {
        Ok(reached) => {
            let stack = stack_bound(&functions, &reached, arch);
            eprintln!(
                "{what}: child_entry reaches only {reached:?}, in at most {stack} bytes of stack"
            );
            assert!(
                stack < MIN_STACK_BYTES,
                "{what}: the child code may use {stack} bytes of stack, its stack has {MIN_STACK_BYTES}"
            );
        }
        Err(e) => panic!("{what} ({}): the child code {e}", binary.display()),
    }
}

/// Links the child code into this test binary, so that its debug build can be checked.
fn spawn_true() {
    let program =
        coldtrace_syscalls::Program::new(c"/bin/true".into(), vec![c"true".into()], Vec::new());
    let mut stack = coldtrace_syscalls::ChildStack::new().expect("map a child stack");
    let child = program
        .spawn(&coldtrace_syscalls::SpawnOptions::default(), &mut stack)
        .expect("spawn /bin/true");
    assert_eq!(child.reap().expect("reap").0.code(), Some(0));
}

/// The workspace root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The toolchain's rust-lld links a cross build, as `.ci/release` does.
const AARCH64: &str = "aarch64-unknown-linux-musl";
const LINKER: &str = "CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_LINKER";

/// The aarch64 target and disassembler, or a panic that names what is missing.
fn aarch64_tools() {
    let added = Command::new("rustup")
        .args(["target", "add", AARCH64])
        .output()
        .expect("run rustup");
    assert!(
        added.status.success(),
        "rustup target add {AARCH64}: {added:?}"
    );
    let (tool, _, package) = Arch::Aarch64.objdump();
    let found = Command::new(tool).arg("--version").output();
    assert!(
        found.is_ok_and(|o| o.status.success()),
        "{tool} is missing: apt-get install {package}"
    );
}

/// coldtrace in the `release-symbols` profile for `triple`, in its own target directory.
fn release_symbols(triple: &str) -> PathBuf {
    let target_dir = root().join("target").join("disassembly");
    let status = Command::new(env!("CARGO"))
        .current_dir(root())
        .args([
            "build",
            "--locked",
            "--offline",
            "--profile",
            "release-symbols",
        ])
        .args(["-p", "coldtrace", "--bin", "coldtrace", "--target", triple])
        .arg("--target-dir")
        .arg(&target_dir)
        .env_remove("RUSTFLAGS")
        .env(
            LINKER,
            std::env::var_os(LINKER).unwrap_or("rust-lld".into()),
        )
        .status()
        .expect("run cargo");
    assert!(
        status.success(),
        "cargo build --profile release-symbols --target {triple} failed"
    );
    let binary = target_dir
        .join(triple)
        .join("release-symbols")
        .join("coldtrace");
    assert!(binary.exists(), "no {}", binary.display());
    binary
}

/// The spawner program for `triple`, as the build script compiles it (src/build.rs), with
/// symbols kept.
fn spawner(triple: &str) -> PathBuf {
    let out = root()
        .join("target/disassembly")
        .join(format!("coldtrace-spawner-{triple}"));
    std::fs::create_dir_all(out.parent().expect("a directory")).expect("make the directory");
    let mut rustc = Command::new("rustc");
    if triple == AARCH64 {
        rustc.args(["-C", "linker=rust-lld"]);
    }
    let status = rustc
        .args(["--edition", "2021", "--crate-type", "bin", "--crate-name"])
        .arg("coldtrace_spawner")
        .args(["--target", triple])
        .args(["-C", "opt-level=z", "-C", "panic=abort", "-C", "lto=fat"])
        .args([
            "-C",
            "codegen-units=1",
            "-C",
            "strip=none",
            "-C",
            "debuginfo=0",
        ])
        .args(["-C", "relocation-model=static", "-D", "warnings", "-l", "c"])
        .arg("-o")
        .arg(&out)
        .arg(root().join("syscalls/src/spawner/main.rs"))
        .status()
        .expect("run rustc");
    assert!(status.success(), "rustc on the spawner for {triple} failed");
    out
}

/// The syscalls crate's unit-test binary for aarch64 (a debug build that spawns children).
fn aarch64_debug_test_binary() -> PathBuf {
    let out = Command::new(env!("CARGO"))
        .current_dir(root())
        .args([
            "test",
            "--locked",
            "--offline",
            "--no-run",
            "-p",
            "coldtrace-syscalls",
        ])
        .args(["--lib", "--target", AARCH64, "--message-format=json"])
        .env_remove("RUSTFLAGS")
        .env(
            LINKER,
            std::env::var_os(LINKER).unwrap_or("rust-lld".into()),
        )
        .output()
        .expect("run cargo");
    assert!(
        out.status.success(),
        "cargo test --no-run --target {AARCH64} failed"
    );
    let messages = String::from_utf8_lossy(&out.stdout);
    let executable = messages
        .lines()
        .filter(|l| l.contains("\"compiler-artifact\"") && l.contains("\"test\":true"))
        .find_map(|l| {
            let at = l.find("\"executable\":\"")? + "\"executable\":\"".len();
            Some(l[at..].split('"').next()?.to_string())
        })
        .expect("the unit-test binary in cargo's messages");
    PathBuf::from(executable)
}

#[test]
fn the_debug_child_code_reaches_only_syscalls_and_memcpy() {
    spawn_true();
    let me = std::env::current_exe().expect("the test binary");
    assert_clean(&me, "debug", Arch::X86_64);
}

#[test]
fn the_optimised_child_code_reaches_only_syscalls_and_memcpy() {
    let binary = release_symbols("x86_64-unknown-linux-musl");
    assert_clean(&binary, "release-symbols", Arch::X86_64);
}

#[test]
fn the_spawner_child_code_reaches_only_syscalls_and_memcpy() {
    let binary = spawner("x86_64-unknown-linux-musl");
    assert_clean(&binary, "spawner", Arch::X86_64);
}

#[test]
#[ignore = "cross-builds for aarch64: run by .ci/run with -- --ignored"]
fn the_aarch64_debug_child_code_reaches_only_syscalls_and_memcpy() {
    aarch64_tools();
    let binary = aarch64_debug_test_binary();
    assert_clean(&binary, "aarch64 debug", Arch::Aarch64);
}

#[test]
#[ignore = "cross-builds for aarch64: run by .ci/run with -- --ignored"]
fn the_aarch64_optimised_child_code_reaches_only_syscalls_and_memcpy() {
    aarch64_tools();
    let binary = release_symbols(AARCH64);
    assert_clean(&binary, "aarch64 release-symbols", Arch::Aarch64);
}

#[test]
#[ignore = "cross-builds for aarch64: run by .ci/run with -- --ignored"]
fn the_aarch64_spawner_child_code_reaches_only_syscalls_and_memcpy() {
    aarch64_tools();
    let binary = spawner(AARCH64);
    assert_clean(&binary, "aarch64 spawner", Arch::Aarch64);
}

/// The checker itself: it must see a forbidden call (a test that could fail).
#[test]
fn the_checker_rejects_a_panic_path_and_an_indirect_call() {
    let f = |name: &str, start: u64, insns: &[&str]| Function {
        name: name.into(),
        start,
        end: start + insns.len() as u64,
        insns: insns
            .iter()
            .enumerate()
            .map(|(i, s)| (start + i as u64, s.to_string()))
            .collect(),
    };
    let entry = "coldtrace_syscalls::raw::child::child_entry";
    let panics = [
        f(
            entry,
            0x10,
            &["syscall", "call   20 <core::panicking::panic>", "ret"],
        ),
        f("core::panicking::panic", 0x20, &["ret"]),
    ];
    assert!(check_child_code(&panics, Arch::X86_64)
        .unwrap_err()
        .contains("core::panicking::panic"));
    let indirect = [f(entry, 0x10, &["je     12 <x>", "call   *%rax", "ret"])];
    assert!(check_child_code(&indirect, Arch::X86_64)
        .unwrap_err()
        .contains("indirect"));
    let unreachable_pad = [f(
        entry,
        0x10,
        &["syscall", "jmp    13 <x>", "call   *%rax", "ret"],
    )];
    assert!(check_child_code(&unreachable_pad, Arch::X86_64).is_ok());
    // Frames add up over every function reached: a deep one is seen.
    let deep = [
        f(
            entry,
            0x10,
            &["push   %rbp", "sub    $0x100,%rsp", "call   20 <x>"],
        ),
        f("memset", 0x20, &["sub    $0x4000,%rsp", "ret"]),
    ];
    let reached = check_child_code(&deep, Arch::X86_64).expect("only memset is called");
    assert_eq!(
        stack_bound(&deep, &reached, Arch::X86_64),
        8 + 0x100 + 8 + 0x4000 + 8
    );
}

/// The same for aarch64: `bl` to a panic, `blr`, a breakpoint (`brk #0xf000`; LLVM's trap
/// `brk #0x1` ends a path as `ud2` does); an outlined helper is followed (and
/// what it calls checked), and frames add up from `stp …, [sp, #-n]!` and `sub sp, sp, #n`.
#[test]
fn the_aarch64_checker_rejects_a_panic_path_an_indirect_call_and_a_trap() {
    let f = |name: &str, start: u64, insns: &[&str]| Function {
        name: name.into(),
        start,
        end: start + 4 * insns.len() as u64,
        insns: insns
            .iter()
            .enumerate()
            .map(|(i, s)| (start + 4 * i as u64, s.to_string()))
            .collect(),
    };
    let arm = Arch::Aarch64;
    let entry = "coldtrace_syscalls::raw::child::child_entry";
    let panics = [
        f(
            entry,
            0x10,
            &["svc\t#0x0", "bl\t40 <core::panicking::panic>", "ret"],
        ),
        f("core::panicking::panic", 0x40, &["ret"]),
    ];
    assert!(check_child_code(&panics, arm)
        .unwrap_err()
        .contains("core::panicking::panic"));
    let indirect = [f(entry, 0x10, &["cbz\tx0, 18 <x>", "blr\tx8", "ret"])];
    assert!(check_child_code(&indirect, arm)
        .unwrap_err()
        .contains("indirect"));
    let breakpoint = [f(
        entry,
        0x10,
        &["b.ne\t18 <x>  // b.any", "brk\t#0xf000", "ret"],
    )];
    assert!(check_child_code(&breakpoint, arm)
        .unwrap_err()
        .contains("brk"));
    let trap = [f(
        entry,
        0x10,
        &["b.ne\t18 <x>  // b.any", "brk\t#0x1", "ret"],
    )];
    assert!(
        check_child_code(&trap, arm).is_ok(),
        "LLVM's trap ends a path, as ud2 does"
    );
    let outlined = [
        f(
            entry,
            0x10,
            &[
                "stp\tx29, x30, [sp, #-64]!",
                "sub\tsp, sp, #0x200",
                "bl\t40 <OUTLINED_FUNCTION_1>",
                "udf\t#0x0",
            ],
        ),
        f(
            "OUTLINED_FUNCTION_1",
            0x40,
            &["mov\tx2, xzr", "b\t80 <core::panicking::panic>"],
        ),
        f("core::panicking::panic", 0x80, &["ret"]),
    ];
    assert!(check_child_code(&outlined, arm)
        .unwrap_err()
        .contains("OUTLINED_FUNCTION_1"));
    let clean = [
        f(
            entry,
            0x10,
            &[
                "stp\tx29, x30, [sp, #-64]!",
                "sub\tsp, sp, #0x1, lsl #12",
                "bl\t40 <OUTLINED_FUNCTION_1>",
                "tbnz\tw8, #31, 10 <x>",
                "udf\t#0x0",
            ],
        ),
        f(
            "OUTLINED_FUNCTION_1",
            0x40,
            &["mov\tx2, xzr", "b\t80 <memset>"],
        ),
        f("memset", 0x80, &["ret"]),
    ];
    let reached = check_child_code(&clean, arm).expect("only an outlined helper and memset");
    assert_eq!(stack_bound(&clean, &reached, arm), 64 + 0x1000);
}
