//! The SNMP/MIB counters the model maintains: the `Tcp*` and `TcpExt*` counters `nstat` prints
//! (net/ipv4/proc.c names them: `snmp4_tcp_list`, `snmp4_net_list`), each incremented in the
//! sender function that mirrors the kernel function incrementing it (named on each variant).
//!
//! Counters are per step: a step's [`Cx`](crate::sender::Cx) collects what the step adds
//! ([`MibDelta`]), and nothing of it is kept in the [`State`](crate::State) (a counter never
//! decides anything, so keeping totals would only split states). Whoever follows one path —
//! replay, export, `trc diff`, a counterexample's printout — adds the deltas up.
//!
//! The kernel counts per network namespace; a test in a fresh namespace with one connection
//! reads the same numbers. Where a kernel counter adds `tcp_skb_pcount(skb)`, the model adds
//! one per segment (its skbs are single segments).

use serde::{Deserialize, Serialize};
use std::cell::Cell;

macro_rules! mib_counters {
    ($($(#[$doc:meta])* $v:ident = $name:literal,)*) => {
        /// One counter, named as `nstat` prints it.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        pub enum Mib {
            $($(#[$doc])* #[serde(rename = $name)] $v,)*
        }

        impl Mib {
            /// Every counter the model maintains, in `nstat`'s order within each table.
            pub const ALL: &'static [Mib] = &[$(Mib::$v,)*];

            /// The `nstat` name (`TcpExtTCPFullUndo`).
            pub fn name(self) -> &'static str {
                match self {
                    $(Mib::$v => $name,)*
                }
            }
        }
    };
}

mib_counters! {
    /// `__tcp_retransmit_skb()`: +segments on every retransmission attempt that reaches the
    /// transmit call (RTO, fast/slow-start retransmits, the TLP's retransmitted probe).
    RetransSegs = "TcpRetransSegs",
    /// `tcp_enter_recovery()` on a non-SACK flow.
    RenoRecovery = "TcpExtTCPRenoRecovery",
    /// `tcp_enter_recovery()` on a SACK flow.
    SackRecovery = "TcpExtTCPSackRecovery",
    /// `tcp_try_undo_recovery()` when it undoes in Recovery.
    FullUndo = "TcpExtTCPFullUndo",
    /// `tcp_try_undo_partial()` when it undoes.
    PartialUndo = "TcpExtTCPPartialUndo",
    /// `tcp_try_undo_dsack()` when it undoes.
    DsackUndo = "TcpExtTCPDSACKUndo",
    /// `tcp_try_undo_recovery()` when it undoes in Loss, and every undo of `tcp_try_undo_loss()`.
    LossUndo = "TcpExtTCPLossUndo",
    /// `tcp_mark_skb_lost()`: a lost, retransmitted segment is marked lost again.
    LostRetransmit = "TcpExtTCPLostRetransmit",
    /// `tcp_xmit_retransmit_queue()`: a retransmission outside Loss.
    FastRetrans = "TcpExtTCPFastRetrans",
    /// `tcp_xmit_retransmit_queue()`: a retransmission in Loss.
    SlowStartRetrans = "TcpExtTCPSlowStartRetrans",
    /// `tcp_retransmit_timer()`: every RTO expiry with data outstanding.
    Timeouts = "TcpExtTCPTimeouts",
    /// `tcp_retransmit_timer()`, first RTO of a series, in Loss.
    LossFailures = "TcpExtTCPLossFailures",
    /// `tcp_retransmit_timer()`, first RTO of a series, in Recovery, SACK flow.
    SackRecoveryFail = "TcpExtTCPSackRecoveryFail",
    /// `tcp_retransmit_timer()`, first RTO of a series, in Recovery, non-SACK flow.
    RenoRecoveryFail = "TcpExtTCPRenoRecoveryFail",
    /// `tcp_retransmit_timer()`, first RTO of a series, in Disorder or with SACKed data, SACK flow.
    SackFailures = "TcpExtTCPSackFailures",
    /// The same on a non-SACK flow.
    RenoFailures = "TcpExtTCPRenoFailures",
    /// `tcp_send_loss_probe()`: a probe went out.
    LossProbes = "TcpExtTCPLossProbes",
    /// `tcp_process_tlp_ack()`: a retransmitted probe repaired a loss.
    LossProbeRecovery = "TcpExtTCPLossProbeRecovery",
    /// `tcp_check_dsack()`: block 0 lies below the ACK.
    DsackRecv = "TcpExtTCPDSACKRecv",
    /// `tcp_check_dsack()`: block 0 lies inside block 1.
    DsackOfoRecv = "TcpExtTCPDSACKOfoRecv",
    /// `tcp_check_dsack()`: `tcp_dsack_seen()` rejected the DSACK.
    DsackIgnoredDubious = "TcpExtTCPDSACKIgnoredDubious",
    /// `tcp_check_dsack()`: +duplicate segments of an accepted DSACK.
    DsackRecvSegs = "TcpExtTCPDSACKRecvSegs",
    /// `tcp_check_sack_reordering()` with SACK evidence.
    SackReorder = "TcpExtTCPSACKReorder",
    /// `tcp_check_sack_reordering()` from `tcp_try_undo_partial()` (timestamp evidence).
    TsReorder = "TcpExtTCPTSReorder",
    /// `tcp_check_reno_reordering()`: non-SACK dupacks outnumbered the holes.
    RenoReorder = "TcpExtTCPRenoReorder",
    /// `tcp_timeout_mark_lost()`: the head is SACKed when the RTO fires.
    SackReneging = "TcpExtTCPSACKReneging",
    /// `tcp_send_loss_probe()`: the tail's previous copy is still in the host queue
    /// (`skb_still_in_host_queue()`), no probe.
    SpuriousRtxHostQueues = "TcpExtTCPSpuriousRtxHostQueues",
    /// `tcp_try_undo_loss()` with F-RTO's proof (`frto_undo`), besides TCPLossUndo.
    SpuriousRtos = "TcpExtTCPSpuriousRTOs",
    /// `hystart_update()`: the ACK-train detector ended slow start.
    HystartTrainDetect = "TcpExtTCPHystartTrainDetect",
    /// `hystart_update()`: +cwnd at the ACK-train exit.
    HystartTrainCwnd = "TcpExtTCPHystartTrainCwnd",
    /// `hystart_update()`: the delay detector ended slow start.
    HystartDelayDetect = "TcpExtTCPHystartDelayDetect",
    /// `hystart_update()`: +cwnd at the delay exit.
    HystartDelayCwnd = "TcpExtTCPHystartDelayCwnd",
}

const N: usize = Mib::ALL.len();

impl Mib {
    /// The counter `nstat` calls `name`.
    pub fn from_name(name: &str) -> Option<Mib> {
        Mib::ALL.iter().copied().find(|m| m.name() == name)
    }
}

/// What one step added to each counter. Interior mutability: the sender's functions that only
/// read the connection (`&Cx`) still count.
#[derive(Clone)]
pub struct MibDelta([Cell<u32>; N]);

impl Default for MibDelta {
    fn default() -> MibDelta {
        MibDelta(std::array::from_fn(|_| Cell::new(0)))
    }
}

impl MibDelta {
    /// Adds `n` to `m`.
    #[inline(always)]
    pub fn add(&self, m: Mib, n: u32) {
        let c = &self.0[m as usize];
        c.set(c.get().wrapping_add(n));
    }

    /// Adds 1 to `m`.
    #[inline(always)]
    pub fn inc(&self, m: Mib) {
        self.add(m, 1)
    }

    pub fn get(&self, m: Mib) -> u32 {
        self.0[m as usize].get()
    }

    /// The counters that moved, with their increments.
    pub fn nonzero(&self) -> impl Iterator<Item = (Mib, u32)> + '_ {
        Mib::ALL
            .iter()
            .map(|&m| (m, self.get(m)))
            .filter(|&(_, n)| n != 0)
    }

    pub fn is_zero(&self) -> bool {
        self.nonzero().next().is_none()
    }
}

impl std::fmt::Debug for MibDelta {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(self.nonzero().map(|(m, n)| (m.name(), n)))
            .finish()
    }
}

/// Running totals along a path (what `nstat` would print after `nstat -n` at its start).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MibTotals(std::collections::BTreeMap<Mib, u64>);

impl MibTotals {
    pub fn absorb(&mut self, d: &MibDelta) {
        for (m, n) in d.nonzero() {
            *self.0.entry(m).or_default() += n as u64;
        }
    }

    pub fn get(&self, m: Mib) -> u64 {
        self.0.get(&m).copied().unwrap_or(0)
    }

    /// The counters that are non-zero.
    pub fn iter(&self) -> impl Iterator<Item = (Mib, u64)> + '_ {
        self.0
            .iter()
            .map(|(m, n)| (*m, *n))
            .filter(|&(_, n)| n != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_nstat_names_and_unique() {
        let mut names: Vec<&str> = Mib::ALL.iter().map(|m| m.name()).collect();
        assert!(names
            .iter()
            .all(|n| n.starts_with("TcpExt") || n.starts_with("Tcp")));
        names.sort();
        names.dedup();
        assert_eq!(names.len(), Mib::ALL.len());
        assert_eq!(Mib::from_name("TcpExtTCPFullUndo"), Some(Mib::FullUndo));
        assert_eq!(Mib::from_name("TcpExtTCPFullUndos"), None);
        let d = MibDelta::default();
        d.inc(Mib::FullUndo);
        d.add(Mib::RetransSegs, 3);
        let mut t = MibTotals::default();
        t.absorb(&d);
        t.absorb(&d);
        assert_eq!(
            (
                t.get(Mib::FullUndo),
                t.get(Mib::RetransSegs),
                t.get(Mib::LossUndo)
            ),
            (2, 6, 0)
        );
    }
}
