//! Congestion control behind a trait that mirrors `struct tcp_congestion_ops`
//! (`include/net/tcp.h`): `ssthresh`, `cong_avoid`, `undo_cwnd`, `set_state`, `cwnd_event`,
//! `pkts_acked`. Dispatch is by enum ([`Cc`]) so the state stays `Clone + Hash + Eq`.
//!
//! Implemented here: Reno (`net/ipv4/tcp_cong.c`); CUBIC with HyStart in [`cubic`] and
//! [`hystart`] (`net/ipv4/tcp_cubic.c`, integer arithmetic as the kernel's).

pub mod cubic;
pub mod hystart;

use crate::profile::mutant;
use crate::profile::{
    CubicIdle, HystartClock, HystartCurrRtt, HystartCushion, HystartLowWindow, HystartRoundReset,
    Profile,
};
use crate::state::CaState;
pub use cubic::Cubic;
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

/// Module parameters, environment parameters and profile decision points a congestion-control
/// module reads (not state: rebuilt from `Config` and `Profile` for every call).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CcParams {
    /// `HZ` (jiffies per second).
    pub hz: u32,
    /// µs of the kernel clocks per model millisecond (1000 = the model's ms are real ms).
    pub us_per_ms: u32,
    /// `sk_pacing_status != SK_PACING_NONE` (fq qdisc or internal pacing).
    pub paced: bool,
    /// `sk_gso_max_size` (bytes).
    pub gso_max_size: u32,
    /// `hystart_low_window` module parameter.
    pub hystart_low_window: u32,
    /// `hystart` module parameter.
    pub hystart: bool,
    /// `hystart_detect` module parameter (`HYSTART_ACK_TRAIN` 1 | `HYSTART_DELAY` 2).
    pub hystart_detect: u8,
    /// MSS in bytes (for `sk_pacing_rate`).
    pub mss: u32,
    /// Smoothed RTT in µs (the model's path RTT is fixed).
    pub srtt_us: u32,
    /// µs from the last jiffy boundary at or before model time 0 (`Config::jiffy_phase_us`).
    pub jiffy_phase_us: u32,
    pub clock: HystartClock,
    pub cushion: HystartCushion,
    pub pacing_aware: bool,
    pub curr_rtt: HystartCurrRtt,
    pub round_reset: HystartRoundReset,
    pub low_window: HystartLowWindow,
    pub idle: CubicIdle,
    /// Deliberate mutants (tests only): constant false without trc-model's `mutants` feature.
    pub no_cnt_floor: bool,
    pub no_ssthresh_floor: bool,
    pub no_loss_reset: bool,
}

impl CcParams {
    pub fn new(cfg: &crate::config::Config, prof: &Profile) -> CcParams {
        CcParams {
            hz: cfg.hz,
            us_per_ms: cfg.cc_us_per_ms,
            paced: cfg.pacing,
            gso_max_size: cfg.gso_max_size,
            hystart_low_window: cfg.hystart_low_window,
            hystart: cfg.hystart,
            hystart_detect: cfg.hystart_detect,
            mss: cfg.mss,
            srtt_us: cfg.rtt_ms.saturating_mul(cfg.cc_us_per_ms),
            jiffy_phase_us: cfg.jiffy_phase_us,
            clock: prof.hystart_clock,
            cushion: prof.hystart_cushion,
            pacing_aware: prof.hystart_pacing_aware,
            curr_rtt: prof.hystart_curr_rtt,
            round_reset: prof.hystart_round_reset,
            low_window: prof.hystart_low_window,
            idle: prof.cubic_idle,
            no_cnt_floor: mutant!(prof, CubicNoCntFloor),
            no_ssthresh_floor: mutant!(prof, CubicNoSsthreshFloor),
            no_loss_reset: mutant!(prof, CubicNoLossReset),
        }
    }

    /// `INITIAL_JIFFIES`: the kernel starts jiffies 5 minutes before the u32 wrap.
    pub fn initial_jiffies(&self) -> u32 {
        (300u32.wrapping_mul(self.hz)).wrapping_neg()
    }

    /// `tcp_jiffies32` at model time `ms` (model time 0 is `jiffy_phase_us` after a tick).
    pub fn jiffies(&self, ms: u32) -> u32 {
        let us = ms as u64 * self.us_per_ms as u64 + self.jiffy_phase_us as u64;
        self.initial_jiffies()
            .wrapping_add((us * self.hz as u64 / 1_000_000) as u32)
    }

    /// `tcp_mstamp` truncated to u32 µs at model time `ms`.
    pub fn now_us(&self, ms: u32) -> u32 {
        (ms as u64 * self.us_per_ms as u64) as u32
    }
}

/// The window fields a congestion-control module reads and writes (a view of `tcp_sock`), the
/// clock, and the parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub cwnd: u32,
    pub ssthresh: u32,
    pub cwnd_cnt: u32,
    pub cwnd_clamp: u32,
    pub prior_cwnd: u32,
    /// `tcp_is_cwnd_limited(sk)`, evaluated by the caller.
    pub cwnd_limited: bool,
    pub snd_una: u32,
    pub snd_nxt: u32,
    pub packets_out: u32,
    pub ca_state: CaState,
    /// Model time (ms) of this event.
    pub now_ms: u32,
    pub p: CcParams,
    /// Out: which HyStart detectors ended slow start in this call (ACK train, delay); both can
    /// in one `hystart_update()` (the caller counts TcpExtTCPHystart{Train,Delay}Detect).
    pub hystart_detected: (bool, bool),
}

impl Window {
    /// `tcp_in_slow_start()`.
    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }
    pub fn jiffies(&self) -> u32 {
        self.p.jiffies(self.now_ms)
    }
    pub fn now_us(&self) -> u32 {
        self.p.now_us(self.now_ms)
    }
}

/// How HyStart ended slow start (`LINUX_MIB_TCPHYSTARTTRAINDETECT` / `...DELAYDETECT`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum HystartKind {
    Train,
    Delay,
}

/// Ghost record of a HyStart exit (`found = 1; ssthresh = cwnd`), for the I12/I15 properties.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct HystartExit {
    pub kind: HystartKind,
    pub ca_state: CaState,
    pub cwnd: u32,
    /// ssthresh before HyStart set it to cwnd.
    pub ssthresh_before: u32,
    /// `snd_una` of the ACK.
    pub snd_una: u32,
    /// HyStart's round (`end_seq`) and the true round (tracked on every ACK) at the exit.
    pub end_seq: u32,
    pub true_end_seq: u32,
    /// True µs elapsed since HyStart's round reset, and the true minimum RTT sample (µs).
    pub elapsed_us: u32,
    pub min_rtt_us: u32,
    pub paced: bool,
    /// Delay exit: min of every sample HyStart's delay detector saw this round, `delay_min`,
    /// both in the clock's units, and whether the units are ms<<3 (pre-5.6).
    pub round_min: u32,
    pub delay_min: u32,
    pub ms_units: bool,
}

/// Ghost record of a `CA_EVENT_TX_START` handled by CUBIC with an epoch running.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct IdleRestart {
    pub epoch_before: u32,
    pub epoch_after: u32,
    pub jiffies: u32,
    /// Jiffies of true idleness (nothing in flight) before this send; 0 if unknown.
    pub idle_jiffies: u32,
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
    fn set_state(&mut self, w: &Window, new: CaState);
    /// `.cwnd_event`, with `tp->lsndtime` (model ms: the last time data was sent, a scan of the
    /// segments, so it is computed for these events only and not for every [`Window`]).
    fn cwnd_event(
        &mut self,
        w: &Window,
        ev: CaEvent,
        lsndtime_ms: u32,
        idle_ms: u32,
    ) -> Option<IdleRestart>;
    /// `.pkts_acked`: per-ACK sample from `tcp_clean_rtx_queue` (HyStart hook). `rtt_us` < 0:
    /// none. May set `w.ssthresh` (HyStart's exit).
    fn pkts_acked(&mut self, w: &mut Window, acked: u32, rtt_us: i64) -> Option<HystartExit>;
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Cc {
    Reno,
    Cubic(Cubic),
}

impl CongestionOps for Cc {
    /// Reno: `tcp_reno_ssthresh` = `max(cwnd >> 1, 2)`; CUBIC: `cubictcp_recalc_ssthresh`.
    fn ssthresh(&mut self, w: &Window) -> u32 {
        match self {
            Cc::Reno => (w.cwnd >> 1).max(2),
            Cc::Cubic(c) => c.recalc_ssthresh(w),
        }
    }

    fn cong_avoid(&mut self, w: &mut Window, acked: u32) {
        match self {
            Cc::Reno => tcp_reno_cong_avoid(w, acked),
            Cc::Cubic(c) => c.cong_avoid(w, acked),
        }
    }

    fn undo_cwnd(&mut self, w: &Window) -> u32 {
        tcp_reno_undo_cwnd(w)
    }

    fn set_state(&mut self, w: &Window, new: CaState) {
        if let Cc::Cubic(c) = self {
            c.set_state(w, new);
        }
    }

    fn cwnd_event(
        &mut self,
        w: &Window,
        ev: CaEvent,
        lsndtime_ms: u32,
        idle_ms: u32,
    ) -> Option<IdleRestart> {
        match self {
            Cc::Cubic(c) if ev == CaEvent::TxStart => c.tx_start(w, lsndtime_ms, idle_ms),
            _ => None,
        }
    }

    fn pkts_acked(&mut self, w: &mut Window, _acked: u32, rtt_us: i64) -> Option<HystartExit> {
        match self {
            Cc::Reno => None,
            Cc::Cubic(c) => c.acked(w, rtt_us),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn w(cwnd: u32, ssthresh: u32) -> Window {
        let cfg = crate::config::Config::default();
        let prof = Profile::linux_6_18();
        Window {
            cwnd,
            ssthresh,
            cwnd_cnt: 0,
            cwnd_clamp: u32::MAX,
            prior_cwnd: 0,
            cwnd_limited: true,
            snd_una: 1,
            snd_nxt: 1,
            packets_out: 0,
            ca_state: CaState::Open,
            now_ms: 0,
            p: CcParams::new(&cfg, &prof),
            hystart_detected: (false, false),
        }
    }

    #[test]
    fn cubic_loss_response() {
        let mut c = Cc::Cubic(Cubic::default());
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

    #[test]
    fn jiffies_start_before_the_wrap() {
        let p = w(1, 1).p;
        assert_eq!(p.jiffies(0), (-(300i64 * 250)) as u32);
        assert_eq!(p.jiffies(4).wrapping_sub(p.jiffies(0)), 1);
        assert_eq!(p.jiffies(3).wrapping_sub(p.jiffies(0)), 0);
        assert_eq!(p.now_us(7), 7000);
    }

    #[test]
    fn jiffy_phase_moves_the_ticks() {
        // Model time 0 is 1 ms after a tick: 404 and 407 ms fall in different jiffies (with
        // phase 0 both are in jiffy 101 after the start).
        let p0 = w(1, 1).p;
        let p1 = CcParams {
            jiffy_phase_us: 1000,
            ..p0
        };
        assert_eq!(p0.jiffies(407), p0.jiffies(404));
        assert_eq!(p1.jiffies(407).wrapping_sub(p1.jiffies(404)), 1);
        assert_eq!(p1.jiffies(0), p0.jiffies(0));
        assert_eq!(p1.jiffies(3).wrapping_sub(p1.jiffies(0)), 1);
    }
}
