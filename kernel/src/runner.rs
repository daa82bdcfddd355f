//! The kernel backend of the script engine (`trc_pkt::engine`): packets through a tun device
//! configured as packetdrill configures it, system calls on real sockets, shell lines confined
//! ([`crate::shell`]), `tcp_info` from the socket under test — all inside the private network
//! namespace of the calling thread. It also records the trace (every injected and captured
//! segment, tcp_info and the undo counters after each statement).

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::time::{Duration, Instant};

use trc_pkt::ast::{self, Expr, Syscall};
use trc_pkt::engine::{
    Backend, Captured, CodeValues, CodeValuesError, Halt, LivePacket, Next, Outcome1, SysCtx,
    SysResult, Unknown,
};

use crate::packet::{self, Segment};
use crate::report::*;
use crate::sys;
use crate::RunOptions;

use crate::calls::{CallError, FdError, SCRIPT_PORT};
use crate::capture::Capture;

/// A blocking call running on its own thread: (result, errno, when it returned).
type BlockingCall = std::thread::JoinHandle<(i64, i32, Instant)>;

/// The kernel backend.
pub(crate) struct KernelBackend<'a> {
    opts: &'a RunOptions,
    script_dir: &'a Path,
    tun: OwnedFd,
    capture: Capture,
    pending: VecDeque<(Instant, Segment)>,
    t0: Instant,
    /// The peer's port of a passive open (ours to choose: the namespace is private).
    remote_port: u16,
    /// The live 4-tuple of the socket under test, once known (local port, remote port).
    pub(crate) tuple: Option<(u16, u16)>,
    ip_id: u16,
    /// Script fd → live fd.
    pub(crate) fds: HashMap<i64, RawFd>,
    /// The socket under test (packetdrill's: the last `socket()`, or the `accept()`ed child).
    pub(crate) under_test: Option<RawFd>,
    /// The accepted or connected socket, for tcp_info.
    pub(crate) conn_fd: Option<RawFd>,
    /// A `listen()` on the socket under test: the next inbound packet opens a new connection,
    /// from a new remote port (packetdrill's `handle_listen_for_script_packet`: a new child
    /// socket with the next ephemeral port).
    pub(crate) listening: bool,
    /// The socket under test is in an active open whose SYN-ACK the script has not sent
    /// (packetdrill's `SOCKET_ACTIVE_CONNECTING`/`SOCKET_ACTIVE_SYN_SENT`): any SYN of ours to
    /// the peer's port is its, and its 4-tuple is learnt (again) from it.
    connecting: bool,
    /// Live sockets that are no longer new (packetdrill's `SOCKET_NEW`): connecting or connected
    /// (a connect, sendto or sendmsg with an address was made on them), listening or accepted.
    /// Only a new socket's connect starts an active open.
    pub(crate) opened: HashSet<RawFd>,
    pub(crate) blocking: Option<BlockingCall>,
    /// The script's fd for the result of the blocking `accept` in progress (bound when it
    /// returns, as a non-blocking accept binds it at once).
    pub(crate) blocking_accept: Option<i64>,
    cc_used: Option<String>,
    /// Live local ISN and remote ISN (for the trace's script-space numbers).
    local_isn: Option<u32>,
    remote_isn: Option<u32>,
    line: u32,
    mib: sys::MibReader,
    mib_before: Vec<i64>,
    /// The counters after each statement: (index of its `TcpInfo` trace event, raw values),
    /// named and turned into deltas at the end (cheap between packets).
    mib_after: Vec<(usize, Vec<i64>)>,
    /// `TcpInfo` events whose counters are not read yet: read once, right before the kernel
    /// can next move them (see [`KernelBackend::settle_counters`]).
    mib_pending: Vec<usize>,
    /// `NSTAT_HISTORY` for the script's `nstat` commands: this run's own file, so a baseline
    /// (`nstat -n`) never mixes with another namespace's counters through the shared default
    /// (`/tmp/.nstat.u0`).
    nstat_history: std::path::PathBuf,
    /// When the run's wall-clock limit passes, and the limit.
    deadline: Option<(Instant, Duration)>,
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
        let capture = Capture::start(tun.as_raw_fd());
        let mut mib = sys::MibReader::new();
        let mib_before = mib.read();
        let mut report = RunReport::new(file);
        if !capture.kernel_times() {
            report.notes.push(
                "outbound packets are timed when read from tun0 (this kernel has no packet sockets for the kernel's own times)".into(),
            );
        }
        Ok(KernelBackend {
            opts,
            script_dir,
            tun,
            capture,
            pending: VecDeque::new(),
            t0: Instant::now(),
            remote_port: 40000 + (std::process::id() % 20000) as u16,
            tuple: None,
            ip_id: 0,
            fds: HashMap::new(),
            under_test: None,
            conn_fd: None,
            listening: false,
            connecting: false,
            opened: HashSet::new(),
            blocking: None,
            blocking_accept: None,
            cc_used: None,
            local_isn: None,
            remote_isn: None,
            line: 0,
            mib_before,
            mib_after: Vec::new(),
            mib_pending: Vec::new(),
            mib,
            nstat_history: std::env::temp_dir().join(format!(
                "trc-nstat-{}-{:x}",
                std::process::id(),
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos())
                    .unwrap_or(0)
            )),
            deadline: opts.time_limit.map(|l| (Instant::now() + l, l)),
            report,
        })
    }

    /// Why the run must stop now: its wall-clock limit has passed.
    pub(crate) fn time_up(&self) -> Option<String> {
        let (at, limit) = self.deadline?;
        (Instant::now() >= at).then(|| {
            format!(
                "the run exceeded its wall-clock limit of {} s (--script-timeout)",
                limit.as_secs_f64()
            )
        })
    }

    fn at_us(&self, at: Instant) -> i64 {
        us(at.saturating_duration_since(self.t0))
    }

    /// Whether a captured segment belongs to the connection under test (packetdrill skips the
    /// others): the known 4-tuple (`find_socket_for_live_packet`), or, during an active open,
    /// a SYN to the peer's port (`find_connect_for_live_packet`).
    fn ours(&self, s: &Segment) -> bool {
        if s.src != sys::LOCAL_IP || s.dst != sys::REMOTE_IP {
            return false;
        }
        self.tuple == Some((s.sport, s.dport)) || (self.connecting && opening_syn(s))
    }

    fn accept_frame(&mut self, at: Instant, frame: Vec<u8>) {
        match packet::parse_ipv4_tcp(&frame) {
            Ok(seg) if self.ours(&seg) => self.pending.push_back((at, seg)),
            Ok(seg) => self.ignored(at, &seg),
            Err(_) => {}
        }
    }

    /// Notes a captured segment of another connection (packetdrill skips those too).
    fn ignored(&mut self, at: Instant, seg: &Segment) {
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

    /// A SYN captured later than `s` that opens another connection to the peer's port.
    fn later_syn(&mut self, s: &Segment) -> bool {
        self.drain();
        self.pending
            .iter()
            .any(|(_, o)| opening_syn(o) && (o.sport, o.dport) != (s.sport, s.dport))
    }

    /// A `socket()`: the new socket is the one under test, with no 4-tuple yet (packetdrill's
    /// `run_syscall_socket`; a live fd number may be one closed before).
    pub(crate) fn new_socket(&mut self, fd: RawFd) {
        self.under_test = Some(fd);
        self.opened.remove(&fd);
        self.tuple = None;
        self.connecting = false;
    }

    /// An accepted socket is the one under test.
    pub(crate) fn accepted(&mut self, fd: RawFd) {
        self.under_test = Some(fd);
        self.opened.insert(fd);
        self.connecting = false;
    }

    /// packetdrill's `run_syscall_connect`, for a connect, a sendto, or a sendmsg with
    /// `msg_name`: on a socket still new an active open starts (its 4-tuple is learnt from its
    /// SYN); on one that is not, nothing changes; an `AF_UNSPEC` address makes it new again.
    pub(crate) fn start_connect(&mut self, fd: RawFd, unspec: bool) {
        if unspec {
            self.opened.remove(&fd);
            return;
        }
        if !self.opened.insert(fd) {
            return;
        }
        self.tuple = None;
        self.remote_isn = None;
        self.connecting = true;
        self.listening = false;
    }

    fn drain(&mut self) {
        while let Some((at, f)) = self.capture.try_next() {
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
        if s.has(packet::SYN) {
            // A new ISN is a new connection's.
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

    /// After a statement: `tcp_info` now (one getsockopt), the MIB counters later. Reading the
    /// counter files costs the kernel about 50 us (it prints some 150 counters summed over the
    /// CPUs); read after every statement, that put a quarter of a millisecond between a step's
    /// ACK and the next, where packetdrill puts a few microseconds, and stretched the ACK trains
    /// HyStart measures (`hystart_update()`'s train detector) past what the script says.
    fn snapshot(&mut self) {
        let Some(fd) = self.conn_fd else { return };
        let Ok((info, _)) = sys::tcp_info(fd) else {
            return;
        };
        let t_ms = ms(self.at_us(Instant::now()));
        self.mib_pending.push(self.report.trace.len());
        self.report.trace.push(TraceEvent::TcpInfo {
            t_ms,
            line: self.line,
            info: info.summary(),
            counters: BTreeMap::new(),
        });
    }

    /// Reads the counters for the statements since the last read, before anything that can
    /// move them: an injection, a system call, a shell line, time passing (a timer may fire) or
    /// the end. Statements that only look (an outbound line whose packet is already captured, a
    /// `%{ }%` block) leave them where they were, so the values are those right after each
    /// statement, as if read then. Not quite always: what the kernel does on its own between a
    /// statement and the next read is counted with that statement (a blocking call's thread
    /// sending, a timer due within microseconds, or TSQ sending more when the capture's read
    /// frees the tun's packets, which `next_outbound` does before it settles), where a read
    /// right after the statement would have left it to the next one.
    fn settle_counters(&mut self) {
        if self.mib_pending.is_empty() {
            return;
        }
        let raw = self.mib.read();
        for i in std::mem::take(&mut self.mib_pending) {
            self.mib_after.push((i, raw.clone()));
        }
    }

    /// At the end: segments no line consumed (in the trace, and as notes), the counters, and
    /// every script socket closed abortively (nothing lingers).
    pub(crate) fn finish(&mut self) {
        self.settle_counters();
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
        let before = self.mib.named(&self.mib_before);
        for (i, raw) in std::mem::take(&mut self.mib_after) {
            let after = self.mib.named(&raw);
            if let Some(TraceEvent::TcpInfo { counters, .. }) = self.report.trace.get_mut(i) {
                *counters = sys::mib_delta(&before, &after);
            }
        }
        let now = self.mib.read();
        self.report.counters = sys::mib_delta(&before, &self.mib.named(&now));
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

    pub(crate) fn live_fd(&self, e: Option<&Expr>) -> Result<RawFd, FdError> {
        match e {
            Some(Expr::Int(n)) => self.fds.get(n).copied().ok_or(FdError::Unknown(*n)),
            other => Err(FdError::NotAnFd(
                other.map(trc_pkt::writer::write_expr).unwrap_or_default(),
            )),
        }
    }

    /// [`Self::live_fd`], and the script's fd number is closed: it names nothing from now on.
    pub(crate) fn take_fd(&mut self, e: Option<&Expr>) -> Result<RawFd, FdError> {
        let fd = self.live_fd(e)?;
        if let Some(Expr::Int(n)) = e {
            self.fds.remove(n);
        }
        Ok(fd)
    }

    /// The connection now exists (accepted or connected): record its congestion control.
    pub(crate) fn connected(&mut self, fd: RawFd) -> Vec<String> {
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

impl Backend for KernelBackend<'_> {
    fn now_us(&mut self) -> i64 {
        self.at_us(Instant::now())
    }

    fn start_clock(&mut self) {
        self.t0 = Instant::now();
    }

    fn wait_until(&mut self, t_us: i64) -> Result<(), Halt> {
        if t_us > self.now_us() {
            self.settle_counters();
        }
        loop {
            if sys::interrupted() {
                return Err(Halt::Interrupted);
            }
            if let Some(why) = self.time_up() {
                return Err(Halt::Stop(why));
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
        if std::mem::take(&mut self.listening) {
            // A new passive connection, from the next remote port (an earlier one may still
            // be open with the same 4-tuple otherwise).
            let port = self.remote_port;
            self.remote_port = if port >= 60999 { 40000 } else { port + 1 };
            self.tuple = Some((SCRIPT_PORT, port));
            self.remote_isn = None;
        }
        let (sport, dport) = match self.tuple {
            Some((l, r)) => (r, l),
            None => (self.remote_port, SCRIPT_PORT),
        };
        if p.flags & packet::SYN != 0 && self.remote_isn.is_none() {
            self.remote_isn = Some(p.seq);
        }
        if p.flags & (packet::SYN | packet::ACK) == packet::SYN | packet::ACK {
            // The peer's SYN-ACK: the active open is over (packetdrill's
            // `SOCKET_ACTIVE_SYN_ACKED`); only the learnt 4-tuple is the connection's now.
            self.connecting = false;
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
            Err(e) => return Ok(Outcome1::fail(e.to_string())),
        };
        self.settle_counters();
        let mut buf = vec![0u8; sys::VNET_HDR_LEN];
        buf.extend_from_slice(&frame);
        // The injection time: right before the write (which runs the kernel's receive path).
        let t_ms = ms(self.now_us());
        // SAFETY: buf is a valid buffer; the tun fd is open.
        let rc = unsafe {
            libc::write(
                self.tun.as_raw_fd(),
                buf.as_ptr() as *const libc::c_void,
                buf.len(),
            )
        };
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

    fn next_outbound(&mut self, deadline_us: i64, expect: &ast::Packet) -> Result<Next, Halt> {
        let deadline = self.t0 + Duration::from_micros(deadline_us.max(0) as u64);
        loop {
            if let Some((at, s)) = self.pending.pop_front() {
                // Captured for the previous connection before a new one (a Fast Open sendto, a
                // connect) reset the 4-tuple: not the one under test any more.
                if !self.ours(&s) {
                    self.ignored(at, &s);
                    continue;
                }
                if self.connecting && opening_syn(&s) {
                    // packetdrill sniffs on while a packet is short of the line's payload, and
                    // one of another 4-tuple discards those before it ("Discard old packets"):
                    // a SYN retransmitted by an earlier connection gives way to the new one's.
                    if (s.payload_len as u32) < expect.len && self.later_syn(&s) {
                        self.ignored(at, &s);
                        continue;
                    }
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
            if let Some(why) = self.time_up() {
                return Err(Halt::Stop(why));
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(Next::Timeout);
            }
            // Nothing captured yet: time passes while waiting (a timer may fire).
            self.drain();
            if !self.pending.is_empty() {
                continue;
            }
            self.settle_counters();
            match self
                .capture
                .next_within((deadline - now).min(Duration::from_millis(20)))
            {
                Ok((at, f)) => self.accept_frame(at, f),
                Err(false) => {}
                Err(true) => return Ok(Next::Timeout),
            }
        }
    }

    fn syscall(&mut self, s: &Syscall, cx: &SysCtx) -> Result<SysResult, Halt> {
        let d = cx.defines;
        let blocks = matches!(
            s.name.as_str(),
            "accept"
                | "accept4"
                | "connect"
                | "write"
                | "send"
                | "sendto"
                | "writev"
                | "sendmsg"
                | "read"
                | "recv"
                | "recvfrom"
                | "readv"
        );
        if cx.blocking && !blocks {
            return Err(Halt::Unsupported(format!(
                "a blocking {} call (`...` end time)",
                s.name
            )));
        }
        if cx.blocking && self.blocking.is_some() {
            return Err(Halt::Unsupported(
                "two blocking system calls in progress at once".into(),
            ));
        }
        self.settle_counters();
        let r = self.call(s, d, cx.blocking);
        if let Some(why) = self.time_up() {
            return Err(Halt::Stop(why));
        }
        match r {
            Ok(r) => Ok(r),
            Err(CallError::Unsupported(what)) => Err(Halt::Unsupported(what)),
            Err(CallError::Fail(m)) => Ok(SysResult::Other(Outcome1::fail(format!(
                "runtime error in {} call: {m}",
                s.name
            )))),
        }
    }

    fn blocking_result(&mut self) -> Option<(i64, i32, i64)> {
        if !self.blocking.as_ref()?.is_finished() {
            return None;
        }
        let (rc, e, at) = self.blocking.take()?.join().ok()?;
        if let Some(script_fd) = self.blocking_accept.take() {
            if rc >= 0 {
                let fd = rc as RawFd;
                self.fds.insert(script_fd, fd);
                self.accepted(fd);
                let notes = self.connected(fd);
                self.report.notes.extend(notes);
            }
        }
        Some((rc, e, self.at_us(at)))
    }

    fn shell(&mut self, cmd: &str, env: &[(String, String)]) -> Result<Outcome1, Halt> {
        if self.opts.no_shell {
            return Err(Halt::Stop("shell lines are refused (--no-shell)".into()));
        }
        self.settle_counters();
        let mut env = env.to_vec();
        if !env.iter().any(|(k, _)| k == "NSTAT_HISTORY") {
            env.push((
                "NSTAT_HISTORY".into(),
                self.nstat_history.display().to_string(),
            ));
        }
        let left = self.deadline.map_or(crate::shell::TIME_LIMIT, |(at, _)| {
            at.saturating_duration_since(Instant::now())
        });
        let mut o = match crate::shell::run(cmd, self.script_dir, &env, left) {
            Err(e) => Outcome1::fail(format!("cannot run /bin/sh: {e}")),
            Ok(out) if out.timed_out && self.time_up().is_some() => {
                return Err(Halt::Stop(self.time_up().unwrap_or_default()));
            }
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

    fn code_values(&mut self) -> Result<CodeValues, CodeValuesError> {
        let fd = self
            .conn_fd
            .or(self.under_test)
            .ok_or(CodeValuesError::NoSocket)?;
        let (info, len) = sys::tcp_info(fd)?;
        let (values, missing) = info.values(len);
        Ok(CodeValues { values, missing })
    }

    fn statement_begins(&mut self, line: u32) {
        self.line = line;
    }

    fn after_statement(&mut self, _line: u32) {
        self.snapshot();
    }

    fn statements_done(&mut self) {
        self.settle_counters();
    }

    fn interrupted(&self) -> bool {
        sys::interrupted()
    }

    fn time_up(&mut self) -> Option<String> {
        KernelBackend::time_up(self)
    }
}

/// A SYN without ACK to the peer's port: an active open's.
fn opening_syn(s: &Segment) -> bool {
    s.flags & (packet::SYN | packet::ACK) == packet::SYN && s.dport == SCRIPT_PORT
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
