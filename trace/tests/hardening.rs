//! Odd numbers in scripts replayed on the model: no panic, no wrap-around, the model's limits
//! hold (a script the model cannot follow stops the replay at its line, incomplete, exit 3).

use trc_model::Profile;
use trc_trace::replay::{replay, ReplayOptions, ReplayReport};

/// A passive open with `syn_opts` on the SYN, then `rest`.
fn script(syn_opts: &str, rest: &str) -> String {
    format!(
        "    0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n   +0 setsockopt(3, SOL_SOCKET, SO_REUSEADDR, [1], 4) = 0\n   +0 bind(3, ..., ...) = 0\n   +0 listen(3, 1) = 0\n   +0 < S 0:0(0) win 32792 <{syn_opts}>\n   +0 > S. 0:0(0) ack 1 <...>\n +.05 < . 1:1(0) ack 1 win 320\n   +0 accept(3, ..., ...) = 4\n{rest}"
    )
}

fn run(src: &str) -> ReplayReport {
    let s = trc_pkt::parse(src, "t.pkt").unwrap_or_else(|e| panic!("{e}\n{src}"));
    replay(
        &s,
        "t.pkt",
        &Profile::linux_6_18(),
        &ReplayOptions::default(),
    )
}

/// The MSS the model negotiated (from the SYN line's note).
fn mss(r: &ReplayReport) -> String {
    let l = r.lines().iter().find(|l| l.line == 5).unwrap();
    l.notes
        .iter()
        .find_map(|n| n.split("MSS ").nth(1))
        .unwrap_or_else(|| panic!("{}", r.render()))
        .to_string()
}

#[test]
fn mss_option_as_the_kernel_clamps_it() {
    // An MSS option of 0 is ignored (the default 536); a tiny one is raised to
    // net.ipv4.tcp_min_snd_mss (48) before the timestamp option's 12 bytes are taken off.
    for (opts, want) in [
        ("mss 0,sackOK,nop,nop,nop,wscale 7", "536"),
        ("mss 0,sackOK,TS val 100 ecr 0,nop,wscale 7", "524"),
        ("mss 12,sackOK,TS val 100 ecr 0,nop,wscale 7", "36"),
        ("mss 5,sackOK,TS val 100 ecr 0,nop,wscale 7", "36"),
        ("mss 1,sackOK,nop,nop,nop,wscale 7", "48"),
        ("mss 65535,sackOK,nop,nop,nop,wscale 7", "1460"),
        ("mss 1000,sackOK,nop,nop,nop,wscale 7", "1000"),
    ] {
        let r = run(&script(opts, "   +0 write(4, ..., 480) = 480\n"));
        assert_eq!(mss(&r), want, "<{opts}>\n{}", r.render());
    }
}

#[test]
fn negative_writes_do_not_lift_the_segment_cap() {
    // One segment more than the model tracks, then a negative write that would bring the net
    // total back under the cap: the cap counts what was written, so the model never starts.
    let big = (trc_model::config::MAX_SEGMENTS as i64 + 1) * 1000;
    let back = big - 1000;
    let r = run(&script(
        "mss 1000,sackOK,nop,nop,nop,wscale 7",
        &format!("   +0 write(4, ..., {big}) = {big}\n   +0 write(4, ..., -{back}) = -{back}\n"),
    ));
    assert_eq!(r.exit_code(), 3, "{}", r.render());
    assert!(r.config.is_none(), "no model was started: {:?}", r.config);
    let (line, why) = r.script.stopped.clone().unwrap();
    assert_eq!(line, 9, "{why}");
    assert!(why.contains("at most"), "{why}");
}

#[test]
fn huge_writes_are_refused_not_truncated() {
    for n in ["4294968000", "9223372036854775000", "1099511627776000"] {
        let r = run(&script(
            "mss 1000,sackOK,nop,nop,nop,wscale 7",
            &format!("   +0 write(4, ..., {n}) = {n}\n   +0 write(4, ..., {n}) = {n}\n"),
        ));
        assert_eq!(r.exit_code(), 3, "{}", r.render());
        let (line, why) = r.script.stopped.clone().unwrap();
        assert_eq!(line, 9, "{why}");
        assert!(r.config.is_none());
    }
}

#[test]
fn every_started_model_has_a_valid_config() {
    for w in [
        &["1000"][..],
        &["24000"],
        &["6000", "18000"],
        &["1000", "0", "-1000", "1000"],
    ] {
        let writes: String = w
            .iter()
            .map(|n| format!("   +0 write(4, ..., {n}) = {n}\n"))
            .collect();
        let r = run(&script("mss 1000,sackOK,nop,nop,nop,wscale 7", &writes));
        let cfg = r.config.clone().unwrap_or_else(|| panic!("{}", r.render()));
        cfg.validate().unwrap();
    }
}

#[test]
fn extreme_times_do_not_overflow() {
    // The largest time a script may write, many times over: the model's clock (1 h) stops the
    // replay at the line that goes beyond it.
    let far = "+1000000";
    let acks: String = (0..12)
        .map(|_| format!("{far} < . 1:1(0) ack 1001 win 320\n"))
        .collect();
    let r = run(&script(
        "mss 1000,sackOK,nop,nop,nop,wscale 7",
        &format!("   +0 write(4, ..., 1000) = 1000\n{acks}{far} > . 1:1001(1000) ack 1\n"),
    ));
    assert_eq!(r.exit_code(), 3, "{}", r.render());
    let (line, why) = r.script.stopped.clone().unwrap();
    assert_eq!(line, 10, "{why}");
    assert!(why.contains("clock"), "{why}");
    let shells: String = (0..12).map(|_| format!("{far} `sleep 1`\n")).collect();
    let r = run(&format!("0 `sleep 1`\n{shells}"));
    assert!(matches!(r.exit_code(), 0 | 1 | 3), "{}", r.render());
    // Beyond the largest: a parse error with the position.
    let e = trc_pkt::parse("0 `true`\n+1000000.000001 `true`\n", "t.pkt")
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("t.pkt:2:") && e.contains("at most 1000000"),
        "{e}"
    );
}

#[test]
fn a_second_syn_does_not_reslice_the_data() {
    // Found by the fuzzer: a second SYN with a smaller MSS after the first write re-sliced the
    // later writes, which then overran the model's segments (index out of bounds in
    // tcp_transmit_new). A SYN after the handshake is a second connection: out of scope.
    let r = run(&script(
        "mss 1000,sackOK,nop,nop,nop,wscale 7",
        "   +0 write(4, ..., 4000) = 4000\n   +0 < S 0:0(0) win 32792 <mss 100>\n   +0 write(4, ..., 9000) = 9000\n",
    ));
    assert_eq!(r.exit_code(), 3, "{}", r.render());
    let (line, why) = r.script.stopped.clone().unwrap();
    assert_eq!(line, 10, "{why}");
    assert!(why.contains("second connection"), "{why}");
    // Before the first write too (the MSS of the first handshake stays).
    let r = run(&script(
        "mss 1000,sackOK,nop,nop,nop,wscale 7",
        "   +0 < S 0:0(0) win 32792 <mss 100>\n   +0 write(4, ..., 1000) = 1000\n",
    ));
    assert_eq!(r.exit_code(), 3, "{}", r.render());
    assert_eq!(r.script.stopped.clone().unwrap().0, 9);
}
