//! Words of a command: shell-style splitting (no shell is ever run), quoting back for display,
//! escaping control characters — and the escaping of names and labels for the formats they
//! are written in (a CSV field, Markdown text). A leaf: it depends on nothing in the crate.
//!
//! Supported: blanks separate words; `'…'` is literal; `"…"` is literal except for `\"`, `\\`,
//! `\$` and `` \` ``; a backslash outside quotes escapes the next character. Not supported:
//! variables, globbing, `~`, operators — the command is executed directly, so
//! [`shell_syntax`] finds them for the caller to refuse rather than run them as words.
#![forbid(unsafe_code)]

/// Splits `text` into words; an unbalanced quote or a trailing backslash is an error.
pub fn split(text: &str) -> Result<Vec<String>, String> {
    // The quotes, blanks and backslash are ASCII: the words of valid UTF-8 are valid UTF-8.
    let words = split_bytes(text.as_bytes())?;
    Ok(words
        .into_iter()
        .map(|w| String::from_utf8_lossy(&w).into_owned())
        .collect())
}

/// [`split`] over bytes: a command given as an argument is split without ever being decoded,
/// so that invalid UTF-8 reaches the program exactly as it was given (decoding would turn it
/// into U+FFFD).
pub fn split_bytes(text: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    Ok(walk(text)?.words)
}

/// The first character of `text` that a shell would have interpreted and [`split`] keeps as a
/// literal part of a word: outside quotes `|`, `&`, `;`, `<`, `>`, `(`, `)`, `$`, `` ` ``,
/// `*`, `?`, `[`, and `~` or `#` at the start of a word; inside double quotes an expansion
/// (`$` before a name, a digit, `{`, `(` or a special parameter; `` ` ``). `None` for text
/// that a shell splits exactly as [`split`] does (or that does not split at all).
pub fn shell_syntax(text: &[u8]) -> Option<char> {
    walk(text).ok()?.syntax.map(char::from)
}

/// What one walk over a command string finds: its words, and the first shell syntax in it.
struct Walked {
    words: Vec<Vec<u8>>,
    syntax: Option<u8>,
}

/// Outside quotes, a shell's operators, expansions and globs.
const UNQUOTED_SYNTAX: &[u8] = b"|&;<>()$`*?[";

/// After `$`, what makes it an expansion inside double quotes: a name, a digit, an opening
/// brace (by its code, so that no brace stands unmatched in this file's text), `(`, or a special
/// parameter.
fn expands(next: Option<u8>) -> bool {
    const OPEN_BRACE: u8 = 0x7b;
    next.is_some_and(|b| b.is_ascii_alphanumeric() || b == OPEN_BRACE || b"_(@*#?$!-".contains(&b))
}

/// Splits `text` into words as [`split_bytes`] documents, noting the first shell syntax.
fn walk(text: &[u8]) -> Result<Walked, String> {
    let shown = || String::from_utf8_lossy(text).into_owned();
    let mut words = Vec::new();
    let mut word = Vec::new();
    let mut syntax = None;
    let mut note = |b: u8| {
        syntax.get_or_insert(b);
    };
    let mut in_word = false;
    let mut bytes = text.iter().copied().peekable();
    while let Some(b) = bytes.next() {
        match b {
            b' ' | b'\t' | b'\n' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            b'\'' => {
                in_word = true;
                loop {
                    match bytes.next() {
                        Some(b'\'') => break,
                        Some(b) => word.push(b),
                        None => return Err(format!("unbalanced single quote in {:?}", shown())),
                    }
                }
            }
            b'"' => {
                in_word = true;
                loop {
                    match bytes.next() {
                        Some(b'"') => break,
                        Some(b'\\') => match bytes.next() {
                            Some(b @ (b'"' | b'\\' | b'$' | b'`')) => word.push(b),
                            Some(b) => word.extend_from_slice(&[b'\\', b]),
                            None => {
                                return Err(format!("unbalanced double quote in {:?}", shown()))
                            }
                        },
                        Some(b) => {
                            if b == b'`' || (b == b'$' && expands(bytes.peek().copied())) {
                                note(b);
                            }
                            word.push(b);
                        }
                        None => return Err(format!("unbalanced double quote in {:?}", shown())),
                    }
                }
            }
            b'\\' => match bytes.next() {
                Some(b) => {
                    in_word = true;
                    word.push(b);
                }
                None => return Err(format!("trailing backslash in {:?}", shown())),
            },
            b => {
                let starts_word = !in_word;
                if UNQUOTED_SYNTAX.contains(&b) || (starts_word && (b == b'~' || b == b'#')) {
                    note(b);
                }
                in_word = true;
                word.push(b);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(Walked { words, syntax })
}

/// `text` with control characters written as Rust escapes (`\n`, `\u{1b}`), so that a value
/// quoted in a one-line message or a table cell (an argument, a label read from a damaged
/// file) cannot break the line or drive the terminal. The invisible characters that reorder
/// or break a line (bidirectional overrides and isolates, line and paragraph separators) are
/// escaped too: they would make an echoed path read differently from what it is.
pub fn escape_controls(text: &str) -> String {
    let mut line = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() || reorders_or_breaks(c) {
            line.extend(c.escape_default());
        } else {
            line.push(c);
        }
    }
    line
}

/// U+061C, U+200E/F, U+2028/9, U+202A–E, U+2066–9: marks, separators, embeddings, overrides
/// and isolates of Unicode's bidirectional algorithm (the "Trojan Source" characters).
fn reorders_or_breaks(c: char) -> bool {
    matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Quotes words for display so that [`split`] (and a shell) gives them back.
pub fn quote(words: &[String]) -> String {
    words
        .iter()
        .map(|w| {
            if !w.is_empty()
                && w.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b))
            {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `text` with its spaces made no-break spaces, so that the view's folding (`view::units::fold`) keeps it on one line
/// (`64.0 MiB`).
pub fn unbreakable(text: &str) -> String {
    text.replace(' ', "\u{a0}")
}

/// A CSV field as RFC 4180 writes it (quoted, quotes doubled, when it holds a comma, a quote or
/// a line break), and never a formula: text that a spreadsheet would evaluate — starting with
/// `=`, `+`, `-`, `@`, a tab or a carriage return, and not a plain number — gets a leading `'`,
/// as OWASP's advice on CSV injection has it (a command named `=HYPERLINK(…)` stays text).
pub fn csv_field(text: &str) -> String {
    let formula =
        text.starts_with(['=', '+', '-', '@', '\t', '\r']) && text.parse::<f64>().is_err();
    let text = if formula {
        format!("'{text}")
    } else {
        text.to_string()
    };
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text
    }
}

/// Text as Markdown shows it, never read as HTML, a table border, a link, a code span, emphasis,
/// math or the start of a block: `&`, `<`, `>` as entities; `\\`, `` ` ``, `*`, `[`, `]`,
/// `|`, `~`, `$` backslash-escaped, and `_` where it could open or close emphasis (not between
/// two letters or digits, so `steal_ns` stays as written); a first character that would start
/// a heading, a list or a rule (`#`, `- `, `+ `, `--`, `1. `) escaped; control
/// characters as [`escape_controls`] shows them, so that a cell or a list item stays one line.
/// For table cells, list items and titles (not code blocks, where everything is literal).
pub fn markdown_text(text: &str) -> String {
    let text = escape_controls(text);
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    let is_word = |i: Option<&char>| i.is_some_and(|c| c.is_alphanumeric());
    let leading_digits = chars.iter().take_while(|c| c.is_ascii_digit()).count();
    for (i, &c) in chars.iter().enumerate() {
        let next = chars.get(i + 1);
        let ends_marker = next.is_none_or(|n| n.is_whitespace());
        let block_start = (i == 0 && c == '#')
            || (i == 0 && matches!(c, '+' | '-') && (ends_marker || next == Some(&'-')))
            || (i == leading_digits && i > 0 && matches!(c, '.' | ')') && ends_marker);
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\\' | '`' | '*' | '[' | ']' | '|' | '~' | '$' => {
                out.push('\\');
                out.push(c);
            }
            '_' if !(i > 0 && is_word(chars.get(i - 1)) && is_word(chars.get(i + 1))) => {
                out.push_str("\\_");
            }
            _ if block_start => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn splits_like_a_shell() {
        assert_eq!(
            split(r#"python3.11 -c "import json""#).unwrap(),
            ["python3.11", "-c", "import json"]
        );
        assert_eq!(split(r"a\ b 'c d' e").unwrap(), ["a b", "c d", "e"]);
        assert_eq!(split(r#""a\"b" '' x"#).unwrap(), ["a\"b", "", "x"]);
        assert_eq!(split("  ").unwrap(), Vec::<String>::new());
        assert!(split("echo 'oops")
            .unwrap_err()
            .contains("unbalanced single quote"));
        assert!(split("echo \"oops")
            .unwrap_err()
            .contains("unbalanced double quote"));
        assert!(split("echo \\").unwrap_err().contains("trailing backslash"));
        assert_eq!(escape_controls("a\nb\u{1b}[31m"), "a\\nb\\u{1b}[31m");
        assert_eq!(
            escape_controls("x\u{202e}y\u{2066}é"),
            "x\\u{202e}y\\u{2066}é"
        );
    }

    #[test]
    fn shell_syntax_is_found_outside_quotes_and_in_double_quoted_expansions() {
        let found = |t: &str| shell_syntax(t.as_bytes());
        for (text, syntax) in [
            ("ls | wc -l", '|'),
            ("sleep 1 &", '&'),
            ("true; false", ';'),
            ("cat < f", '<'),
            ("echo > f", '>'),
            ("(cd /)", '('),
            ("echo $HOME", '$'),
            ("echo `id`", '`'),
            ("echo *", '*'),
            ("ls ?", '?'),
            ("ls [ab]", '['),
            ("ls ~/x", '~'),
            ("echo a #b", '#'),
            ("echo \"$HOME\"", '$'),
            ("echo \"${x}\"", '$'),
            ("echo \"`id`\"", '`'),
            ("a 'b' | c", '|'),
        ] {
            assert_eq!(found(text), Some(syntax), "{text}");
        }
        for text in [
            "python3 -c 'import json; print(1 < 2)'",
            "python3 -c \"import os; print(os.sep)\"",
            "grep -E 'a|b' f",
            "echo a\\|b \\$HOME \\*",
            "echo \"\\$HOME costs 5$\"",
            "ls a~b a#b",
            "sleep 0.1",
            "echo 'unbalanced |",
        ] {
            assert_eq!(found(text), None, "{text}");
        }
    }

    #[test]
    fn csv_fields_are_never_formulas_and_numbers_stay_numbers() {
        assert_eq!(csv_field("=HYPERLINK(\"x\")"), "\"'=HYPERLINK(\"\"x\"\")\"");
        assert_eq!(csv_field("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(csv_field("+cmd"), "'+cmd");
        assert_eq!(
            csv_field("-2+3+cmd|' /C calc'!A0"),
            "'-2+3+cmd|' /C calc'!A0"
        );
        assert_eq!(csv_field("\tx"), "'\tx");
        assert_eq!(csv_field("-88628"), "-88628");
        assert_eq!(csv_field("-1.5e3"), "-1.5e3");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("plain"), "plain");
    }

    #[test]
    fn markdown_text_shows_html_as_text() {
        assert_eq!(
            markdown_text("<img src=x onerror=alert(1)> & a|b"),
            "&lt;img src=x onerror=alert(1)&gt; &amp; a\\|b"
        );
    }

    #[test]
    fn markdown_text_leaves_no_markup_a_renderer_would_read() {
        assert_eq!(
            markdown_text("[x](javascript:alert(1)) *em* `c` ~s~ $m$ a\\b"),
            "\\[x\\](javascript:alert(1)) \\*em\\* \\`c\\` \\~s\\~ \\$m\\$ a\\\\b"
        );
        // `_` only where it could open or close emphasis.
        assert_eq!(markdown_text("steal_ns _x_ a_"), "steal_ns \\_x\\_ a\\_");
        // A first character that would start a block; the same characters later are text.
        assert_eq!(markdown_text("# a # b"), "\\# a # b");
        assert_eq!(markdown_text("- a - b"), "\\- a - b");
        assert_eq!(markdown_text("12. a 1.5"), "12\\. a 1.5");
        assert_eq!(markdown_text("---"), "\\---");
        for text in ["1.5 ms", "-3.2", "+48.3%", "=x"] {
            assert_eq!(markdown_text(text), text);
        }
        // One line: a newline is shown escaped, its backslash as text.
        assert_eq!(markdown_text("a\n<b>"), "a\\\\n&lt;b&gt;");
    }

    #[test]
    fn bytes_are_split_without_being_decoded() {
        let words = split_bytes(b"prog '\xff\xfe x' a\\\x80b \"\xc3\"").unwrap();
        assert_eq!(words, [&b"prog"[..], b"\xff\xfe x", b"a\x80b", b"\xc3"]);
        assert!(split_bytes(b"'\xff")
            .unwrap_err()
            .contains("unbalanced single quote"));
    }

    proptest! {
        #[test]
        fn split_bytes_agrees_with_split_on_text(text in ".*") {
            let bytes: Vec<Vec<u8>> = split(&text)
                .map(|w| w.into_iter().map(String::into_bytes).collect())
                .unwrap_or_default();
            prop_assert_eq!(split_bytes(text.as_bytes()).unwrap_or_default(), bytes);
        }

        #[test]
        fn quote_then_split_gives_the_words_back(words in proptest::collection::vec(".*", 1..6)) {
            prop_assert_eq!(split(&quote(&words)).unwrap(), words);
        }
    }
}
