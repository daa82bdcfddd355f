//! RTO and F-RTO: `tcp_retransmit_timer()` (tcp_timer.c), `tcp_enter_loss()`,
//! `tcp_timeout_mark_lost()`, `tcp_process_loss()` (tcp_input.c, RFC 5682 for F-RTO).

use super::ack::{flag, Rexmit};
use super::Cx;
use crate::cc::CaEvent;
use crate::decision::Branch;
use crate::mib::Mib;
use crate::profile::{mutant, EnterLossGuard, LossUndoAcks, RtoRetransReset};
use crate::seq::{after, before};
use crate::state::*;

impl Sender {
    /// `tcp_retransmit_timer()`: the RTO fired (the zero-window and ETIMEDOUT paths are not
    /// modelled). Counts TcpExtTCPTimeouts, and on the first RTO since progress what failed:
    /// TCPSackRecoveryFail / TCPRenoRecoveryFail (Recovery), TCPLossFailures (Loss),
    /// TCPSackFailures / TCPRenoFailures (Disorder, or anything SACKed).
    pub fn tcp_retransmit_timer(&mut self, cx: &mut Cx) {
        if self.packets_out == 0 {
            return;
        }
        cx.mib.inc(Mib::Timeouts);
        if self.icsk_retransmits == 0 {
            let failed = match (self.ca_state, self.sack_ok) {
                (CaState::Recovery, true) => Some(Mib::SackRecoveryFail),
                (CaState::Recovery, false) => Some(Mib::RenoRecoveryFail),
                (CaState::Loss, _) => Some(Mib::LossFailures),
                (s, sack) if s == CaState::Disorder || self.sacked_out != 0 => Some(if sack {
                    Mib::SackFailures
                } else {
                    Mib::RenoFailures
                }),
                _ => None,
            };
            if let Some(m) = failed {
                cx.mib.inc(m);
            }
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
    /// (all of them for non-SACK flows, which never advance RACK); SACK reneging marks all
    /// (TcpExtTCPSACKReneging).
    pub fn tcp_timeout_mark_lost(&mut self, cx: &mut Cx) {
        let q = self.rtx_queue(cx.cfg);
        if q.is_empty() {
            return;
        }
        let is_reneg = self.segs[q.start as usize].tags & tag::S != 0;
        if is_reneg {
            cx.mib.inc(Mib::SackReneging);
            self.sacked_out = 0;
            self.is_sack_reneg = true;
        } else if !self.sack_ok {
            self.tcp_reset_reno_sack();
        }
        for i in q.clone() {
            if is_reneg {
                self.segs[i as usize].tags &= !tag::S;
            } else if i != q.start
                && self.tcp_rack_skb_timeout(cx, self.segs[i as usize].xmit, 0) > 0
            {
                continue; // recently sent: not marked yet
            }
            self.tcp_mark_skb_lost(cx, i);
        }
    }

    /// The ssthresh guard of `tcp_enter_loss()`: reduce only once per window of data.
    pub fn tcp_enter_loss_may_reduce(&self, cx: &Cx) -> bool {
        cx.took(if self.snd_una == self.high_seq {
            Branch::EnterLossUnaEqHigh
        } else if after(self.snd_una, self.high_seq) {
            Branch::EnterLossUnaAfterHigh
        } else {
            Branch::EnterLossUnaBeforeHigh
        });
        let window_done = match cx.prof.enter_loss_guard {
            EnterLossGuard::SndUnaEqHighSeq => self.snd_una == self.high_seq,
            EnterLossGuard::SndUnaGeHighSeq => !after(self.high_seq, self.snd_una),
        };
        if crate::profile::mutant!(cx.prof, EnterLossAlwaysReduce) {
            return true;
        }
        self.ca_state <= CaState::Disorder
            || window_done
            || (self.ca_state == CaState::Loss && self.icsk_retransmits == 0)
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
        if self
            .ghost
            .ev
            .reductions
            .last()
            .is_some_and(|r| r.kind == ReductionKind::Loss)
        {
            self.ghost.last_reduction = Some((self.high_seq, ReductionKind::Loss));
        }
        self.tlp_high_seq = 0;
        self.tcp_ecn_queue_cwr(cx);
        self.frto = cx.cfg.frto && (new_recovery || self.icsk_retransmits != 0);
        // Ghost (I19): the reference F-RTO judgement starts with the kernel's.
        self.ghost.frto_ref = self.frto;
    }

    /// Ghost (I19): the reference F-RTO judgement on this ACK, run where `tcp_process_loss()`
    /// runs F-RTO and by its rules (RFC 5682 3.1, SACK-enhanced): never-retransmitted data
    /// (S)ACKed (`FLAG_ORIG_SACK_ACKED`, step 3b) proves the RTO spurious, and the undo that
    /// must follow clears `frto_owed` again; after new data went out (step 2b), newly SACKed
    /// data or a duplicate ACK means the loss was real (3a). It differs from the kernel's
    /// `frto` in one rule only: an ACK whose only news is a DSACK is not a duplicate ACK
    /// (d9157f6806d1 "tcp: fix F-RTO may not work correctly when receiving DSACK", v5.18: a
    /// DSACK is evidence of a spurious retransmission, RFC 3708). Step 2b's high_seq update and
    /// its no-new-data fallback are the kernel's own (both clear `frto_ref` with `frto`).
    fn frto_reference(&mut self, cx: &Cx, fl: u32, num_dupack: u32) {
        if !self.ghost.frto_ref {
            return;
        }
        if fl & flag::ORIG_SACK_ACKED != 0 {
            let from = if self.undo_marker != 0 {
                self.undo_marker.wrapping_sub(cx.cfg.isn)
            } else {
                0
            };
            let to = self.high_seq.wrapping_sub(cx.cfg.isn);
            self.ghost.frto_owed = Some((from as u16, to as u16));
        } else if after(self.snd_nxt, self.high_seq) {
            let dupack = num_dupack > 0 && fl & flag::DSACKING_ACK == 0;
            if fl & flag::DATA_SACKED != 0 || dupack {
                self.ghost.frto_ref = false;
            }
        }
    }

    /// `tcp_process_loss()`: ACK processing in Loss, incl. F-RTO (RFC 5682, SACK-enhanced).
    pub fn tcp_process_loss(&mut self, cx: &mut Cx, fl: u32, num_dupack: u32, rexmit: &mut Rexmit) {
        let recovered = !before(self.snd_una, self.high_seq);
        let undo_trigger = match cx.prof.loss_undo_acks {
            LossUndoAcks::SndUnaAdvanced => fl & flag::SND_UNA_ADVANCED != 0,
            LossUndoAcks::AnyAck => true,
        };
        cx.took(if fl & flag::SND_UNA_ADVANCED != 0 {
            Branch::LossUndoAdvanced
        } else {
            Branch::LossUndoNotAdvanced
        });
        let trigger = if fl & flag::SND_UNA_ADVANCED == 0 {
            evidence::DUPACK
        } else {
            0
        };
        if undo_trigger && self.tcp_try_undo_loss_on(cx, false, trigger) {
            return;
        }
        self.frto_reference(cx, fl, num_dupack);
        if self.frto {
            // Step 3.b: never-retransmitted data (S)ACKed: the RTO was spurious.
            if fl & flag::ORIG_SACK_ACKED != 0
                && !mutant!(cx.prof, FrtoNoUndo)
                && self.tcp_try_undo_loss(cx, true)
            {
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
                self.ghost.frto_ref = false;
            }
        }
        if cx.prof.rto_retrans_reset == RtoRetransReset::InProcessLoss
            && (recovered || fl & flag::DATA_ACKED != 0)
        {
            self.icsk_retransmits = 0;
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

/// `tcp_enter_loss()` and `tcp_timeout_mark_lost()` on hand-built states (`super::test_util`):
/// 10 MSS-sized segments sent at t=0, cwnd 10, CUBIC, the RTO at t=252 (`icsk_rto` 63 jiffies).
/// Kernel code as of 6.18 (net/ipv4/tcp_input.c).
#[cfg(test)]
mod tests {
    use super::super::test_util::cfg;
    use super::super::Cx;
    use crate::profile::{EnterLossGuard, Profile};
    use crate::state::*;

    /// `tcp_enter_loss()` on the first RTO from Open (slow start, cwnd 10, ssthresh
    /// `TCP_INFINITE_SSTHRESH`): the guard passes (`state <= Disorder`): `prior_ssthresh` =
    /// `tcp_current_ssthresh()` = `max(ssthresh, 3/4 cwnd)` = `TCP_INFINITE_SSTHRESH`,
    /// `prior_cwnd` 10, ssthresh = CUBIC's `max(10 * 717 / 1024, 2)` = 7, `tcp_init_undo()`
    /// (`undo_marker` 1; `undo_retrans` 1: no regular retransmission yet, but the TLP
    /// retransmission in flight counts, 0ec986ed7bab — it runs before `tlp_high_seq` is
    /// cleared); every segment LOST
    /// (`tcp_timeout_mark_lost()`: RACK has no RTT yet, so all are "timed out"), cwnd =
    /// `tcp_packets_in_flight() + 1` = 1, `snd_cwnd_cnt` 0, Loss, `high_seq` = `snd_nxt` = 11,
    /// `tlp_high_seq` 0 (0ec986ed7bab), F-RTO on (`new_recovery`).
    #[test]
    fn enter_loss_first_rto_from_open() {
        let cfg = cfg();
        let p = Profile::linux_6_18();
        let mut s = Sender::for_test(&cfg, true, 10);
        (s.cwnd_cnt, s.tlp_high_seq, s.tlp_retrans) = (5, 11, true);
        let mut cx = Cx::new(&cfg, &p, 252, false);
        s.tcp_enter_loss(&mut cx);
        assert_eq!(
            (s.ca_state, s.cwnd, s.ssthresh, s.cwnd_cnt),
            (CaState::Loss, 1, 7, 0)
        );
        assert_eq!(
            (s.prior_cwnd, s.prior_ssthresh),
            (10, TCP_INFINITE_SSTHRESH)
        );
        assert_eq!(
            (s.undo_marker, s.undo_retrans),
            (1, 1),
            "0ec986ed7bab: the in-flight TLP retransmission counts"
        );
        assert_eq!((s.lost_out, s.tagged(tag::L).len()), (10, 10));
        assert_eq!((s.high_seq, s.tlp_high_seq), (11, 0));
        assert!(s.frto);
        assert!(s.ghost.ev.entered_loss);
        let r = s.ghost.ev.reductions[0];
        assert_eq!(
            (r.kind, r.from, r.cwnd, r.ssthresh),
            (ReductionKind::Loss, CaState::Open, 10, 7)
        );
    }

    /// A second RTO in the same window (Loss, `snd_una` 1 below `high_seq` 11,
    /// `icsk_retransmits` 1): the "not yet reduced in this window" guard fails, so ssthresh,
    /// `prior_ssthresh`, `prior_cwnd` and the undo state stay; the head's lost retransmission
    /// is counted lost again (`tcp_mark_skb_lost()`: `retrans_out` 0), cwnd = 0 + 1; F-RTO on
    /// again since `icsk_retransmits` is nonzero (RFC 5682 3.2, recurring timeouts).
    #[test]
    fn enter_loss_second_rto_in_same_window_keeps_ssthresh() {
        let cfg = cfg();
        let p = Profile::linux_6_18();
        let mut s = Sender::for_test(&cfg, true, 10);
        s.tcp_enter_loss(&mut Cx::new(&cfg, &p, 252, false));
        s.add_tags(0, tag::RETRANS);
        s.segs[0].xmit = 252;
        (s.undo_retrans, s.icsk_retransmits, s.frto) = (1, 1, false);
        s.ghost.ev = Default::default();
        let mut cx = Cx::new(&cfg, &p, 764, false);
        s.tcp_enter_loss(&mut cx);
        assert_eq!((s.ca_state, s.cwnd, s.ssthresh), (CaState::Loss, 1, 7));
        assert_eq!(
            (
                s.prior_cwnd,
                s.prior_ssthresh,
                s.undo_marker,
                s.undo_retrans
            ),
            (10, TCP_INFINITE_SSTHRESH, 1, 1)
        );
        assert_eq!((s.retrans_out, s.lost_out), (0, 10));
        assert!(s.ghost.ev.reductions.is_empty());
        assert!(s.frto);
    }

    /// An RTO in Loss after an ACK advanced `snd_una` (`icsk_retransmits` reset to 0 by
    /// `tcp_ack()`): the guard's third clause `(Loss && !icsk_retransmits)` reduces again:
    /// `prior_ssthresh` = `tcp_current_ssthresh()` = `max(7, 3/4 · 2)` = 7, `prior_cwnd` 2,
    /// ssthresh = CUBIC `max(2 * 717 / 1024, 2)` = 2 (the RTO reset CUBIC); F-RTO off: neither a
    /// new recovery nor a recurring timeout.
    #[test]
    fn enter_loss_in_loss_after_progress_reduces_again() {
        let cfg = cfg();
        let p = Profile::linux_6_18();
        let mut s = Sender::for_test(&cfg, true, 10);
        s.tcp_enter_loss(&mut Cx::new(&cfg, &p, 252, false));
        // ACK 2 at t=302: segment 1 (retransmitted at 252) delivered.
        s.segs[0] = Seg::default();
        (
            s.snd_una,
            s.packets_out,
            s.lost_out,
            s.cwnd,
            s.icsk_retransmits,
        ) = (2, 9, 9, 2, 0);
        s.ghost.ev = Default::default();
        let mut cx = Cx::new(&cfg, &p, 556, false);
        s.tcp_enter_loss(&mut cx);
        assert_eq!((s.prior_ssthresh, s.prior_cwnd, s.ssthresh), (7, 2, 2));
        assert_eq!((s.undo_marker, s.undo_retrans), (2, -1));
        assert_eq!(s.ghost.ev.reductions[0].from, CaState::Loss);
        assert!(!s.frto);
    }

    /// The guard's window clause: `snd_una == high_seq` before the F-RTO rewrite
    /// (`EnterLossGuard::SndUnaEqHighSeq`, no built-in profile) versus `!after(high_seq,
    /// snd_una)`. They differ only past `high_seq` (Recovery/CWR with `snd_una > high_seq`);
    /// below it neither reduces, at it both do; Open/Disorder always reduce.
    #[test]
    fn enter_loss_guard_window_clause() {
        let cfg = cfg();
        let ge = Profile::linux_6_18();
        let eq = Profile {
            enter_loss_guard: EnterLossGuard::SndUnaEqHighSeq,
            ..Profile::linux_6_18()
        };
        for (state, snd_una, want_ge, want_eq) in [
            (CaState::Recovery, 5, false, false),
            (CaState::Recovery, 11, true, true),
            (CaState::Recovery, 12, true, false),
            (CaState::Cwr, 12, true, false),
            (CaState::Disorder, 5, true, true),
            (CaState::Loss, 5, false, false),
        ] {
            let mut s = Sender::for_test(&cfg, true, 11);
            (s.ca_state, s.snd_una, s.high_seq, s.icsk_retransmits) = (state, snd_una, 11, 1);
            for (p, want) in [(&ge, want_ge), (&eq, want_eq)] {
                assert_eq!(
                    s.tcp_enter_loss_may_reduce(&Cx::new(&cfg, p, 300, false)),
                    want,
                    "{state:?} snd_una {snd_una} {:?}",
                    p.enter_loss_guard
                );
            }
        }
    }

    /// `tcp_timeout_mark_lost()` (RACK): the head and every segment whose RACK timeout
    /// (`rack.rtt_us + 0 - (now - xmit)`) has passed are marked LOST; SACKed segments are skipped
    /// by `tcp_mark_skb_lost()`; recently sent ones wait ("don't mark recently sent ones lost
    /// yet"): rtt 50, segments 7-10 sent at t=230, RTO at 252 → 28 ms left.
    #[test]
    fn timeout_mark_lost_skips_sacked_and_recent() {
        let cfg = cfg();
        let p = Profile::linux_6_18();
        let mut s = Sender::for_test(&cfg, true, 10);
        s.rack.rtt_us = 50_000;
        for i in 6..10 {
            s.segs[i].xmit = 230;
        }
        s.add_tags(2, tag::S | tag::T);
        s.tcp_timeout_mark_lost(&mut Cx::new(&cfg, &p, 252, false));
        assert_eq!(s.tagged(tag::L), vec![0, 1, 3, 4, 5]);
        assert_eq!((s.lost_out, s.sacked_out, s.is_sack_reneg), (5, 1, false));
        // The head is marked even when recently (re)sent.
        let mut s = Sender::for_test(&cfg, true, 10);
        s.rack.rtt_us = 50_000;
        s.segs[0].xmit = 240;
        s.tcp_timeout_mark_lost(&mut Cx::new(&cfg, &p, 252, false));
        assert_eq!(s.lost_out, 10);
    }

    /// `tcp_timeout_mark_lost()` when the head is SACKed (the receiver reneged): every SACK mark
    /// is dropped (`sacked_out` 0, `is_sack_reneg`) and every segment marked LOST, recent or
    /// not. A non-SACK flow's dupack count (`sacked_out`) is reset (`tcp_reset_reno_sack()`).
    #[test]
    fn timeout_mark_lost_sack_reneging_and_non_sack() {
        let cfg = cfg();
        let p = Profile::linux_6_18();
        let mut s = Sender::for_test(&cfg, true, 10);
        s.rack.rtt_us = 50_000;
        s.segs[9].xmit = 240;
        s.add_tags(0, tag::S | tag::T);
        s.add_tags(4, tag::S | tag::T);
        s.tcp_timeout_mark_lost(&mut Cx::new(&cfg, &p, 252, false));
        assert!(s.tagged(tag::S).is_empty());
        assert_eq!((s.sacked_out, s.lost_out, s.is_sack_reneg), (0, 10, true));

        let mut s = Sender::for_test(&cfg, false, 10);
        s.sacked_out = 2;
        s.tcp_timeout_mark_lost(&mut Cx::new(&cfg, &p, 252, false));
        assert_eq!((s.sacked_out, s.lost_out), (0, 10));
    }
}
