//! End-to-end checks of the `trc` binary: exit codes and input errors.

use trc_testkit::trc;

fn tmp(name: &str, content: &str) -> String {
    let dir = std::env::temp_dir().join(format!("trc-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, content).unwrap();
    p.to_string_lossy().into_owned()
}

#[test]
fn bad_inputs_exit_2_with_file_line() {
    let p = tmp(
        "p.toml",
        "base = \"linux-6.18\"\npacket_delayed = \"nope\"\n",
    );
    let (code, _, err) = trc!(&["check", "--profile", &p]);
    assert_eq!(code, 2);
    assert!(err.contains("p.toml:2:"), "{err}");
    let c = tmp("c.toml", "segments = 4\nbogus = 1\n");
    let (code, _, err) = trc!(&["check", "--config", &c]);
    assert_eq!(code, 2);
    assert!(err.contains("c.toml:2:"), "{err}");
    let c = tmp("b.toml", "initcwnd = 4\nsegments = 20000\n");
    let (code, _, err) = trc!(&["check", "--config", &c]);
    assert_eq!(code, 2);
    assert!(
        err.contains("b.toml:2: impossible bounds: segments"),
        "{err}"
    );
    let (code, _, err) = trc!(&["check", "--segments", "0"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--segments: impossible bounds: segments"),
        "{err}"
    );
    // A flag that overrides the file's value is what the error names, not the file's line.
    let c = tmp(
        "f.toml",
        "initcwnd = 4
segments = 6
",
    );
    let (code, _, err) = trc!(&["check", "--config", &c, "--segments", "20000"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--segments: impossible bounds: segments") && !err.contains("f.toml:2"),
        "{err}"
    );
    let (code, _, err) = trc!(&["check", "--property", "I99"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown property"), "{err}");
    let (code, _, _) = trc!(&["check", "--no-such-flag"]);
    assert_eq!(code, 2);
}

#[test]
fn seed_bug_exits_1_on_6_15_and_0_on_6_18() {
    let (code, out, _) = trc!(&[
        "check",
        "--profile",
        "linux-6.15",
        "--no-sack",
        "--property",
        "I1",
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("VIOLATED")
            && out.contains("non-SACK hold at snd_una == high_seq")
            && out.contains("→ undo "),
        "{out}"
    );
    let (code, out, _) = trc!(&[
        "check",
        "--profile",
        "linux-6.18",
        "--no-sack",
        "--property",
        "I1",
    ]);
    assert_eq!(code, 0, "{out}");
}

/// The counterexample names the MIB counters each step moved, as nstat prints them: the seed
/// bug's RTO (`tcp_retransmit_timer`: TCPTimeouts, `__tcp_retransmit_skb`: RetransSegs) and its
/// undo (`tcp_try_undo_loss` without F-RTO: TCPLossUndo), in the text and in the JSON.
#[test]
fn counterexample_names_the_counters_its_undo_bumps() {
    let (code, out, _) = trc!(&[
        "check",
        "--profile",
        "linux-6.15",
        "--no-sack",
        "--property",
        "I1",
        "--json",
    ]);
    assert_eq!(code, 1, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let steps = v["properties"][0]["counterexample"].as_array().unwrap();
    let with = |name: &str| {
        steps
            .iter()
            .filter(|s| s["counters"][name].as_u64() == Some(1))
            .map(|s| s["event"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(with("TcpExtTCPTimeouts"), vec!["RTO fires".to_string()]);
    let undo = with("TcpExtTCPLossUndo");
    assert_eq!(undo.len(), 1, "{undo:?}");
    let last = steps.last().unwrap();
    assert_eq!(
        last["counters"]["TcpExtTCPLossUndo"], 1,
        "the undo is the violating step"
    );
    assert!(steps
        .iter()
        .all(|s| s["counters"].get("TcpExtTCPFullUndo").is_none()));
    let (_, text, _) = trc!(&[
        "check",
        "--profile",
        "linux-6.15",
        "--no-sack",
        "--property",
        "I1",
    ]);
    assert!(text.contains("counters: TcpExtTCPLossUndo +1"), "{text}");
}

#[test]
fn user_profile_file_reproduces_the_bug() {
    let p = tmp(
        "mypatch.toml",
        "base = \"linux-6.18\"\npacket_delayed = \"e37ab7\"\n",
    );
    let (code, out, _) = trc!(&[
        "check",
        "--profile",
        &p,
        "--no-sack",
        "--property",
        "I1",
        "--json",
    ]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["profile"]["name"], "mypatch");
    assert_eq!(v["properties"][0]["verdict"], "Violated");
}

/// The default check reports F1 by its signature as accepted; it fails exactly when some other
/// signature is new (docs/findings.md lists the ones not yet triaged).
#[test]
fn default_check_accepts_f1_by_signature() {
    let (code, out, _) = trc!(&["check"]);
    let f1 = out
        .lines()
        .find(|l| l.contains("I1:tcp_try_undo_loss:Loss:ts-echo"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        f1.contains("shortest  7 events: accepted (F1, baseline)"),
        "{f1}"
    );
    assert_eq!(code, if out.contains(": NEW") { 1 } else { 0 }, "{out}");
    // Triaged (docs/findings.md): F4-F7 (F8 merged into F7) confirmed on 6.18 and accepted; the Disorder DSACK undo
    // after a loss of data sent after the episode is not an I1 violation (the property fix).
    assert_eq!(code, 0, "{out}");
    for f in ["F4", "F5", "F6", "F7"] {
        assert!(
            out.contains(&format!("accepted ({f}, baseline)")),
            "{f}: {out}"
        );
    }
    assert!(!out.contains("I1:tcp_try_undo_dsack:Disorder:"), "{out}");
}

/// A profile file that changes nothing: every signature is accepted or also on its base.
#[test]
fn unchanged_profile_file_is_compared_with_its_base() {
    let p = tmp("nochange.toml", "base = \"linux-6.18\"\n");
    let (code, out, _) = trc!(&["check", "--profile", &p, "--property", "I1"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("compared with linux-6.18"), "{out}");
    assert!(
        out.contains("accepted (F1, baseline); also on linux-6.18"),
        "{out}"
    );
    assert!(
        out.lines()
            .filter(|l| l.contains("I1:tcp_") && l.contains("states, shortest"))
            .all(|l| l.contains("also on linux-6.18")),
        "{out}"
    );
    assert!(!out.contains(": NEW"), "{out}");
    // Against nothing but the baseline (itself as the base is the same as no change): the
    // comparison is what makes the untriaged 6.18 signatures pass.
    let (_, json, _) = trc!(&["check", "--profile", &p, "--property", "I1", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["result"], "holds");
    assert_eq!(v["against"]["profile"], "linux-6.18");
    let sigs = v["properties"][0]["signatures"].as_array().unwrap();
    assert!(sigs
        .iter()
        .any(|s| s["signature"] == "I1:tcp_try_undo_loss:Loss:ts-echo"
            && s["status"] == "accepted"
            && s["finding"] == "F1"));
    assert!(sigs.iter().all(|s| s["status"] != "new"), "{json}");
}

/// Re-introducing a known bug on top of 6.18 (0ec986ed7bab reverted): a new signature fails,
/// with its shortest counterexample, although F1 is accepted.
#[test]
fn reintroduced_bug_fails_with_a_new_signature() {
    let p = tmp(
        "tlp.toml",
        "base = \"linux-6.18\"\ninit_undo_tlp = \"ignore\"\n",
    );
    let (code, out, _) = trc!(&["check", "--profile", &p, "--property", "I1", "--json"]);
    assert_eq!(code, 1, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["result"], "violated");
    let r = &v["properties"][0];
    let sig =
        "I1:tcp_try_undo_dsack:Recovery:undo-retrans-zero+dsack-pre-episode+dsack-tlp-uncounted";
    assert_eq!(r["counterexample_signature"], sig);
    let new: Vec<&serde_json::Value> = r["signatures"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["status"] == "new")
        .collect();
    assert_eq!(new.len(), 1, "{out}");
    assert_eq!(new[0]["signature"], sig);
    assert_eq!(
        r["counterexample"].as_array().unwrap().len(),
        new[0]["events"].as_u64().unwrap() as usize + 1
    );
    // --against itself: nothing is new.
    let (code, _, _) = trc!(&[
        "check",
        "--profile",
        &p,
        "--property",
        "I1",
        "--against",
        &p,
    ]);
    assert_eq!(code, 0);
    // The built-in revert has no base: compared only with the baseline, it fails too.
    let (code, _, _) = trc!(&[
        "check",
        "--profile",
        "pre-0ec986ed7bab",
        "--property",
        "I1",
        "--sack",
    ]);
    assert_eq!(code, 1);
}

#[test]
fn old_baseline_format_is_an_input_error() {
    let b = tmp(
        "old-baseline.toml",
        "[[accepted]]\nproperty = \"I1\"\nprofile = \"linux-6.18\"\nreason = \"x\"\n",
    );
    let (code, _, err) = trc!(&["check", "--baseline", &b, "--property", "I3"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("old-baseline.toml:2: unknown field `property`"),
        "{err}"
    );
}

/// Without a baseline file every accepted finding fails again: the check says so on stderr
/// (from the repository root it reads baseline.toml and says nothing).
#[test]
fn a_missing_baseline_is_announced() {
    let (code, _, err) = trc!(&[
        "check",
        "--baseline",
        "no-such-baseline.toml",
        "--property",
        "I1",
        "--sack",
    ]);
    assert_eq!(code, 1, "F1 is no longer accepted");
    assert!(
        err.contains("no baseline file no-such-baseline.toml: no finding is accepted"),
        "{err}"
    );
    let (code, _, err) = trc!(&["check", "--property", "I1", "--sack"]);
    assert_eq!(code, 0);
    assert!(!err.contains("no baseline file"), "{err}");
}

/// --coverage lists every decision function's branches with counts; a profile file whose
/// override the bounds never reach gets the warning.
#[test]
fn coverage_counts_branches_and_warns_for_unreached_overrides() {
    let (code, out, _) = trc!(&["check", "--coverage", "--property", "I3"]);
    assert_eq!(code, 0, "{out}");
    for f in [
        "tcp_packet_delayed [packet_delayed=d0fa59]",
        "tcp_init_undo [init_undo_tlp=count]",
        "tcp_try_undo_dsack",
        "tcp_enter_loss [enter_loss_guard=snd-una-ge-high-seq]",
    ] {
        assert!(out.contains(f), "{f}: {out}");
    }
    assert!(out.contains("never reached"), "{out}");
    assert!(!out.contains("warning:"), "{out}");
    let p = tmp(
        "tlp-cov.toml",
        "base = \"linux-6.18\"\ninit_undo_tlp = \"ignore\"\n",
    );
    let (_, out, _) = trc!(&[
        "check",
        "--coverage",
        "--property",
        "I3",
        "--profile",
        &p,
        "--tlps",
        "0",
    ]);
    assert!(
        out.contains("warning: `init_undo_tlp` (tcp_init_undo): your change was not exercised"),
        "{out}"
    );
    let (_, out, _) = trc!(&["check", "--coverage", "--property", "I3", "--profile", &p]);
    assert!(!out.contains("warning:"), "reached with TLPs: {out}");
    let (_, json, _) = trc!(&["check", "--coverage", "--property", "I3", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let rows = v["coverage"]["rows"].as_array().unwrap();
    assert!(rows
        .iter()
        .any(|r| r["function"] == "tcp_try_undo_loss" && r["transitions"].as_u64().unwrap() > 0));
}

/// `--old-acks N` (ACK reordering): out of range is a usage error naming the flag (or the
/// config file's line); in range it explores more states than the default budget 0 and reports
/// every property.
#[test]
fn old_acks_flag_is_validated_and_grows_the_space() {
    let (code, _, err) = trc!(&["check", "--old-acks", "17"]);
    assert_eq!(code, 2);
    assert!(
        err.contains(
            "--old-acks: impossible bounds: max_old_acks must be between 0 and 16 (got 17)"
        ),
        "{err}"
    );
    let c = tmp("o.toml", "segments = 4\nmax_old_acks = 99\n");
    let (code, _, err) = trc!(&["check", "--config", &c]);
    assert_eq!(code, 2);
    assert!(
        err.contains("o.toml:2: impossible bounds: max_old_acks"),
        "{err}"
    );
    let states = |extra: &[&str]| -> u64 {
        let mut args = vec![
            "check",
            "--segments",
            "4",
            "--initcwnd",
            "4",
            "--property",
            "I5",
            "--property",
            "I3",
            "--json",
        ];
        args.extend_from_slice(extra);
        let (code, out, err) = trc!(&args);
        assert_eq!(code, 0, "{out}{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["properties"].as_array().unwrap().len(), 2);
        assert!(
            v["properties"]
                .as_array()
                .unwrap()
                .iter()
                .all(|p| p["verdict"] == "Holds"),
            "{out}"
        );
        v["unique_states"].as_u64().unwrap()
    };
    let (none, one) = (states(&[]), states(&["--old-acks", "1"]));
    assert_eq!(states(&["--old-acks", "0"]), none);
    assert!(one > none, "{one} <= {none}");
}

/// F9 after a Recovery cut (issue #14 triage): both forms occur on linux-6.18 beyond the default
/// bounds and are accepted by signature (kernel-confirmed by f9b/f9c in counterexamples/findings);
/// without the baseline the same run fails on them.
#[test]
fn f9_after_recovery_forms_are_found_and_accepted() {
    let args = [
        "check",
        "--rtt-ms",
        "10000",
        "--horizon-ms",
        "100000",
        "--property",
        "I2",
    ];
    let (code, out, _) = trc!(&args);
    assert_eq!(code, 0, "{out}");
    for sig in [
        "after-tcp_enter_loss:icsk_retransmits-0",
        "after-tcp_enter_recovery:icsk_retransmits-0",
        "after-tcp_enter_recovery:icsk_retransmits-1",
    ] {
        let line = out
            .lines()
            .find(|l| l.contains(&format!("I2:tcp_enter_recovery:from-Loss:{sig} ")))
            .unwrap_or_else(|| panic!("{sig} not reported:\n{out}"));
        assert!(line.contains("accepted (F9, baseline)"), "{line}");
    }
    let mut bare = args.to_vec();
    bare.extend(["--baseline", "no-such-baseline.toml"]);
    let (code, out, _) = trc!(&bare);
    assert_eq!(code, 1, "{out}");
}

/// `trc matrix` judges cells by signature: linux-6.18's I1 on SACK connections is violated only
/// by accepted findings (`acc`, with the findings in JSON), while a known-bug profile fails on its
/// own mechanism even where an accepted finding occurs too (da34ac7626b5, non-SACK: the same
/// timestamp evidence as F1's Loss form, plus `dupack`).
#[test]
fn matrix_cells_separate_accepted_findings_from_new_violations() {
    let (code, out, _) = trc!(&[
        "matrix",
        "--profile",
        "linux-6.18",
        "--profile",
        "pre-da34ac7626b5",
        "--json",
    ]);
    assert_eq!(code, 0, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let base = &v[0]["properties"]["I1"];
    assert_eq!(base["violated"], false, "{base}");
    assert!(
        base["accepted"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f == "F1"),
        "{base}"
    );
    let pre = &v[1]["properties"]["I1"];
    assert_eq!(pre["violated"], true, "{pre}");
    assert_eq!(pre["steps"], 3, "{pre}");
    let (_, text, _) = trc!(&[
        "matrix",
        "--profile",
        "linux-6.18",
        "--profile",
        "pre-da34ac7626b5",
    ]);
    let row = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name))
            .unwrap()
            .split_whitespace()
            .nth(1)
            .unwrap()
            .to_string()
    };
    assert_eq!(row("linux-6.18"), "acc", "{text}");
    assert_eq!(row("pre-da34ac7626b5"), "✗3", "{text}");
}
