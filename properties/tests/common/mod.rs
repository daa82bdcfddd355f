//! Helpers shared by the property test files (each test file includes this module).
#![allow(dead_code)]

use std::collections::BTreeMap;
use trc_engine::{check, check_with, replay, Classified, Options, Verdict};
use trc_model::config::SackMode;
use trc_model::model::{State, TcpModel};
use trc_model::profile::{Mutant, Profile};
use trc_model::Config;

/// The default bounds with the given SACK mode and timestamps.
pub fn cfg(sack: SackMode, ts: bool) -> Config {
    Config {
        sack,
        timestamps: ts,
        ..Config::default()
    }
}

/// linux-6.18 with one deliberate mutant.
pub fn mutant(m: Mutant) -> Profile {
    let mut p = Profile::linux_6_18();
    p.name = format!("mutant-{m:?}");
    p.mutants = vec![m];
    p
}

/// Checks property `id` for `profile` under `cfg` (fail-fast): the length of the shortest
/// counterexample, which must replay to a state violating the property, or None if it holds;
/// and the number of states explored.
pub fn run_property(
    cfg: &Config,
    profile: Profile,
    id: &str,
    threads: usize,
) -> (Option<usize>, u64) {
    let specs = trc_properties::select(&[id.to_string()]).unwrap();
    let model =
        TcpModel::new(cfg.clone(), profile).with_properties(trc_properties::properties(&specs));
    let report = check(
        &model,
        &Options {
            threads,
            fail_fast: true,
            ..Options::default()
        },
        None,
    );
    let p = &report.properties[0];
    let v = match p.verdict {
        Verdict::Violated => {
            let path = p.path.as_ref().unwrap();
            let states = replay(&model, path);
            assert!(
                !(specs[0].holds)(&model, &states.last().unwrap().1),
                "counterexample must replay to a violation"
            );
            Some(path.actions.len())
        }
        Verdict::Holds => None,
        v => panic!("unexpected verdict {v:?}"),
    };
    (v, report.unique_states)
}

/// Every signature of property `id` on `profile` under `c`, with its state count and shortest
/// length (empty if the property holds); every class's path replays to a violating state of
/// that class.
pub fn signatures(c: &Config, profile: Profile, id: &str) -> BTreeMap<String, (u64, usize)> {
    let specs = trc_properties::select(&[id.to_string()]).unwrap();
    let (model, r) = classified_check(c, profile, &specs);
    let p = &r.properties[0];
    assert_eq!(p.verdict == Verdict::Violated, !p.classes.is_empty());
    let mut out = BTreeMap::new();
    for cl in &p.classes {
        let last = replay(&model, &cl.path).pop().unwrap().1;
        assert!(
            !(specs[0].holds)(&model, &last),
            "the class's path ends in a violation"
        );
        assert_eq!(
            trc_properties::signature::class(id, &model, &last),
            cl.class,
            "and in a state of that class"
        );
        out.insert(
            trc_properties::signature::describe(id, cl.class),
            (cl.count, cl.path.len()),
        );
    }
    out
}

/// A full exploration of `specs` on `profile` under `c` with the signature classifier; every
/// property decided (holds or violated).
fn classified_check(
    c: &Config,
    profile: Profile,
    specs: &[trc_properties::Spec],
) -> (TcpModel, trc_engine::Report<trc_model::model::Action>) {
    let model =
        TcpModel::new(c.clone(), profile).with_properties(trc_properties::properties(specs));
    let hooks = Classified {
        hooks: State::fingerprint,
        classify: trc_properties::signature::classifier(specs),
    };
    let r = check_with(
        &model,
        &Options {
            threads: 2,
            ..Options::default()
        },
        None,
        hooks,
    );
    for (s, p) in specs.iter().zip(&r.properties) {
        assert!(
            matches!(p.verdict, Verdict::Holds | Verdict::Violated),
            "{}: {:?}",
            s.id,
            p.verdict
        );
    }
    (model, r)
}

/// Every signature of every property of the catalogue on `profile` under `c`, from one
/// exploration (`PROPERTY:...` strings).
pub fn all_signatures(c: &Config, profile: Profile) -> std::collections::BTreeSet<String> {
    let specs = trc_properties::catalogue();
    let (_, r) = classified_check(c, profile, &specs);
    let classes = specs
        .iter()
        .zip(&r.properties)
        .flat_map(|(s, p)| p.classes.iter().map(move |cl| (s.id, cl.class)));
    classes
        .map(|(id, class)| trc_properties::signature::describe(id, class))
        .collect()
}

/// After a loss, CUBIC's congestion avoidance; then the application idles 1 s and writes.
pub fn idle_after_ca() -> Config {
    Config {
        sack: SackMode::Sack,
        segments: 6,
        initcwnd: 5,
        extra_writes: 1,
        write_gap_ms: vec![1000],
        max_losses: 1,
        max_rtos: 1,
        max_tlps: 0,
        max_tsq: 0,
        max_reorder: 0,
        ..Config::default()
    }
}
