//! `trc replay FILE.pkt --profile P`: drive the model with a packetdrill script and check its
//! outbound segments and `tcpi_*` asserts line by line (see docs/export-replay.md).

use crate::check::load_profile;
use crate::output::usage_error;
use clap::Args;
use std::path::PathBuf;
use trc_trace::replay::{replay, ReplayOptions};

#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// The script (ours from `trc check --out`, or one written for the kernel).
    pub file: PathBuf,
    /// Profile: a built-in name or a TOML profile file.
    #[arg(long, default_value = "linux-6.18")]
    pub profile: String,
    /// Outbound timing tolerance in ms (as `trc kernel run`).
    #[arg(long, default_value_t = 40.0)]
    pub tolerance_ms: f64,
    /// Print the per-line report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Exit codes: 0 every checked line passed (and at least one was checked), 1 some line failed
/// or nothing could be checked, 2 malformed script / unknown profile.
pub fn run_replay(a: ReplayArgs) -> i32 {
    let profile = match load_profile(&a.profile) {
        Ok(p) => p,
        Err(e) => return usage_error(&e),
    };
    if !(a.tolerance_ms.is_finite() && (0.0..=10_000.0).contains(&a.tolerance_ms)) {
        return usage_error("--tolerance-ms must be between 0 and 10000");
    }
    let src = match std::fs::read_to_string(&a.file) {
        Ok(s) => s,
        Err(e) => return usage_error(&format!("{}: {e}", a.file.display())),
    };
    let name = a.file.display().to_string();
    let script = match trc_pkt::parse(&src, &name) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return 2;
        }
    };
    let r = replay(&script, &name, &profile, &ReplayOptions { tolerance_ms: a.tolerance_ms });
    if a.json {
        println!("{}", serde_json::to_string_pretty(&r).unwrap());
    } else {
        print!("{}", r.render());
    }
    r.exit_code()
}
