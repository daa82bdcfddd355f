//! `trc kernel run`: the command line of the real-kernel runner (the runner itself is the
//! `trc-kernel` library).

use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};

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
    mut_arg("no_ts", |a| a.help("Force net.ipv4.tcp_timestamps=0 in the namespace (after the script's own settings)")),
    after_help = "A script is code: its shell lines and %{ }% blocks run as root. trc runs the script in a private \
network namespace (only lo and tun0) and each shell line in a private mount namespace without CAP_SYS_ADMIN \
(it cannot enter the host's namespaces), killed with the run. It can still write files, global sysctls and \
module parameters. --no-shell refuses scripts with shell lines.\n\nTiming is packetdrill's: 4 ms or 12.5 % of the \
gap to the previous event, whichever is larger (--tolerance-usecs, --tolerance-percent; the script's own \
--option lines apply first). Exit codes: 0 passed, 1 failed, 2 bad script or option, 3 incomplete (something \
was not checked), 4 skipped (not root, no tun), 130 interrupted."
)]
pub struct RunArgs {
    /// The script to run.
    pub file: std::path::PathBuf,
    #[command(flatten)]
    pub conn: crate::conn::ConnFlags,
    /// Congestion control of the route to the peer (what a connection gets unless it sets
    /// TCP_CONGESTION itself); `default`: the namespace default (bbr on our machines, which
    /// cannot make cubic a namespace default).
    #[arg(long, default_value = "cubic", value_parser = ["cubic", "reno", "bbr", "default"])]
    pub cc: String,
    /// packetdrill's --tolerance_usecs (default 4000).
    #[arg(long, value_name = "USECS")]
    pub tolerance_usecs: Option<u32>,
    /// packetdrill's --tolerance_percent (default 12.5).
    #[arg(long, value_name = "PERCENT")]
    pub tolerance_percent: Option<f64>,
    /// A looser tolerance (40 ms) for loaded or emulated machines, where timer-driven packets
    /// come 10-40 ms late: use it to tell a timing flake from a behaviour difference, not to
    /// pass scripts (packetdrill itself would fail them).
    #[arg(long, conflicts_with = "tolerance_usecs")]
    pub loose_timing: bool,
    /// packetdrill's --strict_segments: one live packet per outbound line.
    #[arg(long)]
    pub strict_segments: bool,
    /// A packetdrill definition NAME=VALUE (run_all.py's TFO_COOKIE, CODE, CMSG_* are preset).
    #[arg(short = 'D', long = "define", value_name = "NAME=VALUE")]
    pub defines: Vec<String>,
    /// Refuse scripts with shell lines (the run stops at the first one).
    #[arg(long)]
    pub no_shell: bool,
    /// Write the report and the trace (segments, tcp_info snapshots) as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Also print the trace.
    #[arg(long, short)]
    pub verbose: bool,
}

/// The tolerance `--loose-timing` sets.
const LOOSE_TOLERANCE_USECS: u32 = 40_000;

/// Entry point used by the CLI; returns the process exit code.
pub fn main(cmd: KernelCommand) -> i32 {
    match cmd {
        KernelCommand::Run(args) => run_cli(args),
    }
}

/// packetdrill command-line options from the flags.
fn packetdrill_options(args: &RunArgs) -> Result<Vec<(String, Option<String>)>, String> {
    let mut o = Vec::new();
    if let Some(t) = args.tolerance_usecs.or(args.loose_timing.then_some(LOOSE_TOLERANCE_USECS)) {
        o.push(("tolerance_usecs".to_string(), Some(t.to_string())));
    }
    if let Some(p) = args.tolerance_percent {
        if !(p.is_finite() && (0.0..=100.0).contains(&p)) {
            return Err("--tolerance-percent must be between 0 and 100".into());
        }
        o.push(("tolerance_percent".to_string(), Some(p.to_string())));
    }
    if args.strict_segments {
        o.push(("strict_segments".to_string(), None));
    }
    for d in &args.defines {
        if !d.contains('=') {
            return Err(format!("-D {d}: expected NAME=VALUE"));
        }
        o.push(("define".to_string(), Some(d.clone())));
    }
    Ok(o)
}

fn run_cli(args: RunArgs) -> i32 {
    // Parse first: a malformed script is exit 2 even where runs would be skipped.
    let src = match crate::read_source(&args.file) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("trc kernel run: {e}");
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
    let packetdrill = match packetdrill_options(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("trc kernel run: {e}");
            return 2;
        }
    };
    if let Some(e) = crate::python_problem(&script) {
        eprintln!("trc kernel run: {e}");
        return 2;
    }
    if let Some(r) = trc_kernel::skip_reason() {
        eprintln!("trc kernel run: {r}");
        return trc_kernel::EXIT_SKIPPED;
    }
    let opts = trc_kernel::RunOptions {
        sack: args.conn.sack(),
        timestamps: args.conn.ts(),
        cc: (args.cc != "default").then(|| args.cc.clone()),
        packetdrill,
        script_dir: args.file.parent().filter(|p| !p.as_os_str().is_empty()).map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from(".")),
        no_shell: args.no_shell,
        handle_signals: true,
    };
    let report = match trc_kernel::run_script(&script, &name, &opts) {
        Ok(r) => r,
        Err(trc_kernel::RunError::Skipped(r)) => {
            eprintln!("trc kernel run: {r}");
            return trc_kernel::EXIT_SKIPPED;
        }
        Err(trc_kernel::RunError::Usage(e)) => {
            eprintln!("trc kernel run: {e}");
            return 2;
        }
        Err(e) => {
            eprintln!("trc kernel run: {e}");
            return 1;
        }
    };
    print!("{}", report.render());
    if args.verbose {
        for ev in &report.trace {
            println!("trace: {}", serde_json::to_string(ev).unwrap_or_default());
        }
    }
    if let Some(out) = &args.json {
        if let Err(e) = trc_kernel::write_json_atomic(out, &report) {
            eprintln!("trc kernel run: cannot write {}: {e}", out.display());
            return 2;
        }
    }
    if report.script.interrupted {
        return 130;
    }
    report.script.verdict.exit_code()
}
