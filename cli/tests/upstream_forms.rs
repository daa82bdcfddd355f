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
