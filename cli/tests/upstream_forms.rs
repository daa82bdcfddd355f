//! `trc check --out DIR --format gtest|selftest`: the counterexample's script in the forms
//! upstream takes (trace/src/upstream.rs; docs/reference/export.md).

mod common;

use std::path::{Path, PathBuf};
use trc_testkit::trc;

#[test]
fn check_writes_the_counterexample_in_the_upstream_forms() {
    let dir = common::scratch("upstream-forms");
    for (form, file, defaults) in [
        ("selftest", "tcp_i1_linux_6_15.pkt", "`./defaults.sh"),
        ("gtest", "i1-linux-6.15.pkt", "`../common/defaults.sh"),
    ] {
        let d = dir.join(form);
        let (code, out, err) = trc!(&[
            "check",
            "--profile",
            "linux-6.15",
            "--no-sack",
            "--property",
            "I1",
            "--out",
            d.to_str().unwrap(),
            "--format",
            form,
        ]);
        assert_eq!(code, 1, "{out}\n{err}");
        let text = std::fs::read_to_string(d.join(file)).unwrap_or_else(|e| panic!("{e}: {err}"));
        assert!(text.contains(defaults), "{text}");
        assert_eq!(
            text.starts_with("// SPDX-License-Identifier: GPL-2.0\n"),
            form == "selftest"
        );
        // No IPv4 address: the initial window is set on whichever route packetdrill made.
        assert!(
            !text.contains("192.0.2.1") && !text.contains("192.168.0.1"),
            "{text}"
        );
        assert!(text.contains("initcwnd"), "{text}");
        assert!(text.contains("TCP_CONGESTION, \"cubic\""), "{text}");
        // trc's own defaults.sh is not written: the form runs upstream's.
        assert!(!d.join("defaults.sh").exists());
        assert!(d.join("I1-linux-6.15.json").exists() && d.join("I1-linux-6.15.html").exists());
        trc_pkt::parse(&text, file).unwrap();
    }
    // --format names the form of --out's scripts: without --out it is a usage error.
    let (code, _, err) = trc!(&["check", "--format", "selftest"]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = trc!(&["check", "--out", dir.to_str().unwrap(), "--format", "tap"]);
    assert_eq!(code, 2, "{err}");
}

/// The image of `trc kernel build debian:sid [--patch P...] --print-path`: with `cached`, only
/// if it is in the cache (nothing built); else built (incrementally on the cached base tree, seconds).
/// Err: why not (stderr), with the exit code.
fn kernel_image(patches: &[&str], cached: bool) -> Result<String, (i32, String)> {
    let mut args = vec!["kernel", "build", "debian:sid", "--print-path"];
    if cached {
        args.push("--cached");
    }
    if !patches.is_empty() {
        args.push("--patch");
        args.extend_from_slice(patches);
    }
    let (code, out, err) = trc!(&args);
    if code == 0 {
        Ok(out.trim().to_string())
    } else {
        Err((code, err))
    }
}

/// F11's and F9's reproducers (the bug's behaviour asserted), by their file in
/// counterexamples/findings/ and their name in the selftests directory.
const REPRODUCERS: [(&str, &str); 2] = [
    (
        "f11c-dsack-undo-ended-recovery-tlp-copy-below-snd-una.pkt",
        "tcp_f11c_reproducer.pkt",
    ),
    (
        "f9-rack-reo-timer-second-cut-in-loss.pkt",
        "tcp_f9_reproducer.pkt",
    ),
];
/// The fixes' regression tests (counterexamples/upstream/, the fixed behaviour asserted).
const FIX_TESTS: [&str; 2] = [
    "tcp_dsack_undo_tlp_after_ended_recovery.pkt",
    "tcp_rack_reo_timeout_no_second_cut_in_loss.pkt",
];
/// ksft_runner.sh's IP modes, in its order (its KTAP test numbers).
const MODES: [&str; 3] = ["ipv4", "ipv6", "ipv4-mapped-ipv6"];

/// A copy of the kernel tree's selftests layout with what `ksft_runner.sh` needs (read from the
/// unpacked Debian source `sel` at test time), F11's and F9's reproducers converted to the
/// selftest form, and the fixes' regression tests. Returns the tree and the scripts, reproducers
/// first.
fn selftests_tree(sel: &Path) -> (PathBuf, Vec<PathBuf>) {
    let tree = common::scratch("upstream-ksft").join("tree");
    let pd = tree.join("net/packetdrill");
    std::fs::create_dir_all(&pd).unwrap();
    std::fs::create_dir_all(tree.join("kselftest")).unwrap();
    for f in ["ksft_runner.sh", "defaults.sh", "set_sysctls.py"] {
        std::fs::copy(sel.join(f), pd.join(f)).unwrap();
    }
    std::fs::copy(
        sel.join("../../kselftest/ktap_helpers.sh"),
        tree.join("kselftest/ktap_helpers.sh"),
    )
    .unwrap();
    let root = common::root().join("counterexamples");
    let mut scripts = Vec::new();
    for (src, name) in REPRODUCERS {
        let text = std::fs::read_to_string(root.join("findings").join(src)).unwrap();
        let s = trc_trace::upstream::convert(&text, trc_trace::upstream::Form::Selftest).unwrap();
        std::fs::write(pd.join(name), s).unwrap();
        scripts.push(pd.join(name));
    }
    for name in FIX_TESTS {
        std::fs::copy(root.join("upstream").join(name), pd.join(name)).unwrap();
        scripts.push(pd.join(name));
    }
    (tree, scripts)
}

/// Runs `scripts` under the tree's `ksft_runner.sh` in one VM (TCG icount) on `kernel`: per
/// script, its exit code and output tail (KTAP, then packetdrill's errors). None: skipped (exit
/// 4: no qemu or busybox-static), said why.
fn ksft_in_vm(
    kernel: &str,
    pd: &Path,
    tree: &Path,
    scripts: &[PathBuf],
) -> Option<Vec<(i32, String)>> {
    // Beside the tree, whose whole content goes to the guest.
    let json = tree.with_file_name("run.json");
    let cache = tree.with_file_name("vm-cache");
    let mut args: Vec<&str> = vec!["kernel", "run"];
    args.extend(trc_testkit::tcg_vm(kernel, &cache));
    args.extend([
        "--packetdrill",
        pd.to_str().unwrap(),
        "--packetdrill-tree",
        tree.to_str().unwrap(),
        "--packetdrill-runner",
        "net/packetdrill/ksft_runner.sh",
        "--json",
        json.to_str().unwrap(),
    ]);
    args.extend(scripts.iter().map(|s| s.to_str().unwrap()));
    let t0 = std::time::Instant::now();
    let (code, out, err) = trc!(&args);
    if code == 4 {
        trc_testkit::skip("ksft_runner.sh in a VM", &err);
        return None;
    }
    eprintln!("{kernel}: {:.0} s\n{out}", t0.elapsed().as_secs_f64());
    assert!(code == 0 || code == 1, "exit {code}\n{out}\n{err}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let runs = v["scripts"].as_array().unwrap();
    assert_eq!(runs.len(), scripts.len(), "{out}\n{err}");
    Some(
        runs.iter()
            .map(|r| {
                let output = r["outcome"]["output"].as_str();
                let output = output.unwrap_or_else(|| panic!("no output: {r}\n{err}"));
                (r["rc"].as_i64().unwrap() as i32, output.to_string())
            })
            .collect(),
    )
}

/// Asserts that the KTAP `output` of `name`'s run says, for each IP mode, `ok N MODE` if `pass`
/// else `not ok N MODE`, and that the runner's exit code agrees.
fn assert_every_mode(name: &str, kernel: &str, (rc, output): &(i32, String), pass: bool) {
    for (i, m) in MODES.iter().enumerate() {
        let want = format!("{}ok {} {m}", if pass { "" } else { "not " }, i + 1);
        assert!(
            output.lines().any(|l| l.trim() == want),
            "{name} on {kernel}: no `{want}`\n{output}"
        );
    }
    assert_eq!(*rc == 0, pass, "{name} on {kernel}: exit {rc}\n{output}");
}

/// Issue 27's acceptance line: F11's and F9's reproducers, exported in the selftest form, run
/// under the 7.2 tree's own `ksft_runner.sh` in a VM (IPv4, IPv6 and IPv4-mapped IPv6) and pass
/// on Debian's 7.2, where both bugs are; the regression tests of their fixes
/// (counterexamples/upstream/, the fixed behaviour asserted) fail there in every mode and pass in
/// every mode on 7.2 with vm/kconfig/f11-fix.patch and f9-fix.patch.
/// Needs the base image of `trc kernel build debian:sid` in trc's cache (.ci/run builds it; the
/// patched one is built here, incrementally), its source tree's selftests, ../shared/vendor's
/// packetdrill, qemu and busybox-static; skips, saying why, without them. Two TCG boots.
#[test]
fn selftests_of_f11_and_f9_under_ksft_runner_in_a_vm() {
    let what = "selftests_of_f11_and_f9_under_ksft_runner_in_a_vm";
    let base = match kernel_image(&[], true) {
        Ok(b) => b,
        Err((_, e)) => {
            let why = format!(
                "no cached base kernel (trc kernel build debian:sid): {}",
                e.trim()
            );
            return trc_testkit::skip(what, &why);
        }
    };
    let sel = match trc_testkit::kernel_selftests_packetdrill() {
        Ok(s) => s,
        Err(e) => return trc_testkit::skip(what, &e),
    };
    let pd = match trc_testkit::packetdrill_binary_tun_capture() {
        Ok(p) => p,
        Err(e) => return trc_testkit::skip(what, &e),
    };
    let (tree, scripts) = selftests_tree(&sel);
    let name = |i: usize| {
        scripts[i]
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned()
    };
    let Some(runs) = ksft_in_vm(&base, &pd, &tree, &scripts) else {
        return;
    };
    for (i, run) in runs.iter().enumerate() {
        assert_every_mode(&name(i), "7.2", run, i < REPRODUCERS.len());
    }
    let fixes = ["vm/kconfig/f11-fix.patch", "vm/kconfig/f9-fix.patch"];
    let fixed = match kernel_image(&fixes, false) {
        Ok(f) => f,
        Err((4, e)) => return trc_testkit::skip(what, &format!("the fixed kernel: {e}")),
        Err((c, e)) => panic!("trc kernel build --patch {fixes:?}: exit {c}\n{e}"),
    };
    // Only the fixes' tests: the reproducers' failure there is not the acceptance line, and each
    // script costs a TCG VM about 20 s (docs/lab/notebook.md).
    let n = REPRODUCERS.len();
    let Some(runs) = ksft_in_vm(&fixed, &pd, &tree, &scripts[n..]) else {
        return;
    };
    for (i, run) in runs.iter().enumerate() {
        assert_every_mode(&name(n + i), "7.2 + the fixes", run, true);
    }
}
