//! A kernel run's trace read as the steps of the connection, for the pictures (`trc kernel run
//! --plot`, the patch check's pages; `trc-viz` draws a [`Timeline`]).
//!
//! A script is the network, so a step is what the script or the kernel did next: an injected
//! ACK starts a step (with what the kernel sent in answer to it, within [`ANSWER_MS`]); data
//! the kernel sent on its own (after a write, when a timer fired) starts one too; the state of
//! a step is the last `tcp_info` read in it. A timer is a counter that moved in the step
//! (`TCPTimeouts`: the RTO; `TCPLossProbes`: a TLP); an undo is a moved undo counter
//! ([`UNDOS`]); a drop is an original the script never let through: declared by an exported
//! script's comments, otherwise inferred from the ACKs (the ghost truth, [`crate::ghost`]; an
//! original whose fate the ACKs do not tell is not marked). The monitors judge the run, and the
//! step where one finds a violation is marked.

use crate::observe::{covers, KTrace};
use crate::{Fate, Ghost, GhostSource, Outcome};
use std::collections::BTreeMap;
use trc_kernel::{RunReport, TcpInfoSnapshot, TraceEvent};

/// A send and an ACK in one step: the send answers the ACK if it left within this many ms.
pub const ANSWER_MS: f64 = 2.0;

/// How long before its recorded time an injected ACK may have reached the kernel.
const INJECT_MS: f64 = 1.0;

/// Counters whose move is an undo.
pub const UNDOS: &[&str] = &[
    "TcpExtTCPFullUndo",
    "TcpExtTCPPartialUndo",
    "TcpExtTCPDSACKUndo",
    "TcpExtTCPLossUndo",
    "TcpExtTCPSpuriousRTOs",
];

/// A `tcp_info` read with the MIB counters then.
pub type InfoRead = (TcpInfoSnapshot, BTreeMap<String, i64>);

/// One step of the run.
#[derive(Clone, Debug, Default)]
pub struct TimelineStep {
    /// Since the first step, ms.
    pub time_ms: f64,
    /// Indices into [`KTrace::sends`] / [`KTrace::acks`].
    pub sends: Vec<usize>,
    pub acks: Vec<usize>,
    /// The statements after which its state was read.
    pub lines: Vec<u32>,
    /// The state after it (the last read in it, else the previous step's) and before it.
    pub info: Option<TcpInfoSnapshot>,
    pub before: Option<TcpInfoSnapshot>,
    /// Counters that moved in it (name, change), by name.
    pub moved: Vec<(String, i64)>,
    /// The RTO fired (`TCPTimeouts` moved); a TLP fired (`TCPLossProbes` moved).
    pub rto: bool,
    pub tlp: bool,
    /// The application's write call that started it (a step without an injected ACK).
    pub syscall: Option<String>,
    /// The undo counters that moved, without `TcpExt`.
    pub undos: Vec<&'static str>,
    /// The statement it stands for and its text.
    pub line: Option<(u32, String)>,
}

/// A run as steps.
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    pub trace: KTrace,
    pub steps: Vec<TimelineStep>,
    /// When the first step began (the trace's clock, ms).
    pub start_ms: f64,
    /// The sender's MSS (the peer's SYN's MSS less the timestamp option, else the largest
    /// payload sent) and the highest sequence number sent or acknowledged.
    pub mss: u32,
    pub top: u32,
    /// Per send: the ranges of it that were dropped (originals only), with why.
    pub drops: Vec<Vec<(u32, u32, String)>>,
    /// A copy's way: (the step it was acknowledged in, the step it left in, the send), for each
    /// copy not dropped whose first covering ACK came in a later step.
    pub travels: Vec<(usize, usize, usize)>,
    /// The earliest step where a monitor finds a violation, and the monitors' ids.
    pub violated: Option<(usize, String)>,
}

/// A step while the trace is read.
#[derive(Default)]
struct Col {
    start_ms: f64,
    sends: Vec<usize>,
    acks: Vec<usize>,
    info: Option<InfoRead>,
    lines: Vec<u32>,
}

impl Timeline {
    /// The steps of a run of `script_text`.
    pub fn of_run(report: &RunReport, script_text: &str) -> Timeline {
        let k = KTrace::from_report(report);
        let ghost = Ghost::of_script(script_text);
        let cols = columns(report, &k);
        let mss = mss(report, &k);
        let top = k
            .sends
            .iter()
            .map(|s| s.end)
            .chain(k.acks.iter().map(|a| a.ack))
            .max()
            .unwrap_or(1);
        let drops = drops(&k, &ghost);
        let travels = travels(&k, &cols, &drops);
        let violated = violated(report, &k, &ghost, &cols);
        let start_ms = cols.first().map_or(0.0, |c| c.start_ms);
        let steps = steps(report, &k, cols);
        Timeline {
            trace: k,
            steps,
            start_ms,
            mss,
            top,
            drops,
            travels,
            violated,
        }
    }
}

/// The trace in time order, grouped into steps.
fn columns(report: &RunReport, k: &KTrace) -> Vec<Col> {
    let mut evs: Vec<&TraceEvent> = report.trace.iter().collect();
    // An injected ACK's time is read when the write to tun returns, by when the kernel has
    // processed it and sent its answer (captured earlier): it sorts as if injected up to
    // INJECT_MS before (stable: `KTrace`'s sends and ACKs keep their order).
    let t_of = |e: &TraceEvent| match e {
        TraceEvent::Inbound { t_ms, .. } => *t_ms - INJECT_MS,
        TraceEvent::Outbound { t_ms, .. } | TraceEvent::TcpInfo { t_ms, .. } => *t_ms,
    };
    evs.sort_by(|a, b| t_of(a).total_cmp(&t_of(b)));
    let mut cols: Vec<Col> = Vec::new();
    let (mut si, mut ai) = (0usize, 0usize);
    let mut started = false;
    for e in evs {
        match e {
            TraceEvent::Inbound {
                t_ms, segment: s, ..
            } => {
                if s.flags.syn() || !s.flags.ack() {
                    continue;
                }
                let i = ai;
                ai += 1;
                // The handshake's ACK (and any before data) is no step of the transfer.
                if !started && k.acks[i].ack <= 1 {
                    continue;
                }
                started = true;
                cols.push(Col {
                    start_ms: *t_ms,
                    acks: vec![i],
                    ..Col::default()
                });
            }
            TraceEvent::Outbound {
                t_ms, segment: s, ..
            } => {
                if s.flags.syn() || s.len == 0 {
                    continue;
                }
                let i = si;
                si += 1;
                started = true;
                let answer = cols.last().is_some_and(|c| {
                    c.info.is_none() || (!c.acks.is_empty() && *t_ms - c.start_ms <= ANSWER_MS)
                });
                if !answer {
                    cols.push(Col {
                        start_ms: *t_ms,
                        ..Col::default()
                    });
                }
                cols.last_mut().expect("a step").sends.push(i);
            }
            TraceEvent::TcpInfo {
                line,
                info,
                counters,
                ..
            } => {
                if let Some(c) = cols.last_mut().filter(|_| started) {
                    c.info = Some((info.clone(), counters.clone()));
                    if !c.lines.contains(line) {
                        c.lines.push(*line);
                    }
                }
            }
        }
    }
    cols
}

/// The sender's MSS: the peer's SYN's MSS less the timestamp option (12 bytes) when
/// negotiated, else the largest payload the kernel sent.
fn mss(report: &RunReport, k: &KTrace) -> u32 {
    let peer_mss = report.trace.iter().find_map(|e| match e {
        TraceEvent::Inbound { segment: s, .. } if s.flags.syn() => {
            s.options.iter().find_map(|o| match o {
                trc_kernel::packet::WireOption::Mss { mss } => Some(*mss as u32),
                _ => None,
            })
        }
        _ => None,
    });
    peer_mss
        .map(|m| m.saturating_sub(if k.ts { 12 } else { 0 }))
        .filter(|m| *m > 0)
        .unwrap_or_else(|| {
            k.sends
                .iter()
                .map(|s| s.end.wrapping_sub(s.seq))
                .max()
                .unwrap_or(1000)
        })
        .max(1)
}

/// Which parts of each original were dropped, with why.
fn drops(k: &KTrace, ghost: &Ghost) -> Vec<Vec<(u32, u32, String)>> {
    k.sends
        .iter()
        .map(|s| {
            if s.retrans {
                return Vec::new();
            }
            match ghost.source {
                GhostSource::Declared => ghost
                    .dropped
                    .iter()
                    .filter(|&&(a, b)| {
                        trc_model::seq::before(a, s.end) && trc_model::seq::before(s.seq, b)
                    })
                    .map(|&(a, b)| {
                        let why = "the script's header declares it dropped".to_string();
                        (a.max(s.seq), b.min(s.end), why)
                    })
                    .collect(),
                GhostSource::Inferred => match ghost.original(k, s.seq, s.end) {
                    Fate::Dropped(why) => vec![(s.seq, s.end, why)],
                    _ => Vec::new(),
                },
            }
        })
        .collect()
}

/// Each copy that was not dropped, to the step of the first ACK after it covering it.
fn travels(
    k: &KTrace,
    cols: &[Col],
    drops: &[Vec<(u32, u32, String)>],
) -> Vec<(usize, usize, usize)> {
    let mut col_of_send = vec![0; k.sends.len()];
    for (ci, c) in cols.iter().enumerate() {
        for &s in &c.sends {
            col_of_send[s] = ci;
        }
    }
    let col_of_ack = |a: usize| cols.iter().position(|c| c.acks.contains(&a));
    let mut out = Vec::new();
    for (i, s) in k.sends.iter().enumerate() {
        if !drops[i].is_empty() {
            continue;
        }
        let first = k
            .acks
            .iter()
            .position(|x| x.t_ms > s.t_ms && covers(x, s.seq, s.end));
        if let Some(c) = first.and_then(col_of_ack) {
            if c > col_of_send[i] {
                out.push((c, col_of_send[i], i));
            }
        }
    }
    out
}

/// The monitors' verdicts: the earliest step where one finds a violation (none when the
/// script's setup failed: the connection did not run as the scenario says).
fn violated(
    report: &RunReport,
    k: &KTrace,
    ghost: &Ghost,
    cols: &[Col],
) -> Option<(usize, String)> {
    let setup_failed = report.script.lines.iter().any(|l| {
        l.kind == trc_pkt::report::LineKind::Shell && l.status == trc_pkt::report::Status::Fail
    });
    if setup_failed {
        return None;
    }
    let mut violated: Option<(usize, String)> = None;
    for m in crate::monitors() {
        if let Outcome::Violated { line, .. } = (m.check)(k, ghost) {
            let Some(ci) = cols.iter().position(|c| c.lines.contains(&line)) else {
                continue;
            };
            match &mut violated {
                Some((c, ids)) if *c == ci => ids.push_str(&format!(",{}", m.id)),
                Some((c, _)) if *c < ci => {}
                _ => violated = Some((ci, m.id.to_string())),
            }
        }
    }
    violated
}

/// The text of script line `l`.
fn line_text(report: &RunReport, l: u32) -> String {
    report
        .script
        .lines
        .iter()
        .find(|x| x.line == l)
        .map(|x| x.text.trim().to_string())
        .unwrap_or_default()
}

/// The write call of script line `l`, if it is one.
fn syscall(report: &RunReport, l: u32) -> Option<String> {
    let x = report
        .script
        .lines
        .iter()
        .find(|x| x.line == l && x.kind == trc_pkt::report::LineKind::Syscall)?;
    let t = x.text.trim();
    let name: String = t[t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(0)..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    ["write", "send", "sendto", "sendmsg", "writev"]
        .contains(&name.as_str())
        .then_some(name)
}

/// The steps with their states, counter moves and events.
fn steps(report: &RunReport, k: &KTrace, cols: Vec<Col>) -> Vec<TimelineStep> {
    let t0 = cols.first().map_or(0.0, |c| c.start_ms);
    let mut out = Vec::new();
    let mut prev: Option<InfoRead> = None;
    for c in cols {
        let cur = c.info.clone().or_else(|| prev.clone());
        let count = |r: &Option<InfoRead>, name: &str| {
            r.as_ref()
                .and_then(|(_, m)| m.get(name))
                .copied()
                .unwrap_or(0)
        };
        let delta = |name: &str| count(&cur, name) - count(&prev, name);
        let mut moved: Vec<(String, i64)> = cur
            .as_ref()
            .map(|(_, m)| {
                m.keys()
                    .map(|n| (n.clone(), delta(n)))
                    .filter(|(_, d)| *d != 0)
                    .collect()
            })
            .unwrap_or_default();
        moved.sort();
        let line = c
            .lines
            .first()
            .or(c.acks.first().map(|a| &k.acks[*a].line))
            .map(|l| (*l, line_text(report, *l)));
        let syscall = if c.acks.is_empty() {
            c.lines.iter().find_map(|l| syscall(report, *l))
        } else {
            None
        };
        out.push(TimelineStep {
            time_ms: c.start_ms - t0,
            rto: delta("TcpExtTCPTimeouts") > 0,
            tlp: delta("TcpExtTCPLossProbes") > 0,
            undos: UNDOS
                .iter()
                .filter(|n| delta(n) > 0)
                .map(|n| n.trim_start_matches("TcpExt"))
                .collect(),
            info: cur.as_ref().map(|(i, _)| i.clone()),
            before: prev.as_ref().map(|(i, _)| i.clone()),
            moved,
            syscall,
            line,
            sends: c.sends,
            acks: c.acks,
            lines: c.lines,
        });
        prev = cur;
    }
    out
}
