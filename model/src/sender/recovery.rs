//! The loss-recovery state machine of `tcp_fastretrans_alert()` (tcp_input.c): entering and
//! leaving Recovery and CWR, and every undo entry point (tcp_input.c).

use super::ack::{flag, Rexmit};
use super::Cx;
use crate::cc::{CaEvent, CongestionOps};
use crate::decision::Branch;
use crate::mib::Mib;
use crate::profile::{mutant, InitUndoTlp, PacketDelayed, PacketDelayedScope};
use crate::seq::before;
use crate::state::*;

impl Sender {
    /// `tcp_fastretrans_alert()`: the per-ACK state machine for dubious ACKs.
    pub fn tcp_fastretrans_alert(
        &mut self,
        cx: &mut Cx,
        prior_snd_una: u32,
        num_dupack: u32,
        ack_flag: &mut u32,
        rexmit: &mut Rexmit,
    ) {
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
            if !self.f1_fix_tlp_stamp(cx) {
                self.retrans_stamp = 0;
            }
        } else if !before(self.snd_una, self.high_seq) {
            match self.ca_state {
                CaState::Cwr
                    // CWR is held until something above high_seq is ACKed (the CWR bit must
                    // reach the receiver).
                    if self.snd_una != self.high_seq => {
                        self.tcp_end_cwnd_reduction(cx);
                        self.tcp_set_ca_state(cx, CaState::Open);
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
            let lost_retrans =
                *ack_flag & flag::LOST_RETRANS != 0 && self.ca_state == CaState::Loss;
            self.tcp_enter_recovery_from(cx, ece, lost_retrans);
        }
        *rexmit = Rexmit::Lost;
    }

    /// `tcp_check_sack_reneging()`: the new head is SACKed after a cumulative ACK.
    fn tcp_check_sack_reneging(&mut self, cx: &mut Cx, ack_flag: &mut u32) -> bool {
        if *ack_flag & flag::SACK_RENEGING != 0 && *ack_flag & flag::SND_UNA_ADVANCED != 0 {
            // max(usecs_to_jiffies(srtt / 2), 10 ms), in the model's whole ms.
            let delay = ((self.rtt_est.srtt_us >> 4) / 1000).max(10);
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
        self.end_undo_episode();
        self.ghost.rtx_mask.clear();
        self.undo_marker = self.snd_una;
        self.undo_retrans = self.retrans_out as i32;
        let tlp_in_flight = self.tlp_high_seq != 0 && self.tlp_retrans;
        self.undo_echo_unproven = false;
        if cx.prof.init_undo_tlp == InitUndoTlp::Count && tlp_in_flight {
            self.undo_retrans += 1;
        }
        self.ghost.init_undo_ignored_tlp =
            cx.prof.init_undo_tlp == InitUndoTlp::Ignore && tlp_in_flight;
        cx.took(if tlp_in_flight {
            Branch::InitUndoTlp
        } else {
            Branch::InitUndoNoTlp
        });
        if self.undo_retrans == 0 {
            self.undo_retrans = -1;
        }
    }

    /// Ghost (I20, I20e): the Eifel proof ([`EifelProof`], RFC 3522) this ACK brings, judged on
    /// the state the ACK found (`ca_state`, `undo_marker`, `retrans_stamp`, `high_seq`) once
    /// `snd_una` has moved to its ACK number: in Recovery or Loss with the episode open, the
    /// ACK covers every segment retransmitted since `tcp_init_undo()` and echoes a TSval older
    /// than `retrans_stamp`. It is the evidence `tcp_packet_delayed()` reads in every kernel
    /// (`tcp_try_undo_recovery()`, `tcp_try_undo_partial()`, `tcp_try_undo_loss()` decide on
    /// it), taken without the profile's variant or scope, so a profile that narrows what the
    /// echo proves (the F1 fix's `packet_delayed_scope`) is judged against it.
    pub fn eifel_proof(&self, cx: &Cx, prior_snd_una: u32) -> Option<EifelProof> {
        if !crate::seq::after(self.snd_una, prior_snd_una)
            || !matches!(self.ca_state, CaState::Recovery | CaState::Loss)
        {
            return None;
        }
        let rtx = &self.ghost.rtx_mask;
        let covered = !rtx.is_empty() && !rtx.any_at_or_above(self.idx(cx.cfg, self.snd_una));
        if self.undo_marker == 0
            || self.retrans_stamp == 0
            || !covered
            || !self.tcp_tsopt_ecr_before(cx, self.retrans_stamp)
        {
            return None;
        }
        Some(EifelProof {
            from: self.idx(cx.cfg, self.undo_marker) as u16,
            to: self.idx(cx.cfg, self.high_seq) as u16,
            ca_state: self.ca_state,
            undo_retrans: self.undo_retrans.clamp(0, 15) as u8,
        })
    }

    /// Ghost (I20, I20e): what the step did with the ACK's Eifel proof. Without an undo it is
    /// missed, and owed to the episode until an undo clears it; if the step already ended the
    /// episode the proof belongs to (it left Recovery/Loss, or `tcp_init_undo()` began another,
    /// which recorded a lost proof), it is lost at once and owed to no one.
    pub fn note_eifel_outcome(&mut self, proof: Option<EifelProof>) {
        let Some(p) = proof else { return };
        if !self.ghost.ev.undos.is_empty() {
            return;
        }
        let open = matches!(self.ca_state, CaState::Recovery | CaState::Loss);
        let ended = !open || self.ghost.ev.eifel.is_some_and(|e| e.lost);
        if !ended {
            self.ghost.undo_owed.get_or_insert(p);
        }
        self.ghost.ev.eifel = Some(EifelStep {
            proof: p,
            missed: true,
            lost: ended,
        });
    }

    /// Ghost (I20e): the episode ends (it left Recovery/Loss, or the next one begins); an owed
    /// undo is lost.
    pub fn end_undo_episode(&mut self) {
        if let Some(p) = self.ghost.undo_owed.take() {
            self.ghost.ev.eifel = Some(EifelStep {
                proof: p,
                missed: false,
                lost: true,
            });
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
        self.tcp_ecn_queue_cwr(cx);
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

    /// `tcp_enter_recovery()`, with the ghost note of whether a lost retransmission in Loss caused
    /// it. Counts TcpExtTCPSackRecovery (TCPRenoRecovery without SACK).
    pub fn tcp_enter_recovery_from(&mut self, cx: &mut Cx, ece: bool, lost_retrans: bool) {
        // b41b4cbd9655: restart the undo/ETIMEDOUT clock with this episode's first retransmit.
        let retrans_done = self.tcp_any_retrans_done(cx.cfg);
        cx.took(if retrans_done {
            Branch::RecoveryRetransOutstanding
        } else {
            Branch::RecoveryNoRetrans
        });
        if cx.prof.enter_recovery_stamp_cleanup && !self.retrans_stamp_in_use(cx) {
            self.retrans_stamp = 0;
        }
        cx.mib.inc(if self.sack_ok {
            Mib::SackRecovery
        } else {
            Mib::RenoRecovery
        });
        self.prior_ssthresh = 0;
        self.tcp_init_undo(cx);
        if !self.tcp_in_cwnd_reduction() {
            if !ece {
                self.prior_ssthresh = self.tcp_current_ssthresh();
            }
            self.tcp_init_cwnd_reduction(cx, ReductionKind::Recovery, lost_retrans);
        }
        if self.ca_state != CaState::Recovery {
            self.ghost.episode = Some(Episode {
                start_una: self.snd_una,
                undone: false,
            });
        }
        self.tcp_set_ca_state(cx, CaState::Recovery);
    }

    /// `tcp_try_keep_open()`: Open, or Disorder while anything is SACKed/lost/retransmitted.
    pub fn tcp_try_keep_open(&mut self, cx: &Cx) {
        let state = if self.tcp_left_out() != 0 || self.tcp_any_retrans_done(cx.cfg) {
            CaState::Disorder
        } else {
            CaState::Open
        };
        if self.ca_state != state {
            self.tcp_set_ca_state(cx, state);
            self.high_seq = self.snd_nxt;
        }
    }

    /// `tcp_try_to_open()`.
    pub fn tcp_try_to_open(&mut self, cx: &Cx, fl: u32) {
        if !self.retrans_stamp_in_use(cx) {
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
        let d = self.tcp_packet_delayed_variant(cx);
        if cx.decisions.is_some() {
            cx.took(self.packet_delayed_branch(cx));
        }
        d
    }

    /// The coverage branch of `tcp_packet_delayed()`: the situation it judges.
    fn packet_delayed_branch(&self, cx: &Cx) -> Branch {
        if self.retrans_stamp != 0 {
            if self.tcp_tsopt_ecr_before(cx, self.retrans_stamp) {
                if self.undo_retrans > 0 && !cx.echo_proves_retrans {
                    Branch::DelayedEcrBeforeUnproven
                } else {
                    Branch::DelayedEcrBefore
                }
            } else {
                Branch::DelayedEcrNotBefore
            }
        } else if self.sack_ok {
            Branch::DelayedNoStampSack
        } else if !before(self.snd_una, self.high_seq) {
            Branch::DelayedNoStampRenoAtHigh
        } else {
            Branch::DelayedNoStampRenoBelowHigh
        }
    }

    fn tcp_packet_delayed_variant(&self, cx: &Cx) -> bool {
        match cx.prof.packet_delayed {
            PacketDelayed::Pre2019 => self.retrans_stamp == 0 || self.tcp_packet_delayed_ts(cx),
            PacketDelayed::Bc9f38 => self.retrans_stamp != 0 && self.tcp_packet_delayed_ts(cx),
            // The model has no SYN_SENT state (passive open, established), so the SYN_SENT
            // exception of e37ab7373696 never applies.
            PacketDelayed::E37ab7 => {
                if self.retrans_stamp != 0 {
                    self.tcp_packet_delayed_ts(cx)
                } else {
                    true
                }
            }
            PacketDelayed::D0fa59 => {
                if self.retrans_stamp != 0 {
                    return self.tcp_packet_delayed_ts(cx);
                }
                if !self.sack_ok && !before(self.snd_una, self.high_seq) {
                    return false;
                }
                true
            }
        }
    }

    /// The timestamp test of `tcp_packet_delayed()` (`retrans_stamp` set): the echo of a TSval
    /// older than the episode's first retransmission, and what it may prove, by the profile's
    /// `packet_delayed_scope` (finding F1, docs/findings/F1.md). Every kernel so far
    /// (`Episode`, the test as in the 2005 code and RFC 3522) takes it for the whole episode,
    /// so an echo of one delayed original undoes an episode in which another segment was really
    /// lost and repaired by its retransmission. The fix (`AckedHead`, vm/kconfig/f1-fix.patch)
    /// takes it only when the cumulatively ACKed head's retransmission is the episode's one
    /// un-DSACKed retransmission (`Cx::echo_proves_retrans`, from `tcp_clean_rtx_queue()`), or
    /// when no retransmission is left to judge (`undo_retrans <= 0`).
    pub fn tcp_packet_delayed_ts(&self, cx: &Cx) -> bool {
        self.tcp_tsopt_ecr_before(cx, self.retrans_stamp)
            && match cx.prof.packet_delayed_scope {
                PacketDelayedScope::Episode
                | PacketDelayedScope::HeadOnly
                | PacketDelayedScope::SackedRetrans => true,
                PacketDelayedScope::AckedHead => self.undo_retrans <= 0 || cx.echo_proves_retrans,
            }
    }

    /// `tcp_may_undo()`.
    pub fn tcp_may_undo(&self, cx: &Cx) -> bool {
        self.undo_marker != 0
            && (self.undo_retrans == 0 || (self.tcp_packet_delayed(cx) && !self.echo_unproven(cx)))
    }

    /// Where the kernel clears `retrans_stamp` once no retransmission is out
    /// (`tcp_retrans_stamp_cleanup()` and its open-coded copies: `!tcp_any_retrans_done()`).
    /// The F1 fix (`sacked-retrans`) also keeps it while a TLP retransmission is unresolved
    /// ([`Self::f1_fix_tlp_stamp`]).
    fn retrans_stamp_in_use(&self, cx: &Cx) -> bool {
        self.tcp_any_retrans_done(cx.cfg) || self.f1_fix_tlp_stamp(cx)
    }

    /// The F1 fix (`sacked-retrans`, vm/kconfig/f1-fix-v2.patch): a TLP retransmission is a
    /// retransmission. `tcp_send_loss_probe()` sets `retrans_stamp` if it is 0, as
    /// `tcp_retransmit_skb()` does, and it is kept while the probe is unresolved
    /// (`tlp_high_seq` set, `tlp_retrans`), so an echo of the TLP copy is not older than it.
    /// Every kernel so far: a TLP copy sets no stamp and its echo passes for an original's
    /// (F10, and F1's Loss form after a TLP). Every other scope: false.
    pub fn f1_fix_tlp_stamp(&self, cx: &Cx) -> bool {
        cx.prof.packet_delayed_scope == PacketDelayedScope::SackedRetrans
            && self.tlp_high_seq != 0
            && self.tlp_retrans
    }

    /// The F1 reworks, where an undo is decided: a timestamp echo (`retrans_stamp` set) does
    /// not prove the episode. `head-only`: it retransmitted a segment other than the one at
    /// `snd_una` (`undo_echo_unproven`). `sacked-retrans`: a retransmitted segment was SACKed
    /// (`undo_echo_unproven`), or one is still outstanding ([`Self::retrans_outstanding`]).
    /// Every other scope: false.
    fn echo_unproven(&self, cx: &Cx) -> bool {
        self.retrans_stamp != 0
            && match cx.prof.packet_delayed_scope {
                PacketDelayedScope::HeadOnly => self.undo_echo_unproven,
                PacketDelayedScope::SackedRetrans => {
                    self.undo_echo_unproven || self.retrans_outstanding(cx.cfg)
                }
                PacketDelayedScope::Episode | PacketDelayedScope::AckedHead => false,
            }
    }

    /// The F1 fix's walk of the retransmit queue (`tcp_unproven_retrans_out()` in
    /// vm/kconfig/f1-fix-v2.patch): a segment above `snd_una`, not SACKed, whose retransmission
    /// is in flight (`R`) or was retransmitted and marked lost again (`E` and `L`): its copy may
    /// yet repair a loss, so the episode is not proven yet. A copy sent but never marked lost
    /// again (`E` alone: a TLP probe, which `tcp_init_cwnd_reduction()` forgets) does not
    /// count: a loss it repairs is the probe's (`tcp_process_tlp_ack()`), not the episode's.
    fn retrans_outstanding(&self, cfg: &crate::Config) -> bool {
        let (una, nxt) = (self.idx(cfg, self.snd_una), self.idx(cfg, self.snd_nxt));
        (una..nxt).any(|i| {
            let t = self.segs[i as usize].tags;
            t & tag::S == 0 && (t & tag::R != 0 || t & (tag::E | tag::L) == tag::E | tag::L)
        })
    }

    /// Ghost: the evidence `tcp_may_undo()` acts on now, in the kernel's order of evaluation
    /// (`undo_retrans == 0` first, with this ACK's DSACK accounting; else `tcp_packet_delayed()`
    /// and which of its tests said "delayed").
    pub fn may_undo_evidence(&self, cx: &Cx) -> u16 {
        if self.undo_retrans == 0 {
            evidence::RETRANS_ZERO | cx.dsack_note
        } else {
            self.packet_delayed_evidence(cx)
        }
    }

    /// Ghost: why `tcp_packet_delayed()` holds now: the timestamp echo, or a zero
    /// `retrans_stamp` the profile's variant takes as delayed (0 if it does not hold).
    pub fn packet_delayed_evidence(&self, cx: &Cx) -> u16 {
        if !self.tcp_packet_delayed_variant(cx) {
            0
        } else if self.retrans_stamp != 0 {
            evidence::TS_ECHO
        } else {
            evidence::NO_STAMP
        }
    }

    /// `tcp_undo_cwnd_reduction()`: restore cwnd/ssthresh (if `prior_ssthresh`), optionally unmark losses.
    pub fn tcp_undo_cwnd_reduction(&mut self, cx: &Cx, unmark_loss: bool, kind: UndoKind) {
        self.tcp_undo_cwnd_reduction_on(cx, unmark_loss, kind, 0)
    }

    /// [`Self::tcp_undo_cwnd_reduction`], recording the evidence the caller acted on (ghost).
    pub fn tcp_undo_cwnd_reduction_on(
        &mut self,
        cx: &Cx,
        unmark_loss: bool,
        kind: UndoKind,
        evidence: u16,
    ) {
        let cwnd_before = self.cwnd;
        let ssthresh_before = self.ssthresh;
        let marker = self.undo_marker;
        // Ghost: where the episode's last reduction put high_seq (a later Disorder entry moves
        // high_seq without starting an episode: `tcp_try_keep_open`).
        let episode_high = self.ghost.last_reduction.map_or(self.high_seq, |(h, _)| h);
        if unmark_loss {
            for i in self.rtx_queue(cx.cfg) {
                self.segs[i as usize].tags &= !tag::L;
            }
            self.lost_out = 0;
        }
        if self.prior_ssthresh != 0 {
            let w = self.window(cx);
            self.cwnd = if mutant!(cx.prof, UndoCwndPriorOnly) {
                self.prior_cwnd
            } else {
                self.cc.undo_cwnd(&w)
            };
            if self.prior_ssthresh > self.ssthresh {
                self.ssthresh = self.prior_ssthresh;
                self.tcp_ecn_withdraw_cwr();
            }
            // Ghost: the reduction is withdrawn, it no longer counts for I2.
            self.ghost.last_reduction = None;
        }
        self.undo_marker = 0;
        self.ghost.frto_owed = None;
        self.ghost.undo_owed = None;
        self.rack.advanced = true;
        if let Some(ep) = self.ghost.episode.as_mut() {
            ep.undone = true;
        }
        let u = UndoEvent {
            kind,
            ca_state: self.ca_state,
            marker,
            cwnd_before,
            ssthresh_before,
            prior_cwnd: self.prior_cwnd,
            prior_ssthresh: self.prior_ssthresh,
            cwnd_after: self.cwnd,
            ssthresh_after: self.ssthresh,
            evidence,
            high_seq: episode_high,
        };
        self.ghost.ev.push_undo(u, &self.ghost.rtx_mask);
    }

    /// `tcp_is_non_sack_preventing_reopen()` (686dc2db2a0f): a non-SACK sender holds its state
    /// while `snd_una == high_seq` (RFC 6582), clearing `retrans_stamp` if nothing is retransmitted.
    pub fn tcp_is_non_sack_preventing_reopen(&mut self, cx: &Cx) -> bool {
        if self.snd_una == self.high_seq && !self.sack_ok && !mutant!(cx.prof, NoNonSackHold) {
            if !self.retrans_stamp_in_use(cx) {
                self.retrans_stamp = 0;
            }
            self.ghost.ev.nonsack_hold = true;
            return true;
        }
        false
    }

    /// `tcp_try_undo_recovery()`: end of Recovery/Loss (`snd_una >= high_seq`); an undo counts
    /// TcpExtTCPFullUndo (TCPLossUndo in Loss). Returns true when the state is held (non-SACK at
    /// `snd_una == high_seq`).
    pub fn tcp_try_undo_recovery(&mut self, cx: &Cx) -> bool {
        if self.tcp_may_undo(cx) {
            let kind = if self.ca_state == CaState::Loss {
                UndoKind::LossRecovered
            } else {
                UndoKind::Full
            };
            cx.took(if kind == UndoKind::Full {
                Branch::UndoRecoveryFull
            } else {
                Branch::UndoRecoveryLoss
            });
            cx.mib.inc(if kind == UndoKind::Full {
                Mib::FullUndo
            } else {
                Mib::LossUndo
            });
            let ev = self.may_undo_evidence(cx);
            self.tcp_undo_cwnd_reduction_on(cx, false, kind, ev);
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

    /// `tcp_try_undo_dsack()`: every retransmission of the episode was DSACKed (TcpExtTCPDSACKUndo).
    pub fn tcp_try_undo_dsack(&mut self, cx: &Cx) -> bool {
        if self.undo_marker != 0 && self.undo_retrans == 0 {
            self.rack.reo_wnd_persist =
                (self.rack.reo_wnd_persist + 1).min(TCP_RACK_RECOVERY_THRESH);
            cx.took(Branch::UndoDsack);
            self.tcp_undo_cwnd_reduction_on(
                cx,
                false,
                UndoKind::Dsack,
                evidence::RETRANS_ZERO | cx.dsack_note,
            );
            cx.mib.inc(Mib::DsackUndo);
            return true;
        }
        false
    }

    /// `tcp_try_undo_partial()`: a partial ACK filled the hole with a delayed original
    /// (TcpExtTCPPartialUndo).
    /// Returns true when the caller must stop processing this ACK.
    pub fn tcp_try_undo_partial(&mut self, cx: &mut Cx, prior_snd_una: u32) -> bool {
        if self.undo_marker != 0 && self.tcp_packet_delayed(cx) {
            let ev = self.packet_delayed_evidence(cx);
            self.tcp_check_sack_reordering(cx, prior_snd_una, true);
            if self.retrans_out != 0 {
                return true;
            }
            if self.echo_unproven(cx) {
                return false;
            }
            if !self.retrans_stamp_in_use(cx) {
                self.retrans_stamp = 0;
            }
            cx.took(Branch::UndoPartial);
            self.tcp_undo_cwnd_reduction_on(cx, true, UndoKind::Partial, ev);
            cx.mib.inc(Mib::PartialUndo);
            self.tcp_try_keep_open(cx);
        }
        false
    }

    /// `tcp_try_undo_loss()`: undo an RTO (`frto_undo`: F-RTO proved it spurious). Every undo
    /// counts TcpExtTCPLossUndo, F-RTO's also TCPSpuriousRTOs.
    pub fn tcp_try_undo_loss(&mut self, cx: &Cx, frto_undo: bool) -> bool {
        self.tcp_try_undo_loss_on(cx, frto_undo, 0)
    }

    /// [`Self::tcp_try_undo_loss`] with extra evidence bits of the caller's trigger (ghost:
    /// `tcp_process_loss` notes an ACK that did not advance `snd_una`, [`evidence::DUPACK`]).
    pub fn tcp_try_undo_loss_on(&mut self, cx: &Cx, frto_undo: bool, trigger: u16) -> bool {
        if frto_undo || self.tcp_may_undo(cx) {
            let kind = if frto_undo {
                UndoKind::Frto
            } else {
                UndoKind::Loss
            };
            let ev = trigger
                | if frto_undo {
                    evidence::FRTO
                } else {
                    self.may_undo_evidence(cx)
                };
            cx.took(if frto_undo {
                Branch::UndoFrto
            } else {
                Branch::UndoLoss
            });
            cx.took(if !self.sack_ok && self.snd_una == self.high_seq {
                Branch::LossUndoRenoAtHigh
            } else {
                Branch::LossUndoOther
            });
            self.tcp_undo_cwnd_reduction_on(cx, true, kind, ev);
            cx.mib.inc(Mib::LossUndo);
            if frto_undo {
                cx.mib.inc(Mib::SpuriousRtos);
            }
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

/// One test per decision of the undo machinery, on hand-built states with the kernel's values
/// (`super::test_util`): 10 MSS-sized segments sent at t=0 with cwnd 10, a reduction to
/// ssthresh 7 (CUBIC, 10·717/1024), `prior_ssthresh` `TCP_INFINITE_SSTHRESH` (the reduction
/// came from slow start), TSvals = send time + 1. Kernel code as of 6.18 (net/ipv4/tcp_input.c)
/// unless the test names an older commit.
#[cfg(test)]
mod tests {
    use super::super::test_util::{cfg, ts, with_tsecr};
    use super::super::Cx;
    use crate::config::Config;
    use crate::profile::Profile;
    use crate::state::*;

    /// The fast recovery `tcp_enter_recovery()` starts from slow start at cwnd 10 with the 10
    /// segments of the first flight out (`prior_cwnd` 10, `prior_ssthresh` =
    /// `tcp_current_ssthresh()` = `TCP_INFINITE_SSTHRESH`, ssthresh 7, `undo_marker` =
    /// `snd_una` = 1, `undo_retrans` -1, `high_seq` = `snd_nxt` = 11), PRR having kept cwnd at 7.
    fn in_recovery(cfg: &Config, sack: bool) -> Sender {
        let mut s = Sender::for_test(cfg, sack, 10);
        s.ca_state = CaState::Recovery;
        s.prior_cwnd = 10;
        s.prior_ssthresh = TCP_INFINITE_SSTHRESH;
        s.ssthresh = 7;
        s.cwnd = 7;
        s.undo_marker = 1;
        s.undo_retrans = -1;
        s.high_seq = 11;
        s
    }

    /// The same recovery once everything up to `high_seq` is cumulatively ACKed (snd_una 11).
    fn recovery_done(cfg: &Config, sack: bool) -> Sender {
        let mut s = in_recovery(cfg, sack);
        s.snd_una = 11;
        s.packets_out = 0;
        s
    }

    fn packet_delayed(prof: &Profile, s: &Sender, tsecr: Option<u32>) -> bool {
        let cfg = cfg();
        let cx = with_tsecr(Cx::new(&cfg, prof, 400, false), tsecr);
        s.tcp_packet_delayed(&cx)
    }

    /// `tcp_packet_delayed()` before bc9f38c8328e (≤ 5.1, the 2005 code): `!retrans_stamp ||
    /// tcp_tsopt_ecr_before(retrans_stamp)` — a zero stamp (nothing retransmitted) is delayed,
    /// with or without SACK, with or without a TS option.
    #[test]
    fn packet_delayed_pre2019_zero_stamp_is_delayed() {
        let cfg = cfg();
        let p = Profile::linux_5_1();
        for sack in [true, false] {
            let mut s = recovery_done(&cfg, sack);
            s.retrans_stamp = 0;
            assert!(packet_delayed(&p, &s, None), "sack {sack}");
            assert!(packet_delayed(&p, &s, Some(ts(60))), "sack {sack}");
        }
    }

    /// bc9f38c8328e (v5.2) `retrans_stamp && tcp_tsopt_ecr_before(retrans_stamp)`: a zero stamp
    /// is no evidence (the TSQ-held SACK recovery is never undone: I1p on linux-6.6).
    #[test]
    fn packet_delayed_bc9f38_zero_stamp_is_not_delayed() {
        let cfg = cfg();
        let p = Profile::linux_6_6();
        let mut s = in_recovery(&cfg, true);
        s.retrans_stamp = 0;
        assert!(!packet_delayed(&p, &s, None));
        assert!(!packet_delayed(&p, &s, Some(ts(0))));
    }

    /// e37ab7373696 (v6.12-rc3): a zero stamp is "nothing was retransmitted" = delayed (except
    /// in SYN_SENT, not modelled) — also for a non-SACK flow at or past `high_seq`, whose stamp
    /// `tcp_is_non_sack_preventing_reopen()` cleared: the non-SACK spurious undo of linux-6.15.
    #[test]
    fn packet_delayed_e37ab7_zero_stamp_is_delayed() {
        let cfg = cfg();
        let p = Profile::linux_6_15();
        for (sack, snd_una) in [(true, 5), (false, 5), (false, 11), (false, 12)] {
            let mut s = in_recovery(&cfg, sack);
            s.snd_una = snd_una;
            s.retrans_stamp = 0;
            assert!(
                packet_delayed(&p, &s, None),
                "sack {sack} snd_una {snd_una}"
            );
        }
    }

    /// d0fa59897e04 (v6.16): as e37ab7373696, except that a non-SACK flow's zero stamp at
    /// `!before(snd_una, high_seq)` is no evidence (`tcp_is_non_sack_preventing_reopen()`
    /// cleared it after retransmitting). Below `high_seq`, or with SACK, zero still = delayed.
    #[test]
    fn packet_delayed_d0fa59_non_sack_zero_stamp_at_high_seq_is_not_delayed() {
        let cfg = cfg();
        let p = Profile::linux_6_18();
        for (sack, snd_una, delayed) in [
            (false, 10, true),
            (false, 11, false),
            (false, 12, false),
            (true, 11, true),
            (true, 12, true),
        ] {
            let mut s = in_recovery(&cfg, sack);
            s.snd_una = snd_una;
            s.retrans_stamp = 0;
            assert_eq!(
                packet_delayed(&p, &s, None),
                delayed,
                "sack {sack} snd_una {snd_una}"
            );
        }
    }

    /// Every variant with a stamp set (first retransmission at t=60, `retrans_stamp` = TSval 61):
    /// delayed iff the ACK echoes a TSval before it (`tcp_tsopt_ecr_before()`: TS option seen,
    /// TSecr nonzero, `before(rcv_tsecr, retrans_stamp)`). d0fa59897e04 tests the stamp first, so
    /// its non-SACK clause does not apply to a set stamp.
    #[test]
    fn packet_delayed_set_stamp_needs_an_earlier_echo() {
        let cfg = cfg();
        for p in [
            Profile::linux_5_1(),
            Profile::linux_6_6(),
            Profile::linux_6_15(),
            Profile::linux_6_18(),
        ] {
            for sack in [true, false] {
                let mut s = recovery_done(&cfg, sack);
                s.retrans_stamp = ts(60);
                assert!(
                    packet_delayed(&p, &s, Some(ts(0))),
                    "{} sack {sack}: echo of the original",
                    p.name
                );
                assert!(
                    packet_delayed(&p, &s, Some(ts(59))),
                    "{} sack {sack}",
                    p.name
                );
                assert!(
                    !packet_delayed(&p, &s, Some(ts(60))),
                    "{} sack {sack}: echo of the retransmission",
                    p.name
                );
                assert!(
                    !packet_delayed(&p, &s, Some(ts(61))),
                    "{} sack {sack}",
                    p.name
                );
                assert!(
                    !packet_delayed(&p, &s, Some(0)),
                    "{} sack {sack}: TSecr 0 is no echo",
                    p.name
                );
                assert!(
                    !packet_delayed(&p, &s, None),
                    "{} sack {sack}: no TS option",
                    p.name
                );
            }
        }
    }

    /// `tcp_packet_delayed_ts()` (F1): linux-6.18 takes an echo older than `retrans_stamp` for
    /// the whole episode; the fix only when the ACKed head's retransmission is the one
    /// un-DSACKed retransmission (`echo_proves_retrans`) or none is left (`undo_retrans <= 0`).
    /// An echo of the retransmission itself is never "delayed".
    #[test]
    fn packet_delayed_ts_scope_f1() {
        let cfg = cfg();
        let (old, fix) = (Profile::linux_6_18(), Profile::linux_7_2_f1_fix());
        let mut s = recovery_done(&cfg, true);
        s.retrans_stamp = ts(60);
        let judge = |p: &Profile, s: &Sender, proves: bool, tsecr: u32| {
            let mut cx = with_tsecr(Cx::new(&cfg, p, 400, false), Some(tsecr));
            cx.echo_proves_retrans = proves;
            (s.tcp_packet_delayed(&cx), s.tcp_may_undo(&cx))
        };
        s.undo_retrans = 2; // two retransmissions, neither DSACKed: F1's situation
        assert_eq!(
            judge(&old, &s, false, ts(0)),
            (true, true),
            "6.18: one echo undoes the episode"
        );
        assert_eq!(
            judge(&fix, &s, false, ts(0)),
            (false, false),
            "fix: the other retransmission is unproven"
        );
        s.undo_retrans = 1; // the head's retransmission is the only one: a spurious episode
        assert_eq!(
            judge(&fix, &s, true, ts(0)),
            (true, true),
            "fix: Eifel undo of a spurious episode"
        );
        assert_eq!(
            judge(&fix, &s, true, ts(60)),
            (false, false),
            "the echo of the retransmission proves nothing"
        );
        s.undo_retrans = 0; // every retransmission DSACKed
        assert!(judge(&fix, &s, false, ts(60)).1, "DSACK undo unchanged");
        s.undo_retrans = -1; // none counted in the episode: as before
        assert_eq!(judge(&fix, &s, false, ts(0)), (true, true));
    }

    /// `tcp_may_undo()`: `undo_marker && (!undo_retrans || tcp_packet_delayed())`. No marker, no
    /// undo; `undo_retrans` 0 (every retransmission DSACKed) is enough without any timestamp;
    /// otherwise — including -1, `tcp_init_undo()`'s "nothing in flight" — it takes
    /// `tcp_packet_delayed()`.
    #[test]
    fn may_undo_marker_and_dsacks_or_delayed() {
        let cfg = cfg();
        let p = Profile::linux_6_18();
        let may =
            |s: &Sender, tsecr| s.tcp_may_undo(&with_tsecr(Cx::new(&cfg, &p, 400, false), tsecr));
        let mut s = in_recovery(&cfg, true);
        s.retrans_stamp = ts(60);
        s.undo_retrans = 0;
        assert!(may(&s, None), "all retransmissions DSACKed");
        s.undo_marker = 0;
        assert!(!may(&s, Some(ts(0))), "no undo_marker: nothing to undo");
        s.undo_marker = 1;
        for undo_retrans in [1, -1] {
            s.undo_retrans = undo_retrans;
            assert!(may(&s, Some(ts(0))), "undo_retrans {undo_retrans}: delayed");
            assert!(
                !may(&s, Some(ts(60))),
                "undo_retrans {undo_retrans}: not delayed"
            );
        }
    }

    /// `tcp_try_undo_recovery()` in Recovery at `snd_una >= high_seq`, the TSecr of the ACK
    /// (TSval 1, the original) older than the first retransmission (61): a full undo
    /// (TcpExtTCPFullUndo) through `tcp_undo_cwnd_reduction()` — cwnd `max(7, prior_cwnd 10)` =
    /// 10, ssthresh back to `prior_ssthresh` — then Open, `is_sack_reneg` cleared, returns false.
    #[test]
    fn try_undo_recovery_full_undo_in_recovery() {
        let cfg = cfg();
        let p = Profile::linux_6_18();
        let mut s = recovery_done(&cfg, true);
        s.retrans_stamp = ts(60);
        s.undo_retrans = 1;
        s.is_sack_reneg = true;
        let cx = with_tsecr(Cx::new(&cfg, &p, 110, false), Some(ts(0)));
        assert!(!s.tcp_try_undo_recovery(&cx));
        assert_eq!(
            (s.ca_state, s.cwnd, s.ssthresh, s.undo_marker),
            (CaState::Open, 10, TCP_INFINITE_SSTHRESH, 0)
        );
        assert!(!s.is_sack_reneg);
        let u = s.ghost.ev.undos[0];
        assert_eq!(
            (
                u.kind,
                u.ca_state,
                u.marker,
                u.cwnd_before,
                u.ssthresh_before
            ),
            (UndoKind::Full, CaState::Recovery, 1, 7, 7)
        );
    }

    /// `tcp_try_undo_recovery()` called from `tcp_process_loss()` (Loss, `recovered`): the same
    /// undo counted as TcpExtTCPLossUndo, then Open.
    #[test]
    fn try_undo_recovery_in_loss_is_a_loss_undo() {
        let cfg = cfg();
        let p = Profile::linux_6_18();
        let mut s = recovery_done(&cfg, true);
        s.ca_state = CaState::Loss;
        s.cwnd = 2;
        s.undo_retrans = 0;
        let cx = Cx::new(&cfg, &p, 400, false);
        assert!(!s.tcp_try_undo_recovery(&cx));
        assert_eq!(
            (s.ca_state, s.cwnd, s.ssthresh),
            (CaState::Open, 10, TCP_INFINITE_SSTHRESH)
        );
        assert_eq!(s.ghost.ev.undos[0].kind, UndoKind::LossRecovered);
    }

    /// `tcp_try_undo_recovery()` without an undo: `reo_wnd_persist` counts one recovery down
    /// (1f255691d8a4), cwnd/ssthresh stay, the state opens.
    #[test]
    fn try_undo_recovery_without_undo_counts_reo_wnd_persist_down() {
        let cfg = cfg();
        let p = Profile::linux_6_18();
        let mut s = recovery_done(&cfg, true);
        s.retrans_stamp = ts(60);
        s.undo_retrans = 1;
        s.rack.reo_wnd_persist = 3;
        let cx = with_tsecr(Cx::new(&cfg, &p, 110, false), Some(ts(60)));
        assert!(!s.tcp_try_undo_recovery(&cx));
        assert_eq!(
            (s.ca_state, s.cwnd, s.ssthresh, s.undo_marker),
            (CaState::Open, 7, 7, 1)
        );
        assert_eq!(s.rack.reo_wnd_persist, 2);
        assert!(s.ghost.ev.undos.is_empty());
    }

    /// `tcp_try_undo_recovery()` on a non-SACK flow at `snd_una == high_seq`: the undo happens,
    /// then `tcp_is_non_sack_preventing_reopen()` holds the state (RFC 6582: until something
    /// above `high_seq` is ACKed), clearing `retrans_stamp` when no retransmission is left
    /// (`tcp_any_retrans_done()`: `retrans_out` 0 and the head never retransmitted); returns
    /// true. Past `high_seq` there is no hold. A head with EVER_RETRANS keeps the stamp.
    #[test]
    fn try_undo_recovery_non_sack_hold_at_high_seq() {
        let cfg = cfg();
        let p = Profile::linux_6_18();
        let cx = with_tsecr(Cx::new(&cfg, &p, 110, false), Some(ts(0)));
        // ACK 11 == high_seq; segment 11 (index 10) was sent as new data at t=50.
        let held = || {
            let mut s = recovery_done(&cfg, false);
            s.snd_nxt = 12;
            s.packets_out = 1;
            s.segs[10].xmit = 50;
            s.retrans_stamp = ts(60);
            s.undo_retrans = 1;
            s
        };
        let mut s = held();
        assert!(s.tcp_try_undo_recovery(&cx));
        assert_eq!(
            (s.ca_state, s.cwnd, s.ssthresh),
            (CaState::Recovery, 10, TCP_INFINITE_SSTHRESH),
            "undone, state held"
        );
        assert_eq!(s.ghost.ev.undos[0].kind, UndoKind::Full);
        assert!(s.ghost.ev.nonsack_hold);
        assert_eq!(s.retrans_stamp, 0);

        let mut s = held();
        s.add_tags(10, tag::E);
        assert!(s.tcp_try_undo_recovery(&cx));
        assert_eq!(
            s.retrans_stamp,
            ts(60),
            "the head was retransmitted: stamp kept"
        );

        let mut s = held();
        s.snd_una = 12;
        s.packets_out = 0;
        assert!(!s.tcp_try_undo_recovery(&cx));
        assert_eq!(s.ca_state, CaState::Open, "past high_seq: no hold");
        assert!(!s.ghost.ev.nonsack_hold);
    }

    /// The Loss state after the first RTO (t=252) of the 10 segments sent at t=0: everything
    /// LOST, the head retransmitted (`retrans_stamp` = TSval 253, `undo_retrans` 1), `prior_cwnd`
    /// 10, `prior_ssthresh` `TCP_INFINITE_SSTHRESH`, ssthresh 7, cwnd 1, `icsk_retransmits` 1.
    fn after_rto(cfg: &Config, sack: bool) -> Sender {
        let mut s = Sender::for_test(cfg, sack, 10);
        s.ca_state = CaState::Loss;
        for i in 0..10 {
            s.add_tags(i, tag::L);
        }
        s.add_tags(0, tag::RETRANS);
        s.segs[0].xmit = 252;
        s.total_retrans = 1;
        s.retrans_stamp = ts(252);
        s.undo_marker = 1;
        s.undo_retrans = 1;
        s.prior_cwnd = 10;
        s.prior_ssthresh = TCP_INFINITE_SSTHRESH;
        s.ssthresh = 7;
        s.cwnd = 1;
        s.icsk_retransmits = 1;
        s.icsk_backoff = 1;
        s.high_seq = 11;
        s.frto = true;
        s
    }

    /// `tcp_try_undo_loss(sk, true)`: F-RTO proved the RTO spurious (step 3b) — undo without
    /// `tcp_may_undo()` (no TS option here), LOST marks cleared (`lost_out` 0), cwnd 10,
    /// ssthresh `TCP_INFINITE_SSTHRESH`, `icsk_retransmits` 0, Open (TcpExtTCPSpuriousRTOs).
    #[test]
    fn try_undo_loss_frto_undo_needs_no_evidence() {
        let cfg = cfg();
        let p = Profile::linux_6_18();
        for sack in [true, false] {
            let mut s = after_rto(&cfg, sack);
            let cx = Cx::new(&cfg, &p, 262, false);
            assert!(!s.tcp_may_undo(&cx));
            assert!(s.tcp_try_undo_loss(&cx, true));
            assert_eq!(
                (s.ca_state, s.cwnd, s.ssthresh, s.undo_marker),
                (CaState::Open, 10, TCP_INFINITE_SSTHRESH, 0),
                "sack {sack}"
            );
            assert_eq!((s.lost_out, s.icsk_retransmits), (0, 0));
            assert!(s.tagged(tag::L).is_empty());
            assert_eq!(s.ghost.ev.undos[0].kind, UndoKind::Frto);
        }
    }

    /// `tcp_try_undo_loss(sk, false)`: only through `tcp_may_undo()`. An ACK echoing the
    /// retransmission's TSval (253) changes nothing; one echoing the original's (1) undoes
    /// (TcpExtTCPLossUndo) and a SACK flow opens.
    #[test]
    fn try_undo_loss_without_frto_needs_may_undo() {
        let cfg = cfg();
        let p = Profile::linux_6_18();
        let mut s = after_rto(&cfg, true);
        let before = s.clone();
        assert!(!s.tcp_try_undo_loss(
            &with_tsecr(Cx::new(&cfg, &p, 302, false), Some(ts(252))),
            false
        ));
        assert_eq!(s, before);
        assert!(s.tcp_try_undo_loss(
            &with_tsecr(Cx::new(&cfg, &p, 302, false), Some(ts(0))),
            false
        ));
        assert_eq!(
            (s.ca_state, s.cwnd, s.ssthresh, s.lost_out),
            (CaState::Open, 10, TCP_INFINITE_SSTHRESH, 0)
        );
        assert_eq!(s.ghost.ev.undos[0].kind, UndoKind::Loss);
    }

    /// `tcp_try_undo_loss(sk, false)` on a non-SACK flow below `high_seq`: undone, but only
    /// `frto_undo || tcp_is_sack()` opens the state — it stays in Loss (returns true).
    #[test]
    fn try_undo_loss_non_sack_timestamp_undo_stays_in_loss() {
        let cfg = cfg();
        let p = Profile::linux_6_18();
        let mut s = after_rto(&cfg, false);
        assert!(s.tcp_try_undo_loss(
            &with_tsecr(Cx::new(&cfg, &p, 302, false), Some(ts(0))),
            false
        ));
        assert_eq!(
            (s.ca_state, s.cwnd, s.ssthresh, s.lost_out),
            (CaState::Loss, 10, TCP_INFINITE_SSTHRESH, 0)
        );
        assert!(!s.ghost.ev.nonsack_hold);
    }

    /// 686dc2db2a0f (v6.0): `tcp_try_undo_loss()` calls `tcp_is_non_sack_preventing_reopen()`,
    /// so a non-SACK F-RTO undo at `snd_una == high_seq` stays in Loss (and clears
    /// `retrans_stamp`, nothing retransmitted being left); before it (linux-5.1) the state opens
    /// at `high_seq` (I14).
    #[test]
    fn try_undo_loss_non_sack_hold_686dc2db2a0f() {
        let cfg = cfg();
        for (p, held) in [(Profile::linux_6_18(), true), (Profile::linux_5_1(), false)] {
            let mut s = after_rto(&cfg, false);
            // ACK 11 == high_seq: everything cumulatively ACKed.
            for i in 0..10 {
                s.segs[i] = Seg::default();
            }
            (s.snd_una, s.packets_out, s.lost_out, s.retrans_out) = (11, 0, 0, 0);
            let cx = Cx::new(&cfg, &p, 302, false);
            assert!(s.tcp_try_undo_loss(&cx, true));
            assert_eq!(s.cwnd, 10, "{}", p.name);
            assert_eq!(
                s.ca_state,
                if held { CaState::Loss } else { CaState::Open },
                "{}",
                p.name
            );
            assert_eq!(s.ghost.ev.nonsack_hold, held, "{}", p.name);
            assert_eq!(
                s.retrans_stamp,
                if held { 0 } else { ts(252) },
                "{}",
                p.name
            );
        }
    }

    /// A SACK recovery after a partial ACK: the ACK 3 (TSecr 1: an original) covered segments
    /// 1-2 (segment 1 retransmitted at t=60, `retrans_stamp` 61); segment 6 SACKed, segment 4
    /// LOST. `prior_snd_una` 1.
    fn partial_ack(cfg: &Config) -> Sender {
        let mut s = in_recovery(cfg, true);
        s.snd_una = 3;
        s.packets_out = 8;
        s.segs[0] = Seg::default();
        s.segs[1] = Seg::default();
        s.add_tags(5, tag::S | tag::T);
        s.add_tags(3, tag::L);
        s.retrans_stamp = ts(60);
        s.undo_retrans = 1;
        s
    }

    /// `tcp_try_undo_partial()` with a retransmission still in flight (`retrans_out` 1): the
    /// hole was filled by a delayed original, so reordering is recorded
    /// (`tcp_check_sack_reordering(prior_snd_una)`: fack 7 − 1 = 6 > 3 → `reordering` 6,
    /// `reord_seen` 1) but nothing is undone; returns true (the ACK is not processed further).
    #[test]
    fn try_undo_partial_waits_while_retransmissions_are_out() {
        let cfg = cfg();
        let p = Profile::linux_6_18();
        let mut s = partial_ack(&cfg);
        s.add_tags(3, tag::RETRANS);
        s.segs[3].xmit = 70;
        let mut cx = with_tsecr(Cx::new(&cfg, &p, 110, false), Some(ts(0)));
        assert!(s.tcp_try_undo_partial(&mut cx, 1));
        assert_eq!(
            (s.ca_state, s.cwnd, s.ssthresh, s.undo_marker),
            (CaState::Recovery, 7, 7, 1)
        );
        assert!(s.ghost.ev.undos.is_empty());
        assert_eq!((s.reordering, s.reord_seen), (6, 1));
    }

    /// `tcp_try_undo_partial()` with nothing retransmitted in flight: undo with the LOST marks
    /// cleared (TcpExtTCPPartialUndo), `retrans_stamp` cleared (the head was never
    /// retransmitted), `tcp_try_keep_open()`: Disorder (one segment SACKed), `high_seq` =
    /// `snd_nxt`; returns false.
    #[test]
    fn try_undo_partial_undoes_with_no_retransmission_out() {
        let cfg = cfg();
        let p = Profile::linux_6_18();
        let mut s = partial_ack(&cfg);
        let mut cx = with_tsecr(Cx::new(&cfg, &p, 110, false), Some(ts(0)));
        assert!(!s.tcp_try_undo_partial(&mut cx, 1));
        assert_eq!(
            (s.ca_state, s.cwnd, s.ssthresh, s.undo_marker),
            (CaState::Disorder, 10, TCP_INFINITE_SSTHRESH, 0)
        );
        assert_eq!(s.ghost.ev.undos[0].kind, UndoKind::Partial);
        assert_eq!((s.lost_out, s.retrans_stamp, s.high_seq), (0, 0, 11));
        assert!(s.tagged(tag::L).is_empty());
        assert_eq!((s.reordering, s.reord_seen), (6, 1));
    }

    /// `tcp_try_undo_partial()` when the ACK echoes the retransmission: not delayed, nothing
    /// happens (no reordering recorded either).
    #[test]
    fn try_undo_partial_not_delayed() {
        let cfg = cfg();
        let p = Profile::linux_6_18();
        let mut s = partial_ack(&cfg);
        let before = s.clone();
        let mut cx = with_tsecr(Cx::new(&cfg, &p, 110, false), Some(ts(60)));
        assert!(!s.tcp_try_undo_partial(&mut cx, 1));
        assert_eq!(s, before);
    }

    /// `tcp_try_undo_dsack()`: `undo_marker && !undo_retrans` — every retransmission of the
    /// episode was DSACKed: undo without unmarking losses (the LOST segment stays LOST),
    /// `reo_wnd_persist` + 1 capped at `TCP_RACK_RECOVERY_THRESH` (16); TcpExtTCPDSACKUndo.
    #[test]
    fn try_undo_dsack_when_undo_retrans_is_zero() {
        let cfg = cfg();
        let p = Profile::linux_6_18();
        let cx = Cx::new(&cfg, &p, 110, false);
        for (persist, after) in [(0, 1), (15, 16), (16, 16)] {
            let mut s = in_recovery(&cfg, true);
            s.add_tags(4, tag::L);
            s.undo_retrans = 0;
            s.rack.reo_wnd_persist = persist;
            assert!(s.tcp_try_undo_dsack(&cx));
            assert_eq!(
                (s.cwnd, s.ssthresh, s.undo_marker, s.ca_state),
                (10, TCP_INFINITE_SSTHRESH, 0, CaState::Recovery)
            );
            assert_eq!((s.lost_out, s.tagged(tag::L)), (1, vec![4]));
            assert_eq!(s.rack.reo_wnd_persist, after);
            assert_eq!(s.ghost.ev.undos[0].kind, UndoKind::Dsack);
        }
        for (marker, undo_retrans) in [(1, 1), (1, -1), (0, 0)] {
            let mut s = in_recovery(&cfg, true);
            (s.undo_marker, s.undo_retrans) = (marker, undo_retrans);
            assert!(
                !s.tcp_try_undo_dsack(&cx),
                "undo_marker {marker} undo_retrans {undo_retrans}"
            );
            assert_eq!(s.cwnd, 7);
        }
    }

    /// A DSACK of an already cumulatively ACKed retransmission brings `undo_retrans` to 0 and
    /// undoes, through `tcp_ack()`: after a recovery that ended without undo (no timestamp
    /// evidence, `undo_retrans` 1; `tcp_end_cwnd_reduction()` left cwnd = ssthresh = 7 and the
    /// marker set), ACK 11 with DSACK 1:2 arrives in Open with nothing outstanding.
    /// `tcp_check_dsack()`'s "dumb counting" (4f884f396276: `undo_retrans -= dup_segs` for a
    /// DSACK at or below `prior_snd_una`, above `undo_marker`) gives 0; the NO_QUEUE path calls
    /// `tcp_fastretrans_alert()` for the DSACKing ACK, whose Open branch calls
    /// `tcp_try_undo_dsack()`: cwnd 10, ssthresh `TCP_INFINITE_SSTHRESH`. With two
    /// retransmissions in the episode one DSACK leaves `undo_retrans` 1: no undo. A DSACK the
    /// sender never retransmitted that much for (`dsack_dups > total_retrans`) is ignored.
    #[test]
    fn dsack_of_acked_retransmission_counts_undo_retrans_to_zero() {
        use super::super::ack::AckSeg;
        let cfg = cfg();
        let p = Profile::linux_6_18();
        let ended = |undo_retrans: i32, total_retrans: u32| {
            let mut s = recovery_done(&cfg, true);
            s.ca_state = CaState::Open;
            s.undo_retrans = undo_retrans;
            s.total_retrans = total_retrans;
            s
        };
        let dsack = AckSeg {
            ack: 11,
            sacks: [(1, 2)].as_slice().into(),
            ece: false,
            tsecr: Some(ts(60)),
        };
        let mut s = ended(1, 1);
        s.tcp_ack(&mut Cx::new(&cfg, &p, 110, false), &dsack);
        assert_eq!((s.undo_retrans, s.undo_marker, s.dsack_dups), (0, 0, 1));
        assert_eq!(
            (s.ca_state, s.cwnd, s.ssthresh),
            (CaState::Open, 10, TCP_INFINITE_SSTHRESH)
        );
        let u = s.ghost.ev.undos[0];
        assert_eq!(
            (
                u.kind,
                u.ca_state,
                u.cwnd_before,
                u.cwnd_after,
                u.ssthresh_after
            ),
            (UndoKind::Dsack, CaState::Open, 7, 10, TCP_INFINITE_SSTHRESH)
        );

        let mut s = ended(2, 2);
        s.tcp_ack(&mut Cx::new(&cfg, &p, 110, false), &dsack);
        assert_eq!(
            (s.undo_retrans, s.undo_marker, s.cwnd, s.ssthresh),
            (1, 1, 7, 7)
        );
        assert!(s.ghost.ev.undos.is_empty());

        let mut s = ended(1, 0);
        s.tcp_ack(&mut Cx::new(&cfg, &p, 110, false), &dsack);
        assert_eq!(
            (s.undo_retrans, s.undo_marker, s.cwnd),
            (1, 1, 7),
            "dubious DSACK ignored"
        );
    }

    /// `tcp_undo_cwnd_reduction()` with `prior_ssthresh` set: cwnd = `undo_cwnd()` =
    /// `tcp_reno_undo_cwnd()` = `max(cwnd, prior_cwnd)` (CUBIC's `.undo_cwnd` too), ssthresh
    /// = `prior_ssthresh` if larger (then `tcp_ecn_withdraw_cwr()`), `undo_marker` 0,
    /// `rack.advanced` set ("force RACK to re-exam losses").
    #[test]
    fn undo_cwnd_reduction_restores_prior_values() {
        let cfg = cfg();
        let p = Profile::linux_6_18();
        let cx = Cx::new(&cfg, &p, 110, false);
        // (cwnd, prior_ssthresh) → (cwnd, ssthresh, ecn_queue_cwr) after.
        for (cwnd, prior_ssthresh, want) in [
            (5, TCP_INFINITE_SSTHRESH, (10, TCP_INFINITE_SSTHRESH, false)),
            (
                12,
                TCP_INFINITE_SSTHRESH,
                (12, TCP_INFINITE_SSTHRESH, false),
            ),
            (5, 14, (10, 14, false)),
            (5, 5, (10, 7, true)),
        ] {
            let mut s = in_recovery(&cfg, true);
            (s.cwnd, s.prior_ssthresh, s.ecn_queue_cwr) = (cwnd, prior_ssthresh, true);
            s.tcp_undo_cwnd_reduction(&cx, false, UndoKind::Full);
            assert_eq!(
                (s.cwnd, s.ssthresh, s.ecn_queue_cwr),
                want,
                "cwnd {cwnd} prior_ssthresh {prior_ssthresh}"
            );
            assert_eq!(s.undo_marker, 0);
            assert!(s.rack.advanced);
            let u = s.ghost.ev.undos[0];
            assert_eq!(
                (
                    u.marker,
                    u.prior_cwnd,
                    u.prior_ssthresh,
                    u.cwnd_before,
                    u.ssthresh_before
                ),
                (1, 10, prior_ssthresh, cwnd, 7)
            );
        }
    }

    /// `tcp_undo_cwnd_reduction()` with `prior_ssthresh` 0 (an ECE reduction, `tcp_enter_cwr()`
    /// or ECE in `tcp_fastretrans_alert()`): cwnd and ssthresh stay reduced; only the marker is
    /// cleared and RACK re-armed. `unmark_loss` clears every LOST mark and `lost_out`.
    #[test]
    fn undo_cwnd_reduction_prior_ssthresh_zero_restores_nothing() {
        let cfg = cfg();
        let p = Profile::linux_6_18();
        let cx = Cx::new(&cfg, &p, 110, false);
        for unmark in [false, true] {
            let mut s = in_recovery(&cfg, true);
            s.prior_ssthresh = 0;
            s.add_tags(2, tag::L);
            s.add_tags(3, tag::L);
            s.ghost.last_reduction = Some((11, ReductionKind::Recovery));
            s.tcp_undo_cwnd_reduction(&cx, unmark, UndoKind::Dsack);
            assert_eq!((s.cwnd, s.ssthresh, s.undo_marker), (7, 7, 0));
            assert!(s.rack.advanced);
            assert_eq!(
                s.ghost.last_reduction,
                Some((11, ReductionKind::Recovery)),
                "the reduction stands"
            );
            assert_eq!(s.lost_out, if unmark { 0 } else { 2 });
            assert_eq!(s.tagged(tag::L), if unmark { vec![] } else { vec![2, 3] });
        }
    }

    /// `tcp_init_undo()` since 0ec986ed7bab (v6.10): `undo_retrans` = `retrans_out`, plus one for
    /// a TLP retransmission still in flight (`tlp_high_seq && tlp_retrans`), and -1 instead of 0
    /// ("undo_retrans == 0 means can undo now"); `undo_marker` = `snd_una`.
    #[test]
    fn init_undo_counts_an_in_flight_tlp_retransmission_0ec986() {
        let cfg = cfg();
        let p = Profile::linux_6_18();
        let cx = Cx::new(&cfg, &p, 110, false);
        for (retrans_out, tlp_high_seq, tlp_retrans, want) in [
            (0, 11, true, 1),
            (2, 11, true, 3),
            (0, 0, true, -1),
            (0, 11, false, -1),
            (0, 0, false, -1),
            (2, 0, false, 2),
        ] {
            let mut s = Sender::for_test(&cfg, true, 10);
            s.snd_una = 3;
            (s.retrans_out, s.tlp_high_seq, s.tlp_retrans) =
                (retrans_out, tlp_high_seq, tlp_retrans);
            s.tcp_init_undo(&cx);
            assert_eq!(
                (s.undo_marker, s.undo_retrans),
                (3, want),
                "retrans_out {retrans_out} tlp_high_seq {tlp_high_seq} tlp_retrans {tlp_retrans}"
            );
        }
    }

    /// `tcp_init_undo()` before 0ec986ed7bab (`undo_retrans = retrans_out ? : -1`): the TLP
    /// retransmission is not counted, so its DSACK alone can undo a real loss.
    #[test]
    fn init_undo_before_0ec986_ignores_the_tlp_retransmission() {
        let cfg = cfg();
        let p = Profile::pre_0ec986();
        let cx = Cx::new(&cfg, &p, 110, false);
        for (retrans_out, want) in [(0, -1), (2, 2)] {
            let mut s = Sender::for_test(&cfg, true, 10);
            (s.retrans_out, s.tlp_high_seq, s.tlp_retrans) = (retrans_out, 11, true);
            s.tcp_init_undo(&cx);
            assert_eq!((s.undo_marker, s.undo_retrans), (1, want));
        }
    }
}
