//! `trc kernel run`: scripts on the running kernel (the `trc-kernel` runner) or, with
//! `--kernel`, on another one booted in qemu (`trc-vm`), with `--plot` pages (`trc-viz`).

use crate::exit;
use crate::exit::of_vm_error as vm_error;
use clap::Args;
use std::path::{Path, PathBuf};
use trc_vm::flags::VmFlags;

/// Arguments of `trc kernel run`.
#[derive(Debug, Args)]
#[command(
    mut_arg("sack", |a| a.help("Force net.ipv4.tcp_sack=1 in the namespace (after the script's own settings)")),
    mut_arg("no_sack", |a| a.help("Force net.ipv4.tcp_sack=0 in the namespace (after the script's own settings)")),
    mut_arg("ts", |a| a.help("Force net.ipv4.tcp_timestamps=1 in the namespace (after the script's own settings)")),
    mut_arg("no_ts", |a| a.help("Force net.ipv4.tcp_timestamps=0 in the namespace (after the script's own settings)")),
    after_help = "A script is code, run as root: its shell lines (`...`) run with /bin/sh and its %{ }% blocks \
with python3 (or the script's --code_command), as uid 0. What trc confines: the whole run is in a private \
network namespace (only lo and tun0); each shell line also runs in a private mount namespace, without \
CAP_SYS_ADMIN (no setns, unshare or mount, so it cannot enter the host's namespaces: `nsenter -t 1 -n` \
fails), CAP_SYS_MODULE, CAP_SYS_PTRACE and a few more, in its own process group that is killed when the \
line ends, after 120 s, or when trc dies (a SIGKILL included). What it does not stop: a shell line is still \
root on the host's filesystem, so it can read and write any file, global sysctls (/proc/sys/kernel/...) and \
module parameters, and a process that leaves its group (setsid) can outlive the run; %{ }% blocks are not \
confined beyond the network namespace (they keep every capability). Read a script before running it. \
--no-shell refuses a script with shell lines (exit 2, nothing run).\n\nTiming is packetdrill's: 4 ms or 12.5 % of the \
gap to the previous event, whichever is larger (--tolerance-usecs, --tolerance-percent; the script's own \
--option lines apply first). Exit codes: 0 passed, 1 failed, 2 bad script or option, 3 incomplete (something \
was not checked), 4 skipped (not root, no tun, root without CAP_SYS_ADMIN), 130 interrupted."
)]
pub struct RunArgs {
    /// The script to run (several with --kernel).
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub vm: VmFlags,
    /// Write the VM's console here.
    #[arg(long, value_name = "FILE", requires = "kernel")]
    pub console: Option<PathBuf>,
    #[command(flatten)]
    pub conn: crate::args::ConnFlags,
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
    /// Refuse a script with shell lines: exit 2 before anything of it runs.
    #[arg(long)]
    pub no_shell: bool,
    /// Write the report and the trace (segments, tcp_info snapshots) as JSON here; with
    /// --kernel, the whole VM run (accelerator, timings, one report per script).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Also print the trace.
    #[arg(long, short)]
    pub verbose: bool,
    /// Draw the run's time-sequence diagram and cwnd / ssthresh / ca_state timeline (the
    /// counterexample page's pictures) into this self-contained HTML file; with several scripts
    /// (--kernel), OUT is a directory and each script's page is OUT/NAME.html.
    #[arg(long, value_name = "OUT.html")]
    pub plot: Option<PathBuf>,
    /// With --kernel: run the scripts with this packetdrill binary (real packetdrill, e.g. built
    /// from ../shared/vendor) inside the VM instead of trc's runner; every FILE must be under
    /// --packetdrill-tree, which goes to the guest whole. Prints each script's exit code.
    #[arg(
        long,
        value_name = "BIN",
        requires = "kernel",
        requires = "packetdrill_tree"
    )]
    pub packetdrill: Option<PathBuf>,
    /// The directory of the scripts and their support files for --packetdrill (e.g. a copy of
    /// gtests/net with cubic selected by route).
    #[arg(long, value_name = "DIR", requires = "packetdrill")]
    pub packetdrill_tree: Option<PathBuf>,
    /// With --packetdrill: run each script as `bash FILE SCRIPT` in its directory, packetdrill on
    /// PATH; FILE is under --packetdrill-tree (e.g. the selftests' net/packetdrill/ksft_runner.sh:
    /// IPv4, IPv6 and IPv4-mapped IPv6, KTAP printed with --verbose).
    #[arg(long, value_name = "FILE", requires = "packetdrill")]
    pub packetdrill_runner: Option<PathBuf>,
}

/// The tolerance `--loose-timing` sets.
const LOOSE_TOLERANCE_USECS: u32 = 40_000;

/// Every script read and parsed, and none has a shell line the flags refuse: else the error
/// (an input error, exit 2).
fn parse_scripts(args: &RunArgs) -> Result<(), String> {
    let what = "trc kernel run";
    for f in &args.files {
        let src = trc_files::read_source(f).map_err(|e| format!("{what}: {e}"))?;
        let script = trc_pkt::parse(&src, &f.display().to_string()).map_err(|e| e.to_string())?;
        if let Some(e) = refused_shell_line(args, &script, f) {
            return Err(format!("{what}: {e}"));
        }
    }
    Ok(())
}

/// `--plot` for a VM run: the scripts with a report (a script the VM gave no result for has
/// nothing to draw).
fn plot_vm_run(out: &Path, files: &[PathBuf], run: &trc_vm::VmRun) -> Result<(), String> {
    let runs: Vec<(&Path, &trc_kernel::RunReport)> = files
        .iter()
        .enumerate()
        .filter_map(|(i, f)| {
            run.scripts
                .iter()
                .find(|s| s.path == *f)
                .or(run.scripts.get(i))
                .and_then(|s| s.report())
                .map(|r| (f.as_path(), r))
        })
        .collect();
    let pages = trc_viz::pictures::kernel::write_pages(out, &runs, files.len() > 1);
    for f in pages.map_err(|e| e.to_string())? {
        eprintln!("trc kernel run: pictures in {}", f.display());
    }
    Ok(())
}

/// A VM run's problem and console (`--console`) and its JSON (`--json`); else the exit code
/// (its error printed).
pub(super) fn console_and_json(what: &str, args: &RunArgs, run: &trc_vm::VmRun) -> Result<(), i32> {
    if let Err(e) = trc_vm::flags::problem_and_console(
        run.problem.as_deref(),
        &run.console,
        args.console.as_deref(),
        what,
    ) {
        return Err(exit::bad_input(what, &e));
    }
    if let Some(out) = &args.json {
        if let Err(e) = trc_files::write_json_atomic(out, run) {
            eprintln!("{what}: cannot write {}: {e}", out.display());
            return Err(exit::USAGE);
        }
    }
    Ok(())
}

pub fn vm_cli(args: RunArgs) -> i32 {
    let what = "trc kernel run";
    // Scripts and options first: bad input is exit 2 wherever runs would be skipped.
    if let Err(e) = parse_scripts(&args) {
        eprintln!("{e}");
        return exit::USAGE;
    }
    let packetdrill = match packetdrill_options(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{what}: {e}");
            return exit::USAGE;
        }
    };
    if let Err(e) = args.vm.validate() {
        eprintln!("{what}: {e}");
        return exit::USAGE;
    }
    let (img, mut spec) = match args
        .vm
        .kernel_vm(args.vm.kernel.as_deref().unwrap_or_default())
    {
        Ok(v) => v,
        Err(e) => return vm_error(what, &e),
    };
    spec.options = trc_vm::GuestOptions {
        sack: args.conn.sack(),
        timestamps: args.conn.ts(),
        cc: (args.cc != "default").then(|| args.cc.clone()),
        packetdrill,
        no_shell: args.no_shell,
    };
    let n = args.files.len();
    let mut progress = |e: &trc_vm::Event| {
        if let Some(l) = e.line(&img.release, n) {
            eprintln!("{what}: {l}");
        }
    };
    let run = match trc_vm::run_in_vm_with(&spec, &args.files, &mut progress) {
        Ok(r) => r,
        Err(e) => return vm_error(what, &e),
    };
    print!("{}", run.render(&img.release, n, args.verbose));
    if let Err(rc) = console_and_json(what, &args, &run) {
        return rc;
    }
    if let Some(out) = &args.plot {
        if let Err(e) = plot_vm_run(out, &args.files, &run) {
            eprintln!("{what}: {e}");
            return exit::USAGE;
        }
    }
    exit::of_vm_run(&run)
}

/// packetdrill command-line options from the flags.
fn packetdrill_options(args: &RunArgs) -> Result<Vec<(String, Option<String>)>, String> {
    let mut o = Vec::new();
    if let Some(t) = args
        .tolerance_usecs
        .or(args.loose_timing.then_some(LOOSE_TOLERANCE_USECS))
    {
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

/// With `--no-shell`, a script with a shell line is refused before anything of it runs (exit 2,
/// at the first such line); the runner's own check (`RunOptions::no_shell`) is the backstop.
fn refused_shell_line(args: &RunArgs, script: &trc_pkt::Script, file: &Path) -> Option<String> {
    let st = script
        .statements
        .iter()
        .find(|s| matches!(s.kind, trc_pkt::StatementKind::Shell(_)))?;
    args.no_shell.then(|| {
        format!(
            "{}:{}: a shell line, refused by --no-shell (nothing was run)",
            file.display(),
            st.line
        )
    })
}

pub fn run_cli(args: RunArgs) -> i32 {
    let [file] = &args.files[..] else {
        eprintln!("trc kernel run: several scripts need --kernel (a VM); on the running kernel, run them one at a time");
        return exit::USAGE;
    };
    if args.vm.cache.is_some() {
        eprintln!("trc kernel run: --cache needs --kernel");
        return exit::USAGE;
    }
    if let Err(e) = args.vm.validate() {
        eprintln!("trc kernel run: {e}");
        return exit::USAGE;
    }
    // Parse first: a malformed script is exit 2 even where runs would be skipped.
    let src = match trc_files::read_source(file) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("trc kernel run: {e}");
            return exit::USAGE;
        }
    };
    let name = file.display().to_string();
    let script = match trc_pkt::parse(&src, &name) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return exit::USAGE;
        }
    };
    let packetdrill = match packetdrill_options(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("trc kernel run: {e}");
            return exit::USAGE;
        }
    };
    if let Some(e) = refused_shell_line(&args, &script, file) {
        eprintln!("trc kernel run: {e}");
        return exit::USAGE;
    }
    if let Some(e) = trc_pkt::python::problem(&script) {
        eprintln!("trc kernel run: {e}");
        return exit::USAGE;
    }
    if let Some(r) = trc_kernel::skip_reason() {
        eprintln!("trc kernel run: {r}");
        return exit::SKIPPED;
    }
    let opts = trc_kernel::RunOptions {
        sack: args.conn.sack(),
        timestamps: args.conn.ts(),
        cc: (args.cc != "default").then(|| args.cc.clone()),
        packetdrill,
        script_dir: file
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from(".")),
        no_shell: args.no_shell,
        handle_signals: true,
        time_limit: Some(std::time::Duration::from_secs_f64(args.vm.script_timeout)),
    };
    let report = match trc_kernel::run_script(&script, &name, &opts) {
        Ok(r) => r,
        Err(trc_kernel::RunError::Skipped(r)) => {
            eprintln!("trc kernel run: {r}");
            return exit::SKIPPED;
        }
        Err(trc_kernel::RunError::Usage(e)) => {
            eprintln!("trc kernel run: {e}");
            return exit::USAGE;
        }
        Err(e) => {
            eprintln!("trc kernel run: {e}");
            return exit::VIOLATED;
        }
    };
    print!("{}", report.render());
    if args.verbose {
        for ev in &report.trace {
            println!("trace: {}", serde_json::to_string(ev).unwrap_or_default());
        }
    }
    if let Some(out) = &args.json {
        if let Err(e) = trc_files::write_json_atomic(out, &report) {
            eprintln!("trc kernel run: cannot write {}: {e}", out.display());
            return exit::USAGE;
        }
    }
    if let Some(out) = &args.plot {
        match trc_viz::pictures::kernel::write_pages(out, &[(file.as_path(), &report)], false) {
            Ok(files) => files
                .iter()
                .for_each(|f| eprintln!("trc kernel run: pictures in {}", f.display())),
            Err(e) => {
                eprintln!("trc kernel run: {e}");
                return exit::USAGE;
            }
        }
    }
    if report.script.interrupted {
        return exit::INTERRUPTED;
    }
    exit::of_script(report.script.verdict)
}
