//! Exact state-space reductions: canonical forms applied to every state the model produces
//! (`init_states`, `next_state`), so that states differing only in values nothing will ever read
//! again hash alike. Each is exact: the merged states have the same successors (up to the same
//! canonical form) and the same verdict for every checked property, so the reduced exploration
//! reports the same verdicts with counterexamples of the same length (docs/explanation/performance.md,
//! "Reductions"). All are off by default ([`Reduce::default`]); `trc check --reduce` turns them on.
//!
//! * [`Reduce::ev`] — the step's ghost observations (`sender.ghost.ev`) are cleared at the start
//!   of every step and never read by the model; only properties read them, and only on the
//!   state they belong to. In a state where every checked (`always`) property holds, `ev` is
//!   replaced by `Events::default()` when every property still holds afterwards (checked, not
//!   assumed), so the state's verdicts are unchanged; states violating a property keep `ev`.
//! * [`Reduce::dead_ghosts`] — persistent ghost fields that no checked property reads, directly
//!   or through the step observations they feed (e.g. `rtx_mask` only feeds
//!   `Events::undo_rtx`, read only by I1), are reset to their initial values. The model never
//!   reads a ghost field to decide kernel behaviour (ghosts only flow into ghosts).
//! * [`Reduce::dead_times`] — time stamps the model never reads again: the `xmit` of unsent
//!   segments (overwritten when sent), the `xmit` of segments below `snd_una` (read only through
//!   `lsndtime` = the maximum over sent segments, which is preserved), and with timestamps off
//!   `retrans_stamp`'s value (then only compared with 0). The send-order ranks of one ms
//!   (`Seg::sub`, `Rack::sub`) are zeroed with those stamps and otherwise renumbered 1, 2, ...
//!   in their order: RACK only compares them (`tcp_rack_sent_after`) and a new transmission
//!   takes a rank above them all, so only their order is ever read.

use crate::config::{CcKind, Config};
use crate::model::State;
use crate::state::{stamp_ms, Events, Seg, Sender};
use smallvec::SmallVec;

/// A set of persistent ghost fields (bit set).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct GhostSet(pub u8);

impl GhostSet {
    pub const NONE: GhostSet = GhostSet(0);
    /// `State::ghost.orig_dropped`.
    pub const ORIG_DROPPED: GhostSet = GhostSet(1);
    /// `SenderGhost::rtx_mask` (→ `Events::undo_rtx`).
    pub const RTX_MASK: GhostSet = GhostSet(2);
    /// `SenderGhost::ever_rtx_mask`.
    pub const EVER_RTX_MASK: GhostSet = GhostSet(4);
    /// `SenderGhost::episode`.
    pub const EPISODE: GhostSet = GhostSet(8);
    /// `SenderGhost::last_reduction` (→ `Reduction::prev`).
    pub const LAST_REDUCTION: GhostSet = GhostSet(16);
    /// CUBIC's `g_end_seq`, `g_reset_us`, `g_min_rtt_us`, `g_round_min` (→ `HystartExit`).
    pub const HYSTART: GhostSet = GhostSet(32);
    /// `SenderGhost::{frto_ref, frto_owed}` (the reference F-RTO judgement, I19).
    pub const FRTO_REF: GhostSet = GhostSet(64);
    /// `SenderGhost::undo_owed` (→ a lost proof in `Events::eifel`, I20e).
    pub const UNDO_OWED: GhostSet = GhostSet(128);
    pub const ALL: GhostSet = GhostSet(255);

    pub fn union(self, o: GhostSet) -> GhostSet {
        GhostSet(self.0 | o.0)
    }
    pub fn minus(self, o: GhostSet) -> GhostSet {
        GhostSet(self.0 & !o.0)
    }
    pub fn has(self, o: GhostSet) -> bool {
        self.0 & o.0 == o.0 && o.0 != 0
    }
}

/// Which reductions the model applies (all off by default).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Reduce {
    /// Clear `sender.ghost.ev` in states where every checked property holds (and still holds).
    pub ev: bool,
    /// Persistent ghost fields to reset (those no checked property reads).
    pub dead_ghosts: GhostSet,
    /// Canonicalise time stamps the model never reads again.
    pub dead_times: bool,
}

impl Reduce {
    /// Every reduction, given the ghost fields the checked properties read.
    pub fn all(live_ghosts: GhostSet) -> Reduce {
        Reduce {
            ev: true,
            dead_ghosts: GhostSet::ALL.minus(live_ghosts),
            dead_times: true,
        }
    }

    pub fn is_off(&self) -> bool {
        *self == Reduce::default()
    }

    /// The state-only canonicalisations (`dead_ghosts`, `dead_times`); `ev` needs the properties
    /// and is applied by `TcpModel`.
    pub fn canonicalize(&self, cfg: &Config, s: &mut State) {
        let d = self.dead_ghosts;
        if d.has(GhostSet::ORIG_DROPPED) {
            s.ghost.orig_dropped.clear();
        }
        let g = &mut s.sender.ghost;
        if d.has(GhostSet::RTX_MASK) {
            g.rtx_mask.clear();
        }
        if d.has(GhostSet::EVER_RTX_MASK) {
            g.ever_rtx_mask.clear();
        }
        if d.has(GhostSet::EPISODE) {
            g.episode = None;
        }
        if d.has(GhostSet::LAST_REDUCTION) {
            g.last_reduction = None;
        }
        if d.has(GhostSet::FRTO_REF) {
            g.frto_ref = false;
            g.frto_owed = None;
        }
        if d.has(GhostSet::UNDO_OWED) {
            g.undo_owed = None;
        }
        if d.has(GhostSet::HYSTART) {
            if let crate::cc::Cc::Cubic(c) = &mut s.sender.cc {
                c.g_end_seq = 0;
                c.g_reset_us = 0;
                c.g_min_rtt_us = 0;
                c.g_round_min = 0;
            }
        }
        if self.dead_times {
            dead_times(cfg, s);
        }
    }

    /// Clears the step observations (the `ev` reduction's canonical form).
    pub fn clear_ev(s: &mut State) {
        s.sender.ghost.ev = Events::default();
    }
}

/// `dead_times`: see the module documentation.
fn dead_times(cfg: &Config, s: &mut State) {
    let snd = &mut s.sender;
    if !snd.ts_ok && snd.retrans_stamp != 0 {
        // Without timestamps `tcp_tsopt_ecr_before` is false (no `saw_tstamp`), so the stamp is
        // only ever compared with 0 (`tcp_packet_delayed`, `tcp_retransmit_skb`).
        snd.retrans_stamp = 1;
    }
    let una = snd.snd_una.wrapping_sub(cfg.isn) as usize;
    let nxt = (snd.snd_nxt.wrapping_sub(cfg.isn) as usize).min(snd.segs.len());
    let una = una.min(nxt);
    // Unsent segments: `tcp_transmit_new` overwrites the whole entry before anything reads it.
    for seg in &mut snd.segs[nxt..] {
        seg.xmit = 0;
        seg.sub = 0;
    }
    // Segments below snd_una: only `lsndtime()` (max over sent segments; CUBIC's idle restart)
    // reads them. Keep that maximum, in the last stale entry, only where a live segment does not
    // already reach it; under Reno `lsndtime` is never used.
    let stale_max = snd.segs[..una].iter().map(|x| x.xmit).max().unwrap_or(0);
    let live_max = snd.segs[una..nxt].iter().map(|x| x.xmit).max();
    let keep = cfg.cc == CcKind::Cubic && live_max.is_none_or(|m| m < stale_max);
    for seg in &mut snd.segs[..una] {
        seg.xmit = 0;
        seg.sub = 0;
    }
    if keep && una > 0 {
        snd.segs[una - 1].xmit = stale_max;
    }
    canonical_ranks(snd, una, nxt);
}

/// The send-order ranks of the live segments `[una, nxt)` and of RACK's reference, renumbered
/// 1, 2, ... within each ms in their order (equal stamps stay equal: the reference may be a live
/// segment's own transmission); the reference's rank is 0 when no live segment shares its ms.
/// Exact: `tcp_rack_sent_after()` and the tsorted order only compare stamps, and `stamp_xmit()`
/// gives a new transmission a rank above every rank of its ms, whatever their values.
fn canonical_ranks(snd: &mut Sender, una: usize, nxt: usize) {
    if !snd.sack_ok {
        return; // no ranks: `stamp_xmit()` leaves them 0 without SACK
    }
    let live = una..nxt;
    let reference = snd.rack.mstamp;
    let shared = snd.segs[live.clone()].iter().any(|x| x.xmit == reference);
    // On the stack (the live segments of a bounded run fit): this runs for every produced state.
    let mut stamps: SmallVec<[u64; 32]> = snd.segs[live.clone()].iter().map(Seg::stamp).collect();
    if shared {
        stamps.push(snd.rack.stamp());
    }
    stamps.sort_unstable();
    stamps.dedup();
    // 1 + the number of distinct stamps of the same ms below `t`.
    let dense = |t: u64| {
        let first = stamps.partition_point(|&u| stamp_ms(u) < stamp_ms(t));
        (stamps.partition_point(|&u| u < t) - first + 1) as u16
    };
    for seg in &mut snd.segs[live] {
        seg.sub = dense(seg.stamp());
    }
    snd.rack.sub = if shared { dense(snd.rack.stamp()) } else { 0 };
}
