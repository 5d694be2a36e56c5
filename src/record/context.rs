//! `coldtrace context`'s document: what `batch.json` records as its context, read now, with
//! nothing run. Wire type only; reading the machine is [`crate::measure::context`]'s job.
#![forbid(unsafe_code)]

use crate::measure::context::{Capabilities, EnvMarkers, SystemContext};

/// The machine's context block.
pub struct ContextDocument {
    /// [`crate::record::CONTEXT_SCHEMA`].
    pub schema: &'static str,
    /// Kernel, boot, CPU, memory, load.
    pub system: SystemContext,
    /// What can be measured here.
    pub capabilities: Capabilities,
    /// `VIRTUAL_ENV` / `CONDA_PREFIX`.
    pub environment: EnvMarkers,
    /// coldtrace's version.
    pub coldtrace_version: &'static str,
}
crate::serialize_struct!(ContextDocument {
    schema,
    system,
    capabilities,
    environment,
    coldtrace_version
});

impl ContextDocument {
    /// Reads the context of this machine now.
    pub fn read() -> ContextDocument {
        ContextDocument {
            schema: crate::record::CONTEXT_SCHEMA,
            system: SystemContext::read(),
            capabilities: Capabilities::probe(),
            environment: EnvMarkers::read(),
            coldtrace_version: env!("CARGO_PKG_VERSION"),
        }
    }
}
