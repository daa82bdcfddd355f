//! The connection flags shared by `trc check` (and the commands that take bounds), `trc diff`
//! and `trc kernel run`: SACK and timestamps, each forced on, off, or left to the command's
//! default. One declaration; each command words the help for what the flags mean to it
//! (which connections to explore, which scenarios to draw, which sysctl to force) with
//! `mut_arg` where it flattens them.

use clap::Args;

#[derive(Args, Clone, Debug, Default)]
pub struct ConnFlags {
    /// SACK connections only.
    #[arg(long, conflicts_with = "no_sack")]
    pub sack: bool,
    /// Non-SACK connections only.
    #[arg(long)]
    pub no_sack: bool,
    /// Connections with timestamps only.
    #[arg(long, conflicts_with = "no_ts")]
    pub ts: bool,
    /// Connections without timestamps only.
    #[arg(long)]
    pub no_ts: bool,
}

impl ConnFlags {
    /// `Some(true)` for `--sack`, `Some(false)` for `--no-sack`, `None` if neither.
    pub fn sack(&self) -> Option<bool> {
        pick(self.sack, self.no_sack)
    }

    /// `Some(true)` for `--ts`, `Some(false)` for `--no-ts`, `None` if neither.
    pub fn ts(&self) -> Option<bool> {
        pick(self.ts, self.no_ts)
    }
}

fn pick(on: bool, off: bool) -> Option<bool> {
    if on {
        Some(true)
    } else if off {
        Some(false)
    } else {
        None
    }
}
