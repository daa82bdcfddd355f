//! Script → model: drive the model's sender with a packetdrill script's inbound segments,
//! writes and elapsed time, and check its outbound segments and `tcpi_*` asserts line by line.
//!
//! Time follows the kernel runner (`trc kernel run`): relative times count from the previous
//! statement, and later times shift by how late (or early) an outbound segment really left, so
//! a script behaves the same against the model and against a kernel. The pending timer fires
//! when script time passes its deadline before an inbound segment, syscall or assert, or when
//! an outbound line waits for a segment that only the timer can send (within the tolerance).
//!
//! Anything the model does not cover is reported as out of scope with the line and the
//! reason; lines that make the rest of the script meaningless for the model (active open,
//! data from the peer, FIN/RST, an unsupported setting) stop the replay there.

use crate::driver::{Driver, Sent};
use serde::Serialize;
use std::collections::HashMap;
use trc_model::sender::ack::AckSeg;
use trc_model::{CcKind, Config, Profile};
use trc_pkt::ast::{Direction, Expr, Packet, PyStmt, PyValue, Script, Statement, StatementKind, TcpOption, TcpOptions, Time, TimePoint};

/// Verdict of one line (or one assert of a line).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Checked against the model: agrees.
    Pass,
    /// Checked against the model: disagrees.
    Fail,
    /// Not something the model can check or drive.
    OutOfScope,
    /// An input applied to the model (setup, inbound segment, write, model-only event).
    Applied,
}

#[derive(Clone, Debug, Serialize)]
pub struct LineReport {
    pub line: u32,
    pub col: u32,
    pub status: Status,
    pub text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actual: Option<String>,
    /// Why it failed / is out of scope, or what was applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Model time (ms after the first write) when the line was processed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_ms: Option<u32>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ReplayReport {
    pub file: String,
    pub profile: String,
    /// The configuration derived from the script (None before the connection existed).
    pub config: Option<Config>,
    pub sack: Option<bool>,
    pub lines: Vec<LineReport>,
    /// The replay stopped here (line, reason); later lines were not looked at.
    pub stopped: Option<(u32, String)>,
    /// Model transmissions no outbound line consumed.
    pub unmatched: Vec<String>,
    pub passed: usize,
    pub failed: usize,
    pub out_of_scope: usize,
}

impl ReplayReport {
    /// 0: at least one line checked and none failed; 1 otherwise.
    pub fn exit_code(&self) -> i32 {
        if self.failed == 0 && self.passed > 0 {
            0
        } else {
            1
        }
    }

    /// The first failing line.
    pub fn first_failure(&self) -> Option<&LineReport> {
        self.lines.iter().find(|l| l.status == Status::Fail)
    }

    /// Line-by-line text rendering.
    pub fn render(&self) -> String {
        use std::fmt::Write as _;
        let mut o = String::new();
        let _ = writeln!(o, "trc replay: {} on profile {}", self.file, self.profile);
        for l in &self.lines {
            let tag = match l.status {
                Status::Pass => "PASS ",
                Status::Fail => "FAIL ",
                Status::OutOfScope => "OUT  ",
                Status::Applied => "     ",
            };
            let t = l.model_ms.map(|m| format!("[{m:>5} ms] ")).unwrap_or_else(|| " ".repeat(11));
            let _ = writeln!(o, "{tag}{:>4}: {t}{}", l.line, l.text);
            if l.status == Status::Fail {
                if let Some(e) = &l.expected {
                    let _ = writeln!(o, "           expected: {e}");
                }
                if let Some(a) = &l.actual {
                    let _ = writeln!(o, "           model:    {a}");
                }
            }
            if let Some(r) = &l.reason {
                if l.status != Status::Applied || r.starts_with("model-only") {
                    let what = if l.status == Status::OutOfScope { format!("out of scope: line {}, {r}", l.line) } else { r.clone() };
                    let _ = writeln!(o, "           {what}");
                }
            }
        }
        if let Some((line, why)) = &self.stopped {
            let _ = writeln!(o, "stopped at line {line}: out of scope: {why} (later lines not replayed)");
        }
        for u in &self.unmatched {
            let _ = writeln!(o, "note: model transmission not matched by any line: {u}");
        }
        let _ = writeln!(o, "{} passed, {} failed, {} out of scope{}", self.passed, self.failed, self.out_of_scope, if self.passed == 0 { " — nothing checked" } else { "" });
        o
    }
}

/// Replay options.
#[derive(Clone, Debug)]
pub struct ReplayOptions {
    /// Outbound timing tolerance (ms), as the kernel runner's.
    pub tolerance_ms: f64,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions { tolerance_ms: 40.0 }
    }
}

/// Sysctls the replay understands (namespace defaults of the runner's defaults.sh first).
#[derive(Clone, Debug)]
struct Sysctls {
    sack: bool,
    ts: bool,
    frto: bool,
    tlp: bool,
    dsack: bool,
    reordering: u32,
    max_reordering: u32,
}

impl Default for Sysctls {
    fn default() -> Self {
        // A fresh namespace (kernel defaults); defaults.sh sets the same values for these.
        Sysctls { sack: true, ts: true, frto: true, tlp: true, dsack: true, reordering: 3, max_reordering: 300 }
    }
}

struct Replayer<'a> {
    profile: &'a Profile,
    opts: &'a ReplayOptions,
    r: ReplayReport,
    sys: Sysctls,
    initcwnd: u32,
    cc: CcKind,
    // handshake
    syn: Option<(i64, Packet)>,
    rtt_ms: Option<u32>,
    accepted: bool,
    sack_ok: bool,
    ts_ok: bool,
    ecn: bool,
    mss: u32,
    total_segs: u32,
    // data phase
    d: Option<Driver>,
    w0_us: i64,
    shift_us: i64,
    ts_map: HashMap<u32, u32>,
    first_ts: Option<(u32, u32)>,
}

fn text_of(st: &Statement) -> String {
    let s = trc_pkt::write(&Script { statements: vec![st.clone()] });
    s.trim().lines().next().unwrap_or("").to_string()
}

/// Replays `script` on `profile`.
pub fn replay(script: &Script, file: &str, profile: &Profile, opts: &ReplayOptions) -> ReplayReport {
    let mut rp = Replayer {
        profile,
        opts,
        r: ReplayReport { file: file.into(), profile: profile.name.clone(), config: None, sack: None, lines: vec![], stopped: None, unmatched: vec![], passed: 0, failed: 0, out_of_scope: 0 },
        sys: Sysctls::default(),
        initcwnd: 10,
        cc: CcKind::Cubic,
        syn: None,
        rtt_ms: None,
        accepted: false,
        sack_ok: false,
        ts_ok: false,
        ecn: false,
        mss: 1000,
        total_segs: 0,
        d: None,
        w0_us: 0,
        shift_us: 0,
        ts_map: HashMap::new(),
        first_ts: None,
    };
    rp.run(script);
    let r = &mut rp.r;
    r.passed = r.lines.iter().filter(|l| l.status == Status::Pass).count();
    r.failed = r.lines.iter().filter(|l| l.status == Status::Fail).count();
    r.out_of_scope = r.lines.iter().filter(|l| l.status == Status::OutOfScope).count();
    rp.r
}

/// Parses and replays a file; `Err` is a malformed script (`file:line:col: ...`) or I/O error.
pub fn replay_file(path: &std::path::Path, profile: &Profile, opts: &ReplayOptions) -> Result<ReplayReport, String> {
    let src = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let name = path.display().to_string();
    let script = trc_pkt::parse(&src, &name).map_err(|e| e.to_string())?;
    Ok(replay(&script, &name, profile, opts))
}

enum Flow {
    Go,
    Stop(String),
}

impl Replayer<'_> {
    fn push(&mut self, st: &Statement, status: Status, reason: Option<String>) {
        let model_ms = self.d.as_ref().map(|d| d.now);
        self.r.lines.push(LineReport { line: st.line, col: st.col, status, text: text_of(st), expected: None, actual: None, reason, model_ms });
    }

    fn model_ms(&self, t_us: i64) -> u32 {
        let v = t_us + self.shift_us - self.w0_us;
        ((v.max(0) + 500) / 1000) as u32
    }

    fn run(&mut self, script: &Script) {
        let mut prev_us: i64 = 0;
        // Pre-scan: total data written (segment bookkeeping needs it up front).
        let mut total_bytes: i64 = 0;
        for st in &script.statements {
            if let StatementKind::Syscall(s) = &st.kind {
                if matches!(s.name.as_str(), "write" | "send") {
                    if let Some(Expr::Int(n)) = s.args.get(2) {
                        total_bytes += n;
                    }
                }
            }
        }
        for st in &script.statements {
            let (t_us, any, range_end) = match st.time {
                None => (prev_us, true, None),
                Some(Time::Absolute(v)) => (v, false, None),
                Some(Time::Relative(v)) => (prev_us + v, false, None),
                Some(Time::Range { start, end }) => (point(start, prev_us), false, Some(point(end, prev_us))),
                Some(Time::Any) => (prev_us, true, None),
            };
            prev_us = t_us;
            let flow = match &st.kind {
                StatementKind::Shell(cmd) => self.shell(st, t_us, cmd),
                StatementKind::Syscall(s) => self.syscall(st, t_us, s, total_bytes),
                StatementKind::Packet(p) if p.direction == Direction::In => self.inbound(st, t_us, p),
                StatementKind::Packet(p) => self.outbound(st, t_us, range_end, any, p),
                StatementKind::Python(stmts) => self.python(st, t_us, stmts),
            };
            if let Flow::Stop(why) = flow {
                self.push(st, Status::OutOfScope, Some(why.clone()));
                self.r.stopped = Some((st.line, why));
                break;
            }
        }
        if let Some(d) = &self.d {
            for s in &d.out {
                self.r.unmatched.push(fmt_sent(s, self.mss));
            }
        }
    }

    /// Fires the pending timer while its deadline is before model time `t`.
    fn fire_before(&mut self, t: u32) {
        let Some(d) = self.d.as_mut() else { return };
        for _ in 0..16 {
            match d.timer() {
                Some(tm) if tm.deadline < t => {
                    d.fire();
                }
                _ => break,
            }
        }
    }

    fn shell(&mut self, st: &Statement, t_us: i64, cmd: &str) -> Flow {
        let c = cmd.trim();
        if c.ends_with("defaults.sh") {
            self.push(st, Status::Applied, Some("namespace defaults (sack, timestamps, F-RTO, TLP on)".into()));
            return Flow::Go;
        }
        if let Some(rest) = c.strip_prefix(": trc-model-only ") {
            let Some(d) = self.d.as_mut() else { return Flow::Stop("model-only event before any data was written".into()) };
            let t = ((t_us + self.shift_us - self.w0_us).max(0) + 500) / 1000;
            match rest.trim() {
                "tsq-fill" => d.tsq_fill(t as u32),
                "tsq-drain" => {
                    d.tsq_drain(t as u32);
                }
                other => return Flow::Stop(format!("unknown model-only event `{other}`")),
            }
            self.push(st, Status::Applied, Some(format!("model-only: {} (a no-op on a real kernel)", rest.trim())));
            return Flow::Go;
        }
        if let Some(rest) = c.strip_prefix("sysctl") {
            let mut notes = Vec::new();
            for tok in rest.split_whitespace().filter(|t| !t.starts_with('-')) {
                let Some((k, v)) = tok.split_once('=') else { continue };
                let k = k.trim_start_matches("net.ipv4.").replace('/', ".");
                let n: i64 = v.trim().parse().unwrap_or(-1);
                match k.as_str() {
                    "tcp_sack" => self.sys.sack = n != 0,
                    "tcp_timestamps" => self.sys.ts = n != 0,
                    "tcp_frto" => self.sys.frto = n != 0,
                    "tcp_early_retrans" => self.sys.tlp = (3..=4).contains(&n),
                    "tcp_dsack" => self.sys.dsack = n != 0,
                    "tcp_reordering" if n > 0 => self.sys.reordering = n as u32,
                    "tcp_max_reordering" if n > 0 => self.sys.max_reordering = n as u32,
                    "tcp_recovery" if n & 1 == 0 => return Flow::Stop("net.ipv4.tcp_recovery without RACK: the model is RACK-only (6.17+)".into()),
                    "tcp_recovery" => {}
                    "tcp_ecn" | "tcp_min_tso_segs" | "tcp_tso_win_divisor" | "tcp_pacing_ss_ratio" | "tcp_pacing_ca_ratio" | "tcp_slow_start_after_idle" | "tcp_rmem" | "tcp_wmem" | "tcp_notsent_lowat" => {
                        notes.push(format!("{k} is not modelled"))
                    }
                    other => notes.push(format!("{other} is not modelled")),
                }
            }
            self.sync_cfg();
            self.push(st, Status::Applied, if notes.is_empty() { None } else { Some(notes.join("; ")) });
            return Flow::Go;
        }
        if c.starts_with("ip route") || c.starts_with("ip ro ") {
            let toks: Vec<&str> = c.split_whitespace().collect();
            if let Some(i) = toks.iter().position(|t| *t == "initcwnd") {
                if let Some(v) = toks.get(i + 1).and_then(|v| v.parse::<u32>().ok()) {
                    if self.syn.is_some() {
                        self.push(st, Status::OutOfScope, Some("initcwnd changed after the SYN has no effect on this connection".into()));
                    } else {
                        self.initcwnd = v.max(1);
                        self.push(st, Status::Applied, Some(format!("initcwnd {v}")));
                    }
                    return Flow::Go;
                }
            }
            self.push(st, Status::OutOfScope, Some("route attributes other than initcwnd are not modelled".into()));
            return Flow::Go;
        }
        if c.starts_with("nstat") {
            self.push(st, Status::OutOfScope, Some("MIB counters are not modelled (the model's undo events are in `trc check` output)".into()));
            return Flow::Go;
        }
        if c.starts_with("ss ") || c.starts_with("echo ") || c == ":" || c.starts_with(": ") {
            self.push(st, Status::OutOfScope, Some("shell command without effect on the connection: not checked".into()));
            return Flow::Go;
        }
        // Anything else (qdisc changes, other tools) may change what the kernel does.
        Flow::Stop(format!("shell command `{}` is not modelled and may change the connection's behaviour", c.lines().next().unwrap_or("")))
    }

    fn sync_cfg(&mut self) {
        if let Some(d) = self.d.as_mut() {
            d.cfg.frto = self.sys.frto;
            d.cfg.tlp = self.sys.tlp;
            d.cfg.dsack = self.sys.dsack;
            d.cfg.sysctl_reordering = self.sys.reordering;
            d.cfg.sysctl_max_reordering = self.sys.max_reordering;
        }
    }

    fn syscall(&mut self, st: &Statement, t_us: i64, s: &trc_pkt::ast::Syscall, total_bytes: i64) -> Flow {
        match s.name.as_str() {
            "socket" | "bind" | "listen" => {
                self.push(st, Status::Applied, None);
                Flow::Go
            }
            "setsockopt" => {
                let opt = s.args.get(2);
                match opt {
                    Some(Expr::Word(w)) if w == "SO_REUSEADDR" => {
                        self.push(st, Status::Applied, None);
                    }
                    Some(Expr::Word(w)) if w == "TCP_CONGESTION" => match s.args.get(3) {
                        Some(Expr::Str(cc)) if cc == "cubic" || cc == "reno" => {
                            self.cc = if cc == "reno" { CcKind::Reno } else { CcKind::Cubic };
                            if let Some(d) = self.d.as_mut() {
                                d.cfg.cc = self.cc;
                            }
                            self.push(st, Status::Applied, Some(format!("congestion control {cc}")));
                        }
                        other => return Flow::Stop(format!("congestion control {:?} is not modelled (cubic, reno)", other)),
                    },
                    _ => self.push(st, Status::OutOfScope, Some("socket option not modelled".into())),
                }
                Flow::Go
            }
            "accept" => {
                if self.rtt_ms.is_none() {
                    return Flow::Stop("accept before the handshake completed".into());
                }
                self.accepted = true;
                self.push(st, Status::Applied, None);
                Flow::Go
            }
            "connect" => Flow::Stop("active open (connect) is not modelled: the model starts from a passive open".into()),
            "write" | "send" => {
                if !self.accepted {
                    return Flow::Stop("write before the connection is established and accepted".into());
                }
                let Some(Expr::Int(n)) = s.args.get(2) else { return Flow::Stop("write size is not a literal".into()) };
                let n = *n as u32;
                if n == 0 || n % self.mss != 0 {
                    return Flow::Stop(format!("write of {n} bytes is not a whole number of {}-byte (MSS) segments", self.mss));
                }
                let segs = n / self.mss;
                if self.d.is_none() {
                    let total = (total_bytes as u32) / self.mss;
                    if total > trc_model::config::MAX_SEGMENTS {
                        return Flow::Stop(format!("{total} segments of data: the model tracks at most {}", trc_model::config::MAX_SEGMENTS));
                    }
                    self.total_segs = total;
                    let cfg = Config {
                        segments: segs as u8,
                        extra_writes: (total - segs) as u8,
                        initcwnd: self.initcwnd,
                        rtt_ms: self.rtt_ms.unwrap_or(50).max(1),
                        timestamps: self.ts_ok,
                        frto: self.sys.frto,
                        tlp: self.sys.tlp,
                        dsack: self.sys.dsack,
                        ecn: self.ecn,
                        sysctl_reordering: self.sys.reordering,
                        sysctl_max_reordering: self.sys.max_reordering,
                        cc: self.cc,
                        sack: if self.sack_ok { trc_model::SackMode::Sack } else { trc_model::SackMode::NoSack },
                        ..Config::default()
                    };
                    self.w0_us = t_us + self.shift_us;
                    self.r.config = Some(cfg.clone());
                    self.r.sack = Some(self.sack_ok);
                    self.d = Some(Driver::start(cfg, self.profile.clone(), self.sack_ok));
                    self.push(st, Status::Applied, Some(format!("{segs} segment(s) written; model time 0")));
                } else {
                    let t = self.model_ms(t_us);
                    self.fire_before(t);
                    let d = self.d.as_mut().unwrap();
                    d.write(t, segs);
                    self.push(st, Status::Applied, Some(format!("{segs} segment(s) written")));
                }
                Flow::Go
            }
            "getsockopt" | "fcntl" | "ioctl" => {
                self.push(st, Status::OutOfScope, Some(format!("{} results are not modelled", s.name)));
                Flow::Go
            }
            other => Flow::Stop(format!("system call `{other}` is not modelled")),
        }
    }

    fn inbound(&mut self, st: &Statement, t_us: i64, p: &Packet) -> Flow {
        let f = &p.flags;
        if f.syn {
            if f.ack {
                return Flow::Stop("inbound SYN-ACK: active open is not modelled".into());
            }
            let mut mss = 536u32;
            let (mut sack, mut ts) = (false, false);
            if let Some(TcpOptions::List(l)) = &p.options {
                for o in l {
                    match o {
                        TcpOption::Mss(m) => mss = *m as u32,
                        TcpOption::SackOk => sack = true,
                        TcpOption::Timestamp { .. } => ts = true,
                        _ => {}
                    }
                }
            }
            self.sack_ok = sack && self.sys.sack;
            self.ts_ok = ts && self.sys.ts;
            self.ecn = f.ece && f.cwr;
            self.mss = mss.min(1460) - if self.ts_ok { 12 } else { 0 };
            self.syn = Some((t_us, p.clone()));
            self.push(st, Status::Applied, Some(format!("passive open: {}, {}, MSS {}", if self.sack_ok { "SACK" } else { "no SACK" }, if self.ts_ok { "timestamps" } else { "no timestamps" }, self.mss)));
            return Flow::Go;
        }
        if f.fin || f.rst {
            return Flow::Stop("FIN/RST from the peer is not modelled".into());
        }
        if p.len > 0 {
            return Flow::Stop("data from the peer is not modelled (the model's peer only ACKs)".into());
        }
        if self.rtt_ms.is_none() {
            // Third packet of the handshake: its delay from the SYN-ACK is the path RTT.
            let Some((t_syn, _)) = &self.syn else { return Flow::Stop("ACK before any SYN".into()) };
            let rtt = ((t_us - t_syn + 500) / 1000).max(1) as u32;
            self.rtt_ms = Some(rtt);
            self.push(st, Status::Applied, Some(format!("handshake complete: RTT {rtt} ms")));
            return Flow::Go;
        }
        if self.d.is_none() {
            self.push(st, Status::OutOfScope, Some("ACK before any data was written: ignored".into()));
            return Flow::Go;
        }
        let Some(a) = p.ack else { return Flow::Stop("inbound segment without ACK".into()) };
        if p.win == Some(0) {
            return Flow::Stop("zero window is not modelled".into());
        }
        let mss = self.mss;
        let to_seq = |b: u32| -> Option<u32> { (b.wrapping_sub(1) % mss == 0).then(|| 1 + b.wrapping_sub(1) / mss) };
        let Some(ack) = to_seq(a) else { return Flow::Stop(format!("ack {a} is not on a {mss}-byte segment boundary")) };
        let mut sacks = Vec::new();
        let mut tsecr = None;
        if let Some(TcpOptions::List(l)) = &p.options {
            for o in l {
                match o {
                    TcpOption::Sack(bl) => {
                        for (s, e) in bl {
                            match (to_seq(*s), to_seq(*e)) {
                                (Some(s), Some(e)) => sacks.push((s, e)),
                                _ => return Flow::Stop(format!("SACK block {s}:{e} is not on {mss}-byte segment boundaries")),
                            }
                        }
                    }
                    TcpOption::Timestamp { ecr, .. } => {
                        let v = if let Some(v) = self.ts_map.get(ecr) {
                            *v
                        } else if let Some((fs, fl)) = self.first_ts {
                            ecr.wrapping_sub(fs).wrapping_add(fl)
                        } else {
                            *ecr
                        };
                        tsecr = Some(v);
                    }
                    _ => {}
                }
            }
        }
        let seg = AckSeg { ack, sacks: sacks.into(), ece: f.ece, tsecr };
        let t = self.model_ms(t_us);
        self.fire_before(t);
        let d = self.d.as_mut().unwrap();
        d.ack(t, &seg);
        self.push(st, Status::Applied, None);
        Flow::Go
    }

    fn outbound(&mut self, st: &Statement, t_us: i64, range_end: Option<i64>, any: bool, p: &Packet) -> Flow {
        if p.flags.syn {
            // SYN-ACK of the passive open: the model starts established.
            self.push(st, Status::Applied, Some("SYN-ACK (the model starts after the handshake; not checked)".into()));
            return Flow::Go;
        }
        if self.d.is_none() {
            return Flow::Stop("outbound segment before any data was written".into());
        }
        if p.flags.fin || p.flags.rst {
            return Flow::Stop("FIN/RST from the sender is not modelled".into());
        }
        if p.len == 0 {
            self.push(st, Status::OutOfScope, Some("pure ACKs from the sender are not modelled".into()));
            return Flow::Go;
        }
        let tol = (self.opts.tolerance_ms * 1000.0) as i64;
        let due = t_us + self.shift_us;
        let end = range_end.map(|e| e + self.shift_us).unwrap_or(due);
        let end_ms = ((end + tol - self.w0_us).max(0) / 1000) as u32;
        let mss = self.mss;
        let d = self.d.as_mut().unwrap();
        for _ in 0..16 {
            if !d.out.is_empty() {
                break;
            }
            match d.timer() {
                Some(tm) if tm.deadline <= end_ms => {
                    d.fire();
                }
                _ => break,
            }
        }
        let expected = describe_pkt(p);
        let Some(first) = d.out.pop_front() else {
            let pending = d.timer().map(|t| format!(" (pending {:?} timer at {} ms)", t.kind, t.deadline)).unwrap_or_default();
            let mut l = LineReport { line: st.line, col: st.col, status: Status::Fail, text: text_of(st), expected: Some(expected), actual: Some(format!("nothing sent by {end_ms} ms{pending}")), reason: None, model_ms: Some(d.now) };
            l.reason = Some("expected packet was not sent by the model".into());
            self.r.lines.push(l);
            return Flow::Go;
        };
        let mut parts = vec![first];
        let mut end_seg = first.seg + 1;
        while (end_seg - first.seg) * mss < p.len {
            match d.out.front() {
                Some(n) if n.seg == end_seg => {
                    parts.push(*n);
                    d.out.pop_front();
                    end_seg += 1;
                }
                _ => break,
            }
        }
        let (a, b) = (1 + first.seg * mss, 1 + end_seg * mss);
        let kinds: Vec<&str> = parts.iter().map(|s| if s.rtx { "retransmission" } else { "new data" }).collect();
        let kind = if kinds.iter().all(|k| *k == kinds[0]) { kinds[0].to_string() } else { kinds.join("+") };
        let actual = format!("{}:{}({}) ack 1 ({kind}) at {} ms", a, b, b - a, first.at);
        let mut errors = Vec::new();
        if a != p.seq || b != p.end_seq {
            errors.push(format!("seq: expected {}:{} model {a}:{b}", p.seq, p.end_seq));
        }
        if let Some(ack) = p.ack {
            if ack != 1 {
                errors.push(format!("ack: expected {ack}, the model's peer sends no data (ack 1)"));
            }
        }
        if let Some(TcpOptions::List(l)) = &p.options {
            for o in l {
                if let TcpOption::Timestamp { val, .. } = o {
                    let model_ts = first.at.wrapping_add(d.cfg.ts_base);
                    self.ts_map.insert(*val, model_ts);
                    if self.first_ts.is_none() {
                        self.first_ts = Some((*val, model_ts));
                    }
                }
            }
        }
        // Timing (as the kernel runner), then the shift for later relative times.
        let actual_us = self.w0_us + first.at as i64 * 1000;
        let offset = actual_us - due;
        if !(any || (actual_us >= due - tol && actual_us <= end + tol)) {
            errors.push(format!("timing: expected at {:.0} ms (±{:.0}) model {} ms", (due - self.w0_us) as f64 / 1000.0, self.opts.tolerance_ms, first.at));
        }
        if !any {
            if range_end.is_none() {
                self.shift_us += offset;
            } else if actual_us > end {
                self.shift_us += actual_us - end;
            }
        } else {
            self.shift_us += offset.max(0);
        }
        let status = if errors.is_empty() { Status::Pass } else { Status::Fail };
        let note = if p.flags.psh { Some("PSH is not modelled (not checked)".to_string()) } else { None };
        self.r.lines.push(LineReport {
            line: st.line,
            col: st.col,
            status,
            text: text_of(st),
            expected: Some(expected),
            actual: Some(actual),
            reason: if errors.is_empty() { note } else { Some(errors.join("; ")) },
            model_ms: Some(first.at),
        });
        Flow::Go
    }

    fn python(&mut self, st: &Statement, t_us: i64, stmts: &[PyStmt]) -> Flow {
        if self.d.is_some() {
            let t = self.model_ms(t_us);
            self.fire_before(t);
        }
        for s in stmts {
            match s {
                PyStmt::Assert { field, op, value, .. } => {
                    let want = match value {
                        PyValue::Int(v) => Some(*v),
                        PyValue::Name(n) => trc_pkt::symbol_value(n),
                    };
                    let got = self.d.as_ref().and_then(|d| d.tcpi(field));
                    let text = format!("assert {field} {} {}", op.as_str(), match value { PyValue::Int(v) => v.to_string(), PyValue::Name(n) => n.clone() });
                    let model_ms = self.d.as_ref().map(|d| d.now);
                    let l = match (want, got) {
                        (Some(w), Some(g)) => {
                            let ok = op.eval(g, w);
                            LineReport {
                                line: st.line,
                                col: st.col,
                                status: if ok { Status::Pass } else { Status::Fail },
                                text,
                                expected: Some(format!("{field} {} {}", op.as_str(), show(field, w))),
                                actual: Some(format!("{field} = {}", show(field, g))),
                                reason: None,
                                model_ms,
                            }
                        }
                        (None, _) => LineReport { line: st.line, col: st.col, status: Status::OutOfScope, text, expected: None, actual: None, reason: Some("unknown symbolic value".into()), model_ms },
                        (_, None) if self.d.is_none() => LineReport { line: st.line, col: st.col, status: Status::OutOfScope, text, expected: None, actual: None, reason: Some("assert before any data was written".into()), model_ms },
                        (_, None) => LineReport { line: st.line, col: st.col, status: Status::OutOfScope, text, expected: None, actual: None, reason: Some(format!("{field} is not computed by the model")), model_ms },
                    };
                    self.r.lines.push(l);
                }
                PyStmt::Print(f) => self.r.lines.push(LineReport { line: st.line, col: st.col, status: Status::OutOfScope, text: format!("print({f})"), expected: None, actual: self.d.as_ref().and_then(|d| d.tcpi(f)).map(|v| format!("{f} = {v}")), reason: Some("print: nothing to check".into()), model_ms: self.d.as_ref().map(|d| d.now) }),
                PyStmt::Other(o) => self.r.lines.push(LineReport { line: st.line, col: st.col, status: Status::OutOfScope, text: o.clone(), expected: None, actual: None, reason: Some("python statement not understood".into()), model_ms: None }),
            }
        }
        Flow::Go
    }
}

fn show(field: &str, v: i64) -> String {
    if field == "tcpi_ca_state" {
        let n = ["TCP_CA_Open", "TCP_CA_Disorder", "TCP_CA_CWR", "TCP_CA_Recovery", "TCP_CA_Loss"];
        if let Some(s) = usize::try_from(v).ok().and_then(|i| n.get(i)) {
            return s.to_string();
        }
    }
    v.to_string()
}

fn point(p: TimePoint, prev: i64) -> i64 {
    match p {
        TimePoint::Absolute(v) => v,
        TimePoint::Relative(v) => prev + v,
    }
}

fn describe_pkt(p: &Packet) -> String {
    format!("{}:{}({}){}", p.seq, p.end_seq, p.len, p.ack.map(|a| format!(" ack {a}")).unwrap_or_default())
}

fn fmt_sent(s: &Sent, mss: u32) -> String {
    format!("{}:{}({}) {} at {} ms", 1 + s.seg * mss, 1 + (s.seg + 1) * mss, mss, if s.rtx { "retransmission" } else { "new data" }, s.at)
}
