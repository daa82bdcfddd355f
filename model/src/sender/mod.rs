//! The sender: one file per kernel area, each kernel decision point one small method named after
//! the kernel function it mirrors.
//!
//! - [`ack`]: `tcp_ack` and its order of work, `tcp_clean_rtx_queue`, the non-SACK dupack emulation
//! - [`sacktag`]: `tcp_sacktag_write_queue`, DSACK checks, `tcp_sacktag_one`, reordering
//! - [`recovery`]: `tcp_fastretrans_alert`, entering/leaving Recovery and CWR, every undo
//! - [`loss`]: RTO (`tcp_retransmit_timer`, `tcp_enter_loss`, `tcp_timeout_mark_lost`) and F-RTO
//! - [`rack`]: RACK loss detection and the non-SACK `tcp_newreno_mark_lost`
//! - [`prr`]: `tcp_cwnd_reduction` and `tcp_cong_control`
//! - [`xmit`]: new data, retransmissions (TSQ), TLP, and the timers
//! - [`ecn`]: the CWR request a reduction queues and the first new segment carries
//! - [`rtt`]: RTT samples, srtt/rttvar, the RTO and `min_rtt` (`tcp_rtt_estimator`, `tcp_set_rto`)

pub mod ack;
pub mod ecn;
pub mod loss;
pub mod prr;
pub mod rack;
pub mod recovery;
pub mod rtt;
pub mod sacktag;
pub mod xmit;

#[cfg(test)]
pub(crate) mod test_util;

use crate::cc::{CaEvent, CcParams, CongestionOps, Window};
use crate::config::Config;
use crate::profile::Profile;
use crate::seq::before;
use crate::state::*;

/// TS option of the segment being processed (`tp->rx_opt.saw_tstamp`, `rcv_tsecr`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RxOpt {
    pub saw_tstamp: bool,
    pub rcv_tsecr: u32,
}

/// A transmission handed to the network by this step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tx {
    /// Segment index (`seq - isn`).
    pub seg: u32,
    /// A retransmission (regular or TLP) rather than the first transmission.
    pub rtx: bool,
    /// The header's CWR flag (`tcp_ecn_send()`).
    pub cwr: bool,
}

/// The part of `struct rate_sample` (tcp_rate.c) that `tcp_rack_update_reo_wnd()` reads:
/// `rs->prior_delivered`, the delivered count stamped on the most recently sent segment this ACK
/// newly (S)ACKed, only through `!rs->prior_delivered` and its comparison with
/// `tp->rack.last_delivered`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RateSample {
    /// `rs->prior_delivered != 0`: `tcp_rate_skb_delivered()` took a segment, one not SACKed
    /// before (a SACK zeroes `tx.delivered_mstamp`). `tp->delivered` starts at 1 on a passive
    /// open (the SYN-ACK, in `tcp_rcv_state_process()`), so every stamp is nonzero. A DSACK
    /// of data already (S)ACKed gives no sample.
    pub sampled: bool,
    /// `!before(rs->prior_delivered, tp->rack.last_delivered)`: the most recently sent of those
    /// segments was (re)sent after RACK's last `reo_wnd` widening (no tag `D`). Since the stamps
    /// grow with send time, this holds if any of them lacks `D`.
    pub fresh: bool,
}

/// Everything a sender step needs from outside the sender: configuration, profile, the clock,
/// the host queue (TSQ), the current segment's options, and where transmissions go.
pub struct Cx<'a> {
    pub cfg: &'a Config,
    pub prof: &'a Profile,
    /// Model time (ms) of this event.
    pub now: u32,
    /// The host queue is full: `tcp_small_queue_check` stops transmissions.
    pub tsq_full: bool,
    pub rx: RxOpt,
    /// This step's transmissions (inline: a step runs for every transition).
    pub out: smallvec::SmallVec<[Tx; 8]>,
    /// `tp->delivered` growth during this step (`tcp_count_delivered`); the absolute counter is
    /// not kept in the state, only differences within one step are ever used.
    pub delivered: u32,
    /// `tp->lost` growth during this step (`tcp_mark_skb_lost`).
    pub lost: u32,
    /// What `tcp_ack()`'s `struct rate_sample` holds for `tcp_rack_update_reo_wnd()`.
    pub rs: RateSample,
    /// Ghost: ms the connection has been idle (nothing in flight) before this event, when the
    /// environment made it wait (`write_gap_ms`); 0 otherwise.
    pub idle_ms: u32,
    /// The MIB counters this step bumps (`crate::mib`).
    pub mib: crate::mib::MibDelta,
    /// Ghost: how this step's DSACKs decremented `undo_retrans` (`evidence::DSACK_*` bits),
    /// for the evidence of an undo in the same step.
    pub dsack_note: u16,
    /// Ghost: the segments (index mod 64) whose DSACK decremented `undo_retrans` in this step.
    pub dsack_segs: u64,
    /// This ACK's `tcp_clean_rtx_queue()` found the segment at the old `snd_una` retransmitted,
    /// and its retransmission the only one of the episode not yet DSACKed (`undo_retrans <= 1`):
    /// the F1 fix's `FLAG_ECHO_PROVES_RETRANS` (vm/kconfig/f1-fix.patch), read by
    /// `tcp_packet_delayed_ts()` under `packet_delayed_scope = "acked-head"`. Per ACK, not state.
    pub echo_proves_retrans: bool,
    /// Where the decision functions record their branches (`trc check --coverage`); `None`
    /// in the checker's hot path.
    pub decisions: Option<&'a crate::decision::DecisionCounts>,
}

impl<'a> Cx<'a> {
    /// Records that this step took decision branch `b` (coverage).
    #[inline(always)]
    pub fn took(&self, b: crate::decision::Branch) {
        crate::decision::hit(self.decisions, b)
    }

    pub fn new(cfg: &'a Config, prof: &'a Profile, now: u32, tsq_full: bool) -> Self {
        Cx {
            cfg,
            prof,
            now,
            tsq_full,
            rx: RxOpt::default(),
            out: smallvec::SmallVec::new(),
            delivered: 0,
            lost: 0,
            rs: RateSample::default(),
            idle_ms: 0,
            mib: Default::default(),
            dsack_note: 0,
            dsack_segs: 0,
            echo_proves_retrans: false,
            decisions: None,
        }
    }

    /// TCP timestamp clock (ms) now: `tcp_time_stamp_ts()`.
    pub fn ts_now(&self) -> u32 {
        self.now.wrapping_add(self.cfg.ts_base)
    }

    /// `tcp_skb_timestamp_ts()`: a transmit time in TS units.
    pub fn ts_of(&self, xmit: u32) -> u32 {
        xmit.wrapping_add(self.cfg.ts_base)
    }
}

impl Sender {
    /// A connection right after the passive open: nothing sent yet, `segments` written by the
    /// application, RTT known from the handshake.
    pub fn new(cfg: &Config, sack_ok: bool) -> Sender {
        let isn = cfg.isn;
        let mut snd = Sender {
            sack_ok,
            ts_ok: cfg.timestamps,
            ca_state: CaState::Open,
            snd_una: isn,
            snd_nxt: isn,
            write_seq: isn.wrapping_add(cfg.segments as u32),
            high_seq: isn,
            cwnd: cfg.initcwnd,
            ssthresh: TCP_INFINITE_SSTHRESH,
            cwnd_cnt: 0,
            prior_cwnd: 0,
            prior_ssthresh: 0,
            undo_marker: 0,
            undo_retrans: 0,
            retrans_stamp: 0,
            packets_out: 0,
            sacked_out: 0,
            lost_out: 0,
            retrans_out: 0,
            reordering: cfg.sysctl_reordering,
            reord_seen: 0,
            frto: false,
            icsk_retransmits: 0,
            icsk_backoff: 0,
            tlp_high_seq: 0,
            tlp_retrans: false,
            rack: Rack {
                mstamp: 0,
                sub: 0,
                end_seq: 0,
                rtt_us: 0,
                advanced: false,
                reo_wnd_steps: 1,
                reo_wnd_persist: 0,
                dsack_seen: false,
            },
            rtt_est: RttEst::after_handshake(cfg),
            prr_delivered: 0,
            prr_out: 0,
            is_cwnd_limited: false,
            max_packets_out: 0,
            cwnd_usage_seq: isn,
            total_retrans: 0,
            dsack_dups: 0,
            is_sack_reneg: false,
            undo_echo_unproven: false,
            ecn_queue_cwr: false,
            timer: None,
            cc: crate::cc::Cc::Reno,
            segs: crate::inline_vec::InlineVec::from_elem(
                Seg::default(),
                cfg.total_segments() as usize,
            ),
            ghost: SenderGhost::default(),
        };
        if cfg.cc == crate::config::CcKind::Cubic {
            // cubictcp_init() when the connection is established (time 0, nothing sent yet).
            let prof = Profile::linux_6_18();
            let cx = Cx::new(cfg, &prof, 0, false);
            snd.cc = crate::cc::Cc::Cubic(crate::cc::Cubic::new(&snd.window(&cx)));
        }
        snd
    }

    // ---- index helpers (model-only) -------------------------------------------------------

    /// Segment index of a sequence number.
    pub fn idx(&self, cfg: &Config, seq: u32) -> u32 {
        seq.wrapping_sub(cfg.isn)
    }

    /// Sequence number of a segment index.
    pub fn seq_of(&self, cfg: &Config, idx: u32) -> u32 {
        cfg.isn.wrapping_add(idx)
    }

    /// Indices of the retransmit queue (`snd_una..snd_nxt`), head first.
    pub fn rtx_queue(&self, cfg: &Config) -> std::ops::Range<u32> {
        self.idx(cfg, self.snd_una)..self.idx(cfg, self.snd_nxt)
    }

    // ---- helpers of include/net/tcp.h ------------------------------------------------------

    /// `tcp_left_out()`.
    pub fn tcp_left_out(&self) -> u32 {
        self.sacked_out.wrapping_add(self.lost_out)
    }

    /// `tcp_packets_in_flight()`: `packets_out - left_out + retrans_out` (u32, wraps as the kernel's).
    pub fn tcp_packets_in_flight(&self) -> u32 {
        self.packets_out
            .wrapping_sub(self.tcp_left_out())
            .wrapping_add(self.retrans_out)
    }

    /// `tcp_in_cwnd_reduction()`: CWR or Recovery.
    pub fn tcp_in_cwnd_reduction(&self) -> bool {
        matches!(self.ca_state, CaState::Cwr | CaState::Recovery)
    }

    /// `tcp_current_ssthresh()`.
    pub fn tcp_current_ssthresh(&self) -> u32 {
        if self.tcp_in_cwnd_reduction() {
            self.ssthresh
        } else {
            self.ssthresh.max((self.cwnd >> 1) + (self.cwnd >> 2))
        }
    }

    /// `tcp_in_slow_start()`.
    pub fn tcp_in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// `tcp_is_cwnd_limited()` (f4ce91ce12a7: the latched per-window flag first).
    pub fn tcp_is_cwnd_limited(&self) -> bool {
        if self.is_cwnd_limited {
            return true;
        }
        if self.tcp_in_slow_start() {
            return self.cwnd < 2 * self.max_packets_out;
        }
        false
    }

    /// `tcp_any_retrans_done()`: a retransmission in flight, or the head was ever retransmitted.
    pub fn tcp_any_retrans_done(&self, cfg: &Config) -> bool {
        if self.retrans_out != 0 {
            return true;
        }
        let q = self.rtx_queue(cfg);
        !q.is_empty() && self.segs[q.start as usize].tags & tag::E != 0
    }

    /// `tcp_tsopt_ecr_before()`: the ACK echoes a timestamp older than `when`.
    pub fn tcp_tsopt_ecr_before(&self, cx: &Cx, when: u32) -> bool {
        cx.rx.saw_tstamp && cx.rx.rcv_tsecr != 0 && before(cx.rx.rcv_tsecr, when)
    }

    /// `tcp_highest_sack_seq()`: end of the highest SACKed segment, `snd_una` if none.
    pub fn tcp_highest_sack_seq(&self, cfg: &Config) -> u32 {
        if self.sacked_out == 0 || !self.sack_ok {
            return self.snd_una;
        }
        let mut hi = self.snd_una;
        for i in self.rtx_queue(cfg) {
            if self.segs[i as usize].tags & tag::S != 0 {
                hi = self.seq_of(cfg, i + 1);
            }
        }
        hi
    }

    /// `tcp_set_ca_state()`: congestion control's `set_state` first, then the store.
    pub fn tcp_set_ca_state(&mut self, cx: &Cx, new: CaState) {
        if matches!(self.ca_state, CaState::Recovery | CaState::Loss) && new <= CaState::Cwr {
            self.ghost.ev.left_recovery = Some((self.ca_state, self.snd_una == self.high_seq));
            self.end_undo_episode();
        }
        let w = self.window(cx);
        self.cc.set_state(&w, new);
        self.ca_state = new;
    }

    /// `tp->lsndtime` (model ms): the last transmission of data (new or retransmitted).
    pub fn lsndtime(&self, cfg: &Config) -> u32 {
        let sent = self.idx(cfg, self.snd_nxt) as usize;
        self.segs[..sent.min(self.segs.len())]
            .iter()
            .map(|s| s.xmit)
            .max()
            .unwrap_or(0)
    }

    /// The window view handed to congestion control.
    pub fn window(&self, cx: &Cx) -> Window {
        Window {
            cwnd: self.cwnd,
            ssthresh: self.ssthresh,
            cwnd_cnt: self.cwnd_cnt,
            cwnd_clamp: u32::MAX,
            prior_cwnd: self.prior_cwnd,
            cwnd_limited: self.tcp_is_cwnd_limited(),
            snd_una: self.snd_una,
            snd_nxt: self.snd_nxt,
            packets_out: self.packets_out,
            ca_state: self.ca_state,
            now_ms: cx.now,
            p: self.cc_params(cx),
            hystart_detected: (false, false),
        }
    }

    /// The congestion control's parameters; with the RTT estimator, its srtt (on CUBIC's µs
    /// clock, `cc_us_per_ms` per model ms).
    fn cc_params(&self, cx: &Cx) -> CcParams {
        let mut p = CcParams::new(cx.cfg, cx.prof);
        if cx.cfg.rtt_estimator {
            p.srtt_us = (self.srtt_us() as u64 * cx.cfg.cc_us_per_ms as u64 / 1000) as u32;
        }
        p
    }

    /// Congestion control's `ssthresh()` with the ghost record for I2.
    pub fn ca_ssthresh(&mut self, cx: &Cx, kind: ReductionKind, lost_retrans: bool) -> u32 {
        let w = self.window(cx);
        let ssthresh = self.cc.ssthresh(&w);
        self.ghost.ev.reductions.push(Reduction {
            kind,
            from: self.ca_state,
            snd_una: self.snd_una,
            prev: self.ghost.last_reduction,
            icsk_retransmits: self.icsk_retransmits,
            lost_retrans,
            cwnd: w.cwnd,
            ssthresh,
        });
        ssthresh
    }

    /// `tcp_ca_event()`: the congestion control's `cwnd_event`, handed `tp->lsndtime`
    /// ([`Sender::lsndtime`]), which `cubictcp_cwnd_event()` reads for `CA_EVENT_TX_START`.
    pub fn tcp_ca_event(&mut self, cx: &Cx, ev: CaEvent) {
        let w = self.window(cx);
        let lsndtime_ms = self.lsndtime(cx.cfg);
        if let Some(r) = self.cc.cwnd_event(&w, ev, lsndtime_ms, cx.idle_ms) {
            self.ghost.ev.idle_restart = Some(r);
        }
    }

    /// `icsk_rto` in jiffies for the current backoff: `tcp_set_rto()`'s value
    /// ([`RttEst::rto`], `usecs_to_jiffies(srtt + rttvar)`; at the handshake's 50 ms with rttvar at
    /// its `tcp_rto_min` floor, 250 ms → 63 jiffies at HZ=250, i.e. 252 ms), doubled in jiffies
    /// per backoff as `tcp_retransmit_timer()` does (`min(icsk_rto << 1, TCP_RTO_MAX)`): 504 ms,
    /// 1008 ms, ... — not 500, 1000.
    pub fn icsk_rto_jiffies(&self, cfg: &Config) -> u64 {
        let base = self.rtt_est.rto as u64;
        let max = TCP_RTO_MAX_MS as u64 * cfg.hz as u64 / 1000;
        (base << self.icsk_backoff.min(20)).min(max)
    }

    /// `icsk_rto` in ms (`jiffies_to_usecs(icsk_rto)`, what `tcp_rto_delta_us()` and the TLP
    /// cap use): see [`Sender::icsk_rto_jiffies`].
    pub fn icsk_rto(&self, cfg: &Config) -> u32 {
        jiffies_to_msecs(self.icsk_rto_jiffies(cfg), cfg.hz)
    }
}

/// `jiffies_to_msecs()` for HZ dividing 1000.
pub fn jiffies_to_msecs(j: u64, hz: u32) -> u32 {
    (j * (1000 / hz as u64)).min(u32::MAX as u64) as u32
}

/// The timer wheel (kernel/time/timer.c, `calc_wheel_index()` / `calc_index()`): the delay in
/// jiffies after which a timer armed `when` jiffies ahead really runs, when it is armed at a
/// jiffy that is a multiple of 8 — from the callback of a timer that sat in level 1 or above,
/// such as an RTO (63 jiffies or more at HZ=250), since such callbacks run on a bucket
/// boundary. A timer goes to level 0 (1-jiffy buckets) when `when` < 63 and to level 1 (8-jiffy
/// buckets) when `when` < 504, and is filed in the first bucket of its level that expires
/// strictly after `jiffies + when`: `when + 1` at level 0, `((when >> 3) + 1) << 3` at level 1
/// (126 jiffies → 128: a backed-off RTO of 504 ms runs 512 ms after the RTO that armed it;
/// 252 → 256 jiffies, 1024 ms). From level 2 up the bucket phase (64 jiffies and more) is not
/// known to the model: `when + 1`, the earliest expiry possible. The model applies it only
/// where it knows the arming jiffy is aligned (the RTO re-armed by `tcp_retransmit_timer`); a
/// timer armed from an ACK or a write has an unknown phase and keeps its nominal deadline, the
/// earliest time the kernel can fire it.
pub fn timer_wheel_delay_aligned(when: u64) -> u64 {
    const LVL_START_1: u64 = 63;
    const LVL_START_2: u64 = 63 << 3;
    if (LVL_START_1..LVL_START_2).contains(&when) {
        ((when >> 3) + 1) << 3
    } else {
        when + 1
    }
}
