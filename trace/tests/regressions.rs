//! The regression corpus (counterexamples/regressions/manifest.toml): every entry replays on the
//! model as the manifest says. (The kernel side is `diff/tests/regressions.rs`.)

use std::path::{Path, PathBuf};
use trc_trace::regress::{check_entry, CorpusError, Manifest};
use trc_trace::replay::ScriptError;

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
            let r = trc_trace::replay::replay_file(
                &p,
                &trc_model::Profile::linux_6_18(),
                &Default::default(),
            )
            .unwrap();
            // A script hand-timed on the kernel where the model cannot follow its timers says
            // so (none since the replay learns the RTT; f9b, f9c and the two
            // rack-reo-timer-recovery-from-loss-new-window scripts needed it before): `// trc-replay: incomplete (why)` — the replay
            // must contradict none of the checks it makes and leave some out — or
            // `// trc-replay: diverges at line N (why)` — its verdict must fail at line N (the line
            // packetdrill would report).
            // A stale line (the replay now passes, or differs elsewhere) fails the test.
            let text = std::fs::read_to_string(&p).unwrap();
            let marker = text.lines().find_map(|l| l.strip_prefix("// trc-replay: "));
            match marker {
                Some(m) if m.starts_with("incomplete (") => {
                    assert!(
                        matches!(
                            r.script.verdict,
                            trc_pkt::report::Verdict::Incomplete { .. }
                        ),
                        "{}: marked incomplete\n{}",
                        p.display(),
                        r.render()
                    );
                }
                Some(m) if m.starts_with("diverges at line ") => {
                    let line: u32 = m["diverges at line ".len()..]
                        .split_whitespace()
                        .next()
                        .and_then(|x| x.parse().ok())
                        .unwrap_or_else(|| panic!("{}: bad trc-replay line: {m}", p.display()));
                    assert_eq!(
                        r.script.failed_line(),
                        Some(line),
                        "{}: marked as diverging at line {line}\n{}",
                        p.display(),
                        r.render()
                    );
                }
                Some(m) => panic!("{}: unknown trc-replay line: {m}", p.display()),
                None => assert!(
                    matches!(r.script.verdict, trc_pkt::report::Verdict::Passed { .. }),
                    "{}",
                    r.render()
                ),
            }
            n += 1;
        }
    }
    assert!(n >= 10);
}

#[test]
fn a_bad_manifest_names_its_line() {
    let d = trc_testkit::scratch!("regress-bad-manifest");
    std::fs::write(d.join("manifest.toml"), "[[regression]]\nname = 1\n").unwrap();
    let e = Manifest::load(&d).unwrap_err();
    assert!(matches!(e, CorpusError::Manifest(_)), "{e:?}");
    assert!(e.to_string().contains("manifest.toml:2: "), "{e}");
}

#[test]
fn a_script_that_cannot_be_replayed_says_why() {
    let d = trc_testkit::scratch!("replay-file-errors");
    let p = trc_model::Profile::linux_6_18();
    let e = trc_trace::replay::replay_file(&d.join("missing.pkt"), &p, &Default::default())
        .unwrap_err();
    assert!(matches!(e, ScriptError::Read(_)), "{e:?}");
    assert!(e.to_string().contains("missing.pkt: "), "{e}");
    let bad = d.join("bad.pkt");
    std::fs::write(&bad, "0 bogus\n").unwrap();
    let e = trc_trace::replay::replay_file(&bad, &p, &Default::default()).unwrap_err();
    assert!(matches!(e, ScriptError::Parse(_)), "{e:?}");
    assert!(e.to_string().contains("bad.pkt:2:1: "), "{e}");
}
