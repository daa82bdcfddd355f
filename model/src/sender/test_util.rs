//! Hand-built sender states for the unit tests beside the recovery functions (test builds
//! only). Values are the kernel's: one segment is one MSS (1000 bytes, sequence numbers count
//! segments from `isn` 1), IW 10 (the kernel's default initcwnd), CUBIC (ssthresh after a loss
//! at cwnd 10: `max(10 * 717 / 1024, 2)` = 7), RTT 50 ms, timestamps with TSval = send time in
//! ms + `ts_base` 1, `icsk_rto` 63 jiffies = 252 ms at HZ=250.

use super::{Cx, RxOpt};
use crate::config::Config;
use crate::state::*;

/// 12 segments written (so new data exists beyond a first flight of 10), IW 10, otherwise the
/// default bounds (CUBIC, RTT 50 ms, timestamps, F-RTO, `tcp_reordering` 3).
pub fn cfg() -> Config {
    Config {
        segments: 12,
        initcwnd: 10,
        ..Config::default()
    }
}

/// The TSval of a transmission at model time `ms` under [`cfg`] (`tcp_skb_timestamp_ts()`).
pub fn ts(ms: u32) -> u32 {
    ms + 1
}

/// `cx` for an ACK carrying TSecr `tsecr` (`None`: no TS option), as `tcp_ack()` sets
/// `tp->rx_opt`.
pub fn with_tsecr(mut cx: Cx, tsecr: Option<u32>) -> Cx {
    cx.rx = RxOpt {
        saw_tstamp: tsecr.is_some(),
        rcv_tsecr: tsecr.unwrap_or(0),
    };
    cx
}

impl Sender {
    /// A connection (SACK or not) whose first `sent` segments were sent at t=0 and are all
    /// outstanding: Open, cwnd = initcwnd, ssthresh `TCP_INFINITE_SSTHRESH` (slow start).
    pub fn for_test(cfg: &Config, sack: bool, sent: u32) -> Sender {
        let mut s = Sender::new(cfg, sack);
        s.snd_nxt = cfg.isn.wrapping_add(sent);
        s.packets_out = sent;
        s
    }

    /// Adds `TCP_SKB_CB(skb)->sacked` bits to segment `i` (index: seq = isn + i) and keeps
    /// `sacked_out` / `lost_out` / `retrans_out` in step with the newly set S / L / R bits.
    pub fn add_tags(&mut self, i: u32, tags: u8) {
        let new = tags & !self.segs[i as usize].tags;
        self.segs[i as usize].tags |= tags;
        self.sacked_out += (new & tag::S != 0) as u32;
        self.lost_out += (new & tag::L != 0) as u32;
        self.retrans_out += (new & tag::R != 0) as u32;
    }

    /// The segment indices carrying all of `tags`, in sequence order.
    pub fn tagged(&self, tags: u8) -> Vec<u32> {
        (0..self.segs.len() as u32)
            .filter(|&i| self.segs[i as usize].tags & tags == tags)
            .collect()
    }
}
