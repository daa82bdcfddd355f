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

