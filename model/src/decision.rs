//! Decision-point coverage: the branches of the decision functions (the kernel functions whose
//! behaviour a profile chooses, see [`crate::profile`], and the undo entry points), counted per
//! step when the caller asks for it (`trc check --coverage`). A branch is a *situation* the
//! function meets, not the profile's answer to it, so that what is reachable does not depend on
//! the profile: "(the choice applies)" marks the situations where the decision point's variants
//! behave differently — a change there that was never reached was never exercised. (CUBIC and
//! HyStart's decision points are not recorded.)
//!
//! Like [`crate::mib`], nothing of it is kept in the [`State`](crate::State): a step's
//! [`Cx`](crate::sender::Cx) may carry a [`DecisionCounts`] sink (`None` in the checker's hot
//! path: one branch per decision site) and the sender's functions record the branch they take.
//! [`crate::model::TcpModel::record_decisions`] runs one transition with a sink.

use std::cell::Cell;

macro_rules! branches {
    ($($(#[$doc:meta])* $v:ident = ($func:literal, $field:literal, $label:literal),)*) => {
        /// One branch of a decision function.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Branch {
            $($(#[$doc])* $v,)*
        }

        impl Branch {
            /// Every branch, grouped by decision function.
            pub const ALL: &'static [Branch] = &[$(Branch::$v,)*];

            /// The kernel function that takes the branch.
            pub fn function(self) -> &'static str {
                match self {
                    $(Branch::$v => $func,)*
                }
            }

            /// The profile field that chooses this function's behaviour (`""` for an undo entry
            /// point no profile field changes).
            pub fn profile_field(self) -> &'static str {
                match self {
                    $(Branch::$v => $field,)*
                }
            }

            /// Whether the decision point's variants behave differently in this situation
            /// (the label says "(the choice applies)" or "(the variants differ)").
            pub fn choice_applies(self) -> bool {
                self.label().contains("(the ")
            }

            /// What happened, in the kernel's terms.
            pub fn label(self) -> &'static str {
                match self {
                    $(Branch::$v => $label,)*
                }
            }
        }
    };
}

branches! {
    DelayedEcrBefore = ("tcp_packet_delayed", "packet_delayed", "retrans_stamp set, TSecr before it, the echoed head holds every un-DSACKed retransmission"),
    DelayedEcrBeforeUnproven = ("tcp_packet_delayed", "packet_delayed_scope", "retrans_stamp set, TSecr before it, another retransmission of the episode unproven (the choice applies)"),
    DelayedEcrNotBefore = ("tcp_packet_delayed", "packet_delayed", "retrans_stamp set, TSecr not before it"),
    DelayedNoStampSack = ("tcp_packet_delayed", "packet_delayed", "retrans_stamp 0, SACK flow (the variants differ)"),
    DelayedNoStampRenoAtHigh = ("tcp_packet_delayed", "packet_delayed", "retrans_stamp 0, non-SACK flow, snd_una >= high_seq (the variants differ)"),
    DelayedNoStampRenoBelowHigh = ("tcp_packet_delayed", "packet_delayed", "retrans_stamp 0, non-SACK flow, snd_una < high_seq (the variants differ)"),
    InitUndoTlp = ("tcp_init_undo", "init_undo_tlp", "a TLP retransmission in flight (the choice applies)"),
    InitUndoNoTlp = ("tcp_init_undo", "init_undo_tlp", "no TLP retransmission in flight"),
    RecoveryNoRetrans = ("tcp_enter_recovery", "enter_recovery_stamp_cleanup", "nothing retransmitted outstanding (the choice applies)"),
    RecoveryRetransOutstanding = ("tcp_enter_recovery", "enter_recovery_stamp_cleanup", "a retransmission outstanding"),
    EnterLossUnaEqHigh = ("tcp_enter_loss", "enter_loss_guard", "snd_una == high_seq"),
    EnterLossUnaAfterHigh = ("tcp_enter_loss", "enter_loss_guard", "snd_una after high_seq (the variants differ)"),
    EnterLossUnaBeforeHigh = ("tcp_enter_loss", "enter_loss_guard", "snd_una before high_seq"),
    LossUndoAdvanced = ("tcp_process_loss", "loss_undo_acks", "ACK advanced snd_una"),
    LossUndoNotAdvanced = ("tcp_process_loss", "loss_undo_acks", "ACK did not advance snd_una (the choice applies)"),
    DsackOnlyAck = ("tcp_ack", "dsack_dupack", "dubious DSACK ACK without other progress (the choice applies)"),
    PrrNothingDelivered = ("tcp_cwnd_reduction", "prr_guards", "nothing delivered or prior_cwnd 0 (the choice applies)"),
    PrrRuns = ("tcp_cwnd_reduction", "prr_guards", "delivered, prior_cwnd set"),
    RetransResetAfterRto = ("tcp_ack", "rto_retrans_reset", "ACK advanced snd_una after an RTO, icsk_retransmits > 0 (the choice applies)"),
    LossUndoRenoAtHigh = ("tcp_try_undo_loss", "loss_undo_nonsack_hold", "undo on a non-SACK flow at snd_una == high_seq (the choice applies)"),
    LossUndoOther = ("tcp_try_undo_loss", "loss_undo_nonsack_hold", "undo, SACK flow or snd_una != high_seq"),
    OrigSackRetransAcked = ("tcp_clean_rtx_queue", "nonsack_orig_sack_fix", "non-SACK, retransmitted data cumulatively ACKed (the choice applies)"),
    ReoTimeoutLostInLoss = ("tcp_rack_reo_timeout", "reo_timeout_recovery", "lost marks in Loss (the choice applies)"),
    ReoTimeoutLostElsewhere = ("tcp_rack_reo_timeout", "reo_timeout_recovery", "lost marks in Open, Disorder or CWR"),
    TlpRetransUndoOpen = ("tcp_send_loss_probe", "tlp_undo_retrans", "retransmitted probe with undo_marker set (the choice applies)"),
    TlpRetransNoUndo = ("tcp_send_loss_probe", "tlp_undo_retrans", "retransmitted probe, undo_marker 0"),
    UndoRecoveryFull = ("tcp_try_undo_recovery", "", "undo in Recovery (TCPFullUndo)"),
    UndoRecoveryLoss = ("tcp_try_undo_recovery", "", "undo in Loss (TCPLossUndo)"),
    UndoPartial = ("tcp_try_undo_partial", "", "undo"),
    UndoDsack = ("tcp_try_undo_dsack", "", "undo"),
    UndoLoss = ("tcp_try_undo_loss", "", "undo on tcp_may_undo"),
    UndoFrto = ("tcp_try_undo_loss", "", "undo on F-RTO's proof"),
}

const N: usize = Branch::ALL.len();

/// Branch counts of the steps run with this sink (interior mutability: the sender's `&Cx`
/// functions record too).
pub struct DecisionCounts([Cell<u64>; N]);

impl Default for DecisionCounts {
    fn default() -> Self {
        DecisionCounts(std::array::from_fn(|_| Cell::new(0)))
    }
}

impl DecisionCounts {
    #[inline]
    pub fn hit(&self, b: Branch) {
        let c = &self.0[b as usize];
        c.set(c.get() + 1);
    }

    pub fn get(&self, b: Branch) -> u64 {
        self.0[b as usize].get()
    }

    /// Adds every count to `out` (indexed like [`Branch::ALL`]).
    pub fn add_to(&self, out: &mut [u64]) {
        for (o, c) in out.iter_mut().zip(&self.0) {
            *o += c.get();
        }
    }
}

/// Records `b` in the step's sink, if it has one.
#[inline(always)]
pub fn hit(sink: Option<&DecisionCounts>, b: Branch) {
    if let Some(d) = sink {
        d.hit(b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_profile_field_named_is_a_decision_point() {
        let fields = serde_json::to_value(crate::Profile::linux_6_18()).unwrap();
        for b in Branch::ALL {
            let f = b.profile_field();
            assert!(
                f.is_empty() || fields.get(f).is_some(),
                "{b:?} names unknown profile field {f}"
            );
        }
        let d = DecisionCounts::default();
        d.hit(Branch::UndoDsack);
        let mut v = vec![0; Branch::ALL.len()];
        d.add_to(&mut v);
        assert_eq!(v.iter().sum::<u64>(), 1);
    }
}
