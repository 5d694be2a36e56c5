//! Parameter scans as hyperfine has them: `-P NAME MIN MAX [-D DELTA]` and `-L NAME VALUES`,
//! turned into the list of parameter values, and `{NAME}` replaced in a text. Pure.
//!
//! hyperfine's rules, read from its source (`src/parameter/`, `src/command.rs`): the range is
//! inclusive, in steps of 1 unless `-D` says otherwise, and decimal bounds need `-D`; values are
//! computed in decimal, so `-P d 0.3 0.7 -D 0.2` gives exactly 0.3, 0.5 and 0.7; `-L` splits on
//! commas (`\,` is a comma, `\\` a backslash), may be given several times (every combination),
//! and not together with `-P`; `{NAME}` is replaced in one pass, so a value that contains
//! `{OTHER}` is not replaced again.
#![forbid(unsafe_code)]

use crate::cli::args::Read;
use crate::cli::usage::{usage, UsageError};

/// The most commands a scan may make: each is a batch of its own.
pub const MAX_COMMANDS: usize = 1000;

/// One combination of parameter values: `(NAME, value)` in the order the parameters were given.
pub(crate) type Binding = Vec<(String, String)>;

/// The combinations `-P`/`-L` ask for, in hyperfine's order (the first parameter varies
/// slowest); one empty binding when there is no scan.
pub(crate) fn bindings(read: &Read) -> Result<Vec<Binding>, UsageError> {
    let scan = read.last("--parameter-scan");
    let step = read.last("--parameter-step-size");
    let lists: Vec<_> = read.all("--parameter-list").collect();
    if scan.is_some() && !lists.is_empty() {
        return Err(usage(
            "choose -P/--parameter-scan or -L/--parameter-list, not both (as in hyperfine)",
        ));
    }
    if let (Some(step), None) = (step, scan) {
        return Err(usage(format!(
            "{} needs -P/--parameter-scan NAME MIN MAX",
            step.spelled
        )));
    }
    let mut parameters: Vec<(String, Vec<String>)> = Vec::new();
    if let Some(scan) = scan {
        let [name, min, max] = [0, 1, 2].map(|i| scan.values[i].to_string_lossy().into_owned());
        let step = step.map(|s| s.text());
        parameters.push((checked_name(&name)?, range(&min, &max, step.as_deref())?));
    }
    for list in lists {
        let name = checked_name(&list.values[0].to_string_lossy())?;
        if parameters.iter().any(|(n, _)| *n == name) {
            return Err(usage(format!(
                "-L/--parameter-list {name} given twice: each parameter once, with all its values"
            )));
        }
        parameters.push((name, split_list(&list.values[1].to_string_lossy())));
    }
    combinations(&parameters)
}

/// Every combination of the parameters' values, the first parameter varying slowest.
fn combinations(parameters: &[(String, Vec<String>)]) -> Result<Vec<Binding>, UsageError> {
    let mut all: Vec<Binding> = vec![Vec::new()];
    for (name, values) in parameters {
        if all.len().saturating_mul(values.len()) > MAX_COMMANDS {
            return Err(usage(format!(
                "the parameters make more than {MAX_COMMANDS} commands; scan fewer values"
            )));
        }
        all = all
            .iter()
            .flat_map(|binding| {
                values.iter().map(move |v| {
                    let mut b = binding.clone();
                    b.push((name.clone(), v.clone()));
                    b
                })
            })
            .collect();
    }
    Ok(all)
}

fn checked_name(name: &str) -> Result<String, UsageError> {
    if name.is_empty() || name.contains(['{', '}']) || name.contains(char::is_whitespace) {
        return Err(usage(format!(
            "parameter name '{name}': expected a word without blanks or braces (it is replaced as {{NAME}})"
        )));
    }
    Ok(name.to_string())
}

/// A decimal number as an integer mantissa and the number of digits after the point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Decimal {
    mantissa: i128,
    scale: u32,
}

/// The most digits after the decimal point a bound or step may have.
const MAX_SCALE: u32 = 9;

impl Decimal {
    fn parse(flag: &str, text: &str) -> Result<Decimal, UsageError> {
        let bad = || usage(format!("{flag}: expected a number, got '{text}'"));
        let (negative, digits) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text.strip_prefix('+').unwrap_or(text)),
        };
        let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
        let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if whole.is_empty() && fraction.is_empty()
            || !all_digits(whole)
            || !all_digits(fraction)
            || whole.len() > 18
            || fraction.len() > MAX_SCALE as usize
        {
            return Err(bad());
        }
        let joined = format!("{whole}{fraction}");
        let magnitude: i128 = joined.parse().unwrap_or(0);
        Ok(Decimal {
            mantissa: if negative { -magnitude } else { magnitude },
            scale: fraction.len() as u32,
        })
    }

    fn at_scale(self, scale: u32) -> i128 {
        self.mantissa * 10i128.pow(scale - self.scale)
    }
}

/// `mantissa / 10^scale` written with exactly `scale` decimals.
fn format_scaled(mantissa: i128, scale: u32) -> String {
    let sign = if mantissa < 0 { "-" } else { "" };
    let magnitude = mantissa.unsigned_abs();
    if scale == 0 {
        return format!("{sign}{magnitude}");
    }
    let unit = 10u128.pow(scale);
    let width = scale as usize;
    format!("{sign}{}.{:0width$}", magnitude / unit, magnitude % unit)
}

/// `MIN, MIN+STEP, … ≤ MAX`, in decimal.
fn range(min: &str, max: &str, step: Option<&str>) -> Result<Vec<String>, UsageError> {
    let lo = Decimal::parse("-P/--parameter-scan MIN", min)?;
    let hi = Decimal::parse("-P/--parameter-scan MAX", max)?;
    let step = match step {
        Some(text) => Decimal::parse("-D/--parameter-step-size", text)?,
        None if lo.scale > 0 || hi.scale > 0 => {
            return Err(usage(format!(
                "-P/--parameter-scan {min} {max}: decimal bounds need a step, -D DELTA (as in hyperfine)"
            )))
        }
        None => Decimal {
            mantissa: 1,
            scale: 0,
        },
    };
    let scale = lo.scale.max(hi.scale).max(step.scale);
    let (lo, hi, delta) = (lo.at_scale(scale), hi.at_scale(scale), step.at_scale(scale));
    if delta <= 0 {
        return Err(usage(format!(
            "-D/--parameter-step-size: expected a step greater than 0, got '{}'",
            format_scaled(delta, scale)
        )));
    }
    if hi < lo {
        return Err(usage(format!(
            "-P/--parameter-scan: the range {min}..{max} is empty (MIN is above MAX)"
        )));
    }
    let count = (hi - lo) / delta + 1;
    if count > MAX_COMMANDS as i128 {
        return Err(usage(format!(
            "-P/--parameter-scan {min} {max} makes {count} values, more than {MAX_COMMANDS}; use a larger -D"
        )));
    }
    Ok((0..count)
        .map(|k| format_scaled(lo + k * delta, scale))
        .collect())
}

/// `-L`'s VALUES: split on commas; `\,` is a comma and `\\` a backslash inside a value.
fn split_list(text: &str) -> Vec<String> {
    let mut values = Vec::new();
    let mut value = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(escaped @ (',' | '\\')) => value.push(escaped),
                Some(other) => {
                    value.push('\\');
                    value.push(other);
                }
                None => value.push('\\'),
            },
            ',' => values.push(std::mem::take(&mut value)),
            other => value.push(other),
        }
    }
    values.push(value);
    values
}

/// `text` with every `{NAME}` of `binding` replaced by its value, in one pass.
pub(crate) fn substitute(text: &str, binding: &Binding) -> String {
    String::from_utf8_lossy(&substitute_bytes(text.as_bytes(), binding)).into_owned()
}

/// [`substitute`] over bytes (a command or a shell command given as an argument is never
/// decoded: invalid UTF-8 in it reaches the program as it was given).
pub(crate) fn substitute_os(text: &std::ffi::OsStr, binding: &Binding) -> std::ffi::OsString {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    std::ffi::OsString::from_vec(substitute_bytes(text.as_bytes(), binding))
}

fn substitute_bytes(text: &[u8], binding: &Binding) -> Vec<u8> {
    if binding.is_empty() {
        return text.to_vec();
    }
    let keys: Vec<(Vec<u8>, &str)> = binding
        .iter()
        .map(|(name, value)| (format!("{{{name}}}").into_bytes(), value.as_str()))
        .collect();
    let mut out = Vec::with_capacity(text.len());
    let mut rest = text;
    'outer: while let Some((&b, after_byte)) = rest.split_first() {
        for (key, value) in &keys {
            if let Some(after) = rest.strip_prefix(key.as_slice()) {
                out.extend_from_slice(value.as_bytes());
                rest = after;
                continue 'outer;
            }
        }
        out.push(b);
        rest = after_byte;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::args;
    use crate::cli::table::Sub;
    use std::ffi::OsString;

    fn scan(list: &[&str]) -> Result<Vec<Binding>, UsageError> {
        let words: Vec<OsString> = list.iter().map(OsString::from).collect();
        bindings(&args::read(Sub::Compare, words)?)
    }

    fn values(list: &[&str]) -> Vec<String> {
        scan(list)
            .unwrap()
            .into_iter()
            .map(|b| {
                b.iter()
                    .map(|(_, v)| v.as_str())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect()
    }

    #[test]
    fn integer_and_decimal_ranges_are_exact() {
        assert_eq!(values(&["-P", "n", "1", "3", "x"]), ["1", "2", "3"]);
        assert_eq!(
            values(&["-P", "n", "0", "10", "-D", "3", "x"]),
            ["0", "3", "6", "9"]
        );
        assert_eq!(
            values(&["-P", "d", "0.3", "0.7", "-D", "0.2", "x"]),
            ["0.3", "0.5", "0.7"]
        );
        assert_eq!(values(&["-P", "d", "0", "1", "-D", "0.25", "x"]).len(), 5);
        assert_eq!(values(&["-P", "n", "-1", "1", "x"]), ["-1", "0", "1"]);
        assert_eq!(values(&["x"]), [""], "no scan: one empty binding");
    }

    #[test]
    fn bad_ranges_say_what_is_wrong() {
        let e = |list: &[&str]| scan(list).unwrap_err().0;
        assert!(e(&["-P", "n", "3", "1", "x"]).contains("is empty"));
        assert!(e(&["-P", "d", "0.1", "0.5", "x"]).contains("need a step, -D DELTA"));
        assert!(e(&["-P", "n", "1", "3", "-D", "0", "x"]).contains("greater than 0"));
        assert!(e(&["-P", "n", "a", "3", "x"]).contains("expected a number, got 'a'"));
        assert!(e(&["-P", "n", "1", "100000", "x"]).contains("more than 1000"));
        assert!(e(&["-D", "2", "x"]).starts_with("-D needs -P/--parameter-scan"));
        assert!(e(&["-P", "n", "1", "2", "-L", "m", "a", "x"]).contains("not both"));
        assert!(e(&["-P", "{n}", "1", "2", "x"]).contains("parameter name"));
        assert!(e(&["-L", "m", "a", "-L", "m", "b", "x"]).contains("given twice"));
    }

    #[test]
    fn lists_split_on_unescaped_commas_and_combine() {
        assert_eq!(split_list(r"a,b\,c,d\\e,"), ["a", "b,c", r"d\e", ""]);
        assert_eq!(split_list(""), [""]);
        assert_eq!(
            values(&["-L", "c", "gcc,clang", "-L", "o", "1,2", "x"]),
            ["gcc 1", "gcc 2", "clang 1", "clang 2"]
        );
    }

    #[test]
    fn substitution_is_one_pass() {
        let b: Binding = vec![
            ("foo".into(), "{bar} baz".into()),
            ("bar".into(), "quux".into()),
        ];
        assert_eq!(substitute("echo {foo} {bar}", &b), "echo {bar} baz quux");
        assert_eq!(substitute("{foo", &b), "{foo");
        assert_eq!(substitute("é{bar}ü", &b), "équuxü");
        assert_eq!(substitute("{n}", &Vec::new()), "{n}");
    }

    #[test]
    fn format_keeps_the_scale() {
        assert_eq!(format_scaled(5, 1), "0.5");
        assert_eq!(format_scaled(-5, 2), "-0.05");
        assert_eq!(format_scaled(120, 0), "120");
    }
}
