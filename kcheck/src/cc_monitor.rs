//! Congestion-control monitors on a kernel's trace: I17 (the loss response's ssthresh), I12
//! (ssthresh >= 2; a HyStart exit only in slow start), I15b (a delay exit needs every sample of
//! the round above the threshold) and I15c (an ACK-train exit needs half the real minimum RTT).
//! The model's definitions are in properties/src/lib.rs; what a kernel trace cannot show is in
//! docs/reference/properties.md ("On a kernel").
//!
//! The RTT samples are the script's: an ACK that advances `snd_una` over never-retransmitted data
//! gives (its injection time − the send time of the highest such segment it covers), as
//! `tcp_clean_rtx_queue()` gives `pkts_acked()` the newest acked skb's age. HyStart's rounds are
//! the true rounds (as the model's ghost `g_end_seq`): a round ends at the first ACK past the
//! `snd_nxt` of its start.

use super::monitor::{derive, Outcome};
use super::observe::{KTrace, CA_CWR, CA_DISORDER, CA_LOSS, CA_OPEN, CA_RECOVERY};
use trc_model::seq::after;

/// Timing slack between the script's clock and the kernel's `tcp_mstamp` (ms).
const SLACK_MS: f64 = 0.2;

/// The congestion control's `ssthresh()` for a cwnd (CUBIC: `cubictcp_recalc_ssthresh`'s
/// `max(cwnd * 717 / 1024, 2)`; Reno: `max(cwnd / 2, 2)`).
fn cc_ssthresh(cc: &str, cwnd: u32) -> Option<u32> {
    match cc {
        "cubic" => Some((cwnd * 717 / 1024).max(2)),
        "reno" => Some((cwnd / 2).max(2)),
        _ => None,
    }
}

/// The statements where the congestion control's `ssthresh()` ran: Recovery entered (not from
/// CWR), CWR entered from Open/Disorder, or an RTO that changed ssthresh; with no undo in the
/// statement (an undo then re-entry is two events in one).
fn reductions(k: &KTrace) -> Vec<usize> {
    let d = derive(k);
    let mut out = Vec::new();
    for (i, s) in k.steps.iter().enumerate() {
        let (st, ps) = (s.info.ca_state, d[i].prev_state);
        if d[i].undos > 0 || i == 0 {
            continue;
        }
        let recovery = st == CA_RECOVERY && ps != CA_RECOVERY && ps != CA_CWR;
        let cwr = st == CA_CWR && (ps == CA_OPEN || ps == CA_DISORDER);
        let rto = st == CA_LOSS && d[i].timeouts > 0 && s.info.snd_ssthresh != d[i].prev_ssthresh;
        if recovery || cwr || rto {
            out.push(i);
        }
    }
    out
}

/// I17: every loss response sets ssthresh to the congestion control's value for the cwnd the
/// statement found.
pub(crate) fn i17(k: &KTrace, _g: &super::Ghost) -> Outcome {
    if k.steps.is_empty() {
        return Outcome::Undecided {
            reason: "the run read no tcp_info (no connection)".into(),
        };
    }
    let Some(cc) = k.cc.as_deref() else {
        return Outcome::Undecided {
            reason: "the connection's congestion control is not known".into(),
        };
    };
    let mut undecided = None;
    for i in reductions(k) {
        let s = &k.steps[i];
        let cwnd = k.steps[i - 1].info.snd_cwnd;
        let Some(want) = cc_ssthresh(cc, cwnd) else {
            return Outcome::Undecided {
                reason: format!("no ssthresh() rule for {cc}"),
            };
        };
        if s.acks.len() > 1 {
            undecided.get_or_insert(format!(
                "line {}: a reduction in a statement of {} ACKs (cwnd may have moved before it)",
                s.line,
                s.acks.len()
            ));
            continue;
        }
        if s.info.snd_ssthresh != want {
            return Outcome::Violated {
                line: s.line,
                detail: format!(
                    "{} set ssthresh {} at cwnd {cwnd}; {cc}'s ssthresh() gives {want}",
                    s.info.ca_state_name, s.info.snd_ssthresh
                ),
            };
        }
    }
    undecided.map_or(Outcome::Holds, |reason| Outcome::Undecided { reason })
}

/// The HyStart exits: (step, train?) where TcpExtTCPHystartTrainDetect or ...DelayDetect moved.
fn hystart_exits(k: &KTrace) -> Vec<(usize, bool)> {
    (0..k.steps.len())
        .filter_map(|i| {
            if k.delta(i, "TcpExtTCPHystartTrainDetect") > 0 {
                Some((i, true))
            } else if k.delta(i, "TcpExtTCPHystartDelayDetect") > 0 {
                Some((i, false))
            } else {
                None
            }
        })
        .collect()
}

/// I12: every loss response's ssthresh is at least 2, and a HyStart exit happens in slow start
/// (the statement before it had cwnd < ssthresh).
pub(crate) fn i12(k: &KTrace, _g: &super::Ghost) -> Outcome {
    if k.steps.is_empty() {
        return Outcome::Undecided {
            reason: "the run read no tcp_info (no connection)".into(),
        };
    }
    for i in reductions(k) {
        let s = &k.steps[i];
        if s.info.snd_ssthresh < 2 {
            return Outcome::Violated {
                line: s.line,
                detail: format!("ssthresh {} after a loss response", s.info.snd_ssthresh),
            };
        }
    }
    for (i, _) in hystart_exits(k) {
        let p = if i == 0 {
            None
        } else {
            Some(&k.steps[i - 1].info)
        };
        if let Some(p) = p {
            if p.snd_cwnd >= p.snd_ssthresh {
                return Outcome::Violated {
                    line: k.steps[i].line,
                    detail: format!(
                        "HyStart exit out of slow start (cwnd {} >= ssthresh {} before it)",
                        p.snd_cwnd, p.snd_ssthresh
                    ),
                };
            }
        }
    }
    Outcome::Holds
}

/// One RTT sample: (ACK time, sample ms, ACK index).
type Sample = (f64, f64, usize);

/// The RTT samples of the run (see the module comment).
fn samples(k: &KTrace) -> Vec<Sample> {
    let mut out = Vec::new();
    let mut una = 1u32;
    for (j, a) in k.acks.iter().enumerate() {
        if !after(a.ack, una) {
            continue;
        }
        let newest = k
            .sends
            .iter()
            .filter(|s| s.t_ms < a.t_ms && !after(s.end, a.ack) && after(s.end, una))
            .filter(|s| {
                !s.retrans
                    && !k
                        .sends
                        .iter()
                        .any(|r| r.retrans && r.seq == s.seq && r.t_ms < a.t_ms)
            })
            .max_by(|x, y| x.t_ms.total_cmp(&y.t_ms));
        if let Some(s) = newest {
            out.push((a.t_ms, a.t_ms - s.t_ms, j));
        }
        una = a.ack;
    }
    out
}

/// The true round in force at ACK `j`: the time of the ACK that started it (None: the first
/// round, which began with the connection).
fn round_start(k: &KTrace, j: usize) -> Option<(f64, usize)> {
    let mut end = k.sends.first().map_or(1, |s| s.seq);
    let mut start = None;
    let mut una = 1u32;
    for (i, a) in k.acks.iter().enumerate().take(j + 1) {
        if after(a.ack, una) {
            una = a.ack;
        }
        if after(una, end) {
            start = Some((a.t_ms, i));
            end = k.snd_nxt_before(a.t_ms + 1e-3);
        }
    }
    start
}

/// I15b and I15c at each HyStart exit.
fn hystart_check(k: &KTrace, train: bool) -> Outcome {
    if k.steps.is_empty() {
        return Outcome::Undecided {
            reason: "the run read no tcp_info (no connection)".into(),
        };
    }
    let all = samples(k);
    for (i, is_train) in hystart_exits(k) {
        if is_train != train {
            continue;
        }
        let s = &k.steps[i];
        let Some(&j) = s.acks.last() else {
            continue;
        };
        let before: Vec<&Sample> = all.iter().filter(|x| x.2 <= j).collect();
        let Some(min_rtt) = before.iter().map(|x| x.1).min_by(f64::total_cmp) else {
            continue;
        };
        let start = round_start(k, j);
        if train {
            let t0 = start.map_or(0.0, |x| x.0);
            let elapsed = k.acks[j].t_ms - t0;
            if elapsed + SLACK_MS < min_rtt / 2.0 {
                return Outcome::Violated {
                    line: s.line,
                    detail: format!("ACK-train exit (cwnd {}) {elapsed:.3} ms into the round, less than half the minimum RTT {min_rtt:.3} ms", s.info.snd_cwnd),
                };
            }
        } else {
            let from = start.map_or(0, |x| x.1);
            // The samples the detector saw: in slow start at or above the low window (16).
            let seen = |x: &&&Sample| {
                k.steps
                    .iter()
                    .rposition(|st| st.t_ms < k.acks[x.2].t_ms)
                    .is_some_and(|p| {
                        let inf = &k.steps[p].info;
                        inf.snd_cwnd >= 16 && inf.snd_cwnd < inf.snd_ssthresh
                    })
            };
            let round_min = before
                .iter()
                .filter(|x| x.2 >= from)
                .filter(seen)
                .map(|x| x.1)
                .min_by(f64::total_cmp)
                .unwrap_or(f64::INFINITY);
            let thresh = min_rtt + (min_rtt / 8.0).clamp(4.0, 16.0);
            if round_min + SLACK_MS <= thresh {
                return Outcome::Violated {
                    line: s.line,
                    detail: format!("delay exit (cwnd {}) with a sample of {round_min:.3} ms in the round, not above delay_min {min_rtt:.3} + clamp(delay_min/8, 4, 16) = {thresh:.3} ms", s.info.snd_cwnd),
                };
            }
        }
    }
    Outcome::Holds
}

/// I15b: a delay exit needs every sample of the round above the threshold.
pub(crate) fn i15b(k: &KTrace, _g: &super::Ghost) -> Outcome {
    hystart_check(k, false)
}

/// I15c: an ACK-train exit needs at least half the minimum RTT since the round began (not paced:
/// the scripts' tun device has no pacing qdisc).
pub(crate) fn i15c(k: &KTrace, _g: &super::Ghost) -> Outcome {
    hystart_check(k, true)
}
