//! The real-kernel runner: executes packetdrill-format scripts against the running Linux kernel
//! inside a private network namespace with its own tun device.
//!
//! # API (for a model-vs-kernel differ)
//! * [`run_script`]`(&Script, &RunOptions) -> Result<RunReport, RunError>` runs an already
//!   parsed [`trc_pkt::Script`]; [`run_file`] parses a file first.
//! * [`RunReport`] holds one [`LineResult`] per checked statement (pass/fail, expected vs
//!   actual, timing offset, tcp_info at assert/print points), a time-ordered [`TraceEvent`]
//!   list (every injected and captured segment in script sequence space, and a tcp_info
//!   snapshot after each statement), the undo-counter deltas of the namespace and the
//!   congestion control the connection really used.
//! * [`skip_reason`] says why runs are impossible here (not root, no `/dev/net/tun`).
//!
//! A library only: the `trc kernel` command line is `cli/src/kernel.rs`.
//!
//! # Isolation
//! Each run happens in a dedicated thread that `unshare(CLONE_NEWNET)`s into an anonymous
//! namespace containing only `lo` and `tun0` (192.168.0.1, peer 192.0.2.1). Nothing is
//! added to `ip netns list`; the namespace and the non-persistent tun device disappear when
//! the thread's fds are closed, on every exit path (see [`sys`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

pub mod packet;
pub mod report;
mod runner;
pub mod sys;
pub mod tcpinfo;

pub use report::{LineKind, LineResult, RunReport, Status, TraceEvent, TraceSegment};
pub use runner::builtin_defaults;
pub use tcpinfo::{TcpInfoRaw, TcpInfoSnapshot};

/// Exit code for "skipped" (not root, no tun).
pub const EXIT_SKIPPED: i32 = 4;

/// Default outbound timing tolerance: timer-driven sends land 10-30 ms late at HZ=250.
pub const DEFAULT_TOLERANCE_MS: f64 = 40.0;

/// How to run a script.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// `Some(b)`: force net.ipv4.tcp_sack after defaults and every shell line.
    pub sack: Option<bool>,
    /// `Some(b)`: force net.ipv4.tcp_timestamps likewise.
    pub timestamps: Option<bool>,
    /// Congestion control set on each socket with TCP_CONGESTION (`cubic`).
    pub cc: String,
    /// Outbound timing tolerance.
    pub tolerance: Duration,
    /// Enable TSO on the tun (packets arrive as super-packets).
    pub tso: bool,
    /// Directory shell commands run in (the script's directory).
    pub script_dir: PathBuf,
    /// Print verdicts while running.
    pub verbose: bool,
    /// Install SIGINT/SIGTERM handlers that stop the run cleanly.
    pub handle_signals: bool,
}

impl Default for RunOptions {
    fn default() -> RunOptions {
        RunOptions {
            sack: None,
            timestamps: None,
            cc: "cubic".into(),
            tolerance: Duration::from_micros((DEFAULT_TOLERANCE_MS * 1000.0) as u64),
            tso: false,
            script_dir: PathBuf::from("."),
            verbose: false,
            handle_signals: false,
        }
    }
}

/// Why a run did not produce a report.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Not root / no tun: the caller should report "skipped".
    #[error("{0}")]
    Skipped(String),
    #[error("{0}")]
    Parse(#[from] trc_pkt::ParseError),
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
pub fn run_script(script: &trc_pkt::Script, file: &str, opts: &RunOptions) -> Result<RunReport, RunError> {
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
    let host_ns = sys::current_netns_id();
    let handle = std::thread::Builder::new()
        .name("trc-kernel-run".into())
        .spawn(move || -> Result<RunReport, RunError> {
            // This thread (only) moves into a fresh namespace; it dies with the thread.
            sys::unshare_netns().map_err(|e| RunError::Setup(e.to_string()))?;
            if sys::current_netns_id() == host_ns {
                return Err(RunError::Setup("unshare did not change the network namespace".into()));
            }
            let mut notes = Vec::new();
            runner::apply_overrides(&opts, &mut notes);
            let mut r = runner::Runner::new(&opts, file).map_err(|e| RunError::Setup(e.to_string()))?;
            r.report.notes.extend(notes);
            r.report.tolerance_ms = opts.tolerance.as_secs_f64() * 1000.0;
            r.run(&script, &opts.script_dir);
            let mut report = std::mem::replace(&mut r.report, RunReport::new(String::new()));
            drop(r); // closes the sockets, stops the reader, closes the tun
            report.finish();
            Ok(report)
        })
        .map_err(|e| RunError::Internal(format!("cannot spawn runner thread: {e}")))?;
    match handle.join() {
        Ok(r) => r,
        Err(p) => {
            let msg = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default();
            Err(RunError::Internal(format!("runner panicked: {msg}")))
        }
    }
}

/// Where the machine-wide run lock lives (`TRC_KERNEL_LOCK` overrides).
fn lock_path() -> PathBuf {
    std::env::var_os("TRC_KERNEL_LOCK").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/tmp/trc-kernel-run.lock"))
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
    f.lock().map_err(|e| RunError::Io(format!("{}: cannot lock: {e}", path.display())))?;
    Ok(f)
}

/// Parse and run a script file.
pub fn run_file(path: &Path, opts: &RunOptions) -> Result<RunReport, RunError> {
    let src = std::fs::read_to_string(path).map_err(|e| RunError::Io(format!("{}: {e}", path.display())))?;
    let name = path.display().to_string();
    let script = trc_pkt::parse(&src, &name)?;
    let mut o = opts.clone();
    o.script_dir = path.parent().filter(|p| !p.as_os_str().is_empty()).map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."));
    run_script(&script, &name, &o)
}

/// Write `value` as JSON to `path` atomically (temp file in the same directory + rename).
pub fn write_json_atomic<T: serde::Serialize>(path: &Path, value: &T) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let base = path.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "trace.json".into());
    let tmp = dir.join(format!(".{base}.tmp-{}", std::process::id()));
    let res = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        serde_json::to_writer_pretty(&mut f, value).map_err(std::io::Error::other)?;
        f.write_all(b"\n")?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if res.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    res
}
