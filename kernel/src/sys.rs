//! Linux plumbing: private network namespace, tun device, sysctls, MIB
//! counters, socket helpers and signal handling.
//!
//! Isolation model: the runner thread calls `unshare(CLONE_NEWNET)`, so the
//! namespace is anonymous and owned by that one thread (plus the sockets and
//! the tun fd it opens). It never appears in `ip netns list`, and the kernel
//! destroys it together with the (non-persistent) tun device as soon as the
//! thread has exited and the fds are closed -- on a normal return, an error,
//! a panic (the fds are `OwnedFd`s dropped during unwinding) and even on
//! SIGKILL. SIGINT/SIGTERM are caught so that a run stops at the next wait
//! point and closes everything in order.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::tcpinfo::TcpInfoRaw;

pub const LOCAL_IP: Ipv4Addr = Ipv4Addr::new(192, 168, 0, 1);
pub const REMOTE_IP: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
pub const TUN_NAME: &str = "tun0";

const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const TUNSETOFFLOAD: libc::c_ulong = 0x4004_54d0;
const IFF_TUN: libc::c_short = 0x0001;
const IFF_NO_PI: libc::c_short = 0x1000;
const IFF_VNET_HDR: libc::c_short = 0x4000;
const TUN_F_CSUM: libc::c_ulong = 0x01;
const TUN_F_TSO4: libc::c_ulong = 0x02;
const TUN_F_TSO6: libc::c_ulong = 0x04;
const TUN_F_TSO_ECN: libc::c_ulong = 0x08;
/// `struct virtio_net_hdr` in front of every frame on an `IFF_VNET_HDR` tun.
pub const VNET_HDR_LEN: usize = 10;
/// The prefix length of the local address (packetdrill's `--netmask_ip=255.255.0.0`).
pub const LOCAL_PREFIX: u8 = 16;

/// Why the kernel runner cannot run here (exit code 4, "skipped").
pub fn environment_problem() -> Option<String> {
    if !cfg!(target_os = "linux") {
        return Some("skipped: the kernel runner needs Linux".into());
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("skipped: not running as root (needs CAP_NET_ADMIN for a private network namespace and tun)".into());
    }
    if !std::path::Path::new("/dev/net/tun").exists() {
        return Some("skipped: /dev/net/tun does not exist".into());
    }
    if !has_capability(CAP_SYS_ADMIN) {
        return Some("skipped: root without CAP_SYS_ADMIN (an unprivileged container?): no private network namespace can be made".into());
    }
    if !["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"]
        .iter()
        .any(|p| std::path::Path::new(p).exists())
    {
        return Some(
            "skipped: iproute2's `ip` is not installed (the runner routes the peer with it)".into(),
        );
    }
    None
}

const CAP_SYS_ADMIN: u32 = 21;

/// Whether the effective capability set (`CapEff` of /proc/self/status) has `cap`.
fn has_capability(cap: u32) -> bool {
    let Ok(s) = std::fs::read_to_string("/proc/self/status") else {
        return false;
    };
    s.lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .is_some_and(|bits| bits & (1 << cap) != 0)
}

fn last_err(what: &str) -> io::Error {
    let e = io::Error::last_os_error();
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

/// Move the calling thread into a new, private network namespace.
pub fn unshare_netns() -> io::Result<()> {
    // SAFETY: plain syscall; affects only the calling thread.
    if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
        return Err(last_err("unshare(CLONE_NEWNET)"));
    }
    Ok(())
}

/// The inode of the calling thread's network namespace (to check isolation).
pub fn current_netns_id() -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/thread-self/ns/net")
        .ok()
        .map(|m| m.ino())
}

#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    data: [u8; 24],
}

impl IfReq {
    fn new(name: &str) -> IfReq {
        let mut r = IfReq {
            name: [0; libc::IFNAMSIZ],
            data: [0; 24],
        };
        let b = name.as_bytes();
        r.name[..b.len().min(libc::IFNAMSIZ - 1)]
            .copy_from_slice(&b[..b.len().min(libc::IFNAMSIZ - 1)]);
        r
    }
    fn set_addr(&mut self, ip: Ipv4Addr) {
        // struct sockaddr_in inside the union.
        self.data = [0; 24];
        self.data[0..2].copy_from_slice(&(libc::AF_INET as u16).to_ne_bytes());
        self.data[4..8].copy_from_slice(&ip.octets());
    }
    fn flags(&self) -> libc::c_short {
        libc::c_short::from_ne_bytes([self.data[0], self.data[1]])
    }
    fn set_flags(&mut self, f: libc::c_short) {
        self.data[0..2].copy_from_slice(&f.to_ne_bytes());
    }
}

fn ioctl_ifreq(fd: RawFd, req: libc::c_ulong, r: &mut IfReq, what: &str) -> io::Result<()> {
    // SAFETY: `r` is a valid, properly sized struct ifreq.
    if unsafe { libc::ioctl(fd, req as _, r as *mut IfReq) } != 0 {
        return Err(last_err(what));
    }
    Ok(())
}

fn dgram_socket() -> io::Result<OwnedFd> {
    // SAFETY: plain syscall.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(last_err("socket(AF_INET, SOCK_DGRAM)"));
    }
    // SAFETY: fd is a fresh descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn set_up(ctl: RawFd, name: &str) -> io::Result<()> {
    let mut r = IfReq::new(name);
    ioctl_ifreq(
        ctl,
        libc::SIOCGIFFLAGS,
        &mut r,
        &format!("SIOCGIFFLAGS {name}"),
    )?;
    let f = r.flags() | libc::IFF_UP as libc::c_short | libc::IFF_RUNNING as libc::c_short;
    r.set_flags(f);
    ioctl_ifreq(
        ctl,
        libc::SIOCSIFFLAGS,
        &mut r,
        &format!("SIOCSIFFLAGS {name}"),
    )
}

/// Write a sysctl of the calling thread's network namespace
/// (`net.ipv4.tcp_sack` -> `/proc/sys/net/ipv4/tcp_sack`).
pub fn write_sysctl(name: &str, value: &str) -> io::Result<()> {
    if !name.starts_with("net.") || name.contains("..") || name.contains('/') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("refusing non-namespaced sysctl {name}"),
        ));
    }
    let path = format!("/proc/sys/{}", name.replace('.', "/"));
    std::fs::write(&path, value)
        .map_err(|e| io::Error::new(e.kind(), format!("sysctl {name}={value}: {e}")))
}

pub fn read_sysctl(name: &str) -> Option<String> {
    let path = format!("/proc/sys/{}", name.replace('.', "/"));
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// Create the tun device in the current (private) namespace as packetdrill does
/// (`netdev.c`: `IFF_TUN | IFF_NO_PI | IFF_VNET_HDR`, offloads `TUN_F_CSUM | TUN_F_TSO4 |
/// TUN_F_TSO6 | TUN_F_TSO_ECN`, so the kernel hands it unsegmented TSO/GSO packets), address it
/// 192.168.0.1/16, bring it and `lo` up, and route the peer 192.0.2.1 through it via
/// 192.168.0.1. `congctl`: a congestion control for that route (`ip route ... congctl`), so a
/// connection without `TCP_CONGESTION` gets it as the namespace default would give it (a
/// namespace cannot make cubic its default here). Returns the tun fd (non-blocking).
pub fn setup_tun(congctl: Option<&str>) -> io::Result<OwnedFd> {
    // No IPv6 on the tun: keeps router solicitations etc. off the wire.
    let _ = write_sysctl("net.ipv6.conf.default.disable_ipv6", "1");
    let path = CString::new("/dev/net/tun").unwrap();
    // SAFETY: valid C string.
    let fd = unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_RDWR | libc::O_CLOEXEC | libc::O_NONBLOCK,
        )
    };
    if fd < 0 {
        return Err(last_err("open /dev/net/tun"));
    }
    // SAFETY: fresh fd we own.
    let tun = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut r = IfReq::new(TUN_NAME);
    r.set_flags(IFF_TUN | IFF_NO_PI | IFF_VNET_HDR);
    ioctl_ifreq(tun.as_raw_fd(), TUNSETIFF, &mut r, "TUNSETIFF")?;
    // SAFETY: TUNSETOFFLOAD takes an integer argument.
    if unsafe {
        libc::ioctl(
            tun.as_raw_fd(),
            TUNSETOFFLOAD as _,
            TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_TSO_ECN,
        )
    } != 0
    {
        return Err(last_err("TUNSETOFFLOAD"));
    }
    let ctl = dgram_socket()?;
    set_up(ctl.as_raw_fd(), "lo")?;
    let mut r = IfReq::new(TUN_NAME);
    r.set_addr(LOCAL_IP);
    ioctl_ifreq(ctl.as_raw_fd(), libc::SIOCSIFADDR, &mut r, "SIOCSIFADDR")?;
    let mut r = IfReq::new(TUN_NAME);
    r.set_addr(Ipv4Addr::from(u32::MAX << (32 - LOCAL_PREFIX)));
    ioctl_ifreq(
        ctl.as_raw_fd(),
        libc::SIOCSIFNETMASK,
        &mut r,
        "SIOCSIFNETMASK",
    )?;
    set_up(ctl.as_raw_fd(), TUN_NAME)?;
    let mut route = vec![
        "-4".to_string(),
        "route".into(),
        "add".into(),
        REMOTE_IP.to_string(),
        "dev".into(),
        TUN_NAME.into(),
        "via".into(),
        LOCAL_IP.to_string(),
    ];
    if let Some(cc) = congctl {
        route.extend(["congctl".to_string(), cc.to_string()]);
    }
    let out = std::process::Command::new("ip")
        .args(&route)
        .output()
        .map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("ip {}: {e} (iproute2 is needed)", route.join(" ")),
            )
        })?;
    if !out.status.success() {
        return Err(io::Error::other(format!(
            "ip {}: {}",
            route.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(tun)
}

/// Counters of `/proc/net/netstat` (and `/proc/net/snmp`) of the calling
/// thread's namespace, as `TcpExtTCPFullUndo` style names.
pub fn read_mib() -> BTreeMap<String, i64> {
    let mut r = MibReader::new();
    let v = r.read();
    r.named(&v)
}

/// The MIB counter files of the calling thread's namespace, kept open and read again and again
/// cheaply (one read per file into a kept buffer, the values in file order): the runner takes
/// them after every statement, between packets a script may space by a fraction of a
/// millisecond.
pub struct MibReader {
    files: Vec<std::fs::File>,
    text: String,
    /// The counters' names, in file order (from the first read).
    names: Vec<String>,
}

impl MibReader {
    pub fn new() -> MibReader {
        MibReader {
            files: [
                "/proc/thread-self/net/netstat",
                "/proc/thread-self/net/snmp",
            ]
            .iter()
            .filter_map(|f| std::fs::File::open(f).ok())
            .collect(),
            text: String::new(),
            names: Vec::new(),
        }
    }

    /// The values now, in the order of [`MibReader::named`].
    pub fn read(&mut self) -> Vec<i64> {
        use std::io::{Read, Seek};
        let mut values = Vec::with_capacity(self.names.len().max(256));
        let first = self.names.is_empty();
        for f in &mut self.files {
            self.text.clear();
            if f.rewind().is_err() || f.read_to_string(&mut self.text).is_err() {
                continue;
            }
            let mut lines = self.text.lines();
            while let (Some(h), Some(v)) = (lines.next(), lines.next()) {
                let mut hs = h.split_whitespace();
                let mut vs = v.split_whitespace();
                let (Some(p1), Some(p2)) = (hs.next(), vs.next()) else {
                    continue;
                };
                if p1 != p2 {
                    continue;
                }
                let prefix = p1.trim_end_matches(':');
                for (k, val) in hs.zip(vs) {
                    values.push(val.parse::<i64>().unwrap_or(0));
                    if first {
                        self.names.push(format!("{prefix}{k}"));
                    }
                }
            }
        }
        values
    }

    /// `values` (from [`MibReader::read`]) by name.
    pub fn named(&self, values: &[i64]) -> BTreeMap<String, i64> {
        self.names
            .iter()
            .cloned()
            .zip(values.iter().copied())
            .collect()
    }
}

impl Default for MibReader {
    fn default() -> Self {
        Self::new()
    }
}

/// The `Tcp*` and `TcpExt*` counters that moved from `before` to `after` (nstat names, deltas).
pub fn mib_delta(
    before: &BTreeMap<String, i64>,
    after: &BTreeMap<String, i64>,
) -> BTreeMap<String, i64> {
    after
        .iter()
        .filter(|(k, _)| k.starts_with("Tcp"))
        .map(|(k, v)| (k.clone(), v - before.get(k).copied().unwrap_or(0)))
        .filter(|(_, d)| *d != 0)
        .collect()
}

/// TCP_INFO of a socket, and how many bytes of it the kernel filled in.
pub fn tcp_info(fd: RawFd) -> io::Result<(TcpInfoRaw, usize)> {
    let mut info = TcpInfoRaw::default();
    let mut len = size_of::<TcpInfoRaw>() as libc::socklen_t;
    // SAFETY: buffer and length describe `info`.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            &mut info as *mut _ as *mut libc::c_void,
            &mut len,
        )
    };
    if rc != 0 {
        return Err(last_err("getsockopt(TCP_INFO)"));
    }
    Ok((info, len as usize))
}

pub fn get_congestion(fd: RawFd) -> io::Result<String> {
    let mut buf = [0u8; 32];
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: buffer and length are valid.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            buf.as_mut_ptr() as *mut libc::c_void,
            &mut len,
        )
    };
    if rc != 0 {
        return Err(last_err("getsockopt(TCP_CONGESTION)"));
    }
    let n = buf[..len as usize]
        .iter()
        .position(|&b| b == 0)
        .unwrap_or(len as usize);
    Ok(String::from_utf8_lossy(&buf[..n]).into_owned())
}

pub fn set_congestion(fd: RawFd, cc: &str) -> io::Result<()> {
    // SAFETY: pointer/length describe `cc`.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            cc.as_ptr() as *const libc::c_void,
            cc.len() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(last_err(&format!("setsockopt(TCP_CONGESTION, {cc})")));
    }
    Ok(())
}

/// Close a socket abortively (RST, no FIN_WAIT/TIME_WAIT left behind).
pub fn abort_close(fd: RawFd) {
    let l = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: valid struct, then close the fd we own.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            &l as *const _ as *const libc::c_void,
            size_of::<libc::linger>() as libc::socklen_t,
        );
        libc::close(fd);
    }
}

// ---- signals ----------------------------------------------------------------

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static HANDLERS: AtomicUsize = AtomicUsize::new(0);

extern "C" fn on_signal(_sig: libc::c_int) {
    if INTERRUPTED.swap(true, Ordering::SeqCst) {
        // Second signal: leave now. The kernel tears down the anonymous
        // namespace and the tun device with the process.
        // SAFETY: _exit is async-signal-safe.
        unsafe { libc::_exit(130) };
    }
}

/// Install SIGINT/SIGTERM handlers that ask running scripts to stop.
pub fn install_signal_handlers() {
    if HANDLERS.fetch_add(1, Ordering::SeqCst) > 0 {
        return;
    }
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: installing a handler that only touches an atomic / _exit.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            sa.sa_flags = 0;
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Ask the running script to stop, as a first SIGINT would (no signal involved: the VM guest,
/// which is pid 1, uses it for its per-script time limit).
pub fn request_interrupt() {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// packetdrill's `set_scheduling_priority`: on a machine with more than one CPU, the calling
/// thread runs at the lowest real-time priority (`SCHED_RR`), and so do the threads and
/// processes it starts (blocking calls, shell lines), so that ordinary processes do not delay a
/// script's events by a scheduler slice (10-30 ms on a loaded 2-core machine). `Err`: why not.
pub fn realtime_priority() -> Result<(), NormalPriority> {
    // SAFETY: sysconf has no preconditions.
    if unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) } <= 1 {
        return Ok(());
    }
    // SAFETY: plain syscalls; pid 0 is the calling thread, the parameter a valid struct.
    let rc = unsafe {
        let param = libc::sched_param {
            sched_priority: libc::sched_get_priority_min(libc::SCHED_RR),
        };
        libc::sched_setscheduler(0, libc::SCHED_RR, &param)
    };
    if rc != 0 {
        return Err(NormalPriority(io::Error::last_os_error()));
    }
    Ok(())
}

/// The run stays at normal priority: `sched_setscheduler(SCHED_RR)` failed (a note in the report).
#[derive(Debug, thiserror::Error)]
#[error("runs at normal priority (packetdrill's real-time SCHED_RR refused: {0})")]
pub struct NormalPriority(pub io::Error);

/// Whether thread `tid` of this process is asleep in the kernel (`S` or `D` in its
/// `/proc/self/task/TID/stat`), as packetdrill's `is_thread_sleeping` reads it.
pub fn thread_sleeping(tid: libc::pid_t) -> bool {
    std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).is_ok_and(|s| {
        // The state follows the command name's closing parenthesis.
        s.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|st| st == "S" || st == "D")
    })
}

/// The signal that wakes the runner thread from a blocking system call when a script's time
/// limit has passed (a real-time signal nothing else here uses; its handler does nothing, and it
/// is installed without `SA_RESTART`, so the call returns `EINTR`).
fn wakeup_signal() -> libc::c_int {
    libc::SIGRTMIN() + 4
}

extern "C" fn on_wakeup(_sig: libc::c_int) {}

/// Installs the wake-up signal's handler (once per process).
pub fn install_wakeup_handler() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: installing a handler that does nothing.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_wakeup as *const () as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            sa.sa_flags = 0;
            libc::sigaction(wakeup_signal(), &sa, std::ptr::null_mut());
        }
    });
}

/// Interrupts a blocking system call of `thread` (see [`install_wakeup_handler`]).
pub fn wake_thread(thread: libc::pthread_t) {
    // SAFETY: `thread` is a live thread of this process (the caller has not joined it).
    unsafe { libc::pthread_kill(thread, wakeup_signal()) };
}

/// Forget an earlier interruption, so that the next script runs (the VM guest runs several
/// scripts in one process).
pub fn clear_interrupt() {
    INTERRUPTED.store(false, Ordering::SeqCst);
}
