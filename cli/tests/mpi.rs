//! `trc check --mpi` under `mpirun -np N` on this machine: the report is the
//! one-process report (apart from timings, memory figures and the `distributed` figures), with
//! the same exit code, on a check with counterexamples (N = 1..4), whose `--out` files rank 0
//! alone writes, equal to the one process's, and on `--segments 8 --sack` (N = 3, 4). Needs a
//! trc built with `--features mpi` and Open MPI's `mpirun` (CI: `cargo test --release -p trc
//! --features mpi --test mpi`); without them the test says so and skips. Without the feature,
//! `--mpi` is "unsupported" (exit 3).

use serde_json::Value;
use std::path::Path;
use std::process::Command;
use trc_testkit::{skip, trc, Ran};

/// `mpirun -np n trc args`: as root Open MPI needs `--allow-run-as-root`; more ranks than cores
/// need `--oversubscribe`.
fn mpirun(n: usize, args: &[&str]) -> Ran {
    let n = n.to_string();
    let mut full = vec![
        "--allow-run-as-root",
        "--oversubscribe",
        "-np",
        &n,
        env!("CARGO_BIN_EXE_trc"),
    ];
    full.extend_from_slice(args);
    trc_testkit::run_in_workspace("mpirun", &full, &[])
}

/// Why the MPI test cannot run here, if it cannot.
fn skip_reason() -> Option<String> {
    let (code, _, err) = trc!(&["check", "--mpi", "--segments", "1", "--json"]);
    if code == 3 && err.contains("unsupported") {
        return Some("this trc was built without --features mpi (cargo test --release -p trc --features mpi --test mpi)".into());
    }
    match Command::new("mpirun").arg("--version").output() {
        Ok(o) if o.status.success() => None,
        _ => Some("mpirun not found (Debian: openmpi-bin libopenmpi-dev)".into()),
    }
}

/// The JSON without the fields that differ between runs and engines.
fn strip(v: &mut Value) {
    trc_testkit::without_keys(v, &["seconds", "peak_memory_bytes", "distributed"]);
}

/// Every file of `dir` (name → bytes).
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn mpi_is_unsupported_without_the_feature_and_refuses_what_it_cannot_do() {
    let (code, out, err) = trc!(&["check", "--mpi", "--segments", "2", "--json"]);
    if err.contains("unsupported") {
        assert_eq!(code, 3, "{err}");
        assert!(err.contains("--features mpi"), "{err}");
    } else {
        // Built with MPI: a singleton run (no mpirun) is one rank.
        assert_eq!(code, 0, "{err}");
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["distributed"]["ranks"], 1, "{out}");
    }
    for flag in [
        &["--max-memory", "100"][..],
        &["--coverage"],
        &["--shard", "1/2"],
    ] {
        let mut a = vec!["check", "--mpi"];
        a.extend_from_slice(flag);
        let (code, _, err) = trc!(&a);
        assert_eq!(code, 2, "{a:?}: {err}");
        assert!(err.contains(flag[0]), "{a:?}: {err}");
    }
}

/// `args` under `mpirun -np 1..=4` (only `nps`) gives `one`'s report and exit code; with
/// `--out`, rank 0's files equal the one process's. Returns each run's `distributed` object.
fn same_as_one_process(args: &[&str], expect: i32, nps: &[usize], out: bool) -> Vec<Value> {
    let dir = trc_testkit::scratch!(format!("mpi-{}", args.len()));
    let with_out = |a: &mut Vec<String>, d: &Path| {
        if out {
            a.extend(["--out".to_string(), d.display().to_string()]);
        }
    };
    let mut a1: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    with_out(&mut a1, &dir.join("one"));
    let a1: Vec<&str> = a1.iter().map(String::as_str).collect();
    let (code, json, err) = trc!(&a1);
    assert_eq!(code, expect, "{a1:?}: {err}");
    let mut dists = Vec::new();
    let mut one: Value = serde_json::from_str(&json).unwrap();
    assert!(one["distributed"].is_null(), "{json}");
    strip(&mut one);
    for &n in nps {
        let mut a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        a.insert(1, "--mpi".into());
        let d = dir.join(format!("np{n}"));
        with_out(&mut a, &d);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let (code, json, err) = mpirun(n, &a);
        assert_eq!(code, expect, "-np {n} {a:?}: {err}");
        let mut v: Value = serde_json::from_str(&json)
            .unwrap_or_else(|e| panic!("-np {n}: {e}: one report (rank 0's) expected, got {json}"));
        let d_rep = v["distributed"].clone();
        assert_eq!(d_rep["ranks"], n as u64, "{json}");
        assert_eq!(d_rep["rank_peak_rss_bytes"].as_array().unwrap().len(), n);
        assert!(!d_rep["levels"].as_array().unwrap().is_empty(), "{json}");
        strip(&mut v);
        assert_eq!(v, one, "-np {n} {a:?}: not the one-process report");
        if out {
            assert_eq!(files(&d), files(&dir.join("one")), "-np {n}: --out files");
        }
        dists.push(d_rep);
    }
    let _ = std::fs::remove_dir_all(&dir);
    dists
}

#[test]
fn mpirun_gives_the_one_process_report_for_1_to_4_ranks() {
    if let Some(why) = skip_reason() {
        skip("mpirun_gives_the_one_process_report_for_1_to_4_ranks", &why);
        return;
    }
    // Counterexamples (I1 on the seed profile without SACK; two bounds files would be two
    // explorations): exit 1, the same shortest paths, rank 0's --out files.
    same_as_one_process(
        &[
            "check",
            "--profile",
            "linux-6.15",
            "--no-sack",
            "--property",
            "I1",
            "--json",
        ],
        1,
        &[1, 2, 3, 4],
        true,
    );
    // A larger state space that holds, on 3 ranks (uneven blocks) and 4 (CI time: each run
    // explores it once more).
    same_as_one_process(
        &["check", "--segments", "8", "--sack", "--json"],
        0,
        &[3, 4],
        false,
    );
    // At 9 segments every state owns heap memory (its segment vector outgrows its inline room):
    // states cross ranks and wait in a rank's frontier as their compact serde form, not their
    // bytes. Ten levels (527,186 states) on 2 and 3 ranks. A moved state takes about 250 bytes
    // (its 768 in memory, about 2,400 as JSON).
    let dists = same_as_one_process(
        &[
            "check",
            "--segments",
            "9",
            "--sack",
            "--max-depth",
            "10",
            "--json",
        ],
        0,
        &[2, 3],
        false,
    );
    for d in dists {
        let levels = d["levels"].as_array().unwrap();
        let total = |k: &str| levels.iter().map(|l| l[k].as_u64().unwrap()).sum::<u64>();
        let (moved, bytes) = (total("moved_states"), total("move_bytes"));
        assert!(moved > 1000, "{d}");
        assert!(
            bytes < moved * 400,
            "{bytes} bytes for {moved} moved states: {d}"
        );
    }
}

#[test]
fn every_rank_stops_when_rank_0_cannot_write_out() {
    if let Some(why) = skip_reason() {
        skip("every_rank_stops_when_rank_0_cannot_write_out", &why);
        return;
    }
    // `--out` names a file: rank 0 refuses it before exploring, and the other ranks must stop
    // too (not wait for rank 0 in the first collective).
    let dir = trc_testkit::scratch!("mpi-not-a-dir");
    let file = dir.join("file");
    std::fs::write(&file, "x").unwrap();
    let out = file.display().to_string();
    let (code, json, err) = mpirun(3, &["check", "--mpi", "--segments", "2", "--out", &out]);
    assert_eq!(code, 2, "{json}\n{err}");
    assert_eq!(
        err.matches("not a directory").count(),
        1,
        "rank 0 alone says why: {err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
