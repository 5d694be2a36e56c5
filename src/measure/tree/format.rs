//! A tracepoint's `format` file (tracefs `events/<system>/<name>/format`), parsed: its ID, the
//! offset and size of each field of its raw record, and the letters its `print fmt` gives to
//! the bits of a task state. The layout is read at run time because it changes between kernel
//! versions (`sched_switch`'s `prev_state` was an `int` before 4.x and is a `long` now; the
//! state letters were renumbered in 4.14). Pure: text in, layout out.
#![forbid(unsafe_code)]

/// One field of a raw record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    /// Its name (`prev_pid`).
    pub name: String,
    /// Bytes from the start of the raw record.
    pub offset: usize,
    /// Its size in bytes.
    pub size: usize,
    /// A signed integer.
    pub signed: bool,
}

/// A tracepoint's layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Format {
    /// `name:` (`sched_switch`).
    pub name: String,
    /// `ID:`, the number `perf_event_open` takes as `config` and the raw record's
    /// `common_type` holds.
    pub id: u64,
    /// Every field, in the file's order.
    pub fields: Vec<Field>,
    /// `print fmt:`, the rest of its line.
    pub print_fmt: String,
}

impl Format {
    /// Parses a format file. `Err` names what is missing.
    pub fn parse(text: &str) -> Result<Format, String> {
        let mut name = None;
        let mut id = None;
        let mut fields = Vec::new();
        let mut print_fmt = String::new();
        for line in text.lines() {
            let line = line.trim();
            if let Some(rest) = line.strip_prefix("name:") {
                name = Some(rest.trim().to_string());
            } else if let Some(rest) = line.strip_prefix("ID:") {
                id = rest.trim().parse().ok();
            } else if let Some(rest) = line.strip_prefix("print fmt:") {
                print_fmt = rest.trim().to_string();
            } else if line.starts_with("field:") {
                fields.extend(parse_field(line));
            }
        }
        let name = name.ok_or("no name: line")?;
        let id = id.ok_or_else(|| format!("{name}: no ID: line"))?;
        Ok(Format {
            name,
            id,
            fields,
            print_fmt,
        })
    }

    /// The field called `name`.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// The field called `name`, or an error naming the tracepoint and the field.
    pub fn require(&self, name: &str) -> Result<&Field, String> {
        self.field(name)
            .ok_or_else(|| format!("{}: no field {name} in its format", self.name))
    }

    /// The `{ value, "letter" }` pairs of the `__print_flags` in `print fmt` (for
    /// `sched_switch`: the task-state bits and their letters), in order. Empty when there are
    /// none.
    pub fn print_flags(&self) -> Vec<(u64, String)> {
        let Some(at) = self.print_fmt.find("__print_flags(") else {
            return Vec::new();
        };
        let mut pairs = Vec::new();
        let mut rest = &self.print_fmt[at..];
        while let Some(open) = rest.find('{') {
            rest = &rest[open + 1..];
            let Some(close) = rest.find('}') else { break };
            let inside = &rest[..close];
            rest = &rest[close + 1..];
            let Some((value, letter)) = inside.split_once(',') else {
                continue;
            };
            let value = value.trim();
            let number = match value.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16).ok(),
                None => value.parse().ok(),
            };
            let letter = letter.trim().trim_matches('"');
            if let Some(number) = number.filter(|_| !letter.is_empty()) {
                pairs.push((number, letter.to_string()));
            }
        }
        pairs
    }
}

/// `field:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;` → the field (`__data_loc` fields and
/// arrays are named like the others).
fn parse_field(line: &str) -> Option<Field> {
    let mut parts = line.split(';').map(str::trim);
    let declaration = parts.next()?.strip_prefix("field:")?;
    let last = declaration.split_whitespace().last()?;
    let name = last.split('[').next()?.to_string();
    let mut number =
        |key: &str| -> Option<usize> { parts.next()?.strip_prefix(key)?.trim().parse().ok() };
    let offset = number("offset:")?;
    let size = number("size:")?;
    let signed = number("signed:").is_some_and(|s| s != 0);
    Some(Field {
        name,
        offset,
        size,
        signed,
    })
}

/// The integer of `field` in `raw`: 1, 2, 4 or 8 bytes in native order, sign-extended when
/// the field is signed. `None` when the record is too short or the size is another.
pub fn read_int(raw: &[u8], field: &Field) -> Option<i64> {
    let bytes = raw.get(field.offset..field.offset.checked_add(field.size)?)?;
    let mut word = [0u8; 8];
    let value = match *bytes {
        [a] if field.signed => i64::from(a as i8),
        [a] => i64::from(a),
        [a, b] if field.signed => i64::from(i16::from_ne_bytes([a, b])),
        [a, b] => i64::from(u16::from_ne_bytes([a, b])),
        [a, b, c, d] if field.signed => i64::from(i32::from_ne_bytes([a, b, c, d])),
        [a, b, c, d] => i64::from(u32::from_ne_bytes([a, b, c, d])),
        [..] if bytes.len() == 8 => {
            word.copy_from_slice(bytes);
            i64::from_ne_bytes(word)
        }
        _ => return None,
    };
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `sched_switch` on Linux 6.18 (x86_64), as tracefs gives it.
    const SCHED_SWITCH: &str = include_str!("../../../tests/data/tracefs-6.18/sched_switch.format");

    #[test]
    fn the_layout_and_the_state_letters_are_read_from_the_file() {
        let f = Format::parse(SCHED_SWITCH).unwrap();
        assert_eq!((f.name.as_str(), f.id), ("sched_switch", 372));
        let state = f.field("prev_state").unwrap();
        assert_eq!((state.offset, state.size, state.signed), (32, 8, true));
        assert_eq!(f.field("prev_comm").unwrap().size, 16);
        assert_eq!(f.field("next_pid").unwrap().offset, 56);
        let flags = f.print_flags();
        let letters: Vec<(u64, &str)> = flags.iter().map(|(v, l)| (*v, l.as_str())).collect();
        assert_eq!(letters[0], (1, "S"));
        assert_eq!(letters[1], (2, "D"));
        assert_eq!(letters[7], (0x80, "I"));
        assert_eq!(letters.len(), 8);
        assert!(f.require("nonesuch").unwrap_err().contains("nonesuch"));
    }

    #[test]
    fn data_loc_fields_and_missing_lines() {
        let text = "name: sched_process_exec\nID: 365\nformat:\n\
\tfield:__data_loc char[] filename;\toffset:8;\tsize:4;\tsigned:0;\n\
\tfield:pid_t pid;\toffset:12;\tsize:4;\tsigned:1;\n";
        let f = Format::parse(text).unwrap();
        assert_eq!(f.field("filename").unwrap().offset, 8);
        assert_eq!(f.field("pid").unwrap().offset, 12);
        assert!(f.print_flags().is_empty());
        assert!(Format::parse("ID: 3\n").is_err());
        assert!(Format::parse("name: x\n").unwrap_err().contains("ID"));
    }

    #[test]
    fn integers_of_every_size_and_sign() {
        let field = |offset, size, signed| Field {
            name: String::new(),
            offset,
            size,
            signed,
        };
        let raw = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 7];
        assert_eq!(read_int(&raw, &field(0, 1, true)), Some(-1));
        assert_eq!(read_int(&raw, &field(0, 1, false)), Some(255));
        assert_eq!(read_int(&raw, &field(0, 2, false)), Some(65535));
        assert_eq!(read_int(&raw, &field(0, 4, true)), Some(-1));
        assert_eq!(read_int(&raw, &field(0, 4, false)), Some(u32::MAX as i64));
        assert_eq!(read_int(&raw, &field(0, 8, false)), Some(-1));
        assert_eq!(read_int(&raw, &field(8, 1, false)), Some(7));
        assert_eq!(read_int(&raw, &field(8, 2, false)), None);
        assert_eq!(read_int(&raw, &field(0, 3, false)), None);
        assert_eq!(read_int(&raw, &field(usize::MAX, 2, false)), None);
    }
}
