//! `trc-lab`: research tools beside the product's command set (`trc`): measurements and sweeps
//! whose results are written up in docs/, not checks a user runs on a change.
//!
//! Exit codes as `trc`'s: 0 done (or every value correct), 1 a violation or a failed run,
//! 2 usage or input error, 3 incomplete, 4 skipped (no qemu, kernel, veth or netem).

mod impact;
mod sweep;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "trc-lab",
    version,
    about = "trc's research tools: the CUBIC arithmetic sweep and the F1 impact experiment"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Exhaustively check CUBIC's integer arithmetic (cubic_root, bictcp_update) against exact arithmetic.
    Sweep(sweep::SweepArgs),
    /// Measure undos in a bulk transfer over an emulated lossy, reordering path, in a VM
    /// (finding F1's impact; docs/findings/F1-impact.md).
    Impact(Box<impact::ImpactArgs>),
}

/// Exit codes.
pub mod exit {
    pub const USAGE: i32 = 2;
    pub const VIOLATED: i32 = 1;
    pub const INCOMPLETE: i32 = 3;
    pub const SKIPPED: i32 = 4;

    /// Prints `WHAT: MSG` and returns [`USAGE`].
    pub fn bad_input(what: &str, msg: &dyn std::fmt::Display) -> i32 {
        eprintln!("{what}: {msg}");
        USAGE
    }

    /// A `trc_vm` error, printed as `WHAT: ERROR`.
    pub fn of_vm_error(what: &str, e: &trc_vm::Error) -> i32 {
        eprintln!("{what}: {e}");
        match e {
            trc_vm::Error::Usage(_) => USAGE,
            trc_vm::Error::Missing(_) => SKIPPED,
            trc_vm::Error::Failed(_) => VIOLATED,
        }
    }
}

fn main() {
    // As the VM's /init (pid 1), the binary is the guest side of the impact experiment.
    if std::process::id() == 1 {
        std::process::exit(trc_vm::guest::main());
    }
    let code = match Cli::parse().cmd {
        Cmd::Sweep(a) => sweep::run_sweep(a),
        Cmd::Impact(a) => impact::main(*a),
    };
    std::process::exit(code);
}
