//! RTO and F-RTO: `tcp_retransmit_timer()` (tcp_timer.c), `tcp_enter_loss()`,
//! `tcp_timeout_mark_lost()`, `tcp_process_loss()` (tcp_input.c); reference §8.

use super::ack::{flag, Rexmit};
use super::Cx;
use crate::cc::CaEvent;
use crate::profile::{EnterLossGuard, LossUndoAcks, RtoRetransReset};
use crate::seq::{after, before};
use crate::state::*;

impl Sender {
    /// `tcp_retransmit_timer()`: the RTO fired (the zero-window and ETIMEDOUT paths are not modelled).
    pub fn tcp_retransmit_timer(&mut self, cx: &mut Cx) {
        if self.packets_out == 0 {
            return;
        }
        self.tcp_enter_loss(cx);
        self.icsk_retransmits = self.icsk_retransmits.saturating_add(1);
        let head = self.rtx_queue(cx.cfg).start;
        // The RTO path retransmits the head directly (no TSQ check: tcp_small_queue_check is
        // only in tcp_xmit_retransmit_queue).
        self.tcp_retransmit_skb(cx, head);
        self.icsk_backoff = self.icsk_backoff.saturating_add(1);
        // Re-armed from this callback, which the timer wheel runs on a bucket boundary.
        let when = super::timer_wheel_delay_aligned(self.icsk_rto_jiffies(cx.cfg));
        self.tcp_reset_xmit_timer(cx, TimerKind::Rto, super::jiffies_to_msecs(when, cx.cfg.hz));
    }

    /// `tcp_timeout_mark_lost()`: mark the head and every segment whose RACK time expired lost
    /// (all of them for non-SACK flows, which never advance RACK); SACK reneging marks all.
    pub fn tcp_timeout_mark_lost(&mut self, cx: &mut Cx) {
        let q = self.rtx_queue(cx.cfg);
        if q.is_empty() {
            return;
        }
        let is_reneg = self.segs[q.start as usize].tags & tag::S != 0;
        if is_reneg {
            self.sacked_out = 0;
            self.is_sack_reneg = true;
        } else if !self.sack_ok {
            self.tcp_reset_reno_sack();
        }
        for i in q.clone() {
            if is_reneg {
                self.segs[i as usize].tags &= !tag::S;
            } else if i != q.start && self.tcp_rack_skb_timeout(cx, self.segs[i as usize].xmit, 0) > 0 {
                continue; // recently sent: not marked yet
            }
            self.tcp_mark_skb_lost(cx, i);
        }
    }

    /// The ssthresh guard of `tcp_enter_loss()`: reduce only once per window of data.
    pub fn tcp_enter_loss_may_reduce(&self, cx: &Cx) -> bool {
        let window_done = match cx.prof.enter_loss_guard {
            EnterLossGuard::SndUnaEqHighSeq => self.snd_una == self.high_seq,
            EnterLossGuard::SndUnaGeHighSeq => !after(self.high_seq, self.snd_una),
        };
        if crate::profile::mutant!(cx.prof, EnterLossAlwaysReduce) {
            return true;
        }
        self.ca_state <= CaState::Disorder || window_done || (self.ca_state == CaState::Loss && self.icsk_retransmits == 0)
    }

    /// `tcp_enter_loss()`: RTO → Loss, ssthresh cut if not yet made in this window, cwnd = in_flight + 1.
    pub fn tcp_enter_loss(&mut self, cx: &mut Cx) {
        let new_recovery = self.ca_state < CaState::Recovery;
        self.ghost.ev.entered_loss = true;
        self.tcp_timeout_mark_lost(cx);
        if self.tcp_enter_loss_may_reduce(cx) {
            self.prior_ssthresh = self.tcp_current_ssthresh();
            self.prior_cwnd = self.cwnd;
            self.ssthresh = self.ca_ssthresh(cx, ReductionKind::Loss, false);
            self.tcp_ca_event(cx, CaEvent::Loss);
            self.tcp_init_undo(cx);
        }
        self.cwnd = self.tcp_packets_in_flight().wrapping_add(1);
        self.cwnd_cnt = 0;
        if self.ca_state <= CaState::Disorder && self.sacked_out >= cx.cfg.sysctl_reordering {
            self.reordering = self.reordering.min(cx.cfg.sysctl_reordering);
        }
        self.tcp_set_ca_state(cx, CaState::Loss);
        self.high_seq = self.snd_nxt;
        if self.ghost.ev.reductions.last().map_or(false, |r| r.kind == ReductionKind::Loss) {
            self.ghost.last_reduction = Some((self.high_seq, ReductionKind::Loss));
        }
        self.tlp_high_seq = 0;
        if cx.cfg.ecn {
            self.ecn_queue_cwr = true;
        }
        self.frto = cx.cfg.frto && (new_recovery || self.icsk_retransmits != 0);
    }

    /// `tcp_process_loss()`: ACK processing in Loss, incl. F-RTO (RFC 5682, SACK-enhanced).
    pub fn tcp_process_loss(&mut self, cx: &mut Cx, fl: u32, num_dupack: u32, rexmit: &mut Rexmit) {
        let recovered = !before(self.snd_una, self.high_seq);
        let undo_trigger = match cx.prof.loss_undo_acks {
            LossUndoAcks::SndUnaAdvanced => fl & flag::SND_UNA_ADVANCED != 0,
            LossUndoAcks::AnyAck => true,
        };
        if undo_trigger && self.tcp_try_undo_loss(cx, false) {
            return;
        }
        if self.frto {
            // Step 3.b: never-retransmitted data (S)ACKed: the RTO was spurious.
            if fl & flag::ORIG_SACK_ACKED != 0 && self.tcp_try_undo_loss(cx, true) {
                return;
            }
            if after(self.snd_nxt, self.high_seq) {
                // Step 3.a: new data was sent in 2.b; a SACK or dupack means the loss was real.
                if fl & flag::DATA_SACKED != 0 || num_dupack > 0 {
                    self.frto = false;
                }
            } else if fl & flag::SND_UNA_ADVANCED != 0 && !recovered {
                self.high_seq = self.snd_nxt;
                // Step 2.b: send new data (after cwnd is updated) instead of retransmitting.
                if before(self.snd_nxt, self.write_seq) {
                    *rexmit = Rexmit::New;
                    return;
                }
                self.frto = false;
            }
        }
        if cx.prof.rto_retrans_reset == RtoRetransReset::InProcessLoss {
            if recovered || fl & flag::DATA_ACKED != 0 {
                self.icsk_retransmits = 0;
            }
        }
        if recovered {
            self.tcp_try_undo_recovery(cx);
            return;
        }
        if !self.sack_ok {
            if after(self.snd_nxt, self.high_seq) && num_dupack > 0 {
                self.tcp_add_reno_sack(cx, num_dupack);
            } else if fl & flag::SND_UNA_ADVANCED != 0 {
                self.tcp_reset_reno_sack();
            }
        }
        *rexmit = Rexmit::Lost;
    }
}
