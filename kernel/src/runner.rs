//! Executes a parsed script against the kernel, packetdrill style, inside the
//! private namespace of the calling thread.

use std::collections::{HashMap, VecDeque};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use trc_pkt::ast::{self, Direction, Expr, PyStmt, Script, StatementKind, Time, TimePoint};

use crate::packet::{self, Segment, WireOption};
use crate::report::*;
use crate::sys;
use crate::tcpinfo::{self, TcpInfoRaw};
use crate::RunOptions;

/// Port the script's listening socket is bound to.
const BIND_PORT: u16 = 8080;
/// How long past its due time (plus tolerance) an expected outbound packet is waited for.
const OUTBOUND_GRACE: Duration = Duration::from_millis(1000);

struct Captured {
    at: Instant,
    seg: Segment,
}

/// Reads the tun device in a helper thread and timestamps every frame.
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
                let mut buf = vec![0u8; 65600];
                while !stop2.load(Ordering::Relaxed) {
                    let mut pfd = libc::pollfd { fd: tun, events: libc::POLLIN, revents: 0 };
                    // SAFETY: one valid pollfd.
                    let n = unsafe { libc::poll(&mut pfd, 1, 5) };
                    if n <= 0 {
                        continue;
                    }
                    loop {
                        // SAFETY: buf is valid for its length; the fd outlives this thread (joined on drop).
                        let r = unsafe { libc::read(tun, buf.as_mut_ptr() as *mut libc::c_void, buf.len()) };
                        if r <= 0 {
                            break;
                        }
                        let now = Instant::now();
                        if tx.send((now, buf[..r as usize].to_vec())).is_err() {
                            return;
                        }
                    }
                }
            })
            .expect("spawn tun reader thread");
        Sniffer { rx, stop, handle: Some(handle) }
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

/// Per-connection state that maps between script and live sequence/TS spaces.
#[derive(Default)]
struct Conn {
    remote_port: u16,
    /// Script's remote ISN (we inject it unchanged, so live == script).
    script_local_isn: Option<u32>,
    live_local_isn: Option<u32>,
    ts_map: HashMap<u32, u32>,
    first_ts: Option<(u32, u32)>,
}

impl Conn {
    fn local_offset(&self) -> u32 {
        match (self.live_local_isn, self.script_local_isn) {
            (Some(l), Some(s)) => l.wrapping_sub(s),
            _ => 0,
        }
    }
}

pub(crate) struct Runner<'a> {
    opts: &'a RunOptions,
    tun: OwnedFd,
    sniffer: Sniffer,
    pending: VecDeque<Captured>,
    t0: Instant,
    clock: Timeline,
    conn: Conn,
    ip_id: u16,
    fds: HashMap<i64, RawFd>,
    conn_fd: Option<RawFd>,
    script_set_cc: Option<String>,
    cc_used: Option<String>,
    /// MIB counters when the run started (snapshots carry the undo counters' deltas).
    mib_before: std::collections::BTreeMap<String, i64>,
    pub(crate) report: RunReport,
}

fn us(d: Duration) -> i64 {
    d.as_micros() as i64
}

fn ms(v_us: i64) -> f64 {
    (v_us as f64) / 1000.0
}

impl<'a> Runner<'a> {
    pub(crate) fn new(opts: &'a RunOptions, file: String) -> std::io::Result<Runner<'a>> {
        let tun = sys::setup_tun(opts.tso)?;
        let sniffer = Sniffer::start(tun.as_raw_fd());
        let remote_port = 40000 + (std::process::id() % 20000) as u16;
        Ok(Runner {
            opts,
            tun,
            sniffer,
            pending: VecDeque::new(),
            t0: Instant::now(),
            clock: Timeline::default(),
            conn: Conn { remote_port, ..Default::default() },
            ip_id: 1,
            fds: HashMap::new(),
            conn_fd: None,
            script_set_cc: None,
            cc_used: None,
            mib_before: std::collections::BTreeMap::new(),
            report: RunReport::new(file),
        })
    }

    fn now_us(&self) -> i64 {
        us(self.t0.elapsed())
    }

    fn push(&mut self, r: LineResult) {
        if self.opts.verbose {
            eprintln!("{}", r.render(&self.report.file));
        }
        self.report.lines.push(r);
    }

    /// Sleep until script time `t_us` (+ accumulated shift). Returns false if interrupted.
    fn wait_until(&mut self, t_us: i64) -> bool {
        let target = self.clock.due(t_us);
        loop {
            if sys::interrupted() {
                return false;
            }
            self.drain_sniffer();
            let now = self.now_us();
            let left = target - now;
            if left <= 0 {
                return true;
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

    fn accept_frame(&mut self, at: Instant, frame: Vec<u8>) {
        let t_ms = ms(us(at.saturating_duration_since(self.t0)));
        match packet::parse_ipv4_tcp(&frame) {
            Ok(seg) => {
                if seg.src == sys::LOCAL_IP && seg.dst == sys::REMOTE_IP && seg.sport == BIND_PORT && seg.dport == self.conn.remote_port {
                    self.pending.push_back(Captured { at, seg });
                } else {
                    self.report.notes.push(format!("{t_ms:.3} ms: ignored outbound TCP segment for another 4-tuple ({}:{} -> {}:{})", seg.src, seg.sport, seg.dst, seg.dport));
                }
            }
            Err(e) => self.report.notes.push(format!("{t_ms:.3} ms: ignored non-TCP/IPv4 frame ({} bytes): {e:?}", frame.len())),
        }
    }

    fn drain_sniffer(&mut self) {
        while let Ok((at, f)) = self.sniffer.rx.try_recv() {
            self.accept_frame(at, f);
        }
    }

    /// Next captured segment of our connection, waiting until `deadline`.
    fn next_outbound(&mut self, deadline: Instant) -> Option<Captured> {
        loop {
            if let Some(c) = self.pending.pop_front() {
                return Some(c);
            }
            if sys::interrupted() {
                return None;
            }
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            let wait = (deadline - now).min(Duration::from_millis(20));
            match self.sniffer.rx.recv_timeout(wait) {
                Ok((at, f)) => self.accept_frame(at, f),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return None,
            }
        }
    }

    fn snapshot(&mut self, line: u32) {
        if let Some(fd) = self.conn_fd {
            if let Ok(info) = sys::tcp_info(fd) {
                let t_ms = ms(self.now_us());
                let now = sys::read_mib();
                let counters = sys::UNDO_COUNTERS
                    .iter()
                    .map(|n| (n.to_string(), now.get(*n).copied().unwrap_or(0) - self.mib_before.get(*n).copied().unwrap_or(0)))
                    .collect();
                self.report.trace.push(TraceEvent::TcpInfo { t_ms, line, info: info.summary(), counters });
            }
        }
    }

    pub(crate) fn run(&mut self, script: &Script, script_dir: &Path) {
        let before = sys::read_mib();
        self.mib_before = before.clone();
        self.t0 = Instant::now();
        let mut started = false;
        for st in &script.statements {
            if sys::interrupted() {
                self.report.interrupted = true;
                break;
            }
            // Script time of this statement.
            let slot = self.clock.slot(st.time);
            if !started && st.time.is_some() {
                // Script time 0 is the first timed statement (leading untimed
                // setup such as defaults.sh does not count).
                started = true;
                self.t0 = Instant::now();
                self.clock.shift_us = 0;
            }
            let is_out = matches!(&st.kind, StatementKind::Packet(p) if p.direction == Direction::Out);
            if !is_out && !slot.any && !self.wait_until(slot.t_us) {
                self.report.interrupted = true;
                break;
            }
            match &st.kind {
                StatementKind::Packet(p) if p.direction == Direction::In => self.inbound(st.line, st.col, slot.t_us, p),
                StatementKind::Packet(p) => self.outbound(st.line, st.col, slot, p),
                StatementKind::Syscall(s) => {
                    self.syscall(st.line, st.col, s);
                    let now = self.now_us();
                    self.clock.finished(slot, now);
                }
                StatementKind::Shell(cmd) => {
                    self.shell(st.line, st.col, cmd, script_dir);
                    let now = self.now_us();
                    self.clock.finished(slot, now);
                }
                StatementKind::Python(stmts) => self.python(st.line, st.col, stmts),
            }
            self.snapshot(st.line);
        }
        // Segments the kernel sent that no script line consumed.
        std::thread::sleep(Duration::from_millis(2));
        self.drain_sniffer();
        while let Some(c) = self.pending.pop_front() {
            let (seq, ack) = self.to_script(&c.seg);
            let t_ms = ms(us(c.at.saturating_duration_since(self.t0)));
            let d = packet::describe(c.seg.flags, seq, c.seg.payload_len, c.seg.has(packet::ACK).then_some(ack), Some(c.seg.win), &c.seg.options);
            self.report.notes.push(format!("{t_ms:.3} ms: outbound segment not matched by any script line: {d}"));
            self.report.trace.push(TraceEvent::Outbound { t_ms, line: None, segment: TraceSegment::from_seg(&c.seg, seq, ack) });
        }
        let after = sys::read_mib();
        for name in sys::UNDO_COUNTERS {
            let d = after.get(*name).copied().unwrap_or(0) - before.get(*name).copied().unwrap_or(0);
            self.report.undo_counters.insert(name.to_string(), d);
        }
        self.report.congestion_control = self.cc_used.clone();
        self.report.duration_ms = ms(self.now_us());
        // Abortive close of every script socket: nothing lingers in FIN_WAIT.
        let mut fds: Vec<RawFd> = self.fds.values().copied().collect();
        fds.sort();
        fds.dedup();
        for fd in fds {
            sys::abort_close(fd);
        }
        self.fds.clear();
        self.conn_fd = None;
        let _ = self.tun.as_raw_fd();
    }

    // ---- packets --------------------------------------------------------------

    fn to_script(&self, seg: &Segment) -> (u32, u32) {
        (seg.seq.wrapping_sub(self.conn.local_offset()), seg.ack)
    }

    fn inbound(&mut self, line: u32, col: u32, t_us: i64, p: &ast::Packet) {
        let text = describe_script_packet(p);
        let flags = flag_bits(&p.flags);
        let off = self.conn.local_offset();
        let mut options = Vec::new();
        let mut problem = None;
        if let Some(ast::TcpOptions::List(list)) = &p.options {
            for o in list {
                options.push(match o {
                    ast::TcpOption::Mss(v) => WireOption::Mss { mss: *v },
                    ast::TcpOption::SackOk => WireOption::SackOk,
                    ast::TcpOption::Nop => WireOption::Nop,
                    ast::TcpOption::Eol => WireOption::Eol,
                    ast::TcpOption::WScale(s) => WireOption::WScale { shift: *s },
                    ast::TcpOption::Sack(b) => WireOption::Sack { blocks: b.iter().map(|(l, r)| (l.wrapping_add(off), r.wrapping_add(off))).collect() },
                    ast::TcpOption::Timestamp { val, ecr } => {
                        let live_ecr = if flags & packet::ACK != 0 {
                            if let Some(v) = self.conn.ts_map.get(ecr) {
                                *v
                            } else if let Some((fs, fl)) = self.conn.first_ts {
                                ecr.wrapping_sub(fs).wrapping_add(fl)
                            } else {
                                *ecr
                            }
                        } else {
                            *ecr
                        };
                        WireOption::Timestamp { val: *val, ecr: live_ecr }
                    }
                });
            }
        } else if let Some(ast::TcpOptions::Any) = &p.options {
            problem = Some("`<...>` options are not allowed on inbound packets".to_string());
        }
        let win = p.win.unwrap_or(65535);
        let seg = Segment {
            src: sys::REMOTE_IP,
            dst: sys::LOCAL_IP,
            sport: self.conn.remote_port,
            dport: BIND_PORT,
            seq: p.seq,
            ack: if flags & packet::ACK != 0 { p.ack.unwrap_or(0).wrapping_add(off) } else { p.ack.unwrap_or(0) },
            flags,
            win: win.min(65535) as u16,
            urg_ptr: p.urg.unwrap_or(0) as u16,
            tos: ecn_bits(p.ecn),
            options,
            payload_len: p.len as usize,
        };
        if problem.is_none() && win > 65535 {
            problem = Some(format!("window {win} does not fit in 16 bits"));
        }
        let frame = match (problem, packet::build_ipv4_tcp(&seg, self.ip_id)) {
            (Some(m), _) | (None, Err(m)) => {
                self.push(LineResult::fail(line, col, LineKind::PacketIn, text, m));
                return;
            }
            (None, Ok(f)) => f,
        };
        self.ip_id = self.ip_id.wrapping_add(1);
        let now = self.now_us();
        // SAFETY: frame is a valid buffer; tun fd is open.
        let rc = unsafe { libc::write(self.tun.as_raw_fd(), frame.as_ptr() as *const libc::c_void, frame.len()) };
        let late_us = now - self.clock.due(t_us);
        let t_ms = ms(now);
        self.report.trace.push(TraceEvent::Inbound { t_ms, line, segment: TraceSegment::from_seg(&seg, p.seq, p.ack.unwrap_or(0)) });
        if rc != frame.len() as isize {
            let e = std::io::Error::last_os_error();
            self.push(LineResult::fail(line, col, LineKind::PacketIn, text, format!("tun write failed: {e}")));
            return;
        }
        let mut r = LineResult::pass(line, col, LineKind::PacketIn, text);
        r.time_ms = Some(t_ms);
        r.offset_ms = Some(ms(late_us));
        self.push(r);
    }

    fn outbound(&mut self, line: u32, col: u32, slot: Slot, p: &ast::Packet) {
        let text = describe_script_packet(p);
        let tol = us(self.opts.tolerance);
        let due_us = self.clock.due(slot.t_us);
        let end_us = slot.end_us.map(|e| self.clock.due(e)).unwrap_or(due_us);
        let any_time = slot.any;
        let deadline = self.t0 + Duration::from_micros((end_us + tol).max(0) as u64) + OUTBOUND_GRACE;
        let Some(first) = self.next_outbound(deadline) else {
            let msg = if sys::interrupted() { "interrupted".to_string() } else { format!("expected packet was not sent (waited until {:.1} ms)", ms(end_us + tol + us(OUTBOUND_GRACE))) };
            let mut r = LineResult::fail(line, col, LineKind::PacketOut, text.clone(), msg);
            r.expected = Some(text);
            self.push(r);
            return;
        };
        let want_flags = flag_bits(&p.flags);
        // SYN-ACK: learn the kernel's ISN.
        if want_flags & packet::SYN != 0 && first.seg.has(packet::SYN) && self.conn.live_local_isn.is_none() {
            self.conn.live_local_isn = Some(first.seg.seq);
            self.conn.script_local_isn = Some(p.seq);
        }
        // Aggregate consecutive segments (GSO/TSO split) up to the scripted length.
        let mut seg = first.seg.clone();
        let at = first.at;
        let mut parts = vec![first];
        while (seg.payload_len as u32) < p.len && seg.payload_len > 0 {
            let d = Instant::now() + Duration::from_millis(30);
            let Some(nx) = self.next_outbound(d) else { break };
            let contiguous = nx.seg.seq == seg.seq.wrapping_add(seg.payload_len as u32)
                && nx.seg.ack == seg.ack
                && !nx.seg.has(packet::SYN)
                && (seg.payload_len as u32 + nx.seg.payload_len as u32) <= p.len;
            if !contiguous {
                self.pending.push_front(nx);
                break;
            }
            seg.payload_len += nx.seg.payload_len;
            // PSH if any part carried it (GSO puts it on the last part only).
            seg.flags = (seg.flags & !packet::FIN) | (nx.seg.flags & (packet::PSH | packet::FIN));
            seg.win = nx.seg.win;
            parts.push(nx);
        }
        let (sseq, sack) = self.to_script(&seg);
        let t_ms = ms(us(at.saturating_duration_since(self.t0)));
        for c in &parts {
            let (q, a) = self.to_script(&c.seg);
            self.report.trace.push(TraceEvent::Outbound {
                t_ms: ms(us(c.at.saturating_duration_since(self.t0))),
                line: Some(line),
                segment: TraceSegment::from_seg(&c.seg, q, a),
            });
        }
        // Outbound options in script space.
        let script_opts: Vec<WireOption> = seg
            .options
            .iter()
            .map(|o| match o {
                WireOption::Sack { blocks } => WireOption::Sack { blocks: blocks.clone() },
                x => x.clone(),
            })
            .collect();
        let actual = packet::describe(seg.flags, sseq, seg.payload_len, seg.has(packet::ACK).then_some(sack), Some(seg.win), &script_opts);
        let mut errors = Vec::new();
        if seg.flags != want_flags {
            errors.push(format!("flags: expected {} actual {}", packet::flags_to_string(want_flags), packet::flags_to_string(seg.flags)));
        }
        if sseq != p.seq {
            errors.push(format!("seq: expected {} actual {}", p.seq, sseq));
        }
        if seg.payload_len as u32 != p.len {
            errors.push(format!("payload: expected {} bytes actual {}", p.len, seg.payload_len));
        }
        if let Some(a) = p.ack {
            if want_flags & packet::ACK != 0 && sack != a {
                errors.push(format!("ack: expected {a} actual {sack}"));
            }
        }
        if let Some(w) = p.win {
            if seg.win as u32 != w {
                errors.push(format!("win: expected {w} actual {}", seg.win));
            }
        }
        if let Some(e) = ecn_check(p.ecn, seg.tos) {
            errors.push(e);
        }
        // Options.
        match &p.options {
            Some(ast::TcpOptions::Any) => {}
            None => {
                if !seg.options.is_empty() {
                    errors.push(format!("options: expected none, actual <{}>", join_opts(&seg.options)));
                }
            }
            Some(ast::TcpOptions::List(want)) => {
                if let Err(e) = self.check_options(want, &seg.options) {
                    errors.push(e);
                }
            }
        }
        // Timing.
        let actual_us = us(at.saturating_duration_since(self.t0));
        let offset = actual_us - due_us;
        let timing_ok = any_time || (actual_us >= due_us - tol && actual_us <= end_us + tol);
        if !timing_ok {
            errors.push(format!("timing: expected at {:.3} ms (±{:.1} ms) actual {:.3} ms (offset {:+.3} ms)", ms(due_us), ms(tol), ms(actual_us), ms(offset)));
        }
        // Later relative times count from when the kernel really sent this (also after a
        // `~` range: an ACK scripted one RTT after a timer-driven send must reach the kernel
        // one RTT after the real send, whatever the timer's slack).
        self.clock.sent(slot, actual_us);
        let mut r = if errors.is_empty() {
            LineResult::pass(line, col, LineKind::PacketOut, text.clone())
        } else {
            LineResult::fail(line, col, LineKind::PacketOut, text.clone(), errors.join("; "))
        };
        r.expected = Some(text);
        r.actual = Some(actual);
        r.time_ms = Some(t_ms);
        r.offset_ms = Some(ms(offset));
        if parts.len() > 1 {
            r.notes.push(format!("aggregated {} segments", parts.len()));
        }
        self.report.offsets_ms.push(ms(offset));
        self.push(r);
    }

    fn check_options(&mut self, want: &[ast::TcpOption], got: &[WireOption]) -> Result<(), String> {
        let shown = || format!("options: expected <{}> actual <{}>", want.iter().map(script_opt_str).collect::<Vec<_>>().join(","), join_opts(got));
        if want.len() != got.len() {
            return Err(shown());
        }
        for (w, g) in want.iter().zip(got) {
            let ok = match (w, g) {
                (ast::TcpOption::Nop, WireOption::Nop) => true,
                (ast::TcpOption::Eol, WireOption::Eol) => true,
                (ast::TcpOption::SackOk, WireOption::SackOk) => true,
                (ast::TcpOption::Mss(a), WireOption::Mss { mss }) => a == mss,
                (ast::TcpOption::WScale(a), WireOption::WScale { shift }) => a == shift,
                (ast::TcpOption::Sack(a), WireOption::Sack { blocks }) => a == blocks,
                (ast::TcpOption::Timestamp { val, .. }, WireOption::Timestamp { val: lv, .. }) => {
                    // As packetdrill: remember script TS val -> live TS val for
                    // mapping later inbound TS ecr values; the value itself is
                    // not checked (its tick rate is the kernel's business).
                    self.conn.ts_map.insert(*val, *lv);
                    if self.conn.first_ts.is_none() {
                        self.conn.first_ts = Some((*val, *lv));
                    }
                    true
                }
                _ => false,
            };
            if !ok {
                return Err(shown());
            }
        }
        Ok(())
    }

    // ---- shell ----------------------------------------------------------------

    fn shell(&mut self, line: u32, col: u32, cmd: &str, dir: &Path) {
        let text = format!("`{}`", cmd.trim());
        let first = cmd.split_whitespace().next().unwrap_or("");
        let mut r = if first.ends_with("defaults.sh") && !dir.join(first).exists() && !Path::new(first).is_absolute() {
            let errs = apply_builtin_defaults();
            let mut r = LineResult::pass(line, col, LineKind::Shell, text);
            r.notes.push("built-in equivalent of packetdrill's common/defaults.sh".into());
            r.notes.extend(errs);
            r
        } else {
            match std::process::Command::new("sh").arg("-c").arg(cmd).current_dir(dir).stdin(std::process::Stdio::null()).output() {
                Ok(out) => {
                    let mut r = if out.status.success() {
                        LineResult::pass(line, col, LineKind::Shell, text)
                    } else {
                        LineResult::fail(line, col, LineKind::Shell, text, format!("command failed: {}", out.status))
                    };
                    let so = String::from_utf8_lossy(&out.stdout).trim_end().to_string();
                    let se = String::from_utf8_lossy(&out.stderr).trim_end().to_string();
                    if !so.is_empty() {
                        r.output = Some(so);
                    }
                    if !se.is_empty() {
                        r.notes.push(format!("stderr: {se}"));
                    }
                    r
                }
                Err(e) => LineResult::fail(line, col, LineKind::Shell, text, format!("cannot run sh: {e}")),
            }
        };
        // Command-line overrides win over whatever the script configured.
        apply_overrides(self.opts, &mut r.notes);
        self.push(r);
    }

    // ---- python-ish tcp_info blocks ---------------------------------------------

    fn python(&mut self, line: u32, col: u32, stmts: &[PyStmt]) {
        let info: Result<TcpInfoRaw, String> = match self.conn_fd {
            Some(fd) => sys::tcp_info(fd).map_err(|e| e.to_string()),
            None => Err("no accepted connection to read tcp_info from".into()),
        };
        for s in stmts {
            match s {
                PyStmt::Assert { field, op, value, .. } => {
                    let text = format!("assert {field} {} {}", op.as_str(), py_value_str(value));
                    let want = match value {
                        ast::PyValue::Int(i) => Some(*i),
                        ast::PyValue::Name(n) => tcpinfo::symbol_value(n),
                    };
                    let r = match (&info, want) {
                        (Err(e), _) => LineResult::fail(line, col, LineKind::Assert, text, e.clone()),
                        (_, None) => LineResult::fail(line, col, LineKind::Assert, text, format!("unknown constant {}", py_value_str(value))),
                        (Ok(i), Some(w)) => match i.get(field) {
                            None => LineResult::fail(line, col, LineKind::Assert, text, format!("unknown tcp_info field {field}")),
                            Some(v) => {
                                let mut r = if op.eval(v, w) {
                                    LineResult::pass(line, col, LineKind::Assert, text)
                                } else {
                                    LineResult::fail(line, col, LineKind::Assert, text, format!("{field} is {}", tcpinfo::format_value(field, v)))
                                };
                                r.expected = Some(format!("{} {}", op.as_str(), tcpinfo::format_value(field, w)));
                                r.actual = Some(tcpinfo::format_value(field, v));
                                r.tcp_info = Some(i.summary());
                                r
                            }
                        },
                    };
                    self.push(r);
                }
                PyStmt::Print(field) => {
                    let text = format!("print({field})");
                    let r = match &info {
                        Err(e) => LineResult::fail(line, col, LineKind::Print, text, e.clone()),
                        Ok(i) => match i.get(field) {
                            None => LineResult::fail(line, col, LineKind::Print, text, format!("unknown tcp_info field {field}")),
                            Some(v) => {
                                let mut r = LineResult::pass(line, col, LineKind::Print, text);
                                r.actual = Some(tcpinfo::format_value(field, v));
                                r.tcp_info = Some(i.summary());
                                r
                            }
                        },
                    };
                    self.push(r);
                }
                PyStmt::Other(code) => {
                    let mut r = LineResult::pass(line, col, LineKind::Python, code.clone());
                    r.status = Status::Skipped;
                    r.notes.push("python statement not evaluated (only assert/print of tcpi_* are supported)".into());
                    self.push(r);
                }
            }
        }
    }

    // ---- syscalls ----------------------------------------------------------------

    fn fd_arg(&self, e: Option<&Expr>) -> Result<RawFd, String> {
        match e {
            Some(Expr::Int(n)) => self.fds.get(n).copied().ok_or_else(|| format!("fd {n} is not open in this script")),
            other => Err(format!("expected an fd number, got {other:?}")),
        }
    }

    fn syscall(&mut self, line: u32, col: u32, s: &ast::Syscall) {
        let text = describe_syscall(s);
        let res = self.do_syscall(s);
        let r = match res {
            Err(msg) => LineResult::fail(line, col, LineKind::Syscall, text, msg),
            Ok((ret, errno, extra)) => {
                let actual = if ret < 0 { format!("{ret} {}", sys::errno_name(errno)) } else { ret.to_string() };
                let mut problems = extra.problems;
                match &s.result {
                    Expr::Ellipsis => {}
                    Expr::Int(want) => {
                        let fd_call = matches!(s.name.as_str(), "socket" | "accept" | "accept4");
                        if fd_call && *want >= 0 && ret >= 0 {
                            // The script's fd number is an alias for the real one.
                        } else if ret != *want {
                            problems.push(format!("returned {actual}, expected {want}"));
                        }
                        if let (Some(en), true) = (&s.errno, ret < 0) {
                            if sys::errno_name(errno) != en.name {
                                problems.push(format!("errno {}, expected {}", sys::errno_name(errno), en.name));
                            }
                        }
                    }
                    other => problems.push(format!("unsupported result expression {other:?}")),
                }
                if ret < 0 && !matches!(s.result, Expr::Int(_)) {
                    problems.push(format!("failed: {actual}"));
                }
                let mut r = if problems.is_empty() {
                    LineResult::pass(line, col, LineKind::Syscall, text)
                } else {
                    LineResult::fail(line, col, LineKind::Syscall, text, problems.join("; "))
                };
                r.actual = Some(actual);
                r.notes.extend(extra.notes);
                r
            }
        };
        self.push(r);
    }

    /// Returns (return value, errno, extra checks).
    fn do_syscall(&mut self, s: &ast::Syscall) -> Result<(i64, i32, Extra), String> {
        let a = &s.args;
        let mut extra = Extra::default();
        let errno = || std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
        match s.name.as_str() {
            "socket" => {
                let ty = match a.get(1) {
                    Some(e) => eval_int(e)?,
                    None => libc::SOCK_STREAM as i64,
                };
                let proto = match a.get(2) {
                    Some(Expr::Ellipsis) | None => 0,
                    Some(e) => eval_int(e)?,
                };
                if ty & 0xf != libc::SOCK_STREAM as i64 {
                    return Err("only SOCK_STREAM sockets are supported".into());
                }
                // SAFETY: plain syscall.
                let fd = unsafe { libc::socket(libc::AF_INET, ty as i32, proto as i32) };
                if fd < 0 {
                    return Ok((-1, errno(), extra));
                }
                if let Expr::Int(n) = s.result {
                    self.fds.insert(n, fd);
                }
                // cubic by default (the namespace sysctl cannot select it).
                if let Err(e) = sys::set_congestion(fd, &self.opts.cc) {
                    extra.problems.push(e.to_string());
                } else {
                    extra.notes.push(format!("TCP_CONGESTION set to {}", self.opts.cc));
                }
                Ok((fd as i64, 0, extra))
            }
            "setsockopt" | "getsockopt" => {
                let fd = self.fd_arg(a.first())?;
                let level = eval_int(a.get(1).ok_or("missing level")?)? as i32;
                let name = eval_int(a.get(2).ok_or("missing option name")?)? as i32;
                let val = a.get(3).ok_or("missing option value")?;
                if s.name == "setsockopt" {
                    let bytes = opt_bytes(val)?;
                    if level == libc::IPPROTO_TCP && name == libc::TCP_CONGESTION {
                        self.script_set_cc = Some(String::from_utf8_lossy(&bytes).trim_end_matches('\0').to_string());
                    }
                    // SAFETY: pointer/length describe `bytes`.
                    let rc = unsafe { libc::setsockopt(fd, level, name, bytes.as_ptr() as *const libc::c_void, bytes.len() as libc::socklen_t) };
                    Ok((rc as i64, if rc < 0 { errno() } else { 0 }, extra))
                } else {
                    let mut buf = [0u8; 256];
                    let mut len = buf.len() as libc::socklen_t;
                    // SAFETY: buffer/length are valid.
                    let rc = unsafe { libc::getsockopt(fd, level, name, buf.as_mut_ptr() as *mut libc::c_void, &mut len) };
                    if rc < 0 {
                        return Ok((-1, errno(), extra));
                    }
                    let got = &buf[..len as usize];
                    match val {
                        Expr::Ellipsis => {}
                        Expr::Str(want) => {
                            let g = String::from_utf8_lossy(got).trim_end_matches('\0').to_string();
                            if &g != want {
                                extra.problems.push(format!("value {g:?}, expected {want:?}"));
                            }
                        }
                        other => {
                            let want = opt_bytes(other)?;
                            if want.len() <= got.len() && got[..want.len()] != want[..] {
                                extra.problems.push(format!("value {:?}, expected {:?}", got, want));
                            }
                        }
                    }
                    Ok((0, 0, extra))
                }
            }
            "bind" => {
                let fd = self.fd_arg(a.first())?;
                let sa = sockaddr(sys::LOCAL_IP, BIND_PORT);
                // SAFETY: valid sockaddr_in.
                let rc = unsafe { libc::bind(fd, &sa as *const _ as *const libc::sockaddr, std::mem::size_of::<libc::sockaddr_in>() as u32) };
                Ok((rc as i64, if rc < 0 { errno() } else { 0 }, extra))
            }
            "listen" => {
                let fd = self.fd_arg(a.first())?;
                let backlog = a.get(1).map(eval_int).transpose()?.unwrap_or(1);
                // SAFETY: plain syscall.
                let rc = unsafe { libc::listen(fd, backlog as i32) };
                Ok((rc as i64, if rc < 0 { errno() } else { 0 }, extra))
            }
            "accept" | "accept4" => {
                let fd = self.fd_arg(a.first())?;
                let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
                // SAFETY: one valid pollfd.
                unsafe { libc::poll(&mut pfd, 1, 1000) };
                // SAFETY: plain syscall; accept4 with SOCK_NONBLOCK so we never hang.
                let c = unsafe { libc::accept4(fd, std::ptr::null_mut(), std::ptr::null_mut(), libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC) };
                if c < 0 {
                    return Ok((-1, errno(), extra));
                }
                // Back to blocking, as packetdrill's accept() result would be.
                // SAFETY: plain fcntl on our fd.
                unsafe {
                    let fl = libc::fcntl(c, libc::F_GETFL);
                    libc::fcntl(c, libc::F_SETFL, fl & !libc::O_NONBLOCK);
                }
                if let Expr::Int(n) = s.result {
                    self.fds.insert(n, c);
                }
                self.conn_fd = Some(c);
                match sys::get_congestion(c) {
                    Ok(cc) => {
                        let want = self.script_set_cc.clone().unwrap_or_else(|| self.opts.cc.clone());
                        if cc != want {
                            extra.problems.push(format!("connection uses congestion control {cc}, expected {want}"));
                        } else {
                            extra.notes.push(format!("connection congestion control: {cc}"));
                        }
                        self.cc_used = Some(cc);
                    }
                    Err(e) => extra.problems.push(e.to_string()),
                }
                Ok((c as i64, 0, extra))
            }
            "write" | "send" => {
                let fd = self.fd_arg(a.first())?;
                let n = eval_int(a.get(2).ok_or("missing length")?)?;
                if !(0..=64 << 20).contains(&n) {
                    return Err(format!("bad length {n}"));
                }
                let buf = vec![0u8; n as usize];
                let flags = if s.name == "send" { a.get(3).map(eval_int).transpose()?.unwrap_or(0) as i32 } else { 0 };
                // SAFETY: buffer valid for n bytes.
                let rc = unsafe { libc::send(fd, buf.as_ptr() as *const libc::c_void, buf.len(), flags | libc::MSG_NOSIGNAL) };
                Ok((rc as i64, if rc < 0 { errno() } else { 0 }, extra))
            }
            "read" | "recv" => {
                let fd = self.fd_arg(a.first())?;
                let n = eval_int(a.get(2).ok_or("missing length")?)?.clamp(0, 16 << 20);
                let mut buf = vec![0u8; n as usize];
                // SAFETY: buffer valid for n bytes.
                let rc = unsafe { libc::recv(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len(), libc::MSG_DONTWAIT) };
                Ok((rc as i64, if rc < 0 { errno() } else { 0 }, extra))
            }
            "shutdown" => {
                let fd = self.fd_arg(a.first())?;
                let how = eval_int(a.get(1).ok_or("missing how")?)?;
                // SAFETY: plain syscall.
                let rc = unsafe { libc::shutdown(fd, how as i32) };
                Ok((rc as i64, if rc < 0 { errno() } else { 0 }, extra))
            }
            "close" => {
                let Some(Expr::Int(n)) = a.first() else { return Err("close needs an fd number".into()) };
                let fd = self.fds.remove(n).ok_or_else(|| format!("fd {n} is not open in this script"))?;
                if self.conn_fd == Some(fd) {
                    self.conn_fd = None;
                }
                // SAFETY: closing an fd we own.
                let rc = unsafe { libc::close(fd) };
                Ok((rc as i64, if rc < 0 { errno() } else { 0 }, extra))
            }
            other => Err(format!("unsupported syscall {other}()")),
        }
    }
}

#[derive(Default)]
struct Extra {
    problems: Vec<String>,
    notes: Vec<String>,
}

fn point(p: TimePoint, prev: i64) -> i64 {
    match p {
        TimePoint::Absolute(v) => v,
        TimePoint::Relative(v) => prev + v,
    }
}

/// Where a statement sits in script time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Slot {
    /// Script time of the statement (for a `~` range, its start), µs.
    t_us: i64,
    /// Script time of the end of a `~` range.
    end_us: Option<i64>,
    /// `*` or no time at all: not waited for, not timing-checked.
    any: bool,
}

/// Script time → the run's clock (µs since the first timed statement).
///
/// Relative times follow packetdrill (`adjust_relative_event_times` in its `run.c`): an
/// event's relative time counts from the moment the previous event really completed, except
/// that an inbound packet after an inbound packet keeps the script's spacing. The runner keeps
/// that as one accumulated `shift_us` added to script times:
/// - an outbound line moves it by how far the captured segment was from the line's script time
///   (for a `~` range, from the range's *start*; for `*`, only forward), so the next relative
///   time counts from the real send;
/// - a syscall or shell line that finished more than 1 ms late moves it by its lateness;
/// - an inbound packet does not move it (the runner injects it at its due time).
#[derive(Debug, Default)]
pub(crate) struct Timeline {
    /// Script time of the previous statement.
    prev_us: i64,
    /// Run time minus script time.
    shift_us: i64,
}

impl Timeline {
    /// The next statement's script time; relative times count from the previous statement.
    pub(crate) fn slot(&mut self, time: Option<Time>) -> Slot {
        let prev = self.prev_us;
        let slot = match time {
            None | Some(Time::Any) => Slot { t_us: prev, end_us: None, any: true },
            Some(Time::Absolute(v)) => Slot { t_us: v, end_us: None, any: false },
            Some(Time::Relative(v)) => Slot { t_us: prev + v, end_us: None, any: false },
            Some(Time::Range { start, end }) => Slot { t_us: point(start, prev), end_us: Some(point(end, prev)), any: false },
        };
        self.prev_us = slot.t_us;
        slot
    }

    /// Run time at which script time `t_us` is due.
    pub(crate) fn due(&self, t_us: i64) -> i64 {
        t_us + self.shift_us
    }

    /// The outbound line `slot` was matched by a segment captured at run time `actual_us`.
    pub(crate) fn sent(&mut self, slot: Slot, actual_us: i64) {
        let offset = actual_us - self.due(slot.t_us);
        self.shift_us += if slot.any { offset.max(0) } else { offset };
    }

    /// A syscall or shell line of `slot` finished at run time `now_us`: a slow one delays
    /// everything after it (beyond 1 ms of slack).
    pub(crate) fn finished(&mut self, slot: Slot, now_us: i64) {
        if slot.any {
            return;
        }
        let late = now_us - self.due(slot.t_us);
        if late > 1000 {
            self.shift_us += late;
        }
    }
}

fn sockaddr(ip: std::net::Ipv4Addr, port: u16) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes(ip.octets()) },
        sin_zero: [0; 8],
    }
}

pub(crate) fn flag_bits(f: &ast::TcpFlags) -> u8 {
    let mut b = 0;
    for (on, bit) in [(f.syn, packet::SYN), (f.fin, packet::FIN), (f.rst, packet::RST), (f.psh, packet::PSH), (f.ack, packet::ACK), (f.urg, packet::URG), (f.ece, packet::ECE), (f.cwr, packet::CWR)] {
        if on {
            b |= bit;
        }
    }
    b
}

fn ecn_bits(e: Option<ast::Ecn>) -> u8 {
    match e {
        None | Some(ast::Ecn::NoEcn) => 0,
        Some(ast::Ecn::Ect1) => 1,
        Some(ast::Ecn::Ect0) | Some(ast::Ecn::Ect01) => 2,
        Some(ast::Ecn::Ce) => 3,
    }
}

fn ecn_check(e: Option<ast::Ecn>, tos: u8) -> Option<String> {
    let got = tos & 3;
    let ok = match e {
        None => return None,
        Some(ast::Ecn::NoEcn) => got == 0,
        Some(ast::Ecn::Ect1) => got == 1,
        Some(ast::Ecn::Ect0) => got == 2,
        Some(ast::Ecn::Ect01) => got == 1 || got == 2,
        Some(ast::Ecn::Ce) => got == 3,
    };
    (!ok).then(|| format!("ip ecn: expected {e:?} actual {got}"))
}

fn join_opts(o: &[WireOption]) -> String {
    o.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(",")
}

fn script_opt_str(o: &ast::TcpOption) -> String {
    match o {
        ast::TcpOption::Mss(v) => format!("mss {v}"),
        ast::TcpOption::SackOk => "sackOK".into(),
        ast::TcpOption::Nop => "nop".into(),
        ast::TcpOption::Eol => "eol".into(),
        ast::TcpOption::WScale(s) => format!("wscale {s}"),
        ast::TcpOption::Timestamp { val, ecr } => format!("TS val {val} ecr {ecr}"),
        ast::TcpOption::Sack(b) => {
            let mut s = "sack".to_string();
            for (l, r) in b {
                s.push_str(&format!(" {l}:{r}"));
            }
            s
        }
    }
}

pub(crate) fn describe_script_packet(p: &ast::Packet) -> String {
    let dir = if p.direction == Direction::In { "<" } else { ">" };
    let mut s = format!("{dir} {} {}:{}({})", packet::flags_to_string(flag_bits(&p.flags)), p.seq, p.end_seq, p.len);
    if let Some(a) = p.ack {
        s.push_str(&format!(" ack {a}"));
    }
    if let Some(w) = p.win {
        s.push_str(&format!(" win {w}"));
    }
    match &p.options {
        None => {}
        Some(ast::TcpOptions::Any) => s.push_str(" <...>"),
        Some(ast::TcpOptions::List(l)) => s.push_str(&format!(" <{}>", l.iter().map(script_opt_str).collect::<Vec<_>>().join(","))),
    }
    s
}

fn expr_str(e: &Expr) -> String {
    match e {
        Expr::Ellipsis => "...".into(),
        Expr::Int(i) => i.to_string(),
        Expr::Word(w) => w.clone(),
        Expr::Str(s) => format!("{s:?}"),
        Expr::BitOr(v) => v.iter().map(expr_str).collect::<Vec<_>>().join("|"),
        Expr::Array(v) => format!("[{}]", v.iter().map(expr_str).collect::<Vec<_>>().join(", ")),
        Expr::Struct(f) => format!(
            "{{{}}}",
            f.iter()
                .map(|x| match &x.name {
                    Some(n) => format!("{n}={}", expr_str(&x.value)),
                    None => expr_str(&x.value),
                })
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Expr::Call { name, args } => format!("{name}({})", args.iter().map(expr_str).collect::<Vec<_>>().join(", ")),
    }
}

fn describe_syscall(s: &ast::Syscall) -> String {
    let mut t = format!("{}({}) = {}", s.name, s.args.iter().map(expr_str).collect::<Vec<_>>().join(", "), expr_str(&s.result));
    if let Some(e) = &s.errno {
        t.push(' ');
        t.push_str(&e.name);
    }
    t
}

fn py_value_str(v: &ast::PyValue) -> String {
    match v {
        ast::PyValue::Int(i) => i.to_string(),
        ast::PyValue::Name(n) => n.clone(),
    }
}

/// Integer value of a syscall argument expression.
pub(crate) fn eval_int(e: &Expr) -> Result<i64, String> {
    match e {
        Expr::Int(i) => Ok(*i),
        Expr::Word(w) => constant(w).ok_or_else(|| format!("unknown constant {w}")),
        Expr::BitOr(v) => v.iter().try_fold(0i64, |acc, x| Ok(acc | eval_int(x)?)),
        Expr::Array(v) if v.len() == 1 => eval_int(&v[0]),
        Expr::Call { name, args } if (name == "htons" || name == "htonl") && args.len() == 1 => eval_int(&args[0]),
        other => Err(format!("cannot evaluate {} as an integer", expr_str(other))),
    }
}

/// Bytes of a setsockopt value.
fn opt_bytes(e: &Expr) -> Result<Vec<u8>, String> {
    match e {
        Expr::Str(s) => Ok(s.as_bytes().to_vec()),
        Expr::Struct(fields) => {
            let mut b = Vec::new();
            for f in fields {
                b.extend_from_slice(&(eval_int(&f.value)? as i32).to_ne_bytes());
            }
            Ok(b)
        }
        other => Ok((eval_int(other)? as i32).to_ne_bytes().to_vec()),
    }
}

pub(crate) fn constant(w: &str) -> Option<i64> {
    Some(match w {
        "AF_INET" | "PF_INET" => libc::AF_INET as i64,
        "AF_INET6" | "PF_INET6" => libc::AF_INET6 as i64,
        "SOCK_STREAM" => libc::SOCK_STREAM as i64,
        "SOCK_NONBLOCK" => libc::SOCK_NONBLOCK as i64,
        "SOCK_CLOEXEC" => libc::SOCK_CLOEXEC as i64,
        "IPPROTO_TCP" | "SOL_TCP" => libc::IPPROTO_TCP as i64,
        "IPPROTO_IP" | "SOL_IP" => libc::IPPROTO_IP as i64,
        "SOL_SOCKET" => libc::SOL_SOCKET as i64,
        "SO_REUSEADDR" => libc::SO_REUSEADDR as i64,
        "SO_REUSEPORT" => libc::SO_REUSEPORT as i64,
        "SO_KEEPALIVE" => libc::SO_KEEPALIVE as i64,
        "SO_SNDBUF" => libc::SO_SNDBUF as i64,
        "SO_RCVBUF" => libc::SO_RCVBUF as i64,
        "SO_LINGER" => libc::SO_LINGER as i64,
        "SO_MAX_PACING_RATE" => 47,
        "TCP_NODELAY" => libc::TCP_NODELAY as i64,
        "TCP_MAXSEG" => libc::TCP_MAXSEG as i64,
        "TCP_CORK" => libc::TCP_CORK as i64,
        "TCP_CONGESTION" => libc::TCP_CONGESTION as i64,
        "TCP_INFO" => libc::TCP_INFO as i64,
        "TCP_USER_TIMEOUT" => libc::TCP_USER_TIMEOUT as i64,
        "TCP_NOTSENT_LOWAT" => 25,
        "SHUT_RD" => libc::SHUT_RD as i64,
        "SHUT_WR" => libc::SHUT_WR as i64,
        "SHUT_RDWR" => libc::SHUT_RDWR as i64,
        "MSG_DONTWAIT" => libc::MSG_DONTWAIT as i64,
        "MSG_MORE" => libc::MSG_MORE as i64,
        "O_NONBLOCK" => libc::O_NONBLOCK as i64,
        "O_RDWR" => libc::O_RDWR as i64,
        _ => return None,
    })
}

/// The namespace sysctls packetdrill's `gtests/net/common/defaults.sh` sets
/// (our own equivalent; the congestion-control sysctl is not writable in a
/// non-initial namespace for cubic, so the runner selects the algorithm per
/// socket instead). Returns notes about settings the kernel refused.
pub fn builtin_defaults() -> Vec<(&'static str, &'static str)> {
    vec![
        ("net.ipv4.tcp_rmem", "4096 540000 15728640"),
        ("net.ipv4.tcp_wmem", "4096 262144 4194304"),
        ("net.ipv4.tcp_timestamps", "1"),
        ("net.ipv4.tcp_syn_retries", "5"),
        ("net.ipv4.tcp_synack_retries", "5"),
        ("net.ipv4.tcp_frto", "2"),
        ("net.ipv4.tcp_sack", "1"),
        ("net.ipv4.tcp_dsack", "1"),
        ("net.ipv4.tcp_reordering", "3"),
        ("net.ipv4.tcp_slow_start_after_idle", "0"),
        ("net.ipv4.tcp_early_retrans", "4"),
        ("net.ipv4.tcp_recovery", "1"),
        ("net.ipv4.tcp_tso_win_divisor", "3"),
        ("net.ipv4.tcp_ecn", "0"),
        ("net.ipv4.tcp_pacing_ss_ratio", "200"),
        ("net.ipv4.tcp_pacing_ca_ratio", "120"),
        ("net.ipv4.tcp_notsent_lowat", "4294967295"),
        ("net.ipv4.tcp_fastopen", "460803"),
        ("net.ipv4.tcp_fastopen_key", "a1a1a1a1-b2b2b2b2-c3c3c3c3-d4d4d4d4"),
        ("net.ipv4.tcp_syncookies", "1"),
    ]
}

fn apply_builtin_defaults() -> Vec<String> {
    let mut notes = Vec::new();
    for (k, v) in builtin_defaults() {
        if let Err(e) = sys::write_sysctl(k, v) {
            notes.push(format!("not applied: {e}"));
        }
    }
    notes
}

pub(crate) fn apply_overrides(opts: &RunOptions, notes: &mut Vec<String>) {
    if let Some(s) = opts.sack {
        if let Err(e) = sys::write_sysctl("net.ipv4.tcp_sack", if s { "1" } else { "0" }) {
            notes.push(e.to_string());
        }
    }
    if let Some(t) = opts.timestamps {
        if let Err(e) = sys::write_sysctl("net.ipv4.tcp_timestamps", if t { "1" } else { "0" }) {
            notes.push(e.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(v: i64) -> Option<Time> {
        Some(Time::Relative(v))
    }
    /// Run time at which the next statement (at `time`) is due.
    fn next(c: &mut Timeline, time: Option<Time>) -> i64 {
        let s = c.slot(time);
        c.due(s.t_us)
    }
    fn range(a: i64, b: i64) -> Option<Time> {
        Some(Time::Range { start: TimePoint::Relative(a), end: TimePoint::Relative(b) })
    }

    #[test]
    fn relative_time_after_an_exact_outbound_counts_from_the_capture() {
        let mut c = Timeline::default();
        let out = c.slot(rel(100_000));
        c.sent(out, 100_700); // 0.7 ms late
        let ack = c.slot(rel(50_000));
        assert_eq!(c.due(ack.t_us), 150_700);
        let early = c.slot(rel(0));
        c.sent(early, 150_200); // captured before its due time: later times move back too
        assert_eq!(next(&mut c, rel(3_000)), 153_200);
    }

    #[test]
    fn relative_time_after_a_range_counts_from_the_real_send_not_the_range_start() {
        // A timer-driven retransmission scripted as +.3~+.305 fires 8 ms late (inside the
        // range + tolerance); the ACK scripted one RTT later must arrive one RTT after it.
        let mut c = Timeline::default();
        let rto = c.slot(range(300_000, 305_000));
        assert_eq!(rto, Slot { t_us: 300_000, end_us: Some(305_000), any: false });
        c.sent(rto, 308_000);
        let ack = c.slot(rel(50_000));
        assert_eq!(c.due(ack.t_us), 358_000);
        // Inside the range: still from the send, not from the start.
        let mut c = Timeline::default();
        let tlp = c.slot(range(100_000, 110_000));
        c.sent(tlp, 104_000);
        assert_eq!(next(&mut c, rel(3_000)), 107_000);
        // Early (the kernel's timer can also fire a little before the range start).
        let mut c = Timeline::default();
        let reo = c.slot(range(100_000, 105_000));
        c.sent(reo, 99_000);
        assert_eq!(next(&mut c, rel(3_000)), 102_000);
    }

    #[test]
    fn the_range_keeps_its_width_and_later_lines_are_checked_against_the_send() {
        let mut c = Timeline::default();
        let a = c.slot(rel(10_000));
        c.sent(a, 12_000);
        let r = c.slot(range(100_000, 105_000));
        // The window checked for the range line: [start, end] on the run clock.
        assert_eq!((c.due(r.t_us), c.due(r.end_us.unwrap())), (112_000, 117_000));
        c.sent(r, 121_000);
        // A second segment of the same burst (+0) is due at the first one's capture.
        let b = c.slot(rel(0));
        assert_eq!(c.due(b.t_us), 121_000);
    }

    #[test]
    fn inbound_packets_keep_the_script_spacing_and_any_time_only_moves_forward() {
        let mut c = Timeline::default();
        let i1 = c.slot(rel(50_000));
        let i2 = c.slot(rel(3_000));
        assert_eq!((c.due(i1.t_us), c.due(i2.t_us)), (50_000, 53_000));
        let any = c.slot(Some(Time::Any));
        assert!(any.any);
        c.sent(any, 40_000); // captured before: no move
        assert_eq!(next(&mut c, rel(0)), 53_000);
        let any = c.slot(None);
        c.sent(any, 60_000);
        assert_eq!(next(&mut c, rel(1_000)), 61_000);
    }

    #[test]
    fn slow_syscalls_shift_later_times_beyond_one_ms() {
        let mut c = Timeline::default();
        let w = c.slot(rel(0));
        c.finished(w, 800);
        assert_eq!(next(&mut c, rel(0)), 0);
        let w = c.slot(rel(0));
        c.finished(w, 5_000);
        assert_eq!(next(&mut c, rel(10_000)), 15_000);
        let abs = c.slot(Some(Time::Absolute(20_000)));
        assert_eq!(abs.t_us, 20_000);
    }
}
