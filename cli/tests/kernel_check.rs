//! `trc kernel check`: input errors and skips (no kernel needed), a small suite on the running
//! kernel (root + tun: findings F1 and F3 must show I1 violated from the kernel's behaviour, the
//! other monitored properties hold), a few random walks, and the same small suite in a VM on
//! Debian's 7.2 when qemu and the kernel are there (`$TRC_VM_KERNEL`, or `trc kernel fetch
//! debian:sid` in the cache). Each skips, saying why, when what it needs is missing.

use std::path::{Path, PathBuf};
use std::process::Command;
use trc_testkit::trc;

/// The host runs and the VM run one after the other: a VM's CPU load makes host packets late.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn scratch(name: &str) -> PathBuf {
    trc_testkit::scratch!(name)
}

/// A corpus of three scripts in the repository's layout: F1, F3 and a plain fast retransmit.
fn small_corpus(name: &str) -> PathBuf {
    let d = scratch(name);
    for f in [
        "common/defaults.sh",
        "findings/i1-eifel-undo-after-real-loss.pkt",
        "regressions/diff-nested-dsack-counted-twice.pkt",
        "kernel/fr-sack.pkt",
    ] {
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

fn property<'a>(v: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    v["properties"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == id)
        .unwrap_or_else(|| panic!("no {id} in {v}"))
}

/// What the small corpus must give on a kernel with F1 and F3 (6.18, 7.2 and 6.12 all have them):
/// I1 violated in both findings' scripts, which the baseline accepts (exit 0).
fn assert_small_suite(code: i32, out: &str, err: &str) {
    assert_eq!(
        code, 0,
        "I1 violated only by accepted findings: exit 0\n{out}\n{err}"
    );
    let v: serde_json::Value = serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(v["cases"].as_array().unwrap().len(), 3);
    assert_eq!(v["not_run"], 0, "{out}");
    let i1 = property(&v, "I1");
    assert_eq!(i1["verdict"], "accepted", "{out}");
    assert!(i1["violated"].as_array().unwrap().is_empty(), "{out}");
    let accepted: Vec<(&str, &str)> = i1["accepted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            (
                x["scenario"].as_str().unwrap(),
                x["finding"].as_str().unwrap(),
            )
        })
        .collect();
    assert!(
        accepted.contains(&("findings/i1-eifel-undo-after-real-loss.pkt", "F1")),
        "F1: {accepted:?}\n{out}"
    );
    assert!(
        accepted.contains(&("regressions/diff-nested-dsack-counted-twice.pkt", "F3")),
        "F3: {accepted:?}\n{out}"
    );
    assert!(
        !accepted.iter().any(|a| a.0 == "kernel/fr-sack.pkt"),
        "{out}"
    );
    for id in ["I2", "I3", "I11", "I13", "I14"] {
        assert_eq!(property(&v, id)["verdict"], "holds", "{id}\n{out}");
    }
    // F1's verdict comes from the script's own timestamps (hand-written), F3's from its header.
    let case = |n: &str| {
        v["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == n)
            .unwrap()
            .clone()
    };
    assert_eq!(
        case("findings/i1-eifel-undo-after-real-loss.pkt")["ghost"],
        "inferred"
    );
    assert_eq!(
        case("regressions/diff-nested-dsack-counted-twice.pkt")["ghost"],
        "declared"
    );
}

#[test]
fn input_errors_and_skips() {
    let (c, _, e) = trc!(&["kernel", "check", "--suite", "bogus"]);
    assert_eq!(c, 2, "{e}");
    assert!(
        e.contains("expected regressions, corpus, random:N[,SEED], coverage or bulk"),
        "{e}"
    );
    let (c, _, e) = trc!(&["kernel", "check", "--suite", "random:0"]);
    assert_eq!(c, 2, "{e}");
    let (c, _, e) = trc!(&["kernel", "check", "--properties", "I1,I5"]);
    assert_eq!(c, 2, "{e}");
    assert!(e.contains("no kernel monitor"), "{e}");
    let (c, _, e) = trc!(&["kernel", "check", "--properties", "I99"]);
    assert_eq!(c, 2, "{e}");
    let (c, _, e) = trc!(&["kernel", "check", "--profile", "no-such-profile"]);
    assert_eq!(c, 2, "{e}");
    // A kernel image that does not exist: skipped (4), like `kernel run --kernel`.
    let (c, _, e) = trc!(&["kernel", "check", "--kernel", "/nonexistent/vmlinuz"]);
    assert_eq!(c, 4, "{e}");
    assert!(e.contains("no such kernel image"), "{e}");
}

#[test]
fn small_suite_on_the_running_kernel() {
    if let Some(why) = trc_kernel::skip_reason() {
        eprintln!("SKIPPED small_suite_on_the_running_kernel: {why}");
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let corpus = small_corpus("kcheck-host");
    let t = std::time::Instant::now();
    let (c, out, err) = trc!(&[
        "kernel",
        "check",
        "--suite",
        "corpus",
        "--corpus",
        corpus.to_str().unwrap(),
        "--json",
    ]);
    eprintln!(
        "small suite on the running kernel: {:.1} s",
        t.elapsed().as_secs_f64()
    );
    assert_small_suite(c, &out, &err);
    // Without a baseline the same violations fail the check.
    let empty = corpus.join("empty-baseline.toml");
    std::fs::write(&empty, "").unwrap();
    let (c, out, err) = trc!(&[
        "kernel",
        "check",
        "--suite",
        "corpus",
        "--corpus",
        corpus.to_str().unwrap(),
        "--json",
        "--baseline",
        empty.to_str().unwrap(),
    ]);
    assert_eq!(c, 1, "{out}\n{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let violated: Vec<&str> = property(&v, "I1")["violated"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    assert_eq!(
        violated,
        [
            "findings/i1-eifel-undo-after-real-loss.pkt",
            "regressions/diff-nested-dsack-counted-twice.pkt"
        ],
        "{out}"
    );
    // Random walks: every one runs and is judged by every monitor.
    let (c, out, err) = trc!(&["kernel", "check", "--suite", "random:3,7", "--json"]);
    assert!(matches!(c, 0 | 1 | 3), "{c}\n{out}\n{err}");
    let v: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    let cases = v["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 3);
    for cs in cases {
        assert_eq!(cs["kernel_ran"], true, "{cs}");
        assert_eq!(cs["ghost"], "declared", "{cs}");
        let mut judged: Vec<&str> = cs["properties"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        judged.sort_unstable();
        let monitors = [
            "I1", "I11", "I12", "I13", "I14", "I15b", "I15c", "I17", "I2", "I20", "I20e", "I3",
        ];
        assert_eq!(judged, monitors, "{cs}");
    }
}

fn vm_kernel() -> Result<String, String> {
    if let Ok(k) = std::env::var("TRC_VM_KERNEL") {
        return Ok(k);
    }
    let which = Command::new("sh")
        .args(["-c", "command -v qemu-system-x86_64"])
        .output()
        .map_err(|e| e.to_string())?;
    if !which.status.success() {
        return Err("no qemu-system-x86_64".into());
    }
    let cache = std::env::var_os("TRC_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("XDG_CACHE_HOME").map(|x| PathBuf::from(x).join("trc")))
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/trc")))
        .ok_or("no cache directory")?;
    if !cache.join("kernels/sid").exists() {
        return Err(format!(
            "no Debian sid kernel in {} (trc kernel fetch debian:sid)",
            cache.display()
        ));
    }
    Ok("debian:sid".into())
}

#[test]
fn small_suite_in_a_vm() {
    let k = match vm_kernel() {
        Ok(k) => k,
        Err(why) => {
            eprintln!("SKIPPED small_suite_in_a_vm: {why}");
            return;
        }
    };
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let corpus = small_corpus("kcheck-vm");
    let t = std::time::Instant::now();
    let (c, out, err) = trc!(&[
        "kernel",
        "check",
        "--kernel",
        &k,
        "--suite",
        "corpus",
        "--corpus",
        corpus.to_str().unwrap(),
        "--json",
    ]);
    eprintln!("small suite in a VM: {:.1} s", t.elapsed().as_secs_f64());
    if c == 4 {
        eprintln!("SKIPPED small_suite_in_a_vm: {err}");
        return;
    }
    assert_small_suite(c, &out, &err);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let kd = v["kernel"].as_str().unwrap();
    assert!(
        kd.contains("(VM, tcg-icount)") || kd.contains("(VM, kvm)"),
        "the accelerator is named: {kd}"
    );
}

/// Whether a scenario of a kernel check's report failed a line by a timing error (a packet 4 ms
/// late on a loaded machine: two runs of one scenario can differ there).
fn timing_flake(v: &serde_json::Value) -> bool {
    v["cases"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["kernel"].as_str().unwrap_or("").contains("timing error"))
}

/// Two reports without what a timing flake changes: the kernel verdict line and the first
/// divergence of a scenario that failed a line by a timing error in either run (its property
/// verdicts stay).
fn untimed(x: &serde_json::Value, y: &serde_json::Value) -> (serde_json::Value, serde_json::Value) {
    let (mut x, mut y) = (x.clone(), y.clone());
    let flaked = |c: &serde_json::Value| {
        c["kernel"].as_str().unwrap_or("").contains("timing error")
            || c["divergence"]["timing"] == true
    };
    let n = x["cases"]
        .as_array()
        .unwrap()
        .len()
        .min(y["cases"].as_array().unwrap().len());
    for i in 0..n {
        if flaked(&x["cases"][i]) || flaked(&y["cases"][i]) {
            for v in [&mut x, &mut y] {
                v["cases"][i]["kernel"] = "(timing)".into();
                v["cases"][i]["divergence"] = serde_json::Value::Null;
            }
        }
    }
    (x, y)
}

/// `trc merge` refuses (exit 2) a missing shard, a shard twice, a shard of another command, of
/// another run (`foreign`), of another kernel. `a`, `b`: shards 2/2 and 1/2.
fn merge_refuses(dir: &Path, a: &str, b: &str, foreign: &str) {
    let (c, _, e) = trc!(&["merge", a]);
    assert_eq!(c, 2, "{e}");
    assert!(e.contains("missing shard 2/2"), "{e}");
    let (c, _, e) = trc!(&["merge", a, a, b]);
    assert_eq!(c, 2, "{e}");
    assert!(e.contains("given twice"), "{e}");
    let (_, matrix, _) = trc!(&[
        "matrix",
        "--segments",
        "3",
        "--profile",
        "linux-6.18",
        "--shard",
        "2/2",
    ]);
    let mf = dir.join("matrix-2-of-2.json");
    std::fs::write(&mf, matrix).unwrap();
    let (c, _, e) = trc!(&["merge", a, mf.to_str().unwrap()]);
    assert_eq!(c, 2, "{e}");
    assert!(
        e.contains("trc kernel check") && e.contains("trc matrix"),
        "{e}"
    );
    let (c, _, e) = trc!(&["merge", a, foreign]);
    assert_eq!(c, 2, "{e}");
    assert!(e.contains("different runs"), "{e}");
    // Shards from two kernels: the same split, but one shard's kernel is another's.
    let mut other: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(b).unwrap()).unwrap();
    other["report"]["kernel"] = "0.0.0-other (running kernel)".into();
    let of = dir.join("other-kernel.json");
    std::fs::write(&of, other.to_string()).unwrap();
    let (c, _, e) = trc!(&["merge", a, of.to_str().unwrap()]);
    assert_eq!(c, 2, "{e}");
    assert!(e.contains("on one kernel"), "{e}");
}

/// `--shard I/N` and `trc merge`: for N = 1..3 the small corpus's shards merge to the single
/// run's JSON, text (apart from the `total:` timing line) and exit code (a scenario that failed
/// a line by a timing error in one of the runs is compared without that line); the merge refuses a
/// missing, duplicated, mixed or foreign shard (exit 2).
#[test]
fn shards_merge_to_the_single_run() {
    if let Some(why) = trc_kernel::skip_reason() {
        eprintln!("SKIPPED shards_merge_to_the_single_run: {why}");
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let corpus = small_corpus("kcheck-shards");
    let dir = scratch("kcheck-shard-files");
    let base = [
        "kernel",
        "check",
        "--suite",
        "corpus",
        "--corpus",
        corpus.to_str().unwrap(),
    ];
    let with = |extra: &[&str]| -> Vec<String> {
        base.iter().chain(extra).map(|s| s.to_string()).collect()
    };
    let run = |a: &[String]| trc!(&a.iter().map(String::as_str).collect::<Vec<_>>());
    let (code, single, err) = run(&with(&["--json"]));
    assert_small_suite(code, &single, &err);
    let single: serde_json::Value = serde_json::from_str(&single).unwrap();
    let (_, single_text, _) = run(&with(&[]));
    let no_total = |s: &str| {
        s.lines()
            .filter(|l| !l.starts_with("total: "))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let shard_file = |i: usize, n: usize, extra: &[&str]| -> String {
        let spec = format!("{i}/{n}");
        let mut a = with(extra);
        a.extend(["--shard".to_string(), spec.clone()]);
        let (c, out, err) = run(&a);
        let v: serde_json::Value = serde_json::from_str(&out)
            .unwrap_or_else(|e| panic!("shard {spec}: {e}: {out}\n{err}"));
        assert_eq!(v["trc_shard"]["command"], "kernel-check");
        assert_eq!(v["trc_shard"]["units"], 3);
        // A shard's exit code is its own scenarios' verdict: never 1 (the findings are accepted by
        // the baseline, which the shard carries for the merge); 3 when a property none of its
        // scenarios decides (F3's alone leaves I11 undecided), always for an empty shard.
        let units = v["units"].as_array().unwrap();
        let undecided = v["report"]["properties"]
            .as_array()
            .is_some_and(|ps| ps.iter().any(|p| p["verdict"] == "undecided"));
        let want: &[i32] = if units.is_empty() || undecided {
            &[3]
        } else {
            &[0, 3]
        };
        assert!(want.contains(&c), "shard {spec}: exit {c}: {out}\n{err}");
        assert!(
            v["args"]["baseline"]
                .as_array()
                .is_some_and(|b| !b.is_empty()),
            "shard {spec}: no baseline in its args"
        );
        let f = dir.join(format!("{i}-of-{n}{}.json", extra.join("")));
        std::fs::write(&f, out).unwrap();
        f.display().to_string()
    };
    let mut files_of_2 = Vec::new();
    for n in 1..=3 {
        let mut files: Vec<String> = (1..=n).map(|i| shard_file(i, n, &[])).collect();
        files.reverse();
        let mut m = vec!["merge", "--json"];
        m.extend(files.iter().map(String::as_str));
        let (mc, merged, err) = trc!(&m);
        let merged: serde_json::Value = serde_json::from_str(&merged)
            .unwrap_or_else(|e| panic!("N = {n}: {e}: {merged}\n{err}"));
        let timing = timing_flake(&merged) || timing_flake(&single);
        let (um, us) = untimed(&merged, &single);
        assert_eq!(um, us, "N = {n}");
        if !timing {
            assert_eq!(merged, single, "N = {n}");
        }
        assert_eq!(mc, code, "N = {n}");
        let mut m = vec!["merge"];
        m.extend(files.iter().map(String::as_str));
        let (mc, text, _) = trc!(&m);
        if !timing && !text.contains("timing error") && !single_text.contains("timing error") {
            assert_eq!(no_total(&text), no_total(&single_text), "N = {n}");
        } else {
            // A timing flake in one of the runs: the per-property summary still agrees.
            let summary = |s: &str| {
                s.lines()
                    .filter(|l| {
                        !l.contains(": kernel ")
                            && !l.contains("behave differently")
                            && !l.starts_with("total: ")
                    })
                    .map(String::from)
                    .collect::<Vec<_>>()
            };
            assert_eq!(summary(&text), summary(&single_text), "N = {n}");
        }
        assert!(text.lines().any(|l| l.starts_with("total: ")), "{text}");
        assert_eq!(mc, code);
        if n == 2 {
            files_of_2 = files;
        }
    }
    // Four shards of three scenarios: one is empty, and the merge is still the one run's.
    let files: Vec<String> = (1..=4).map(|i| shard_file(i, 4, &[])).collect();
    let mut m = vec!["merge", "--json"];
    m.extend(files.iter().map(String::as_str));
    let (_, merged, _) = trc!(&m);
    let (um, us) = untimed(
        &serde_json::from_str::<serde_json::Value>(&merged).unwrap(),
        &single,
    );
    assert_eq!(um, us);
    let foreign = shard_file(2, 2, &["--properties", "I1,I2"]);
    merge_refuses(&dir, &files_of_2[1], &files_of_2[0], &foreign);
}

/// F9 from the kernel's behaviour alone: the I2 monitor fails on F9's scripts (RACK's reordering
/// timer cutting ssthresh again in Loss for an original of the window already cut, after an RTO
/// and after a Recovery) and holds on the same timer's cut after a Recovery when the segment it
/// marks is new data (I2's new-window exception) and on a plain fast retransmit.
#[test]
fn i2_monitor_finds_f9_on_the_running_kernel() {
    if let Some(why) = trc_kernel::skip_reason() {
        eprintln!("SKIPPED i2_monitor_finds_f9_on_the_running_kernel: {why}");
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let d = scratch("kcheck-f9");
    for f in [
        "common/defaults.sh",
        "findings/f9-rack-reo-timer-second-cut-in-loss.pkt",
        "findings/f9b-rack-reo-timer-cut-after-recovery-rto.pkt",
        "kernel/rack-reo-timer-recovery-from-loss-new-window.pkt",
        "kernel/fr-sack.pkt",
    ] {
        let to = d.join(f);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(
            trc_testkit::workspace().join("counterexamples").join(f),
            &to,
        )
        .unwrap();
    }
    // The monitor's own verdicts, without the baseline that accepts F9 (checked after).
    let empty = d.join("empty-baseline.toml");
    std::fs::write(&empty, "").unwrap();
    let (c, _, err) = trc!(&[
        "kernel",
        "check",
        "--suite",
        "corpus",
        "--corpus",
        d.to_str().unwrap(),
        "--properties",
        "I2",
    ]);
    assert_eq!(c, 0, "F9 is accepted: {err}");
    let (c, out, err) = trc!(&[
        "kernel",
        "check",
        "--suite",
        "corpus",
        "--corpus",
        d.to_str().unwrap(),
        "--properties",
        "I2",
        "--json",
        "--baseline",
        empty.to_str().unwrap(),
    ]);
    assert_eq!(c, 1, "{out}\n{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let i2 = property(&v, "I2");
    let violated: Vec<&str> = i2["violated"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    assert_eq!(
        violated,
        vec![
            "findings/f9-rack-reo-timer-second-cut-in-loss.pkt",
            "findings/f9b-rack-reo-timer-cut-after-recovery-rto.pkt"
        ],
        "{out}"
    );
    let case = v["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "kernel/rack-reo-timer-recovery-from-loss-new-window.pkt")
        .unwrap()
        .clone();
    assert_eq!(case["kernel"], "passed", "{case}");
    assert_eq!(case["properties"]["I2"]["verdict"], "holds", "{case}");
}
