//! `trc kernel check`'s shrinking on the running kernel: finding F1's shape (the engine's
//! shortest I1 counterexample on linux-6.18 with SACK), padded with events after it, still
//! violates I1 on the kernel and shrinks back to no more events than the original. Needs root
//! and tun (skips otherwise); run it under `flock /tmp/trc-kernel.lock`.

use stateright::Model as _;
use trc_kcheck::shrink::{shrink_violation, still_violates, Runner};
use trc_kcheck::{engine_counterexamples, monitors};

/// `list` padded: after the undo, the sender's next events (writes and in-order deliveries), as
/// long as the model allows them and the walk still exports (at most 6).
fn pad(list: &trc_kcheck::shrink::ActionList) -> Vec<trc_model::model::Action> {
    let m = trc_model::model::TcpModel::new(list.cfg.clone(), list.profile.clone());
    let mut padded = list.actions.clone();
    let init = match list.how {
        trc_kcheck::shrink::How::Counterexample { init, .. } => init,
        _ => 0,
    };
    let mut s = trc_trace::export::states(&m, init, &padded)
        .unwrap()
        .last()
        .unwrap()
        .1
        .clone();
    for _ in 0..6 {
        let mut en = Vec::new();
        m.actions(&s, &mut en);
        let pick = en
            .iter()
            .copied()
            .find(|a| matches!(a, trc_model::model::Action::Write))
            .or_else(|| {
                en.iter()
                    .copied()
                    .find(|a| matches!(a, trc_model::model::Action::Deliver { pkt: 0 }))
            });
        let Some(a) = pick else { break };
        let mut cand = padded.clone();
        cand.push(a);
        if list.export(&cand).is_err() {
            break;
        }
        s = m.next_state(&s, a).unwrap();
        padded = cand;
    }
    padded
}

#[test]
fn a_padded_f1_shrinks_to_at_most_the_original() {
    if let Some(why) = trc_kernel::skip_reason() {
        eprintln!("skipped: kernel runs impossible here: {why}");
        return;
    }
    let dir = std::env::temp_dir().join(format!("trc-kcheck-shrink-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let cases = engine_counterexamples(&dir.join("check"), 0, &mut |_| {}).unwrap();
    let f1 = cases
        .iter()
        .find(|c| c.name == "check/I1-linux-6.18.pkt")
        .expect("the engine's I1 counterexample on linux-6.18");
    let list = f1
        .actions
        .clone()
        .expect("an engine counterexample has its action list");
    let original = list.actions.len();

    let padded = pad(&list);
    assert!(
        padded.len() >= original + 2,
        "padding added {} events",
        padded.len() - original
    );
    assert_eq!(
        list.normalize(&padded),
        padded,
        "the padded walk is one the model allows"
    );

    // The padded script violates I1 on the kernel (the premise).
    let pkt = list.export(&padded).unwrap();
    let work = dir.join("padded");
    trc_trace::write_defaults(&work).unwrap();
    let f = work.join("I1-padded.pkt");
    trc_files::write_atomic(&f, pkt.as_bytes()).unwrap();
    let mon = monitors().into_iter().find(|m| m.id == "I1").unwrap();
    let opts = trc_kernel::RunOptions::default();
    let run = trc_kernel::run_file(&f, &opts).unwrap();
    let padded_case = {
        let mut c = f1.clone();
        c.path = f.clone();
        c.text = pkt.clone();
        c.ghost = trc_kcheck::Ghost::of_script(&pkt);
        let mut l = list.clone();
        l.actions = padded.clone();
        c.actions = Some(l);
        c.name = "check/I1-padded".into();
        c
    };
    let first = still_violates(&padded_case, &run, &mon)
        .expect("the padded F1 still violates I1 on this kernel");

    let mut run_one = |cs: &[trc_kcheck::Case]| {
        cs.iter()
            .take(1)
            .map(|c| {
                trc_kernel::run_file(&c.path, &opts)
                    .map_err(|e| trc_kernel::target::NoReport::Runner(e.to_string()))
            })
            .collect()
    };
    let mut runner = Runner {
        run: &mut run_one,
        batched: false,
    };
    let plist = padded_case.actions.clone().unwrap();
    let r = shrink_violation(
        &padded_case,
        &plist,
        &mon,
        first,
        24,
        &dir.join("work"),
        &dir.join("shrunk"),
        &mut runner,
        &mut |l| eprintln!("{l}"),
    )
    .unwrap();
    eprintln!(
        "padded {} events (original {original}) -> {} in {} kernel runs: {}",
        r.events_before, r.events_after, r.kernel_runs, r.path
    );
    assert_eq!(r.events_before, padded.len());
    assert!(
        r.events_after <= original,
        "shrunk to {} events, the original has {original}",
        r.events_after
    );
    assert!(r.kernel_runs >= 1 && r.kernel_runs <= 24);
    let text = std::fs::read_to_string(&r.path).unwrap();
    assert!(
        text.contains("I1"),
        "the shrunk script is the exported counterexample"
    );
    assert!(std::path::Path::new(&r.path)
        .with_file_name("defaults.sh")
        .exists());
    let _ = std::fs::remove_dir_all(&dir);
}
