//! The host side: qemu, watched.
//!
//! `qemu-system-x86_64 -nographic -no-reboot -nic none -no-user-config -m MEM -kernel VMLINUZ
//! -initrd BASE+SCRIPTS -append "console=ttyS0 quiet panic=-1 -- kernel guest"`, plus a
//! virtio-serial port `trc.results` on a `file` chardev that the host reads as it grows, and
//! the accelerator:
//! * **TCG with virtual time** (`-accel tcg -icount shift=0,sleep=off -cpu max -smp 1`): the
//!   guest's clock advances with the instructions it executes (1 ns each) and jumps over idle
//!   time, so the timing a script sees does not depend on the host's speed or load. It is the
//!   only mode that reproduced the host's verdicts in the prototype (real-time TCG, `shift=auto`
//!   and `shift=3` did not).
//! * **KVM** (`-accel kvm -cpu host,-arch-capabilities`, qboot when installed), only if
//!   `/dev/kvm` opens. [`Accel::Auto`] tries it first and falls back to TCG icount on any sign of
//!   failure: qemu exits before the guest's boot record (the MSR 0x10a abort), `KVM internal
//!   error` or `emulation failure` on its output (qemu then pauses the VM and waits: it is
//!   killed), no boot record within 30 s, or no `done` record. A run is accepted from KVM only
//!   when it completed. The verdict is cached per host kernel, qemu version and CPU model.
//!
//! Time limits, besides [`VmSpec::timeout`] on the wall clock: the boot (180 s of qemu CPU time
//! or 900 s wall), and after it the guest's progress — it writes a tick every second of guest
//! time — 60 s of qemu CPU or 600 s wall without a record means the VM hangs. qemu is killed on
//! every exit path (a guard's `Drop`, and `PR_SET_PDEATHSIG` should trc itself be killed).
//! One VM runs at a time machine-wide (an `flock` on `/tmp/trc-vm-run.lock`, `$TRC_VM_LOCK`);
//! it does not take the host runner's lock, so host runs are not held up for a minute.

use serde::Serialize;
use std::fmt::Write as _;
use std::io::{Read as _, Write as _};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::initramfs::{self, BaseOptions};
use crate::proto::{self, Decoder, ErrorKind, GuestOptions, Job, Record, ScriptJob};
use crate::{Error, KernelImage, RemoveOnDrop};

/// Which accelerator to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accel {
    /// KVM if `/dev/kvm` works (and did before), else TCG icount.
    Auto,
    Kvm,
    TcgIcount,
}

/// The accelerator a run used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AccelUsed {
    Kvm,
    TcgIcount,
}

impl std::fmt::Display for AccelUsed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            AccelUsed::Kvm => "kvm",
            AccelUsed::TcgIcount => "tcg-icount",
        })
    }
}

/// What to boot and how.
#[derive(Debug, Clone)]
pub struct VmSpec {
    /// The bzImage.
    pub kernel: PathBuf,
    /// Its `lib/modules/RELEASE` (for `tun.ko`); `None`: tun must be built in.
    pub modules: Option<PathBuf>,
    pub accel: Accel,
    /// A limit on the whole run, wall clock; `None`: only the boot and progress limits.
    pub timeout: Option<Duration>,
    /// The runner's options (those of `trc kernel run`).
    pub options: GuestOptions,
    /// Per-script limit, in guest time.
    pub script_timeout: Duration,
    /// Where the base initramfs is cached and the run's temporary files go.
    pub cache_dir: PathBuf,
    pub memory_mb: u32,
    /// qemu; default `qemu-system-x86_64` on PATH (`$TRC_QEMU` overrides).
    pub qemu: Option<PathBuf>,
    /// The trc binary for the guest; default the running one.
    pub trc_binary: Option<PathBuf>,
    /// Leave python3 out of the guest.
    pub no_python: bool,
}

impl VmSpec {
    pub fn new(kernel: &Path, modules: Option<&Path>) -> VmSpec {
        VmSpec {
            kernel: kernel.to_path_buf(),
            modules: modules.map(Path::to_path_buf),
            accel: Accel::Auto,
            timeout: None,
            options: GuestOptions::default(),
            script_timeout: Duration::from_secs(120),
            cache_dir: crate::default_cache_dir(),
            memory_mb: 1024,
            qemu: None,
            trc_binary: None,
            no_python: false,
        }
    }
}

/// Progress, as it happens.
#[derive(Debug, Clone)]
pub enum Event {
    Initramfs {
        base: PathBuf,
        cached: bool,
        bytes: u64,
        seconds: f64,
    },
    Starting {
        accel: AccelUsed,
    },
    KvmFailed {
        reason: String,
    },
    Booted {
        release: String,
        wall_s: f64,
        cpu_s: f64,
    },
    ScriptBegin {
        index: usize,
        name: String,
    },
    ScriptEnd {
        index: usize,
        name: String,
        rc: i32,
        wall_s: f64,
    },
    Note(String),
}

impl Event {
    /// The progress line for the event, or none (a script's start has none). `label`: the kernel
    /// being booted; `n`: the number of scripts.
    pub fn line(&self, label: &str, n: usize) -> Option<String> {
        Some(match self {
            Event::Initramfs {
                base,
                cached,
                bytes,
                seconds,
            } => format!(
                "initramfs {:.1} MB ({}, {seconds:.1} s): {}",
                *bytes as f64 / 1e6,
                if *cached { "base cached" } else { "base built" },
                base.display()
            ),
            Event::Starting { accel } => format!("booting {label} under {accel}"),
            Event::KvmFailed { reason } => {
                format!("KVM failed ({reason}); falling back to TCG icount")
            }
            Event::Booted {
                release,
                wall_s,
                cpu_s,
            } => format!("{release} booted in {wall_s:.1} s ({cpu_s:.1} s qemu CPU)"),
            Event::ScriptBegin { .. } => return None,
            Event::ScriptEnd {
                index,
                name,
                rc,
                wall_s,
            } => format!("[{}/{n}] {name}: exit {rc} ({wall_s:.1} s)", index + 1),
            Event::Note(m) => format!("note: {m}"),
        })
    }
}

/// Seconds of wall clock, of qemu's CPU time (user + system, all threads) and of guest uptime.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Timing {
    pub wall_s: f64,
    pub cpu_s: f64,
    pub guest_s: f64,
}

/// What became of a script.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub enum ScriptOutcome {
    /// It ran (its report may still say failed or incomplete).
    Ran { report: Box<trc_kernel::RunReport> },
    /// The guest could not run it, or stopped it at the time limit (then with the report so far).
    Error {
        kind: ErrorKind,
        message: String,
        report: Option<Box<trc_kernel::RunReport>>,
    },
    /// An impact run's measurements ([`run_impact_in_vm_with`]).
    Measured {
        result: Box<crate::impact::ImpactRun>,
    },
    /// Real packetdrill ran it ([`crate::packetdrill`]): the tail of its output (`rc` is its
    /// exit code).
    Exited { output: String },
    /// No result came back (the VM died or timed out first).
    Missing,
}

/// One script's result.
#[derive(Debug, Clone, Serialize)]
pub struct ScriptRun {
    pub path: PathBuf,
    pub name: String,
    /// The exit code `trc kernel run` would give: 0 pass, 1 fail, 2 usage, 3 incomplete (also a
    /// missing result), 4 skipped, 130 stopped.
    pub rc: i32,
    pub outcome: ScriptOutcome,
    pub timing: Timing,
}

impl ScriptRun {
    pub fn report(&self) -> Option<&trc_kernel::RunReport> {
        match &self.outcome {
            ScriptOutcome::Ran { report } => Some(report),
            ScriptOutcome::Error { report, .. } => report.as_deref(),
            ScriptOutcome::Measured { .. }
            | ScriptOutcome::Exited { .. }
            | ScriptOutcome::Missing => None,
        }
    }
}

/// A whole VM run.
#[derive(Debug, Clone, Serialize)]
pub struct VmRun {
    pub accelerator: AccelUsed,
    /// Why KVM was not used or given up (`Accel::Auto`).
    pub kvm_fallback: Option<String>,
    pub kernel: PathBuf,
    /// The guest's `uname -r`.
    pub release: String,
    pub qemu: String,
    pub initramfs: PathBuf,
    pub initramfs_cached: bool,
    pub initramfs_s: f64,
    pub boot: Timing,
    /// The modules the guest's init loaded, in its order, each with its error if it failed.
    pub modules: Vec<proto::ModuleLoad>,
    pub total: Timing,
    pub scripts: Vec<ScriptRun>,
    /// Every script has a result and the guest said it was done.
    pub complete: bool,
    /// Why not.
    pub problem: Option<String>,
    pub notes: Vec<String>,
    /// Load average (1 min) at the start and the end.
    pub load: (f64, f64),
    /// Frames skipped for a bad checksum.
    pub damaged_frames: usize,
    #[serde(skip)]
    pub console: Vec<String>,
}

impl VmRun {
    /// The run as text: each script's report (its trace events with `verbose`), then the
    /// accelerator, kernel (`release` when the guest did not say), timings, notes and the counts
    /// of exit codes; `n` scripts were asked for.
    pub fn render(&self, release: &str, n: usize, verbose: bool) -> String {
        let run = self;
        let mut o = String::new();
        for (i, s) in run.scripts.iter().enumerate() {
            if i > 0 {
                o.push('\n');
            }
            match &s.outcome {
                ScriptOutcome::Ran { report } => o.push_str(&report.render()),
                ScriptOutcome::Error {
                    message, report, ..
                } => {
                    if let Some(r) = report {
                        let _ = write!(o, "{}", r.render());
                    }
                    let _ = writeln!(o, "{}: {message}", s.name);
                }
                ScriptOutcome::Measured { .. }
                | ScriptOutcome::Exited { .. }
                | ScriptOutcome::Missing => {
                    let _ = writeln!(o, "{}: no result from the VM", s.name);
                }
            }
            if verbose {
                for ev in s.report().map(|r| r.trace.as_slice()).unwrap_or_default() {
                    let _ = writeln!(
                        o,
                        "trace: {}",
                        serde_json::to_string(ev).unwrap_or_default()
                    );
                }
            }
        }
        o.push('\n');
        let _ = writeln!(o, "accelerator: {}", run.accelerator);
        if let Some(k) = &run.kvm_fallback {
            let _ = writeln!(o, "kvm: {k}");
        }
        let _ = writeln!(
            o,
            "kernel: {} ({})",
            if run.release.is_empty() {
                release
            } else {
                run.release.as_str()
            },
            run.kernel.display()
        );
        let _ = writeln!(
            o,
            "boot: {:.1} s wall, {:.1} s qemu CPU, guest uptime {:.2} s",
            run.boot.wall_s, run.boot.cpu_s, run.boot.guest_s
        );
        let _ = writeln!(
            o,
            "total: {:.1} s wall, {:.1} s qemu CPU, {} scripts (load {:.1} -> {:.1})",
            run.total.wall_s, run.total.cpu_s, n, run.load.0, run.load.1
        );
        for note in &run.notes {
            let _ = writeln!(o, "note: {note}");
        }
        let count = |c: i32| run.scripts.iter().filter(|s| s.rc == c).count();
        let _ = writeln!(
            o,
            "scripts: {} passed, {} failed, {} incomplete or missing, {} skipped",
            count(0),
            count(1),
            count(3) + count(130),
            count(4) + count(2)
        );
        o
    }

    /// The exit code of the run: 1 if a script failed, else 3 if one is incomplete (or missing,
    /// or the VM did not complete), else 2 for a usage error, else 4 if one was skipped, else 0.
    pub fn exit_code(&self) -> i32 {
        let rcs: Vec<i32> = self.scripts.iter().map(|s| s.rc).collect();
        if rcs.contains(&1) {
            1
        } else if !self.complete || rcs.iter().any(|&r| r == 3 || r == 130) {
            3
        } else if rcs.contains(&2) {
            2
        } else if rcs.contains(&4) {
            4
        } else {
            0
        }
    }
}

/// qemu, found: `$TRC_QEMU`, or `qemu-system-x86_64` on PATH.
pub fn find_qemu(explicit: Option<&Path>) -> Result<PathBuf, Error> {
    if let Some(p) = explicit.map(Path::to_path_buf).or_else(|| {
        std::env::var_os("TRC_QEMU")
            .filter(|s| !s.is_empty())
            .map(PathBuf::from)
    }) {
        return if p.is_file() {
            Ok(p)
        } else {
            Err(Error::Missing(format!("{}: qemu not found", p.display())))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for d in std::env::split_paths(&path) {
        let p = d.join("qemu-system-x86_64");
        if p.is_file() {
            return Ok(p);
        }
    }
    Err(Error::Missing("qemu-system-x86_64 is not installed (apt-get install --no-install-recommends qemu-system-x86)".into()))
}

pub(crate) fn loadavg() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|x| x.parse().ok()))
        .unwrap_or(0.0)
}

/// qemu's CPU time so far (user + system, all threads), from `/proc/PID/stat`.
fn cpu_seconds(pid: u32) -> Option<f64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = s.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    Some(ticks / if hz > 0.0 { hz } else { 100.0 })
}

/// Whether `/dev/kvm` can be opened read-write.
pub fn kvm_available() -> bool {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .is_ok()
}

/// Kills and reaps qemu when dropped.
struct Qemu {
    child: Child,
    exited: Option<std::process::ExitStatus>,
}

impl Qemu {
    fn poll(&mut self) -> Option<std::process::ExitStatus> {
        if self.exited.is_none() {
            self.exited = self.child.try_wait().ok().flatten();
        }
        self.exited
    }

    fn kill(&mut self) {
        if self.poll().is_none() {
            let _ = self.child.kill();
            self.exited = self.child.wait().ok();
        }
    }
}

impl Drop for Qemu {
    fn drop(&mut self) {
        self.kill();
    }
}

enum Msg {
    Out(Vec<u8>),
    Err(Vec<u8>),
}

fn reader(mut r: impl std::io::Read + Send + 'static, tx: mpsc::Sender<Msg>, err: bool) {
    std::thread::spawn(move || {
        let mut b = [0u8; 8192];
        loop {
            match r.read(&mut b) {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    let v = b[..n].to_vec();
                    if tx
                        .send(if err { Msg::Err(v) } else { Msg::Out(v) })
                        .is_err()
                    {
                        return;
                    }
                }
            }
        }
    });
}

/// How one boot ended.
#[derive(Debug, Clone, PartialEq)]
enum End {
    Done,
    Exited(String),
    KvmError(String),
    BootTimeout(String),
    Stalled(String),
    Timeout,
    Fatal(String),
}

/// What one boot gave.
struct Attempt {
    end: End,
    boot: Option<(Timing, String, Vec<String>, Vec<proto::ModuleLoad>)>,
    begins: Vec<Option<(Instant, f64)>>,
    results: Vec<Option<(Record, Timing)>>,
    total: Timing,
    console: Vec<String>,
    stderr: String,
    damaged: usize,
    /// What a `fatal` record said.
    fatal: Option<String>,
}

fn qemu_args(spec: &VmSpec, initrd: &Path, port: &Path, accel: AccelUsed) -> Vec<String> {
    let mut a: Vec<String> = [
        "-nographic",
        "-no-reboot",
        "-nic",
        "none",
        "-no-user-config",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    a.extend(["-m".into(), spec.memory_mb.to_string()]);
    a.extend([
        "-kernel".into(),
        spec.kernel.display().to_string(),
        "-initrd".into(),
        initrd.display().to_string(),
    ]);
    a.extend([
        "-append".into(),
        "console=ttyS0 quiet panic=-1 -- kernel guest".into(),
    ]);
    match accel {
        AccelUsed::TcgIcount => a.extend(
            [
                "-accel",
                "tcg",
                "-icount",
                "shift=0,sleep=off",
                "-cpu",
                "max",
                "-smp",
                "1",
            ]
            .iter()
            .map(|s| s.to_string()),
        ),
        AccelUsed::Kvm => {
            a.extend(
                [
                    "-accel",
                    "kvm",
                    "-cpu",
                    "host,-arch-capabilities",
                    "-smp",
                    "1",
                ]
                .iter()
                .map(|s| s.to_string()),
            );
            if Path::new(QBOOT).exists() {
                a.extend(["-bios".into(), QBOOT.into()]);
            }
        }
    }
    a.extend(["-device".into(), "virtio-serial-pci".into()]);
    a.extend([
        "-chardev".into(),
        format!("file,id=trcres,path={}", port.display()),
    ]);
    a.extend([
        "-device".into(),
        format!("virtserialport,chardev=trcres,name={}", proto::PORT_NAME),
    ]);
    a
}

const QBOOT: &str = "/usr/share/qemu/qboot.rom";
const KVM_BOOT_WALL: Duration = Duration::from_secs(30);
const BOOT_CPU_S: f64 = 180.0;
const BOOT_WALL: Duration = Duration::from_secs(900);
const STALL_CPU_S: f64 = 60.0;
const STALL_WALL: Duration = Duration::from_secs(600);
const KVM_SIGNS: &[&str] = &[
    "KVM internal error",
    "emulation failure",
    "failed to set MSR",
    "kvm_buf_set_msrs",
];

/// One attempt while qemu runs: what its records said so far, and when it last made progress.
struct Watch<'a> {
    at: Attempt,
    seen: std::collections::HashSet<String>,
    got_done: bool,
    t0: Instant,
    last_cpu: f64,
    last_progress: (Instant, f64),
    names: &'a [String],
    events: &'a mut dyn FnMut(&Event),
}

impl Watch<'_> {
    /// Takes one record (from the port, or from the console when the guest has no port).
    fn take(&mut self, r: Record) {
        handle(
            r,
            &mut self.at,
            &mut self.seen,
            &mut self.got_done,
            self.t0,
            self.last_cpu,
            self.names,
            self.events,
        );
        self.last_progress = (Instant::now(), self.last_cpu);
    }
}

/// The records the results port gained since the last read (it is opened once it exists).
fn read_port(file: &mut Option<std::fs::File>, port: &Path, dec: &mut Decoder) -> Vec<Record> {
    if file.is_none() {
        *file = std::fs::File::open(port).ok();
    }
    let mut b = Vec::new();
    match file.as_mut().map(|f| f.read_to_end(&mut b)) {
        Some(Ok(_)) if !b.is_empty() => dec.push_records(&b),
        _ => Vec::new(),
    }
}

/// An attempt that did not finish: the guest's own fatal message, when it sent or printed one,
/// is the reason.
fn guest_gave_up(at: &mut Attempt) {
    if at.end == End::Done {
        return;
    }
    let on_console = at
        .console
        .iter()
        .find(|l| l.contains("trc-vm: fatal:"))
        .map(|l| l.trim().to_string());
    if let Some(f) = at.fatal.clone().or(on_console) {
        at.end = End::Fatal(format!("the guest gave up: {f}"));
    }
}

fn attempt(
    spec: &VmSpec,
    qemu: &Path,
    initrd: &Path,
    port: &Path,
    accel: AccelUsed,
    names: &[String],
    events: &mut dyn FnMut(&Event),
) -> Attempt {
    let n = names.len();
    let mut at = Attempt {
        end: End::Timeout,
        boot: None,
        begins: vec![None; n],
        results: vec![None; n],
        total: Timing::default(),
        console: Vec::new(),
        stderr: String::new(),
        damaged: 0,
        fatal: None,
    };
    if let Err(e) = std::fs::write(port, b"") {
        at.end = End::Fatal(format!("{}: {e}", port.display()));
        return at;
    }
    let cmd = qemu_command(spec, qemu, initrd, port, accel);
    events(&Event::Starting { accel });
    let t0 = Instant::now();
    let (mut q, rx) = match spawn_qemu(cmd) {
        Ok(x) => x,
        Err(e) => {
            at.end = End::Fatal(format!("{}: {e}", qemu.display()));
            return at;
        }
    };
    let mut w = Watch {
        at,
        seen: std::collections::HashSet::new(),
        got_done: false,
        t0,
        last_cpu: 0.0,
        last_progress: (Instant::now(), 0.0f64),
        names,
        events,
    };
    let port_dec = watch_qemu(&mut w, &mut q, &rx, spec, accel, port);
    let mut at = w.at;
    at.total = Timing {
        wall_s: t0.elapsed().as_secs_f64(),
        cpu_s: w.last_cpu,
        guest_s: 0.0,
    };
    q.kill();
    at.damaged = port_dec.damaged;
    guest_gave_up(&mut at);
    at
}

/// Starts qemu with `cmd`, its stdout and stderr read by threads into the channel returned.
fn spawn_qemu(mut cmd: Command) -> std::io::Result<(Qemu, mpsc::Receiver<Msg>)> {
    let child = cmd.spawn()?;
    let mut q = Qemu {
        child,
        exited: None,
    };
    let (tx, rx) = mpsc::channel();
    if let Some(o) = q.child.stdout.take() {
        reader(o, tx.clone(), false);
    }
    if let Some(e) = q.child.stderr.take() {
        reader(e, tx.clone(), true);
    }
    drop(tx);
    Ok((q, rx))
}

/// Follows qemu's output (`rx`) and the results port until the attempt ends (`w.at.end` set):
/// done, qemu gone, a KVM failure or a limit reached. The port's decoder is returned (its count
/// of damaged frames).
fn watch_qemu(
    w: &mut Watch,
    q: &mut Qemu,
    rx: &mpsc::Receiver<Msg>,
    spec: &VmSpec,
    accel: AccelUsed,
    port: &Path,
) -> Decoder {
    let pid = q.child.id();
    let mut portf = None;
    let mut port_dec = Decoder::new();
    let mut cons_dec = Decoder::new();
    let mut line = Vec::new();
    let mut outputs_open = true;
    // Records on the console count only when the guest has no port (it says so in its boot
    // record).
    let mut console_mode = false;
    let mut exited_at: Option<Instant> = None;
    loop {
        // qemu's output: the console (and firmware) on stdout, its own messages on stderr.
        let mut kvm_sign = None;
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(Msg::Out(b)) => {
                for r in cons_dec.push_records(&b) {
                    if matches!(r, Record::Boot { port: false, .. }) {
                        console_mode = true;
                    }
                    if console_mode {
                        w.take(r);
                    }
                }
                kvm_sign = console_lines(&b, &mut line, accel, &mut w.at);
            }
            Ok(Msg::Err(b)) => kvm_sign = qemu_stderr(&b, accel, &mut w.at),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                outputs_open = false;
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        // The results port, as it grows.
        for r in read_port(&mut portf, port, &mut port_dec) {
            w.take(r);
        }
        if let Some(c) = cpu_seconds(pid) {
            w.last_cpu = c;
        }
        if let Some(s) = kvm_sign {
            // qemu pauses the VM after an internal error and waits: it is killed below.
            w.at.end = End::KvmError(s);
            break;
        }
        if let Some(st) = q.poll() {
            // qemu is gone: let the readers drain (at most 2 s), then stop.
            let since = *exited_at.get_or_insert_with(Instant::now);
            if outputs_open && since.elapsed() < Duration::from_secs(2) {
                continue;
            }
            w.at.end = exit_end(st, w.got_done, &w.at.stderr);
            break;
        }
        if let Some(end) = limit_reached(
            spec,
            accel,
            &w.at,
            w.t0.elapsed(),
            w.last_cpu,
            w.last_progress,
            w.got_done,
        ) {
            w.at.end = end;
            break;
        }
    }
    port_dec
}

/// The qemu command line for one attempt, its output piped, set to die with this thread.
fn qemu_command(
    spec: &VmSpec,
    qemu: &Path,
    initrd: &Path,
    port: &Path,
    accel: AccelUsed,
) -> Command {
    let mut cmd = Command::new(qemu);
    cmd.args(qemu_args(spec, initrd, port, accel))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: prctl is async-signal-safe; qemu dies with this thread.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd
}

/// Splits console bytes into lines (`line` holds the unfinished one) kept in `at.console`
/// (bounded); the last line with a KVM failure sign in it, under KVM.
fn console_lines(
    b: &[u8],
    line: &mut Vec<u8>,
    accel: AccelUsed,
    at: &mut Attempt,
) -> Option<String> {
    let mut kvm_sign = None;
    for &x in b {
        if x == b'\n' {
            let l = String::from_utf8_lossy(line)
                .trim_end_matches('\r')
                .to_string();
            if accel == AccelUsed::Kvm && KVM_SIGNS.iter().any(|s| l.contains(*s)) {
                kvm_sign = Some(l.trim().to_string());
            }
            if at.console.len() < 100_000 {
                at.console.push(l);
            }
            line.clear();
        } else if line.len() < 1 << 20 {
            line.push(x);
        }
    }
    kvm_sign
}

/// Keeps qemu's own messages in `at.stderr` (bounded); the first line with a KVM failure sign
/// in it, under KVM.
fn qemu_stderr(b: &[u8], accel: AccelUsed, at: &mut Attempt) -> Option<String> {
    let s = String::from_utf8_lossy(b);
    let mut kvm_sign = None;
    if accel == AccelUsed::Kvm {
        if let Some(l) = s.lines().find(|l| KVM_SIGNS.iter().any(|k| l.contains(*k))) {
            kvm_sign = Some(l.trim().to_string());
        }
    }
    if at.stderr.len() < 64 << 10 {
        at.stderr.push_str(&s);
    }
    kvm_sign
}

/// How an attempt ended when qemu exited with `st`: done if the guest said so, else the
/// exit status with the last lines of qemu's stderr.
fn exit_end(st: std::process::ExitStatus, got_done: bool, stderr: &str) -> End {
    if got_done {
        End::Done
    } else {
        let tail: Vec<&str> = stderr
            .lines()
            .rev()
            .take(3)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        End::Exited(
            format!(
                "qemu exited ({st}) before the guest was done {}",
                tail.join(" | ")
            )
            .trim()
            .to_string(),
        )
    }
}

/// The run's time limit, the boot limits (wall under KVM; qemu CPU time and wall) and the
/// stall limits after boot: the end of the attempt if one is passed.
fn limit_reached(
    spec: &VmSpec,
    accel: AccelUsed,
    at: &Attempt,
    wall: Duration,
    last_cpu: f64,
    last_progress: (Instant, f64),
    got_done: bool,
) -> Option<End> {
    if spec.timeout.is_some_and(|t| wall > t) {
        return Some(End::Timeout);
    }
    if at.boot.is_none() {
        if accel == AccelUsed::Kvm && wall > KVM_BOOT_WALL {
            return Some(End::BootTimeout(format!(
                "no boot record within {} s under KVM",
                KVM_BOOT_WALL.as_secs()
            )));
        }
        if last_cpu > BOOT_CPU_S || wall > BOOT_WALL {
            return Some(End::BootTimeout(format!("the guest did not reach /init within {last_cpu:.0} s of qemu CPU time ({:.0} s wall)", wall.as_secs_f64())));
        }
    } else if !got_done
        && (last_cpu - last_progress.1 > STALL_CPU_S || last_progress.0.elapsed() > STALL_WALL)
    {
        return Some(End::Stalled(format!(
            "no word from the guest for {:.0} s of qemu CPU time ({:.0} s wall)",
            last_cpu - last_progress.1,
            last_progress.0.elapsed().as_secs_f64()
        )));
    }
    None
}

#[allow(clippy::too_many_arguments)]
fn handle(
    r: Record,
    at: &mut Attempt,
    seen: &mut std::collections::HashSet<String>,
    done: &mut bool,
    t0: Instant,
    cpu: f64,
    names: &[String],
    events: &mut dyn FnMut(&Event),
) {
    let now = Timing {
        wall_s: t0.elapsed().as_secs_f64(),
        cpu_s: cpu,
        guest_s: 0.0,
    };
    let key = match &r {
        Record::Boot { .. } => "boot".to_string(),
        Record::Begin { index, .. } => format!("begin {index}"),
        Record::Result { index, .. } => format!("result {index}"),
        Record::Tick { .. } => String::new(),
        Record::Fatal { .. } => "fatal".into(),
        Record::Done { .. } => "done".into(),
    };
    if !key.is_empty() && !seen.insert(key) {
        return;
    }
    match r {
        Record::Boot {
            release,
            uptime_s,
            modules,
            notes,
            ..
        } => {
            let mut notes = notes;
            for m in &modules {
                if let Some(e) = &m.error {
                    notes.push(format!("module {}: {e}", m.name));
                }
            }
            events(&Event::Booted {
                release: release.clone(),
                wall_s: now.wall_s,
                cpu_s: now.cpu_s,
            });
            at.boot = Some((
                Timing {
                    guest_s: uptime_s,
                    ..now
                },
                release,
                notes,
                modules,
            ));
        }
        Record::Begin { index, uptime_s } => {
            if let Some(b) = at.begins.get_mut(index) {
                *b = Some((Instant::now(), cpu));
                let _ = uptime_s;
                events(&Event::ScriptBegin {
                    index,
                    name: names[index].clone(),
                });
            }
        }
        Record::Result {
            index, guest_s, rc, ..
        } if index < at.results.len() => {
            let (wall, c) = match at.begins[index] {
                Some((t, c)) => (t.elapsed().as_secs_f64(), cpu - c),
                None => (0.0, 0.0),
            };
            events(&Event::ScriptEnd {
                index,
                name: names[index].clone(),
                rc,
                wall_s: wall,
            });
            at.results[index] = Some((
                r,
                Timing {
                    wall_s: wall,
                    cpu_s: c,
                    guest_s,
                },
            ));
        }
        Record::Result { .. } | Record::Tick { .. } => {}
        Record::Fatal { message } => {
            at.fatal = Some(message.clone());
            events(&Event::Note(format!("guest: {message}")));
        }
        Record::Done { .. } => *done = true,
    }
}

/// The first line of `qemu --version` (empty when it cannot run).
fn qemu_version(qemu: &Path) -> String {
    Command::new(qemu)
        .arg("--version")
        .output()
        .ok()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .unwrap_or("")
                .to_string()
        })
        .unwrap_or_default()
}

fn kvm_probe_key(qemu: &Path) -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .map(str::to_string)
        })
        .unwrap_or_default();
    let ver = qemu_version(qemu);
    format!("{} | {} | {}", host.trim(), ver.trim(), cpu.trim())
}

#[derive(Serialize, serde::Deserialize)]
struct KvmProbe {
    key: String,
    usable: bool,
    reason: String,
}

/// Where the machine-wide VM lock lives (`$TRC_VM_LOCK` overrides).
fn lock_path() -> PathBuf {
    std::env::var_os("TRC_VM_LOCK")
        .filter(|s| !s.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp/trc-vm-run.lock"))
}

/// Takes the exclusive `flock` that keeps VM runs serial machine-wide (released on drop or
/// when the process dies), saying so if it has to wait.
fn vm_lock(events: &mut dyn FnMut(&Event)) -> Result<std::fs::File, Error> {
    let path = lock_path();
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| Error::Failed(format!("{}: {e}", path.display())))?;
    match f.try_lock() {
        Ok(()) => return Ok(f),
        Err(std::fs::TryLockError::WouldBlock) => events(&Event::Note(format!(
            "waiting for another VM run to finish ({})",
            path.display()
        ))),
        Err(std::fs::TryLockError::Error(e)) => {
            return Err(Error::Failed(format!(
                "{}: cannot lock: {e}",
                path.display()
            )))
        }
    }
    f.lock()
        .map_err(|e| Error::Failed(format!("{}: cannot lock: {e}", path.display())))?;
    Ok(f)
}

/// [`run_in_vm_with`] without progress events.
pub fn run_in_vm(spec: &VmSpec, scripts: &[PathBuf]) -> Result<VmRun, Error> {
    run_in_vm_with(spec, scripts, &mut |_| {})
}

/// Boots `spec.kernel` and runs `scripts` in it, in order. Bad scripts or options are
/// [`Error::Usage`] before anything boots; a missing qemu, busybox or kernel is
/// [`Error::Missing`]. A VM that dies or hangs is a `VmRun` with `complete == false`.
pub fn run_in_vm_with(
    spec: &VmSpec,
    scripts: &[PathBuf],
    events: &mut dyn FnMut(&Event),
) -> Result<VmRun, Error> {
    if scripts.is_empty() {
        return Err(Error::Usage("no scripts to run".into()));
    }
    // The scripts first: a bad one is a usage error wherever runs would be skipped.
    let parsed = parse_scripts(spec, scripts)?;
    let prepared = prepare(spec)?;
    let (scripts_gz, _job) = initramfs::scripts_archive(&parsed, script_job(spec, None))?;
    let entries: Vec<(PathBuf, String)> = parsed
        .iter()
        .map(|(p, n, _)| (p.clone(), n.clone()))
        .collect();
    boot(spec, &prepared, &scripts_gz, &entries, events)
}

/// Boots `spec.kernel` with the runs of the impact experiment ([`crate::impact`]) instead of
/// scripts: one [`ScriptRun`] per run, named `impact-N`, its outcome
/// [`ScriptOutcome::Measured`]. Errors as [`run_in_vm_with`].
pub fn run_impact_in_vm_with(
    spec: &VmSpec,
    ij: &crate::impact::ImpactJob,
    events: &mut dyn FnMut(&Event),
) -> Result<VmRun, Error> {
    ij.params
        .validate()
        .map_err(|e| Error::Usage(e.to_string()))?;
    if ij.runs == 0 {
        return Err(Error::Usage("no runs".into()));
    }
    let prepared = prepare(spec)?;
    let (kernel, base) = (&prepared.kernel, &prepared.base);
    // With a modules directory, its absence is known here; without one (a built-in-only
    // kernel) the guest's `ip link add ... type veth` / `tc ... netem` says so.
    for m in ["veth", "sch_netem"] {
        if kernel.modules.is_some() && base.manifest.absent.iter().any(|a| a == m) {
            return Err(Error::Missing(format!(
                "{}: {m} is neither a module nor built in",
                kernel.release
            )));
        }
    }
    let job = Job::Impact(ij.clone());
    let mut tree = initramfs::Tree::new();
    let j = serde_json::to_vec_pretty(&job).map_err(|e| Error::Failed(e.to_string()))?;
    tree.file("t/job.json", 0o644, 0, initramfs::Data::Bytes(j))?;
    let scripts_gz = tree.to_gzip()?;
    let entries: Vec<(PathBuf, String)> = (0..ij.runs)
        .map(|i| (PathBuf::from(format!("impact-{i}")), format!("impact-{i}")))
        .collect();
    boot(spec, &prepared, &scripts_gz, &entries, events)
}

/// What every boot needs before its job: qemu, the kernel, its base initramfs, and the load and
/// the clock when the preparation began.
pub(crate) struct Prepared {
    qemu: PathBuf,
    pub(crate) kernel: KernelImage,
    pub(crate) base: initramfs::Base,
    tb: Instant,
    load0: f64,
}

/// Finds qemu and the kernel of `spec`, and builds (or reuses) the base initramfs.
pub(crate) fn prepare(spec: &VmSpec) -> Result<Prepared, Error> {
    let qemu = find_qemu(spec.qemu.as_deref())?;
    let kernel = KernelImage::from_files(&spec.kernel, spec.modules.as_deref())?;
    let load0 = loadavg();
    let tb = Instant::now();
    let base = initramfs::base(
        &kernel,
        &spec.cache_dir,
        &BaseOptions {
            trc: spec.trc_binary.clone(),
            no_python: spec.no_python,
        },
    )?;
    Ok(Prepared {
        qemu,
        kernel,
        base,
        tb,
        load0,
    })
}

/// The job of a run of scripts (their list is added by the archive), with `packetdrill` when real
/// packetdrill runs them.
pub(crate) fn script_job(
    spec: &VmSpec,
    packetdrill: Option<crate::packetdrill::PacketdrillJob>,
) -> ScriptJob {
    ScriptJob {
        options: spec.options.clone(),
        scripts: Vec::new(),
        script_timeout_s: spec.script_timeout.as_secs_f64(),
        tick_s: 1.0,
        packetdrill,
    }
}

/// Writes the run's initrd (base + `scripts_gz`), boots it and collects one result per entry.
pub(crate) fn boot(
    spec: &VmSpec,
    prepared: &Prepared,
    scripts_gz: &[u8],
    entries: &[(PathBuf, String)],
    events: &mut dyn FnMut(&Event),
) -> Result<VmRun, Error> {
    let Prepared {
        qemu,
        base,
        tb,
        load0,
        ..
    } = prepared;
    let (qemu, tb, load0) = (qemu.clone(), *tb, *load0);
    // The run's files, removed on every exit path.
    let rundir = run_dir(&spec.cache_dir)?;
    let _cleanup = RemoveOnDrop(rundir.clone());
    let initrd = rundir.join("initrd.gz");
    write_initrd(&initrd, &base.path, scripts_gz)?;
    let initramfs_s = tb.elapsed().as_secs_f64();
    events(&Event::Initramfs {
        base: base.path.clone(),
        cached: base.cached,
        bytes: base.bytes + scripts_gz.len() as u64,
        seconds: initramfs_s,
    });
    for n in &base.notes {
        events(&Event::Note(n.clone()));
    }
    let port = rundir.join("results.port");
    let names: Vec<String> = entries.iter().map(|p| p.1.clone()).collect();
    let mut notes = base.notes.clone();

    // One VM at a time on this machine (each takes a core; tests and users share 2).
    let _lock = vm_lock(events)?;
    let (mut at, accel, kvm_fallback) = attempts(spec, &qemu, &initrd, &port, &names, events)?;

    // The results.
    let runs = script_runs(entries, &mut at);
    let complete = at.end == End::Done
        && runs
            .iter()
            .all(|r| !matches!(r.outcome, ScriptOutcome::Missing));
    let problem = run_problem(&at.end, complete, spec.timeout);
    let (boot, release, modules) = match &at.boot {
        Some((t, r, n, m)) => {
            notes.extend(n.iter().cloned());
            (*t, r.clone(), m.clone())
        }
        None => (Timing::default(), String::new(), Vec::new()),
    };
    let qemu_version = qemu_version(&qemu);
    Ok(VmRun {
        accelerator: accel,
        kvm_fallback,
        kernel: spec.kernel.clone(),
        release,
        qemu: qemu_version,
        initramfs: base.path.clone(),
        initramfs_cached: base.cached,
        initramfs_s,
        boot,
        modules,
        total: at.total,
        scripts: runs,
        complete,
        problem,
        notes,
        load: (load0, loadavg()),
        damaged_frames: at.damaged,
        console: at.console,
    })
}

/// The run's directory, CACHE/runs/PID-N/, created; those of a trc that was killed (its PID
/// gone) are removed here.
fn run_dir(cache_dir: &Path) -> Result<PathBuf, Error> {
    remove_dead_runs(cache_dir);
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let rundir = cache_dir.join("runs").join(format!(
        "{}-{}",
        std::process::id(),
        N.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
    ));
    std::fs::create_dir_all(&rundir)
        .map_err(|e| Error::Failed(format!("{}: {e}", rundir.display())))?;
    Ok(rundir)
}

/// Runs the attempt on the accelerator `spec` asks for: under KVM, its outcome is recorded as
/// the KVM probe, and a failed one is run again under TCG when the accelerator is `auto`. The
/// last attempt, its accelerator and why KVM was not used (if it was not).
fn attempts(
    spec: &VmSpec,
    qemu: &Path,
    initrd: &Path,
    port: &Path,
    names: &[String],
    events: &mut dyn FnMut(&Event),
) -> Result<(Attempt, AccelUsed, Option<String>), Error> {
    // The accelerator.
    let probe_file = spec.cache_dir.join("kvm-probe.json");
    let (try_kvm, mut kvm_fallback) = choose_kvm(spec.accel, qemu, &probe_file)?;
    let mut accel = if try_kvm {
        AccelUsed::Kvm
    } else {
        AccelUsed::TcgIcount
    };
    let mut at = attempt(spec, qemu, initrd, port, accel, names, events);
    if accel == AccelUsed::Kvm {
        let ok = at.end == End::Done;
        let reason = match &at.end {
            End::Done => String::new(),
            End::KvmError(s)
            | End::Exited(s)
            | End::BootTimeout(s)
            | End::Stalled(s)
            | End::Fatal(s) => s.clone(),
            End::Timeout => "timed out".into(),
        };
        let probe = KvmProbe {
            key: kvm_probe_key(qemu),
            usable: ok,
            reason: reason.clone(),
        };
        let _ = crate::write_atomic(
            &probe_file,
            serde_json::to_string_pretty(&probe)
                .unwrap_or_default()
                .as_bytes(),
        );
        if !ok && spec.accel == Accel::Auto {
            let reason = format!("{reason} (after {:.1} s)", at.total.wall_s);
            events(&Event::KvmFailed {
                reason: reason.clone(),
            });
            kvm_fallback = Some(format!("KVM failed: {reason}"));
            accel = AccelUsed::TcgIcount;
            at = attempt(spec, qemu, initrd, port, accel, names, events);
        }
    }

    Ok((at, accel, kvm_fallback))
}

/// Reads and parses `scripts` and resolves their settings with the run's defines: any bad one
/// is [`Error::Usage`]. (path, name, script) each.
fn parse_scripts(
    spec: &VmSpec,
    scripts: &[PathBuf],
) -> Result<Vec<(PathBuf, String, trc_pkt::Script)>, Error> {
    let mut parsed = Vec::new();
    let mut cli = trc_kernel::run_all_command_line();
    cli.extend(spec.options.packetdrill.iter().cloned());
    for p in scripts {
        let src = std::fs::read_to_string(p)
            .map_err(|e| Error::Usage(format!("{}: {e}", p.display())))?;
        let name = p.display().to_string();
        let s = trc_pkt::parse(&src, &name).map_err(|e| Error::Usage(e.to_string()))?;
        trc_pkt::engine::Settings::resolve(&s, &name, &cli)
            .map_err(|e| Error::Usage(e.to_string()))?;
        parsed.push((p.clone(), name, s));
    }
    Ok(parsed)
}

/// Removes the run directories in `cache/runs/` (named PID-N) of trc processes that are gone
/// or zombies.
fn remove_dead_runs(cache: &Path) {
    if let Ok(rd) = std::fs::read_dir(cache.join("runs")) {
        for e in rd.filter_map(|e| e.ok()) {
            let n = e.file_name().to_string_lossy().into_owned();
            if let Some(pid) = n.split('-').next().and_then(|p| p.parse::<u32>().ok()) {
                // Gone, or a zombie (dead, not yet reaped).
                let alive = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .ok()
                    .and_then(|s| {
                        s.rsplit_once(')')
                            .map(|(_, r)| r.trim_start().starts_with(|c| c != 'Z'))
                    })
                    .unwrap_or(false);
                if pid != std::process::id() && !alive {
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
    }
}

/// The run's initrd at `initrd`: the base archive followed by the scripts archive.
fn write_initrd(initrd: &Path, base: &Path, scripts_gz: &[u8]) -> Result<(), Error> {
    let mut out = std::fs::File::create(initrd)
        .map_err(|e| Error::Failed(format!("{}: {e}", initrd.display())))?;
    let mut b =
        std::fs::File::open(base).map_err(|e| Error::Failed(format!("{}: {e}", base.display())))?;
    std::io::copy(&mut b, &mut out)
        .and_then(|_| out.write_all(scripts_gz))
        .map_err(|e| Error::Failed(format!("{}: {e}", initrd.display())))?;
    Ok(())
}

/// Whether to try KVM first, and why not when `--accel auto` falls back to TCG (no usable
/// /dev/kvm, or the cached probe says KVM failed with this host, qemu and CPU). `--accel kvm`
/// without /dev/kvm is [`Error::Missing`].
fn choose_kvm(
    accel: Accel,
    qemu: &Path,
    probe_file: &Path,
) -> Result<(bool, Option<String>), Error> {
    match accel {
        Accel::TcgIcount => Ok((false, None)),
        Accel::Kvm => {
            if !kvm_available() {
                return Err(Error::Missing(
                    "--accel kvm: /dev/kvm cannot be opened".into(),
                ));
            }
            Ok((true, None))
        }
        Accel::Auto => {
            if !kvm_available() {
                return Ok((false, Some("no usable /dev/kvm".to_string())));
            }
            let key = kvm_probe_key(qemu);
            let cached: Option<KvmProbe> = std::fs::read(probe_file)
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok());
            match cached {
                Some(p) if p.key == key && !p.usable => Ok((
                    false,
                    Some(format!(
                        "KVM failed before on this machine ({}); delete {} to try again",
                        p.reason,
                        probe_file.display()
                    )),
                )),
                _ => Ok((true, None)),
            }
        }
    }
}

/// Each script's outcome, exit code and timing from the attempt's results (taken out of
/// `at`); a script without a result is missing, rc 3.
fn script_runs(entries: &[(PathBuf, String)], at: &mut Attempt) -> Vec<ScriptRun> {
    let mut runs = Vec::new();
    for (i, (p, name)) in entries.iter().enumerate() {
        let (outcome, rc, timing) = match at.results[i].take() {
            Some((
                Record::Result {
                    rc,
                    report,
                    error,
                    impact,
                    output,
                    ..
                },
                t,
            )) => {
                let o = match (error, impact) {
                    (None, None) if output.is_some() => ScriptOutcome::Exited {
                        output: output.unwrap_or_default(),
                    },
                    (Some((kind, message)), _) => ScriptOutcome::Error {
                        kind,
                        message,
                        report,
                    },
                    (None, Some(result)) => ScriptOutcome::Measured { result },
                    (None, None) => match report {
                        Some(report) => ScriptOutcome::Ran { report },
                        None => ScriptOutcome::Missing,
                    },
                };
                (o, rc, t)
            }
            _ => (ScriptOutcome::Missing, 3, Timing::default()),
        };
        runs.push(ScriptRun {
            path: p.clone(),
            name: name.clone(),
            rc,
            outcome,
            timing,
        });
    }
    runs
}

/// What went wrong with a run that ended with `end`, or `None` when it is complete.
fn run_problem(end: &End, complete: bool, timeout: Option<Duration>) -> Option<String> {
    match end {
        End::Done if complete => None,
        End::Done => Some("the guest finished without every result".into()),
        End::Exited(s)
        | End::KvmError(s)
        | End::BootTimeout(s)
        | End::Stalled(s)
        | End::Fatal(s) => Some(s.clone()),
        End::Timeout => Some(format!(
            "the run took longer than {:.0} s",
            timeout.map(|t| t.as_secs_f64()).unwrap_or(0.0)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_network_device_and_icount() {
        let spec = VmSpec::new(Path::new("/k/vmlinuz"), None);
        let a = qemu_args(
            &spec,
            Path::new("/r/initrd.gz"),
            Path::new("/r/port"),
            AccelUsed::TcgIcount,
        );
        let s = a.join(" ");
        assert!(s.contains("-nic none"), "{s}");
        assert!(s.contains("-no-reboot") && s.contains("-nographic"));
        assert!(s.contains("-icount shift=0,sleep=off") && s.contains("-smp 1"));
        assert!(s.contains("name=trc.results"));
        assert!(
            !s.contains("netdev") && !s.contains("-net "),
            "no network backend at all"
        );
        let k = qemu_args(
            &spec,
            Path::new("/r/initrd.gz"),
            Path::new("/r/port"),
            AccelUsed::Kvm,
        )
        .join(" ");
        assert!(k.contains("-accel kvm -cpu host,-arch-capabilities") && k.contains("-nic none"));
    }

    #[test]
    fn exit_codes_of_a_run() {
        let t = Timing::default();
        let run = |rcs: &[i32], complete: bool| VmRun {
            accelerator: AccelUsed::TcgIcount,
            kvm_fallback: None,
            kernel: PathBuf::new(),
            release: String::new(),
            qemu: String::new(),
            initramfs: PathBuf::new(),
            initramfs_cached: false,
            initramfs_s: 0.0,
            boot: t,
            modules: Vec::new(),
            total: t,
            scripts: rcs
                .iter()
                .map(|&rc| ScriptRun {
                    path: PathBuf::new(),
                    name: String::new(),
                    rc,
                    outcome: ScriptOutcome::Missing,
                    timing: t,
                })
                .collect(),
            complete,
            problem: None,
            notes: Vec::new(),
            load: (0.0, 0.0),
            damaged_frames: 0,
            console: Vec::new(),
        };
        assert_eq!(run(&[0, 0], true).exit_code(), 0);
        assert_eq!(run(&[0, 1, 3], true).exit_code(), 1);
        assert_eq!(run(&[0, 3], true).exit_code(), 3);
        assert_eq!(run(&[0, 0], false).exit_code(), 3);
        assert_eq!(run(&[4, 4], true).exit_code(), 4);
        assert_eq!(run(&[0, 4], true).exit_code(), 4);
    }
}
