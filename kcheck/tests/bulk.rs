//! The bulk suite of `trc kernel check` (model side, no kernel): one scenario per entry of
//! `BULK_SUITE`, each a whole transfer of the model's own walk, exported as a script with the
//! action list that shrinking reduces.

use trc_kcheck::run::{parse_suites, Plan};
use trc_kcheck::{Suite, BULK_SUITE};
use trc_model::Profile;

#[test]
fn the_bulk_suite_is_every_transfer_of_its_table_exported_whole() {
    assert_eq!(Suite::parse("bulk").unwrap(), Suite::Bulk);
    assert_eq!(Suite::Bulk.name(), "bulk");
    assert_eq!(parse_suites("random:2+bulk").unwrap().len(), 2);
    let err = Suite::parse("bulky").unwrap_err().to_string();
    assert!(err.contains("bulk"), "{err}");

    let work = trc_testkit::scratch!("bulk-suite");
    let plan = Plan::make(
        vec![Suite::Bulk],
        Vec::new(),
        Profile::linux_6_18(),
        &work,
        &work,
        1,
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(plan.cases.len(), BULK_SUITE.len());
    let mut names: Vec<&str> = plan.cases.iter().map(|c| c.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), BULK_SUITE.len(), "{names:?}");
    for (c, spec) in plan.cases.iter().zip(BULK_SUITE) {
        assert!(c.name.starts_with("bulk/bulk"), "{}", c.name);
        let write = format!("write(4, ..., {})", u32::from(spec.segments) * 1000);
        assert!(c.text.contains(&write), "{}: no {write}", c.name);
        assert_eq!(c.text.contains("sackOK"), spec.sack, "{}", c.name);
        assert_eq!(c.text.contains(",TS val"), spec.ts, "{}", c.name);
        assert!(c.origin.starts_with(&spec.command()), "{}", c.origin);
        assert_eq!(
            c.origin.contains("--bottleneck"),
            spec.bottleneck_ms > 0,
            "{}",
            c.origin
        );
        assert_eq!(
            c.origin.contains("--drop"),
            !spec.drops.is_empty(),
            "{}",
            c.origin
        );
        // A second write: one single-segment write line per segment, after the idle period.
        let single = c.text.matches("write(4, ..., 1000) = 1000").count();
        assert_eq!(
            single,
            spec.then.map_or(0, |(_, n)| usize::from(n)),
            "{}",
            c.name
        );
        let actions = c.actions.as_ref().expect("an action list to shrink");
        // The whole transfer: at least one action per segment (its delivery).
        assert!(
            actions.actions.len() >= usize::from(spec.segments),
            "{}",
            c.name
        );
    }
}
