//! I2's monitor against the model property's exceptions for a Recovery entered before the
//! previous reduction's `high_seq`: a lost retransmission in Loss, and a lost segment of a new
//! window (properties/src/lib.rs `i2_reduction_ok`), on hand-made traces.

use super::super::ghost::Ghost;
use super::super::observe::*;
use super::{monitors, Outcome};
use std::collections::BTreeMap;
use trc_kernel::TcpInfoSnapshot;

fn info(ca: u8, cwnd: u32, ssth: u32, retransmits: u8, lost: u32) -> TcpInfoSnapshot {
    TcpInfoSnapshot { state: 1, ca_state: ca, ca_state_name: ["Open", "Disorder", "CWR", "Recovery", "Loss"][ca as usize].into(), snd_cwnd: cwnd, snd_ssthresh: ssth, retransmits, lost, ..Default::default() }
}

#[derive(Default)]
struct T {
    k: KTrace,
    t: f64,
    counters: BTreeMap<String, i64>,
    pending: Vec<usize>,
}

impl T {
    fn send(&mut self, seq: u32, end: u32) -> &mut Self {
        self.t += 1.0;
        let max = self.k.sends.iter().map(|s| s.end).max().unwrap_or(1);
        self.k.sends.push(Send { t_ms: self.t, seq, end, tsval: None, retrans: seq < max });
        self
    }
    fn ack(&mut self, ack: u32, sacks: &[(u32, u32)]) -> &mut Self {
        self.t += 1.0;
        let line = self.k.steps.len() as u32 + 1;
        self.k.acks.push(Ack { t_ms: self.t, line, ack, sacks: sacks.to_vec(), dsack: None, tsecr: None });
        self.pending.push(self.k.acks.len() - 1);
        self
    }
    fn count(&mut self, name: &str) -> &mut Self {
        *self.counters.entry(name.into()).or_default() += 1;
        self
    }
    fn step(&mut self, i: TcpInfoSnapshot) -> &mut Self {
        self.t += 0.5;
        let line = self.k.steps.len() as u32 + 1;
        self.k.steps.push(Step { line, t_ms: self.t, info: i, counters: self.counters.clone(), acks: std::mem::take(&mut self.pending) });
        self
    }
}

/// Four segments (1:4001) sent; an RTO (ssthresh 7, high_seq 4001); an ACK of 1:1001 after which
/// the sender sends `new_data` (F-RTO step 2b: 4001:6001 as two segments, or nothing); then a
/// SACK makes the sender enter Recovery from Loss with `snd_una` 1001, before high_seq. In that
/// statement it retransmits `rtx` and reports `lost` segments lost; `lost_retrans` counts a
/// lost retransmission (TCPLostRetransmit).
fn loss_then_recovery(new_data: bool, rtx: (u32, u32), lost: u32, lost_retrans: bool) -> KTrace {
    let mut b = T { k: KTrace { sack: true, ..Default::default() }, ..Default::default() };
    b.send(1, 1001).send(1001, 2001).send(2001, 3001).send(3001, 4001).step(info(CA_OPEN, 10, INFINITE_SSTHRESH, 0, 0));
    b.count("TcpExtTCPTimeouts").send(1, 1001).step(info(CA_LOSS, 1, 7, 1, 4));
    b.ack(1001, &[]);
    if new_data {
        b.send(4001, 5001).send(5001, 6001);
    }
    b.step(info(CA_LOSS, 2, 7, 0, 3));
    let sack = if new_data { (5001, 6001) } else { (3001, 4001) };
    b.ack(1001, &[sack]);
    if lost_retrans {
        b.count("TcpExtTCPLostRetransmit");
    }
    b.send(rtx.0, rtx.1).step(info(CA_RECOVERY, 2, 5, 0, lost));
    b.k.clone()
}

fn i2(k: &KTrace) -> Outcome {
    (monitors().into_iter().find(|m| m.id == "I2").unwrap().check)(k, &Ghost::of_script("// hand-written\n"))
}

#[test]
fn a_lost_segment_of_the_new_window_is_the_exception() {
    // RACK marks 4001:5001 (sent after the RTO, at high_seq) lost and retransmits it.
    assert_eq!(i2(&loss_then_recovery(true, (4001, 5001), 1, false)), Outcome::Holds);
    // Only 1001:2001 retransmitted, but tcpi_lost counts 4 while only 3 segments were
    // ever sent in [1001, 4001): one lost segment lies at or above high_seq.
    assert_eq!(i2(&loss_then_recovery(true, (1001, 2001), 4, false)), Outcome::Holds);
}

#[test]
fn new_data_without_a_visible_lost_mark_is_undecided() {
    // Only 1001:2001 (below high_seq) retransmitted and 1 lost: the new data's marks are not
    // visible, so the model's exception can be neither shown nor excluded.
    let o = i2(&loss_then_recovery(true, (1001, 2001), 1, false));
    let Outcome::Undecided { reason } = o else { panic!("{o:?}") };
    assert!(reason.contains("line 4") && reason.contains("high_seq 4001"), "{reason}");
}

#[test]
fn loss_to_recovery_needs_a_lost_retransmission_or_a_new_window() {
    // Nothing sent after the RTO and no lost retransmission: the model's I2 fails here.
    let o = i2(&loss_then_recovery(false, (1001, 2001), 1, false));
    let Outcome::Violated { line, detail } = o else { panic!("{o:?}") };
    assert_eq!(line, 4);
    assert!(detail.contains("Recovery") && detail.contains("high_seq 4001"), "{detail}");
    // The same with TCPLostRetransmit moving: row 18's exception.
    assert_eq!(i2(&loss_then_recovery(false, (1001, 2001), 1, true)), Outcome::Holds);
}
