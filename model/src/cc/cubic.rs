//! CUBIC (`net/ipv4/tcp_cubic.c`, RFC 9438): `bictcp_update` with the kernel's integer
//! arithmetic (jiffies, `BICTCP_HZ` = 10, `cube_factor`, `cubic_root` with its table and one
//! Newton step), fast convergence, TCP friendliness, the `cnt >= 2` floor, `TX_START` idle
//! handling, `cubictcp_recalc_ssthresh`, the reset on entering Loss. HyStart is in
//! [`super::hystart`]. Written from the behavioural reference, not from kernel text.

use super::{tcp_cong_avoid_ai, tcp_slow_start, CcParams, HystartExit, IdleRestart, Window};
use crate::profile::{CubicIdle, HystartClock, HystartRoundReset};
use crate::seq::after;
use crate::state::CaState;
use serde::{Deserialize, Serialize};

/// `BICTCP_BETA_SCALE`.
pub const BETA_SCALE: u32 = 1024;
/// `beta` module parameter (default).
pub const BETA: u32 = 717;
/// `BICTCP_HZ`: CUBIC's time unit is 2^-10 s.
pub const BICTCP_HZ: u32 = 10;
/// `cube_rtt_scale` = `bic_scale * 10` with `bic_scale` = 41.
pub const CUBE_RTT_SCALE: u32 = 410;
/// `beta_scale` = 8·(1024+717)/3/(1024−717) (integer, left to right) = 15.
pub const BETA_SCALE_FRIENDLY: u32 = 8 * (BETA_SCALE + BETA) / 3 / (BETA_SCALE - BETA);
/// `cube_factor` = 2^(10+3·BICTCP_HZ) / cube_rtt_scale.
pub const CUBE_FACTOR: u64 = (1u64 << (10 + 3 * BICTCP_HZ)) / CUBE_RTT_SCALE as u64;

/// The cube-root table (`v[]` of `cubic_root`): the kernel's numeric data (the first guess of
/// the cube root of small arguments, refined by one Newton-Raphson step).
const V: [u8; 64] = [
    0, 54, 54, 54, 118, 118, 118, 118, 123, 129, 134, 138, 143, 147, 151, 156, 157, 161, 164, 168,
    170, 173, 176, 179, 181, 185, 187, 190, 192, 194, 197, 199, 200, 202, 204, 206, 209, 211, 213,
    215, 217, 219, 221, 222, 224, 225, 227, 229, 231, 232, 234, 236, 237, 239, 240, 242, 244, 245,
    246, 248, 250, 251, 252, 254,
];

/// `fls64()`: 1-based index of the highest set bit, 0 for 0.
pub fn fls64(a: u64) -> u32 {
    64 - a.leading_zeros()
}

/// `cubic_root()`: table estimate, one Newton–Raphson step (u32 arithmetic where the kernel's is).
pub fn cubic_root(a: u64) -> u32 {
    let b = fls64(a);
    if b < 7 {
        return (V[a as usize] as u32 + 35) >> 6;
    }
    let b = ((b * 84) >> 8) - 1;
    let shift = (a >> (b * 3)) as usize;
    let mut x: u32 = ((V[shift] as u32 + 10) << b) >> 6;
    let div = (x as u64).wrapping_mul(x.wrapping_sub(1) as u64);
    x = (2u32.wrapping_mul(x)).wrapping_add(a.checked_div(div).unwrap_or(0) as u32);
    x.wrapping_mul(341) >> 10
}

/// `usecs_to_jiffies()` for HZ dividing 10^6 (rounds up).
pub fn usecs_to_jiffies(u: u32, hz: u32) -> u32 {
    let per = 1_000_000 / hz;
    (u as u64).div_ceil(per as u64) as u32
}

/// `msecs_to_jiffies()` for HZ dividing 1000 (rounds up).
pub fn msecs_to_jiffies(m: u32, hz: u32) -> u32 {
    let per = 1000 / hz;
    (m as u64).div_ceil(per as u64) as u32
}

/// Result of the curve part of `bictcp_update` (from `t` to `cnt`, before friendliness).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Curve {
    /// Time on the curve in 2^-10 s.
    pub t: u64,
    pub delta: u32,
    pub target: u32,
    pub cnt: u32,
}

/// The curve part of `bictcp_update`: `t` = (elapsed jiffies, sign-extended) + delay_min in
/// jiffies, scaled to 2^-10 s; `target = origin ± 410·|t−K|³ >> 40`; `cnt` from the target.
pub fn curve(
    cwnd: u32,
    elapsed_jiffies: i32,
    delay_min_jiffies: u32,
    hz: u32,
    bic_k: u32,
    origin: u32,
    last_max_cwnd: u32,
) -> Curve {
    let mut t: u64 = elapsed_jiffies as i64 as u64;
    t = t.wrapping_add(delay_min_jiffies as u64);
    t <<= BICTCP_HZ;
    t /= hz as u64;
    let k = bic_k as u64;
    let offs = k.abs_diff(t);
    let delta = ((CUBE_RTT_SCALE as u64)
        .wrapping_mul(offs)
        .wrapping_mul(offs)
        .wrapping_mul(offs)
        >> (10 + 3 * BICTCP_HZ)) as u32;
    let target = if t < k {
        origin.wrapping_sub(delta)
    } else {
        origin.wrapping_add(delta)
    };
    let mut cnt = if target > cwnd {
        cwnd / (target - cwnd)
    } else {
        100u32.wrapping_mul(cwnd)
    };
    if last_max_cwnd == 0 && cnt > 20 {
        cnt = 20;
    }
    Curve {
        t,
        delta,
        target,
        cnt,
    }
}

/// `struct bictcp` (CUBIC's private state, incl. HyStart's) plus ghost fields used only by the
/// properties (prefixed `g_`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Cubic {
    /// Increase cwnd by one after `cnt` ACKed packets.
    pub cnt: u32,
    pub last_max_cwnd: u32,
    pub last_cwnd: u32,
    /// Jiffies of the last `bictcp_update` that recomputed `cnt`.
    pub last_time: u32,
    pub bic_origin_point: u32,
    pub bic_k: u32,
    /// Minimum RTT seen (µs; ms<<3 on the pre-5.6 clock).
    pub delay_min: u32,
    /// Jiffies the current epoch began (0 = none).
    pub epoch_start: u32,
    pub ack_cnt: u32,
    /// Estimated Reno cwnd (TCP friendliness).
    pub tcp_cwnd: u32,
    pub sample_cnt: u8,
    pub found: bool,
    /// HyStart round: start time, end sequence, last ACK of the train (clock units), current
    /// round's minimum RTT.
    pub round_start: u32,
    pub end_seq: u32,
    pub last_ack: u32,
    pub curr_rtt: u32,
    /// Ghost: the true round (ends at the first ACK with an RTT sample past its end_seq, tracked
    /// whatever cwnd, state or cwnd-limitedness; restarted where the kernel restarts it on init/RTO).
    pub g_end_seq: u32,
    /// Ghost: true time (µs) of HyStart's last round reset.
    pub g_reset_us: u32,
    /// Ghost: true minimum RTT sample (µs) of the connection.
    pub g_min_rtt_us: u32,
    /// Ghost: minimum of the samples HyStart's delay detector saw since its round reset.
    pub g_round_min: u32,
}

impl Cubic {
    /// `cubictcp_init()` at connection start: reset, HyStart round starts (`hystart` = 1).
    pub fn new(w: &Window) -> Cubic {
        let mut c = Cubic {
            g_min_rtt_us: u32::MAX,
            ..Cubic::default()
        };
        c.bictcp_reset();
        c.hystart_reset(w);
        c.g_end_seq = w.snd_nxt;
        c
    }

    /// `bictcp_reset()`: zero everything from `cnt` through `tcp_cwnd`, and `found`.
    pub fn bictcp_reset(&mut self) {
        self.cnt = 0;
        self.last_max_cwnd = 0;
        self.last_cwnd = 0;
        self.last_time = 0;
        self.bic_origin_point = 0;
        self.bic_k = 0;
        self.delay_min = 0;
        self.epoch_start = 0;
        self.ack_cnt = 0;
        self.tcp_cwnd = 0;
        self.found = false;
    }

    /// HyStart's clock: µs (`tcp_mstamp`) since 5.6, ms before.
    pub fn clock(w: &Window) -> u32 {
        match w.p.clock {
            HystartClock::Usec => w.now_us(),
            HystartClock::Ms => w.now_us() / 1000,
        }
    }

    /// `bictcp_hystart_reset()`: a new HyStart round starts now.
    pub fn hystart_reset(&mut self, w: &Window) {
        let now = Cubic::clock(w);
        self.round_start = now;
        self.last_ack = now;
        self.end_seq = w.snd_nxt;
        self.curr_rtt = u32::MAX;
        self.sample_cnt = 0;
        self.g_reset_us = w.now_us();
        self.g_round_min = u32::MAX;
    }

    /// `cubictcp_recalc_ssthresh()`: epoch ends, fast convergence, `max(cwnd·717/1024, 2)`.
    pub fn recalc_ssthresh(&mut self, w: &Window) -> u32 {
        let cwnd = w.cwnd;
        self.epoch_start = 0;
        if cwnd < self.last_max_cwnd {
            self.last_max_cwnd = cwnd.wrapping_mul(BETA_SCALE + BETA) / (2 * BETA_SCALE);
        } else {
            self.last_max_cwnd = cwnd;
        }
        let s = cwnd.wrapping_mul(BETA) / BETA_SCALE;
        if w.p.no_ssthresh_floor {
            s
        } else {
            s.max(2)
        }
    }

    /// `cubictcp_state()`: entering Loss (RTO) resets CUBIC and HyStart.
    pub fn set_state(&mut self, w: &Window, new: CaState) {
        if new == CaState::Loss && !w.p.no_loss_reset {
            self.bictcp_reset();
            self.hystart_reset(w);
            self.g_end_seq = w.snd_nxt;
        }
    }

    /// `cubictcp_cwnd_event(CA_EVENT_TX_START)`: shift the epoch by the idle time (4.3+), never
    /// into the future (the 2015 follow-up). The idle time is `tcp_jiffies32 - tp->lsndtime`,
    /// `lsndtime_ms` being `tp->lsndtime` in model ms.
    pub fn tx_start(&mut self, w: &Window, lsndtime_ms: u32, idle_ms: u32) -> Option<IdleRestart> {
        let now = w.jiffies();
        let delta = now.wrapping_sub(w.p.jiffies(lsndtime_ms)) as i32;
        let before = self.epoch_start;
        if self.epoch_start != 0 && delta > 0 {
            match w.p.idle {
                CubicIdle::NoShift => {}
                CubicIdle::Shift => self.epoch_start = self.epoch_start.wrapping_add(delta as u32),
                CubicIdle::ShiftClamped => {
                    self.epoch_start = self.epoch_start.wrapping_add(delta as u32);
                    if after(self.epoch_start, now) {
                        self.epoch_start = now;
                    }
                }
            }
        }
        if before == 0 {
            return None;
        }
        let idle_jiffies = now.wrapping_sub(w.p.jiffies(w.now_ms.saturating_sub(idle_ms)));
        Some(IdleRestart {
            epoch_before: before,
            epoch_after: self.epoch_start,
            jiffies: now,
            idle_jiffies,
        })
    }

    /// `delay_min` in jiffies as `bictcp_update` adds it to `t`.
    fn delay_min_jiffies(&self, p: &CcParams) -> u32 {
        match p.clock {
            HystartClock::Usec => usecs_to_jiffies(self.delay_min, p.hz),
            HystartClock::Ms => msecs_to_jiffies(self.delay_min >> 3, p.hz),
        }
    }

    /// `bictcp_update()`: compute `cnt` (ACKed packets per cwnd increment) from the cubic curve
    /// and the Reno estimate.
    pub fn bictcp_update(&mut self, w: &Window, cwnd: u32, acked: u32) {
        let p = &w.p;
        let now = w.jiffies();
        self.ack_cnt = self.ack_cnt.wrapping_add(acked);
        if self.last_cwnd == cwnd && (now.wrapping_sub(self.last_time) as i32) <= (p.hz / 32) as i32
        {
            return;
        }
        if !(self.epoch_start != 0 && now == self.last_time) {
            self.last_cwnd = cwnd;
            self.last_time = now;
            if self.epoch_start == 0 {
                self.epoch_start = now;
                self.ack_cnt = acked;
                self.tcp_cwnd = cwnd;
                if self.last_max_cwnd <= cwnd {
                    self.bic_k = 0;
                    self.bic_origin_point = cwnd;
                } else {
                    self.bic_k =
                        cubic_root(CUBE_FACTOR.wrapping_mul((self.last_max_cwnd - cwnd) as u64));
                    self.bic_origin_point = self.last_max_cwnd;
                }
            }
            let c = curve(
                cwnd,
                now.wrapping_sub(self.epoch_start) as i32,
                self.delay_min_jiffies(p),
                p.hz,
                self.bic_k,
                self.bic_origin_point,
                self.last_max_cwnd,
            );
            self.cnt = c.cnt;
        }
        // TCP friendliness (tcp_friendliness = 1).
        let d = cwnd.wrapping_mul(BETA_SCALE_FRIENDLY) >> 3;
        if d > 0 {
            while self.ack_cnt > d {
                self.ack_cnt -= d;
                self.tcp_cwnd = self.tcp_cwnd.wrapping_add(1);
            }
        }
        if self.tcp_cwnd > cwnd {
            let max_cnt = cwnd / (self.tcp_cwnd - cwnd);
            if self.cnt > max_cnt {
                self.cnt = max_cnt;
            }
        }
        if !p.no_cnt_floor {
            self.cnt = self.cnt.max(2);
        }
    }

    /// `cubictcp_cong_avoid()`.
    pub fn cong_avoid(&mut self, w: &mut Window, mut acked: u32) {
        if !w.cwnd_limited {
            return;
        }
        if w.in_slow_start() {
            // Before 4e1fddc98d25 the HyStart round was reset here (cwnd-limited, slow start only).
            if w.p.round_reset == HystartRoundReset::InCongAvoid
                && w.p.hystart
                && after(w.snd_una, self.end_seq)
            {
                self.hystart_reset(w);
            }
            acked = tcp_slow_start(w, acked);
            if acked == 0 {
                return;
            }
        }
        let cwnd = w.cwnd;
        let view = *w;
        self.bictcp_update(&view, cwnd, acked);
        let cnt = self.cnt;
        tcp_cong_avoid_ai(w, cnt, acked);
    }

    /// `cubictcp_acked()`: the per-ACK RTT sample (µs, < 0: none) for HyStart.
    pub fn acked(&mut self, w: &mut Window, rtt_us: i64) -> Option<HystartExit> {
        if rtt_us < 0 {
            return None;
        }
        // Ghost: true rounds and the true minimum RTT.
        if after(w.snd_una, self.g_end_seq) {
            self.g_end_seq = w.snd_nxt;
        }
        let rtt_us = rtt_us.min(u32::MAX as i64) as u32;
        self.g_min_rtt_us = self.g_min_rtt_us.min(rtt_us);
        let p = w.p;
        if self.epoch_start != 0
            && (w.jiffies().wrapping_sub(self.epoch_start) as i32) < p.hz as i32
        {
            return None;
        }
        self.hystart_acked(w, rtt_us)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::tests::w;

    #[test]
    fn constants() {
        assert_eq!(BETA_SCALE_FRIENDLY, 15);
        assert_eq!(CUBE_FACTOR, 2681735677);
    }

    #[test]
    fn cubic_root_close_to_real() {
        for a in [
            0u64,
            1,
            7,
            8,
            27,
            63,
            64,
            1000,
            1 << 20,
            123_456_789,
            1 << 40,
            u64::MAX >> 4,
        ] {
            let r = cubic_root(a) as f64;
            let exact = (a as f64).cbrt();
            assert!(
                (r - exact).abs() <= exact * 0.1 + 1.0,
                "cbrt({a}) = {r}, exact {exact}"
            );
        }
        assert_eq!(cubic_root(1000), 10);
        assert_eq!(cubic_root(1 << 30), 1024);
    }

    #[test]
    fn epoch_and_concave_growth_after_a_loss() {
        // A loss at cwnd 100 (last_max 100, ssthresh 70); CA from cwnd 70.
        let mut c = Cubic::new(&w(100, 1000));
        let x = w(100, 1000);
        let ss = c.recalc_ssthresh(&x);
        assert_eq!((ss, c.last_max_cwnd), (70, 100));
        let mut y = w(70, 70);
        y.now_ms = 1000;
        c.delay_min = 50_000;
        c.bictcp_update(&y, 70, 1);
        // K = cbrt(30 · 2^40/410) in 2^-10 s (≈ 4.3 s).
        assert_eq!(c.bic_k, cubic_root(CUBE_FACTOR * 30));
        assert!(c.bic_k > 4300 && c.bic_k < 4500, "K = {}", c.bic_k);
        assert!(c.cnt >= 2 && c.cnt < 100, "cnt {}", c.cnt);
        assert_eq!(c.bic_origin_point, 100);
        // Fast convergence: a second loss below last_max.
        let z = w(90, 90);
        c.recalc_ssthresh(&z);
        assert_eq!(c.last_max_cwnd, 90 * 1741 / 2048);
    }

    #[test]
    fn throttle_hz_over_32() {
        let mut c = Cubic::new(&w(20, 10));
        let mut x = w(20, 10);
        x.now_ms = 1000;
        c.bictcp_update(&x, 20, 1);
        let (t0, cnt0) = (c.last_time, c.cnt);
        x.now_ms = 1028; // 7 jiffies later: HZ/32 = 7 → throttled
        c.bictcp_update(&x, 20, 1);
        assert_eq!(c.last_time, t0);
        x.now_ms = 1032; // 8 jiffies
        c.bictcp_update(&x, 20, 1);
        assert_ne!(c.last_time, t0);
        let _ = cnt0;
    }
}
