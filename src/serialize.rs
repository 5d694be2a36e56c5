//! Serialize-only wire types without a proc-macro: the `serialize_struct!` macro.
//! A leaf: it depends on nothing in the crate, and everything may use it.
//!
//! The shipped binary is linked statically (`.cargo/config.toml`), and a crate-wide
//! `+crt-static` cannot build proc-macro crates for the host without `--target`; so instead of
//! `serde_derive`, wire types implement `Serialize` through [`serialize_struct!`](crate::serialize_struct), which writes
//! the fields in declaration order under their Rust names. `Option::None` becomes `null`.
#![forbid(unsafe_code)]

/// Implements `serde::Serialize` for a struct with named fields, in the order given.
#[macro_export]
macro_rules! serialize_struct {
    ($ty:ty { $($field:ident),* $(,)? }) => {
        $crate::serialize_struct!($ty { $($field),* } optional {});
    };
    ($ty:ty { $($field:ident),* $(,)? } optional { $($opt:ident),* $(,)? }) => {
        impl ::serde::Serialize for $ty {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                use ::serde::ser::SerializeStruct;
                const FIELDS: &[&str] = &[$(stringify!($field),)* $(stringify!($opt),)*];
                let mut state = serializer.serialize_struct(stringify!($ty), FIELDS.len())?;
                $(state.serialize_field(stringify!($field), &self.$field)?;)*
                $(
                    match &self.$opt {
                        Some(value) => state.serialize_field(stringify!($opt), value)?,
                        None => state.skip_field(stringify!($opt))?,
                    }
                )*
                state.end()
            }
        }
    };
}

#[cfg(test)]
mod tests {
    struct Probe {
        wall_ns: u64,
        label: Option<String>,
    }
    serialize_struct!(Probe { wall_ns, label });

    #[test]
    fn fields_in_order_and_none_as_null() {
        let text = serde_json::to_string(&Probe {
            wall_ns: 5,
            label: None,
        })
        .unwrap();
        assert_eq!(text, r#"{"wall_ns":5,"label":null}"#);
    }
}
