//! PLACEHOLDER — replaced by the cache module from branch helper-state.
#![forbid(unsafe_code)]
use std::path::PathBuf;
#[derive(Debug)]
pub struct CacheError(pub String);
impl std::fmt::Display for CacheError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
pub struct FileSet;
#[derive(Clone, Debug, Default)]
pub struct Residency {
    pub resident_ratio: Option<f64>,
}
crate::serialize_struct!(Residency { resident_ratio });
pub struct EvictReport {
    pub files: u64,
    pub bytes: u64,
    pub failed: u64,
}
impl FileSet {
    pub fn collect(_: &[PathBuf]) -> Result<FileSet, CacheError> {
        Err(CacheError("not built".into()))
    }
    pub fn residency(&self) -> Residency {
        Residency::default()
    }
    pub fn evict(&self) -> EvictReport {
        EvictReport {
            files: 0,
            bytes: 0,
            failed: 0,
        }
    }
}
pub fn drop_caches() -> Result<(), CacheError> {
    Err(CacheError("not built".into()))
}
pub fn drop_caches_permitted() -> bool {
    false
}
