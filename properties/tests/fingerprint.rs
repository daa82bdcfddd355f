//! The model's own fingerprint (`State::fingerprint`, used by `trc check` and `trc bench`) and
//! the engine's default one (the derived `Hash` through `FpHasher`) must explore the same state
//! space: identical reports (states, transitions, depth, verdicts, counterexample paths) for
//! SACK and non-SACK, TS on/off, CUBIC and Reno, with and without the exact reductions, with 1
//! and 2 threads.

use trc_engine::{check, check_with, Options};
use trc_model::config::{CcKind, SackMode};
use trc_model::model::{State, TcpModel};
use trc_model::{Config, Profile};

fn same(cfg: Config, profile: Profile, ids: &[&str], reduce: bool) {
    let ids: Vec<String> = ids.iter().map(|s| s.to_string()).collect();
    let specs = trc_properties::select(&ids).unwrap();
    let mut model = TcpModel::new(cfg, profile).with_properties(trc_properties::properties(&specs));
    if reduce {
        model = model.with_reduce(trc_properties::reductions(&specs));
    }
    for threads in [1, 2] {
        let opts = Options {
            threads,
            ..Options::default()
        };
        let mut a = check(&model, &opts, None);
        let mut b = check_with(&model, &opts, None, State::fingerprint);
        a.elapsed = Default::default();
        b.elapsed = Default::default();
        assert_eq!(a, b, "threads {threads}");
    }
}

#[test]
fn sack_default_all_properties() {
    let all: Vec<String> = trc_properties::catalogue()
        .iter()
        .map(|s| s.id.to_string())
        .collect();
    let all: Vec<&str> = all.iter().map(|s| s.as_str()).collect();
    same(
        Config {
            sack: SackMode::Sack,
            segments: 5,
            initcwnd: 5,
            ..Config::default()
        },
        Profile::linux_6_18(),
        &all,
        false,
    );
}

#[test]
fn e37ab7_non_sack_with_and_without_reductions() {
    let cfg = Config {
        sack: SackMode::NoSack,
        ..Config::default()
    };
    same(cfg.clone(), Profile::linux_6_15(), &["I1"], false);
    same(cfg, Profile::linux_6_15(), &["I1"], true);
}

#[test]
fn reno_and_no_timestamps() {
    let cfg = Config {
        cc: CcKind::Reno,
        timestamps: false,
        segments: 5,
        initcwnd: 5,
        ..Config::default()
    };
    same(cfg, Profile::linux_6_18(), &["I5", "I14"], false);
}

/// With ACK reordering (`max_old_acks`) the held ACK is part of the state: the packed
/// fingerprint (which packs it only when one is held) and the derived `Hash` still find the
/// same states, SACK (old ACKs with SACK/DSACK blocks) and non-SACK.
#[test]
fn old_acks_held_ack_is_fingerprinted() {
    let cfg = Config {
        segments: 5,
        initcwnd: 4,
        max_old_acks: 1,
        ..Config::default()
    };
    same(cfg, Profile::linux_6_18(), &["I1", "I5"], false);
}
