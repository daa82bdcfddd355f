//! Model trace → packetdrill script (+ JSON trace and DOT chain).
//!
//! The trace is re-driven through [`Driver`] at script times: events keep the model's time
//! differences, but inbound ACKs are at least `gap_ms` after the previous event (a real kernel
//! needs a few ms between inbound ACKs). The re-timed run must reach the same sender decisions
//! as the trace (state, window, transmissions, timer kinds) at every step; if it does not, the
//! export falls back to the model's exact times (noted in the header).

use crate::driver::{Driver, Sent};
use crate::{seq_bytes, MSS};
use serde::{Deserialize, Serialize};
use stateright::Model;
use std::fmt::Write as _;
use trc_model::model::{Action, State, TcpModel};
use trc_model::sender::ack::AckSeg;
use trc_model::state::{CaState, TimerKind};

/// Script TS val of model TS clock value 0 (the first flight's TSval is 200 + its model time).
pub const TS_LABEL_BASE: u32 = 200;
/// The peer's first TS val on data-phase ACKs.
pub const PEER_TS_BASE: u32 = 150;
/// The window scale of the script's peer (its SYN's `wscale`; every ACK says `win 320`): 7,
/// as exports always had, or more when the data written exceeds `320 << 7` bytes, so that the
/// peer's window never limits what the kernel sends (`tcp_snd_wnd_test()`): the model has no
/// flow control, and the replay stops where a window would bind.
pub fn peer_wscale(cfg: &trc_model::Config) -> u8 {
    let total = (u64::from(cfg.segments) + u64::from(cfg.extra_writes)) * u64::from(MSS);
    (7u8..14).find(|&s| 320u64 << s >= total).unwrap_or(14)
}

/// The largest window the script's peer advertises (`tp->max_window`): `win 320` scaled by
/// [`peer_wscale`].
pub fn peer_max_window(cfg: &trc_model::Config) -> u32 {
    320 << peer_wscale(cfg)
}

/// Why a path cannot be exported as a script.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ExportError {
    /// The path starts from an initial state the model does not have.
    #[error("init index {0} out of range")]
    InitIndex(usize),
    /// The path's action `index` cannot be taken where the path has got to.
    #[error("action {index} ({action}) does not apply")]
    NotApplicable { index: usize, action: Action },
    /// The driver's first flight is not the model's.
    #[error("initial flight differs")]
    FirstFlight,
    /// Step `step` (1-based) cannot be expressed as the model took it.
    #[error("step {step}: {why}")]
    Step { step: usize, why: StepError },
    /// The re-timed run with every sending timer [`TIMER_LATE_MS`] late failed.
    #[error("{0} [with the timers firing {TIMER_LATE_MS} ms late, as a HZ=250 kernel may: the decision depends on timer slack]")]
    TimerSlack(Box<ExportError>),
    /// The re-timed run with the jiffy ticks `ms` later than the model's failed (CUBIC).
    #[error("{inner} [with the jiffy ticks {ms} ms later than the model's: CUBIC's per-jiffy decisions depend on the phase]")]
    JiffyPhase { ms: u32, inner: Box<ExportError> },
}

impl ExportError {
    /// The step to blame (0: none, or the path's start).
    pub fn step(&self) -> usize {
        match self {
            ExportError::Step { step, .. } => *step,
            ExportError::TimerSlack(e) | ExportError::JiffyPhase { inner: e, .. } => e.step(),
            _ => 0,
        }
    }
}

/// Why one step cannot be exported (times in ms after the first write).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum StepError {
    #[error("packet {0} is not in the exporter's flight")]
    NotInFlight(u16),
    #[error("the flight shrank by more than the step's packet")]
    FlightShrank,
    /// RFC 5961 5.2: the kernel discards an ACK that far below snd_una.
    #[error("the old ACK is {lag} bytes below snd_una, more than the script's peer window ({window} bytes): the kernel would discard it (RFC 5961 5.2)")]
    OldAckTooOld { lag: u64, window: u32 },
    #[error("{desc}: this event is not exported yet")]
    NotExported { desc: String },
    #[error("the ACK would arrive at {t} ms, after the pending {kind:?} timer ({deadline} ms)")]
    AckAfterTimer {
        t: u32,
        kind: TimerKind,
        deadline: u32,
    },
    #[error("the ACK would arrive at {t} ms, within {margin} ms of the pending {kind:?} timer ({deadline} ms)")]
    AckNearTimer {
        t: u32,
        margin: u32,
        kind: TimerKind,
        deadline: u32,
    },
    #[error("the ACK would arrive at {t} ms, within {margin} ms of a timer expiry that sent nothing ({quiet} ms)")]
    AckNearQuietTimer { t: u32, margin: u32, quiet: u32 },
    /// The ACK's TSecr is not the stamp of a transmission the exporter knows (`from`: the
    /// receiver's TS.Recent as the exporter has it).
    #[error("the ACK echoes TS {ecr}, the receiver's TS.Recent came from {from}: the echo's transmission is unknown")]
    UnknownEcho { ecr: u32, from: String },
    #[error("no timer armed in the re-timed run")]
    NoTimer,
    #[error("{armed:?} timer armed, the trace fires {fired:?}")]
    OtherTimer { armed: TimerKind, fired: TimerKind },
    #[error(
        "the write at {t} ms is within {margin} ms of the pending {kind:?} timer ({deadline} ms)"
    )]
    WriteNearTimer {
        t: u32,
        margin: u32,
        kind: TimerKind,
        deadline: u32,
    },
    #[error("the write at {t} ms is within {margin} ms of a timer expiry that sent nothing ({quiet} ms)")]
    WriteNearQuietTimer { t: u32, margin: u32, quiet: u32 },
    /// The re-timed run's decisions and the trace's, as `Debug` shows them.
    #[error("the re-timed run decides differently ({retimed} vs {trace})")]
    Decides { retimed: String, trace: String },
    #[error("the walk ends with a timer that sent nothing ({t} ms) and the {kind:?} timer is due within {margin} ms ({deadline} ms)")]
    EndNearTimer {
        t: u32,
        margin: u32,
        kind: TimerKind,
        deadline: u32,
    },
}

/// `why` at step `step`.
fn at(step: usize, why: StepError) -> ExportError {
    ExportError::Step { step, why }
}

/// One step of an exported trace (`.json`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TraceStep {
    pub index: usize,
    /// `None` for the initial state.
    pub action: Option<Action>,
    pub event: String,
    /// Script time (ms after the first write) at which the step happens in the `.pkt`.
    pub script_ms: Option<u32>,
    pub state: State,
    /// The MIB counters of the re-timed run up to and including this step (what `nstat` shows
    /// after `nstat -n` at the start).
    #[serde(default)]
    pub mib: trc_model::mib::MibTotals,
}

/// The full trace of a counterexample (`.json`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TraceFile {
    pub property: String,
    pub property_name: String,
    pub profile: trc_model::Profile,
    pub config: trc_model::Config,
    pub init_index: usize,
    pub sack: bool,
    /// Index of the step where the property breaks (the last one).
    pub violation_step: usize,
    /// Whether a real kernel can execute the script (no model-only events).
    pub kernel_runnable: bool,
    pub model_only: Vec<String>,
    pub steps: Vec<TraceStep>,
}

/// Everything written for one violated property.
#[derive(Clone, Debug)]
pub struct Exported {
    pub pkt: String,
    pub trace: TraceFile,
    pub dot: String,
    /// `true` if the inbound ACKs could be spaced `gap_ms` apart; `false`: exact model times.
    pub spaced: bool,
}

/// The states along a path: `(action, state)` with `None` for the initial state.
pub fn states(
    model: &TcpModel,
    init_index: usize,
    actions: &[Action],
) -> Result<Vec<(Option<Action>, State)>, ExportError> {
    let mut inits = model.init_states();
    if init_index >= inits.len() {
        return Err(ExportError::InitIndex(init_index));
    }
    let mut out = vec![(None, inits.swap_remove(init_index))];
    for (i, a) in actions.iter().enumerate() {
        let next =
            model
                .next_state(&out.last().unwrap().1, *a)
                .ok_or(ExportError::NotApplicable {
                    index: i,
                    action: *a,
                })?;
        out.push((Some(*a), next));
    }
    Ok(out)
}

/// Human description of `a` taken in `prev` (bytes in script sequence space).
pub fn describe(prev: &State, a: &Action) -> String {
    let pk = |i: u16| {
        let p = prev.flight[i as usize];
        let (s, e) = (seq_bytes(p.seg as u32), seq_bytes(p.seg as u32 + 1));
        format!(
            "seg {} ({s}:{e}, {} sent at {} ms)",
            p.seg as u32 + 1,
            if p.rtx { "retransmission" } else { "original" },
            p.sent
        )
    };
    match a {
        Action::Deliver { pkt } => format!("{} is delivered; its ACK arrives", pk(*pkt)),
        Action::DeliverEce { pkt } => format!("{} is delivered; its ACK carries ECE", pk(*pkt)),
        Action::DeliverAckLost { pkt } => format!("{} is delivered; its ACK is lost", pk(*pkt)),
        Action::Drop { pkt } => format!("the network drops {}", pk(*pkt)),
        Action::Rto => "the RTO fires".into(),
        Action::Tlp => "the TLP timer fires".into(),
        Action::Reo => "the RACK reordering timer fires".into(),
        Action::TsqFill => "the host queue fills (TSQ)".into(),
        Action::TsqDrain => "the host queue drains (TSQ)".into(),
        Action::Write => "the application writes one segment".into(),
        Action::WriteAfter { gap } => {
            format!("the application, idle for {gap} ms, writes one segment")
        }
        Action::DeliverAckHeld { pkt } => {
            format!("{} is delivered; the network holds its ACK", pk(*pkt))
        }
        Action::OldAck => {
            let h = &prev.held_ack;
            let blocks: Vec<String> = h.blocks[..h.n as usize]
                .iter()
                .map(|&(s, e)| format!("{}:{}", seq_bytes(s as u32), seq_bytes(e as u32)))
                .collect();
            format!(
                "the held ACK (ack {}{}) arrives after a newer one, below snd_una: an old ACK",
                seq_bytes(h.ack as u32),
                if blocks.is_empty() {
                    String::new()
                } else {
                    format!(", SACK {}", blocks.join(" "))
                },
            )
        }
        #[allow(unreachable_patterns)]
        other => other.to_string(),
    }
}

/// What the sender decided in one step, for comparing a re-timed run with the trace.
fn decisions(snd: &trc_model::Sender) -> impl PartialEq + std::fmt::Debug {
    (
        snd.ca_state,
        snd.cwnd,
        snd.ssthresh,
        snd.snd_una,
        snd.snd_nxt,
        snd.high_seq,
        (
            snd.packets_out,
            snd.sacked_out,
            snd.lost_out,
            snd.retrans_out,
        ),
        // Re-timing can change how often a segment is retransmitted without changing any tag
        // (a retransmission RACK marks lost again on one timing and not on the other, e.g. one
        // whose wait `rack.rtt_us + reo_wnd - (now - xmit)` the spacing moves across zero, is
        // retransmitted once more, leaving L|R as before; until the send-order ranks of
        // 2026-12-04, same-ms ties ordered by sequence did this too). The trace's counters would
        // then not describe the spaced script.
        snd.total_retrans,
        snd.undo_marker,
        snd.timer.map(|t| t.kind),
        // (segment, tags) of the tagged segments only: short enough to print at any size.
        snd.segs
            .iter()
            .enumerate()
            .filter(|(_, s)| s.tags != 0)
            .map(|(i, s)| (i, s.tags))
            .collect::<Vec<_>>(),
    )
}

fn ca_name(c: CaState) -> &'static str {
    c.tcpi_name()
}

/// Emitted lines with script times, written relative to the previous line's, or absolute
/// once `origin_us` is set.
struct Emitter {
    out: String,
    /// Script time (µs) of the previous timed statement.
    prev_us: i64,
    /// `Some(o)`: times are written absolute, script time `t` as `o + t` ([`Spacing::absolute`]).
    origin_us: Option<i64>,
}

impl Emitter {
    /// From here on, times are absolute: script time `t` is written `origin_us + t`, the next
    /// line's too (even at the previous line's time).
    fn absolute_from(&mut self, origin_us: i64) {
        self.origin_us = Some(origin_us);
        self.prev_us = i64::MIN;
    }
    /// A time as written: relative to the previous line's, or absolute.
    fn time(&self, t_us: i64) -> String {
        match self.origin_us {
            Some(o) => fmt_abs(o + t_us),
            None => fmt_rel(t_us - self.prev_us),
        }
    }
    /// A line's time. Absolute, a line at the previous line's time is still `+0`: a burst of
    /// lines at one model time runs as fast as it can (packetdrill's tolerance, 4 ms, is less
    /// than a burst of a hundred ACKs with their asserts takes), and the next line at a later
    /// time is back on the absolute clock.
    fn stamp(&self, t_us: i64) -> String {
        if self.origin_us.is_some() && t_us == self.prev_us {
            return fmt_rel(0);
        }
        self.time(t_us)
    }
    fn line(&mut self, t_us: i64, text: &str) {
        let r = self.stamp(t_us);
        let _ = writeln!(self.out, "{r:>6} {text}");
        self.prev_us = t_us;
    }
    fn range(&mut self, start_us: i64, end_us: i64, text: &str) {
        let (a, b) = (self.time(start_us), self.time(end_us));
        let _ = writeln!(self.out, "{a}~{b} {text}");
        self.prev_us = start_us;
    }
    fn comment(&mut self, text: &str) {
        for l in text.lines() {
            let _ = writeln!(self.out, "// {l}");
        }
    }
    fn raw(&mut self, text: &str) {
        let _ = writeln!(self.out, "{text}");
    }
}

/// A first write of more segments than this gets a larger send buffer (`tcp_wmem`, set before
/// the socket exists).
const BIG_WRITE_SEGMENTS: u32 = 32;

/// `+.25`, `+0`, `+.003`.
pub fn fmt_rel(d_us: i64) -> String {
    format!("+{}", fmt_abs(d_us))
}

/// `.25`, `0`, `1.003`: a script time (µs) in seconds.
pub fn fmt_abs(t_us: i64) -> String {
    if t_us == 0 {
        return "0".into();
    }
    if t_us < 0 {
        return format!("-{}", fmt_abs(-t_us));
    }
    let s = format!("{}.{:06}", t_us / 1_000_000, t_us % 1_000_000);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.strip_prefix('0').unwrap_or(s).to_string()
}

/// Script TS val label of a model TS clock value.
fn label(model_ts: u32, ts_base: u32) -> u32 {
    TS_LABEL_BASE + model_ts.wrapping_sub(ts_base)
}

struct Ctx<'a> {
    model: &'a TcpModel,
    sack: bool,
    ts: bool,
    /// Write ends (segment index) for the PSH guess.
    write_ends: Vec<u32>,
    /// PSH marks inside the first write ([`forced_pushes`]): a line ends at each.
    forced_pushes: Vec<u32>,
    peer_ts: u32,
}

impl Ctx<'_> {
    /// One line per contiguous run of the same kind (new data or retransmission). With one MSS
    /// per skb (the script sets `gso_max_segs 1`, see [`Exporter::handshake`]) the kernel sends
    /// one packet per segment and sets PSH only on the segment that ends an application write
    /// (`tcp_push` → `tcp_mark_push` on the write queue's tail); a line's flags are those of its
    /// last packet, as packetdrill merges them.
    fn out_lines(
        &mut self,
        e: &mut Emitter,
        first_at: Option<(i64, i64)>,
        t_us: i64,
        sent: &[Sent],
        ts_label: u32,
    ) {
        // A segment with CWR starts a line of its own: packetdrill takes a merged packet's CWR
        // from its first segment. A forced push (PSH inside a write) ends a line.
        let mut runs: Vec<(u32, u32, bool, bool)> = Vec::new();
        for s in sent {
            match runs.last_mut() {
                Some((_, end, rtx, _))
                    if *end == s.seg
                        && *rtx == s.rtx
                        && !s.cwr
                        && !self.forced_pushes.contains(end) =>
                {
                    *end += 1
                }
                _ => runs.push((s.seg, s.seg + 1, s.rtx, s.cwr)),
            }
        }
        for (i, (a, b, rtx, cwr)) in runs.iter().enumerate() {
            let (sa, sb) = (seq_bytes(*a), seq_bytes(*b));
            let psh = self.write_ends.contains(b) || self.forced_pushes.contains(b);
            let opts = if self.ts {
                format!(" <nop,nop,TS val {ts_label} ecr {}>", self.peer_ts)
            } else {
                String::new()
            };
            let what = if *rtx { "retransmission" } else { "new data" };
            let text = format!(
                "> {}{} {sa}:{sb}({}) ack 1{opts}   // {what}{}",
                if *cwr { "W" } else { "" },
                if psh { "P." } else { "." },
                sb - sa,
                if *cwr {
                    ", CWR: the first new segment after a reduction (tcp_ecn_send)"
                } else {
                    ""
                }
            );
            match (i, first_at) {
                (0, Some((s, end))) => e.range(s, end, &text),
                _ => e.line(t_us, &text),
            }
        }
    }

    ///
    /// The peer's TS val goes up by one per ACK line, except on an old ACK (`old`: one the
    /// network held back, [`Action::OldAck`]): it keeps the val of the ACK before it, as a peer
    /// whose TS clock did not tick between sending the two. The model's receiver has no TS
    /// clock; with a tick between them the kernel's PAWS check (`tcp_validate_incoming`) would
    /// discard the late ACK, which is an ACK loss (`--ack-losses`).
    fn ack_line(&mut self, ack: &AckSeg, ece: bool, old: bool, ecr_label: u32) -> String {
        let m = &self.model.cfg;
        let a = seq_bytes(ack.ack.wrapping_sub(m.isn));
        let blocks: Vec<String> = ack
            .sacks
            .iter()
            .map(|(s, e)| {
                format!(
                    "{}:{}",
                    seq_bytes(s.wrapping_sub(m.isn)),
                    seq_bytes(e.wrapping_sub(m.isn))
                )
            })
            .collect();
        let mut opts = Vec::new();
        if let (true, Some(_)) = (self.ts, ack.tsecr) {
            if !old {
                self.peer_ts += 1;
            }
            opts.push(format!("nop,nop,TS val {} ecr {ecr_label}", self.peer_ts));
        }
        if self.sack && !blocks.is_empty() {
            opts.push(format!("nop,nop,sack {}", blocks.join(" ")));
        }
        let opts = if opts.is_empty() {
            String::new()
        } else {
            format!(" <{}>", opts.join(","))
        };
        format!(
            "< {} 1:1(0) ack {a} win 320{opts}",
            if ece { "E." } else { "." }
        )
    }
}

/// The smallest spacing (ms) between the inbound ACKs of an exported counterexample (`trc check
/// --out` and every other caller of [`export`]): the model's time differences, at least this.
pub const COUNTEREXAMPLE_GAP_MS: u32 = 3;

/// Exports the counterexample `actions` from `init_index` (violating `subject.id`).
pub fn export(
    model: &TcpModel,
    init_index: usize,
    actions: &[Action],
    subject: Subject,
    gap_ms: u32,
) -> Result<Exported, ExportError> {
    match export_with(
        model,
        init_index,
        actions,
        subject,
        Spacing {
            gap_ms,
            ..Spacing::default()
        },
        Variant::default(),
    ) {
        Ok(x) => Ok(x),
        Err(why) if gap_ms > 0 => {
            let mut x = export_with(
                model,
                init_index,
                actions,
                subject,
                Spacing::default(),
                Variant::default(),
            )?;
            x.pkt = x.pkt.replacen(
                "// timing:",
                &format!("// timing: exact model times (spacing ACKs {gap_ms} ms apart changed the sender's decisions: {why});\n// timing (kernel): events at the same model ms are 0 ms apart, a real kernel may process them differently;\n// timing:"),
                1,
            );
            Ok(x)
        }
        Err(e) => Err(e),
    }
}

/// A random walk (no property) → script, for `trc diff`: as [`export`] but without a property
/// header or break marker, and with a timer margin: an inbound ACK or write closer than
/// `margin_ms` before the pending timer's deadline (or after a timer expiry that sent nothing)
/// is a race a real kernel (HZ=250) may decide the other way, so the walk is refused
/// (`Err`, with [`ExportError::step`] the step to blame) instead of falling back to exact times. So is a CUBIC walk whose re-timed
/// run decides differently with the jiffy ticks elsewhere ([`jiffy_phase_independent`]).
pub fn export_walk(
    model: &TcpModel,
    init_index: usize,
    actions: &[Action],
    name: &str,
    sp: Spacing,
) -> Result<Exported, ExportError> {
    let x = export_with(
        model,
        init_index,
        actions,
        walk(name),
        sp,
        Variant::default(),
    )?;
    jiffy_phase_independent(model, init_index, actions, sp)?;
    timer_slack_independent(model, init_index, actions, sp)?;
    Ok(x)
}

/// A walk's subject (no property).
fn walk(name: &str) -> Subject<'_> {
    Subject {
        id: "",
        name,
        statement: "",
    }
}

/// How the re-timed run of [`export_with`] departs from the nominal one, to test that the
/// script means the same on a kernel whose clocks are not the model's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Variant {
    /// The driver's `Config::jiffy_phase_us` (the trace keeps the model's).
    jiffy_phase_us: u32,
    /// Every timer expiry that sends something fires this much after its deadline; later events
    /// keep their distance from it (the runner times them from the real send).
    timer_late_ms: u32,
}

/// How late (ms) [`timer_slack_independent`] lets the timers fire.
pub const TIMER_LATE_MS: u32 = 10;

/// A timer expiry on the kernel comes after the model's deadline: the REO and TLP timers are
/// armed with `usecs_to_jiffies()` (rounded up to a 4 ms tick at HZ=250) and run at a wheel
/// tick, a few ms later again (seed 1 scenario 399: the first REO timer fired 2–10 ms after the
/// model's deadline in 19 runs). The runner times the next events from the real send, so the
/// lateness lengthens every interval between a segment sent before the expiry and one sent
/// after it, and RACK compares such intervals with its reordering window: in 399 8001:9001
/// (sent at 50 ms, before the REO timer) and 9001:10001 (sent by the ACK 3 ms after the REO
/// retransmission, 64 ms) are 17 ms apart in the model, under its 24 ms window (`min_rtt/4` ·
/// 2 steps); on the kernel they were 19–27 ms apart against ~25 ms, and when 9001:10001 is
/// SACKed the kernel marks 8001:9001 lost at once where the model arms a REO timer. The
/// re-timed run must decide the same with every sending timer [`TIMER_LATE_MS`] late (a RACK
/// threshold is crossed at most once as the lateness grows). The ACK and write margins are
/// checked with the nominal times (this run's are the lateness closer to an absolute timer).
fn timer_slack_independent(
    model: &TcpModel,
    init_index: usize,
    actions: &[Action],
    sp: Spacing,
) -> Result<(), ExportError> {
    let v = Variant {
        timer_late_ms: TIMER_LATE_MS,
        ..Variant::default()
    };
    export_with(
        model,
        init_index,
        actions,
        walk("late"),
        Spacing {
            margin_ms: sp.margin_ms.saturating_sub(TIMER_LATE_MS),
            ..sp
        },
        v,
    )
    .map_err(|e| ExportError::TimerSlack(Box::new(e)))?;
    Ok(())
}

/// CUBIC reads `tcp_jiffies32` (HZ=250: 4 ms ticks), and where the ticks fall relative to the
/// script is random on a real kernel. The model puts one at model time 0
/// (`Config::jiffy_phase_us` = 0); the re-timed run must decide the same with the ticks at
/// every other whole-ms phase (the script's times are whole ms, so these are all the ways its
/// events can be grouped into jiffies). The case that needs it is `bictcp_update`'s
/// once-per-jiffy rule (d6b1a8a92a14, "tcp: fix timing issue in CUBIC slope calculation"):
/// `ca->cnt` is recomputed only on the first update of a jiffy, later ones go straight to the
/// TCP-friendliness part. Seed 1 scenario 352: after an RTO (ssthresh 2) the ACK that grows
/// cwnd 2 → 3 (friendliness: cnt 2) and the next ACK 3 ms later share a jiffy only with the
/// model's phase; there cnt stays 2 and cwnd grows to 4, in the other phases cnt is recomputed
/// (20: the cubic target is below cwnd) and cwnd stays 3, as the kernel did in 4 of 4 runs of
/// the script (with the two ACKs 0.5 ms apart it grew to 4 in 5 of 6).
fn jiffy_phase_independent(
    model: &TcpModel,
    init_index: usize,
    actions: &[Action],
    sp: Spacing,
) -> Result<(), ExportError> {
    if model.cfg.cc != trc_model::CcKind::Cubic {
        return Ok(());
    }
    let tick_us = 1_000_000 / model.cfg.hz;
    for ms in 1..tick_us / 1000 {
        let phase = (model.cfg.jiffy_phase_us + ms * 1000) % tick_us;
        let v = Variant {
            jiffy_phase_us: phase,
            ..Variant::default()
        };
        export_with(model, init_index, actions, walk("phase"), sp, v).map_err(|e| {
            ExportError::JiffyPhase {
                ms,
                inner: Box::new(e),
            }
        })?;
    }
    Ok(())
}

/// What an export is about: a violated property (`id` non-empty) or a `trc diff` walk.
#[derive(Clone, Copy, Debug, Default)]
pub struct Subject<'a> {
    /// Property id (`I1`); empty for a walk.
    pub id: &'a str,
    /// The counterexample's (or walk's) name, shown in the header.
    pub name: &'a str,
    /// The property's statement, shown in the header (the caller takes it from the catalogue).
    pub statement: &'a str,
}

impl Subject<'_> {
    fn is_walk(&self) -> bool {
        self.id.is_empty()
    }
}

/// How the re-timed run is spaced: ACKs at least `gap_ms` apart, and (for walks) inbound events
/// at least `margin_ms` away from a timer, else the walk is refused; with `absolute`, the
/// script's times from the SYN on are absolute ([`ABSOLUTE_ORIGIN_US`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct Spacing {
    pub gap_ms: u32,
    pub margin_ms: u32,
    /// Absolute times from the SYN on, where relative times are the default. packetdrill (and
    /// trc's runner, as it) anchors a relative time to the moment the previous statement ended
    /// (`adjust_relative_event_times()` in run.c) unless both are inbound packets, so what each
    /// step's lines cost (an outbound line, the asserts) adds up over an ACK train: HyStart's
    /// train detector then sees a longer train than the model's. Absolute times keep each ACK
    /// at its model time however long the steps before it took.
    pub absolute: bool,
}

/// The script time of the SYN when times are absolute ([`Spacing::absolute`]): room for the
/// setup lines before it (sockets, sysctls, the route; a few ms on a host, some 25 ms of guest
/// time under TCG), which stay relative.
pub const ABSOLUTE_ORIGIN_US: i64 = 250_000;

/// `v`: how the re-timed run departs from the nominal one ([`Variant`]). The export in named
/// steps: [`Exporter::header`], [`Exporter::handshake`], [`Exporter::first_flight`], then per
/// step [`Exporter::emit_step`] (one of `deliver`, `timer`, `write`, `tsq`) and
/// [`Exporter::recheck`] (the re-timed run must decide as the trace), then [`Exporter::finish`].
fn export_with(
    model: &TcpModel,
    init_index: usize,
    actions: &[Action],
    subject: Subject,
    sp: Spacing,
    v: Variant,
) -> Result<Exported, ExportError> {
    let path = states(model, init_index, actions)?;
    let mut x = Exporter::new(model, &path, subject, sp, v);
    x.header();
    x.handshake();
    x.first_flight()?;
    for (i, w) in path.windows(2).enumerate() {
        let (prev, (a, next)) = (&w[0].1, (w[1].0.unwrap(), &w[1].1));
        x.emit_step(i + 1, prev, a, next)?;
    }
    Ok(x.finish(init_index))
}

/// The model-only events of a path (each note once): TSQ holds and ECE marks a kernel cannot
/// be made to reproduce.
fn model_only_notes(path: &[(Option<Action>, State)]) -> Vec<String> {
    let mut notes: Vec<String> = Vec::new();
    for (a, _) in &path[1..] {
        let note = match a.unwrap() {
            Action::TsqFill | Action::TsqDrain => "model-only: TSQ-held retransmits cannot be forced on a real kernel (the host-queue lines are `:` no-ops there)",
            _ => continue,
        };
        if !notes.iter().any(|n| n == note) {
            notes.push(note.to_string());
        }
    }
    notes
}

/// Where each application write ends (segment index): the initial write, then one per `Write`
/// (`tcp_push()` sends a write's last skb with PSH).
fn write_ends(segments: u32, path: &[(Option<Action>, State)]) -> Vec<u32> {
    let mut ends = vec![segments];
    let mut w = segments;
    for (a, _) in &path[1..] {
        if matches!(a, Some(Action::Write | Action::WriteAfter { .. })) {
            w += 1;
            ends.push(w);
        }
    }
    ends
}

/// `forced_push()` in `tcp_sendmsg_locked()`: inside the initial write, the segments (as index
/// ends) the kernel marks with PSH (`tcp_mark_push()`) because more than half the peer's largest
/// window (`tp->max_window`, [`peer_max_window`]) was written since the last mark. Only a write
/// of more than 20 segments at the default window has one.
fn forced_pushes(cfg: &trc_model::Config) -> Vec<u32> {
    let half = peer_max_window(cfg) / 2;
    let (mut marks, mut pushed) = (Vec::new(), 0);
    for k in 1..cfg.segments as u32 {
        if k * MSS > pushed + half {
            marks.push(k);
            pushed = k * MSS;
        }
    }
    marks
}

/// A TSval as the model has it (`model`: model ms + `ts_base`) and as the script writes it
/// (`label`: [`TS_LABEL_BASE`] + the re-timed send time).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    model: u32,
    label: u32,
}

/// Which transmission each ACK echoes. The model's TS clock is its time in ms, and re-timing
/// spreads events that share a model ms over several script times, so a model TSval may stand
/// for transmissions with different labels: a map from model TSval to label gave an echo the
/// label of the *last* send of that ms (F5's script echoed the Recovery retransmission's label
/// where the model's receiver echoed the TLP copy sent 9 ms earlier in the script). So the
/// exporter follows the transmissions themselves: a label per packet in the model's flight (in
/// its order: deliveries and drops remove one, a step's sends are appended), the packet whose
/// TSval the receiver holds as TS.Recent ([`trc_model::net::Receiver::replaces_ts_recent`]),
/// and the held ACK's echo. The script's ACK carries the label of the transmission the model's
/// receiver echoed, which packetdrill maps to that packet's real TSval; the re-timed run is fed
/// the same echo, so a decision that the spreading changes (an echo now older than
/// `retrans_stamp`) fails the re-check and the export falls back to the model's exact times.
#[derive(Clone, Debug)]
struct Echo {
    /// One per packet of the model's flight, in its order.
    flight: Vec<Stamp>,
    /// The receiver's TS.Recent.
    recent: Stamp,
    /// The held ACK's echo (`Action::DeliverAckHeld`), if any.
    held: Option<Stamp>,
}

impl Echo {
    /// The first flight leaves at script label [`TS_LABEL_BASE`]; TS.Recent starts at the model's
    /// `ts_base` (the same label).
    fn new(cfg: &trc_model::Config, init: &State) -> Echo {
        let first = Stamp {
            model: cfg.ts_base,
            label: TS_LABEL_BASE,
        };
        Echo {
            flight: init.flight.iter().map(|_| first).collect(),
            recent: first,
            held: None,
        }
    }

    /// A packet leaves the flight (delivered or dropped) in `prev` by `a`; returns the echo of
    /// the ACK the sender then receives (`None`: no ACK reaches it).
    fn arrive(
        &mut self,
        cfg: &trc_model::Config,
        prev: &State,
        a: Action,
        idx: usize,
    ) -> Result<Option<Stamp>, ExportError> {
        let (pkt, fate) = match a {
            Action::Drop { pkt } => {
                self.take(pkt, idx)?;
                return Ok(None);
            }
            Action::OldAck => return Ok(self.held.take()),
            Action::Deliver { pkt }
            | Action::DeliverEce { pkt }
            | Action::DeliverLate { pkt, .. } => (pkt, Some(false)),
            Action::DeliverAckHeld { pkt } => (pkt, Some(true)),
            Action::DeliverAckLost { pkt } => (pkt, None),
            _ => return Ok(None),
        };
        let p = &prev.flight[pkt as usize];
        let stamp = self.take(pkt, idx)?;
        if prev.rcv.replaces_ts_recent(cfg, p, prev.sender.ts_ok) {
            self.recent = stamp;
        }
        match fate {
            Some(false) => Ok(Some(self.recent)),
            Some(true) => {
                self.held = Some(self.recent);
                Ok(None)
            }
            None => Ok(None),
        }
    }

    fn take(&mut self, pkt: u16, idx: usize) -> Result<Stamp, ExportError> {
        if (pkt as usize) < self.flight.len() {
            Ok(self.flight.remove(pkt as usize))
        } else {
            Err(at(idx, StepError::NotInFlight(pkt)))
        }
    }

    /// The packets the step appended to the model's flight left at script label `label`.
    fn sent(
        &mut self,
        next: &State,
        ts_base: u32,
        label: u32,
        idx: usize,
    ) -> Result<(), ExportError> {
        if next.flight.len() < self.flight.len() {
            return Err(at(idx, StepError::FlightShrank));
        }
        for p in &next.flight[self.flight.len()..] {
            self.flight.push(Stamp {
                model: p.sent.wrapping_add(ts_base),
                label,
            });
        }
        Ok(())
    }
}

/// The state of one export in progress.
struct Exporter<'a> {
    model: &'a TcpModel,
    path: &'a [(Option<Action>, State)],
    subject: Subject<'a>,
    sp: Spacing,
    v: Variant,
    cx: Ctx<'a>,
    /// The re-timed run.
    d: Driver,
    e: Emitter,
    model_only: Vec<String>,
    /// Index of the last step (where a property breaks).
    vstep: usize,
    /// Which transmission each ACK echoes ([`Echo`]).
    echo: Echo,
    steps: Vec<TraceStep>,
    /// Re-timed model time of the last event, and its trace time.
    last_t: u32,
    last_m: u32,
    /// Time of the last timer expiry that sent nothing (no outbound line re-synchronises there).
    quiet_timer: Option<u32>,
}

/// What [`Exporter::emit_step`]'s per-event part produced.
struct Emitted {
    /// Re-timed model time of the step.
    t: u32,
    /// Script time of the step, if it has a timed line (drops and lost ACKs do not).
    script_ms: Option<u32>,
    /// A timer expiry that sent nothing.
    quiet: bool,
}

impl<'a> Exporter<'a> {
    fn new(
        model: &'a TcpModel,
        path: &'a [(Option<Action>, State)],
        subject: Subject<'a>,
        sp: Spacing,
        v: Variant,
    ) -> Exporter<'a> {
        let cfg = &model.cfg;
        let init = &path[0].1;
        let (sack, ts) = (init.sender.sack_ok, init.sender.ts_ok);
        Exporter {
            model,
            path,
            subject,
            sp,
            v,
            cx: Ctx {
                model,
                sack,
                ts,
                write_ends: write_ends(cfg.segments as u32, path),
                forced_pushes: forced_pushes(cfg),
                peer_ts: PEER_TS_BASE,
            },
            d: Driver::start(
                trc_model::Config {
                    jiffy_phase_us: v.jiffy_phase_us,
                    ..cfg.clone()
                },
                model.profile.clone(),
                sack,
            ),
            e: Emitter {
                out: String::new(),
                prev_us: 0,
                origin_us: None,
            },
            model_only: model_only_notes(path),
            vstep: path.len() - 1,
            echo: Echo::new(cfg, init),
            steps: Vec::new(),
            last_t: 0,
            last_m: 0,
            quiet_timer: None,
        }
    }

    /// Script time (µs) of re-timed model time `m` ms: the data phase starts one RTT after the SYN.
    fn at(&self, m: u32) -> i64 {
        self.model.cfg.rtt_ms as i64 * 1000 + m as i64 * 1000
    }

    /// The comment header: what the script is, the connection, the timing rules, model-only events.
    fn header(&mut self) {
        let (cfg, m, s) = (&self.model.cfg, self.model, self.subject);
        let e = &mut self.e;
        if s.is_walk() {
            e.comment(&format!("trc diff scenario: {}", s.name));
        } else {
            e.comment(&format!("trc counterexample: {}", s.name));
            e.comment(&format!("property {}: {}", s.id, s.statement));
        }
        e.comment(&format!(
            "profile {} ({})",
            m.profile.name, m.profile.description
        ));
        e.comment(&format!(
            "connection: {}, {}{}, MSS {MSS}, {:?}, RTT {} ms, initcwnd {}, {} segment(s) written at t=0{}; F-RTO {}, TLP {}",
            if self.cx.sack { "SACK" } else { "no SACK" },
            if self.cx.ts { "timestamps" } else { "no timestamps" },
            if cfg.ecn { ", ECN" } else { "" },
            cfg.cc,
            cfg.rtt_ms,
            cfg.initcwnd,
            cfg.segments,
            if cfg.extra_writes > 0 { format!(" (+{} later one-segment writes allowed)", cfg.extra_writes) } else { String::new() },
            if cfg.frto { "on" } else { "off" },
            if cfg.tlp { "on" } else { "off" },
        ));
        e.comment(&format!("model segment k = bytes {}+{MSS}k .. {}+{MSS}(k+1); TS vals are labels (the runner maps them to the kernel's)", 1, 1));
        let vstep = self.vstep;
        if s.is_walk() {
            e.comment(&format!(
                "{vstep} steps; the asserts after each step are the model's prediction for {}",
                m.profile.name
            ));
        } else {
            e.comment(&format!("the property breaks at step {vstep} (the last one); the asserts after each step are the model's prediction for {}", m.profile.name));
        }
        e.comment(&format!("timing: inbound ACKs keep the model's time differences, at least {} ms apart; timer-driven sends are `~` ranges", self.sp.gap_ms));
        if self.sp.absolute {
            e.comment("timing: absolute times from the SYN on, so that the time each step's lines take does not delay the next ACK (a relative time counts from the end of the line before)");
        }
        for n in &self.model_only {
            e.comment(n);
        }
        if self.model_only.is_empty() {
            e.comment("kernel-runnable: every event of the trace can be reproduced by a real kernel (dropped packets are simply never ACKed)");
        }
        e.raw("");
    }

    /// Namespace defaults, the listener with its congestion control, the sysctls and route of
    /// the configuration, and the passive open (RTT = the path's).
    fn handshake(&mut self) {
        let cfg = &self.model.cfg;
        let e = &mut self.e;
        e.raw(crate::EXPORT_INIT);
        e.raw("");
        if cfg.segments as u32 > BIG_WRITE_SEGMENTS {
            // The first write must return at once, as the model's does: a new socket's send
            // buffer (tcp_wmem[1], 16 KB; about two cwnds once connected) holds fewer segments.
            // tcp_wmem is per network namespace, and a socket takes it when it is created.
            e.comment("a send buffer that takes the whole first write at once (as the model's)");
            e.line(0, "`sysctl -q net.ipv4.tcp_wmem=\"4096 8388608 8388608\"`");
        }
        e.line(0, "socket(..., SOCK_STREAM, IPPROTO_TCP) = 3");
        e.line(0, "setsockopt(3, SOL_SOCKET, SO_REUSEADDR, [1], 4) = 0");
        e.line(0, "bind(3, ..., ...) = 0");
        let cc = match cfg.cc {
            trc_model::CcKind::Reno => "reno",
            _ => "cubic",
        };
        e.line(
            0,
            &format!(
                "setsockopt(3, IPPROTO_TCP, TCP_CONGESTION, \"{cc}\", {}) = 0",
                cc.len()
            ),
        );
        e.line(0, "listen(3, 1) = 0");
        e.comment("one MSS per skb, as the model has it: the kernel then sends one packet per segment, PSH on a write's last");
        e.line(0, "`ip link set dev tun0 gso_max_segs 1`");
        let mut sysctls = vec![
            format!("net.ipv4.tcp_frto={}", if cfg.frto { 2 } else { 0 }),
            format!("net.ipv4.tcp_early_retrans={}", if cfg.tlp { 3 } else { 0 }),
            format!("net.ipv4.tcp_reordering={}", cfg.sysctl_reordering),
            format!("net.ipv4.tcp_max_reordering={}", cfg.sysctl_max_reordering),
        ];
        if !cfg.dsack {
            sysctls.push("net.ipv4.tcp_dsack=0".into());
        }
        if cfg.ecn {
            // RFC 3168 ECN, negotiated by the handshake below (defaults.sh turns it off).
            sysctls.push("net.ipv4.tcp_ecn=1".into());
        }
        e.comment("sysctls as configured; the route's initcwnd is the model's initial window (read at the SYN)");
        e.line(0, &format!("`sysctl -q {}`", sysctls.join(" ")));
        e.line(
            0,
            &format!(
                "`ip route change 192.0.2.1 via 192.168.0.1 dev tun0 initcwnd {}`",
                cfg.initcwnd
            ),
        );
        let ws = peer_wscale(cfg);
        let (syn, synack, ack): (String, &str, &str) = match (self.cx.sack, self.cx.ts) {
            (true, true) => (
                format!("<mss 1012,sackOK,TS val 100 ecr 0,nop,wscale {ws}>"),
                "<mss 1460,sackOK,TS val 100 ecr 100,nop,wscale 8>",
                " <nop,nop,TS val 150 ecr 100>",
            ),
            (false, true) => (
                format!("<mss 1012,nop,nop,TS val 100 ecr 0,nop,wscale {ws}>"),
                "<mss 1460,nop,nop,TS val 100 ecr 100,nop,wscale 8>",
                " <nop,nop,TS val 150 ecr 100>",
            ),
            (true, false) => (
                format!("<mss 1000,sackOK,nop,nop,nop,wscale {ws}>"),
                "<mss 1460,nop,nop,sackOK,nop,wscale 8>",
                "",
            ),
            (false, false) => (
                format!("<mss 1000,nop,wscale {ws}>"),
                "<mss 1460,nop,wscale 8>",
                "",
            ),
        };
        // An ECN setup SYN (ECE and CWR) and the SYN-ACK that accepts it (ECE).
        let (syn_flags, synack_flags) = if cfg.ecn { ("SEW", "SE.") } else { ("S", "S.") };
        if self.sp.absolute {
            e.comment(&format!(
                "absolute times from here: the SYN at {} s, every later line at that plus its model time",
                fmt_abs(ABSOLUTE_ORIGIN_US)
            ));
            e.absolute_from(ABSOLUTE_ORIGIN_US);
        }
        e.line(0, &format!("< {syn_flags} 0:0(0) win 32792 {syn}"));
        e.line(0, &format!("> {synack_flags} 0:0(0) ack 1 {synack}"));
        let rtt_us = cfg.rtt_ms as i64 * 1000;
        e.line(rtt_us, &format!("< . 1:1(0) ack 1 win 320{ack}"));
        e.line(rtt_us, "accept(3, ..., ...) = 4");
        e.raw("");
    }

    /// Step 0: the initial write and the first flight, which must be the trace's.
    fn first_flight(&mut self) -> Result<(), ExportError> {
        let cfg = &self.model.cfg;
        let t0 = self.at(0);
        self.e.comment(&format!(
            "step 0 (t=0 ms): the application writes {} segments; the first flight leaves",
            cfg.segments
        ));
        self.e.line(
            t0,
            &format!(
                "write(4, ..., {}) = {}",
                cfg.segments as u32 * MSS,
                cfg.segments as u32 * MSS
            ),
        );
        let first: Vec<Sent> = self.d.out.drain(..).collect();
        self.cx.out_lines(
            &mut self.e,
            None,
            t0,
            &first,
            label(cfg.ts_base, cfg.ts_base),
        );
        let init = &self.path[0].1;
        if decisions(&self.d.snd) != decisions(&init.sender) {
            return Err(ExportError::FirstFlight);
        }
        asserts(&mut self.e, t0, &self.d);
        self.steps.push(TraceStep {
            index: 0,
            action: None,
            event: "initial state: the first flight is sent".into(),
            script_ms: Some(0),
            state: init.clone(),
            mib: self.d.counters.clone(),
        });
        Ok(())
    }

    /// One step of the trace: its lines, the re-timed run's check, and its asserts.
    fn emit_step(
        &mut self,
        idx: usize,
        prev: &State,
        a: Action,
        next: &State,
    ) -> Result<(), ExportError> {
        let desc = describe(prev, &a);
        let m = next.now;
        let brk = if idx == self.vstep && !self.subject.is_walk() {
            format!("   <-- {} breaks here", self.subject.id)
        } else {
            String::new()
        };
        let echo = self.echo.arrive(&self.model.cfg, prev, a, idx)?;
        let out = match a {
            Action::Drop { .. } => {
                self.e.comment(&format!(
                    "step {idx} (model t={m} ms): {desc}: it is never ACKed{brk}"
                ));
                Emitted {
                    t: self.last_t + (m - self.last_m),
                    script_ms: None,
                    quiet: false,
                }
            }
            Action::DeliverAckLost { .. } => {
                self.e.comment(&format!(
                    "step {idx} (model t={m} ms): {desc} (nothing reaches the sender){brk}"
                ));
                Emitted {
                    t: self.last_t + (m - self.last_m),
                    script_ms: None,
                    quiet: false,
                }
            }
            Action::DeliverAckHeld { .. } => {
                self.e.comment(&format!("step {idx} (model t={m} ms): {desc} (it reaches the sender later, after a newer one){brk}"));
                Emitted {
                    t: self.last_t + (m - self.last_m),
                    script_ms: None,
                    quiet: false,
                }
            }
            // A late delivery is a delivery whose model time includes the extra delay.
            Action::Deliver { pkt }
            | Action::DeliverEce { pkt }
            | Action::DeliverLate { pkt, .. } => {
                let (_, ack) = self.model.ack_for(prev, pkt as usize);
                let ece = matches!(a, Action::DeliverEce { .. });
                self.inbound_ack(idx, ack, echo, (ece, false), m, &desc, &brk)?
            }
            Action::OldAck => {
                let ack = prev.held_ack.ack_seg(&self.model.cfg, prev.sender.ts_ok);
                // RFC 5961 5.2 in `tcp_ack()`: an ACK more than `min(max_window, bytes_acked)`
                // below snd_una gets a challenge ACK and is discarded. The model's peer window
                // is unlimited (the bound is then bytes_acked, which a held ACK never exceeds);
                // the script's peer advertises `peer_max_window()` bytes.
                let lag = prev.sender.snd_una.wrapping_sub(ack.ack) as u64 * MSS as u64;
                let window = peer_max_window(&self.model.cfg);
                if lag > window as u64 {
                    return Err(at(idx, StepError::OldAckTooOld { lag, window }));
                }
                self.inbound_ack(idx, ack, echo, (false, true), m, &desc, &brk)?
            }
            Action::Rto | Action::Tlp | Action::Reo => self.timer(idx, a, m, &desc, &brk)?,
            // After an idle period the write's time is the model's, gap included.
            Action::Write | Action::WriteAfter { .. } => self.write(idx, m, &desc, &brk)?,
            Action::TsqFill | Action::TsqDrain => {
                self.tsq(idx, matches!(a, Action::TsqFill), m, &desc, &brk)
            }
            #[allow(unreachable_patterns)]
            _ => return Err(at(idx, StepError::NotExported { desc })),
        };
        let base = self.model.cfg.ts_base;
        self.echo.sent(next, base, label(out.t + base, base), idx)?;
        self.recheck(idx, next)?;
        if out.script_ms.is_some() && !(out.quiet && idx != self.vstep) {
            self.step_asserts(idx, out.t, out.quiet, next)?;
        }
        if out.script_ms.is_some() {
            self.last_t = out.t;
            self.last_m = m;
        }
        self.steps.push(TraceStep {
            index: idx,
            action: Some(a),
            event: desc,
            script_ms: out.script_ms,
            state: next.clone(),
            mib: self.d.counters.clone(),
        });
        Ok(())
    }

    /// An inbound ACK (a delivery's, or the held one arriving late): its line (spaced, off the
    /// timers' deadlines), then what the sender sent. `echo`: the transmission whose TSval it
    /// echoes ([`Echo::arrive`]); `(ece, old)`: it carries ECE; it is the held ACK.
    #[allow(clippy::too_many_arguments)]
    fn inbound_ack(
        &mut self,
        idx: usize,
        ack: AckSeg,
        echo: Option<Stamp>,
        (ece, old): (bool, bool),
        m: u32,
        desc: &str,
        brk: &str,
    ) -> Result<Emitted, ExportError> {
        let cfg = &self.model.cfg;
        let mut t = self.last_t + (m - self.last_m).max(self.sp.gap_ms);
        if self.sp.gap_ms > 0
            && acks_retransmission_at_min_rtt(&self.d.snd, &ack, t, cfg.rtt_ms, cfg.isn)
        {
            t += RACK_TIE_MS;
        }
        let margin = self.sp.margin_ms;
        if let Some(tm) = self.d.timer() {
            if t > tm.deadline || (t == tm.deadline && self.sp.gap_ms > 0) {
                return Err(at(
                    idx,
                    StepError::AckAfterTimer {
                        t,
                        kind: tm.kind,
                        deadline: tm.deadline,
                    },
                ));
            }
            if margin > 0 && t + margin > tm.deadline {
                return Err(at(
                    idx,
                    StepError::AckNearTimer {
                        t,
                        margin,
                        kind: tm.kind,
                        deadline: tm.deadline,
                    },
                ));
            }
        }
        if let Some(q) = self.quiet_timer {
            if margin > 0 && t < q + margin {
                return Err(at(
                    idx,
                    StepError::AckNearQuietTimer {
                        t,
                        margin,
                        quiet: q,
                    },
                ));
            }
        }
        let mut ack2 = ack.clone();
        ack2.ece = ece;
        let ecr_label = match (ack.tsecr, echo) {
            (None, _) => 0,
            (Some(ecr), Some(e)) if ecr == e.model => e.label,
            (Some(ecr), e) => {
                let from = format!("{e:?}");
                return Err(at(idx, StepError::UnknownEcho { ecr, from }));
            }
        };
        ack2.tsecr = ack.tsecr.map(|_| retimed_tsecr(ecr_label, cfg.ts_base));
        self.e
            .comment(&format!("step {idx} (model t={m} ms): {desc}{brk}"));
        let text = self.cx.ack_line(&ack, ece, old, ecr_label);
        let at = self.at(t);
        self.e.line(at, &text);
        let sent = self.d.ack(t, &ack2);
        self.cx.out_lines(
            &mut self.e,
            None,
            at,
            &sent,
            label(t + cfg.ts_base, cfg.ts_base),
        );
        self.d.out.clear();
        Ok(Emitted {
            t,
            script_ms: Some(t),
            quiet: false,
        })
    }

    /// A timer expiry: at the re-timed run's deadline (plus the variant's lateness if it sends),
    /// its transmissions as a `~` range.
    fn timer(
        &mut self,
        idx: usize,
        a: Action,
        m: u32,
        desc: &str,
        brk: &str,
    ) -> Result<Emitted, ExportError> {
        let base = self.model.cfg.ts_base;
        let Some(tm) = self.d.timer() else {
            return Err(at(idx, StepError::NoTimer));
        };
        let want = match a {
            Action::Rto => TimerKind::Rto,
            Action::Tlp => TimerKind::Tlp,
            _ => TimerKind::Reo,
        };
        if tm.kind != want {
            return Err(at(
                idx,
                StepError::OtherTimer {
                    armed: tm.kind,
                    fired: want,
                },
            ));
        }
        let mut t = tm.deadline.max(self.last_t);
        self.e.comment(&format!(
            "step {idx} (model t={m} ms): {desc} (deadline {t} ms after the first write){brk}"
        ));
        // A late expiry only moves the script's clock if it sends something (the runner
        // re-synchronises on the send); a quiet one fires at its deadline here.
        let late = if self.v.timer_late_ms > 0
            && self.d.clone().fire().is_some_and(|(_, s)| !s.is_empty())
        {
            self.v.timer_late_ms
        } else {
            0
        };
        t += late;
        let (_, sent) = self.d.fire_late(late).unwrap();
        let quiet = sent.is_empty();
        if quiet {
            self.e
                .comment("(nothing is sent; the state is asserted after the next event)");
            self.quiet_timer = Some(t);
        } else {
            let at = self.at(t);
            // As late as the kernel's jiffies and timer wheel may make it (a level-1 RTO: up to
            // 8 jiffies), at least 5 ms.
            let spread = sent
                .iter()
                .map(|s| self.d.timer_spread_us(s))
                .max()
                .unwrap_or(0)
                .max(5000);
            self.cx.out_lines(
                &mut self.e,
                Some((at, at + spread)),
                at,
                &sent,
                label(t + base, base),
            );
        }
        self.d.out.clear();
        Ok(Emitted {
            t,
            script_ms: Some(t),
            quiet,
        })
    }

    /// A one-segment application write and what it sends.
    fn write(&mut self, idx: usize, m: u32, desc: &str, brk: &str) -> Result<Emitted, ExportError> {
        let base = self.model.cfg.ts_base;
        let margin = self.sp.margin_ms;
        let t = self.last_t + (m - self.last_m);
        if let (Some(tm), true) = (self.d.timer(), margin > 0) {
            if t + margin > tm.deadline {
                return Err(at(
                    idx,
                    StepError::WriteNearTimer {
                        t,
                        margin,
                        kind: tm.kind,
                        deadline: tm.deadline,
                    },
                ));
            }
        }
        // As for ACKs: no outbound line tells the runner when a timer that sent nothing really
        // fired (HZ=250: 4-12 ms late), so a write right after it may reach the kernel before
        // the expiry (seed 1 scenarios 24, 528: a quiet REO timer marks a segment lost, the
        // write comes first and the kernel is still in Disorder).
        if let Some(q) = self.quiet_timer {
            if margin > 0 && t < q + margin {
                return Err(at(
                    idx,
                    StepError::WriteNearQuietTimer {
                        t,
                        margin,
                        quiet: q,
                    },
                ));
            }
        }
        self.e
            .comment(&format!("step {idx} (model t={m} ms): {desc}{brk}"));
        let at = self.at(t);
        self.e.line(at, &format!("write(4, ..., {MSS}) = {MSS}"));
        let sent = self.d.write(t, 1);
        self.cx
            .out_lines(&mut self.e, None, at, &sent, label(t + base, base));
        self.d.out.clear();
        Ok(Emitted {
            t,
            script_ms: Some(t),
            quiet: false,
        })
    }

    /// A model-only host-queue event (a `:` no-op line on a kernel).
    fn tsq(&mut self, idx: usize, fill: bool, m: u32, desc: &str, brk: &str) -> Emitted {
        let base = self.model.cfg.ts_base;
        let t = self.last_t + (m - self.last_m);
        self.e.comment(&format!(
            "step {idx} (model t={m} ms): {desc} — model-only, a no-op on a real kernel{brk}"
        ));
        let at = self.at(t);
        self.e.line(
            at,
            if fill {
                "`: trc-model-only tsq-fill`"
            } else {
                "`: trc-model-only tsq-drain`"
            },
        );
        if fill {
            self.d.tsq_fill(t);
        } else {
            let sent = self.d.tsq_drain(t);
            self.cx
                .out_lines(&mut self.e, None, at, &sent, label(t + base, base));
        }
        self.d.out.clear();
        Emitted {
            t,
            script_ms: Some(t),
            quiet: false,
        }
    }

    /// The re-timed run must reach the trace's decisions at every step.
    fn recheck(&self, idx: usize, next: &State) -> Result<(), ExportError> {
        if decisions(&self.d.snd) != decisions(&next.sender) {
            let retimed = format!("{:?}", decisions(&self.d.snd));
            let trace = format!("{:?}", decisions(&next.sender));
            return Err(at(idx, StepError::Decides { retimed, trace }));
        }
        Ok(())
    }

    /// The model's prediction after step `idx` (and the break marker on the last step). A walk
    /// ending with a timer that sent nothing asserts `margin_ms` after its deadline, once the
    /// kernel's late timer has surely fired (seed 1 scenario 914), provided nothing else is due
    /// by then.
    fn step_asserts(
        &mut self,
        idx: usize,
        t: u32,
        quiet: bool,
        next: &State,
    ) -> Result<(), ExportError> {
        let s = self.subject;
        if idx == self.vstep && !s.is_walk() {
            self.e.comment(&format!(
                "*** {} breaks at step {idx}: {}",
                s.id, s.statement
            ));
            for n in crate::notes(next) {
                self.e.comment(&format!("*** model: {n}"));
            }
        }
        let margin = self.sp.margin_ms;
        let mut at_t = t;
        if s.is_walk() && quiet && margin > 0 {
            if let Some(tm) = self.d.timer() {
                if tm.deadline < t + margin {
                    return Err(at(
                        idx,
                        StepError::EndNearTimer {
                            t,
                            margin,
                            kind: tm.kind,
                            deadline: tm.deadline,
                        },
                    ));
                }
            }
            at_t = t + margin;
        }
        let at = self.at(at_t);
        asserts(&mut self.e, at, &self.d);
        Ok(())
    }

    /// The script, the JSON trace and the DOT chain.
    fn finish(self, init_index: usize) -> Exported {
        let trace = TraceFile {
            property: self.subject.id.to_string(),
            property_name: self.subject.name.to_string(),
            profile: self.model.profile.clone(),
            config: self.model.cfg.clone(),
            init_index,
            sack: self.cx.sack,
            violation_step: self.vstep,
            kernel_runnable: self.model_only.is_empty(),
            model_only: self.model_only,
            steps: self.steps,
        };
        let dot = crate::dot(&trace);
        Exported {
            pkt: self.e.out,
            trace,
            dot,
            spaced: self.sp.gap_ms > 0,
        }
    }
}

/// The TS echo the re-timed run's sender sees: the one the script's ACK line carries (the label
/// of the re-timed send the model's receiver echoes, [`Echo`]), turned back into the re-timed
/// run's TS clock. Feeding the model's own echo instead made the re-timed
/// run answer a different ACK than the script's: seed 2 scenarios 53 and 202 (SACK, TS). There
/// the RTO retransmission, the ACKs right after it and the RACK retransmission they trigger all
/// share one model ms; re-timed, the retransmission of 6001:7001 leaves 15 ms after the RTO, and
/// the ACK of it echoed the model's TS of that ms, which is older than the re-timed send, so
/// `tcp_skb_spurious_retrans` held RACK back (no mark, cwnd 6). The script echoes the real
/// send's TS; on it the kernel, like `trc replay` of the script, advances RACK and marks
/// 11001:12001 (sent 12 ms before, reo_wnd 0 in Recovery), lost 3, cwnd 4, and so does the
/// nominal run since RACK orders a ms's transmissions by send order (before that, a same-ms tie
/// ordered by sequence left it unmarked, and the walk was refused).
fn retimed_tsecr(ecr_label: u32, ts_base: u32) -> u32 {
    ecr_label.wrapping_sub(TS_LABEL_BASE).wrapping_add(ts_base)
}

/// How much later (ms) a re-timed ACK arrives when it (S)ACKs a retransmission exactly one path
/// RTT after that retransmission left (see [`acks_retransmission_at_min_rtt`]).
pub const RACK_TIE_MS: u32 = 1;

/// Whether `ack` at `t` newly ACKs or SACKs a retransmitted segment (`TCPCB_RETRANS`) sent
/// exactly `rtt_ms` before: the model's RACK RTT sample then equals its `min_rtt`, so
/// `tcp_rack_advance` is not in its "ambiguous retransmission" case (`rtt < min_rtt`). The kernel
/// compares microseconds: its min_rtt comes from samples of segments sent while it processed an
/// inbound ACK (stamped when the ACK arrived, captured by the runner 0.1–0.3 ms later, and the
/// runner times the next ACK from the capture), a timer-driven retransmission is captured within
/// µs of its stamp, so its sample lands *below* min_rtt and the kernel takes the ambiguous branch
/// (seed 1 scenarios 510 and 932: the ACK of the REO-timer retransmission at +50 ms leaves the
/// kernel without RACK marks until the RTO; at +50.2 ms it agrees with the model). The exporter
/// moves such an ACK [`RACK_TIE_MS`] later; the re-timed model run checks that no decision changes.
fn acks_retransmission_at_min_rtt(
    snd: &trc_model::Sender,
    ack: &AckSeg,
    t: u32,
    rtt_ms: u32,
    isn: u32,
) -> bool {
    use trc_model::seq::{after, before};
    use trc_model::state::tag;
    let (una, nxt) = (snd.snd_una.wrapping_sub(isn), snd.snd_nxt.wrapping_sub(isn));
    (una..nxt).any(|i| {
        let Some(s) = snd.segs.get(i as usize) else {
            return false;
        };
        let seq = isn.wrapping_add(i);
        let covered = after(ack.ack, seq)
            || ack
                .sacks
                .iter()
                .any(|&(l, r)| !before(seq, l) && !after(seq.wrapping_add(1), r));
        s.tags & tag::RETRANS != 0
            && s.tags & tag::S == 0
            && s.xmit.wrapping_add(rtt_ms) == t
            && covered
    })
}

fn asserts(e: &mut Emitter, t_us: i64, d: &Driver) {
    let s = &d.snd;
    e.line(
        t_us,
        &format!(
            "%{{ assert tcpi_ca_state == {}, tcpi_ca_state }}%",
            ca_name(s.ca_state)
        ),
    );
    e.line(
        t_us,
        &format!("%{{ assert tcpi_snd_cwnd == {}, tcpi_snd_cwnd }}%", s.cwnd),
    );
    e.line(
        t_us,
        &format!(
            "%{{ assert tcpi_snd_ssthresh == {}, tcpi_snd_ssthresh }}%",
            s.ssthresh
        ),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `trc diff`'s default spacing of a walk (ACKs 3 ms apart, 15 ms from a timer).
    const WALK_SPACING: Spacing = Spacing {
        gap_ms: 3,
        margin_ms: 15,
        absolute: false,
    };

    #[test]
    fn absolute_emitter_writes_absolute_times_ranges_and_plus_zero_at_the_same_time() {
        let mut e = Emitter {
            out: String::new(),
            prev_us: 0,
            origin_us: None,
        };
        e.line(0, "a");
        e.absolute_from(ABSOLUTE_ORIGIN_US);
        e.line(0, "syn");
        e.line(0, "synack");
        e.line(50_000, "ack");
        e.range(1_250_500, 1_260_000, "rto");
        e.line(1_250_500, "after");
        assert_eq!(
            e.out,
            "    +0 a\n   .25 syn\n    +0 synack\n    .3 ack\n1.5005~1.51 rto\n    +0 after\n"
        );
        assert_eq!(fmt_rel(3_000), "+.003");
        assert_eq!(fmt_rel(1_500_000), "+1.5");
        assert_eq!(fmt_abs(0), "0");
        assert_eq!(fmt_abs(-3_000), "-.003");
    }
    use trc_model::state::tag;

    #[test]
    fn rack_tie_is_an_ack_of_a_retransmission_exactly_one_rtt_after_it() {
        let cfg = trc_model::Config {
            segments: 4,
            initcwnd: 4,
            ..Default::default()
        };
        let isn = cfg.isn;
        let mut s = trc_model::Sender::new(&cfg, true);
        s.snd_una = isn;
        s.snd_nxt = isn + 4;
        for (i, seg) in s.segs.iter_mut().enumerate().take(4) {
            seg.xmit = 0;
            seg.tags = if i == 1 { tag::RETRANS } else { 0 };
        }
        s.segs[1].xmit = 64; // retransmitted by the REO timer at 64 ms
        let ack = |ack: u32, sacks: Vec<(u32, u32)>| AckSeg {
            ack,
            sacks: sacks.into(),
            ece: false,
            tsecr: None,
        };
        // Cumulative ACK covering it, one RTT after the retransmission: the tie.
        assert!(acks_retransmission_at_min_rtt(
            &s,
            &ack(isn + 2, vec![]),
            114,
            50,
            isn
        ));
        // SACKed instead.
        assert!(acks_retransmission_at_min_rtt(
            &s,
            &ack(isn, vec![(isn + 1, isn + 2)]),
            114,
            50,
            isn
        ));
        // Not a tie: later or earlier than one RTT, not covered, or not a retransmission.
        assert!(!acks_retransmission_at_min_rtt(
            &s,
            &ack(isn + 2, vec![]),
            115,
            50,
            isn
        ));
        assert!(!acks_retransmission_at_min_rtt(
            &s,
            &ack(isn + 2, vec![]),
            113,
            50,
            isn
        ));
        assert!(!acks_retransmission_at_min_rtt(
            &s,
            &ack(isn + 1, vec![(isn + 2, isn + 3)]),
            114,
            50,
            isn
        ));
        s.segs[1].tags = 0;
        assert!(!acks_retransmission_at_min_rtt(
            &s,
            &ack(isn + 2, vec![]),
            114,
            50,
            isn
        ));
        // Already SACKed before: not newly covered.
        s.segs[1].tags = tag::RETRANS | tag::S;
        assert!(!acks_retransmission_at_min_rtt(
            &s,
            &ack(isn + 2, vec![]),
            114,
            50,
            isn
        ));
    }

    /// F5's counterexample (default bounds, SACK): the TLP copy of 5001:6001 and RACK's fast
    /// retransmit of 1001:2001 share model ms 152 (one TSval in the model), and re-timing puts
    /// them 9 ms apart in the script. The ACK of the TLP copy must echo the TLP copy's label,
    /// not the fast retransmit's (the old TSval→label map gave the last send of that ms); with
    /// the true echo the spaced re-timed run undoes by timestamp in Loss, which the model does
    /// not, so the export keeps the model's exact times, where both sends share a label.
    #[test]
    fn ack_echoes_the_label_of_the_copy_the_receiver_echoed() {
        let cfg = trc_model::Config {
            sack: trc_model::SackMode::Sack,
            ..Default::default()
        };
        let model = TcpModel::new(cfg, trc_model::Profile::linux_6_18());
        let d = |pkt| Action::Deliver { pkt };
        let path = [
            d(0),
            Action::Drop { pkt: 4 },
            Action::Tlp,
            d(1),
            d(1),
            d(1),
            d(0),
            Action::Rto,
            d(0),
            d(1),
        ];
        let subject = Subject {
            id: "I1",
            name: "t",
            statement: "",
        };
        let spaced = Spacing {
            gap_ms: COUNTEREXAMPLE_GAP_MS,
            margin_ms: 0,
            absolute: false,
        };
        let why = export_with(&model, 0, &path, subject, spaced, Variant::default())
            .map(|x| x.pkt)
            .expect_err("spaced with the true echo, the re-timed run undoes at step 9");
        assert!(
            matches!(
                why,
                ExportError::Step {
                    step: 9,
                    why: StepError::Decides { .. }
                }
            ),
            "{why}"
        );
        assert!(
            why.to_string()
                .starts_with("step 9: the re-timed run decides differently"),
            "{why}"
        );
        let x = export(&model, 0, &path, subject, COUNTEREXAMPLE_GAP_MS).unwrap();
        assert!(x.pkt.contains("// timing: exact model times"), "{}", x.pkt);
        let line = |needle: &str| {
            x.pkt
                .lines()
                .skip_while(|l| !l.contains(needle))
                .find(|l| l.contains(" < "))
                .unwrap_or_else(|| panic!("{needle}: no ACK line"))
                .to_string()
        };
        // The TLP copy and the fast retransmit leave at model ms 152: label 352.
        assert!(x
            .pkt
            .contains("> P. 5001:6001(1000) ack 1 <nop,nop,TS val 352"));
        assert!(x
            .pkt
            .contains("> . 1001:2001(1000) ack 1 <nop,nop,TS val 352"));
        assert!(
            line("// step 9 ").contains("ecr 352>"),
            "{}",
            line("// step 9 ")
        );
        // The RTO copy (604) is DSACKed at step 10: the receiver echoes it.
        assert!(
            line("// step 10 ").contains("ecr 604,"),
            "{}",
            line("// step 10 ")
        );
    }

    #[test]
    fn walk_whose_cubic_decision_depends_on_the_jiffy_phase_is_refused() {
        // Seed 1 scenario 352 (non-SACK, no TS, CUBIC): after the RTO, ssthresh 2, step 9 grows
        // cwnd 2 -> 3 and step 10 (same model ms, 3 ms later in the script) to 4 only if both
        // share a jiffy.
        let cfg = trc_model::Config {
            segments: 12,
            initcwnd: 3,
            max_losses: 2,
            max_ack_losses: 2,
            max_reorder: 2,
            max_rtos: 1,
            max_tlps: 0,
            max_tsq: 0,
            horizon_ms: 3000,
            sack: trc_model::SackMode::NoSack,
            timestamps: false,
            frto: false,
            ..Default::default()
        };
        let model = TcpModel::new(cfg.clone(), trc_model::Profile::linux_6_18());
        let (d, l) = (
            |pkt| Action::Deliver { pkt },
            |pkt| Action::DeliverAckLost { pkt },
        );
        let walk = [
            Action::Drop { pkt: 1 },
            d(0),
            d(2),
            Action::Drop { pkt: 2 },
            Action::Rto,
            l(1),
            l(0),
            d(0),
            d(0),
            d(0),
        ];
        assert!(export_walk(&model, 0, &walk[..9], "t", WALK_SPACING).is_ok());
        let e = export_walk(&model, 0, &walk, "t", WALK_SPACING).unwrap_err();
        let (step, why) = (e.step(), e.to_string());
        assert_eq!(step, 10, "{why}");
        assert!(why.contains("jiffy"), "{why}");
        // The model's own phase exports it (cwnd 4); one ms later the ticks split the two ACKs.
        let phase = |jiffy_phase_us| Variant {
            jiffy_phase_us,
            ..Variant::default()
        };
        assert!(export_with(&model, 0, &walk, super::walk("t"), WALK_SPACING, phase(0)).is_ok());
        assert!(export_with(
            &model,
            0,
            &walk,
            super::walk("t"),
            WALK_SPACING,
            phase(1000)
        )
        .is_err());
        // Reno has no jiffy clock: not refused for that.
        let reno = TcpModel::new(
            trc_model::Config {
                cc: trc_model::CcKind::Reno,
                ..cfg
            },
            trc_model::Profile::linux_6_18(),
        );
        assert!(jiffy_phase_independent(&reno, 0, &walk, WALK_SPACING).is_ok());
    }

    #[test]
    fn retimed_run_sees_the_scripts_ts_echo() {
        // Seed 2 scenario 53 (SACK, TS, CUBIC, initcwnd 7, 12 segments): step 18 ACKs the RACK
        // retransmission of 6001:7001, which shares model ms 316 with the RTO and the ACK that
        // sent 11001:12001. The script echoes the re-timed retransmission's TS (331 ms); with
        // it the re-timed run marks 11001:12001 lost, as the kernel does (lost 3, cwnd 4). So
        // does the nominal run since RACK orders a ms's transmissions by send order (11001:12001
        // left before the retransmission); with same-ms ties ordered by sequence it did not, and
        // the walk was refused at step 18.
        let cfg = trc_model::Config {
            segments: 12,
            extra_writes: 1,
            initcwnd: 7,
            max_losses: 4,
            max_ack_losses: 2,
            max_reorder: 1,
            max_rtos: 2,
            max_tlps: 2,
            max_tsq: 0,
            horizon_ms: 3000,
            sack: trc_model::SackMode::Sack,
            ..Default::default()
        };
        assert!(cfg.timestamps && cfg.cc == trc_model::CcKind::Cubic);
        let model = TcpModel::new(cfg, trc_model::Profile::linux_6_18());
        let d = |pkt| Action::Deliver { pkt };
        let drop = |pkt| Action::Drop { pkt };
        let lost = |pkt| Action::DeliverAckLost { pkt };
        let walk = [
            lost(0),
            d(1),
            Action::Reo,
            Action::Rto,
            d(0),
            drop(3),
            d(0),
            d(0),
            d(0),
            d(1),
            drop(3),
            drop(0),
            drop(0),
            Action::Reo,
            lost(0),
            d(0),
            Action::Write,
            d(1),
        ];
        let x = export_walk(&model, 0, &walk, "t", WALK_SPACING).unwrap();
        let last = x.pkt.rsplit("// step 18").next().unwrap();
        assert!(last.contains("> P. 11001:12001(1000)"), "{last}");
        assert!(last.contains("tcpi_snd_cwnd == 4,"), "{last}");
        // The exact-time script (no re-timing) still exports.
        assert!(export(
            &model,
            0,
            &walk,
            Subject {
                id: "t",
                name: "t",
                statement: ""
            },
            0
        )
        .is_ok());
        assert_eq!(retimed_tsecr(label(532, 1), 1), 532);
    }

    #[test]
    fn walk_whose_rack_decision_depends_on_timer_slack_is_refused() {
        // Seed 1 scenario 399 (SACK, TS, CUBIC) up to step 14: the SACK of 9001:10001 (sent
        // after the first REO timer) marks 8001:9001 (sent before it) lost at once only if that
        // timer fired late enough.
        let cfg = trc_model::Config {
            segments: 14,
            initcwnd: 8,
            max_losses: 0,
            max_ack_losses: 1,
            max_reorder: 2,
            max_rtos: 0,
            max_tlps: 1,
            max_tsq: 0,
            horizon_ms: 3000,
            sack: trc_model::SackMode::Sack,
            ..Default::default()
        };
        let model = TcpModel::new(cfg, trc_model::Profile::linux_6_18());
        let d = |pkt| Action::Deliver { pkt };
        let walk = [
            d(2),
            Action::DeliverAckLost { pkt: 0 },
            Action::Reo,
            d(2),
            Action::Reo,
            d(1),
            d(1),
            d(2),
            Action::Reo,
            d(0),
            d(2),
            d(0),
            d(0),
            d(0),
        ];
        assert!(export_walk(&model, 0, &walk[..13], "t", WALK_SPACING).is_ok());
        let e = export_walk(&model, 0, &walk, "t", WALK_SPACING).unwrap_err();
        let (step, why) = (e.step(), e.to_string());
        assert_eq!(step, 14, "{why}");
        assert!(why.contains("timer slack"), "{why}");
        let late = |timer_late_ms| Variant {
            timer_late_ms,
            ..Variant::default()
        };
        assert!(export_with(&model, 0, &walk, super::walk("t"), WALK_SPACING, late(0)).is_ok());
        assert!(export_with(
            &model,
            0,
            &walk,
            super::walk("t"),
            Spacing {
                gap_ms: 3,
                margin_ms: 5,
                absolute: false,
            },
            late(TIMER_LATE_MS)
        )
        .is_err());
    }
}
