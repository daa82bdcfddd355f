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
use trc_model::sender::ack::AckSeg;
use trc_model::{CcKind, Config, Profile};
use trc_pkt::ast::{Expr, Packet, Script, StatementKind, Syscall};
use trc_pkt::engine::{
    self, Backend, Captured, CodeValues, CodeValuesError, Halt, LivePacket, Next, Outcome1,
    Settings, SysCtx, SysResult, Unknown,
};
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
        let mut o = format!(
            "trc replay: {} on profile {}\n",
            self.script.file, self.profile
        );
        o.push_str(&self.script.render());
        for u in &self.unmatched {
            o.push_str(&format!(
                "note: model transmission not matched by any line: {u}\n"
            ));
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
    /// Never run a shell line: a line that needs `/bin/sh` (anything but settings) is out of
    /// scope (the fuzz targets; `trc replay --no-shell`).
    pub no_shell: bool,
}

/// The settings the model reads: sysctls of the script's namespace and CUBIC's module
/// parameters.
#[derive(Clone, Debug)]
struct Sysctls {
    sack: bool,
    ts: bool,
    frto: bool,
    tlp: bool,
    dsack: bool,
    reordering: u32,
    max_reordering: u32,
    /// `tcp_ecn`: 0 off, 1 request and accept, 2 accept only (a passive open negotiates ECN
    /// unless 0).
    ecn: i64,
    slow_start_after_idle: bool,
    hystart: bool,
    hystart_detect: u8,
    hystart_low_window: u32,
}

impl Default for Sysctls {
    /// A fresh network namespace (and CUBIC's module defaults).
    fn default() -> Self {
        Sysctls {
            sack: true,
            ts: true,
            frto: true,
            tlp: true,
            dsack: true,
            reordering: 3,
            max_reordering: 300,
            ecn: 2,
            slow_start_after_idle: true,
            hystart: true,
            hystart_detect: 3,
            hystart_low_window: 16,
        }
    }
}

impl Sysctls {
    /// What packetdrill's `defaults.sh` leaves (the gtests' and trc's own): a fresh namespace
    /// with `tcp_ecn=0` and `tcp_slow_start_after_idle=0`; module parameters untouched.
    fn after_defaults_sh(&self) -> Sysctls {
        Sysctls {
            ecn: 0,
            slow_start_after_idle: false,
            hystart: self.hystart,
            hystart_detect: self.hystart_detect,
            hystart_low_window: self.hystart_low_window,
            ..Sysctls::default()
        }
    }
}

/// How the model treats a sysctl it does not read.
fn unread_sysctl(name: &str) -> Result<&'static str, &'static str> {
    Ok(match name {
        "tcp_rmem" | "tcp_moderate_rcvbuf" | "tcp_app_win" | "tcp_adv_win_scale" | "tcp_workaround_signed_windows" => "receive-side buffering: the model's peer is the script",
        "tcp_wmem" => "send buffer sizes: the model's send buffer holds every write",
        "tcp_syn_retries" | "tcp_synack_retries" | "tcp_syncookies" => "handshake retries and cookies: the handshake is the script's input",
        "tcp_fastopen" | "tcp_fastopen_key" => "Fast Open: only used when the SYN carries a Fast Open option, which the model refuses",
        "tcp_fack" => "has no effect since Linux 4.15 (RACK replaced FACK)",
        "tcp_ecn_option" | "tcp_ecn_fallback" => "AccECN/fallback options: only with tcp_ecn >= 3",
        "tcp_pacing_ss_ratio" | "tcp_pacing_ca_ratio" => "pacing rates: only used when the flow is paced (fq), which the model refuses",
        "tcp_notsent_lowat" => "writability threshold: the model's writes are never blocked",
        "tcp_no_metrics_save" => "the metrics cache: one connection per namespace",
        "tcp_tso_win_divisor" | "tcp_min_tso_segs" | "tcp_tso_rtt_log" | "tcp_autocorking" | "tcp_limit_output_bytes" => "TSO sizing and small-queue limits: the model sends per segment and the replay matches the kernel's packets line by line",
        "tcp_mtu_probing" | "tcp_base_mss" | "tcp_probe_threshold" | "tcp_probe_interval" | "tcp_mtu_probe_floor" => return Err("MTU probing is not modelled"),
        "tcp_rto_min_us" | "tcp_rto_max_ms" | "tcp_thin_linear_timeouts" | "tcp_retries1" | "tcp_retries2" | "tcp_orphan_retries" => return Err("RTO bounds and retry limits are not modelled (the model's RTO is srtt + 200 ms, never aborting)"),
        "tcp_thin_dupack" | "tcp_comp_sack_nr" | "tcp_comp_sack_delay_ns" | "tcp_comp_sack_slack_ns" => "has no sender-side effect the model tracks",
        _ => return Err("not modelled, and it may change the sender"),
    })
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
    /// An active open (`connect()`): `syn_us` is then our SYN's time.
    active: bool,
    /// The peer's window scale (its SYN's `wscale`, 0 without one): `tp->rx_opt.snd_wscale`.
    snd_wscale: u8,
    /// The largest window the peer advertised, in bytes (`tp->max_window`; the SYN's unscaled).
    max_window: u32,
    /// The peer's send window in bytes (`tp->snd_wnd`) and the peer sequence number that last
    /// set it (`tp->snd_wl1`); `None` before the handshake set them.
    snd_wnd: Option<(u32, u32)>,
    /// Active open: the handshake's last ACK (ours) is due, at this script µs.
    final_ack_us: Option<i64>,
}

/// An orderly close once everything is acknowledged: the sender's FIN, the peer's FIN, the
/// sender's last ACK. Not the model's business (no recovery is left), so the replay plays it
/// out itself — and stops at anything else (a FIN retransmission, a close with data still
/// outstanding).
#[derive(Clone, Debug, Default)]
struct Teardown {
    /// Script µs of `close()`.
    closed_us: i64,
    /// Script sequence number of the FIN.
    fin_seq: u32,
    fin_sent: bool,
    /// Script µs of the peer's FIN, once it came (our ACK of it is due).
    peer_fin_us: Option<i64>,
    last_ack_sent: bool,
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
    /// The shell that runs the script's commands (made at the first line that needs one).
    shell: Option<crate::model_shell::ModelShell>,
    /// Shell lines are not run ([`ReplayOptions::no_shell`]).
    no_shell: bool,
    /// Where shell lines run: the script's directory.
    script_dir: std::path::PathBuf,
    config: Option<Config>,
    teardown: Option<Teardown>,
}

/// Replays `script` on `profile`.
pub fn replay(
    script: &Script,
    file: &str,
    profile: &Profile,
    opts: &ReplayOptions,
) -> ReplayReport {
    let mut b = ModelBackend::new(profile, script);
    b.no_shell = opts.no_shell;
    b.script_dir = std::path::Path::new(file)
        .parent()
        .filter(|d| d.is_dir())
        .map(|d| d.to_path_buf())
        .unwrap_or_else(std::env::temp_dir);
    let mut cli = engine::run_all_defines();
    cli.extend(opts.packetdrill.iter().cloned());
    let (report, unmatched) = match Settings::resolve(script, file, &cli) {
        Ok(settings) => {
            let r = engine::run(script, file, settings, &mut b);
            let u =
                b.d.as_ref()
                    .map(|d| d.out.iter().map(|s| fmt_sent(s, b.hs.mss)).collect())
                    .unwrap_or_default();
            (r, u)
        }
        Err(e) => {
            let mut r = Report::new(file);
            r.stopped = Some((0, e.to_string()));
            r.finish();
            (r, Vec::new())
        }
    };
    ReplayReport {
        script: report,
        profile: profile.name.clone(),
        config: b.config.clone(),
        sack: b.config.as_ref().map(|_| b.hs.sack_ok),
        unmatched,
    }
}

/// Why a script file could not be replayed: it cannot be read, or it does not parse.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// `file: why`, or `file:line: not valid UTF-8`.
    #[error(transparent)]
    Read(#[from] trc_files::ReadError),
    /// A malformed script (`file:line:col: ...`).
    #[error(transparent)]
    Parse(#[from] trc_pkt::ParseError),
}

/// Parses and replays a file.
pub fn replay_file(
    path: &std::path::Path,
    profile: &Profile,
    opts: &ReplayOptions,
) -> Result<ReplayReport, ScriptError> {
    let src = trc_files::read_source(path)?;
    let name = path.display().to_string();
    let script = trc_pkt::parse(&src, &name)?;
    Ok(replay(&script, &name, profile, opts))
}

fn stop(why: impl Into<String>) -> Halt {
    Halt::Stop(why.into())
}

impl<'a> ModelBackend<'a> {
    fn new(profile: &'a Profile, script: &Script) -> ModelBackend<'a> {
        let total_bytes = script_write_bytes(script);
        ModelBackend {
            profile,
            sys: Sysctls::default(),
            initcwnd: 10,
            cc: CcKind::Cubic,
            hs: Handshake {
                mss: 536,
                ..Default::default()
            },
            total_bytes,
            d: None,
            w0_us: 0,
            now_us: 0,
            shell: None,
            no_shell: false,
            script_dir: std::path::PathBuf::from("."),
            config: None,
            teardown: None,
        }
    }

    /// Model ms of script µs `t_us` (rounded to the nearest ms).
    fn model_ms(&self, t_us: i64) -> u32 {
        ((t_us
            .saturating_sub(self.w0_us)
            .clamp(0, u32::MAX as i64 * 1000 - 500)
            + 500)
            / 1000) as u32
    }

    /// Fires the pending timer while its deadline is before model time `t`.
    fn fire_before(&mut self, t: u32) -> Result<(), Halt> {
        for _ in 0..64 {
            let Some(d) = self.d.as_mut() else {
                return Ok(());
            };
            match d.timer() {
                Some(tm) if tm.deadline < t => {
                    let sent = d.fire().map(|(_, s)| s).unwrap_or_default();
                    self.window_allows(&sent)?;
                }
                _ => break,
            }
        }
        Ok(())
    }

    /// The settings into a running driver's configuration.
    fn sync_cfg(&mut self) {
        if let Some(d) = self.d.as_mut() {
            d.cfg.frto = self.sys.frto;
            d.cfg.tlp = self.sys.tlp;
            d.cfg.dsack = self.sys.dsack;
            d.cfg.sysctl_reordering = self.sys.reordering;
            d.cfg.sysctl_max_reordering = self.sys.max_reordering;
            d.cfg.slow_start_after_idle = self.sys.slow_start_after_idle;
            d.cfg.hystart = self.sys.hystart;
            d.cfg.hystart_detect = self.sys.hystart_detect;
            d.cfg.hystart_low_window = self.sys.hystart_low_window;
            d.cfg.cc = self.cc;
        }
    }

    /// The MIB counters so far.
    fn counters(&self) -> trc_model::mib::MibTotals {
        self.d
            .as_ref()
            .map(|d| d.counters.clone())
            .unwrap_or_default()
    }

    /// The first write: the model starts with the whole script's data (it tracks segments
    /// written up front and later writes), its first flight leaving now.
    fn start(&mut self, segs: u32) -> Result<Outcome1, Halt> {
        let mss = self.hs.mss;
        let total = u32::try_from(self.total_bytes / mss as i64).unwrap_or(u32::MAX);
        if total > trc_model::config::MAX_SEGMENTS {
            return Err(stop(format!(
                "{total} segments of data: the model tracks at most {}",
                trc_model::config::MAX_SEGMENTS
            )));
        }
        let cfg = Config {
            segments: segs as u16,
            extra_writes: (total - segs) as u16,
            initcwnd: self.initcwnd,
            rtt_ms: self.hs.rtt_ms.unwrap_or(50).max(1),
            timestamps: self.hs.ts_ok,
            frto: self.sys.frto,
            tlp: self.sys.tlp,
            dsack: self.sys.dsack,
            ecn: self.hs.ecn,
            sysctl_reordering: self.sys.reordering,
            sysctl_max_reordering: self.sys.max_reordering,
            slow_start_after_idle: self.sys.slow_start_after_idle,
            hystart: self.sys.hystart,
            hystart_detect: self.sys.hystart_detect,
            hystart_low_window: self.sys.hystart_low_window,
            cc: self.cc,
            sack: if self.hs.sack_ok {
                trc_model::SackMode::Sack
            } else {
                trc_model::SackMode::NoSack
            },
            rtt_estimator: true,
            ..Config::default()
        };
        model_config_ok(&cfg)?;
        self.w0_us = self.now_us;
        self.config = Some(cfg.clone());
        self.d = Some(Driver::start(cfg, self.profile.clone(), self.hs.sack_ok));
        let first: Vec<Sent> = self.d.as_ref().unwrap().out.iter().copied().collect();
        self.window_allows(&first)?;
        Ok(Outcome1::applied(Some(format!(
            "{segs} segment(s) written; model time 0"
        ))))
    }

    fn write(&mut self, n: i64) -> Result<SysResult, Halt> {
        if !self.hs.accepted {
            return Err(stop(
                "write before the connection is established and accepted",
            ));
        }
        write_size_ok(n)?;
        let mss = self.hs.mss as i64;
        if n <= 0 || n % mss != 0 {
            return Err(stop(format!(
                "write of {n} bytes is not a whole number of {mss}-byte (MSS) segments"
            )));
        }
        let segs = (n / mss) as u32;
        if self.d.is_none() {
            return self.start(segs).map(SysResult::Other);
        }
        let t = self.model_ms(self.now_us);
        self.fire_before(t)?;
        let sent = self.d.as_mut().unwrap().write(t, segs);
        self.window_allows(&sent)?;
        Ok(SysResult::Other(Outcome1::applied(Some(format!(
            "{segs} segment(s) written"
        )))))
    }

    /// `connect()`: an active open. Like the passive one, the handshake is the script's input:
    /// the replay plays along (our SYN, the peer's SYN-ACK, our ACK) and takes the negotiated
    /// options and the RTT from it.
    fn connect(&mut self) -> Result<SysResult, Halt> {
        if self.hs.syn_us.is_some() {
            return Err(stop("connect() on a socket that already has a connection"));
        }
        self.hs.active = true;
        self.hs.syn_us = Some(self.now_us);
        Ok(SysResult::Other(Outcome1::applied(Some(
            "active open: the SYN leaves now".into(),
        ))))
    }

    /// Active open: the peer's SYN-ACK negotiates what our SYN offered.
    /// The peer's SYN or SYN-ACK: its window scale and first (unscaled) window.
    fn peer_window_of_syn(&mut self, p: &LivePacket) {
        self.hs.snd_wscale = p
            .options
            .iter()
            .find_map(|o| {
                if let WireOption::WScale { shift } = o {
                    Some((*shift).min(14))
                } else {
                    None
                }
            })
            .unwrap_or(0);
        self.hs.max_window = u32::from(p.win);
    }

    fn synack(&mut self, p: &LivePacket) -> Result<Outcome1, Halt> {
        fast_open_refused(p)?;
        let syn = self
            .hs
            .syn_us
            .filter(|_| self.hs.active && self.hs.rtt_ms.is_none())
            .ok_or_else(|| stop("inbound SYN-ACK without our SYN"))?;
        self.peer_window_of_syn(p);
        let mut mss = 536u32;
        let (mut sack, mut ts) = (false, false);
        for o in &p.options {
            match o {
                WireOption::Mss { mss: m } => mss = u32::from(*m),
                WireOption::SackOk => sack = true,
                WireOption::Timestamp { .. } => ts = true,
                _ => {}
            }
        }
        self.hs.sack_ok = sack && self.sys.sack;
        self.hs.ts_ok = ts && self.sys.ts;
        // tcp_ecn=1 puts ECE|CWR on our SYN; a SYN-ACK with ECE (not CWR) accepts.
        self.hs.ecn = self.sys.ecn == 1 && p.flags & ECE != 0 && p.flags & wire::CWR == 0;
        self.hs.mss = mss.min(1460) - if self.hs.ts_ok { 12 } else { 0 };
        self.hs.remote_isn = p.seq;
        // tcp_rcv_synsent_state_process(): `tcp_init_wl(tp, seq)`, and the SYN-ACK's window is
        // never scaled (RFC 7323).
        self.hs.snd_wnd = Some((u32::from(p.win), p.seq));
        let rtt = ((self.now_us - syn + 500) / 1000).max(1) as u32;
        self.hs.rtt_ms = Some(rtt);
        self.hs.accepted = true;
        self.hs.final_ack_us = Some(self.now_us);
        Ok(Outcome1::applied(Some(format!(
            "active open: {}, {}, {}MSS {}, RTT {rtt} ms",
            if self.hs.sack_ok { "SACK" } else { "no SACK" },
            if self.hs.ts_ok {
                "timestamps"
            } else {
                "no timestamps"
            },
            if self.hs.ecn { "ECN, " } else { "" },
            self.hs.mss
        ))))
    }

    /// The handshake packets the replay plays along with (not checked: the model starts
    /// established).
    fn handshake_packet(
        &self,
        at_us: i64,
        flags: u8,
        seq: u32,
        ack: u32,
        options: Vec<WireOption>,
    ) -> Next {
        Next::Packet(control_packet(
            at_us,
            flags,
            seq,
            ack,
            options,
            None,
            Some(HANDSHAKE_APPLIED.into()),
        ))
    }

    /// `close()` of the connection: a FIN goes out at once if everything written is
    /// acknowledged (see [`Teardown`]).
    fn close(&mut self) -> Result<SysResult, Halt> {
        if self.teardown.is_some() {
            return Err(stop("a second close() is not modelled"));
        }
        if self.hs.rtt_ms.is_none() {
            return Err(stop(
                "close() before the connection is established is not modelled",
            ));
        }
        let fin_seq = match self.d.as_ref() {
            // Nothing written: the FIN is the first byte of sequence space.
            None => 1,
            Some(d) => {
                let s = &d.snd;
                if s.snd_una != s.write_seq || s.packets_out != 0 {
                    return Err(stop("close() with data outstanding: the FIN's transmission behind it is not modelled"));
                }
                1 + (s.write_seq.wrapping_sub(d.cfg.isn)) * self.hs.mss
            }
        };
        self.teardown = Some(Teardown {
            closed_us: self.now_us,
            fin_seq,
            ..Default::default()
        });
        Ok(SysResult::Other(Outcome1::applied(Some(
            "orderly close: everything written is acknowledged, the FIN leaves now".into(),
        ))))
    }

    /// The TS option of a segment the sender sends now (its TSval is the model's clock).
    fn ts_option(&self, at_us: i64) -> Vec<WireOption> {
        if !self.hs.ts_ok {
            return vec![];
        }
        // The model's TS clock: `ts_base` at model time 0 (the first write), or at the SYN when
        // nothing was written.
        let (base, ms) = match self.d.as_ref() {
            Some(d) => (d.cfg.ts_base, self.model_ms(at_us)),
            None => (
                Config::default().ts_base,
                ((at_us - self.hs.syn_us.unwrap_or(0)).max(0) / 1000) as u32,
            ),
        };
        vec![
            WireOption::Nop,
            WireOption::Nop,
            WireOption::Timestamp {
                val: ms.wrapping_add(base),
                ecr: 0,
            },
        ]
    }

    /// The teardown's outbound segments: the FIN after `close()`, the ACK of the peer's FIN.
    fn teardown_outbound(&mut self, expect: &Packet) -> Result<Next, Halt> {
        let ack = self.hs.remote_isn.wrapping_add(1);
        let t = self.teardown.as_mut().unwrap();
        let (at_us, flags, seq, ack) = if expect.flags.fin {
            if t.fin_sent {
                return Err(stop("FIN retransmission is not modelled"));
            }
            t.fin_sent = true;
            (t.closed_us, FIN | ACK, t.fin_seq, ack)
        } else {
            match t.peer_fin_us {
                Some(at) if !t.last_ack_sent => {
                    t.last_ack_sent = true;
                    (at, ACK, t.fin_seq.wrapping_add(1), ack.wrapping_add(1))
                }
                _ => {
                    return Ok(Next::OutOfScope(
                        "pure ACKs from the sender are not modelled".into(),
                    ))
                }
            }
        };
        let options = self.ts_option(at_us);
        Ok(Next::Packet(control_packet(
            at_us,
            flags,
            seq,
            ack,
            options,
            Some("orderly close".into()),
            None,
        )))
    }

    /// An inbound segment after `close()`: the ACK of our FIN, the peer's FIN.
    fn teardown_inbound(&mut self, p: &LivePacket) -> Result<Outcome1, Halt> {
        let now = self.now_us;
        let t = self.teardown.as_mut().unwrap();
        if p.flags & RST != 0 || p.payload_len > 0 {
            return Err(stop(
                "data or RST from the peer after close() is not modelled",
            ));
        }
        if !t.fin_sent {
            return Err(stop(
                "a segment from the peer before the FIN left is not modelled",
            ));
        }
        if p.ack != t.fin_seq.wrapping_add(1) {
            return Err(stop(format!(
                "after close(), an ACK of {} rather than of the FIN ({}) is not modelled",
                p.ack,
                t.fin_seq.wrapping_add(1)
            )));
        }
        if p.flags & FIN != 0 {
            if t.peer_fin_us.is_some() {
                return Err(stop("a repeated FIN from the peer is not modelled"));
            }
            t.peer_fin_us = Some(now);
            return Ok(Outcome1::applied(Some(
                "the peer's FIN: the sender ACKs it".into(),
            )));
        }
        Ok(Outcome1::applied(Some("the peer ACKs the FIN".into())))
    }

    fn setsockopt(&mut self, s: &Syscall) -> Result<SysResult, Halt> {
        let harmless = |why: &str| Ok(SysResult::Other(Outcome1::applied(Some(why.to_string()))));
        match (s.args.get(2), s.args.get(3)) {
            (Some(Expr::Word(w)), _) if w == "SO_REUSEADDR" || w == "SO_REUSEPORT" => Ok(SysResult::Other(Outcome1::applied(None))),
            (Some(Expr::Word(w)), _) if w == "SO_SNDBUF" => harmless("SO_SNDBUF: the model's send buffer holds every write"),
            (Some(Expr::Word(w)), _) if w == "SO_RCVBUF" => harmless("SO_RCVBUF: receive side, the model's peer is the script"),
            (Some(Expr::Word(w)), _) if w == "IP_TOS" => harmless("IP_TOS: the TOS byte of the packets, which the model does not track (ECN bits aside)"),
            (Some(Expr::Word(w)), _) if w == "IP_MTU_DISCOVER" => harmless("IP_MTU_DISCOVER: path MTU discovery, which the model has no part in (its MSS is fixed)"),
            (Some(Expr::Word(w)), _) if w == "TCP_NODELAY" => harmless("TCP_NODELAY: the model's writes are whole segments, which Nagle never holds"),
            (Some(Expr::Word(w)), Some(Expr::Str(cc))) if w == "TCP_CONGESTION" => {
                self.cc = match cc.as_str() {
                    "cubic" => CcKind::Cubic,
                    "reno" => CcKind::Reno,
                    other => return Err(stop(format!("congestion control \"{other}\" is not modelled (cubic, reno)"))),
                };
                self.sync_cfg();
                Ok(SysResult::Other(Outcome1::applied(Some(format!("congestion control {cc}")))))
            }
            (Some(Expr::Word(w)), _) => Err(stop(format!("socket option {w} is not modelled and may change the sender"))),
            _ => Err(stop("a socket option the model does not read")),
        }
    }

    /// `getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, "name", len)`: the model's congestion control.
    fn getsockopt(&mut self, s: &Syscall) -> Result<SysResult, Halt> {
        match (s.args.get(2), s.args.get(3)) {
            (Some(Expr::Word(w)), Some(Expr::Str(want))) if w == "TCP_CONGESTION" => {
                let have = if self.cc == CcKind::Reno {
                    "reno"
                } else {
                    "cubic"
                };
                let problems = if want == have {
                    vec![]
                } else {
                    vec![format!("value \"{have}\", expected \"{want}\"")]
                };
                Ok(SysResult::Returned {
                    ret: 0,
                    errno: 0,
                    notes: vec![],
                    problems,
                })
            }
            _ => Ok(SysResult::Other(Outcome1::out_of_scope(
                "getsockopt results other than TCP_CONGESTION are not modelled",
            ))),
        }
    }

    /// The inbound SYN of the passive open: what it negotiates (with the sysctls). Data on the
    /// SYN or a Fast Open option (TCP Fast Open, RFC 7413) is not modelled.
    fn syn(&mut self, p: &LivePacket) -> Result<Outcome1, Halt> {
        fast_open_refused(p)?;
        self.peer_window_of_syn(p);
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
        self.hs.ecn = p.flags & ECE != 0 && p.flags & wire::CWR != 0 && self.sys.ecn != 0;
        self.hs.mss = negotiated_mss(mss, self.hs.ts_ok);
        self.hs.remote_isn = p.seq;
        self.hs.syn_us = Some(self.now_us);
        Ok(Outcome1::applied(Some(format!(
            "passive open: {}, {}, MSS {}",
            if self.hs.sack_ok { "SACK" } else { "no SACK" },
            if self.hs.ts_ok {
                "timestamps"
            } else {
                "no timestamps"
            },
            self.hs.mss
        ))))
    }

    /// RFC 5961 5.2 in `tcp_ack()`: an ACK more than `min(max_window, bytes_acked)` below
    /// `snd_una` is answered with a challenge ACK and discarded, which the model does not do
    /// (`Sender::tcp_ack_old` takes every ACK below `snd_una`): such a script is out of scope.
    fn too_old_ack(&self, p: &LivePacket) -> Option<String> {
        let d = self.d.as_ref()?;
        let mss = self.hs.mss as u64;
        let una = d.snd.snd_una.wrapping_sub(d.cfg.isn) as u64 * mss + 1;
        let ack = p.ack as u64;
        let lag = una.checked_sub(ack).filter(|&l| l > 0 && l < 1 << 31)?;
        let bytes_acked = una - 1;
        let limit = (self.hs.max_window as u64).min(bytes_acked);
        (lag > limit).then(|| format!("ack {ack} is {lag} bytes below snd_una, more than min(max_window {}, bytes_acked {bytes_acked}): the kernel answers with a challenge ACK and discards it (RFC 5961 5.2), which is not modelled", self.hs.max_window))
    }

    /// `snd_una` as a script sequence number (1 before any data).
    fn snd_una_bytes(&self) -> u32 {
        self.d.as_ref().map_or(1, |d| {
            1 + d.snd.snd_una.wrapping_sub(d.cfg.isn) * self.hs.mss
        })
    }

    /// `tcp_ack_update_window()`: the ACK's window (scaled) becomes `snd_wnd` when
    /// `tcp_may_update_window()` allows it: the ACK advances `snd_una`, or its sequence number is
    /// newer than `snd_wl1`, or it is the same and the window grew or is zero. A segment
    /// without ACK never reaches `tcp_ack()`, and `tcp_ack()` returns before the update for an
    /// ACK below `snd_una` (`old_ack`) or above `snd_nxt` (unsent data): those change nothing.
    fn ack_update_window(&mut self, p: &LivePacket) {
        let Some((wnd, wl1)) = self.hs.snd_wnd else {
            return;
        };
        let (una, ack) = (self.snd_una_bytes(), p.ack);
        let nxt = self.d.as_ref().map_or(1, |d| {
            1 + d.snd.snd_nxt.wrapping_sub(d.cfg.isn) * self.hs.mss
        });
        if p.flags & ACK == 0
            || (ack.wrapping_sub(una) as i32) < 0
            || (ack.wrapping_sub(nxt) as i32) > 0
        {
            return;
        }
        let nwin = u32::from(p.win) << self.hs.snd_wscale;
        let seq_after = (p.seq.wrapping_sub(wl1) as i32) > 0;
        if ack != una || seq_after || (p.seq == wl1 && (nwin > wnd || nwin == 0)) {
            self.hs.snd_wnd = Some((nwin, p.seq));
        }
    }

    /// The peer's window against what the model just sent. The kernel sends new data only
    /// within `snd_una + snd_wnd` (`tcp_snd_wnd_test()` in `tcp_write_xmit()` and
    /// `tcp_send_loss_probe()`) and trims or holds a retransmission that reaches past it
    /// (`__tcp_retransmit_skb()`); the model has no receive window, so a transmission the
    /// window would have stopped makes the rest of the script out of scope.
    fn window_allows(&self, sent: &[Sent]) -> Result<(), Halt> {
        let Some((wnd, _)) = self.hs.snd_wnd else {
            return Ok(());
        };
        let mss = self.hs.mss;
        let una = self.snd_una_bytes();
        let wnd_end = una.wrapping_add(wnd);
        for s in sent {
            let (seq, end) = (1 + s.seg * mss, 1 + (s.seg + 1) * mss);
            if (end.wrapping_sub(wnd_end) as i32) > 0 {
                return Err(stop(format!(
                    "the peer's receive window limits sending: {}{seq}:{end} reaches past snd_una + snd_wnd = {una} + {wnd} (tcp_snd_wnd_test); flow control by the peer's window is not modelled",
                    if s.rtx { "retransmission " } else { "" }
                )));
            }
        }
        Ok(())
    }

    /// An ACK for the running model: segments from bytes, SACK blocks, the TS echo.
    fn data_ack(&mut self, p: &LivePacket) -> Result<Outcome1, Halt> {
        let mss = self.hs.mss;
        let to_seq = |b: u32| -> Option<u32> {
            b.wrapping_sub(1)
                .is_multiple_of(mss)
                .then(|| 1 + b.wrapping_sub(1) / mss)
        };
        let ack = to_seq(p.ack).ok_or_else(|| {
            stop(format!(
                "ack {} is not on a {mss}-byte segment boundary",
                p.ack
            ))
        })?;
        let mut sacks = Vec::new();
        let mut tsecr = None;
        for o in &p.options {
            match o {
                WireOption::Sack { blocks } => {
                    for (s, e) in blocks {
                        match (to_seq(*s), to_seq(*e)) {
                            (Some(s), Some(e)) => sacks.push((s, e)),
                            _ => {
                                return Err(stop(format!(
                                    "SACK block {s}:{e} is not on {mss}-byte segment boundaries"
                                )))
                            }
                        }
                    }
                }
                WireOption::Timestamp { ecr, .. } => tsecr = Some(*ecr),
                _ => {}
            }
        }
        let seg = AckSeg {
            ack,
            sacks: sacks.into(),
            ece: p.flags & ECE != 0,
            tsecr,
        };
        let t = self.model_ms(self.now_us);
        self.fire_before(t)?;
        let sent = self.d.as_mut().unwrap().ack(t, &seg);
        self.window_allows(&sent)?;
        Ok(Outcome1::applied(None))
    }

    /// A shell line. Its settings (`defaults.sh`, `sysctl`, `ip route ... initcwnd`, module
    /// parameters, ...) configure the model ([`crate::shell`]); if anything else is left —
    /// `nstat`, text tools — the line runs by `/bin/sh` with the settings as `:`
    /// ([`crate::model_shell`]) and its exit status is the check, as on a kernel. A line of
    /// settings only is applied, not checked.
    fn shell_line(&mut self, cmd: &str, env: &[(String, String)]) -> Result<Outcome1, Halt> {
        use crate::shell::{Effect, Sep};
        let mut notes = Vec::new();
        let mut text = String::new();
        let mut runs = false;
        let mut unchecked = None;
        for (sep, simple) in crate::shell::commands(cmd) {
            let effect = crate::shell::interpret(&simple);
            let run = effect == Effect::Run;
            if runs && !run && sep != Sep::Seq {
                return Err(stop(format!(
                    "`{simple}` runs only on the status of a command before it: a setting that depends on one is not modelled"
                )));
            }
            match effect {
                Effect::Run => runs = true,
                Effect::Unchecked(why) => unchecked = Some(why),
                Effect::NotModelled(why) => return Err(stop(why)),
                setting => {
                    if let Some(n) = self.setting(setting)? {
                        notes.push(n);
                    }
                }
            }
            text.push_str(match sep {
                Sep::Seq if text.is_empty() => "",
                Sep::Seq => "\n",
                Sep::And => " && ",
                Sep::Or => " || ",
            });
            text.push_str(if run { &simple } else { ":" });
        }
        let mut o = match (unchecked, runs) {
            (Some(why), _) => Outcome1::out_of_scope(why),
            (None, false) => Outcome1::applied(None),
            (None, true) => self.run_shell(&text, env),
        };
        o.notes.extend(notes.into_iter().filter(|n| !n.is_empty()));
        Ok(o)
    }

    /// One setting of a shell line, applied to the model: a note, if any.
    fn setting(&mut self, effect: crate::shell::Effect) -> Result<Option<String>, Halt> {
        use crate::shell::Effect;
        let mut notes = Vec::new();
        match effect {
            Effect::Defaults => self.sys = self.sys.after_defaults_sh(),
            Effect::Sysctl(settings) => {
                for (k, v) in settings {
                    if let Some(n) = self.sysctl(&k, &v)? {
                        notes.push(n);
                    }
                }
            }
            Effect::ModuleParam {
                module,
                param,
                value,
            } => notes.push(self.module_param(&module, &param, &value)?),
            Effect::InitCwnd(n) if self.hs.syn_us.is_some() => notes.push(format!(
                "initcwnd {n} set after the SYN: no effect on this connection (read when it began)"
            )),
            Effect::InitCwnd(n) => {
                self.initcwnd = n.max(1);
                notes.push(format!("initcwnd {n}"));
            }
            Effect::Sleep(us) => self.now_us = self.now_us.saturating_add(us),
            Effect::ModelOnly(ev) => notes.push(self.model_only(&ev)?),
            Effect::None(why) => notes.push(why),
            Effect::Run | Effect::Unchecked(_) | Effect::NotModelled(_) => {}
        }
        self.sync_cfg();
        Ok(Some(notes.join("; ")).filter(|n| !n.is_empty()))
    }

    /// Runs a line's commands (`text`, its settings as `:`) with the model's `nstat`.
    fn run_shell(&mut self, text: &str, env: &[(String, String)]) -> Outcome1 {
        use crate::model_shell::{LineRun, ModelShell};
        if self.no_shell {
            return Outcome1::out_of_scope("shell lines are not run (no_shell)");
        }
        if self.shell.is_none() {
            match ModelShell::new() {
                Ok(sh) => self.shell = Some(sh),
                Err(e) => {
                    return Outcome1::out_of_scope(format!("cannot prepare the model's shell: {e}"))
                }
            }
        }
        let counters = self.counters();
        let sh = self.shell.as_ref().unwrap();
        match sh.run(text, &self.script_dir, env, &counters) {
            LineRun::Unmodelled(names) => Outcome1::out_of_scope(format!(
                "nstat: {} {} not kept by the model",
                names.join(", "),
                if names.len() == 1 {
                    "is a counter"
                } else {
                    "are counters"
                }
            )),
            LineRun::CannotRun(why) => Outcome1::out_of_scope(why),
            LineRun::Ran {
                code,
                stdout,
                stderr,
                timed_out,
            } => {
                let mut o = match (timed_out, code) {
                    (true, _) => Outcome1::fail(format!(
                        "killed after {} s",
                        trc_shell::TIME_LIMIT.as_secs()
                    )),
                    (false, Some(0)) => Outcome1::pass(),
                    (false, Some(c)) => Outcome1::fail(format!(
                        "error executing `{}` command: non-zero status {c}",
                        text.trim()
                    )),
                    (false, None) => Outcome1::fail("killed by a signal"),
                };
                o.output = Some(stdout).filter(|s| !s.is_empty());
                if !stderr.is_empty() {
                    o.notes.push(format!("stderr: {stderr}"));
                }
                o
            }
        }
    }

    /// One `name=value` sysctl: set the model's configuration, or a note why it does not
    /// matter, or out of scope (the rest of the script would mean nothing to the model).
    fn sysctl(&mut self, name: &str, v: &str) -> Result<Option<String>, Halt> {
        let k = name.trim_start_matches("/proc/sys/").replace('/', ".");
        let k = k.trim_start_matches("net.ipv4.");
        let n: i64 = v.trim().parse().unwrap_or(-1);
        let bad = || stop(format!("net.ipv4.{k}={v}: a value the model does not read"));
        match k {
            "tcp_sack" => self.sys.sack = n != 0,
            "tcp_timestamps" => self.sys.ts = n != 0,
            "tcp_frto" => self.sys.frto = n != 0,
            // 0: no TLP, no early retransmit; 1-2: early retransmit only (gone with RACK);
            // 3: TLP; 4 (defaults.sh): TLP.
            "tcp_early_retrans" if (0..=4).contains(&n) => self.sys.tlp = n >= 3,
            "tcp_dsack" => self.sys.dsack = n != 0,
            "tcp_reordering" if n > 0 => self.sys.reordering = reordering_sysctl(k, n)?,
            "tcp_max_reordering" if n > 0 => self.sys.max_reordering = reordering_sysctl(k, n)?,
            // Bit 0: RACK (always on since 6.17); 0x4 (no dupthresh) means nothing once RACK is
            // the only detector; 0x2 (static reordering window) is not modelled.
            "tcp_recovery" if n >= 0 && n & 2 == 0 => {}
            "tcp_recovery" => return Err(stop(
                "net.ipv4.tcp_recovery with a static RACK reordering window (0x2) is not modelled",
            )),
            "tcp_ecn" if (0..=2).contains(&n) => self.sys.ecn = n,
            "tcp_ecn" => {
                return Err(stop(format!(
                    "net.ipv4.tcp_ecn={n}: AccECN is not modelled"
                )))
            }
            "tcp_slow_start_after_idle" => self.sys.slow_start_after_idle = n != 0,
            "tcp_congestion_control" => {
                self.cc = match v.trim() {
                    "cubic" => CcKind::Cubic,
                    "reno" => CcKind::Reno,
                    other => {
                        return Err(stop(format!(
                            "congestion control \"{other}\" is not modelled (cubic, reno)"
                        )))
                    }
                };
                return Ok(Some(format!(
                    "namespace default congestion control {}",
                    v.trim()
                )));
            }
            "tcp_early_retrans" | "tcp_reordering" | "tcp_max_reordering" => return Err(bad()),
            other => {
                return match unread_sysctl(other) {
                    Ok(why) => Ok(Some(format!("net.ipv4.{other}: {why}"))),
                    Err(why) => Err(stop(format!("net.ipv4.{other}: {why}"))),
                }
            }
        }
        Ok(None)
    }

    /// `echo V > /sys/module/M/parameters/P`: CUBIC's HyStart parameters; anything else stops.
    fn module_param(&mut self, module: &str, param: &str, value: &str) -> Result<String, Halt> {
        let n: i64 = value
            .trim()
            .parse()
            .map_err(|_| stop(format!("{module}.{param}={value}: not a number")))?;
        match (module, param) {
            ("tcp_cubic", "hystart") => self.sys.hystart = n != 0,
            ("tcp_cubic", "hystart_detect") if (0..=3).contains(&n) => {
                self.sys.hystart_detect = n as u8
            }
            ("tcp_cubic", "hystart_low_window") if n >= 0 => self.sys.hystart_low_window = n as u32,
            _ => {
                return Err(stop(format!(
                    "module parameter {module}.{param} is not modelled"
                )))
            }
        }
        Ok(format!(
            "{module}.{param} = {n} (a machine-wide setting on a real kernel)"
        ))
    }

    fn model_only(&mut self, ev: &str) -> Result<String, Halt> {
        let t = self.model_ms(self.now_us);
        let d = self
            .d
            .as_mut()
            .ok_or_else(|| stop("model-only event before any data was written"))?;
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
        let options = if self.hs.ts_ok {
            vec![
                WireOption::Nop,
                WireOption::Nop,
                WireOption::Timestamp {
                    val: s.at.wrapping_add(d.cfg.ts_base),
                    ecr: 0,
                },
            ]
        } else {
            vec![]
        };
        Captured {
            at_us: self.w0_us + s.at as i64 * 1000,
            spread_us: d.timer_spread_us(&s),
            flags: ACK | if s.cwr { wire::CWR } else { 0 },
            seq: 1 + s.seg * mss,
            ack: self.hs.remote_isn.wrapping_add(1),
            win: 0,
            urg: 0,
            // tcp_ecn_send(): new data of an ECN connection is ECT(0), a retransmission not-ECT.
            tos: if self.hs.ecn && !s.rtx { 0x02 } else { 0 },
            options,
            payload_len: mss,
            unknown: Unknown {
                psh: true,
                win: true,
                tos: false,
            },
            note: Some(if s.rtx {
                "model: retransmission".into()
            } else {
                "model: new data".into()
            }),
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
            self.fire_before(t)?;
        }
        self.now_us = self.now_us.max(t_us);
        Ok(())
    }

    fn inbound(&mut self, p: &LivePacket) -> Result<Outcome1, Halt> {
        if self.teardown.is_some() {
            return self.teardown_inbound(p);
        }
        if p.flags & SYN != 0 {
            if p.flags & ACK != 0 {
                return self.synack(p);
            }
            if self.hs.active {
                return Err(stop(
                    "an inbound SYN after connect() (simultaneous open) is not modelled",
                ));
            }
            if self.hs.rtt_ms.is_some() {
                // Its MSS would re-slice data the model already holds in segments of the first
                // (found by the fuzzer: writes in a smaller MSS overran the model's segments).
                return Err(stop(
                    "an inbound SYN after the handshake (a second connection) is not modelled",
                ));
            }
            return self.syn(p);
        }
        if p.flags & (FIN | RST) != 0 {
            return Err(stop("FIN/RST from the peer is not modelled"));
        }
        if p.payload_len > 0 {
            return Err(stop(
                "data from the peer is not modelled (the model's peer only ACKs)",
            ));
        }
        if self.hs.rtt_ms.is_none() {
            // The handshake's last ACK: its delay from the SYN is the path RTT.
            let syn = self.hs.syn_us.ok_or_else(|| stop("ACK before any SYN"))?;
            let rtt = ((self.now_us - syn + 500) / 1000).max(1) as u32;
            self.hs.rtt_ms = Some(rtt);
            // tcp_rcv_state_process() in SYN_RECV: the window of the ACK that completes the
            // passive open, scaled, and `tcp_init_wl(tp, seq)`.
            self.hs.snd_wnd = Some((u32::from(p.win) << self.hs.snd_wscale, p.seq));
            return Ok(Outcome1::applied(Some(format!(
                "handshake complete: RTT {rtt} ms"
            ))));
        }
        self.ack_update_window(p);
        if self.d.is_none() {
            return Ok(Outcome1::out_of_scope(
                "ACK before any data was written: ignored by the model",
            ));
        }
        if p.flags & ACK == 0 {
            return Err(stop("inbound segment without ACK"));
        }
        if p.win == 0 {
            return Err(stop("zero window is not modelled"));
        }
        let too_old = self.too_old_ack(p);
        self.hs.max_window = self
            .hs
            .max_window
            .max(u32::from(p.win) << self.hs.snd_wscale);
        if let Some(why) = too_old {
            return Err(stop(why));
        }
        self.data_ack(p)
    }

    fn next_outbound(&mut self, deadline_us: i64, expect: &Packet) -> Result<Next, Halt> {
        if self.hs.active && expect.flags.syn && !self.hs.synack_sent {
            // Our SYN (`synack_sent` marks the handshake's first outbound packet as consumed).
            self.hs.synack_sent = true;
            let options = if self.sys.ts {
                vec![WireOption::Timestamp {
                    val: Config::default().ts_base,
                    ecr: 0,
                }]
            } else {
                vec![]
            };
            let flags = SYN
                | if self.sys.ecn == 1 {
                    ECE | wire::CWR
                } else {
                    0
                };
            return Ok(self.handshake_packet(self.hs.syn_us.unwrap(), flags, 0, 0, options));
        }
        if let Some(at) = self
            .hs
            .final_ack_us
            .filter(|_| expect.len == 0 && !expect.flags.syn && !expect.flags.fin)
        {
            self.hs.final_ack_us = None;
            let options = self.ts_option(at);
            return Ok(self.handshake_packet(
                at,
                ACK,
                1,
                self.hs.remote_isn.wrapping_add(1),
                options,
            ));
        }
        if expect.flags.syn {
            if self.hs.syn_us.is_none() || self.hs.synack_sent {
                return Err(stop("outbound SYN: active open is not modelled"));
            }
            self.hs.synack_sent = true;
            let at_us = self.hs.syn_us.unwrap();
            // Its TS val only stands for the SYN-ACK's (the peer's echo of it is mapped, not
            // read: the model measures the RTT from the handshake's timing).
            let options = if self.hs.ts_ok {
                vec![WireOption::Timestamp {
                    val: Config::default().ts_base,
                    ecr: 0,
                }]
            } else {
                vec![]
            };
            // tcp_ecn_make_synack(): ECE when the SYN's ECN request was accepted.
            let ece = if self.hs.ecn { ECE } else { 0 };
            return Ok(Next::Packet(control_packet(
                at_us,
                SYN | ACK | ece,
                0,
                self.hs.remote_isn.wrapping_add(1),
                options,
                None,
                Some(HANDSHAKE_APPLIED.into()),
            )));
        }
        if self.teardown.is_some() && !expect.flags.rst && expect.len == 0 {
            return self.teardown_outbound(expect);
        }
        if expect.flags.fin || expect.flags.rst {
            return Err(stop(
                "FIN/RST from the sender is not modelled (only the FIN of an orderly close)",
            ));
        }
        if expect.len == 0 {
            return Ok(Next::OutOfScope(
                "pure ACKs from the sender are not modelled".into(),
            ));
        }
        if self.d.is_none() {
            return Err(stop("outbound segment before any data was written"));
        }
        let end_ms = ((deadline_us.saturating_sub(self.w0_us)).clamp(0, u32::MAX as i64 * 1000)
            / 1000) as u32;
        for _ in 0..64 {
            let d = self.d.as_mut().unwrap();
            if !d.out.is_empty() {
                break;
            }
            match d.timer() {
                Some(tm) if tm.deadline <= end_ms => {
                    let sent = d.fire().map(|(_, s)| s).unwrap_or_default();
                    self.window_allows(&sent)?;
                }
                _ => break,
            }
        }
        let d = self.d.as_mut().unwrap();
        let Some(s) = d.out.pop_front() else {
            return Ok(Next::Timeout);
        };
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
            "connect" => self.connect(),
            "close" => self.close(),
            "write" | "send" => match s.args.get(2) {
                Some(Expr::Int(n)) => self.write(*n),
                _ => Err(stop("write size is not a literal")),
            },
            "fcntl" | "ioctl" => Ok(SysResult::Other(Outcome1::out_of_scope(format!(
                "{} results are not modelled",
                s.name
            )))),
            other => Err(stop(format!("system call `{other}` is not modelled"))),
        }
    }

    fn shell(&mut self, cmd: &str, env: &[(String, String)]) -> Result<Outcome1, Halt> {
        self.shell_line(cmd, env)
    }

    fn code_values(&mut self) -> Result<CodeValues, CodeValuesError> {
        let mut values = Vec::new();
        let mut missing = Vec::new();
        for f in trc_pkt::symbols::TCPI_FIELDS {
            // After close() the socket is in FIN_WAIT/TIME_WAIT, states the model does not have.
            let closed = self.teardown.is_some() && *f == "tcpi_state";
            match self.d.as_ref().and_then(|d| d.tcpi(f)).filter(|_| !closed) {
                Some(v) => values.push((*f, v as u64)),
                None => missing.push(*f),
            }
        }
        Ok(CodeValues { values, missing })
    }
}

/// TCP Fast Open (RFC 7413): data or a Fast Open option on a SYN or SYN-ACK stops the replay
/// (out of scope: the model has no Fast Open, so it has no verdict on such a script).
fn fast_open_refused(p: &LivePacket) -> Result<(), Halt> {
    let option = p.options.iter().any(|o| {
        matches!(
            o,
            WireOption::FastOpen { .. } | WireOption::FastOpenExp { .. }
        )
    });
    if p.payload_len > 0 || option {
        return Err(stop(
            "TCP Fast Open (data or a Fast Open option on the SYN) is not modelled",
        ));
    }
    Ok(())
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
            StatementKind::Syscall(s) if matches!(s.name.as_str(), "write" | "send") => {
                match s.args.get(2) {
                    Some(Expr::Int(n)) if *n > 0 => Some(*n),
                    _ => None,
                }
            }
            _ => None,
        })
        .fold(0i64, i64::saturating_add)
}

/// A `tcp_reordering` / `tcp_max_reordering` value the model holds (`Config`'s range).
fn reordering_sysctl(name: &str, n: i64) -> Result<u32, Halt> {
    u32::try_from(n)
        .ok()
        .filter(|v| (1..=trc_model::config::MAX_REORDERING).contains(v))
        .ok_or_else(|| {
            stop(format!(
                "{name}={n}: the model holds 1 to {}",
                trc_model::config::MAX_REORDERING
            ))
        })
}

/// Script time `since_w0_us` after the first write within the model's clock
/// ([`trc_model::config::MAX_HORIZON_MS`]: its µs clocks are u32, as the kernel's).
fn model_time_ok(since_w0_us: i64) -> Result<(), Halt> {
    let max = trc_model::config::MAX_HORIZON_MS;
    if since_w0_us > max as i64 * 1000 {
        return Err(stop(format!(
            "script time {:.3} s after the first write: the model's clock runs for at most {} s",
            since_w0_us as f64 / 1e6,
            max / 1000
        )));
    }
    Ok(())
}

/// A write's size within [`MAX_WRITE_BYTES`].
fn write_size_ok(n: i64) -> Result<(), Halt> {
    if n > MAX_WRITE_BYTES {
        return Err(stop(format!(
            "write of {n} bytes: the model replays writes of at most {MAX_WRITE_BYTES} bytes"
        )));
    }
    Ok(())
}

/// The configuration the script leads to must be one the model accepts (`Config::validate`).
fn model_config_ok(cfg: &Config) -> Result<(), Halt> {
    cfg.validate().map_err(|e| {
        stop(format!(
            "the script's connection is outside the model's bounds: {e}"
        ))
    })
}

fn fmt_sent(s: &Sent, mss: u32) -> String {
    format!(
        "{}:{}({}) {} at {} ms",
        1 + s.seg * mss,
        1 + (s.seg + 1) * mss,
        mss,
        if s.rtx { "retransmission" } else { "new data" },
        s.at
    )
}

/// Why the handshake's packets are applied, not checked.
const HANDSHAKE_APPLIED: &str =
    "the model starts established: the handshake is the script's input, not something it checks";

/// A packet without payload whose window, PSH and TOS the model does not know (the handshake's,
/// an orderly close's).
fn control_packet(
    at_us: i64,
    flags: u8,
    seq: u32,
    ack: u32,
    options: Vec<WireOption>,
    note: Option<String>,
    applied: Option<String>,
) -> Captured {
    Captured {
        at_us,
        spread_us: 0,
        flags,
        seq,
        ack,
        win: 0,
        urg: 0,
        tos: 0,
        options,
        payload_len: 0,
        unknown: Unknown {
            psh: true,
            win: true,
            tos: true,
        },
        note,
        applied,
    }
}
