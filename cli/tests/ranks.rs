//! `trc check --ranks N`: one state space split across N ranks that are threads of this process
//! (the distributed check without MPI) gives the one-process report (apart from timings, memory
//! and the `distributed` figures) and exit code, for states that own no heap memory and for
//! states that do (9 segments); and what it refuses.

use serde_json::Value;
use trc_testkit::trc;

/// The JSON report of `args` (with `--json`) and its exit code.
fn report(args: &[&str]) -> (i32, Value) {
    let (code, json, err) = trc!(args);
    let v = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{args:?}: {e}: {json}\n{err}"));
    (code, v)
}

fn same_as_one_process(args: &[&str], ranks: &[usize]) {
    let (code, mut one) = report(args);
    assert!(one["distributed"].is_null());
    let keys = ["seconds", "peak_memory_bytes", "distributed"];
    trc_testkit::without_keys(&mut one, &keys);
    for n in ranks {
        let n = n.to_string();
        let mut a = args.to_vec();
        a.extend(["--ranks", &n]);
        let (c, mut v) = report(&a);
        assert_eq!(c, code, "{a:?}");
        let d = &v["distributed"];
        assert_eq!(d["ranks"].as_u64().unwrap().to_string(), n, "{d}");
        assert_eq!(d["in_one_process"], true, "{d}");
        assert!(d["levels"].as_array().unwrap().len() > 5, "{d}");
        trc_testkit::without_keys(&mut v, &keys);
        assert_eq!(v, one, "{a:?}: not the one-process report");
    }
}

#[test]
fn thread_ranks_give_the_one_process_report() {
    // The default bounds, both SACK modes: I1 violated (accepted signatures, counterexamples).
    same_as_one_process(&["check", "--json"], &[1, 2, 3]);
    // At 9 segments every state owns heap memory and is kept, and moved, as its serde form.
    same_as_one_process(
        &[
            "check",
            "--segments",
            "9",
            "--sack",
            "--max-depth",
            "9",
            "--json",
        ],
        &[2],
    );
}

#[test]
fn ranks_refuse_what_the_distributed_check_cannot_do() {
    for extra in [
        &["--ranks", "0"][..],
        &["--ranks", "x"],
        &["--ranks", "2", "--max-memory", "100"],
        &["--ranks", "2", "--coverage"],
        &["--ranks", "2", "--mpi"],
    ] {
        let mut a = vec!["check", "--segments", "2"];
        a.extend_from_slice(extra);
        let (code, _, err) = trc!(&a);
        assert_eq!(code, 2, "{a:?}: {err}");
        assert!(err.contains("--ranks"), "{a:?}: {err}");
    }
}
