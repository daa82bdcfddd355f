//! Congestion control behind a trait that mirrors `struct tcp_congestion_ops`
//! (`include/net/tcp.h`): `ssthresh`, `cong_avoid`, `undo_cwnd`, `set_state`, `cwnd_event`,
//! `pkts_acked`. Dispatch is by enum ([`Cc`]) so the state stays `Clone + Hash + Eq`.
//!
//! Implemented here: Reno (`net/ipv4/tcp_cong.c`) and CUBIC's loss response
//! (`cubictcp_recalc_ssthresh`: `max(cwnd * 717 / 1024, 2)`, generic `tcp_reno_undo_cwnd`).
//! CUBIC's window growth (`bictcp_update`, `cubic_root`) and HyStart are a later addition; until
//! then CUBIC grows like Reno (slow start, then one packet per window), see docs/model.md.

use crate::state::CaState;
use serde::{Deserialize, Serialize};

/// `enum tcp_ca_event`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaEvent {
    /// `CA_EVENT_TX_START`: first transmit when no packet in flight.
    TxStart,
    /// `CA_EVENT_CWND_RESTART`.
    CwndRestart,
    /// `CA_EVENT_COMPLETE_CWR`: end of CWR/Recovery.
    CompleteCwr,
    /// `CA_EVENT_LOSS`: RTO.
    Loss,
}

/// The window fields a congestion-control module reads and writes (a view of `tcp_sock`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub cwnd: u32,
    pub ssthresh: u32,
    pub cwnd_cnt: u32,
    pub cwnd_clamp: u32,
    pub prior_cwnd: u32,
    /// `tcp_is_cwnd_limited(sk)`, evaluated by the caller.
    pub cwnd_limited: bool,
}

/// Mirrors `struct tcp_congestion_ops`.
pub trait CongestionOps {
    /// `.ssthresh`: new slow-start threshold after a congestion event (may have side effects).
    fn ssthresh(&mut self, w: &Window) -> u32;
    /// `.cong_avoid`: grow the window on an ACK that delivered `acked` packets.
    fn cong_avoid(&mut self, w: &mut Window, acked: u32);
    /// `.undo_cwnd`: cwnd to restore on undo.
    fn undo_cwnd(&mut self, w: &Window) -> u32;
    /// `.set_state`: called by `tcp_set_ca_state` before the new state is stored.
    fn set_state(&mut self, new: CaState);
    /// `.cwnd_event`.
    fn cwnd_event(&mut self, ev: CaEvent);
    /// `.pkts_acked`: per-ACK sample from `tcp_clean_rtx_queue` (HyStart hook). `rtt_ms` < 0: none.
    fn pkts_acked(&mut self, acked: u32, rtt_ms: i64);
}

/// `tcp_slow_start()` (tcp_cong.c): returns the part of `acked` left over for congestion avoidance.
pub fn tcp_slow_start(w: &mut Window, acked: u32) -> u32 {
    let cwnd = w.cwnd.saturating_add(acked).min(w.ssthresh);
    let left = acked - (cwnd - w.cwnd.min(cwnd));
    w.cwnd = cwnd.min(w.cwnd_clamp);
    left
}

/// `tcp_cong_avoid_ai()` (tcp_cong.c): one packet per `wnd` ACKed packets.
pub fn tcp_cong_avoid_ai(w: &mut Window, wnd: u32, acked: u32) {
    let wnd = wnd.max(1);
    if w.cwnd_cnt >= wnd {
        w.cwnd_cnt = 0;
        w.cwnd += 1;
    }
    w.cwnd_cnt += acked;
    if w.cwnd_cnt >= wnd {
        let delta = w.cwnd_cnt / wnd;
        w.cwnd_cnt -= delta * wnd;
        w.cwnd += delta;
    }
    w.cwnd = w.cwnd.min(w.cwnd_clamp);
}

/// `tcp_reno_cong_avoid()` (tcp_cong.c).
pub fn tcp_reno_cong_avoid(w: &mut Window, mut acked: u32) {
    if !w.cwnd_limited {
        return;
    }
    if w.cwnd < w.ssthresh {
        acked = tcp_slow_start(w, acked);
        if acked == 0 {
            return;
        }
    }
    let cwnd = w.cwnd;
    tcp_cong_avoid_ai(w, cwnd, acked);
}

/// `tcp_reno_undo_cwnd()` (tcp_cong.c): `max(cwnd, prior_cwnd)`; CUBIC uses it too since 4.15.
pub fn tcp_reno_undo_cwnd(w: &Window) -> u32 {
    w.cwnd.max(w.prior_cwnd)
}

/// The connection's congestion control and its private state.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Cc {
    Reno,
    Cubic,
}

impl CongestionOps for Cc {
    /// Reno: `tcp_reno_ssthresh` = `max(cwnd >> 1, 2)`.
    /// CUBIC: `cubictcp_recalc_ssthresh` = `max(cwnd * beta / 1024, 2)` with beta = 717.
    fn ssthresh(&mut self, w: &Window) -> u32 {
        match self {
            Cc::Reno => (w.cwnd >> 1).max(2),
            Cc::Cubic => ((w.cwnd as u64 * 717 / 1024) as u32).max(2),
        }
    }

    fn cong_avoid(&mut self, w: &mut Window, acked: u32) {
        tcp_reno_cong_avoid(w, acked)
    }

    fn undo_cwnd(&mut self, w: &Window) -> u32 {
        tcp_reno_undo_cwnd(w)
    }

    fn set_state(&mut self, _new: CaState) {}

    fn cwnd_event(&mut self, _ev: CaEvent) {}

    fn pkts_acked(&mut self, _acked: u32, _rtt_ms: i64) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(cwnd: u32, ssthresh: u32) -> Window {
        Window { cwnd, ssthresh, cwnd_cnt: 0, cwnd_clamp: u32::MAX, prior_cwnd: 0, cwnd_limited: true }
    }

    #[test]
    fn cubic_loss_response() {
        let mut c = Cc::Cubic;
        assert_eq!(c.ssthresh(&w(10, 100)), 7);
        assert_eq!(c.ssthresh(&w(2, 100)), 2);
        assert_eq!(c.ssthresh(&w(1, 100)), 2);
        let mut r = Cc::Reno;
        assert_eq!(r.ssthresh(&w(10, 100)), 5);
    }

    #[test]
    fn slow_start_then_ai() {
        let mut x = w(6, 7);
        tcp_reno_cong_avoid(&mut x, 3); // 1 in slow start, 2 left for AI
        assert_eq!(x.cwnd, 7);
        assert_eq!(x.cwnd_cnt, 2);
        let mut y = w(10, 100);
        y.cwnd_limited = false;
        tcp_reno_cong_avoid(&mut y, 5);
        assert_eq!(y.cwnd, 10);
    }
}
