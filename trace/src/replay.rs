//! Script → model: the model backend of the one script engine (`trc_pkt::engine`). The engine
//! gives the script packetdrill's meaning (time, tolerance, sequence and TS mapping, outbound
//! matching, Python asserts); this backend drives the model's sender ([`Driver`]) with the
//! script's inbound segments, writes and elapsed time, and hands back what the model sends and
//! what it knows for `%{ }%` blocks.
//!
//! Model time: 0 is the first write (the model starts established, its first flight leaves at
//! the first write). The pending timer fires when script time passes its deadline before an
//! event, or when an outbound line waits for a segment only the timer can send.
//!
//! What the model does not cover is reported, never passed: a line it cannot check is out of
//! scope (the run is then incomplete), and a line after which the rest of the script means
//! nothing to the model (an active open, data or a FIN from the peer, a setting it does not
//! model) halts the replay there.

use crate::driver::{Driver, Sent};
use serde::Serialize;
use std::collections::BTreeMap;
use trc_model::sender::ack::AckSeg;
use trc_model::{CcKind, Config, Profile};
use trc_pkt::ast::{Expr, Packet, Script, StatementKind, Syscall};
use trc_pkt::engine::{self, Backend, Captured, CodeValues, Halt, LivePacket, Next, Outcome1, Settings, SysCtx, SysResult, Unknown};
use trc_pkt::report::{LineResult, Report, Status};
use trc_pkt::wire::{self, WireOption, ACK, ECE, FIN, RST, SYN};

/// The result of a replay: the engine's report plus what the model was configured with.
#[derive(Clone, Debug, Serialize)]
pub struct ReplayReport {
    pub script: Report,
    pub profile: String,
    /// The configuration derived from the script (`None` if no data was written).
    pub config: Option<Config>,
    pub sack: Option<bool>,
    /// Model transmissions no outbound line consumed.
    pub unmatched: Vec<String>,
}

impl ReplayReport {
    /// 0 passed, 1 failed, 3 incomplete (see `trc_pkt::report`).
    pub fn exit_code(&self) -> i32 {
        self.script.verdict.exit_code()
    }

    pub fn lines(&self) -> &[LineResult] {
        &self.script.lines
    }

    /// Checks that passed / failed.
    pub fn passed(&self) -> usize {
        self.script.counts().0
    }
    pub fn failed(&self) -> usize {
        self.script.counts().1
    }

    /// The first failing line.
    pub fn first_failure(&self) -> Option<&LineResult> {
        self.script.lines.iter().find(|l| l.status == Status::Fail)
    }

    pub fn render(&self) -> String {
        let mut o = format!("trc replay: {} on profile {}\n", self.script.file, self.profile);
        o.push_str(&self.script.render());
        for u in &self.unmatched {
            o.push_str(&format!("note: model transmission not matched by any line: {u}\n"));
        }
        o
    }
}

/// Replay options.
#[derive(Clone, Debug, Default)]
pub struct ReplayOptions {
    /// packetdrill command-line options, applied after the script's own (e.g.
    /// `tolerance_usecs`).
    pub packetdrill: Vec<(String, Option<String>)>,
}

/// The sysctls the model reads (a fresh namespace's values; `defaults.sh` sets the same ones).
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
        Sysctls { sack: true, ts: true, frto: true, tlp: true, dsack: true, reordering: 3, max_reordering: 300 }
    }
}

/// The passive open as the script performed it.
#[derive(Clone, Debug, Default)]
struct Handshake {
    /// Script µs of the inbound SYN (the model answers at once).
    syn_us: Option<i64>,
    sack_ok: bool,
    ts_ok: bool,
    ecn: bool,
    mss: u32,
    /// The peer's ISN.
    remote_isn: u32,
    /// The SYN-ACK was consumed by an outbound line.
    synack_sent: bool,
    rtt_ms: Option<u32>,
    accepted: bool,
}

/// The model backend.
struct ModelBackend<'a> {
    profile: &'a Profile,
    sys: Sysctls,
    initcwnd: u32,
    cc: CcKind,
    hs: Handshake,
    /// Total bytes the script writes (the model needs its segment count up front).
    total_bytes: i64,
    d: Option<Driver>,
    /// Script µs of model time 0 (the first write).
    w0_us: i64,
    now_us: i64,
    /// Undo counters (TcpExt names) when `nstat -n` last ran.
    nstat_base: BTreeMap<&'static str, i64>,
    config: Option<Config>,
}

/// Replays `script` on `profile`.
pub fn replay(script: &Script, file: &str, profile: &Profile, opts: &ReplayOptions) -> ReplayReport {
    let mut b = ModelBackend::new(profile, script);
    let (report, unmatched) = match Settings::resolve(script, file, &opts.packetdrill) {
        Ok(settings) => {
            let r = engine::run(script, file, settings, &mut b);
            let u = b.d.as_ref().map(|d| d.out.iter().map(|s| fmt_sent(s, b.hs.mss)).collect()).unwrap_or_default();
            (r, u)
        }
        Err(e) => {
            let mut r = Report::new(file);
            r.stopped = Some((0, e));
            r.finish();
            (r, Vec::new())
        }
    };
    ReplayReport { script: report, profile: profile.name.clone(), config: b.config.clone(), sack: b.config.as_ref().map(|_| b.hs.sack_ok), unmatched }
}

/// Parses and replays a file; `Err` is a malformed script (`file:line:col: ...`) or I/O error.
pub fn replay_file(path: &std::path::Path, profile: &Profile, opts: &ReplayOptions) -> Result<ReplayReport, String> {
    let src = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let name = path.display().to_string();
    let script = trc_pkt::parse(&src, &name).map_err(|e| e.to_string())?;
    Ok(replay(&script, &name, profile, opts))
}

fn stop(why: impl Into<String>) -> Halt {
    Halt::Stop(why.into())
}

impl<'a> ModelBackend<'a> {
    fn new(profile: &'a Profile, script: &Script) -> ModelBackend<'a> {
        let total_bytes = script_write_bytes(script);
        ModelBackend { profile, sys: Sysctls::default(), initcwnd: 10, cc: CcKind::Cubic, hs: Handshake { mss: 536, ..Default::default() }, total_bytes, d: None, w0_us: 0, now_us: 0, nstat_base: BTreeMap::new(), config: None }
    }

    /// Model ms of script µs `t_us` (rounded to the nearest ms).
    fn model_ms(&self, t_us: i64) -> u32 {
        ((t_us.saturating_sub(self.w0_us).clamp(0, u32::MAX as i64 * 1000 - 500) + 500) / 1000) as u32
    }

    /// Fires the pending timer while its deadline is before model time `t`.
    fn fire_before(&mut self, t: u32) {
        let Some(d) = self.d.as_mut() else { return };
        for _ in 0..64 {
            match d.timer() {
                Some(tm) if tm.deadline < t => {
                    d.fire();
                }
                _ => break,
            }
        }
    }

    /// The settings into a running driver's configuration.
    fn sync_cfg(&mut self) {
        if let Some(d) = self.d.as_mut() {
            d.cfg.frto = self.sys.frto;
            d.cfg.tlp = self.sys.tlp;
            d.cfg.dsack = self.sys.dsack;
            d.cfg.sysctl_reordering = self.sys.reordering;
            d.cfg.sysctl_max_reordering = self.sys.max_reordering;
            d.cfg.cc = self.cc;
        }
    }

    /// The undo counters the model's undo events bump so far (TcpExt names).
    fn counters(&self) -> BTreeMap<&'static str, i64> {
        self.d.as_ref().map(|d| d.counters.clone()).unwrap_or_default()
    }

    /// The first write: the model starts with the whole script's data (it tracks segments
    /// written up front and later writes), its first flight leaving now.
    fn start(&mut self, segs: u32) -> Result<Outcome1, Halt> {
        let mss = self.hs.mss;
        let total = u32::try_from(self.total_bytes / mss as i64).unwrap_or(u32::MAX);
        if total > trc_model::config::MAX_SEGMENTS {
            return Err(stop(format!("{total} segments of data: the model tracks at most {}", trc_model::config::MAX_SEGMENTS)));
        }
        let cfg = Config {
            segments: segs as u8,
            extra_writes: (total - segs) as u8,
            initcwnd: self.initcwnd,
            rtt_ms: self.hs.rtt_ms.unwrap_or(50).max(1),
            timestamps: self.hs.ts_ok,
            frto: self.sys.frto,
            tlp: self.sys.tlp,
            dsack: self.sys.dsack,
            ecn: self.hs.ecn,
            sysctl_reordering: self.sys.reordering,
            sysctl_max_reordering: self.sys.max_reordering,
            cc: self.cc,
            sack: if self.hs.sack_ok { trc_model::SackMode::Sack } else { trc_model::SackMode::NoSack },
            ..Config::default()
        };
        model_config_ok(&cfg)?;
        self.w0_us = self.now_us;
        self.config = Some(cfg.clone());
        self.d = Some(Driver::start(cfg, self.profile.clone(), self.hs.sack_ok));
        Ok(Outcome1::applied(Some(format!("{segs} segment(s) written; model time 0"))))
    }

    fn write(&mut self, n: i64) -> Result<SysResult, Halt> {
        if !self.hs.accepted {
            return Err(stop("write before the connection is established and accepted"));
        }
        write_size_ok(n)?;
        let mss = self.hs.mss as i64;
        if n <= 0 || n % mss != 0 {
            return Err(stop(format!("write of {n} bytes is not a whole number of {mss}-byte (MSS) segments")));
        }
        let segs = (n / mss) as u32;
        if self.d.is_none() {
            return self.start(segs).map(SysResult::Other);
        }
        let t = self.model_ms(self.now_us);
        self.fire_before(t);
        self.d.as_mut().unwrap().write(t, segs);
        Ok(SysResult::Other(Outcome1::applied(Some(format!("{segs} segment(s) written")))))
    }

    fn setsockopt(&mut self, s: &Syscall) -> Result<SysResult, Halt> {
        match (s.args.get(2), s.args.get(3)) {
            (Some(Expr::Word(w)), _) if w == "SO_REUSEADDR" => Ok(SysResult::Other(Outcome1::applied(None))),
            (Some(Expr::Word(w)), Some(Expr::Str(cc))) if w == "TCP_CONGESTION" => {
                self.cc = match cc.as_str() {
                    "cubic" => CcKind::Cubic,
                    "reno" => CcKind::Reno,
                    other => return Err(stop(format!("congestion control \"{other}\" is not modelled (cubic, reno)"))),
                };
                self.sync_cfg();
                Ok(SysResult::Other(Outcome1::applied(Some(format!("congestion control {cc}")))))
            }
            _ => Ok(SysResult::Other(Outcome1::out_of_scope("this socket option is not modelled"))),
        }
    }

    /// `getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, "name", len)`: the model's congestion control.
    fn getsockopt(&mut self, s: &Syscall) -> Result<SysResult, Halt> {
        match (s.args.get(2), s.args.get(3)) {
            (Some(Expr::Word(w)), Some(Expr::Str(want))) if w == "TCP_CONGESTION" => {
                let have = if self.cc == CcKind::Reno { "reno" } else { "cubic" };
                let problems = if want == have { vec![] } else { vec![format!("value \"{have}\", expected \"{want}\"")] };
                Ok(SysResult::Returned { ret: 0, errno: 0, notes: vec![], problems })
            }
            _ => Ok(SysResult::Other(Outcome1::out_of_scope("getsockopt results other than TCP_CONGESTION are not modelled"))),
        }
    }

    /// The inbound SYN of the passive open: what it negotiates (with the sysctls).
    fn syn(&mut self, p: &LivePacket) -> Outcome1 {
        let mut mss = None;
        let (mut sack, mut ts) = (false, false);
        for o in &p.options {
            match o {
                WireOption::Mss { mss: m } => mss = Some(*m),
                WireOption::SackOk => sack = true,
                WireOption::Timestamp { .. } => ts = true,
                _ => {}
            }
        }
        self.hs.sack_ok = sack && self.sys.sack;
        self.hs.ts_ok = ts && self.sys.ts;
        self.hs.ecn = p.flags & ECE != 0 && p.flags & wire::CWR != 0;
        self.hs.mss = negotiated_mss(mss, self.hs.ts_ok);
        self.hs.remote_isn = p.seq;
        self.hs.syn_us = Some(self.now_us);
        Outcome1::applied(Some(format!("passive open: {}, {}, MSS {}", if self.hs.sack_ok { "SACK" } else { "no SACK" }, if self.hs.ts_ok { "timestamps" } else { "no timestamps" }, self.hs.mss)))
    }

    /// An ACK for the running model: segments from bytes, SACK blocks, the TS echo.
    fn data_ack(&mut self, p: &LivePacket) -> Result<Outcome1, Halt> {
        let mss = self.hs.mss;
        let to_seq = |b: u32| -> Option<u32> { (b.wrapping_sub(1) % mss == 0).then(|| 1 + b.wrapping_sub(1) / mss) };
        let ack = to_seq(p.ack).ok_or_else(|| stop(format!("ack {} is not on a {mss}-byte segment boundary", p.ack)))?;
        let mut sacks = Vec::new();
        let mut tsecr = None;
        for o in &p.options {
            match o {
                WireOption::Sack { blocks } => {
                    for (s, e) in blocks {
                        match (to_seq(*s), to_seq(*e)) {
                            (Some(s), Some(e)) => sacks.push((s, e)),
                            _ => return Err(stop(format!("SACK block {s}:{e} is not on {mss}-byte segment boundaries"))),
                        }
                    }
                }
                WireOption::Timestamp { ecr, .. } => tsecr = Some(*ecr),
                _ => {}
            }
        }
        let seg = AckSeg { ack, sacks: sacks.into(), ece: p.flags & ECE != 0, tsecr };
        let t = self.model_ms(self.now_us);
        self.fire_before(t);
        self.d.as_mut().unwrap().ack(t, &seg);
        Ok(Outcome1::applied(None))
    }

    /// A shell line, command by command.
    fn shell_line(&mut self, cmd: &str) -> Result<Outcome1, Halt> {
        let mut notes = Vec::new();
        let mut checks: Vec<Outcome1> = Vec::new();
        for simple in crate::shell::simple_commands(cmd) {
            match crate::shell::interpret(&simple) {
                crate::shell::Effect::Defaults => self.sys = Sysctls::default(),
                crate::shell::Effect::Sysctl(settings) => {
                    for (k, v) in settings {
                        if let Some(n) = self.sysctl(&k, &v)? {
                            notes.push(n);
                        }
                    }
                    self.sync_cfg();
                }
                crate::shell::Effect::InitCwnd(n) => {
                    if self.hs.syn_us.is_some() {
                        checks.push(Outcome1::out_of_scope("initcwnd changed after the SYN has no effect on this connection"));
                    } else {
                        self.initcwnd = n.max(1);
                        notes.push(format!("initcwnd {n}"));
                    }
                }
                crate::shell::Effect::NstatReset => self.nstat_base = self.counters(),
                crate::shell::Effect::NstatCheck { counter, value } => {
                    checks.push(self.nstat_check(&counter, value));
                    // nstat (without -n) prints and also takes a new baseline.
                    self.nstat_base = self.counters();
                }
                crate::shell::Effect::Sleep(us) => self.now_us = self.now_us.saturating_add(us),
                crate::shell::Effect::ModelOnly(ev) => notes.push(self.model_only(&ev)?),
                crate::shell::Effect::None(why) => notes.push(why),
                crate::shell::Effect::NotModelled(why) => return Err(stop(why)),
            }
        }
        let mut o = checks.iter().find(|c| c.status == Status::Fail).or_else(|| checks.iter().find(|c| c.status == Status::OutOfScope)).or_else(|| checks.first()).cloned().unwrap_or_else(|| Outcome1::applied(None));
        o.notes.extend(notes);
        Ok(o)
    }

    /// One `name=value` sysctl; a note if it does not matter to the model.
    fn sysctl(&mut self, name: &str, v: &str) -> Result<Option<String>, Halt> {
        let k = name.trim_start_matches("net.ipv4.").trim_start_matches("/proc/sys/net/ipv4/").replace('/', ".");
        let n: i64 = v.trim().parse().unwrap_or(-1);
        match k.as_str() {
            "tcp_sack" => self.sys.sack = n != 0,
            "tcp_timestamps" => self.sys.ts = n != 0,
            "tcp_frto" => self.sys.frto = n != 0,
            "tcp_early_retrans" => self.sys.tlp = (3..=4).contains(&n),
            "tcp_dsack" => self.sys.dsack = n != 0,
            "tcp_reordering" if n > 0 => self.sys.reordering = reordering_sysctl(&k, n)?,
            "tcp_max_reordering" if n > 0 => self.sys.max_reordering = reordering_sysctl(&k, n)?,
            "tcp_recovery" if n & 1 == 0 => return Err(stop("net.ipv4.tcp_recovery without RACK: the model is RACK-only (6.17+)")),
            "tcp_recovery" => {}
            other => return Ok(Some(format!("{other} is not modelled"))),
        }
        Ok(None)
    }

    /// `nstat | grep NAME | grep -q " N "`: the counter's increase since `nstat -n` is N.
    fn nstat_check(&self, counter: &str, value: Option<i64>) -> Outcome1 {
        if !crate::driver::MODELLED_COUNTERS.contains(&counter) {
            return Outcome1::out_of_scope(format!("{counter} is not a counter the model maintains"));
        }
        let now = self.counters();
        let delta = now.get(counter).copied().unwrap_or(0) - self.nstat_base.get(counter).copied().unwrap_or(0);
        let ok = match value {
            Some(v) => delta == v,
            None => delta != 0,
        };
        let want = value.map(|v| v.to_string()).unwrap_or_else(|| "non-zero".into());
        if ok {
            let mut o = Outcome1::pass();
            o.notes.push(format!("{counter} = {delta} since nstat -n"));
            o
        } else {
            Outcome1::fail(format!("{counter} rose by {delta}, the script expects {want}"))
        }
    }

    fn model_only(&mut self, ev: &str) -> Result<String, Halt> {
        let t = self.model_ms(self.now_us);
        let d = self.d.as_mut().ok_or_else(|| stop("model-only event before any data was written"))?;
        match ev {
            "tsq-fill" => d.tsq_fill(t),
            "tsq-drain" => {
                d.tsq_drain(t);
            }
            other => return Err(stop(format!("unknown model-only event `{other}`"))),
        }
        Ok(format!("model-only: {ev} (a no-op on a real kernel)"))
    }

    /// The model's next transmission as a captured packet.
    fn captured(&self, s: Sent) -> Captured {
        let d = self.d.as_ref().unwrap();
        let mss = self.hs.mss;
        let options = if self.hs.ts_ok { vec![WireOption::Nop, WireOption::Nop, WireOption::Timestamp { val: s.at.wrapping_add(d.cfg.ts_base), ecr: 0 }] } else { vec![] };
        Captured {
            at_us: self.w0_us + s.at as i64 * 1000,
            flags: ACK,
            seq: 1 + s.seg * mss,
            ack: self.hs.remote_isn.wrapping_add(1),
            win: 0,
            urg: 0,
            tos: 0,
            options,
            payload_len: mss,
            unknown: Unknown { psh: true, win: true, tos: true },
            note: Some(if s.rtx { "model: retransmission".into() } else { "model: new data".into() }),
            applied: None,
        }
    }
}

impl Backend for ModelBackend<'_> {
    fn now_us(&mut self) -> i64 {
        self.now_us
    }

    fn start_clock(&mut self) {
        self.now_us = 0;
    }

    fn wait_until(&mut self, t_us: i64) -> Result<(), Halt> {
        if self.d.is_some() {
            model_time_ok(t_us.saturating_sub(self.w0_us))?;
            let t = self.model_ms(t_us);
            self.fire_before(t);
        }
        self.now_us = self.now_us.max(t_us);
        Ok(())
    }

    fn inbound(&mut self, p: &LivePacket) -> Result<Outcome1, Halt> {
        if p.flags & SYN != 0 {
            if p.flags & ACK != 0 {
                return Err(stop("inbound SYN-ACK: active open is not modelled (the model starts from a passive open)"));
            }
            return Ok(self.syn(p));
        }
        if p.flags & (FIN | RST) != 0 {
            return Err(stop("FIN/RST from the peer is not modelled"));
        }
        if p.payload_len > 0 {
            return Err(stop("data from the peer is not modelled (the model's peer only ACKs)"));
        }
        if self.hs.rtt_ms.is_none() {
            // The handshake's last ACK: its delay from the SYN is the path RTT.
            let syn = self.hs.syn_us.ok_or_else(|| stop("ACK before any SYN"))?;
            let rtt = ((self.now_us - syn + 500) / 1000).max(1) as u32;
            self.hs.rtt_ms = Some(rtt);
            return Ok(Outcome1::applied(Some(format!("handshake complete: RTT {rtt} ms"))));
        }
        if self.d.is_none() {
            return Ok(Outcome1::out_of_scope("ACK before any data was written: ignored by the model"));
        }
        if p.flags & ACK == 0 {
            return Err(stop("inbound segment without ACK"));
        }
        if p.win == 0 {
            return Err(stop("zero window is not modelled"));
        }
        self.data_ack(p)
    }

    fn next_outbound(&mut self, deadline_us: i64, expect: &Packet) -> Result<Next, Halt> {
        if expect.flags.syn {
            if self.hs.syn_us.is_none() || self.hs.synack_sent {
                return Err(stop("outbound SYN: active open is not modelled"));
            }
            self.hs.synack_sent = true;
            let at_us = self.hs.syn_us.unwrap();
            // Its TS val only stands for the SYN-ACK's (the peer's echo of it is mapped, not
            // read: the model measures the RTT from the handshake's timing).
            let options = if self.hs.ts_ok { vec![WireOption::Timestamp { val: Config::default().ts_base, ecr: 0 }] } else { vec![] };
            return Ok(Next::Packet(Captured {
                at_us,
                flags: SYN | ACK,
                seq: 0,
                ack: self.hs.remote_isn.wrapping_add(1),
                win: 0,
                urg: 0,
                tos: 0,
                options,
                payload_len: 0,
                unknown: Unknown { psh: true, win: true, tos: true },
                note: None,
                applied: Some("the model starts established: the handshake is the script's input, not something it checks".into()),
            }));
        }
        if expect.flags.fin || expect.flags.rst {
            return Err(stop("FIN/RST from the sender is not modelled"));
        }
        if expect.len == 0 {
            return Ok(Next::OutOfScope("pure ACKs from the sender are not modelled".into()));
        }
        let Some(d) = self.d.as_mut() else { return Err(stop("outbound segment before any data was written")) };
        let end_ms = ((deadline_us.saturating_sub(self.w0_us)).clamp(0, u32::MAX as i64 * 1000) / 1000) as u32;
        for _ in 0..64 {
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
        let Some(s) = d.out.pop_front() else { return Ok(Next::Timeout) };
        let c = self.captured(s);
        self.now_us = self.now_us.max(c.at_us);
        Ok(Next::Packet(c))
    }

    fn syscall(&mut self, s: &Syscall, _cx: &SysCtx) -> Result<SysResult, Halt> {
        match s.name.as_str() {
            "socket" | "bind" | "listen" => Ok(SysResult::Other(Outcome1::applied(None))),
            "setsockopt" => self.setsockopt(s),
            "getsockopt" => self.getsockopt(s),
            "accept" | "accept4" => {
                if self.hs.rtt_ms.is_none() {
                    return Err(stop("accept before the handshake completed"));
                }
                self.hs.accepted = true;
                Ok(SysResult::Other(Outcome1::applied(None)))
            }
            "connect" => Err(stop("active open (connect) is not modelled: the model starts from a passive open")),
            "write" | "send" => match s.args.get(2) {
                Some(Expr::Int(n)) => self.write(*n),
                _ => Err(stop("write size is not a literal")),
            },
            "fcntl" | "ioctl" => Ok(SysResult::Other(Outcome1::out_of_scope(format!("{} results are not modelled", s.name)))),
            other => Err(stop(format!("system call `{other}` is not modelled"))),
        }
    }

    fn shell(&mut self, cmd: &str, _env: &[(String, String)]) -> Result<Outcome1, Halt> {
        self.shell_line(cmd)
    }

    fn code_values(&mut self) -> Result<CodeValues, String> {
        let mut values = BTreeMap::new();
        let mut missing = Vec::new();
        for f in trc_pkt::symbols::TCPI_FIELDS {
            match self.d.as_ref().and_then(|d| d.tcpi(f)) {
                Some(v) => {
                    values.insert(f.to_string(), v as u64);
                }
                None => missing.push(f.to_string()),
            }
        }
        Ok(CodeValues { values, missing })
    }
}

/// The sender's MSS after a SYN with MSS option `opt` (as `tcp_parse_options` and
/// `tcp_mtu_to_mss` make it on MTU 1500): an option of 0 is ignored (the default 536), the
/// value is capped by the route (1460) and raised to `net.ipv4.tcp_min_snd_mss` (48), and the
/// timestamp option's 12 bytes come off that.
fn negotiated_mss(opt: Option<u16>, ts: bool) -> u32 {
    let clamp = match opt {
        None | Some(0) => 536,
        Some(m) => u32::from(m),
    };
    clamp.clamp(TCP_MIN_SND_MSS, 1460) - if ts { 12 } else { 0 }
}

/// `net.ipv4.tcp_min_snd_mss`'s default.
const TCP_MIN_SND_MSS: u32 = 48;

/// Largest write the model replays, in bytes (the kernel runner's limit too: larger writes are
/// refused, not truncated).
pub const MAX_WRITE_BYTES: i64 = 256 << 20;

/// Bytes the script's writes add up to (the model sizes its data up front): positive literal
/// sizes only (a negative or zero one stops the replay at its line), saturating.
fn script_write_bytes(script: &Script) -> i64 {
    script
        .statements
        .iter()
        .filter_map(|st| match &st.kind {
            StatementKind::Syscall(s) if matches!(s.name.as_str(), "write" | "send") => match s.args.get(2) {
                Some(Expr::Int(n)) if *n > 0 => Some(*n),
                _ => None,
            },
            _ => None,
        })
        .fold(0i64, i64::saturating_add)
}

/// A `tcp_reordering` / `tcp_max_reordering` value the model holds (`Config`'s range).
fn reordering_sysctl(name: &str, n: i64) -> Result<u32, Halt> {
    u32::try_from(n).ok().filter(|v| (1..=trc_model::config::MAX_REORDERING).contains(v)).ok_or_else(|| stop(format!("{name}={n}: the model holds 1 to {}", trc_model::config::MAX_REORDERING)))
}

/// Script time `since_w0_us` after the first write within the model's clock
/// ([`trc_model::config::MAX_HORIZON_MS`]: its µs clocks are u32, as the kernel's).
fn model_time_ok(since_w0_us: i64) -> Result<(), Halt> {
    let max = trc_model::config::MAX_HORIZON_MS;
    if since_w0_us > max as i64 * 1000 {
        return Err(stop(format!("script time {:.3} s after the first write: the model's clock runs for at most {} s", since_w0_us as f64 / 1e6, max / 1000)));
    }
    Ok(())
}

/// A write's size within [`MAX_WRITE_BYTES`].
fn write_size_ok(n: i64) -> Result<(), Halt> {
    if n > MAX_WRITE_BYTES {
        return Err(stop(format!("write of {n} bytes: the model replays writes of at most {MAX_WRITE_BYTES} bytes")));
    }
    Ok(())
}

/// The configuration the script leads to must be one the model accepts (`Config::validate`).
fn model_config_ok(cfg: &Config) -> Result<(), Halt> {
    cfg.validate().map_err(|e| stop(format!("the script's connection is outside the model's bounds: {e}")))
}

fn fmt_sent(s: &Sent, mss: u32) -> String {
    format!("{}:{}({}) {} at {} ms", 1 + s.seg * mss, 1 + (s.seg + 1) * mss, mss, if s.rtx { "retransmission" } else { "new data" }, s.at)
}
