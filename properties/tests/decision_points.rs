//! Every decision point of `Profile` has a matrix case. The decision points and their values
//! are derived from `Profile` itself, not listed by hand: the fields are the keys of
//! linux-6.18's serde serialization (minus `name`, `description` and the test-only `mutants`),
//! a bool field takes both values, and an enum field's variants are read off serde's own
//! "unknown variant, expected one of ..." error. So a new field or a new variant fails this
//! test until it has a row below (a failing assertion in `matrix.rs` / `cubic.rs` on a profile
//! that sets that value) or an entry, with its reason, in the allow-list [`GAPS`].
//!
//! Each [`ROWS`] entry is checked against the sources: the `#[test]` function exists, its body
//! mentions the profile and expects a violation (`.is_some()`, or `expect_fail` for the rows
//! driven by a hand-built state), and the profile really sets the value (and it is not
//! linux-6.18's). Each [`GAPS`] entry must still be a gap, so the list only shrinks.

use serde_json::{Map, Value};
use trc_model::profile::{HystartClock, Profile, RtoRetransReset};

const MATRIX_RS: &str = include_str!("matrix.rs");
const CUBIC_RS: &str = include_str!("cubic.rs");

/// Serialized `Profile` keys that are not decision points.
const NOT_DECISION_POINTS: &[&str] = &["name", "description", "mutants"];

/// A matrix row: the `#[test]` function `test` in `file` asserts a violation on a profile that
/// the function mentions as `mention` (a constructor call, or the override in an inline
/// `Profile { .. }` literal), built here by `profile`; the row demonstrates `field` = `value`
/// (kebab-case as in profile files; `true`/`false` for bools).
struct Row {
    file: &'static str,
    test: &'static str,
    mention: &'static str,
    profile: fn() -> Profile,
    field: &'static str,
    value: &'static str,
}

const fn row(
    file: &'static str,
    test: &'static str,
    mention: &'static str,
    profile: fn() -> Profile,
    field: &'static str,
    value: &'static str,
) -> Row {
    Row {
        file,
        test,
        mention,
        profile,
        field,
        value,
    }
}

#[rustfmt::skip]
const ROWS: &[Row] = &[
    row("matrix.rs", "e37ab7_non_sack_spurious_undo_i1", "Profile::linux_6_15()", Profile::linux_6_15, "packet_delayed", "e37ab7"),
    row("matrix.rs", "e37ab7_non_sack_spurious_undo_i1", "Profile::linux_5_1()", Profile::linux_5_1, "packet_delayed", "pre2019"),
    row("matrix.rs", "bc9f38_tsq_held_recovery_not_undone_i1p", "Profile::linux_6_6()", Profile::linux_6_6, "packet_delayed", "bc9f38"),
    row("matrix.rs", "da34ac_loss_undo_on_dupack_i1", "Profile::pre_da34ac()", Profile::pre_da34ac, "loss_undo_acks", "any-ack"),
    row("matrix.rs", "f1236f22_non_sack_frto_bogus_undo_i1", "Profile::pre_1236f22()", Profile::pre_1236f22, "nonsack_orig_sack_fix", "false"),
    row("matrix.rs", "f686dc2_non_sack_hold_in_loss_i14", "Profile::linux_5_1()", Profile::linux_5_1, "loss_undo_nonsack_hold", "false"),
    row("matrix.rs", "i3_fails_on_pre_8b8a321_prr", "Profile::pre_8b8a321()", Profile::pre_8b8a321, "prr_guards", "pre8b8a321"),
    row("matrix.rs", "f0ec986_tlp_dsack_undo_i1", "Profile::pre_0ec986()", Profile::pre_0ec986, "init_undo_tlp", "ignore"),
    row("matrix.rs", "d9157f_dsack_ends_frto_missed_undo_i19", "Profile::pre_d9157f()", Profile::pre_d9157f, "dsack_dupack", "counts-as-dupack"),
    row("matrix.rs", "rto_retrans_reset_in_process_loss_frto_undo_i1", "rto_retrans_reset: RtoRetransReset::InProcessLoss", || Profile { rto_retrans_reset: RtoRetransReset::InProcessLoss, ..Profile::linux_6_18() }, "rto_retrans_reset", "in-process-loss"),
    row("cubic.rs", "f25c1a9_round_start_below_low_window_i15", "Profile::pre_25c1a9()", Profile::pre_25c1a9, "hystart_low_window", "in-acked"),
    row("cubic.rs", "f4e1fddc_round_reset_in_cong_avoid_i15", "Profile::pre_4e1fddc()", Profile::pre_4e1fddc, "hystart_round_reset", "in-cong-avoid"),
    row("cubic.rs", "fb344579_delay_exit_on_min_rtt_drop_i15b", "Profile::pre_b344579()", Profile::pre_b344579, "hystart_curr_rtt", "first8"),
    row("cubic.rs", "ms_clock_below_resolution_i15c", "hystart_clock: HystartClock::Ms", || Profile { hystart_clock: HystartClock::Ms, ..Profile::linux_6_18() }, "hystart_clock", "ms"),
    row("cubic.rs", "ms_clock_below_resolution_i15c", "Profile::linux_5_5()", Profile::linux_5_5, "hystart_clock", "ms"),
    row("cubic.rs", "pacing_aware_threshold_i15c", "hystart_pacing_aware: false", || Profile { hystart_pacing_aware: false, ..Profile::linux_6_18() }, "hystart_pacing_aware", "false"),
    row("cubic.rs", "f30927520_no_epoch_shift_after_idle_i16i", "Profile::pre_30927520()", Profile::pre_30927520, "cubic_idle", "no-shift"),
    row("cubic.rs", "epoch_start_in_the_future_i16", "Profile::pre_epoch_clamp()", Profile::pre_epoch_clamp, "cubic_idle", "shift"),
];

/// The allow-list: decision-point values with no failing matrix row yet, and why. An entry that
/// a row covers fails the test (remove it), so this list is the visible, shrinking set of gaps.
#[rustfmt::skip]
const GAPS: &[(&str, &str, &str)] = &[
    // The `snd_una == high_seq` guard predates 3.10 (it went with the F-RTO rewrite), so no
    // built-in kernel has it; the two guards differ only at snd_una > high_seq in
    // Recovery/CWR (unit test loss::tests::enter_loss_guard_window_clause).
    ("enter_loss_guard", "snd-una-eq-high-seq", "no built-in profile: see docs/reference/profiles.md (the 2014 change)"),
    // linux-6.6, 5.1 and 3.14 (before b41b4cbd9655) set it; their rows are other decision
    // points' (packet_delayed, loss_undo_nonsack_hold, loss_undo_acks).
    ("enter_recovery_stamp_cleanup", "false", "no profile isolates b41b4cbd9655, no row: row added by the verdicts issue"),
    // Only linux-5.5 sets it; its I15c row is the ms clock's (hystart_clock).
    ("hystart_cushion", "none", "only linux-5.5 sets it, no row isolates it: row added by the verdicts issue"),
    // The F1 fix is a fix, not a historical bug: no profile fails a property *because* of it.
    // Its check is tests/f1_fix.rs (linux-6.18 shows F1's signature, the fix does not; no
    // property newly violated; spurious episodes still undone by the timestamp echo).
    ("packet_delayed_scope", "acked-head", "the F1 fix (linux-7.2-f1-fix): checked by tests/f1_fix.rs, not by a failing row"),
    // The F1 rework the review proposed: rejected by the model (tests/f1_fix.rs,
    // head_only_rework_is_not_the_fix), no row (it is a fix, not a historical bug).
    ("packet_delayed_scope", "head-only", "the review's F1 rework (linux-7.2-f1-fix-head-only): checked by tests/f1_fix.rs, not by a failing row"),
    // The F1 fix proposed in docs/findings/F1.md: checked by tests/f1_fix.rs (F1's signatures
    // gone, I20/I20e hold at the bounds named there).
    ("packet_delayed_scope", "sacked-retrans", "the F1 fix (linux-7.2-f1-fix-v2): checked by tests/f1_fix.rs, not by a failing row"),
    // F9's proposed fix, as the F1 fix: checked by tests/f9_fix.rs (F9's I2 signature gone,
    // nothing new against linux-6.18).
    ("reo_timeout_recovery", "not-from-loss", "the F9 fix (linux-7.2-f9-fix): checked by tests/f9_fix.rs, not by a failing row"),
    // F11's proposed fix: checked by tests/f11_fix.rs.
    ("tlp_undo_retrans", "counted-while-undo-open", "the F11 fix (linux-7.2-f11-fix): checked by tests/f11_fix.rs, not by a failing row"),
    // F3's proposed fix; the default bounds do not reach F3 (its scripts are trc diff
    // scenarios): checked by replaying counterexamples/regressions/diff-nested-dsack-*.pkt
    // (trc-trace tests/f3_fix.rs).
    ("sacktag_nested_dsack", "skip-after-null", "F3's proposed fix, no built-in profile: checked by trace/tests/f3_fix.rs"),
    // The 42f3a8aaae66 series as posted; no built-in profile.
    ("hystart_cushion", "delay-min", "no built-in profile: see docs/reference/profiles.md"),
];

fn to_map(p: &Profile) -> Map<String, Value> {
    match serde_json::to_value(p).unwrap() {
        Value::Object(m) => m,
        v => panic!("Profile serializes to {v}"),
    }
}

fn show(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

/// The decision points: every serialized field of linux-6.18 but [`NOT_DECISION_POINTS`], with
/// its value there.
fn decision_points() -> Map<String, Value> {
    let mut m = to_map(&Profile::linux_6_18());
    m.retain(|k, _| !NOT_DECISION_POINTS.contains(&k.as_str()));
    m
}

/// Every value decision point `field` can take (as serialized). Bools: both. Enums: the
/// variants serde lists when asked to deserialize an unknown one ("unknown variant `x`,
/// expected one of `a`, `b`, `c`", or "expected `a` or `b`").
fn values_of(field: &str, default: &Value) -> Vec<Value> {
    match default {
        Value::Bool(_) => vec![Value::Bool(false), Value::Bool(true)],
        Value::String(_) => {
            let mut m = to_map(&Profile::linux_6_18());
            m.insert(field.into(), Value::String("no-such-variant".into()));
            let err = serde_json::from_value::<Profile>(Value::Object(m))
                .expect_err(field)
                .to_string();
            let (_, expected) = err
                .split_once("expected")
                .unwrap_or_else(|| panic!("{field}: {err}"));
            let vs: Vec<Value> = expected
                .split('`')
                .skip(1)
                .step_by(2)
                .map(|v| Value::String(v.into()))
                .collect();
            assert!(
                vs.len() >= 2 && vs.contains(default),
                "{field}: cannot read the variants off {err:?}"
            );
            for v in &vs {
                let mut m = to_map(&Profile::linux_6_18());
                m.insert(field.into(), v.clone());
                assert!(
                    serde_json::from_value::<Profile>(Value::Object(m)).is_ok(),
                    "{field} = {v}"
                );
            }
            vs
        }
        v => panic!("decision point {field} has a value of unexpected type: {v}"),
    }
}

/// The body of top-level `#[test] fn name` in `src` (up to its closing `}` at column 0).
fn test_body<'a>(src: &'a str, file: &str, name: &str) -> &'a str {
    let head = format!("#[test]\nfn {name}(");
    let start = src
        .find(&head)
        .unwrap_or_else(|| panic!("{file}: no `#[test] fn {name}`"));
    let body = &src[start + head.len()..];
    &body[..body.find("\n}\n").unwrap_or(body.len())]
}

#[test]
fn rows_are_real_failing_matrix_cases() {
    let points = decision_points();
    for r in ROWS {
        let src = match r.file {
            "matrix.rs" => MATRIX_RS,
            "cubic.rs" => CUBIC_RS,
            f => panic!("unknown test file {f}"),
        };
        let body = test_body(src, r.file, r.test);
        assert!(
            body.contains(r.mention),
            "{}::{} does not mention `{}`",
            r.file,
            r.test,
            r.mention
        );
        assert!(
            body.contains(".is_some()") || body.contains("expect_fail"),
            "{}::{} expects no violation",
            r.file,
            r.test
        );
        let default = points
            .get(r.field)
            .unwrap_or_else(|| panic!("{}: `{}` is not a decision point", r.test, r.field));
        let p = (r.profile)();
        let v = to_map(&p).remove(r.field).unwrap();
        assert_eq!(
            show(&v),
            r.value,
            "{}: profile {} has {} = {}",
            r.test,
            p.name,
            r.field,
            show(&v)
        );
        assert_ne!(
            &v, default,
            "{}: {} = {} is linux-6.18's value",
            r.test, r.field, r.value
        );
    }
}

#[test]
fn every_decision_point_value_has_a_matrix_row() {
    let points = decision_points();
    assert!(
        points.len() >= 17,
        "decision points: {:?}",
        points.keys().collect::<Vec<_>>()
    );
    let builtins = Profile::builtin();
    let mut missing = Vec::new();
    let mut listed = Vec::new();
    for (field, default) in &points {
        for v in values_of(field, default) {
            if &v == default {
                continue;
            }
            let value = show(&v);
            let rows = ROWS
                .iter()
                .filter(|r| r.field == field && r.value == value)
                .count();
            let gap = GAPS.iter().find(|g| g.0 == field && g.1 == value);
            match (rows, gap) {
                (0, None) => {
                    let set_by: Vec<_> = builtins
                        .iter()
                        .filter(|p| to_map(p).get(field) == Some(&v))
                        .map(|p| p.name.clone())
                        .collect();
                    missing.push(format!(
                        "{field} = {value} (set by: {})",
                        if set_by.is_empty() {
                            "no built-in profile".into()
                        } else {
                            set_by.join(", ")
                        }
                    ));
                }
                (0, Some(_)) => listed.push((field.clone(), value)),
                (_, Some(g)) => panic!(
                    "{field} = {value} has a matrix row now: remove it from GAPS ({})",
                    g.2
                ),
                (_, None) => {}
            }
        }
    }
    assert!(missing.is_empty(), "decision-point values with no matrix row (add a failing row to matrix.rs/cubic.rs and ROWS, or an entry with its reason to GAPS):\n  {}", missing.join("\n  "));
    for (field, value, why) in GAPS {
        assert!(
            listed.iter().any(|(f, v)| f == field && v == value),
            "GAPS entry {field} = {value} ({why}) is not a non-default decision-point value"
        );
    }
    eprintln!("decision-point values without a matrix row (GAPS):");
    for (field, value, why) in GAPS {
        eprintln!("  {field} = {value}: {why}");
    }
}
