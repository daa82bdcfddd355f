//! The real-kernel runner: executes packetdrill-format scripts against the running Linux kernel
//! inside a private network namespace with its own tun device.

use clap::{Args, Subcommand};

/// `trc kernel ...` subcommands.
#[derive(Debug, Subcommand)]
pub enum KernelCommand {
    /// Run a packetdrill-format script against the running kernel.
    Run(RunArgs),
}

/// Arguments of `trc kernel run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The script to run.
    pub file: std::path::PathBuf,
}

/// Entry point used by the CLI; returns the process exit code.
pub fn main(cmd: KernelCommand) -> i32 {
    match cmd {
        KernelCommand::Run(_args) => {
            eprintln!("trc kernel run: not implemented yet");
            2
        }
    }
}
