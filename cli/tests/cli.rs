//! End-to-end checks of the `trc` binary: exit codes and input errors.

use std::process::Command;

fn trc(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_trc")).args(args).current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

fn tmp(name: &str, content: &str) -> String {
    let dir = std::env::temp_dir().join(format!("trc-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, content).unwrap();
    p.to_string_lossy().into_owned()
}

#[test]
fn bad_inputs_exit_2_with_file_line() {
    let p = tmp("p.toml", "base = \"linux-6.18\"\npacket_delayed = \"nope\"\n");
    let (code, _, err) = trc(&["check", "--profile", &p]);
    assert_eq!(code, 2);
    assert!(err.contains("p.toml:2:"), "{err}");
    let c = tmp("c.toml", "segments = 4\nbogus = 1\n");
    let (code, _, err) = trc(&["check", "--config", &c]);
    assert_eq!(code, 2);
    assert!(err.contains("c.toml:2:"), "{err}");
    let c = tmp("b.toml", "initcwnd = 4\nsegments = 20000\n");
    let (code, _, err) = trc(&["check", "--config", &c]);
    assert_eq!(code, 2);
    assert!(err.contains("b.toml:2: impossible bounds: segments"), "{err}");
    let (code, _, err) = trc(&["check", "--segments", "0"]);
    assert_eq!(code, 2);
    assert!(err.contains("--segments: impossible bounds: segments"), "{err}");
    // A flag that overrides the file's value is what the error names, not the file's line.
    let c = tmp("f.toml", "initcwnd = 4
segments = 6
");
    let (code, _, err) = trc(&["check", "--config", &c, "--segments", "20000"]);
    assert_eq!(code, 2);
    assert!(err.contains("--segments: impossible bounds: segments") && !err.contains("f.toml:2"), "{err}");
    let (code, _, err) = trc(&["check", "--property", "I99"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown property"), "{err}");
    let (code, _, _) = trc(&["check", "--no-such-flag"]);
    assert_eq!(code, 2);
}

#[test]
fn seed_bug_exits_1_on_6_15_and_0_on_6_18() {
    let (code, out, _) = trc(&["check", "--profile", "linux-6.15", "--no-sack", "--property", "I1"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("VIOLATED") && out.contains("non-SACK hold at snd_una == high_seq") && out.contains("→ undo "), "{out}");
    let (code, out, _) = trc(&["check", "--profile", "linux-6.18", "--no-sack", "--property", "I1"]);
    assert_eq!(code, 0, "{out}");
}

/// The counterexample names the MIB counters each step moved, as nstat prints them: the seed
/// bug's RTO (`tcp_retransmit_timer`: TCPTimeouts, `__tcp_retransmit_skb`: RetransSegs) and its
/// undo (`tcp_try_undo_loss` without F-RTO: TCPLossUndo), in the text and in the JSON.
#[test]
fn counterexample_names_the_counters_its_undo_bumps() {
    let (code, out, _) = trc(&["check", "--profile", "linux-6.15", "--no-sack", "--property", "I1", "--json"]);
    assert_eq!(code, 1, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let steps = v["properties"][0]["counterexample"].as_array().unwrap();
    let with = |name: &str| steps.iter().filter(|s| s["counters"][name].as_u64() == Some(1)).map(|s| s["event"].as_str().unwrap().to_string()).collect::<Vec<_>>();
    assert_eq!(with("TcpExtTCPTimeouts"), vec!["RTO fires".to_string()]);
    let undo = with("TcpExtTCPLossUndo");
    assert_eq!(undo.len(), 1, "{undo:?}");
    let last = steps.last().unwrap();
    assert_eq!(last["counters"]["TcpExtTCPLossUndo"], 1, "the undo is the violating step");
    assert!(steps.iter().all(|s| s["counters"].get("TcpExtTCPFullUndo").is_none()));
    let (_, text, _) = trc(&["check", "--profile", "linux-6.15", "--no-sack", "--property", "I1"]);
    assert!(text.contains("counters: TcpExtTCPLossUndo +1"), "{text}");
}

#[test]
fn user_profile_file_reproduces_the_bug() {
    let p = tmp("mypatch.toml", "base = \"linux-6.18\"\npacket_delayed = \"e37ab7\"\n");
    let (code, out, _) = trc(&["check", "--profile", &p, "--no-sack", "--property", "I1", "--json"]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["profile"]["name"], "mypatch");
    assert_eq!(v["properties"][0]["verdict"], "Violated");
}

#[test]
fn default_check_exits_0_with_the_baselined_finding() {
    let (code, out, _) = trc(&["check"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("accepted finding"), "{out}");
}
