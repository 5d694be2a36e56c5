//! PLACEHOLDER — replaced by the context module from branch helper-state.
#![forbid(unsafe_code)]
use std::path::Path;
#[derive(Clone, Debug, Default)]
pub struct SystemContext {
    pub boot_id: Option<String>,
    pub uptime_s: Option<f64>,
    pub kernel_release: Option<String>,
    pub cpu_count: Option<u32>,
}
crate::serialize_struct!(SystemContext {
    boot_id,
    uptime_s,
    kernel_release,
    cpu_count
});
impl SystemContext {
    pub fn read() -> Self {
        Self::default()
    }
}
#[derive(Clone, Debug, Default)]
pub struct Capabilities {
    pub cachestat: bool,
}
crate::serialize_struct!(Capabilities { cachestat });
impl Capabilities {
    pub fn probe() -> Self {
        Self::default()
    }
}
#[derive(Clone, Debug, Default)]
pub struct EnvMarkers {
    pub virtual_env: Option<String>,
}
crate::serialize_struct!(EnvMarkers { virtual_env });
impl EnvMarkers {
    pub fn read() -> Self {
        Self::default()
    }
}
#[derive(Clone, Debug, Default)]
pub struct ProgramInfo {
    pub path: String,
}
crate::serialize_struct!(ProgramInfo { path });
impl ProgramInfo {
    pub fn inspect(p: &Path) -> Self {
        ProgramInfo {
            path: p.display().to_string(),
        }
    }
}
pub fn read_boot_id() -> Option<String> {
    None
}
pub fn read_uptime_s() -> Option<f64> {
    None
}
