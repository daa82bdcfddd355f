//! SACK processing: `tcp_sacktag_write_queue()`, `tcp_check_dsack()`, `tcp_dsack_seen()`,
//! `tcp_is_sackblock_valid()`, `tcp_sacktag_one()`, `tcp_check_sack_reordering()` (tcp_input.c).
//! DSACK segment accounting follows 4f884f396276 / a71d77e6be1e (`dup_segs`, pcount).

use super::ack::flag;
use super::Cx;
use crate::mib::Mib;
use crate::segmask::SegMask;
use crate::seq::{after, before};
use crate::state::*;

/// `struct tcp_sacktag_state` (the parts the model uses).
struct SackState {
    flag: u32,
    reord: u32,
    first_sackt: Option<u32>,
    /// `state->last_sackt`: the last newly SACKed never-retransmitted segment's transmit time.
    last_sackt: Option<u32>,
}

impl Sender {
    /// `tcp_sacktag_write_queue()`: returns the flags and the transmit times of the first and
    /// the last newly SACKed never-retransmitted segments (the SACK's RTT samples).
    pub fn tcp_sacktag_write_queue(
        &mut self,
        cx: &mut Cx,
        ack: u32,
        blocks: &[(u32, u32)],
        prior_snd_una: u32,
    ) -> (u32, Option<(u32, u32)>) {
        let cfg = cx.cfg;
        let mut st = SackState {
            flag: 0,
            reord: self.snd_nxt,
            first_sackt: None,
            last_sackt: None,
        };
        if blocks.is_empty() {
            return (0, None);
        }
        let found_dup = self.tcp_check_dsack(cx, ack, blocks, prior_snd_una, &mut st);
        if self.packets_out != 0 {
            let (sorted, used) = self.tcp_sacktag_block_order(blocks, found_dup, prior_snd_una);
            // Walk the queue (which still holds [prior_snd_una, snd_una) at this point) in
            // sequence order with the kernel's skb cursor (`tcp_sacktag_skip`): it only moves
            // forward while the previous walk stopped at a segment, so a segment inside a DSACK
            // nested in the next block is tagged once, as a duplicate — unless that walk ran off
            // the end of the queue.
            let from = self.idx(cfg, prior_snd_una);
            let to = self.idx(cfg, self.snd_nxt);
            // SACKed before this ACK: what the kernel's recv_sack_cache (the previous ACK's
            // blocks) lets it skip.
            let sacked_before: SegMask = (from..to)
                .filter(|&k| self.segs[k as usize].tags & tag::S != 0)
                .collect();
            let mut cursor = Some(from);
            // The previous block's walk handled this block as its `next_dup` and ran off the end.
            let mut dup_walked_to_end = false;
            for (i, &(start, end, dup_sack)) in sorted[..used].iter().enumerate() {
                if std::mem::take(&mut dup_walked_to_end) && self.tcp_sacktag_skip_walked_dsack(cx)
                {
                    continue;
                }
                // `next_dup`: the DSACK block, when it sorts right after this block
                // (`first_sack_index == i + 1`); a DSACK sorting first (same start) is not one.
                let next_dup = sorted[..used]
                    .get(i + 1)
                    .filter(|b| b.2)
                    .map(|b| (b.0, b.1));
                if !dup_sack && self.tcp_sack_cache_processed(cfg, start, end, &sacked_before) {
                    continue;
                }
                let first = self.tcp_sacktag_skip(cfg, cursor, start, from);
                cursor = None;
                for k in first..to {
                    let s_start = self.seq_of(cfg, k);
                    let s_end = s_start.wrapping_add(1);
                    if !before(s_start, end) {
                        cursor = Some(k);
                        break;
                    }
                    if !before(s_start, start) && !after(s_end, end) {
                        let dup_sack = dup_sack
                            || next_dup
                                .is_some_and(|(ds, de)| !before(s_start, ds) && !after(s_end, de));
                        let seg = self.segs[k as usize];
                        let mut tags = self.tcp_sacktag_one(
                            cx,
                            &mut st,
                            seg.tags,
                            s_start,
                            s_end,
                            dup_sack,
                            seg.stamp(),
                        );
                        Self::tcp_rate_skb_delivered(cx, seg.tags);
                        if tags & tag::S != 0 {
                            // tcp_sacktag_walk(): a SACKed skb leaves tsorted_sent_queue (and
                            // gives no further rate sample: `D` no longer matters).
                            tags = (tags | tag::T) & !tag::D;
                        }
                        self.segs[k as usize].tags = tags;
                    }
                }
                dup_walked_to_end = cursor.is_none() && next_dup.is_some();
            }
        }
        if self.ca_state != CaState::Loss || self.undo_marker != 0 {
            let r = st.reord;
            self.tcp_check_sack_reordering(cx, r, false);
        }
        (st.flag, st.first_sackt.zip(st.last_sackt))
    }

    /// `tcp_sacktag_skip()`: where the walk of the block starting at `start` begins. `cursor` is
    /// the kernel's `skb` after the previous block's `tcp_sacktag_walk()`: the first segment at or
    /// beyond that block's end, or `None` when the walk ran off the end of the retransmit queue
    /// (`skb_rbtree_walk_from` leaves it NULL). A cursor already past `start` is kept (the skipped
    /// segments were walked with the previous block, a nested DSACK among them as `next_dup`);
    /// otherwise `tcp_sacktag_bsearch()` finds the segment holding `start` — also after a walk
    /// that ran off the end, which can go back: a DSACK block nested in a block reaching
    /// `snd_nxt` is then walked a second time and `tcp_sacktag_one()` counts its duplicate
    /// against `undo_retrans` twice (and, the segment now being SACKed, as reordering). As read
    /// in 6.18's tcp_input.c (the cursor logic dates from the 2.6.25 SACK-walk rewrite; the TLP
    /// copy counts in `undo_retrans` since 0ec986ed7bab). Found by trc diff (seed 1 scenarios 65
    /// and 641: the DSACK of a TLP retransmission of the last segment, nested in the SACK block
    /// that reaches snd_nxt, undoes a recovery with one fast retransmit still unproven).
    fn tcp_sacktag_skip(
        &self,
        cfg: &crate::Config,
        cursor: Option<u32>,
        start: u32,
        from: u32,
    ) -> u32 {
        match cursor {
            Some(c) if after(self.seq_of(cfg, c), start) => c,
            _ if before(start, self.seq_of(cfg, from)) => from,
            _ => self.idx(cfg, start),
        }
    }

    /// F3's proposed fix as a decision point (`sacktag_nested_dsack`, docs/findings/F3.md): in
    /// `tcp_sacktag_write_queue()`, after a block whose `tcp_sacktag_walk()` handled the next
    /// (DSACK) block as `next_dup` and returned NULL, whether that DSACK block is skipped
    /// (`SkipAfterNull`) or walked again (`WalkAgain`, every kernel so far: F3's double count).
    fn tcp_sacktag_skip_walked_dsack(&self, cx: &Cx) -> bool {
        cx.prof.sacktag_nested_dsack == crate::profile::SacktagNestedDsack::SkipAfterNull
    }

    /// The `recv_sack_cache` shortcut of `tcp_sacktag_write_queue()`: a (non-DSACK) block lying
    /// inside a block of the previous ACK is "already fully processed" (`goto advance_sp`) — not
    /// walked, the cursor unchanged, and a DSACK nested in it not handled as its `next_dup`, so
    /// that DSACK is counted once, by its own block. The model keeps no copy of the previous
    /// ACK's blocks; a block all of whose segments were SACKed before this ACK stands for it (the
    /// receiver reports each out-of-order range as one block, and ranges only grow). Kernel check:
    /// scenario 65 with 3001:5001 already SACKed by the previous ACK counts the DSACK of 4001:5001
    /// once (no TcpExtTCPDSACKUndo), and the `trc check --sack --no-ts` I1 path where the DSACK
    /// repeats the SACK block 5001:6001 of the previous ACK does not undo either.
    fn tcp_sack_cache_processed(
        &self,
        cfg: &crate::Config,
        start: u32,
        end: u32,
        sacked_before: &SegMask,
    ) -> bool {
        let (a, b) = (self.idx(cfg, start), self.idx(cfg, end));
        (a..b).all(|k| sacked_before.contains(k))
    }

    /// The blocks `tcp_sacktag_write_queue()` walks, in the order it walks them: block 0 counts
    /// as the DSACK if `tcp_check_dsack()` said so; blocks failing `tcp_is_sackblock_valid()`
    /// and blocks wholly at or below `prior_snd_una` are dropped; the rest are sorted by start
    /// sequence (the kernel's bubble sort, "order SACK blocks to allow in order walk of the
    /// retrans queue", tracking where the DSACK block goes — `first_sack_index`).
    ///
    /// The order is observable: `tcp_sacktag_one()` detects reordering when a never-retransmitted
    /// segment lies below `tcp_highest_sack_seq()` (737ff314563c "tcp: use sequence distance to
    /// detect reordering"), and the receiver lists its most recent block first. If one ACK newly
    /// SACKs two blocks (the ACK for the lower one was lost), walking them in wire order finds the
    /// lower block below the higher one just tagged — false reordering, `reordering` raised,
    /// RACK's `reo_wnd` no longer 0 — where the kernel, walking in sequence order, sees none and
    /// marks the holes lost at once (trc diff seed 1 scenario 181).
    fn tcp_sacktag_block_order(
        &self,
        blocks: &[(u32, u32)],
        found_dup: bool,
        prior_snd_una: u32,
    ) -> ([(u32, u32, bool); 4], usize) {
        let mut sp = [(0u32, 0u32, false); 4];
        let mut used = 0;
        for (i, &(start, end)) in blocks.iter().take(4).enumerate() {
            let dup_sack = found_dup && i == 0;
            if !self.tcp_is_sackblock_valid(dup_sack, start, end) {
                continue;
            }
            // Ignore very old stuff early (a DSACK below prior_snd_una was counted already).
            if !after(end, prior_snd_una) {
                continue;
            }
            sp[used] = (start, end, dup_sack);
            used += 1;
        }
        for i in (1..used).rev() {
            for j in 0..i {
                if after(sp[j].0, sp[j + 1].0) {
                    sp.swap(j, j + 1);
                }
            }
        }
        (sp, used)
    }

    /// `tcp_check_dsack()`: is block 0 a DSACK (below the ACK: TcpExtTCPDSACKRecv; inside block 1:
    /// TCPDSACKOfoRecv)? A DSACK `tcp_dsack_seen()` rejects counts TCPDSACKIgnoredDubious, an
    /// accepted one adds its duplicate segments to TCPDSACKRecvSegs.
    fn tcp_check_dsack(
        &mut self,
        cx: &mut Cx,
        ack: u32,
        blocks: &[(u32, u32)],
        prior_snd_una: u32,
        st: &mut SackState,
    ) -> bool {
        let (s0, e0) = blocks[0];
        if before(s0, ack) {
            cx.mib.inc(Mib::DsackRecv);
        } else if blocks.len() > 1 {
            let (s1, e1) = blocks[1];
            if after(e0, e1) || before(s0, s1) {
                return false;
            }
            cx.mib.inc(Mib::DsackOfoRecv);
        } else {
            return false;
        }
        let dup_segs = self.tcp_dsack_seen(cx, s0, e0, st);
        if dup_segs == 0 {
            cx.mib.inc(Mib::DsackIgnoredDubious);
            return false;
        }
        cx.mib.add(Mib::DsackRecvSegs, dup_segs);
        // DSACK for already forgotten data: dumb counting.
        if self.undo_marker != 0
            && self.undo_retrans > 0
            && !after(e0, prior_snd_una)
            && after(e0, self.undo_marker)
        {
            self.undo_retrans = (self.undo_retrans - dup_segs as i32).max(0);
            cx.dsack_note |= evidence::DSACK_FORGOTTEN;
        }
        true
    }

    /// `tcp_dsack_seen()`: validates a DSACK block; returns the duplicate segment count (0: dubious).
    fn tcp_dsack_seen(&mut self, cx: &mut Cx, start: u32, end: u32, st: &mut SackState) -> u32 {
        if !before(start, end) {
            return 0;
        }
        let len = end.wrapping_sub(start);
        if len > 65535 {
            return 0; // larger than any advertised window
        }
        let mut dup_segs = 1;
        if len > 1 {
            dup_segs = len;
        } else if self.tlp_high_seq != 0 && self.tlp_high_seq == end {
            st.flag |= flag::DSACK_TLP;
        }
        self.dsack_dups = self.dsack_dups.wrapping_add(dup_segs);
        if self.dsack_dups > self.total_retrans {
            return 0; // the sender never retransmitted that much
        }
        if self.reord_seen != 0 && st.flag & flag::DSACK_TLP == 0 {
            self.rack.dsack_seen = true;
        }
        st.flag |= flag::DSACKING_ACK;
        cx.delivered += dup_segs;
        dup_segs
    }

    /// `tcp_is_sackblock_valid()`.
    pub fn tcp_is_sackblock_valid(&self, is_dsack: bool, start: u32, end: u32) -> bool {
        if after(end, self.snd_nxt) || !before(start, end) {
            return false;
        }
        if !before(start, self.snd_nxt) {
            return false;
        }
        if after(start, self.snd_una) {
            return true;
        }
        if !is_dsack || self.undo_marker == 0 {
            return false;
        }
        if after(end, self.snd_una) {
            return false;
        }
        if !before(start, self.undo_marker) {
            return true;
        }
        if !after(end, self.undo_marker) {
            return false;
        }
        !before(start, end.wrapping_sub(65535))
    }

    /// Ghost: classifies a DSACK's `undo_retrans` decrement for the segment starting at `start`
    /// (`cx.dsack_note`): a second one for the same segment in this ACK, or one for a copy sent
    /// before the episode's `tcp_init_undo()` (and whether that call ignored a TLP copy).
    fn note_dsack_decrement(&self, cx: &mut Cx, start: u32) {
        use crate::state::evidence as e;
        let k = start.wrapping_sub(cx.cfg.isn);
        let bit = 1u64 << (k % 64);
        if cx.dsack_segs & bit != 0 {
            cx.dsack_note |= e::DSACK_TWICE;
        }
        cx.dsack_segs |= bit;
        if !self.ghost.rtx_mask.contains(k) {
            cx.dsack_note |= e::DSACK_PRE_EPISODE;
            if self.ghost.init_undo_ignored_tlp {
                cx.dsack_note |= e::DSACK_TLP_UNCOUNTED;
            }
        }
    }

    /// `tcp_sacktag_one()`: tag one segment covered by a (D)SACK block.
    #[allow(clippy::too_many_arguments)] // the kernel function's own parameter list
    fn tcp_sacktag_one(
        &mut self,
        cx: &mut Cx,
        st: &mut SackState,
        mut tags: u8,
        start: u32,
        end: u32,
        dup_sack: bool,
        xmit: u64,
    ) -> u8 {
        if dup_sack && tags & tag::RETRANS != 0 {
            if self.undo_marker != 0 && self.undo_retrans > 0 && after(end, self.undo_marker) {
                self.undo_retrans = (self.undo_retrans - 1).max(0);
                self.note_dsack_decrement(cx, start);
            }
            if tags & tag::S != 0 && before(start, st.reord) {
                st.reord = start;
            }
        }
        if !after(end, self.snd_una) {
            return tags;
        }
        if tags & tag::S == 0 {
            self.tcp_rack_advance(cx, tags, end, xmit);
            self.f1_fix_sacked_retrans(cx, tags);
            if tags & tag::R != 0 {
                if tags & tag::L != 0 {
                    tags &= !(tag::L | tag::R);
                    self.lost_out = self.lost_out.wrapping_sub(1);
                    if !crate::profile::mutant!(cx.prof, LeakRetransOut) {
                        self.retrans_out = self.retrans_out.wrapping_sub(1);
                    }
                }
            } else {
                if tags & tag::RETRANS == 0 {
                    let hs = self.tcp_highest_sack_seq(cx.cfg);
                    if before(start, hs) && before(start, st.reord) {
                        st.reord = start;
                    }
                    if !after(end, self.high_seq) {
                        st.flag |= flag::ORIG_SACK_ACKED;
                    }
                    st.first_sackt.get_or_insert(stamp_ms(xmit));
                    st.last_sackt = Some(stamp_ms(xmit));
                }
                if tags & tag::L != 0 {
                    tags &= !tag::L;
                    self.lost_out = self.lost_out.wrapping_sub(1);
                }
            }
            tags |= tag::S;
            st.flag |= flag::DATA_SACKED;
            self.sacked_out = self.sacked_out.wrapping_add(1);
            cx.delivered += 1;
        }
        if dup_sack && tags & tag::R != 0 {
            tags &= !tag::R;
            self.retrans_out = self.retrans_out.wrapping_sub(1);
        }
        tags
    }

    /// The F1 fix (`packet_delayed_scope = "sacked-retrans"`, vm/kconfig/f1-fix-v2.patch) in
    /// `tcp_sacktag_one()`: a retransmitted segment newly SACKed while `undo_marker` is set may
    /// have arrived as a copy sent in this episode, which no timestamp echo can rule out, so the
    /// echo no longer proves the episode. Unless the SACK comes sooner than `min_rtt` after the
    /// episode's first retransmission (`retrans_stamp`; under the fix a TLP copy sets it too):
    /// no copy sent since can have arrived, so it is of the original. (Sooner than `min_rtt`
    /// after the segment's *last* transmission, `tcp_rack_advance()`'s test, is not enough: an
    /// earlier copy of the episode may be the one SACKed.)
    fn f1_fix_sacked_retrans(&mut self, cx: &Cx, tags: u8) {
        if cx.prof.packet_delayed_scope == crate::profile::PacketDelayedScope::SackedRetrans
            && tags & tag::RETRANS != 0
            && self.undo_marker != 0
            && (self.retrans_stamp == 0
                || cx.ts_of(cx.now).wrapping_sub(self.retrans_stamp) >= cx.cfg.rtt_ms)
        {
            self.undo_echo_unproven = true;
        }
    }

    /// `tcp_check_sack_reordering()`: SACKs below the highest SACK reveal reordering
    /// (TcpExtTCPSACKReorder; TCPTSReorder when `ts`, the timestamp evidence of
    /// `tcp_try_undo_partial()`).
    pub fn tcp_check_sack_reordering(&mut self, cx: &Cx, low_seq: u32, ts: bool) {
        let fack = self.tcp_highest_sack_seq(cx.cfg);
        if !before(low_seq, fack) {
            return;
        }
        let metric = fack.wrapping_sub(low_seq);
        if metric > self.reordering {
            self.reordering = metric.min(cx.cfg.sysctl_max_reordering);
        }
        self.reord_seen = self.reord_seen.saturating_add(1).min(3);
        cx.mib
            .inc(if ts { Mib::TsReorder } else { Mib::SackReorder });
    }
}
