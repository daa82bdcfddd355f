//! Shell lines run confined: `trc_shell` (shared with the model replay, which runs them in a
//! private network namespace of their own as well).

pub use trc_shell::{run, Output, TIME_LIMIT};
