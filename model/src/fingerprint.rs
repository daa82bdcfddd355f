//! [`State::fingerprint`]: a fast 64-bit fingerprint of a state for the checker engine.
//!
//! The derived `Hash` makes one hasher call per field (~150 for a state); this packs the state
//! into 64-bit words instead (small fields bit-packed, two `u32`s per word, variable-length
//! parts prefixed by their lengths), mostly at offsets the compiler knows, and folds the words
//! four lanes at a time with wyhash-style 128-bit multiplies (one multiply per 16 bytes).
//!
//! The packing is injective (a prefix-free encoding: every tag and length is written before
//! the fields it governs), so two states get the same fingerprint only if they are equal or
//! their 64-bit hashes collide, exactly as with the `Hash`-based fingerprint: the engine finds
//! the same unique states either way (checked by `trc bench` against stateright, which uses the
//! derived `Hash`, and by this crate's tests). Every struct is destructured without `..`, so a
//! field added to the state is a compile error here until it is fingerprinted too.
//!
//! Deterministic: no random seed, no addresses, independent of the platform's endianness.

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
const CAP: usize = 64;

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

/// A length (16 bits).
#[inline(always)]
fn len16(n: usize) -> u64 {
    u16::try_from(n).expect("fingerprint: sequence longer than 65535") as u64
}

/// Word buffer + four multiply lanes (independent dependency chains). The buffer is not zeroed
/// up front (512 bytes per state: ≈ 1.5 % of a check): `buf[..n]` is written by `push`, and
/// `finish` zero-pads up to the next multiple of eight before folding.
struct Packer {
    buf: [std::mem::MaybeUninit<u64>; CAP],
    n: usize,
    h: [u64; 4],
    total: u64,
}

impl Packer {
    #[inline(always)]
    fn new() -> Packer {
        Packer {
            buf: [std::mem::MaybeUninit::uninit(); CAP],
            n: 0,
            h: [P0, P1, P2, P3],
            total: 0,
        }
    }

    #[inline(always)]
    fn push(&mut self, w: u64) {
        if self.n == CAP {
            self.flush();
        }
        self.buf[self.n].write(w);
        self.n += 1;
    }

    /// Folds `buf[..upto]` (`upto` a multiple of 8, every word below it written): lane j takes
    /// words 8i+2j and 8i+2j+1.
    #[inline(always)]
    fn fold(&mut self, upto: usize) {
        let [mut h0, mut h1, mut h2, mut h3] = self.h;
        let mut i = 0;
        while i + 8 <= upto {
            // SAFETY: the caller guarantees `buf[..upto]` is initialised.
            let w: [u64; 8] = std::array::from_fn(|k| unsafe { self.buf[i + k].assume_init() });
            h0 = mum(w[0] ^ P1, w[1] ^ h0);
            h1 = mum(w[2] ^ P2, w[3] ^ h1);
            h2 = mum(w[4] ^ P3, w[5] ^ h2);
            h3 = mum(w[6] ^ P0, w[7] ^ h3);
            i += 8;
        }
        self.h = [h0, h1, h2, h3];
    }

    #[inline(never)]
    fn flush(&mut self) {
        self.fold(CAP);
        self.total += CAP as u64;
        self.n = 0;
    }

    #[inline(always)]
    fn finish(&mut self) -> u64 {
        let n = self.n;
        // Pad with zeros to whole groups of eight words (the word count is mixed in below).
        let padded = (n + 7) & !7;
        for w in &mut self.buf[n..padded] {
            w.write(0);
        }
        self.fold(padded);
        let total = self.total + n as u64;
        let [h0, h1, h2, h3] = self.h;
        match mum(mum(h0 ^ P3, h1 ^ total) ^ P1, mum(h2 ^ P2, h3 ^ P0)) {
            0 => 1,
            x => x,
        }
    }
}

impl State {
    /// The state's fingerprint (see the module docs); never 0. Equal states have equal
    /// fingerprints; different states collide with probability ≈ 2^-64.
    pub fn fingerprint(&self) -> u64 {
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
        let mut p = Packer::new();
        // Tags, small fields and lengths first: everything that decides the layout below.
        sender_flags(&mut p, sender, *tsq_full);
        budget_word(
            &mut p,
            budget,
            sender.rack.reo_wnd_steps,
            &sender.ghost,
            *held,
        );
        let ev = &sender.ghost.ev;
        p.push(
            len16(sender.segs.len())
                | len16(flight.len()) << 16
                | len16(sacks.len()) << 32
                | (len16(ev.undos.len()) & 0xff) << 48
                | (len16(ev.reductions.len()) & 0xff) << 56,
        );
        debug_assert!(ev.undos.len() < 256 && ev.reductions.len() < 256);
        let (rtx, ever) = (&sender.ghost.rtx_mask, &sender.ghost.ever_rtx_mask);
        p.push(
            len16(have.word_count())
                | len16(orig_dropped.word_count()) << 16
                | len16(rtx.word_count()) << 32
                | len16(ever.word_count()) << 48,
        );
        p.push(len16(ev.undo_rtx.len()));
        // Fixed-width fields.
        sender_words(&mut p, sender, *now);
        p.push(p2(*ts_recent, 0));
        // Variable-length parts.
        for m in [have, orig_dropped, rtx, ever] {
            for w in m.words() {
                p.push(w);
            }
        }
        for Seg { tags, sub, xmit } in sender.segs.iter() {
            p.push(*tags as u64 | (*sub as u64) << 8 | (*xmit as u64) << 24);
        }
        for Pkt { seg, sent, rtx } in flight.iter() {
            p.push(*sent as u64 | (*seg as u64) << 32 | b(*rtx) << 48);
        }
        for &(s, e) in sacks.iter() {
            p.push(p2(s as u32, e as u32));
        }
        // The held ACK only when there is one (its tag is in the budget word): a state without
        // one packs exactly as before the field existed.
        if *held {
            p.push(*n as u64 | (*ack as u64) << 8 | (*tsecr as u64) << 32);
            p.push(
                blocks
                    .iter()
                    .enumerate()
                    .fold(0u64, |w, (i, &(s, _))| w | (s as u64) << (16 * i)),
            );
            p.push(
                blocks
                    .iter()
                    .enumerate()
                    .fold(0u64, |w, (i, &(_, e))| w | (e as u64) << (16 * i)),
            );
        }
        event_words(&mut p, ev);
        // The Eifel-proof ghosts only when set (tagged in the budget word), like the held ACK.
        if let Some(proof) = sender.ghost.undo_owed {
            p.push(eifel_word(&proof));
        }
        if let Some(EifelStep {
            proof,
            missed,
            lost,
        }) = ev.eifel
        {
            p.push(eifel_word(&proof) | b(missed) << 48 | b(lost) << 49);
        }
        p.finish()
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

/// The sender's flags, enum tags and small counters, bit-packed into one word.
#[inline(always)]
fn sender_flags(p: &mut Packer, s: &Sender, tsq_full: bool) {
    let ev = &s.ghost.ev;
    let (timer_tag, lr_tag, ep_tag) = (
        s.timer.map_or(0, |t| 1 + e4(t.kind as u64)),
        s.ghost.last_reduction.map_or(0, |(_, k)| 1 + e4(k as u64)),
        s.ghost.episode.map_or(0, |e| 1 + b(e.undone)),
    );
    let re_tag = ev.recovery_end.map_or(0, |(_, _, undone)| 1 + b(undone));
    let left_tag = ev
        .left_recovery
        .map_or(0, |(from, eq)| 1 + (e4(from as u64) << 1 | b(eq)));
    p.push(
        b(s.sack_ok)
            | b(s.ts_ok) << 1
            | b(s.frto) << 2
            | b(s.tlp_retrans) << 3
            | b(s.is_cwnd_limited) << 4
            | b(s.is_sack_reneg) << 5
            | b(s.ecn_queue_cwr) << 6
            | b(s.rack.advanced) << 7
            | b(s.rack.dsack_seen) << 8
            | b(tsq_full) << 9
            | b(matches!(s.cc, Cc::Cubic(_))) << 10
            | b(ev.prr_zero_prior_cwnd) << 11
            | b(ev.nonsack_hold) << 12
            | b(ev.entered_loss) << 13
            | b(ev.hystart.is_some()) << 14
            | b(ev.idle_restart.is_some()) << 15
            | e4(s.ca_state as u64) << 16
            | timer_tag << 20
            | lr_tag << 25
            | ep_tag << 30
            | re_tag << 32
            | left_tag << 34
            | b(s.undo_echo_unproven) << 38
            | (s.reord_seen as u64) << 40
            | (s.icsk_retransmits as u64) << 48
            | (s.icsk_backoff as u64) << 56,
    );
}

#[inline(always)]
fn budget_word(
    p: &mut Packer,
    budget: &Budget,
    reo_wnd_steps: u8,
    g: &SenderGhost,
    held_ack: bool,
) {
    let Budget {
        losses,
        ack_losses,
        rtos,
        tlps,
        tsq,
        ece,
        writes,
        old_acks,
    } = budget;
    p.push(
        *losses as u64
            | (*ack_losses as u64) << 8
            | (*rtos as u64) << 16
            | (*tlps as u64) << 24
            | (*tsq as u64) << 32
            | (*ece as u64) << 40
            | (*writes as u64) << 48,
    );
    // Bits: 0-7 reo_wnd_steps, 8-10 ghost flags, 11 a held ACK, 12-13 the Eifel-proof ghosts
    // present (packed at the end), 16-47 the owed F-RTO range, 48-55 the old-ACK budget.
    p.push(
        reo_wnd_steps as u64
            | b(g.init_undo_ignored_tlp) << 8
            | b(g.frto_ref) << 9
            | g.frto_owed
                .map_or(0, |(a, z)| 1 << 10 | (a as u64) << 16 | (z as u64) << 32)
            | b(held_ack) << 11
            | b(g.undo_owed.is_some()) << 12
            | b(g.ev.eifel.is_some()) << 13
            | (*old_acks as u64) << 48,
    );
}

/// The sender's fixed-width fields (every field named: a new one is a compile error here).
#[inline(always)]
fn sender_words(p: &mut Packer, s: &Sender, now: u32) {
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
        cc,
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
        reo_wnd_persist,
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
    p.push(p2(now, *snd_una));
    p.push(p2(*snd_nxt, *write_seq));
    p.push(p2(*high_seq, *cwnd));
    p.push(p2(*ssthresh, *cwnd_cnt));
    p.push(p2(*prior_cwnd, *prior_ssthresh));
    p.push(p2(*undo_marker, *undo_retrans as u32));
    p.push(p2(*retrans_stamp, *packets_out));
    p.push(p2(*sacked_out, *lost_out));
    p.push(p2(*retrans_out, *reordering));
    p.push(p2(*tlp_high_seq, *mstamp));
    p.push(p2(*end_seq, *rtt_us));
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
    p.push(p2(*srtt_us, *mdev_us));
    p.push(p2(*mdev_max_us, *rttvar_us));
    p.push(p2(*rtt_seq, *rto));
    for (t, v) in rtt_min.s {
        p.push(p2(t, v));
    }
    p.push(p2(*prr_delivered, *prr_out));
    p.push(p2(*max_packets_out, *cwnd_usage_seq));
    p.push(p2(*total_retrans, *dsack_dups));
    p.push(p2(
        timer.map_or(0, |t: Timer| t.deadline),
        *reo_wnd_persist as u32 | (*sub as u32) << 8,
    ));
    p.push(p2(
        last_reduction.map_or(0, |(seq, _)| seq),
        episode.map_or(0, |e: Episode| e.start_una),
    ));
    if let Cc::Cubic(c) = cc {
        cubic_words(p, c);
    }
}

/// The ghost event log.
#[inline(always)]
fn event_words(p: &mut Packer, ev: &Events) {
    let Events {
        undos,
        reductions,
        prr_zero_prior_cwnd: _,
        recovery_end,
        left_recovery: _,
        nonsack_hold: _,
        hystart,
        idle_restart,
        entered_loss: _,
        undo_rtx,
        eifel: _,
    } = ev;
    let (re_a, re_b) = recovery_end.map_or((0, 0), |(a, c, _)| (a, c));
    p.push(p2(re_a, re_b));
    for u in undos.iter() {
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
        p.push(e4(*kind as u64) | e4(*ca_state as u64) << 4 | (*evidence as u64) << 8);
        p.push(p2(*marker, *cwnd_before));
        p.push(p2(*ssthresh_before, *prior_cwnd));
        p.push(p2(*prior_ssthresh, *cwnd_after));
        p.push(*ssthresh_after as u64 | (*high_seq as u64) << 32);
    }
    for &(i, w, bits) in undo_rtx.iter() {
        p.push(i as u64 | (w as u64) << 16);
        p.push(bits);
    }
    for r in reductions.iter() {
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
        p.push(
            e4(*kind as u64)
                | e4(*from as u64) << 4
                | prev_tag << 8
                | (*icsk_retransmits as u64) << 16
                | b(*lost_retrans) << 24
                | (prev_seq as u64) << 32,
        );
        p.push(p2(*snd_una, *cwnd));
        p.push(*ssthresh as u64);
    }
    if let Some(h) = hystart {
        hystart_words(p, h);
    }
    if let Some(IdleRestart {
        epoch_before,
        epoch_after,
        jiffies,
        idle_jiffies,
    }) = idle_restart
    {
        p.push(p2(*epoch_before, *epoch_after));
        p.push(p2(*jiffies, *idle_jiffies));
    }
}

#[inline(always)]
fn hystart_words(p: &mut Packer, h: &HystartExit) {
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
    p.push(
        e4(*kind as u64)
            | e4(*ca_state as u64) << 4
            | b(*paced) << 8
            | b(*ms_units) << 9
            | (*cwnd as u64) << 32,
    );
    p.push(p2(*ssthresh_before, *snd_una));
    p.push(p2(*end_seq, *true_end_seq));
    p.push(p2(*elapsed_us, *min_rtt_us));
    p.push(p2(*round_min, *delay_min));
}

#[inline(always)]
fn cubic_words(p: &mut Packer, c: &Cubic) {
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
    p.push(*sample_cnt as u64 | b(*found) << 8);
    p.push(p2(*cnt, *last_max_cwnd));
    p.push(p2(*last_cwnd, *last_time));
    p.push(p2(*bic_origin_point, *bic_k));
    p.push(p2(*delay_min, *epoch_start));
    p.push(p2(*ack_cnt, *tcp_cwnd));
    p.push(p2(*round_start, *end_seq));
    p.push(p2(*last_ack, *curr_rtt));
    p.push(p2(*g_end_seq, *g_reset_us));
    p.push(p2(*g_min_rtt_us, *g_round_min));
}
