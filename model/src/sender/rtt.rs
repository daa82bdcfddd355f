//! RTT estimation (tcp_input.c, include/net/tcp.h, lib/win_minmax.c), in the kernel's units
//! (µs; `srtt_us` scaled by 8, `mdev_us` by 4; `icsk_rto` in jiffies): the sample
//! `tcp_clean_rtx_queue()` takes (Karn's rule: none from an ACK that covers retransmitted data,
//! else the oldest newly cumulatively ACKed segment, else the oldest newly SACKed one, else the
//! TS echo), `tcp_ack_update_rtt()`, Van Jacobson's `tcp_rtt_estimator()`, `tcp_set_rto()`
//! (`__tcp_set_rto()`, `tcp_bound_rto()`), and the windowed `min_rtt` filter
//! (`tcp_update_rtt_min()`, `minmax_running_min()`).
//!
//! With [`Config::rtt_estimator`](crate::Config) off (the exhaustive checker's default) no
//! sample is taken: the estimator keeps the values the handshake's RTT gave it
//! ([`RttEst::after_handshake`]), which is the model's fixed-RTT abstraction, and the
//! reordering window keeps the model's whole-ms arithmetic ([`Sender::tcp_rack_reo_wnd`]).

use super::Cx;
use crate::config::Config;
use crate::seq::after;
use crate::state::{MinMax, RttEst, Sender, TCP_RTO_MAX_MS, TCP_RTO_MIN_MS};

/// `TCP_TS_HZ`: the TS clock ticks in ms.
const USEC_PER_TS_TICK: u32 = 1000;

/// `sysctl_tcp_min_rtt_wlen`'s default (seconds): the `min_rtt` filter's window.
pub const TCP_MIN_RTT_WLEN_S: u32 = 300;

/// `tcp_rto_min_us()` (`TCP_RTO_MIN`, no route or socket override).
pub const TCP_RTO_MIN_US: u32 = TCP_RTO_MIN_MS * 1000;

/// `tcp_jiffies32` at model time `ms` (the µs clock, `INITIAL_JIFFIES` and the jiffy phase as
/// CUBIC's: `CcParams::jiffies` with 1000 µs per ms).
fn jiffies_at(cfg: &Config, ms: u32) -> u32 {
    let us = ms as u64 * 1000 + cfg.jiffy_phase_us as u64;
    (300u32.wrapping_mul(cfg.hz))
        .wrapping_neg()
        .wrapping_add((us * cfg.hz as u64 / 1_000_000) as u32)
}

impl MinMax {
    /// `minmax_get()`.
    pub fn get(&self) -> u32 {
        self.s[0].1
    }

    /// `minmax_reset()`: every choice is the new sample.
    pub fn reset(&mut self, t: u32, v: u32) -> u32 {
        self.s = [(t, v); 3];
        v
    }

    /// `minmax_running_min()` (lib/win_minmax.c, Kathleen Nichols' windowed min filter,
    /// a4f1f9ac8153; `tcp_min_rtt()` reads it since the min-RTT filter replaced the lifetime
    /// minimum): keeps the best, second and third choices of the last `win` time units.
    pub fn running_min(&mut self, win: u32, t: u32, meas: u32) -> u32 {
        let val = (t, meas);
        if meas <= self.s[0].1 || t.wrapping_sub(self.s[2].0) > win {
            return self.reset(t, meas);
        }
        if meas <= self.s[1].1 {
            self.s[2] = val;
            self.s[1] = val;
        } else if meas <= self.s[2].1 {
            self.s[2] = val;
        }
        self.subwin_update(win, val)
    }

    /// `minmax_subwin_update()`: as time passes, age the choices out of the window.
    fn subwin_update(&mut self, win: u32, val: (u32, u32)) -> u32 {
        let dt = val.0.wrapping_sub(self.s[0].0);
        if dt > win {
            self.s[0] = self.s[1];
            self.s[1] = self.s[2];
            self.s[2] = val;
            if val.0.wrapping_sub(self.s[0].0) > win {
                self.s[0] = self.s[1];
                self.s[1] = self.s[2];
                self.s[2] = val;
            }
        } else if self.s[1].0 == self.s[0].0 && dt > win / 4 {
            self.s[2] = val;
            self.s[1] = val;
        } else if self.s[2].0 == self.s[1].0 && dt > win / 2 {
            self.s[2] = val;
        }
        self.s[0].1
    }
}

impl RttEst {
    /// The estimator after the passive open: `tcp_synack_rtt_meas()` feeds the SYN-ACK's RTT
    /// (`cfg.rtt_ms`, the handshake's) to `tcp_ack_update_rtt()` with no earlier sample:
    /// srtt = rtt, mdev = rtt/2·4, rttvar = max(mdev, `tcp_rto_min`), `rtt_seq` = `snd_nxt`
    /// (`isn`), `min_rtt` = rtt at jiffy 0 (the model's clock starts when the handshake ends),
    /// `icsk_rto` = `usecs_to_jiffies(srtt + rttvar)` (63 jiffies at RTT 50 ms, HZ=250).
    pub fn after_handshake(cfg: &Config) -> RttEst {
        let m = cfg.rtt_ms.saturating_mul(1000).max(1);
        let mdev_us = m.saturating_mul(2);
        let rttvar_us = mdev_us.max(TCP_RTO_MIN_US);
        let mut e = RttEst {
            srtt_us: m.saturating_mul(8),
            mdev_us,
            mdev_max_us: rttvar_us,
            rttvar_us,
            rtt_seq: cfg.isn,
            rto: 0,
            rtt_min: MinMax::default(),
        };
        e.rtt_min.reset(jiffies_at(cfg, 0), m);
        e.rto = e.set_rto(cfg);
        e
    }

    /// `__tcp_set_rto()` and `tcp_bound_rto()`: `usecs_to_jiffies(srtt + rttvar)`, at most
    /// `TCP_RTO_MAX`.
    fn set_rto(&self, cfg: &Config) -> u32 {
        let us = (self.srtt_us >> 3).saturating_add(self.rttvar_us);
        let max = (TCP_RTO_MAX_MS as u64 * cfg.hz as u64 / 1000) as u32;
        crate::cc::cubic::usecs_to_jiffies(us, cfg.hz).min(max)
    }
}

impl Sender {
    /// `tcp_min_rtt()`: the windowed minimum RTT (µs).
    pub fn tcp_min_rtt(&self) -> u32 {
        self.rtt_est.rtt_min.get()
    }

    /// `tp->srtt_us >> 3`: the smoothed RTT (µs).
    pub fn srtt_us(&self) -> u32 {
        self.rtt_est.srtt_us >> 3
    }

    /// `tcp_rtt_tsopt_us(tp, min_delta)`: the RTT the TS echo gives (µs), at least
    /// `min_delta` ticks; `None` for an echo from the future or too old (`delta >= INT_MAX /
    /// 1000`).
    pub fn tcp_rtt_tsopt_us(&self, cx: &Cx, min_delta: u32) -> Option<i64> {
        let delta = cx.ts_now().wrapping_sub(cx.rx.rcv_tsecr);
        if delta >= i32::MAX as u32 / USEC_PER_TS_TICK {
            return None;
        }
        Some(delta.max(min_delta) as i64 * USEC_PER_TS_TICK as i64)
    }

    /// `tcp_ack_update_rtt()`: pick the sample (the ACK's own timing, else the SACK's, else —
    /// RTTM, RFC 7323 — the TS echo of an ACK that acknowledges new data) and feed it to the
    /// `min_rtt` filter and the estimator, then recompute the RTO; RFC 6298: a valid sample
    /// resets the backoff. Returns `(updated, ca_rtt_us)` (the congestion control's sample, -1
    /// for none). Without [`Config::rtt_estimator`](crate::Config) only the backoff reset is
    /// kept (the samples are the model's fixed RTT). The TS sample's fallback is from
    /// 740b0f1841f6 (v3.15); `FLAG_ACK_MAYBE_DELAYED` (a one-segment ACK of less than an MSS)
    /// never holds for the model's whole-MSS segments.
    pub fn tcp_ack_update_rtt(
        &mut self,
        cx: &Cx,
        acked: bool,
        mut seq_rtt_us: i64,
        sack_rtt_us: i64,
        mut ca_rtt_us: i64,
    ) -> (bool, i64) {
        if seq_rtt_us < 0 {
            seq_rtt_us = sack_rtt_us;
        }
        if seq_rtt_us < 0 && cx.rx.saw_tstamp && cx.rx.rcv_tsecr != 0 && acked {
            if let Some(ts) = self.tcp_rtt_tsopt_us(cx, 1) {
                seq_rtt_us = ts;
                ca_rtt_us = ts;
            }
        }
        if seq_rtt_us < 0 {
            return (false, ca_rtt_us);
        }
        if cx.cfg.rtt_estimator {
            self.tcp_update_rtt_min(cx, ca_rtt_us.max(0) as u32);
            self.tcp_rtt_estimator(seq_rtt_us);
            self.tcp_set_rto(cx);
        }
        self.icsk_backoff = 0;
        (true, ca_rtt_us)
    }

    /// `tcp_update_rtt_min()`: the sample into the windowed minimum (a zero sample counts as one
    /// jiffy; the window is `tcp_min_rtt_wlen` seconds).
    pub fn tcp_update_rtt_min(&mut self, cx: &Cx, rtt_us: u32) {
        let wlen = TCP_MIN_RTT_WLEN_S * cx.cfg.hz;
        let v = if rtt_us == 0 {
            1_000_000 / cx.cfg.hz
        } else {
            rtt_us
        };
        let now = jiffies_at(cx.cfg, cx.now);
        self.rtt_est.rtt_min.running_min(wlen, now, v);
    }

    /// `tcp_rtt_estimator()` (Van Jacobson, SIGCOMM '88, with Linux's variant: `mdev` gains only
    /// 1/32 on a sample below srtt; `rttvar` follows the largest `mdev` of the last RTT
    /// (`mdev_max`) up at once and down by a quarter of the gap once per RTT, never below
    /// `tcp_rto_min`), in µs since 740b0f1841f6 (v3.15).
    pub fn tcp_rtt_estimator(&mut self, mrtt_us: i64) {
        let e = &mut self.rtt_est;
        let mut m = mrtt_us;
        let mut srtt = e.srtt_us as i64;
        if srtt != 0 {
            m -= srtt >> 3;
            srtt += m;
            if m < 0 {
                m = -m;
                m -= (e.mdev_us >> 2) as i64;
                if m > 0 {
                    m >>= 3;
                }
            } else {
                m -= (e.mdev_us >> 2) as i64;
            }
            e.mdev_us = (e.mdev_us as i64 + m) as u32;
            if e.mdev_us > e.mdev_max_us {
                e.mdev_max_us = e.mdev_us;
                if e.mdev_max_us > e.rttvar_us {
                    e.rttvar_us = e.mdev_max_us;
                }
            }
            if after(self.snd_una, e.rtt_seq) {
                if e.mdev_max_us < e.rttvar_us {
                    e.rttvar_us -= (e.rttvar_us - e.mdev_max_us) >> 2;
                }
                e.rtt_seq = self.snd_nxt;
                e.mdev_max_us = TCP_RTO_MIN_US;
            }
        } else {
            srtt = m << 3;
            e.mdev_us = (m << 1) as u32;
            e.rttvar_us = e.mdev_us.max(TCP_RTO_MIN_US);
            e.mdev_max_us = e.rttvar_us;
            e.rtt_seq = self.snd_nxt;
        }
        e.srtt_us = srtt.clamp(1, u32::MAX as i64) as u32;
    }

    /// `tcp_set_rto()`: `icsk_rto` from srtt and rttvar (`__tcp_set_rto()`), bounded by
    /// `TCP_RTO_MAX` (`tcp_bound_rto()`); the backoff applies on top ([`Sender::icsk_rto_jiffies`]).
    pub fn tcp_set_rto(&mut self, cx: &Cx) {
        self.rtt_est.rto = self.rtt_est.set_rto(cx.cfg);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// After the handshake at RTT 50 ms: srtt 50 ms, rttvar at its 200 ms floor, RTO 63 jiffies
    /// (252 ms) at HZ=250, min_rtt 50 ms.
    #[test]
    fn handshake_values() {
        let cfg = Config::default();
        let e = RttEst::after_handshake(&cfg);
        assert_eq!(e.srtt_us >> 3, 50_000);
        assert_eq!(e.mdev_us, 100_000);
        assert_eq!(e.rttvar_us, 200_000);
        assert_eq!(e.rto, 63);
        assert_eq!(e.rtt_min.get(), 50_000);
    }

    /// A sample of 150 ms (a delayed segment) after samples of 50: srtt += 100/8 ms = 62.5 ms,
    /// mdev = 3/4·mdev + 1/4·|err|, which lifts rttvar above its floor; the RTO grows with it.
    #[test]
    fn a_late_sample_grows_the_rto() {
        let cfg = Config {
            rtt_estimator: true,
            ..super::super::test_util::cfg()
        };
        let prof = crate::Profile::linux_6_18();
        let mut s = Sender::for_test(&cfg, true, 10);
        let cx = Cx::new(&cfg, &prof, 100, false);
        s.tcp_rtt_estimator(50_000);
        assert_eq!(s.srtt_us(), 50_000);
        assert_eq!(s.rtt_est.mdev_us, 75_000, "100 - 100/4 + 0");
        s.tcp_rtt_estimator(150_000);
        assert_eq!(s.srtt_us(), 62_500);
        // m = 100000 - 75000/4 = 81250; mdev = 75000 + 81250.
        assert_eq!(s.rtt_est.mdev_us, 156_250);
        s.tcp_set_rto(&cx);
        // rttvar = max(200 ms, mdev_max) = 200 ms (mdev 156 ms): RTO = 262.5 ms → 66 jiffies.
        assert_eq!(s.rtt_est.rto, 66);
        s.tcp_rtt_estimator(400_000);
        s.tcp_set_rto(&cx);
        assert!(s.rtt_est.rttvar_us > 200_000, "{:?}", s.rtt_est);
    }

    /// The windowed min filter: a smaller sample replaces the minimum at once; a larger one
    /// takes over only after the window passed.
    #[test]
    fn min_filter_window() {
        let mut m = MinMax::default();
        m.reset(0, 50_000);
        assert_eq!(m.running_min(100, 10, 60_000), 50_000);
        assert_eq!(m.running_min(100, 20, 40_000), 40_000);
        assert_eq!(m.running_min(100, 130, 70_000), 70_000);
    }

    /// The TS sample counts a same-tick echo as one tick (`min_delta` 1).
    #[test]
    fn ts_sample_min_delta() {
        let cfg = super::super::test_util::cfg();
        let prof = crate::Profile::linux_6_18();
        let s = Sender::for_test(&cfg, true, 10);
        let mut cx = Cx::new(&cfg, &prof, 100, false);
        cx.rx.saw_tstamp = true;
        cx.rx.rcv_tsecr = cx.ts_now();
        assert_eq!(s.tcp_rtt_tsopt_us(&cx, 1), Some(1000));
        cx.rx.rcv_tsecr = cx.ts_now().wrapping_sub(50);
        assert_eq!(s.tcp_rtt_tsopt_us(&cx, 1), Some(50_000));
    }
}
