//! [`State::fingerprint`]: a fast 64-bit fingerprint of a state for the checker engine.
//!
//! The derived `Hash` makes one hasher call per field (~150 for a state); this packs the state
//! into 64-bit words instead (small fields bit-packed, or a byte each in their memory order
//! where they lie side by side, so that a word is one load; two `u32`s per word; variable-length
//! parts prefixed by their lengths) and folds them as they are made, two words per
//! wyhash-style 128-bit multiply into two alternating lanes, with no word buffer: the fixed part
//! is arrays of constant length (unrolled, in registers), each sequence is padded to whole pairs.
//! (The earlier version buffered up to 64 words and folded them four lanes at a time: 1,577
//! instructions per state on `trc bench` case 3 against 1,179 with the two lanes and about 1,110
//! with the byte words and one deref per sequence; notebook, 2026-12-04.)
//!
//! The packing is injective (a prefix-free encoding: every tag and length is written before
//! the fields it governs), so two states get the same fingerprint only if they are equal or
//! their 64-bit hashes collide, exactly as with the `Hash`-based fingerprint: the engine finds
//! the same unique states either way (checked by `trc bench` against stateright, which uses the
//! derived `Hash`, and by this crate's tests). Every struct is destructured without `..`, so a
//! field added to the state is a compile error here until it is fingerprinted too.
//!
//! Deterministic: no random seed, no addresses, independent of the platform's endianness.
//!
//! On x86-64 CPUs with BMI2 the same code runs compiled for BMI2 (std's cached feature test
//! picks it): `mulx` takes the multiply's operands from any register and writes its result to
//! any two, and `shlx`/`shrx` take three operands, which saves the register moves and spills of
//! the `rax`/`rdx`-bound `mul` (about 50 of 641 instructions per fingerprint on `trc bench`
//! case 3; notebook, 2026-12-04, session 8). Same words, same fingerprint.

use crate::cc::{Cc, Cubic, HystartExit, IdleRestart};
use crate::model::{Budget, Ghost, State};
use crate::net::{HeldAck, Pkt, Receiver};
use crate::state::{
    EifelProof, EifelStep, Episode, Events, Rack, Reduction, RttEst, Seg, Sender, SenderGhost,
    Timer, UndoEvent,
};

const P0: u64 = 0xa076_1d64_78bd_642f;
const P1: u64 = 0xe703_7ed1_a0b4_28db;
const P2: u64 = 0x8ebc_6af0_9c88_c6e3;
const P3: u64 = 0x5899_65cc_7537_4cc3;

#[inline(always)]
fn mum(a: u64, b: u64) -> u64 {
    let r = a as u128 * b as u128;
    (r as u64) ^ ((r >> 64) as u64)
}

#[inline(always)]
fn p2(a: u32, b: u32) -> u64 {
    a as u64 | (b as u64) << 32
}

#[inline(always)]
fn b(x: bool) -> u64 {
    x as u64
}

/// A small enum's discriminant (4 bits).
#[inline(always)]
fn e4(d: u64) -> u64 {
    debug_assert!(d < 16);
    d & 15
}

/// Lengths as 16-bit fields (one check for all of them).
#[inline(always)]
fn lens16<const N: usize>(n: [usize; N]) -> [u64; N] {
    let mut any = 0;
    let mut out = [0; N];
    for i in 0..N {
        any |= n[i];
        out[i] = n[i] as u64;
    }
    assert!(any >> 16 == 0, "fingerprint: sequence longer than 65535");
    out
}

/// Two multiply lanes fed a pair of words at a time, with no buffer: each pair is folded into
/// the older lane (`mum(x ^ P1, y ^ lane)`) and the lanes swap, so consecutive pairs form two
/// independent dependency chains. Fixed-width parts are arrays of constant length (their pairs
/// unrolled, in registers); a sequence is padded to whole pairs (its length is in the header,
/// so the padding is unambiguous); the rare optional tail goes through [`Fold::word`].
struct Fold {
    a: u64,
    b: u64,
    /// A word of the tail waiting for its pair partner (`odd`).
    pend: u64,
    odd: bool,
}

impl Fold {
    #[inline(always)]
    fn new() -> Fold {
        Fold {
            a: P0,
            b: P2,
            pend: 0,
            odd: false,
        }
    }

    #[inline(always)]
    fn pair(&mut self, x: u64, y: u64) {
        let h = mum(x ^ P1, y ^ self.a);
        self.a = self.b;
        self.b = h;
    }

    /// The words of a fixed-width part (an even count).
    #[inline(always)]
    fn words<const N: usize>(&mut self, w: [u64; N]) {
        const { assert!(N.is_multiple_of(2)) };
        for c in w.chunks_exact(2) {
            self.pair(c[0], c[1]);
        }
    }

    /// A sequence, one word per element, zero-padded to whole pairs.
    #[inline(always)]
    fn seq<T>(&mut self, mut xs: &[T], word: impl Fn(&T) -> u64) {
        while let [x, y, rest @ ..] = xs {
            self.pair(word(x), word(y));
            xs = rest;
        }
        if let [x] = xs {
            self.pair(word(x), 0);
        }
    }

    /// One word of the optional tail (after every fixed part and sequence).
    #[inline(always)]
    fn word(&mut self, w: u64) {
        if self.odd {
            self.pair(self.pend, w);
        } else {
            self.pend = w;
        }
        self.odd = !self.odd;
    }

    #[inline(always)]
    fn finish(mut self) -> u64 {
        if self.odd {
            self.pair(self.pend, 0);
        }
        match mum(mum(self.a ^ P3, self.b ^ P0) ^ P1, self.b ^ P2) {
            0 => 1,
            x => x,
        }
    }
}

impl State {
    /// The state's fingerprint (see the module docs); never 0. Equal states have equal
    /// fingerprints; different states collide with probability ≈ 2^-64.
    /// Inlined into the caller, so that only the feature test (no call and no register saves)
    /// comes before the fingerprint itself.
    #[inline]
    pub fn fingerprint(&self) -> u64 {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("bmi2") {
            // SAFETY: the CPU has BMI2.
            return unsafe { self.fingerprint_bmi2() };
        }
        self.fingerprint_generic()
    }

    /// [`State::fingerprint_words`] for any CPU.
    #[inline(never)]
    fn fingerprint_generic(&self) -> u64 {
        self.fingerprint_words()
    }

    /// [`State::fingerprint_words`] compiled for BMI2 (see the module docs).
    ///
    /// # Safety
    /// The CPU must have BMI2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "bmi2")]
    unsafe fn fingerprint_bmi2(&self) -> u64 {
        self.fingerprint_words()
    }

    /// The fingerprint itself, inlined into both entries.
    #[inline(always)]
    fn fingerprint_words(&self) -> u64 {
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
        let Receiver {
            have,
            ts_recent,
            sacks,
        } = rcv;
        let Ghost { orig_dropped } = ghost;
        let HeldAck {
            held,
            n,
            ack,
            tsecr,
            blocks,
        } = held_ack;
        let ev = &sender.ghost.ev;
        let (rtx, ever) = (&sender.ghost.rtx_mask, &sender.ghost.ever_rtx_mask);
        // A mask is its first word (0 when empty) and the rest (heap words beyond the first).
        let masks = [
            have.split_words(),
            orig_dropped.split_words(),
            rtx.split_words(),
            ever.split_words(),
        ];
        // Every sequence as a slice once (an `InlineVec` deref tests whether it spilled).
        let (segs, flight, sacks) = (&sender.segs[..], &flight[..], &sacks[..]);
        let (undos, reductions, undo_rtx) = (&ev.undos[..], &ev.reductions[..], &ev.undo_rtx[..]);
        let mut f = Fold::new();
        // Tags, small fields and lengths first: everything that decides the layout below.
        let [y0, y1, y2] = byte_words(sender, budget);
        let [ls, lf, lk, lu, lr, lx, m0, m1, m2, m3] = lens16([
            segs.len(),
            flight.len(),
            sacks.len(),
            undos.len(),
            reductions.len(),
            undo_rtx.len(),
            masks[0].1.len(),
            masks[1].1.len(),
            masks[2].1.len(),
            masks[3].1.len(),
        ]);
        debug_assert!(lu < 256 && lr < 256);
        let heap_masks = m0 | m1 | m2 | m3 != 0;
        let [t0, t1] = tag_words(sender, *tsq_full, *held, budget.old_acks, heap_masks);
        f.words([
            y0,
            y1,
            y2,
            t0,
            t1,
            ls | lf << 16 | lk << 32 | (lu & 0xff) << 48 | (lr & 0xff) << 56,
            p2(*ts_recent, lx as u32),
            // Tagged in the tag words.
            sender
                .ghost
                .frto_owed
                .map_or(0, |(a, z)| a as u64 | (z as u64) << 16),
        ]);
        // Fixed-width fields.
        f.words(sender_words(sender, *now));
        if let Cc::Cubic(c) = &sender.cc {
            f.words(cubic_words(c));
        }
        f.words([masks[0].0, masks[1].0, masks[2].0, masks[3].0]);
        // Variable-length parts. A mask's heap words beyond the first are rare (segments >= 64):
        // the four masks' lengths and words only when one has any (tagged in the tag words).
        if heap_masks {
            f.words([m0 | m1 << 16 | m2 << 32 | m3 << 48, 0]);
            for (_, rest) in masks {
                f.seq(rest, |&w| w);
            }
        }
        f.seq(segs, |&Seg { tags, sub, xmit }| {
            tags as u64 | (sub as u64) << 8 | (xmit as u64) << 24
        });
        f.seq(flight, |&Pkt { seg, sent, rtx }| {
            sent as u64 | (seg as u64) << 32 | b(rtx) << 48
        });
        f.seq(sacks, |&(s, e)| p2(s as u32, e as u32));
        // The held ACK only when there is one (its tag is in the tag words).
        if *held {
            f.word(*n as u64 | (*ack as u64) << 8 | (*tsecr as u64) << 32);
            f.word(
                blocks
                    .iter()
                    .enumerate()
                    .fold(0u64, |w, (i, &(s, _))| w | (s as u64) << (16 * i)),
            );
            f.word(
                blocks
                    .iter()
                    .enumerate()
                    .fold(0u64, |w, (i, &(_, e))| w | (e as u64) << (16 * i)),
            );
        }
        event_words(&mut f, ev, undos, undo_rtx, reductions);
        // The Eifel-proof ghosts only when set (tagged in the tag words), like the held ACK.
        if let Some(proof) = sender.ghost.undo_owed {
            f.word(eifel_word(&proof));
        }
        if let Some(EifelStep {
            proof,
            missed,
            lost,
        }) = ev.eifel
        {
            f.word(eifel_word(&proof) | b(missed) << 48 | b(lost) << 49);
        }
        f.finish()
    }
}

/// One [`EifelProof`] as a word.
#[inline(always)]
fn eifel_word(e: &EifelProof) -> u64 {
    let EifelProof {
        from,
        to,
        ca_state,
        undo_retrans,
    } = e;
    *from as u64 | (*to as u64) << 16 | e4(*ca_state as u64) << 32 | (*undo_retrans as u64) << 40
}

/// The small fields that sit next to each other in memory, a byte each, in their memory order:
/// the sender's eight `bool`s; its `ca_state` and three `u8` counters with RACK's two `u8`s and
/// two `bool`s; the budget's `u16` and six `u8`s (as rustc lays the structs out today, so that
/// each word compiles to one or two loads instead of a load, shift and or per field). Another
/// layout only costs instructions: every field keeps its own byte, so the encoding stays
/// injective.
#[inline(always)]
fn byte_words(s: &Sender, budget: &Budget) -> [u64; 3] {
    let Budget {
        losses,
        ack_losses,
        rtos,
        tlps,
        tsq,
        ece,
        writes,
        old_acks: _, // in the tag words
    } = budget;
    let r = &s.rack;
    let [w0, w1] = writes.to_le_bytes();
    [
        u64::from_le_bytes([
            s.sack_ok as u8,
            s.ts_ok as u8,
            s.frto as u8,
            s.tlp_retrans as u8,
            s.is_cwnd_limited as u8,
            s.is_sack_reneg as u8,
            s.undo_echo_unproven as u8,
            s.ecn_queue_cwr as u8,
        ]),
        u64::from_le_bytes([
            s.ca_state as u8,
            s.reord_seen,
            s.icsk_retransmits,
            s.icsk_backoff,
            r.reo_wnd_steps,
            r.reo_wnd_persist,
            r.advanced as u8,
            r.dsack_seen as u8,
        ]),
        u64::from_le_bytes([w0, w1, *losses, *ack_losses, *rtos, *tlps, *tsq, *ece]),
    ]
}

/// The remaining flags, the enum and `Option` tags, the old-ACK budget and whether a mask has
/// heap words, a byte each (two words). An `Option`'s tag byte is, where the `Option` keeps its
/// `None` in a niche of a small field, that field's value or its `None` value (one past the
/// field's largest), which is the byte in memory: one load, no compare and select (the field is
/// then in the tag, and again in the words of the `Option`'s payload).
#[inline(always)]
fn tag_words(s: &Sender, tsq_full: bool, held_ack: bool, old_acks: u8, heap: bool) -> [u64; 2] {
    let (g, ev) = (&s.ghost, &s.ghost.ev);
    let present = b(ev.hystart.is_some())
        | b(ev.idle_restart.is_some()) << 1
        | b(ev.eifel.is_some()) << 2
        | b(g.undo_owed.is_some()) << 3;
    [
        u64::from_le_bytes([
            ev.left_recovery
                .map_or(0, |(from, eq)| 1 + (e4(from as u64) << 1 | b(eq)) as u8),
            ev.prr_zero_prior_cwnd as u8,
            ev.nonsack_hold as u8,
            ev.entered_loss as u8,
            g.init_undo_ignored_tlp as u8,
            g.frto_ref as u8,
            present as u8,
            old_acks,
        ]),
        u64::from_le_bytes([
            s.timer.map_or(3, |t| t.kind as u8),
            g.last_reduction.map_or(4, |(_, k)| k as u8),
            g.episode.map_or(2, |e| e.undone as u8),
            ev.recovery_end.map_or(2, |(_, _, undone)| undone as u8),
            match &s.cc {
                Cc::Reno => 2,
                Cc::Cubic(c) => c.found as u8,
            },
            held_ack as u8,
            tsq_full as u8,
            b(g.frto_owed.is_some()) as u8 | (heap as u8) << 1,
        ]),
    ]
}

/// The sender's fixed-width fields (every field named: a new one is a compile error here).
#[inline(always)]
fn sender_words(s: &Sender, now: u32) -> [u64; 22] {
    let Sender {
        sack_ok: _,
        ts_ok: _,
        ca_state: _,
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
        reord_seen: _,
        frto: _,
        icsk_retransmits: _,
        icsk_backoff: _,
        tlp_high_seq,
        tlp_retrans: _,
        rack,
        rtt_est,
        prr_delivered,
        prr_out,
        is_cwnd_limited: _,
        max_packets_out,
        cwnd_usage_seq,
        total_retrans,
        dsack_dups,
        is_sack_reneg: _,
        undo_echo_unproven: _,
        ecn_queue_cwr: _,
        timer,
        cc: _, // tagged in the tag words, CUBIC's fields packed apart
        segs: _,
        ghost,
    } = s;
    let Rack {
        mstamp,
        sub,
        end_seq,
        rtt_us,
        advanced: _,
        reo_wnd_steps: _,
        reo_wnd_persist: _,
        dsack_seen: _,
    } = rack;
    let SenderGhost {
        last_reduction,
        episode,
        rtx_mask: _,
        ever_rtx_mask: _,
        init_undo_ignored_tlp: _,
        frto_ref: _,
        frto_owed: _,
        undo_owed: _,
        ev: _,
    } = ghost;
    // The RTT estimator: constant (its handshake values) unless `rtt_estimator` is on.
    let RttEst {
        srtt_us,
        mdev_us,
        mdev_max_us,
        rttvar_us,
        rtt_seq,
        rto,
        rtt_min,
    } = rtt_est;
    let [(t0, v0), (t1, v1), (t2, v2)] = rtt_min.s;
    [
        p2(now, *snd_una),
        p2(*snd_nxt, *write_seq),
        p2(*high_seq, *cwnd),
        p2(*ssthresh, *cwnd_cnt),
        p2(*prior_cwnd, *prior_ssthresh),
        p2(*undo_marker, *undo_retrans as u32),
        p2(*retrans_stamp, *packets_out),
        p2(*sacked_out, *lost_out),
        p2(*retrans_out, *reordering),
        p2(*tlp_high_seq, *mstamp),
        p2(*end_seq, *rtt_us),
        p2(*srtt_us, *mdev_us),
        p2(*mdev_max_us, *rttvar_us),
        p2(*rtt_seq, *rto),
        p2(t0, v0),
        p2(t1, v1),
        p2(t2, v2),
        p2(*prr_delivered, *prr_out),
        p2(*max_packets_out, *cwnd_usage_seq),
        p2(*total_retrans, *dsack_dups),
        p2(timer.map_or(0, |t: Timer| t.deadline), *sub as u32),
        p2(
            last_reduction.map_or(0, |(seq, _)| seq),
            episode.map_or(0, |e: Episode| e.start_una),
        ),
    ]
}

/// The ghost event log.
#[inline(always)]
fn event_words(
    f: &mut Fold,
    ev: &Events,
    undos: &[UndoEvent],
    undo_rtx: &[(u16, u16, u64)],
    reductions: &[Reduction],
) {
    // The three sequences come as slices (taken once by the caller).
    let Events {
        undos: _,
        reductions: _,
        prr_zero_prior_cwnd: _,
        recovery_end,
        left_recovery: _,
        nonsack_hold: _,
        hystart,
        idle_restart,
        entered_loss: _,
        undo_rtx: _,
        eifel: _,
    } = ev;
    let (re_a, re_b) = recovery_end.map_or((0, 0), |(a, c, _)| (a, c));
    f.word(p2(re_a, re_b));
    for u in undos {
        let UndoEvent {
            kind,
            ca_state,
            marker,
            cwnd_before,
            ssthresh_before,
            prior_cwnd,
            prior_ssthresh,
            cwnd_after,
            ssthresh_after,
            evidence,
            high_seq,
        } = u;
        f.word(e4(*kind as u64) | e4(*ca_state as u64) << 4 | (*evidence as u64) << 8);
        f.word(p2(*marker, *cwnd_before));
        f.word(p2(*ssthresh_before, *prior_cwnd));
        f.word(p2(*prior_ssthresh, *cwnd_after));
        f.word(*ssthresh_after as u64 | (*high_seq as u64) << 32);
    }
    for &(i, w, bits) in undo_rtx {
        f.word(i as u64 | (w as u64) << 16);
        f.word(bits);
    }
    for r in reductions {
        let Reduction {
            kind,
            from,
            snd_una,
            prev,
            icsk_retransmits,
            lost_retrans,
            cwnd,
            ssthresh,
        } = r;
        let (prev_tag, prev_seq) = match prev {
            None => (0, 0),
            Some((seq, k)) => (1 + e4(*k as u64), *seq),
        };
        f.word(
            e4(*kind as u64)
                | e4(*from as u64) << 4
                | prev_tag << 8
                | (*icsk_retransmits as u64) << 16
                | b(*lost_retrans) << 24
                | (prev_seq as u64) << 32,
        );
        f.word(p2(*snd_una, *cwnd));
        f.word(*ssthresh as u64);
    }
    if let Some(h) = hystart {
        hystart_words(f, h);
    }
    if let Some(IdleRestart {
        epoch_before,
        epoch_after,
        jiffies,
        idle_jiffies,
    }) = idle_restart
    {
        f.word(p2(*epoch_before, *epoch_after));
        f.word(p2(*jiffies, *idle_jiffies));
    }
}

#[inline(always)]
fn hystart_words(f: &mut Fold, h: &HystartExit) {
    let HystartExit {
        kind,
        ca_state,
        cwnd,
        ssthresh_before,
        snd_una,
        end_seq,
        true_end_seq,
        elapsed_us,
        min_rtt_us,
        paced,
        round_min,
        delay_min,
        ms_units,
    } = h;
    f.word(
        e4(*kind as u64)
            | e4(*ca_state as u64) << 4
            | b(*paced) << 8
            | b(*ms_units) << 9
            | (*cwnd as u64) << 32,
    );
    f.word(p2(*ssthresh_before, *snd_una));
    f.word(p2(*end_seq, *true_end_seq));
    f.word(p2(*elapsed_us, *min_rtt_us));
    f.word(p2(*round_min, *delay_min));
}

#[inline(always)]
fn cubic_words(c: &Cubic) -> [u64; 10] {
    let Cubic {
        cnt,
        last_max_cwnd,
        last_cwnd,
        last_time,
        bic_origin_point,
        bic_k,
        delay_min,
        epoch_start,
        ack_cnt,
        tcp_cwnd,
        sample_cnt,
        found,
        round_start,
        end_seq,
        last_ack,
        curr_rtt,
        g_end_seq,
        g_reset_us,
        g_min_rtt_us,
        g_round_min,
    } = c;
    [
        *sample_cnt as u64 | b(*found) << 8,
        p2(*cnt, *last_max_cwnd),
        p2(*last_cwnd, *last_time),
        p2(*bic_origin_point, *bic_k),
        p2(*delay_min, *epoch_start),
        p2(*ack_cnt, *tcp_cwnd),
        p2(*round_start, *end_seq),
        p2(*last_ack, *curr_rtt),
        p2(*g_end_seq, *g_reset_us),
        p2(*g_min_rtt_us, *g_round_min),
    ]
}
