//! PRR (`tcp_cwnd_reduction()`, RFC 6937) and `tcp_cong_control()` (tcp_input.c); RFC 6937, 3759824da87b and 8b8a321ff72c.

use super::ack::flag;
use super::Cx;
use crate::cc::CongestionOps;
use crate::profile::PrrGuards;
use crate::state::*;

impl Sender {
    /// `tcp_cwnd_reduction()`: Proportional Rate Reduction while in CWR/Recovery.
    /// 8b8a321ff72c added the `newly_acked_sacked <= 0 || !prior_cwnd` early return and the
    /// forced first packet; the Pre8b8a321 variant lacks both.
    pub fn tcp_cwnd_reduction(
        &mut self,
        cx: &Cx,
        newly_acked_sacked: u32,
        newly_lost: u32,
        fl: u32,
    ) {
        let in_flight = self.tcp_packets_in_flight();
        let delta = self.ssthresh as i64 as i32 as i64 - in_flight as i32 as i64;
        let guarded = cx.prof.prr_guards == PrrGuards::Guarded;
        cx.took(if newly_acked_sacked == 0 || self.prior_cwnd == 0 {
            crate::decision::Branch::PrrNothingDelivered
        } else {
            crate::decision::Branch::PrrRuns
        });
        if guarded && (newly_acked_sacked == 0 || self.prior_cwnd == 0) {
            if newly_acked_sacked != 0 {
                self.ghost.ev.prr_zero_prior_cwnd = true; // WARN_ON_ONCE(!prior_cwnd)
            }
            return;
        }
        self.prr_delivered = self.prr_delivered.wrapping_add(newly_acked_sacked);
        let mut sndcnt: i64;
        if delta < 0 {
            if self.prior_cwnd == 0 {
                // The kernel would divide by zero here (div_u64 by prior_cwnd).
                self.ghost.ev.prr_zero_prior_cwnd = true;
                sndcnt = 0;
            } else {
                let dividend =
                    self.ssthresh as u64 * self.prr_delivered as u64 + self.prior_cwnd as u64 - 1;
                sndcnt = (dividend / self.prior_cwnd as u64) as i64 - self.prr_out as i64;
            }
        } else {
            sndcnt =
                (self.prr_delivered as i64 - self.prr_out as i64).max(newly_acked_sacked as i64);
            if fl & flag::SND_UNA_ADVANCED != 0 && newly_lost == 0 {
                sndcnt += 1;
            }
            sndcnt = sndcnt.min(delta);
        }
        if guarded {
            // Force a fast retransmit upon entering fast recovery.
            sndcnt = sndcnt.max(if self.prr_out != 0 { 0 } else { 1 });
        }
        self.cwnd = (in_flight as i64 + sndcnt as i32 as i64) as u32;
    }

    /// `tcp_may_raise_cwnd()`.
    pub fn tcp_may_raise_cwnd(&self, cx: &Cx, fl: u32) -> bool {
        if self.reordering > cx.cfg.sysctl_reordering {
            fl & flag::FORWARD_PROGRESS != 0
        } else {
            fl & flag::DATA_ACKED != 0
        }
    }

    /// `tcp_cong_control()` for non-`cong_control` modules: PRR in CWR/Recovery, else `cong_avoid`.
    pub fn tcp_cong_control(&mut self, cx: &Cx, acked_sacked: u32, losses: u32, fl: u32) {
        if self.tcp_in_cwnd_reduction() {
            self.tcp_cwnd_reduction(cx, acked_sacked, losses, fl);
        } else if self.tcp_may_raise_cwnd(cx, fl) {
            let mut w = self.window(cx);
            self.cc.cong_avoid(&mut w, acked_sacked);
            self.cwnd = w.cwnd;
            self.cwnd_cnt = w.cwnd_cnt;
            self.ssthresh = w.ssthresh;
        }
    }
}
