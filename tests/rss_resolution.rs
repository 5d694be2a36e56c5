//! A max RSS below the kernel's resolution on the built binary: a program without libc touches
//! a few pages, all held in the kernel's per-CPU counters, and its max RSS reads 0; the table
//! says the bound, not "≤0".
#![forbid(unsafe_code)]

mod common;

use common::{compile, ct, read_batch, read_records, TempDir};

/// `exit(0)` by system call, nothing else: no libc, no stack use to speak of.
#[cfg(target_arch = "x86_64")]
const NO_LIBC: &str =
    "void _start(void) { __asm__ volatile(\"mov $60, %eax\\n xor %edi, %edi\\n syscall\"); }\n";

#[cfg(target_arch = "x86_64")]
#[test]
fn a_max_rss_below_the_kernels_resolution_is_said_as_the_bound() {
    let tmp = TempDir::new("rss-resolution");
    let program = compile(tmp.path(), "nolibc", NO_LIBC, &["-nostdlib", "-static"]);
    let out = ct(
        tmp.path(),
        ["run", "-n", "3", "-o", "b", "--", program.to_str().unwrap()],
    )
    .run();
    out.expect_code(0);
    let batch = read_batch(&tmp.join("b"));
    let system = &batch["context"]["system"];
    let release = system["kernel_release"].as_str().unwrap().to_string();
    let cpus = system["cpu_count"].as_u64().unwrap();
    let page_kib = rustix::param::page_size() as u64 / 1024;
    let numbers: Vec<u64> = release
        .split(|c: char| !c.is_ascii_digit())
        .take(2)
        .map(|n| n.parse().unwrap())
        .collect();
    if (numbers[0], numbers[1]) < (6, 2) {
        assert!(system["max_rss_resolution_kib"].is_null(), "{system}");
        eprintln!("SKIP: kernel {release} keeps its RSS counters per thread, not per CPU");
        return;
    }
    // Three counters (file, anonymous, shared), each CPU holding up to batch − 1 pages.
    let bound = 3 * cpus * ((2 * cpus).max(32) - 1) * page_kib;
    assert_eq!(system["max_rss_resolution_kib"], bound, "{system}");
    for r in read_records(&tmp.join("b")) {
        let kib = r["rusage"]["max_rss_kib"].as_u64().unwrap();
        assert!(
            kib < bound,
            "the premise: a few pages read below {bound} KiB: {kib}"
        );
    }
    let shown = out.shown();
    let row = shown
        .lines()
        .find(|l| l.trim_start().starts_with("max RSS"))
        .unwrap_or_else(|| panic!("no max RSS row{}", out.describe()));
    let cells: Vec<&str> = row.split_whitespace().collect();
    let less = format!("<{bound}");
    assert_eq!(&cells[3..5], [less.as_str(), less.as_str()], "{row}");
    let said = common::prose(&shown);
    assert!(
        said.contains(&format!(
            "<{bound} KiB: below the kernel's resolution here: its high-water mark leaves out up to {} pages per CPU ({cpus} CPUs)",
            (2 * cpus).max(32) - 1
        )),
        "{}",
        out.describe()
    );
    // Every run read below the bound: the floor, far below it, is not the explanation.
    assert!(!said.contains("≤ floor"), "{}", out.describe());
}
