//! The missed-undo monitors: I20 and I20e (an episode the timestamps prove spurious is undone on
//! the proving ACK / before it ends) on a kernel's trace. The model's definitions are in
//! properties/src/lib.rs (`i20`, `i20e`) and `Sender::eifel_proof`; docs/reference/properties.md ("On a
//! kernel") says what the kernel trace cannot show.
//!
//! The proof, as the model computes it on the state the ACK found: the connection was in
//! Recovery or Loss with an open undo episode, the ACK advanced `snd_una` past every range
//! retransmitted since the episode began (at least one), and its TSecr is older than
//! `retrans_stamp`. The kernel's `retrans_stamp` is not visible; it is the TSval of a
//! retransmission sent after the connection was last seen in Open and no later than the
//! episode's first retransmission ([`stamp_candidates`]): an echo older than all of them proves,
//! one older than none does not, and anything between is undecided. The ghost truth must say no
//! original of the episode (`[undo_marker, high_seq)`) was lost, else keeping the reduction was
//! right.

use super::ghost::{Fate, Ghost, GhostSource};
use super::monitor::{derive, Derived, Outcome};
use super::observe::{KTrace, CA_LOSS, CA_OPEN, CA_RECOVERY};
use trc_model::seq::{after, before};

/// What one statement's ACK proves about the episode in force.
#[derive(Debug)]
enum Proof {
    /// No Eifel proof on this statement.
    None,
    /// Proven, and the ghost says the episode lost nothing: an undo is owed.
    Owed {
        episode: (f64, u32),
        detail: String,
    },
    /// Proven, but an original of the episode was really lost: nothing is owed.
    RealLoss,
    Undecided(String),
}

/// The TSvals `retrans_stamp` may hold for the episode that began at `from`: those of the
/// retransmissions sent after the last statement in Open before `from`, up to and including the
/// episode's first one (at or above `marker`).
fn stamp_candidates(k: &KTrace, from: f64, marker: u32) -> Vec<u32> {
    let last_open = k
        .steps
        .iter()
        .filter(|s| s.t_ms <= from && s.info.ca_state == CA_OPEN)
        .map(|s| s.t_ms)
        .fold(f64::NEG_INFINITY, f64::max);
    let mut out = Vec::new();
    for r in k.sends.iter().filter(|r| r.retrans && r.t_ms > last_open) {
        if let Some(v) = r.tsval {
            out.push(v);
        }
        if r.t_ms > from && !before(r.seq, marker) {
            break;
        }
    }
    out
}

/// `a` is before `b` in TS space (wrapping), as `tcp_tsopt_ecr_before` compares.
fn ts_before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// What the ghost says of an episode's originals.
enum Episode {
    /// None was really lost.
    Clean,
    RealLoss,
    /// The script does not say (why).
    Unknown(String),
}

/// Whether the ghost says no original of the episode `[marker, hs)` (its retransmitted ranges
/// `rtx`) was really lost.
fn episode_clean(k: &KTrace, g: &Ghost, marker: u32, hs: u32, rtx: &[(u32, u32)]) -> Episode {
    if g.source == GhostSource::Declared {
        let lost = g
            .dropped
            .iter()
            .any(|&(a, b)| before(a, hs) && after(b, marker));
        return if lost {
            Episode::RealLoss
        } else {
            Episode::Clean
        };
    }
    // Inferred: a range never retransmitted and now ACKed arrived as sent; only the
    // retransmitted ones can have lost their original.
    for &(a, b) in rtx {
        match g.original(k, a, b) {
            Fate::Dropped(_) => return Episode::RealLoss,
            Fate::Unknown(why) => return Episode::Unknown(why),
            Fate::Delivered(_) => {}
        }
    }
    Episode::Clean
}

/// The Eifel proof of statement `i` (see the module comment).
fn proof_at(k: &KTrace, g: &Ghost, d: &[Derived], i: usize) -> Proof {
    let s = &k.steps[i];
    let di = &d[i];
    if !(di.prev_state == CA_RECOVERY || di.prev_state == CA_LOSS) || s.acks.is_empty() {
        return Proof::None;
    }
    let una_before = if i == 0 { 1 } else { d[i - 1].una };
    let Some((from, marker)) = di.episode else {
        return Proof::None;
    };
    if !after(di.una, una_before) {
        return Proof::None;
    }
    let mut rtx: Vec<(u32, u32)> = Vec::new();
    for r in k
        .sends
        .iter()
        .filter(|r| r.retrans && r.t_ms > from && r.t_ms < di.t_ev && !before(r.seq, marker))
    {
        if !rtx.contains(&(r.seq, r.end)) {
            rtx.push((r.seq, r.end));
        }
    }
    if rtx.is_empty() || rtx.iter().any(|&(_, e)| after(e, di.una)) {
        return Proof::None;
    }
    let Some(ecr) = s.acks.last().and_then(|&a| k.acks[a].tsecr) else {
        return Proof::None;
    };
    if ecr == 0 {
        return Proof::None;
    }
    let cands = stamp_candidates(k, from, marker);
    if cands.is_empty() {
        return Proof::None;
    }
    let older_than = cands.iter().filter(|&&v| ts_before(ecr, v)).count();
    if older_than == 0 {
        return Proof::None;
    }
    if older_than < cands.len() {
        return Proof::Undecided(format!(
            "line {}: the ACK's TSecr {ecr} is older than some retransmissions since the last Open and not others; which one retrans_stamp holds is not visible",
            s.line
        ));
    }
    if s.acks.len() > 1 {
        return Proof::Undecided(format!(
            "line {}: a proof on a statement of {} ACKs (which one proved is not visible)",
            s.line,
            s.acks.len()
        ));
    }
    let hs = if i == 0 { None } else { d[i - 1].high_seq }.unwrap_or(di.una);
    match episode_clean(k, g, marker, hs, &rtx) {
        Episode::RealLoss => Proof::RealLoss,
        Episode::Unknown(why) => Proof::Undecided(format!("line {}: Eifel proof; {why}", s.line)),
        Episode::Clean => Proof::Owed {
            episode: (from, marker),
            detail: format!(
                "the ACK of {} (TSecr {ecr}, older than the episode's first retransmission's TSval {}) covers every range retransmitted since the episode began at snd_una {marker} ({}) and no original of [{marker}, {hs}) was really lost",
                di.una,
                cands[cands.len() - 1],
                rtx.iter().map(|(a, b)| format!("{a}:{b}")).collect::<Vec<_>>().join(", ")
            ),
        },
    }
}

/// I20: an Eifel-proven episode with no real loss is undone on the proving ACK.
pub(crate) fn i20(k: &KTrace, g: &Ghost) -> Outcome {
    if k.steps.is_empty() {
        return Outcome::Undecided {
            reason: "the run read no tcp_info (no connection)".into(),
        };
    }
    let d = derive(k);
    let mut undecided: Option<String> = None;
    for (i, s) in k.steps.iter().enumerate() {
        match proof_at(k, g, &d, i) {
            Proof::Owed { detail, .. } if d[i].undos == 0 => {
                return Outcome::Violated {
                    line: s.line,
                    detail: format!(
                        "no undo (no TcpExt*Undo counter moved; {} cwnd {} ssthresh {}): {detail}",
                        s.info.ca_state_name, s.info.snd_cwnd, s.info.snd_ssthresh
                    ),
                };
            }
            Proof::Undecided(why) => {
                undecided.get_or_insert(why);
            }
            _ => {}
        }
    }
    undecided.map_or(Outcome::Holds, |reason| Outcome::Undecided { reason })
}

/// I20e: an Eifel-proven episode with no real loss is undone (by any undo) before it ends: the
/// state leaves Recovery/Loss, or the next episode begins.
pub(crate) fn i20e(k: &KTrace, g: &Ghost) -> Outcome {
    if k.steps.is_empty() {
        return Outcome::Undecided {
            reason: "the run read no tcp_info (no connection)".into(),
        };
    }
    let d = derive(k);
    let mut undecided: Option<String> = None;
    let mut owed: Option<((f64, u32), u32, String)> = None;
    for (i, s) in k.steps.iter().enumerate() {
        if d[i].undos > 0 {
            owed = None;
            continue;
        }
        match proof_at(k, g, &d, i) {
            Proof::Owed { episode, detail } if owed.is_none() => {
                owed = Some((episode, s.line, detail))
            }
            Proof::Undecided(why) => {
                undecided.get_or_insert(why);
            }
            _ => {}
        }
        if let Some((ep, line, detail)) = &owed {
            let st = s.info.ca_state;
            let ended = !(st == CA_RECOVERY || st == CA_LOSS) || d[i].episode != Some(*ep);
            if ended {
                return Outcome::Violated {
                    line: s.line,
                    detail: format!(
                        "the episode ended ({} cwnd {} ssthresh {}) without an undo after its Eifel proof at line {line}: {detail}",
                        s.info.ca_state_name, s.info.snd_cwnd, s.info.snd_ssthresh
                    ),
                };
            }
        }
    }
    undecided.map_or(Outcome::Holds, |reason| Outcome::Undecided { reason })
}
