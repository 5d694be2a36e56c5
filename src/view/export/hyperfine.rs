//! `--export-hyperfine-json FILE`: hyperfine's export document, for the tools that read it —
//! `results`, one entry per command: `command`, `mean`, `stddev`, `median`, `user`, `system`,
//! `min`, `max` (seconds), `times`, `memory_usage_byte`, `exit_codes`, `parameters`. It reshapes
//! what was recorded (its statistics through record's [`Summary`]); it measures nothing, adds no
//! field of coldtrace's own, and opens no file (the caller replaces it).
//!
//! Over the counted runs, the first one included, as hyperfine counts them; warm-ups and
//! rejected runs are left out. `memory_usage_byte` is each run's own wait4 max RSS (hyperfine
//! 1.x read a cumulative figure); `exit_codes` is `null` for a run killed by a signal.
#![forbid(unsafe_code)]

use crate::record::stats::Summary;
use crate::view::export::part::Part;
use serde_json::{json, Map, Value};
use std::io::{self, Write};

/// What one command's counted runs say.
#[derive(Default)]
struct Counted {
    times: Vec<f64>,
    user: Vec<f64>,
    system: Vec<f64>,
    memory: Vec<Value>,
    exit_codes: Vec<Value>,
}

impl Counted {
    fn of(part: &Part<'_>) -> io::Result<Counted> {
        let mut c = Counted::default();
        part.each_record(|r| {
            if r["counted"] != true {
                return Ok(());
            }
            let Some(wall) = r["wall_ns"].as_f64() else {
                return Ok(());
            };
            c.times.push(wall / 1e9);
            let rusage = &r["rusage"];
            c.user.extend(rusage["user_us"].as_f64().map(|v| v / 1e6));
            c.system.extend(rusage["sys_us"].as_f64().map(|v| v / 1e6));
            c.memory.push(
                rusage["max_rss_kib"]
                    .as_u64()
                    .map_or(Value::Null, |k| json!(k * 1024)),
            );
            c.exit_codes.push(match r["outcome"]["kind"].as_str() {
                Some("exited") => r["outcome"]["code"].clone(),
                _ => Value::Null,
            });
            Ok(())
        })?;
        Ok(c)
    }
}

fn mean(values: &[f64]) -> Value {
    Summary::of(values).map_or(Value::Null, |s| json!(s.mean))
}

fn result(part: &Part<'_>) -> io::Result<Value> {
    let c = Counted::of(part)?;
    let s = Summary::of(&c.times);
    let stat = |f: fn(&Summary) -> f64| s.as_ref().map_or(Value::Null, |s| json!(f(s)));
    let parameters: Map<String, Value> = part
        .parameters
        .iter()
        .map(|(k, v)| (k.to_string(), json!(v)))
        .collect();
    Ok(json!({
        "command": part.command,
        "mean": stat(|s| s.mean),
        "stddev": s.as_ref().and_then(|s| s.stddev).map_or(Value::Null, |v| json!(v)),
        "median": stat(|s| s.median),
        "user": mean(&c.user),
        "system": mean(&c.system),
        "min": stat(|s| s.min),
        "max": stat(|s| s.max),
        "times": c.times,
        "memory_usage_byte": c.memory,
        "exit_codes": c.exit_codes,
        "parameters": parameters,
    }))
}

/// `{"results": [...]}`, one entry per command.
pub fn results(w: &mut dyn Write, parts: &[Part<'_>]) -> io::Result<()> {
    let results = parts
        .iter()
        .map(result)
        .collect::<io::Result<Vec<Value>>>()?;
    let doc = json!({ "results": results });
    serde_json::to_writer_pretty(&mut *w, &doc).map_err(io::Error::other)?;
    writeln!(w)
}
