//! F3's proposed fix (`sacktag_nested_dsack = "skip-after-null"`, docs/findings/F3.md) and the
//! F1 fix (`linux-7.2-f1-fix`) on the scripts that show them on the kernel.

use std::path::{Path, PathBuf};
use trc_model::profile::{Profile, SacktagNestedDsack};
use trc_pkt::report::Verdict;

fn script(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../counterexamples")
        .join(rel)
}

fn verdict(rel: &str, p: &Profile) -> Verdict {
    trc_trace::replay::replay_file(&script(rel), p, &Default::default())
        .unwrap()
        .script
        .verdict
}

fn f3_fix() -> Profile {
    Profile {
        name: "f3-fix".into(),
        sacktag_nested_dsack: SacktagNestedDsack::SkipAfterNull,
        ..Profile::linux_6_18()
    }
}

/// linux-6.18 passes F3's script (the DSACK counted twice: TcpExtTCPDSACKUndo, then Recovery is
/// entered again from the restored cwnd: cwnd 3 at line 90). With the fix the DSACK block the
/// covering block already handled is not walked again: no undo (cwnd differs from line 90 on),
/// and the disagreement packetdrill reports first is the TcpExtTCPDSACKUndo check (line 109: a
/// failing shell line ends the run, the `%{ }%` asserts are judged after it). The cached-block
/// variant (counted once on 6.18 too) passes on both.
#[test]
fn f3_fix_counts_the_nested_dsack_once() {
    let twice = "regressions/diff-nested-dsack-counted-twice.pkt";
    let cached = "regressions/diff-nested-dsack-cached-block.pkt";
    assert!(matches!(
        verdict(twice, &Profile::linux_6_18()),
        Verdict::Passed { .. }
    ));
    assert!(
        matches!(verdict(twice, &f3_fix()), Verdict::Failed { line: 109, .. }),
        "{:?}",
        verdict(twice, &f3_fix())
    );
    assert!(matches!(
        verdict(cached, &Profile::linux_6_18()),
        Verdict::Passed { .. }
    ));
    assert!(matches!(verdict(cached, &f3_fix()), Verdict::Passed { .. }));
}

/// The F1 reproducers: 6.18 undoes (every line passes), the F1 fix does not (the ssthresh the
/// undo would have restored differs from line 47; packetdrill reports the TcpExtTCPFullUndo
/// check at line 50 first).
#[test]
fn f1_fix_on_the_f1_scripts() {
    let fix = Profile::linux_7_2_f1_fix();
    let no_rto = "findings/f1-eifel-undo-no-rto.pkt";
    assert!(matches!(
        verdict(no_rto, &Profile::linux_6_18()),
        Verdict::Passed { .. }
    ));
    assert!(
        matches!(verdict(no_rto, &fix), Verdict::Failed { line: 50, .. }),
        "{:?}",
        verdict(no_rto, &fix)
    );
    let loss = "findings/i1-eifel-undo-after-real-loss.pkt";
    assert!(matches!(
        verdict(loss, &Profile::linux_6_18()),
        Verdict::Passed { .. }
    ));
    assert!(
        matches!(verdict(loss, &fix), Verdict::Failed { .. }),
        "{:?}",
        verdict(loss, &fix)
    );
}
