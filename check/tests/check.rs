//! `trc check` as a library call: a request explored without the binary, its typed report, and
//! the merge of its shards equal to the one run.

use trc_check::run::Quiet;
use trc_check::shard::{CheckArgs, CheckUnitOut};
use trc_check::{run, CheckReport, CheckRequest, Outcome, SigStatus};
use trc_engine::Verdict;
use trc_model::config::SackMode;
use trc_model::{Config, Profile};

/// linux-6.15 without SACK: the seed regression (e37ab7373696), I1 violated with a new
/// signature; I2 holds.
fn seed_request() -> CheckRequest {
    let cfg = Config {
        sack: SackMode::NoSack,
        ..Config::default()
    };
    let mut req = CheckRequest::new(Profile::by_name("linux-6.15").unwrap(), cfg);
    req.properties = vec!["I1".into(), "I2".into()];
    req
}

#[test]
fn a_check_runs_as_a_library_call_and_its_report_is_typed() {
    let req = seed_request();
    let runs = run(&req, &Quiet).unwrap();
    assert_eq!(runs.len(), 1);
    let r = &runs[0].report;
    assert_eq!(r.result, Outcome::Violated);
    assert_eq!(
        r.unique_states, 30763,
        "the seed's no-SACK space (as trc check prints it)"
    );
    assert!(r.complete && !r.incomplete);
    let i1 = r.property("I1").unwrap();
    assert_eq!(i1.verdict, Verdict::Violated);
    assert!(i1.fails());
    assert!(i1.signatures.iter().any(|s| s.status == SigStatus::New));
    let ce = i1.counterexample.as_ref().unwrap();
    assert_eq!(
        ce.len() - 1,
        i1.path.as_ref().unwrap().len(),
        "steps = events + the initial state"
    );
    assert_eq!(r.property("I2").unwrap().verdict, Verdict::Holds);
    // The JSON round-trips into the same report.
    let back: CheckReport =
        serde_json::from_value(CheckReport::json(std::slice::from_ref(r))).unwrap();
    assert_eq!(back.result, r.result);
    assert_eq!(back.properties.len(), 2);
    assert!(r.render().contains("VIOLATED"));
}

#[test]
fn the_baseline_accepts_a_signature_and_against_a_profile_excuses_one() {
    let mut req = seed_request();
    let sig = {
        let runs = run(&req, &Quiet).unwrap();
        runs[0].report.property("I1").unwrap().signatures[0]
            .signature
            .clone()
    };
    req.baseline = vec![trc_check::Accepted {
        signature: sig.clone(),
        finding: "Fx".into(),
        reason: "test".into(),
    }];
    let runs = run(&req, &Quiet).unwrap();
    let i1 = runs[0].report.property("I1").unwrap();
    let s = i1.signatures.iter().find(|s| s.signature == sig).unwrap();
    assert_eq!(s.status, SigStatus::Accepted);
    assert_eq!(s.finding.as_deref(), Some("Fx"));
    // Against itself every signature is also on the base: nothing fails.
    let mut req = seed_request();
    req.against = Some(req.profile.clone());
    let runs = run(&req, &Quiet).unwrap();
    assert_eq!(runs[0].report.result, Outcome::Holds);
    assert!(runs[0].report.property("I1").unwrap().accepted.is_some());
}

#[test]
fn merged_units_are_the_one_run() {
    // Both SACK modes: two units whose merge is the whole check.
    let mut req = seed_request();
    req.configs[0].sack = SackMode::Both;
    let one = run(&req, &Quiet).unwrap().remove(0).report;
    let ids = req.property_ids().unwrap();
    let mut units = Vec::new();
    run::run_units(&req, &|_| true, &Quiet, &mut |k, u, run| {
        units.push(CheckUnitOut::new(k, u, run));
        Ok(())
    })
    .unwrap();
    assert_eq!(units.len(), 2);
    let args = CheckArgs::new(&req, ids, units.iter().map(|u| u.label.clone()).collect());
    let refs: Vec<&CheckUnitOut> = units.iter().collect();
    let merged = CheckReport::merge(&args, 0, &refs).unwrap();
    assert_eq!(merged.unique_states, one.unique_states);
    assert_eq!(merged.transitions, one.transitions);
    assert_eq!(merged.result, one.result);
    for (a, b) in merged.properties.iter().zip(&one.properties) {
        assert_eq!(a.verdict, b.verdict, "{}", a.id);
        assert_eq!(a.counterexample, b.counterexample, "{}", a.id);
        let sigs = |p: &trc_check::PropResult| {
            p.signatures
                .iter()
                .map(|s| (s.signature.clone(), s.states, s.events))
                .collect::<Vec<_>>()
        };
        assert_eq!(sigs(a), sigs(b), "{}", a.id);
    }
}

#[test]
fn a_check_writes_its_counterexamples_as_a_library_call() {
    use std::sync::Mutex;
    use trc_check::export::{Exports, Note};
    struct Notes(Mutex<Vec<Note>>);
    impl trc_check::Observer for Notes {
        fn exported(&self, n: &Note) {
            self.0.lock().unwrap().push(n.clone());
        }
    }
    let dir = trc_testkit::scratch!("exports");
    let mut req = seed_request();
    req.properties = vec!["I1".into()];
    let page =
        |_: &_, _: &_, _: &trc_check::PropResult, f: &std::path::Path| std::fs::write(f, "page");
    let exports = Exports {
        out: Some(dir.clone()),
        form: trc_trace::upstream::Form::Trc,
        corpus: None,
        page: &page,
    };
    let notes = Notes(Mutex::new(Vec::new()));
    let checked = trc_check::run_exported(&req, &[None], &exports, &notes).unwrap();
    assert!(checked.export_error.is_none() && checked.unsupported == 0);
    assert_eq!(checked.reports[0].result, Outcome::Violated);
    assert!(dir.join("I1-linux-6.15.pkt").is_file());
    assert_eq!(
        std::fs::read_to_string(dir.join("I1-linux-6.15.html")).unwrap(),
        "page"
    );
    let notes = notes.0.into_inner().unwrap();
    assert!(
        matches!(&notes[..], [Note::Wrote { stem: None, .. }]),
        "{notes:?}"
    );
    assert!(notes[0].to_string().starts_with("wrote "), "{}", notes[0]);
}
