//! `trc replay FILE.pkt --profile P`: drive the model with a packetdrill script and check its
//! outbound segments and `%{ }%` asserts line by line (see docs/reference/export.md).

use crate::exit::{self, usage_error};
use clap::Args;
use std::path::PathBuf;
use trc_check::load_profile;
use trc_trace::replay::{replay, ReplayOptions};

#[derive(Args, Debug)]
#[command(
    after_help = "The script means what it means to packetdrill (timing, sequence mapping, TSO merging), \
with %{ }% blocks evaluated by python3 on the model's values. A block that reads a tcpi_* field the model does not \
compute, and any line the model cannot check, is out of scope, never a pass. The %{ }% blocks are Python: \
they run with your privileges.\n\nExit codes: 0 every line ran and every check passed, 1 a check failed, \
2 malformed script, unknown profile or no python3, 3 incomplete (something was out of scope, or the replay \
stopped at a line the model does not cover)."
)]
pub struct ReplayArgs {
    /// The script (ours from `trc check --out`, or one written for the kernel).
    pub file: PathBuf,
    /// Profile: a built-in name or a TOML profile file.
    #[arg(long, default_value = "linux-6.18")]
    pub profile: String,
    /// packetdrill's --tolerance_usecs (default 4000).
    #[arg(long, value_name = "USECS")]
    pub tolerance_usecs: Option<u32>,
    /// Print the per-line report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Run no shell line: the settings a line makes still configure the model, a line with
    /// anything else (nstat, text tools) is out of scope.
    #[arg(long)]
    pub no_shell: bool,
}

pub fn run_replay(a: ReplayArgs) -> i32 {
    let profile = match load_profile(&a.profile) {
        Ok(p) => p,
        Err(e) => return usage_error(&e),
    };
    let src = match trc_files::read_source(&a.file) {
        Ok(s) => s,
        Err(e) => return usage_error(&e),
    };
    let name = a.file.display().to_string();
    let script = match trc_pkt::parse(&src, &name) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return exit::USAGE;
        }
    };
    if let Some(e) = trc_pkt::python::problem(&script) {
        return usage_error(&e);
    }
    let packetdrill = a
        .tolerance_usecs
        .map(|t| vec![("tolerance_usecs".to_string(), Some(t.to_string()))])
        .unwrap_or_default();
    let r = replay(
        &script,
        &name,
        &profile,
        &ReplayOptions {
            packetdrill,
            no_shell: a.no_shell,
        },
    );
    if a.json {
        println!("{}", serde_json::to_string_pretty(&r).unwrap());
    } else {
        print!("{}", r.render());
    }
    exit::of_script(r.script.verdict)
}
