//! The sender's state: the `tcp_sock` / `inet_connection_sock` fields that loss recovery reads
//! and writes, the retransmit queue's per-segment tags, and ghost observations of the last step.

use crate::cc::Cc;
use crate::inline_vec::InlineVec;
use crate::segmask::SegMask;
use serde::{Deserialize, Serialize};

/// `icsk_ca_state`. The numeric order is used by the kernel (`<= Disorder`, `< CWR`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum CaState {
    Open = 0,
    Disorder = 1,
    Cwr = 2,
    Recovery = 3,
    Loss = 4,
}

impl CaState {
    /// The kernel's short name (`TCP_CA_` dropped; `CWR` upper-case as the kernel writes it).
    pub fn short_name(self) -> &'static str {
        self.tcpi_name().trim_start_matches("TCP_CA_")
    }

    /// The packetdrill / tcp_info symbolic name.
    pub fn tcpi_name(self) -> &'static str {
        match self {
            CaState::Open => "TCP_CA_Open",
            CaState::Disorder => "TCP_CA_Disorder",
            CaState::Cwr => "TCP_CA_CWR",
            CaState::Recovery => "TCP_CA_Recovery",
            CaState::Loss => "TCP_CA_Loss",
        }
    }
}

/// `TCP_INFINITE_SSTHRESH`.
pub const TCP_INFINITE_SSTHRESH: u32 = 0x7fff_ffff;
/// `TCP_RTO_MIN` in ms.
pub const TCP_RTO_MIN_MS: u32 = 200;
/// `TCP_RTO_MAX` in ms.
pub const TCP_RTO_MAX_MS: u32 = 120_000;
/// `TCP_RACK_RECOVERY_THRESH`.
pub const TCP_RACK_RECOVERY_THRESH: u8 = 16;

/// Per-segment tag bits of `TCP_SKB_CB(skb)->sacked`.
pub mod tag {
    /// `TCPCB_SACKED_ACKED`.
    pub const S: u8 = 1;
    /// `TCPCB_SACKED_RETRANS`: a retransmission is believed in flight.
    pub const R: u8 = 2;
    /// `TCPCB_LOST`.
    pub const L: u8 = 4;
    /// `TCPCB_EVER_RETRANS`.
    pub const E: u8 = 8;
    /// `TCPCB_RETRANS` = R | E.
    pub const RETRANS: u8 = R | E;
    /// Not a kernel tag: the segment is off `tp->tsorted_sent_queue` (the kernel's
    /// `list_empty(&skb->tcp_tsorted_anchor)`). Set where the kernel unlinks it
    /// (`tcp_rack_detect_loss()` after marking it lost, `tcp_sacktag_walk()` once SACKed), cleared
    /// where it relinks it (`tcp_update_skb_after_send()`, i.e. every (re)transmission). RACK only
    /// walks that list, so a segment RACK marked lost whose LOST bit an undo cleared before it was
    /// retransmitted is never examined by RACK again.
    pub const T: u8 = 16;
    /// Not a kernel tag: the segment's last transmission precedes RACK's last `reo_wnd`
    /// widening, i.e. `before(TCP_SKB_CB(skb)->tx.delivered, tp->rack.last_delivered)` (the
    /// delivered count `tcp_rate_skb_sent()` stamped on it is below the one
    /// `tcp_rack_update_reo_wnd()` recorded). Set on the unSACKed segments of the retransmit
    /// queue by that widening, cleared by every (re)transmission and by a SACK (a SACKed segment
    /// gives no further rate sample). Stands for the two delivered counters, which only meet in
    /// that one comparison.
    pub const D: u8 = 32;
}

/// One MSS-sized segment of the retransmit queue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Seg {
    /// [`tag`] bits.
    pub tags: u8,
    /// Send order of the last transmission among the transmissions of the same ms (`xmit`): 1 +
    /// the largest rank of the segments (and RACK's reference) stamped that ms when it was sent
    /// ([`Sender::stamp_xmit`]); 0 for a segment never sent, on a non-SACK connection (RACK never
    /// runs) or whose stamp was canonicalised (`reduce.rs`). It stands for the sub-ms part of `skb->skb_mstamp_ns`: the kernel stamps in
    /// µs (ns), so two transmissions of the same ms are ordered by when they were sent, and
    /// `tcp_skb_sent_after()`'s tie-break by sequence only applies to truly equal stamps (one
    /// burst of `tcp_write_xmit()`, sent in sequence order, as the ranks are). Stored in the
    /// padding after `tags`: the state does not grow. It saturates at `u16::MAX` (more
    /// transmissions in one ms than any bound explores: ties then fall back to the sequence).
    pub sub: u16,
    /// Time of the last transmission (ms, model clock): `skb->skb_mstamp_ns`.
    pub xmit: u32,
}

impl Seg {
    /// The last transmission's stamp as RACK compares it (`tcp_skb_timestamp_us(skb)`): the ms
    /// with the send-order rank below it ([`stamp`]).
    pub fn stamp(&self) -> u64 {
        stamp(self.xmit, self.sub)
    }
}

/// A transmission stamp for RACK's ordering (`tcp_skb_sent_after()`, `tp->rack.mstamp`): ms
/// `xmit` and the rank `sub` of the transmission within that ms, so that a later transmission of
/// the same ms compares greater, as the kernel's µs stamps do.
pub fn stamp(xmit: u32, sub: u16) -> u64 {
    (xmit as u64) << 16 | sub as u64
}

/// The ms of a [`stamp`].
pub fn stamp_ms(t: u64) -> u32 {
    (t >> 16) as u32
}

/// The rank within its ms of a [`stamp`].
pub fn stamp_sub(t: u64) -> u16 {
    t as u16
}

/// Which of `icsk_pending`'s timers is armed (only one at a time).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TimerKind {
    /// `ICSK_TIME_RETRANS`.
    Rto,
    /// `ICSK_TIME_REO_TIMEOUT` (RACK reordering timer).
    Reo,
    /// `ICSK_TIME_LOSS_PROBE` (TLP).
    Tlp,
}

/// The pending timer and its expiry (model ms).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Timer {
    pub kind: TimerKind,
    pub deadline: u32,
}

/// `tp->rack`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Rack {
    /// Transmit time of the most recently sent segment that was (S)ACKed.
    pub mstamp: u32,
    /// That transmission's rank within its ms ([`Seg::sub`]): with `mstamp` the kernel's µs
    /// `rack.mstamp`.
    pub sub: u16,
    /// Its end_seq.
    pub end_seq: u32,
    /// RTT of that delivery (`rack.rtt_us`, µs).
    pub rtt_us: u32,
    pub advanced: bool,
    pub reo_wnd_steps: u8,
    pub reo_wnd_persist: u8,
    pub dsack_seen: bool,
}

impl Rack {
    /// The reference's stamp (`tp->rack.mstamp`, see [`stamp`]).
    pub fn stamp(&self) -> u64 {
        stamp(self.mstamp, self.sub)
    }
}

/// `struct minmax` (include/linux/win_minmax.h): the best, second and third choices of a
/// windowed minimum, each (time in jiffies, value in µs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct MinMax {
    pub s: [(u32, u32); 3],
}

/// The RTT estimator's state, in the kernel's units (`sender/rtt.rs`). With
/// `Config::rtt_estimator` off it keeps its handshake values (the model's fixed RTT).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RttEst {
    /// `tp->srtt_us`: smoothed RTT in µs, scaled by 8.
    pub srtt_us: u32,
    /// `tp->mdev_us`: mean deviation in µs, scaled by 4.
    pub mdev_us: u32,
    /// `tp->mdev_max_us`: the largest `mdev` of the current RTT.
    pub mdev_max_us: u32,
    /// `tp->rttvar_us`: the RTT variance the RTO uses (at least `tcp_rto_min`).
    pub rttvar_us: u32,
    /// `tp->rtt_seq`: `snd_nxt` when the current RTT began (model sequence numbers).
    pub rtt_seq: u32,
    /// `icsk_rto` without backoff, in jiffies.
    pub rto: u32,
    /// `tp->rtt_min`: the windowed minimum RTT (`tcp_min_rtt()`).
    pub rtt_min: MinMax,
}

/// How an undo happened (the MIB counter it bumps).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum UndoKind {
    /// `tcp_try_undo_recovery` in Recovery: TcpExtTCPFullUndo.
    Full,
    /// `tcp_try_undo_recovery` in Loss: TcpExtTCPLossUndo.
    LossRecovered,
    /// `tcp_try_undo_partial`: TcpExtTCPPartialUndo.
    Partial,
    /// `tcp_try_undo_dsack`: TcpExtTCPDSACKUndo.
    Dsack,
    /// `tcp_try_undo_loss(false)`: TcpExtTCPLossUndo.
    Loss,
    /// `tcp_try_undo_loss(true)` (F-RTO): TcpExtTCPLossUndo + TcpExtTCPSpuriousRTOs.
    Frto,
}

/// Ghost record of one `tcp_undo_cwnd_reduction()` call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct UndoEvent {
    pub kind: UndoKind,
    pub ca_state: CaState,
    /// `undo_marker` before the undo cleared it.
    pub marker: u32,
    pub cwnd_before: u32,
    pub ssthresh_before: u32,
    pub prior_cwnd: u32,
    pub prior_ssthresh: u32,
    pub cwnd_after: u32,
    pub ssthresh_after: u32,
    /// Ghost: the evidence the undo entry point acted on ([`evidence`] bits).
    pub evidence: u16,
    /// Ghost: `high_seq` as the episode's last reduction set it (`tcp_enter_recovery`,
    /// `tcp_enter_loss`; the current `high_seq` if that reduction was already undone): the
    /// episode answered losses below it; a segment at or above it was sent after it began.
    pub high_seq: u32,
}

/// Ghost bits of [`UndoEvent::evidence`]: which of `tcp_may_undo()`'s conditions the undo
/// entry point relied on (in the kernel's order of evaluation), and how this ACK's DSACKs
/// brought `undo_retrans` to zero. They name the mechanism of an undo (properties'
/// signatures); they never decide anything.
pub mod evidence {
    /// `undo_retrans == 0`: every retransmission of the episode counted as DSACKed.
    pub const RETRANS_ZERO: u16 = 1;
    /// `tcp_packet_delayed()` through the timestamp echo: TSecr before `retrans_stamp` (Eifel).
    pub const TS_ECHO: u16 = 2;
    /// `tcp_packet_delayed()` with `retrans_stamp == 0` taken as "delayed" (the profile's
    /// variant of it).
    pub const NO_STAMP: u16 = 4;
    /// F-RTO (RFC 5682 step 3b): never-retransmitted data was (S)ACKed after the RTO.
    pub const FRTO: u16 = 8;
    /// This ACK decremented `undo_retrans` twice for one segment (`tcp_sacktag_one` reached it
    /// from two blocks).
    pub const DSACK_TWICE: u16 = 16;
    /// This ACK's DSACK decremented `undo_retrans` for a segment not retransmitted since the
    /// episode's `tcp_init_undo()` (a copy sent before the episode began).
    pub const DSACK_PRE_EPISODE: u16 = 32;
    /// ... and the episode's `tcp_init_undo()` had seen that an in-flight TLP retransmission and
    /// not counted it (the profile's `init_undo_tlp = "ignore"`).
    pub const DSACK_TLP_UNCOUNTED: u16 = 64;
    /// `tcp_check_dsack()` decremented `undo_retrans` for data below `snd_una` ("dumb
    /// counting" of forgotten segments).
    pub const DSACK_FORGOTTEN: u16 = 128;
    /// `tcp_process_loss()` tried the undo on an ACK that did not advance `snd_una` (a dupack or
    /// a SACK-only ACK): only the profile's `loss_undo_acks = "any-ack"` (before da34ac7626b5)
    /// does that; since then a Loss undo needs a partial or full ACK.
    pub const DUPACK: u16 = 256;
}

/// What triggered an ssthresh reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ReductionKind {
    /// `tcp_enter_recovery` → `tcp_init_cwnd_reduction`.
    Recovery,
    /// `tcp_enter_cwr` (ECE).
    Cwr,
    /// `tcp_enter_loss` (RTO).
    Loss,
    /// `tcp_process_tlp_ack`: the TLP repaired a loss.
    Tlp,
}

/// Ghost record of one call of the congestion control's `ssthresh()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Reduction {
    pub kind: ReductionKind,
    pub from: CaState,
    pub snd_una: u32,
    /// `high_seq` set by the previous (not undone) reduction, and that reduction's kind.
    pub prev: Option<(u32, ReductionKind)>,
    /// `icsk_retransmits` when `tcp_enter_loss` ran (0: an ACK advanced snd_una since the last RTO).
    pub icsk_retransmits: u8,
    /// The ACK marked a retransmission lost (FLAG_LOST_RETRANS), Loss → Recovery.
    pub lost_retrans: bool,
    /// cwnd handed to `ssthresh()` and the value it returned.
    pub cwnd: u32,
    pub ssthresh: u32,
}

/// Ghost observations of the last step (cleared at the start of every step).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Events {
    pub undos: InlineVec<[UndoEvent; 1]>,
    pub reductions: InlineVec<[Reduction; 2]>,
    /// PRR ran with `prior_cwnd == 0` (the kernel divides by it).
    pub prr_zero_prior_cwnd: bool,
    /// `tcp_end_cwnd_reduction` ran when leaving Recovery: (cwnd, ssthresh, undone) right after
    /// it, `undone` meaning the episode's reduction was undone (undo_marker already 0).
    pub recovery_end: Option<(u32, u32, bool)>,
    /// The state left Recovery or Loss for Open/Disorder/CWR: (from, snd_una == high_seq).
    pub left_recovery: Option<(CaState, bool)>,
    /// The non-SACK hold at `snd_una == high_seq` kept the state in this step.
    pub nonsack_hold: bool,
    /// HyStart ended slow start on this step's ACK.
    pub hystart: Option<crate::cc::HystartExit>,
    /// CUBIC handled `CA_EVENT_TX_START` with an epoch running.
    pub idle_restart: Option<crate::cc::IdleRestart>,
    /// `tcp_enter_loss()` ran (an RTO).
    pub entered_loss: bool,
    /// Ghost, per undo of [`Events::undos`]: the segments a retransmission of which had left the
    /// host since the episode began (`tcp_init_undo`) and before that undo — the episode's
    /// `SenderGhost::rtx_mask` then, as (undo index, word index, bits) for its non-zero words
    /// (see [`Events::undo_rtx_contains`]).
    pub undo_rtx: InlineVec<[(u16, u16, u64); 1]>,
    /// Ghost (I20, I20e): what this step did with an Eifel proof ([`EifelStep`]).
    pub eifel: Option<EifelStep>,
}

/// Ghost (I20, I20e): one step's outcome for an episode's Eifel proof.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct EifelStep {
    pub proof: EifelProof,
    /// This step's ACK brought the proof and the step did not undo (I20).
    pub missed: bool,
    /// The proven episode ended in this step still without an undo (I20e): it left
    /// Recovery/Loss, or `tcp_init_undo()` began the next episode.
    pub lost: bool,
}

/// Ghost: an ACK that proves by its timestamp echo (RFC 3522, Eifel) that the episode's
/// retransmissions were not needed, as the sender can see it: it advanced `snd_una` in Recovery
/// or Loss with the episode open (`undo_marker` set), above every segment retransmitted since
/// `tcp_init_undo()` (`SenderGhost::rtx_mask`, non-empty), and it echoes a TSval older than
/// the episode's first retransmission (`retrans_stamp`). Whether the proof is true is the
/// ghost truth's business (the properties look at `orig_dropped` in `[from, to)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct EifelProof {
    /// The episode's segments, as indices `[undo_marker, high_seq)`.
    pub from: u16,
    pub to: u16,
    /// The state the ACK found (Recovery or Loss).
    pub ca_state: CaState,
    /// `undo_retrans` when the ACK arrived (after its DSACKs), saturated to 0..=15: what the
    /// kernel's own bookkeeping said was left to prove.
    pub undo_retrans: u8,
}

impl Events {
    /// Records undo `u` with the episode's retransmissions so far.
    pub fn push_undo(&mut self, u: UndoEvent, rtx: &SegMask) {
        let i = self.undos.len() as u16;
        self.undos.push(u);
        for (w, bits) in rtx.words().enumerate() {
            if bits != 0 {
                self.undo_rtx.push((i, w as u16, bits));
            }
        }
    }

    /// Whether a retransmission of segment `k` had left the host in the episode of undo `i`.
    pub fn undo_rtx_contains(&self, i: usize, k: u32) -> bool {
        self.undo_rtx
            .iter()
            .any(|&(u, w, bits)| u as usize == i && w as u32 == k / 64 && bits >> (k % 64) & 1 != 0)
    }
}

/// Ghost per-connection bookkeeping that is not kernel state.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SenderGhost {
    /// `high_seq` right after the last ssthresh reduction that was not undone, and its kind.
    pub last_reduction: Option<(u32, ReductionKind)>,
    /// The current Recovery episode (for I1'): snd_una at entry, whether it was undone.
    pub episode: Option<Episode>,
    /// The segments a retransmission of which (regular or TLP) left the host since the current
    /// undo episode began (`tcp_init_undo`).
    pub rtx_mask: SegMask,
    /// The segments a retransmission of which ever left the host (never reset).
    pub ever_rtx_mask: SegMask,
    /// The last `tcp_init_undo()` saw an in-flight TLP retransmission and did not count it in
    /// `undo_retrans` (`InitUndoTlp::Ignore`; always false on profiles that count it).
    pub init_undo_ignored_tlp: bool,
    /// The reference F-RTO judgement of the current RTO episode (for I19): RFC 5682's
    /// SACK-enhanced F-RTO as `tcp_process_loss()` runs it, except that an ACK whose only news
    /// is a DSACK is never a duplicate ACK (the rule of d9157f6806d1, v5.18). True while that
    /// judgement has not declared the loss real; it follows the kernel's `frto` everywhere
    /// else, so on a profile with d9157f6806d1 it equals `frto` (no extra states).
    pub frto_ref: bool,
    /// The reference F-RTO judgement proved the current RTO spurious (never-retransmitted data
    /// (S)ACKed while it was open, step 3b) and the kernel did not undo: the episode's
    /// segments then, as indices `[undo_marker, high_seq)` (from 0 when `undo_marker` was 0;
    /// `MAX_SEGMENTS` fits in 16 bits). Cleared by any undo.
    pub frto_owed: Option<(u16, u16)>,
    /// Ghost (I20e): the episode's timestamp proof arrived and the kernel did not undo on it;
    /// cleared by any undo, reported as lost ([`EifelStep::lost`]) when the episode ends first.
    pub undo_owed: Option<EifelProof>,
    pub ev: Events,
}

/// A fast-recovery episode, from `tcp_enter_recovery` (from a non-Recovery state) to its end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Episode {
    /// `snd_una` when the episode began.
    pub start_una: u32,
    /// Whether one of its undo entry points ran.
    pub undone: bool,
}

/// The sender (`struct tcp_sock` subset), sequence numbers in segments (MSS = 1).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Sender {
    /// SACK negotiated (`tcp_is_sack`); else "Reno" emulation.
    pub sack_ok: bool,
    /// Timestamps negotiated.
    pub ts_ok: bool,
    pub ca_state: CaState,
    pub snd_una: u32,
    pub snd_nxt: u32,
    /// End of the data the application has written (`write_seq`).
    pub write_seq: u32,
    pub high_seq: u32,
    pub cwnd: u32,
    pub ssthresh: u32,
    pub cwnd_cnt: u32,
    pub prior_cwnd: u32,
    pub prior_ssthresh: u32,
    pub undo_marker: u32,
    pub undo_retrans: i32,
    pub retrans_stamp: u32,
    pub packets_out: u32,
    pub sacked_out: u32,
    pub lost_out: u32,
    pub retrans_out: u32,
    pub reordering: u32,
    /// `reord_seen`, saturating (the kernel only tests it for zero).
    pub reord_seen: u8,
    pub frto: bool,
    pub icsk_retransmits: u8,
    pub icsk_backoff: u8,
    pub tlp_high_seq: u32,
    pub tlp_retrans: bool,
    pub rack: Rack,
    /// srtt, rttvar, `icsk_rto`, `min_rtt` (`sender/rtt.rs`).
    pub rtt_est: RttEst,
    pub prr_delivered: u32,
    pub prr_out: u32,
    pub is_cwnd_limited: bool,
    pub max_packets_out: u32,
    pub cwnd_usage_seq: u32,
    pub total_retrans: u32,
    pub dsack_dups: u32,
    pub is_sack_reneg: bool,
    /// The F1 reworks' flag: since `tcp_init_undo()` something happened that a timestamp echo
    /// cannot rule out, so the echo no longer proves the episode spurious. `head-only`: the
    /// episode retransmitted a segment other than the one at `snd_una` (set in
    /// `tcp_retransmit_skb()`); `sacked-retrans`: a retransmitted segment was SACKed (set in
    /// `tcp_sacktag_one()`: the SACK may be of the copy). Always false on every other profile.
    pub undo_echo_unproven: bool,
    /// Whether `tcp_ecn_queue_cwr` asked for CWR on the next data segment.
    pub ecn_queue_cwr: bool,
    pub timer: Option<Timer>,
    /// Congestion control and its private state.
    pub cc: Cc,
    /// Segments `[0, write_seq - isn)`; entries below `snd_una` are stale.
    pub segs: InlineVec<[Seg; 8]>,
    /// Ghost observations (not kernel state).
    pub ghost: SenderGhost,
}
