//! The loss-recovery state machine of `tcp_fastretrans_alert()` (tcp_input.c): entering and
//! leaving Recovery and CWR, and every undo entry point (reference §4.4, §6, §7).

use super::ack::{flag, Rexmit};
use super::Cx;
use crate::cc::{CaEvent, CongestionOps};
use crate::profile::{mutant, InitUndoTlp, PacketDelayed};
use crate::seq::before;
use crate::state::*;

impl Sender {
    /// `tcp_fastretrans_alert()`: the per-ACK state machine for dubious ACKs.
    pub fn tcp_fastretrans_alert(&mut self, cx: &mut Cx, prior_snd_una: u32, num_dupack: u32, ack_flag: &mut u32, rexmit: &mut Rexmit) {
        let fl = *ack_flag;
        let ece = fl & flag::ECE != 0;
        if self.packets_out == 0 && self.sacked_out != 0 {
            self.sacked_out = 0;
        }
        // A. ECE: the reduction is required, never restore cwnd.
        if ece {
            self.prior_ssthresh = 0;
        }
        // B. SACK reneging.
        if self.tcp_check_sack_reneging(cx, ack_flag) {
            return;
        }
        // D. State exit conditions: the episode can end once high_seq is ACKed.
        if self.ca_state == CaState::Open {
            self.retrans_stamp = 0;
        } else if !before(self.snd_una, self.high_seq) {
            match self.ca_state {
                CaState::Cwr => {
                    // CWR is held until something above high_seq is ACKed (the CWR bit must
                    // reach the receiver).
                    if self.snd_una != self.high_seq {
                        self.tcp_end_cwnd_reduction(cx);
                        self.tcp_set_ca_state(cx, CaState::Open);
                    }
                }
                CaState::Recovery => {
                    if !self.sack_ok {
                        self.tcp_reset_reno_sack();
                    }
                    if self.tcp_try_undo_recovery(cx) {
                        return;
                    }
                    let undone = self.undo_marker == 0;
                    self.tcp_end_cwnd_reduction(cx);
                    self.ghost.ev.recovery_end = Some((self.cwnd, self.ssthresh, undone));
                }
                _ => {}
            }
        }
        // E. Process the state.
        let mut fall_through = false;
        match self.ca_state {
            CaState::Recovery => {
                if fl & flag::SND_UNA_ADVANCED == 0 {
                    if !self.sack_ok {
                        self.tcp_add_reno_sack(cx, num_dupack);
                    }
                } else if self.tcp_try_undo_partial(cx, prior_snd_una) {
                    return;
                }
                if self.tcp_try_undo_dsack(cx) {
                    self.tcp_try_to_open(cx, fl);
                }
                self.tcp_identify_packet_loss(cx, ack_flag);
                if self.ca_state != CaState::Recovery {
                    if !self.tcp_time_to_recover() {
                        return;
                    }
                    // Undo reverted the state; loss is still evident: start a new episode.
                    self.tcp_enter_recovery(cx, ece);
                }
            }
            CaState::Loss => {
                self.tcp_process_loss(cx, fl, num_dupack, rexmit);
                self.tcp_identify_packet_loss(cx, ack_flag);
                if !(self.ca_state == CaState::Open || *ack_flag & flag::LOST_RETRANS != 0) {
                    return;
                }
                fall_through = true;
            }
            _ => fall_through = true,
        }
        if fall_through {
            if !self.sack_ok {
                if fl & flag::SND_UNA_ADVANCED != 0 {
                    self.tcp_reset_reno_sack();
                }
                self.tcp_add_reno_sack(cx, num_dupack);
            }
            if self.ca_state <= CaState::Disorder {
                self.tcp_try_undo_dsack(cx);
            }
            self.tcp_identify_packet_loss(cx, ack_flag);
            if !self.tcp_time_to_recover() {
                self.tcp_try_to_open(cx, fl);
                return;
            }
            let lost_retrans = *ack_flag & flag::LOST_RETRANS != 0 && self.ca_state == CaState::Loss;
            self.tcp_enter_recovery_from(cx, ece, lost_retrans);
        }
        *rexmit = Rexmit::Lost;
    }

    /// `tcp_check_sack_reneging()`: the new head is SACKed after a cumulative ACK.
    fn tcp_check_sack_reneging(&mut self, cx: &mut Cx, ack_flag: &mut u32) -> bool {
        if *ack_flag & flag::SACK_RENEGING != 0 && *ack_flag & flag::SND_UNA_ADVANCED != 0 {
            let delay = (cx.cfg.rtt_ms / 2).max(10);
            self.tcp_reset_xmit_timer(cx, TimerKind::Rto, delay);
            *ack_flag &= !flag::SET_XMIT_TIMER;
            return true;
        }
        false
    }

    /// `tcp_time_to_recover()` (6.17+, RACK only): something is marked lost.
    pub fn tcp_time_to_recover(&self) -> bool {
        self.lost_out != 0
    }

    /// `tcp_init_undo()` (0ec986ed7bab counts an in-flight TLP retransmission).
    pub fn tcp_init_undo(&mut self, cx: &Cx) {
        self.ghost.rtx_mask = 0;
        self.undo_marker = self.snd_una;
        self.undo_retrans = self.retrans_out as i32;
        if cx.prof.init_undo_tlp == InitUndoTlp::Count && self.tlp_high_seq != 0 && self.tlp_retrans {
            self.undo_retrans += 1;
        }
        if self.undo_retrans == 0 {
            self.undo_retrans = -1;
        }
    }

    /// `tcp_init_cwnd_reduction()`: start PRR; congestion control computes the new ssthresh.
    pub fn tcp_init_cwnd_reduction(&mut self, cx: &Cx, kind: ReductionKind, lost_retrans: bool) {
        self.high_seq = self.snd_nxt;
        self.tlp_high_seq = 0;
        self.cwnd_cnt = 0;
        self.prior_cwnd = self.cwnd;
        self.prr_delivered = 0;
        self.prr_out = 0;
        self.ssthresh = self.ca_ssthresh(cx, kind, lost_retrans);
        self.ghost.last_reduction = Some((self.high_seq, kind));
        if cx.cfg.ecn {
            self.ecn_queue_cwr = true;
        }
    }

    /// `tcp_end_cwnd_reduction()`: cwnd snaps to ssthresh in CWR, or in Recovery unless undone.
    pub fn tcp_end_cwnd_reduction(&mut self, cx: &Cx) {
        if self.ssthresh < TCP_INFINITE_SSTHRESH
            && (self.ca_state == CaState::Cwr || self.undo_marker != 0)
            && !mutant!(cx.prof, EndCwndNoSnap)
        {
            self.cwnd = self.ssthresh;
        }
        self.tcp_ca_event(cx, CaEvent::CompleteCwr);
    }

    /// `tcp_enter_cwr()`: ECN-triggered reduction.
    pub fn tcp_enter_cwr(&mut self, cx: &Cx) {
        self.prior_ssthresh = 0;
        if self.ca_state < CaState::Cwr {
            self.undo_marker = 0;
            self.tcp_init_cwnd_reduction(cx, ReductionKind::Cwr, false);
            self.tcp_set_ca_state(cx, CaState::Cwr);
        }
    }

    /// `tcp_enter_recovery()`.
    pub fn tcp_enter_recovery(&mut self, cx: &mut Cx, ece: bool) {
        self.tcp_enter_recovery_from(cx, ece, false)
    }

    /// `tcp_enter_recovery()`, with the ghost note of whether a lost retransmission in Loss caused it.
    pub fn tcp_enter_recovery_from(&mut self, cx: &mut Cx, ece: bool, lost_retrans: bool) {
        // b41b4cbd9655: restart the undo/ETIMEDOUT clock with this episode's first retransmit.
        if cx.prof.enter_recovery_stamp_cleanup && !self.tcp_any_retrans_done(cx.cfg) {
            self.retrans_stamp = 0;
        }
        self.prior_ssthresh = 0;
        self.tcp_init_undo(cx);
        if !self.tcp_in_cwnd_reduction() {
            if !ece {
                self.prior_ssthresh = self.tcp_current_ssthresh();
            }
            self.tcp_init_cwnd_reduction(cx, ReductionKind::Recovery, lost_retrans);
        }
        if self.ca_state != CaState::Recovery {
            self.ghost.episode = Some(Episode { start_una: self.snd_una, undone: false });
        }
        self.tcp_set_ca_state(cx, CaState::Recovery);
    }

    /// `tcp_try_keep_open()`: Open, or Disorder while anything is SACKed/lost/retransmitted.
    pub fn tcp_try_keep_open(&mut self, cx: &Cx) {
        let state = if self.tcp_left_out() != 0 || self.tcp_any_retrans_done(cx.cfg) { CaState::Disorder } else { CaState::Open };
        if self.ca_state != state {
            self.tcp_set_ca_state(cx, state);
            self.high_seq = self.snd_nxt;
        }
    }

    /// `tcp_try_to_open()`.
    pub fn tcp_try_to_open(&mut self, cx: &Cx, fl: u32) {
        if !self.tcp_any_retrans_done(cx.cfg) {
            self.retrans_stamp = 0;
        }
        if fl & flag::ECE != 0 {
            self.tcp_enter_cwr(cx);
        }
        if self.ca_state != CaState::Cwr {
            self.tcp_try_keep_open(cx);
        }
    }

    /// `tcp_packet_delayed()`: the profile's variant (PacketDelayed).
    pub fn tcp_packet_delayed(&self, cx: &Cx) -> bool {
        match cx.prof.packet_delayed {
            PacketDelayed::Pre2019 => self.retrans_stamp == 0 || self.tcp_tsopt_ecr_before(cx, self.retrans_stamp),
            PacketDelayed::Bc9f38 => self.retrans_stamp != 0 && self.tcp_tsopt_ecr_before(cx, self.retrans_stamp),
            // The model has no SYN_SENT state (passive open, established), so the SYN_SENT
            // exception of e37ab7373696 never applies.
            PacketDelayed::E37ab7 => {
                if self.retrans_stamp != 0 {
                    self.tcp_tsopt_ecr_before(cx, self.retrans_stamp)
                } else {
                    true
                }
            }
            PacketDelayed::D0fa59 => {
                if self.retrans_stamp != 0 {
                    return self.tcp_tsopt_ecr_before(cx, self.retrans_stamp);
                }
                if !self.sack_ok && !before(self.snd_una, self.high_seq) {
                    return false;
                }
                true
            }
        }
    }

    /// `tcp_may_undo()`.
    pub fn tcp_may_undo(&self, cx: &Cx) -> bool {
        self.undo_marker != 0 && (self.undo_retrans == 0 || self.tcp_packet_delayed(cx))
    }

    /// `tcp_undo_cwnd_reduction()`: restore cwnd/ssthresh (if `prior_ssthresh`), optionally unmark losses.
    pub fn tcp_undo_cwnd_reduction(&mut self, cx: &Cx, unmark_loss: bool, kind: UndoKind) {
        let cwnd_before = self.cwnd;
        let ssthresh_before = self.ssthresh;
        let marker = self.undo_marker;
        if unmark_loss {
            for i in self.rtx_queue(cx.cfg) {
                self.segs[i as usize].tags &= !tag::L;
            }
            self.lost_out = 0;
        }
        if self.prior_ssthresh != 0 {
            let w = self.window(cx);
            self.cwnd = if mutant!(cx.prof, UndoCwndPriorOnly) { self.prior_cwnd } else { self.cc.undo_cwnd(&w) };
            if self.prior_ssthresh > self.ssthresh {
                self.ssthresh = self.prior_ssthresh;
                self.ecn_queue_cwr = false;
            }
            // Ghost: the reduction is withdrawn, it no longer counts for I2.
            self.ghost.last_reduction = None;
        }
        self.undo_marker = 0;
        self.rack.advanced = true;
        if let Some(ep) = self.ghost.episode.as_mut() {
            ep.undone = true;
        }
        self.ghost.ev.undos.push(UndoEvent {
            kind,
            ca_state: self.ca_state,
            marker,
            cwnd_before,
            ssthresh_before,
            prior_cwnd: self.prior_cwnd,
            prior_ssthresh: self.prior_ssthresh,
            cwnd_after: self.cwnd,
            ssthresh_after: self.ssthresh,
            rtx_mask: self.ghost.rtx_mask,
        });
    }

    /// `tcp_is_non_sack_preventing_reopen()` (686dc2db2a0f): a non-SACK sender holds its state
    /// while `snd_una == high_seq` (RFC 6582), clearing `retrans_stamp` if nothing is retransmitted.
    pub fn tcp_is_non_sack_preventing_reopen(&mut self, cx: &Cx) -> bool {
        if self.snd_una == self.high_seq && !self.sack_ok && !mutant!(cx.prof, NoNonSackHold) {
            if !self.tcp_any_retrans_done(cx.cfg) {
                self.retrans_stamp = 0;
            }
            self.ghost.ev.nonsack_hold = true;
            return true;
        }
        false
    }

    /// `tcp_try_undo_recovery()`: end of Recovery/Loss (`snd_una >= high_seq`). Returns true when
    /// the state is held (non-SACK at `snd_una == high_seq`).
    pub fn tcp_try_undo_recovery(&mut self, cx: &Cx) -> bool {
        if self.tcp_may_undo(cx) {
            let kind = if self.ca_state == CaState::Loss { UndoKind::LossRecovered } else { UndoKind::Full };
            self.tcp_undo_cwnd_reduction(cx, false, kind);
        } else if self.rack.reo_wnd_persist > 0 {
            self.rack.reo_wnd_persist -= 1;
        }
        if self.tcp_is_non_sack_preventing_reopen(cx) {
            return true;
        }
        self.tcp_set_ca_state(cx, CaState::Open);
        self.is_sack_reneg = false;
        false
    }

    /// `tcp_try_undo_dsack()`: every retransmission of the episode was DSACKed.
    pub fn tcp_try_undo_dsack(&mut self, cx: &Cx) -> bool {
        if self.undo_marker != 0 && self.undo_retrans == 0 {
            self.rack.reo_wnd_persist = (self.rack.reo_wnd_persist + 1).min(TCP_RACK_RECOVERY_THRESH);
            self.tcp_undo_cwnd_reduction(cx, false, UndoKind::Dsack);
            return true;
        }
        false
    }

    /// `tcp_try_undo_partial()`: a partial ACK filled the hole with a delayed original.
    /// Returns true when the caller must stop processing this ACK.
    pub fn tcp_try_undo_partial(&mut self, cx: &mut Cx, prior_snd_una: u32) -> bool {
        if self.undo_marker != 0 && self.tcp_packet_delayed(cx) {
            self.tcp_check_sack_reordering(cx, prior_snd_una, true);
            if self.retrans_out != 0 {
                return true;
            }
            if !self.tcp_any_retrans_done(cx.cfg) {
                self.retrans_stamp = 0;
            }
            self.tcp_undo_cwnd_reduction(cx, true, UndoKind::Partial);
            self.tcp_try_keep_open(cx);
        }
        false
    }

    /// `tcp_try_undo_loss()`: undo an RTO (`frto_undo`: F-RTO proved it spurious).
    pub fn tcp_try_undo_loss(&mut self, cx: &Cx, frto_undo: bool) -> bool {
        if frto_undo || self.tcp_may_undo(cx) {
            let kind = if frto_undo { UndoKind::Frto } else { UndoKind::Loss };
            self.tcp_undo_cwnd_reduction(cx, true, kind);
            self.icsk_retransmits = 0;
            if cx.prof.loss_undo_nonsack_hold && self.tcp_is_non_sack_preventing_reopen(cx) {
                return true;
            }
            if frto_undo || self.sack_ok {
                self.tcp_set_ca_state(cx, CaState::Open);
                self.is_sack_reneg = false;
            }
            return true;
        }
        false
    }
}
