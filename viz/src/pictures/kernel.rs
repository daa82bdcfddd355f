//! The pictures of a kernel run (`trc kernel run --plot`, the patch check's pages), drawn from
//! its steps as `trc_kcheck::timeline` reads them from the trace: the data segments the kernel
//! sent, the ACKs the script injected (with their SACK blocks), the timers and undos the
//! counters show, the originals the script dropped, and the step where a monitor finds a
//! violation.

use super::{esc, Column, Item, Pictures};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use trc_kcheck::timeline::Timeline;
use trc_kernel::{RunReport, TcpInfoSnapshot};
use trc_model::state::CaState;

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

/// The drawn items of step `ci` of `t` (rows: segments of `t.mss` bytes from byte 1), and
/// what it shows in words.
fn items(t: &Timeline, ci: usize) -> (Vec<Item>, Vec<String>) {
    let (k, st) = (&t.trace, &t.steps[ci]);
    let row = |b: u32| b.wrapping_sub(1) as f64 / t.mss as f64;
    let mut items: Vec<Item> = t
        .travels
        .iter()
        .filter(|(to, _, _)| *to == ci)
        .map(|&(_, from, s)| Item::Travel {
            from,
            mid: (row(k.sends[s].seq) + row(k.sends[s].end)) / 2.0,
            dropped: false,
        })
        .collect();
    let mut what = Vec::new();
    for &a in &st.acks {
        let x = &k.acks[a];
        let blocks: Vec<String> = x.sacks.iter().map(|(b, e)| format!("{b}-{e}")).collect();
        let sack = if blocks.is_empty() {
            String::new()
        } else {
            format!(" SACK {}", blocks.join(" "))
        };
        let dsack = x
            .dsack
            .map_or(String::new(), |(b, e)| format!(" DSACK {b}-{e}"));
        let desc = format!("ACK {}{sack}{dsack} injected (line {})", x.ack, x.line);
        what.push(desc.clone());
        items.push(Item::Ack {
            at: row(x.ack),
            ack: x.ack.to_string(),
            sacks: x.sacks.iter().map(|&(b, e)| (row(b), row(e))).collect(),
            kind: "",
            desc,
        });
    }
    let at = st.time_ms;
    if st.rto {
        what.push("the RTO fired (TCPTimeouts)".into());
        let desc = format!("the RTO fires (TCPTimeouts moved), {at:.0} ms");
        items.push(Item::Timer {
            kind: "rto",
            label: "RTO",
            desc,
        });
    }
    if st.tlp {
        what.push("a TLP fired (TCPLossProbes)".into());
        let desc = format!("a tail loss probe (TCPLossProbes moved), {at:.0} ms");
        items.push(Item::Timer {
            kind: "tlp",
            label: "TLP",
            desc,
        });
    }
    if let Some(name) = &st.syscall {
        items.push(Item::Event {
            label: name.clone(),
        });
        what.push(format!("the application calls {name}"));
    }
    sends(t, ci, &row, &mut items, &mut what);
    if !st.undos.is_empty() {
        let cs = |i: &Option<TcpInfoSnapshot>| {
            i.as_ref().map_or((0, 0), |i| (i.snd_cwnd, i.snd_ssthresh))
        };
        let ((pc, pt), (nc, nt)) = (cs(&st.before), cs(&st.info));
        let d = format!(
            "undo ({}): cwnd {pc}→{nc}, ssthresh {}→{}",
            st.undos.join(", "),
            crate::graph::fmt_ssthresh(pt),
            crate::graph::fmt_ssthresh(nt)
        );
        what.push(d.clone());
        items.push(Item::Undo { desc: d });
    }
    (items, what)
}

/// The transmissions of step `ci` and the drops of their originals.
fn sends(
    t: &Timeline,
    ci: usize,
    row: &dyn Fn(u32) -> f64,
    items: &mut Vec<Item>,
    what: &mut Vec<String>,
) {
    for &s in &t.steps[ci].sends {
        let x = &t.trace.sends[s];
        let seg = format!("{}:{}", x.seq, x.end);
        let kind = if x.retrans {
            "retransmission"
        } else {
            "transmission"
        };
        let desc = format!("{kind} of {seg} at {:.0} ms", x.t_ms - t.start_ms);
        what.push(desc.clone());
        items.push(Item::Tx {
            lo: row(x.seq),
            hi: row(x.end),
            rtx: x.retrans,
            seg: seg.clone(),
            desc,
        });
        for (a, b, why) in &t.drops[s] {
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
}

/// The pictures of a run of `script_text` and the table of its steps.
pub fn of_run(report: &RunReport, script_text: &str) -> (Pictures, Vec<Step>) {
    let t = Timeline::of_run(report, script_text);
    let mut columns = Vec::new();
    let mut steps = Vec::new();
    for (ci, st) in t.steps.iter().enumerate() {
        let (items, what) = items(&t, ci);
        let (cwnd, ssthresh, ca) = st
            .info
            .as_ref()
            .map_or((0, super::INF, CaState::Open), |i| {
                (i.snd_cwnd, i.snd_ssthresh, ca_of(i.ca_state))
            });
        let title = match &st.line {
            Some((l, text)) => format!("step {ci}: line {l}: {text}"),
            None => format!("step {ci}"),
        };
        steps.push(Step {
            time_ms: st.time_ms,
            lines: st.lines.clone(),
            info: st.info.clone(),
            moved: st.moved.clone(),
            what,
        });
        columns.push(Column {
            time_ms: st.time_ms,
            cwnd,
            ssthresh,
            ca,
            title,
            items,
        });
    }
    let (mss, rows) = (t.mss, (t.top.saturating_sub(1)).div_ceil(t.mss).max(1));
    let pictures = Pictures {
        columns,
        row_labels: (0..=rows).map(|r| (1 + r * mss).to_string()).collect(),
        violated: t.violated,
        note: format!("a column per injected ACK or kernel-initiated send, time since the first data segment below; sequence numbers up, a row per {mss} bytes"),
    };
    (pictures, steps)
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

const CSS: &str = include_str!("../../assets/kernel-run.css");

const JS: &str = include_str!("../../assets/kernel-run.js");

/// Writes the page of each script's run (`--plot`): `out` itself for one script, else
/// `out/NAME.html` per script (NAME the script's file stem, its position before it if two
/// scripts share one). Returns the files written, or why one could not be.
pub fn write_pages(
    out: &Path,
    runs: &[(&Path, &RunReport)],
    several: bool,
) -> Result<Vec<PathBuf>, crate::Error> {
    let mut written = Vec::new();
    if several {
        std::fs::create_dir_all(out)
            .map_err(crate::Error::write(format!("--plot {}", out.display())))?;
    }
    let stems: Vec<String> = runs
        .iter()
        .map(|(p, _)| {
            p.file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    for (i, (script, report)) in runs.iter().enumerate() {
        let text = trc_files::read_source(script)?;
        let html = page(report, &text, &script.display().to_string());
        let file = if several {
            let dup = stems.iter().filter(|s| **s == stems[i]).count() > 1;
            out.join(if dup {
                format!("{}-{}.html", i + 1, stems[i])
            } else {
                format!("{}.html", stems[i])
            })
        } else {
            out.to_path_buf()
        };
        trc_files::write_atomic(&file, html.as_bytes()).map_err(crate::Error::write(format!(
            "--plot: cannot write {}",
            file.display()
        )))?;
        written.push(file);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::super::INF;
    use super::*;
    use trc_kernel::packet::WireOption;
    use trc_kernel::{TraceEvent, TraceSegment};

    fn seg(flags: &str, seq: u32, len: usize, ack: u32, options: Vec<WireOption>) -> TraceSegment {
        TraceSegment {
            flags: flags.parse().expect("flags"),
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
    // A table: the hand-made trace, one event per entry.
    #[allow(clippy::too_many_lines)]
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
        assert_eq!(crate::external_reference(&page), None);
    }
}
