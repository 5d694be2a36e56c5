//! `coldtrace --version`: one line with what a bug report needs to know about the binary.
#![forbid(unsafe_code)]

/// `coldtrace 0.1.0 (commit 70c398f, x86_64-unknown-linux-musl, full build)`: the version, the
/// git commit it was built from (`unknown` outside a git checkout), the target triple, and
/// whether it is the full or the runner-only build (see `[features]` in Cargo.toml).
pub fn line() -> String {
    format!(
        "coldtrace {} (commit {}, {}, {})\n",
        env!("CARGO_PKG_VERSION"),
        env!("COLDTRACE_COMMIT"),
        env!("COLDTRACE_TARGET"),
        build()
    )
}

/// Which build this is: the name `--version` gives it.
pub const fn build() -> &'static str {
    if cfg!(feature = "full") {
        "full build"
    } else {
        "runner-only build"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_that_fits_80_columns_in_the_longest_case() {
        let text = line();
        assert_eq!(text.lines().count(), 1, "{text:?}");
        assert!(text.ends_with(")\n"), "{text:?}");
        // The longest it gets: the aarch64 triple, an unknown commit, the runner-only build.
        let longest = format!(
            "coldtrace {} (commit unknown, aarch64-unknown-linux-musl, runner-only build)",
            env!("CARGO_PKG_VERSION")
        );
        assert!(longest.len() <= 80, "{longest}");
    }
}
