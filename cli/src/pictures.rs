//! The pictures of a counterexample that TCP developers read: a time-sequence diagram
//! (sequence number against the path's events: transmissions, retransmissions, drops, ACKs with
//! their SACK blocks, the timers that fired, undos) and a cwnd / ssthresh / ca_state timeline,
//! both inline SVG for the `trc graph` page and the page `trc check --out` writes beside each
//! `.pkt`. Time runs left to right in event order: each step of the path is a column with its
//! model time under it, so events at the same millisecond (a flight leaving, a burst of dupacks)
//! stay apart. Every drawn item carries `data-pstep` (its step), which the page's script uses to
//! select the step in the state view, and a class tests count (`tsd-tx`, `tsd-drop`, `tsd-ack`,
//! `tsd-timer`, `tsd-undo`, `tl-cwnd`, `tl-ssthresh`, `tl-ca`).

use std::collections::HashMap;
use std::fmt::Write as _;
use trc_engine::Path;
use trc_model::model::{Action, State, TcpModel};
use trc_model::state::CaState;

/// Column width, left margin (axis labels), top margin (event labels).
const CW: f64 = 64.0;
const LEFT: f64 = 64.0;
const TOP: f64 = 34.0;
/// Height of one sequence number in the time-sequence diagram.
const RH: f64 = 24.0;
/// Height of the timeline's cwnd plot and of its ca_state band.
const TL_H: f64 = 150.0;
const BAND: f64 = 22.0;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

fn col_x(k: usize) -> f64 {
    LEFT + CW * k as f64 + CW / 2.0
}


fn ca_fill(c: CaState) -> &'static str {
    match c {
        CaState::Open => "#c8e6c9",
        CaState::Disorder => "#fff59d",
        CaState::Cwr => "#ffe0b2",
        CaState::Recovery => "#bbdefb",
        CaState::Loss => "#e1bee7",
    }
}

/// Both pictures of `path` as one HTML fragment (two `<svg>` in a `<div id="pictures">`);
/// `violated` names the property the last step breaks, if any.
pub fn render(model: &TcpModel, path: &Path<Action>, violated: Option<&str>) -> String {
    let steps = trc_engine::replay(model, path);
    let mut o = String::from("<div id=\"pictures\">\n<div><h3 class=\"pic-title\">time-sequence diagram <small>(a column per step, model time below; sequence numbers up)</small></h3>\n");
    o.push_str(&time_sequence(model, &steps, violated));
    o.push_str("\n</div><div><h3 class=\"pic-title\">cwnd, ssthresh and ca_state</h3>\n");
    o.push_str(&timeline(&steps, violated));
    o.push_str("\n</div></div>\n");
    o
}

/// Clickable column backgrounds (one per step) and the violation band on the last column.
fn columns(o: &mut String, n: usize, height: f64, violated: Option<&str>) {
    for k in 0..n {
        let _ = writeln!(o, "<rect class=\"pic-col\" data-pstep=\"{k}\" x=\"{:.1}\" y=\"{TOP:.1}\" width=\"{CW:.1}\" height=\"{height:.1}\"><title>step {k}</title></rect>", LEFT + CW * k as f64);
    }
    if let (Some(id), true) = (violated, n > 1) {
        let k = n - 1;
        let _ = writeln!(
            o,
            "<g class=\"pic-viol\" data-pstep=\"{k}\"><rect x=\"{:.1}\" y=\"{TOP:.1}\" width=\"{CW:.1}\" height=\"{height:.1}\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">✗ {}</text></g>",
            LEFT + CW * k as f64,
            col_x(k),
            TOP - 20.0,
            esc(id)
        );
    }
}

/// Step numbers and model times under the columns.
fn time_axis(o: &mut String, steps: &[(Option<Action>, State)], y: f64) {
    for (k, (_, s)) in steps.iter().enumerate() {
        let _ = writeln!(o, "<text class=\"pic-axis\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{k}</text><text class=\"pic-axis pic-time\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{} ms</text>", col_x(k), y + 14.0, col_x(k), y + 27.0, s.now);
    }
}

/// The time-sequence diagram of `steps` as one `<svg>`: the sequence axis, then each step's
/// network events, timers, transmissions and undos in its column.
fn time_sequence(model: &TcpModel, steps: &[(Option<Action>, State)], violated: Option<&str>) -> String {
    let isn = model.cfg.isn;
    let n = steps.len();
    // Sequence numbers drawn: isn .. one past the highest segment that ever left.
    let top_seg = steps.iter().flat_map(|(_, s)| s.flight.iter().map(|p| p.seg as u32 + 1)).chain(steps.iter().map(|(_, s)| s.sender.snd_nxt.wrapping_sub(isn))).max().unwrap_or(1).max(1);
    let plot_h = RH * top_seg as f64;
    // y of sequence number `isn + off` (low at the bottom).
    let y = |off: f64| seq_y(plot_h, off);
    let width = LEFT + CW * n as f64 + 20.0;
    let height = TOP + plot_h + 40.0;
    let mut o = String::new();
    let _ = writeln!(o, "<svg id=\"tsd\" class=\"pic\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {width:.0} {height:.0}\">");
    columns(&mut o, n, plot_h, violated);
    // Sequence axis.
    for off in 0..=top_seg {
        let _ = writeln!(o, "<line class=\"pic-grid\" x1=\"{LEFT:.1}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\"/><text class=\"pic-axis\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>", width - 20.0, y(off as f64), y(off as f64), LEFT - 6.0, y(off as f64) + 4.0, isn.wrapping_add(off));
    }
    let _ = writeln!(o, "<text class=\"pic-axis\" x=\"8\" y=\"{:.1}\">seq</text>", TOP - 6.0);
    // Where each transmission (seg, sent, rtx) was drawn: its column.
    let mut tx_col: HashMap<(u16, u32, bool), usize> = HashMap::new();
    for (k, (a, s)) in steps.iter().enumerate() {
        let prev = if k > 0 { Some(&steps[k - 1].1) } else { None };
        // What the network did with a packet in flight.
        if let (Some(a), Some(p)) = (a, prev) {
            tsd_delivery(&mut o, model, k, a, p, s, &tx_col, plot_h);
        }
        tsd_markers(&mut o, k, a.as_ref(), s, plot_h);
        tsd_transmissions(&mut o, k, prev, s, &mut tx_col, plot_h);
        tsd_undos(&mut o, k, s, plot_h);
    }
    time_axis(&mut o, steps, TOP + plot_h);
    o.push_str("</svg>");
    o
}

/// The y of sequence number `isn + off` in a diagram `plot_h` high (low at the bottom).
fn seq_y(plot_h: f64, off: f64) -> f64 {
    TOP + plot_h - off * RH
}

/// What the network did at step `k` with a packet in flight before it (`p`: the state before;
/// `s`: after): its travel from the column it was sent in, a drop mark, and the ACK a delivery
/// caused with the receiver's SACK blocks.
#[allow(clippy::too_many_arguments)]
fn tsd_delivery(o: &mut String, model: &TcpModel, k: usize, a: &Action, p: &State, s: &State, tx_col: &HashMap<(u16, u32, bool), usize>, plot_h: f64) {
    let isn = model.cfg.isn;
    let x = col_x(k);
    let y = |off: f64| seq_y(plot_h, off);
    let pkt = match a {
        Action::Deliver { pkt } | Action::DeliverEce { pkt } | Action::DeliverAckLost { pkt } | Action::DeliverAckHeld { pkt } | Action::DeliverLate { pkt, .. } | Action::Drop { pkt } => p.flight.get(*pkt as usize).copied(),
        _ => None,
    };
    if let Some(pk) = pkt {
        let mid = y(pk.seg as f64 + 0.5);
        if let Some(c) = tx_col.get(&(pk.seg, pk.sent, pk.rtx)) {
            let _ = writeln!(o, "<line class=\"tsd-travel{}\" x1=\"{:.1}\" x2=\"{x:.1}\" y1=\"{mid:.1}\" y2=\"{mid:.1}\"/>", if matches!(a, Action::Drop { .. }) { " dropped" } else { "" }, col_x(*c) + 4.0);
        }
        if matches!(a, Action::Drop { .. }) {
            let _ = writeln!(
                o,
                "<g class=\"tsd-drop\" data-pstep=\"{k}\" data-seg=\"{}\"><title>step {k}: the network drops seg {} ({})</title><path d=\"M{:.1},{:.1} l12,12 m0,-12 l-12,12\"/><text x=\"{:.1}\" y=\"{:.1}\">drop</text></g>",
                pk.seg as u32 + 1,
                pk.seg as u32 + 1,
                if pk.rtx { "retransmission" } else { "original" },
                x - 6.0,
                mid - 6.0,
                x + 8.0,
                mid + 4.0
            );
        }
    }
    // The ACK it caused: cumulative ACK and the receiver's SACK blocks after it; or the held
    // ACK arriving late (an old ACK, below snd_una), with the blocks it was sent with.
    let ack_blocks: Option<(u32, Vec<(u32, u32)>, &str)> = match a {
        Action::Deliver { .. } | Action::DeliverEce { .. } | Action::DeliverLate { .. } => Some((s.rcv.rcv_nxt(&model.cfg), s.rcv.sack_blocks(&model.cfg).collect(), "")),
        Action::DeliverAckLost { .. } => Some((s.rcv.rcv_nxt(&model.cfg), s.rcv.sack_blocks(&model.cfg).collect(), " lost")),
        Action::DeliverAckHeld { .. } => Some((s.rcv.rcv_nxt(&model.cfg), s.rcv.sack_blocks(&model.cfg).collect(), " held")),
        Action::OldAck => Some((p.held_ack.ack_seq(&model.cfg), p.held_ack.ack_seg(&model.cfg, p.sender.ts_ok).sacks.to_vec(), " old")),
        _ => None,
    };
    if let Some((ack, blocks, kind)) = ack_blocks {
        let blocks = if s.sender.sack_ok { blocks } else { Vec::new() };
        let ya = y(ack.wrapping_sub(isn) as f64);
        let mut sacks = String::new();
        // Blocks are drawn where they reach the sender (not on a lost or a held ACK).
        for &(b, e) in blocks.iter().filter(|_| kind.is_empty() || kind == " old") {
            let _ = write!(sacks, "<rect class=\"tsd-sack\" x=\"{:.1}\" y=\"{:.1}\" width=\"5\" height=\"{:.1}\"/>", x + 10.0, y(e.wrapping_sub(isn) as f64), RH * e.wrapping_sub(b) as f64);
        }
        let blocks: Vec<String> = blocks.iter().map(|(b, e)| format!("{b}-{e}")).collect();
        let (why, label) = match kind {
            " lost" => (" (lost on the way back)", format!("ack {ack} lost")),
            " held" => (" (held by the network, arrives later)", format!("ack {ack} held")),
            " old" => (" (the held ACK, arriving below snd_una)", format!("old ack {ack}")),
            _ => ("", format!("ack {ack}")),
        };
        let _ = writeln!(
            o,
            "<g class=\"tsd-ack{kind}\" data-pstep=\"{k}\" data-ack=\"{ack}\"><title>step {k}: ACK {ack}{}{why}</title><path d=\"M{:.1},{ya:.1} h16 m-5,-4 l5,4 l-5,4\"/>{sacks}<text x=\"{:.1}\" y=\"{:.1}\">{label}</text></g>",
            if blocks.is_empty() { String::new() } else { format!(" SACK {}", blocks.join(" ")) },
            x - 8.0,
            x - 8.0,
            ya + 13.0,
        );
    }
}

/// Step `k`'s timer (a labelled line across the diagram) or write / TSQ event (a label on top).
fn tsd_markers(o: &mut String, k: usize, a: Option<&Action>, s: &State, plot_h: f64) {
    let x = col_x(k);
    let timer = match a {
        Some(Action::Rto) => Some(("RTO", "rto")),
        Some(Action::Tlp) => Some(("TLP", "tlp")),
        Some(Action::Reo) => Some(("RACK timer", "reo")),
        _ => None,
    };
    if let Some((label, kind)) = timer {
        let _ = writeln!(o, "<g class=\"tsd-timer\" data-pstep=\"{k}\" data-kind=\"{kind}\"><title>step {k}: {label} fires at {} ms</title><line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{TOP:.1}\" y2=\"{:.1}\"/><text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{label}</text></g>", s.now, TOP + plot_h, TOP - 6.0);
    }
    if let Some(label) = match a {
        Some(Action::Write) | Some(Action::WriteAfter { .. }) => Some("write"),
        Some(Action::TsqFill) => Some("TSQ full"),
        Some(Action::TsqDrain) => Some("TSQ drain"),
        _ => None,
    } {
        let _ = writeln!(o, "<text class=\"tsd-event\" data-pstep=\"{k}\" x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{label}</text>", TOP - 6.0);
    }
}

/// Step `k`'s transmissions (packets in flight after it that were not before), each noted in
/// `tx_col` with its column.
fn tsd_transmissions(o: &mut String, k: usize, prev: Option<&State>, s: &State, tx_col: &mut HashMap<(u16, u32, bool), usize>, plot_h: f64) {
    let x = col_x(k);
    let y = |off: f64| seq_y(plot_h, off);
    let before: Vec<(u16, u32, bool)> = prev.map(|p| p.flight.iter().map(|q| (q.seg, q.sent, q.rtx)).collect()).unwrap_or_default();
    let mut j = 0;
    for q in s.flight.iter() {
        let key = (q.seg, q.sent, q.rtx);
        if before.contains(&key) {
            continue;
        }
        tx_col.insert(key, k);
        let (y0, y1) = (y(q.seg as f64), y(q.seg as f64 + 1.0));
        let xx = x - 4.0 + (j % 2) as f64 * 2.0;
        j += 1;
        let _ = writeln!(
            o,
            "<g class=\"tsd-tx{}\" data-pstep=\"{k}\" data-seg=\"{}\"><title>step {k}: {} of seg {} at {} ms</title><line x1=\"{xx:.1}\" x2=\"{xx:.1}\" y1=\"{:.1}\" y2=\"{:.1}\"/><path d=\"M{:.1},{:.1} h8 M{:.1},{:.1} h8\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text></g>",
            if q.rtx { " rtx" } else { "" },
            q.seg as u32 + 1,
            if q.rtx { "retransmission" } else { "transmission" },
            q.seg as u32 + 1,
            q.sent,
            y0 - 1.5,
            y1 + 1.5,
            xx - 4.0,
            y0 - 1.5,
            xx - 4.0,
            y1 + 1.5,
            xx - 5.0,
            (y0 + y1) / 2.0 + 4.0,
            if q.rtx { "R" } else { "" }
        );
    }
}

/// Step `k`'s undos (from its observations), a badge mid-diagram each.
fn tsd_undos(o: &mut String, k: usize, s: &State, plot_h: f64) {
    let x = col_x(k);
    let ev = &s.sender.ghost.ev;
    for u in &ev.undos {
        let _ = writeln!(
            o,
            "<g class=\"tsd-undo\" data-pstep=\"{k}\"><title>step {k}: undo {:?}: cwnd {}→{}, ssthresh {}→{}</title><rect x=\"{:.1}\" y=\"{:.1}\" width=\"40\" height=\"18\" rx=\"9\"/><text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">undo</text></g>",
            u.kind,
            u.cwnd_before,
            u.cwnd_after,
            crate::graph::fmt_ssthresh(u.ssthresh_before),
            crate::graph::fmt_ssthresh(u.ssthresh_after),
            x - 20.0,
            TOP + plot_h / 2.0 - 13.0,
            TOP + plot_h / 2.0
        );
    }
}

fn timeline(steps: &[(Option<Action>, State)], violated: Option<&str>) -> String {
    let n = steps.len();
    const INF: u32 = 0x7fff_ffff;
    let finite_max = steps.iter().flat_map(|(_, s)| [s.sender.cwnd, if s.sender.ssthresh >= INF { 0 } else { s.sender.ssthresh }]).max().unwrap_or(1).max(1);
    let vmax = finite_max + 1;
    // Plot area: the "∞" lane above it, the ca_state band below it.
    let lane = 28.0;
    let plot_top = TOP + lane;
    let y = |v: u32| plot_top + TL_H - TL_H * v as f64 / vmax as f64;
    let width = LEFT + CW * n as f64 + 20.0;
    let height = plot_top + TL_H + BAND + 40.0;
    let mut o = String::new();
    let _ = writeln!(o, "<svg id=\"timeline\" class=\"pic\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {width:.0} {height:.0}\">");
    columns(&mut o, n, lane + TL_H + BAND, violated);
    for v in 0..=vmax {
        if vmax > 12 && v % 5 != 0 {
            continue;
        }
        let _ = writeln!(o, "<line class=\"pic-grid\" x1=\"{LEFT:.1}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\"/><text class=\"pic-axis\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{v}</text>", width - 20.0, y(v), y(v), LEFT - 6.0, y(v) + 4.0);
    }
    let _ = writeln!(o, "<text class=\"pic-axis\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">∞</text><text class=\"pic-axis\" x=\"8\" y=\"{:.1}\">segments</text>", LEFT - 6.0, TOP + lane / 2.0 + 4.0, TOP - 6.0);
    // Step lines: a value holds from its column to the next.
    let line = |get: &dyn Fn(&State) -> u32| -> String {
        let mut d = String::new();
        for (k, (_, s)) in steps.iter().enumerate() {
            let v = get(s);
            let yy = if v >= INF { TOP + lane / 2.0 } else { y(v) };
            let x0 = col_x(k) - CW / 2.0 + 4.0;
            let _ = write!(d, "{}{x0:.1},{yy:.1} H{:.1} ", if k == 0 { "M" } else { "L" }, col_x(k) + CW / 2.0 - 4.0);
        }
        d
    };
    let _ = writeln!(o, "<path class=\"tl-ssthresh-line\" d=\"{}\"/>", line(&|s| s.sender.ssthresh));
    let _ = writeln!(o, "<path class=\"tl-cwnd-line\" d=\"{}\"/>", line(&|s| s.sender.cwnd));
    for (k, (_, s)) in steps.iter().enumerate() {
        let x = col_x(k);
        let (c, t) = (s.sender.cwnd, s.sender.ssthresh);
        let ty = if t >= INF { TOP + lane / 2.0 } else { y(t) };
        let _ = writeln!(
            o,
            "<g class=\"tl-ssthresh\" data-pstep=\"{k}\" data-value=\"{t}\"><title>step {k}: ssthresh {}</title><rect x=\"{:.1}\" y=\"{:.1}\" width=\"7\" height=\"7\"/></g>",
            crate::graph::fmt_ssthresh(t),
            x - 3.5,
            ty - 3.5
        );
        let _ = writeln!(
            o,
            "<g class=\"tl-cwnd\" data-pstep=\"{k}\" data-value=\"{c}\"><title>step {k}: cwnd {c}</title><circle cx=\"{x:.1}\" cy=\"{:.1}\" r=\"4.5\"/><text x=\"{:.1}\" y=\"{:.1}\">{c}</text></g>",
            y(c),
            x + 6.0,
            y(c) - 6.0
        );
        let ca = s.sender.ca_state;
        let _ = writeln!(
            o,
            "<g class=\"tl-ca\" data-pstep=\"{k}\" data-state=\"{}\"><rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{BAND:.1}\" fill=\"{}\"/><text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text></g>",
            CaState::short_name(ca),
            x - CW / 2.0 + 1.0,
            plot_top + TL_H + 4.0,
            CW - 2.0,
            ca_fill(ca),
            plot_top + TL_H + 4.0 + 15.0,
            CaState::short_name(ca)
        );
    }
    let _ = writeln!(o, "<g class=\"tl-legend\"><circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"4.5\" class=\"tl-cwnd-dot\"/><text x=\"{:.1}\" y=\"{:.1}\">cwnd</text><rect x=\"{:.1}\" y=\"{:.1}\" width=\"7\" height=\"7\" class=\"tl-ssthresh-dot\"/><text x=\"{:.1}\" y=\"{:.1}\">ssthresh</text></g>", LEFT + 10.0, TOP - 10.0, LEFT + 18.0, TOP - 6.0, LEFT + 64.0, TOP - 13.5, LEFT + 75.0, TOP - 6.0);
    time_axis(&mut o, steps, plot_top + TL_H + BAND + 4.0);
    o.push_str("</svg>");
    o
}

/// The pictures' style (the page adds it to its own).
pub const CSS: &str = r#"
#pictures{flex:none;max-height:58vh;overflow:auto;padding:2px 10px 6px;border-bottom:2px solid #cfd8dc;display:flex;flex-wrap:wrap;gap:0 28px;align-items:flex-start}
#pictures>div{flex:none}
#pictures h3.pic-title{font-size:12px;margin:8px 0 2px;color:#455a64;text-transform:uppercase;letter-spacing:.04em}
#pictures h3 small{text-transform:none;letter-spacing:0;color:#78909c}
svg.pic{display:block}
svg.pic text{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:11px;fill:#222}
.pic-col{fill:transparent;cursor:pointer}
.pic-col:hover{fill:#f5f5f5}
.pic-col.cur{fill:#e3f2fd}
.pic-viol rect{fill:#ffcdd2;opacity:.55}
.pic-viol text{fill:#b71c1c;font-weight:700}
.pic-grid{stroke:#eee;stroke-width:1}
.pic-axis{fill:#607d8b !important}
.tsd-tx line,.tsd-tx path{stroke:#212121;stroke-width:2.5;fill:none}
.tsd-tx.rtx line,.tsd-tx.rtx path{stroke:#d32f2f}
.tsd-tx.rtx text{fill:#d32f2f;font-weight:700}
.tsd-travel{stroke:#90a4ae;stroke-width:1;stroke-dasharray:3 3}
.tsd-travel.dropped{stroke:#e57373}
.tsd-drop path{stroke:#d32f2f;stroke-width:3;fill:none}
.tsd-drop text{fill:#d32f2f;font-weight:700}
.tsd-ack path{stroke:#2e7d32;stroke-width:2;fill:none}
.tsd-ack text{fill:#2e7d32;font-size:10px}
.tsd-ack.lost path{stroke:#9e9e9e;stroke-dasharray:2 2}
.tsd-ack.lost text{fill:#9e9e9e}
.tsd-sack{fill:#66bb6a}
.tsd-timer line{stroke:#6a1b9a;stroke-width:1.5;stroke-dasharray:6 4}
.tsd-timer text{fill:#6a1b9a;font-weight:700}
.tsd-event{fill:#37474f}
.tsd-undo rect{fill:#fce4ec;stroke:#ad1457;stroke-width:1.5}
.tsd-undo text{fill:#ad1457;font-weight:700;font-size:12px}
.tl-cwnd-line{stroke:#1565c0;stroke-width:2.5;fill:none}
.tl-ssthresh-line{stroke:#ef6c00;stroke-width:2;stroke-dasharray:5 3;fill:none}
.tl-cwnd circle,.tl-cwnd-dot{fill:#1565c0}
.tl-cwnd text{fill:#0d47a1;font-weight:700}
.tl-ssthresh rect,.tl-ssthresh-dot{fill:#ef6c00}
.tl-ca text{font-size:10px}
[data-pstep]{cursor:pointer}
"#;

/// Wires the pictures to the page: a click on anything with `data-pstep` selects that step,
/// and the current step's columns are shaded. `select_step(k)` and `on_select(hook)` come
/// from the page.
pub const JS: &str = r#"
function picturesInit(selectStep) {
  document.querySelectorAll('#pictures [data-pstep]').forEach(el => el.addEventListener('click', ev => { ev.stopPropagation(); selectStep(+el.dataset.pstep); }));
  return function(step) {
    document.querySelectorAll('#pictures .pic-col').forEach(el => el.classList.toggle('cur', +el.dataset.pstep === step));
  };
}
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use trc_model::config::SackMode;
    use trc_model::{Config, Profile};

    /// The seed bug's counterexample: linux-6.15, no SACK, I1.
    fn seed() -> (TcpModel, Path<Action>) {
        let cfg = Config { sack: SackMode::NoSack, ..Config::default() };
        let specs = trc_properties::select(&["I1".to_string()]).unwrap();
        let model = TcpModel::new(cfg, Profile::by_name("linux-6.15").unwrap()).with_properties(trc_properties::properties(&specs));
        let report = trc_engine::check(&model, &trc_engine::Options::default(), None);
        let path = report.properties[0].path.clone().expect("I1 is violated on linux-6.15 without SACK");
        (model, path)
    }

    #[test]
    fn seed_bug_pictures_show_drop_rto_retransmission_undo_and_cwnd_back_to_5() {
        let (model, path) = seed();
        let html = render(&model, &path, Some("I1"));
        assert_eq!(path.len(), 8);
        // 5 originals at step 0, seg 6 later; one retransmission (of seg 1, at the RTO).
        assert_eq!(html.matches("class=\"tsd-tx\"").count(), 6, "{html}");
        assert_eq!(html.matches("class=\"tsd-tx rtx\"").count(), 1);
        assert!(html.contains("class=\"tsd-tx rtx\" data-pstep=\"2\" data-seg=\"1\""));
        assert!(html.contains("class=\"tsd-drop\" data-pstep=\"1\" data-seg=\"1\""));
        assert_eq!(html.matches("class=\"tsd-timer\"").count(), 1);
        assert!(html.contains("class=\"tsd-timer\" data-pstep=\"2\" data-kind=\"rto\""));
        assert_eq!(html.matches("class=\"tsd-ack\"").count(), 6, "six deliveries");
        assert_eq!(html.matches("class=\"tsd-undo\" data-pstep=\"8\"").count(), 1);
        // The timeline: a point per step; cwnd 5, 1 at the RTO, 3, then back to 5 at the undo.
        let cwnd: Vec<u32> = (0..=8).map(|k| {
            let tag = format!("class=\"tl-cwnd\" data-pstep=\"{k}\" data-value=\"");
            let i = html.find(&tag).unwrap() + tag.len();
            html[i..].split('"').next().unwrap().parse().unwrap()
        }).collect();
        assert_eq!((cwnd[0], cwnd[2], cwnd[7], cwnd[8]), (5, 1, 3, 5), "{cwnd:?}");
        assert_eq!(html.matches("class=\"tl-ca\"").count(), 9);
        assert!(html.contains("class=\"tl-ca\" data-pstep=\"2\" data-state=\"Loss\""));
        assert!(html.contains("class=\"pic-viol\" data-pstep=\"8\""));
    }
}
