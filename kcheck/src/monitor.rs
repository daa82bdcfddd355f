//! Property monitors on kernel traces: each decides one catalogue property (properties/src/lib.rs)
//! from what a run observed ([`KTrace`]) and the scenario's ghost truth ([`Ghost`]).
//! docs/reference/properties.md ("On a kernel") gives each monitor's definition and what it cannot see
//! compared with the model.

use super::ghost::{Fate, Ghost};
use super::observe::{
    KTrace, CA_CWR, CA_DISORDER, CA_LOSS, CA_OPEN, CA_RECOVERY, INFINITE_SSTHRESH,
};
use serde::{Deserialize, Serialize};
use trc_model::seq::{after, before};

/// The MIB counters an undo increments (`tcp_try_undo_recovery`, `_dsack`, `_loss`, `_partial`;
/// an F-RTO undo counts `TCPLossUndo` and `TCPSpuriousRTOs`).
pub const UNDO_COUNTERS: &[&str] = &[
    "TcpExtTCPFullUndo",
    "TcpExtTCPPartialUndo",
    "TcpExtTCPDSACKUndo",
    "TcpExtTCPLossUndo",
];

/// A monitor's verdict on one run.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(tag = "verdict", rename_all = "kebab-case")]
pub enum Outcome {
    Holds,
    /// At script line `line` (the statement after which the kernel's state broke it).
    Violated {
        line: u32,
        detail: String,
    },
    /// The run does not show whether it holds (never a pass).
    Undecided {
        reason: String,
    },
}

impl Outcome {
    pub fn word(&self) -> &'static str {
        match self {
            Outcome::Holds => "holds",
            Outcome::Violated { .. } => "VIOLATED",
            Outcome::Undecided { .. } => "undecided",
        }
    }
}

/// One monitor.
#[derive(Clone, Copy, Debug)]
pub struct Monitor {
    pub id: &'static str,
    /// What it checks on the kernel's trace (docs/reference/properties.md repeats it).
    pub definition: &'static str,
    /// What it cannot see that the model's property does.
    pub blind: &'static str,
    pub check: fn(&KTrace, &Ghost) -> Outcome,
}

/// Per step, what the monitors derive from the observations: `snd_una` after the step, the
/// undo episode in effect before the step's own undo, `high_seq`, the undo and timeout counts.
#[derive(Clone, Debug, Default)]
pub struct Derived {
    pub una: u32,
    /// Time of the step's first own event (its ACK, or its first send).
    pub t_ev: f64,
    pub undos: i64,
    pub frto_undo: bool,
    pub timeouts: i64,
    /// (retransmissions after this time count, undo_marker) of the episode the step's undo ends.
    pub episode: Option<(f64, u32)>,
    /// `tp->high_seq` after the step (set at Recovery entry and at every RTO).
    pub high_seq: Option<u32>,
    pub prev_state: u8,
    pub prev_retransmits: u8,
    pub prev_ssthresh: u32,
    pub prev_cwnd: u32,
    /// The episode's `prior_cwnd` and `prior_ssthresh` as `tcp_init_cwnd_reduction` /
    /// `tcp_enter_loss` saved them (from the statement before the episode began); `None` for
    /// the ssthresh when the kernel saves none (Recovery entered in CWR).
    pub prior: Option<(u32, Option<u32>)>,
}

/// The per-step derivation: episodes start where the kernel calls `tcp_init_undo` —
/// `tcp_enter_recovery` (state becomes Recovery) and `tcp_enter_loss` when it re-arms undo
/// (from Open/Disorder/CWR, with `snd_una` at or past `high_seq`, or a repeated RTO in Loss after
/// an ACK reset `icsk_retransmits`); an undo ends the episode (`undo_marker = 0`), and a step
/// that stays in Recovery/Loss after its undo starts a new one (RACK re-entering at once).
pub fn derive(k: &KTrace) -> Vec<Derived> {
    let mut out = Vec::with_capacity(k.steps.len());
    let (mut prev_state, mut prev_retx, mut prev_ssth, mut una) =
        (CA_OPEN, 0u8, INFINITE_SSTHRESH, 1u32);
    let mut episode: Option<(f64, u32)> = None;
    let mut prior: Option<(u32, Option<u32>)> = None;
    let mut prev_cwnd = 0u32;
    let mut high_seq: Option<u32> = None;
    for (i, s) in k.steps.iter().enumerate() {
        let t_prev = if i == 0 { 0.0 } else { k.steps[i - 1].t_ms };
        let t_ev = k.event_time(i);
        let una_before = una;
        for &a in &s.acks {
            if after(k.acks[a].ack, una) {
                una = k.acks[a].ack;
            }
        }
        let st = s.info.ca_state;
        let undos: i64 = UNDO_COUNTERS.iter().map(|c| k.delta(i, c).max(0)).sum();
        let frto_undo = k.delta(i, "TcpExtTCPSpuriousRTOs") > 0;
        let timeouts = k.delta(i, "TcpExtTCPTimeouts").max(0);
        let snd_nxt = k.snd_nxt_before(t_ev);
        let entered_recovery = st == CA_RECOVERY && prev_state != CA_RECOVERY;
        let rto = timeouts > 0 || (st == CA_LOSS && prev_state != CA_LOSS);
        let reinit_loss = rto
            && (prev_state <= CA_CWR
                || episode.is_none()
                || high_seq.is_none_or(|h| !after(h, una_before))
                || (prev_state == CA_LOSS && prev_retx == 0));
        if entered_recovery || reinit_loss {
            episode = Some((t_prev, una));
            // tcp_current_ssthresh(): ssthresh itself in CWR/Recovery, else max(ssthresh, 3/4 cwnd).
            let current = if prev_state == CA_CWR || prev_state == CA_RECOVERY {
                prev_ssth
            } else {
                prev_ssth.max((prev_cwnd >> 1) + (prev_cwnd >> 2))
            };
            prior = Some((
                prev_cwnd,
                if entered_recovery && prev_state == CA_CWR {
                    None
                } else {
                    Some(current)
                },
            ));
        }
        if entered_recovery || rto {
            high_seq = Some(snd_nxt);
        }
        out.push(Derived {
            una,
            t_ev,
            undos,
            frto_undo,
            timeouts,
            episode,
            high_seq,
            prev_state,
            prev_retransmits: prev_retx,
            prev_ssthresh: prev_ssth,
            prev_cwnd,
            prior,
        });
        if undos > 0 {
            episode = if st == CA_RECOVERY || st == CA_LOSS {
                Some((t_ev, una))
            } else {
                None
            };
            prior = None;
        }
        prev_cwnd = s.info.snd_cwnd;
        prev_state = st;
        prev_retx = s.info.retransmits;
        prev_ssth = s.info.snd_ssthresh;
    }
    out
}

fn no_steps(k: &KTrace) -> Option<Outcome> {
    k.steps.is_empty().then(|| Outcome::Undecided {
        reason: "the run read no tcp_info (no connection)".into(),
    })
}

/// I1: no undo while a retransmission of this episode repaired a real loss.
fn i1(k: &KTrace, g: &Ghost) -> Outcome {
    if let Some(o) = no_steps(k) {
        return o;
    }
    let d = derive(k);
    let mut undecided: Option<String> = None;
    for (i, s) in k.steps.iter().enumerate() {
        if d[i].undos == 0 {
            continue;
        }
        let Some((from, marker)) = d[i].episode else {
            undecided.get_or_insert(format!(
                "line {}: an undo with no Recovery/Loss entry seen before it",
                s.line
            ));
            continue;
        };
        let mut seen: Vec<(u32, u32)> = Vec::new();
        for r in k
            .sends
            .iter()
            .filter(|r| r.retrans && r.t_ms > from && r.t_ms < d[i].t_ev)
        {
            if before(r.seq, marker) || seen.contains(&(r.seq, r.end)) {
                continue;
            }
            seen.push((r.seq, r.end));
            // F-RTO judges the timeout: wrong only once the retransmission repaired the loss.
            if d[i].frto_undo && !k.covered_before(r.seq, r.end, s.t_ms + 1e-3) {
                continue;
            }
            match g.original(k, r.seq, r.end) {
                Fate::Dropped(why) => {
                    let kinds: Vec<String> = UNDO_COUNTERS
                        .iter()
                        .filter(|c| k.delta(i, c) > 0)
                        .map(|c| c.trim_start_matches("TcpExt").to_string())
                        .collect();
                    return Outcome::Violated {
                        line: s.line,
                        detail: format!(
                            "undo ({}) at cwnd {} ssthresh {} while {}:{} was retransmitted in this episode and its original was really lost ({why})",
                            kinds.join("+"),
                            s.info.snd_cwnd,
                            s.info.snd_ssthresh,
                            r.seq,
                            r.end
                        ),
                    };
                }
                Fate::Unknown(why) => {
                    undecided.get_or_insert(format!("line {}: undo; {why}", s.line));
                }
                Fate::Delivered(_) => {}
            }
        }
    }
    undecided.map_or(Outcome::Holds, |reason| Outcome::Undecided { reason })
}

/// I11: an undo restores exactly the prior values.
fn i11(k: &KTrace, _g: &Ghost) -> Outcome {
    if let Some(o) = no_steps(k) {
        return o;
    }
    let d = derive(k);
    let mut undecided: Option<String> = None;
    for (i, s) in k.steps.iter().enumerate() {
        if d[i].undos == 0 {
            continue;
        }
        let st = s.info.ca_state;
        let Some((prior_cwnd, prior_ssth)) = d[i].prior else {
            undecided.get_or_insert(format!(
                "line {}: an undo with no episode start seen before it",
                s.line
            ));
            continue;
        };
        if st == CA_RECOVERY || st == CA_CWR || (st == CA_LOSS && d[i].timeouts > 0) {
            undecided.get_or_insert(format!(
                "line {}: the same statement reduced again after the undo",
                s.line
            ));
            continue;
        }
        let Some(prior_ssth) = prior_ssth else {
            undecided.get_or_insert(format!(
                "line {}: Recovery was entered in CWR (no prior_ssthresh saved)",
                s.line
            ));
            continue;
        };
        let (cwnd, ssth) = (s.info.snd_cwnd, s.info.snd_ssthresh);
        let want_ssth = d[i].prev_ssthresh.max(prior_ssth);
        let lo = d[i].prev_cwnd.max(prior_cwnd);
        // The same ACK may grow cwnd afterwards: by what it delivered in slow start (the restored
        // ssthresh above cwnd), by half of it in congestion avoidance.
        let dd = k.delivered_delta(i);
        let hi = lo + if lo < want_ssth { dd } else { dd / 2 } + 1;
        if ssth != want_ssth || cwnd < lo || cwnd > hi {
            return Outcome::Violated {
                line: s.line,
                detail: format!("undo left cwnd {cwnd}, ssthresh {ssth}; expected ssthresh max({}, prior {prior_ssth}) = {want_ssth} and cwnd max({}, prior {prior_cwnd}) = {lo} (up to {hi} with the same ACK's growth)", d[i].prev_ssthresh, d[i].prev_cwnd),
            };
        }
    }
    undecided.map_or(Outcome::Holds, |reason| Outcome::Undecided { reason })
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum RedKind {
    Recovery,
    Loss,
    Cwr,
    Tlp,
}

/// Whether step `i` shows a segment at or above `hs` (data sent after the reduction that set
/// `hs`: a new window) marked lost, as the model's I2 exception `new_window_loss` asks: the step
/// retransmitted such a segment (in Recovery the kernel retransmits only segments marked lost),
/// or `tcpi_lost` counts more segments than were ever sent in `[snd_una, hs)`.
pub(crate) fn new_window_loss_seen(k: &KTrace, i: usize, una: u32, hs: u32) -> bool {
    let t_prev = if i == 0 {
        f64::NEG_INFINITY
    } else {
        k.steps[i - 1].t_ms
    };
    let t_now = k.steps[i].t_ms;
    let retransmitted = k
        .sends
        .iter()
        .any(|s| s.retrans && s.t_ms > t_prev && s.t_ms <= t_now && !before(s.seq, hs));
    let below = k
        .sends
        .iter()
        .filter(|s| !s.retrans && before(s.seq, hs) && after(s.end, una))
        .count();
    retransmitted || k.steps[i].info.lost as usize > below
}

/// I2: ssthresh is reduced at most once per window (with the kernel's documented exceptions).
/// The model's exceptions for a Recovery entered before `high_seq` (properties/src/lib.rs
/// `i2_reduction_ok`): from Loss with a lost retransmission (`TCPLostRetransmit` moved), or, from
/// any state, with a segment of a new window marked lost ([`new_window_loss_seen`]). When neither
/// shows and data was sent at or above the previous `high_seq` (so such a lost mark could exist
/// unseen), the run is undecided rather than violated.
fn i2(k: &KTrace, _g: &Ghost) -> Outcome {
    if let Some(o) = no_steps(k) {
        return o;
    }
    let d = derive(k);
    let mut undecided: Option<String> = None;
    let mut prev: Option<(u32, RedKind)> = None;
    for (i, s) in k.steps.iter().enumerate() {
        let (st, ps) = (s.info.ca_state, d[i].prev_state);
        if d[i].undos > 0 {
            // The reduction is withdrawn; a Recovery still in force after the undo is a new one.
            prev = (st == CA_RECOVERY).then(|| (k.snd_nxt_before(d[i].t_ev), RedKind::Recovery));
            continue;
        }
        let kind = if st == CA_RECOVERY && ps != CA_RECOVERY && ps != CA_CWR {
            Some(RedKind::Recovery)
        } else if st == CA_CWR && (ps == CA_OPEN || ps == CA_DISORDER) {
            Some(if k.delta(i, "TcpExtTCPLossProbeRecovery") > 0 {
                RedKind::Tlp
            } else {
                RedKind::Cwr
            })
        } else if st == CA_LOSS && d[i].timeouts > 0 && s.info.snd_ssthresh != d[i].prev_ssthresh {
            Some(RedKind::Loss)
        } else {
            None
        };
        let Some(kind) = kind else { continue };
        if let Some((hs, pk)) = prev {
            let una = d[i].una;
            let exception = (kind == RedKind::Loss && ps == CA_LOSS && d[i].prev_retransmits == 0)
                // Row 18: Loss → Recovery because a retransmission was lost (FLAG_LOST_RETRANS,
                // which tcp_identify_packet_loss sets when retrans_out fell, or the reordering
                // timer marking a retransmission). tcp_mark_skb_lost counts
                // TcpExtTCPLostRetransmit exactly when it takes a retransmission out of
                // retrans_out, so the counter moves in that step. Without it the cut is F9's.
                || (kind == RedKind::Recovery && ps == CA_LOSS && k.delta(i, "TcpExtTCPLostRetransmit") > 0)
                || (kind == RedKind::Recovery && new_window_loss_seen(k, i, una, hs))
                || kind == RedKind::Tlp
                || pk == RedKind::Tlp;
            if before(una, hs) && !exception {
                if kind == RedKind::Recovery && after(k.snd_nxt_before(s.t_ms + 1e-3), hs) {
                    // Data of a new window was sent: a lost mark on it would make this Recovery
                    // the model's new-window exception, and the run does not show the marks.
                    undecided.get_or_insert(format!(
                        "line {}: Recovery entered at snd_una {una}, before the previous reduction's high_seq {hs} ({pk:?}), with data sent at or above it; whether any of it was marked lost (the new-window exception) is not visible",
                        s.line
                    ));
                    prev = Some((k.snd_nxt_before(d[i].t_ev), kind));
                    continue;
                }
                return Outcome::Violated {
                    line: s.line,
                    detail: format!("a second ssthresh reduction ({kind:?}, ssthresh {} -> {}) at snd_una {una}, before the previous reduction's high_seq {hs} ({pk:?})", d[i].prev_ssthresh, s.info.snd_ssthresh),
                };
            }
        }
        prev = Some((k.snd_nxt_before(d[i].t_ev), kind));
    }
    undecided.map_or(Outcome::Holds, |reason| Outcome::Undecided { reason })
}

/// I3: cwnd >= 1 after every statement.
fn i3(k: &KTrace, _g: &Ghost) -> Outcome {
    if let Some(o) = no_steps(k) {
        return o;
    }
    match k.steps.iter().find(|s| s.info.snd_cwnd < 1) {
        Some(s) => Outcome::Violated {
            line: s.line,
            detail: format!(
                "tcpi_snd_cwnd {} in {}",
                s.info.snd_cwnd, s.info.ca_state_name
            ),
        },
        None => Outcome::Holds,
    }
}

/// I13: leaving Recovery without an undo sets cwnd to ssthresh.
fn i13(k: &KTrace, _g: &Ghost) -> Outcome {
    if let Some(o) = no_steps(k) {
        return o;
    }
    let d = derive(k);
    for (i, s) in k.steps.iter().enumerate() {
        let st = s.info.ca_state;
        if d[i].prev_state != CA_RECOVERY || !(st == CA_OPEN || st == CA_DISORDER) || d[i].undos > 0
        {
            continue;
        }
        let (cwnd, ssth) = (s.info.snd_cwnd, s.info.snd_ssthresh);
        if ssth >= INFINITE_SSTHRESH {
            continue;
        }
        // Congestion avoidance may run on the same ACK after tcp_end_cwnd_reduction (CUBIC and
        // Reno grow by at most one segment per two delivered, plus a carried-over count).
        let slack = k.delivered_delta(i) / 2 + 1;
        if cwnd < ssth || cwnd > ssth + slack {
            return Outcome::Violated { line: s.line, detail: format!("left Recovery for {} without an undo with cwnd {cwnd}, ssthresh {ssth} (allowed {ssth}..={})", s.info.ca_state_name, ssth + slack) };
        }
    }
    Outcome::Holds
}

/// I14: a non-SACK sender never leaves Recovery or Loss on an ACK that makes snd_una == high_seq.
fn i14(k: &KTrace, _g: &Ghost) -> Outcome {
    if let Some(o) = no_steps(k) {
        return o;
    }
    if k.sack {
        return Outcome::Holds;
    }
    let d = derive(k);
    for (i, s) in k.steps.iter().enumerate() {
        let (st, ps) = (s.info.ca_state, d[i].prev_state);
        if !(ps == CA_RECOVERY || ps == CA_LOSS) || st > CA_CWR || s.acks.is_empty() {
            continue;
        }
        // high_seq of the episode being left: the one in force before this step.
        let hs = if i == 0 { None } else { d[i - 1].high_seq };
        if let Some(hs) = hs {
            if d[i].una == hs {
                return Outcome::Violated {
                    line: s.line,
                    detail: format!(
                        "left {} for {} on an ACK that made snd_una == high_seq ({hs})",
                        if ps == CA_LOSS { "Loss" } else { "Recovery" },
                        s.info.ca_state_name
                    ),
                };
            }
        }
    }
    Outcome::Holds
}

/// The monitors, in catalogue order.
pub fn monitors() -> Vec<Monitor> {
    vec![
        Monitor {
            id: "I1",
            definition: "at a statement where a TcpExt*Undo counter moved, no range retransmitted since the episode began (Recovery entry, or an RTO that re-arms undo) and at or above snd_una then had its original really lost (ghost); for an F-RTO undo (TCPSpuriousRTOs) only ranges the script had already ACKed count",
            blind: "undo without a counter (none known); which copy arrived when the script does not say (no timestamps, no DSACK, not exported): undecided; the episode start is derived from tcpi_ca_state and TCPTimeouts, not read from undo_marker",
            check: i1,
        },
        Monitor {
            id: "I2",
            definition: "a reduction is entry into Recovery (not from CWR), entry into CWR, or an RTO (TCPTimeouts) that changed ssthresh; a second one with snd_una before the previous one's high_seq (snd_nxt then) fails unless it is an RTO in Loss after an ACK reset icsk_retransmits, Loss -> Recovery with a lost retransmission (TCPLostRetransmit), a Recovery with a segment at or above that high_seq seen marked lost (retransmitted in the statement, or tcpi_lost above the segments sent below it), or a TLP one (TCPLossProbeRecovery); an undo withdraws the previous one",
            blind: "an RTO reduction that recomputes the same ssthresh; reductions inside one statement; ECN CWR and TLP CWR told apart only by the counter; LOST marks are not visible: a Recovery before high_seq with new data sent and no lost mark seen on it is undecided",
            check: i2,
        },
        Monitor {
            id: "I3",
            definition: "tcpi_snd_cwnd >= 1 after every statement",
            blind: "PRR dividing by a zero prior_cwnd (no observable, and a kernel would oops); cwnd between statements",
            check: i3,
        },
        Monitor {
            id: "I11",
            definition: "at an undo (a TcpExt*Undo counter moved) that leaves the connection out of Recovery/CWR: ssthresh == max(ssthresh before, prior_ssthresh) and max(cwnd before, prior_cwnd) <= cwnd <= that + delivered + 1 in slow start (delivered/2 + 1 in congestion avoidance), with prior_cwnd/prior_ssthresh (tcp_current_ssthresh) computed from the statement before the episode began",
            blind: "prior_cwnd/prior_ssthresh are recomputed, not read; an undo followed in the same statement by a new reduction (F3) is undecided; the same ACK's congestion avoidance widens the cwnd check",
            check: i11,
        },
        Monitor {
            id: "I12",
            definition: "at every loss response (Recovery entry not from CWR, CWR entry, an RTO that changed ssthresh) ssthresh >= 2; at a statement where TcpExtTCPHystart{Train,Delay}Detect moved, the statement before had cwnd < ssthresh (slow start)",
            blind: "ssthresh() results the trace does not show (an RTO that recomputes the same value); cwnd between statements",
            check: super::cc_monitor::i12,
        },
        Monitor {
            id: "I13",
            definition: "at a statement that leaves Recovery for Open/Disorder with no undo counter moving and a finite ssthresh: ssthresh <= cwnd <= ssthresh + delivered/2 + 1 (the same ACK's congestion avoidance may add a little)",
            blind: "the exact value tcp_end_cwnd_reduction set (the same ACK's congestion avoidance runs after it); exits within one statement that re-enter Recovery",
            check: i13,
        },
        Monitor {
            id: "I14",
            definition: "on a non-SACK connection, no statement with an ACK leaves Recovery/Loss (for Open, Disorder or CWR) with snd_una (the highest ACK injected) equal to high_seq (snd_nxt at the last Recovery entry or RTO)",
            blind: "high_seq is derived (snd_nxt when the episode began or the RTO fired), not read",
            check: i14,
        },
        Monitor {
            id: "I15b",
            definition: "at a HyStart delay exit (TcpExtTCPHystartDelayDetect moved), some RTT sample of the true round that the detector saw (slow start, cwnd >= 16) is at most the minimum sample so far + clamp(min/8, 4 ms, 16 ms) (+0.2 ms of clock slack): violated",
            blind: "samples are the script's clock (injection time minus send time of the newest never-retransmitted segment acked), not the kernel's tcp_mstamp; delay_min is the minimum of all samples (the kernel skips those within 1 s of an epoch start)",
            check: super::cc_monitor::i15b,
        },
        Monitor {
            id: "I15c",
            definition: "at a HyStart ACK-train exit (TcpExtTCPHystartTrainDetect moved), the time since the true round began (the first ACK past the previous round's snd_nxt) is at least half the minimum RTT sample so far (less 0.2 ms of clock slack); unpaced (the scripts' tun has no pacing qdisc)",
            blind: "the round start and samples are the script's clock; HyStart's own round (end_seq) is not visible, so I15 itself stays model-only",
            check: super::cc_monitor::i15c,
        },
        Monitor {
            id: "I17",
            definition: "at every loss response (as I12) with one ACK in the statement, ssthresh == the congestion control's ssthresh() of the cwnd before the statement: CUBIC max(cwnd*717/1024, 2), Reno max(cwnd/2, 2)",
            blind: "a statement of several ACKs is undecided (cwnd may move before the reduction); beta and fast convergence are the module defaults",
            check: super::cc_monitor::i17,
        },
        Monitor {
            id: "I20",
            definition: "at a statement whose one ACK, in Recovery or Loss with an undo episode open, advances snd_una past every range retransmitted since the episode began (at least one) and echoes a TSecr older than every TSval retrans_stamp may hold (the retransmissions since the connection was last in Open, up to the episode's first), with the ghost saying no original of [undo_marker, high_seq) was lost: a TcpExt*Undo counter moves in that statement",
            blind: "retrans_stamp and undo_marker are derived, not read: an echo between the candidate stamps is undecided; a statement of several ACKs with a proof is undecided; the DSACK form of the proof is not judged (as in the model)",
            check: super::missed_undo::i20,
        },
        Monitor {
            id: "I20e",
            definition: "after such a proof (I20), some TcpExt*Undo counter moves before the episode ends: before the state leaves Recovery/Loss or a new episode (Recovery entry, or an RTO that re-arms undo) begins",
            blind: "as I20; an episode still open when the script ends is not judged",
            check: super::missed_undo::i20e,
        },
    ]
}

/// A property id `select` refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectError {
    /// Not in the catalogue.
    #[error("unknown property `{0}`")]
    Unknown(String),
    /// In the catalogue, but no monitor judges it on a kernel trace; `monitors` lists the ids
    /// that have one.
    #[error("property {id} has no kernel monitor (it needs model state a kernel run does not show); monitors: {}", monitors.join(", "))]
    NoMonitor { id: String, monitors: Vec<String> },
}

/// The monitors for the ids given (all if empty); an id without a monitor is an error that names
/// the catalogue's ids that have one.
pub fn select(ids: &[String]) -> Result<Vec<Monitor>, SelectError> {
    let all = monitors();
    if ids.is_empty() {
        return Ok(all);
    }
    let known: Vec<String> = all.iter().map(|m| m.id.to_string()).collect();
    let mut out = Vec::new();
    for id in ids {
        if !trc_properties::catalogue()
            .iter()
            .any(|s| s.id.eq_ignore_ascii_case(id))
        {
            return Err(SelectError::Unknown(id.clone()));
        }
        match monitors()
            .into_iter()
            .find(|m| m.id.eq_ignore_ascii_case(id))
        {
            Some(m) => out.push(m),
            None => {
                return Err(SelectError::NoMonitor {
                    id: id.clone(),
                    monitors: known,
                })
            }
        }
    }
    Ok(out)
}
