//! The environment: the network (which transmissions are in flight, in send order) and the
//! receiver (cumulative ACK, SACK blocks most recent first, DSACK for duplicates, TSecr per
//! RFC 7323 incl. PAWS), as the Linux receiver produces them.

use crate::config::Config;
use crate::inline_vec::InlineVec;
use crate::segmask::SegMask;
use crate::sender::ack::AckSeg;
use crate::seq::{after, before};
use serde::{Deserialize, Serialize};

/// One transmission in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Pkt {
    /// Segment index (`seq - isn`).
    pub seg: u16,
    /// Model time it left the sender (its TSval is `sent + ts_base`).
    pub sent: u32,
    /// A retransmission (regular or TLP).
    pub rtx: bool,
}

/// The receiver: which segments it holds, `TS.Recent`, and its SACK blocks (`selective_acks[]`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Receiver {
    /// The segments received.
    pub have: SegMask,
    pub ts_recent: u32,
    /// SACK blocks `[start, end)` as segment indices (`seq - isn`; at most
    /// [`MAX_SEGMENTS`](crate::config::MAX_SEGMENTS), so 16 bits hold them), most recent first
    /// (at most 4, `TCP_NUM_SACKS`). [`Receiver::sack_blocks`] gives them as sequence numbers.
    /// Indices rather than sequence numbers keep the state small: the bytes saved hold the
    /// network's [`HeldAck`] at no cost in state size.
    pub sacks: InlineVec<[(u16, u16); 4]>,
}

/// An ACK the network holds back and delivers after newer ones (ACK reordering,
/// `Config::max_old_acks`): everything the sender reads of it, in segment indices
/// (`seq - isn`). `held == false`: no ACK is held (then every other field is zero).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct HeldAck {
    pub held: bool,
    /// Number of SACK blocks in `blocks` (a DSACK, if any, first, as on the wire).
    pub n: u8,
    /// The cumulative ACK (`rcv_nxt` when it was sent).
    pub ack: u16,
    /// TSecr (`TS.Recent` when it was sent); meaningful only with timestamps.
    pub tsecr: u32,
    pub blocks: [(u16, u16); 4],
}

impl HeldAck {
    /// Holds `a`, an ACK the receiver just built (its numbers are within the segment range).
    pub fn hold(cfg: &Config, a: &AckSeg) -> HeldAck {
        let off = |x: u32| -> u16 { x.wrapping_sub(cfg.isn) as u16 };
        let mut h = HeldAck {
            held: true,
            n: a.sacks.len() as u8,
            ack: off(a.ack),
            tsecr: a.tsecr.unwrap_or(0),
            blocks: [(0, 0); 4],
        };
        for (i, &(s, e)) in a.sacks.iter().enumerate() {
            h.blocks[i] = (off(s), off(e));
        }
        h
    }

    /// The held ACK as the sender receives it (`ts_ok`: the connection carries timestamps).
    pub fn ack_seg(&self, cfg: &Config, ts_ok: bool) -> AckSeg {
        let seq = |x: u16| cfg.isn.wrapping_add(x as u32);
        AckSeg {
            ack: seq(self.ack),
            sacks: self.blocks[..self.n as usize]
                .iter()
                .map(|&(s, e)| (seq(s), seq(e)))
                .collect(),
            ece: false,
            tsecr: ts_ok.then_some(self.tsecr),
        }
    }

    /// The held ACK's cumulative ACK as a sequence number.
    pub fn ack_seq(&self, cfg: &Config) -> u32 {
        cfg.isn.wrapping_add(self.ack as u32)
    }
}

impl Receiver {
    pub fn new(cfg: &Config) -> Receiver {
        Receiver {
            have: SegMask::new(),
            ts_recent: cfg.ts_base,
            sacks: InlineVec::new(),
        }
    }

    /// `rcv_nxt`.
    pub fn rcv_nxt(&self, cfg: &Config) -> u32 {
        cfg.isn.wrapping_add(self.have.trailing_ones())
    }

    /// The SACK blocks (most recent first) as sequence numbers.
    pub fn sack_blocks<'a>(&'a self, cfg: &'a Config) -> impl Iterator<Item = (u32, u32)> + 'a {
        self.sacks.iter().map(|&(s, e)| {
            (
                cfg.isn.wrapping_add(s as u32),
                cfg.isn.wrapping_add(e as u32),
            )
        })
    }

    /// `tcp_sack_extend()` (on segment indices, which do not wrap).
    fn extend(sp: &mut (u16, u16), s: u16, e: u16) -> bool {
        if s <= sp.1 && sp.0 <= e {
            if s < sp.0 {
                sp.0 = s;
            }
            if e > sp.1 {
                sp.1 = e;
            }
            return true;
        }
        false
    }

    /// `tcp_sack_new_ofo_skb()`: an out-of-order segment arrived; its block becomes the first.
    fn sack_new_ofo(&mut self, s: u16, e: u16) {
        for i in 0..self.sacks.len() {
            let mut b = self.sacks[i];
            if Self::extend(&mut b, s, e) {
                self.sacks.remove(i);
                self.sacks.insert(0, b);
                // tcp_sack_maybe_coalesce(): merge the first block with any it now touches.
                let mut j = 1;
                while j < self.sacks.len() {
                    let other = self.sacks[j];
                    let mut first = self.sacks[0];
                    if Self::extend(&mut first, other.0, other.1) {
                        self.sacks[0] = first;
                        self.sacks.remove(j);
                    } else {
                        j += 1;
                    }
                }
                return;
            }
        }
        if self.sacks.len() >= 4 {
            self.sacks.pop();
        }
        self.sacks.insert(0, (s, e));
    }

    /// PAWS (`tcp_paws_discard()`, `TCP_PAWS_WINDOW` = 1): a TSval older than TS.Recent by
    /// more than the window is discarded (and answered with a dupack).
    fn paws_discard(&self, tsval: u32, ts_ok: bool) -> bool {
        ts_ok && (self.ts_recent.wrapping_sub(tsval) as i32) > 1
    }

    /// Whether `pkt` arriving now becomes TS.Recent (`tcp_replace_ts_recent()`, RFC 7323 4.3):
    /// not discarded by PAWS, it starts at or below `rcv_nxt` and its TSval is not older.
    /// The exporter uses it to know *which* transmission an ACK echoes.
    pub fn replaces_ts_recent(&self, cfg: &Config, pkt: &Pkt, ts_ok: bool) -> bool {
        let seq = cfg.isn.wrapping_add(pkt.seg as u32);
        let tsval = pkt.sent.wrapping_add(cfg.ts_base);
        ts_ok
            && !self.paws_discard(tsval, ts_ok)
            && !after(seq, self.rcv_nxt(cfg))
            && !before(tsval, self.ts_recent)
    }

    /// A data segment arrives; returns the ACK the receiver sends for it.
    pub fn receive(&mut self, cfg: &Config, pkt: &Pkt, sack_ok: bool, ts_ok: bool) -> AckSeg {
        let seq = cfg.isn.wrapping_add(pkt.seg as u32);
        let end = seq.wrapping_add(1);
        let tsval = pkt.sent.wrapping_add(cfg.ts_base);
        let rcv_nxt = self.rcv_nxt(cfg);
        let mut dsack: Option<(u32, u32)> = None;
        // A PAWS-discarded segment is answered with a dupack (DSACK if below rcv_nxt).
        if self.paws_discard(tsval, ts_ok) {
            if cfg.dsack && before(seq, rcv_nxt) {
                dsack = Some((seq, end));
            }
        } else {
            if self.replaces_ts_recent(cfg, pkt, ts_ok) {
                self.ts_recent = tsval;
            }
            if self.have.contains(pkt.seg as u32) {
                if cfg.dsack {
                    dsack = Some((seq, end)); // tcp_dsack_set(): duplicate
                }
            } else {
                self.have.insert(pkt.seg as u32);
                if seq != rcv_nxt {
                    self.sack_new_ofo(pkt.seg, pkt.seg + 1);
                }
                let nxt = self.have.trailing_ones();
                // tcp_sack_remove(): blocks now covered by rcv_nxt go away.
                self.sacks.retain(|b| nxt < b.0 as u32);
            }
        }
        let ack = self.rcv_nxt(cfg);
        let mut blocks = smallvec::SmallVec::new();
        if sack_ok {
            let max = if ts_ok { 3 } else { 4 };
            if let Some(d) = dsack {
                blocks.push(d);
            }
            for b in self.sack_blocks(cfg) {
                if blocks.len() >= max {
                    break;
                }
                blocks.push(b);
            }
        }
        AckSeg {
            ack,
            sacks: blocks,
            ece: false,
            tsecr: if ts_ok { Some(self.ts_recent) } else { None },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(seg: u16, sent: u32) -> Pkt {
        Pkt {
            seg,
            sent,
            rtx: false,
        }
    }

    #[test]
    fn sack_blocks_most_recent_first_and_dsack() {
        let cfg = Config::default();
        let mut r = Receiver::new(&cfg);
        let a = r.receive(&cfg, &pkt(0, 0), true, false);
        assert_eq!(a.ack, 2);
        assert!(a.sacks.is_empty());
        let a = r.receive(&cfg, &pkt(2, 0), true, false);
        assert_eq!((a.ack, a.sacks.to_vec()), (2, vec![(3, 4)]));
        let a = r.receive(&cfg, &pkt(4, 0), true, false);
        assert_eq!(a.sacks.to_vec(), vec![(5, 6), (3, 4)]);
        let a = r.receive(&cfg, &pkt(3, 0), true, false);
        assert_eq!(a.sacks.to_vec(), vec![(3, 6)], "merged block moves first");
        let a = r.receive(&cfg, &pkt(3, 0), true, false);
        assert_eq!(
            a.sacks.to_vec(),
            vec![(4, 5), (3, 6)],
            "out-of-order DSACK inside block 1"
        );
        let a = r.receive(&cfg, &pkt(1, 0), true, false);
        assert_eq!((a.ack, a.sacks.to_vec()), (6, vec![]));
        let a = r.receive(&cfg, &pkt(1, 0), true, false);
        assert_eq!(
            (a.ack, a.sacks.to_vec()),
            (6, vec![(2, 3)]),
            "DSACK below the ACK"
        );
    }

    #[test]
    fn tsecr_follows_rfc7323_and_paws() {
        let cfg = Config::default();
        let mut r = Receiver::new(&cfg);
        // segment 1 arrives first (out of order): TS.Recent not updated
        let a = r.receive(&cfg, &pkt(1, 0), true, true);
        assert_eq!(a.tsecr, Some(cfg.ts_base));
        // retransmission of 0 at t=300 fills the hole: TS.Recent = its TSval
        let a = r.receive(
            &cfg,
            &Pkt {
                seg: 0,
                sent: 300,
                rtx: true,
            },
            true,
            true,
        );
        assert_eq!((a.ack, a.tsecr), (3, Some(301)));
        // the delayed original of 0 (TSval 1) is a PAWS drop, answered with a DSACK
        let a = r.receive(&cfg, &pkt(0, 0), true, true);
        assert_eq!(
            (a.ack, a.sacks.to_vec(), a.tsecr),
            (3, vec![(1, 2)], Some(301))
        );
    }

    /// The receiver's blocks are segment indices and the held ACK stores indices too: with any
    /// `isn` (here near the largest allowed) the ACK the sender gets is the one the receiver
    /// built, blocks, DSACK and TSecr included.
    #[test]
    fn held_ack_round_trips_with_any_isn() {
        let cfg = Config {
            isn: crate::config::MAX_SEQ_BASE - 10,
            ..Config::default()
        };
        let mut r = Receiver::new(&cfg);
        r.receive(&cfg, &pkt(2, 0), true, true);
        r.receive(&cfg, &pkt(4, 0), true, true);
        let a = r.receive(&cfg, &pkt(4, 5), true, true);
        let b = |k: u32| cfg.isn + k;
        assert_eq!(
            a.sacks.to_vec(),
            vec![(b(4), b(5)), (b(4), b(5)), (b(2), b(3))],
            "DSACK first, then the blocks"
        );
        assert_eq!(
            r.sack_blocks(&cfg).collect::<Vec<_>>(),
            vec![(b(4), b(5)), (b(2), b(3))]
        );
        let h = HeldAck::hold(&cfg, &a);
        assert!(h.held);
        assert_eq!(h.ack_seg(&cfg, true), a);
        assert_eq!(h.ack_seq(&cfg), cfg.isn);
        let no_ts = r.receive(&cfg, &pkt(0, 9), true, false);
        assert_eq!(HeldAck::hold(&cfg, &no_ts).ack_seg(&cfg, false), no_ts);
    }
}
