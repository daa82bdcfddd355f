//! The F1 fix (`linux-7.2-f1-fix`, `packet_delayed_scope = "acked-head"`; docs/findings/F1.md,
//! vm/kconfig/f1-fix.patch): F1's mechanism is gone and a purely spurious episode without an
//! RTO or TLP is still undone by the timestamp echo; but it loses legitimate Eifel undos (I20,
//! I20e: `missed_undo.rs`), so it is not the fix to send.

use stateright::Model;
use std::collections::BTreeMap;
use trc_engine::{check, replay, Options};
use trc_model::config::SackMode;
use trc_model::model::{Action, State, TcpModel};
use trc_model::profile::Profile;
use trc_model::state::{evidence, UndoKind};
use trc_model::Config;

mod common;
use common::{cfg, run_property, signatures};

/// The bounds of issue #19's no-RTO F1 trace: SACK, no RTO, no TLP, no TSQ, 2-deep reordering.
fn no_rto() -> Config {
    Config {
        max_rtos: 0,
        max_tlps: 0,
        max_tsq: 0,
        max_reorder: 2,
        ..cfg(SackMode::Sack, true)
    }
}

/// Every I1 signature on `profile` under `c` (`common::signatures`).
fn i1_signatures(c: &Config, profile: Profile) -> BTreeMap<String, (u64, usize)> {
    signatures(c, profile, "I1")
}

/// The no-RTO form (one drop, one reordering, `tcp_try_undo_recovery()` undoes by the echo of
/// the delayed original): present on linux-6.18, gone on the fix, I1 holds there.
#[test]
fn no_rto_form_gone_on_the_fix() {
    let base = i1_signatures(&no_rto(), Profile::linux_6_18());
    let ts: Vec<_> = base
        .iter()
        .filter(|(k, _)| k.ends_with(":ts-echo"))
        .collect();
    assert!(
        !ts.is_empty(),
        "linux-6.18 shows F1 without an RTO: {base:?}"
    );
    assert!(
        base.keys()
            .any(|k| k.starts_with("I1:tcp_try_undo_recovery:Recovery:ts-echo")),
        "{base:?}"
    );
    let fix = i1_signatures(&no_rto(), Profile::linux_7_2_f1_fix());
    assert!(
        fix.is_empty(),
        "the fix: I1 holds at the no-RTO bounds, found {fix:?}"
    );
}

/// The Loss form at the default bounds: without TLPs the fix has no `ts-echo` signature at
/// all (6.18 has F1's 7-event trace there). With TLPs 73 states of
/// `I1:tcp_try_undo_loss:Loss:ts-echo` remain, a different cause: the echoed copy is a TLP
/// retransmission sent before the episode, which `tcp_packet_delayed()` takes for an original
/// (the TLP does not set `retrans_stamp`; F4-F7's "copies from before the episode"). Every
/// signature of the fix is one linux-6.18 has at the default bounds: without TLPs, episodes
/// that 6.18 undid by F1 now run on and meet F4/F7's DSACK accounting, which 6.18 shows with
/// TLPs.
#[test]
fn loss_form_gone_without_tlp_and_no_new_signature() {
    let base = i1_signatures(&cfg(SackMode::Sack, true), Profile::linux_6_18());
    let fix = i1_signatures(&cfg(SackMode::Sack, true), Profile::linux_7_2_f1_fix());
    let new: Vec<_> = fix.keys().filter(|k| !base.contains_key(*k)).collect();
    assert!(
        new.is_empty(),
        "the fix adds no I1 signature at the default bounds: {new:?}"
    );
    let (n6, nf) = (
        base["I1:tcp_try_undo_loss:Loss:ts-echo"],
        fix["I1:tcp_try_undo_loss:Loss:ts-echo"],
    );
    assert!(
        nf.0 < n6.0 && nf.1 > n6.1,
        "fewer and longer ts-echo traces on the fix: {nf:?} vs {n6:?}"
    );
    let no_tlp = Config {
        tlp: false,
        ..cfg(SackMode::Sack, true)
    };
    let base_nt = i1_signatures(&no_tlp, Profile::linux_6_18());
    assert_eq!(
        base_nt
            .get("I1:tcp_try_undo_loss:Loss:ts-echo")
            .map(|x| x.1),
        Some(7),
        "{base_nt:?}"
    );
    let fix_nt = i1_signatures(&no_tlp, Profile::linux_7_2_f1_fix());
    assert!(
        fix_nt.keys().all(|k| !k.ends_with(":ts-echo")),
        "{fix_nt:?}"
    );
    assert!(
        fix_nt.keys().all(|k| base.contains_key(k)),
        "{fix_nt:?} vs {base:?}"
    );
}

/// Every other property but the missed-undo ones holds on the fix at the default bounds, in
/// both SACK modes (as on linux-6.18, `matrix.rs::linux_6_18_default_bounds`); I20 and I20e,
/// which this fix fails, are `missed_undo.rs`'s.
#[test]
fn no_property_newly_violated() {
    for sack in [SackMode::Sack, SackMode::NoSack] {
        for s in trc_properties::catalogue() {
            if (s.id == "I1" && sack == SackMode::Sack) || s.id.starts_with("I20") {
                continue; // the accepted signatures, compared above; the missed undos
            }
            assert_eq!(
                run_property(&cfg(sack, true), Profile::linux_7_2_f1_fix(), s.id, 2).0,
                None,
                "{} {sack:?}",
                s.id
            );
        }
    }
}

/// Legitimate Eifel undos still happen: at the no-RTO bounds, where I1 holds on the fix (so
/// no undo there follows a real loss), the fix still performs undos on the evidence of the
/// timestamp echo alone (not DSACKs): a Full or Partial undo with `TS_ECHO`.
#[test]
fn spurious_episode_still_undone_by_timestamp() {
    fn no_ts_undo(_: &TcpModel, s: &State) -> bool {
        !s.sender
            .ghost
            .ev
            .undos
            .iter()
            .any(|u| u.evidence & evidence::TS_ECHO != 0)
    }
    let model = TcpModel::new(no_rto(), Profile::linux_7_2_f1_fix())
        .with_properties(vec![stateright::Property::always("no ts undo", no_ts_undo)]);
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
        .expect("the fix still undoes by timestamp");
    let last = replay(&model, path).pop().unwrap().1;
    let u = last
        .sender
        .ghost
        .ev
        .undos
        .iter()
        .find(|u| u.evidence & evidence::TS_ECHO != 0)
        .copied()
        .unwrap();
    assert!(
        matches!(u.kind, UndoKind::Full | UndoKind::Partial),
        "{u:?}"
    );
    assert_eq!(
        u.evidence & evidence::RETRANS_ZERO,
        0,
        "by the echo, not by DSACKs: {u:?}"
    );
    assert!(
        u.ssthresh_after > u.ssthresh_before && u.cwnd_after >= u.cwnd_before,
        "the reduction is taken back: {u:?}"
    );
}

/// The rework an independent review proposed (`linux-7.2-f1-fix-head-only`: the echo proves the
/// episode only while every retransmission was of the segment at `snd_una`) is not the fix
/// either. It loses the legitimate undo of multi-segment reordering: two originals are only
/// delayed, RACK retransmits both (the second not at `snd_una`), both originals arrive, and the
/// echo, older than the first retransmission, no longer undoes (I20, 6 events, new against
/// linux-6.18). And F1's Loss form remains at the default bounds (9 events instead of 7): the
/// really lost segment can be retransmitted when it is the head.
#[test]
fn head_only_rework_is_not_the_fix() {
    let reorder = signatures(&no_rto(), Profile::linux_7_2_f1_fix_head_only(), "I20");
    assert_eq!(
        reorder.get("I20:Recovery:undo_retrans-2").map(|x| x.1),
        Some(6),
        "{reorder:?}"
    );
    assert!(signatures(&no_rto(), Profile::linux_6_18(), "I20").is_empty());
    let f1 = i1_signatures(
        &cfg(SackMode::Sack, true),
        Profile::linux_7_2_f1_fix_head_only(),
    );
    assert_eq!(
        f1.get("I1:tcp_try_undo_loss:Loss:ts-echo").map(|x| x.1),
        Some(9),
        "{f1:?}"
    );
}

/// The third attempt (`linux-7.2-f1-fix-v2`, model only): the echo proves the episode only if
/// no retransmitted segment was SACKed later than `min_rtt` after the episode's first
/// retransmission, none is outstanding with its copy in flight or marked lost again, and a TLP
/// copy stamps `retrans_stamp`. It removes F1's no-RTO form (I1 holds at the no-RTO bounds) and
/// all but 29 states (10 events, against 1,678 and 7 on linux-6.18; 1,642 before RACK ordered
/// same-ms transmissions by send order) of the Loss form at the default bounds, with no new I1
/// signature; but it loses legitimate undos (I20, I20e).
#[test]
fn v2_narrows_f1_and_adds_no_i1_signature() {
    let fix = i1_signatures(&no_rto(), Profile::linux_7_2_f1_fix_v2());
    assert!(fix.is_empty(), "no-RTO bounds: {fix:?}");
    let c = cfg(SackMode::Sack, true);
    let base = i1_signatures(&c, Profile::linux_6_18());
    let fix = i1_signatures(&c, Profile::linux_7_2_f1_fix_v2());
    let new: Vec<_> = fix.keys().filter(|k| !base.contains_key(*k)).collect();
    assert!(new.is_empty(), "new I1 signatures {new:?}");
    let key = "I1:tcp_try_undo_loss:Loss:ts-echo";
    assert_eq!((base[key].0, base[key].1), (1678, 7), "{base:?}");
    assert_eq!((fix[key].0, fix[key].1), (29, 10), "{fix:?}");
}

/// The sender's view of a path: its states after each step, with the network's ghost truth
/// and the flight (which the sender cannot see) left out, and the steps only the network sees
/// (a drop) skipped. Also every state of the path.
fn sender_view(model: &TcpModel, actions: &[Action]) -> (Vec<trc_model::Sender>, Vec<State>) {
    let mut s = model.init_states().swap_remove(0);
    let (mut view, mut states) = (vec![s.sender.clone()], vec![s.clone()]);
    for a in actions {
        s = model.next_state(&s, *a).expect("the action applies");
        if !matches!(a, Action::Drop { .. }) {
            view.push(s.sender.clone());
        }
        states.push(s.clone());
    }
    (view, states)
}

fn holds_everywhere(model: &TcpModel, id: &str, states: &[State]) -> bool {
    let spec = trc_properties::select(&[id.to_string()]).unwrap().remove(0);
    states.iter().all(|s| (spec.holds)(model, s))
}

/// Why no sender-side F1 fix can keep every undo I20 and I20e demand: the shortest missed undo
/// of `linux-7.2-f1-fix-v2` at the no-RTO bounds (8 events: 2001:3001 delayed, RACK
/// retransmits it and 4001:5001, the first copy is dropped, the second copy is SACKed, the
/// delayed original fills the hole with an old echo) has a twin in which 4001:5001's
/// *original* is the one dropped, and the sender sees the same packets at the same times in
/// both: its states are equal step by step, on every profile. linux-6.18 undoes in both, so it
/// holds I20e in the first and violates I1 in the twin (F1's no-RTO form); the fix undoes in
/// neither. Any sender decides the same in both, so I1 and I20e cannot both hold.
#[test]
fn missed_undo_is_indistinguishable_from_f1() {
    let d = |pkt| Action::Deliver { pkt };
    let drop = |pkt| Action::Drop { pkt };
    let spurious = [d(0), d(0), d(1), Action::Reo, d(2), drop(2), d(2), d(0)];
    let twin = [
        d(0),
        d(0),
        d(1),
        Action::Reo,
        d(2),
        drop(1),
        drop(1),
        d(1),
        d(0),
    ];
    let c = Config {
        max_losses: 2,
        ..no_rto()
    };
    for p in [Profile::linux_6_18(), Profile::linux_7_2_f1_fix_v2()] {
        let m = TcpModel::new(c.clone(), p.clone());
        let (a, sa) = sender_view(&m, &spurious);
        let (b, sb) = sender_view(&m, &twin);
        assert_eq!(a, b, "{}: the sender cannot tell the two apart", p.name);
        let fix = p.name != "linux-6.18";
        assert_eq!(
            holds_everywhere(&m, "I1", &sb),
            fix,
            "{}: I1 in the twin",
            p.name
        );
        assert_eq!(
            holds_everywhere(&m, "I20e", &sa),
            !fix,
            "{}: I20e in the first",
            p.name
        );
    }
}
