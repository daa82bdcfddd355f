//! The monitors on hand-built traces: each can fail, each can hold, and a run that does not show
//! which copy arrived is undecided.

use super::ghost::Ghost;
use super::monitor::{monitors, Outcome};
use super::observe::*;
use std::collections::BTreeMap;
use trc_kernel::packet::WireOption;
use trc_kernel::{RunReport, TcpInfoSnapshot, TraceEvent, TraceSegment};

pub(crate) fn info(
    ca: u8,
    cwnd: u32,
    ssth: u32,
    retransmits: u8,
    delivered: u32,
) -> TcpInfoSnapshot {
    TcpInfoSnapshot {
        state: 1,
        ca_state: ca,
        ca_state_name: ["Open", "Disorder", "CWR", "Recovery", "Loss"][ca as usize].into(),
        snd_cwnd: cwnd,
        snd_ssthresh: ssth,
        reordering: 3,
        retransmits,
        delivered,
        ..Default::default()
    }
}

/// A trace built event by event; counters are cumulative, as the runner records them.
#[derive(Default)]
pub(crate) struct B {
    pub(crate) k: KTrace,
    t: f64,
    counters: BTreeMap<String, i64>,
    line: u32,
    pending: Vec<usize>,
}

impl B {
    pub(crate) fn new(sack: bool, ts: bool) -> B {
        B {
            k: KTrace {
                sack,
                ts,
                ..Default::default()
            },
            ..Default::default()
        }
    }
    pub(crate) fn send(&mut self, seq: u32, end: u32, tsval: u32) -> &mut Self {
        self.t += 1.0;
        let max = self.k.sends.iter().map(|s| s.end).max().unwrap_or(1);
        self.k.sends.push(Send {
            t_ms: self.t,
            seq,
            end,
            tsval: self.k.ts.then_some(tsval),
            retrans: seq < max,
        });
        self
    }
    pub(crate) fn ack(
        &mut self,
        ack: u32,
        sacks: &[(u32, u32)],
        dsack: Option<(u32, u32)>,
        ecr: u32,
    ) -> &mut Self {
        self.t += 1.0;
        self.k.acks.push(Ack {
            t_ms: self.t,
            line: self.line + 1,
            ack,
            sacks: sacks.to_vec(),
            dsack,
            tsecr: self.k.ts.then_some(ecr),
        });
        self.pending.push(self.k.acks.len() - 1);
        self
    }
    pub(crate) fn count(&mut self, name: &str) -> &mut Self {
        *self.counters.entry(name.to_string()).or_default() += 1;
        self
    }
    pub(crate) fn step(&mut self, i: TcpInfoSnapshot) -> &mut Self {
        self.t += 0.5;
        self.line += 1;
        self.k.steps.push(Step {
            line: self.line,
            t_ms: self.t,
            info: i,
            counters: self.counters.clone(),
            acks: std::mem::take(&mut self.pending),
        });
        self
    }
}

pub(crate) fn check(id: &str, k: &KTrace, g: &Ghost) -> Outcome {
    (monitors().into_iter().find(|m| m.id == id).unwrap().check)(k, g)
}

pub(crate) fn inferred() -> Ghost {
    Ghost::of_script("// hand-written\n")
}

/// Finding F1's shape: seg 2 only delayed, seg 4 really lost; the RTO during Recovery, then the
/// delayed original's ACK (echoing the first flight's TSval) undoes the episode. `last_ecr` is
/// what the final ACK (filling the hole at 3001) echoes.
fn f1(ts: bool, last_ecr: u32) -> KTrace {
    let mut b = B::new(true, ts);
    b.send(1, 5001, 200)
        .step(info(0, 10, INFINITE_SSTHRESH, 0, 0));
    b.ack(1001, &[], None, 200)
        .step(info(0, 10, INFINITE_SSTHRESH, 0, 1));
    b.ack(1001, &[(2001, 3001)], None, 200)
        .step(info(1, 10, INFINITE_SSTHRESH, 0, 2));
    b.send(1001, 2001, 300).step(info(3, 3, 7, 0, 2));
    b.ack(1001, &[(2001, 3001), (4001, 5001)], None, 200)
        .send(3001, 4001, 310)
        .step(info(3, 2, 7, 0, 3));
    b.count("TcpExtTCPTimeouts")
        .send(1001, 2001, 400)
        .step(info(4, 1, 7, 1, 3));
    b.count("TcpExtTCPLossUndo")
        .ack(3001, &[(4001, 5001)], None, 200)
        .step(info(1, 10, INFINITE_SSTHRESH, 0, 5));
    b.ack(5001, &[], None, last_ecr)
        .step(info(0, 10, INFINITE_SSTHRESH, 0, 6));
    b.k.clone()
}

#[test]
fn i1_fails_on_f1_from_the_scripts_timestamps() {
    let o = check("I1", &f1(true, 310), &inferred());
    let Outcome::Violated { line, detail } = o else {
        panic!("{o:?}")
    };
    assert_eq!(line, 7, "the statement of the undo");
    assert!(
        detail.contains("3001:4001") && detail.contains("LossUndo"),
        "{detail}"
    );
}

#[test]
fn i1_holds_when_the_hole_filler_echoes_the_original() {
    // The last ACK echoes the first flight: 3001:4001's original was only delayed too.
    assert_eq!(check("I1", &f1(true, 200), &inferred()), Outcome::Holds);
}

#[test]
fn i1_without_timestamps_is_undecided_unless_declared() {
    assert!(matches!(
        check("I1", &f1(false, 0), &inferred()),
        Outcome::Undecided { .. }
    ));
    let declared = Ghost::of_script("// model segment k = bytes 1+1000k\n// step 1: the network drops seg 4 (3001:4001, original sent at 0 ms): it is never ACKed\n");
    assert!(matches!(
        check("I1", &f1(false, 0), &declared),
        Outcome::Violated { .. }
    ));
    let none_dropped = Ghost::of_script("// model segment k = bytes 1+1000k\n");
    assert_eq!(check("I1", &f1(false, 0), &none_dropped), Outcome::Holds);
}

#[test]
fn i1_a_dsack_proves_the_original_arrived() {
    let mut k = f1(true, 310);
    k.acks.last_mut().unwrap().dsack = Some((3001, 4001));
    assert_eq!(check("I1", &k, &inferred()), Outcome::Holds);
}

/// A non-SACK RTO recovery of seg 1 (1:1001) of 5; `exit_at_high_seq` leaves Loss on the ACK that
/// reaches high_seq (5001) instead of holding.
fn nonsack_rto(exit_at_high_seq: bool) -> KTrace {
    let mut b = B::new(false, true);
    b.send(1, 5001, 200)
        .step(info(0, 5, INFINITE_SSTHRESH, 0, 0));
    b.count("TcpExtTCPTimeouts")
        .send(1, 1001, 452)
        .step(info(4, 1, 3, 1, 0));
    b.ack(1, &[], None, 200).step(info(4, 1, 3, 1, 0));
    b.ack(5001, &[], None, 452)
        .step(info(if exit_at_high_seq { 0 } else { 4 }, 3, 3, 0, 5));
    b.send(5001, 6001, 514)
        .ack(6001, &[], None, 514)
        .step(info(0, 4, 3, 0, 6));
    b.k.clone()
}

#[test]
fn i14_fails_when_leaving_loss_at_high_seq() {
    assert!(matches!(
        check("I14", &nonsack_rto(true), &inferred()),
        Outcome::Violated { line: 4, .. }
    ));
    assert_eq!(
        check("I14", &nonsack_rto(false), &inferred()),
        Outcome::Holds
    );
    let mut sack = nonsack_rto(true);
    sack.sack = true;
    assert_eq!(
        check("I14", &sack, &inferred()),
        Outcome::Holds,
        "a SACK sender is not held"
    );
}

fn recovery_exit(cwnd_at_exit: u32) -> KTrace {
    let mut b = B::new(true, true);
    b.send(1, 9001, 200)
        .step(info(0, 10, INFINITE_SSTHRESH, 0, 0));
    b.ack(1, &[(1001, 4001)], None, 200)
        .send(1, 1001, 300)
        .step(info(3, 7, 7, 0, 3));
    b.ack(9001, &[], None, 300)
        .step(info(0, cwnd_at_exit, 7, 0, 9));
    b.k.clone()
}

#[test]
fn i13_fails_when_recovery_ends_off_ssthresh() {
    assert_eq!(check("I13", &recovery_exit(7), &inferred()), Outcome::Holds);
    assert_eq!(
        check("I13", &recovery_exit(9), &inferred()),
        Outcome::Holds,
        "within congestion avoidance's slack for 6 delivered"
    );
    assert!(matches!(
        check("I13", &recovery_exit(3), &inferred()),
        Outcome::Violated { line: 3, .. }
    ));
    assert!(matches!(
        check("I13", &recovery_exit(20), &inferred()),
        Outcome::Violated { .. }
    ));
}

fn rto_in_recovery(ssthresh_after: u32) -> KTrace {
    let mut b = B::new(true, true);
    b.send(1, 9001, 200)
        .step(info(0, 10, INFINITE_SSTHRESH, 0, 0));
    b.ack(1, &[(1001, 4001)], None, 200)
        .send(1, 1001, 300)
        .step(info(3, 7, 7, 0, 3));
    b.count("TcpExtTCPTimeouts")
        .send(1, 1001, 500)
        .step(info(4, 1, ssthresh_after, 1, 3));
    b.k.clone()
}

#[test]
fn i2_fails_on_a_second_reduction_in_one_window() {
    assert_eq!(
        check("I2", &rto_in_recovery(7), &inferred()),
        Outcome::Holds,
        "6.18 keeps ssthresh for an RTO in Recovery"
    );
    assert!(matches!(
        check("I2", &rto_in_recovery(2), &inferred()),
        Outcome::Violated { line: 3, .. }
    ));
}

#[test]
fn i3_fails_on_a_zero_cwnd() {
    assert_eq!(
        check("I3", &rto_in_recovery(7), &inferred()),
        Outcome::Holds
    );
    let mut k = rto_in_recovery(7);
    k.steps[2].info.snd_cwnd = 0;
    assert!(matches!(
        check("I3", &k, &inferred()),
        Outcome::Violated { line: 3, .. }
    ));
}

#[test]
fn an_empty_run_decides_nothing() {
    for m in monitors() {
        assert!(
            matches!(
                (m.check)(&KTrace::default(), &inferred()),
                Outcome::Undecided { .. }
            ),
            "{}",
            m.id
        );
    }
}

fn seg(
    flags: &str,
    seq: u32,
    len: usize,
    ack: u32,
    off_seq: u32,
    off_ack: u32,
    options: Vec<WireOption>,
) -> TraceSegment {
    TraceSegment {
        flags: flags.parse().expect("flags"),
        seq,
        end_seq: seq + len as u32,
        len,
        ack,
        win: 320,
        options,
        live_seq: seq.wrapping_add(off_seq),
        live_ack: ack.wrapping_add(off_ack),
        text: String::new(),
    }
}

#[test]
fn the_trace_reader_maps_sack_blocks_and_finds_dsacks() {
    let off = 0x1000_0000u32; // our ISN: live = script + off
    let mut r = RunReport::new("x.pkt".into());
    let ts = |v, e| WireOption::Timestamp { val: v, ecr: e };
    r.trace.push(TraceEvent::Inbound {
        t_ms: 0.0,
        line: 1,
        segment: seg("S", 0, 0, 0, 0, 0, vec![WireOption::SackOk, ts(1, 0)]),
    });
    r.trace.push(TraceEvent::Outbound {
        t_ms: 0.1,
        line: Some(2),
        segment: seg("S.", 0, 0, 1, off, 0, vec![WireOption::SackOk, ts(7, 1)]),
    });
    r.trace.push(TraceEvent::Outbound {
        t_ms: 1.0,
        line: Some(4),
        segment: seg("P.", 1, 3000, 1, off, 0, vec![ts(9, 1)]),
    });
    r.trace.push(TraceEvent::Outbound {
        t_ms: 2.0,
        line: Some(5),
        segment: seg(".", 1, 1000, 1, off, 0, vec![ts(11, 1)]),
    });
    let sack = |blocks: Vec<(u32, u32)>| WireOption::Sack {
        blocks: blocks
            .into_iter()
            .map(|(a, b)| (a + off, b + off))
            .collect(),
    };
    r.trace.push(TraceEvent::Inbound {
        t_ms: 3.0,
        line: 6,
        segment: seg(
            ".",
            1,
            0,
            3001,
            0,
            off,
            vec![sack(vec![(1, 1001)]), ts(2, 11)],
        ),
    });
    r.trace.push(TraceEvent::Inbound {
        t_ms: 4.0,
        line: 7,
        segment: seg(
            ".",
            1,
            0,
            1,
            0,
            off,
            vec![sack(vec![(1001, 2001), (1001, 3001)])],
        ),
    });
    r.trace.push(TraceEvent::TcpInfo {
        t_ms: 4.5,
        line: 7,
        info: info(0, 10, INFINITE_SSTHRESH, 0, 3),
        counters: BTreeMap::new(),
    });
    let k = KTrace::from_report(&r);
    assert!(k.sack && k.ts);
    assert_eq!(k.sends.len(), 2);
    assert!(!k.sends[0].retrans && k.sends[1].retrans);
    assert_eq!(
        (k.acks[0].ack, k.acks[0].dsack, k.acks[0].tsecr),
        (3001, Some((1, 1001)), Some(11)),
        "a block below the ACK is a DSACK"
    );
    assert_eq!(
        k.acks[1].dsack,
        Some((1001, 2001)),
        "a first block inside the second is a DSACK"
    );
    assert_eq!(k.acks[1].sacks, vec![(1001, 3001)]);
    assert_eq!(k.steps.len(), 1);
    assert_eq!(k.steps[0].acks, vec![0, 1]);
}

#[test]
fn i11_checks_the_restored_values() {
    // F1: prior cwnd 10 and an infinite ssthresh come back.
    assert_eq!(check("I11", &f1(true, 310), &inferred()), Outcome::Holds);
    let mut k = f1(true, 310);
    k.steps[6].info.snd_ssthresh = 7; // the undo kept the reduced ssthresh
    assert!(matches!(
        check("I11", &k, &inferred()),
        Outcome::Violated { line: 7, .. }
    ));
    let mut k = f1(true, 310);
    k.steps[6].info.snd_cwnd = 4; // cwnd not restored to prior_cwnd 10
    assert!(matches!(
        check("I11", &k, &inferred()),
        Outcome::Violated { .. }
    ));
    let mut k = f1(true, 310);
    k.steps[6].info.snd_cwnd = 12; // slow start after the undo: 10 + 2 delivered
    assert_eq!(check("I11", &k, &inferred()), Outcome::Holds);
    k.steps[6].info.snd_cwnd = 14; // more than the ACK could add
    assert!(matches!(
        check("I11", &k, &inferred()),
        Outcome::Violated { .. }
    ));
}

/// A run whose setup shell line failed (e.g. defaults.sh writing a sysctl the kernel lacks) ran
/// the connection in another configuration than the scenario's: every monitor is undecided, none
/// holds — even when the trace itself shows nothing wrong.
#[test]
fn a_failed_setup_line_decides_nothing() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../counterexamples/kernel/fr-sack.pkt");
    let case = super::Case::from_file(&path, "fr-sack".into(), "test".into()).unwrap();
    let mut r = RunReport::new("fr-sack.pkt".into());
    r.trace.push(TraceEvent::TcpInfo {
        t_ms: 1.0,
        line: 20,
        info: info(0, 10, INFINITE_SSTHRESH, 0, 0),
        counters: BTreeMap::new(),
    });
    let line = |kind, status| trc_pkt::report::LineResult {
        line: 6,
        col: 1,
        kind,
        status,
        text: "`../common/defaults.sh`".into(),
        expected: None,
        actual: None,
        message: Some("exit status 1".into()),
        time_ms: None,
        offset_ms: None,
        output: None,
        values: BTreeMap::new(),
        notes: vec![],
    };
    let profile = trc_model::profile::Profile::linux_6_18();
    r.script.lines.push(line(
        trc_pkt::report::LineKind::Shell,
        trc_pkt::report::Status::Pass,
    ));
    let ok = super::evaluate(&case, &Ok(r.clone()), &monitors(), &profile);
    assert!(
        ok.properties.values().any(|o| *o == Outcome::Holds),
        "{:?}",
        ok.properties
    );
    r.script.lines[0] = line(
        trc_pkt::report::LineKind::Shell,
        trc_pkt::report::Status::Fail,
    );
    let bad = super::evaluate(&case, &Ok(r), &monitors(), &profile);
    assert!(!bad.properties.is_empty());
    for (id, o) in &bad.properties {
        assert!(
            matches!(o, Outcome::Undecided { reason } if reason.contains("setup failed at line 6")),
            "{id}: {o:?}"
        );
    }
}

/// A shell line that fails after the connection's packets (a counter check, `nstat -a | grep
/// NAME | grep -q " 1 "`) is a failed check, not a setup failure: the monitors judge the run.
#[test]
fn a_failed_counter_check_after_traffic_is_judged() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../counterexamples/kernel/fr-sack.pkt");
    let case = super::Case::from_file(&path, "fr-sack".into(), "test".into()).unwrap();
    let mut r = RunReport::new("fr-sack.pkt".into());
    r.trace.push(TraceEvent::TcpInfo {
        t_ms: 1.0,
        line: 20,
        info: info(0, 10, INFINITE_SSTHRESH, 0, 0),
        counters: BTreeMap::new(),
    });
    let line = |n, kind, status, text: &str| trc_pkt::report::LineResult {
        line: n,
        col: 1,
        kind,
        status,
        text: text.into(),
        expected: None,
        actual: None,
        message: Some("exit status 1".into()),
        time_ms: None,
        offset_ms: None,
        output: None,
        values: BTreeMap::new(),
        notes: vec![],
    };
    r.script.lines.push(line(
        6,
        trc_pkt::report::LineKind::Shell,
        trc_pkt::report::Status::Pass,
        "`../common/defaults.sh`",
    ));
    r.script.lines.push(line(
        20,
        trc_pkt::report::LineKind::PacketOut,
        trc_pkt::report::Status::Pass,
        "+0 > . 1:1001(1000) ack 1",
    ));
    r.script.lines.push(line(
        30,
        trc_pkt::report::LineKind::Shell,
        trc_pkt::report::Status::Fail,
        "`nstat -a | grep TcpExtTCPDSACKUndo | grep -q \" 1 \"`",
    ));
    let profile = trc_model::profile::Profile::linux_6_18();
    let res = super::evaluate(&case, &Ok(r), &monitors(), &profile);
    assert!(
        res.properties.values().any(|o| *o == Outcome::Holds),
        "{:?}",
        res.properties
    );
    assert!(
        res.properties
            .values()
            .all(|o| !matches!(o, Outcome::Undecided { reason } if reason.contains("setup"))),
        "{:?}",
        res.properties
    );
}

/// A scenario whose profile replay was incomplete is not reported "same as the profile": only
/// what the replay made was compared.
#[test]
fn incomplete_profile_replay_is_not_called_the_same() {
    let mut r = super::CaseResult {
        name: "findings/x.pkt".into(),
        origin: "counterexamples/findings/x.pkt".into(),
        path: "x.pkt".into(),
        ghost: super::ghost::GhostSource::Inferred,
        kernel: super::RunVerdict::Passed,
        kernel_ran: true,
        properties: BTreeMap::new(),
        profile: super::RunVerdict::Script(trc_pkt::report::Verdict::Incomplete {
            reason: "2 checks not made (lines 45, 62)".into(),
        }),
        divergence: None,
        inbound: 3,
        events: None,
        signatures: Vec::new(),
    };
    let line = super::CheckReport::case_line(&r);
    assert!(line.contains("no difference from the profile where its replay ran (profile INCOMPLETE: 2 checks not made"), "{line}");
    assert!(!line.contains("same as the profile"), "{line}");
    r.profile = super::RunVerdict::Script(trc_pkt::report::Verdict::Passed { checks: 10 });
    assert!(super::CheckReport::case_line(&r).ends_with("same as the profile"));
}

// I2's monitor against the model property's exceptions for a Recovery entered before the
// previous reduction's `high_seq`: a lost retransmission in Loss, and a lost segment of a new
// window (properties/src/lib.rs `i2_reduction_ok`), on hand-made traces.

/// [`info`] with `tcpi_lost` instead of `tcpi_delivered`.
fn info_lost(ca: u8, cwnd: u32, ssth: u32, retransmits: u8, lost: u32) -> TcpInfoSnapshot {
    TcpInfoSnapshot {
        lost,
        delivered: 0,
        ..info(ca, cwnd, ssth, retransmits, 0)
    }
}

/// Four segments (1:4001) sent; an RTO (ssthresh 7, high_seq 4001); an ACK of 1:1001 after which
/// the sender sends `new_data` (F-RTO step 2b: 4001:6001 as two segments, or nothing); then a
/// SACK makes the sender enter Recovery from Loss with `snd_una` 1001, before high_seq. In that
/// statement it retransmits `rtx` and reports `lost` segments lost; `lost_retrans` counts a
/// lost retransmission (TCPLostRetransmit).
fn loss_then_recovery(new_data: bool, rtx: (u32, u32), lost: u32, lost_retrans: bool) -> KTrace {
    let mut b = B::new(true, false);
    b.send(1, 1001, 0)
        .send(1001, 2001, 0)
        .send(2001, 3001, 0)
        .send(3001, 4001, 0)
        .step(info_lost(CA_OPEN, 10, INFINITE_SSTHRESH, 0, 0));
    b.count("TcpExtTCPTimeouts")
        .send(1, 1001, 0)
        .step(info_lost(CA_LOSS, 1, 7, 1, 4));
    b.ack(1001, &[], None, 0);
    if new_data {
        b.send(4001, 5001, 0).send(5001, 6001, 0);
    }
    b.step(info_lost(CA_LOSS, 2, 7, 0, 3));
    let sack = if new_data { (5001, 6001) } else { (3001, 4001) };
    b.ack(1001, &[sack], None, 0);
    if lost_retrans {
        b.count("TcpExtTCPLostRetransmit");
    }
    b.send(rtx.0, rtx.1, 0)
        .step(info_lost(CA_RECOVERY, 2, 5, 0, lost));
    b.k.clone()
}

fn i2(k: &KTrace) -> Outcome {
    check("I2", k, &inferred())
}

#[test]
fn a_lost_segment_of_the_new_window_is_the_exception() {
    // RACK marks 4001:5001 (sent after the RTO, at high_seq) lost and retransmits it.
    assert_eq!(
        i2(&loss_then_recovery(true, (4001, 5001), 1, false)),
        Outcome::Holds
    );
    // Only 1001:2001 retransmitted, but tcpi_lost counts 4 while only 3 segments were
    // ever sent in [1001, 4001): one lost segment lies at or above high_seq.
    assert_eq!(
        i2(&loss_then_recovery(true, (1001, 2001), 4, false)),
        Outcome::Holds
    );
}

#[test]
fn new_data_without_a_visible_lost_mark_is_undecided() {
    // Only 1001:2001 (below high_seq) retransmitted and 1 lost: the new data's marks are not
    // visible, so the model's exception can be neither shown nor excluded.
    let o = i2(&loss_then_recovery(true, (1001, 2001), 1, false));
    let Outcome::Undecided { reason } = o else {
        panic!("{o:?}")
    };
    assert!(
        reason.contains("line 4") && reason.contains("high_seq 4001"),
        "{reason}"
    );
}

#[test]
fn loss_to_recovery_needs_a_lost_retransmission_or_a_new_window() {
    // Nothing sent after the RTO and no lost retransmission: the model's I2 fails here.
    let o = i2(&loss_then_recovery(false, (1001, 2001), 1, false));
    let Outcome::Violated { line, detail } = o else {
        panic!("{o:?}")
    };
    assert_eq!(line, 4);
    assert!(
        detail.contains("Recovery") && detail.contains("high_seq 4001"),
        "{detail}"
    );
    // The same with TCPLostRetransmit moving: row 18's exception.
    assert_eq!(
        i2(&loss_then_recovery(false, (1001, 2001), 1, true)),
        Outcome::Holds
    );
}

/// The base-against-patched comparison: the same run is no difference; an undo only the patched
/// kernel does is one, at its step, with both sides' values; a TSval that differs in a line both
/// kernels fail is not.
#[test]
fn patch_comparison_finds_the_first_differing_step() {
    use super::patch::trace_diff;
    use trc_pkt::report::{LineKind, LineResult, Status};
    let run = |undo: bool| {
        let mut b = B::new(false, true);
        b.send(1, 5001, 200)
            .step(info(0, 10, INFINITE_SSTHRESH, 0, 0));
        b.ack(1, &[], None, 200).step(info(4, 1, 7, 1, 0));
        if undo {
            b.count("TcpExtTCPLossUndo");
            b.ack(5001, &[], None, 200)
                .step(info(0, 10, INFINITE_SSTHRESH, 0, 5));
        } else {
            b.ack(5001, &[], None, 200).step(info(0, 7, 7, 0, 5));
        }
        b.k
    };
    let (base, patched) = (run(false), run(true));
    assert_eq!(trace_diff(&base, &base.clone(), &[], &[]), None);
    let d = trace_diff(&base, &patched, &[], &[]).expect("the undo differs");
    assert_eq!(d.line, 3);
    assert!(
        d.what.iter().any(|w| w == "tcpi_snd_cwnd")
            && d.what.iter().any(|w| w == "TcpExtTCPLossUndo"),
        "{:?}",
        d.what
    );
    assert_eq!(d.base.counters.get("TcpExtTCPLossUndo"), Some(&0));
    assert_eq!(d.patched.counters.get("TcpExtTCPLossUndo"), Some(&1));
    assert!(
        d.base.state.starts_with("Open cwnd 7 ssthresh 7")
            && d.patched.state.starts_with("Open cwnd 10 ssthresh inf"),
        "{} / {}",
        d.base.state,
        d.patched.state
    );
    // Both kernels fail line 9 on the same segment; only the TSval (a per-run offset) differs.
    let failed = |ts: &str, cwnd: &str| {
        let mut l = LineResult::new(
            9,
            1,
            LineKind::PacketOut,
            Status::Fail,
            "+0 > . 1:1001(1000)".into(),
        );
        l.actual = Some(format!(
            ". 1:1001(1000) ack 1 win {cwnd} <nop,nop,TS val {ts} ecr 100>"
        ));
        vec![l]
    };
    assert_eq!(
        trace_diff(
            &base,
            &base,
            &failed("4254643109", "1053"),
            &failed("2424647888", "1053")
        ),
        None
    );
    let d = trace_diff(
        &base,
        &base,
        &failed("4254643109", "1053"),
        &failed("2424647888", "2000"),
    )
    .expect("another window is a difference");
    assert_eq!(d.line, 9);
    // The same segment outside its window on one kernel and inside on the other, 3 ms apart
    // (a jiffy of phase between two boots): no difference. 12 ms apart (a patch that moved the
    // timer), or the wrong segment on time: a difference.
    let timed = |status: Status, message: Option<&str>, seq: &str, t: f64| {
        let mut l = LineResult::new(
            9,
            1,
            LineKind::PacketOut,
            status,
            "+.102~+.110 > P. 7001:8001(1000)".into(),
        );
        l.actual = Some(format!("P. {seq}(1000) ack 1 win 1053"));
        l.message = message.map(String::from);
        l.time_ms = Some(t);
        vec![l]
    };
    let late = "timing error: expected outbound packet in time range 0.1~0.11 sec but happened at 0.1145 sec";
    let on_time = timed(Status::Pass, None, "7001:8001", 114.1);
    let jitter = timed(Status::Fail, Some(late), "7001:8001", 117.1);
    assert_eq!(trace_diff(&base, &base, &jitter, &on_time), None);
    let moved = timed(Status::Fail, Some(late), "7001:8001", 126.1);
    assert_eq!(
        trace_diff(&base, &base, &moved, &on_time).map(|d| d.line),
        Some(9)
    );
    let wrong = "live packet field tcp_seq: expected: 7001 vs actual: 6001";
    let wrong = timed(Status::Fail, Some(wrong), "6001:7001", 114.1);
    assert!(trace_diff(&base, &base, &wrong, &on_time).is_some());
}

/// Per scenario: violated on the patched kernel where the base held is new; violated on both
/// is as on base; violated only on the base is fixed.
#[test]
fn patch_property_changes_are_per_scenario() {
    use super::patch::{property_changes, BaseVerdict, Change};
    let case = |name: &str, o: Outcome| case_result(name, o, &[]);
    let v = || Outcome::Violated {
        line: 7,
        detail: "undo".into(),
    };
    let mons: Vec<_> = monitors().into_iter().filter(|m| m.id == "I1").collect();
    let rep = |cs: Vec<super::CaseResult>| {
        super::summarise("s".into(), "k".into(), "p".into(), cs, &mons, &[])
    };
    let base = rep(vec![
        case("f1", v()),
        case("seed", Outcome::Holds),
        case("fixed", v()),
    ]);
    let patched = rep(vec![
        case("f1", v()),
        case("seed", v()),
        case("fixed", Outcome::Holds),
    ]);
    let ch = property_changes(&base, &patched, &|i| Some(i != 1));
    assert_eq!(ch[0].change, Change::NewViolation);
    assert_eq!(ch[0].new_violations.len(), 1);
    assert_eq!(ch[0].new_violations[0].scenario, "seed");
    assert_eq!(ch[0].new_violations[0].sack, Some(false));
    assert_eq!(ch[0].new_violations[0].base, BaseVerdict::Holds);
    assert_eq!(ch[0].fixed, vec!["fixed".to_string()]);
    let same = property_changes(&base, &base, &|_| None);
    assert_eq!(same[0].change, Change::AsOnBase);
    let only_fix = property_changes(
        &base,
        &rep(vec![
            case("f1", v()),
            case("seed", Outcome::Holds),
            case("fixed", Outcome::Holds),
        ]),
        &|_| None,
    );
    assert_eq!(only_fix[0].change, Change::Fixed);
}

/// The base verdict of a new violation is its JSON string, read back as it was written.
#[test]
fn base_verdicts_are_the_report_strings() {
    use super::patch::{BaseVerdict, NotABaseVerdict};
    for (v, text) in [
        (BaseVerdict::NoRun, "no run"),
        (BaseVerdict::Holds, "holds"),
        (BaseVerdict::ViolatedAt(12), "violated at line 12"),
        (BaseVerdict::Undecided, "undecided"),
    ] {
        let json = serde_json::to_value(v).unwrap();
        assert_eq!(json, serde_json::Value::String(text.into()));
        assert_eq!(serde_json::from_value::<BaseVerdict>(json).unwrap(), v);
    }
    assert_eq!(
        BaseVerdict::try_from("violated at line x".to_string()),
        Err(NotABaseVerdict("violated at line x".into()))
    );
}

pub(crate) fn case_result(name: &str, o: Outcome, signatures: &[&str]) -> super::CaseResult {
    super::CaseResult {
        name: name.into(),
        origin: String::new(),
        path: String::new(),
        ghost: super::ghost::GhostSource::Inferred,
        kernel: super::RunVerdict::Passed,
        kernel_ran: true,
        properties: [("I1".to_string(), o)].into_iter().collect(),
        profile: super::RunVerdict::Script(trc_pkt::report::Verdict::Passed { checks: 1 }),
        divergence: None,
        inbound: 3,
        events: None,
        signatures: signatures.iter().map(|x| x.to_string()).collect(),
    }
}

/// The kernel-side baseline: a violation in a scenario that stands for an accepted finding is
/// accepted (verdict `accepted`, exit 0); any other violation of the same property is still a
/// violation, and the shortest reported is one outside the baseline.
#[test]
fn violations_in_accepted_findings_scenarios_are_accepted() {
    let acc = vec![super::Accepted {
        signature: "I1:tcp_try_undo_loss:Loss:ts-echo".into(),
        finding: "F1".into(),
        reason: "r".into(),
    }];
    let mons: Vec<_> = monitors().into_iter().filter(|m| m.id == "I1").collect();
    let v = || Outcome::Violated {
        line: 7,
        detail: "undo".into(),
    };
    let f1 = case_result(
        "findings/f1.pkt",
        v(),
        &["I1:tcp_try_undo_loss:Loss:ts-echo"],
    );
    let other = case_result(
        "random/0001",
        v(),
        &["I1:tcp_try_undo_recovery:Recovery:no-stamp"],
    );
    let undeclared = case_result("kernel/x.pkt", v(), &[]);
    let rep = super::summarise(
        "s".into(),
        "k".into(),
        "p".into(),
        vec![f1.clone(), case_result("h", Outcome::Holds, &[])],
        &mons,
        &acc,
    );
    assert_eq!(rep.properties[0].verdict, crate::Verdict::Accepted);
    assert_eq!(rep.properties[0].accepted[0].finding, "F1");
    assert!(rep.properties[0].violated.is_empty());
    assert_eq!(rep.outcome(), trc_check::Outcome::Holds);
    // Without the baseline the same run fails.
    assert_eq!(
        super::summarise(
            "s".into(),
            "k".into(),
            "p".into(),
            vec![f1.clone()],
            &mons,
            &[]
        )
        .outcome(),
        trc_check::Outcome::Violated
    );
    for bad in [other, undeclared] {
        let mut b = bad.clone();
        b.inbound = 9;
        let rep = super::summarise(
            "s".into(),
            "k".into(),
            "p".into(),
            vec![f1.clone(), b],
            &mons,
            &acc,
        );
        assert_eq!(rep.properties[0].verdict, crate::Verdict::Violated);
        assert_eq!(rep.properties[0].violated, vec![bad.name.clone()]);
        assert_eq!(
            rep.properties[0].shortest.as_ref().unwrap().0,
            bad.name,
            "the shortest is the one outside the baseline"
        );
        assert_eq!(rep.outcome(), trc_check::Outcome::Violated);
    }
    // A signature of another property does not accept this one's violation.
    let i2 = case_result(
        "findings/f9.pkt",
        v(),
        &["I2:tcp_enter_recovery:from-Loss:after-tcp_enter_loss:icsk_retransmits-0"],
    );
    let acc2 = vec![super::Accepted {
        signature: "I2:tcp_enter_recovery:from-Loss:after-tcp_enter_loss:icsk_retransmits-0".into(),
        finding: "F9".into(),
        reason: "r".into(),
    }];
    assert_eq!(
        super::summarise("s".into(), "k".into(), "p".into(), vec![i2], &mons, &acc2).properties[0]
            .verdict,
        crate::Verdict::Violated
    );
}

#[test]
fn scripts_declare_their_signatures() {
    let t = "// x\n// trc-signature: I1:tcp_try_undo_loss:Loss:ts-echo\n+0 < . 1:1(0) ack 1 win 257\n//trc-signature:\n";
    assert_eq!(
        super::declared_signatures(t),
        vec!["I1:tcp_try_undo_loss:Loss:ts-echo".to_string()]
    );
}

/// A violation after the kernel's first wrong send is undecided (the script's later ACKs were
/// written for other sends); at that line, or after a send that was only late, it stands.
#[test]
fn a_violation_after_the_kernel_left_the_script_is_undecided() {
    use trc_pkt::report::{LineKind, LineResult, Status};
    let out = |line: u32, msg: &str| {
        let mut l = LineResult::new(line, 1, LineKind::PacketOut, Status::Fail, "> ...".into());
        l.message = Some(msg.into());
        l
    };
    let violated = |line: u32| Outcome::Violated {
        line,
        detail: "undo".into(),
    };
    let wrong = vec![out(10, "bad outbound TCP sequence number")];
    let left = super::left_the_script(&wrong);
    assert_eq!(left.map(|l| l.line), Some(10));
    match super::after_leaving_the_script(violated(12), left) {
        Outcome::Undecided { reason } => {
            assert!(
                reason.contains("line 12") && reason.contains("left the script at line 10"),
                "{reason}"
            )
        }
        o => panic!("{o:?}"),
    }
    assert!(matches!(
        super::after_leaving_the_script(violated(10), left),
        Outcome::Violated { line: 10, .. }
    ));
    let late = vec![out(
        10,
        "timing error: expected outbound packet at 0.1 sec but happened at 0.2 sec",
    )];
    assert!(super::left_the_script(&late).is_none());
    assert!(matches!(
        super::after_leaving_the_script(violated(12), super::left_the_script(&late)),
        Outcome::Violated { line: 12, .. }
    ));
}
