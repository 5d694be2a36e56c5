//! The inventory in `syscalls/README.md` is kept true: its per-file counts of lines, `unsafe`
//! blocks, `unsafe fn` and extern declarations are recomputed here from `src/raw/`; no other
//! source file of the workspace may hold any unsafe code (an `unsafe` of any kind, an extern
//! block, `#[no_mangle]`, `#[export_name]`, `#[link_section]`), nor allow it; and every crate
//! root (test crates, examples and fuzz targets included) forbids it. The files are read as tokens (comments and literals dropped), so spacing,
//! line breaks and comments neither hide nor invent anything.
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};

#[derive(Debug, PartialEq, Eq, Default, Clone, Copy)]
struct Counts {
    lines: usize,
    blocks: usize,
    unsafe_fns: usize,
    unsafe_impls: usize,
    extern_fns: usize,
}

/// A token: an identifier or keyword, a literal (its kind only), or one punctuation character.
#[derive(Debug, PartialEq, Eq, Clone)]
enum Token {
    Ident(String),
    Str,
    Literal,
    Punct(char),
}

fn ident(t: &Token, name: &str) -> bool {
    matches!(t, Token::Ident(i) if i == name)
}

/// Rust source as tokens: comments (nested block comments too) dropped, string, char and
/// number literals reduced to their kind, lifetimes dropped.
fn tokens(text: &str) -> Vec<Token> {
    let c: Vec<char> = text.chars().collect();
    let (mut out, mut i) = (Vec::new(), 0);
    while i < c.len() {
        match c[i] {
            ch if ch.is_whitespace() => i += 1,
            '/' if at(&c, i, 1) == '/' => {
                while i < c.len() && c[i] != '\n' {
                    i += 1;
                }
            }
            '/' if at(&c, i, 1) == '*' => {
                let mut depth = 0;
                loop {
                    if i >= c.len() {
                        break;
                    } else if c[i] == '/' && at(&c, i, 1) == '*' {
                        depth += 1;
                        i += 2;
                    } else if c[i] == '*' && at(&c, i, 1) == '/' {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
            }
            '"' => {
                i = skip_string(&c, i + 1);
                out.push(Token::Str);
            }
            '\'' => {
                if at(&c, i, 1) == '\\' {
                    i += 2;
                    while i < c.len() && c[i] != '\'' {
                        i += 1;
                    }
                    i += 1;
                    out.push(Token::Literal);
                } else if at(&c, i, 2) == '\'' {
                    i += 3;
                    out.push(Token::Literal);
                } else {
                    i += 1; // a lifetime: its name follows as an identifier, dropped below
                    while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                        i += 1;
                    }
                }
            }
            ch if ch.is_ascii_digit() => {
                while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_' || c[i] == '.') {
                    if c[i] == '.' && !c.get(i + 1).is_some_and(char::is_ascii_digit) {
                        break;
                    }
                    i += 1;
                }
                out.push(Token::Literal);
            }
            ch if ch.is_alphabetic() || ch == '_' => {
                let start = i;
                while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                    i += 1;
                }
                let word: String = c[start..i].iter().collect();
                let prefix = matches!(word.as_str(), "r" | "b" | "br" | "c" | "cr");
                let hashes = c[i..].iter().take_while(|&&h| h == '#').count();
                let quote = at(&c, i, hashes) == '"' && (hashes == 0 || word.ends_with('r'));
                if prefix && quote {
                    i = skip_prefixed_string(&c, i);
                    out.push(Token::Str);
                } else if word == "r" && at(&c, i, 0) == '#' {
                    i += 1; // a raw identifier: `r#unsafe` is the identifier `unsafe`
                } else if word == "b" && at(&c, i, 0) == '\'' {
                    i += if at(&c, i, 1) == '\\' { 4 } else { 3 };
                    while i < c.len() && c[i - 1] != '\'' {
                        i += 1;
                    }
                    out.push(Token::Literal);
                } else {
                    out.push(Token::Ident(word));
                }
            }
            ch => {
                out.push(Token::Punct(ch));
                i += 1;
            }
        }
    }
    out
}

/// The character `k` after `i`, or NUL past the end.
fn at(c: &[char], i: usize, k: usize) -> char {
    c.get(i + k).copied().unwrap_or('\0')
}

/// The index after the closing quote of a string whose opening quote is just before `i`.
fn skip_string(c: &[char], mut i: usize) -> usize {
    while i < c.len() && c[i] != '"' {
        i += if c[i] == '\\' { 2 } else { 1 };
    }
    i + 1
}

/// The index after a string whose prefix (`r`, `b`, `br`, `c`, `cr`) ends just before `i`:
/// `"…"`, or raw `#…#"…"#…#`.
fn skip_prefixed_string(c: &[char], mut i: usize) -> usize {
    let mut hashes = 0;
    while c.get(i) == Some(&'#') {
        hashes += 1;
        i += 1;
    }
    if hashes == 0
        && c.get(i.wrapping_sub(1)) != Some(&'r')
        && c.get(i.wrapping_sub(2)) != Some(&'r')
    {
        return skip_string(c, i + 1);
    }
    i += 1; // the opening quote
    while i < c.len() {
        if c[i] == '"' && (1..=hashes).all(|k| c.get(i + k) == Some(&'#')) {
            return i + 1 + hashes;
        }
        i += 1;
    }
    i
}

/// `unsafe {`, `unsafe fn`, `unsafe extern "ABI" fn`, `unsafe impl`, and the `fn`s of
/// `extern "ABI" { … }` (also `unsafe extern "ABI" { … }`).
fn count(text: &str) -> Counts {
    let t = tokens(text);
    let mut c = Counts {
        lines: text.lines().count(),
        ..Counts::default()
    };
    let mut i = 0;
    while i < t.len() {
        let next = |k: usize| t.get(i + k);
        if ident(&t[i], "unsafe") {
            match (next(1), next(2), next(3)) {
                (Some(Token::Punct('{')), _, _) => c.blocks += 1,
                (Some(n), _, _) if ident(n, "fn") => c.unsafe_fns += 1,
                (Some(n), _, _) if ident(n, "impl") => c.unsafe_impls += 1,
                (Some(e), Some(Token::Str), Some(f)) if ident(e, "extern") && ident(f, "fn") => {
                    c.unsafe_fns += 1
                }
                _ => {}
            }
        }
        if ident(&t[i], "extern")
            && next(1) == Some(&Token::Str)
            && next(2) == Some(&Token::Punct('{'))
        {
            let (mut depth, mut j) = (0, i + 2);
            while j < t.len() {
                match &t[j] {
                    Token::Punct('{') => depth += 1,
                    Token::Punct('}') => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    // (not the `fn` of a function-pointer type: `extern "C" fn(…)`)
                    f if depth == 1 && ident(f, "fn") && t[j - 1] != Token::Str => {
                        c.extern_fns += 1
                    }
                    _ => {}
                }
                j += 1;
            }
            i = j;
        }
        i += 1;
    }
    c
}

/// What makes a file outside the room hold unsafe code, or let a module allow it.
fn unsafe_things(text: &str) -> Vec<String> {
    let t = tokens(text);
    let mut found = Vec::new();
    for (i, tok) in t.iter().enumerate() {
        let next = |k: usize| t.get(i + k);
        if ident(tok, "unsafe") {
            found.push("`unsafe`".to_string());
        }
        if ident(tok, "extern")
            && next(1) == Some(&Token::Str)
            && next(2) == Some(&Token::Punct('{'))
        {
            found.push("an extern block".to_string());
        }
        if *tok == Token::Punct('[') {
            if let Some(Token::Ident(name)) = next(1) {
                if ["no_mangle", "export_name", "link_section"].contains(&name.as_str()) {
                    found.push(format!("#[{name}]"));
                }
            }
        }
        if ident(tok, "unsafe_code")
            && i >= 2
            && ["allow", "warn", "expect"]
                .iter()
                .any(|l| ident(&t[i - 2], l))
        {
            found.push("a lint level below forbid for unsafe_code".to_string());
        }
    }
    found
}

/// Whether the file says `#![forbid(unsafe_code)]`.
fn forbids(text: &str) -> bool {
    let t = tokens(text);
    t.windows(8).any(|w| {
        w[0] == Token::Punct('#')
            && w[1] == Token::Punct('!')
            && w[2] == Token::Punct('[')
            && ident(&w[3], "forbid")
            && w[4] == Token::Punct('(')
            && ident(&w[5], "unsafe_code")
    })
}

/// Rows of the README's inventory table:
/// `| \`raw/mod.rs\` | 265 | 17 | 1 (…) | 0 | 0 | library |`,
/// with the builds that compile the file.
fn readme_rows(readme: &str) -> Vec<(String, Counts, String)> {
    let number = |cell: &str| -> usize {
        let digits: String = cell
            .trim()
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits
            .parse()
            .unwrap_or_else(|_| panic!("not a count: {cell:?}"))
    };
    readme
        .lines()
        .filter(|l| l.starts_with("| `raw/"))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let file = cells[1].trim_matches('`').to_string();
            let counts = Counts {
                lines: number(cells[2]),
                blocks: number(cells[3]),
                unsafe_fns: number(cells[4]),
                unsafe_impls: number(cells[5]),
                extern_fns: number(cells[6]),
            };
            (file, counts, cells[7].to_string())
        })
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            if !path.ends_with("target") && !path.ends_with(".git") {
                rust_files(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn the_readme_inventory_matches_the_unsafe_room() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(crate_dir.join("README.md")).expect("README.md");
    let rows = readme_rows(&readme);
    let mut files = Vec::new();
    rust_files(&crate_dir.join("src/raw"), &mut files);
    let mut names: Vec<String> = files
        .iter()
        .map(|f| format!("raw/{}", f.file_name().expect("a name").to_string_lossy()))
        .collect();
    let mut listed: Vec<String> = rows.iter().map(|(f, _, _)| f.clone()).collect();
    names.sort();
    listed.sort();
    assert_eq!(listed, names, "one README row per file of src/raw/");
    let (mut library, mut spawner) = (Counts::default(), Counts::default());
    for (file, claimed, builds) in &rows {
        let text = std::fs::read_to_string(crate_dir.join("src").join(file)).expect(file);
        let actual = count(&text);
        eprintln!("{file}: {actual:?}");
        assert_eq!(&actual, claimed, "{file}: the README's counts are stale");
        for (total, build) in [(&mut library, "library"), (&mut spawner, "spawner")] {
            if builds.split(", ").any(|b| b == build) {
                total.lines += actual.lines;
                total.blocks += actual.blocks;
                total.unsafe_fns += actual.unsafe_fns;
                total.unsafe_impls += actual.unsafe_impls;
                total.extern_fns += actual.extern_fns;
            }
        }
    }
    for total in [library, spawner] {
        let sentence = format!(
            "{} blocks, {} `unsafe fn`, {} `unsafe impl`, {} extern fns, {} lines",
            total.blocks, total.unsafe_fns, total.unsafe_impls, total.extern_fns, total.lines
        );
        assert!(
            readme.contains(&sentence),
            "the README's totals should read: {sentence}"
        );
    }
}

/// A file compiled as the root of a crate (a module file inherits its root's lint levels, and
/// no module outside the room may lower them: checked above).
fn is_crate_root(file: &Path) -> bool {
    let dir = file
        .parent()
        .and_then(Path::file_name)
        .and_then(|d| d.to_str());
    let name = file.file_name().and_then(|n| n.to_str());
    matches!(dir, Some("tests" | "examples" | "fuzz_targets" | "bench"))
        || (matches!(dir, Some("src" | "spawner")) && matches!(name, Some("lib.rs" | "main.rs")))
}

#[test]
fn no_unsafe_outside_the_room_and_every_crate_forbids_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for dir in [
        "src",
        "tests",
        "syscalls/src",
        "syscalls/tests",
        "syscalls/examples",
        "fuzz",
    ] {
        if root.join(dir).is_dir() {
            rust_files(&root.join(dir), &mut files);
        }
    }
    let room = root.join("syscalls/src/raw");
    // The crate roots that include `raw` deny (a module cannot allow what its root forbids):
    // the library, and the spawner program.
    let syscalls_root = root.join("syscalls/src/lib.rs");
    let spawner_root = root.join("syscalls/src/spawner/main.rs");
    let mut offenders = Vec::new();
    for file in files.iter().filter(|f| !f.starts_with(&room)) {
        let text = std::fs::read_to_string(file).expect("a source file");
        let found = unsafe_things(&text);
        if !found.is_empty() {
            offenders.push(format!("{}: {}", file.display(), found.join(", ")));
        }
        let denying_root = *file == syscalls_root || *file == spawner_root;
        if is_crate_root(file) && !denying_root && !forbids(&text) {
            offenders.push(format!("{}: no #![forbid(unsafe_code)]", file.display()));
        }
    }
    assert!(
        offenders.is_empty(),
        "outside syscalls/src/raw/: {offenders:#?}"
    );
    for denying in [&syscalls_root, &spawner_root] {
        let text = std::fs::read_to_string(denying).expect("a crate root");
        assert!(
            text.contains("#![deny(unsafe_code)]"),
            "{}",
            denying.display()
        );
    }
}

/// The reader itself: what it must see, and what it must not be fooled by.
#[test]
fn the_token_reader_sees_unsafe_code_however_it_is_spelled() {
    let counted = count(
        "unsafe{ a() }\nunsafe\n{ b() }\nunsafe extern \"C\" fn f() {}\nunsafe fn g() {}\n\
         extern \"C\" {\n    fn h(f: extern \"C\" fn(i32));\n    pub fn i(x: i32) -> i32;\n}\n\
         // unsafe { in a comment }\n/* unsafe fn /* nested */ x() */\nlet s = \"unsafe {\";\n\
         let r = r#\"unsafe { \"# ;\nlet c = '{'; let l: &'static str = \"\";\n\
         unsafe impl Sync for S {}\n",
    );
    assert_eq!(
        counted,
        Counts {
            lines: 15,
            blocks: 2,
            unsafe_fns: 2,
            unsafe_impls: 1,
            extern_fns: 2
        }
    );
    for bad in [
        "fn f() { unsafe{ } }",
        "unsafe extern \"C\" fn f() {}",
        "#[no_mangle] pub extern \"C\" fn f() {}",
        "#[unsafe(no_mangle)] fn f() {}",
        "#[export_name = \"x\"] fn f() {}",
        "extern \"C\" { fn f(); }",
        "unsafe impl Send for X {}",
        "#![allow(unsafe_code)]",
        "let r#unsafe = 1; unsafe\n{}",
    ] {
        assert!(!unsafe_things(bad).is_empty(), "not seen: {bad}");
    }
    for fine in [
        "// unsafe { }",
        "let s = \"#[no_mangle] unsafe {\";",
        "#![forbid(unsafe_code)]",
        "/// `unsafe` in a doc comment\nfn f() {}",
        "let c = b'\\''; let s = br#\"unsafe\"#;",
    ] {
        assert!(unsafe_things(fine).is_empty(), "seen in: {fine}");
    }
    assert!(forbids("//! doc\n#![forbid(unsafe_code)]\n"));
    assert!(!forbids("#![deny(unsafe_code)]"));
}

/// The kernel source files named in `text` (`kernel/exit.c`, `tools/include/linux/…h`).
fn kernel_files(text: &str) -> Vec<String> {
    const ROOTS: [&str; 6] = [
        "kernel/",
        "mm/",
        "fs/",
        "tools/include/",
        "include/",
        "arch/",
    ];
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    for (i, _) in text.char_indices() {
        let boundary =
            i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || b"_/.-".contains(&bytes[i - 1]));
        if !boundary || !ROOTS.iter().any(|r| text[i..].starts_with(r)) {
            continue;
        }
        let len = text[i..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || "_/.-".contains(c)))
            .unwrap_or(text.len() - i);
        let path = text[i..i + len].trim_end_matches('.');
        if path.ends_with(".c") || path.ends_with(".h") {
            found.push(path.to_string());
        }
    }
    found
}

/// A proof that rests on what the kernel does, beyond its man pages, cites the function and
/// the version read: every kernel source file named in `src/raw/` has a row in the inventory's
/// table of kernel internals, each row says which Linux it was read in, and each function of
/// the table is cited in `src/raw/` as it is written there.
#[test]
fn proofs_that_rest_on_kernel_internals_cite_the_function_and_the_version_read() {
    let raw = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/raw");
    let inventory = std::fs::read_to_string(raw.join("inventory.md")).expect("inventory.md");
    let table = inventory
        .split("## Kernel internals the proofs rest on")
        .nth(1)
        .expect("inventory.md has a table of kernel internals");
    let rows: Vec<Vec<&str>> = table
        .lines()
        .take_while(|l| !l.starts_with("## "))
        .filter(|l| l.starts_with("| `"))
        .map(|l| l.split('|').map(str::trim).collect())
        .collect();
    assert!(!rows.is_empty(), "no row in the table of kernel internals");
    let mut files = Vec::new();
    rust_files(&raw, &mut files);
    let sources: Vec<(PathBuf, String)> = files
        .into_iter()
        .map(|f| {
            let text = std::fs::read_to_string(&f).expect("a source file");
            (f, text)
        })
        .collect();
    for (file, text) in &sources {
        for path in kernel_files(text) {
            assert!(
                rows.iter().any(|r| r[2] == path),
                "{}: cites {path}, which the table of kernel internals does not list",
                file.display()
            );
        }
    }
    for row in &rows {
        let read_in = row[4];
        assert!(
            read_in.starts_with("Linux ") && read_in[6..].starts_with(|c: char| c.is_ascii_digit()),
            "{}: no version read: {read_in:?}",
            row[1]
        );
        for function in row[1].split(", ") {
            assert!(
                sources.iter().any(|(_, text)| text.contains(function)),
                "{function} ({}) is cited nowhere in src/raw/",
                row[2]
            );
        }
    }
}

/// The room's own page (`raw/mod.rs`) names every file of the room.
#[test]
fn the_room_names_every_file_it_holds() {
    let raw = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/raw");
    let page = std::fs::read_to_string(raw.join("mod.rs")).expect("raw/mod.rs");
    let doc: String = page
        .lines()
        .take_while(|l| l.starts_with("//!"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut files = Vec::new();
    rust_files(&raw, &mut files);
    for file in files {
        let name = file
            .file_name()
            .expect("a name")
            .to_string_lossy()
            .into_owned();
        assert!(
            doc.contains(&format!("`{name}`")),
            "raw/mod.rs does not name `{name}` among the room's files"
        );
    }
}
