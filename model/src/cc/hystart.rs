//! HyStart (inside `tcp_cubic.c`; its history in docs/reference/profiles.md): rounds, ACK-train and delay
//! detection, the low window, sample counting, the pacing-aware threshold and the ACK-delay
//! cushion. Every historical variant is a profile decision point.

use super::cubic::Cubic;
use super::{HystartExit, HystartKind, Window};
use crate::profile::{
    HystartClock, HystartCurrRtt, HystartCushion, HystartLowWindow, HystartRoundReset,
};
use crate::seq::after;

/// `HYSTART_ACK_TRAIN`, `HYSTART_DELAY`: the bits of the `hystart_detect` module parameter.
pub const HYSTART_ACK_TRAIN: u8 = 1;
pub const HYSTART_DELAY: u8 = 2;

/// `HYSTART_MIN_SAMPLES`.
pub const HYSTART_MIN_SAMPLES: u8 = 8;
/// `hystart_ack_delta_us` (5.6+).
pub const ACK_DELTA_US: i32 = 2000;
/// `hystart_ack_delta` in ms (before 5.6).
pub const ACK_DELTA_MS: i32 = 2;

/// `HYSTART_DELAY_THRESH(x)`: `clamp(x, 4 ms, 16 ms)` in the clock's units.
pub fn delay_thresh(x: u32, clock: HystartClock) -> u32 {
    match clock {
        HystartClock::Usec => x.clamp(4000, 16000),
        HystartClock::Ms => x.clamp(4 << 3, 16 << 3),
    }
}

/// `sk_pacing_rate` (bytes/s) as `tcp_update_pacing_rate()` sets it for a stable RTT:
/// `mss · 80000 · ratio · max(cwnd, packets_out) / (srtt_us << 3)`, ratio 200 in the first half
/// of slow start, else 120.
pub fn pacing_rate(w: &Window) -> u64 {
    let ratio: u64 = if w.cwnd < w.ssthresh / 2 { 200 } else { 120 };
    let rate = w.p.mss as u64 * 80_000 * ratio * w.cwnd.max(w.packets_out) as u64;
    rate.checked_div((w.p.srtt_us as u64) << 3).unwrap_or(rate)
}

/// `hystart_ack_delay()`: expected delay of a GSO packet at the pacing rate, capped at 1 ms.
pub fn ack_delay(w: &Window) -> u32 {
    let rate = pacing_rate(w);
    if rate == 0 {
        return 0;
    }
    (w.p.gso_max_size as u64 * 4 * 1_000_000 / rate).min(1000) as u32
}

impl Cubic {
    /// The part of `cubictcp_acked()` after the epoch check: `delay_min` and the HyStart gate.
    pub(crate) fn hystart_acked(&mut self, w: &mut Window, rtt_us: u32) -> Option<HystartExit> {
        let p = w.p;
        let mut delay = match p.clock {
            HystartClock::Usec => rtt_us,
            HystartClock::Ms => ((rtt_us as u64) << 3).checked_div(1000).unwrap_or(0) as u32,
        };
        if delay == 0 {
            delay = 1;
        }
        if self.delay_min == 0 || self.delay_min > delay {
            if p.cushion == HystartCushion::DelayMin {
                // The seed series (net-next, Dec 2019): the cushion was added to delay_min.
                let with = delay.wrapping_add(ack_delay(w));
                if self.delay_min == 0 || self.delay_min > with {
                    self.delay_min = with;
                }
            } else {
                self.delay_min = delay;
            }
        }
        let low_ok = p.low_window != HystartLowWindow::InAcked || w.cwnd >= p.hystart_low_window;
        if !self.found && w.in_slow_start() && p.hystart && low_ok {
            return self.hystart_update(w, delay);
        }
        None
    }

    fn exit(&self, w: &Window, kind: HystartKind, ssthresh_before: u32) -> HystartExit {
        HystartExit {
            kind,
            ca_state: w.ca_state,
            cwnd: w.cwnd,
            ssthresh_before,
            snd_una: w.snd_una,
            end_seq: self.end_seq,
            true_end_seq: self.g_end_seq,
            elapsed_us: w.now_us().wrapping_sub(self.g_reset_us),
            min_rtt_us: self.g_min_rtt_us,
            paced: w.p.paced,
            round_min: self.g_round_min,
            delay_min: self.delay_min,
            ms_units: w.p.clock == HystartClock::Ms,
        }
    }

    /// `hystart_update()`.
    fn hystart_update(&mut self, w: &mut Window, delay: u32) -> Option<HystartExit> {
        let p = w.p;
        if p.round_reset == HystartRoundReset::InHystartUpdate && after(w.snd_una, self.end_seq) {
            self.hystart_reset(w);
        }
        if p.low_window == HystartLowWindow::AfterRoundReset && w.cwnd < p.hystart_low_window {
            return None;
        }
        let mut ex = None;
        if p.hystart_detect & HYSTART_ACK_TRAIN != 0 {
            ex = self.hystart_ack_train(w);
        }
        if p.hystart_detect & HYSTART_DELAY != 0 {
            if let Some(d) = self.hystart_delay(w, delay) {
                ex.get_or_insert(d);
            }
        }
        ex
    }

    /// `hystart_update()`'s ACK-train detector (`hystart_detect & HYSTART_ACK_TRAIN`): the
    /// round's ACKs, each within `hystart_ack_delta` of the last, span more than half the
    /// minimum delay.
    fn hystart_ack_train(&mut self, w: &mut Window) -> Option<HystartExit> {
        let p = w.p;
        let now = Cubic::clock(w);
        let delta_lim = match p.clock {
            HystartClock::Usec => ACK_DELTA_US,
            HystartClock::Ms => ACK_DELTA_MS,
        };
        if (now.wrapping_sub(self.last_ack) as i32) > delta_lim {
            return None;
        }
        self.last_ack = now;
        let threshold = match p.clock {
            HystartClock::Ms => self.delay_min >> 4,
            HystartClock::Usec => {
                let mut t = self.delay_min;
                if p.cushion == HystartCushion::Threshold {
                    t = t.wrapping_add(ack_delay(w));
                }
                if !(p.pacing_aware && p.paced) {
                    t >>= 1;
                }
                t
            }
        };
        if now.wrapping_sub(self.round_start) <= threshold {
            return None;
        }
        self.found = true;
        let ex = self.exit(w, HystartKind::Train, w.ssthresh);
        w.hystart_detected.0 = true;
        w.ssthresh = w.cwnd;
        Some(ex)
    }

    /// `hystart_update()`'s delay detector (`hystart_detect & HYSTART_DELAY`): after
    /// `HYSTART_MIN_SAMPLES` samples of the round, their minimum exceeds `delay_min` by
    /// `HYSTART_DELAY_THRESH`.
    fn hystart_delay(&mut self, w: &mut Window, delay: u32) -> Option<HystartExit> {
        let p = w.p;
        self.g_round_min = self.g_round_min.min(delay);
        if p.curr_rtt == HystartCurrRtt::AllSamples && self.curr_rtt > delay {
            self.curr_rtt = delay;
        }
        if self.sample_cnt < HYSTART_MIN_SAMPLES {
            if p.curr_rtt == HystartCurrRtt::First8 && self.curr_rtt > delay {
                self.curr_rtt = delay;
            }
            self.sample_cnt += 1;
            return None;
        }
        if self.curr_rtt
            <= self
                .delay_min
                .wrapping_add(delay_thresh(self.delay_min >> 3, p.clock))
        {
            return None;
        }
        self.found = true;
        let ex = self.exit(w, HystartKind::Delay, w.ssthresh);
        w.hystart_detected.1 = true;
        w.ssthresh = w.cwnd;
        Some(ex)
    }
}
