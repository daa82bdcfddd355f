//! `--shard I/N` and `trc merge`: for N = 1..4 the merged JSON of the N shards is the one run's
//! JSON apart from timings (`trc check`, `trc matrix`; `trc diff` on the kernel, skipped
//! without root and /dev/net/tun), and the merge refuses incomplete or mixed shard sets.

use serde_json::Value;
use std::path::PathBuf;
use trc_testkit::trc;

fn tmpdir(name: &str) -> PathBuf {
    trc_testkit::fresh_dir(
        std::env::temp_dir().join(format!("trc-shard-test-{}-{name}", std::process::id())),
    )
}

/// Removes the timing fields (`seconds`, `peak_memory_bytes`) everywhere in `v`.
fn strip_timings(v: &mut Value) {
    trc_testkit::without_keys(v, &["seconds", "peak_memory_bytes"]);
}

/// A baseline accepting only F1 (the repository's accepts F1, F3-F7, F9-F11): the tests need unaccepted
/// signatures on the SACK half, whatever the repository's triage has accepted since.
fn f1_only_baseline(dir: &std::path::Path) -> String {
    let p = dir.join("f1-baseline.toml");
    std::fs::write(&p, "[[accepted]]\nsignature = \"I1:tcp_try_undo_loss:Loss:ts-echo\"\nfinding = \"F1\"\nreason = \"test baseline\"\n").unwrap();
    p.display().to_string()
}

/// Runs `args --shard i/n` for i in 1..=n into files, merges them; (merge exit code, merged JSON,
/// shard exit codes).
fn shard_and_merge(dir: &std::path::Path, args: &[&str], n: usize) -> (i32, Value, Vec<i32>) {
    let mut files = Vec::new();
    let mut codes = Vec::new();
    for i in 1..=n {
        let spec = format!("{i}/{n}");
        let mut a = args.to_vec();
        a.extend(["--shard", &spec]);
        let (code, out, err) = trc!(&a);
        assert!(
            code == 0 || code == 1,
            "{args:?} --shard {spec}: exit {code}: {err}"
        );
        let f = dir.join(format!("{}-of-{n}.json", i));
        std::fs::write(&f, out).unwrap();
        files.push(f.display().to_string());
        codes.push(code);
    }
    // Any order of the files merges the same.
    files.reverse();
    let mut m = vec!["merge", "--json"];
    m.extend(files.iter().map(|s| s.as_str()));
    let (code, out, err) = trc!(&m);
    let v: Value = serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("merge output not JSON ({e}): {out}{err}"));
    (code, v, codes)
}

#[test]
fn check_shards_merge_to_the_single_run() {
    let dir = tmpdir("check");
    // The seed bug's profile, both SACK modes: I1 violated on the SACK half with F1 accepted and
    // new signatures beside it, so the merge has to pick the shortest across units.
    let b = f1_only_baseline(&dir);
    let args = [
        "check",
        "--profile",
        "linux-6.15",
        "--segments",
        "5",
        "--baseline",
        &b,
    ];
    let mut single_args = args.to_vec();
    single_args.push("--json");
    let (code, out, err) = trc!(&single_args);
    assert_eq!(code, 1, "{err}");
    let mut single: Value = serde_json::from_str(&out).unwrap();
    assert!(single["properties"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["verdict"] == "Violated"));
    strip_timings(&mut single);
    for n in 1..=4 {
        let (mcode, mut merged, codes) = shard_and_merge(&dir, &args, n);
        strip_timings(&mut merged);
        assert_eq!(merged, single, "N = {n}");
        assert_eq!(mcode, code, "N = {n}");
        // The shard holding the SACK half fails on its own (new signatures beside F1).
        assert!(codes.contains(&1), "N = {n}: {codes:?}");
    }
    // The human report of the merge is the single run's (timings aside).
    let files: Vec<String> = (1..=2)
        .map(|i| dir.join(format!("{i}-of-2.json")).display().to_string())
        .collect();
    let _ = shard_and_merge(&dir, &args, 2);
    let (_, human, _) = trc!(&["merge", &files[0], &files[1]]);
    let (_, single_human, _) = trc!(&args);
    let no_timing = |s: &str| {
        s.lines()
            .filter(|l| !l.starts_with("explored "))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(no_timing(&human), no_timing(&single_human));
    assert!(human.contains("explored ") && human.contains("VIOLATED"));
}

#[test]
fn check_shards_over_bounds_files_and_property_groups() {
    let dir = tmpdir("groups");
    let c1 = dir.join("small.toml");
    let c2 = dir.join("nosack.toml");
    std::fs::write(&c1, "segments = 4\n").unwrap();
    std::fs::write(&c2, "segments = 5\nsack = \"no-sack\"\n").unwrap();
    let (c1, c2) = (c1.display().to_string(), c2.display().to_string());
    // Two bounds files: the one run prints {"result", "runs": [..]}; units are 2 + 1.
    let b = f1_only_baseline(&dir);
    let args = [
        "check",
        "--profile",
        "linux-6.15",
        "--config",
        &c1,
        "--config",
        &c2,
        "--baseline",
        &b,
    ];
    let mut sa = args.to_vec();
    sa.push("--json");
    let (code, out, err) = trc!(&sa);
    assert_eq!(code, 1, "{err}");
    let mut single: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(single["runs"].as_array().unwrap().len(), 2);
    assert_eq!(single["result"], "violated");
    strip_timings(&mut single);
    for n in 1..=4 {
        let (mcode, mut merged, _) = shard_and_merge(&dir, &args, n);
        strip_timings(&mut merged);
        assert_eq!(merged, single, "N = {n}");
        assert_eq!(mcode, code);
    }
    // --reduce splits by property group (the ghost fields read): each group is explored with
    // its own, stronger reduction, so the statistics are the sum of the work done, but the
    // verdicts and counterexample lengths are the one run's (the reductions are exact).
    let args = [
        "check",
        "--profile",
        "linux-6.15",
        "--segments",
        "4",
        "--reduce",
        "--property",
        "I1",
        "--property",
        "I2",
        "--property",
        "I3",
        "--property",
        "I1p",
    ];
    let mut sa = args.to_vec();
    sa.push("--json");
    let (code, out, _) = trc!(&sa);
    let single: Value = serde_json::from_str(&out).unwrap();
    let verdicts = |v: &Value| -> Vec<(String, String, usize)> {
        v["properties"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    p["id"].as_str().unwrap().to_string(),
                    p["verdict"].as_str().unwrap().to_string(),
                    p["counterexample"].as_array().map_or(0, |c| c.len()),
                )
            })
            .collect()
    };
    let (_, out, _) = trc!(&[
        "check",
        "--profile",
        "linux-6.15",
        "--segments",
        "4",
        "--reduce",
        "--property",
        "I1",
        "--property",
        "I2",
        "--property",
        "I3",
        "--property",
        "I1p",
        "--shard",
        "1/1",
    ]);
    let shard: Value = serde_json::from_str(&out).unwrap();
    // 2 SACK modes × 4 groups (I1, I2, I3 alone: no ghost; I1p).
    assert_eq!(shard["trc_shard"]["units"], 8, "{}", shard["args"]["units"]);
    for n in 1..=3 {
        let (mcode, merged, _) = shard_and_merge(&dir, &args, n);
        assert_eq!(verdicts(&merged), verdicts(&single), "N = {n}");
        assert_eq!(mcode, code);
    }
}

#[test]
fn matrix_shards_merge_to_the_single_run() {
    let dir = tmpdir("matrix");
    let args = [
        "matrix",
        "--segments",
        "4",
        "--profile",
        "linux-6.15",
        "--profile",
        "linux-6.6",
        "--profile",
        "linux-3.14",
    ];
    let mut sa = args.to_vec();
    sa.push("--json");
    let (code, out, _) = trc!(&sa);
    assert_eq!(code, 0);
    let mut single: Value = serde_json::from_str(&out).unwrap();
    strip_timings(&mut single);
    assert!(single
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["properties"]["I1"]["violated"] == true));
    for n in 1..=4 {
        let (mcode, mut merged, _) = shard_and_merge(&dir, &args, n);
        strip_timings(&mut merged);
        assert_eq!(merged, single, "N = {n}");
        assert_eq!(mcode, 0);
    }
}

#[test]
fn merge_refuses_missing_duplicate_and_mixed_shards() {
    let dir = tmpdir("bad");
    let w = |name: &str, args: &[&str]| {
        let (_, out, _) = trc!(args);
        let p = dir.join(name);
        std::fs::write(&p, out).unwrap();
        p.display().to_string()
    };
    let a1 = w(
        "a1.json",
        &[
            "matrix",
            "--segments",
            "3",
            "--profile",
            "linux-6.18",
            "--shard",
            "1/2",
        ],
    );
    let a2 = w(
        "a2.json",
        &[
            "matrix",
            "--segments",
            "3",
            "--profile",
            "linux-6.18",
            "--shard",
            "2/2",
        ],
    );
    let b2 = w(
        "b2.json",
        &[
            "matrix",
            "--segments",
            "4",
            "--profile",
            "linux-6.18",
            "--shard",
            "2/2",
        ],
    );
    let c1 = w("c1.json", &["check", "--segments", "3", "--shard", "1/2"]);
    let (code, _, err) = trc!(&["merge", &a1]);
    assert_eq!(code, 2);
    assert!(err.contains("missing shard 2/2"), "{err}");
    let (code, _, err) = trc!(&["merge", &a1, &a1, &a2]);
    assert_eq!(code, 2);
    assert!(err.contains("given twice"), "{err}");
    let (code, _, err) = trc!(&["merge", &a1, &b2]);
    assert_eq!(code, 2);
    assert!(err.contains("different runs"), "{err}");
    let (code, _, err) = trc!(&["merge", &a1, &c1]);
    assert_eq!(code, 2);
    assert!(err.contains("trc check"), "{err}");
    let (code, _, _) = trc!(&["merge", &a1, &a2]);
    assert_eq!(code, 0);
    for bad in ["0/2", "3/2", "1/0", "x"] {
        let (code, _, err) = trc!(&["matrix", "--shard", bad]);
        assert_eq!(code, 2, "{bad}: {err}");
    }
    let (code, _, err) = trc!(&["check", "--fail-fast", "--shard", "1/2"]);
    assert_eq!(code, 2);
    assert!(err.contains("--fail-fast"), "{err}");
    let notjson = dir.join("n.json");
    std::fs::write(&notjson, "{\n  oops\n").unwrap();
    let (code, _, err) = trc!(&["merge", &notjson.display().to_string()]);
    assert_eq!(code, 2);
    assert!(err.contains("n.json:2:"), "{err}");
}

#[test]
fn diff_shards_merge_to_the_single_run() {
    if let Some(why) = trc_kernel::skip_reason() {
        if std::env::var_os("CI").is_some() {
            panic!("CI is set but the kernel cannot run: {why}");
        }
        eprintln!("SKIPPED diff_shards_merge_to_the_single_run: {why} (trc diff runs scenarios on the kernel)");
        return;
    }
    let dir = tmpdir("diff");
    let args = [
        "diff",
        "--scenarios",
        "3",
        "--seed",
        "7",
        "--max-steps",
        "8",
        "--quiet",
    ];
    let mut sa = args.to_vec();
    sa.push("--json");
    let (code, out, err) = trc!(&sa);
    assert!(code == 0 || code == 1, "{err}");
    let single: Value = serde_json::from_str(&out).unwrap();
    // The kernel's timing may make a scenario flaky in one run and not the other: compare the
    // scenarios exactly, the verdicts where neither run was flaky.
    let view = |v: &Value| -> (Vec<Value>, Vec<String>) {
        let r = v["results"].as_array().unwrap();
        (
            r.iter().map(|x| x["scenario"].clone()).collect(),
            r.iter()
                .map(|x| x["verdict"].as_str().unwrap().to_string())
                .collect(),
        )
    };
    let (sc, sv) = view(&single);
    assert_eq!(sc.len(), 3);
    for n in 1..=3 {
        let (mcode, merged, _) = shard_and_merge(&dir, &args, n);
        let (mc, mv) = view(&merged);
        assert_eq!(mc, sc, "N = {n}");
        assert_eq!(merged["scenarios"], 3);
        assert_eq!(merged["seed"], 7);
        let flaky = sv.iter().chain(&mv).any(|v| v == "flaky");
        if !flaky {
            assert_eq!(mv, sv, "N = {n}");
            assert_eq!(merged["fields"], single["fields"], "N = {n}");
            assert_eq!(mcode, code, "N = {n}");
        }
    }
}

/// Verdicts by signature survive sharding: a profile file (0ec986ed7bab reverted on 6.18)
/// compared with its base, I1 only. Each shard also explores the base for its own units; the
/// merge judges every signature against the union of the base's signatures, so it is the one
/// run's JSON — signatures with their counts, shortest lengths and statuses (new, accepted,
/// also on the base), the counterexample of the shortest new one — and its exit code and text.
#[test]
fn check_shards_keep_signature_verdicts() {
    let dir = tmpdir("signatures");
    let p = dir.join("tlp.toml");
    std::fs::write(&p, "base = \"linux-6.18\"\ninit_undo_tlp = \"ignore\"\n").unwrap();
    let p = p.display().to_string();
    let b = f1_only_baseline(&dir);
    let args = [
        "check",
        "--profile",
        &p,
        "--property",
        "I1",
        "--segments",
        "4",
        "--baseline",
        &b,
    ];
    let mut sa = args.to_vec();
    sa.push("--json");
    let (code, out, err) = trc!(&sa);
    assert_eq!(code, 1, "{err}");
    let mut single: Value = serde_json::from_str(&out).unwrap();
    strip_timings(&mut single);
    let sigs = single["properties"][0]["signatures"].as_array().unwrap();
    for status in ["new", "accepted", "also-on-base"] {
        assert!(
            sigs.iter().any(|s| s["status"] == status),
            "no {status} signature: {out}"
        );
    }
    assert_eq!(single["against"]["profile"], "linux-6.18");
    for n in 1..=3 {
        let (mcode, mut merged, _) = shard_and_merge(&dir, &args, n);
        strip_timings(&mut merged);
        assert_eq!(merged, single, "N = {n}");
        assert_eq!(mcode, code, "N = {n}");
    }
    let files: Vec<String> = (1..=2)
        .map(|i| dir.join(format!("{i}-of-2.json")).display().to_string())
        .collect();
    let _ = shard_and_merge(&dir, &args, 2);
    let (_, human, _) = trc!(&["merge", &files[0], &files[1]]);
    let (_, single_human, _) = trc!(&args);
    let no_timing = |s: &str| {
        s.lines()
            .filter(|l| !l.starts_with("explored "))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(no_timing(&human), no_timing(&single_human));
    assert!(
        human.contains("compared with linux-6.18")
            && human.contains(": NEW")
            && human.contains("accepted (F1, baseline); also on linux-6.18"),
        "{human}"
    );
    // Signatures on both halves: on 3.14, I1's ts-echo+dupack signature (da34ac7626b5's undo
    // on a dupack) occurs with and without SACK (its count is the sum, its shortest the non-SACK one) and the F-RTO one only without
    // SACK, listed between SACK signatures by its length; no unit alone has that list.
    let args = [
        "check",
        "--profile",
        "linux-3.14",
        "--property",
        "I1",
        "--segments",
        "4",
    ];
    let mut sa = args.to_vec();
    sa.push("--json");
    let (code, out, _) = trc!(&sa);
    let mut single: Value = serde_json::from_str(&out).unwrap();
    strip_timings(&mut single);
    let count = |mode: &str| -> u64 {
        let (_, o, _) = trc!(&[
            "check",
            "--profile",
            "linux-3.14",
            "--property",
            "I1",
            "--segments",
            "4",
            mode,
            "--json",
        ]);
        let h: Value = serde_json::from_str(&o).unwrap();
        h["properties"][0]["signatures"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["signature"] == "I1:tcp_try_undo_loss:Loss:ts-echo+dupack")
            .map_or(0, |s| s["states"].as_u64().unwrap())
    };
    let ts = single["properties"][0]["signatures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["signature"] == "I1:tcp_try_undo_loss:Loss:ts-echo+dupack")
        .unwrap()["states"]
        .as_u64()
        .unwrap();
    let (a, b) = (count("--sack"), count("--no-sack"));
    assert!(a > 0 && b > 0 && ts == a + b, "{ts} != {a} + {b}");
    for n in 1..=3 {
        let (mcode, mut merged, _) = shard_and_merge(&dir, &args, n);
        strip_timings(&mut merged);
        assert_eq!(merged, single, "N = {n}");
        assert_eq!(mcode, code, "N = {n}");
    }
    // --coverage is not sharded: an input error, not a partial table.
    let (code, _, err) = trc!(&["check", "--segments", "3", "--coverage", "--shard", "1/2"]);
    assert_eq!(code, 2, "{err}");
}
