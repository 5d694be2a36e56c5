//! The shape of every JSON document coldtrace writes — key paths in order — against a committed
//! golden list, so that a change to the wire (a renamed, moved or dropped field) is always a
//! deliberate one. After changing the wire on purpose, regenerate the list with
//! `COLDTRACE_BLESS=1 cargo test --test wire_shape` and commit it with the schema change.
#![forbid(unsafe_code)]

mod common;

use common::{ct, TempDir};
use serde_json::Value;
use std::path::Path;

/// Every key path of `v`, depth first, in document order; array elements share one `[]` path.
fn key_paths(v: &Value, prefix: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                let path = format!("{prefix}.{k}");
                if !out.contains(&path) {
                    out.push(path.clone());
                }
                key_paths(child, &path, out);
            }
        }
        Value::Array(items) => {
            for item in items {
                key_paths(item, &format!("{prefix}[]"), out);
            }
        }
        _ => {}
    }
}

/// `v` with everything below `depth` levels of objects replaced by null (arrays do not count).
fn shallow(v: &Value, depth: usize) -> Value {
    match v {
        Value::Object(map) if depth == 0 => {
            let _ = map;
            Value::Null
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, c)| (k.clone(), shallow(c, depth - 1)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|c| shallow(c, depth)).collect()),
        other => other.clone(),
    }
}

fn shape_of(name: &str, docs: &[Value]) -> String {
    let mut paths = Vec::new();
    for doc in docs {
        key_paths(doc, "", &mut paths);
    }
    let mut text = format!("## {name}\n");
    for p in paths {
        text.push_str(&p);
        text.push('\n');
    }
    text
}

fn lines_of(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

fn doc(path: &Path) -> Value {
    let mut v = serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("JSON");
    without_leftovers(&mut v);
    v
}

/// `v` with every `cgroup.leftover` list emptied: what other batches on the machine left in
/// their cgroups (a daemon on purpose, for a moment) is not part of this batch's shape.
fn without_leftovers(v: &mut Value) {
    match v {
        Value::Object(map) => {
            if let Some(list) = map.get_mut("cgroup").and_then(|c| c.get_mut("leftover")) {
                *list = Value::Array(Vec::new());
            }
            map.values_mut().for_each(without_leftovers);
        }
        Value::Array(items) => items.iter_mut().for_each(without_leftovers),
        _ => {}
    }
}

#[test]
fn every_document_keeps_its_golden_shape() {
    let dir = TempDir::new("wire");
    let data = dir.join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::write(data.join("f"), vec![7u8; 64 * 1024]).unwrap();
    let data_arg = data.display().to_string();
    ct(
        dir.path(),
        [
            "run",
            "-n",
            "3",
            "--warmup",
            "1",
            "-o",
            "batch",
            "--keep-output",
            "--evict",
            &data_arg,
            "--cold-first-only",
            "--counters",
            "--label",
            "shape",
            "--export-coldtrace-json",
            "export.json",
            "--export-json",
            "hyperfine.json",
            "--",
            "sh",
            "-c",
            "cat \"$0\"/f >/dev/null; echo out; echo err >&2",
            &data_arg,
        ],
    )
    .run()
    .expect_code(0);
    ct(
        dir.path(),
        [
            "run",
            "-n",
            "2",
            "-o",
            "failing",
            "--keep-output",
            "--",
            "sh",
            "-c",
            "exit 3",
        ],
    )
    .run()
    .expect_code(1);
    ct(
        dir.path(),
        [
            "run",
            "-q",
            "-n",
            "2",
            "--cold-cycles",
            "2",
            "-o",
            "cycles",
            "--evict",
            &data_arg,
            "--",
            "true",
        ],
    )
    .run()
    .expect_code(0);
    ct(
        dir.path(),
        [
            "compare",
            "-n",
            "3",
            "-o",
            "cmp",
            "--keep-output",
            "--export-coldtrace-json",
            "cmp-export.json",
            "true",
            "sh -c true",
        ],
    )
    .run()
    .expect_code(0);
    let single = ct(
        dir.path(),
        ["run", "-n", "1", "--json", "--output", "null", "--", "true"],
    )
    .run();
    single.expect_code(0);
    let report = ct(dir.path(), ["report", "--json", "batch", "failing", "cmp"]).run();
    report.expect_code(0);
    let context = ct(dir.path(), ["context", "--json"]).run();
    context.expect_code(0);

    let mut shape = String::new();
    shape += &shape_of(
        "runs.jsonl (batch)",
        &lines_of(&dir.join("batch/runs.jsonl")),
    );
    shape += &shape_of(
        "runs.jsonl (failing)",
        &lines_of(&dir.join("failing/runs.jsonl")),
    );
    shape += &shape_of(
        "runs.jsonl (compare member)",
        &lines_of(&dir.join("cmp/commands/01/runs.jsonl")),
    );
    shape += &shape_of("batch.json", &[doc(&dir.join("batch/batch.json"))]);
    shape += &shape_of(
        "runs.jsonl (cold cycles)",
        &lines_of(&dir.join("cycles/runs.jsonl")),
    );
    shape += &shape_of(
        "batch.json (cold cycles)",
        &[doc(&dir.join("cycles/batch.json"))],
    );
    shape += &shape_of(
        "batch.json (failing)",
        &[doc(&dir.join("failing/batch.json"))],
    );
    shape += &shape_of("compare batch.json", &[doc(&dir.join("cmp/batch.json"))]);
    // Whether `true` pages anything in depends on the page cache (another process may have
    // evicted its binary): its `page_ins.top` files have the batch's shape, and are left out.
    let mut single_doc = single.json();
    if let Some(top) = single_doc.pointer_mut("/page_ins/top") {
        *top = serde_json::Value::Array(Vec::new());
    }
    shape += &shape_of("run --json (single run)", &[single_doc]);
    shape += &shape_of("report --json", &[report.json()]);
    shape += &shape_of("context --json", &[context.json()]);
    // The exports hold the documents above: their own keys only, two levels down.
    shape += &shape_of(
        "--export-coldtrace-json (batch)",
        &[shallow(&doc(&dir.join("export.json")), 2)],
    );
    shape += &shape_of(
        "--export-coldtrace-json (compare)",
        &[shallow(&doc(&dir.join("cmp-export.json")), 3)],
    );
    shape += &shape_of("--export-json", &[doc(&dir.join("hyperfine.json"))]);

    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/wire-shape.txt");
    if std::env::var_os("COLDTRACE_BLESS").is_some() {
        std::fs::write(&golden, &shape).expect("write the golden shape");
        return;
    }
    let expected = std::fs::read_to_string(&golden).unwrap_or_default();
    if shape != expected {
        let diff: Vec<String> = diff_lines(&expected, &shape);
        panic!(
            "the wire changed ({} differing lines; regenerate with COLDTRACE_BLESS=1 if on purpose):\n{}",
            diff.len(),
            diff.join("\n")
        );
    }
}

/// Lines only in `old` (-) or only in `new` (+), each with its section.
fn diff_lines(old: &str, new: &str) -> Vec<String> {
    let sectioned = |text: &str| -> Vec<String> {
        let mut section = String::new();
        let mut out = Vec::new();
        for line in text.lines() {
            if let Some(name) = line.strip_prefix("## ") {
                section = name.to_string();
            } else {
                out.push(format!("{section}: {line}"));
            }
        }
        out
    };
    let (a, b) = (sectioned(old), sectioned(new));
    let mut out: Vec<String> = a
        .iter()
        .filter(|l| !b.contains(l))
        .map(|l| format!("- {l}"))
        .collect();
    out.extend(
        b.iter()
            .filter(|l| !a.contains(l))
            .map(|l| format!("+ {l}")),
    );
    if out.is_empty() {
        out.push("(same lines, different order)".into());
    }
    out
}
