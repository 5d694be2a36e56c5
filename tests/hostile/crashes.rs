//! Crashes and unbounded loops: a file size limit, a picture of extreme values, a failing
//! random source and a huge sparse output each end in one line or a whole batch — never a
//! signal, a panic or a loop without end.

use super::common::{compile, ct, read_records, TempDir};
use super::{
    a_batch, after_sh, assert_no_survivor, assert_one_escaped_line, assert_records_whole, launch,
    script, DEADLINE,
};
use serde_json::Value;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `coldtrace ARGS` under a file size limit of `blocks` × 512 bytes (`ulimit -f`).
fn limited(dir: &TempDir, blocks: u32, args: &[&str]) -> super::common::Output {
    let setup = format!("export COLDTRACE_STATE_DIR=; ulimit -f {blocks}");
    after_sh(dir, &setup, args)
}

/// One line on stderr naming the file size limit, exit 125, no signal.
fn assert_file_too_large(out: &super::common::Output) {
    out.expect_code(125);
    assert_one_escaped_line(out);
    assert!(
        out.stderr.contains("file too large (EFBIG)"),
        "{}",
        out.describe()
    );
}

/// The names in `dir` that end in `.tmp`.
fn temporaries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect()
}

#[test]
fn a_file_size_limit_reached_by_the_records_is_one_line_and_whole_lines() {
    let dir = TempDir::new("fsizerec");
    let echo = script(&dir, "fr", "echo hi");
    let out = limited(
        &dir,
        8,
        &["run", "-n", "200", "-o", "b", "--", echo.to_str().unwrap()],
    );
    assert_file_too_large(&out);
    assert!(out.stderr.contains("runs.jsonl"), "{}", out.describe());
    let records = assert_records_whole(&dir.join("b"), false);
    assert!(
        !records.is_empty() && records.len() < 200,
        "{}",
        records.len()
    );
    let text = std::fs::read(dir.join("b/runs.jsonl")).unwrap();
    assert!(
        text.ends_with(b"\n") && text.len() <= 4096,
        "{} bytes",
        text.len()
    );
    assert_no_survivor(&echo);
}

#[test]
fn a_file_size_limit_reached_by_batch_json_leaves_no_temporary_file() {
    let dir = TempDir::new("fsizedoc");
    // Two records fit in 8 KiB; the pretty-printed batch.json does not.
    let out = limited(&dir, 16, &["run", "-n", "2", "-o", "b", "--", "true"]);
    assert_file_too_large(&out);
    assert!(out.stderr.contains("batch.json"), "{}", out.describe());
    assert_eq!(assert_records_whole(&dir.join("b"), false).len(), 2);
    assert!(!dir.join("b/batch.json").exists());
    assert_eq!(temporaries(&dir.join("b")), Vec::<String>::new());
}

#[test]
fn a_file_size_limit_reached_by_an_export_or_a_picture_leaves_no_temporary_file() {
    let dir = TempDir::new("fsizeexp");
    let out = limited(
        &dir,
        16,
        &[
            "run",
            "-q",
            "-n",
            "30",
            "--export-coldtrace-json",
            "all.json",
            "--",
            "true",
        ],
    );
    assert_file_too_large(&out);
    assert!(
        out.stderr.contains("--export-coldtrace-json all.json"),
        "{}",
        out.describe()
    );
    a_batch(&dir, "b");
    let out = limited(&dir, 1, &["report", "--html", "page.html", "b"]);
    out.expect_code(125);
    assert!(out.stderr.contains("EFBIG"), "{}", out.describe());
    assert_eq!(temporaries(dir.path()), Vec::<String>::new());
    assert!(!dir.join("all.json").exists() && !dir.join("page.html").exists());
}

#[test]
fn the_command_s_own_file_size_signal_is_as_it_would_be_without_coldtrace() {
    let dir = TempDir::new("fsizecmd");
    // The child starts with the signal mask coldtrace started with: SIGXFSZ (25) not blocked.
    let mask = script(&dir, "fm", "grep SigBlk /proc/self/status > mask");
    let out = limited(
        &dir,
        64,
        &["run", "-n", "1", "-q", "--", mask.to_str().unwrap()],
    );
    out.expect_code(0);
    let line = std::fs::read_to_string(dir.join("mask")).unwrap();
    let bits = u64::from_str_radix(line.trim().trim_start_matches("SigBlk:").trim(), 16).unwrap();
    assert_eq!(bits & (1 << 24), 0, "{line}");
    // Writing past the limit kills it with SIGXFSZ (128 + 25), as it would under sh.
    let big = script(&dir, "fb", "head -c 100000 /dev/zero > big");
    let out = limited(
        &dir,
        8,
        &["run", "-n", "1", "-q", "--", big.to_str().unwrap()],
    );
    out.expect_code(153);
    assert_no_survivor(&big);
}

/// Every `.rs` file below `dir`.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap().map(Result::unwrap) {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// Each line of `text` without its `//` comment and without the insides of its string
/// literals, which may go on over several lines.
fn code_lines(text: &str) -> Vec<String> {
    let mut at = At::Code;
    text.lines().map(|l| code_of(l, &mut at)).collect()
}

/// Where the lint is in the source: in code, in a string, or in a raw string with `n` `#`s.
#[derive(Clone, Copy, PartialEq)]
enum At {
    Code,
    Str,
    Raw(usize),
}

/// A line without its `//` comment and without the insides of its string literals; `at`
/// says where it begins, and is left saying where it ends.
fn code_of(line: &str, at: &mut At) -> String {
    let mut code = String::new();
    let chars: Vec<char> = line.chars().collect();
    let hashes = |from: usize| {
        chars[from.min(chars.len())..]
            .iter()
            .take_while(|&&h| h == '#')
            .count()
    };
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        i += 1;
        match (*at, c) {
            (At::Str, '\\') => i += 1,
            (At::Str, '"') => {
                *at = At::Code;
                code.push(c);
            }
            (At::Raw(n), '"') if hashes(i) >= n => {
                i += n;
                *at = At::Code;
                code.push(c);
            }
            (At::Str | At::Raw(_), _) => {}
            (At::Code, '"') => {
                *at = At::Str;
                code.push(c);
            }
            (At::Code, 'r') if chars.get(i + hashes(i)) == Some(&'"') => {
                let n = hashes(i);
                i += n + 1;
                *at = At::Raw(n);
                code.push('"');
            }
            // A character literal ('"', '\'', '\\'): never the start of a string. A lifetime
            // ('a) has no closing quote.
            (At::Code, '\'') => {
                let len = if chars.get(i) == Some(&'\\') { 2 } else { 1 };
                if chars.get(i + len) == Some(&'\'') {
                    i += len + 1;
                }
                code.push(c);
            }
            (At::Code, '/') if chars.get(i) == Some(&'/') => break,
            (At::Code, _) => code.push(c),
        }
    }
    code
}

/// Whether a piece of code computes with floating point: an `f64`, a float literal, a cast to
/// one, or a method only floats have.
fn floaty(code: &str) -> bool {
    let literal = code.as_bytes().windows(3).any(|w| {
        w[0].is_ascii_digit() && w[1] == b'.' && w[2].is_ascii_digit()
            || w[0].is_ascii_digit() && w[1] == b'e' && (w[2].is_ascii_digit() || w[2] == b'-')
    });
    literal
        || [
            "f64", "f32", ".powf(", ".powi(", ".log10(", ".ln(", ".sqrt(", ".ceil(", ".floor(",
            ".exp(",
        ]
        .iter()
        .any(|m| code.contains(m))
}

fn identifiers(code: &str) -> impl Iterator<Item = &str> {
    code.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with(|c: char| c.is_alphabetic() || c == '_'))
}

/// The names a file binds to floats: `name: f64` (fields, parameters, typed bindings) and
/// `let name = <float arithmetic>`.
fn float_names(code: &[String]) -> Vec<String> {
    let mut names = Vec::new();
    for line in code {
        let mut rest = line.as_str();
        while let Some(at) = rest.find(": f64") {
            if let Some(name) = identifiers(&rest[..at]).last() {
                names.push(name.to_string());
            }
            rest = &rest[at + 5..];
        }
        if let Some(after) = line.trim_start().strip_prefix("let ") {
            if let Some((pattern, value)) = after.split_once('=') {
                if floaty(value) {
                    names.extend(
                        identifiers(pattern)
                            .filter(|w| *w != "mut")
                            .map(String::from),
                    );
                }
            }
        }
    }
    names
}

/// A lint: no `while` loop in `src/` steps through floating-point values. Such a loop ends only
/// if the arithmetic does (1e308 + 1 is 1e308; 10^-324 is 0): iterate over a whole-number range
/// and compute each value from its index instead.
#[test]
fn no_while_loop_steps_through_a_float() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files = rust_files(&src);
    assert!(files.len() > 50, "the sources were not found");
    let mut found = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let code = code_lines(&text);
        let floats = float_names(&code);
        for (n, line) in code.iter().enumerate() {
            let Some(at) = line.find("while ") else {
                continue;
            };
            let condition = line[at + 6..].split('{').next().unwrap_or_default();
            if condition.starts_with("let ") {
                continue;
            }
            let float =
                floaty(condition) || identifiers(condition).any(|w| floats.iter().any(|f| f == w));
            if float {
                let shown = file.strip_prefix(&src).unwrap().display();
                found.push(format!("src/{shown}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "while loops over floats:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_lint_sees_a_float_loop_and_passes_a_counted_one() {
    let code = code_lines(
        "fn grid(x: &Scale) {\n\
         let mut t = (x.lo / step).ceil() * step;\n\
         let mut i = 0;\n\
         while t <= x.hi { t += step; }\n\
         while i < 10 { i += 1; } // 1.5",
    );
    let floats = float_names(&code);
    assert!(floats.contains(&"t".to_string()), "{floats:?}");
    assert!(!floats.contains(&"i".to_string()), "{floats:?}");
    assert!(!floaty(&code[4]), "a comment is not code");
    assert_eq!(
        code_lines(r#"let s = "1.5 // x"; // 2.5"#),
        [r#"let s = ""; "#]
    );
    // A string that goes on over lines hides its words on each; a quote as a character
    // literal opens no string.
    let text = "let s = \"a \\\n while x {\";\nlet q = '\"'; while t < 1.5 {";
    assert_eq!(
        code_lines(text),
        ["let s = \"", "\";", "let q = '; while t < 1.5 {"]
    );
    // A raw string ends only at its quote and its hashes; a backslash in it escapes nothing.
    let raw = "let r = r#\"a \"\n while x {\"# + r\"\\\"; while t < 1.5 {";
    assert_eq!(
        code_lines(raw),
        ["let r = \"", "\" + \"\"; while t < 1.5 {"]
    );
}

/// A small finished batch (three runs: a first run and the two warm runs its penalty's split
/// needs) whose files are then rewritten by `edit` (each parsed document or record handed
/// over, written back).
fn crafted(
    dir: &TempDir,
    name: &str,
    edit_doc: impl Fn(&mut Value),
    edit_run: impl Fn(&mut Value),
) {
    let args = ["run", "-q", "-n", "3", "-o", name, "--", "true"];
    ct(dir.path(), args).run_within(DEADLINE).expect_code(0);
    let batch = dir.join(name);
    let path = batch.join("batch.json");
    let mut doc: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    edit_doc(&mut doc);
    std::fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
    let mut lines = String::new();
    for mut record in read_records(&batch) {
        edit_run(&mut record);
        lines.push_str(&format!("{record}\n"));
    }
    std::fs::write(batch.join("runs.jsonl"), lines).unwrap();
}

/// `coldtrace report --svg --html DIRS` ends (in 10 s) with exit 0 and two whole files.
fn draws(dir: &TempDir, dirs: &[&str]) {
    let mut args = vec!["report", "--svg", "p.svg", "--html", "p.html"];
    args.extend_from_slice(dirs);
    let out = ct(dir.path(), &args).run_within(Duration::from_secs(10));
    out.expect_code(0);
    assert!(std::fs::read_to_string(dir.join("p.svg"))
        .unwrap()
        .ends_with("</svg>\n"));
    assert!(std::fs::read_to_string(dir.join("p.html"))
        .unwrap()
        .contains("</html>"));
}

#[test]
fn a_penalty_at_the_edge_of_an_f64_is_drawn_in_bounded_time() {
    let dir = TempDir::new("pic1e308");
    crafted(
        &dir,
        "b",
        |doc| {
            // The bars are drawn only where the verdict found a penalty.
            doc["verdict"]["kind"] = Value::from("penalty");
            let p = &mut doc["first_penalty"];
            assert!(p.is_object(), "no first-run penalty to edit: {p}");
            for (key, v) in [
                ("wall_ns", 1e308),
                ("cpu_ns", 1e308),
                ("runqueue_ns", -1e308),
            ] {
                p[key] = Value::from(v);
            }
            p["blocked_ns"] = Value::from(f64::MAX);
        },
        |_| {},
    );
    draws(&dir, &["b"]);
    let svg = std::fs::read_to_string(dir.join("p.svg")).unwrap();
    assert!(
        svg.contains("first-run penalty: first run #0"),
        "the penalty's bars were not drawn"
    );
}

#[test]
fn the_smallest_positive_f64_as_a_wall_time_or_an_interval_is_drawn_in_bounded_time() {
    let dir = TempDir::new("pic5e324");
    crafted(
        &dir,
        "b",
        |_| {},
        |run| run["wall_ns"] = Value::from(5e-324),
    );
    let out = ct(
        dir.path(),
        ["compare", "-q", "-n", "6", "-o", "c", "true", "true"],
    );
    out.run_within(DEADLINE).expect_code(0);
    let path = dir.join("c/batch.json");
    let mut doc: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    for c in doc["comparison"][0]["commands"].as_array_mut().unwrap() {
        c["ci_low"] = Value::from(5e-324);
        c["ci_high"] = Value::from(1e308);
        c["ratio_to_first"] = Value::from(5e-324);
    }
    std::fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
    draws(&dir, &["b", "c"]);
}

const NO_GETRANDOM: &str = r#"
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
/* Runs argv[1..] with getrandom(2) failing with EIO. */
int main(int argc, char **argv) {
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getrandom, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EIO),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog program = {sizeof filter / sizeof filter[0], filter};
    if (argc < 2 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program))
        return 120;
    execv(argv[1], argv + 1);
    return 121;
}
"#;

#[test]
fn no_random_source_is_needed_before_the_first_record_or_anywhere() {
    let dir = TempDir::new("nogetrandom");
    let launcher = compile(dir.path(), "nogetrandom", NO_GETRANDOM, &[]);
    let launcher = launcher.to_str().unwrap();
    std::fs::create_dir_all(dir.join("tree/a")).unwrap();
    std::fs::write(dir.join("tree/a/f"), b"data").unwrap();
    let prefix = ["/usr/bin/env", "COLDTRACE_STATE_DIR=", launcher];
    for args in [
        vec![
            "run",
            "-q",
            "-n",
            "3",
            "-o",
            "b",
            "--watch",
            "tree",
            "--evict",
            "tree",
            "--export-csv",
            "x.csv",
            "--export-coldtrace-json",
            "x.json",
            "--",
            "true",
        ],
        vec![
            "compare",
            "-q",
            "-n",
            "2",
            "-o",
            "c",
            "--export-markdown",
            "x.md",
            "true",
            "true",
        ],
        vec!["report", "--svg", "x.svg", "b", "c"],
        vec!["time", "-q", "true"],
    ] {
        let out = launch(&dir, &prefix, &args).unwrap();
        assert_eq!(out.code(), Some(0), "{}", out.describe());
        assert!(!out.stderr.contains("panicked"), "{}", out.describe());
    }
    assert_records_whole(&dir.join("b"), true);
    for name in ["x.csv", "x.json", "x.md", "x.svg"] {
        assert!(dir.join(name).is_file(), "{name}");
    }
}

/// `coldtrace run -o b` of a command that writes its stdout with `body`, and its record.
fn kept_output(dir: &TempDir, tag: &str, body: &str) -> (super::common::Output, Value) {
    let writer = script(dir, tag, body);
    let out = ct(
        dir.path(),
        [
            "run",
            "-n",
            "1",
            "-o",
            "b",
            "--keep-output",
            "--",
            writer.to_str().unwrap(),
        ],
    )
    .run_within(DEADLINE);
    out.expect_code(0);
    assert_no_survivor(&writer);
    let records = assert_records_whole(&dir.join("b"), true);
    (out, records[0].clone())
}

#[test]
fn a_terabyte_of_holes_on_stdout_is_kept_as_holes_cut_at_the_limit() {
    let dir = TempDir::new("sparse1t");
    let (out, record) = kept_output(&dir, "st", "truncate -s 1T /dev/stdout; echo done >&2");
    let artifacts = &record["artifacts"];
    assert_eq!(artifacts["stdout_bytes"], 1u64 << 40, "{record}");
    assert_eq!(artifacts["stdout_cut_at"], 4u64 << 30, "{record}");
    assert_eq!(artifacts["stderr_cut_at"], Value::Null);
    let meta = std::fs::metadata(dir.join("b/runs/000/stdout")).unwrap();
    assert_eq!(meta.len(), 4 << 30);
    assert!(
        meta.blocks() < 64,
        "{} blocks: the holes were written out",
        meta.blocks()
    );
    assert!(
        out.stderr.contains("the kept file was cut"),
        "{}",
        out.describe()
    );
}

#[test]
fn data_between_holes_is_kept_at_its_offsets_and_data_past_the_limit_is_not() {
    let dir = TempDir::new("sparsemix");
    // dd seeks its stdout from where it stands: head at 0, middle at 3 GiB + 4, tail at
    // 5 GiB + 10, past the limit.
    let body = "printf head; \
        dd bs=1 count=0 seek=3G 2>/dev/null; printf middle; \
        dd bs=1 count=0 seek=2G 2>/dev/null; printf tail";
    let (_, record) = kept_output(&dir, "sm", body);
    assert_eq!(
        record["artifacts"]["stdout_bytes"],
        (5u64 << 30) + 14,
        "{record}"
    );
    let path = dir.join("b/runs/000/stdout");
    let meta = std::fs::metadata(&path).unwrap();
    assert_eq!(meta.len(), 4 << 30);
    assert!(meta.blocks() < 256, "{} blocks", meta.blocks());
    use std::io::{Read, Seek, SeekFrom};
    let mut file = std::fs::File::open(&path).unwrap();
    let mut at = |offset: u64, len: usize| {
        let mut buf = vec![0; len];
        file.seek(SeekFrom::Start(offset)).unwrap();
        file.read_exact(&mut buf).unwrap();
        buf
    };
    assert_eq!(at(0, 4), b"head");
    assert_eq!(at((3 << 30) + 4, 6), b"middle");
    assert_eq!(at(3 << 30, 4), [0; 4]);
}
