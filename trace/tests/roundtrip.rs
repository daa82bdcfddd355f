//! Export → replay round trips for the known-bug matrix (properties/tests/matrix.rs): each
//! counterexample, exported, replays with every line passing on the profile it was found on,
//! and fails on linux-6.18 (which has every fix) at or after the step where the property breaks.

use trc_engine::{check, Options, Verdict};
use trc_model::config::SackMode;
use trc_model::model::TcpModel;
use trc_model::{Config, Profile};
use trc_trace::export::{export, Exported, Subject};
use trc_trace::regress::break_line;
use trc_trace::replay::{replay, ReplayOptions, ReplayReport};

/// Shortest counterexample of `id` on `profile`, exported.
fn exported(sack: SackMode, profile: Profile, id: &str) -> Exported {
    let cfg = Config {
        sack,
        ..Config::default()
    };
    let specs = trc_properties::select(&[id.to_string()]).unwrap();
    let model = TcpModel::new(cfg, profile).with_properties(trc_properties::properties(&specs));
    let report = check(
        &model,
        &Options {
            threads: 2,
            fail_fast: true,
            ..Options::default()
        },
        None,
    );
    let p = &report.properties[0];
    assert_eq!(
        p.verdict,
        Verdict::Violated,
        "{id} must be violated on {}",
        model.profile.name
    );
    let path = p.path.as_ref().unwrap();
    export(
        &model,
        path.init_index,
        &path.actions,
        Subject {
            id: specs[0].id,
            name: specs[0].name,
            statement: specs[0].statement,
        },
        3,
    )
    .unwrap()
}

fn replay_on(x: &Exported, profile: &Profile) -> ReplayReport {
    let script =
        trc_pkt::parse(&x.pkt, "exported.pkt").unwrap_or_else(|e| panic!("{e}\n{}", x.pkt));
    replay(&script, "exported.pkt", profile, &ReplayOptions::default())
}

fn round_trip(sack: SackMode, profile: Profile, id: &str, runnable: bool) {
    let x = exported(sack, profile.clone(), id);
    assert_eq!(x.trace.kernel_runnable, runnable, "{}", x.pkt);
    assert!(
        x.pkt.contains("model-only") != runnable || runnable,
        "header names model-only events"
    );
    let r = replay_on(&x, &profile);
    assert!(
        matches!(r.script.verdict, trc_pkt::report::Verdict::Passed { .. }),
        "{} on {}:\n{}\n{}",
        id,
        profile.name,
        x.pkt,
        r.render()
    );
    assert!(x.spaced, "ACKs could be spaced for the kernel");
    let r = replay_on(&x, &Profile::linux_6_18());
    let f = r
        .first_failure()
        .unwrap_or_else(|| panic!("{id} must fail on linux-6.18:\n{}", r.render()));
    let brk = break_line(&x.pkt).unwrap();
    assert!(
        f.line > brk,
        "{id}: linux-6.18 fails at line {} before the break (line {brk}):\n{}",
        f.line,
        r.render()
    );
    // The JSON trace round-trips through serde.
    let json = serde_json::to_string(&x.trace).unwrap();
    let back: trc_trace::export::TraceFile = serde_json::from_str(&json).unwrap();
    assert_eq!(back.steps.len(), x.trace.steps.len());
    assert!(x.dot.starts_with("digraph") && x.dot.contains("color=red"));
}

#[test]
fn e37ab7_non_sack_spurious_undo() {
    round_trip(SackMode::NoSack, Profile::linux_6_15(), "I1", true);
}

#[test]
fn bc9f38_tsq_held_recovery_model_only() {
    round_trip(SackMode::Sack, Profile::linux_6_6(), "I1p", false);
}

#[test]
fn da34ac_loss_undo_on_dupack() {
    round_trip(SackMode::NoSack, Profile::pre_da34ac(), "I1", true);
}

#[test]
fn f1236f22_non_sack_frto_bogus_undo() {
    round_trip(SackMode::NoSack, Profile::pre_1236f22(), "I1", true);
}

#[test]
fn f686dc2_non_sack_hold_in_loss_i14() {
    round_trip(SackMode::NoSack, Profile::linux_5_1(), "I14", true);
}

/// Exports are deterministic and every line of a script parses back (times, options, asserts).
#[test]
fn export_is_deterministic_and_parses() {
    let a = exported(SackMode::NoSack, Profile::linux_6_15(), "I1");
    let b = exported(SackMode::NoSack, Profile::linux_6_15(), "I1");
    assert_eq!(a.pkt, b.pkt);
    let s = trc_pkt::parse(&a.pkt, "x.pkt").unwrap();
    assert!(s.statements.len() > 20);
    assert!(a.pkt.contains("initcwnd 5") && a.pkt.contains("I1 breaks at step"));
}
