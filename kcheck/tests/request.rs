//! `trc kernel check` as a library call: a request, its plan, and the check on a target,
//! without the binary. The running kernel's part needs root and tun (it skips otherwise; run
//! it under `flock /tmp/trc-kernel.lock`); the rest runs anywhere.

use std::path::{Path, PathBuf};
use trc_check::Outcome;
use trc_kcheck::request::{check, Request, Shrink};
use trc_kcheck::{PlanError, Verdict};
use trc_kernel::target::{Batch, Host, Target, TargetError};

/// A corpus of two scripts from the repository's: a fast retransmit that holds everywhere and
/// finding F9 (a second ssthresh cut in one window: I2 violated on 6.18 and later kernels).
fn corpus(name: &str) -> PathBuf {
    let src = trc_testkit::workspace().join("counterexamples");
    let d = std::env::temp_dir().join(format!("trc-kcheck-request-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    for (dir, f) in [
        ("common", "defaults.sh"),
        ("kernel", "fr-sack.pkt"),
        ("findings", "f9-rack-reo-timer-second-cut-in-loss.pkt"),
    ] {
        std::fs::create_dir_all(d.join(dir)).unwrap();
        std::fs::copy(src.join(dir).join(f), d.join(dir).join(f)).unwrap();
    }
    d
}

fn request(corpus: &Path) -> Request {
    let mut req = Request::new(Some("corpus"), false, None, &["I2".into()], "linux-6.18").unwrap();
    req.corpus = corpus.to_path_buf();
    req
}

/// A kernel that runs nothing: every script without a report.
struct Nothing;
impl Target for Nothing {
    fn label(&self) -> String {
        "nothing".into()
    }
    fn run(&mut self, scripts: &[PathBuf], _: &mut dyn FnMut(&str)) -> Result<Batch, TargetError> {
        Ok(Batch {
            kernel: "nothing".into(),
            runs: scripts
                .iter()
                .map(|_| Err(trc_kernel::target::NoReport::Runner("not run".into())))
                .collect(),
        })
    }
}

#[test]
fn a_request_is_checked_on_a_target_and_a_scenario_without_a_run_is_no_pass() {
    let c = corpus("nothing");
    let req = request(&c);
    let work = c.join("work");
    let plan = req.plan(&work, &mut |_| {}).unwrap();
    assert_eq!(plan.cases.len(), 2, "the corpus' two scripts");
    let mine = req.owned(&plan);
    let rep = check(&req, &plan, &mine, &mut Nothing, &work, &mut |_| {}).unwrap();
    assert_eq!(rep.not_run, 2);
    assert_eq!(rep.properties[0].verdict, Verdict::Undecided);
    assert_eq!(
        rep.outcome(),
        Outcome::Incomplete,
        "nothing ran: not a pass"
    );
}

#[test]
fn bad_requests_say_why() {
    let e = Request::new(
        Some("corpus"),
        false,
        Some(Default::default()),
        &[],
        "linux-6.18",
    )
    .unwrap_err();
    assert!(
        matches!(e, PlanError::BoundsWithoutCoverage { .. }),
        "{e:?}"
    );
    assert!(
        e.to_string().contains("apply only to --suite coverage"),
        "{e}"
    );
    let e = Request::new(None, false, None, &["I99".into()], "linux-6.18").unwrap_err();
    assert!(e.to_string().contains("I99"), "{e}");
    let e = Request::new(Some("bogus"), false, None, &[], "linux-6.18").unwrap_err();
    assert!(matches!(e, PlanError::Suite { .. }), "{e:?}");
    assert!(e.to_string().contains("--suite bogus"), "{e}");
    let e = Request::new(None, false, None, &[], "no-such-profile").unwrap_err();
    assert!(matches!(e, PlanError::Profile(_)), "{e:?}");
    assert!(
        e.to_string()
            .starts_with("unknown profile `no-such-profile`"),
        "{e}"
    );
}

#[test]
fn the_running_kernel_violates_i2_in_f9_unless_the_baseline_accepts_it() {
    if let Some(why) = trc_kernel::skip_reason() {
        eprintln!("skipped: kernel runs impossible here: {why}");
        return;
    }
    let c = corpus("host");
    let mut req = request(&c);
    req.shrink = Shrink::Off("not shrunk (test)".into());
    let work = c.join("work");
    let plan = req.plan(&work, &mut |_| {}).unwrap();
    let mine = req.owned(&plan);
    let rep = check(&req, &plan, &mine, &mut Host::new(), &work, &mut |_| {}).unwrap();
    assert_eq!(rep.not_run, 0, "{}", rep.render());
    let i2 = &rep.properties[0];
    assert_eq!(i2.verdict, Verdict::Violated, "{}", rep.render());
    assert_eq!(i2.violated.len(), 1);
    assert!(i2.violated[0].contains("f9-"), "{:?}", i2.violated);
    assert_eq!(i2.shrink_note.as_deref(), Some("not shrunk (test)"));
    assert_eq!(rep.outcome(), Outcome::Violated);
    // With the repository's baseline, F9 is an accepted finding.
    let baseline: trc_check::Baseline =
        trc_files::read_toml(&trc_testkit::workspace().join("baseline.toml")).unwrap();
    req.baseline = baseline.accepted;
    let plan = req.plan(&work, &mut |_| {}).unwrap();
    let rep = check(&req, &plan, &mine, &mut Host::new(), &work, &mut |_| {}).unwrap();
    assert_eq!(
        rep.properties[0].verdict,
        Verdict::Accepted,
        "{}",
        rep.render()
    );
    assert_eq!(rep.outcome(), Outcome::Holds);
}
