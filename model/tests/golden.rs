//! Golden traces (scenarios measured on the 6.18 kernel, with the values it reported) as tests of the sender's step functions: events in, exact
//! ca_state / cwnd / ssthresh out. Sequence numbers are in segments (MSS 1000: byte 1001 = seq 2).

use trc_model::sender::ack::AckSeg;
use trc_model::sender::{Cx, Tx};
use trc_model::state::{CaState, Sender, UndoKind, TCP_INFINITE_SSTHRESH};
use trc_model::{Config, Profile, SackMode};

struct Run {
    cfg: Config,
    prof: Profile,
    snd: Sender,
}

impl Run {
    fn new(cfg: Config, prof: Profile, sack: bool) -> Run {
        let mut snd = Sender::new(&cfg, sack);
        let mut cx = Cx::new(&cfg, &prof, 0, false);
        snd.tcp_write_xmit(&mut cx);
        Run { cfg, prof, snd }
    }

    fn step(&mut self, now: u32, f: impl FnOnce(&mut Sender, &mut Cx)) -> Vec<Tx> {
        self.snd.ghost.ev = Default::default();
        let mut cx = Cx::new(&self.cfg, &self.prof, now, false);
        f(&mut self.snd, &mut cx);
        cx.out.to_vec()
    }

    fn ack(&mut self, now: u32, ack: u32, sacks: &[(u32, u32)], tsecr: Option<u32>) -> Vec<Tx> {
        let seg = AckSeg {
            ack,
            sacks: sacks.into(),
            ece: false,
            tsecr,
        };
        self.step(now, |s, cx| s.tcp_ack(cx, &seg))
    }

    fn rto(&mut self, now: u32) -> Vec<Tx> {
        self.snd.timer = None;
        self.step(now, |s, cx| s.tcp_retransmit_timer(cx))
    }

    fn expect(&self, st: CaState, cwnd: u32, ssthresh: u32, what: &str) {
        let s = &self.snd;
        assert_eq!(
            (s.ca_state, s.cwnd, s.ssthresh),
            (st, cwnd, ssthresh),
            "{what}"
        );
    }
}

fn rtx(out: &[Tx]) -> Vec<u32> {
    out.iter().filter(|t| t.rtx).map(|t| t.seg + 1).collect()
}
fn new_data(out: &[Tx]) -> Vec<u32> {
    out.iter().filter(|t| !t.rtx).map(|t| t.seg + 1).collect()
}

/// T1: non-SACK F-RTO with an ACK landing exactly on high_seq (d0fa59897e04's report;
/// kernel values measured on 6.18: docs/findings.md and counterexamples/kernel/).
fn t1(prof: Profile) -> Run {
    let cfg = Config {
        segments: 15,
        initcwnd: 10,
        timestamps: false,
        sack: SackMode::NoSack,
        ..Config::default()
    };
    let mut r = Run::new(cfg, prof, false);
    assert_eq!(r.snd.snd_nxt, 11, "1:10001 sent");
    let out = r.rto(220);
    assert_eq!(rtx(&out), vec![1]);
    r.expect(CaState::Loss, 1, 7, "RTO: ssthresh = 10*717/1024");
    assert_eq!(r.snd.high_seq, 11);
    // ACK 1001: F-RTO step 2b sends new data 10001:12001.
    let out = r.ack(230, 2, &[], None);
    assert_eq!(new_data(&out), vec![11, 12]);
    assert_eq!(r.snd.high_seq, 11);
    // dupack: step 3a, the loss was real; retransmit 1001:2001.
    let out = r.ack(280, 2, &[], None);
    assert_eq!(rtx(&out), vec![2]);
    r.expect(CaState::Loss, 2, 7, "kernel: Loss, cwnd 2, ssthresh 7");
    let out = r.ack(282, 2, &[], None);
    assert_eq!(rtx(&out), vec![3]);
    r.ack(332, 4, &[], None);
    r.ack(382, 5, &[], None);
    r.ack(432, 7, &[], None);
    // ACK 10001 == high_seq: the non-SACK hold keeps Loss and clears retrans_stamp.
    r.ack(482, 11, &[], None);
    r.expect(
        CaState::Loss,
        7,
        7,
        "kernel: Loss, cwnd 7, ssthresh 7 at ack 10001",
    );
    assert!(r.snd.ghost.ev.nonsack_hold);
    assert_eq!(r.snd.retrans_stamp, 0);
    // ACK 12001
    r.ack(484, 13, &[], None);
    r
}

#[test]
fn t1_linux_6_18_no_undo() {
    let r = t1(Profile::linux_6_18());
    assert!(r.snd.ghost.ev.undos.is_empty());
    r.expect(
        CaState::Open,
        7,
        7,
        "kernel 6.18: Open with cwnd 7 at ack 12001, no TcpExtTCPLossUndo",
    );
}

#[test]
fn t1_linux_6_15_spurious_undo() {
    let r = t1(Profile::linux_6_15());
    assert_eq!(r.snd.ghost.ev.undos.len(), 1);
    assert_eq!(
        r.snd.ghost.ev.undos[0].kind,
        UndoKind::Loss,
        "TcpExtTCPLossUndo"
    );
    // cwnd = max(7, 10) restored, then that ACK's slow-start step; ssthresh back to infinity;
    // non-SACK non-F-RTO undo stays in Loss (the seed script's 'Loss, cwnd 12').
    r.expect(
        CaState::Loss,
        12,
        TCP_INFINITE_SSTHRESH,
        "buggy kernel: Loss, cwnd 12",
    );
}

/// T3: DSACK of a TLP retransmission must not undo a real repair (0ec986ed7bab).
fn t3(prof: Profile) -> Run {
    let cfg = Config {
        segments: 4,
        initcwnd: 4,
        timestamps: false,
        sack: SackMode::Sack,
        ..Config::default()
    };
    let mut r = Run::new(cfg, prof, true);
    // P1 is really lost. The TLP fires and retransmits P4 (no new data to send).
    r.snd.timer = None;
    let out = r.step(102, |s, cx| s.tcp_send_loss_probe(cx));
    assert_eq!(rtx(&out), vec![4]);
    assert!(r.snd.tlp_retrans && r.snd.tlp_high_seq == 5);
    // SACKs of P2, P3, P4 (originals): RACK marks P1 lost → Recovery, fast retransmit of P1.
    r.ack(150, 1, &[(2, 3)], None);
    r.ack(150, 1, &[(2, 4)], None);
    r.ack(150, 1, &[(2, 5)], None);
    // The SACK of P4 is ambiguous for RACK (its TLP copy was sent < min_rtt ago), so P1 is
    // within the reordering window: the RACK reorder timer marks it lost → Recovery.
    assert_eq!(r.snd.ca_state, CaState::Disorder);
    let tm = r.snd.timer.expect("REO timer armed");
    assert_eq!(tm.kind, trc_model::state::TimerKind::Reo);
    r.snd.timer = None;
    let out = r.step(tm.deadline, |s, cx| s.tcp_rack_reo_timeout(cx));
    assert_eq!(r.snd.ca_state, CaState::Recovery);
    assert_eq!(rtx(&out), vec![1], "fast retransmit of P1");
    r
}

#[test]
fn t3_linux_6_18_dsack_of_tlp_does_not_undo() {
    let mut r = t3(Profile::linux_6_18());
    assert_eq!(
        r.snd.undo_retrans, 2,
        "init_undo counted the TLP retransmit, plus the fast retransmit"
    );
    // 2..5 was already SACKed by the previous ACK: the kernel's recv_sack_cache skips it, so the
    // nested DSACK is walked once, by its own block.
    r.ack(252, 1, &[(4, 5), (2, 5)], None); // DSACK for the TLP copy of P4
    assert!(r.snd.ghost.ev.undos.is_empty());
    assert_eq!(r.snd.undo_retrans, 1);
    let ssthresh = r.snd.ssthresh;
    r.ack(300, 5, &[], None); // the retransmitted P1 arrives: everything ACKed
    assert_eq!(r.snd.ca_state, CaState::Open);
    assert_eq!(r.snd.cwnd, ssthresh, "Recovery ends with cwnd = ssthresh");
}

/// T3 with the SACK of P4's original lost: the DSACK's covering block 2..5 reaches snd_nxt and
/// is new (not in recv_sack_cache), so `tcp_sacktag_write_queue()` tags P4 as its `next_dup`,
/// runs off the queue, and `tcp_sacktag_skip()` finds P4 again for the DSACK block itself:
/// counted twice, 2 → 0, DSACK undo, and the still-lost P1 starts a new Recovery at once. The
/// live 6.18 kernel does this (trc diff seed 1 scenarios 65 and 641, regression script
/// `diff-nested-dsack-counted-twice.pkt`).
#[test]
fn t3_linux_6_18_nested_dsack_reaching_snd_nxt_counts_twice() {
    let cfg = Config {
        segments: 4,
        initcwnd: 4,
        timestamps: false,
        sack: SackMode::Sack,
        ..Config::default()
    };
    let mut r = Run::new(cfg, Profile::linux_6_18(), true);
    r.snd.timer = None;
    let out = r.step(102, |s, cx| s.tcp_send_loss_probe(cx));
    assert_eq!(rtx(&out), vec![4]);
    r.ack(150, 1, &[(2, 3)], None);
    r.ack(150, 1, &[(2, 4)], None);
    let tm = r.snd.timer.expect("REO timer armed");
    r.snd.timer = None;
    let out = r.step(tm.deadline, |s, cx| s.tcp_rack_reo_timeout(cx));
    assert_eq!(rtx(&out), vec![1], "fast retransmit of P1");
    assert_eq!(r.snd.undo_retrans, 2);
    r.ack(252, 1, &[(4, 5), (2, 5)], None); // DSACK for the TLP copy of P4 (its original's SACK was lost)
    assert_eq!(r.snd.ghost.ev.undos.len(), 1);
    assert_eq!(
        r.snd.ghost.ev.undos[0].kind,
        UndoKind::Dsack,
        "TcpExtTCPDSACKUndo"
    );
    assert_eq!(
        r.snd.ca_state,
        CaState::Recovery,
        "P1 is still marked lost: a new Recovery"
    );
    assert_eq!(
        r.snd.undo_retrans, 1,
        "the new episode counts P1's retransmission in flight"
    );
}

#[test]
fn t3_pre_0ec986_dsack_of_tlp_undoes_a_real_repair() {
    let mut r = t3(Profile::pre_0ec986());
    assert_eq!(
        r.snd.undo_retrans, 1,
        "-1 at entry, +1 for the fast retransmit"
    );
    r.ack(252, 1, &[(4, 5), (2, 5)], None);
    assert_eq!(r.snd.ghost.ev.undos.len(), 1);
    assert_eq!(
        r.snd.ghost.ev.undos[0].kind,
        UndoKind::Dsack,
        "the bug: DSACK undo although P1 was lost"
    );
}

/// T4: TSQ-held spurious fast recovery (e37ab7373696): no retransmission leaves the host,
/// retrans_stamp stays 0; an ACK advancing snd_una should undo (bc9f38 variant: no undo).
fn t4(prof: Profile) -> Run {
    let cfg = Config {
        segments: 5,
        initcwnd: 5,
        timestamps: true,
        sack: SackMode::Sack,
        ..Config::default()
    };
    let mut r = Run::new(cfg, prof, true);
    // P1 is only delayed. SACKs of P2..P4 start Recovery; TSQ holds the fast retransmit.
    let go = |r: &mut Run, sacks: &[(u32, u32)]| {
        r.snd.ghost.ev = Default::default();
        let seg = AckSeg {
            ack: 1,
            sacks: sacks.into(),
            ece: false,
            tsecr: Some(1),
        };
        let mut cx = Cx::new(&r.cfg, &r.prof, 50, true);
        r.snd.tcp_ack(&mut cx, &seg);
        assert!(cx.out.is_empty(), "TSQ holds everything");
    };
    go(&mut r, &[(2, 3)]);
    go(&mut r, &[(2, 4)]);
    go(&mut r, &[(2, 5)]);
    assert_eq!(r.snd.ca_state, CaState::Recovery);
    assert_eq!((r.snd.retrans_stamp, r.snd.undo_retrans), (0, -1));
    // The delayed P1 arrives: cumulative ACK of everything it allows, TSecr of the first flight.
    r.ack(60, 5, &[], Some(1));
    r
}

#[test]
fn t4_linux_6_18_undoes_tsq_held_recovery() {
    let r = t4(Profile::linux_6_18());
    assert_eq!(
        r.snd.ghost.ev.undos.len(),
        1,
        "undo (partial) because nothing was retransmitted"
    );
    assert_eq!(r.snd.ssthresh, TCP_INFINITE_SSTHRESH);
}

#[test]
fn t4_bc9f38_keeps_the_spurious_reduction() {
    let r = t4(Profile::linux_6_6());
    assert!(r.snd.ghost.ev.undos.is_empty());
    assert!(r.snd.ssthresh < TCP_INFINITE_SSTHRESH);
}
