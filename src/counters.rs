//! PLACEHOLDER — replaced by the counters module from branch helper-state.
#![forbid(unsafe_code)]
#[derive(Clone, Debug, Default)]
pub struct SystemSnapshot;
impl SystemSnapshot {
    pub fn read() -> Self {
        SystemSnapshot
    }
}
#[derive(Clone, Debug, Default)]
pub struct SystemDelta {
    pub pgmajfault: Option<u64>,
    pub psi_io_some_us: Option<u64>,
}
crate::serialize_struct!(SystemDelta {
    pgmajfault,
    psi_io_some_us
});
impl SystemDelta {
    pub fn between(_: &SystemSnapshot, _: &SystemSnapshot) -> Self {
        Self::default()
    }
}
#[derive(Clone, Debug, Default)]
pub struct ChildIo {
    pub read_bytes: Option<u64>,
    pub rchar: Option<u64>,
}
crate::serialize_struct!(ChildIo { read_bytes, rchar });
impl ChildIo {
    pub fn read(_: i32) -> Option<Self> {
        None
    }
}
#[derive(Clone, Debug, Default)]
pub struct ChildSched {
    pub runqueue_wait_ns: Option<u64>,
}
crate::serialize_struct!(ChildSched { runqueue_wait_ns });
impl ChildSched {
    pub fn read(_: i32) -> Option<Self> {
        None
    }
}
