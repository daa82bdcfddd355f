//! The distributed check ([`trc_engine::dist`]) with 1 to 4 ranks (threads of this process,
//! [`trc_engine::dist::local`]) gives exactly the one-process report: same states,
//! transitions, depth, stop reason, verdicts, counterexamples, classes and tallies, on toy models
//! and random graphs, with every option that stops early.

use std::time::Duration;

use serde::{de::DeserializeOwned, Serialize};
use stateright::Model;
use trc_engine::dist::{check_distributed, local, DistReport};
use trc_engine::toy::*;
use trc_engine::*;

/// The report without what may differ between engines: timing, memory figures, the
/// distributed figures.
fn norm<A: Clone>(r: &Report<A>) -> Report<A> {
    Report {
        elapsed: Duration::ZERO,
        peak_memory_bytes: 0,
        visited_set_bytes: 0,
        dist: None,
        ..r.clone()
    }
}

/// Runs the distributed check on `n` thread ranks, each with the hooks `hooks()` makes; asserts
/// that every rank returned the same report and returns rank 0's.
fn dist<M, H>(
    model: &M,
    opts: &Options,
    n: usize,
    hooks: impl Fn() -> H + Sync,
) -> Report<M::Action>
where
    M: Model + Sync,
    M::State: Send + Sync + Serialize + DeserializeOwned,
    M::Action: Send + Sync + Clone + PartialEq + std::fmt::Debug,
    H: Hooks<M>,
{
    let mut reports = local::run(n, |comm| {
        check_distributed(model, opts, None, hooks(), comm)
    });
    let first = reports.remove(0);
    for r in &reports {
        assert_eq!(norm(r), norm(&first), "ranks disagree");
    }
    let d = first.dist.as_ref().expect("a distributed report");
    assert_eq!(d.ranks, n);
    first
}

/// The one-process report equals the distributed one for 1 to 4 ranks.
fn same_for_all_rank_counts<M>(model: &M, opts: &Options) -> Report<M::Action>
where
    M: Model + Sync,
    M::State: std::hash::Hash + Send + Sync + Serialize + DeserializeOwned,
    M::Action: Send + Sync + Clone + PartialEq + std::fmt::Debug,
{
    let one = check(model, opts, None);
    for n in 1..=4 {
        let d = dist(model, opts, n, || fingerprint::<M::State>);
        assert_eq!(norm(&d), norm(&one), "{n} ranks vs one process");
    }
    one
}

fn graphs() -> Vec<RandomGraph> {
    (0..4)
        .map(|seed| RandomGraph {
            nodes: 5_000 + 3_000 * seed as u32,
            fanout: 2 + seed as u32 % 4,
            seed,
            inits: vec![0, 5, 0, 96, 1_701],
        })
        .collect()
}

#[test]
fn toy_models_give_the_one_process_report() {
    let opts = Options::default();
    let r = same_for_all_rank_counts(&Jugs, &opts);
    assert_eq!(r.properties[0].verdict, Verdict::Violated);
    same_for_all_rank_counts(&TokenRing { n: 5 }, &opts);
    same_for_all_rank_counts(
        &Grid {
            bound: 12,
            inits: vec![(0, 0), (2, 3), (20, 20), (2, 3)],
        },
        &opts,
    );
    same_for_all_rank_counts(&Counters { k: 3, max: 6 }, &opts);
}

#[test]
fn random_graphs_give_the_one_process_report() {
    for g in graphs() {
        let r = same_for_all_rank_counts(&g, &Options::default());
        assert!(r.complete && r.unique_states > 1000, "seed {}", g.seed);
    }
}

#[test]
fn early_stops_give_the_one_process_report() {
    let g = &graphs()[1];
    let full = check(g, &Options::default(), None);
    for limit in [
        0,
        1,
        3,
        1000,
        full.unique_states - 1,
        full.unique_states + 5,
    ] {
        let opts = Options {
            max_states: Some(limit),
            ..Options::default()
        };
        same_for_all_rank_counts(g, &opts);
    }
    for d in [0, 1, 5, 17] {
        let opts = Options {
            max_depth: Some(d),
            ..Options::default()
        };
        same_for_all_rank_counts(g, &opts);
    }
    let grid = Grid {
        bound: 10,
        inits: vec![(0, 0)],
    };
    for d in [0, 8, 9, 19, 20, 25] {
        let opts = Options {
            max_depth: Some(d),
            ..Options::default()
        };
        same_for_all_rank_counts(&grid, &opts);
    }
    let opts = Options {
        fail_fast: true,
        ..Options::default()
    };
    let r = same_for_all_rank_counts(&grid, &opts);
    assert_eq!(r.stop_reason, StopReason::FailFast);
}

#[test]
fn classes_and_tallies_give_the_one_process_report() {
    let grid = Grid {
        bound: 12,
        inits: vec![(0, 0), (2, 3), (20, 20)],
    };
    let classified = || Classified {
        hooks: |s: &(u8, u8)| fingerprint(s),
        classify: |_: &Grid, _prop: usize, s: &(u8, u8)| s.0 as u64,
    };
    let tallied = || Tallied {
        hooks: |s: &(u8, u8)| fingerprint(s),
        n: 2,
        tally: |m: &Grid, s: &(u8, u8), a: &GridAction, c: &mut [u64]| {
            if m.next_state(s, *a).is_some_and(|n| m.within_boundary(&n)) {
                c[(*a == GridAction::IncY) as usize] += 1;
            }
        },
    };
    let opts = Options::default();
    let one_c = check_with(&grid, &opts, None, classified());
    let one_t = check_with(&grid, &opts, None, tallied());
    assert!(one_c.properties.iter().any(|p| p.classes.len() > 3));
    assert_eq!(one_t.tally.len(), 2);
    for n in 1..=4 {
        let d = dist(&grid, &opts, n, classified);
        assert_eq!(norm(&d), norm(&one_c), "classes, {n} ranks");
        let d = dist(&grid, &opts, n, tallied);
        assert_eq!(norm(&d), norm(&one_t), "tally, {n} ranks");
    }
}

/// States that own heap memory cross ranks through their serde form, plain ones as bytes: both
/// give the one-process report; and with several ranks states do move, the claims are counted,
/// and each rank holds part of the visited set.
#[test]
fn states_cross_ranks_and_the_traffic_is_reported() {
    let g = &graphs()[2];
    let opts = Options::default();
    let one = check(g, &opts, None);
    let owning = || StateHooks {
        fingerprint: |s: &u32| fingerprint(s),
        next_state_into: |m: &RandomGraph, s: &u32, a, out: &mut std::mem::MaybeUninit<u32>| match m
            .next_state(s, a)
        {
            Some(n) => {
                out.write(n);
                true
            }
            None => false,
        },
        drop_is_noop: |_: &u32| false,
    };
    for n in 2..=4 {
        let d = dist(g, &opts, n, owning);
        assert_eq!(norm(&d), norm(&one), "serde states, {n} ranks");
        let d = dist(g, &opts, n, || fingerprint::<u32>);
        assert_eq!(norm(&d), norm(&one), "plain states, {n} ranks");
        let DistReport {
            rank_visited_set_bytes,
            levels,
            ..
        } = d.dist.unwrap();
        assert_eq!(levels.len() as u64, one.max_depth as u64 + 1);
        assert_eq!(
            levels.iter().map(|l| l.states).sum::<u64>(),
            one.unique_states
        );
        assert!(levels.iter().any(|l| l.moved_states > 0));
        assert!(levels
            .iter()
            .all(|l| l.claim_bytes > 0 || l.candidates == 0));
        assert!(rank_visited_set_bytes.iter().all(|&b| b > 0));
    }
}
