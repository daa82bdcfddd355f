//! The exact reductions (`trc check --reduce`, `trc_model::reduce`) change nothing but the state
//! count: on the known-bug matrix's profiles and configurations (SACK and non-SACK, with and
//! without timestamps, Reno and CUBIC, idle restarts, HyStart), each property — checked alone
//! (most ghost fields dead) and all together — gets the same verdict and a counterexample of the
//! same length with and without them, the reduced counterexample replays to a violation in the
//! reduced model, and the reduced exploration never has more states.

use trc_engine::{check, replay, Options, Report, Verdict};
use trc_model::config::{CcKind, SackMode};
use trc_model::model::{Action, TcpModel};
use trc_model::profile::{Mutant, Profile};
use trc_model::Config;

mod common;
use common::{cfg, idle_after_ca, mutant};

fn run(model: &TcpModel) -> Report<Action> {
    check(
        model,
        &Options {
            threads: 2,
            ..Options::default()
        },
        None,
    )
}

/// Checks `ids` (all if empty) with and without the reductions; returns (states, reduced states)
/// and the verdicts (counterexample lengths, None = holds) of the unreduced run.
fn same(c: &Config, p: &Profile, ids: &[&str]) -> (u64, u64, Vec<Option<usize>>) {
    let ids: Vec<String> = ids.iter().map(|s| s.to_string()).collect();
    let specs = trc_properties::select(&ids).unwrap();
    let plain =
        TcpModel::new(c.clone(), p.clone()).with_properties(trc_properties::properties(&specs));
    let reduced = plain
        .clone()
        .with_reduce(trc_properties::reductions(&specs));
    assert!(!reduced.reduce.is_off());
    let (a, b) = (run(&plain), run(&reduced));
    let mut verdicts = Vec::new();
    for ((pa, pb), spec) in a.properties.iter().zip(&b.properties).zip(&specs) {
        let what = format!(
            "{} on {} ({:?}, ts {})",
            spec.id, p.name, c.sack, c.timestamps
        );
        assert_eq!(pa.verdict, pb.verdict, "{what}: verdict");
        let la = pa.path.as_ref().map(|x| x.actions.len());
        let lb = pb.path.as_ref().map(|x| x.actions.len());
        assert_eq!(la, lb, "{what}: counterexample length");
        if let Some(path) = &pb.path {
            let states = replay(&reduced, path);
            assert!(
                !(spec.holds)(&reduced, &states.last().unwrap().1),
                "{what}: reduced counterexample replays to a violation"
            );
            // The same actions are a counterexample of the unreduced model too.
            let states = replay(&plain, path);
            assert!(
                !(spec.holds)(&plain, &states.last().unwrap().1),
                "{what}: reduced counterexample violates the unreduced model"
            );
        }
        assert!(
            matches!(pa.verdict, Verdict::Holds | Verdict::Violated),
            "{what}: {:?}",
            pa.verdict
        );
        verdicts.push(la);
    }
    assert!(
        b.unique_states <= a.unique_states,
        "{}: {} > {}",
        p.name,
        b.unique_states,
        a.unique_states
    );
    eprintln!(
        "{:?} on {} ({:?}, ts {}): {} -> {} states",
        ids, p.name, c.sack, c.timestamps, a.unique_states, b.unique_states
    );
    (a.unique_states, b.unique_states, verdicts)
}

#[test]
fn non_sack_bug_matrix() {
    let c = cfg(SackMode::NoSack, true);
    for p in [
        Profile::linux_6_15(),
        Profile::linux_5_1(),
        Profile::pre_da34ac(),
        Profile::pre_1236f22(),
        Profile::linux_6_18(),
    ] {
        let (_, _, v) = same(&c, &p, &["I1"]);
        assert_eq!(v[0].is_some(), p.name != "linux-6.18", "{}", p.name);
    }
    let (_, _, v) = same(&c, &Profile::linux_5_1(), &["I14"]);
    assert!(v[0].is_some());
    // Every property at once, and each alone, on the fixed and the e37ab7 kernels.
    for p in [Profile::linux_6_18(), Profile::linux_6_15()] {
        let (n, r, _) = same(&c, &p, &[]);
        assert!(r < n, "the reductions merge something");
        for s in trc_properties::catalogue() {
            same(&c, &p, &[s.id]);
        }
    }
    // Without timestamps (retrans_stamp only compared with 0).
    let c = cfg(SackMode::NoSack, false);
    for p in [
        Profile::linux_6_18(),
        Profile::linux_6_15(),
        Profile::linux_5_1(),
    ] {
        same(&c, &p, &[]);
        same(&c, &p, &["I1"]);
    }
}

#[test]
fn sack_bug_matrix() {
    let c = cfg(SackMode::Sack, true);
    let (_, _, v) = same(&c, &Profile::linux_6_6(), &["I1p"]);
    assert!(v[0].is_some(), "bc9f38");
    let (_, _, v) = same(&c, &Profile::linux_6_18(), &[]);
    assert!(v.iter().any(|x| x.is_some()), "the accepted I1 finding");
    for id in ["I1", "I2", "I5", "I16"] {
        same(&c, &Profile::linux_6_18(), &[id]);
    }
    // Small bounds, both SACK choices: each mutant's property fails the same way.
    let small = Config {
        segments: 4,
        initcwnd: 4,
        ..cfg(SackMode::Both, true)
    };
    for (id, m) in [
        ("I2", Mutant::EnterLossAlwaysReduce),
        ("I5", Mutant::LeakRetransOut),
        ("I11", Mutant::UndoCwndPriorOnly),
        ("I13", Mutant::EndCwndNoSnap),
        ("I14", Mutant::NoNonSackHold),
    ] {
        let (_, _, v) = same(&small, &mutant(m), &[id]);
        assert!(v[0].is_some(), "{id}");
        same(&small, &mutant(m), &[]);
    }
    // Reno (lsndtime unused: every stale xmit cleared).
    let reno = Config {
        cc: CcKind::Reno,
        ..small.clone()
    };
    same(&reno, &Profile::linux_6_15(), &[]);
}

#[test]
fn cubic_idle_and_hystart() {
    // Idle restarts read lsndtime (the stale-xmit canonical form keeps its maximum).
    let idle = idle_after_ca();
    for (p, id) in [
        (Profile::pre_30927520(), "I16i"),
        (Profile::pre_epoch_clamp(), "I16"),
        (Profile::linux_6_18(), "I16i"),
    ] {
        let (_, _, v) = same(&idle, &p, &[id]);
        assert_eq!(v[0].is_some(), p.name != "linux-6.18", "{id} on {}", p.name);
        same(&idle, &p, &[]);
    }
    // HyStart's ghost clocks (I15): kept when I15 is checked.
    let bulk = Config {
        sack: SackMode::Sack,
        segments: 24,
        initcwnd: 10,
        rtt_ms: 2,
        max_losses: 0,
        max_rtos: 0,
        max_tlps: 0,
        max_tsq: 0,
        max_reorder: 0,
        ..Config::default()
    };
    for p in [
        Profile::pre_25c1a9(),
        Profile::pre_4e1fddc(),
        Profile::linux_6_18(),
    ] {
        let (_, _, v) = same(&bulk, &p, &["I15"]);
        assert_eq!(v[0].is_some(), p.name != "linux-6.18", "I15 on {}", p.name);
        same(&bulk, &p, &[]);
    }
}

/// Which ghost fields each property keeps (the liveness table behind `dead_ghosts`).
#[test]
fn ghost_liveness_table() {
    use trc_model::reduce::GhostSet;
    assert_eq!(trc_properties::ghost_reads("I5"), GhostSet::NONE);
    assert!(trc_properties::ghost_reads("I1").has(GhostSet::RTX_MASK));
    assert!(trc_properties::ghost_reads("I2").has(GhostSet::LAST_REDUCTION));
    assert_eq!(trc_properties::ghost_reads("nonsense"), GhostSet::ALL);
    let all = trc_properties::reductions(&trc_properties::catalogue());
    assert_eq!(
        all.dead_ghosts,
        GhostSet::NONE,
        "every ghost is read by some property"
    );
    let i5 = trc_properties::reductions(&trc_properties::select(&["I5".into()]).unwrap());
    assert_eq!(i5.dead_ghosts, GhostSet::ALL);
    for s in trc_properties::catalogue() {
        assert_ne!(
            trc_properties::ghost_reads(s.id),
            GhostSet::ALL,
            "{} is in the liveness table",
            s.id
        );
    }
}
