//! `trc kernel build` and `trc kernel check --patch`: a patch that does not apply stops before
//! any build, naming its hunk; the seed bug put back into Debian's 7.2 is a new I1 violation with
//! the scenarios it changed; a comment-only patch changes nothing; two images compare the same
//! way with `--against-kernel`.
//!
//! The kernel tests need the base image of `trc kernel build` in trc's cache (`.ci/run` builds
//! it; minutes the first time), qemu and busybox-static: without them they skip, saying why.
//! Each patched build is incremental on the base (seconds).

mod common;

use common::{root, scratch};
use serde_json::Value;
use trc_testkit::trc;

/// The base image's path, or why the kernel tests skip.
fn base_image() -> Result<String, String> {
    if std::process::Command::new("qemu-system-x86_64")
        .arg("--version")
        .output()
        .is_err()
    {
        return Err("no qemu-system-x86_64 (apt-get install qemu-system-x86)".into());
    }
    let (rc, out, err) = trc!(
        &["kernel", "build", "debian:sid", "--cached", "--print-path"],
        &[],
    );
    if rc != 0 {
        return Err(format!(
            "no cached base kernel (run `trc kernel build` first, minutes): {}",
            err.trim()
        ));
    }
    Ok(out.trim().to_string())
}

fn base_or_skip() -> Option<String> {
    base_image().map_err(|e| eprintln!("skipped: {e}")).ok()
}

/// A three-script corpus: the seed's regression (non-SACK), fast retransmit without and with SACK.
fn corpus(name: &str) -> std::path::PathBuf {
    let d = scratch(name);
    let c = root().join("counterexamples");
    for sub in ["common", "kernel", "regressions"] {
        std::fs::create_dir_all(d.join(sub)).unwrap();
    }
    std::fs::copy(c.join("common/defaults.sh"), d.join("common/defaults.sh")).unwrap();
    for f in [
        "kernel/fr-nosack.pkt",
        "kernel/fr-sack.pkt",
        "regressions/I1-linux-6.15-nosack.pkt",
    ] {
        std::fs::copy(c.join(f), d.join(f)).unwrap();
    }
    d
}

#[test]
fn a_patch_that_does_not_apply_names_its_hunk_and_builds_nothing() {
    if base_or_skip().is_none() {
        return;
    }
    let d = scratch("kpatch-bad");
    let bad = d.join("bad.patch");
    std::fs::write(&bad, "--- a/net/ipv4/tcp_input.c\n+++ b/net/ipv4/tcp_input.c\n@@ -2762,2 +2762,2 @@\n-\tif (this line is not in tcp_input.c)\n+\tif (nor this one)\n \t\treturn false;\n").unwrap();
    let b = bad.display().to_string();
    let (rc, out, err) = trc!(
        &[
            "kernel",
            "build",
            "--patch",
            "vm/mutants/linux-6.15.patch",
            &b,
        ],
        &[],
    );
    assert_eq!(rc, 2, "{out}{err}");
    assert!(
        err.contains("bad.patch: Hunk #1 of net/ipv4/tcp_input.c does not apply (at line 2762)"),
        "{err}"
    );
    assert!(!err.contains("compiled"), "something was built: {err}");
    // The same through the patch check, before either kernel is built or booted.
    let (rc, _, err) = trc!(
        &["kernel", "check", "--patch", &b, "--suite", "corpus"],
        &[],
    );
    assert_eq!(rc, 2, "{err}");
    assert!(
        err.contains("does not apply") && !err.contains("booting"),
        "{err}"
    );
    // The tree was left as it was: the seed revert still applies and is cached or builds.
    let (rc, out, err) = trc!(
        &[
            "kernel",
            "build",
            "--patch",
            "vm/mutants/linux-6.15.patch",
            "--print-path",
        ],
        &[],
    );
    assert_eq!(rc, 0, "{out}{err}");
    assert!(out.trim().ends_with("bzImage"), "{out}");
}

fn changed(v: &Value) -> Vec<String> {
    v["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| !s["difference"].is_null() && s["reproduced"] != Value::Bool(false))
        .map(|s| s["name"].as_str().unwrap().to_string())
        .collect()
}

fn property<'a>(v: &'a Value, id: &str) -> &'a Value {
    v["properties"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == id)
        .unwrap()
}

#[test]
fn the_seed_bug_put_back_is_a_new_i1_violation() {
    if base_or_skip().is_none() {
        return;
    }
    let c = corpus("kpatch-seed");
    let out_dir = c.join("out");
    let (rc, out, err) = trc!(
        &[
            "kernel",
            "check",
            "--patch",
            "vm/mutants/linux-6.15.patch",
            "--suite",
            "corpus",
            "--corpus",
            &c.display().to_string(),
            "--out",
            &out_dir.display().to_string(),
            "--json",
        ],
        &[],
    );
    assert_eq!(rc, 1, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let i1 = property(&v, "I1");
    assert_eq!(i1["change"], "new-violation", "{i1}");
    let new: Vec<&str> = i1["new_violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["scenario"].as_str().unwrap())
        .collect();
    assert_eq!(new, ["regressions/I1-linux-6.15-nosack.pkt"], "{i1}");
    assert_eq!(i1["new_violations"][0]["sack"], false);
    for id in ["I2", "I3", "I11", "I13", "I14"] {
        assert_eq!(property(&v, id)["change"], "as-on-base", "{id}");
    }
    // The two non-SACK scenarios changed (an undo the base does not do), the SACK one did not.
    let ch = changed(&v);
    assert_eq!(
        ch,
        [
            "kernel/fr-nosack.pkt",
            "regressions/I1-linux-6.15-nosack.pkt"
        ],
        "{}",
        serde_json::to_string_pretty(&v["scenarios"]).unwrap()
    );
    let s = v["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "regressions/I1-linux-6.15-nosack.pkt")
        .unwrap();
    assert_eq!(s["reproduced"], true, "a rerun confirms it");
    let d = &s["difference"];
    assert_eq!(d["line"], 66);
    assert_eq!(d["base"]["counters"]["TcpExtTCPLossUndo"], 0);
    assert_eq!(d["patched"]["counters"]["TcpExtTCPLossUndo"], 1);
    let page = s["page"].as_str().expect("a side-by-side page");
    let html = std::fs::read_to_string(page).unwrap();
    assert!(
        html.contains("base") && html.contains("patched") && html.contains("iframe"),
        "{page}"
    );
    for side in ["base.html", "patched.html"] {
        let f = std::path::Path::new(page).with_extension(side);
        assert!(
            f.is_file() && html.contains(&*f.file_name().unwrap().to_string_lossy()),
            "{}",
            f.display()
        );
    }
    assert!(out_dir.join("report.json").is_file());
}

#[test]
fn a_comment_only_patch_changes_nothing() {
    if base_or_skip().is_none() {
        return;
    }
    let c = corpus("kpatch-comment");
    let (rc, out, err) = trc!(
        &[
            "kernel",
            "check",
            "--patch",
            "vm/kconfig/comment-only.patch",
            "--suite",
            "corpus",
            "--corpus",
            &c.display().to_string(),
            "--json",
        ],
        &[],
    );
    assert_eq!(rc, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert!(
        changed(&v).is_empty(),
        "{}",
        serde_json::to_string_pretty(&v["scenarios"]).unwrap()
    );
    assert!(v["properties"]
        .as_array()
        .unwrap()
        .iter()
        .all(|p| p["change"] == "as-on-base"));
    assert_eq!(v["not_run"], 0);
}

#[test]
fn two_images_compare_with_against_kernel() {
    let Some(base) = base_or_skip() else { return };
    let (rc, patched, err) = trc!(
        &[
            "kernel",
            "build",
            "--patch",
            "vm/mutants/linux-6.15.patch",
            "--print-path",
        ],
        &[],
    );
    assert_eq!(rc, 0, "{err}");
    let c = corpus("kpatch-against");
    let (rc, out, err) = trc!(
        &[
            "kernel",
            "check",
            "--kernel",
            patched.trim(),
            "--against-kernel",
            &base,
            "--suite",
            "corpus",
            "--corpus",
            &c.display().to_string(),
            "--no-rerun",
        ],
        &[],
    );
    assert_eq!(rc, 1, "{out}{err}");
    assert!(
        out.contains("NEW VIOLATION")
            && out.contains("new: regressions/I1-linux-6.15-nosack.pkt (non-SACK) line 66"),
        "{out}"
    );
    assert!(out.contains("2 of 3 scenarios behave differently"), "{out}");
}
