//! The pictures of a kernel run (`trc kernel run --plot`), from its trace: the data segments the
//! kernel sent, the ACKs the script injected (with their SACK blocks), and the connection's
//! `tcp_info` and MIB counters after each statement.
//!
//! Columns: a script is the network, so a step is what the script or the kernel did next. An
//! injected ACK starts a column (with what the kernel sent in answer to it, within 2 ms); data
//! the kernel sent on its own (after a write, when a timer fired) starts one too; the state
//! drawn is the last `tcp_info` read in the column. A timer is a counter that moved in the
//! column (`TCPTimeouts`: the RTO; `TCPLossProbes`: a TLP); an undo is a moved undo counter
//! (`TCPFullUndo`, `TCPPartialUndo`, `TCPDSACKUndo`, `TCPLossUndo`, `TCPSpuriousRTOs`); a
//! drop is an original the script never let through: declared by an exported script's
//! comments, otherwise inferred from the ACKs (the kernel check's ghost truth,
//! `trc_kcheck::ghost`; an original whose fate the ACKs do not tell is not marked). The
//! kernel check's monitors judge the run, and the column where one finds a violation is marked.

use super::{Column, Item, Pictures};
use std::fmt::Write as _;
use trc_kcheck::observe::{covers, KTrace};
use trc_kcheck::{Fate, Ghost, Outcome};
use trc_kernel::{RunReport, TcpInfoSnapshot, TraceEvent};
use trc_model::state::CaState;

/// A send and an ACK in one column: the send answers the ACK if it left within this many ms.
const ANSWER_MS: f64 = 2.0;

/// How long before its recorded time an injected ACK may have reached the kernel.
const INJECT_MS: f64 = 1.0;

/// Counters whose move is an undo.
const UNDOS: &[&str] = &[
    "TcpExtTCPFullUndo",
    "TcpExtTCPPartialUndo",
    "TcpExtTCPDSACKUndo",
    "TcpExtTCPLossUndo",
    "TcpExtTCPSpuriousRTOs",
];

/// `tcpi_ca_state` as the model's state (`enum tcp_ca_state`: 0 Open .. 4 Loss).
fn ca_of(v: u8) -> CaState {
    match v {
        1 => CaState::Disorder,
        2 => CaState::Cwr,
        3 => CaState::Recovery,
        4 => CaState::Loss,
        _ => CaState::Open,
    }
}

/// One column while the trace is read.
#[derive(Default)]
struct Col {
    start_ms: f64,
    /// Indices into [`KTrace::sends`] / [`KTrace::acks`].
    sends: Vec<usize>,
    acks: Vec<usize>,
    /// The last `tcp_info` read in it, with the counters then.
    info: Option<(TcpInfoSnapshot, std::collections::BTreeMap<String, i64>)>,
    /// The statements after which its state was read.
    lines: Vec<u32>,
}

/// A column of the run as the page's table shows it.
pub struct Step {
    pub time_ms: f64,
    pub lines: Vec<u32>,
    pub info: Option<TcpInfoSnapshot>,
    /// Counters that moved in it (name, change).
    pub moved: Vec<(String, i64)>,
    /// What it shows, in words.
    pub what: Vec<String>,
}

/// The pictures of a run of `script_text` and the table of its steps.
pub fn of_run(report: &RunReport, script_text: &str) -> (Pictures, Vec<Step>) {
    let k = KTrace::from_report(report);
    let ghost = Ghost::of_script(script_text);
    let line_text = |l: u32| {
        report
            .script
            .lines
            .iter()
            .find(|x| x.line == l)
            .map(|x| x.text.trim().to_string())
            .unwrap_or_default()
    };
    let syscall = |l: u32| {
        report
            .script
            .lines
            .iter()
            .find(|x| x.line == l && x.kind == trc_pkt::report::LineKind::Syscall)
            .and_then(|x| {
                let t = x.text.trim();
                let name: String = t[t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(0)..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                ["write", "send", "sendto", "sendmsg", "writev"]
                    .contains(&name.as_str())
                    .then_some(name)
            })
    };
    // The trace in time order (stable: `KTrace`'s sends and ACKs keep their order in it).
    let mut evs: Vec<&TraceEvent> = report.trace.iter().collect();
    // An injected ACK's time is read when the write to tun returns, by when the kernel has
    // processed it and sent its answer (captured earlier): it sorts as if injected up to
    // INJECT_MS before.
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
                if s.flags.contains('S') || !s.flags.contains('.') {
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
                if s.flags.contains('S') || s.len == 0 {
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
                cols.last_mut().unwrap().sends.push(i);
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
    let t0 = cols.first().map_or(0.0, |c| c.start_ms);
    // Rows: a segment each, from byte 1. The sender's MSS: the peer's SYN's MSS less the
    // timestamp option (12 bytes) when negotiated, else the largest payload the kernel sent.
    let peer_mss = report.trace.iter().find_map(|e| match e {
        TraceEvent::Inbound { segment: s, .. } if s.flags.contains('S') => {
            s.options.iter().find_map(|o| match o {
                trc_kernel::packet::WireOption::Mss { mss } => Some(*mss as u32),
                _ => None,
            })
        }
        _ => None,
    });
    let mss = peer_mss
        .map(|m| m.saturating_sub(if k.ts { 12 } else { 0 }))
        .filter(|m| *m > 0)
        .unwrap_or_else(|| {
            k.sends
                .iter()
                .map(|s| s.end.wrapping_sub(s.seq))
                .max()
                .unwrap_or(1000)
        })
        .max(1);
    let top = k
        .sends
        .iter()
        .map(|s| s.end)
        .chain(k.acks.iter().map(|a| a.ack))
        .max()
        .unwrap_or(1);
    let rows = (top.saturating_sub(1)).div_ceil(mss).max(1);
    let row = |b: u32| b.wrapping_sub(1) as f64 / mss as f64;
    let col_of_send: Vec<usize> = {
        let mut v = vec![0; k.sends.len()];
        for (ci, c) in cols.iter().enumerate() {
            for &s in &c.sends {
                v[s] = ci;
            }
        }
        v
    };
    let col_of_ack = |a: usize| cols.iter().position(|c| c.acks.contains(&a));
    // Which originals were dropped (rows to mark), per send.
    let drops: Vec<Vec<(u32, u32, String)>> = k
        .sends
        .iter()
        .map(|s| {
            if s.retrans {
                return Vec::new();
            }
            match ghost.source {
                trc_kcheck::GhostSource::Declared => ghost
                    .dropped
                    .iter()
                    .filter(|&&(a, b)| {
                        trc_model::seq::before(a, s.end) && trc_model::seq::before(s.seq, b)
                    })
                    .map(|&(a, b)| {
                        (
                            a.max(s.seq),
                            b.min(s.end),
                            "the script's header declares it dropped".to_string(),
                        )
                    })
                    .collect(),
                trc_kcheck::GhostSource::Inferred => match ghost.original(&k, s.seq, s.end) {
                    Fate::Dropped(why) => vec![(s.seq, s.end, why)],
                    _ => Vec::new(),
                },
            }
        })
        .collect();
    // Travels: each copy that was not dropped, to the column of the first ACK after it covering it.
    let mut travels: Vec<(usize, Item)> = Vec::new();
    for (i, s) in k.sends.iter().enumerate() {
        if !drops[i].is_empty() {
            continue;
        }
        if let Some(a) = k
            .acks
            .iter()
            .position(|x| x.t_ms > s.t_ms && covers(x, s.seq, s.end))
        {
            if let Some(c) = col_of_ack(a) {
                if c > col_of_send[i] {
                    travels.push((
                        c,
                        Item::Travel {
                            from: col_of_send[i],
                            mid: (row(s.seq) + row(s.end)) / 2.0,
                            dropped: false,
                        },
                    ));
                }
            }
        }
    }
    let mut columns = Vec::new();
    let mut steps = Vec::new();
    let mut prev: Option<(TcpInfoSnapshot, std::collections::BTreeMap<String, i64>)> = None;
    for (ci, c) in cols.iter().enumerate() {
        let cur = c.info.clone().or_else(|| prev.clone());
        let delta = |name: &str| -> i64 {
            let now = cur
                .as_ref()
                .and_then(|(_, m)| m.get(name))
                .copied()
                .unwrap_or(0);
            let before = prev
                .as_ref()
                .and_then(|(_, m)| m.get(name))
                .copied()
                .unwrap_or(0);
            now - before
        };
        let mut items: Vec<Item> = travels
            .iter()
            .filter(|(t, _)| *t == ci)
            .map(|(_, it)| it.clone())
            .collect();
        let mut what = Vec::new();
        for &a in &c.acks {
            let x = &k.acks[a];
            let blocks: Vec<String> = x.sacks.iter().map(|(b, e)| format!("{b}-{e}")).collect();
            let desc = format!(
                "ACK {}{}{} injected (line {})",
                x.ack,
                if blocks.is_empty() {
                    String::new()
                } else {
                    format!(" SACK {}", blocks.join(" "))
                },
                x.dsack
                    .map_or(String::new(), |(b, e)| format!(" DSACK {b}-{e}")),
                x.line
            );
            what.push(desc.clone());
            items.push(Item::Ack {
                at: row(x.ack),
                ack: x.ack.to_string(),
                sacks: x.sacks.iter().map(|&(b, e)| (row(b), row(e))).collect(),
                kind: "",
                desc,
            });
        }
        if delta("TcpExtTCPTimeouts") > 0 {
            what.push("the RTO fired (TCPTimeouts)".into());
            items.push(Item::Timer {
                kind: "rto",
                label: "RTO",
                desc: format!(
                    "the RTO fires (TCPTimeouts moved), {:.0} ms",
                    c.start_ms - t0
                ),
            });
        }
        if delta("TcpExtTCPLossProbes") > 0 {
            what.push("a TLP fired (TCPLossProbes)".into());
            items.push(Item::Timer {
                kind: "tlp",
                label: "TLP",
                desc: format!(
                    "a tail loss probe (TCPLossProbes moved), {:.0} ms",
                    c.start_ms - t0
                ),
            });
        }
        if c.acks.is_empty() {
            if let Some(name) = c.lines.iter().find_map(|l| syscall(*l)) {
                items.push(Item::Event {
                    label: name.clone(),
                });
                what.push(format!("the application calls {name}"));
            }
        }
        for &s in &c.sends {
            let x = &k.sends[s];
            let seg = format!("{}:{}", x.seq, x.end);
            let desc = format!(
                "{} of {seg} at {:.0} ms",
                if x.retrans {
                    "retransmission"
                } else {
                    "transmission"
                },
                x.t_ms - t0
            );
            what.push(desc.clone());
            items.push(Item::Tx {
                lo: row(x.seq),
                hi: row(x.end),
                rtx: x.retrans,
                seg: seg.clone(),
                desc,
            });
            for (a, b, why) in &drops[s] {
                let d = format!("the script drops {a}:{b} (original): never let through ({why})");
                what.push(d.clone());
                items.push(Item::Drop {
                    mid: (row(*a) + row(*b)) / 2.0,
                    dx: 14.0,
                    seg: format!("{a}:{b}"),
                    desc: d,
                });
            }
        }
        let undone: Vec<&str> = UNDOS
            .iter()
            .filter(|n| delta(n) > 0)
            .map(|n| n.trim_start_matches("TcpExt"))
            .collect();
        if !undone.is_empty() {
            let (pc, pt) = prev
                .as_ref()
                .map_or((0, 0), |(i, _)| (i.snd_cwnd, i.snd_ssthresh));
            let (nc, nt) = cur
                .as_ref()
                .map_or((0, 0), |(i, _)| (i.snd_cwnd, i.snd_ssthresh));
            let d = format!(
                "undo ({}): cwnd {pc}→{nc}, ssthresh {}→{}",
                undone.join(", "),
                crate::graph::fmt_ssthresh(pt),
                crate::graph::fmt_ssthresh(nt)
            );
            what.push(d.clone());
            items.push(Item::Undo { desc: d });
        }
        let (cwnd, ssthresh, ca) = cur
            .as_ref()
            .map_or((0, super::INF, CaState::Open), |(i, _)| {
                (i.snd_cwnd, i.snd_ssthresh, ca_of(i.ca_state))
            });
        let title = match c.lines.first().or(c.acks.first().map(|a| &k.acks[*a].line)) {
            Some(l) => format!("step {ci}: line {l}: {}", line_text(*l)),
            None => format!("step {ci}"),
        };
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
        steps.push(Step {
            time_ms: c.start_ms - t0,
            lines: c.lines.clone(),
            info: cur.as_ref().map(|(i, _)| i.clone()),
            moved,
            what,
        });
        columns.push(Column {
            time_ms: c.start_ms - t0,
            cwnd,
            ssthresh,
            ca,
            title,
            items,
        });
        prev = cur;
    }
    // The monitors' verdicts: the earliest column where one finds a violation (none when the
    // script's setup failed: the connection did not run as the scenario says).
    let setup_failed = report.script.lines.iter().any(|l| {
        l.kind == trc_pkt::report::LineKind::Shell && l.status == trc_pkt::report::Status::Fail
    });
    let mut violated: Option<(usize, String)> = None;
    if !setup_failed {
        for m in trc_kcheck::monitors() {
            if let Outcome::Violated { line, .. } = (m.check)(&k, &ghost) {
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
    }
    let pictures = Pictures {
        columns,
        row_labels: (0..=rows).map(|r| (1 + r * mss).to_string()).collect(),
        violated,
        note: format!("a column per injected ACK or kernel-initiated send, time since the first data segment below; sequence numbers up, a row per {mss} bytes"),
    };
    (pictures, steps)
}

fn esc(s: &str) -> String {
    super::esc(s)
}

/// The self-contained page of a kernel run: the pictures, then a table of the steps (what
/// happened, the statements after which the state was read, `tcp_info` and the counters that
/// moved); a click on a picture selects its step's row (`#step=K` selects one on load).
pub fn page(report: &RunReport, script_text: &str, title: &str) -> String {
    let (pictures, steps) = of_run(report, script_text);
    let mut rows = String::new();
    for (k, s) in steps.iter().enumerate() {
        let info = s.info.as_ref().map_or("—".to_string(), |i| {
            format!(
                "{} cwnd {} ssthresh {} unacked {} sacked {} lost {} retrans {} rto {} ms",
                i.ca_state_name.trim_start_matches("TCP_CA_"),
                i.snd_cwnd,
                crate::graph::fmt_ssthresh(i.snd_ssthresh),
                i.unacked,
                i.sacked,
                i.lost,
                i.retrans,
                i.rto_us / 1000
            )
        });
        let moved: Vec<String> = s
            .moved
            .iter()
            .map(|(n, d)| format!("{}{d:+}", n.trim_start_matches("TcpExt")))
            .collect();
        let lines: Vec<String> = s.lines.iter().map(|l| l.to_string()).collect();
        let _ = writeln!(
            rows,
            "<tr data-step=\"{k}\"><td>{k}</td><td>{:.0}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            s.time_ms,
            esc(&s.what.join("; ")),
            esc(&lines.join(", ")),
            esc(&info),
            esc(&moved.join(" "))
        );
    }
    let verdict = report.script.verdict.render();
    let sub = format!(
        "kernel run · {verdict} · congestion control {} · {} steps{}",
        report
            .congestion_control
            .as_deref()
            .unwrap_or("(no connection)"),
        steps.len(),
        pictures
            .violated
            .as_ref()
            .map_or(String::new(), |(k, id)| format!(
                " · {id} violated at step {k} (kernel check monitors)"
            ))
    );
    format!(
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<title>trc kernel run — {title_e}</title>
<style>{CSS}{PCSS}</style></head>
<body>
<header><h1>{title_e}</h1><div class="sub">{sub_e}</div></header>
{pics}
<div id="steps-wrap"><table id="steps"><thead><tr><th>step</th><th>ms</th><th>what happened</th><th>lines</th><th>tcp_info after it</th><th>counters moved</th></tr></thead><tbody>
{rows}</tbody></table></div>
<script>{PJS}{JS}</script>
</body></html>
"#,
        title_e = esc(title),
        sub_e = esc(&sub),
        pics = super::render(&pictures),
        PCSS = super::CSS,
        PJS = super::JS,
    )
}

const CSS: &str = r#"
body{margin:0;font-family:system-ui,sans-serif;font-size:13px;color:#222}
header{padding:8px 12px;border-bottom:1px solid #ddd}
header h1{font-size:16px;margin:0}
header .sub{color:#555;margin-top:2px}
#steps-wrap{padding:8px 12px}
#steps{border-collapse:collapse;font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px}
#steps td,#steps th{border:1px solid #e0e0e0;padding:2px 6px;text-align:left;vertical-align:top}
#steps tr{cursor:pointer}
#steps tr.cur{background:#e3f2fd}
"#;

const JS: &str = r#"
(function(){
const rows = Array.from(document.querySelectorAll('#steps tbody tr'));
let hook = () => {};
function select(k) {
  rows.forEach(r => r.classList.toggle('cur', +r.dataset.step === k));
  const r = rows[k];
  if (r && r.scrollIntoView) r.scrollIntoView({block: 'nearest'});
  hook(k);
}
hook = picturesInit(select);
rows.forEach(r => r.addEventListener('click', () => select(+r.dataset.step)));
const m = /step=(\d+)/.exec(location.hash);
select(m ? +m[1] : 0);
document.body.dataset.ready = '1';
})();
"#;

#[cfg(test)]
mod tests {
    use super::super::INF;
    use super::*;
    use trc_kernel::packet::WireOption;
    use trc_kernel::TraceSegment;

    fn seg(flags: &str, seq: u32, len: usize, ack: u32, options: Vec<WireOption>) -> TraceSegment {
        TraceSegment {
            flags: flags.into(),
            seq,
            end_seq: seq + len as u32,
            len,
            ack,
            win: 320,
            options,
            live_seq: seq,
            live_ack: ack,
            text: String::new(),
        }
    }

    fn info(ca: u8, cwnd: u32, ssthresh: u32) -> TcpInfoSnapshot {
        TcpInfoSnapshot {
            state: 1,
            ca_state: ca,
            snd_cwnd: cwnd,
            snd_ssthresh: ssthresh,
            reordering: 3,
            rto_us: 200_000,
            ..Default::default()
        }
    }

    /// A hand-made trace: the handshake (MSS 1012 with timestamps: 1000-byte segments), two
    /// segments written, the first dropped (declared), the RTO retransmitting it, an ACK with a
    /// SACK block answered by new data within a millisecond recorded *before* the ACK (the
    /// tun write returns after the kernel answered), then a full ACK with an undo.
    fn run() -> (RunReport, String) {
        let ts = |v| WireOption::Timestamp { val: v, ecr: 1 };
        let c = |m: &[(&str, i64)]| {
            m.iter()
                .map(|(k, v)| (k.to_string(), *v))
                .collect::<std::collections::BTreeMap<_, _>>()
        };
        let mut r = RunReport::new("t.pkt".into());
        use trc_pkt::report::{LineKind, LineResult, Status};
        r.script.lines.push(LineResult::new(
            14,
            4,
            LineKind::Syscall,
            Status::Pass,
            "   +0 write(4, ..., 3000) = 3000".into(),
        ));
        r.trace = vec![
            TraceEvent::Inbound {
                t_ms: 0.0,
                line: 10,
                segment: seg(
                    "S",
                    0,
                    0,
                    0,
                    vec![WireOption::Mss { mss: 1012 }, WireOption::SackOk, ts(1)],
                ),
            },
            TraceEvent::Outbound {
                t_ms: 0.1,
                line: Some(11),
                segment: seg(
                    "S.",
                    0,
                    0,
                    1,
                    vec![WireOption::Mss { mss: 1460 }, WireOption::SackOk, ts(1)],
                ),
            },
            TraceEvent::Inbound {
                t_ms: 50.0,
                line: 12,
                segment: seg(".", 1, 0, 1, vec![ts(2)]),
            },
            TraceEvent::TcpInfo {
                t_ms: 50.1,
                line: 13,
                info: info(0, 10, INF),
                counters: c(&[]),
            },
            TraceEvent::Outbound {
                t_ms: 60.0,
                line: Some(15),
                segment: seg(".", 1, 1000, 1, vec![ts(100)]),
            },
            TraceEvent::Outbound {
                t_ms: 60.0,
                line: Some(15),
                segment: seg(".", 1001, 1000, 1, vec![ts(100)]),
            },
            TraceEvent::TcpInfo {
                t_ms: 60.2,
                line: 14,
                info: info(0, 10, INF),
                counters: c(&[]),
            },
            TraceEvent::TcpInfo {
                t_ms: 60.3,
                line: 16,
                info: info(0, 10, INF),
                counters: c(&[]),
            },
            TraceEvent::Outbound {
                t_ms: 300.0,
                line: Some(18),
                segment: seg(".", 1, 1000, 1, vec![ts(340)]),
            },
            TraceEvent::TcpInfo {
                t_ms: 300.5,
                line: 18,
                info: info(4, 1, 7),
                counters: c(&[("TcpExtTCPTimeouts", 1)]),
            },
            // Recorded after the kernel's answer (5001: new data) although injected before it.
            TraceEvent::Outbound {
                t_ms: 349.6,
                line: Some(21),
                segment: seg(".", 2001, 1000, 1, vec![ts(390)]),
            },
            TraceEvent::Inbound {
                t_ms: 350.0,
                line: 20,
                segment: seg(
                    ".",
                    1,
                    0,
                    1,
                    vec![
                        WireOption::Sack {
                            blocks: vec![(1001, 2001)],
                        },
                        ts(3),
                    ],
                ),
            },
            TraceEvent::TcpInfo {
                t_ms: 350.2,
                line: 21,
                info: info(4, 2, 7),
                counters: c(&[("TcpExtTCPTimeouts", 1)]),
            },
            TraceEvent::Inbound {
                t_ms: 400.0,
                line: 23,
                segment: seg(".", 1, 0, 3001, vec![ts(4)]),
            },
            TraceEvent::TcpInfo {
                t_ms: 400.2,
                line: 23,
                info: info(0, 10, INF),
                counters: c(&[("TcpExtTCPTimeouts", 1), ("TcpExtTCPLossUndo", 1)]),
            },
        ];
        let text = "// model segment k = bytes 1+1000k .. 1+1000(k+1)\n// step 1 (model t=0 ms): the network drops seg 1 (1:1001, original sent at 0 ms): it is never ACKed\n".to_string();
        (r, text)
    }

    #[test]
    fn columns_items_and_the_violation_from_a_trace() {
        let (r, text) = run();
        let (p, steps) = of_run(&r, &text);
        // write, RTO, SACK + its answer, full ACK: the handshake is no step.
        assert_eq!(
            p.columns.len(),
            4,
            "{:?}",
            steps.iter().map(|s| &s.what).collect::<Vec<_>>()
        );
        assert_eq!(p.row_labels.first().map(String::as_str), Some("1"));
        assert_eq!(
            p.row_labels[1], "1001",
            "1000-byte rows (MSS 1012 less the timestamps)"
        );
        let kinds = |k: usize| {
            p.columns[k]
                .items
                .iter()
                .map(|i| {
                    format!("{i:?}")
                        .split([' ', '{'])
                        .next()
                        .unwrap()
                        .to_string()
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(
            kinds(0),
            ["Event", "Tx", "Drop", "Tx"],
            "the write, seg 1 and its declared drop, seg 2"
        );
        assert_eq!(kinds(1), ["Timer", "Tx"]);
        assert!(
            matches!(&p.columns[1].items[1], Item::Tx { rtx: true, seg, .. } if seg == "1:1001")
        );
        assert_eq!(
            kinds(2),
            ["Travel", "Ack", "Tx"],
            "seg 2 arrives, the SACK, the answer in the ACK's column"
        );
        assert!(
            matches!(&p.columns[2].items[1], Item::Ack { sacks, .. } if sacks == &[(1.0, 2.0)])
        );
        assert_eq!(
            kinds(3),
            ["Travel", "Travel", "Ack", "Undo"],
            "the retransmission and seg 3 arrive; the undo"
        );
        assert_eq!(
            p.columns.iter().map(|c| (c.cwnd, c.ca)).collect::<Vec<_>>(),
            [
                (10, CaState::Open),
                (1, CaState::Loss),
                (2, CaState::Loss),
                (10, CaState::Open)
            ]
        );
        assert_eq!(
            p.columns.iter().map(|c| c.time_ms).collect::<Vec<_>>(),
            [0.0, 240.0, 290.0, 340.0],
            "since the first data segment"
        );
        let html = super::super::render(&p);
        assert_eq!(html.matches("class=\"tsd-tx\"").count(), 3);
        assert_eq!(html.matches("class=\"tsd-tx rtx\"").count(), 1);
        assert!(html.contains("class=\"tsd-drop\" data-pstep=\"0\" data-seg=\"1:1001\""));
        assert!(html.contains("class=\"tsd-timer\" data-pstep=\"1\" data-kind=\"rto\""));
        assert!(html.contains("class=\"tsd-undo\" data-pstep=\"3\""));
        // I1's monitor: an undo while the retransmitted seg 1's original was really dropped.
        assert_eq!(
            p.violated.as_ref().map(|(k, id)| (*k, id.as_str())),
            Some((3, "I1")),
            "{:?}",
            p.violated
        );
        let page = page(&r, &text, "t.pkt");
        assert_eq!(page.matches("<tr data-step=").count(), 4);
        for bad in [
            "<link",
            "<script src",
            "src=\"http",
            "href=\"http",
            "url(http",
            "@import",
        ] {
            assert!(!page.contains(bad), "{bad}");
        }
    }
}
