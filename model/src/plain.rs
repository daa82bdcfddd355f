//! `Clone` for [`State`] as one bitwise copy.
//!
//! The checker clones a state for every transition (`next_state` starts from a copy). The
//! derived `Clone` copies field by field (≈ 150 fields); but a state owns no heap memory unless
//! one of its [`InlineVec`](crate::inline_vec::InlineVec)s has spilled (more items than its
//! inline capacity), and then a bitwise copy is a valid, independent clone: one `memcpy`.
//!
//! [`State::is_plain`] is the safety argument in code: it destructures every struct of the
//! state without `..` and requires every field to be `Copy` except the `InlineVec`s, whose
//! `spilled()` it tests (a [`SegMask`](crate::segmask::SegMask) is one). A field added to the
//! state is a compile error there until it is classified; a field that owns heap memory cannot be `Copy`.

use crate::model::State;
use crate::net::Receiver;
use crate::state::{Events, Sender, SenderGhost};

#[inline(always)]
fn copy<T: Copy>(_: &T) {}

impl State {
    /// True when the state owns no heap memory (no spilled `InlineVec`): then a bitwise copy is
    /// a clone, and dropping it does nothing.
    #[inline(always)]
    // A table: one line per field of the state, each classified (Copy or a tested InlineVec).
    #[allow(clippy::too_many_lines)]
    pub fn is_plain(&self) -> bool {
        let State {
            now,
            sender,
            flight,
            rcv,
            held_ack,
            tsq_full,
            budget,
            ghost,
        } = self;
        copy(now);
        copy(held_ack);
        copy(tsq_full);
        copy(budget);
        let crate::model::Ghost { orig_dropped } = ghost;
        let Receiver {
            have,
            ts_recent,
            sacks,
        } = rcv;
        copy(ts_recent);
        let Sender {
            sack_ok,
            ts_ok,
            ca_state,
            snd_una,
            snd_nxt,
            write_seq,
            high_seq,
            cwnd,
            ssthresh,
            cwnd_cnt,
            prior_cwnd,
            prior_ssthresh,
            undo_marker,
            undo_retrans,
            retrans_stamp,
            packets_out,
            sacked_out,
            lost_out,
            retrans_out,
            reordering,
            reord_seen,
            frto,
            icsk_retransmits,
            icsk_backoff,
            tlp_high_seq,
            tlp_retrans,
            rack,
            rtt_est,
            prr_delivered,
            prr_out,
            is_cwnd_limited,
            max_packets_out,
            cwnd_usage_seq,
            total_retrans,
            dsack_dups,
            is_sack_reneg,
            undo_echo_unproven,
            ecn_queue_cwr,
            timer,
            cc,
            segs,
            ghost: sghost,
        } = sender;
        copy(sack_ok);
        copy(ts_ok);
        copy(ca_state);
        copy(snd_una);
        copy(snd_nxt);
        copy(write_seq);
        copy(high_seq);
        copy(cwnd);
        copy(ssthresh);
        copy(cwnd_cnt);
        copy(prior_cwnd);
        copy(prior_ssthresh);
        copy(undo_marker);
        copy(undo_retrans);
        copy(retrans_stamp);
        copy(packets_out);
        copy(sacked_out);
        copy(lost_out);
        copy(retrans_out);
        copy(reordering);
        copy(reord_seen);
        copy(frto);
        copy(icsk_retransmits);
        copy(icsk_backoff);
        copy(tlp_high_seq);
        copy(tlp_retrans);
        copy(rack);
        copy(rtt_est);
        copy(prr_delivered);
        copy(prr_out);
        copy(is_cwnd_limited);
        copy(max_packets_out);
        copy(cwnd_usage_seq);
        copy(total_retrans);
        copy(dsack_dups);
        copy(is_sack_reneg);
        copy(undo_echo_unproven);
        copy(ecn_queue_cwr);
        copy(timer);
        copy(cc);
        let SenderGhost {
            last_reduction,
            episode,
            rtx_mask,
            ever_rtx_mask,
            init_undo_ignored_tlp,
            frto_ref,
            frto_owed,
            undo_owed,
            ev,
        } = sghost;
        copy(last_reduction);
        copy(episode);
        copy(init_undo_ignored_tlp);
        copy(frto_ref);
        copy(frto_owed);
        copy(undo_owed);
        let Events {
            undos,
            reductions,
            prr_zero_prior_cwnd,
            recovery_end,
            left_recovery,
            nonsack_hold,
            hystart,
            idle_restart,
            entered_loss,
            undo_rtx,
            eifel,
        } = ev;
        copy(prr_zero_prior_cwnd);
        copy(recovery_end);
        copy(left_recovery);
        copy(nonsack_hold);
        copy(hystart);
        copy(idle_restart);
        copy(entered_loss);
        copy(eifel);
        !(flight.spilled()
            || sacks.spilled()
            || segs.spilled()
            || undos.spilled()
            || reductions.spilled()
            || undo_rtx.spilled()
            || have.spilled()
            || orig_dropped.spilled()
            || rtx_mask.spilled()
            || ever_rtx_mask.spilled())
    }
}

impl Clone for State {
    #[inline(always)]
    fn clone(&self) -> State {
        if self.is_plain() {
            // SAFETY: `is_plain`: every field is `Copy` or an unspilled `InlineVec` of `Copy`
            // items, so the state owns nothing outside itself and a bitwise copy is a clone.
            unsafe { std::ptr::read(self) }
        } else {
            let State {
                now,
                sender,
                flight,
                rcv,
                held_ack,
                tsq_full,
                budget,
                ghost,
            } = self;
            State {
                now: *now,
                sender: sender.clone(),
                flight: flight.clone(),
                rcv: rcv.clone(),
                held_ack: *held_ack,
                tsq_full: *tsq_full,
                budget: *budget,
                ghost: ghost.clone(),
            }
        }
    }
}

impl State {
    /// Clones `self` into `out` (one bitwise copy when [`is_plain`](Self::is_plain)) and returns the
    /// initialised clone, so a successor can be built in its final place without moving it.
    #[inline(always)]
    pub fn clone_into_uninit<'a>(
        &self,
        out: &'a mut std::mem::MaybeUninit<State>,
    ) -> &'a mut State {
        if self.is_plain() {
            // SAFETY: as in `clone`: a bitwise copy of a plain state is a clone; `out` is valid
            // for one `State` and does not overlap `self` (it is a distinct `&mut`).
            unsafe {
                copy_state(self, out.as_mut_ptr());
                out.assume_init_mut()
            }
        } else {
            out.write(self.clone())
        }
    }
}

/// Copies the bytes of `*src` to `*dst`: with AVX (x86-64, detected at run time) as unrolled
/// 32-byte loads and stores, else `copy_nonoverlapping` (libc's `memcpy`). The checker copies
/// the parent into the successor's buffer for every transition: `memcpy`'s size dispatch and
/// loop took about 100 instructions per copy of the 768-byte state, this copy about 60 with the
/// feature test and the call (notebook, 2026-12-04).
///
/// # Safety
/// `src` is valid for reads and `dst` for writes of one `State`; they do not overlap.
#[inline(always)]
unsafe fn copy_state(src: *const State, dst: *mut State) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx") {
        // SAFETY: the caller's contract; AVX is available.
        unsafe { copy_state_avx(src.cast(), dst.cast()) };
        return;
    }
    // SAFETY: the caller's contract.
    unsafe { std::ptr::copy_nonoverlapping(src, dst, 1) };
}

/// [`copy_state`]'s AVX copy: 128 bytes per asm block (four `ymm` registers), then 32, 16 and 8
/// at a time. The copy is done in assembly, so padding bytes are copied as bytes, as
/// `copy_nonoverlapping` would; the size is a constant, so the blocks are unrolled.
///
/// # Safety
/// As [`copy_state`], and the CPU supports AVX.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn copy_state_avx(s: *const u8, d: *mut u8) {
    const N: usize = size_of::<State>();
    const { assert!(N.is_multiple_of(8)) };
    let mut off = 0;
    // SAFETY (every block): `off + width <= N` bytes of `s` and `d` (the caller's contract).
    while off + 128 <= N {
        unsafe {
            std::arch::asm!(
                "vmovdqu ymm0, [{s}]",
                "vmovdqu ymm1, [{s} + 32]",
                "vmovdqu ymm2, [{s} + 64]",
                "vmovdqu ymm3, [{s} + 96]",
                "vmovdqu [{d}], ymm0",
                "vmovdqu [{d} + 32], ymm1",
                "vmovdqu [{d} + 64], ymm2",
                "vmovdqu [{d} + 96], ymm3",
                s = in(reg) s.add(off),
                d = in(reg) d.add(off),
                out("ymm0") _,
                out("ymm1") _,
                out("ymm2") _,
                out("ymm3") _,
                options(nostack, preserves_flags),
            )
        };
        off += 128;
    }
    while off + 32 <= N {
        unsafe {
            std::arch::asm!(
                "vmovdqu ymm0, [{s}]",
                "vmovdqu [{d}], ymm0",
                s = in(reg) s.add(off),
                d = in(reg) d.add(off),
                out("ymm0") _,
                options(nostack, preserves_flags),
            )
        };
        off += 32;
    }
    while off + 16 <= N {
        unsafe {
            std::arch::asm!(
                "vmovdqu xmm0, [{s}]",
                "vmovdqu [{d}], xmm0",
                s = in(reg) s.add(off),
                d = in(reg) d.add(off),
                out("xmm0") _,
                options(nostack, preserves_flags),
            )
        };
        off += 16;
    }
    while off + 8 <= N {
        unsafe {
            std::arch::asm!(
                "mov {t}, [{s}]",
                "mov [{d}], {t}",
                s = in(reg) s.add(off),
                d = in(reg) d.add(off),
                t = out(reg) _,
                options(nostack, preserves_flags),
            )
        };
        off += 8;
    }
    // Back to the SSE state the rest of the program (compiled without AVX) expects; every
    // vector register is caller-saved, so the clobbers cost nothing here.
    // SAFETY: `vzeroupper` only clears the upper halves of the vector registers.
    unsafe {
        std::arch::asm!(
            "vzeroupper",
            clobber_abi("C"),
            options(nostack, preserves_flags)
        )
    };
}

#[cfg(test)]
mod tests {
    use crate::config::Config;
    use crate::model::TcpModel;
    use crate::profile::Profile;
    use crate::state::Seg;
    use stateright::Model;

    #[test]
    fn clone_is_equal_and_independent_spilled_or_not() {
        let m = TcpModel::new(Config::default(), Profile::linux_6_18());
        let s = m.init_states().remove(0);
        assert!(s.is_plain());
        let mut c = s.clone();
        assert_eq!(c, s);
        c.sender.segs.push(Seg::default());
        c.flight.clear();
        assert_ne!(c, s);
        // Spill the segment queue: the clone takes the field-by-field path.
        let mut big = s.clone();
        while !big.sender.segs.spilled() {
            big.sender.segs.push(Seg {
                tags: 1,
                sub: 2,
                xmit: 7,
            });
        }
        assert!(!big.is_plain());
        let c = big.clone();
        assert_eq!(c, big);
        assert_eq!(c.fingerprint(), big.fingerprint());
        drop(big);
        assert_eq!(c.sender.segs.last().unwrap().xmit, 7);
    }

    /// `clone_into_uninit` (the checker's copy of the parent: [`super::copy_state`] when plain)
    /// gives an equal, independent state, plain or spilled.
    #[test]
    fn clone_into_uninit_is_a_clone() {
        let m = TcpModel::new(Config::default(), Profile::linux_6_18());
        for s in m.init_states() {
            let mut states = vec![s.clone()];
            let mut actions = Vec::new();
            m.actions(&s, &mut actions);
            for a in actions {
                states.extend(m.next_state(&s, a));
            }
            let mut big = s.clone();
            while !big.sender.segs.spilled() {
                big.sender.segs.push(Seg {
                    tags: 3,
                    sub: 1,
                    xmit: 9,
                });
            }
            states.push(big);
            for s in &states {
                let mut out = std::mem::MaybeUninit::uninit();
                let c = s.clone_into_uninit(&mut out);
                assert_eq!(*c, *s);
                assert_eq!(c.fingerprint(), s.fingerprint());
                c.sender.segs.push(Seg::default());
                assert_ne!(*c, *s);
                // SAFETY: initialised by `clone_into_uninit`, dropped once.
                unsafe { out.assume_init_drop() };
            }
        }
    }

    /// The checker's speed depends on the state's size (copies, the frontier store): the held
    /// ACK of `max_old_acks` fits in the bytes the receiver's 16-bit SACK blocks freed; the
    /// Eifel-proof ghosts of I20/I20e took the state from 688 to 704 bytes, the RTT estimator's
    /// `RttEst` (srtt, mdev, mdev_max, rttvar, rtt_seq, rto, the min_rtt filter) to 752, and
    /// RACK's reference rank (`Rack::sub`, the sub-ms order of `rack.mstamp`; the segments'
    /// ranks fit in `Seg`'s padding) to 768, still a multiple of 16 (see `State`'s alignment;
    /// the cost in docs/lab/notebook.md, 2026-12-02 "State size", 2026-12-03 "RTT estimator"
    /// and 2026-12-04 "RACK's same-ms order").
    #[test]
    fn state_size_is_768_bytes() {
        assert_eq!(size_of::<crate::model::State>(), 768);
        assert_eq!(size_of::<crate::model::State>() % 16, 0);
    }
}
