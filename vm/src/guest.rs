//! The guest side: `trc` as the VM's `/init` (pid 1).
//!
//! It mounts `/proc`, `/sys`, `/dev` (devtmpfs) and a tmpfs on `/tmp` (the runner's lock),
//! loads the modules of `/etc/trc-vm/base.json` with `finit_module`, brings `lo` up, and runs
//! each script of `/t/job.json` in-process with `trc_kernel::run_script` — the runner of `trc
//! kernel run`, with the same options — under a per-script limit in guest time. Each
//! [`Record`] goes to the virtio-serial port `trc.results` (found by name in
//! `/sys/class/virtio-ports`), framed ([`crate::proto`]); if there is no such port, to the
//! console. Human-readable progress goes to the console. Then it powers the machine off
//! (`reboot(RB_POWER_OFF)`), on every path: pid 1 must not exit (the kernel would panic).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use crate::proto::{self, BaseManifest, ErrorKind, Job, ModuleLoad, Record, ScriptJob};
use crate::SysError;

static OUT: Mutex<Option<std::fs::File>> = Mutex::new(None);

/// A progress line on the console.
fn say(s: &str) {
    let mut o = std::io::stdout().lock();
    let _ = writeln!(o, "trc-vm: {s}");
    let _ = o.flush();
}

/// A record on the results port (or the console).
fn send(r: &Record) {
    let frame = proto::encode_record(r);
    let mut g = OUT.lock().unwrap_or_else(|p| p.into_inner());
    match g.as_mut() {
        Some(f) => {
            let _ = f.write_all(&frame);
            let _ = f.flush();
        }
        None => {
            let mut o = std::io::stdout().lock();
            let _ = o.write_all(&frame);
            let _ = o.flush();
        }
    }
}

fn uptime() -> f64 {
    std::fs::read_to_string("/proc/uptime")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|x| x.parse().ok()))
        .unwrap_or(0.0)
}

fn cstr(s: &str) -> std::ffi::CString {
    std::ffi::CString::new(s).unwrap_or_default()
}

fn mount(
    src: &str,
    target: &str,
    fstype: &str,
    flags: libc::c_ulong,
    data: &str,
) -> Result<(), SysError> {
    let _ = std::fs::create_dir_all(target);
    let (s, t, f, d) = (cstr(src), cstr(target), cstr(fstype), cstr(data));
    // SAFETY: valid NUL-terminated strings for the duration of the call.
    let r = unsafe {
        libc::mount(
            s.as_ptr(),
            t.as_ptr(),
            f.as_ptr(),
            flags,
            d.as_ptr() as *const libc::c_void,
        )
    };
    if r != 0 {
        let e = SysError::last(format!("mount {fstype} on {target}"));
        if e.source.raw_os_error() != Some(libc::EBUSY) {
            return Err(e);
        }
    }
    Ok(())
}

/// Loads the manifest's modules in its order (dependencies first) with `load` (path,
/// compressed): each one's outcome. A failed load does not stop the others (a module the
/// kernel has built in fails with EEXIST, and tun's absence is reported separately).
pub fn load_modules(
    b: &BaseManifest,
    load: &mut dyn FnMut(&str, bool) -> Result<(), SysError>,
) -> Vec<ModuleLoad> {
    b.modules
        .iter()
        .map(|m| ModuleLoad {
            name: m.name.clone(),
            error: load(&m.path, m.compressed).err().map(|e| e.to_string()),
        })
        .collect()
}

/// `finit_module` of one module file (`MODULE_INIT_COMPRESSED_FILE` for a compressed one).
fn load_module(path: &str, compressed: bool) -> Result<(), SysError> {
    let f = std::fs::File::open(path).map_err(|source| SysError {
        what: path.to_string(),
        source,
    })?;
    use std::os::fd::AsRawFd as _;
    let params = cstr("");
    let flags: libc::c_int = if compressed { 4 } else { 0 }; // MODULE_INIT_COMPRESSED_FILE
                                                             // SAFETY: a valid fd and a NUL-terminated parameter string.
    let r = unsafe {
        libc::syscall(
            libc::SYS_finit_module,
            f.as_raw_fd(),
            params.as_ptr(),
            flags,
        )
    };
    if r != 0 {
        let e = SysError::last(format!("finit_module {path}"));
        if e.source.raw_os_error() != Some(libc::EEXIST) {
            return Err(e);
        }
    }
    Ok(())
}

#[repr(C)]
struct IfreqFlags {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// `ip link set lo up`, by ioctl.
pub(crate) fn lo_up() -> Result<(), SysError> {
    // SAFETY: a plain socket; the ifreq is a properly sized, initialised buffer.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(SysError::last("socket"));
        }
        let mut ifr = IfreqFlags {
            name: [0; libc::IFNAMSIZ],
            flags: 0,
            _pad: [0; 22],
        };
        ifr.name[..2].copy_from_slice(b"lo");
        let mut r = libc::ioctl(fd, libc::SIOCGIFFLAGS as _, &mut ifr);
        if r == 0 {
            ifr.flags |= libc::IFF_UP as libc::c_short;
            r = libc::ioctl(fd, libc::SIOCSIFFLAGS as _, &mut ifr);
        }
        let e = SysError::last("lo up");
        libc::close(fd);
        if r != 0 {
            return Err(e);
        }
    }
    Ok(())
}

/// The device of the virtio port named [`proto::PORT_NAME`], waiting up to 3 s for it.
fn find_port() -> Option<PathBuf> {
    for _ in 0..30 {
        if let Ok(rd) = std::fs::read_dir("/sys/class/virtio-ports") {
            for e in rd.filter_map(|e| e.ok()) {
                if std::fs::read_to_string(e.path().join("name"))
                    .is_ok_and(|n| n.trim() == proto::PORT_NAME)
                {
                    let dev = Path::new("/dev").join(e.file_name());
                    if dev.exists() {
                        return Some(dev);
                    }
                }
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    None
}

fn power_off() -> ! {
    // SAFETY: sync and reboot have no memory-safety preconditions.
    unsafe {
        libc::sync();
        libc::reboot(libc::RB_POWER_OFF);
    }
    // Not reached unless reboot failed; pid 1 must not exit.
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

/// Entry point of `trc kernel guest`; as pid 1 it never returns.
pub fn main() -> i32 {
    if std::process::id() != 1 {
        eprintln!("trc kernel guest: this is the VM's /init (it mounts filesystems and powers the machine off); it runs only as pid 1");
        return 2;
    }
    let r = std::panic::catch_unwind(run);
    if let Err(p) = r {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        say(&format!("fatal: panic: {msg}"));
        send(&Record::Fatal {
            message: format!("the guest's init panicked: {msg}"),
        });
    }
    // Let the port drain (guest time: free under -icount sleep=off).
    std::thread::sleep(Duration::from_millis(500));
    power_off()
}

fn fatal(m: String) {
    say(&format!("fatal: {m}"));
    send(&Record::Fatal { message: m });
}

fn run() {
    // The kernel starts init with no PATH.
    std::env::set_var("PATH", "/usr/sbin:/usr/bin:/sbin:/bin");
    std::env::set_var("HOME", "/root");
    boot();
    let job: Job = match std::fs::read("/t/job.json")
        .map_err(|e| e.to_string())
        .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()))
    {
        Ok(j) => j,
        Err(e) => return fatal(format!("/t/job.json: {e}")),
    };
    let tick = Duration::from_secs_f64(job.tick_s().clamp(0.1, 60.0));
    std::thread::spawn(move || loop {
        std::thread::sleep(tick);
        send(&Record::Tick { uptime_s: uptime() });
    });
    let job = match job {
        Job::Impact(ij) => return run_impact(&ij),
        Job::Scripts(j) => j,
    };
    if let Some(pd) = &job.packetdrill {
        return run_packetdrill(pd, &job);
    }
    run_scripts(&job);
}

/// Mounts the file systems, opens the result port, loads the base's modules, brings up lo, and
/// sends the boot record (what failed is a note in it).
fn boot() {
    let mut notes = Vec::new();
    let nosuid = (libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC) as libc::c_ulong;
    for (src, t, fs, fl, d) in [
        ("proc", "/proc", "proc", nosuid, ""),
        ("sysfs", "/sys", "sysfs", nosuid, ""),
        (
            "devtmpfs",
            "/dev",
            "devtmpfs",
            libc::MS_NOSUID as libc::c_ulong,
            "mode=0755",
        ),
        (
            "tmpfs",
            "/tmp",
            "tmpfs",
            (libc::MS_NOSUID | libc::MS_NODEV) as libc::c_ulong,
            "mode=1777",
        ),
        (
            "tmpfs",
            "/run",
            "tmpfs",
            (libc::MS_NOSUID | libc::MS_NODEV) as libc::c_ulong,
            "mode=0755",
        ),
    ] {
        if let Err(e) = mount(src, t, fs, fl, d) {
            notes.push(e.to_string());
        }
    }
    let port = find_port();
    match &port {
        Some(p) => match std::fs::OpenOptions::new().write(true).open(p) {
            Ok(f) => *OUT.lock().unwrap_or_else(|p| p.into_inner()) = Some(f),
            Err(e) => notes.push(format!("{}: {e}; results on the console", p.display())),
        },
        None => notes.push(format!(
            "no virtio port named {}: results on the console",
            proto::PORT_NAME
        )),
    }
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    let base: Option<BaseManifest> = std::fs::read("/etc/trc-vm/base.json")
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    let mut modules = Vec::new();
    if let Some(b) = &base {
        if b.release != release {
            notes.push(format!(
                "the initramfs was built for {}, the kernel is {release}",
                b.release
            ));
        }
        modules = load_modules(b, &mut load_module);
    } else {
        notes.push("no /etc/trc-vm/base.json".into());
    }
    if let Err(e) = lo_up() {
        notes.push(e.to_string());
    }
    if !Path::new("/dev/net/tun").exists() {
        notes.push("no /dev/net/tun: the kernel has no tun (module or built in)".into());
    }
    let up = uptime();
    say(&format!(
        "booted {release} at {up:.2} s; modules: {}",
        modules
            .iter()
            .map(|m| format!(
                "{}{}",
                m.name,
                if m.error.is_some() { " (failed)" } else { "" }
            ))
            .collect::<Vec<_>>()
            .join(" ")
    ));
    for n in &notes {
        say(&format!("note: {n}"));
    }
    send(&Record::Boot {
        release,
        uptime_s: up,
        modules,
        port: port.is_some(),
        notes,
    });
}

/// The job's scripts run by trc's own runner, one result record each.
fn run_scripts(job: &ScriptJob) {
    let n = job.scripts.len();
    let mut ran = 0;
    for (i, s) in job.scripts.iter().enumerate() {
        let t0 = uptime();
        say(&format!("[{}/{n}] {}", i + 1, s.name));
        send(&Record::Begin {
            index: i,
            uptime_s: t0,
        });
        let (report, error, stuck) = run_with_limit(s, job);
        let rc = match (&report, &error) {
            (_, Some((k, _))) => k.exit_code(),
            (Some(r), None) if r.script.interrupted => 130,
            (Some(r), None) => r.script.verdict.exit_code(),
            (None, None) => 1,
        };
        let t1 = uptime();
        let what = match (&report, &error) {
            (Some(r), _) => r.script.verdict.render(),
            (None, Some((_, m))) => m.clone(),
            _ => String::new(),
        };
        say(&format!(
            "[{}/{n}] rc={rc} {what} ({:.2} s)",
            i + 1,
            t1 - t0
        ));
        send(&Record::Result {
            index: i,
            uptime_s: t1,
            guest_s: t1 - t0,
            rc,
            report: report.map(Box::new),
            error,
            impact: None,
            output: None,
        });
        ran += 1;
        if stuck {
            return fatal(format!(
                "{}: the run did not stop after its time limit; the remaining scripts cannot run",
                s.name
            ));
        }
    }
    let up = uptime();
    say(&format!("done: {ran} scripts at {up:.2} s"));
    send(&Record::Done { uptime_s: up, ran });
}

/// The job's scripts run by real packetdrill ([`crate::packetdrill`]), one result record each.
fn run_packetdrill(pd: &crate::packetdrill::PacketdrillJob, job: &ScriptJob) {
    let n = job.scripts.len();
    let limit = Duration::from_secs_f64(job.script_timeout_s.clamp(1.0, 86400.0));
    for (i, s) in job.scripts.iter().enumerate() {
        let t0 = uptime();
        say(&format!("[{}/{n}] packetdrill {}", i + 1, s.name));
        send(&Record::Begin {
            index: i,
            uptime_s: t0,
        });
        let (rc, output) = crate::packetdrill::guest::run(pd, Path::new(&s.guest_path), limit);
        let t1 = uptime();
        say(&format!("[{}/{n}] rc={rc} ({:.2} s)", i + 1, t1 - t0));
        send(&Record::Result {
            index: i,
            uptime_s: t1,
            guest_s: t1 - t0,
            rc,
            report: None,
            error: None,
            impact: None,
            output: Some(output),
        });
    }
    let up = uptime();
    say(&format!("done: {n} packetdrill scripts at {up:.2} s"));
    send(&Record::Done {
        uptime_s: up,
        ran: n,
    });
}

/// The impact experiment's runs ([`crate::impact::guest::run`]), one result record each.
fn run_impact(ij: &crate::impact::ImpactJob) {
    for i in 0..ij.runs {
        let t0 = uptime();
        say(&format!("[{}/{}] impact run", i + 1, ij.runs));
        send(&Record::Begin {
            index: i,
            uptime_s: t0,
        });
        let r = crate::impact::guest::run(&ij.params, i);
        let t1 = uptime();
        let (rc, impact, error) = match r {
            Ok(r) => {
                say(&format!(
                    "[{}/{}] goodput {:.2} Mbit/s, retrans {:.2} %, undos {} ({} after a real loss) ({:.2} s)",
                    i + 1,
                    ij.runs,
                    r.summary.goodput_mbit,
                    r.summary.retrans_rate * 100.0,
                    r.summary.undo_events,
                    r.summary.undos_after_real_loss,
                    t1 - t0
                ));
                (0, Some(Box::new(r)), None)
            }
            Err(e) => {
                say(&format!("[{}/{}] failed: {e}", i + 1, ij.runs));
                (1, None, Some((ErrorKind::Error, e.to_string())))
            }
        };
        send(&Record::Result {
            index: i,
            uptime_s: t1,
            guest_s: t1 - t0,
            rc,
            report: None,
            error,
            impact,
            output: None,
        });
    }
    let up = uptime();
    say(&format!("done: {} impact runs at {up:.2} s", ij.runs));
    send(&Record::Done {
        uptime_s: up,
        ran: ij.runs,
    });
}

type Outcome = (Option<trc_kernel::RunReport>, Option<(ErrorKind, String)>);

fn run_one(path: &Path, name: &str, job: &ScriptJob) -> Outcome {
    let src = match std::fs::read_to_string(path) {
        Ok(s) => s,
        Err(e) => {
            return (
                None,
                Some((ErrorKind::Error, format!("{}: {e}", path.display()))),
            )
        }
    };
    let script = match trc_pkt::parse(&src, name) {
        Ok(s) => s,
        Err(e) => return (None, Some((ErrorKind::Usage, e.to_string()))),
    };
    let dir = path.parent().unwrap_or(Path::new("/t"));
    let mut opts = job.options.run_options(dir);
    opts.time_limit = Some(script_limit(job));
    match trc_kernel::run_script(&script, name, &opts) {
        Ok(r) => (Some(r), None),
        Err(trc_kernel::RunError::Skipped(m)) => (None, Some((ErrorKind::Skipped, m))),
        Err(trc_kernel::RunError::Usage(m)) => (None, Some((ErrorKind::Usage, m))),
        Err(e) => (None, Some((ErrorKind::Error, e.to_string()))),
    }
}

/// The job's per-script limit (guest time).
fn script_limit(job: &ScriptJob) -> Duration {
    Duration::from_secs_f64(job.script_timeout_s.clamp(1.0, 86400.0))
}

/// Runs one script under the job's limit (guest time): past it the run is asked to stop (as
/// a SIGINT would); `stuck` when it does not within 10 s more.
fn run_with_limit(
    s: &proto::JobScript,
    job: &ScriptJob,
) -> (
    Option<trc_kernel::RunReport>,
    Option<(ErrorKind, String)>,
    bool,
) {
    let (tx, rx) = std::sync::mpsc::channel();
    let path = PathBuf::from(&s.guest_path);
    let name = s.name.clone();
    let j = job.clone();
    let spawned = std::thread::Builder::new()
        .name("trc-vm-script".into())
        .spawn(move || {
            let r = std::panic::catch_unwind(|| run_one(&path, &name, &j))
                .unwrap_or_else(|_| (None, Some((ErrorKind::Error, "the run panicked".into()))));
            let _ = tx.send(r);
        });
    if let Err(e) = spawned {
        return (
            None,
            Some((ErrorKind::Error, format!("cannot start a thread: {e}"))),
            false,
        );
    }
    // The runner stops itself at the limit (a report that says so); this is the backstop.
    let limit = script_limit(job) + Duration::from_secs(5);
    let out = match rx.recv_timeout(limit) {
        Ok(r) => (r.0, r.1, false),
        Err(_) => {
            trc_kernel::sys::request_interrupt();
            match rx.recv_timeout(Duration::from_secs(10)) {
                Ok((rep, err)) => {
                    let msg = format!(
                        "stopped after the time limit of {} s (guest time)",
                        job.script_timeout_s
                    );
                    (rep, Some(err.unwrap_or((ErrorKind::Timeout, msg))), false)
                }
                Err(_) => (
                    None,
                    Some((
                        ErrorKind::Timeout,
                        format!(
                            "did not stop after the time limit of {} s (guest time)",
                            job.script_timeout_s
                        ),
                    )),
                    true,
                ),
            }
        }
    };
    trc_kernel::sys::clear_interrupt();
    out
}
