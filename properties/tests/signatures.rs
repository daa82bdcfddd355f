//! Signatures: a violation's mechanism, read off its violating state. F1 is recognised by its
//! signature on linux-6.18; the 0ec986ed7bab revert produces a signature 6.18 does not have
//! (so a comparison with the base can fail); the evidence bits describe what the kernel did.

use std::collections::BTreeMap;
use trc_engine::{replay, Options};
use trc_model::config::SackMode;
use trc_model::model::{State, TcpModel};
use trc_model::profile::Profile;
use trc_model::state::{evidence, UndoKind};

mod common;
use common::cfg;

/// Every I1 signature on `profile` (SACK, timestamps as given), with its count and shortest
/// length; every class's path replays to a violating state of that class.
fn i1_signatures(profile: Profile, ts: bool) -> BTreeMap<String, (u64, usize)> {
    let out = i1_signatures_in(profile, SackMode::Sack, ts);
    assert!(!out.is_empty(), "I1 is violated");
    out
}

/// [`i1_signatures`] in a given SACK mode.
fn i1_signatures_in(profile: Profile, sack: SackMode, ts: bool) -> BTreeMap<String, (u64, usize)> {
    common::signatures(&cfg(sack, ts), profile, "I1")
}

#[test]
fn f1_and_the_0ec986_revert_have_different_signatures() {
    let base = i1_signatures(Profile::linux_6_18(), true);
    // F1 (docs/findings.md): the shortest I1 violation, 7 events, Eifel undo in Loss.
    assert_eq!(
        base.get("I1:tcp_try_undo_loss:Loss:ts-echo").map(|x| x.1),
        Some(7),
        "{base:?}"
    );
    // 6.18 counts an in-flight TLP copy in tcp_init_undo: no violation rests on ignoring it.
    assert!(
        base.keys().all(|k| !k.contains("dsack-tlp-uncounted")),
        "{base:?}"
    );
    let pre = i1_signatures(Profile::pre_0ec986(), true);
    let new: Vec<&String> = pre.keys().filter(|k| !base.contains_key(*k)).collect();
    assert_eq!(new, vec!["I1:tcp_try_undo_dsack:Recovery:undo-retrans-zero+dsack-pre-episode+dsack-tlp-uncounted"], "{pre:?}");
    assert!(
        pre.contains_key("I1:tcp_try_undo_loss:Loss:ts-echo"),
        "F1 is on the revert too"
    );
}

/// da34ac7626b5's bug (an undo in Loss on a dupack) has the same timestamp evidence as F1's Loss
/// form; the `dupack` bit keeps it from hiding behind the accepted F1 (non-SACK, where it is
/// the shortest I1 violation), and 6.18 never undoes in Loss on such an ACK.
#[test]
fn da34ac_undo_on_dupack_is_not_f1() {
    let base = i1_signatures_in(Profile::linux_6_18(), SackMode::NoSack, true);
    assert!(base.keys().all(|k| !k.contains("dupack")), "{base:?}");
    let pre = i1_signatures_in(Profile::pre_da34ac(), SackMode::NoSack, true);
    assert_eq!(
        pre.get("I1:tcp_try_undo_loss:Loss:ts-echo+dupack")
            .map(|x| x.1),
        Some(3),
        "{pre:?}"
    );
    assert!(!base.contains_key("I1:tcp_try_undo_loss:Loss:ts-echo+dupack"));
}

/// The evidence bits: F-RTO undoes carry `FRTO`, timestamp undoes the TS arm, DSACK undoes
/// `RETRANS_ZERO`; a hand check on one model step each.
#[test]
fn evidence_names_the_undo_rule() {
    use trc_engine::check;
    // Explore linux-6.18 with a property that is violated by every undo, and look at the first
    // undo of each kind.
    fn no_undo(_: &TcpModel, s: &State) -> bool {
        s.sender.ghost.ev.undos.is_empty()
    }
    let model = TcpModel::new(cfg(SackMode::Both, true), Profile::linux_6_18())
        .with_properties(vec![stateright::Property::always("no undo", no_undo)]);
    let r = check(
        &model,
        &Options {
            threads: 2,
            ..Options::default()
        },
        None,
    );
    let path = r.properties[0]
        .path
        .as_ref()
        .expect("linux-6.18 undoes within the default bounds");
    let last = replay(&model, path).pop().unwrap().1;
    let u = last.sender.ghost.ev.undos[0];
    let e = u.evidence;
    match u.kind {
        UndoKind::Frto => assert_eq!(e, evidence::FRTO),
        UndoKind::Dsack => assert!(e & evidence::RETRANS_ZERO != 0),
        UndoKind::Partial => assert!(e & (evidence::TS_ECHO | evidence::NO_STAMP) != 0),
        _ => assert!(
            e & (evidence::RETRANS_ZERO | evidence::TS_ECHO | evidence::NO_STAMP) != 0,
            "{u:?}"
        ),
    }
    assert_ne!(e, 0, "every undo records its evidence");
}
