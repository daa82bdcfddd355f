//! A script's closing `nstat -asz NAMES | awk '...'` line, as held-out corpora end, evaluated by
//! `trc replay` through `/bin/sh` and the model's `nstat`: the pipeline's exit status is the
//! check, on the counters the model computed. The script is ours; it passes on linux-6.18 under
//! `trc kernel run` and packetdrill alike (docs/lab/notebook.md, 2026-12-04). Skipped where the
//! line cannot run confined (no namespaces) or `awk` is missing.

use trc_model::Profile;
use trc_pkt::report::Status;
use trc_trace::replay::{replay, ReplayOptions, ReplayReport};

/// One loss (1:1001) repaired by a SACK fast retransmit; the last line's awk program exits 1
/// unless the counters are `want` (SackRecovery, FastRetrans, RetransSegs, LossProbes,
/// Timeouts).
fn script(want: [u32; 5]) -> String {
    let [r, f, s, p, t] = want;
    format!(
        "`sysctl -q net.ipv4.tcp_timestamps=0 net.ipv4.tcp_sack=1 net.ipv4.tcp_recovery=1; nstat -n`
    0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
   +0 setsockopt(3, SOL_SOCKET, SO_REUSEADDR, [1], 4) = 0
   +0 bind(3, ..., ...) = 0
   +0 listen(3, 1) = 0
   +0 < S 0:0(0) win 32792 <mss 1000,sackOK,nop,nop,nop,wscale 7>
   +0 > S. 0:0(0) ack 1 <...>
 +.05 < . 1:1(0) ack 1 win 320
   +0 accept(3, ..., ...) = 4
   +0 write(4, ..., 6000) = 6000
   +0 > P. 1:6001(6000) ack 1
 +.05 < . 1:1(0) ack 1 win 320 <sack 1001:2001,nop,nop>
   +0 < . 1:1(0) ack 1 win 320 <sack 1001:3001,nop,nop>
   +0 < . 1:1(0) ack 1 win 320 <sack 1001:4001,nop,nop>
   +0 > . 1:1001(1000) ack 1
   +0 %{{ assert tcpi_ca_state == TCP_CA_Recovery, tcpi_ca_state }}%
   +0 < . 1:1(0) ack 1 win 320 <sack 1001:5001,nop,nop>
   +0 < . 1:1(0) ack 1 win 320 <sack 1001:6001,nop,nop>
 +.05 < . 1:1(0) ack 6001 win 320
   +0 %{{ assert tcpi_ca_state == TCP_CA_Open, tcpi_ca_state }}%
   +0 `nstat -asz TcpExtTCPSackRecovery TcpExtTCPFastRetrans TcpRetransSegs TcpExtTCPLossProbes TcpExtTCPTimeouts | awk '
     $1 == \"TcpExtTCPSackRecovery\" {{ r = $2 }} $1 == \"TcpExtTCPFastRetrans\" {{ f = $2 }}
     $1 == \"TcpRetransSegs\" {{ s = $2 }} $1 == \"TcpExtTCPLossProbes\" {{ p = $2 }} $1 == \"TcpExtTCPTimeouts\" {{ t = $2 }}
     END {{ if (r != {r} || f != {f} || s != {s} || p != {p} || t != {t}) {{ print \"unexpected:\", r, f, s, p, t; exit 1 }} }}'`
"
    )
}

/// The last line's number in [`script`].
const NSTAT_LINE: u32 = 21;

fn run(want: [u32; 5]) -> ReplayReport {
    let dir = std::env::temp_dir().join(format!("trc-nstat-pipeline-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("sack-fr-nstat.pkt");
    let text = script(want);
    std::fs::write(&file, &text).unwrap();
    let name = file.display().to_string();
    let s = trc_pkt::parse(&text, &name).unwrap_or_else(|e| panic!("{e}"));
    let r = replay(&s, &name, &Profile::linux_6_18(), &ReplayOptions::default());
    std::fs::remove_dir_all(&dir).ok();
    r
}

/// Why the shell lines cannot be judged here, if they cannot.
fn unavailable(r: &ReplayReport) -> Option<String> {
    let has_awk = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("awk").is_file()));
    if !has_awk {
        return Some("no awk on PATH".into());
    }
    r.script
        .lines
        .iter()
        .find(|l| l.line == NSTAT_LINE && l.status == Status::OutOfScope)
        .and_then(|l| l.message.clone())
        .filter(|m| m.contains("confined"))
}

#[test]
fn the_closing_nstat_awk_line_is_a_check_on_the_models_counters() {
    let r = run([1, 1, 1, 0, 0]);
    if let Some(why) = unavailable(&r) {
        eprintln!("skipped: nstat pipeline on the model: {why}");
        return;
    }
    assert_eq!(r.exit_code(), 0, "{}", r.render());
    let last = r
        .script
        .lines
        .iter()
        .find(|l| l.line == NSTAT_LINE)
        .unwrap_or_else(|| panic!("no line {NSTAT_LINE}:\n{}", r.render()));
    assert_eq!(last.status, Status::Pass, "{}", r.render());

    // The same pipeline expecting a loss probe the model did not send: awk exits 1, and that
    // line (only) fails.
    let r = run([1, 1, 1, 1, 0]);
    assert_eq!(r.exit_code(), 1, "{}", r.render());
    assert_eq!(
        r.first_failure().map(|l| l.line),
        Some(NSTAT_LINE),
        "{}",
        r.render()
    );
}
