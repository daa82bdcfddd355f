//! `trc-model`: a pure, executable model of the Linux TCP sender's loss recovery
//! (tcp_input.c, tcp_output.c, tcp_timer.c, tcp_recovery.c, tcp_cong.c), its network
//! environment, and the `stateright::Model` that explores them. No I/O, no printing, no host
//! clock: everything here is a deterministic function of its inputs.

pub mod cc;
pub mod config;
pub mod decision;
pub mod fingerprint;
pub mod inline_vec;
pub mod mib;
pub mod model;
pub mod net;
mod plain;
pub mod profile;
pub mod reduce;
pub mod segmask;
pub mod sender;
pub mod seq;
pub mod state;

pub use config::{CcKind, Config, ConfigError, SackMode};
pub use model::{Action, State, TcpModel};
pub use profile::Profile;
pub use state::{CaState, Sender};
