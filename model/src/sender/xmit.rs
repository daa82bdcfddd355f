//! The send side: new data (`tcp_write_xmit`, `tcp_event_new_data_sent`, `tcp_cwnd_validate`),
//! retransmissions (`tcp_xmit_retransmit_queue`, `tcp_retransmit_skb`, `tcp_xmit_recovery`) with
//! TSQ, TLP (`tcp_schedule_loss_probe`, `tcp_send_loss_probe`, `tcp_process_tlp_ack`) and the
//! timer plumbing (`tcp_rearm_rto`, `tcp_set_xmit_timer`, `inet_csk_reset_xmit_timer`).
//! tcp_output.c, tcp_input.c, tcp_timer.c.

use super::ack::{flag, Rexmit};
use super::{Cx, Tx};
use crate::cc::CaEvent;
use crate::decision::Branch;
use crate::mib::Mib;
use crate::profile::TlpUndoRetrans;
use crate::seq::{after, before};
use crate::state::*;

impl Sender {
    /// `inet_csk_reset_xmit_timer()`: arm `kind` to fire `when` ms from now.
    pub fn tcp_reset_xmit_timer(&mut self, cx: &Cx, kind: TimerKind, when: u32) {
        let when = when.min(TCP_RTO_MAX_MS);
        self.timer = Some(Timer {
            kind,
            deadline: cx.now + when,
        });
    }

    /// `tcp_write_timer_handler()` (tcp_timer.c): the timer `kind` (`icsk_pending`) expired.
    /// Only the RTO branch clears `icsk_pending` before calling its handler; the RACK reorder
    /// timer (`tcp_rack_reo_timeout`, 57dde7f70df3) and the TLP (`tcp_send_loss_probe`,
    /// 6ba8a3b19e76) run with it still set, so a `tcp_rearm_rto()` inside them takes the
    /// `tcp_rto_delta_us()` branch: the RTO then expires `icsk_rto` after the head's last
    /// transmission, not `icsk_rto` from now (`tcp_send_loss_probe` clears it itself once a probe
    /// went out, "restart timer from now").
    pub fn tcp_write_timer_handler(&mut self, cx: &mut Cx, kind: TimerKind) {
        match kind {
            TimerKind::Rto => {
                self.timer = None;
                self.tcp_retransmit_timer(cx);
            }
            TimerKind::Tlp => self.tcp_send_loss_probe(cx),
            TimerKind::Reo => self.tcp_rack_reo_timeout(cx),
        }
    }

    /// Stamps segment `i`'s (re)transmission at `now`: `skb->skb_mstamp_ns`, which
    /// `tcp_update_skb_after_send()` then moves to the tail of `tsorted_sent_queue`. The model's
    /// ms gets the sub-ms order as a rank ([`Seg::sub`]): 1 + the largest rank stamped this ms,
    /// counting RACK's reference (`rack.mstamp`, which may be a segment stamped again since), so
    /// this transmission compares after every earlier one of the same ms. Derived from the
    /// segments themselves: no global counter enters the state. A non-SACK connection never
    /// compares stamps (RACK runs only with SACK: `tcp_identify_packet_loss()` takes
    /// `tcp_newreno_mark_lost()`, `tcp_clean_rtx_queue()` advances RACK only if
    /// `tcp_is_sack()`), so its ranks stay 0 rather than split states on a value never read.
    pub fn stamp_xmit(&mut self, now: u32, i: u32) {
        if !self.sack_ok {
            self.segs[i as usize].xmit = now;
            return;
        }
        let reference = if self.rack.mstamp == now {
            self.rack.sub
        } else {
            0
        };
        let top = self
            .segs
            .iter()
            .filter(|s| s.xmit == now)
            .map(|s| s.sub)
            .fold(reference, u16::max);
        let seg = &mut self.segs[i as usize];
        seg.xmit = now;
        seg.sub = top.saturating_add(1);
    }

    /// `tcp_rto_delta_us()`: time left until the head's RTO would expire.
    pub fn tcp_rto_delta(&self, cx: &Cx) -> i64 {
        let head = self.rtx_queue(cx.cfg).start;
        let xmit = self
            .segs
            .get(head as usize)
            .map(|s| s.xmit)
            .unwrap_or(cx.now);
        xmit as i64 + self.icsk_rto(cx.cfg) as i64 - cx.now as i64
    }

    /// `tcp_rearm_rto()`.
    pub fn tcp_rearm_rto(&mut self, cx: &Cx) {
        if self.packets_out == 0 {
            self.timer = None;
            return;
        }
        let mut rto = self.icsk_rto(cx.cfg);
        if matches!(
            self.timer,
            Some(Timer {
                kind: TimerKind::Reo | TimerKind::Tlp,
                ..
            })
        ) {
            rto = self.tcp_rto_delta(cx).max(1) as u32;
        }
        self.tcp_reset_xmit_timer(cx, TimerKind::Rto, rto);
    }

    /// `tcp_set_xmit_timer()`: a TLP if allowed, else the RTO.
    pub fn tcp_set_xmit_timer(&mut self, cx: &Cx) {
        if !self.tcp_schedule_loss_probe(cx, true) {
            self.tcp_rearm_rto(cx);
        }
    }

    /// `tcp_schedule_loss_probe()`: arm the TLP timer at 2·SRTT (+ `tcp_rto_min` with one packet
    /// out, + `TCP_TIMEOUT_MIN_US` = 2 ms otherwise; the µs form of recent kernels, older ones added
    /// 2 jiffies), capped by the RTO. The final `usecs_to_jiffies` rounding is not modelled (up
    /// to the model's next whole ms).
    pub fn tcp_schedule_loss_probe(&mut self, cx: &Cx, advancing_rto: bool) -> bool {
        if !cx.cfg.tlp
            || self.packets_out == 0
            || !self.sack_ok
            || !matches!(self.ca_state, CaState::Open | CaState::Cwr)
        {
            return false;
        }
        let timeout_us = (self.rtt_est.srtt_us >> 2)
            + if self.packets_out == 1 {
                super::rtt::TCP_RTO_MIN_US
            } else {
                super::rack::TCP_TIMEOUT_MIN_US
            };
        let mut timeout = timeout_us.div_ceil(1000);
        let rto_delta = if advancing_rto {
            self.icsk_rto(cx.cfg) as i64
        } else {
            self.tcp_rto_delta(cx)
        };
        if rto_delta > 0 {
            timeout = timeout.min(rto_delta as u32);
        }
        self.tcp_reset_xmit_timer(cx, TimerKind::Tlp, timeout);
        true
    }

    /// `tcp_send_loss_probe()`: the TLP timer fired (`icsk_pending` still says TLP, see
    /// `tcp_write_timer_handler`). A probe counts TcpExtTCPLossProbes; a tail whose copy is still
    /// in the host queue (the model's full host queue) counts TCPSpuriousRtxHostQueues instead. A probe that went out clears it, so the RTO restarts from
    /// now; without a probe (one already outstanding, or nothing could be sent) the RTO is
    /// re-armed from the head's transmit time (`tcp_rto_delta_us`).
    pub fn tcp_send_loss_probe(&mut self, cx: &mut Cx) {
        if self.tlp_high_seq == 0 {
            self.tlp_retrans = false;
            let mut sent = false;
            if before(self.snd_nxt, self.write_seq) {
                // New data, cwnd ignored (push_one == 2), still subject to TSQ.
                if !cx.tsq_full {
                    self.tcp_transmit_new(cx);
                    sent = true;
                }
            } else {
                let q = self.rtx_queue(cx.cfg);
                if !q.is_empty() && cx.tsq_full {
                    // skb_still_in_host_queue(): the tail's last copy has not left the host.
                    cx.mib.inc(Mib::SpuriousRtxHostQueues);
                } else if !q.is_empty() {
                    let last = q.end - 1;
                    // __tcp_retransmit_skb: E set, no R, no retrans_out/stamp/undo_retrans.
                    // tcp_update_skb_after_send() relinks it into tsorted_sent_queue.
                    // tcp_rate_skb_sent() stamps it afresh (no `D`).
                    self.segs[last as usize].tags =
                        (self.segs[last as usize].tags | tag::E) & !(tag::T | tag::D);
                    self.stamp_xmit(cx.now, last);
                    self.total_retrans += 1;
                    cx.mib.inc(Mib::RetransSegs);
                    cx.out.push(Tx {
                        seg: last,
                        rtx: true,
                        cwr: false,
                    });
                    self.ghost.rtx_mask.insert(last);
                    self.ghost.ever_rtx_mask.insert(last);
                    self.tlp_retrans = true;
                    // The F1 fix (`sacked-retrans`): a TLP copy stamps the episode.
                    if cx.prof.packet_delayed_scope
                        == crate::profile::PacketDelayedScope::SackedRetrans
                        && self.retrans_stamp == 0
                    {
                        self.retrans_stamp = cx.ts_of(cx.now);
                    }
                    self.tlp_undo_retrans(cx);
                    sent = true;
                }
            }
            if sent {
                cx.mib.inc(Mib::LossProbes);
                self.tlp_high_seq = self.snd_nxt;
                self.timer = None;
            }
        }
        self.tcp_rearm_rto(cx);
    }

    /// `tcp_send_loss_probe()`'s undo accounting of a retransmitted probe. Every kernel up to
    /// 7.2 sends it through `__tcp_retransmit_skb()` and counts nothing (F11: after a Recovery
    /// that ended with `undo_marker` set, the copy's DSACK spends that episode's last count);
    /// the F11 fix (`tlp_undo_retrans = "counted-while-undo-open"`) counts it as
    /// `tcp_retransmit_skb()` counts a retransmission while `undo_marker` is set.
    fn tlp_undo_retrans(&mut self, cx: &Cx) {
        if self.undo_marker == 0 {
            cx.took(Branch::TlpRetransNoUndo);
            return;
        }
        cx.took(Branch::TlpRetransUndoOpen);
        if cx.prof.tlp_undo_retrans == TlpUndoRetrans::CountedWhileUndoOpen {
            self.undo_retrans = self.undo_retrans.max(0) + 1;
        }
    }

    /// `tcp_process_tlp_ack()`: end the TLP episode; a probe that repaired a loss costs a CWR
    /// (TcpExtTCPLossProbeRecovery).
    pub fn tcp_process_tlp_ack(&mut self, cx: &Cx, ack: u32, fl: u32) {
        if before(ack, self.tlp_high_seq) {
            return;
        }
        if !self.tlp_retrans || fl & flag::DSACK_TLP != 0 {
            // No probe retransmitted, or its copy was DSACKed: the episode ends quietly.
            self.tlp_high_seq = 0;
        } else if after(ack, self.tlp_high_seq) {
            cx.mib.inc(Mib::LossProbeRecovery);
            self.tcp_init_cwnd_reduction(cx, ReductionKind::Tlp, false);
            self.tcp_set_ca_state(cx, CaState::Cwr);
            self.tcp_end_cwnd_reduction(cx);
            self.tcp_try_keep_open(cx);
        } else if fl & (flag::SND_UNA_ADVANCED | flag::NOT_DUP | flag::DATA_SACKED) == 0 {
            self.tlp_high_seq = 0;
        }
    }

    /// Transmit the next new segment (`tcp_transmit_skb` + `tcp_event_new_data_sent`).
    fn tcp_transmit_new(&mut self, cx: &mut Cx) {
        let i = self.idx(cx.cfg, self.snd_nxt);
        if self.tcp_packets_in_flight() == 0 {
            self.tcp_ca_event(cx, CaEvent::TxStart);
        }
        self.segs[i as usize] = Seg::default();
        self.stamp_xmit(cx.now, i);
        let cwr = self.tcp_ecn_send(true);
        cx.out.push(Tx {
            seg: i,
            rtx: false,
            cwr,
        });
        // tcp_event_new_data_sent()
        let prior_packets = self.packets_out;
        self.snd_nxt = self.snd_nxt.wrapping_add(1);
        self.packets_out = self.packets_out.wrapping_add(1);
        if prior_packets == 0
            || matches!(
                self.timer,
                Some(Timer {
                    kind: TimerKind::Tlp,
                    ..
                })
            )
        {
            self.tcp_rearm_rto(cx);
        }
    }

    /// `tcp_write_xmit()`: send new data while `in_flight < cwnd` and the host queue allows.
    pub fn tcp_write_xmit(&mut self, cx: &mut Cx) {
        let mut sent = 0u32;
        while before(self.snd_nxt, self.write_seq) {
            if self.tcp_packets_in_flight() >= self.cwnd {
                break;
            }
            if cx.tsq_full {
                break; // tcp_small_queue_check()
            }
            self.tcp_transmit_new(cx);
            sent += 1;
        }
        let is_cwnd_limited = self.tcp_packets_in_flight() >= self.cwnd;
        if sent > 0 || is_cwnd_limited {
            self.tcp_cwnd_validate(is_cwnd_limited);
        }
        if sent > 0 {
            if self.tcp_in_cwnd_reduction() {
                self.prr_out = self.prr_out.wrapping_add(sent);
            }
            self.tcp_schedule_loss_probe(cx, false);
        }
    }

    /// `tcp_cwnd_validate()` (f4ce91ce12a7): latch cwnd-limitedness per window.
    pub fn tcp_cwnd_validate(&mut self, is_cwnd_limited: bool) {
        if !before(self.snd_una, self.cwnd_usage_seq)
            || is_cwnd_limited
            || (!self.is_cwnd_limited && self.packets_out > self.max_packets_out)
        {
            self.is_cwnd_limited = is_cwnd_limited;
            self.max_packets_out = self.packets_out;
            self.cwnd_usage_seq = self.snd_nxt;
        }
    }

    /// `tcp_data_snd_check()` → `tcp_push_pending_frames()`: `tcp_write_xmit` only runs when
    /// there is a send head (unsent data). Without one, `tcp_cwnd_validate` is not reached, so an
    /// ACK in a window-limited state (e.g. Loss, cwnd 1) does not latch `is_cwnd_limited` when the
    /// application has nothing more to send (found by `trc diff`: the Eifel undo's cwnd).
    pub fn tcp_data_snd_check(&mut self, cx: &mut Cx) {
        if before(self.snd_nxt, self.write_seq) {
            self.tcp_write_xmit(cx);
        }
    }

    /// `tcp_sendmsg_locked()` for `segs` more MSS-sized segments: each new skb is queued by
    /// `skb_entail()`, which first runs `tcp_slow_start_after_idle_check()`; then `tcp_push()`.
    pub fn tcp_sendmsg(&mut self, cx: &mut Cx, segs: u32) {
        self.tcp_slow_start_after_idle_check(cx);
        self.write_seq = self.write_seq.wrapping_add(segs);
        self.tcp_data_snd_check(cx);
    }

    /// `tcp_slow_start_after_idle_check()` (tcp_output.c, RFC 2861 / RFC 7661's predecessor):
    /// with `tcp_slow_start_after_idle` set, nothing in flight, and more than one RTO (jiffies)
    /// since data was last sent (`lsndtime`), restart the window. CUBIC has no `cong_control`
    /// hook, so the check applies.
    pub fn tcp_slow_start_after_idle_check(&mut self, cx: &Cx) {
        if !cx.cfg.slow_start_after_idle || self.packets_out != 0 || self.snd_nxt == cx.cfg.isn {
            return;
        }
        let p = crate::cc::CcParams::new(cx.cfg, cx.prof);
        let delta = p
            .jiffies(cx.now)
            .wrapping_sub(p.jiffies(self.lsndtime(cx.cfg))) as i32 as i64;
        if delta > self.icsk_rto_jiffies(cx.cfg) as i64 {
            self.tcp_cwnd_restart(cx, delta);
        }
    }

    /// `tcp_cwnd_restart()`: ssthresh keeps the current window's worth, cwnd halves once per
    /// RTO of idleness beyond the first, down to `min(initcwnd, cwnd)`.
    pub fn tcp_cwnd_restart(&mut self, cx: &Cx, mut delta: i64) {
        let restart = cx.cfg.initcwnd.min(self.cwnd);
        self.tcp_ca_event(cx, CaEvent::CwndRestart);
        self.ssthresh = self.tcp_current_ssthresh();
        let rto = self.icsk_rto_jiffies(cx.cfg) as i64;
        let mut cwnd = self.cwnd;
        loop {
            delta -= rto;
            if delta <= 0 || cwnd <= restart {
                break;
            }
            cwnd >>= 1;
        }
        self.cwnd = cwnd.max(restart);
    }

    /// `tcp_retransmit_skb()`: retransmit segment `i`. In the kernel a failed low-level send
    /// (-EBUSY, -EAGAIN) still sets `retrans_stamp` and counts in `undo_retrans`; the model has no
    /// such failure (TSQ holds retransmissions before the attempt, in `tcp_xmit_retransmit_queue`),
    /// so every attempt succeeds. `__tcp_retransmit_skb()` counts TcpRetransSegs.
    pub fn tcp_retransmit_skb(&mut self, cx: &mut Cx, i: u32) {
        // __tcp_retransmit_skb
        // tcp_update_skb_after_send() relinks it into tsorted_sent_queue; tcp_rate_skb_sent()
        // stamps it afresh (no `D`).
        self.segs[i as usize].tags =
            (self.segs[i as usize].tags | tag::RETRANS) & !(tag::T | tag::D);
        self.stamp_xmit(cx.now, i);
        self.total_retrans += 1;
        cx.mib.inc(Mib::RetransSegs);
        self.retrans_out = self.retrans_out.wrapping_add(1);
        cx.out.push(Tx {
            seg: i,
            rtx: true,
            cwr: self.tcp_ecn_send(false),
        });
        self.ghost.rtx_mask.insert(i);
        self.ghost.ever_rtx_mask.insert(i);
        if self.retrans_stamp == 0 {
            self.retrans_stamp = cx.ts_of(cx.now);
        }
        if self.undo_retrans < 0 {
            self.undo_retrans = 0;
        }
        self.undo_retrans += 1;
        if cx.prof.packet_delayed_scope == crate::profile::PacketDelayedScope::HeadOnly
            && i != self.idx(cx.cfg, self.snd_una)
        {
            self.undo_echo_unproven = true;
        }
    }

    /// `tcp_xmit_retransmit_queue()`: retransmit lost segments while cwnd allows; TSQ may stop it
    /// before any attempt (then `retrans_stamp` stays untouched). Each retransmission counts
    /// TcpExtTCPFastRetrans, or TCPSlowStartRetrans in Loss.
    pub fn tcp_xmit_retransmit_queue(&mut self, cx: &mut Cx) {
        if self.packets_out == 0 {
            return;
        }
        let head = self.rtx_queue(cx.cfg).start;
        let mut rearm = false;
        for i in self.rtx_queue(cx.cfg) {
            let segs = self.cwnd as i64 - self.tcp_packets_in_flight() as i64;
            if segs <= 0 {
                break;
            }
            if self.retrans_out >= self.lost_out {
                break;
            }
            let t = self.segs[i as usize].tags;
            if t & tag::L == 0 {
                continue;
            }
            if t & (tag::S | tag::R) != 0 {
                continue;
            }
            if cx.tsq_full {
                break; // tcp_small_queue_check(): nothing attempted
            }
            self.tcp_retransmit_skb(cx, i);
            cx.mib.inc(if self.ca_state == CaState::Loss {
                Mib::SlowStartRetrans
            } else {
                Mib::FastRetrans
            });
            if self.tcp_in_cwnd_reduction() {
                self.prr_out = self.prr_out.wrapping_add(1);
            }
            if i == head
                && !matches!(
                    self.timer,
                    Some(Timer {
                        kind: TimerKind::Reo,
                        ..
                    })
                )
            {
                rearm = true;
            }
        }
        if rearm {
            let rto = self.icsk_rto(cx.cfg);
            self.tcp_reset_xmit_timer(cx, TimerKind::Rto, rto);
        }
    }

    /// `tcp_xmit_recovery()`.
    pub fn tcp_xmit_recovery(&mut self, cx: &mut Cx, rexmit: Rexmit) {
        match rexmit {
            Rexmit::None => return,
            Rexmit::New => {
                // F-RTO 2b: push new data (Nagle off); fall back to retransmitting if none went out.
                self.tcp_write_xmit(cx);
                if after(self.snd_nxt, self.high_seq) {
                    return;
                }
                self.frto = false;
                self.ghost.frto_ref = false;
            }
            Rexmit::Lost => {}
        }
        self.tcp_xmit_retransmit_queue(cx);
    }

    /// TSQ completion handler (`tcp_tsq_handler`): the host queue drained.
    pub fn tcp_tsq_handler(&mut self, cx: &mut Cx) {
        if self.lost_out > self.retrans_out && self.cwnd > self.tcp_packets_in_flight() {
            self.tcp_xmit_retransmit_queue(cx);
        }
        self.tcp_write_xmit(cx);
    }
}
