//! Loss detection: RACK for SACK connections (tcp_recovery.c / tcp_input.c in 6.18, the only
//! SACK loss detector since the 6.17 removal of RFC 6675 marking) and `tcp_newreno_mark_lost()`
//! for non-SACK connections; `tcp_identify_packet_loss()` chooses; `tcp_mark_skb_lost()`.
//! Times are µs, as in the kernel (the model's clock ticks in ms: `now - xmit` is whole ms).

use super::ack::flag;
use super::Cx;
use crate::decision::Branch;
use crate::profile::ReoTimeoutRecovery;
use crate::seq::after;
use crate::state::*;

/// `TCP_TIMEOUT_MIN_US`: the least a timer is armed for (2 ms).
pub const TCP_TIMEOUT_MIN_US: u32 = 2000;

impl Sender {
    /// `tcp_rack_sent_after()` (now `tcp_skb_sent_after()`): (t1, seq1) was sent after
    /// (t2, seq2). The stamps are [`stamp`]s, ms and send-order rank, so transmissions of the
    /// same ms are ordered by when they were sent, as the kernel's µs `skb_mstamp_ns` orders
    /// them; the sequence only breaks truly equal stamps (the same transmission, or hand-built
    /// states whose segments have rank 0).
    pub fn tcp_rack_sent_after(t1: u64, t2: u64, seq1: u32, seq2: u32) -> bool {
        t1 > t2 || (t1 == t2 && after(seq1, seq2))
    }

    /// `tcp_rack_advance()`: a segment sent at `xmit` (a [`stamp`]) was (S)ACKed. A
    /// retransmitted one (S)ACKed sooner than `min_rtt` after it was sent is ambiguous (the
    /// original may have arrived).
    pub fn tcp_rack_advance(&mut self, cx: &Cx, tags: u8, end_seq: u32, xmit: u64) {
        let rtt_us = cx.now.wrapping_sub(stamp_ms(xmit)).saturating_mul(1000);
        if rtt_us < self.tcp_min_rtt() && tags & tag::RETRANS != 0 {
            return;
        }
        self.rack.advanced = true;
        self.rack.rtt_us = rtt_us;
        if Self::tcp_rack_sent_after(xmit, self.rack.stamp(), end_seq, self.rack.end_seq) {
            self.rack.mstamp = stamp_ms(xmit);
            self.rack.sub = stamp_sub(xmit);
            self.rack.end_seq = end_seq;
        }
    }

    /// `tcp_rack_reo_wnd()` (µs): 0 when no reordering was seen and recovery is (being) entered
    /// by the dupthresh rule; else `min_rtt/4 * steps`, at most srtt. Without the RTT estimator
    /// the quarter is rounded down to the model's whole ms (12 ms at 50 ms, where the kernel
    /// has 12.5), as the fixed-RTT model always had it.
    pub fn tcp_rack_reo_wnd(&self, cx: &Cx) -> u32 {
        if self.reord_seen == 0 {
            if self.ca_state >= CaState::Recovery {
                return 0;
            }
            if self.sacked_out >= self.reordering {
                return 0;
            }
        }
        let quarter = if cx.cfg.rtt_estimator {
            self.tcp_min_rtt() >> 2
        } else {
            ((self.tcp_min_rtt() / 1000) >> 2) * 1000
        };
        quarter
            .saturating_mul(self.rack.reo_wnd_steps as u32)
            .min(self.srtt_us())
    }

    /// `tcp_rack_skb_timeout()`: time left (µs) before a segment sent at `xmit` is deemed lost.
    pub fn tcp_rack_skb_timeout(&self, cx: &Cx, xmit: u32, reo_wnd: u32) -> i64 {
        self.rack.rtt_us as i64 + reo_wnd as i64 - (cx.now as i64 - xmit as i64) * 1000
    }

    /// `tcp_rack_detect_loss()`: mark lost every segment sent sufficiently before the most
    /// recently delivered one; returns the largest remaining wait in µs (0: none). It walks
    /// `tsorted_sent_queue` only: a segment it marks lost is unlinked (`list_del_init`, tag `T`)
    /// until its next (re)transmission, SACKed segments are unlinked by `tcp_sacktag_walk()`.
    pub fn tcp_rack_detect_loss(&mut self, cx: &mut Cx) -> u32 {
        let reo_wnd = self.tcp_rack_reo_wnd(cx);
        let mut order: Vec<u32> = self
            .rtx_queue(cx.cfg)
            .filter(|&i| {
                let t = self.segs[i as usize].tags;
                t & (tag::S | tag::T) == 0 && !(t & tag::L != 0 && t & tag::R == 0)
            })
            .collect();
        // tsorted_sent_queue: transmit order (`tcp_update_skb_after_send()` appends each
        // (re)transmission), i.e. by stamp, the rank ordering one ms's transmissions.
        order.sort_by_key(|&i| (self.segs[i as usize].stamp(), i));
        let mut reo_timeout: u32 = 0;
        for i in order {
            let s = self.segs[i as usize];
            let end = self.seq_of(cx.cfg, i + 1);
            if !Self::tcp_rack_sent_after(self.rack.stamp(), s.stamp(), self.rack.end_seq, end) {
                break;
            }
            let remaining = self.tcp_rack_skb_timeout(cx, s.xmit, reo_wnd);
            if remaining <= 0 {
                self.tcp_mark_skb_lost(cx, i);
                self.segs[i as usize].tags |= tag::T;
            } else {
                reo_timeout = reo_timeout.max(remaining as u32);
            }
        }
        reo_timeout
    }

    /// `tcp_rack_mark_lost()`: run detection if RACK advanced; arm the REO timer for segments
    /// still inside the reordering window at `remaining + TCP_TIMEOUT_MIN_US` (2 ms; up to the
    /// model's next whole ms, jiffy rounding not modelled), capped by the RTO. Returns whether
    /// the REO timer was armed.
    pub fn tcp_rack_mark_lost(&mut self, cx: &mut Cx) -> bool {
        if !self.rack.advanced {
            return false;
        }
        self.rack.advanced = false;
        let timeout = self.tcp_rack_detect_loss(cx);
        if timeout > 0 {
            let when = (timeout + TCP_TIMEOUT_MIN_US)
                .div_ceil(1000)
                .min(self.icsk_rto(cx.cfg));
            self.tcp_reset_xmit_timer(cx, TimerKind::Reo, when);
            return true;
        }
        false
    }

    /// `tcp_rack_reo_timeout()`: the REO timer fired.
    pub fn tcp_rack_reo_timeout(&mut self, cx: &mut Cx) {
        let prior_inflight = self.tcp_packets_in_flight();
        let prior_retrans = self.retrans_out;
        let lost_before = cx.lost;
        self.tcp_rack_detect_loss(cx);
        if prior_inflight != self.tcp_packets_in_flight() {
            if self.reo_timeout_enters_recovery(cx) {
                let lost_retrans =
                    self.ca_state == CaState::Loss && self.retrans_out < prior_retrans;
                self.tcp_enter_recovery_from(cx, false, lost_retrans);
                let newly_lost = cx.lost - lost_before;
                self.tcp_cwnd_reduction(cx, 1, newly_lost, 0);
            }
            self.tcp_xmit_retransmit_queue(cx);
        }
        if !matches!(
            self.timer,
            Some(Timer {
                kind: TimerKind::Rto,
                ..
            })
        ) {
            self.tcp_rearm_rto(cx);
        }
    }

    /// The state test of `tcp_rack_reo_timeout()`: whether the timer's lost marks move this
    /// state to Recovery. Every kernel since RACK's reordering timer (v4.10) up to
    /// 7.2 tests only "not already in Recovery", so from Loss it cuts ssthresh again (F9); the
    /// F9 fix (`reo_timeout_recovery = "not-from-loss"`) tests `state < Recovery`.
    fn reo_timeout_enters_recovery(&self, cx: &Cx) -> bool {
        let enters = match cx.prof.reo_timeout_recovery {
            ReoTimeoutRecovery::AnyButRecovery => self.ca_state != CaState::Recovery,
            ReoTimeoutRecovery::NotFromLoss => self.ca_state < CaState::Recovery,
        };
        match self.ca_state {
            CaState::Loss => cx.took(Branch::ReoTimeoutLostInLoss),
            CaState::Recovery => {}
            _ => cx.took(Branch::ReoTimeoutLostElsewhere),
        }
        enters
    }

    /// `tcp_rate_skb_delivered()` (tcp_rate.c), as far as `tcp_rack_update_reo_wnd()` reads it:
    /// a segment with `tags` (its tags before this ACK) is (S)ACKed by this ACK. A segment
    /// SACKed before gives nothing (its `tx.delivered_mstamp` was zeroed then); otherwise it
    /// fills the rate sample, which keeps the most recently sent segment's stamp ("tcp: ensure
    /// to use the most recently sent skb when filling the rate sample"). Called where the kernel
    /// calls it: for every segment `tcp_sacktag_walk()` finds inside a block (DSACK blocks
    /// included) and for every segment `tcp_clean_rtx_queue()` removes.
    pub fn tcp_rate_skb_delivered(cx: &mut Cx, tags: u8) {
        if tags & tag::S != 0 {
            return;
        }
        cx.rs.sampled = true;
        if tags & tag::D == 0 {
            cx.rs.fresh = true;
        }
    }

    /// `tcp_rack_update_reo_wnd()` (tcp_recovery.c, 1f255691d8a4 "tcp: higher throughput under
    /// reordering with adaptive RACK reordering wnd"; unchanged in 6.18), run by `tcp_ack()`
    /// right after `tcp_clean_rtx_queue()`. A DSACK only sets `rack.dsack_seen`
    /// (`tcp_dsack_seen()`); the window widens by one `min_rtt/4` step on a later ACK with a rate
    /// sample (`rs->prior_delivered`: it newly (S)ACKed data — a DSACK of data already (S)ACKed
    /// does not), and only if that data was sent after the previous widening
    /// (`rs->prior_delivered` not before `rack.last_delivered`): a DSACK seen within one round
    /// trip of a widening is dropped. The widening records `rack.last_delivered =
    /// tp->delivered`; the model tags the segments sent before it instead (tag `D`). Without a
    /// pending DSACK the window returns to one step once `reo_wnd_persist` (16 recoveries,
    /// `tcp_try_undo_recovery()` / `tcp_try_undo_dsack()`) has run out. Found by trc diff (seed 1
    /// scenario 875: two DSACK-only ACKs widened the old model's window twice, 6.18 once).
    pub fn tcp_rack_update_reo_wnd(&mut self, cx: &mut Cx) {
        if !cx.rs.sampled {
            return;
        }
        if !cx.rs.fresh {
            self.rack.dsack_seen = false;
        }
        if self.rack.dsack_seen {
            self.rack.reo_wnd_steps = self.rack.reo_wnd_steps.saturating_add(1);
            self.rack.dsack_seen = false;
            self.rack.reo_wnd_persist = TCP_RACK_RECOVERY_THRESH;
            // rack.last_delivered = tp->delivered: everything sent so far is now "before" it.
            for i in self.rtx_queue(cx.cfg) {
                if self.segs[i as usize].tags & tag::S == 0 {
                    self.segs[i as usize].tags |= tag::D;
                }
            }
        } else if self.rack.reo_wnd_persist == 0 {
            self.rack.reo_wnd_steps = 1;
        }
    }

    /// `tcp_newreno_mark_lost()`: non-SACK: the head is lost after `reordering` dupacks, or on a
    /// partial ACK in Recovery.
    pub fn tcp_newreno_mark_lost(&mut self, cx: &mut Cx, snd_una_advanced: bool) {
        let st = self.ca_state;
        if (st < CaState::Recovery && self.sacked_out >= self.reordering)
            || (st == CaState::Recovery && snd_una_advanced)
        {
            let head = self.rtx_queue(cx.cfg).start;
            if self.segs[head as usize].tags & tag::L != 0 {
                return;
            }
            self.tcp_mark_skb_lost(cx, head);
        }
    }

    /// `tcp_identify_packet_loss()`.
    pub fn tcp_identify_packet_loss(&mut self, cx: &mut Cx, ack_flag: &mut u32) {
        if self.rtx_queue(cx.cfg).is_empty() {
            return;
        }
        if !self.sack_ok {
            self.tcp_newreno_mark_lost(cx, *ack_flag & flag::SND_UNA_ADVANCED != 0);
        } else {
            let prior_retrans = self.retrans_out;
            if self.tcp_rack_mark_lost(cx) {
                *ack_flag &= !flag::SET_XMIT_TIMER;
            }
            if prior_retrans > self.retrans_out {
                *ack_flag |= flag::LOST_RETRANS;
            }
        }
    }

    /// `tcp_mark_skb_lost()`; a retransmission marked lost again counts TcpExtTCPLostRetransmit.
    pub fn tcp_mark_skb_lost(&mut self, cx: &mut Cx, i: u32) {
        let t = self.segs[i as usize].tags;
        if t & tag::S != 0 {
            return;
        }
        if t & tag::L != 0 {
            if t & tag::R != 0 {
                // A retransmission is lost again.
                cx.mib.inc(crate::mib::Mib::LostRetransmit);
                self.segs[i as usize].tags &= !tag::R;
                self.retrans_out = self.retrans_out.wrapping_sub(1);
                cx.lost += 1;
            }
        } else {
            self.lost_out = self.lost_out.wrapping_add(1);
            self.segs[i as usize].tags |= tag::L;
            cx.lost += 1;
        }
    }
}

/// RACK on hand-built states (`super::test_util`): 10 MSS-sized segments sent at t=0, RTT 50 ms
/// (min_rtt = srtt = 50 ms in the model), `tcp_reordering` 3. Kernel code as of 6.18
/// (net/ipv4/tcp_recovery.c; the kernel's `tcp_rack_sent_after()` is now `tcp_skb_sent_after()`
/// in include/net/tcp.h).
#[cfg(test)]
mod tests {
    use super::super::test_util::cfg;
    use super::super::Cx;
    use crate::config::Config;
    use crate::profile::Profile;
    use crate::state::*;

    /// A SACK connection in Disorder: segment 6 (index 5, sent at t=0) SACKed at t=50, so RACK's
    /// reference is (xmit 0, end_seq 7), `rack.rtt_us` 50, advanced.
    fn sacked_sixth(state: CaState) -> Sender {
        let cfg = cfg();
        let mut s = Sender::for_test(&cfg, true, 10);
        s.ca_state = state;
        s.add_tags(5, tag::S | tag::T);
        s.rack = Rack {
            mstamp: 0,
            end_seq: 7,
            rtt_us: 50_000,
            advanced: true,
            ..s.rack
        };
        s
    }

    /// `tcp_rack_reo_wnd()` with no reordering seen (`reord_seen` 0): 0 in Recovery and Loss
    /// ("be aggressive during the recovery").
    #[test]
    fn rack_reo_wnd_zero_in_recovery_without_reordering() {
        let cfg = cfg();
        let p = Profile::linux_6_18();
        let cx = Cx::new(&cfg, &p, 50, false);
        for st in [CaState::Recovery, CaState::Loss] {
            let mut s = sacked_sixth(st);
            assert_eq!(s.tcp_rack_reo_wnd(&cx), 0, "{st:?}");
            s.reord_seen = 1;
            assert_eq!(
                s.tcp_rack_reo_wnd(&cx),
                12_000,
                "{st:?} after reordering was seen"
            );
        }
    }

    /// `tcp_rack_reo_wnd()` with no reordering seen, before recovery: 0 once `sacked_out >=
    /// reordering` ("starting the recovery by DUPACK threshold"), else `min_rtt/4` (12 ms).
    #[test]
    fn rack_reo_wnd_zero_at_dupthresh() {
        let cfg = cfg();
        let p = Profile::linux_6_18();
        let cx = Cx::new(&cfg, &p, 50, false);
        let mut s = sacked_sixth(CaState::Disorder);
        s.add_tags(6, tag::S | tag::T);
        assert_eq!((s.sacked_out, s.tcp_rack_reo_wnd(&cx)), (2, 12_000));
        s.add_tags(7, tag::S | tag::T);
        assert_eq!((s.sacked_out, s.tcp_rack_reo_wnd(&cx)), (3, 0));
        s.reordering = 6;
        assert_eq!(
            s.tcp_rack_reo_wnd(&cx),
            12_000,
            "reordering raised above sacked_out"
        );
    }

    /// `tcp_rack_reo_wnd()` = `min((min_rtt >> 2) * reo_wnd_steps, srtt)` (µs): steps of 12 ms
    /// with the fixed RTT (the model's whole ms: 50 >> 2), of 12.5 ms with the RTT estimator
    /// (the kernel's µs), up to srtt 50 ms.
    #[test]
    fn rack_reo_wnd_min_rtt_quarter_times_steps_capped_at_srtt() {
        let p = Profile::linux_6_18();
        let mut s = sacked_sixth(CaState::Recovery);
        s.reord_seen = 1;
        for (estimator, table) in [
            (false, [12_000, 24_000, 48_000, 50_000, 50_000]),
            (true, [12_500, 25_000, 50_000, 50_000, 50_000]),
        ] {
            let cfg = Config {
                rtt_estimator: estimator,
                ..cfg()
            };
            let cx = Cx::new(&cfg, &p, 50, false);
            for (steps, wnd) in [1, 2, 4, 5, 255].into_iter().zip(table) {
                s.rack.reo_wnd_steps = steps;
                assert_eq!(s.tcp_rack_reo_wnd(&cx), wnd, "steps {steps}");
            }
        }
    }

    /// `tcp_rack_sent_after(t1, t2, seq1, seq2)`: later, or at the same time with a higher
    /// end sequence (truly equal stamps, e.g. one flight, are broken by sequence); of one ms, the
    /// later rank (send order) is later whatever the sequence.
    #[test]
    fn rack_sent_after_same_ms_ties_broken_by_sequence() {
        assert!(Sender::tcp_rack_sent_after(
            stamp(60, 2),
            stamp(60, 1),
            2,
            9
        ));
        assert!(!Sender::tcp_rack_sent_after(
            stamp(60, 1),
            stamp(60, 2),
            9,
            2
        ));
        assert!(Sender::tcp_rack_sent_after(
            stamp(61, 1),
            stamp(60, 9),
            2,
            9
        ));
        assert!(Sender::tcp_rack_sent_after(60, 50, 2, 9));
        assert!(!Sender::tcp_rack_sent_after(50, 60, 9, 2));
        assert!(Sender::tcp_rack_sent_after(60, 60, 9, 2));
        assert!(!Sender::tcp_rack_sent_after(60, 60, 2, 9));
        assert!(!Sender::tcp_rack_sent_after(60, 60, 5, 5));
        assert!(
            Sender::tcp_rack_sent_after(60, 60, 1, u32::MAX),
            "sequence comparison wraps (after())"
        );
    }

    /// `tcp_rack_detect_loss()` in Disorder (reo_wnd 12 ms): segments 1-5 were sent at the same
    /// time as the SACKed segment 6 but end below it, so they count as sent before it; they are
    /// lost once `rack.rtt_us + reo_wnd - (now - xmit) <= 0`, i.e. at t=62; at t=50 the largest
    /// remaining wait (12 ms, in µs) is returned. Segments 7-10 end above the reference: the time-ordered
    /// walk stops at the first of them. Lost segments leave `tsorted_sent_queue` (tag `T`).
    #[test]
    fn rack_detect_loss_sent_before_the_delivered_segment() {
        let cfg = cfg();
        let p = Profile::linux_6_18();
        let mut s = sacked_sixth(CaState::Disorder);
        let mut cx = Cx::new(&cfg, &p, 50, false);
        assert_eq!(s.tcp_rack_detect_loss(&mut cx), 12_000);
        assert_eq!((s.lost_out, cx.lost), (0, 0));
        let mut cx = Cx::new(&cfg, &p, 62, false);
        assert_eq!(s.tcp_rack_detect_loss(&mut cx), 0);
        assert_eq!((s.lost_out, cx.lost), (5, 5));
        assert_eq!(s.tagged(tag::L), vec![0, 1, 2, 3, 4]);
        assert_eq!(s.tagged(tag::L | tag::T), vec![0, 1, 2, 3, 4]);
        let mut cx = Cx::new(&cfg, &p, 1000, false);
        assert_eq!(s.tcp_rack_detect_loss(&mut cx), 0);
        assert_eq!(s.lost_out, 5, "segments 7-10 are not before the reference");
    }

    /// `tcp_rack_detect_loss()` in Recovery without reordering seen: reo_wnd 0, so at t=50
    /// (`rack.rtt_us` 50 after the send) the remaining time is 0 and segments 1-5 are lost.
    #[test]
    fn rack_detect_loss_zero_window_in_recovery() {
        let cfg = cfg();
        let p = Profile::linux_6_18();
        let mut s = sacked_sixth(CaState::Recovery);
        let mut cx = Cx::new(&cfg, &p, 50, false);
        assert_eq!(s.tcp_rack_detect_loss(&mut cx), 0);
        assert_eq!(s.tagged(tag::L), vec![0, 1, 2, 3, 4]);
    }

    /// `tcp_rack_detect_loss()` skips a LOST segment not yet retransmitted ("already lost,
    /// waiting for retransmission") and re-examines a retransmitted one: segment 2's
    /// retransmission (t=60) went out in the same ms as new segment 11, which was SACKed at
    /// t=110, so the retransmission counts as sent before it (same ms, lower sequence) and is
    /// lost again at t=110 (`tcp_mark_skb_lost()`: SACKED_RETRANS cleared, `retrans_out` − 1,
    /// `tp->lost` + 1, `lost_out` unchanged). Both stamps are truly equal here (hand-built, rank
    /// 0: one burst); sent by two events of that ms, their ranks would order them instead (see
    /// `rack_same_ms_retransmissions_after_tlp_new_data_not_lost`).
    #[test]
    fn rack_detect_loss_rechecks_lost_retransmissions() {
        let cfg = cfg();
        let p = Profile::linux_6_18();
        let mut s = Sender::for_test(&cfg, true, 11);
        s.ca_state = CaState::Recovery;
        s.add_tags(0, tag::L | tag::T);
        s.add_tags(1, tag::L | tag::RETRANS);
        s.segs[1].xmit = 60;
        s.segs[10].xmit = 60;
        s.add_tags(10, tag::S | tag::T);
        s.rack = Rack {
            mstamp: 60,
            end_seq: 12,
            rtt_us: 50_000,
            advanced: true,
            ..s.rack
        };
        let mut cx = Cx::new(&cfg, &p, 110, false);
        assert_eq!(s.tcp_rack_detect_loss(&mut cx), 0);
        assert_eq!(s.tagged(tag::L), (0..10).collect::<Vec<_>>());
        assert_eq!(s.segs[1].tags & tag::R, 0);
        assert_eq!((s.retrans_out, s.lost_out, cx.lost), (0, 10, 9));
    }

    /// The artefact of the ms clock (notebook 2026-12-04, `I1:tcp_try_undo_loss(frto):Loss:frto`
    /// at segments 10 SACK): a TLP sends new segment 8 at t=152, then, in the same ms, Recovery
    /// retransmits segments 2 and 3. In the kernel seg 8's `skb_mstamp_ns` precedes theirs, so
    /// when seg 8 is SACKed at t=202 (`tcp_rack_advance()`: reference seg 8, RTT 50 ms) the
    /// retransmissions were sent after the reference: `tcp_rack_detect_loss()` (reo_wnd 0 in
    /// Recovery) stops at them in `tsorted_sent_queue` and marks only the segments sent at t=0.
    /// Ordered by sequence within the ms, as the model did before the ranks, they were marked
    /// lost again (SACKED_RETRANS cleared, `retrans_out` 0).
    #[test]
    fn rack_same_ms_retransmissions_after_tlp_new_data_not_lost() {
        let cfg = cfg();
        let p = Profile::linux_6_18();
        let mut s = Sender::for_test(&cfg, true, 8);
        s.ca_state = CaState::Recovery;
        s.stamp_xmit(152, 7);
        s.add_tags(1, tag::L);
        s.add_tags(2, tag::L);
        let mut cx = Cx::new(&cfg, &p, 152, false);
        s.tcp_retransmit_skb(&mut cx, 1);
        s.tcp_retransmit_skb(&mut cx, 2);
        let ranks = [7, 1, 2].map(|i| (s.segs[i].xmit, s.segs[i].sub));
        assert_eq!(
            ranks,
            [(152, 1), (152, 2), (152, 3)],
            "send order within the ms"
        );
        let mut cx = Cx::new(&cfg, &p, 202, false);
        s.tcp_rack_advance(&cx, 0, s.seq_of(&cfg, 8), s.segs[7].stamp());
        s.add_tags(7, tag::S | tag::T);
        assert_eq!((s.rack.mstamp, s.rack.sub), (152, 1));
        assert_eq!(s.tcp_rack_detect_loss(&mut cx), 0);
        assert_eq!(s.tagged(tag::L), vec![0, 1, 2, 3, 4, 5, 6]);
        assert_eq!(
            s.tagged(tag::L | tag::R),
            vec![1, 2],
            "retransmissions still in flight"
        );
        assert_eq!((s.retrans_out, s.lost_out, cx.lost), (2, 7, 5));
    }

    /// `tcp_rack_mark_lost()`: only after RACK advanced (which it clears); segments still inside
    /// the window arm the REO timer at `remaining + TCP_TIMEOUT_MIN_US` (2 ms), here t=50+14;
    /// returns whether it armed the timer. Without a new advance nothing is examined.
    #[test]
    fn rack_mark_lost_arms_reo_timer() {
        let cfg = cfg();
        let p = Profile::linux_6_18();
        let mut s = sacked_sixth(CaState::Disorder);
        let mut cx = Cx::new(&cfg, &p, 50, false);
        assert!(s.tcp_rack_mark_lost(&mut cx));
        assert_eq!(
            s.timer,
            Some(Timer {
                kind: TimerKind::Reo,
                deadline: 64
            })
        );
        assert!(!s.rack.advanced);
        let mut cx = Cx::new(&cfg, &p, 70, false);
        assert!(!s.tcp_rack_mark_lost(&mut cx), "not advanced: no detection");
        assert_eq!((s.lost_out, s.timer.unwrap().deadline), (0, 64));
        s.rack.advanced = true;
        assert!(
            !s.tcp_rack_mark_lost(&mut cx),
            "everything before the reference is lost: no timer"
        );
        assert_eq!(s.lost_out, 5);
    }

    /// `tcp_rack_mark_lost()`: the REO timer is capped at `icsk_rto` (252 ms:
    /// `inet_csk_reset_xmit_timer(.., icsk_rto)`), here with a 400 ms RACK RTT sample.
    #[test]
    fn rack_mark_lost_reo_timer_capped_at_rto() {
        let cfg = cfg();
        let p = Profile::linux_6_18();
        let mut s = sacked_sixth(CaState::Disorder);
        s.rack.rtt_us = 400_000;
        let mut cx = Cx::new(&cfg, &p, 50, false);
        assert!(s.tcp_rack_mark_lost(&mut cx));
        assert_eq!(
            s.timer,
            Some(Timer {
                kind: TimerKind::Reo,
                deadline: 50 + 252
            })
        );
    }

    /// `tcp_rack_advance()`: an ACK of a retransmitted segment sooner than min_rtt after the
    /// retransmission is ambiguous (it may answer the original) and ignored; otherwise RACK
    /// takes the RTT and, if the segment was sent after the reference, the new reference.
    #[test]
    fn rack_advance_ignores_ambiguous_retransmission_acks() {
        let cfg = cfg();
        let p = Profile::linux_6_18();
        let mut s = Sender::for_test(&cfg, true, 10);
        s.rack = Rack {
            mstamp: 0,
            end_seq: 7,
            rtt_us: 50_000,
            advanced: false,
            ..s.rack
        };
        let before = s.rack;
        s.tcp_rack_advance(&Cx::new(&cfg, &p, 70, false), tag::RETRANS, 2, stamp(60, 0));
        assert_eq!(s.rack, before, "10 ms after the retransmission: ambiguous");
        s.tcp_rack_advance(
            &Cx::new(&cfg, &p, 110, false),
            tag::RETRANS,
            2,
            stamp(60, 0),
        );
        assert_eq!(
            s.rack,
            Rack {
                mstamp: 60,
                end_seq: 2,
                rtt_us: 50_000,
                advanced: true,
                ..before
            }
        );
        s.tcp_rack_advance(&Cx::new(&cfg, &p, 120, false), 0, 9, 0);
        assert_eq!(
            s.rack,
            Rack {
                mstamp: 60,
                end_seq: 2,
                rtt_us: 120_000,
                advanced: true,
                ..before
            },
            "older send: RTT only"
        );
    }
}
