//! The packets the kernel sends on `tun0`, with the time it sent them.
//!
//! As packetdrill does (`packet_socket_linux.c`, `netdev.c`), the times come from the kernel: a
//! packet socket bound to `tun0` with `SO_TIMESTAMPNS` sees each packet as the device transmits
//! it (`dev_queue_xmit_nit`) and stamps it there, so when trc gets to read it does not move a
//! packet's time (on a loaded machine that is milliseconds), nor, through the relative times that
//! count from a captured packet, the injections that follow it. The runner's own thread reads the
//! socket (no hand-over from another thread, whose wake-up would delay every packet the script
//! waits for) and drains the tun device as it goes, as packetdrill reads it when it takes a
//! packet. Without packet sockets (a kernel built without `CONFIG_PACKET`), a helper thread reads
//! the tun device and stamps each frame when read.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::sys;

/// A frame (an IPv4 packet) the kernel sent, and when.
pub(crate) type Frame = (Instant, Vec<u8>);

/// Where the kernel's packets come from.
pub(crate) enum Capture {
    /// A packet socket read by the runner's thread, with the kernel's times.
    Direct {
        psock: OwnedFd,
        tun: RawFd,
        queue: std::collections::VecDeque<Frame>,
        buf: Vec<u8>,
    },
    /// The tun device read by a helper thread, with read times.
    Thread(Sniffer),
}

impl Capture {
    /// Starts capturing (in the calling thread's network namespace, where `tun0` is).
    pub(crate) fn start(tun: RawFd) -> Capture {
        match packet_socket() {
            Some(psock) => Capture::Direct {
                psock,
                tun,
                queue: std::collections::VecDeque::new(),
                buf: vec![0u8; 65536 + 256],
            },
            None => Capture::Thread(Sniffer::start(tun)),
        }
    }

    /// Whether the times are the kernel's.
    pub(crate) fn kernel_times(&self) -> bool {
        matches!(self, Capture::Direct { .. })
    }

    /// The next frame, if one has been sent.
    pub(crate) fn try_next(&mut self) -> Option<Frame> {
        match self {
            Capture::Thread(s) => s.rx.try_recv().ok(),
            Capture::Direct {
                psock,
                tun,
                queue,
                buf,
            } => {
                if queue.is_empty() {
                    while let Some(f) = receive(psock.as_raw_fd(), buf) {
                        queue.extend(f);
                    }
                    drain_tun(*tun, buf);
                }
                queue.pop_front()
            }
        }
    }

    /// The next frame, waiting up to `timeout` for one; `Err(true)` when capturing ended.
    pub(crate) fn next_within(&mut self, timeout: Duration) -> Result<Frame, bool> {
        if let Capture::Thread(s) = self {
            return s
                .rx
                .recv_timeout(timeout)
                .map_err(|e| matches!(e, mpsc::RecvTimeoutError::Disconnected));
        }
        if let Some(f) = self.try_next() {
            return Ok(f);
        }
        if let Capture::Direct { psock, .. } = self {
            let mut pfd = libc::pollfd {
                fd: psock.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            let ms = timeout.as_millis().clamp(0, i32::MAX as u128) as i32;
            // SAFETY: one valid pollfd.
            unsafe { libc::poll(&mut pfd, 1, ms) };
        }
        self.try_next().ok_or(false)
    }
}

/// Reads (and drops) what the tun device holds, so the kernel frees the packets it sent.
fn drain_tun(tun: RawFd, buf: &mut [u8]) {
    // SAFETY: buf is valid for its length; the tun fd is non-blocking and open.
    while unsafe { libc::read(tun, buf.as_mut_ptr() as *mut libc::c_void, buf.len()) } > 0 {}
}

/// The tun device's reader thread and what it found (kernels without packet sockets).
pub(crate) struct Sniffer {
    rx: Receiver<Frame>,
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

/// Receive buffer of the packet socket: room for many 64 KB GSO packets while the reader waits
/// for a CPU.
const RCVBUF: libc::c_int = 8 << 20;

/// A packet socket on `tun0` that stamps packets with the kernel's time, if this kernel has them.
fn packet_socket() -> Option<OwnedFd> {
    // SAFETY: plain syscalls on a socket created and owned here.
    unsafe {
        let fd = libc::socket(
            libc::AF_PACKET,
            libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            (libc::ETH_P_ALL as u16).to_be() as libc::c_int,
        );
        if fd < 0 {
            return None;
        }
        let fd = OwnedFd::from_raw_fd(fd);
        let index = libc::if_nametoindex(c"tun0".as_ptr());
        let mut sll: libc::sockaddr_ll = std::mem::zeroed();
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
        sll.sll_ifindex = index as i32;
        let one: libc::c_int = 1;
        let ok = index != 0
            && libc::bind(
                fd.as_raw_fd(),
                &sll as *const _ as *const libc::sockaddr,
                size_of::<libc::sockaddr_ll>() as u32,
            ) == 0
            && libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_TIMESTAMPNS,
                &one as *const _ as *const libc::c_void,
                size_of::<libc::c_int>() as u32,
            ) == 0;
        if !ok {
            return None;
        }
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            &RCVBUF as *const _ as *const libc::c_void,
            size_of::<libc::c_int>() as u32,
        );
        Some(fd)
    }
}

/// `CLOCK_REALTIME` now, the clock of the packet socket's stamps.
fn realtime() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// The next outgoing frame on the packet socket and the kernel's time for it, converted to an
/// `Instant` (its age on the realtime clock, taken from now); `None` when nothing is queued.
fn receive(fd: RawFd, buf: &mut [u8]) -> Option<Option<Frame>> {
    // SAFETY: sockaddr_ll is plain data; all zeroes is a valid value.
    let mut from: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr() as *mut libc::c_void,
        iov_len: buf.len(),
    };
    let mut control = [0u64; 16];
    // SAFETY: msghdr fields point at live buffers of the stated sizes.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = &mut from as *mut _ as *mut libc::c_void;
    msg.msg_namelen = size_of::<libc::sockaddr_ll>() as u32;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr() as *mut libc::c_void;
    msg.msg_controllen = size_of_val(&control);
    // SAFETY: as above.
    let n = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_DONTWAIT) };
    if n <= 0 {
        return None;
    }
    let now = (Instant::now(), realtime());
    if from.sll_pkttype != libc::PACKET_OUTGOING {
        return Some(None);
    }
    let mut stamp = None;
    // SAFETY: walking the control messages the kernel wrote into `control`.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                stamp = Some(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32));
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    let at = stamp
        .and_then(|s| now.0.checked_sub(now.1.saturating_sub(s)))
        .unwrap_or(now.0);
    Some(Some((at, buf[..n as usize].to_vec())))
}

impl Sniffer {
    fn start(tun: RawFd) -> Sniffer {
        let (tx, rx) = mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let handle = std::thread::Builder::new()
            .name("trc-tun-reader".into())
            .spawn(move || {
                let mut buf = vec![0u8; 65536 + 256];
                while !stop2.load(Ordering::Relaxed) {
                    let mut pfd = libc::pollfd {
                        fd: tun,
                        events: libc::POLLIN,
                        revents: 0,
                    };
                    // SAFETY: one valid pollfd.
                    if unsafe { libc::poll(&mut pfd, 1, 5) } <= 0 {
                        continue;
                    }
                    loop {
                        // SAFETY: buf is valid for its length; the fd outlives this thread
                        // (joined on drop).
                        let r = unsafe {
                            libc::read(tun, buf.as_mut_ptr() as *mut libc::c_void, buf.len())
                        };
                        if r <= sys::VNET_HDR_LEN as isize {
                            break;
                        }
                        let frame = buf[sys::VNET_HDR_LEN..r as usize].to_vec();
                        if tx.send((Instant::now(), frame)).is_err() {
                            return;
                        }
                    }
                }
            })
            .expect("spawn tun reader thread");
        Sniffer {
            rx,
            stop,
            handle: Some(handle),
        }
    }
}

impl Drop for Sniffer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}
