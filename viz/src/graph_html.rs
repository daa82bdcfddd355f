//! The self-contained HTML page of `trc graph`: an SVG drawing laid out here (path left to
//! right, each path state's neighbours stacked above and below it, farther neighbours in
//! sub-columns to its right), the states as JSON (every field, serde), and a little inline JS:
//! click a state to see all its fields, step along the path with Prev/Next (or ←/→).
//! No network access, no external file. `#select=N` (node id) or `#step=N` (path step) in the
//! URL selects a state on load.

use crate::graph::{fmt_ssthresh, label_lines, StateGraph};
use crate::pictures::esc;
use petgraph::graph::NodeIndex;
use petgraph::visit::EdgeRef;
use serde::Serialize;
use std::collections::HashMap;
use std::fmt::Write as _;
use trc_model::model::{State, TcpModel};

const W: f64 = 176.0;
const H: f64 = 66.0;
const VGAP: f64 = 18.0;
/// Horizontal room between consecutive path states (for the path edge's label).
const LABEL_GAP: f64 = 210.0;
/// Width of a sub-column of farther neighbours.
const SUB_W: f64 = W + 60.0;
const MARGIN: f64 = 40.0;

#[derive(Serialize)]
struct NodeOut<'a> {
    id: usize,
    path_index: Option<usize>,
    dist: usize,
    parent: Option<usize>,
    fingerprint: String,
    label: [String; 3],
    violates: &'a [&'static str],
    state: &'a State,
}

#[derive(Serialize)]
struct EdgeOut<'a> {
    from: usize,
    to: usize,
    event: &'a str,
    path: bool,
}

#[derive(Serialize)]
struct Data<'a> {
    title: &'a str,
    profile: &'a str,
    path: Vec<usize>,
    nodes: Vec<NodeOut<'a>>,
    edges: Vec<EdgeOut<'a>>,
}

/// Node centres: `(x, y)` per node index.
fn layout(g: &StateGraph) -> (Vec<(f64, f64)>, f64, f64) {
    let gr = &g.graph;
    let max_sub = gr
        .node_indices()
        .map(|n| gr[n].dist.saturating_sub(1))
        .max()
        .unwrap_or(0);
    let col_w = W + LABEL_GAP + max_sub as f64 * SUB_W;
    // Rows: 0 is the path; neighbours of (anchor, sub-column) alternate above (-) and below (+).
    let mut count: HashMap<(usize, usize), i64> = HashMap::new();
    let mut cell = vec![(0usize, 0usize, 0i64); gr.node_count()];
    for n in gr.node_indices() {
        let node = &gr[n];
        if let Some(i) = node.path_index {
            cell[n.index()] = (i, 0, 0);
            continue;
        }
        let sub = node.dist.saturating_sub(1);
        let k = count.entry((node.anchor, sub)).or_insert(0);
        let row = if *k % 2 == 0 {
            -(*k / 2 + 1)
        } else {
            *k / 2 + 1
        };
        *k += 1;
        cell[n.index()] = (node.anchor, sub, row);
    }
    let rmin = cell.iter().map(|c| c.2).min().unwrap_or(0);
    let rmax = cell.iter().map(|c| c.2).max().unwrap_or(0);
    let cols = cell.iter().map(|c| c.0).max().unwrap_or(0) + 1;
    let pos = cell
        .iter()
        .map(|&(col, sub, row)| {
            let x = MARGIN + 60.0 + W / 2.0 + col as f64 * col_w + sub as f64 * SUB_W;
            let y = MARGIN + H / 2.0 + (row - rmin) as f64 * (H + VGAP);
            (x, y)
        })
        .collect();
    let width = MARGIN * 2.0 + 60.0 + cols as f64 * col_w;
    let height = MARGIN * 2.0 + H + (rmax - rmin) as f64 * (H + VGAP);
    (pos, width, height)
}

/// Splits `s` into lines of at most `n` characters at spaces.
fn wrap(s: &str, n: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for w in s.split(' ') {
        let last = lines.last_mut().unwrap();
        if !last.is_empty() && last.chars().count() + 1 + w.chars().count() > n {
            lines.push(w.to_string());
        } else {
            if !last.is_empty() {
                last.push(' ');
            }
            last.push_str(w);
        }
    }
    lines
}

/// The edges off the path: a curve between columns, a loop out to the left within one.
fn neighbour_edges(o: &mut String, g: &StateGraph, pos: &[(f64, f64)]) {
    let gr = &g.graph;
    for e in gr.edge_references() {
        let w = e.weight();
        if w.on_path {
            continue;
        }
        let (sx, sy) = pos[e.source().index()];
        let (tx, ty) = pos[e.target().index()];
        let d = if tx > sx + W / 2.0 {
            let (x1, x2) = (sx + W / 2.0, tx - W / 2.0);
            let mx = (x1 + x2) / 2.0;
            format!("M{x1:.1},{sy:.1} C{mx:.1},{sy:.1} {mx:.1},{ty:.1} {x2:.1},{ty:.1}")
        } else if tx < sx - W / 2.0 {
            let (x1, x2) = (sx - W / 2.0, tx + W / 2.0);
            let mx = (x1 + x2) / 2.0;
            format!("M{x1:.1},{sy:.1} C{mx:.1},{sy:.1} {mx:.1},{ty:.1} {x2:.1},{ty:.1}")
        } else {
            // Same column: a loop out to the left.
            let (x1, x2) = (sx - W / 2.0, tx - W / 2.0);
            let bulge = (18.0 + (ty - sy).abs() * 0.08).min(48.0);
            format!(
                "M{x1:.1},{sy:.1} C{:.1},{sy:.1} {:.1},{ty:.1} {x2:.1},{ty:.1}",
                x1 - bulge,
                x2 - bulge
            )
        };
        let _ = writeln!(
            o,
            "<path class=\"edge\" data-from=\"{}\" data-to=\"{}\" d=\"{d}\" marker-end=\"url(#arr)\"><title>{}</title></path>",
            e.source().index(),
            e.target().index(),
            esc(&w.event)
        );
    }
}

/// The path's edges, each with its numbered event as a label above it.
fn path_edges(o: &mut String, g: &StateGraph, pos: &[(f64, f64)]) {
    let gr = &g.graph;
    for e in gr.edge_references() {
        let w = e.weight();
        if !w.on_path {
            continue;
        }
        let (sx, sy) = pos[e.source().index()];
        let (tx, ty) = pos[e.target().index()];
        let (x1, x2) = (sx + W / 2.0, tx - W / 2.0);
        let step = gr[e.target()].path_index.unwrap_or(0);
        let _ = writeln!(
            o,
            "<line class=\"path-edge\" data-step=\"{step}\" x1=\"{x1:.1}\" y1=\"{sy:.1}\" x2=\"{x2:.1}\" y2=\"{ty:.1}\" marker-end=\"url(#arrp)\"><title>{}</title></line>",
            esc(&w.event)
        );
        let lines = wrap(&format!("{step}. {}", w.event), 32);
        let mx = (x1 + x2) / 2.0;
        let _ = write!(
            o,
            "<text class=\"path-label\" data-step=\"{step}\" x=\"{mx:.1}\" text-anchor=\"middle\">"
        );
        for (k, l) in lines.iter().enumerate() {
            let y = sy - 6.0 - (lines.len() - 1 - k) as f64 * 12.0;
            let _ = write!(o, "<tspan x=\"{mx:.1}\" y=\"{y:.1}\">{}</tspan>", esc(l));
        }
        o.push_str("</text>\n");
    }
}

/// The states: a box each, with its head line (step or distance, violated properties) and three
/// lines of fields.
fn nodes(o: &mut String, g: &StateGraph, pos: &[(f64, f64)]) {
    let gr = &g.graph;
    for n in gr.node_indices() {
        let node = &gr[n];
        let (x, y) = pos[n.index()];
        let mut class = format!("node ca-{:?}", node.state.sender.ca_state);
        class.push_str(if node.path_index.is_some() {
            " path"
        } else {
            " nbr"
        });
        if !node.violates.is_empty() {
            class.push_str(" viol");
        }
        let head = match node.path_index {
            Some(i) => format!("step {i} · #{}", n.index()),
            None => format!("#{} · +{}", n.index(), node.dist),
        };
        let head = if node.violates.is_empty() {
            head
        } else {
            let ids: Vec<&str> = node
                .violates
                .iter()
                .map(|v| v.split(':').next().unwrap_or(v))
                .collect();
            format!("{head}  ✗ {}", ids.join(","))
        };
        let [a, b, c] = label_lines(&node.state);
        let step_attr = node
            .path_index
            .map(|i| format!(" data-step=\"{i}\""))
            .unwrap_or_default();
        let _ = writeln!(
            o,
            "<g class=\"{class}\" id=\"n{id}\" data-id=\"{id}\"{step_attr} transform=\"translate({x:.1},{y:.1})\"><title>{t}</title><rect x=\"{rx:.1}\" y=\"{ry:.1}\" width=\"{W}\" height=\"{H}\" rx=\"7\"/><text x=\"{tx:.1}\" y=\"{y1:.1}\" class=\"head\">{h}</text><text x=\"{tx:.1}\" y=\"{y2:.1}\">{a}</text><text x=\"{tx:.1}\" y=\"{y3:.1}\">{b}</text><text x=\"{tx:.1}\" y=\"{y4:.1}\">{c}</text></g>",
            id = n.index(),
            t = esc(&format!("{head}\n{a}\n{b}\n{c}\nclick for all fields")),
            rx = -W / 2.0,
            ry = -H / 2.0,
            tx = -W / 2.0 + 8.0,
            y1 = -H / 2.0 + 15.0,
            y2 = -H / 2.0 + 30.0,
            y3 = -H / 2.0 + 45.0,
            y4 = -H / 2.0 + 60.0,
            h = esc(&head),
            a = esc(&a),
            b = esc(&b),
            c = esc(&c),
        );
    }
}

fn svg(g: &StateGraph) -> String {
    let (pos, width, height) = layout(g);
    let mut o = String::new();
    let _ = write!(
        o,
        r##"<svg id="graph" xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}">
<defs><marker id="arr" viewBox="0 0 10 10" refX="9" refY="5" markerUnits="userSpaceOnUse" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#9a9a9a"/></marker>
<marker id="arrp" viewBox="0 0 10 10" refX="9" refY="5" markerUnits="userSpaceOnUse" markerWidth="12" markerHeight="12" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#c0392b"/></marker></defs>
"##
    );
    // Neighbour edges first (behind everything).
    o.push_str("<g id=\"edges\">\n");
    neighbour_edges(&mut o, g, &pos);
    o.push_str("</g>\n<g id=\"path-edges\">\n");
    path_edges(&mut o, g, &pos);
    o.push_str("</g>\n<g id=\"nodes\">\n");
    nodes(&mut o, g, &pos);
    o.push_str("</g>\n</svg>");
    o
}

fn data_json(g: &StateGraph, model: &TcpModel, title: &str) -> String {
    let gr = &g.graph;
    let nodes = gr
        .node_indices()
        .map(|n| {
            let node = &gr[n];
            NodeOut {
                id: n.index(),
                path_index: node.path_index,
                dist: node.dist,
                parent: node.parent.map(NodeIndex::index),
                fingerprint: format!("{:016x}", node.fp),
                label: label_lines(&node.state),
                violates: &node.violates,
                state: &node.state,
            }
        })
        .collect();
    let edges = gr
        .edge_references()
        .map(|e| EdgeOut {
            from: e.source().index(),
            to: e.target().index(),
            event: &e.weight().event,
            path: e.weight().on_path,
        })
        .collect();
    let d = Data {
        title,
        profile: &model.profile.name,
        path: g.path.iter().map(|n| n.index()).collect(),
        nodes,
        edges,
    };
    // `<` only occurs inside JSON strings, where `\u003c` means the same: no `</script>` can end the block.
    serde_json::to_string(&d)
        .expect("graph data serializes")
        .replace('<', "\\u003c")
}

const CSS: &str = include_str!("../assets/graph.css");

const JS: &str = include_str!("../assets/graph.js");

/// The whole page; `pictures` is the counterexample's time-sequence diagram and timeline
/// ([`crate::pictures::render`]), drawn above the state graph.
pub fn render(g: &StateGraph, model: &TcpModel, title: &str, pictures: &str) -> String {
    let cfg = &model.cfg;
    let sub = format!(
        "{} states drawn ({} on the path), {} transitions{} · bounds: segments {}, writes {}, losses {}, ack-losses {}, reorder {}, rtos {}, tlps {}, tsq {}, ece {}, rtt {} ms · last state's ssthresh {}",
        g.graph.node_count(),
        g.path.len(),
        g.graph.edge_count(),
        if g.truncated { " (cut at --max-nodes)" } else { "" },
        cfg.segments,
        cfg.extra_writes,
        cfg.max_losses,
        cfg.max_ack_losses,
        cfg.max_reorder,
        cfg.max_rtos,
        cfg.max_tlps,
        cfg.max_tsq,
        cfg.max_ece,
        cfg.rtt_ms,
        g.path.last().map(|n| fmt_ssthresh(g.graph[*n].state.sender.ssthresh)).unwrap_or_default(),
    );
    format!(
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<title>trc graph — {title_e}</title>
<style>{CSS}{PCSS}</style></head>
<body>
<header><h1>{title_e}</h1><div class="sub">{sub_e}</div></header>
<div id="toolbar"><button id="prev" title="previous path state (←)">◀ Prev</button><span id="step-label"></span><button id="next" title="next path state (→)">Next ▶</button><span id="step-event"></span>
<span class="legend" style="margin-left:auto"><span style="background:#e8f5e9">Open</span><span style="background:#fff8e1">Disorder</span><span style="background:#fff3e0">CWR</span><span style="background:#e3f2fd">Recovery</span><span style="background:#f3e5f5">Loss</span><span style="background:#ffcdd2">violates</span><span style="border:2px solid #c0392b">path</span></span></div>
{pictures}<div id="main"><div id="canvas">{svg}</div>
<div id="panel">
<h2 id="details-title"></h2><div id="details-viol" class="viol-note"></div><div id="details-summary"></div>
<h3>reached by</h3><ul class="ev" id="details-in"></ul>
<h3>events from here</h3><ul class="ev" id="details-out"></ul>
<h3>all fields <small id="changed-note"></small></h3><table id="fields"></table>
<h3>path</h3><ol id="steps" start="0"></ol>
</div></div>
<script id="trc-data" type="application/json">{data}</script>
<script>{PJS}{JS}</script>
</body></html>
"#,
        title_e = esc(title),
        sub_e = esc(&sub),
        svg = svg(g),
        data = data_json(g, model, title),
        PCSS = crate::pictures::CSS,
        PJS = crate::pictures::JS,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_splits_at_spaces() {
        assert_eq!(wrap("aa bb cc", 5), vec!["aa bb", "cc"]);
        assert_eq!(wrap("abcdefgh", 3), vec!["abcdefgh"]);
    }

    #[test]
    fn escapes_markup() {
        assert_eq!(esc("a<b>&\"c"), "a&lt;b&gt;&amp;&quot;c");
    }
}
