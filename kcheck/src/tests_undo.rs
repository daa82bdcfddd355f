//! The missed-undo monitors (I20, I20e) on hand-built traces: a proven episode left without an
//! undo fails, an undo on the proving ACK holds, a real loss excuses it, a deferred undo holds
//! I20e only, and an echo the hidden `retrans_stamp` may or may not postdate is undecided.

use super::ghost::Ghost;
use super::monitor::Outcome;
use super::observe::*;
use super::tests::{check, inferred, info, B};

const INF: u32 = INFINITE_SSTHRESH;

/// SACK + timestamps: five segments (TSval 100), a SACK of 1001:4001 starts Recovery, 1:1001 is
/// retransmitted (TSval 300), then the ACK of `ack` echoes `ecr`. `undo` is the counter the
/// kernel moves on that ACK (if any) and `after` the state it leaves.
fn eifel(ack: u32, ecr: u32, undo: Option<&str>, after: u8) -> B {
    let mut b = B::new(true, true);
    b.send(1, 5001, 100).step(info(0, 10, INF, 0, 0));
    b.ack(1, &[(1001, 4001)], None, 100)
        .step(info(3, 7, 7, 0, 3));
    b.send(1, 1001, 300).step(info(3, 7, 7, 0, 3));
    if let Some(c) = undo {
        b.count(c);
    }
    let (cwnd, ssth) = if undo.is_some() { (10, INF) } else { (7, 7) };
    b.ack(ack, &[], None, ecr)
        .step(info(after, cwnd, ssth, 0, 5));
    b
}

#[test]
fn i20_fails_when_the_proving_ack_does_not_undo() {
    let k = eifel(5001, 100, None, CA_OPEN).k;
    for id in ["I20", "I20e"] {
        let o = check(id, &k, &inferred());
        let Outcome::Violated { line, detail } = o else {
            panic!("{id}: {o:?}")
        };
        assert_eq!(line, 4, "{id}: the statement of the proving ACK");
        assert!(
            detail.contains("1:1001") && detail.contains("TSecr 100"),
            "{detail}"
        );
    }
}

#[test]
fn i20_holds_when_the_kernel_undoes() {
    let k = eifel(5001, 100, Some("TcpExtTCPFullUndo"), CA_OPEN).k;
    assert_eq!(check("I20", &k, &inferred()), Outcome::Holds);
    assert_eq!(check("I20e", &k, &inferred()), Outcome::Holds);
}

#[test]
fn no_proof_when_the_echo_is_the_retransmissions() {
    // The ACK echoes the retransmission: the original was lost, nothing is owed.
    let k = eifel(5001, 300, None, CA_OPEN).k;
    assert_eq!(check("I20", &k, &inferred()), Outcome::Holds);
}

#[test]
fn a_real_loss_in_the_episode_excuses_the_missing_undo() {
    let k = eifel(5001, 100, None, CA_OPEN).k;
    let declared = Ghost::of_script(
        "// model segment k = bytes 1+1000k .. 1+1000(k+1); TS vals\n// step 1 (model t=0 ms): the network drops seg 4 (4001:5001, original sent at 0 ms): it is never ACKed\n",
    );
    assert_eq!(check("I20", &k, &declared), Outcome::Holds);
    assert_eq!(check("I20e", &k, &declared), Outcome::Holds);
}

#[test]
fn a_deferred_undo_holds_i20e_but_not_i20() {
    // The partial ACK of 3001 proves the episode and stays in Recovery without an undo; a DSACK
    // undo follows on the next statement.
    let mut b = eifel(3001, 100, None, CA_RECOVERY);
    b.count("TcpExtTCPDSACKUndo")
        .ack(3001, &[(4001, 5001)], Some((1, 1001)), 100)
        .step(info(0, 10, INF, 0, 5));
    let k = b.k;
    assert!(matches!(
        check("I20", &k, &inferred()),
        Outcome::Violated { line: 4, .. }
    ));
    assert_eq!(check("I20e", &k, &inferred()), Outcome::Holds);
    // Without that undo, the episode ends in Open and I20e fails there.
    let mut b = eifel(3001, 100, None, CA_RECOVERY);
    b.ack(5001, &[], None, 100).step(info(0, 7, 7, 0, 5));
    assert!(matches!(
        check("I20e", &b.k, &inferred()),
        Outcome::Violated { line: 5, .. }
    ));
}

#[test]
fn an_echo_between_candidate_stamps_is_undecided() {
    // An earlier retransmission (TSval 50, in Disorder, no Open since) may still be
    // retrans_stamp: an echo of 100 is older than the episode's first retransmission only.
    let mut b = B::new(true, true);
    b.send(1, 5001, 20).step(info(0, 10, INF, 0, 0));
    b.ack(1, &[(1001, 2001)], None, 20)
        .step(info(1, 10, INF, 0, 1));
    b.send(1, 1001, 50).step(info(1, 10, INF, 0, 1));
    b.ack(1, &[(1001, 4001)], None, 20)
        .step(info(3, 7, 7, 0, 3));
    b.send(1, 1001, 300).step(info(3, 7, 7, 0, 3));
    b.ack(5001, &[], None, 100).step(info(0, 7, 7, 0, 5));
    let o = check("I20", &b.k, &inferred());
    assert!(matches!(o, Outcome::Undecided { .. }), "{o:?}");
}
