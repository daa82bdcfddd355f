//! `trc-properties`: the invariant catalogue. Each property has an id, a one-line statement,
//! the kernel bugs it guards against, and a predicate over a model state (which carries ghost
//! truth about the network and ghost observations of the step that produced it).
//! docs/reference/properties.md documents each one; every property has a test showing it can fail.
#![forbid(unsafe_code)]

pub mod baseline;
pub mod signature;

use stateright::{Expectation, Property};
use trc_model::model::{State, TcpModel};
use trc_model::reduce::{GhostSet, Reduce};
use trc_model::seq::before;
use trc_model::state::{tag, CaState, ReductionKind, UndoKind, TCP_INFINITE_SSTHRESH};

/// One catalogue entry.
pub struct Spec {
    /// Short id (`I1`, `I1p`, ...), used on the command line.
    pub id: &'static str,
    /// The stateright property name: `"<id>: <statement>"`.
    pub name: &'static str,
    /// One-line statement.
    pub statement: &'static str,
    /// The kernel commits whose bugs it catches.
    pub guards: &'static str,
    /// Holds in a state (evaluated on every reachable state).
    pub holds: fn(&TcpModel, &State) -> bool,
}

impl Spec {
    pub fn property(&self) -> Property<TcpModel> {
        Property {
            expectation: Expectation::Always,
            name: self.name,
            condition: self.holds,
        }
    }
}

/// Segments `k` (indices) whose sequence number is at or above `marker`.
fn at_or_above(m: &TcpModel, k: u32, marker: u32) -> bool {
    !before(m.cfg.isn.wrapping_add(k), marker)
}

/// I1: no undo of a reduction while a retransmission of this episode repaired a real loss. The
/// episode answers the losses of data sent before it began (below its `high_seq`); a segment
/// sent later (new data after an RTO, say) whose loss a TLP then probes is a new loss with its own
/// response (`tcp_process_tlp_ack`, a later recovery), not one the undo takes back.
fn i1(m: &TcpModel, s: &State) -> bool {
    i1_offending_undo(m, s).is_none()
}

/// The first undo of the step that I1 rejects (index into `Events::undos`).
pub(crate) fn i1_offending_undo(m: &TcpModel, s: &State) -> Option<usize> {
    let g = &s.ghost;
    let ev = &s.sender.ghost.ev;
    ev.undos.iter().enumerate().position(|(i, u)| {
        g.orig_dropped.iter().any(|k| {
            let in_episode =
                at_or_above(m, k, u.marker) && before(m.cfg.isn.wrapping_add(k), u.high_seq);
            let real_loss_retransmitted = ev.undo_rtx_contains(i, k) && in_episode;
            // F-RTO's undo (RFC 5682 3b) judges the timeout, not the lost segment: it is only
            // wrong once the retransmission has already repaired the loss.
            let relevant = if u.kind == UndoKind::Frto {
                s.rcv.have.contains(k)
            } else {
                true
            };
            real_loss_retransmitted && relevant
        })
    })
}

/// I1': a SACK fast recovery whose retransmissions never left the host (TSQ) and in which
/// nothing was really lost ends with an undo.
fn i1p(m: &TcpModel, s: &State) -> bool {
    let snd = &s.sender;
    let Some((_, _, undone)) = snd.ghost.ev.recovery_end else {
        return true;
    };
    let Some(ep) = snd.ghost.episode else {
        return true;
    };
    if !snd.sack_ok || undone || ep.undone {
        return true;
    }
    // The ACK that ended the episode may start the next one (a new loss marked at once):
    // `episode` is then the new one (`start_una == snd_una`; an ended episode's start is below
    // `snd_una`, which passed its `high_seq`), and the ended one's segments are no longer
    // known. Such a step is not judged.
    if ep.start_una == snd.snd_una {
        return true;
    }
    // Applies only when no segment at or above the episode's start was ever retransmitted (all
    // retransmissions were held in the host) and none was really lost.
    let from = ep.start_una.wrapping_sub(m.cfg.isn);
    let retransmitted = snd.ghost.ever_rtx_mask.any_at_or_above(from);
    let real_loss = s.ghost.orig_dropped.any_at_or_above(from);
    retransmitted || real_loss
}

/// I2: ssthresh is reduced at most once per window, with the kernel's documented
/// exceptions: an RTO in Loss after an ACK advanced snd_una since the previous RTO (§8.1), a lost
/// retransmission moving Loss to Recovery (row 18), a TLP that repaired a loss (row 21), and a
/// Recovery entered for the loss of data sent after the previous reduction (a new window: its
/// `high_seq` or above is marked lost, e.g. by RACK's reordering timer in Loss after F-RTO sent
/// new data — `tcp_rack_reo_timeout` enters Recovery from any other state).
fn i2(m: &TcpModel, s: &State) -> bool {
    s.sender
        .ghost
        .ev
        .reductions
        .iter()
        .all(|r| i2_reduction_ok(m, s, r))
}

/// Whether one reduction keeps I2.
pub(crate) fn i2_reduction_ok(m: &TcpModel, s: &State, r: &trc_model::state::Reduction) -> bool {
    let Some((prev_high_seq, prev_kind)) = r.prev else {
        return true;
    };
    !before(r.snd_una, prev_high_seq)
        || (r.kind == ReductionKind::Loss && r.from == CaState::Loss && r.icsk_retransmits == 0)
        || r.lost_retrans
        || r.kind == ReductionKind::Tlp
        || prev_kind == ReductionKind::Tlp
        || (r.kind == ReductionKind::Recovery && new_window_loss(m, s, prev_high_seq))
}

/// A segment at or above `high_seq` (sent after the reduction that set it) is marked lost.
fn new_window_loss(m: &TcpModel, s: &State, high_seq: u32) -> bool {
    let snd = &s.sender;
    snd.rtx_queue(&m.cfg)
        .any(|k| snd.segs[k as usize].tags & tag::L != 0 && at_or_above(m, k, high_seq))
}

/// I19: no missed undo of a provably spurious RTO. The reference F-RTO judgement
/// (`SenderGhost::frto_ref`: RFC 5682's SACK-enhanced F-RTO as the kernel runs it, with a
/// DSACK-only ACK never a duplicate ACK) proved the RTO spurious — never-retransmitted data was
/// (S)ACKed while it was open — and no undo followed (`frto_owed`); the property fails when
/// that episode ends (the state leaves Loss, or a new RTO starts one) still without an undo,
/// unless the ghost truth says an original of the episode (`undo_marker`..`high_seq` at the
/// proof; from the first segment when `undo_marker` was 0) really was lost: then not undoing was right whatever
/// the evidence said. Ambiguous evidence (a duplicate ACK without DSACK, newly SACKed
/// retransmitted data, no new data to send in step 2b) ends the judgement, and nothing is owed.
fn i19(_m: &TcpModel, s: &State) -> bool {
    let snd = &s.sender;
    let Some((from, to)) = snd.ghost.frto_owed else {
        return true;
    };
    if snd.ca_state == CaState::Loss && !snd.ghost.ev.entered_loss {
        return true;
    }
    !episode_clean(s, from, to)
}

/// Whether the ghost truth says no original of the episode's segments `[from, to)` was dropped:
/// then every retransmission of it was spurious, and an undo is right.
fn episode_clean(s: &State, from: u16, to: u16) -> bool {
    !s.ghost
        .orig_dropped
        .iter()
        .any(|k| (from as u32..to as u32).contains(&k))
}

/// I20: no missed undo of a provably spurious episode. An ACK in Recovery or Loss that covers
/// every retransmission of the episode and echoes a TSval older than its first one
/// (`EifelProof`: RFC 3522's evidence, which `tcp_packet_delayed()` reads) proves the
/// retransmissions were not needed when the ghost truth agrees (no original of
/// `[undo_marker, high_seq)` was dropped); the episode is then undone on that ACK
/// (`tcp_try_undo_recovery()`, `tcp_try_undo_partial()` with nothing retransmitted left in
/// flight, `tcp_try_undo_loss()`). It catches a fix that narrows what the echo proves so far
/// that legitimate Eifel undos are lost or deferred.
fn i20(_m: &TcpModel, s: &State) -> bool {
    s.sender
        .ghost
        .ev
        .eifel
        .is_none_or(|e| !e.missed || !episode_clean(s, e.proof.from, e.proof.to))
}

/// I20e: the weaker form of I20: a proven episode is undone by its end (by any later undo, a
/// DSACK or F-RTO say), so a deferred undo holds and a lost one fails: the episode left
/// Recovery/Loss, or the next `tcp_init_undo()` began, still without an undo.
fn i20e(_m: &TcpModel, s: &State) -> bool {
    s.sender
        .ghost
        .ev
        .eifel
        .is_none_or(|e| !e.lost || !episode_clean(s, e.proof.from, e.proof.to))
}

/// I3: cwnd ≥ 1 after every step, and PRR never divides by a zero `prior_cwnd`.
fn i3(_m: &TcpModel, s: &State) -> bool {
    (s.sender.cwnd as i32) >= 1 && !s.sender.ghost.ev.prr_zero_prior_cwnd
}

/// I5: legal state: counters never wrap below zero, agree with the per-segment tags, Open has no
/// retransmission in flight, no segment is both SACKed and lost.
fn i5(m: &TcpModel, s: &State) -> bool {
    let snd = &s.sender;
    for c in [
        snd.packets_out,
        snd.sacked_out,
        snd.lost_out,
        snd.retrans_out,
    ] {
        if (c as i32) < 0 {
            return false;
        }
    }
    if snd.packets_out != snd.snd_nxt.wrapping_sub(snd.snd_una) {
        return false;
    }
    if snd.tcp_left_out() > snd.packets_out || snd.retrans_out > snd.packets_out {
        return false;
    }
    if snd.ca_state == CaState::Open && snd.retrans_out != 0 {
        return false;
    }
    let (mut sacked, mut lost, mut retrans) = (0, 0, 0);
    for k in snd.rtx_queue(&m.cfg) {
        let t = snd.segs[k as usize].tags;
        if t & tag::S != 0 && t & tag::L != 0 {
            return false;
        }
        sacked += (t & tag::S != 0) as u32;
        lost += (t & tag::L != 0) as u32;
        retrans += (t & tag::R != 0) as u32;
    }
    lost == snd.lost_out && retrans == snd.retrans_out && (!snd.sack_ok || sacked == snd.sacked_out)
}

/// I11: an undo restores exactly `max(cwnd, prior_cwnd)` and `max(ssthresh, prior_ssthresh)`
/// when `prior_ssthresh != 0`, and changes neither otherwise (ECE seen, or entered from CWR).
fn i11(_m: &TcpModel, s: &State) -> bool {
    s.sender.ghost.ev.undos.iter().all(|u| {
        if u.prior_ssthresh != 0 {
            u.cwnd_after == u.cwnd_before.max(u.prior_cwnd)
                && u.ssthresh_after == u.ssthresh_before.max(u.prior_ssthresh)
        } else {
            u.cwnd_after == u.cwnd_before && u.ssthresh_after == u.ssthresh_before
        }
    })
}

/// I13: leaving Recovery without an undo sets cwnd to ssthresh (end of PRR).
fn i13(_m: &TcpModel, s: &State) -> bool {
    match s.sender.ghost.ev.recovery_end {
        Some((cwnd, ssthresh, false)) if ssthresh < TCP_INFINITE_SSTHRESH => cwnd == ssthresh,
        _ => true,
    }
}

/// I14: a non-SACK sender never leaves Recovery or Loss while `snd_una == high_seq` (RFC 6582).
fn i14(_m: &TcpModel, s: &State) -> bool {
    if s.sender.sack_ok {
        return true;
    }
    !matches!(s.sender.ghost.ev.left_recovery, Some((_, true)))
}

// ---- CUBIC / HyStart (I12, I15*, I16*, I17, I18; docs/reference/properties.md) --------------------------

fn cubic(s: &State) -> Option<&trc_model::cc::Cubic> {
    match &s.sender.cc {
        trc_model::cc::Cc::Cubic(c) => Some(c),
        _ => None,
    }
}

/// I12: `ssthresh()` never returns less than 2; HyStart sets ssthresh = cwnd only in slow start.
fn i12(_m: &TcpModel, s: &State) -> bool {
    let ev = &s.sender.ghost.ev;
    ev.reductions.iter().all(|r| r.ssthresh >= 2)
        && ev.hystart.is_none_or(|h| h.cwnd < h.ssthresh_before)
}

/// I15: HyStart exits only within a real round: its round (`end_seq`) is the true one, tracked
/// on every ACK with an RTT sample whatever cwnd, state or cwnd-limitedness.
fn i15(_m: &TcpModel, s: &State) -> bool {
    s.sender
        .ghost
        .ev
        .hystart
        .is_none_or(|h| h.end_seq == h.true_end_seq)
}

/// I15b: a delay exit needs every sample its detector saw in the round above the threshold
/// (no exit because the min RTT dropped after the first samples).
fn i15b(_m: &TcpModel, s: &State) -> bool {
    s.sender.ghost.ev.hystart.is_none_or(|h| {
        if h.kind != trc_model::cc::HystartKind::Delay {
            return true;
        }
        let (lo, hi) = if h.ms_units {
            (4 << 3, 16 << 3)
        } else {
            (4000, 16000)
        };
        h.round_min as u64 > h.delay_min as u64 + (h.delay_min >> 3).clamp(lo, hi) as u64
    })
}

/// I15c: an ACK-train exit needs a train of at least half the true minimum RTT (the full
/// minimum RTT when paced), measured in real time, whatever the clock's resolution.
fn i15c(_m: &TcpModel, s: &State) -> bool {
    s.sender.ghost.ev.hystart.is_none_or(|h| {
        if h.kind != trc_model::cc::HystartKind::Train || h.min_rtt_us == u32::MAX {
            return true;
        }
        let need = if h.paced {
            h.min_rtt_us as u64
        } else {
            (h.min_rtt_us as u64).div_ceil(2)
        };
        h.elapsed_us as u64 >= need
    })
}

/// I16: CUBIC's `epoch_start` is never in the future; `cnt >= 2` (cwnd grows at most 1.5x per
/// RTT in congestion avoidance).
fn i16(m: &TcpModel, s: &State) -> bool {
    let Some(c) = cubic(s) else { return true };
    let now = trc_model::cc::CcParams::new(&m.cfg, &m.profile).jiffies(s.now);
    // cnt is computed (and floored) whenever an epoch runs; 0 only after a reset.
    c.epoch_start == 0 || (!trc_model::seq::after(c.epoch_start, now) && c.cnt >= 2)
}

/// I16i: no cwnd jump after idle: a send after an idle period shifts CUBIC's epoch by at least
/// the idle time (or to now), so the curve does not run on while nothing was sent.
fn i16i(_m: &TcpModel, s: &State) -> bool {
    s.sender.ghost.ev.idle_restart.is_none_or(|r| {
        if r.idle_jiffies == 0 {
            return true;
        }
        let shifted = r.epoch_before.wrapping_add(r.idle_jiffies);
        let bound = if trc_model::seq::after(shifted, r.jiffies) {
            r.jiffies
        } else {
            shifted
        };
        !before(r.epoch_after, bound)
    })
}

/// I17: CUBIC's ssthresh after a loss is `max(cwnd·717/1024, 2)`.
fn i17(_m: &TcpModel, s: &State) -> bool {
    if cubic(s).is_none() {
        return true;
    }
    s.sender
        .ghost
        .ev
        .reductions
        .iter()
        .all(|r| r.ssthresh == ((r.cwnd as u64 * 717 / 1024) as u32).max(2))
}

/// I18: an RTO resets CUBIC (and HyStart): `last_max_cwnd`, the epoch, `delay_min`, `found`,
/// `cnt` are zero after `tcp_enter_loss`; a later undo restores only cwnd/ssthresh (I11).
fn i18(_m: &TcpModel, s: &State) -> bool {
    if !s.sender.ghost.ev.entered_loss {
        return true;
    }
    cubic(s).is_none_or(|c| {
        c.last_max_cwnd == 0 && c.epoch_start == 0 && c.delay_min == 0 && !c.found && c.cnt == 0
    })
}

/// The catalogue, in id order.
// A table: one entry per property (id, name, statement, the commits it guards, its predicate).
#[allow(clippy::too_many_lines)]
pub fn catalogue() -> Vec<Spec> {
    vec![
        Spec {
            id: "I1",
            name: "I1: no undo after a real loss repaired by retransmission",
            statement: "no cwnd/ssthresh undo while a segment retransmitted in this episode had its original really dropped",
            guards: "e37ab7373696 (non-SACK, fixed by d0fa59897e04), 0ec986ed7bab (TLP DSACK), da34ac7626b5 (Loss undo on dupacks), 1236f22fbae1 (non-SACK F-RTO)",
            holds: i1,
        },
        Spec {
            id: "I1p",
            name: "I1p: a provably spurious (TSQ-held) SACK recovery is undone",
            statement: "a SACK fast recovery in which nothing was really lost and no retransmission left the host ends with an undo",
            guards: "bc9f38c8328e (fixed by e37ab7373696)",
            holds: i1p,
        },
        Spec {
            id: "I2",
            name: "I2: ssthresh is reduced at most once per window",
            statement: "a second ssthresh reduction needs snd_una past the previous reduction's high_seq (or one of the kernel's documented exceptions)",
            guards: "2014 'avoid multiple ssthresh reductions' (tcp_enter_loss guard)",
            holds: i2,
        },
        Spec {
            id: "I3",
            name: "I3: cwnd >= 1 and PRR never divides by zero",
            statement: "cwnd is at least 1 after every event and PRR never runs with prior_cwnd == 0",
            guards: "3759824da87b (fixed by 8b8a321ff72c)",
            holds: i3,
        },
        Spec {
            id: "I5",
            name: "I5: legal sender state",
            statement: "counters never wrap, match the segment tags, left_out <= packets_out, Open has retrans_out == 0, no L|S tag",
            guards: "dad8cea7add9 (Open with retrans_out != 0), 4f884f396276 (undo_retrans accounting)",
            holds: i5,
        },
        Spec {
            id: "I11",
            name: "I11: undo restores exactly the prior values",
            statement: "undo sets cwnd = max(cwnd, prior_cwnd), ssthresh = max(ssthresh, prior_ssthresh) if prior_ssthresh != 0, else changes neither",
            guards: "generic undo (4.15 consolidation), ECN rule of tcp_fastretrans_alert step A",
            holds: i11,
        },
        Spec {
            id: "I12",
            name: "I12: ssthresh() >= 2; HyStart sets ssthresh = cwnd only in slow start",
            statement: "every congestion-control ssthresh() result is at least 2, and a HyStart exit happens only with cwnd < ssthresh",
            guards: "cubictcp_recalc_ssthresh / tcp_reno_ssthresh floor; HyStart's in_slow_start gate",
            holds: i12,
        },
        Spec {
            id: "I13",
            name: "I13: recovery exit without undo leaves cwnd == ssthresh",
            statement: "tcp_end_cwnd_reduction at the end of a Recovery that was not undone sets cwnd = ssthresh",
            guards: "3759824da87b family (PRR end)",
            holds: i13,
        },
        Spec {
            id: "I14",
            name: "I14: non-SACK holds Recovery/Loss at snd_una == high_seq",
            statement: "a non-SACK sender does not leave Recovery or Loss on an ACK that makes snd_una == high_seq",
            guards: "RFC 6582 hold (tcp_is_non_sack_preventing_reopen, 686dc2db2a0f)",
            holds: i14,
        },
        Spec {
            id: "I15",
            name: "I15: HyStart exits only within a real round",
            statement: "at a HyStart exit, HyStart's round (end_seq) is the true round, tracked on every ACK with an RTT sample",
            guards: "25c1a9ca53db (low-window check before the round reset), 4e1fddc98d25 (round reset only when cwnd-limited)",
            holds: i15,
        },
        Spec {
            id: "I15b",
            name: "I15b: no HyStart delay exit because of a min-RTT drop",
            statement: "a delay exit needs every sample of the round seen by the detector above delay_min + clamp(delay_min/8, 4 ms, 16 ms)",
            guards: "b344579ca847 (only the first 8 samples lowered curr_rtt)",
            holds: i15b,
        },
        Spec {
            id: "I15c",
            name: "I15c: HyStart ACK-train exit only after half the real min RTT",
            statement: "an ACK-train exit needs a train (real time since the round start) of at least half the true min RTT, the full min RTT when paced",
            guards: "Dec 2019 usec clock series (ms clock below its resolution; pacing-aware threshold)",
            holds: i15c,
        },
        Spec {
            id: "I16",
            name: "I16: CUBIC epoch_start never in the future, cnt >= 2",
            statement: "while an epoch runs, epoch_start (jiffies) is not after now and bictcp_update's cnt is at least 2",
            guards: "2015 'tcp_cubic: do not set epoch_start in the future'; bictcp_update cnt floor",
            holds: i16,
        },
        Spec {
            id: "I16i",
            name: "I16i: no CUBIC cwnd jump after idle",
            statement: "a send after an idle period moves epoch_start forward by at least the idle time (or to now)",
            guards: "30927520dbae (v4.3, follow the cubic curve after idle)",
            holds: i16i,
        },
        Spec {
            id: "I17",
            name: "I17: CUBIC ssthresh after loss = max(cwnd*717/1024, 2)",
            statement: "every CUBIC ssthresh() call returns max(cwnd*717/1024, 2)",
            guards: "cubictcp_recalc_ssthresh",
            holds: i17,
        },
        Spec {
            id: "I18",
            name: "I18: an RTO resets CUBIC's state",
            statement: "after tcp_enter_loss, CUBIC's last_max_cwnd, epoch_start, delay_min, cnt and HyStart's found are zero (undo restores only cwnd/ssthresh)",
            guards: "cubictcp_state on TCP_CA_Loss",
            holds: i18,
        },
        Spec {
            id: "I19",
            name: "I19: a provably spurious RTO is undone",
            statement: "an RTO that F-RTO's evidence (never-retransmitted data (S)ACKed; a DSACK-only ACK is no duplicate ACK) proved spurious, with no original of the episode really lost, does not end without an undo",
            guards: "d9157f6806d1 (a DSACK ACK counted as a dupack ended F-RTO: missed undo)",
            holds: i19,
        },
        Spec {
            id: "I20",
            name: "I20: an episode the timestamps prove spurious is undone on the proving ACK",
            statement: "an ACK in Recovery/Loss that covers every retransmission of the episode and echoes a TSval older than the first, with no original of the episode really lost, undoes the reduction",
            guards: "the F1 fix's first form (vm/kconfig/f1-fix.patch: the echo trusted only for the head's one retransmission); Eifel (RFC 3522) as tcp_packet_delayed() has read it since 2005",
            holds: i20,
        },
        Spec {
            id: "I20e",
            name: "I20e: an episode the timestamps prove spurious is undone by its end",
            statement: "an episode whose Eifel proof arrived (I20), with no original really lost, is undone before it leaves Recovery/Loss or the next episode begins",
            guards: "the F1 fix's first form (a lost, not merely deferred, undo)",
            holds: i20e,
        },
    ]
}

/// A property id that is not in the catalogue ([`select`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown property `{id}` (known: {})", known.join(", "))]
pub struct UnknownProperty {
    /// The id as given.
    pub id: String,
    /// The catalogue's ids.
    pub known: Vec<&'static str>,
}

/// The specs whose ids are listed (all if `ids` is empty). Unknown ids are an error.
pub fn select(ids: &[String]) -> Result<Vec<Spec>, UnknownProperty> {
    let all = catalogue();
    if ids.is_empty() {
        return Ok(all);
    }
    let mut out = Vec::new();
    for id in ids {
        match catalogue()
            .into_iter()
            .find(|s| s.id.eq_ignore_ascii_case(id))
        {
            Some(s) => out.push(s),
            None => {
                return Err(UnknownProperty {
                    id: id.clone(),
                    known: all.iter().map(|s| s.id).collect(),
                })
            }
        }
    }
    Ok(out)
}

/// The stateright properties for a list of specs.
pub fn properties(specs: &[Spec]) -> Vec<Property<TcpModel>> {
    specs.iter().map(Spec::property).collect()
}

/// The persistent ghost fields property `id` reads, directly or through the step observations
/// they feed (for [`trc_model::reduce::Reduce::dead_ghosts`]). Unknown ids read everything.
pub fn ghost_reads(id: &str) -> GhostSet {
    match id {
        // Events::undo_rtx comes from SenderGhost::rtx_mask.
        "I1" => GhostSet::ORIG_DROPPED.union(GhostSet::RTX_MASK),
        "I1p" => GhostSet::ORIG_DROPPED
            .union(GhostSet::EVER_RTX_MASK)
            .union(GhostSet::EPISODE),
        // Reduction::prev comes from SenderGhost::last_reduction.
        "I2" => GhostSet::LAST_REDUCTION,
        // HystartExit::{true_end_seq, round_min, min_rtt_us, elapsed_us} come from CUBIC's g_*.
        "I15" | "I15b" | "I15c" => GhostSet::HYSTART,
        "I19" => GhostSet::ORIG_DROPPED.union(GhostSet::FRTO_REF),
        // The Eifel proof needs the episode's retransmissions (SenderGhost::rtx_mask).
        "I20" => GhostSet::ORIG_DROPPED.union(GhostSet::RTX_MASK),
        "I20e" => GhostSet::ORIG_DROPPED
            .union(GhostSet::RTX_MASK)
            .union(GhostSet::UNDO_OWED),
        "I3" | "I5" | "I11" | "I12" | "I13" | "I14" | "I16" | "I16i" | "I17" | "I18" => {
            GhostSet::NONE
        }
        _ => GhostSet::ALL,
    }
}

/// Every exact reduction for checking `specs` (`trc check --reduce`).
pub fn reductions(specs: &[Spec]) -> Reduce {
    Reduce::all(
        specs
            .iter()
            .fold(GhostSet::NONE, |a, s| a.union(ghost_reads(s.id))),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_id_is_named_with_the_catalogue() {
        let Err(e) = select(&["I2".into(), "I99".into()]) else {
            panic!("I99 is not a property");
        };
        assert_eq!(e.id, "I99");
        assert_eq!(
            e.known,
            catalogue().iter().map(|s| s.id).collect::<Vec<_>>()
        );
        assert!(
            e.to_string()
                .starts_with("unknown property `I99` (known: I1, "),
            "{e}"
        );
        assert_eq!(
            select(&["i2".into()]).unwrap()[0].id,
            "I2",
            "ids ignore case"
        );
    }
}
