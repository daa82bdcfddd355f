//! The peer's receive window on the model replay. The model has no flow control, so a
//! transmission the kernel's window test would hold back (`tcp_snd_wnd_test()`,
//! `__tcp_retransmit_skb()`) stops the replay as out of scope instead of failing a later line;
//! the window itself follows the kernel: the SYN's unscaled, the handshake's last ACK and later
//! ACKs scaled, and updated only as `tcp_may_update_window()` allows.

use trc_model::Profile;
use trc_trace::replay::{replay, ReplayOptions, ReplayReport};

/// A passive open (the peer's SYN offers window scale 7), the handshake's last ACK advertising
/// `hs_win`, 3000 bytes written and sent as one TSO burst, then `tail`.
fn script(hs_win: u32, tail: &str) -> String {
    format!(
        "0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
+0 setsockopt(3, SOL_SOCKET, SO_REUSEADDR, [1], 4) = 0
+0 bind(3, ..., ...) = 0
+0 listen(3, 1) = 0
+0 < S 0:0(0) win 65535 <mss 1000,sackOK,nop,nop,nop,wscale 7>
+0 > S. 0:0(0) ack 1 <mss 1460,nop,nop,sackOK,nop,wscale 8>
+.05 < . 1:1(0) ack 1 win {hs_win}
+0 accept(3, ..., ...) = 4
+0 write(4, ..., 3000) = 3000
+0 > P. 1:3001(3000) ack 1
{tail}"
    )
}

fn run(src: &str) -> ReplayReport {
    let name = "peer-window.pkt";
    let s = trc_pkt::parse(src, name).unwrap_or_else(|e| panic!("{e}"));
    replay(&s, name, &Profile::linux_6_18(), &ReplayOptions::default())
}

/// `(line, why)` where the replay stopped, with its report for the message.
fn stopped(r: &ReplayReport) -> (u32, String) {
    r.script
        .stopped
        .clone()
        .unwrap_or_else(|| panic!("not stopped:\n{}", r.render()))
}

#[test]
fn a_wide_window_leaves_the_replay_alone() {
    // 257 << 7 = 32896 bytes: the window never binds.
    let r = run(&script(257, "+.05 < . 1:1(0) ack 3001 win 257\n"));
    assert_eq!(r.exit_code(), 0, "{}", r.render());
}

#[test]
fn a_window_below_the_flight_stops_at_the_write() {
    // 16 << 7 = 2048 bytes: the kernel sends 1:2001 and holds 2001:3001; the model would send
    // all three, so the write (line 9) is where the script leaves the model's scope.
    let r = run(&script(16, "+.05 < . 1:1(0) ack 3001 win 257\n"));
    assert_eq!(r.exit_code(), 3, "{}", r.render());
    let (line, why) = stopped(&r);
    assert_eq!(line, 9, "{why}");
    assert!(why.contains("receive window"), "{why}");
    assert!(why.contains("2001:3001"), "{why}");
    assert!(r.first_failure().is_none(), "{}", r.render());
}

#[test]
fn an_ack_that_advances_snd_una_shrinks_the_window() {
    // ack 1001 advances snd_una: its window (4 << 7 = 512 bytes) is taken even though smaller,
    // so a further segment 3001:4001 is beyond 1001 + 512.
    let tail = "+.05 < . 1:1(0) ack 1001 win 4\n+0 write(4, ..., 1000) = 1000\n";
    let r = run(&script(257, tail));
    assert_eq!(r.exit_code(), 3, "{}", r.render());
    let (line, why) = stopped(&r);
    assert_eq!(line, 12, "{why}");
    assert!(why.contains("1001 + 512"), "{why}");
}

#[test]
fn a_duplicate_ack_with_a_smaller_window_changes_nothing() {
    // ack 1 neither advances snd_una nor carries a newer sequence number, and its window is
    // smaller: tcp_may_update_window() refuses it, so snd_wnd stays 32896 bytes and the next
    // write goes out as on the kernel.
    let tail = "+.05 < . 1:1(0) ack 1 win 4
+0 write(4, ..., 1000) = 1000
+0 > P. 3001:4001(1000) ack 1
+.05 < . 1:1(0) ack 4001 win 257
";
    let r = run(&script(257, tail));
    assert!(r.script.stopped.is_none(), "{}", r.render());
    assert!(r.first_failure().is_none(), "{}", r.render());
}

#[test]
fn a_syn_ack_window_is_not_scaled() {
    // Active open: the SYN-ACK's window 2000 is bytes (never scaled), enough for two segments
    // of 1000 but not three.
    let src = "0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
+0 connect(3, ..., ...) = 0
+0 > S 0:0(0) <mss 1460,sackOK,TS val 100 ecr 0,nop,wscale 8>
+.01 < S. 0:0(0) ack 1 win 2000 <mss 1000,nop,nop,sackOK,nop,wscale 7>
+0 > . 1:1(0) ack 1
+0 write(3, ..., 3000) = 3000
";
    let r = run(src);
    assert_eq!(r.exit_code(), 3, "{}", r.render());
    let (line, why) = stopped(&r);
    assert_eq!(line, 6, "{why}");
    assert!(why.contains("2001:3001"), "{why}");
    assert!(why.contains("1 + 2000"), "{why}");
}
