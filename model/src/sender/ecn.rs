//! RFC 3168 ECN on the sender's wire (include/net/tcp_ecn.h, tcp_output.c): the CWR request a
//! cwnd reduction queues and the first new data segment carries. The receiver's side
//! (`tcp_data_ecn_check()`, `TCP_ECN_DEMAND_CWR`, ECE on our segments) needs data from the peer,
//! which the model's peer never sends; AccECN (`tcp_ecn` 3 and up) is not modelled.

use super::Cx;
use crate::state::Sender;

impl Sender {
    /// `tcp_ecn_queue_cwr()`: a cwnd reduction (`tcp_init_cwnd_reduction()`, `tcp_enter_loss()`)
    /// asks for CWR on the next new data segment, when ECN was negotiated (RFC 3168 mode; AccECN,
    /// which never sets CWR this way, is not modelled). Lower-case name since 735d383117e1 (v3.18).
    pub fn tcp_ecn_queue_cwr(&mut self, cx: &Cx) {
        if cx.cfg.ecn {
            self.ecn_queue_cwr = true;
        }
    }

    /// `tcp_ecn_withdraw_cwr()`: an undo that restores a larger ssthresh
    /// (`tcp_undo_cwnd_reduction()`) takes the CWR request back.
    pub fn tcp_ecn_withdraw_cwr(&mut self) {
        self.ecn_queue_cwr = false;
    }

    /// `tcp_ecn_send()` for a data segment of an ECN connection: only a segment at `snd_nxt`
    /// (new data, `!before(seq, snd_nxt)`) is ECT-capable and carries the queued CWR, which it
    /// consumes; a retransmission (regular or TLP) neither carries nor clears it. Returns whether
    /// the segment's header has CWR. (ECE on our segments needs `TCP_ECN_DEMAND_CWR`, set only by
    /// CE-marked data from the peer.)
    pub fn tcp_ecn_send(&mut self, new_data: bool) -> bool {
        if !new_data || !self.ecn_queue_cwr {
            return false;
        }
        self.ecn_queue_cwr = false;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::*;
    use crate::state::CaState;

    /// The CWR request of an ECE reduction goes out on the first new segment only; a
    /// retransmission in between neither carries it nor uses it up.
    #[test]
    fn cwr_rides_on_the_first_new_segment() {
        let cfg = crate::Config { ecn: true, ..cfg() };
        let prof = crate::Profile::linux_6_18();
        let mut s = crate::Sender::for_test(&cfg, true, 10);
        let cx = super::Cx::new(&cfg, &prof, 10, false);
        s.tcp_enter_cwr(&cx);
        assert_eq!(s.ca_state, CaState::Cwr);
        assert!(s.ecn_queue_cwr);
        assert!(!s.tcp_ecn_send(false), "a retransmission carries no CWR");
        assert!(s.ecn_queue_cwr);
        assert!(s.tcp_ecn_send(true));
        assert!(!s.tcp_ecn_send(true), "only the first new segment");
    }

    /// Without ECN negotiated nothing is queued.
    #[test]
    fn no_cwr_without_ecn() {
        let cfg = cfg();
        let prof = crate::Profile::linux_6_18();
        let mut s = crate::Sender::for_test(&cfg, true, 10);
        let cx = super::Cx::new(&cfg, &prof, 10, false);
        s.tcp_enter_cwr(&cx);
        assert!(!s.tcp_ecn_send(true));
    }
}
