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
//! * its own **process group**, killed when the line ends or times out, a parent-death signal
//!   for the shell, and a guard process in the group that kills the whole group when `trc`
//!   dies (it waits on a pipe only `trc` holds open), so nothing the line started outlives the
//!   run, not even after a SIGKILL of `trc` (a parent-death signal alone would only kill the
//!   shell, and `sleep 100; true` would go on as an orphan). A process that leaves the group
//!   (`setsid`) escapes this.
//!
//! What this does **not** stop: the line still runs as uid 0 with the host's filesystem, so it
//! can write files, global sysctls (`/proc/sys/kernel/...`) and module parameters
//! (`/sys/module/...`). A script is code: read it before running it, or refuse shell lines
//! (`trc kernel run --no-shell`).
//!
//! The model replay (`trc replay`) runs its shell lines the same way ([`run_with`] and
//! [`Confinement::private_net`]), and also in a **network namespace of their own** (empty but
//! for a down `lo`): the replay has no namespace of its own to run them in, and no line it runs
//! may reach the host's network or its per-namespace sysctls. Without root it uses a user
//! namespace (the caller's uid mapped to root in it) for the same namespaces; where neither is
//! possible the line cannot run confined and [`run_with`] says so.

use std::io::{self, Read as _};
use std::os::fd::{AsRawFd as _, FromRawFd as _};
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

/// How a line is confined besides what every line gets (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Confinement {
    /// A network namespace of the line's own (the model replay's lines).
    pub private_net: bool,
}

/// The ids a user namespace maps to root, prepared before `fork` (no allocation after it).
struct IdMaps {
    uid: Vec<u8>,
    gid: Vec<u8>,
}

/// The namespaces to create, in the child between `fork` and `exec`: as root, a mount namespace
/// (and a network namespace); otherwise the same inside a new user namespace that maps the
/// caller to root (async-signal-safe calls only; `maps` was built before the fork).
unsafe fn unshare_namespaces(c: Confinement, maps: &IdMaps) -> io::Result<()> {
    let net = if c.private_net { libc::CLONE_NEWNET } else { 0 };
    unsafe {
        if libc::geteuid() == 0 {
            if libc::unshare(libc::CLONE_NEWNS | net) != 0 {
                return Err(io::Error::last_os_error());
            }
            return Ok(());
        }
        if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS | net) != 0 {
            return Err(io::Error::last_os_error());
        }
        write_proc(b"/proc/self/setgroups\0", b"deny")?;
        write_proc(b"/proc/self/uid_map\0", &maps.uid)?;
        write_proc(b"/proc/self/gid_map\0", &maps.gid)?;
    }
    Ok(())
}

/// Writes `data` to the NUL-terminated `path` (async-signal-safe).
unsafe fn write_proc(path: &[u8], data: &[u8]) -> io::Result<()> {
    unsafe {
        let fd = libc::open(path.as_ptr() as *const libc::c_char, libc::O_WRONLY);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let n = libc::write(fd, data.as_ptr() as *const libc::c_void, data.len());
        libc::close(fd);
        if n != data.len() as isize {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The confinement, in the child between `fork` and `exec` (async-signal-safe calls only).
/// `guard_fd` is the read end of a pipe whose write end only `trc` (`parent`) keeps.
fn confine(
    guard_fd: libc::c_int,
    parent: libc::pid_t,
    c: Confinement,
    maps: &IdMaps,
) -> io::Result<()> {
    // SAFETY: plain syscalls on the calling (child) process.
    unsafe {
        if libc::setpgid(0, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
            return Err(io::Error::last_os_error());
        }
        if libc::getppid() != parent {
            // trc died before the parent-death signal was set.
            libc::_exit(1);
        }
        unshare_namespaces(c, maps)?;
        let root = b"/\0";
        if libc::mount(
            std::ptr::null(),
            root.as_ptr() as *const libc::c_char,
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ) != 0
        {
            return Err(io::Error::last_os_error());
        }
        for cap in DROPPED_CAPS {
            // EINVAL: a capability this kernel does not know; fine.
            if libc::prctl(libc::PR_CAPBSET_DROP, *cap) != 0
                && *libc::__errno_location() != libc::EINVAL
            {
                return Err(io::Error::last_os_error());
            }
        }
        spawn_guard(guard_fd)?;
    }
    Ok(())
}

/// Forks the group's guard (in the child, before `exec`): a `/bin/sh` whose standard input
/// is `guard_fd` and nothing else open; it reads it, and end of file means `trc` is gone (or
/// done with the line): it then kills the process group, whose leader is its parent. A
/// separate program, so that `pkill trc`, `killall trc` or `pidof trc` never take it for trc.
/// Async-signal-safe calls only.
///
/// # Safety
/// Called between `fork` and `exec`.
unsafe fn spawn_guard(guard_fd: libc::c_int) -> io::Result<()> {
    unsafe {
        const SH: &[u8] = b"/bin/sh\0";
        const DASH_C: &[u8] = b"-c\0";
        const SCRIPT: &[u8] = b"read -r _; kill -s KILL -- -$PPID\0";
        const NAME: &[u8] = b"trc-shell-guard\0";
        match libc::fork() {
            -1 => Err(io::Error::last_os_error()),
            0 => {
                // Standard input is the pipe; every other descriptor is closed (std's exec-status
                // pipe among them, so the spawn does not wait for the guard; the shell's output
                // pipes, so their readers end).
                if guard_fd != 0 && libc::dup2(guard_fd, 0) != 0 {
                    libc::_exit(127);
                }
                close_all_but(0);
                let argv = [
                    SH.as_ptr() as *const libc::c_char,
                    DASH_C.as_ptr() as *const libc::c_char,
                    SCRIPT.as_ptr() as *const libc::c_char,
                    NAME.as_ptr() as *const libc::c_char,
                    std::ptr::null(),
                ];
                let envp = [std::ptr::null::<libc::c_char>()];
                libc::execve(argv[0], argv.as_ptr(), envp.as_ptr());
                libc::_exit(127)
            }
            _ => Ok(()),
        }
    }
}

/// Closes every descriptor but `keep` (async-signal-safe; 0 or the highest one kept).
unsafe fn close_all_but(keep: libc::c_int) {
    unsafe {
        let close_range = |lo: libc::c_uint, hi: libc::c_uint| {
            libc::syscall(libc::SYS_close_range, lo, hi, 0) == 0
        };
        let k = keep as libc::c_uint;
        let ok = (k == 0 || close_range(0, k - 1)) && close_range(k + 1, libc::c_uint::MAX);
        if !ok {
            // No close_range (Linux < 5.9): the usual descriptors.
            for fd in 0..4096 {
                if fd != keep {
                    libc::close(fd);
                }
            }
        }
    }
}

/// `fd` itself, or a close-on-exec duplicate numbered 3 or more when it is 0, 1 or 2.
fn above_stdio(fd: std::os::fd::OwnedFd) -> io::Result<std::os::fd::OwnedFd> {
    if fd.as_raw_fd() > 2 {
        return Ok(fd);
    }
    // SAFETY: duplicating a descriptor this function owns.
    let d = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
    if d < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `d` was just created and is owned here.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(d) })
}

/// Runs `cmd` confined (see the module docs) in `dir` with `env` added, killed after `limit`
/// (at most [`TIME_LIMIT`]).
pub fn run(cmd: &str, dir: &Path, env: &[(String, String)], limit: Duration) -> io::Result<Output> {
    run_with(cmd, dir, env, Confinement::default(), limit)
}

/// [`run`] with more confinement.
pub fn run_with(
    cmd: &str,
    dir: &Path,
    env: &[(String, String)],
    confinement: Confinement,
    limit: Duration,
) -> io::Result<Output> {
    let limit = limit.min(TIME_LIMIT);
    // SAFETY: getuid/getgid cannot fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let maps = IdMaps {
        uid: format!("0 {uid} 1").into_bytes(),
        gid: format!("0 {gid} 1").into_bytes(),
    };
    let mut c = Command::new("/bin/sh");
    c.arg("-c")
        .arg(cmd)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    // The guard's pipe: both ends close on exec; trc keeps the write end until the line is over.
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: a valid two-int array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned here.
    let (guard_r, guard_w) = unsafe {
        (
            std::os::fd::OwnedFd::from_raw_fd(fds[0]),
            std::os::fd::OwnedFd::from_raw_fd(fds[1]),
        )
    };
    // Above the standard descriptors: with trc's stdin closed the pipe could be fd 0, which the
    // child's /dev/null stdin would replace (the guard would see end of file at once).
    let guard_r = above_stdio(guard_r)?;
    let (r, parent) = (guard_r.as_raw_fd(), std::process::id() as libc::pid_t);
    // SAFETY: `confine` only makes async-signal-safe syscalls.
    unsafe {
        c.pre_exec(move || confine(r, parent, confinement, &maps));
    }
    let mut child = c.spawn()?;
    drop(guard_r);
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
        if start.elapsed() > limit {
            timed_out = true;
            // SAFETY: signalling the child's own process group.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    // Whatever the line left running in its group goes with it (the guard too).
    // SAFETY: as above; ESRCH if the group is already gone.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    drop(guard_w);
    let stdout = String::from_utf8_lossy(&reader.join().unwrap_or_default())
        .trim_end()
        .to_string();
    let stderr = String::from_utf8_lossy(&ereader.join().unwrap_or_default())
        .trim_end()
        .to_string();
    Ok(Output {
        code: status.code(),
        stdout,
        stderr,
        timed_out,
    })
}
