//! Signatures: the mechanism of a violation, derived from the violating state (the last state of
//! its counterexample), so that an accepted finding is recognised by *how* the kernel went
//! wrong, on every profile and SACK mode, and a new way of violating the same property is not
//! hidden behind it.
//!
//! A signature is the property, the kernel decision that produced the bad step (the undo entry
//! point, `tcp_try_undo_*`, and the CA state it ran in; for I2 the function that cut ssthresh)
//! and the evidence that decision acted on (the model's ghost record of it:
//! [`trc_model::state::evidence`]): `tcp_packet_delayed()`'s timestamp echo or zero stamp,
//! `undo_retrans` at zero and how this ACK's DSACKs got it there, F-RTO. Written as text it is
//! `I1:tcp_try_undo_loss:Loss:ts-echo`; `baseline.toml` lists accepted ones in that form.
//!
//! [`class`] packs a signature into the `u64` the engine's classifier returns
//! ([`trc_engine`'s `Hooks::classify`]); [`describe`] unpacks it.

use trc_model::model::{State, TcpModel};
use trc_model::state::{evidence, CaState, ReductionKind, UndoKind};

use crate::Spec;

const UNDO_KINDS: [UndoKind; 6] = [
    UndoKind::Full,
    UndoKind::LossRecovered,
    UndoKind::Partial,
    UndoKind::Dsack,
    UndoKind::Loss,
    UndoKind::Frto,
];
const CA_STATES: [CaState; 5] = [
    CaState::Open,
    CaState::Disorder,
    CaState::Cwr,
    CaState::Recovery,
    CaState::Loss,
];
const REDUCTIONS: [ReductionKind; 4] = [
    ReductionKind::Recovery,
    ReductionKind::Cwr,
    ReductionKind::Loss,
    ReductionKind::Tlp,
];

/// The names of the [`evidence`] bits, in bit order.
pub const EVIDENCE_NAMES: [(u16, &str); 9] = [
    (evidence::RETRANS_ZERO, "undo-retrans-zero"),
    (evidence::TS_ECHO, "ts-echo"),
    (evidence::NO_STAMP, "no-stamp"),
    (evidence::FRTO, "frto"),
    (evidence::DSACK_TWICE, "dsack-twice"),
    (evidence::DSACK_PRE_EPISODE, "dsack-pre-episode"),
    (evidence::DSACK_TLP_UNCOUNTED, "dsack-tlp-uncounted"),
    (evidence::DSACK_FORGOTTEN, "dsack-forgotten"),
    (evidence::DUPACK, "dupack"),
];

/// The kernel function of an undo entry point.
pub fn undo_function(k: UndoKind) -> &'static str {
    match k {
        UndoKind::Full | UndoKind::LossRecovered => "tcp_try_undo_recovery",
        UndoKind::Partial => "tcp_try_undo_partial",
        UndoKind::Dsack => "tcp_try_undo_dsack",
        UndoKind::Loss => "tcp_try_undo_loss",
        UndoKind::Frto => "tcp_try_undo_loss(frto)",
    }
}

fn reduction_function(k: ReductionKind) -> &'static str {
    match k {
        ReductionKind::Recovery => "tcp_enter_recovery",
        ReductionKind::Cwr => "tcp_enter_cwr",
        ReductionKind::Loss => "tcp_enter_loss",
        ReductionKind::Tlp => "tcp_process_tlp_ack",
    }
}

/// The evidence bits as text (`ts-echo`, `undo-retrans-zero+dsack-twice`; `none`).
pub fn evidence_text(bits: u16) -> String {
    let v: Vec<&str> = EVIDENCE_NAMES
        .iter()
        .filter(|(b, _)| bits & b != 0)
        .map(|(_, n)| *n)
        .collect();
    if v.is_empty() {
        "none".into()
    } else {
        v.join("+")
    }
}

/// Tag of the packed form: which part of the state the class describes.
const TAG_UNDO: u64 = 1;
const TAG_REDUCTION: u64 = 2;
const TAG_PROOF: u64 = 3;

/// The class (packed signature) of a state that violates property `id`: for I1 the first undo
/// of the step that undid a real loss, for I2 the first reduction that broke the
/// once-per-window rule, for every other property the property alone (class 0).
pub fn class(id: &str, m: &TcpModel, s: &State) -> u64 {
    let ev = &s.sender.ghost.ev;
    match id {
        "I1" => {
            let Some(i) = crate::i1_offending_undo(m, s) else {
                return 0;
            };
            let u = &ev.undos[i];
            TAG_UNDO | (u.kind as u64) << 4 | (u.ca_state as u64) << 8 | (u.evidence as u64) << 12
        }
        "I2" => {
            let Some(r) = ev
                .reductions
                .iter()
                .find(|r| !crate::i2_reduction_ok(m, s, r))
            else {
                return 0;
            };
            let prev = r.prev.map_or(0, |(_, k)| k as u64 + 1);
            TAG_REDUCTION
                | (r.kind as u64) << 4
                | (r.from as u64) << 8
                | prev << 12
                | (r.icsk_retransmits.min(15) as u64) << 16
        }
        "I20" | "I20e" => {
            let e = ev
                .eifel
                .filter(|e| if id == "I20" { e.missed } else { e.lost });
            e.map_or(0, |e| {
                TAG_PROOF | (e.proof.ca_state as u64) << 4 | (e.proof.undo_retrans as u64) << 8
            })
        }
        _ => 0,
    }
}

/// The signature of class `class` of property `id`, as text (see the module docs).
pub fn describe(id: &str, class: u64) -> String {
    let f = |shift: u32, bits: u32| ((class >> shift) & ((1 << bits) - 1)) as usize;
    match class & 15 {
        TAG_UNDO => {
            let kind = UNDO_KINDS.get(f(4, 4)).copied();
            let ca = CA_STATES.get(f(8, 4)).copied();
            match (kind, ca) {
                (Some(k), Some(c)) => format!(
                    "{id}:{}:{}:{}",
                    undo_function(k),
                    CaState::short_name(c),
                    evidence_text(f(12, 12) as u16)
                ),
                _ => format!("{id}:class-{class:#x}"),
            }
        }
        TAG_REDUCTION => {
            let kind = REDUCTIONS.get(f(4, 4)).copied();
            let from = CA_STATES.get(f(8, 4)).copied();
            let prev = match f(12, 4) {
                0 => Some("none"),
                n => REDUCTIONS.get(n - 1).map(|k| reduction_function(*k)),
            };
            match (kind, from, prev) {
                (Some(k), Some(c), Some(p)) => format!(
                    "{id}:{}:from-{}:after-{p}:icsk_retransmits-{}",
                    reduction_function(k),
                    CaState::short_name(c),
                    f(16, 4)
                ),
                _ => format!("{id}:class-{class:#x}"),
            }
        }
        TAG_PROOF => match CA_STATES.get(f(4, 4)) {
            Some(c) => format!("{id}:{}:undo_retrans-{}", CaState::short_name(*c), f(8, 4)),
            None => format!("{id}:class-{class:#x}"),
        },
        _ => format!("{id}:any"),
    }
}

/// The classifier for checking `specs` (property index → class), for the engine.
pub fn classifier(specs: &[Spec]) -> impl Fn(&TcpModel, usize, &State) -> u64 + Sync {
    let ids: Vec<&'static str> = specs.iter().map(|s| s.id).collect();
    move |m: &TcpModel, i: usize, s: &State| class(ids[i], m, s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_forms_round_trip_to_text() {
        let c = TAG_UNDO
            | (UndoKind::Loss as u64) << 4
            | (CaState::Loss as u64) << 8
            | (evidence::TS_ECHO as u64) << 12;
        assert_eq!(describe("I1", c), "I1:tcp_try_undo_loss:Loss:ts-echo");
        let c = TAG_UNDO
            | (UndoKind::Dsack as u64) << 4
            | (CaState::Recovery as u64) << 8
            | ((evidence::RETRANS_ZERO | evidence::DSACK_TWICE) as u64) << 12;
        assert_eq!(
            describe("I1", c),
            "I1:tcp_try_undo_dsack:Recovery:undo-retrans-zero+dsack-twice"
        );
        assert_eq!(describe("I5", 0), "I5:any");
        assert_eq!(describe("I1", TAG_UNDO | 15 << 4), "I1:class-0xf1");
    }
}
