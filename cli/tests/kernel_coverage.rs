//! `trc kernel check --suite coverage`: its input errors (no kernel needed), and a small coverage
//! suite on the running kernel (root + tun; skipped, saying why, without them). Run the kernel
//! part under `flock /tmp/trc-kernel.lock`.

use std::path::Path;
use trc_testkit::trc;

#[test]
fn coverage_input_errors() {
    // Bounds are the coverage suite's only.
    let (c, _, e) = trc!(&["kernel", "check", "--suite", "corpus", "--losses", "2"]);
    assert_eq!(c, 2, "{e}");
    assert!(e.contains("apply only to --suite coverage"), "{e}");
    // Impossible bounds: the flag is named.
    let (c, _, e) = trc!(&["kernel", "check", "--suite", "coverage", "--segments", "0"]);
    assert_eq!(c, 2, "{e}");
    assert!(e.contains("--segments"), "{e}");
    // A bad config file: its line.
    let bad = Path::new(env!("CARGO_TARGET_TMPDIR")).join("kcov-bad.toml");
    std::fs::write(&bad, "segments = 4\nlosses = 1\n").unwrap();
    let (c, _, e) = trc!(&[
        "kernel",
        "check",
        "--suite",
        "coverage",
        "--config",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(c, 2, "{e}");
    assert!(e.contains("kcov-bad.toml:2"), "{e}");
}

/// Non-SACK connections of 3 segments, initcwnd 3: a few scenarios, a few seconds.
#[test]
fn small_coverage_suite_on_the_running_kernel() {
    if let Some(why) = trc_kernel::skip_reason() {
        eprintln!("SKIPPED small_coverage_suite_on_the_running_kernel: {why}");
        return;
    }
    let bounds = [
        "--segments",
        "3",
        "--initcwnd",
        "3",
        "--no-sack",
        "--tsq",
        "1",
    ];
    let mut args = vec!["kernel", "check", "--suite", "coverage", "--json"];
    args.extend(bounds);
    let (c, out, err) = trc!(&args);
    // Every monitored property decided one way or the other, every scenario run: 0 or 1, never 3.
    assert!(c == 0 || c == 1, "exit {c}\n{out}\n{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let plan = &v["coverage"]["plan"];
    let kernel = &v["coverage"]["kernel"];
    let cases = v["cases"].as_array().unwrap();
    assert_eq!(v["suite"], "coverage");
    assert_eq!(v["not_run"], 0, "{out}");
    assert!(!cases.is_empty());
    assert_eq!(cases.len(), plan["scenarios"].as_array().unwrap().len());
    assert!(
        cases.iter().all(
            |c| c["kernel_ran"] == true && c["name"].as_str().unwrap().starts_with("coverage/")
        ),
        "{out}"
    );
    // The figures agree with each other: every reachable branch is covered or model-only, each
    // row is accounted for, and every covered branch had a scenario that ran.
    let n = |x: &serde_json::Value| x.as_u64().unwrap();
    let len = |x: &serde_json::Value| x.as_array().unwrap().len() as u64;
    assert_eq!(
        n(&plan["covered"]) + len(&plan["model_only"]),
        n(&plan["reachable"]),
        "{plan}"
    );
    assert_eq!(n(&plan["covered"]), n(&plan["kernel_runnable"]), "{plan}");
    assert_eq!(len(&plan["uncovered"]), len(&plan["model_only"]), "{plan}");
    assert_eq!(len(&plan["rows"]), n(&plan["branches"]));
    assert_eq!(n(&kernel["ran"]), n(&plan["covered"]), "{kernel}");
    assert!(n(&kernel["followed"]) <= n(&kernel["ran"]));
    for row in plan["rows"].as_array().unwrap() {
        let covered = !row["scenarios"].as_array().unwrap().is_empty();
        assert_eq!(covered, row["reach"] == "kernel-runnable", "{row}");
    }
    // The text report carries the same coverage section.
    let mut args = vec!["kernel", "check", "--suite", "coverage"];
    args.extend(bounds);
    let (c2, text, err) = trc!(&args);
    assert!(c2 == 0 || c2 == 1, "exit {c2}\n{text}\n{err}");
    assert!(
        text.contains(&format!(
            "{} of {} branches reachable at these bounds",
            n(&plan["reachable"]),
            n(&plan["branches"])
        )),
        "{text}"
    );
    assert!(
        text.contains("reachable only through model-only paths"),
        "{text}"
    );

    // Two shards merged: the single run's scenarios and coverage figures.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("kcov-shards");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut files = Vec::new();
    for i in 1..=2 {
        let sh = format!("{i}/2");
        let mut args = vec!["kernel", "check", "--suite", "coverage", "--shard", &sh];
        args.extend(bounds);
        let (c, out, err) = trc!(&args);
        assert!(c == 0 || c == 1, "shard {sh}: exit {c}\n{err}");
        let f = dir.join(format!("s{i}.json"));
        std::fs::write(&f, out).unwrap();
        files.push(f.display().to_string());
    }
    let (c, out, err) = trc!(&["merge", "--json", &files[0], &files[1]]);
    assert!(c == 0 || c == 1, "merge: exit {c}\n{err}");
    let m: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(
        m["coverage"]["plan"], *plan,
        "the shards' plan is the single run's"
    );
    let names = |v: &serde_json::Value| {
        v["cases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&m), names(&v));
    assert_eq!(
        n(&m["coverage"]["kernel"]["ran"]),
        n(&plan["covered"]),
        "{}",
        m["coverage"]
    );
}
