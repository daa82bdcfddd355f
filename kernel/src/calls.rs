//! The system calls of the kernel backend, one function each (packetdrill's
//! `run_system_call.c`): arguments evaluated from the script's expressions (packetdrill's symbols,
//! `-D` definitions), the call made on the run's sockets, its result and errno returned for the
//! engine to check. A call, argument form or symbol trc does not implement is
//! [`CallError::Unsupported`]: the run stops there with `unsupported: X`, never a failure.

use std::collections::BTreeMap;
use std::os::fd::RawFd;
use std::time::Instant;

use trc_pkt::ast::{Expr, Syscall};
use trc_pkt::engine::SysResult;

use crate::runner::KernelBackend;
use crate::sys;

/// packetdrill's `--bind_port` and `--connect_port`.
pub(crate) const SCRIPT_PORT: u16 = 8080;

/// Why a call did not return a result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CallError {
    /// A runtime error packetdrill reports too (an fd the script never opened, a bad length).
    Fail(String),
    /// Something trc does not implement: a call, an argument form, a symbol.
    Unsupported(String),
}

impl From<String> for CallError {
    fn from(m: String) -> CallError {
        CallError::Fail(m)
    }
}

impl From<FdError> for CallError {
    fn from(e: FdError) -> CallError {
        CallError::Fail(e.to_string())
    }
}

/// A script fd argument that names no socket of the run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum FdError {
    /// An fd number the script never opened.
    #[error("unable to find fd with script fd {0}")]
    Unknown(i64),
    /// Not a number (the expression as written).
    #[error("expected an fd number, got {0}")]
    NotAnFd(String),
}

impl From<&str> for CallError {
    fn from(m: &str) -> CallError {
        CallError::Fail(m.to_string())
    }
}

type CallResult<T> = Result<T, CallError>;

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
/// `htons(x)`). A symbol trc's table lacks, or an expression form it cannot evaluate, is
/// unsupported.
pub(crate) fn eval_int(e: &Expr, defines: &BTreeMap<String, String>) -> CallResult<i64> {
    match e {
        Expr::Int(i) => Ok(*i),
        Expr::Word(w) => {
            if let Some(d) = defines.get(w) {
                return d
                    .parse::<i64>()
                    .ok()
                    .or_else(|| trc_pkt::symbols::syscall_constant(d))
                    .ok_or_else(|| format!("definition {w}={d} is not an integer").into());
            }
            trc_pkt::symbols::syscall_constant(w).ok_or_else(|| {
                CallError::Unsupported(format!(
                    "the symbol {w} (not in trc's table of packetdrill's constants)"
                ))
            })
        }
        Expr::BitOr(v) => v
            .iter()
            .try_fold(0i64, |acc, x| Ok(acc | eval_int(x, defines)?)),
        Expr::Array(v) if v.len() == 1 => eval_int(&v[0], defines),
        Expr::Call { name, args } if (name == "htons" || name == "htonl") && args.len() == 1 => {
            eval_int(&args[0], defines)
        }
        other => Err(CallError::Unsupported(format!(
            "the argument {} as an integer",
            trc_pkt::writer::write_expr(other)
        ))),
    }
}

/// An argument that is a C `int` (a `u32` bit pattern is taken as one too): a clear error
/// outside that range instead of a silent truncation.
fn c_int(e: &Expr, defines: &BTreeMap<String, String>, what: &str) -> CallResult<i32> {
    let v = eval_int(e, defines)?;
    i32::try_from(v)
        .or_else(|_| u32::try_from(v).map(|u| u as i32))
        .map_err(|_| format!("{what} {v} does not fit a C int").into())
}

/// Bytes of a `setsockopt` value: a string, a struct of ints (e.g. `{onoff=1, linger=0}`), or
/// an int.
fn opt_bytes(e: &Expr, defines: &BTreeMap<String, String>) -> CallResult<Vec<u8>> {
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

/// The lengths of an iovec list `[{..., 100}, {..., 200}]`.
fn iov_lens(e: Option<&Expr>, d: &BTreeMap<String, String>) -> CallResult<Vec<usize>> {
    let Some(Expr::Array(items)) = e else {
        return Err(CallError::Unsupported(format!(
            "the iovec {} (trc takes [{{..., len}}, ...])",
            e.map(trc_pkt::writer::write_expr).unwrap_or_default()
        )));
    };
    let mut lens = Vec::new();
    for it in items {
        let Expr::Struct(f) = it else {
            return Err(CallError::Unsupported(
                "an iovec entry that is not {..., len}".into(),
            ));
        };
        let len = f.last().ok_or("empty iovec")?;
        let n = eval_int(&len.value, d)?;
        if !(0..=MAX_IO).contains(&n) {
            return Err(format!("bad iovec length {n} (0 to {MAX_IO} bytes)").into());
        }
        lens.push(n as usize);
    }
    if lens.iter().sum::<usize>() > MAX_IO as usize {
        return Err(format!("the iovec's lengths add up to more than {MAX_IO} bytes").into());
    }
    Ok(lens)
}

/// The iovec lengths of a `sendmsg` message header (`{msg_name(...)=..., msg_iov(N)=[...],
/// msg_flags=F}`) and whether it names an address (`msg_name`); ancillary data
/// (`msg_control=[...]`) is not implemented.
fn msghdr_iov(e: Option<&Expr>, d: &BTreeMap<String, String>) -> CallResult<(Vec<usize>, bool)> {
    let Some(Expr::Struct(fields)) = e else {
        return Err(CallError::Unsupported(format!(
            "the message header {} (trc takes {{msg_name(...)=..., msg_iov(N)=[...], msg_flags=F}})",
            e.map(trc_pkt::writer::write_expr).unwrap_or_default()
        )));
    };
    let named = |n: &str| fields.iter().find(|f| f.name.as_deref() == Some(n));
    if named("msg_control").is_some_and(|f| !matches!(&f.value, Expr::Array(v) if v.is_empty())) {
        return Err(CallError::Unsupported(
            "ancillary data (msg_control, cmsg) in sendmsg".into(),
        ));
    }
    let iov = named("msg_iov")
        .or_else(|| fields.iter().find(|f| matches!(&f.value, Expr::Array(_))))
        .map(|f| &f.value);
    Ok((iov_lens(iov, d)?, named("msg_name").is_some()))
}

/// The address a send call passes, as packetdrill's calls pass it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dest {
    /// None: `write`, `send`, `writev`, a `sendmsg` without `msg_name`.
    Connected,
    /// The peer's (packetdrill's connect address): a `sendto` with `...`, a `sendmsg` with
    /// `msg_name`.
    Peer,
    /// A zeroed address of the family a `sendto` names in place of `...`.
    Family(i64),
}

/// Whether a read or write call's buffer argument is `NULL` (packetdrill passes a null pointer
/// then, for the kernel's `EFAULT`); `...` is a buffer of the call's length.
fn null_buffer(e: Option<&Expr>, d: &BTreeMap<String, String>) -> CallResult<bool> {
    match e {
        Some(Expr::Ellipsis) | None => Ok(false),
        Some(e) => match eval_int(e, d)? {
            0 => Ok(true),
            v => Err(format!("Expected ... or NULL for buffer, got {v}").into()),
        },
    }
}

/// One send call as the kernel gets it: a buffer per iovec entry (`writev`, `sendmsg`: the
/// kernel sees each entry's own memory, which zerocopy's page fragments depend on), else one
/// buffer of the length, or a null pointer.
struct SendCall {
    /// `write`, `send`, `sendto`, `writev` or `sendmsg`: the system call made, as packetdrill
    /// makes it.
    call: &'static str,
    fd: RawFd,
    len: usize,
    iov: Option<Vec<usize>>,
    null: bool,
    dest: Dest,
    flags: i32,
}

impl SendCall {
    fn run(&self) -> isize {
        let sa = sockaddr(sys::REMOTE_IP, SCRIPT_PORT);
        // SAFETY: an all-zero sockaddr_storage is a valid (unspecified) address.
        let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        let (addr, addr_len): (*const libc::sockaddr, usize) = match self.dest {
            Dest::Family(f) => {
                ss.ss_family = f as libc::sa_family_t;
                (
                    &ss as *const _ as *const _,
                    size_of::<libc::sockaddr_storage>(),
                )
            }
            Dest::Peer => (&sa as *const _ as *const _, size_of::<libc::sockaddr_in>()),
            Dest::Connected => (std::ptr::null(), 0),
        };
        let lens = self.iov.clone().unwrap_or_else(|| vec![self.len]);
        let mut bufs: Vec<Vec<u8>> = lens.iter().map(|&n| vec![0u8; n]).collect();
        let mut iov: Vec<libc::iovec> = bufs
            .iter_mut()
            .map(|b| libc::iovec {
                iov_base: if self.null {
                    std::ptr::null_mut()
                } else {
                    b.as_mut_ptr() as *mut libc::c_void
                },
                iov_len: b.len(),
            })
            .collect();
        // SAFETY: a zeroed msghdr is valid; its fields are set below.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_name = addr as *mut libc::c_void;
        msg.msg_namelen = addr_len as libc::socklen_t;
        msg.msg_iov = iov.as_mut_ptr();
        msg.msg_iovlen = iov.len() as _;
        let (fd, f) = (self.fd, self.flags);
        let (base, len) = iov
            .first()
            .map_or((std::ptr::null_mut(), 0), |v| (v.iov_base, v.iov_len));
        // SAFETY: the buffers (or null, which the kernel refuses with EFAULT) and the address
        // (if any) outlive the call, and the lengths are theirs.
        unsafe {
            match self.call {
                "write" => libc::write(fd, base, len),
                "send" => libc::send(fd, base, len, f),
                "sendto" => libc::sendto(fd, base, len, f, addr, msg.msg_namelen),
                "writev" => libc::writev(fd, iov.as_ptr(), iov.len() as libc::c_int),
                _ => libc::sendmsg(fd, &msg, f),
            }
        }
    }
}

/// Largest write trc performs (packetdrill's buffers are as large as asked; this keeps a typo
/// from allocating gigabytes).
const MAX_IO: i64 = 256 << 20;

impl KernelBackend<'_> {
    /// Runs the call `s` (`blocking`: it has a `...end` time).
    pub(crate) fn call(
        &mut self,
        s: &Syscall,
        d: &BTreeMap<String, String>,
        blocking: bool,
    ) -> CallResult<SysResult> {
        match s.name.as_str() {
            "socket" => self.sys_socket(s, d),
            "setsockopt" => self.sys_setsockopt(s, d),
            "getsockopt" => self.sys_getsockopt(s, d),
            "bind" => self.sys_bind(s),
            "listen" => self.sys_listen(s, d),
            "accept" | "accept4" => self.sys_accept(s, blocking),
            "connect" => self.sys_connect(s, blocking),
            "write" | "send" | "sendto" | "writev" | "sendmsg" => self.sys_send(s, d, blocking),
            "read" | "recv" | "recvfrom" | "readv" => self.sys_recv(s, d, blocking),
            "close" => self.sys_close(s),
            "shutdown" => self.sys_shutdown(s, d),
            "fcntl" => self.sys_fcntl(s, d),
            "ioctl" => self.sys_ioctl(s, d),
            "poll" => self.sys_poll(s, d),
            other => Err(CallError::Unsupported(format!("the system call {other}"))),
        }
    }

    /// Runs a blocking call on its own thread and returns once that thread sleeps in the kernel
    /// (or the call is over), as packetdrill's `enqueue_system_call` waits for its system-call
    /// thread to block: the script's next relative time counts from there.
    fn start_blocking(&mut self, call: impl FnOnce() -> i64 + Send + 'static) -> SysResult {
        let tid = std::sync::Arc::new(std::sync::atomic::AtomicI32::new(0));
        let t = tid.clone();
        let h = std::thread::spawn(move || {
            // SAFETY: gettid has no preconditions.
            t.store(
                unsafe { libc::gettid() },
                std::sync::atomic::Ordering::SeqCst,
            );
            let rc = call();
            (rc, if rc < 0 { errno() } else { 0 }, Instant::now())
        });
        let until = Instant::now() + std::time::Duration::from_secs(1);
        while !h.is_finished() && Instant::now() < until {
            let id = tid.load(std::sync::atomic::Ordering::SeqCst);
            if id != 0 && sys::thread_sleeping(id) {
                break;
            }
            std::thread::yield_now();
        }
        self.blocking = Some(h);
        SysResult::Blocked
    }

    fn sys_socket(&mut self, s: &Syscall, d: &BTreeMap<String, String>) -> CallResult<SysResult> {
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
        self.new_socket(fd);
        Ok(ret(fd as i64))
    }

    /// The socket, level and option name of a `setsockopt`/`getsockopt` call (its first three
    /// arguments).
    fn sockopt_target(
        &self,
        s: &Syscall,
        d: &BTreeMap<String, String>,
    ) -> CallResult<(libc::c_int, libc::c_int, libc::c_int)> {
        let fd = self.live_fd(s.args.first())?;
        let level = c_int(s.args.get(1).ok_or("missing level")?, d, "level")?;
        let name = c_int(
            s.args.get(2).ok_or("missing option name")?,
            d,
            "option name",
        )?;
        Ok((fd, level, name))
    }

    fn sys_setsockopt(
        &mut self,
        s: &Syscall,
        d: &BTreeMap<String, String>,
    ) -> CallResult<SysResult> {
        let (fd, level, name) = self.sockopt_target(s, d)?;
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
    ) -> CallResult<SysResult> {
        let (fd, level, name) = self.sockopt_target(s, d)?;
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

    fn sys_bind(&mut self, s: &Syscall) -> CallResult<SysResult> {
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

    fn sys_listen(&mut self, s: &Syscall, d: &BTreeMap<String, String>) -> CallResult<SysResult> {
        let fd = self.live_fd(s.args.first())?;
        let backlog = s
            .args
            .get(1)
            .map(|e| eval_int(e, d))
            .transpose()?
            .unwrap_or(1);
        // The next inbound packet starts a passive open (`inbound` picks its remote port).
        self.listening = true;
        self.opened.insert(fd);
        // SAFETY: plain syscall.
        Ok(ret(unsafe { libc::listen(fd, backlog as i32) } as i64))
    }

    fn sys_accept(&mut self, s: &Syscall, blocking: bool) -> CallResult<SysResult> {
        let fd = self.live_fd(s.args.first())?;
        if blocking {
            if let Expr::Int(n) = s.result {
                self.blocking_accept = Some(n);
            }
            return Ok(self.start_blocking(move || {
                // SAFETY: plain syscall on a socket this run owns.
                unsafe { libc::accept(fd, std::ptr::null_mut(), std::ptr::null_mut()) as i64 }
            }));
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
        self.accepted(c);
        let notes = self.connected(c);
        Ok(SysResult::Returned {
            ret: c as i64,
            errno: 0,
            notes,
            problems: Vec::new(),
        })
    }

    fn sys_connect(&mut self, s: &Syscall, blocking: bool) -> CallResult<SysResult> {
        let fd = self.live_fd(s.args.first())?;
        self.start_connect(fd, false);
        let sa = sockaddr(sys::REMOTE_IP, SCRIPT_PORT);
        if blocking {
            return Ok(self.start_blocking(move || {
                // SAFETY: valid sockaddr_in, a socket this run owns.
                unsafe {
                    libc::connect(
                        fd,
                        &sa as *const _ as *const libc::sockaddr,
                        size_of::<libc::sockaddr_in>() as u32,
                    ) as i64
                }
            }));
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

    /// `write`, `send`, `sendto`, `writev`, `sendmsg` (its iovec length; `msg_flags` ignored, as
    /// the kernel does on send; the flags argument honoured). The address is packetdrill's
    /// ([`Dest`]): `sendto` always passes one, the peer's or, where the script names a family
    /// instead of `...`, a zeroed address of that family (`AF_UNSPEC` with `MSG_FASTOPEN`:
    /// `EOPNOTSUPP`); `sendmsg` passes the peer's when its header has `msg_name`. Either starts
    /// an active open on a socket still new ([`KernelBackend::start_connect`]), as a TCP Fast
    /// Open client's connect-with-data does.
    fn sys_send(
        &mut self,
        s: &Syscall,
        d: &BTreeMap<String, String>,
        blocking: bool,
    ) -> CallResult<SysResult> {
        let fd = self.live_fd(s.args.first())?;
        let arg = |i: usize| -> CallResult<i64> {
            s.args
                .get(i)
                .map(|e| eval_int(e, d))
                .transpose()
                .map(|v| v.unwrap_or(0))
        };
        let (iov, flags, dest) = match s.name.as_str() {
            "writev" => (Some(iov_lens(s.args.get(1), d)?), 0, Dest::Connected),
            "sendmsg" => {
                let (lens, named) = msghdr_iov(s.args.get(1), d)?;
                let dest = if named { Dest::Peer } else { Dest::Connected };
                (Some(lens), arg(2)?, dest)
            }
            "write" => (None, 0, Dest::Connected),
            "sendto" => (
                None,
                arg(3)?,
                match s.args.get(4) {
                    Some(Expr::Ellipsis) | None => Dest::Peer,
                    Some(e) => Dest::Family(eval_int(e, d)?),
                },
            ),
            _ => (None, arg(3)?, Dest::Connected),
        };
        let n = match &iov {
            Some(lens) => lens.iter().sum::<usize>() as i64,
            None => eval_int(s.args.get(2).ok_or("missing length")?, d)?,
        };
        if !(0..=MAX_IO).contains(&n) {
            return Err(format!("bad length {n} (0 to {MAX_IO} bytes)").into());
        }
        let null = iov.is_none() && null_buffer(s.args.get(1), d)?;
        match dest {
            Dest::Connected => {}
            Dest::Peer => self.start_connect(fd, false),
            Dest::Family(f) => self.start_connect(fd, f == i64::from(libc::AF_UNSPEC)),
        }
        // A Fast Open connect: data to the peer's address.
        let fastopen = flags & i64::from(libc::MSG_FASTOPEN) != 0 && dest == Dest::Peer;
        let call = SendCall {
            call: match s.name.as_str() {
                "write" => "write",
                "send" => "send",
                "sendto" => "sendto",
                "writev" => "writev",
                _ => "sendmsg",
            },
            fd,
            len: n as usize,
            iov,
            null,
            dest,
            flags: flags as i32 | libc::MSG_NOSIGNAL,
        };
        let send = move || call.run();
        if blocking {
            if fastopen {
                self.conn_fd = Some(fd);
            }
            return Ok(self.start_blocking(move || send() as i64));
        }
        let rc = send();
        let e = errno();
        let mut notes = Vec::new();
        if fastopen && (rc >= 0 || e == libc::EINPROGRESS) {
            notes = self.connected(fd);
        }
        Ok(SysResult::Returned {
            ret: rc as i64,
            errno: if rc < 0 { e } else { 0 },
            notes,
            problems: Vec::new(),
        })
    }

    fn sys_recv(
        &mut self,
        s: &Syscall,
        d: &BTreeMap<String, String>,
        blocking: bool,
    ) -> CallResult<SysResult> {
        let fd = self.live_fd(s.args.first())?;
        let n = match s.name.as_str() {
            "readv" => iov_lens(s.args.get(1), d)?.iter().sum::<usize>() as i64,
            _ => eval_int(s.args.get(2).ok_or("missing length")?, d)?,
        }
        .clamp(0, MAX_IO);
        let null = s.name != "readv" && null_buffer(s.args.get(1), d)?;
        // The script's flags (`recv`/`recvfrom`'s fourth argument). A blocking socket with
        // nothing to read would hang, so a read without `...` never waits (packetdrill's script
        // would be written with `...` then).
        let asked = match s.name.as_str() {
            "recv" | "recvfrom" => s
                .args
                .get(3)
                .map(|e| eval_int(e, d))
                .transpose()?
                .unwrap_or(0),
            _ => 0,
        };
        let asked = i32::try_from(asked).map_err(|_| format!("bad flags {asked}"))?;
        let flags = asked | if blocking { 0 } else { libc::MSG_DONTWAIT };
        let read = move || -> i64 {
            let mut buf = vec![0u8; n as usize];
            let p = if null {
                std::ptr::null_mut()
            } else {
                buf.as_mut_ptr() as *mut libc::c_void
            };
            // SAFETY: the buffer is valid for n bytes (or null: the kernel's EFAULT).
            unsafe { libc::recv(fd, p, buf.len(), flags) as i64 }
        };
        if blocking {
            return Ok(self.start_blocking(read));
        }
        Ok(ret(read()))
    }

    fn sys_close(&mut self, s: &Syscall) -> CallResult<SysResult> {
        let fd = self.take_fd(s.args.first())?;
        self.opened.remove(&fd);
        if self.conn_fd == Some(fd) {
            // Keep reading tcp_info of the closed connection? It is gone; packetdrill's
            // socket under test stays, but its fd is invalid.
            self.conn_fd = None;
        }
        // SAFETY: closing an fd this run owns.
        Ok(ret(unsafe { libc::close(fd) } as i64))
    }

    fn sys_shutdown(&mut self, s: &Syscall, d: &BTreeMap<String, String>) -> CallResult<SysResult> {
        let fd = self.live_fd(s.args.first())?;
        let how = eval_int(s.args.get(1).ok_or("missing how")?, d)?;
        // SAFETY: plain syscall.
        Ok(ret(unsafe { libc::shutdown(fd, how as i32) } as i64))
    }

    fn sys_fcntl(&mut self, s: &Syscall, d: &BTreeMap<String, String>) -> CallResult<SysResult> {
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

    fn sys_ioctl(&mut self, s: &Syscall, d: &BTreeMap<String, String>) -> CallResult<SysResult> {
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

    fn sys_poll(&mut self, s: &Syscall, d: &BTreeMap<String, String>) -> CallResult<SysResult> {
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
        assert!(matches!(
            c_int(&Expr::Int(4_294_968_296), &d, "level"),
            Err(CallError::Fail(m)) if m.contains("does not fit a C int")
        ));
        assert!(
            matches!(
                eval_int(&Expr::Word("SO_NOT_A_THING".into()), &d),
                Err(CallError::Unsupported(m)) if m.contains("SO_NOT_A_THING")
            ),
            "a symbol trc does not know is unsupported, not a failure"
        );
        // iovec lengths a script can write that no buffer can have: an error, never an
        // overflowed sum or an allocation of 2^63 bytes.
        let iov = |lens: &[i64]| {
            Expr::Array(
                lens.iter()
                    .map(|&n| {
                        Expr::Struct(vec![trc_pkt::ast::StructField {
                            name: None,
                            args: None,
                            value: Expr::Int(n),
                        }])
                    })
                    .collect(),
            )
        };
        assert_eq!(iov_lens(Some(&iov(&[100, 200])), &d), Ok(vec![100, 200]));
        assert!(iov_lens(Some(&iov(&[i64::MAX, i64::MAX, 2])), &d).is_err());
        assert!(iov_lens(Some(&iov(&[-1])), &d).is_err());
        assert!(iov_lens(Some(&iov(&[MAX_IO, 1])), &d).is_err());
        assert!(opt_bytes(&Expr::Int(1 << 40), &d).is_err());
        assert_eq!(
            opt_bytes(&Expr::Int(1), &d).unwrap(),
            1i32.to_ne_bytes().to_vec()
        );
    }
}
