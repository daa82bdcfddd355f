//! The pictures TCP developers read: a time-sequence diagram (sequence number against the
//! path's events: transmissions, retransmissions, drops, ACKs with their SACK blocks, the
//! timers that fired, undos) and a cwnd / ssthresh / ca_state timeline, both inline SVG. One
//! renderer ([`render`]) draws them from [`Pictures`], a list of columns of drawn items; two
//! sources fill it: a model path ([`model`]: the `trc graph` page and the page `trc check --out`
//! writes beside each `.pkt`) and a kernel run's trace ([`kernel`]: `trc kernel run --plot`),
//! so model and kernel can be compared by eye. Time runs left to right in event order: each
//! step is a column with its time under it, so events at the same millisecond (a flight
//! leaving, a burst of dupacks) stay apart. Every drawn item carries `data-pstep` (its column),
//! which the page's script uses to select the step, and a class tests count (`tsd-tx`,
//! `tsd-drop`, `tsd-ack`, `tsd-timer`, `tsd-undo`, `tl-cwnd`, `tl-ssthresh`, `tl-ca`).

pub mod kernel;
pub mod model;

use std::fmt::Write as _;
use trc_model::state::CaState;

pub use model::render_path;

/// Column width, left margin (axis labels), top margin (event labels).
const CW: f64 = 64.0;
const LEFT: f64 = 64.0;
const TOP: f64 = 34.0;
/// Height of one row (a segment) in the time-sequence diagram.
const RH: f64 = 24.0;
/// Height of the timeline's cwnd plot and of its ca_state band.
const TL_H: f64 = 150.0;
const BAND: f64 = 22.0;
/// `TCP_INFINITE_SSTHRESH`.
const INF: u32 = 0x7fff_ffff;

/// What both pictures draw.
pub struct Pictures {
    /// One per step, left to right.
    pub columns: Vec<Column>,
    /// The sequence axis has rows `0..rows` (a segment each); `row_labels[r]` is the sequence
    /// number at the bottom of row `r` (`rows + 1` labels).
    pub row_labels: Vec<String>,
    /// The column where a property breaks, and the property's id.
    pub violated: Option<(usize, String)>,
    /// How to read the time-sequence diagram (in its title).
    pub note: String,
}

/// One step: its time, the sender's state after it and what happened in it.
pub struct Column {
    /// The time under the column, ms.
    pub time_ms: f64,
    pub cwnd: u32,
    pub ssthresh: u32,
    pub ca: CaState,
    /// What the column stands for (tooltips: "step 3", "line 42: ...").
    pub title: String,
    pub items: Vec<Item>,
}

/// A drawn item of a column; sequence positions are in rows (segments from the first data byte,
/// fractions allowed).
#[derive(Clone, Debug)]
pub enum Item {
    /// A packet's way from the column it left in to this one (dashed; red if it is dropped).
    Travel {
        from: usize,
        mid: f64,
        dropped: bool,
    },
    /// The network dropped the packet at row `mid`; `dx` moves the mark right of the column's
    /// centre (a kernel run's drops sit beside their transmission).
    Drop {
        mid: f64,
        dx: f64,
        seg: String,
        desc: String,
    },
    /// An ACK: the cumulative ACK at row `at` (its value `ack`), the SACK blocks it carries;
    /// `kind` is "" (reaches the sender now), "lost", "held" (the network delivers it later) or
    /// "old" (that held ACK arriving, below snd_una).
    Ack {
        at: f64,
        ack: String,
        sacks: Vec<(f64, f64)>,
        kind: &'static str,
        desc: String,
    },
    /// A timer fired: `kind` is rto, tlp or reo.
    Timer {
        kind: &'static str,
        label: &'static str,
        desc: String,
    },
    /// An application or host event (write, TSQ) labelled on top.
    Event { label: String },
    /// A transmission of rows `[lo, hi)`.
    Tx {
        lo: f64,
        hi: f64,
        rtx: bool,
        seg: String,
        desc: String,
    },
    /// An undo (its tooltip says which and the values).
    Undo { desc: String },
}

pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
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

/// Both pictures as one HTML fragment (two `<svg>` in a `<div id="pictures">`).
pub fn render(p: &Pictures) -> String {
    let mut o = format!("<div id=\"pictures\">\n<div><h3 class=\"pic-title\">time-sequence diagram <small>({})</small></h3>\n", esc(&p.note));
    o.push_str(&time_sequence(p));
    o.push_str("\n</div><div><h3 class=\"pic-title\">cwnd, ssthresh and ca_state</h3>\n");
    o.push_str(&timeline(p));
    o.push_str("\n</div></div>\n");
    o
}

/// Clickable column backgrounds (one per step) and the violation band.
fn columns(o: &mut String, p: &Pictures, height: f64) {
    for (k, c) in p.columns.iter().enumerate() {
        let _ = writeln!(o, "<rect class=\"pic-col\" data-pstep=\"{k}\" x=\"{:.1}\" y=\"{TOP:.1}\" width=\"{CW:.1}\" height=\"{height:.1}\"><title>{}</title></rect>", LEFT + CW * k as f64, esc(&c.title));
    }
    if let Some((k, id)) = &p.violated {
        let k = *k;
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

/// Step numbers and times under the columns.
fn time_axis(o: &mut String, p: &Pictures, y: f64) {
    for (k, c) in p.columns.iter().enumerate() {
        let _ = writeln!(o, "<text class=\"pic-axis\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{k}</text><text class=\"pic-axis pic-time\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{:.0} ms</text>", col_x(k), y + 14.0, col_x(k), y + 27.0, c.time_ms);
    }
}

/// The y of row position `off` in a diagram `plot_h` high (low at the bottom).
fn seq_y(plot_h: f64, off: f64) -> f64 {
    TOP + plot_h - off * RH
}

/// The time-sequence diagram as one `<svg>`: the sequence axis, then each column's items.
fn time_sequence(p: &Pictures) -> String {
    let n = p.columns.len();
    let rows = p.row_labels.len().saturating_sub(1).max(1);
    let plot_h = RH * rows as f64;
    let y = |off: f64| seq_y(plot_h, off);
    let width = LEFT + CW * n as f64 + 20.0;
    let height = TOP + plot_h + 40.0;
    let mut o = String::new();
    let _ = writeln!(o, "<svg id=\"tsd\" class=\"pic\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {width:.0} {height:.0}\">");
    columns(&mut o, p, plot_h);
    for (off, label) in p.row_labels.iter().enumerate() {
        let yy = y(off as f64);
        let _ = writeln!(o, "<line class=\"pic-grid\" x1=\"{LEFT:.1}\" x2=\"{:.1}\" y1=\"{yy:.1}\" y2=\"{yy:.1}\"/><text class=\"pic-axis\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>", width - 20.0, LEFT - 6.0, yy + 4.0, esc(label));
    }
    let _ = writeln!(
        o,
        "<text class=\"pic-axis\" x=\"8\" y=\"{:.1}\">seq</text>",
        TOP - 6.0
    );
    for (k, c) in p.columns.iter().enumerate() {
        let x = col_x(k);
        let mut j = 0;
        for it in &c.items {
            match it {
                Item::Travel { from, mid, dropped } => {
                    let _ = writeln!(o, "<line class=\"tsd-travel{}\" x1=\"{:.1}\" x2=\"{x:.1}\" y1=\"{:.1}\" y2=\"{:.1}\"/>", if *dropped { " dropped" } else { "" }, col_x(*from) + 4.0, y(*mid), y(*mid));
                }
                Item::Drop { mid, dx, seg, desc } => {
                    let (xx, m) = (x + dx, y(*mid));
                    let _ = writeln!(
                        o,
                        "<g class=\"tsd-drop\" data-pstep=\"{k}\" data-seg=\"{}\"><title>step {k}: {}</title><path d=\"M{:.1},{:.1} l12,12 m0,-12 l-12,12\"/><text x=\"{:.1}\" y=\"{:.1}\">drop</text></g>",
                        esc(seg),
                        esc(desc),
                        xx - 6.0,
                        m - 6.0,
                        xx + 8.0,
                        m + 4.0
                    );
                }
                Item::Ack {
                    at,
                    ack,
                    sacks,
                    kind,
                    desc,
                } => {
                    let ya = y(*at);
                    let mut blocks = String::new();
                    for &(b, e) in sacks {
                        let _ = write!(blocks, "<rect class=\"tsd-sack\" x=\"{:.1}\" y=\"{:.1}\" width=\"5\" height=\"{:.1}\"/>", x + 10.0, y(e), RH * (e - b));
                    }
                    let _ = writeln!(
                        o,
                        "<g class=\"tsd-ack{}\" data-pstep=\"{k}\" data-ack=\"{}\"><title>step {k}: {}</title><path d=\"M{:.1},{ya:.1} h16 m-5,-4 l5,4 l-5,4\"/>{blocks}<text x=\"{:.1}\" y=\"{:.1}\">{}</text></g>",
                        if kind.is_empty() { String::new() } else { format!(" {kind}") },
                        esc(ack),
                        esc(desc),
                        x - 8.0,
                        x - 8.0,
                        // Under the arrow, or above it on the axis's bottom line.
                        if *at < 0.5 { ya - 5.0 } else { ya + 13.0 },
                        match *kind {
                            "" => format!("ack {}", esc(ack)),
                            "old" => format!("old ack {}", esc(ack)),
                            k => format!("ack {} {k}", esc(ack)),
                        }
                    );
                }
                Item::Timer { kind, label, desc } => {
                    let _ = writeln!(o, "<g class=\"tsd-timer\" data-pstep=\"{k}\" data-kind=\"{kind}\"><title>step {k}: {}</title><line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{TOP:.1}\" y2=\"{:.1}\"/><text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{label}</text></g>", esc(desc), TOP + plot_h, TOP - 6.0);
                }
                Item::Event { label } => {
                    let _ = writeln!(o, "<text class=\"tsd-event\" data-pstep=\"{k}\" x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>", TOP - 6.0, esc(label));
                }
                Item::Tx {
                    lo,
                    hi,
                    rtx,
                    seg,
                    desc,
                } => {
                    let (y0, y1) = (y(*lo), y(*hi));
                    let xx = x - 4.0 + (j % 2) as f64 * 2.0;
                    j += 1;
                    let _ = writeln!(
                        o,
                        "<g class=\"tsd-tx{}\" data-pstep=\"{k}\" data-seg=\"{}\"><title>step {k}: {}</title><line x1=\"{xx:.1}\" x2=\"{xx:.1}\" y1=\"{:.1}\" y2=\"{:.1}\"/><path d=\"M{:.1},{:.1} h8 M{:.1},{:.1} h8\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text></g>",
                        if *rtx { " rtx" } else { "" },
                        esc(seg),
                        esc(desc),
                        y0 - 1.5,
                        y1 + 1.5,
                        xx - 4.0,
                        y0 - 1.5,
                        xx - 4.0,
                        y1 + 1.5,
                        xx - 5.0,
                        (y0 + y1) / 2.0 + 4.0,
                        if *rtx { "R" } else { "" }
                    );
                }
                Item::Undo { desc } => {
                    let _ = writeln!(
                        o,
                        "<g class=\"tsd-undo\" data-pstep=\"{k}\"><title>step {k}: {}</title><rect x=\"{:.1}\" y=\"{:.1}\" width=\"40\" height=\"18\" rx=\"9\"/><text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">undo</text></g>",
                        esc(desc),
                        x - 20.0,
                        TOP + plot_h / 2.0 - 13.0,
                        TOP + plot_h / 2.0
                    );
                }
            }
        }
    }
    time_axis(&mut o, p, TOP + plot_h);
    o.push_str("</svg>");
    o
}

fn timeline(p: &Pictures) -> String {
    let n = p.columns.len();
    let finite_max = p
        .columns
        .iter()
        .flat_map(|c| [c.cwnd, if c.ssthresh >= INF { 0 } else { c.ssthresh }])
        .max()
        .unwrap_or(1)
        .max(1);
    let vmax = finite_max + 1;
    // Plot area: the "∞" lane above it, the ca_state band below it.
    let lane = 28.0;
    let plot_top = TOP + lane;
    let y = |v: u32| plot_top + TL_H - TL_H * v as f64 / vmax as f64;
    let width = LEFT + CW * n as f64 + 20.0;
    let height = plot_top + TL_H + BAND + 40.0;
    let mut o = String::new();
    let _ = writeln!(o, "<svg id=\"timeline\" class=\"pic\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {width:.0} {height:.0}\">");
    columns(&mut o, p, lane + TL_H + BAND);
    let step = if vmax > 60 {
        vmax.div_ceil(12)
    } else if vmax > 12 {
        5
    } else {
        1
    };
    for v in 0..=vmax {
        if v % step != 0 {
            continue;
        }
        let _ = writeln!(o, "<line class=\"pic-grid\" x1=\"{LEFT:.1}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\"/><text class=\"pic-axis\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{v}</text>", width - 20.0, y(v), y(v), LEFT - 6.0, y(v) + 4.0);
    }
    let _ = writeln!(o, "<text class=\"pic-axis\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">∞</text><text class=\"pic-axis\" x=\"8\" y=\"{:.1}\">segments</text>", LEFT - 6.0, TOP + lane / 2.0 + 4.0, TOP - 6.0);
    // Step lines: a value holds from its column to the next.
    let line = |get: &dyn Fn(&Column) -> u32| -> String {
        let mut d = String::new();
        for (k, c) in p.columns.iter().enumerate() {
            let v = get(c);
            let yy = if v >= INF { TOP + lane / 2.0 } else { y(v) };
            let x0 = col_x(k) - CW / 2.0 + 4.0;
            let _ = write!(
                d,
                "{}{x0:.1},{yy:.1} H{:.1} ",
                if k == 0 { "M" } else { "L" },
                col_x(k) + CW / 2.0 - 4.0
            );
        }
        d
    };
    let _ = writeln!(
        o,
        "<path class=\"tl-ssthresh-line\" d=\"{}\"/>",
        line(&|c| c.ssthresh)
    );
    let _ = writeln!(
        o,
        "<path class=\"tl-cwnd-line\" d=\"{}\"/>",
        line(&|c| c.cwnd)
    );
    for (k, col) in p.columns.iter().enumerate() {
        let x = col_x(k);
        let (c, t) = (col.cwnd, col.ssthresh);
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
        let ca = col.ca;
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
    time_axis(&mut o, p, plot_top + TL_H + BAND + 4.0);
    o.push_str("</svg>");
    o
}

/// The pictures' style (the page adds it to its own).
pub const CSS: &str = include_str!("../../assets/pictures.css");

/// Wires the pictures to the page: a click on anything with `data-pstep` selects that step,
/// and the current step's columns are shaded. `select_step(k)` and `on_select(hook)` come
/// from the page.
pub const JS: &str = include_str!("../../assets/pictures.js");
