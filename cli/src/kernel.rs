//! `trc kernel run`: the command line of the real-kernel runner (the runner itself is the
//! `trc-kernel` library).

use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `trc kernel ...` subcommands.
#[derive(Debug, Subcommand)]
pub enum KernelCommand {
    /// Run a packetdrill-format script against the running kernel.
    Run(RunArgs),
}

/// Arguments of `trc kernel run`.
#[derive(Debug, Args)]
#[command(
    mut_arg("sack", |a| a.help("Force net.ipv4.tcp_sack=1 in the namespace (after the script's own settings)")),
    mut_arg("no_sack", |a| a.help("Force net.ipv4.tcp_sack=0 in the namespace (after the script's own settings)")),
    mut_arg("ts", |a| a.help("Force net.ipv4.tcp_timestamps=1 in the namespace (after the script's own settings)")),
    mut_arg("no_ts", |a| a.help("Force net.ipv4.tcp_timestamps=0 in the namespace (after the script's own settings)"))
)]
pub struct RunArgs {
    /// The script to run.
    pub file: std::path::PathBuf,
    #[command(flatten)]
    pub conn: crate::conn::ConnFlags,
    /// Congestion control set with TCP_CONGESTION on every socket the script creates.
    #[arg(long, default_value = "cubic", value_parser = ["cubic", "reno", "bbr"])]
    pub cc: String,
    /// Timing tolerance for outbound packets, in milliseconds.
    #[arg(long, default_value_t = trc_kernel::DEFAULT_TOLERANCE_MS)]
    pub tolerance_ms: f64,
    /// Let the tun device take TSO super-packets instead of MSS-sized segments.
    #[arg(long)]
    pub tso: bool,
    /// Write the trace (segments, tcp_info snapshots, verdicts) as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Print each line's verdict as it happens.
    #[arg(long, short)]
    pub verbose: bool,
}

/// Entry point used by the CLI; returns the process exit code.
pub fn main(cmd: KernelCommand) -> i32 {
    match cmd {
        KernelCommand::Run(args) => run_cli(args),
    }
}

fn run_cli(args: RunArgs) -> i32 {
    if !(args.tolerance_ms.is_finite() && args.tolerance_ms >= 0.0 && args.tolerance_ms <= 10_000.0) {
        eprintln!("trc kernel run: --tolerance-ms must be between 0 and 10000");
        return 2;
    }
    // Parse first: a malformed script is exit 2 even where runs would be skipped.
    let src = match std::fs::read_to_string(&args.file) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("trc kernel run: {}: {e}", args.file.display());
            return 2;
        }
    };
    let name = args.file.display().to_string();
    let script = match trc_pkt::parse(&src, &name) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return 2;
        }
    };
    if let Some(r) = trc_kernel::skip_reason() {
        eprintln!("trc kernel run: {r}");
        return trc_kernel::EXIT_SKIPPED;
    }
    let opts = trc_kernel::RunOptions {
        sack: args.conn.sack(),
        timestamps: args.conn.ts(),
        cc: args.cc.clone(),
        tolerance: Duration::from_micros((args.tolerance_ms * 1000.0) as u64),
        tso: args.tso,
        script_dir: args.file.parent().filter(|p| !p.as_os_str().is_empty()).map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from(".")),
        verbose: args.verbose,
        handle_signals: true,
    };
    let report = match trc_kernel::run_script(&script, &name, &opts) {
        Ok(r) => r,
        Err(trc_kernel::RunError::Skipped(r)) => {
            eprintln!("trc kernel run: {r}");
            return trc_kernel::EXIT_SKIPPED;
        }
        Err(e) => {
            eprintln!("trc kernel run: {e}");
            return 1;
        }
    };
    if !args.verbose {
        print!("{}", report.render());
    } else {
        // Lines were printed live; print the summary part only.
        let full = report.render();
        let summary: Vec<&str> = full.lines().filter(|l| !l.starts_with("PASS ") && !l.starts_with("FAIL ") && !l.starts_with("SKIP ") && !l.starts_with("     ")).collect();
        println!("{}", summary.join("\n"));
    }
    if let Some(out) = &args.json {
        if let Err(e) = trc_kernel::write_json_atomic(out, &report) {
            eprintln!("trc kernel run: cannot write {}: {e}", out.display());
            return 1;
        }
    }
    if report.interrupted {
        return 130;
    }
    if report.passed {
        0
    } else {
        1
    }
}
