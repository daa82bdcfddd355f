//! The impact experiment (`trc kernel impact`): a bulk TCP transfer over an emulated path with
//! delay, reordering and random loss, inside the VM only, measuring what loss recovery's undos
//! cost or gain, and how many undos followed a real loss (finding F1, docs/findings/F1-impact.md).
//!
//! Topology, built fresh for every run (no state such as the TCP metrics cache carries over):
//!
//! ```text
//!  netns snd: a0 10.9.1.1 ── r0 10.9.1.2 [guest's init netns: router] r1 10.9.2.2 ── b0 10.9.2.1 :netns rcv
//!                               netem: delay RTT/2 (ACKs)     netem: delay RTT/2, reorder, loss (data)
//! ```
//!
//! The router in the middle is there for the capture: an `AF_PACKET` tap on `r0` sees every data
//! segment the sender put on the wire (before netem), one on `r1` every segment netem let through
//! (what the receiver gets). A segment seen on `r0` and never on `r1` was dropped by netem: the
//! experiment's ghost truth, as in the model. The sender's veth has `gso_max_segs 1`, so each
//! packet is one MSS and netem drops segments, not GSO bursts.
//!
//! The sender (a thread in `snd`) writes for `duration_s` seconds; a sampler thread reads its
//! `TCP_INFO` and the namespace's MIB every `sample_ms`. Each sample where an undo counter moved
//! (`TcpExtTCPFullUndo`, `TCPPartialUndo`, `TCPLossUndo`, `TCPDSACKUndo`, `TCPSpuriousRTOs`) is
//! an undo event; its episode runs from the last sample in `Open` before it (bounded by the
//! previous event) to the event's sample. The event followed a real loss when a segment
//! retransmitted in that window had its original dropped by netem ([`analyse`]).

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};

/// What to emulate and measure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImpactParams {
    /// Base round-trip time, ms: half on the data path, half on the ACK path.
    pub rtt_ms: f64,
    /// Random loss on the data path, percent.
    pub loss_pct: f64,
    /// netem `reorder`: the share of data packets sent without the delay (so they overtake
    /// up to RTT/2 of their predecessors), percent.
    pub reorder_pct: f64,
    /// Delay variation on the data path (netem `delay RTT/2 JITTER`), ms; netem then reorders
    /// packets whose delays cross.
    #[serde(default)]
    pub jitter_ms: f64,
    /// The jitter's distribution (`normal`, `pareto`, `paretonormal`; netem's tables); `None`:
    /// netem's uniform.
    #[serde(default)]
    pub jitter_dist: Option<String>,
    /// An optional bottleneck on the data path (netem `rate`), Mbit/s.
    pub rate_mbit: Option<f64>,
    /// netem's queue limit, packets.
    pub limit: u32,
    /// How long the sender writes, guest seconds.
    pub duration_s: f64,
    /// The sampling interval of TCP_INFO and the MIB, guest ms.
    pub sample_ms: f64,
    /// Congestion control of the sender.
    pub cc: String,
}

impl Default for ImpactParams {
    fn default() -> ImpactParams {
        ImpactParams {
            rtt_ms: 40.0,
            loss_pct: 1.0,
            reorder_pct: 1.0,
            jitter_ms: 0.0,
            jitter_dist: None,
            rate_mbit: None,
            limit: 10_000,
            duration_s: 30.0,
            sample_ms: 10.0,
            cc: "cubic".into(),
        }
    }
}

/// An impact parameter out of its range (a usage error).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BadParam {
    #[error("--rtt {0}: expected 2..2000 ms")]
    Rtt(f64),
    #[error("--loss and --reorder are percentages in 0..50")]
    LossOrReorder,
    #[error("--jitter must be in 0..5*RTT ms")]
    Jitter,
    #[error("--jitter-dist must be normal, pareto, paretonormal or uniform")]
    JitterDist,
    #[error("--rate must be positive (Mbit/s)")]
    Rate,
    #[error("--duration must be 1..3600 s and --sample-ms 1..1000 ms")]
    DurationOrSample,
    #[error("--limit must be positive and --cc a congestion control name")]
    LimitOrCc,
}

impl ImpactParams {
    /// Out-of-range values, as a usage error.
    pub fn validate(&self) -> Result<(), BadParam> {
        let pct = |x: f64| x.is_finite() && (0.0..=50.0).contains(&x);
        if !(self.rtt_ms.is_finite() && (2.0..=2000.0).contains(&self.rtt_ms)) {
            return Err(BadParam::Rtt(self.rtt_ms));
        }
        if !pct(self.loss_pct) || !pct(self.reorder_pct) {
            return Err(BadParam::LossOrReorder);
        }
        if !(self.jitter_ms.is_finite()
            && self.jitter_ms >= 0.0
            && self.jitter_ms <= self.rtt_ms * 5.0)
        {
            return Err(BadParam::Jitter);
        }
        if self
            .jitter_dist
            .as_deref()
            .is_some_and(|d| !["normal", "pareto", "paretonormal", "uniform"].contains(&d))
        {
            return Err(BadParam::JitterDist);
        }
        if self.rate_mbit.is_some_and(|r| !(r.is_finite() && r > 0.0)) {
            return Err(BadParam::Rate);
        }
        // A range holds no NaN or infinity.
        if !(1.0..=3600.0).contains(&self.duration_s) || !(1.0..=1000.0).contains(&self.sample_ms) {
            return Err(BadParam::DurationOrSample);
        }
        if self.limit == 0
            || self.cc.is_empty()
            || !self
                .cc
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return Err(BadParam::LimitOrCc);
        }
        Ok(())
    }

    /// The netem arguments of the data path (after `netem`).
    pub fn data_netem(&self) -> Vec<String> {
        let mut a = vec![
            "limit".to_string(),
            self.limit.to_string(),
            "delay".into(),
            format!("{}us", (self.rtt_ms * 500.0).round() as u64),
        ];
        if self.jitter_ms > 0.0 {
            a.push(format!("{}us", (self.jitter_ms * 1000.0).round() as u64));
            if let Some(d) = self.jitter_dist.as_deref().filter(|d| *d != "uniform") {
                a.extend(["distribution".into(), d.to_string()]);
            }
        }
        if self.reorder_pct > 0.0 {
            a.extend(["reorder".into(), format!("{}%", self.reorder_pct)]);
        }
        if self.loss_pct > 0.0 {
            a.extend([
                "loss".into(),
                "random".into(),
                format!("{}%", self.loss_pct),
            ]);
        }
        if let Some(r) = self.rate_mbit {
            a.extend([
                "rate".into(),
                format!("{}kbit", (r * 1000.0).round() as u64),
            ]);
        }
        a
    }

    /// The netem arguments of the ACK path.
    pub fn ack_netem(&self) -> Vec<String> {
        vec![
            "limit".into(),
            self.limit.to_string(),
            "delay".into(),
            format!("{}us", (self.rtt_ms * 500.0).round() as u64),
        ]
    }
}

/// The job of an impact boot: `runs` runs of `params`, one after the other.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImpactJob {
    pub params: ImpactParams,
    pub runs: usize,
}

/// The undo counters, in this order in [`Sample::undo`].
pub const UNDO_COUNTERS: [&str; 5] = [
    "TcpExtTCPFullUndo",
    "TcpExtTCPPartialUndo",
    "TcpExtTCPLossUndo",
    "TcpExtTCPDSACKUndo",
    "TcpExtTCPSpuriousRTOs",
];

/// The counters reported per run (deltas over the run).
pub const REPORTED_COUNTERS: &[&str] = &[
    "TcpExtTCPFullUndo",
    "TcpExtTCPPartialUndo",
    "TcpExtTCPLossUndo",
    "TcpExtTCPDSACKUndo",
    "TcpExtTCPSpuriousRTOs",
    "TcpExtTCPSackRecovery",
    "TcpExtTCPLossProbes",
    "TcpExtTCPLossProbeRecovery",
    "TcpExtTCPTimeouts",
    "TcpExtTCPFastRetrans",
    "TcpExtTCPSlowStartRetrans",
    "TcpExtTCPLostRetransmit",
    "TcpExtTCPDSACKRecv",
    "TcpExtTCPSACKReorder",
    "TcpExtTCPTSReorder",
    "TcpExtTCPRenoReorder",
    "TcpExtTCPSpuriousRtxHostQueues",
    "TcpOutSegs",
    "TcpRetransSegs",
];

/// One sample of the sender.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// ms since the connection was established.
    pub t_ms: f64,
    pub ca_state: u8,
    pub cwnd: u32,
    pub ssthresh: u32,
    pub total_retrans: u32,
    pub data_segs_out: u32,
    pub bytes_acked: u64,
    pub unacked: u32,
    pub rtt_us: u32,
    /// [`UNDO_COUNTERS`], cumulative since the run began.
    pub undo: [i64; 5],
}

/// A data segment seen by a tap: relative sequence number, payload length, TSval, time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TapSeg {
    /// ns since the connection was established.
    pub t_ns: i64,
    pub seq: u32,
    pub len: u32,
    pub tsval: u32,
}

/// An ACK to the sender seen on r0 after netem (what the sender got): time, cumulative
/// ACK (relative), TSecr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TapAck {
    pub t_ns: i64,
    pub ack: u32,
    pub tsecr: u32,
}

/// What one undo event was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UndoVerdict {
    /// A segment retransmitted in the episode had its original dropped: the reduction undone
    /// was warranted (F1's outcome).
    AfterRealLoss,
    /// Every retransmission of the episode had its original delivered: a right undo.
    Spurious,
    /// No retransmission in the episode's window (sampling could not place it).
    NoRetransmission,
    /// No capture (the kernel has no `AF_PACKET`, `CONFIG_PACKET`): not attributed.
    NotCaptured,
}

/// An undo event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UndoEvent {
    pub t_ms: f64,
    /// The episode's window start (ms), the last `Open` sample before the event.
    pub window_start_ms: f64,
    /// Which counters moved, with their deltas (short names: FullUndo, ...).
    pub counters: BTreeMap<String, i64>,
    pub cwnd_before: u32,
    pub cwnd_after: u32,
    pub ssthresh_before: u32,
    pub ssthresh_after: u32,
    pub retransmissions: u32,
    /// Of which the original was dropped by netem.
    pub originals_lost: u32,
    /// The relative sequence numbers of those.
    pub lost_seqs: Vec<u32>,
    /// An ACK the sender got between the event's sample and the one before echoed a TSval
    /// older than the episode's first retransmission: what `tcp_packet_delayed()` takes for
    /// proof that the retransmissions were spurious (a timestamp-based undo).
    pub echo_before_retransmission: bool,
    pub verdict: UndoVerdict,
    /// For an event after a real loss: what the taps saw from one RTT before the window to
    /// the event (`t_ms tx|rtx|ack ...`), so a reader can check the attribution.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trace: Vec<String>,
}

/// The measured figures of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImpactSummary {
    pub duration_s: f64,
    pub bytes_acked: u64,
    pub goodput_mbit: f64,
    pub data_segs_out: u32,
    pub total_retrans: u32,
    /// total_retrans / data_segs_out.
    pub retrans_rate: f64,
    pub mean_cwnd: f64,
    pub median_cwnd: f64,
    /// Data segments seen on r0 / on r1, and seen on r0 but never on r1.
    pub tap_sent: u64,
    pub tap_delivered: u64,
    pub tap_dropped: u64,
    /// Of the dropped: originals (first copies) and retransmissions.
    pub tap_dropped_originals: u64,
    pub tap_dropped_retransmissions: u64,
    /// The sender's packets without payload (handshake, pure ACKs, FIN) seen on r0 and on r1:
    /// netem drops those too, so its count is `tap_dropped` + their difference.
    #[serde(default)]
    pub tap_nodata_sent: u64,
    #[serde(default)]
    pub tap_nodata_delivered: u64,
    /// Packets a tap lost (PACKET_STATISTICS); non-zero means the attribution is incomplete.
    pub tap_losses: u64,
    /// Data packets longer than the MSS (a GSO packet got through: attribution per segment wrong).
    pub oversize: u64,
    pub netem_dropped: Option<u64>,
    pub counters: BTreeMap<String, i64>,
    pub undo_events: usize,
    pub undos_after_real_loss: usize,
    pub undos_spurious: usize,
    pub undos_unplaced: usize,
    /// Undos after a real loss with an ACK echoing a pre-retransmission TSval: F1's mechanism.
    #[serde(default)]
    pub undos_after_real_loss_ts: usize,
    /// The taps ran (`false`: no AF_PACKET in the kernel; the tap figures are zero and no
    /// event is attributed).
    #[serde(default = "yes")]
    pub captured: bool,
}

/// One run's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImpactRun {
    pub index: usize,
    pub summary: ImpactSummary,
    pub samples: Vec<Sample>,
    pub events: Vec<UndoEvent>,
    pub notes: Vec<String>,
}

fn yes() -> bool {
    true
}

fn short(c: &str) -> String {
    c.trim_start_matches("TcpExt")
        .trim_start_matches("TCP")
        .to_string()
}

fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The median of `xs` (0 for none).
pub fn median_of(xs: impl IntoIterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = xs.into_iter().collect();
    median(&mut v)
}

/// Per sent segment: is it a retransmission, and was the original of its first byte dropped?
/// `sent` in time order; `dropped[i]` says whether `sent[i]` never reached r1.
fn classify(sent: &[TapSeg], dropped: &[bool]) -> Vec<(bool, bool)> {
    // First copies by start: start -> (end, index).
    let mut first: BTreeMap<u32, (u32, usize)> = BTreeMap::new();
    let mut high: u32 = 0;
    let mut out = Vec::with_capacity(sent.len());
    for (i, s) in sent.iter().enumerate() {
        let end = s.seq.wrapping_add(s.len);
        if s.seq >= high {
            first.insert(s.seq, (end, i));
            high = high.max(end);
            out.push((false, false));
            continue;
        }
        // A retransmission: the first copy that covers its first byte.
        let orig = first
            .range(..=s.seq)
            .next_back()
            .filter(|(_, (e, _))| *e > s.seq)
            .map(|(_, (_, j))| *j);
        out.push((true, orig.is_some_and(|j| dropped[j])));
        if end > high {
            // Partly new data (a coalesced retransmission): its new part is an original.
            first.insert(high, (end, i));
            high = end;
        }
    }
    out
}

/// The two taps of a run, with what [`analyse`] derives from them once.
struct Taps<'a> {
    /// Data segments on r0, in time order.
    sent: &'a [TapSeg],
    /// Per sent segment: (a retransmission, its original was dropped), from [`classify`].
    cls: &'a [(bool, bool)],
    /// Per sent segment: it never reached r1.
    dropped: &'a [bool],
    acks: &'a [TapAck],
    /// Per ACK: it advanced the cumulative ACK.
    advancing: &'a [bool],
}

/// Per ACK: whether it advanced the cumulative ACK (the first one does).
fn advancing_acks(acks: &[TapAck]) -> Vec<bool> {
    let mut high_ack: Option<u32> = None;
    acks.iter()
        .map(|a| {
            let adv = high_ack.is_none_or(|h| (a.ack.wrapping_sub(h) as i32) > 0);
            if adv {
                high_ack = Some(a.ack);
            }
            adv
        })
        .collect()
}

/// The retransmissions sent in a window of an undo event.
#[derive(Default)]
struct Retransmissions {
    count: u32,
    /// Of them, those whose original was dropped.
    originals_lost: u32,
    lost_seqs: Vec<u32>,
    /// TSval of the first one (in sending order).
    first_tsval: Option<u32>,
    /// Time (ms) of the earliest one; infinity when there is none.
    first_t: f64,
}

/// The retransmissions sent after `t0` (ms) at a time `within` accepts.
fn retransmissions(taps: &Taps, t0: f64, within: impl Fn(f64) -> bool) -> Retransmissions {
    let mut r = Retransmissions {
        first_t: f64::INFINITY,
        ..Retransmissions::default()
    };
    for (s, (rtx, orig_lost)) in taps.sent.iter().zip(taps.cls) {
        let t = s.t_ns as f64 / 1e6;
        if *rtx && t > t0 && within(t) {
            r.count += 1;
            r.first_tsval.get_or_insert(s.tsval);
            r.first_t = r.first_t.min(t);
            if *orig_lost {
                r.originals_lost += 1;
                r.lost_seqs.push(s.seq);
            }
        }
    }
    r
}

/// The packets of both taps from `from` to `t1` (ms), one line each, in time order.
fn event_trace(taps: &Taps, from: f64, t1: f64) -> Vec<String> {
    let mut lines: Vec<(f64, String)> = Vec::new();
    for (i, (s, (r, _))) in taps.sent.iter().zip(taps.cls).enumerate() {
        let t = s.t_ns as f64 / 1e6;
        if t >= from && t <= t1 {
            lines.push((
                t,
                format!(
                    "{t:.3} {} {}:{} tsval {}{}",
                    if *r { "rtx" } else { "tx " },
                    s.seq,
                    s.seq.wrapping_add(s.len),
                    s.tsval,
                    if taps.dropped[i] { " DROPPED" } else { "" }
                ),
            ));
        }
    }
    for a in taps.acks {
        let t = a.t_ns as f64 / 1e6;
        if t >= from && t <= t1 {
            lines.push((t, format!("{t:.3} ack {} tsecr {}", a.ack, a.tsecr)));
        }
    }
    lines.sort_by(|a, b| a.0.total_cmp(&b.0));
    lines.into_iter().map(|l| l.1).collect()
}

/// The undo event that ends at sample `k` (undo counters grew since sample `k - 1`), or none.
/// `prev_event`: the sample of the previous event (its window starts after it).
fn undo_event(
    p: &ImpactParams,
    samples: &[Sample],
    k: usize,
    prev_event: usize,
    taps: &Taps,
    captured: bool,
) -> Option<UndoEvent> {
    let d: Vec<i64> = (0..5)
        .map(|c| samples[k].undo[c] - samples[k - 1].undo[c])
        .collect();
    if d.iter().all(|&x| x <= 0) {
        return None;
    }
    let mut j = k - 1;
    while j > prev_event && samples[j].ca_state != 0 {
        j -= 1;
    }
    let (t0, t1) = (samples[j].t_ms, samples[k].t_ms);
    let mut rtx = retransmissions(taps, t0, |t| t <= t1);
    let tprev = samples[k - 1].t_ms;
    // The candidate undo ACK: the first in the event's sample interval that echoes a TSval
    // older than the episode's first retransmission. Retransmissions after it belong to
    // the next episode (the undo had happened). It must come after that retransmission.
    // Only an ACK that advances the cumulative ACK counts: the undos judge the echo on
    // such ACKs (FLAG_SND_UNA_ADVANCED), while a duplicate ACK echoes the old ts_recent
    // whatever happened.
    let first_rtx_t = rtx.first_t;
    let undo_ack = rtx.first_tsval.and_then(|f| {
        taps.acks
            .iter()
            .zip(taps.advancing)
            .map(|(a, adv)| (a.t_ns as f64 / 1e6, a, *adv))
            .find(|(t, a, adv)| {
                *adv && *t > tprev.max(first_rtx_t)
                    && *t <= t1
                    && a.tsecr != 0
                    && (a.tsecr.wrapping_sub(f) as i32) < 0
            })
            .map(|(t, _, _)| t)
    });
    let echo_before = undo_ack.is_some();
    if let Some(tu) = undo_ack {
        rtx = retransmissions(taps, t0, |t| t < tu);
    }
    let verdict = if !captured {
        UndoVerdict::NotCaptured
    } else if rtx.originals_lost > 0 {
        UndoVerdict::AfterRealLoss
    } else if rtx.count > 0 {
        UndoVerdict::Spurious
    } else {
        UndoVerdict::NoRetransmission
    };
    let counters = (0..5)
        .filter(|&c| d[c] > 0)
        .map(|c| (short(UNDO_COUNTERS[c]), d[c]))
        .collect();
    let trace = if verdict == UndoVerdict::AfterRealLoss {
        event_trace(taps, t0 - p.rtt_ms, t1)
    } else {
        Vec::new()
    };
    Some(UndoEvent {
        t_ms: t1,
        window_start_ms: t0,
        counters,
        cwnd_before: samples[k - 1].cwnd,
        cwnd_after: samples[k].cwnd,
        ssthresh_before: samples[k - 1].ssthresh,
        ssthresh_after: samples[k].ssthresh,
        retransmissions: rtx.count,
        originals_lost: rtx.originals_lost,
        lost_seqs: rtx.lost_seqs,
        echo_before_retransmission: echo_before,
        verdict,
        trace,
    })
}

/// The summary and the undo events of a run from its samples and the two taps.
/// `sent`: data segments on r0, `delivered`: on r1, both in time order.
/// `captured`: the taps ran (else every event is [`UndoVerdict::NotCaptured`]).
pub fn analyse(
    p: &ImpactParams,
    samples: &[Sample],
    sent: &[TapSeg],
    delivered: &[TapSeg],
    acks: &[TapAck],
    mss: u32,
    captured: bool,
) -> (ImpactSummary, Vec<UndoEvent>) {
    let got: HashSet<(u32, u32, u32)> = delivered.iter().map(|d| (d.seq, d.len, d.tsval)).collect();
    let dropped: Vec<bool> = sent
        .iter()
        .map(|s| !got.contains(&(s.seq, s.len, s.tsval)))
        .collect();
    let cls = classify(sent, &dropped);
    let advancing = advancing_acks(acks);
    let taps = Taps {
        sent,
        cls: &cls,
        dropped: &dropped,
        acks,
        advancing: &advancing,
    };
    let mut events = Vec::new();
    let mut prev_event = 0usize;
    for k in 1..samples.len() {
        if let Some(e) = undo_event(p, samples, k, prev_event, &taps, captured) {
            events.push(e);
            prev_event = k;
        }
    }
    let summary = summarise(p, samples, &taps, delivered.len(), mss, captured, &events);
    (summary, events)
}

/// The transfer's figures at the end of the writing period, the taps' counts and the events'
/// verdicts.
fn summarise(
    p: &ImpactParams,
    samples: &[Sample],
    taps: &Taps,
    delivered: usize,
    mss: u32,
    captured: bool,
    events: &[UndoEvent],
) -> ImpactSummary {
    let sent = taps.sent;
    let dropped_n = taps.dropped.iter().filter(|&&d| d).count() as u64;
    let dropped_orig = taps
        .dropped
        .iter()
        .zip(taps.cls)
        .filter(|(&d, (r, _))| d && !r)
        .count() as u64;
    let end_ms = p.duration_s * 1000.0;
    let in_run: Vec<&Sample> = samples.iter().filter(|s| s.t_ms <= end_ms + 1e-9).collect();
    let last = in_run.last().copied().or(samples.last());
    let (bytes, segs, rtx, dur) = match last {
        Some(s) => (
            s.bytes_acked,
            s.data_segs_out,
            s.total_retrans,
            s.t_ms / 1000.0,
        ),
        None => (0, 0, 0, 0.0),
    };
    let mut cw: Vec<f64> = in_run.iter().map(|s| s.cwnd as f64).collect();
    let mean_cwnd = if cw.is_empty() {
        0.0
    } else {
        cw.iter().sum::<f64>() / cw.len() as f64
    };
    let count = |v: UndoVerdict| events.iter().filter(|e| e.verdict == v).count();
    ImpactSummary {
        duration_s: dur,
        bytes_acked: bytes,
        goodput_mbit: if dur > 0.0 {
            bytes as f64 * 8.0 / dur / 1e6
        } else {
            0.0
        },
        data_segs_out: segs,
        total_retrans: rtx,
        retrans_rate: if segs > 0 {
            rtx as f64 / segs as f64
        } else {
            0.0
        },
        mean_cwnd,
        median_cwnd: median(&mut cw),
        tap_sent: sent.len() as u64,
        tap_delivered: delivered as u64,
        tap_dropped: dropped_n,
        tap_dropped_originals: dropped_orig,
        tap_dropped_retransmissions: dropped_n - dropped_orig,
        tap_nodata_sent: 0,
        tap_nodata_delivered: 0,
        tap_losses: 0,
        oversize: sent.iter().filter(|s| s.len > mss).count() as u64,
        netem_dropped: None,
        counters: BTreeMap::new(),
        undo_events: events.len(),
        undos_after_real_loss: count(UndoVerdict::AfterRealLoss),
        undos_spurious: count(UndoVerdict::Spurious),
        undos_unplaced: count(UndoVerdict::NoRetransmission),
        undos_after_real_loss_ts: events
            .iter()
            .filter(|e| e.verdict == UndoVerdict::AfterRealLoss && e.echo_before_retransmission)
            .count(),
        captured,
    }
}

/// The fields of a TCP/IPv4 header the experiment reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpHdr {
    pub seq: u32,
    pub ack: u32,
    /// Payload length.
    pub len: u32,
    pub tsval: u32,
    pub tsecr: u32,
    pub flags: u8,
}

/// Parses a TCP/IPv4 packet (from the IP header on), or `None` for anything else.
pub fn parse_tcp(p: &[u8], wire_len: usize) -> Option<TcpHdr> {
    if p.len() < 20 || p[0] >> 4 != 4 || p[9] != 6 {
        return None;
    }
    let ihl = (p[0] & 0xf) as usize * 4;
    let tot = u16::from_be_bytes([p[2], p[3]]) as usize;
    let t = p.get(ihl..)?;
    if t.len() < 20 {
        return None;
    }
    let seq = u32::from_be_bytes([t[4], t[5], t[6], t[7]]);
    let ack = u32::from_be_bytes([t[8], t[9], t[10], t[11]]);
    let doff = (t[12] >> 4) as usize * 4;
    let flags = t[13];
    let tot = if tot == 0 { wire_len } else { tot };
    let len = tot.checked_sub(ihl + doff)? as u32;
    let mut tsval = 0;
    let mut tsecr = 0;
    let opts = t.get(20..doff.min(t.len())).unwrap_or(&[]);
    let mut i = 0;
    while i < opts.len() {
        match opts[i] {
            0 => break,
            1 => i += 1,
            k => {
                let l = *opts.get(i + 1)? as usize;
                if l < 2 {
                    break;
                }
                if k == 8 && l == 10 && i + 6 <= opts.len() {
                    tsval =
                        u32::from_be_bytes([opts[i + 2], opts[i + 3], opts[i + 4], opts[i + 5]]);
                    if i + 10 <= opts.len() {
                        tsecr = u32::from_be_bytes([
                            opts[i + 6],
                            opts[i + 7],
                            opts[i + 8],
                            opts[i + 9],
                        ]);
                    }
                }
                i += l;
            }
        }
    }
    Some(TcpHdr {
        seq,
        ack,
        len,
        tsval,
        tsecr,
        flags,
    })
}

/// The `dropped N` of `tc -s qdisc show` output for the netem qdisc.
pub fn netem_dropped(tc_output: &str) -> Option<u64> {
    let mut in_netem = false;
    for l in tc_output.lines() {
        if l.starts_with("qdisc ") {
            in_netem = l.contains(" netem ");
        }
        if in_netem {
            if let Some(i) = l.find("dropped ") {
                return l[i + 8..]
                    .split(|c: char| !c.is_ascii_digit())
                    .next()
                    .and_then(|x| x.parse().ok());
            }
        }
    }
    None
}

/// Why an impact run failed in the guest.
#[derive(Debug, thiserror::Error)]
pub enum ImpactError {
    /// A system call or file: `what: why`.
    #[error(transparent)]
    Sys(#[from] crate::SysError),
    /// A command (`ip`, `tc`) that could not start or failed: its command line and why.
    #[error("{command}: {why}")]
    Command { command: String, why: String },
    #[error("no interface {0}")]
    NoInterface(String),
    /// TCP_INFO of the sender's socket.
    #[error(transparent)]
    TcpInfo(#[from] std::io::Error),
    /// A thread of the run that did not start or panicked.
    #[error("{0}")]
    Thread(&'static str),
}

#[cfg(target_os = "linux")]
pub mod guest {
    //! The guest side: namespaces, qdiscs, taps, sender, receiver, sampler.
    use super::*;
    use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};
    use std::process::Command;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    const SND: &str = "trcsnd";
    const RCV: &str = "trcrcv";
    const PORT: u16 = 5201;

    fn sh(args: &[&str]) -> Result<String, ImpactError> {
        let failed = |why: String| ImpactError::Command {
            command: args.join(" "),
            why,
        };
        let out = Command::new(args[0])
            .args(&args[1..])
            .output()
            .map_err(|e| failed(e.to_string()))?;
        if !out.status.success() {
            return Err(failed(
                String::from_utf8_lossy(&out.stderr).trim().to_string(),
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    fn ip(args: &str) -> Result<String, ImpactError> {
        let mut v = vec!["ip"];
        v.extend(args.split_whitespace());
        sh(&v)
    }

    fn realtime_ns() -> i64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a valid timespec.
        unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
        ts.tv_sec * 1_000_000_000 + ts.tv_nsec
    }

    fn enter_netns(name: &str) -> Result<(), ImpactError> {
        let f = std::fs::File::open(format!("/run/netns/{name}")).map_err(|source| {
            crate::SysError {
                what: format!("netns {name}"),
                source,
            }
        })?;
        // SAFETY: a valid namespace fd; affects the calling thread only.
        if unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            return Err(crate::SysError::last(format!("setns {name}")).into());
        }
        Ok(())
    }

    /// Removes the run's links and namespaces. The router's ends are deleted first, which
    /// removes each veth pair at once: a namespace's own devices go only later, in the
    /// kernel's asynchronous namespace cleanup, and the next run's `ip link add` would find
    /// the old `r1` still there.
    fn teardown() {
        let _ = ip("link del r0");
        let _ = ip("link del r1");
        let _ = ip(&format!("netns del {SND}"));
        let _ = ip(&format!("netns del {RCV}"));
        for _ in 0..100 {
            if ifindex("r0").is_err() && ifindex("r1").is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn setup(p: &ImpactParams) -> Result<(), ImpactError> {
        teardown();
        ip(&format!("netns add {SND}"))?;
        ip(&format!("netns add {RCV}"))?;
        ip(&format!("link add a0 netns {SND} type veth peer name r0"))?;
        ip(&format!("link add b0 netns {RCV} type veth peer name r1"))?;
        ip("addr add 10.9.1.2/24 dev r0")?;
        ip("addr add 10.9.2.2/24 dev r1")?;
        ip(&format!("-n {SND} addr add 10.9.1.1/24 dev a0"))?;
        ip(&format!("-n {RCV} addr add 10.9.2.1/24 dev b0"))?;
        // One MSS per packet, so netem drops segments (not GSO bursts) and the taps see segments.
        ip(&format!("-n {SND} link set a0 gso_max_segs 1"))?;
        for l in ["r0", "r1"] {
            ip(&format!("link set {l} up"))?;
        }
        ip(&format!("-n {SND} link set lo up"))?;
        ip(&format!("-n {SND} link set a0 up"))?;
        ip(&format!("-n {RCV} link set lo up"))?;
        ip(&format!("-n {RCV} link set b0 up"))?;
        ip(&format!("-n {SND} route add default via 10.9.1.2"))?;
        ip(&format!("-n {RCV} route add default via 10.9.2.2"))?;
        std::fs::write("/proc/sys/net/ipv4/ip_forward", "1").map_err(|source| crate::SysError {
            what: "ip_forward".into(),
            source,
        })?;
        let mut d = vec!["tc", "qdisc", "replace", "dev", "r1", "root", "netem"];
        let dn = p.data_netem();
        d.extend(dn.iter().map(String::as_str));
        sh(&d)?;
        let mut a = vec!["tc", "qdisc", "replace", "dev", "r0", "root", "netem"];
        let an = p.ack_netem();
        a.extend(an.iter().map(String::as_str));
        sh(&a)?;
        Ok(())
    }

    fn ifindex(name: &str) -> Result<i32, ImpactError> {
        let c = std::ffi::CString::new(name).unwrap_or_default();
        // SAFETY: a NUL-terminated name.
        let i = unsafe { libc::if_nametoindex(c.as_ptr()) };
        if i == 0 {
            return Err(ImpactError::NoInterface(name.to_string()));
        }
        Ok(i as i32)
    }

    /// An AF_PACKET tap on `dev`, with a large buffer and kernel timestamps. `ETH_P_ALL`:
    /// outgoing packets reach only those taps (`dev_queue_xmit_nit`); IPv4 is picked later.
    fn tap_socket(dev: &str) -> Result<OwnedFd, ImpactError> {
        let idx = ifindex(dev)?;
        let proto = (libc::ETH_P_ALL as u16).to_be();
        // SAFETY: plain socket calls on a fresh fd with properly sized arguments.
        unsafe {
            let fd = libc::socket(
                libc::AF_PACKET,
                libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
                proto as i32,
            );
            if fd < 0 {
                return Err(crate::SysError::last("AF_PACKET socket").into());
            }
            let fd = OwnedFd::from_raw_fd(fd);
            let mut sll: libc::sockaddr_ll = std::mem::zeroed();
            sll.sll_family = libc::AF_PACKET as u16;
            sll.sll_protocol = proto;
            sll.sll_ifindex = idx;
            if libc::bind(
                fd.as_raw_fd(),
                &sll as *const _ as *const libc::sockaddr,
                size_of::<libc::sockaddr_ll>() as u32,
            ) != 0
            {
                return Err(crate::SysError::last(format!("bind tap {dev}")).into());
            }
            let big: libc::c_int = 256 << 20;
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVBUFFORCE,
                &big as *const _ as *const libc::c_void,
                4,
            );
            let on: libc::c_int = 1;
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_TIMESTAMPNS,
                &on as *const _ as *const libc::c_void,
                4,
            );
            let tv = libc::timeval {
                tv_sec: 0,
                tv_usec: 100_000,
            };
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                &tv as *const _ as *const libc::c_void,
                size_of::<libc::timeval>() as u32,
            );
            Ok(fd)
        }
    }

    /// What a tap saw: (kernel timestamp ns, pkttype, header bytes, wire length).
    type Raw = (i64, u8, Vec<u8>, usize);

    fn tap_loop(fd: OwnedFd, stop: Arc<AtomicBool>) -> (Vec<Raw>, u64) {
        let mut out = Vec::new();
        let mut buf = [0u8; 160];
        let mut cbuf = [0u64; 16];
        loop {
            let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            let mut iov = libc::iovec {
                iov_base: buf.as_mut_ptr() as *mut libc::c_void,
                iov_len: buf.len(),
            };
            let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
            msg.msg_name = &mut sll as *mut _ as *mut libc::c_void;
            msg.msg_namelen = size_of::<libc::sockaddr_ll>() as u32;
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            msg.msg_control = cbuf.as_mut_ptr() as *mut libc::c_void;
            msg.msg_controllen = size_of_val(&cbuf);
            // SAFETY: msg points at live buffers of the sizes given.
            let n = unsafe { libc::recvmsg(fd.as_raw_fd(), &mut msg, libc::MSG_TRUNC) };
            if n < 0 {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                continue;
            }
            let mut ts = 0i64;
            // SAFETY: walking the control messages the kernel filled in.
            unsafe {
                let mut c = libc::CMSG_FIRSTHDR(&msg);
                while !c.is_null() {
                    if (*c).cmsg_level == libc::SOL_SOCKET
                        && (*c).cmsg_type == libc::SCM_TIMESTAMPNS
                    {
                        let t =
                            std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                        ts = t.tv_sec * 1_000_000_000 + t.tv_nsec;
                    }
                    c = libc::CMSG_NXTHDR(&msg, c);
                }
            }
            if ts == 0 {
                ts = realtime_ns();
            }
            if sll.sll_protocol != (libc::ETH_P_IP as u16).to_be() {
                continue;
            }
            let got = (n as usize).min(buf.len());
            out.push((ts, sll.sll_pkttype, buf[..got].to_vec(), n as usize));
        }
        // PACKET_STATISTICS: tp_packets, tp_drops.
        let mut st = [0u32; 2];
        let mut len = 8u32;
        // SAFETY: an 8-byte buffer for struct tpacket_stats.
        unsafe {
            libc::getsockopt(
                fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_STATISTICS,
                st.as_mut_ptr() as *mut libc::c_void,
                &mut len,
            )
        };
        (out, st[1] as u64)
    }

    fn undo_counts(m: &BTreeMap<String, i64>) -> [i64; 5] {
        let mut u = [0; 5];
        for (i, c) in UNDO_COUNTERS.iter().enumerate() {
            u[i] = m.get(*c).copied().unwrap_or(0);
        }
        u
    }

    struct SenderOut {
        samples: Vec<Sample>,
        mib_before: BTreeMap<String, i64>,
        mib_after: BTreeMap<String, i64>,
        t0_ns: i64,
        mss: u32,
        notes: Vec<String>,
    }

    fn receiver(
        ready: std::sync::mpsc::Sender<Result<(), ImpactError>>,
        stop: Arc<AtomicBool>,
    ) -> Result<u64, ImpactError> {
        let sys = |what: &str| {
            let what = what.to_string();
            move |source| crate::SysError { what, source }
        };
        let r = (|| -> Result<std::net::TcpListener, ImpactError> {
            enter_netns(RCV)?;
            Ok(std::net::TcpListener::bind(("10.9.2.1", PORT)).map_err(sys("listen"))?)
        })();
        let l = match r {
            Ok(l) => {
                let _ = ready.send(Ok(()));
                l
            }
            Err(e) => {
                // The run stops with `e`; this thread's result is not read.
                let _ = ready.send(Err(e));
                return Err(ImpactError::Thread("the receiver did not start"));
            }
        };
        let (mut c, _) = l.accept().map_err(sys("accept"))?;
        let _ = c.set_read_timeout(Some(Duration::from_millis(500)));
        let mut buf = vec![0u8; 1 << 16];
        let mut total = 0u64;
        loop {
            use std::io::Read as _;
            match c.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => total += n as u64,
                Err(e)
                    if e.kind() == std::io::ErrorKind::WouldBlock
                        || e.kind() == std::io::ErrorKind::TimedOut =>
                {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                }
                Err(e) => return Err(sys("read")(e).into()),
            }
        }
        Ok(total)
    }

    fn sender(p: &ImpactParams) -> Result<SenderOut, ImpactError> {
        enter_netns(SND)?;
        let mut notes = Vec::new();
        let mib_before = trc_kernel::sys::read_mib();
        // SAFETY: a plain TCP socket.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(crate::SysError::last("socket").into());
        }
        // SAFETY: fd is ours.
        let sock = unsafe { std::net::TcpStream::from_raw_fd(fd) };
        if let Err(e) = trc_kernel::sys::set_congestion(fd, &p.cc) {
            notes.push(format!("TCP_CONGESTION {}: {e}; using the default", p.cc));
        }
        let mut sa: libc::sockaddr_in = unsafe { std::mem::zeroed() };
        sa.sin_family = libc::AF_INET as u16;
        sa.sin_port = PORT.to_be();
        sa.sin_addr.s_addr = u32::from_be_bytes([10, 9, 2, 1]).to_be();
        // SAFETY: a valid sockaddr_in.
        if unsafe {
            libc::connect(
                fd,
                &sa as *const _ as *const libc::sockaddr,
                size_of::<libc::sockaddr_in>() as u32,
            )
        } != 0
        {
            return Err(crate::SysError::last("connect").into());
        }
        if let Ok(cc) = trc_kernel::sys::get_congestion(fd) {
            notes.push(format!("congestion control: {cc}"));
        }
        let t0_ns = realtime_ns();
        let start = Instant::now();
        let dur = Duration::from_secs_f64(p.duration_s);
        let stop = Arc::new(AtomicBool::new(false));
        let st = stop.clone();
        let period = Duration::from_secs_f64(p.sample_ms / 1000.0);
        let sampler = std::thread::spawn(move || -> Result<Vec<Sample>, ImpactError> {
            enter_netns(SND)?;
            let mut v = Vec::new();
            let mut next = Instant::now();
            loop {
                let (ti, _) = trc_kernel::sys::tcp_info(fd)?;
                let mib = trc_kernel::sys::read_mib();
                v.push(Sample {
                    t_ms: (realtime_ns() - t0_ns) as f64 / 1e6,
                    ca_state: ti.tcpi_ca_state,
                    cwnd: ti.tcpi_snd_cwnd,
                    ssthresh: ti.tcpi_snd_ssthresh,
                    total_retrans: ti.tcpi_total_retrans,
                    data_segs_out: ti.tcpi_data_segs_out,
                    bytes_acked: ti.tcpi_bytes_acked,
                    unacked: ti.tcpi_unacked,
                    rtt_us: ti.tcpi_rtt,
                    undo: undo_counts(&mib),
                });
                if st.load(Ordering::SeqCst) {
                    return Ok(v);
                }
                next += period;
                let now = Instant::now();
                if next > now {
                    std::thread::sleep(next - now);
                } else {
                    next = now;
                }
            }
        });
        let buf = vec![0x5au8; 1 << 16];
        let mut w = &sock;
        while start.elapsed() < dur {
            use std::io::Write as _;
            if let Err(e) = w.write(&buf) {
                notes.push(format!("write: {e}"));
                break;
            }
        }
        // Let the last data be acknowledged (at most 10 s), then close.
        let drain = Instant::now();
        while drain.elapsed() < Duration::from_secs(10) {
            match trc_kernel::sys::tcp_info(fd) {
                Ok((ti, _)) if ti.tcpi_unacked > 0 || ti.tcpi_notsent_bytes > 0 => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                _ => break,
            }
        }
        let mss = trc_kernel::sys::tcp_info(fd)
            .map(|(t, _)| t.tcpi_snd_mss)
            .unwrap_or(0);
        stop.store(true, Ordering::SeqCst);
        let samples = sampler
            .join()
            .map_err(|_| ImpactError::Thread("the sampler panicked"))??;
        let mib_after = trc_kernel::sys::read_mib();
        drop(sock);
        Ok(SenderOut {
            samples,
            mib_before,
            mib_after,
            t0_ns,
            mss,
            notes,
        })
    }

    /// The data segments of the connection seen on a tap, with `pkttype` (PACKET_HOST for
    /// r0's ingress, PACKET_OUTGOING for r1's egress), relative to the sender's ISN; the ISN.
    fn segments(
        raw: &[Raw],
        pkttype: u8,
        t0_ns: i64,
        isn: Option<u32>,
    ) -> (Vec<TapSeg>, Option<u32>) {
        let mut isn = isn;
        let mut v = Vec::new();
        for (ts, pt, b, n) in raw {
            if *pt != pkttype {
                continue;
            }
            // Only the sender's direction: source 10.9.1.1.
            if b.len() < 20 || b[12..16] != [10, 9, 1, 1] {
                continue;
            }
            let Some(h) = parse_tcp(b, *n) else { continue };
            if h.flags & 0x02 != 0 {
                isn.get_or_insert(h.seq);
                continue;
            }
            let Some(i) = isn else { continue };
            if h.len == 0 {
                continue;
            }
            v.push(TapSeg {
                t_ns: ts - t0_ns,
                seq: h.seq.wrapping_sub(i).wrapping_sub(1),
                len: h.len,
                tsval: h.tsval,
            });
        }
        v.sort_by_key(|s| s.t_ns);
        (v, isn)
    }

    /// The sender's packets without payload (SYN included) on a tap with `pkttype`.
    fn nodata(raw: &[Raw], pkttype: u8) -> u64 {
        raw.iter()
            .filter(|(_, pt, b, n)| {
                *pt == pkttype
                    && b.len() >= 20
                    && b[12..16] == [10, 9, 1, 1]
                    && parse_tcp(b, *n).is_some_and(|h| h.len == 0)
            })
            .count() as u64
    }

    /// The receiver's ACKs as the sender gets them: r0's egress (after the ACK path's netem).
    fn acks(raw: &[Raw], t0_ns: i64, isn: Option<u32>) -> Vec<TapAck> {
        let Some(i) = isn else { return Vec::new() };
        let mut v: Vec<TapAck> = raw
            .iter()
            .filter(|(_, pt, b, _)| {
                *pt == libc::PACKET_OUTGOING && b.len() >= 20 && b[12..16] == [10, 9, 2, 1]
            })
            .filter_map(|(ts, _, b, n)| {
                parse_tcp(b, *n)
                    .filter(|h| h.flags & 0x10 != 0)
                    .map(|h| TapAck {
                        t_ns: ts - t0_ns,
                        ack: h.ack.wrapping_sub(i).wrapping_sub(1),
                        tsecr: h.tsecr,
                    })
            })
            .collect();
        v.sort_by_key(|a| a.t_ns);
        v
    }

    /// One run: set up, measure, tear down.
    pub fn run(p: &ImpactParams, index: usize) -> Result<ImpactRun, ImpactError> {
        setup(p)?;
        let r = measure(p, index);
        let tc = sh(&["tc", "-s", "qdisc", "show", "dev", "r1"]);
        teardown();
        let mut r = r?;
        match &tc {
            Ok(t) => {
                r.summary.netem_dropped = netem_dropped(t);
                if r.summary.netem_dropped.is_none() {
                    r.notes.push(format!("no drop count in: {}", t.trim()));
                }
            }
            Err(e) => r.notes.push(e.to_string()),
        }
        Ok(r)
    }

    fn measure(p: &ImpactParams, index: usize) -> Result<ImpactRun, ImpactError> {
        let stop = Arc::new(AtomicBool::new(false));
        let mut tap_note = None;
        let taps: Vec<_> = match ["r0", "r1"]
            .iter()
            .map(|d| tap_socket(d))
            .collect::<Result<Vec<_>, ImpactError>>()
        {
            Ok(fds) => fds
                .into_iter()
                .map(|fd| {
                    let s = stop.clone();
                    std::thread::spawn(move || tap_loop(fd, s))
                })
                .collect(),
            Err(e) => {
                tap_note = Some(format!("no capture ({e}): the kernel needs CONFIG_PACKET; undo events are not attributed"));
                Vec::new()
            }
        };
        let (tx, rx) = std::sync::mpsc::channel();
        let rs = stop.clone();
        let recv = std::thread::spawn(move || receiver(tx, rs));
        rx.recv_timeout(Duration::from_secs(10))
            .map_err(|_| ImpactError::Thread("the receiver did not start"))??;
        // In a thread of its own: entering the sender's namespace is per thread.
        let sp = p.clone();
        let snd = std::thread::spawn(move || sender(&sp))
            .join()
            .map_err(|_| ImpactError::Thread("the sender panicked"))?;
        std::thread::sleep(Duration::from_millis(200));
        stop.store(true, Ordering::SeqCst);
        let received = recv
            .join()
            .map_err(|_| ImpactError::Thread("the receiver panicked"))?;
        let mut raws = Vec::new();
        for t in taps {
            raws.push(
                t.join()
                    .map_err(|_| ImpactError::Thread("a tap panicked"))?,
            );
        }
        let s = snd?;
        let mut notes = s.notes;
        let captured = tap_note.is_none();
        notes.extend(tap_note);
        while raws.len() < 2 {
            raws.push((Vec::new(), 0));
        }
        match received {
            Ok(b) => notes.push(format!("receiver got {b} bytes")),
            Err(e) => notes.push(format!("receiver: {e}")),
        }
        let (sent, isn) = segments(&raws[0].0, libc::PACKET_HOST, s.t0_ns, None);
        let (delivered, _) = segments(&raws[1].0, libc::PACKET_OUTGOING, s.t0_ns, isn);
        if isn.is_none() && captured {
            notes.push("the taps did not see the SYN: no attribution".into());
        }
        let acks = acks(&raws[0].0, s.t0_ns, isn);
        let (mut summary, events) =
            analyse(p, &s.samples, &sent, &delivered, &acks, s.mss, captured);
        summary.tap_losses = raws[0].1 + raws[1].1;
        summary.tap_nodata_sent = nodata(&raws[0].0, libc::PACKET_HOST);
        summary.tap_nodata_delivered = nodata(&raws[1].0, libc::PACKET_OUTGOING);
        summary.counters = REPORTED_COUNTERS
            .iter()
            .map(|c| {
                (
                    c.to_string(),
                    s.mib_after.get(*c).copied().unwrap_or(0)
                        - s.mib_before.get(*c).copied().unwrap_or(0),
                )
            })
            .collect();
        Ok(ImpactRun {
            index,
            summary,
            samples: s.samples,
            events,
            notes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(t_ms: i64, seq: u32, tsval: u32) -> TapSeg {
        TapSeg {
            t_ns: t_ms * 1_000_000,
            seq,
            len: 1000,
            tsval,
        }
    }

    fn sample(t_ms: f64, ca: u8, cwnd: u32, undo: [i64; 5]) -> Sample {
        Sample {
            t_ms,
            ca_state: ca,
            cwnd,
            ssthresh: 100,
            total_retrans: 0,
            data_segs_out: 10,
            bytes_acked: 10_000,
            unacked: 0,
            rtt_us: 40_000,
            undo,
        }
    }

    #[test]
    fn an_undo_after_a_dropped_original_is_attributed_to_real_loss() {
        // Segments 0..4 sent at 0-4 ms; 3000 dropped by netem; 2000 delayed (still delivered);
        // both retransmitted at 50 ms; a full undo sampled at 100 ms, Recovery from 40 ms.
        let sent = vec![
            seg(0, 0, 1),
            seg(1, 1000, 1),
            seg(2, 2000, 1),
            seg(3, 3000, 1),
            seg(4, 4000, 1),
            seg(50, 2000, 51),
            seg(51, 3000, 51),
        ];
        let delivered: Vec<TapSeg> = sent
            .iter()
            .copied()
            .filter(|s| !(s.seq == 3000 && s.tsval == 1))
            .collect();
        let samples = vec![
            sample(30.0, 0, 10, [0; 5]),
            sample(40.0, 0, 10, [0; 5]),
            sample(60.0, 3, 5, [0; 5]),
            sample(100.0, 0, 10, [1, 0, 0, 0, 0]),
        ];
        let p = ImpactParams {
            duration_s: 0.1,
            ..ImpactParams::default()
        };
        // The undo's ACK (at 90 ms) echoes TSval 1, before the first retransmission's 51.
        let acks = vec![TapAck {
            t_ns: 90_000_000,
            ack: 5000,
            tsecr: 1,
        }];
        let (s, ev) = analyse(&p, &samples, &sent, &delivered, &acks, 1448, true);
        assert_eq!(
            (
                s.tap_sent,
                s.tap_delivered,
                s.tap_dropped,
                s.tap_dropped_originals
            ),
            (7, 6, 1, 1)
        );
        assert_eq!(ev.len(), 1);
        assert_eq!(ev[0].verdict, UndoVerdict::AfterRealLoss);
        assert_eq!(
            (
                ev[0].retransmissions,
                ev[0].originals_lost,
                ev[0].window_start_ms
            ),
            (2, 1, 40.0)
        );
        assert_eq!((ev[0].cwnd_before, ev[0].cwnd_after), (5, 10));
        assert_eq!(ev[0].counters.get("FullUndo"), Some(&1));
        assert_eq!(s.undos_after_real_loss, 1);
        assert!(ev[0].echo_before_retransmission);
        assert_eq!(
            (ev[0].lost_seqs.clone(), s.undos_after_real_loss_ts),
            (vec![3000], 1)
        );
    }

    #[test]
    fn an_undo_of_only_delayed_segments_is_spurious_and_one_without_retransmissions_is_unplaced() {
        let sent = vec![seg(0, 0, 1), seg(1, 1000, 1), seg(50, 1000, 51)];
        let delivered = sent.clone();
        let samples = vec![
            sample(40.0, 0, 10, [0; 5]),
            sample(60.0, 3, 5, [0; 5]),
            sample(100.0, 0, 10, [0, 0, 0, 1, 0]),
            sample(200.0, 0, 10, [0, 1, 0, 1, 0]),
        ];
        let p = ImpactParams {
            duration_s: 0.2,
            ..ImpactParams::default()
        };
        // The first ACK echoes the retransmission: not a timestamp-based proof; the second
        // echoes an old TSval but is a duplicate ACK (no advance), which the undos do not judge.
        let acks = vec![
            TapAck {
                t_ns: 90_000_000,
                ack: 2000,
                tsecr: 51,
            },
            TapAck {
                t_ns: 95_000_000,
                ack: 2000,
                tsecr: 1,
            },
        ];
        let (s, ev) = analyse(&p, &samples, &sent, &delivered, &acks, 1448, true);
        assert_eq!(
            ev.iter().map(|e| e.verdict).collect::<Vec<_>>(),
            [UndoVerdict::Spurious, UndoVerdict::NoRetransmission]
        );
        // The second event's window starts at the first event's sample (bounded by it).
        assert_eq!(ev[1].window_start_ms, 100.0);
        assert!(!ev[0].echo_before_retransmission);
        assert_eq!(
            (s.undos_spurious, s.undos_unplaced, s.tap_dropped),
            (1, 1, 0)
        );
        assert!((s.goodput_mbit - 10_000.0 * 8.0 / 0.2 / 1e6).abs() < 1e-9);
    }

    #[test]
    fn a_lost_retransmission_is_not_an_original() {
        let sent = vec![seg(0, 0, 1), seg(10, 0, 11), seg(20, 0, 21)];
        let delivered = vec![seg(20, 0, 21)];
        let (s, _) = analyse(
            &ImpactParams::default(),
            &[],
            &sent,
            &delivered,
            &[],
            1448,
            true,
        );
        assert_eq!(
            (
                s.tap_dropped,
                s.tap_dropped_originals,
                s.tap_dropped_retransmissions
            ),
            (2, 1, 1)
        );
    }

    #[test]
    fn tcp_header_and_timestamp_option() {
        let mut p = [0u8; 20 + 32 + 100];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&(152u16).to_be_bytes());
        p[9] = 6;
        let t = &mut p[20..];
        t[4..8].copy_from_slice(&7u32.to_be_bytes());
        t[12] = 8 << 4;
        t[13] = 0x18;
        t[20..32].copy_from_slice(&[1, 1, 8, 10, 0, 0, 0, 42, 0, 0, 0, 9]);
        let h = parse_tcp(&p[..60], 152).unwrap();
        assert_eq!(
            (h.seq, h.len, h.tsval, h.tsecr, h.flags),
            (7, 100, 42, 9, 0x18)
        );
        assert_eq!(parse_tcp(&[0x60; 40], 40), None);
    }

    #[test]
    fn netem_drop_count_and_arguments() {
        let out = "qdisc netem 8001: root refcnt 2 limit 10000 delay 20ms reorder 1% loss 1%\n Sent 1 bytes 2 pkt (dropped 37, overlimits 0 requeues 0)\n";
        assert_eq!(netem_dropped(out), Some(37));
        let p = ImpactParams::default();
        assert_eq!(
            p.data_netem().join(" "),
            "limit 10000 delay 20000us reorder 1% loss random 1%"
        );
        assert_eq!(p.ack_netem().join(" "), "limit 10000 delay 20000us");
        assert!(p.validate().is_ok());
        assert!(ImpactParams {
            loss_pct: 60.0,
            ..p.clone()
        }
        .validate()
        .is_err());
        let j = ImpactParams {
            jitter_ms: 5.0,
            jitter_dist: Some("pareto".into()),
            reorder_pct: 0.0,
            ..p.clone()
        };
        assert_eq!(
            j.data_netem().join(" "),
            "limit 10000 delay 20000us 5000us distribution pareto loss random 1%"
        );
        assert!(ImpactParams {
            jitter_dist: Some("zipf".into()),
            ..j
        }
        .validate()
        .is_err());
        assert_eq!(median_of([3.0, 1.0, 2.0, 10.0]), 2.5);
    }
}
