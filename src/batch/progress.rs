//! What a running batch tells whoever watches it: a run finished, a notice that cannot wait.
//! The batch only reports these events; drawing them (or not) is the view's job.
#![forbid(unsafe_code)]

/// Receives a batch's events as they happen (between runs, never inside the timed window).
pub trait Observer {
    /// `done` of `total` runs are recorded; the last one's wall time.
    fn run_finished(&mut self, done: u64, total: u64, last_wall_ns: Option<u64>) {
        let _ = (done, total, last_wall_ns);
    }

    /// Something the user should know now, in one line (e.g. the command was stopped).
    fn notice(&mut self, text: &str) {
        let _ = text;
    }

    /// The runs are over: whatever was drawn can be cleared.
    fn finished(&mut self) {}
}

/// An observer that shows nothing.
pub struct Unobserved;

impl Observer for Unobserved {}
