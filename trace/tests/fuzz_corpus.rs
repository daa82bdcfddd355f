//! The fuzz campaign's inputs, replayed by every `cargo test` (docs/guides/fuzzing.md): each file of
//! `fuzz/corpus/<target>/`, `fuzz/regressions/<target>/` (inputs that once found a bug) and
//! every script of `counterexamples/` through both targets' bodies (`fuzz/targets.rs`, the
//! code the libFuzzer binaries run), with overflow checks on. A panic names the file.

#[path = "../../fuzz/targets.rs"]
mod targets;

use std::path::{Path, PathBuf};

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            files(&p, out);
        } else {
            out.push(p);
        }
    }
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn run_all(target: &str, body: fn(&[u8])) -> usize {
    let r = root();
    let mut inputs = Vec::new();
    files(&r.join("fuzz/corpus").join(target), &mut inputs);
    files(&r.join("fuzz/regressions").join(target), &mut inputs);
    files(&r.join("counterexamples"), &mut inputs);
    for p in &inputs {
        let data = std::fs::read(p).unwrap();
        if std::panic::catch_unwind(|| body(&data)).is_err() {
            panic!("fuzz target {target} panics on {}", p.display());
        }
    }
    inputs.len()
}

#[test]
fn parse_corpus_does_not_panic() {
    let n = run_all("parse", targets::parse);
    assert!(n > 20, "{n} inputs");
}

#[test]
fn replay_corpus_does_not_panic() {
    let n = run_all("replay", targets::replay);
    assert!(n > 20, "{n} inputs");
}
