//! `trc kernel check`'s shrinking on the running kernel (root + tun; skips otherwise): the
//! engine's I1 counterexample (finding F1's shape) is shrunk within the budget and the shrunk
//! script is written under `--out`; a corpus script is reported unshrunk, saying why; and
//! `--no-shrink` says so. Run under `flock /tmp/trc-kernel.lock`.

use std::path::{Path, PathBuf};
use trc_testkit::trc;

fn corpus(name: &str, files: &[&str]) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    for f in std::iter::once(&"common/defaults.sh").chain(files) {
        let to = d.join(f);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(
            trc_testkit::workspace().join("counterexamples").join(f),
            &to,
        )
        .unwrap();
    }
    d
}

fn i1(v: &serde_json::Value) -> &serde_json::Value {
    v["properties"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == "I1")
        .unwrap()
}

#[test]
fn violations_shrink_or_say_why_not() {
    if let Some(why) = trc_kernel::skip_reason() {
        eprintln!("skipped: kernel runs impossible here: {why}");
        return;
    }
    // regressions over a corpus of one passing script: the engine's counterexamples come from
    // action lists, and I1's (F1's shape on linux-6.18) is the one that violates. Without a
    // baseline (which accepts F1, and an accepted violation is not shrunk).
    let c = corpus("kcheck-shrink-regressions", &["kernel/fr-sack.pkt"]);
    let empty = c.join("empty-baseline.toml");
    std::fs::write(&empty, "").unwrap();
    let nb = empty.to_str().unwrap();
    shrinks_the_engine_counterexample(&c, nb);
    corpus_scripts_are_not_shrunk(nb);
}

/// The regressions suite over corpus `c` without a baseline (`nb`): I1 is violated and shrunk
/// within a budget of 12 runs, the shrunk script written under `--out` and in report.json.
fn shrinks_the_engine_counterexample(c: &Path, nb: &str) {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("kcheck-shrink-out");
    let _ = std::fs::remove_dir_all(&out);
    let (code, stdout, stderr) = trc!(&[
        "kernel",
        "check",
        "--corpus",
        c.to_str().unwrap(),
        "--properties",
        "I1",
        "--shrink-budget",
        "12",
        "--out",
        out.to_str().unwrap(),
        "--json",
        "--baseline",
        nb,
    ]);
    assert_eq!(code, 1, "I1 is violated\n{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let p = i1(&v);
    let s = &p["shrunk"];
    assert!(s.is_object(), "I1 was shrunk: {p}\n{stderr}");
    assert!(
        s["scenario"].as_str().unwrap().starts_with("check/I1-"),
        "{s}"
    );
    let (before, after) = (
        s["events_before"].as_u64().unwrap(),
        s["events_after"].as_u64().unwrap(),
    );
    assert!(after >= 1 && after <= before, "{s}");
    let runs = s["kernel_runs"].as_u64().unwrap();
    assert!((1..=12).contains(&runs), "{s}");
    assert_eq!(s["budget"], 12);
    let path = PathBuf::from(s["path"].as_str().unwrap());
    assert!(
        path.starts_with(out.join("shrunk")) && path.exists(),
        "{}",
        path.display()
    );
    assert!(
        out.join("shrunk/defaults.sh").exists(),
        "the shrunk script's shell line has its file"
    );
    // report.json carries the same.
    let r: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
    assert_eq!(i1(&r)["shrunk"], *s);
}

/// A corpus script (F1 as committed) is not shrunk: it is not from an action list; with
/// `--no-shrink` the note says so; with the baseline (not `nb`) F1 is accepted and nothing is
/// shrunk.
fn corpus_scripts_are_not_shrunk(nb: &str) {
    let c = corpus(
        "kcheck-shrink-corpus",
        &["findings/i1-eifel-undo-after-real-loss.pkt"],
    );
    let (code, stdout, stderr) = trc!(&[
        "kernel",
        "check",
        "--suite",
        "corpus",
        "--corpus",
        c.to_str().unwrap(),
        "--properties",
        "I1",
        "--baseline",
        nb,
    ]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stdout.contains("not shrunk: no violating scenario comes from a model action list"),
        "{stdout}"
    );
    let (code, stdout, stderr) = trc!(&[
        "kernel",
        "check",
        "--suite",
        "corpus",
        "--corpus",
        c.to_str().unwrap(),
        "--properties",
        "I1",
        "--no-shrink",
        "--json",
        "--baseline",
        nb,
    ]);
    assert_eq!(code, 1, "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(i1(&v)["shrink_note"], "not shrunk (--no-shrink)");
    assert!(i1(&v)["shrunk"].is_null());
    // With the baseline, F1 is accepted: nothing to shrink, exit 0.
    let (code, stdout, stderr) = trc!(&[
        "kernel",
        "check",
        "--suite",
        "corpus",
        "--corpus",
        c.to_str().unwrap(),
        "--properties",
        "I1",
        "--json",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(i1(&v)["verdict"], "accepted");
    assert!(
        i1(&v)["shrunk"].is_null() && i1(&v)["shrink_note"].is_null(),
        "{stdout}"
    );
}
