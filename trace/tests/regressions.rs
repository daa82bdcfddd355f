//! The regression corpus (counterexamples/regressions/manifest.toml): every entry replays on the
//! model as the manifest says. (The kernel side is `diff/tests/regressions.rs`.)

use std::path::{Path, PathBuf};
use trc_trace::regress::{check_entry, Manifest};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../counterexamples/regressions")
}

#[test]
fn manifest_replays_on_the_model() {
    let dir = corpus();
    let m = Manifest::load(&dir).unwrap();
    assert!(m.regressions.len() >= 5, "one script per known bug");
    let mut bad = Vec::new();
    for e in &m.regressions {
        bad.extend(check_entry(&dir, e));
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}


/// The hand-written kernel corpus and the findings' scripts hold on the 6.18 kernel; the model's
/// linux-6.18 replay must pass them too, every line run and checked.
#[test]
fn kernel_corpus_replays_on_linux_6_18() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../counterexamples");
    let mut n = 0;
    for dir in ["kernel", "findings"] {
        for e in std::fs::read_dir(root.join(dir)).unwrap().flatten() {
            let p = e.path();
            if p.extension().is_none_or(|x| x != "pkt") {
                continue;
            }
            let r = trc_trace::replay::replay_file(&p, &trc_model::Profile::linux_6_18(), &Default::default()).unwrap();
            // A script hand-timed on the kernel where the model cannot place a timer (its srtt is
            // constant) says so in a `// trc-replay: incomplete (why)` line: there the replay must
            // contradict none of the checks it makes (Incomplete: nothing failed) and must leave some
            // out (a Passed verdict means the line is stale).
            let text = std::fs::read_to_string(&p).unwrap();
            if text.lines().any(|l| l.starts_with("// trc-replay: incomplete (")) {
                assert!(matches!(r.script.verdict, trc_pkt::report::Verdict::Incomplete { .. }), "{}: marked incomplete\n{}", p.display(), r.render());
            } else {
                assert!(matches!(r.script.verdict, trc_pkt::report::Verdict::Passed { .. }), "{}", r.render());
            }
            n += 1;
        }
    }
    assert!(n >= 10);
}
