//! A script's shell lines, run as the code they are: as root, so confined.
//!
//! Each line runs as `/bin/sh -c LINE` (packetdrill runs them with `system(3)`), in the script's
//! directory, with packetdrill's environment (`PACKETDRILL_PID`, so the gtests' `set_sysctls.py`
//! works and `$PPID` names the same process) and the run's own `NSTAT_HISTORY` (an `nstat`
//! baseline is never another namespace's), inside:
//!
//! * the run's **private network namespace** (it sees only `lo` and `tun0`);
//! * a **private mount namespace** (mounts it makes do not reach the host);
//! * a **capability bounding set without** `CAP_SYS_ADMIN` (no `setns`, `unshare`, `mount`: it
//!   cannot enter the host's namespaces — `nsenter -t 1 -n` fails), `CAP_SYS_MODULE`,
//!   `CAP_SYS_PTRACE`, `CAP_SYS_BOOT`, `CAP_SYS_TIME`, `CAP_SYS_RAWIO`, `CAP_MKNOD`,
//!   `CAP_SYS_CHROOT`, `CAP_BPF`, `CAP_PERFMON`, `CAP_SYSLOG`, `CAP_MAC_*`,
//!   `CAP_LINUX_IMMUTABLE`, `CAP_CHECKPOINT_RESTORE` (it keeps `CAP_NET_ADMIN` and the rest, for
//!   `ip`, `tc`, `sysctl`);
//! * its own **process group**, killed when the line times out, and a parent-death signal, so
//!   nothing outlives the run (not even a SIGKILL of `trc`).
//!
//! What this does **not** stop: the line still runs as uid 0 with the host's filesystem, so it
//! can write files, global sysctls (`/proc/sys/kernel/...`) and module parameters
//! (`/sys/module/...`). A script is code: read it before running it, or refuse shell lines
//! (`trc kernel run --no-shell`).

use std::io::{self, Read as _};
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long one shell line may run.
pub const TIME_LIMIT: Duration = Duration::from_secs(120);

/// Capabilities removed from the bounding set of shell lines (see the module docs).
const DROPPED_CAPS: &[libc::c_ulong] = &[
    9,  // CAP_LINUX_IMMUTABLE
    16, // CAP_SYS_MODULE
    17, // CAP_SYS_RAWIO
    18, // CAP_SYS_CHROOT
    19, // CAP_SYS_PTRACE
    21, // CAP_SYS_ADMIN
    22, // CAP_SYS_BOOT
    25, // CAP_SYS_TIME
    27, // CAP_MKNOD
    32, // CAP_MAC_OVERRIDE
    33, // CAP_MAC_ADMIN
    34, // CAP_SYSLOG
    38, // CAP_PERFMON
    39, // CAP_BPF
    40, // CAP_CHECKPOINT_RESTORE
];

/// What a shell line did.
#[derive(Debug, Clone)]
pub struct Output {
    /// Exit status; `None` when killed by a signal (the time limit).
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub timed_out: bool,
}

/// The confinement, in the child between `fork` and `exec` (async-signal-safe calls only).
fn confine() -> io::Result<()> {
    // SAFETY: plain syscalls on the calling (child) process.
    unsafe {
        if libc::setpgid(0, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
            return Err(io::Error::last_os_error());
        }
        if libc::unshare(libc::CLONE_NEWNS) != 0 {
            return Err(io::Error::last_os_error());
        }
        let root = b"/\0";
        if libc::mount(std::ptr::null(), root.as_ptr() as *const libc::c_char, std::ptr::null(), libc::MS_REC | libc::MS_PRIVATE, std::ptr::null()) != 0 {
            return Err(io::Error::last_os_error());
        }
        for cap in DROPPED_CAPS {
            // EINVAL: a capability this kernel does not know; fine.
            if libc::prctl(libc::PR_CAPBSET_DROP, *cap) != 0 && *libc::__errno_location() != libc::EINVAL {
                return Err(io::Error::last_os_error());
            }
        }
    }
    Ok(())
}

/// Runs `cmd` confined (see the module docs) in `dir` with `env` added.
pub fn run(cmd: &str, dir: &Path, env: &[(String, String)]) -> io::Result<Output> {
    let mut c = Command::new("/bin/sh");
    c.arg("-c").arg(cmd).current_dir(dir).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    // SAFETY: `confine` only makes async-signal-safe syscalls.
    unsafe {
        c.pre_exec(confine);
    }
    let mut child = c.spawn()?;
    let pid = child.id() as libc::pid_t;
    let mut out = child.stdout.take().expect("piped");
    let mut err = child.stderr.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = out.read_to_end(&mut s);
        s
    });
    let ereader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err.read_to_end(&mut s);
        s
    });
    let start = Instant::now();
    let mut timed_out = false;
    let status = loop {
        if let Some(st) = child.try_wait()? {
            break st;
        }
        if start.elapsed() > TIME_LIMIT {
            timed_out = true;
            // SAFETY: signalling the child's own process group.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    // Whatever the line left running in its group goes with it.
    // SAFETY: as above; ESRCH if the group is already gone.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    let stdout = String::from_utf8_lossy(&reader.join().unwrap_or_default()).trim_end().to_string();
    let stderr = String::from_utf8_lossy(&ereader.join().unwrap_or_default()).trim_end().to_string();
    Ok(Output { code: status.code(), stdout, stderr, timed_out })
}
