//! `tcp_ack()` (tcp_input.c) in the kernel's order of work, `tcp_clean_rtx_queue()`, and the
//! non-SACK ("Reno") dupack emulation (`tcp_add_reno_sack`, `tcp_remove_reno_sacks`,
//! `tcp_check_reno_reordering`).

use super::{Cx, RxOpt};
use crate::cc::CongestionOps;
use crate::seq::{after, before};
use crate::state::*;
use serde::{Deserialize, Serialize};

/// `FLAG_*` bits produced while processing one ACK (tcp_input.c).
pub mod flag {
    pub const DATA: u32 = 0x01;
    pub const WIN_UPDATE: u32 = 0x02;
    pub const DATA_ACKED: u32 = 0x04;
    pub const RETRANS_DATA_ACKED: u32 = 0x08;
    pub const SYN_ACKED: u32 = 0x10;
    pub const DATA_SACKED: u32 = 0x20;
    pub const ECE: u32 = 0x40;
    pub const LOST_RETRANS: u32 = 0x80;
    pub const SLOWPATH: u32 = 0x100;
    pub const ORIG_SACK_ACKED: u32 = 0x200;
    pub const SND_UNA_ADVANCED: u32 = 0x400;
    pub const DSACKING_ACK: u32 = 0x800;
    pub const SET_XMIT_TIMER: u32 = 0x1000;
    pub const SACK_RENEGING: u32 = 0x2000;
    pub const DSACK_TLP: u32 = 0x4000;
    pub const ACKED: u32 = DATA_ACKED | SYN_ACKED;
    pub const NOT_DUP: u32 = DATA | WIN_UPDATE | ACKED;
    pub const CA_ALERT: u32 = DATA_SACKED | ECE | DSACKING_ACK;
    pub const FORWARD_PROGRESS: u32 = ACKED | DATA_SACKED;
}

/// What `tcp_xmit_recovery()` should do after the ACK (`REXMIT_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rexmit {
    None,
    Lost,
    New,
}

/// An inbound pure ACK as the sender sees it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AckSeg {
    pub ack: u32,
    /// SACK blocks as on the wire (a DSACK, if any, first), `[start, end)`; at most 4
    /// (`TCP_NUM_SACKS`), kept inline (an ACK is built on every delivery).
    pub sacks: smallvec::SmallVec<[(u32, u32); 4]>,
    pub ece: bool,
    /// TSecr if the TS option is present.
    pub tsecr: Option<u32>,
}

impl Sender {
    /// `tcp_ack()`: process one inbound ACK, then `tcp_data_snd_check()` sends new data.
    pub fn tcp_ack(&mut self, cx: &mut Cx, seg: &AckSeg) {
        cx.rx = RxOpt {
            saw_tstamp: seg.tsecr.is_some() && self.ts_ok,
            rcv_tsecr: seg.tsecr.unwrap_or(0),
        };
        let ack = seg.ack;
        let prior_snd_una = self.snd_una;
        let prior_packets = self.packets_out;
        let mut flag: u32 = 0;
        let mut rexmit = Rexmit::None;

        if before(ack, prior_snd_una) {
            self.tcp_ack_old(cx, seg, prior_snd_una);
            return;
        }
        if after(ack, self.snd_nxt) {
            return; // ACK of unsent data: dropped
        }
        if after(ack, prior_snd_una) {
            flag |= flag::SND_UNA_ADVANCED;
            if self.icsk_retransmits != 0 {
                cx.took(crate::decision::Branch::RetransResetAfterRto);
            }
            if cx.prof.rto_retrans_reset == crate::profile::RtoRetransReset::InTcpAck {
                self.icsk_retransmits = 0;
            }
        }
        let prior_fack = self.tcp_highest_sack_seq(cx.cfg);
        let sack_present = !seg.sacks.is_empty() && self.sack_ok;
        let ece = seg.ece && cx.cfg.ecn;
        let mut sackt = None;
        if !sack_present && !ece && after(ack, prior_snd_una) {
            // Header-prediction fast path: a pure advancing ACK.
            self.snd_una = ack;
            flag |= flag::WIN_UPDATE;
        } else {
            flag |= flag::SLOWPATH;
            self.snd_una = ack;
            if sack_present {
                let (f, fs) = self.tcp_sacktag_write_queue(cx, ack, &seg.sacks, prior_snd_una);
                flag |= f;
                sackt = fs;
            }
            if ece {
                flag |= flag::ECE;
            }
        }
        let eifel = self.eifel_proof(cx, prior_snd_una);

        if prior_packets == 0 {
            // NO_QUEUE
            if flag & flag::DSACKING_ACK != 0 {
                self.tcp_fastretrans_alert(cx, prior_snd_una, 0, &mut flag, &mut rexmit);
            }
            if self.tlp_high_seq != 0 {
                self.tcp_process_tlp_ack(cx, ack, flag);
            }
            return;
        }

        flag |= self.tcp_clean_rtx_queue(cx, prior_fack, prior_snd_una, sackt);
        self.tcp_rack_update_reo_wnd(cx);
        if self.tlp_high_seq != 0 {
            self.tcp_process_tlp_ack(cx, ack, flag);
        }

        if self.tcp_ack_is_dubious(flag) {
            let mut not_dup = flag::SND_UNA_ADVANCED | flag::NOT_DUP;
            if cx.prof.dsack_dupack == crate::profile::DsackDupack::NotDupack {
                not_dup |= flag::DSACKING_ACK;
            }
            let num_dupack = if flag & not_dup == 0 { 1 } else { 0 };
            if flag & flag::DSACKING_ACK != 0
                && flag & (flag::SND_UNA_ADVANCED | flag::NOT_DUP) == 0
            {
                cx.took(crate::decision::Branch::DsackOnlyAck);
            }
            self.tcp_fastretrans_alert(cx, prior_snd_una, num_dupack, &mut flag, &mut rexmit);
        }
        if flag & flag::SET_XMIT_TIMER != 0 {
            self.tcp_set_xmit_timer(cx);
        }
        let delivered = cx.delivered;
        let losses = cx.lost;
        self.tcp_cong_control(cx, delivered, losses, flag);
        self.tcp_xmit_recovery(cx, rexmit);
        self.tcp_data_snd_check(cx);
        self.note_eifel_outcome(eifel);
    }

    /// `tcp_ack()`'s `old_ack` path: an ACK below `snd_una` (reordered on the way back, in the
    /// model's environment only with `max_old_acks`). Its SACK blocks are processed
    /// (`tcp_sacktag_write_queue`, so DSACK accounting, RACK marking and a DSACK undo can
    /// happen), then `tcp_fastretrans_alert(num_dupack 0)` and `tcp_xmit_recovery()`; nothing
    /// else of `tcp_ack()` runs (no window or RTT update, no `tcp_cong_control`). `tcp_ack()`
    /// returns 0, so `tcp_rcv_established()` goes on to `tcp_data_snd_check()`: new data can
    /// leave with the retransmissions (kernel check: the packetdrill gtest
    /// prr-ss-ack-below-snd_una-cubic, line 40, sends 7001:8001 and 10001:11001 on 6.18).
    /// The "too old" bound (below `snd_una - max_window`, a challenge ACK and the segment
    /// discarded) needs the peer's window, which the model does not track: replay refuses such
    /// ACKs before they get here (`trace::replay`, `too_old_ack`: out of scope); the checker's
    /// environment never makes one (docs/explanation/model.md, "Old ACKs").
    pub fn tcp_ack_old(&mut self, cx: &mut Cx, seg: &AckSeg, prior_snd_una: u32) {
        if !seg.sacks.is_empty() && self.sack_ok {
            let mut flag = 0;
            let mut rexmit = Rexmit::None;
            let (f, _) = self.tcp_sacktag_write_queue(cx, seg.ack, &seg.sacks, prior_snd_una);
            flag |= f;
            self.tcp_fastretrans_alert(cx, prior_snd_una, 0, &mut flag, &mut rexmit);
            self.tcp_xmit_recovery(cx, rexmit);
        }
        self.tcp_data_snd_check(cx);
    }

    /// `tcp_ack_is_dubious()`.
    pub fn tcp_ack_is_dubious(&self, flag: u32) -> bool {
        flag & flag::NOT_DUP == 0 || flag & flag::CA_ALERT != 0 || self.ca_state != CaState::Open
    }

    /// Karn's rule in `tcp_clean_rtx_queue()`: the send times of cumulatively ACKed
    /// never-retransmitted data give the sequence and CC RTT samples only if the same ACK
    /// covers no retransmitted data (`first_ackt && !(flag & FLAG_RETRANS_DATA_ACKED)`);
    /// otherwise `tcp_ack_update_rtt()` falls back to the SACK sample or the TS echo, and
    /// without either there is no sample: no `icsk_backoff` reset, no CUBIC `delay_min` update.
    /// The condition is as old as the rtt_us rework (740b0f1841f6, v3.15); 6.18 unchanged.
    pub fn tcp_karn_ack_times(
        fl: u32,
        first_ackt: Option<u32>,
        last_ackt: Option<u32>,
    ) -> (Option<u32>, Option<u32>) {
        if fl & flag::RETRANS_DATA_ACKED != 0 {
            (None, None)
        } else {
            (first_ackt, last_ackt)
        }
    }

    /// `tcp_clean_rtx_queue()`: drop cumulatively ACKed segments, account retransmissions,
    /// RTT sample (Karn), RACK advance, the non-SACK dupack bookkeeping, the CC `pkts_acked` hook.
    pub fn tcp_clean_rtx_queue(
        &mut self,
        cx: &mut Cx,
        prior_fack: u32,
        prior_snd_una: u32,
        sackt: Option<(u32, u32)>,
    ) -> u32 {
        let cfg = cx.cfg;
        let first_sackt = sackt.map(|(first, _)| first);
        let mut fl = 0u32;
        let mut reord = self.snd_nxt;
        let mut pkts_acked = 0u32;
        let mut first_ackt: Option<u32> = None;
        let mut last_ackt: Option<u32> = None;
        let from = self.idx(cfg, prior_snd_una);
        let to = self.idx(cfg, self.snd_una);
        // The F1 fix (vm/kconfig/f1-fix.patch): the TSecr of a cumulative ACK is the TSval of
        // the segment that filled the receiver's hole, the one at the old snd_una. Its echo can
        // prove only that segment's retransmission spurious; note whether that retransmission is
        // the episode's only one not yet DSACKed (this ACK's DSACKs are already counted).
        cx.echo_proves_retrans = from < to
            && self.segs[from as usize].tags & tag::RETRANS != 0
            && self.undo_retrans <= 1;
        for i in from..to {
            let s = self.segs[i as usize];
            let start = self.seq_of(cfg, i);
            let end = start.wrapping_add(1);
            if s.tags & tag::RETRANS != 0 {
                if s.tags & tag::R != 0 {
                    self.retrans_out = self.retrans_out.wrapping_sub(1);
                }
                fl |= flag::RETRANS_DATA_ACKED;
            } else if s.tags & tag::S == 0 {
                last_ackt = Some(s.xmit);
                first_ackt.get_or_insert(s.xmit);
                if before(start, reord) {
                    reord = start;
                }
                if !after(end, self.high_seq) {
                    fl |= flag::ORIG_SACK_ACKED;
                }
            }
            if s.tags & tag::S != 0 {
                self.sacked_out = self.sacked_out.wrapping_sub(1);
            } else if self.sack_ok {
                cx.delivered += 1;
                if !self.tcp_skb_spurious_retrans(cx, s) {
                    self.tcp_rack_advance(cx, s.tags, end, s.stamp());
                }
            }
            if s.tags & tag::L != 0 {
                self.lost_out = self.lost_out.wrapping_sub(1);
            }
            self.packets_out = self.packets_out.wrapping_sub(1);
            pkts_acked += 1;
            Self::tcp_rate_skb_delivered(cx, s.tags);
            fl |= flag::DATA_ACKED;
            self.segs[i as usize] = Seg { tags: 0, ..s };
        }
        let q = self.rtx_queue(cfg);
        if !q.is_empty() && self.segs[q.start as usize].tags & tag::S != 0 {
            fl |= flag::SACK_RENEGING;
        }
        // RTT sample: cumulatively ACKed never-retransmitted data unless the ACK also covers
        // retransmitted data (Karn), else newly SACKed never retransmitted data, else the TS
        // echo on an ACK that acked something.
        let (first_ackt, last_ackt) = Self::tcp_karn_ack_times(fl, first_ackt, last_ackt);
        let rtt_update = self.rtt_sample(cx, fl, first_ackt, last_ackt, sackt);
        if fl & flag::ACKED != 0 {
            fl |= flag::SET_XMIT_TIMER;
            if !self.sack_ok {
                self.tcp_remove_reno_sacks(cx, pkts_acked);
                // 1236f22fbae1: a non-SACK cumulative ACK covering retransmitted data cannot
                // prove that never-retransmitted data arrived via its original transmission.
                if fl & flag::RETRANS_DATA_ACKED != 0 {
                    cx.took(crate::decision::Branch::OrigSackRetransAcked);
                }
                if fl & flag::RETRANS_DATA_ACKED != 0 && cx.prof.nonsack_orig_sack_fix {
                    fl &= !flag::ORIG_SACK_ACKED;
                }
            } else if before(reord, prior_fack) {
                self.tcp_check_sack_reordering(cx, reord, false);
            }
        } else if let (true, Some(st)) = (rtt_update, first_sackt) {
            // SACK-only ACK whose RTT sample is older than the head's last transmission:
            // the head was retransmitted recently, so re-arm the timer.
            let q = self.rtx_queue(cfg);
            if !q.is_empty() {
                let head_age = cx.now.wrapping_sub(self.segs[q.start as usize].xmit);
                if cx.now.wrapping_sub(st) > head_age {
                    fl |= flag::SET_XMIT_TIMER;
                }
            }
        }
        let ca_rtt_us = Self::ca_rtt_sample_us(cx, fl, first_ackt.or(first_sackt), last_ackt);
        if pkts_acked > 0 || first_sackt.is_some() {
            let mut w = self.window(cx);
            if let Some(ex) = self.cc.pkts_acked(&mut w, pkts_acked, ca_rtt_us) {
                self.ghost.ev.hystart = Some(ex);
            }
            // hystart_update(): each detector that fired counts itself and the cwnd it stopped at.
            use crate::mib::Mib;
            if w.hystart_detected.0 {
                cx.mib.inc(Mib::HystartTrainDetect);
                cx.mib.add(Mib::HystartTrainCwnd, w.cwnd);
            }
            if w.hystart_detected.1 {
                cx.mib.inc(Mib::HystartDelayDetect);
                cx.mib.add(Mib::HystartDelayCwnd, w.cwnd);
            }
            self.ssthresh = w.ssthresh; // HyStart's exit sets ssthresh = cwnd
        }
        fl
    }

    /// The RTT samples at the end of `tcp_clean_rtx_queue()`, in µs (-1: none): `seq_rtt_us` from
    /// the first newly cumulatively ACKed segment (none if it covered retransmitted data:
    /// Karn, [`Sender::tcp_karn_ack_times`]), `ca_rtt_us` from the last; a SACK's from the first
    /// and last newly SACKed never-retransmitted segments (`sack->first_sackt`,
    /// `last_sackt`), the SACK's taking over `ca_rtt_us`; then `tcp_ack_update_rtt()`. Returns
    /// whether it took a sample. (The congestion control's own sample is computed by the caller:
    /// SACK-only ACKs give CUBIC none, docs/explanation/model.md.)
    fn rtt_sample(
        &mut self,
        cx: &Cx,
        fl: u32,
        first_ackt: Option<u32>,
        last_ackt: Option<u32>,
        sackt: Option<(u32, u32)>,
    ) -> bool {
        let us = |t: u32| cx.now.wrapping_sub(t) as i64 * 1000;
        let seq_rtt_us = first_ackt.map_or(-1, us);
        let mut ca_rtt_us = last_ackt.map_or(-1, us);
        let mut sack_rtt_us = -1;
        if let Some((first, last)) = sackt {
            sack_rtt_us = us(first);
            ca_rtt_us = us(last);
        }
        self.tcp_ack_update_rtt(
            cx,
            fl & flag::ACKED != 0,
            seq_rtt_us,
            sack_rtt_us,
            ca_rtt_us,
        )
        .0
    }

    /// The congestion control's RTT sample (`ack_sample.rtt_us`, on CUBIC's clock: model ms ×
    /// `cc_us_per_ms`; -1: none): the last newly cumulatively ACKed segment's RTT (Karn), else the
    /// TS echo's when the ACK gave no other sample. Unlike the kernel's `rs->rtt_us`, a SACK's
    /// `last_sackt` gives none (docs/explanation/model.md, the HyStart row); the estimator's
    /// samples ([`Sender::rtt_sample`]) do take the SACK's.
    fn ca_rtt_sample_us(
        cx: &Cx,
        fl: u32,
        first_sample: Option<u32>,
        last_ackt: Option<u32>,
    ) -> i64 {
        let ms = match last_ackt {
            Some(t) => Some(cx.now.wrapping_sub(t)),
            None if first_sample.is_none()
                && cx.rx.saw_tstamp
                && cx.rx.rcv_tsecr != 0
                && fl & flag::ACKED != 0 =>
            {
                Some(cx.ts_now().wrapping_sub(cx.rx.rcv_tsecr))
            }
            None => None,
        };
        ms.map_or(-1, |ms| ms as i64 * cx.cfg.cc_us_per_ms as i64)
    }

    /// `tcp_skb_spurious_retrans()`: the TS echo proves the ACK answers an earlier copy.
    pub fn tcp_skb_spurious_retrans(&self, cx: &Cx, s: Seg) -> bool {
        s.tags & tag::RETRANS != 0
            && cx.rx.saw_tstamp
            && cx.rx.rcv_tsecr != 0
            && before(cx.rx.rcv_tsecr, cx.ts_of(s.xmit))
    }

    /// `tcp_limit_reno_sacked()`: the dupack count cannot exceed packets_out minus the holes.
    pub fn tcp_limit_reno_sacked(&mut self) -> bool {
        let holes = self.lost_out.max(1).min(self.packets_out);
        if self.sacked_out.wrapping_add(holes) > self.packets_out {
            self.sacked_out = self.packets_out.wrapping_sub(holes);
            return true;
        }
        false
    }

    /// `tcp_check_reno_reordering()`: more dupacks than possible means reordering
    /// (TcpExtTCPRenoReorder).
    pub fn tcp_check_reno_reordering(&mut self, cx: &Cx, addend: u32) {
        if !self.tcp_limit_reno_sacked() {
            return;
        }
        self.reordering = (self.packets_out + addend).min(cx.cfg.sysctl_max_reordering);
        self.reord_seen = self.reord_seen.saturating_add(1).min(3);
        cx.mib.inc(crate::mib::Mib::RenoReorder);
    }

    /// `tcp_add_reno_sack()`: a dupack "SACKs" one more packet.
    pub fn tcp_add_reno_sack(&mut self, cx: &mut Cx, num_dupack: u32) {
        if num_dupack > 0 {
            let prior = self.sacked_out;
            self.sacked_out = self.sacked_out.wrapping_add(num_dupack);
            self.tcp_check_reno_reordering(cx, 0);
            let d = self.sacked_out as i64 - prior as i64;
            if d > 0 {
                cx.delivered += d as u32;
            }
        }
    }

    /// `tcp_remove_reno_sacks()`: a cumulative ACK of `acked` packets ate `acked - 1` dupacks.
    pub fn tcp_remove_reno_sacks(&mut self, cx: &mut Cx, acked: u32) {
        if acked > 0 {
            cx.delivered += (acked as i64 - self.sacked_out as i64).max(1) as u32;
            if acked > self.sacked_out {
                self.sacked_out = 0;
            } else {
                self.sacked_out -= acked - 1;
            }
        }
        self.tcp_check_reno_reordering(cx, acked);
    }

    /// `tcp_reset_reno_sack()`.
    pub fn tcp_reset_reno_sack(&mut self) {
        self.sacked_out = 0;
    }
}

/// `tcp_ack()` on hand-built states (`super::test_util`, kernel values).
#[cfg(test)]
mod tests {
    use super::super::test_util::cfg;
    use super::super::Cx;
    use super::AckSeg;
    use crate::mib::Mib;
    use crate::profile::Profile;
    use crate::state::*;

    /// An ACK below `snd_una` without SACK blocks changes nothing of the connection, but
    /// `tcp_rcv_established()` still runs `tcp_data_snd_check()`: data the window allows but that
    /// has not left yet goes out (6.18: gtest prr-ss-ack-below-snd_una-cubic sends new data right
    /// after its old ACK). Here 5 of the 10 first segments are ACKed, cwnd 10: segments 11 and 12
    /// (indices 10, 11) may leave, and the old ACK (ack 3) lets them.
    #[test]
    fn old_ack_still_sends_new_data() {
        let cfg = cfg();
        let prof = Profile::linux_6_18();
        let mut s = Sender::for_test(&cfg, false, 10);
        s.snd_una = cfg.isn + 5;
        s.packets_out = 5;
        let before = (s.snd_una, s.cwnd, s.ssthresh, s.ca_state);
        let mut cx = Cx::new(&cfg, &prof, 100, false);
        s.tcp_ack(
            &mut cx,
            &AckSeg {
                ack: cfg.isn + 2,
                sacks: Default::default(),
                ece: false,
                tsecr: None,
            },
        );
        assert_eq!(
            (s.snd_una, s.cwnd, s.ssthresh, s.ca_state),
            before,
            "an old ACK moves nothing"
        );
        let sent: Vec<u32> = cx.out.iter().map(|t| t.seg).collect();
        assert_eq!(sent, vec![10, 11], "tcp_data_snd_check after the old ACK");
        assert!(cx.out.iter().all(|t| !t.rtx));
        assert_eq!(s.packets_out, 7);
        assert_eq!(cx.mib.get(Mib::RetransSegs), 0);
    }
}
