//! I20 and I20e, the missed undo of an episode its timestamps prove spurious: linux-6.18 undoes
//! every such episode on the proving ACK (so every historical profile that shares its undo
//! logic does), and the first form of the F1 fix (`linux-7.2-f1-fix`) does not: a small
//! flight whose tail a TLP resent before the RTO (`undo_retrans` 2 after 0ec986ed7bab), or a
//! head retransmitted twice, leaves more than the head's one retransmission to prove, so the
//! fix never takes the echo's word and the undo is lost.

use trc_engine::replay;
use trc_model::config::SackMode;
use trc_model::model::{Action, TcpModel};
use trc_model::profile::Profile;
use trc_model::Config;

mod common;
use common::{cfg, run_property, signatures};

/// The default bounds with a TLP and two RTOs (the F1 fix review's cases need both).
fn tlp_two_rtos(sack: SackMode) -> Config {
    Config {
        max_rtos: 2,
        max_tlps: 1,
        ..cfg(sack, true)
    }
}

#[test]
fn linux_6_18_undoes_every_proven_episode() {
    for sack in [SackMode::Sack, SackMode::NoSack] {
        for c in [cfg(sack, true), tlp_two_rtos(sack)] {
            for id in ["I20", "I20e"] {
                assert_eq!(
                    run_property(&c, Profile::linux_6_18(), id, 2).0,
                    None,
                    "{id} {sack:?} rtos {}",
                    c.max_rtos
                );
            }
        }
    }
}

#[test]
fn the_f1_fix_loses_legitimate_undos() {
    let c = tlp_two_rtos(SackMode::Sack);
    let i20 = signatures(&c, Profile::linux_7_2_f1_fix(), "I20");
    let (_, len) = *i20
        .get("I20:Loss:undo_retrans-2")
        .unwrap_or_else(|| panic!("the TLP-then-RTO form: {i20:?}"));
    assert_eq!(len, 4, "{i20:?}");
    assert!(
        i20.contains_key("I20:Recovery:undo_retrans-2"),
        "a head retransmitted twice in Recovery: {i20:?}"
    );
    // Lost, not merely deferred: no later undo (DSACK, F-RTO) comes before the episode ends.
    let i20e = signatures(&c, Profile::linux_7_2_f1_fix(), "I20e");
    assert!(i20e.keys().any(|k| k.starts_with("I20e:Loss:")), "{i20e:?}");
    // The shortest form: the TLP resends the tail, the RTO fires, the delayed original's ACK
    // echoes a TSval older than the RTO's retransmission, and the fix keeps the reduction.
    let specs = trc_properties::select(&["I20".to_string()]).unwrap();
    let model = TcpModel::new(c.clone(), Profile::linux_7_2_f1_fix())
        .with_properties(trc_properties::properties(&specs));
    let r = trc_engine::check(
        &model,
        &trc_engine::Options {
            threads: 2,
            fail_fast: true,
            ..Default::default()
        },
        None,
    );
    let path = r.properties[0].path.as_ref().expect("violated");
    assert!(
        path.actions.contains(&Action::Tlp) && path.actions.contains(&Action::Rto),
        "{:?}",
        path.actions
    );
    let last = replay(&model, path).pop().unwrap().1;
    assert!(
        last.sender.ghost.ev.undos.is_empty() && last.sender.ssthresh < c.initcwnd,
        "the reduction stays"
    );
}
