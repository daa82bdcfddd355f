//! `trc check --out DIR --format gtest|selftest`: the counterexample's script in the forms
//! upstream takes (trace/src/upstream.rs; docs/reference/export.md).

mod common;

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

/// The kernel image `trc kernel build debian:sid --cached --print-path [--patch P...]` names, if
/// it is in the cache (nothing is built here).
fn cached_image(patches: &[&str]) -> Option<String> {
    let mut args = vec!["kernel", "build", "debian:sid", "--cached", "--print-path"];
    if !patches.is_empty() {
        args.push("--patch");
        args.extend_from_slice(patches);
    }
    let (code, out, _) = trc!(&args);
    (code == 0).then(|| out.trim().to_string())
}

/// The reproducers (the bug's behaviour asserted) and the fixes' regression tests (the fixed
/// behaviour asserted), by file name in the selftests directory.
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
const FIX_TESTS: [&str; 2] = [
    "tcp_dsack_undo_tlp_after_ended_recovery.pkt",
    "tcp_rack_reo_timeout_no_second_cut_in_loss.pkt",
];
const MODES: [&str; 3] = ["ipv4", "ipv6", "ipv4-mapped-ipv6"];

/// A copy of the kernel tree's selftests layout with what `ksft_runner.sh` needs (read from the
/// unpacked Debian source at test time), F11's and F9's reproducers converted to the selftest
/// form, and the fixes' regression tests of counterexamples/upstream/. Returns the tree and the
/// scripts, reproducers first.
fn selftests_tree(sel: &std::path::Path) -> (std::path::PathBuf, Vec<std::path::PathBuf>) {
    let tree = common::scratch("upstream-ksft");
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

/// Runs `scripts` under `ksft_runner.sh` in a VM on `kernel`: per script, its exit code and KTAP
/// output. None: skipped (no qemu).
fn ksft_in_vm(
    kernel: &str,
    pd: &std::path::Path,
    tree: &std::path::Path,
    scripts: &[std::path::PathBuf],
) -> Option<Vec<(i32, String)>> {
    let json = tree.join(format!("run-{}.json", scripts.len()));
    let mut args: Vec<String> = [
        "kernel",
        "run",
        "--kernel",
        kernel,
        "--packetdrill",
        pd.to_str().unwrap(),
        "--packetdrill-tree",
        tree.to_str().unwrap(),
        "--packetdrill-runner",
        "net/packetdrill/ksft_runner.sh",
        "--json",
        json.to_str().unwrap(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(scripts.iter().map(|s| s.to_string_lossy().into_owned()));
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, out, err) = trc!(&a);
    if code == 4 {
        trc_testkit::skip("ksft_runner_in_a_vm", &err);
        return None;
    }
    assert!(code == 0 || code == 1, "exit {code}\n{out}\n{err}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let runs = v["scripts"].as_array().unwrap();
    assert_eq!(runs.len(), scripts.len(), "{out}\n{err}");
    Some(
        runs.iter()
            .map(|r| {
                (
                    r["rc"].as_i64().unwrap() as i32,
                    r["outcome"]["output"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect(),
    )
}

/// Whether KTAP `output` says every IP mode passed (`ok N MODE`) or every one failed (`not ok`).
fn ktap_all(output: &str, pass: bool) -> bool {
    MODES.iter().enumerate().all(|(i, m)| {
        let ok = output
            .lines()
            .any(|l| l.trim() == format!("ok {} {m}", i + 1));
        let not_ok = output
            .lines()
            .any(|l| l.trim() == format!("not ok {} {m}", i + 1));
        if pass {
            ok
        } else {
            not_ok
        }
    })
}

/// F11's and F9's reproducers, exported in the selftest form, run under the 7.2 tree's own
/// `ksft_runner.sh` in a VM (IPv4, IPv6 and IPv4-mapped IPv6) and pass on Debian 7.2, where both
/// bugs are; the regression tests of their fixes (counterexamples/upstream/, the fixed values
/// asserted) fail there in every mode. When the kernel with both fixes is in the cache (`just
/// selftest-vm` builds it incrementally), the same scripts run on it: the fixes' tests pass and
/// the reproducers fail, in every mode. One VM boot per kernel (TCG: minutes).
#[test]
fn selftests_of_f11_and_f9_under_ksft_runner_in_a_vm() {
    let what = "selftests_of_f11_and_f9_under_ksft_runner_in_a_vm";
    let sel = match trc_testkit::kernel_selftests_packetdrill() {
        Ok(s) => s,
        Err(e) => return trc_testkit::skip(what, &e),
    };
    let Some(base) = cached_image(&[]) else {
        return trc_testkit::skip(
            what,
            "no cached debian:sid kernel (trc kernel build debian:sid)",
        );
    };
    let pd = match trc_testkit::packetdrill_binary_tun_capture() {
        Ok(p) => p,
        Err(e) => return trc_testkit::skip(what, &e),
    };
    let (tree, scripts) = selftests_tree(&sel);
    let Some(runs) = ksft_in_vm(&base, &pd, &tree, &scripts) else {
        return;
    };
    for (i, (rc, output)) in runs.iter().enumerate() {
        let reproducer = i < REPRODUCERS.len();
        let name = scripts[i].display();
        assert_eq!(
            *rc == 0,
            reproducer,
            "{name} on the base: exit {rc}\n{output}"
        );
        assert!(
            ktap_all(output, reproducer),
            "{name} on the base:\n{output}"
        );
    }
    let fixes = ["vm/kconfig/f11-fix.patch", "vm/kconfig/f9-fix.patch"];
    let Some(fixed) = cached_image(&fixes) else {
        return trc_testkit::skip(
            &format!("{what} (the fixed kernel)"),
            "not in the cache: trc kernel build debian:sid --patch vm/kconfig/f11-fix.patch vm/kconfig/f9-fix.patch",
        );
    };
    let Some(runs) = ksft_in_vm(&fixed, &pd, &tree, &scripts) else {
        return;
    };
    for (i, (rc, output)) in runs.iter().enumerate() {
        let reproducer = i < REPRODUCERS.len();
        let name = scripts[i].display();
        assert_eq!(*rc == 0, !reproducer, "{name} fixed: exit {rc}\n{output}");
        assert!(ktap_all(output, !reproducer), "{name} fixed:\n{output}");
    }
}
