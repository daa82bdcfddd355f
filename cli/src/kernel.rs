//! `trc kernel run`: the command line of the real-kernel runner (the runner itself is the
//! `trc-kernel` library), on the running kernel or, with `--kernel`, on another one booted in
//! qemu (`trc-vm`); `trc kernel fetch` (a Debian kernel for `--kernel`); the hidden `trc
//! kernel guest` (the VM's `/init`).

use clap::{Args, Subcommand, ValueEnum};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `trc kernel ...` subcommands.
#[derive(Debug, Subcommand)]
pub enum KernelCommand {
    /// Run packetdrill-format scripts against the running kernel, or (--kernel) another kernel in qemu.
    Run(RunArgs),
    /// Check the properties on a kernel's behaviour: run a suite of scenarios, judge each run
    /// with the property monitors, and compare it with the model's profile.
    Check(CheckArgs),
    /// Download and unpack a Debian kernel (cloud-amd64) for `trc kernel run --kernel`.
    Fetch(FetchArgs),
    /// Build a kernel for `--kernel` from Debian's linux-source (or a tree), trc's configuration
    /// and optional patches; incremental and cached.
    Build(crate::kbuild::BuildArgs),
    /// Measure undos in a bulk transfer over an emulated lossy, reordering path, in a VM
    /// (finding F1's impact; docs/findings/F1-impact.md).
    Impact(crate::impact::ImpactArgs),
    /// The VM's /init (pid 1 only): runs the scripts of the initramfs and powers off.
    #[command(hide = true)]
    Guest,
}

/// Arguments of `trc kernel fetch`.
#[derive(Debug, Args)]
#[command(
    after_help = "SPEC: debian:sid, debian:trixie, debian:bookworm, debian:VERSION-SUITE (debian:7.2-sid) or \
debian:VERSION (the newest of the three suites). The packages come through a private apt configuration under \
CACHE/apt (the mirror is read from this machine's apt sources; nothing of the machine's apt state changes) and are \
unpacked into CACHE/kernels/RELEASE, linked as CACHE/kernels/SPEC. Exit codes: 0 fetched, 1 failed, 2 bad SPEC, \
4 skipped (no apt, dpkg-deb or keyring)."
)]
pub struct FetchArgs {
    /// What to fetch.
    pub spec: String,
    /// Cache directory (default $TRC_CACHE, $XDG_CACHE_HOME/trc or ~/.cache/trc).
    #[arg(long, value_name = "DIR")]
    pub cache: Option<PathBuf>,
    /// Update the package lists even if they are less than a day old.
    #[arg(long)]
    pub refresh: bool,
    /// Download and unpack again even if the release is in the cache.
    #[arg(long)]
    pub force: bool,
}

/// `--accel`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AccelArg {
    /// KVM if /dev/kvm works here (and did before), else TCG icount.
    Auto,
    Kvm,
    /// TCG with virtual time (-icount shift=0,sleep=off): timing independent of the host.
    TcgIcount,
}

/// The VM flags of `trc kernel run` and `trc kernel check` (one set, flattened into both).
#[derive(Args, Debug, Clone)]
pub struct VmFlags {
    /// Boot this kernel in qemu and run there: a bzImage, a directory from `trc kernel fetch`,
    /// or debian:SUITE (fetched before).
    #[arg(long, value_name = "VMLINUZ")]
    pub kernel: Option<String>,
    /// The kernel's lib/modules/RELEASE directory (for tun.ko); default the fetched one.
    #[arg(long, value_name = "DIR", requires = "kernel")]
    pub modules: Option<PathBuf>,
    /// The VM's accelerator.
    #[arg(long, value_enum, default_value = "auto", requires = "kernel")]
    pub accel: AccelArg,
    /// Cache directory for kernels and the VM's initramfs (default $TRC_CACHE, $XDG_CACHE_HOME/trc or ~/.cache/trc).
    #[arg(long, value_name = "DIR")]
    pub cache: Option<PathBuf>,
    /// A limit on the whole VM run, in wall-clock seconds (besides the boot and progress limits).
    #[arg(long, value_name = "SECS", requires = "kernel")]
    pub vm_timeout: Option<f64>,
    /// Per-script limit inside the VM, in guest seconds.
    #[arg(long, value_name = "SECS", default_value = "120", requires = "kernel")]
    pub script_timeout: f64,
    /// The VM's memory, MB.
    #[arg(long, value_name = "MB", default_value = "1024", requires = "kernel")]
    pub memory: u32,
}

impl VmFlags {
    /// The limits' ranges, checked before anything runs.
    pub(crate) fn validate(&self) -> Result<(), String> {
        if !(self.script_timeout.is_finite() && self.script_timeout >= 1.0)
            || self.vm_timeout.is_some_and(|t| !(t.is_finite() && t > 0.0))
            || self.memory < 256
        {
            return Err("--script-timeout must be at least 1 s, --vm-timeout positive, --memory at least 256 MB".into());
        }
        Ok(())
    }

    pub(crate) fn cache_dir(&self) -> PathBuf {
        self.cache.clone().unwrap_or_else(trc_vm::default_cache_dir)
    }

    /// The VM for `img` as these flags ask (the guest's options are the caller's).
    pub(crate) fn spec(&self, img: &trc_vm::KernelImage, cache: PathBuf) -> trc_vm::VmSpec {
        let mut spec = trc_vm::VmSpec::new(&img.vmlinuz, img.modules.as_deref());
        spec.accel = match self.accel {
            AccelArg::Auto => trc_vm::Accel::Auto,
            AccelArg::Kvm => trc_vm::Accel::Kvm,
            AccelArg::TcgIcount => trc_vm::Accel::TcgIcount,
        };
        spec.timeout = self.vm_timeout.map(Duration::from_secs_f64);
        spec.script_timeout = Duration::from_secs_f64(self.script_timeout);
        spec.cache_dir = cache;
        spec.memory_mb = self.memory;
        spec
    }
}

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
}

/// Writes the page of each script's run (`--plot`): `out` itself for one script, else
/// `out/NAME.html` per script (NAME the script's file stem, its position before it if two
/// scripts share one). Returns the files written, or why one could not be.
fn write_plots(
    out: &Path,
    runs: &[(&Path, &trc_kernel::RunReport)],
    several: bool,
) -> Result<Vec<PathBuf>, String> {
    let mut written = Vec::new();
    if several {
        std::fs::create_dir_all(out).map_err(|e| format!("--plot {}: {e}", out.display()))?;
    }
    let stems: Vec<String> = runs
        .iter()
        .map(|(p, _)| {
            p.file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    for (i, (script, report)) in runs.iter().enumerate() {
        let text = crate::read_source(script)?;
        let html = crate::pictures::kernel::page(report, &text, &script.display().to_string());
        let file = if several {
            let dup = stems.iter().filter(|s| **s == stems[i]).count() > 1;
            out.join(if dup {
                format!("{}-{}.html", i + 1, stems[i])
            } else {
                format!("{}.html", stems[i])
            })
        } else {
            out.to_path_buf()
        };
        trc_vm::write_atomic(&file, html.as_bytes())
            .map_err(|e| format!("--plot: cannot write {}: {e}", file.display()))?;
        written.push(file);
    }
    Ok(written)
}

/// The tolerance `--loose-timing` sets.
const LOOSE_TOLERANCE_USECS: u32 = 40_000;

/// Entry point used by the CLI; returns the process exit code.
pub fn main(cmd: KernelCommand) -> i32 {
    match cmd {
        KernelCommand::Run(args) if args.vm.kernel.is_some() => vm_cli(args),
        KernelCommand::Run(args) => run_cli(args),
        KernelCommand::Check(args) => check_cli(args),
        KernelCommand::Fetch(args) => fetch_cli(args),
        KernelCommand::Build(args) => crate::kbuild::main(args),
        KernelCommand::Impact(args) => crate::impact::main(args),
        KernelCommand::Guest => trc_vm::guest::main(),
    }
}

/// The exit code for a `trc_vm` error.
pub(crate) fn vm_error(what: &str, e: &trc_vm::Error) -> i32 {
    eprintln!("{what}: {e}");
    match e {
        trc_vm::Error::Usage(_) => 2,
        trc_vm::Error::Missing(_) => trc_kernel::EXIT_SKIPPED,
        trc_vm::Error::Failed(_) => 1,
    }
}

fn fetch_cli(args: FetchArgs) -> i32 {
    let cache = args.cache.clone().unwrap_or_else(trc_vm::default_cache_dir);
    if !args.spec.starts_with("debian:") {
        eprintln!(
            "trc kernel fetch: {}: expected debian:SUITE, debian:VERSION-SUITE or debian:VERSION",
            args.spec
        );
        return 2;
    }
    let o = trc_vm::FetchOptions {
        refresh: args.refresh,
        force: args.force,
    };
    match trc_vm::fetch_debian_kernel_with(&args.spec, &cache, &o, &mut |m| {
        eprintln!("trc kernel fetch: {m}")
    }) {
        Ok(img) => {
            let p = |x: &Option<PathBuf>| {
                x.as_ref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_else(|| "-".into())
            };
            println!("release: {}", img.release);
            if let (Some(s), Some(v)) = (&img.suite, &img.package_version) {
                println!("package: {} ({s})", v);
            }
            println!("vmlinuz: {}", img.vmlinuz.display());
            println!("modules: {}", p(&img.modules));
            println!("config: {}", p(&img.config));
            println!("System.map: {}", p(&img.system_map));
            0
        }
        Err(e) => vm_error("trc kernel fetch", &e),
    }
}

/// The kernel `--kernel` names.
pub(crate) fn resolve_kernel(
    spec: &str,
    modules: Option<&Path>,
    cache: &Path,
) -> Result<trc_vm::KernelImage, trc_vm::Error> {
    let mut img = if spec.starts_with("debian:") {
        trc_vm::cached_kernel(spec, cache)?
    } else {
        let p = Path::new(spec);
        if p.is_dir() {
            trc_vm::KernelImage::from_dir(p)?
        } else if p.exists() {
            trc_vm::KernelImage::from_files(p, modules)?
        } else {
            return Err(trc_vm::Error::Missing(format!(
                "{spec}: no such kernel image"
            )));
        }
    };
    if let Some(m) = modules {
        img = trc_vm::KernelImage::from_files(&img.vmlinuz, Some(m))?;
    }
    Ok(img)
}

fn vm_cli(args: RunArgs) -> i32 {
    let what = "trc kernel run";
    // Scripts and options first: bad input is exit 2 wherever runs would be skipped.
    for f in &args.files {
        let src = match crate::read_source(f) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("{what}: {e}");
                return 2;
            }
        };
        match trc_pkt::parse(&src, &f.display().to_string()) {
            Err(e) => {
                eprintln!("{e}");
                return 2;
            }
            Ok(script) => {
                if let Some(e) = refused_shell_line(&args, &script, f) {
                    eprintln!("{what}: {e}");
                    return 2;
                }
            }
        }
    }
    let packetdrill = match packetdrill_options(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{what}: {e}");
            return 2;
        }
    };
    if let Err(e) = args.vm.validate() {
        eprintln!("{what}: {e}");
        return 2;
    }
    let cache = args.vm.cache_dir();
    let kspec = args.vm.kernel.as_deref().unwrap_or_default();
    let img = match resolve_kernel(kspec, args.vm.modules.as_deref(), &cache) {
        Ok(i) => i,
        Err(e) => return vm_error(what, &e),
    };
    let mut spec = args.vm.spec(&img, cache);
    spec.options = trc_vm::GuestOptions {
        sack: args.conn.sack(),
        timestamps: args.conn.ts(),
        cc: (args.cc != "default").then(|| args.cc.clone()),
        packetdrill,
        no_shell: args.no_shell,
    };
    let n = args.files.len();
    let mut progress = |e: &trc_vm::Event| match e {
        trc_vm::Event::Initramfs {
            base,
            cached,
            bytes,
            seconds,
        } => {
            eprintln!(
                "{what}: initramfs {:.1} MB ({}, {:.1} s): {}",
                *bytes as f64 / 1e6,
                if *cached { "base cached" } else { "base built" },
                seconds,
                base.display()
            )
        }
        trc_vm::Event::Starting { accel } => {
            eprintln!("{what}: booting {} under {accel}", img.release)
        }
        trc_vm::Event::KvmFailed { reason } => {
            eprintln!("{what}: KVM failed ({reason}); falling back to TCG icount")
        }
        trc_vm::Event::Booted {
            release,
            wall_s,
            cpu_s,
        } => eprintln!("{what}: {release} booted in {wall_s:.1} s ({cpu_s:.1} s qemu CPU)"),
        trc_vm::Event::ScriptBegin { .. } => {}
        trc_vm::Event::ScriptEnd {
            index,
            name,
            rc,
            wall_s,
        } => eprintln!(
            "{what}: [{}/{n}] {name}: exit {rc} ({wall_s:.1} s)",
            index + 1
        ),
        trc_vm::Event::Note(m) => eprintln!("{what}: note: {m}"),
    };
    let run = match trc_vm::run_in_vm_with(&spec, &args.files, &mut progress) {
        Ok(r) => r,
        Err(e) => return vm_error(what, &e),
    };
    for (i, s) in run.scripts.iter().enumerate() {
        if i > 0 {
            println!();
        }
        match &s.outcome {
            trc_vm::ScriptOutcome::Ran { report } => print!("{}", report.render()),
            trc_vm::ScriptOutcome::Error {
                message, report, ..
            } => {
                if let Some(r) = report {
                    print!("{}", r.render());
                }
                println!("{}: {message}", s.name);
            }
            trc_vm::ScriptOutcome::Measured { .. } | trc_vm::ScriptOutcome::Missing => {
                println!("{}: no result from the VM", s.name)
            }
        }
        if args.verbose {
            for ev in s.report().map(|r| r.trace.as_slice()).unwrap_or_default() {
                println!("trace: {}", serde_json::to_string(ev).unwrap_or_default());
            }
        }
    }
    println!();
    println!("accelerator: {}", run.accelerator);
    if let Some(k) = &run.kvm_fallback {
        println!("kvm: {k}");
    }
    println!(
        "kernel: {} ({})",
        if run.release.is_empty() {
            img.release.as_str()
        } else {
            run.release.as_str()
        },
        run.kernel.display()
    );
    println!(
        "boot: {:.1} s wall, {:.1} s qemu CPU, guest uptime {:.2} s",
        run.boot.wall_s, run.boot.cpu_s, run.boot.guest_s
    );
    println!(
        "total: {:.1} s wall, {:.1} s qemu CPU, {} scripts (load {:.1} -> {:.1})",
        run.total.wall_s, run.total.cpu_s, n, run.load.0, run.load.1
    );
    for note in &run.notes {
        println!("note: {note}");
    }
    let count = |c: i32| run.scripts.iter().filter(|s| s.rc == c).count();
    println!(
        "scripts: {} passed, {} failed, {} incomplete or missing, {} skipped",
        count(0),
        count(1),
        count(3) + count(130),
        count(4) + count(2)
    );
    if let Err(code) = problem_and_console(
        run.problem.as_deref(),
        &run.console,
        args.console.as_deref(),
        what,
    ) {
        return code;
    }
    if let Some(out) = &args.json {
        if let Err(e) = trc_kernel::write_json_atomic(out, &run) {
            eprintln!("{what}: cannot write {}: {e}", out.display());
            return 2;
        }
    }
    if let Some(out) = &args.plot {
        // The scripts with a report (a script the VM gave no result for has nothing to draw).
        let runs: Vec<(&Path, &trc_kernel::RunReport)> = args
            .files
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
        match write_plots(out, &runs, n > 1) {
            Ok(files) => files
                .iter()
                .for_each(|f| eprintln!("{what}: pictures in {}", f.display())),
            Err(e) => {
                eprintln!("{what}: {e}");
                return 2;
            }
        }
    }
    run.exit_code()
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

fn run_cli(args: RunArgs) -> i32 {
    let [file] = &args.files[..] else {
        eprintln!("trc kernel run: several scripts need --kernel (a VM); on the running kernel, run them one at a time");
        return 2;
    };
    if args.vm.cache.is_some() {
        eprintln!("trc kernel run: --cache needs --kernel");
        return 2;
    }
    // Parse first: a malformed script is exit 2 even where runs would be skipped.
    let src = match crate::read_source(file) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("trc kernel run: {e}");
            return 2;
        }
    };
    let name = file.display().to_string();
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
    if let Some(e) = refused_shell_line(&args, &script, file) {
        eprintln!("trc kernel run: {e}");
        return 2;
    }
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
        script_dir: file
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from(".")),
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
    if let Some(out) = &args.plot {
        match write_plots(out, &[(file.as_path(), &report)], false) {
            Ok(files) => files
                .iter()
                .for_each(|f| eprintln!("trc kernel run: pictures in {}", f.display())),
            Err(e) => {
                eprintln!("trc kernel run: {e}");
                return 2;
            }
        }
    }
    if report.script.interrupted {
        return 130;
    }
    report.script.verdict.exit_code()
}

/// Arguments of `trc kernel check`.
#[derive(Debug, Args)]
#[command(
    after_help = "Suites: regressions (every .pkt under counterexamples/, plus the shortest counterexample of every \
property on every built-in profile that a kernel can run, exported as trc check --out does), corpus (the .pkt \
files of --corpus only), random:N[,SEED] \
(trc diff's seeded walks on --profile) or coverage (shortest kernel-runnable paths of the state graph at the bounds \
flags or --config, trc check's defaults unless given, chosen so that together they go through every decision-point \
branch reachable there; the report says which branches were covered, which are reachable only through model-only \
paths and which not at all). Each scenario runs once on the kernel (the running one, in a private network \
namespace; or --kernel in qemu) and is replayed on --profile. Per property: holds, VIOLATED (with the shortest \
violating scenario) or undecided; per scenario: the first line where the kernel and the profile differ. Properties \
with a kernel monitor: I1, I2, I3, I11, I13, I14 (docs/reference/properties.md). Exit codes: 0 every property holds, 1 one is \
violated, 2 usage error, 3 incomplete (a scenario did not run, or no scenario decided a property), 4 skipped \
(not root or no tun; with --kernel: no qemu or no kernel image)."
)]
pub struct CheckArgs {
    /// regressions, corpus, random:N[,SEED] or coverage, or several joined by `+`
    /// (default: regressions; with --patch or --against-kernel: regressions+coverage+random:20).
    #[arg(long)]
    pub suite: Option<String>,
    /// The bounds of the coverage suite's state graph (as `trc check` takes them; only with
    /// --suite coverage).
    #[command(flatten)]
    pub bounds: crate::BoundArgs,
    /// Only these properties (comma-separated ids).
    #[arg(long, value_delimiter = ',', value_name = "I1,I2,...")]
    pub properties: Vec<String>,
    /// The model's profile the kernel is compared with (and random walks are drawn on).
    #[arg(long, default_value = "linux-6.18", value_name = "NAME|FILE.toml")]
    pub profile: String,
    /// The counterexamples/ directory (default ./counterexamples, else the one of the source tree trc was built from).
    #[arg(long, value_name = "DIR")]
    pub corpus: Option<PathBuf>,
    /// Keep the generated scripts and write report.json here (default: a temporary directory, removed).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Threads for generating the engine's counterexamples and exploring the coverage suite's state graph.
    #[arg(long, default_value = "0")]
    pub threads: usize,
    #[command(flatten)]
    pub vm: VmFlags,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Run only shard I of N of the suite's scenarios (scenario k is shard k mod N + 1's) and
    /// print it as JSON for `trc merge` (docs/reference/shards.md).
    #[arg(long, value_name = "I/N", value_parser = crate::shard::parse_shard)]
    pub shard: Option<crate::shard::Shard>,
    /// Kernel runs allowed for shrinking each violated property's shortest scenario that comes
    /// from a model action list (random walks, coverage scenarios, the engine's counterexamples).
    #[arg(long, value_name = "N", default_value = "20")]
    pub shrink_budget: usize,
    /// Do not shrink violating scenarios.
    #[arg(long)]
    pub no_shrink: bool,
    /// Check this change: build the base kernel (--base) and the base with these patches
    /// applied (`trc kernel build`), run the same suites on both and report what changed.
    #[arg(long, value_name = "FILE", num_args = 1.., conflicts_with_all = ["kernel", "against_kernel"])]
    pub patch: Vec<PathBuf>,
    /// The source the patches apply to: debian:sid (default), debian:trixie, debian:bookworm or
    /// a kernel tree.
    #[arg(long, value_name = "SRC", requires = "patch")]
    pub base: Option<String>,
    /// Compare --kernel (the changed kernel) with this one (the base), as --patch does.
    #[arg(long, value_name = "VMLINUZ", requires = "kernel")]
    pub against_kernel: Option<String>,
    /// `make -j` for --patch builds (default: the CPU count).
    #[arg(short = 'j', long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Report differences between the two kernels from one run each, without rerunning them.
    #[arg(long)]
    pub no_rerun: bool,
    /// Accepted findings: a violation in a scenario that stands for one (its model signature is
    /// accepted) is reported as accepted, not as a failure (default baseline.toml, else the one
    /// of the source tree trc was built from).
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
}

/// `baseline.toml` here, else the one of the source tree trc was built from.
fn default_baseline() -> PathBuf {
    let here = PathBuf::from("baseline.toml");
    if here.is_file() {
        return here;
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../baseline.toml")
}

fn default_corpus() -> PathBuf {
    let here = PathBuf::from("counterexamples");
    if here.is_dir() {
        return here;
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../counterexamples")
}

/// The kernel `args` name as a [`trc_kernel::target::Target`]: the running kernel, or
/// `--kernel` in qemu. Skips (exit 4) and bad images (exit 2) are `Err(code)`.
pub(crate) fn target_of(
    vm: &VmFlags,
    kernel: Option<&str>,
    what: &str,
) -> Result<Box<dyn trc_kernel::target::Target>, i32> {
    let cache = vm.cache_dir();
    match kernel {
        None => {
            if let Some(r) = trc_kernel::skip_reason() {
                eprintln!("{what}: skipped: {r}");
                return Err(trc_kernel::EXIT_SKIPPED);
            }
            Ok(Box::new(trc_kernel::target::Host::new()))
        }
        Some(k) => {
            let img =
                resolve_kernel(k, vm.modules.as_deref(), &cache).map_err(|e| vm_error(what, &e))?;
            trc_vm::host::find_qemu(None).map_err(|e| vm_error(what, &e))?;
            let mut t = trc_vm::target::Vm::new(&img, vm.spec(&img, cache));
            t.name = Some(img.release.clone());
            Ok(Box::new(t))
        }
    }
}

/// The work directory: `--out`, else a temporary one removed at the end (the guard).
pub(crate) fn work_dir(
    out: Option<&Path>,
    what: &str,
) -> Result<(PathBuf, Option<trc_vm::RemoveOnDrop>), i32> {
    let (work, guard) = match out {
        Some(d) => (d.to_path_buf(), None),
        None => {
            let d = std::env::temp_dir().join(format!("trc-kcheck-{}", std::process::id()));
            (d.clone(), Some(trc_vm::RemoveOnDrop(d)))
        }
    };
    if let Err(e) = std::fs::create_dir_all(&work) {
        eprintln!("{what}: {}: {e}", work.display());
        return Err(2);
    }
    Ok((work, guard))
}

/// The plan of `args` (every suite's scenarios prepared under `work`), or exit 2.
pub(crate) fn make_plan(
    args: &CheckArgs,
    suites: Vec<trc_kcheck::Suite>,
    mons: Vec<trc_kcheck::Monitor>,
    profile: trc_model::Profile,
    work: &Path,
    what: &str,
) -> Result<trc_kcheck::run::Plan, i32> {
    let corpus = args.corpus.clone().unwrap_or_else(default_corpus);
    let t0 = std::time::Instant::now();
    let plan = trc_kcheck::run::Plan::make(
        suites,
        mons,
        profile,
        &corpus,
        work,
        args.threads,
        &mut |m| eprintln!("{what}: {m}"),
    )
    .map_err(|e| {
        eprintln!("{what}: {e}");
        2
    })?;
    let mut plan = plan;
    let bfile = args.baseline.clone().unwrap_or_else(default_baseline);
    plan.baseline = crate::check::load_baseline(&bfile, what)
        .map_err(|e| {
            eprintln!("{what}: {e}");
            2
        })?
        .accepted;
    eprintln!(
        "{what}: {} scenarios ({:.1} s to prepare)",
        plan.cases.len(),
        t0.elapsed().as_secs_f64()
    );
    Ok(plan)
}

/// The scenarios this run owns (all, or a shard's: scenario k is shard k mod N + 1's).
pub(crate) fn owned(n: usize, shard: Option<crate::shard::Shard>, what: &str) -> Vec<usize> {
    let mine: Vec<usize> = (0..n)
        .filter(|k| shard.is_none_or(|s| s.owns(*k)))
        .collect();
    if let Some(s) = shard {
        eprintln!(
            "{what}: shard {}/{}: {} of the {n} scenarios",
            s.index,
            s.count,
            mine.len()
        );
    }
    mine
}

fn check_cli(args: CheckArgs) -> i32 {
    if !args.patch.is_empty() || args.against_kernel.is_some() {
        return crate::kpatch::main(args);
    }
    let what = "trc kernel check";
    let (suites, mons, profile) = match check_inputs(&args) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("{what}: {e}");
            return 2;
        }
    };
    // Skips first: nothing is generated for a run that cannot happen.
    let mut target = match target_of(&args.vm, args.vm.kernel.as_deref(), what) {
        Ok(t) => t,
        Err(rc) => return rc,
    };
    let (work, _cleanup) = match work_dir(args.out.as_deref(), what) {
        Ok(w) => w,
        Err(rc) => return rc,
    };
    let t0 = std::time::Instant::now();
    let plan = match make_plan(&args, suites, mons, profile, &work, what) {
        Ok(p) => p,
        Err(rc) => return rc,
    };
    let mine = owned(plan.cases.len(), args.shard, what);
    let (mut rep, _) = match trc_kcheck::run::run(&plan, &mine, target.as_mut(), &mut |m| {
        eprintln!("{what}: {m}")
    }) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("{what}: {e}");
            return e.exit_code();
        }
    };
    if let Some(shard) = args.shard {
        return print_shard(
            &args,
            &plan,
            &mine,
            &rep,
            shard,
            &work,
            t0.elapsed().as_secs_f64(),
            what,
        );
    }
    if rep.exit_code() == 1 {
        if let Err(rc) =
            shrink_violations(&args, &mut rep, &plan, &mine, target.as_mut(), &work, what)
        {
            return rc;
        }
    }
    let json = print_check_report(
        &rep,
        plan.coverage.as_ref(),
        args.json,
        t0.elapsed().as_secs_f64(),
    );
    finish(args.out.is_some(), &work, &json, rep.exit_code(), what)
}

/// The end of a kernel check: `OUT/report.json` written (with `--out`), then the exit code
/// (130 when interrupted, 2 when the report cannot be written).
pub(crate) fn finish(
    out: bool,
    work: &Path,
    json: &serde_json::Value,
    code: i32,
    what: &str,
) -> i32 {
    if out {
        if let Err(e) = trc_kernel::write_json_atomic(&work.join("report.json"), json) {
            eprintln!(
                "{what}: cannot write {}: {e}",
                work.join("report.json").display()
            );
            return 2;
        }
    }
    if trc_kernel::sys::interrupted() {
        return 130;
    }
    code
}

/// A shard's output for `trc merge` (stdout, and `OUT/shard-I-of-N.json` with `--out`): the
/// exit code.
#[allow(clippy::too_many_arguments)]
fn print_shard(
    args: &CheckArgs,
    plan: &trc_kcheck::run::Plan,
    mine: &[usize],
    rep: &trc_kcheck::CheckReport,
    shard: crate::shard::Shard,
    work: &Path,
    seconds: f64,
    what: &str,
) -> i32 {
    let mut shard_args = serde_json::json!({
        "suite": plan.suite_name(),
        "profile": plan.profile.name,
        "properties": plan.monitors.iter().map(|m| m.id).collect::<Vec<_>>(),
        "scenarios": plan.cases.iter().map(|c| &c.name).collect::<Vec<_>>(),
        "baseline": plan.baseline,
    });
    // The coverage suite's plan (the same in every shard: `trc merge` checks the args agree).
    if let Some(p) = &plan.coverage {
        shard_args["coverage"] = serde_json::json!(p);
    }
    let units: Vec<serde_json::Value> = mine
        .iter()
        .zip(&rep.cases)
        .map(|(k, r)| serde_json::json!({"unit": k, "scenario": plan.cases[*k].name, "result": r}))
        .collect();
    let report = serde_json::json!({"kernel": (!mine.is_empty()).then_some(&rep.kernel), "seconds": seconds});
    let v = crate::shard::shard_json(
        "kernel-check",
        shard,
        plan.cases.len(),
        shard_args,
        units,
        Some(report),
    );
    println!("{}", serde_json::to_string_pretty(&v).unwrap());
    if args.out.is_some() {
        let f = work.join(format!("shard-{}-of-{}.json", shard.index, shard.count));
        if let Err(e) = trc_kernel::write_json_atomic(&f, &v) {
            eprintln!("{what}: cannot write {}: {e}", f.display());
            return 2;
        }
    }
    if trc_kernel::sys::interrupted() {
        return 130;
    }
    rep.exit_code()
}

/// Shrinks the report's violations on the same kernel (the host, or one VM boot per ddmin
/// round), unless `--no-shrink` or a zero budget: the shrunk scripts go to `OUT/shrunk/`, or,
/// without `--out`, to a directory under the temporary directory that is kept. `Err(2)` when
/// that directory cannot be made.
fn shrink_violations(
    args: &CheckArgs,
    rep: &mut trc_kcheck::CheckReport,
    plan: &trc_kcheck::run::Plan,
    mine: &[usize],
    target: &mut dyn trc_kernel::target::Target,
    work: &Path,
    what: &str,
) -> Result<(), i32> {
    if args.no_shrink || args.shrink_budget == 0 {
        let why = if args.no_shrink {
            "not shrunk (--no-shrink)"
        } else {
            "not shrunk (--shrink-budget 0)"
        };
        rep.properties
            .iter_mut()
            .filter(|p| p.verdict == "violated")
            .for_each(|p| p.shrink_note = Some(why.into()));
        return Ok(());
    }
    let out_dir = match &args.out {
        Some(d) => d.join("shrunk"),
        None => std::env::temp_dir().join(format!("trc-kcheck-shrunk-{}", std::process::id())),
    };
    if let Err(e) = std::fs::create_dir_all(&out_dir) {
        eprintln!("{what}: {}: {e}", out_dir.display());
        return Err(2);
    }
    let cases: Vec<trc_kcheck::Case> = mine.iter().map(|k| plan.cases[*k].clone()).collect();
    trc_kcheck::run::shrink_on(
        rep,
        &cases,
        &plan.monitors,
        target,
        args.shrink_budget,
        &work.join("shrink"),
        &out_dir,
        &mut |m| eprintln!("{what}: {m}"),
    );
    Ok(())
}

/// Prints a kernel check's report (`trc kernel check` and `trc merge`): JSON, or the text and
/// the run's total time. The coverage suite's report is the usual one with its coverage beside
/// it (`coverage.plan`, and `coverage.kernel`: the share the kernel runs account for). Returns
/// the JSON report.
pub fn print_check_report(
    rep: &trc_kcheck::CheckReport,
    coverage: Option<&trc_kcheck::coverage::CoveragePlan>,
    json: bool,
    seconds: f64,
) -> serde_json::Value {
    let cov = coverage.map(|p| (p, trc_kcheck::coverage::kernel_coverage(p, &rep.cases)));
    let mut v = serde_json::to_value(rep).unwrap_or_default();
    if let Some((p, k)) = &cov {
        v["coverage"] = serde_json::json!({"plan": p, "kernel": k});
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
    } else {
        print!("{}", rep.render());
        if let Some((p, k)) = &cov {
            print!("{}", p.render(k));
        }
        println!("total: {seconds:.1} s");
    }
    v
}

/// `trc kernel check`'s suites, monitors and profile, and its option bounds checked: the
/// message of the first that is wrong.
pub(crate) fn check_inputs(
    args: &CheckArgs,
) -> Result<
    (
        Vec<trc_kcheck::Suite>,
        Vec<trc_kcheck::monitor::Monitor>,
        trc_model::Profile,
    ),
    String,
> {
    let default = if args.patch.is_empty() && args.against_kernel.is_none() {
        "regressions"
    } else {
        PATCH_SUITES
    };
    let mut suites = trc_kcheck::run::parse_suites(args.suite.as_deref().unwrap_or(default))?;
    let cfg = args.bounds.config()?;
    let has_cov = suites
        .iter()
        .any(|s| matches!(s, trc_kcheck::Suite::Coverage(_)));
    for s in suites.iter_mut() {
        if let trc_kcheck::Suite::Coverage(c) = s {
            **c = cfg.clone();
        }
    }
    if !has_cov && (cfg != trc_model::Config::default() || !args.bounds.config.is_empty()) {
        return Err(format!("bounds flags and --config apply only to --suite coverage (the {} suite's scenarios are fixed)", suites.iter().map(|s| s.name()).collect::<Vec<_>>().join("+")));
    }
    let mons = trc_kcheck::monitor::select(&args.properties)?;
    let profile = crate::check::load_profile(&args.profile)?;
    args.vm.validate()?;
    Ok((suites, mons, profile))
}

/// The suites of a patch check unless `--suite` says otherwise.
pub const PATCH_SUITES: &str = "regressions+coverage+random:20";

/// A VM run's problem (with the console's last 20 lines on stderr) and, with `--console FILE`,
/// the whole console written atomically; `Err(2)` when that write fails.
pub fn problem_and_console(
    problem: Option<&str>,
    console: &[String],
    file: Option<&Path>,
    what: &str,
) -> Result<(), i32> {
    if let Some(p) = problem {
        println!("problem: {p}");
        for l in console
            .iter()
            .rev()
            .take(20)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
        {
            eprintln!("console: {l}");
        }
    }
    if let Some(c) = file {
        let mut text = console.join("\n");
        text.push('\n');
        if let Err(e) = trc_vm::write_atomic(c, text.as_bytes()) {
            eprintln!("{what}: {e}");
            return Err(2);
        }
    }
    Ok(())
}
