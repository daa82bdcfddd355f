//! Helpers shared by the property test files (each test file includes this module).
#![allow(dead_code)]

use trc_engine::{check, replay, Options, Verdict};
use trc_model::config::SackMode;
use trc_model::model::TcpModel;
use trc_model::profile::{Mutant, Profile};
use trc_model::Config;

/// The default bounds with the given SACK mode and timestamps.
pub fn cfg(sack: SackMode, ts: bool) -> Config {
    Config { sack, timestamps: ts, ..Config::default() }
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
pub fn run_property(cfg: &Config, profile: Profile, id: &str, threads: usize) -> (Option<usize>, u64) {
    let specs = trc_properties::select(&[id.to_string()]).unwrap();
    let model = TcpModel::new(cfg.clone(), profile).with_properties(trc_properties::properties(&specs));
    let report = check(&model, &Options { threads, fail_fast: true, ..Options::default() }, None);
    let p = &report.properties[0];
    let v = match p.verdict {
        Verdict::Violated => {
            let path = p.path.as_ref().unwrap();
            let states = replay(&model, path);
            assert!(!(specs[0].holds)(&model, &states.last().unwrap().1), "counterexample must replay to a violation");
            Some(path.actions.len())
        }
        Verdict::Holds => None,
        v => panic!("unexpected verdict {v:?}"),
    };
    (v, report.unique_states)
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
