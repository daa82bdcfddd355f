//! The real-kernel runner: executes packetdrill scripts against the running Linux kernel inside
//! a private network namespace with its own tun device — the kernel backend of the one script
//! engine (`trc_pkt::engine`), which gives scripts packetdrill's meaning.
//!
//! # API (for the differential tester and the kernel check)
//! * [`run_script`]`(&Script, file, &RunOptions) -> Result<RunReport, RunError>` runs an already
//!   parsed [`trc_pkt::Script`]; [`run_file`] parses a file first.
//! * [`RunReport`] holds the engine's [`Report`] (one [`LineResult`] per statement, the
//!   [`Verdict`]), a time-ordered [`TraceEvent`] list (every injected and captured segment in
//!   script sequence space, and tcp_info with the undo counters' deltas after each statement),
//!   the run's undo-counter deltas and the congestion control the connection really used.
//! * [`skip_reason`] says why runs are impossible here (not root, no `/dev/net/tun`, no
//!   `CAP_SYS_ADMIN`).
//!
//! # The network, as packetdrill's
//! `tun0` with a virtio-net header and TSO offloads (the kernel hands it TSO/GSO super-packets;
//! the engine merges and splits lines as packetdrill does), 192.168.0.1/16, the peer 192.0.2.1
//! routed via 192.168.0.1, ports 8080. One difference, on purpose: the route carries
//! `congctl cubic` by default ([`RunOptions::cc`]), because a namespace here cannot make cubic
//! its default and the gtests' `defaults.sh` expects it to be.
//!
//! # Isolation
//! Each run happens in a dedicated thread that `unshare(CLONE_NEWNET)`s into an anonymous
//! namespace containing only `lo` and `tun0`. Nothing is added to `ip netns list`; the
//! namespace and the non-persistent tun device disappear when the thread's fds are closed, on
//! every exit path (see [`sys`]). Shell lines run confined ([`shell`]): a script is code that
//! runs as root.
//!
//! A library only: the `trc kernel` command line is `cli/src/kernel.rs`.

use std::path::{Path, PathBuf};
use std::time::Duration;

mod calls;
mod capture;
pub mod packet;
pub mod report;
mod runner;
pub mod shell;
pub mod sys;
pub mod target;
pub mod tcpinfo;

pub use report::{
    LineKind, LineResult, Report, RunReport, Status, TraceEvent, TraceSegment, Verdict,
};
pub use tcpinfo::{TcpInfoRaw, TcpInfoSnapshot};

/// Exit code for "skipped" (not root, no tun).
pub const EXIT_SKIPPED: i32 = 4;

/// How to run a script.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// `Some(b)`: force net.ipv4.tcp_sack after defaults and every shell line.
    pub sack: Option<bool>,
    /// `Some(b)`: force net.ipv4.tcp_timestamps likewise.
    pub timestamps: Option<bool>,
    /// The congestion control of the route to the peer (`congctl`), i.e. of every connection
    /// that does not set `TCP_CONGESTION` itself; `None`: the namespace default (bbr here).
    pub cc: Option<String>,
    /// packetdrill command-line options, applied after the script's own (`tolerance_usecs`,
    /// `strict_segments`, `define`, ...).
    pub packetdrill: Vec<(String, Option<String>)>,
    /// Directory shell commands run in (the script's directory).
    pub script_dir: PathBuf,
    /// Refuse shell lines (the run stops at the first one).
    pub no_shell: bool,
    /// Install SIGINT/SIGTERM handlers that stop the run cleanly.
    pub handle_signals: bool,
    /// The run's wall-clock limit: past it the run stops where it is (`stopped at line N: ...
    /// time limit`, incomplete), a blocking system call included. `None`: no limit.
    pub time_limit: Option<Duration>,
}

/// [`RunOptions::time_limit`]'s default: far above any script of the public suites (the
/// longest take about a minute), far below "forever".
pub const DEFAULT_TIME_LIMIT: Duration = Duration::from_secs(120);

impl Default for RunOptions {
    fn default() -> RunOptions {
        RunOptions {
            sack: None,
            timestamps: None,
            cc: Some("cubic".into()),
            packetdrill: Vec::new(),
            script_dir: PathBuf::from("."),
            no_shell: false,
            handle_signals: false,
            time_limit: Some(DEFAULT_TIME_LIMIT),
        }
    }
}

/// The command line packetdrill's run_all.py gives its ipv4 variant (the addresses and the
/// gtests' `-D` definitions: [`trc_pkt::engine::run_all_ipv4`]); trc's own comes after it.
pub fn run_all_command_line() -> Vec<(String, Option<String>)> {
    trc_pkt::engine::run_all_ipv4()
}

/// Why a run did not produce a report.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Not root / no tun: the caller should report "skipped".
    #[error("{0}")]
    Skipped(String),
    #[error("{0}")]
    Parse(#[from] trc_pkt::ParseError),
    /// A bad `--option` (script or command line).
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Io(String),
    #[error("namespace/tun setup failed: {0}")]
    Setup(String),
    #[error("internal error: {0}")]
    Internal(String),
}

/// `Some(reason)` when kernel runs are impossible on this machine.
pub fn skip_reason() -> Option<String> {
    sys::environment_problem()
}

/// Run a parsed script against the kernel. `file` names the script in messages.
pub fn run_script(
    script: &trc_pkt::Script,
    file: &str,
    opts: &RunOptions,
) -> Result<RunReport, RunError> {
    let mut cli = run_all_command_line();
    cli.extend(opts.packetdrill.iter().cloned());
    let settings = trc_pkt::engine::Settings::resolve(script, file, &cli)
        .map_err(|e| RunError::Usage(e.to_string()))?;
    if let Some(r) = skip_reason() {
        return Err(RunError::Skipped(r));
    }
    if opts.handle_signals {
        sys::install_signal_handlers();
    }
    // One kernel run at a time on this machine, across processes (tests, `trc diff`, concurrent
    // users): runs time segments to a few ms, and two at once on 2 CPUs make both late.
    let _machine_lock = machine_lock()?;
    let script = script.clone();
    let opts = opts.clone();
    let file = file.to_string();
    use std::os::unix::thread::JoinHandleExt;
    let host_ns = sys::current_netns_id();
    sys::install_wakeup_handler();
    let (tx, rx) = std::sync::mpsc::channel();
    let limit = opts.time_limit;
    let handle = std::thread::Builder::new()
        .name("trc-kernel-run".into())
        .spawn(move || {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                run_in_namespace(&script, &file, &opts, settings, host_ns)
            }))
            .unwrap_or_else(|p| {
                let msg = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                Err(RunError::Internal(format!("runner panicked: {msg}")))
            });
            let _ = tx.send(r);
        })
        .map_err(|e| RunError::Internal(format!("cannot spawn runner thread: {e}")))?;
    let first_wait = limit.map_or(Duration::MAX, |l| l + Duration::from_millis(200));
    let result = match rx.recv_timeout(first_wait) {
        Ok(r) => r,
        Err(_) => {
            // Past the limit, the runner's waits stop by themselves; a blocking system call is
            // woken by a signal (again, in case it was between checks), for up to 10 s.
            let mut got = None;
            for _ in 0..100 {
                sys::wake_thread(handle.as_pthread_t());
                if let Ok(r) = rx.recv_timeout(Duration::from_millis(100)) {
                    got = Some(r);
                    break;
                }
            }
            got.unwrap_or_else(|| {
                Err(RunError::Internal(
                    "the run did not stop after its time limit".into(),
                ))
            })
        }
    };
    if result.is_ok() {
        let _ = handle.join();
    }
    result
}

/// The run itself, on its own thread, which moves into a fresh network namespace (it dies with
/// the thread).
fn run_in_namespace(
    script: &trc_pkt::Script,
    file: &str,
    opts: &RunOptions,
    settings: trc_pkt::engine::Settings,
    host_ns: Option<u64>,
) -> Result<RunReport, RunError> {
    sys::unshare_netns().map_err(|e| RunError::Setup(e.to_string()))?;
    if sys::current_netns_id() == host_ns {
        return Err(RunError::Setup(
            "unshare did not change the network namespace".into(),
        ));
    }
    let mut notes = Vec::new();
    if let Err(why) = sys::realtime_priority() {
        notes.push(why.to_string());
    }
    runner::apply_overrides(opts, &mut notes);
    let dir = opts.script_dir.clone();
    let mut b = runner::KernelBackend::new(opts, &dir, file.to_string())
        .map_err(|e| RunError::Setup(e.to_string()))?;
    b.report.notes.extend(notes);
    let report = trc_pkt::engine::run(script, file, settings, &mut b);
    b.finish();
    let mut r = std::mem::replace(&mut b.report, RunReport::new(String::new()));
    r.script = report;
    drop(b); // closes the sockets, stops the reader, closes the tun
    Ok(r)
}

/// Where the machine-wide run lock lives (`TRC_KERNEL_LOCK` overrides).
fn lock_path() -> PathBuf {
    std::env::var_os("TRC_KERNEL_LOCK")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp/trc-kernel-run.lock"))
}

/// Take the exclusive advisory lock (`flock`) that serialises kernel runs machine-wide; it is
/// released when the returned file is dropped (or the process dies).
fn machine_lock() -> Result<std::fs::File, RunError> {
    let path = lock_path();
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| RunError::Io(format!("{}: {e}", path.display())))?;
    f.lock()
        .map_err(|e| RunError::Io(format!("{}: cannot lock: {e}", path.display())))?;
    Ok(f)
}

/// Parse and run a script file.
pub fn run_file(path: &Path, opts: &RunOptions) -> Result<RunReport, RunError> {
    let src = std::fs::read_to_string(path)
        .map_err(|e| RunError::Io(format!("{}: {e}", path.display())))?;
    let name = path.display().to_string();
    let script = trc_pkt::parse(&src, &name)?;
    let mut o = opts.clone();
    o.script_dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    run_script(&script, &name, &o)
}
