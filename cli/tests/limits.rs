//! `trc check` on the real model: `--fail-fast`, `--max-memory`, `--max-depth`, and identical
//! counterexamples with 1 and 2 threads.

use trc_testkit::trc;

fn json(args: &[&str]) -> (i32, serde_json::Value) {
    let mut a = args.to_vec();
    a.push("--json");
    let (code, out, err) = trc!(&a);
    (
        code,
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}")),
    )
}

/// The properties' verdicts and counterexamples (no timings). The per-signature counts are
/// dropped: a run stopped early has seen fewer states of each signature; its shortest
/// counterexample and that counterexample's signature must be the same.
fn props(v: &serde_json::Value) -> serde_json::Value {
    let mut p = v["properties"].clone();
    for x in p.as_array_mut().into_iter().flatten() {
        if let Some(o) = x.as_object_mut() {
            o.remove("signatures");
        }
    }
    p
}

#[test]
fn fail_fast_stops_early_with_the_same_shortest_counterexample() {
    let base = [
        "check",
        "--profile",
        "linux-6.15",
        "--no-sack",
        "--property",
        "I1",
        "--threads",
        "2",
    ];
    let (code, full) = json(&base);
    assert_eq!(code, 1);
    assert_eq!(full["stop_reason"], "Complete");
    let mut ff = base.to_vec();
    ff.push("--fail-fast");
    let (code, r) = json(&ff);
    assert_eq!(code, 1);
    assert_eq!(r["stop_reason"], "FailFast");
    assert_eq!(r["complete"], false);
    assert!(r["unique_states"].as_u64().unwrap() < full["unique_states"].as_u64().unwrap());
    assert_eq!(
        props(&r),
        props(&full),
        "fail-fast reports the same shortest counterexample"
    );
    let (_, text, _) = trc!(&ff);
    assert!(text.contains("stopped early (FailFast)"), "{text}");
}

#[test]
fn max_memory_stops_cleanly_with_partial_statistics() {
    let (code, r) = json(&[
        "check",
        "--sack",
        "--property",
        "I5",
        "--max-memory",
        "30",
        "--threads",
        "2",
        "--no-spill",
    ]);
    assert_eq!(
        code, 3,
        "no violation among the explored states, but not a pass: incomplete"
    );
    assert_eq!(r["stop_reason"], "MemoryBudget");
    assert_eq!(r["complete"], false);
    assert_eq!(r["result"], "incomplete");
    let states = r["unique_states"].as_u64().unwrap();
    assert!(states > 1000, "partial statistics: {states} states");
    assert!(r["peak_memory_bytes"].as_u64().unwrap() <= 30 << 20);
    let (code, text, _) = trc!(&[
        "check",
        "--sack",
        "--property",
        "I5",
        "--max-memory",
        "30",
        "--no-spill",
    ]);
    assert_eq!(code, 3);
    assert!(
        text.contains("stopped early (MemoryBudget): --max-memory"),
        "{text}"
    );
    assert!(
        text.contains("INCOMPLETE: stopped early (MemoryBudget)"),
        "{text}"
    );
    assert!(text.contains(" states, "), "{text}");
}

#[test]
fn threads_are_bounded_by_the_machine() {
    let (code, _, err) = trc!(&["check", "--threads", "100000"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("at most") && err.contains("threads"), "{err}");
    for cmd in [
        &["matrix", "--threads", "100000"][..],
        &["bench", "--threads", "100000"],
    ] {
        let (code, _, err) = trc!(cmd);
        assert_eq!(code, 2, "{cmd:?}: {err}");
    }
}

#[test]
fn max_depth_bounds_the_search_and_still_finds_shallow_counterexamples() {
    let base = [
        "check",
        "--profile",
        "linux-6.15",
        "--no-sack",
        "--property",
        "I1",
        "--threads",
        "2",
    ];
    let (_, full) = json(&base);
    let len = full["properties"][0]["counterexample"]
        .as_array()
        .unwrap()
        .len()
        - 1;
    let d = len.to_string();
    let mut at = base.to_vec();
    at.extend(["--max-depth", &d]);
    let (code, r) = json(&at);
    assert_eq!(code, 1);
    assert_eq!(r["stop_reason"], "MaxDepth");
    assert_eq!(props(&r), props(&full));
    let shallower = (len - 1).to_string();
    let mut below = base.to_vec();
    below.extend(["--max-depth", &shallower]);
    let (code, r) = json(&below);
    assert_eq!(code, 0, "the counterexample is deeper than the bound");
    assert_eq!(r["max_depth"], len - 1);
}

#[test]
fn one_and_two_threads_give_identical_results() {
    for extra in [
        &["--no-sack", "--profile", "linux-6.15"][..],
        &["--sack", "--segments", "4", "--initcwnd", "4"][..],
    ] {
        let mut a = vec!["check"];
        a.extend_from_slice(extra);
        let mut a1 = a.clone();
        a1.extend(["--threads", "1"]);
        let mut a2 = a.clone();
        a2.extend(["--threads", "2"]);
        let (c1, r1) = json(&a1);
        let (c2, r2) = json(&a2);
        assert_eq!(c1, c2);
        assert_eq!(props(&r1), props(&r2), "{extra:?}");
        for k in ["unique_states", "transitions", "max_depth", "stop_reason"] {
            assert_eq!(r1[k], r2[k], "{k} {extra:?}");
        }
    }
}

#[test]
fn bench_repeat_alternates_the_checkers_and_reports_median_ratios() {
    let (code, out, err) = trc!(&["bench", "--quick", "--repeat", "2", "--threads", "2"]);
    assert_eq!(code, 0, "{err}");
    let rows: Vec<&str> = out
        .lines()
        .filter(|l| l.contains(" | ") && !l.starts_with("case"))
        .collect();
    assert_eq!(rows.len(), 4, "{out}");
    for r in &rows {
        // Same unique states, transitions and verdicts in every run of both checkers, and a
        // median ratio with its range.
        assert!(r.contains(" yes "), "{r}");
        let ratio = r.rsplit(" | ").next().unwrap();
        assert!(ratio.contains("x (") && ratio.ends_with(')'), "{r}");
    }
    assert!(out.contains("2 runs per case and checker"), "{out}");
    let (code, _, err) = trc!(&["bench", "--quick", "--repeat", "0"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--repeat"), "{err}");
}

/// `--instructions` runs both checkers under callgrind: instructions per state of each, their
/// ratio, and the model step per state, which both checkers run (so the two figures agree) and
/// which is a part of each total, with the bound it puts on the ratio. Skips without valgrind.
#[test]
fn bench_instructions_counts_both_checkers_and_the_model_step() {
    if std::process::Command::new("valgrind")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: valgrind is not installed (trc bench --instructions needs it)");
        return;
    }
    let (code, out, err) = trc!(&["bench", "--quick", "--case", "0", "--instructions"]);
    assert_eq!(code, 0, "{err}");
    // The numbers of case 0's row in the section that starts at `head`.
    let row = |head: &str| -> Vec<f64> {
        let section = &out[out.find(head).unwrap_or_else(|| panic!("no {head}: {out}"))..];
        let line = section.lines().find(|l| l.starts_with("0 ")).expect("row");
        line.split_whitespace()
            .filter_map(|w| w.trim_end_matches('x').parse().ok())
            .collect()
    };
    // The case's number, states, ours Ir, ours Ir/st, sr Ir, sr Ir/st, Ir ratio, wall ratio.
    let ir = row("instructions (valgrind");
    let (ours, sr, ratio) = (ir[3], ir[5], ir[6]);
    assert!(ours > 1000.0 && sr > ours, "{out}");
    assert!((ratio - sr / ours).abs() < 0.01, "{out}");
    // The case's number, ours step/st, sr step/st, bound.
    let v = row("ours step/st");
    let line = format!("{v:?}");
    let (ostep, srstep, bound) = (v[1], v[2], v[3]);
    assert!(ostep > 500.0 && ostep < ours, "{line}");
    assert!(
        (ostep - srstep).abs() < 0.05 * srstep,
        "same model step: {line}"
    );
    assert!((bound - sr / ostep).abs() < 0.05 && bound > ratio, "{line}");
}

/// `--max-memory` spills the frontier to a temporary file instead of stopping: a budget below
/// what the default SACK check holds in memory (≈ 290 MiB estimated) completes with the same
/// states, transitions, depth, verdicts and counterexamples as the run without a budget, for 1
/// and 2 threads, and reports what it wrote; with all properties (counterexamples) too.
#[test]
fn max_memory_spills_the_frontier_and_completes_with_the_same_result() {
    for base in [
        &["check", "--sack", "--property", "I5"][..],
        &[
            "check",
            "--profile",
            "linux-6.15",
            "--no-sack",
            "--property",
            "I1",
        ][..],
    ] {
        let (code0, full) = json(&[base, &["--threads", "2"][..]].concat());
        for t in ["1", "2"] {
            let (code, r) = json(&[base, &["--threads", t, "--max-memory", "100"][..]].concat());
            assert_eq!(code, code0, "{base:?} {t} threads");
            assert_eq!(r["stop_reason"], "Complete");
            for k in ["unique_states", "transitions", "max_depth", "result"] {
                assert_eq!(r[k], full[k], "{base:?} {t} threads: {k}");
            }
            assert_eq!(r["properties"], full["properties"], "{base:?} {t} threads");
            if base.contains(&"--sack") {
                assert!(
                    r["spill"]["bytes_written"].as_u64().unwrap() > 0,
                    "{}",
                    r["spill"]
                );
                assert!(
                    r["spill"]["dir"].as_str().unwrap().contains("trc-spill-"),
                    "{}",
                    r["spill"]
                );
                assert!(r["peak_memory_bytes"].as_u64().unwrap() <= 100 << 20);
            }
            assert!(r["spill"]["error"].is_null(), "{}", r["spill"]);
        }
    }
    let (code, text, _) = trc!(&["check", "--sack", "--property", "I5", "--max-memory", "100"]);
    assert_eq!(code, 0);
    assert!(
        text.contains("frontier spilled to a temporary file in "),
        "{text}"
    );
    let (code, _, err) = trc!(&["check", "--no-spill"]);
    assert_eq!(code, 2, "--no-spill needs --max-memory: {err}");
}
