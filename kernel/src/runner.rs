//! The kernel backend of the script engine (`trc_pkt::engine`): packets through a tun device
//! configured as packetdrill configures it, system calls on real sockets, shell lines confined
//! ([`crate::shell`]), `tcp_info` from the socket under test — all inside the private network
//! namespace of the calling thread. It also records the trace (every injected and captured
//! segment, tcp_info and the undo counters after each statement).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use trc_pkt::ast::{self, Expr, Syscall};
use trc_pkt::engine::{
    Backend, Captured, CodeValues, Halt, LivePacket, Next, Outcome1, SysCtx, SysResult, Unknown,
};

use crate::packet::{self, Segment};
use crate::report::*;
use crate::sys;
use crate::RunOptions;

/// packetdrill's `--bind_port` and `--connect_port`.
const SCRIPT_PORT: u16 = 8080;

/// Reads the tun device in a helper thread and timestamps every frame (the virtio-net header
/// stripped).
struct Sniffer {
    rx: Receiver<(Instant, Vec<u8>)>,
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
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
                        // SAFETY: buf is valid for its length; the fd outlives this thread (joined on drop).
                        let r = unsafe {
                            libc::read(tun, buf.as_mut_ptr() as *mut libc::c_void, buf.len())
                        };
                        if r <= sys::VNET_HDR_LEN as isize {
                            break;
                        }
                        if tx
                            .send((Instant::now(), buf[sys::VNET_HDR_LEN..r as usize].to_vec()))
                            .is_err()
                        {
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

/// A blocking call running on its own thread: (result, errno, when it returned).
type BlockingCall = std::thread::JoinHandle<(i64, i32, Instant)>;

/// The kernel backend.
pub(crate) struct KernelBackend<'a> {
    opts: &'a RunOptions,
    script_dir: &'a Path,
    tun: OwnedFd,
    sniffer: Sniffer,
    pending: VecDeque<(Instant, Segment)>,
    t0: Instant,
    /// The peer's port of a passive open (ours to choose: the namespace is private).
    remote_port: u16,
    /// The live 4-tuple of the socket under test, once known (local port, remote port).
    tuple: Option<(u16, u16)>,
    ip_id: u16,
    /// Script fd → live fd.
    fds: HashMap<i64, RawFd>,
    /// The socket under test (packetdrill's: the last `socket()`, or the `accept()`ed child).
    under_test: Option<RawFd>,
    /// The accepted or connected socket, for tcp_info.
    conn_fd: Option<RawFd>,
    blocking: Option<BlockingCall>,
    cc_used: Option<String>,
    /// Live local ISN and remote ISN (for the trace's script-space numbers).
    local_isn: Option<u32>,
    remote_isn: Option<u32>,
    line: u32,
    mib_before: BTreeMap<String, i64>,
    /// `NSTAT_HISTORY` for the script's `nstat` commands: this run's own file, so a baseline
    /// (`nstat -n`) never mixes with another namespace's counters through the shared default
    /// (`/tmp/.nstat.u0`).
    nstat_history: std::path::PathBuf,
    pub(crate) report: RunReport,
}

fn us(d: Duration) -> i64 {
    d.as_micros() as i64
}

fn ms(v_us: i64) -> f64 {
    v_us as f64 / 1000.0
}

impl<'a> KernelBackend<'a> {
    pub(crate) fn new(
        opts: &'a RunOptions,
        script_dir: &'a Path,
        file: String,
    ) -> std::io::Result<KernelBackend<'a>> {
        let tun = sys::setup_tun(opts.cc.as_deref())?;
        let sniffer = Sniffer::start(tun.as_raw_fd());
        Ok(KernelBackend {
            opts,
            script_dir,
            tun,
            sniffer,
            pending: VecDeque::new(),
            t0: Instant::now(),
            remote_port: 40000 + (std::process::id() % 20000) as u16,
            tuple: None,
            ip_id: 0,
            fds: HashMap::new(),
            under_test: None,
            conn_fd: None,
            blocking: None,
            cc_used: None,
            local_isn: None,
            remote_isn: None,
            line: 0,
            mib_before: sys::read_mib(),
            nstat_history: std::env::temp_dir().join(format!(
                "trc-nstat-{}-{:x}",
                std::process::id(),
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos())
                    .unwrap_or(0)
            )),
            report: RunReport::new(file),
        })
    }

    fn at_us(&self, at: Instant) -> i64 {
        us(at.saturating_duration_since(self.t0))
    }

    /// Whether a captured segment belongs to the connection under test (packetdrill skips the
    /// others): the known 4-tuple, or any SYN / SYN-ACK of ours before it is known.
    fn ours(&self, s: &Segment) -> bool {
        if s.src != sys::LOCAL_IP || s.dst != sys::REMOTE_IP {
            return false;
        }
        match self.tuple {
            Some((l, r)) => s.sport == l && s.dport == r,
            None => s.has(packet::SYN),
        }
    }

    fn accept_frame(&mut self, at: Instant, frame: Vec<u8>) {
        match packet::parse_ipv4_tcp(&frame) {
            Ok(seg) if self.ours(&seg) => self.pending.push_back((at, seg)),
            Ok(seg) => {
                let t = self.at_us(at);
                self.report.notes.push(format!(
                    "{:.3} ms: ignored a segment of another connection ({}:{} -> {}:{})",
                    ms(t),
                    seg.src,
                    seg.sport,
                    seg.dst,
                    seg.dport
                ));
            }
            Err(_) => {}
        }
    }

    fn drain(&mut self) {
        while let Ok((at, f)) = self.sniffer.rx.try_recv() {
            self.accept_frame(at, f);
        }
    }

    /// Script-space (seq, ack) of a live segment, for the trace.
    fn script_space(&self, s: &Segment) -> (u32, u32) {
        if s.has(packet::SYN) {
            return (0, s.ack);
        }
        (
            s.seq.wrapping_sub(self.local_isn.unwrap_or(0)),
            s.ack.wrapping_sub(self.remote_isn.unwrap_or(0)),
        )
    }

    fn record_outbound(&mut self, at: Instant, s: &Segment, line: Option<u32>) {
        if s.has(packet::SYN) && self.local_isn.is_none() {
            self.local_isn = Some(s.seq);
        }
        let (q, a) = self.script_space(s);
        let t_ms = ms(self.at_us(at));
        self.report.trace.push(TraceEvent::Outbound {
            t_ms,
            line,
            segment: TraceSegment::from_seg(s, q, a),
        });
    }

    fn snapshot(&mut self) {
        let Some(fd) = self.conn_fd else { return };
        let Ok((info, _)) = sys::tcp_info(fd) else {
            return;
        };
        let counters = sys::mib_delta(&self.mib_before, &sys::read_mib());
        let t_ms = ms(self.at_us(Instant::now()));
        self.report.trace.push(TraceEvent::TcpInfo {
            t_ms,
            line: self.line,
            info: info.summary(),
            counters,
        });
    }

    /// At the end: segments no line consumed (in the trace, and as notes), the counters, and
    /// every script socket closed abortively (nothing lingers).
    pub(crate) fn finish(&mut self) {
        std::thread::sleep(Duration::from_millis(2));
        self.drain();
        while let Some((at, s)) = self.pending.pop_front() {
            let (q, a) = self.script_space(&s);
            let d = packet::describe(
                s.flags,
                q,
                s.payload_len,
                s.has(packet::ACK).then_some(a),
                Some(s.win),
                &s.options,
            );
            self.report.notes.push(format!(
                "{:.3} ms: outbound segment not matched by any script line: {d}",
                ms(self.at_us(at))
            ));
            self.record_outbound(at, &s, None);
        }
        self.report.counters = sys::mib_delta(&self.mib_before, &sys::read_mib());
        let _ = std::fs::remove_file(&self.nstat_history);
        self.report.congestion_control = self.cc_used.clone();
        self.report.duration_ms = ms(self.at_us(Instant::now()));
        let mut fds: Vec<RawFd> = self.fds.values().copied().collect();
        fds.sort_unstable();
        fds.dedup();
        for fd in fds {
            sys::abort_close(fd);
        }
        self.fds.clear();
        self.conn_fd = None;
    }

    fn live_fd(&self, e: Option<&Expr>) -> Result<RawFd, String> {
        match e {
            Some(Expr::Int(n)) => self
                .fds
                .get(n)
                .copied()
                .ok_or_else(|| format!("unable to find fd with script fd {n}")),
            other => Err(format!(
                "expected an fd number, got {}",
                other.map(trc_pkt::writer::write_expr).unwrap_or_default()
            )),
        }
    }

    /// The connection now exists (accepted or connected): record its congestion control.
    fn connected(&mut self, fd: RawFd) -> Vec<String> {
        self.conn_fd = Some(fd);
        match sys::get_congestion(fd) {
            Ok(cc) => {
                let n = vec![format!("connection congestion control: {cc}")];
                self.cc_used = Some(cc);
                n
            }
            Err(e) => vec![e.to_string()],
        }
    }
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn ret(rc: i64) -> SysResult {
    SysResult::Returned {
        ret: rc,
        errno: if rc < 0 { errno() } else { 0 },
        notes: Vec::new(),
        problems: Vec::new(),
    }
}

/// Integer value of a syscall argument (packetdrill's symbols, `-D` definitions, `A|B`, `[x]`,
/// `htons(x)`).
pub(crate) fn eval_int(e: &Expr, defines: &BTreeMap<String, String>) -> Result<i64, String> {
    match e {
        Expr::Int(i) => Ok(*i),
        Expr::Word(w) => {
            if let Some(d) = defines.get(w) {
                return d
                    .parse::<i64>()
                    .ok()
                    .or_else(|| trc_pkt::symbols::syscall_constant(d))
                    .ok_or_else(|| format!("definition {w}={d} is not an integer"));
            }
            trc_pkt::symbols::syscall_constant(w).ok_or_else(|| format!("unknown symbol: '{w}'"))
        }
        Expr::BitOr(v) => v
            .iter()
            .try_fold(0i64, |acc, x| Ok(acc | eval_int(x, defines)?)),
        Expr::Array(v) if v.len() == 1 => eval_int(&v[0], defines),
        Expr::Call { name, args } if (name == "htons" || name == "htonl") && args.len() == 1 => {
            eval_int(&args[0], defines)
        }
        other => Err(format!(
            "cannot evaluate {} as an integer",
            trc_pkt::writer::write_expr(other)
        )),
    }
}

/// An argument that is a C `int` (a `u32` bit pattern is taken as one too): a clear error
/// outside that range instead of a silent truncation.
fn c_int(e: &Expr, defines: &BTreeMap<String, String>, what: &str) -> Result<i32, String> {
    let v = eval_int(e, defines)?;
    i32::try_from(v)
        .or_else(|_| u32::try_from(v).map(|u| u as i32))
        .map_err(|_| format!("{what} {v} does not fit a C int"))
}

/// Bytes of a `setsockopt` value: a string, a struct of ints (e.g. `{onoff=1, linger=0}`), or
/// an int.
fn opt_bytes(e: &Expr, defines: &BTreeMap<String, String>) -> Result<Vec<u8>, String> {
    match e {
        Expr::Str(s) => Ok(s.as_bytes().to_vec()),
        Expr::Struct(fields) => {
            let mut b = Vec::new();
            for f in fields {
                b.extend_from_slice(&c_int(&f.value, defines, "option value field")?.to_ne_bytes());
            }
            Ok(b)
        }
        other => Ok(c_int(other, defines, "option value")?
            .to_ne_bytes()
            .to_vec()),
    }
}

fn sockaddr(ip: std::net::Ipv4Addr, port: u16) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from_ne_bytes(ip.octets()),
        },
        sin_zero: [0; 8],
    }
}

/// Total length of an iovec list `[{..., 100}, {..., 200}]`.
fn iov_len(e: Option<&Expr>, d: &BTreeMap<String, String>) -> Result<usize, String> {
    let Some(Expr::Array(items)) = e else {
        return Err("expected an iovec array [{..., len}]".into());
    };
    let mut n = 0usize;
    for it in items {
        let Expr::Struct(f) = it else {
            return Err("expected {..., len} in the iovec array".into());
        };
        let len = f.last().ok_or("empty iovec")?;
        n += usize::try_from(eval_int(&len.value, d)?)
            .map_err(|_| "negative iovec length".to_string())?;
    }
    Ok(n)
}

/// Largest write trc performs (packetdrill's buffers are as large as asked; this keeps a typo
/// from allocating gigabytes).
const MAX_IO: i64 = 256 << 20;

impl KernelBackend<'_> {
    fn sys_socket(
        &mut self,
        s: &Syscall,
        d: &BTreeMap<String, String>,
    ) -> Result<SysResult, String> {
        let ty = s
            .args
            .get(1)
            .map(|e| eval_int(e, d))
            .transpose()?
            .unwrap_or(libc::SOCK_STREAM as i64);
        let proto = match s.args.get(2) {
            Some(Expr::Ellipsis) | None => 0,
            Some(e) => eval_int(e, d)?,
        };
        if ty & 0xf != libc::SOCK_STREAM as i64 {
            return Err("only SOCK_STREAM sockets are supported".into());
        }
        // SAFETY: plain syscall.
        let fd = unsafe { libc::socket(libc::AF_INET, ty as i32, proto as i32) };
        if fd < 0 {
            return Ok(ret(-1));
        }
        if let Expr::Int(n) = s.result {
            self.fds.insert(n, fd);
        }
        self.under_test = Some(fd);
        Ok(ret(fd as i64))
    }

    fn sys_setsockopt(
        &mut self,
        s: &Syscall,
        d: &BTreeMap<String, String>,
    ) -> Result<SysResult, String> {
        let fd = self.live_fd(s.args.first())?;
        let level = c_int(s.args.get(1).ok_or("missing level")?, d, "level")?;
        let name = c_int(
            s.args.get(2).ok_or("missing option name")?,
            d,
            "option name",
        )?;
        let bytes = opt_bytes(s.args.get(3).ok_or("missing option value")?, d)?;
        // packetdrill passes the length as written.
        let len = match s.args.get(4) {
            Some(e @ (Expr::Int(_) | Expr::Word(_))) => eval_int(e, d)? as usize,
            _ => bytes.len(),
        };
        let len = len.min(bytes.len());
        // SAFETY: pointer/length describe `bytes`.
        let rc = unsafe {
            libc::setsockopt(
                fd,
                level,
                name,
                bytes.as_ptr() as *const libc::c_void,
                len as libc::socklen_t,
            )
        };
        Ok(ret(rc as i64))
    }

    fn sys_getsockopt(
        &mut self,
        s: &Syscall,
        d: &BTreeMap<String, String>,
    ) -> Result<SysResult, String> {
        let fd = self.live_fd(s.args.first())?;
        let level = c_int(s.args.get(1).ok_or("missing level")?, d, "level")?;
        let name = c_int(
            s.args.get(2).ok_or("missing option name")?,
            d,
            "option name",
        )?;
        let want = s.args.get(3).ok_or("missing option value")?;
        let mut buf = [0u8; 256];
        let mut len = buf.len() as libc::socklen_t;
        // SAFETY: buffer/length are valid.
        let rc = unsafe {
            libc::getsockopt(
                fd,
                level,
                name,
                buf.as_mut_ptr() as *mut libc::c_void,
                &mut len,
            )
        };
        if rc < 0 {
            return Ok(ret(-1));
        }
        let got = &buf[..len as usize];
        let mut problems = Vec::new();
        match want {
            Expr::Ellipsis => {}
            Expr::Str(w) => {
                let g = String::from_utf8_lossy(got)
                    .trim_end_matches('\0')
                    .to_string();
                if &g != w {
                    problems.push(format!("value \"{g}\", expected \"{w}\""));
                }
            }
            other => {
                let w = opt_bytes(other, d)?;
                if w.len() > got.len() || got[..w.len()] != w[..] {
                    problems.push(format!("value {got:?}, expected {w:?}"));
                }
            }
        }
        Ok(SysResult::Returned {
            ret: 0,
            errno: 0,
            notes: Vec::new(),
            problems,
        })
    }

    fn sys_bind(&mut self, s: &Syscall) -> Result<SysResult, String> {
        let fd = self.live_fd(s.args.first())?;
        let sa = sockaddr(sys::LOCAL_IP, SCRIPT_PORT);
        // SAFETY: valid sockaddr_in.
        let rc = unsafe {
            libc::bind(
                fd,
                &sa as *const _ as *const libc::sockaddr,
                size_of::<libc::sockaddr_in>() as u32,
            )
        };
        Ok(ret(rc as i64))
    }

    fn sys_listen(
        &mut self,
        s: &Syscall,
        d: &BTreeMap<String, String>,
    ) -> Result<SysResult, String> {
        let fd = self.live_fd(s.args.first())?;
        let backlog = s
            .args
            .get(1)
            .map(|e| eval_int(e, d))
            .transpose()?
            .unwrap_or(1);
        // The child of a passive open: peer port ours, local port the script port.
        self.tuple = Some((SCRIPT_PORT, self.remote_port));
        // SAFETY: plain syscall.
        Ok(ret(unsafe { libc::listen(fd, backlog as i32) } as i64))
    }

    fn sys_accept(&mut self, s: &Syscall, blocking: bool) -> Result<SysResult, String> {
        let fd = self.live_fd(s.args.first())?;
        if blocking {
            self.blocking = Some(std::thread::spawn(move || {
                // SAFETY: plain syscall on a socket this run owns.
                let c = unsafe { libc::accept(fd, std::ptr::null_mut(), std::ptr::null_mut()) };
                (c as i64, if c < 0 { errno() } else { 0 }, Instant::now())
            }));
            return Ok(SysResult::Blocked);
        }
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd. A handshake completed by the script is there already.
        unsafe { libc::poll(&mut pfd, 1, 1000) };
        // SAFETY: plain syscall; non-blocking so a script that never completes a handshake
        // cannot hang the run.
        let c = unsafe {
            libc::accept4(
                fd,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                libc::SOCK_NONBLOCK,
            )
        };
        if c < 0 {
            return Ok(ret(-1));
        }
        // SAFETY: back to blocking, as accept() would have returned it.
        unsafe {
            libc::fcntl(
                c,
                libc::F_SETFL,
                libc::fcntl(c, libc::F_GETFL) & !libc::O_NONBLOCK,
            )
        };
        if let Expr::Int(n) = s.result {
            self.fds.insert(n, c);
        }
        self.under_test = Some(c);
        let notes = self.connected(c);
        Ok(SysResult::Returned {
            ret: c as i64,
            errno: 0,
            notes,
            problems: Vec::new(),
        })
    }

    fn sys_connect(&mut self, s: &Syscall, blocking: bool) -> Result<SysResult, String> {
        let fd = self.live_fd(s.args.first())?;
        self.tuple = None; // learnt from the SYN
        let sa = sockaddr(sys::REMOTE_IP, SCRIPT_PORT);
        if blocking {
            self.blocking = Some(std::thread::spawn(move || {
                // SAFETY: valid sockaddr_in, a socket this run owns.
                let rc = unsafe {
                    libc::connect(
                        fd,
                        &sa as *const _ as *const libc::sockaddr,
                        size_of::<libc::sockaddr_in>() as u32,
                    )
                };
                (rc as i64, if rc < 0 { errno() } else { 0 }, Instant::now())
            }));
            return Ok(SysResult::Blocked);
        }
        // SAFETY: as above.
        let rc = unsafe {
            libc::connect(
                fd,
                &sa as *const _ as *const libc::sockaddr,
                size_of::<libc::sockaddr_in>() as u32,
            )
        };
        let e = errno();
        if rc == 0 || e == libc::EINPROGRESS {
            let notes = self.connected(fd);
            return Ok(SysResult::Returned {
                ret: rc as i64,
                errno: if rc < 0 { e } else { 0 },
                notes,
                problems: Vec::new(),
            });
        }
        Ok(SysResult::Returned {
            ret: -1,
            errno: e,
            notes: Vec::new(),
            problems: Vec::new(),
        })
    }

    /// `write`, `send`, `sendto` (its address ignored: the socket is connected), `writev`,
    /// `sendmsg` (the iovec length; `msg_flags` ignored; the flags argument honoured).
    fn sys_send(
        &mut self,
        s: &Syscall,
        d: &BTreeMap<String, String>,
        blocking: bool,
    ) -> Result<SysResult, String> {
        let fd = self.live_fd(s.args.first())?;
        let (n, flags) = match s.name.as_str() {
            "writev" => (iov_len(s.args.get(1), d)? as i64, 0),
            "sendmsg" => {
                let Some(Expr::Struct(fields)) = s.args.get(1) else {
                    return Err("sendmsg needs a {msg_...} struct".into());
                };
                let iov = fields
                    .iter()
                    .find(|f| matches!(&f.value, Expr::Array(_)))
                    .map(|f| &f.value);
                (
                    iov_len(iov, d)? as i64,
                    s.args
                        .get(2)
                        .map(|e| eval_int(e, d))
                        .transpose()?
                        .unwrap_or(0),
                )
            }
            _ => (
                eval_int(s.args.get(2).ok_or("missing length")?, d)?,
                if s.name == "write" {
                    0
                } else {
                    s.args
                        .get(3)
                        .map(|e| eval_int(e, d))
                        .transpose()?
                        .unwrap_or(0)
                },
            ),
        };
        if !(0..=MAX_IO).contains(&n) {
            return Err(format!("bad length {n} (0 to {MAX_IO} bytes)"));
        }
        let flags = flags as i32 | libc::MSG_NOSIGNAL;
        if blocking {
            self.blocking = Some(std::thread::spawn(move || {
                let buf = vec![0u8; n as usize];
                // SAFETY: buffer valid for n bytes.
                let rc = unsafe {
                    libc::send(fd, buf.as_ptr() as *const libc::c_void, buf.len(), flags)
                };
                (rc as i64, if rc < 0 { errno() } else { 0 }, Instant::now())
            }));
            return Ok(SysResult::Blocked);
        }
        let buf = vec![0u8; n as usize];
        // SAFETY: buffer valid for n bytes.
        Ok(ret(
            unsafe { libc::send(fd, buf.as_ptr() as *const libc::c_void, buf.len(), flags) } as i64,
        ))
    }

    fn sys_recv(
        &mut self,
        s: &Syscall,
        d: &BTreeMap<String, String>,
        blocking: bool,
    ) -> Result<SysResult, String> {
        let fd = self.live_fd(s.args.first())?;
        let n = match s.name.as_str() {
            "readv" => iov_len(s.args.get(1), d)? as i64,
            _ => eval_int(s.args.get(2).ok_or("missing length")?, d)?,
        }
        .clamp(0, MAX_IO);
        if blocking {
            self.blocking = Some(std::thread::spawn(move || {
                let mut buf = vec![0u8; n as usize];
                // SAFETY: buffer valid for n bytes.
                let rc =
                    unsafe { libc::recv(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len(), 0) };
                (rc as i64, if rc < 0 { errno() } else { 0 }, Instant::now())
            }));
            return Ok(SysResult::Blocked);
        }
        let mut buf = vec![0u8; n as usize];
        // SAFETY: buffer valid for n bytes; a blocking socket with nothing to read would hang,
        // so the read never waits (packetdrill's script would be written with `...` then).
        Ok(ret(unsafe {
            libc::recv(
                fd,
                buf.as_mut_ptr() as *mut libc::c_void,
                buf.len(),
                libc::MSG_DONTWAIT,
            )
        } as i64))
    }

    fn sys_close(&mut self, s: &Syscall) -> Result<SysResult, String> {
        let Some(Expr::Int(n)) = s.args.first() else {
            return Err("close needs an fd number".into());
        };
        let fd = self
            .fds
            .remove(n)
            .ok_or_else(|| format!("unable to find fd with script fd {n}"))?;
        if self.conn_fd == Some(fd) {
            // Keep reading tcp_info of the closed connection? It is gone; packetdrill's
            // socket under test stays, but its fd is invalid.
            self.conn_fd = None;
        }
        // SAFETY: closing an fd this run owns.
        Ok(ret(unsafe { libc::close(fd) } as i64))
    }

    fn sys_shutdown(
        &mut self,
        s: &Syscall,
        d: &BTreeMap<String, String>,
    ) -> Result<SysResult, String> {
        let fd = self.live_fd(s.args.first())?;
        let how = eval_int(s.args.get(1).ok_or("missing how")?, d)?;
        // SAFETY: plain syscall.
        Ok(ret(unsafe { libc::shutdown(fd, how as i32) } as i64))
    }

    fn sys_fcntl(
        &mut self,
        s: &Syscall,
        d: &BTreeMap<String, String>,
    ) -> Result<SysResult, String> {
        let fd = self.live_fd(s.args.first())?;
        let cmd = c_int(s.args.get(1).ok_or("missing command")?, d, "fcntl command")?;
        let arg = s
            .args
            .get(2)
            .map(|e| eval_int(e, d))
            .transpose()?
            .unwrap_or(0);
        // SAFETY: fcntl with an integer argument.
        Ok(ret(
            unsafe { libc::fcntl(fd, cmd, arg as libc::c_long) } as i64
        ))
    }

    fn sys_ioctl(
        &mut self,
        s: &Syscall,
        d: &BTreeMap<String, String>,
    ) -> Result<SysResult, String> {
        let fd = self.live_fd(s.args.first())?;
        let req = eval_int(s.args.get(1).ok_or("missing request")?, d)?;
        let mut v: libc::c_int = 0;
        // SAFETY: the requests scripts use (SIOCINQ/FIONREAD) write one int.
        let rc = unsafe { libc::ioctl(fd, req as _, &mut v as *mut libc::c_int) };
        let mut problems = Vec::new();
        if let (Some(want), true) = (s.args.get(2), rc == 0) {
            let w = eval_int(want, d)?;
            if w != v as i64 {
                problems.push(format!("ioctl value {v}, expected {w}"));
            }
        }
        Ok(SysResult::Returned {
            ret: rc as i64,
            errno: if rc < 0 { errno() } else { 0 },
            notes: Vec::new(),
            problems,
        })
    }

    fn sys_poll(&mut self, s: &Syscall, d: &BTreeMap<String, String>) -> Result<SysResult, String> {
        let Some(Expr::Array(items)) = s.args.first() else {
            return Err("poll needs [{fd=..., events=..., revents=...}]".into());
        };
        let mut pfds = Vec::new();
        let mut want = Vec::new();
        for it in items {
            let Expr::Struct(f) = it else {
                return Err("poll needs {fd=..., events=..., revents=...}".into());
            };
            let get = |n: &str| {
                f.iter()
                    .find(|x| x.name.as_deref() == Some(n))
                    .map(|x| &x.value)
            };
            let fd = self.live_fd(get("fd"))?;
            pfds.push(libc::pollfd {
                fd,
                events: eval_int(get("events").ok_or("missing events")?, d)? as i16,
                revents: 0,
            });
            want.push(get("revents").map(|e| eval_int(e, d)).transpose()?);
        }
        let timeout = s
            .args
            .get(2)
            .map(|e| eval_int(e, d))
            .transpose()?
            .unwrap_or(0)
            .clamp(-1, 10_000);
        // SAFETY: a valid pollfd array.
        let rc = unsafe {
            libc::poll(
                pfds.as_mut_ptr(),
                pfds.len() as libc::nfds_t,
                if timeout < 0 { 10_000 } else { timeout as i32 },
            )
        };
        let problems = pfds
            .iter()
            .zip(&want)
            .filter_map(|(p, w)| {
                w.filter(|w| *w != p.revents as i64)
                    .map(|w| format!("revents {:#x}, expected {w:#x}", p.revents))
            })
            .collect();
        Ok(SysResult::Returned {
            ret: rc as i64,
            errno: if rc < 0 { errno() } else { 0 },
            notes: Vec::new(),
            problems,
        })
    }
}

impl Backend for KernelBackend<'_> {
    fn now_us(&mut self) -> i64 {
        self.at_us(Instant::now())
    }

    fn start_clock(&mut self) {
        self.t0 = Instant::now();
    }

    fn wait_until(&mut self, t_us: i64) -> Result<(), Halt> {
        loop {
            if sys::interrupted() {
                return Err(Halt::Interrupted);
            }
            self.drain();
            let left = t_us - self.now_us();
            if left <= 0 {
                return Ok(());
            }
            if left > 2000 {
                std::thread::sleep(Duration::from_micros(((left - 1500) as u64).min(20_000)));
            } else if left > 200 {
                std::thread::sleep(Duration::from_micros(100));
            } else {
                std::hint::spin_loop();
            }
        }
    }

    fn inbound(&mut self, p: &LivePacket) -> Result<Outcome1, Halt> {
        let (sport, dport) = match self.tuple {
            Some((l, r)) => (r, l),
            None => (self.remote_port, SCRIPT_PORT),
        };
        if p.flags & packet::SYN != 0 && self.remote_isn.is_none() {
            self.remote_isn = Some(p.seq);
        }
        let seg = Segment {
            src: sys::REMOTE_IP,
            dst: sys::LOCAL_IP,
            sport,
            dport,
            seq: p.seq,
            ack: p.ack,
            flags: p.flags,
            win: p.win,
            urg_ptr: p.urg,
            tos: p.tos,
            options: p.options.clone(),
            payload_len: p.payload_len as usize,
        };
        let frame = match packet::build_ipv4_tcp(&seg, self.ip_id) {
            Ok(f) => f,
            Err(m) => return Ok(Outcome1::fail(m)),
        };
        let mut buf = vec![0u8; sys::VNET_HDR_LEN];
        buf.extend_from_slice(&frame);
        // SAFETY: buf is a valid buffer; the tun fd is open.
        let rc = unsafe {
            libc::write(
                self.tun.as_raw_fd(),
                buf.as_ptr() as *const libc::c_void,
                buf.len(),
            )
        };
        let t_ms = ms(self.now_us());
        let (q, a) = (
            seg.seq.wrapping_sub(self.remote_isn.unwrap_or(0)),
            seg.ack.wrapping_sub(self.local_isn.unwrap_or(0)),
        );
        self.report.trace.push(TraceEvent::Inbound {
            t_ms,
            line: self.line,
            segment: TraceSegment::from_seg(&seg, q, a),
        });
        if rc != buf.len() as isize {
            return Ok(Outcome1::fail(format!(
                "tun write failed: {}",
                std::io::Error::last_os_error()
            )));
        }
        Ok(Outcome1::applied(None))
    }

    fn next_outbound(&mut self, deadline_us: i64, _expect: &ast::Packet) -> Result<Next, Halt> {
        let deadline = self.t0 + Duration::from_micros(deadline_us.max(0) as u64);
        loop {
            if let Some((at, s)) = self.pending.pop_front() {
                if s.has(packet::SYN) && self.tuple.is_none() {
                    self.tuple = Some((s.sport, s.dport));
                }
                self.record_outbound(at, &s, Some(self.line));
                return Ok(Next::Packet(Captured {
                    at_us: self.at_us(at),
                    spread_us: 0,
                    flags: s.flags,
                    seq: s.seq,
                    ack: s.ack,
                    win: s.win,
                    urg: s.urg_ptr,
                    tos: s.tos,
                    options: s.options,
                    payload_len: s.payload_len as u32,
                    unknown: Unknown::default(),
                    note: None,
                    applied: None,
                }));
            }
            if sys::interrupted() {
                return Err(Halt::Interrupted);
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(Next::Timeout);
            }
            match self
                .sniffer
                .rx
                .recv_timeout((deadline - now).min(Duration::from_millis(20)))
            {
                Ok((at, f)) => self.accept_frame(at, f),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return Ok(Next::Timeout),
            }
        }
    }

    fn syscall(&mut self, s: &Syscall, cx: &SysCtx) -> Result<SysResult, Halt> {
        let d = cx.defines;
        let r = match s.name.as_str() {
            "socket" => self.sys_socket(s, d),
            "setsockopt" => self.sys_setsockopt(s, d),
            "getsockopt" => self.sys_getsockopt(s, d),
            "bind" => self.sys_bind(s),
            "listen" => self.sys_listen(s, d),
            "accept" | "accept4" => self.sys_accept(s, cx.blocking),
            "connect" => self.sys_connect(s, cx.blocking),
            "write" | "send" | "sendto" | "writev" | "sendmsg" => self.sys_send(s, d, cx.blocking),
            "read" | "recv" | "recvfrom" | "readv" => self.sys_recv(s, d, cx.blocking),
            "close" => self.sys_close(s),
            "shutdown" => self.sys_shutdown(s, d),
            "fcntl" => self.sys_fcntl(s, d),
            "ioctl" => self.sys_ioctl(s, d),
            "poll" => self.sys_poll(s, d),
            other => Err(format!(
                "Unknown system call: '{other}' (not supported by trc's runner)"
            )),
        };
        Ok(r.unwrap_or_else(|m| {
            SysResult::Other(Outcome1::fail(format!(
                "runtime error in {} call: {m}",
                s.name
            )))
        }))
    }

    fn blocking_result(&mut self) -> Option<(i64, i32, i64)> {
        if !self.blocking.as_ref()?.is_finished() {
            return None;
        }
        let (rc, e, at) = self.blocking.take()?.join().ok()?;
        Some((rc, e, self.at_us(at)))
    }

    fn shell(&mut self, cmd: &str, env: &[(String, String)]) -> Result<Outcome1, Halt> {
        if self.opts.no_shell {
            return Err(Halt::Stop("shell lines are refused (--no-shell)".into()));
        }
        let mut env = env.to_vec();
        if !env.iter().any(|(k, _)| k == "NSTAT_HISTORY") {
            env.push((
                "NSTAT_HISTORY".into(),
                self.nstat_history.display().to_string(),
            ));
        }
        let mut o = match crate::shell::run(cmd, self.script_dir, &env) {
            Err(e) => Outcome1::fail(format!("cannot run /bin/sh: {e}")),
            Ok(out) => {
                let mut o = match (out.timed_out, out.code) {
                    (true, _) => Outcome1::fail(format!(
                        "killed after {} s",
                        crate::shell::TIME_LIMIT.as_secs()
                    )),
                    (false, Some(0)) => Outcome1::pass(),
                    (false, Some(c)) => Outcome1::fail(format!(
                        "error executing `{}` command: non-zero status {c}",
                        cmd.trim()
                    )),
                    (false, None) => Outcome1::fail("killed by a signal"),
                };
                o.output = Some(out.stdout).filter(|s| !s.is_empty());
                if !out.stderr.is_empty() {
                    o.notes.push(format!("stderr: {}", out.stderr));
                }
                o
            }
        };
        // Command-line overrides win over whatever the script configured.
        apply_overrides(self.opts, &mut o.notes);
        Ok(o)
    }

    fn code_values(&mut self) -> Result<CodeValues, String> {
        let fd = self
            .conn_fd
            .or(self.under_test)
            .ok_or("can't find getsockopt to get TCP info: no socket under test")?;
        let (info, len) =
            sys::tcp_info(fd).map_err(|e| format!("can't find getsockopt to get TCP info: {e}"))?;
        let (values, missing) = info.values(len);
        Ok(CodeValues { values, missing })
    }

    fn statement_begins(&mut self, line: u32) {
        self.line = line;
    }

    fn after_statement(&mut self, _line: u32) {
        self.snapshot();
    }

    fn interrupted(&self) -> bool {
        sys::interrupted()
    }
}

pub(crate) fn apply_overrides(opts: &RunOptions, notes: &mut Vec<String>) {
    for (name, v) in [
        ("net.ipv4.tcp_sack", opts.sack),
        ("net.ipv4.tcp_timestamps", opts.timestamps),
    ] {
        if let Some(on) = v {
            if let Err(e) = sys::write_sysctl(name, if on { "1" } else { "0" }) {
                notes.push(e.to_string());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_int_arguments_are_checked_not_truncated() {
        let d = BTreeMap::new();
        assert_eq!(c_int(&Expr::Int(-1), &d, "x"), Ok(-1));
        assert_eq!(
            c_int(&Expr::Int(0xffff_ffff), &d, "x"),
            Ok(-1),
            "a u32 bit pattern"
        );
        assert!(c_int(&Expr::Int(4_294_968_296), &d, "level")
            .unwrap_err()
            .contains("does not fit a C int"));
        assert!(opt_bytes(&Expr::Int(1 << 40), &d).is_err());
        assert_eq!(
            opt_bytes(&Expr::Int(1), &d).unwrap(),
            1i32.to_ne_bytes().to_vec()
        );
    }
}
