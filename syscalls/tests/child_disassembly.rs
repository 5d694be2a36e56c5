//! The child's discipline, checked rather than promised: `child_entry` — the code that runs in
//! a `CLONE_VM | CLONE_VFORK` child on the parent's memory — may reach nothing but its own
//! functions, `syscall` instructions and memcpy/memset. Not a panic path, not the allocator,
//! not an indirect call (an unknown target could be anything, a panic hook included).
//!
//! The check disassembles with `objdump -d` (binutils) and follows static control flow from
//! `child_entry`: fall-through, branches, direct calls and tail jumps. Blocks that only
//! unwinding could reach (the abort-on-unwind pad of an `extern "C"` fn) are not reachable
//! without a call, and every call is checked. Three builds: this test binary (debug: overflow
//! checks, UB checks, no inlining unless forced), the `release-symbols` profile (the shipped
//! optimisation with symbols kept), built into its own target directory, and the spawner
//! program as coldtrace's build script compiles it, symbols kept (its children run the same
//! `raw/child.rs`).
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

fn disassemble(binary: &Path) -> Vec<Function> {
    let out = Command::new("objdump")
        .args(["-d", "--no-show-raw-insn", "-C", "-M", "att"])
        .arg(binary)
        .output()
        .expect("run objdump (binutils; .ci/run installs it)");
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

/// The target of a direct `call`/`jmp`/`jcc`: `jmp 9c21b <name+0x1>` → 0x9c21b.
fn direct_target(operands: &str) -> Option<u64> {
    let first = operands.split_whitespace().next()?;
    u64::from_str_radix(first, 16).ok()
}

/// The child's module in the library and in the spawner program.
const CHILD_MODULES: [&str; 2] = [
    "coldtrace_syscalls::raw::child::",
    "coldtrace_spawner::raw::child::",
];

fn allowed_callee(name: &str) -> bool {
    CHILD_MODULES.iter().any(|m| name.starts_with(m))
        || matches!(name, "memcpy" | "memset" | "memmove")
}

/// Walks every instruction reachable from `entry`; returns the reachable functions, or the
/// first forbidden thing found with the path to it.
fn check_child_code(functions: &[Function]) -> Result<BTreeSet<String>, String> {
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
        let mut seen = BTreeSet::new();
        let mut work = vec![0usize];
        while let Some(mut i) = work.pop() {
            while let Some((addr, insn)) = f.insns.get(i) {
                if !seen.insert(i) {
                    break;
                }
                let (op, operands) = insn.split_once(' ').unwrap_or((insn.as_str(), ""));
                let operands = operands.trim();
                let op = op.trim_start_matches("notrack").trim();
                if op.starts_with("call") || op.starts_with("jmp") || op.starts_with('j') {
                    let Some(target) = direct_target(operands) else {
                        return Err(format!("{}: {addr:x}: indirect `{insn}`", f.name));
                    };
                    if let Some(&ti) = index.get(&target).filter(|_| !op.starts_with("call")) {
                        work.push(ti);
                    } else {
                        let callee = by_start.get(&target).ok_or_else(|| {
                            format!(
                                "{}: {addr:x}: `{insn}` into the middle of a function",
                                f.name
                            )
                        })?;
                        let name = &functions[*callee].name;
                        if !allowed_callee(name) {
                            return Err(format!("{}: {addr:x}: `{insn}` reaches {name}", f.name));
                        }
                        pending.push(*callee);
                    }
                    if op.starts_with("jmp") {
                        break; // no fall-through
                    }
                } else if op.starts_with("ret") || op == "ud2" || op.starts_with("hlt") {
                    break;
                } else if op == "int3" || op.starts_with("int ") || op == "sysenter" {
                    return Err(format!("{}: {addr:x}: `{insn}`", f.name));
                }
                i += 1;
            }
        }
    }
    Ok(seen_functions)
}

/// The least stack a child is given: `MIN_STACK_BYTES` in `src/raw/clone.rs` (the spawner's
/// stack has no guard page below it, so this bound is what keeps a child inside it).
const MIN_STACK_BYTES: u64 = 16 * 1024;

/// An upper bound of the stack the child code can use: the frames of every function it
/// reaches added up, as if all were on one call chain — each `push`, each `sub $n,%rsp` and the
/// return address of the call into it. [`check_child_code`] lets no indirect call through, and
/// the child's functions do not recurse (each is `#[inline(always)]` into `child_entry`).
fn stack_bound(functions: &[Function], reached: &BTreeSet<String>) -> u64 {
    let frame = |f: &Function| -> u64 {
        let own: u64 = f
            .insns
            .iter()
            .map(|(_, insn)| match insn.split_once(' ') {
                Some(("push", _)) => 8,
                Some(("sub", operands)) => operands
                    .trim()
                    .strip_suffix(",%rsp")
                    .and_then(|imm| imm.strip_prefix("$0x"))
                    .and_then(|hex| u64::from_str_radix(hex, 16).ok())
                    .unwrap_or(0),
                _ => 0,
            })
            .sum();
        own + 8
    };
    functions
        .iter()
        .filter(|f| reached.contains(&f.name))
        .map(frame)
        .sum()
}

fn assert_clean(binary: &Path, what: &str) {
    let functions = disassemble(binary);
    match check_child_code(&functions) {
        Ok(reached) => {
            let stack = stack_bound(&functions, &reached);
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

#[test]
fn the_debug_child_code_reaches_only_syscalls_and_memcpy() {
    spawn_true();
    let me = std::env::current_exe().expect("the test binary");
    assert_clean(&me, "debug");
}

#[test]
fn the_optimised_child_code_reaches_only_syscalls_and_memcpy() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let target_dir = root.join("target").join("disassembly");
    let status = Command::new(env!("CARGO"))
        .current_dir(&root)
        .args([
            "build",
            "--locked",
            "--offline",
            "--profile",
            "release-symbols",
        ])
        .args(["-p", "coldtrace", "--bin", "coldtrace"])
        .arg("--target-dir")
        .arg(&target_dir)
        .env_remove("RUSTFLAGS")
        .status()
        .expect("run cargo");
    assert!(
        status.success(),
        "cargo build --profile release-symbols failed"
    );
    let triple = "x86_64-unknown-linux-musl";
    let binary: PathBuf = [&target_dir, Path::new(triple), Path::new("release-symbols")]
        .iter()
        .collect::<PathBuf>()
        .join("coldtrace");
    assert!(binary.exists(), "no {}", binary.display());
    assert_clean(&binary, "release-symbols");
}

#[test]
fn the_spawner_child_code_reaches_only_syscalls_and_memcpy() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = root.join("../target/disassembly/coldtrace-spawner");
    std::fs::create_dir_all(out.parent().expect("a directory")).expect("make the directory");
    // The build script's call (src/build.rs), with symbols kept.
    let status = Command::new("rustc")
        .args(["--edition", "2021", "--crate-type", "bin", "--crate-name"])
        .arg("coldtrace_spawner")
        .args(["--target", "x86_64-unknown-linux-musl"])
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
        .arg(root.join("src/spawner/main.rs"))
        .status()
        .expect("run rustc");
    assert!(status.success(), "rustc on the spawner failed");
    assert_clean(&out, "spawner");
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
    assert!(check_child_code(&panics)
        .unwrap_err()
        .contains("core::panicking::panic"));
    let indirect = [f(entry, 0x10, &["je     12 <x>", "call   *%rax", "ret"])];
    assert!(check_child_code(&indirect)
        .unwrap_err()
        .contains("indirect"));
    let unreachable_pad = [f(
        entry,
        0x10,
        &["syscall", "jmp    13 <x>", "call   *%rax", "ret"],
    )];
    assert!(check_child_code(&unreachable_pad).is_ok());
    // Frames add up over every function reached: a deep one is seen.
    let deep = [
        f(
            entry,
            0x10,
            &["push   %rbp", "sub    $0x100,%rsp", "call   20 <x>"],
        ),
        f("memset", 0x20, &["sub    $0x4000,%rsp", "ret"]),
    ];
    let reached = check_child_code(&deep).expect("only memset is called");
    assert_eq!(stack_bound(&deep, &reached), 8 + 0x100 + 8 + 0x4000 + 8);
}
