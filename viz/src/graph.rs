//! `trc graph`: the explored state graph around a counterexample, as DOT and as one
//! self-contained HTML page (`graph_html.rs`).
//!
//! The graph is built with petgraph: the counterexample's states are the *path*, and the states
//! reachable from path states in at most `--depth` events (generated with `Model::actions` /
//! `Model::next_state`, deduplicated by `trc_engine::fingerprint`) are its *neighbours*. Node
//! indices are assigned path first, so node `i` is path step `i`.

use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::EdgeRef;
use stateright::{Expectation, Model};
use std::collections::HashMap;
use std::fmt::Write as _;
use trc_engine::{fingerprint, replay, Path};
use trc_model::model::{Action, State, TcpModel};

/// A state of the drawn graph.
pub struct Node {
    pub fp: u64,
    pub state: State,
    /// Events from the nearest path state (0 on the path and for other initial states).
    pub dist: usize,
    /// Index on the path, for path states.
    pub path_index: Option<usize>,
    /// The path state this neighbour hangs off (its own index for path states).
    pub anchor: usize,
    /// The node that first generated it (none for path states and initial states).
    pub parent: Option<NodeIndex>,
    /// Names of the `always` properties this state violates.
    pub violates: Vec<&'static str>,
}

/// A transition of the drawn graph.
pub struct Edge {
    pub action: Action,
    /// Readable event text (`trc_trace::event_text`).
    pub event: String,
    pub on_path: bool,
}

/// The state graph around a path.
pub struct StateGraph {
    pub graph: DiGraph<Node, Edge>,
    /// Path nodes in order (node `i` is `path[i]`).
    pub path: Vec<NodeIndex>,
    /// `max_nodes` stopped the neighbourhood early.
    pub truncated: bool,
}

fn violations(model: &TcpModel, s: &State) -> Vec<&'static str> {
    model
        .properties()
        .iter()
        .filter(|p| p.expectation == Expectation::Always && !(p.condition)(model, s))
        .map(|p| p.name)
        .collect()
}

/// Builds the graph: the states of `path`, then every initial state (so the no-violation
/// graph shows all of them), then neighbours breadth-first up to `depth` events from them.
pub fn build(model: &TcpModel, path: &Path<Action>, depth: usize, max_nodes: usize) -> StateGraph {
    let mut graph: DiGraph<Node, Edge> = DiGraph::new();
    let mut by_fp: HashMap<u64, NodeIndex> = HashMap::new();
    let mut path_nodes = Vec::new();
    let steps = replay(model, path);
    let mut prev: Option<(NodeIndex, State)> = None;
    for (i, (a, s)) in steps.into_iter().enumerate() {
        let fp = fingerprint(&s);
        let n = graph.add_node(Node {
            fp,
            violates: violations(model, &s),
            state: s.clone(),
            dist: 0,
            path_index: Some(i),
            anchor: i,
            parent: None,
        });
        by_fp.insert(fp, n);
        if let (Some(a), Some((p, ps))) = (a, &prev) {
            graph.add_edge(
                *p,
                n,
                Edge {
                    action: a,
                    event: trc_trace::event_text(ps, &a),
                    on_path: true,
                },
            );
        }
        path_nodes.push(n);
        prev = Some((n, s));
    }
    let mut frontier: Vec<NodeIndex> = path_nodes.clone();
    for s in model.init_states() {
        let fp = fingerprint(&s);
        if by_fp.contains_key(&fp) {
            continue;
        }
        let n = graph.add_node(Node {
            fp,
            violates: violations(model, &s),
            state: s,
            dist: 0,
            path_index: None,
            anchor: 0,
            parent: None,
        });
        by_fp.insert(fp, n);
        frontier.push(n);
    }
    let mut truncated = false;
    let mut actions = Vec::new();
    for d in 0..depth {
        let mut next = Vec::new();
        for &n in &frontier {
            let s = graph[n].state.clone();
            let anchor = graph[n].anchor;
            actions.clear();
            model.actions(&s, &mut actions);
            for &a in &actions {
                let Some(t) = model.next_state(&s, a) else {
                    continue;
                };
                let fp = fingerprint(&t);
                let target = match by_fp.get(&fp) {
                    Some(&m) => m,
                    None => {
                        if graph.node_count() >= max_nodes {
                            truncated = true;
                            continue;
                        }
                        let m = graph.add_node(Node {
                            fp,
                            violates: violations(model, &t),
                            state: t,
                            dist: d + 1,
                            path_index: None,
                            anchor,
                            parent: Some(n),
                        });
                        by_fp.insert(fp, m);
                        next.push(m);
                        m
                    }
                };
                if !graph
                    .edges_connecting(n, target)
                    .any(|e| e.weight().action == a)
                {
                    graph.add_edge(
                        n,
                        target,
                        Edge {
                            action: a,
                            event: trc_trace::event_text(&s, &a),
                            on_path: false,
                        },
                    );
                }
            }
        }
        frontier = next;
    }
    StateGraph {
        graph,
        path: path_nodes,
        truncated,
    }
}

/// `∞` for the kernel's `TCP_INFINITE_SSTHRESH`.
pub fn fmt_ssthresh(v: u32) -> String {
    if v >= 0x7fff_ffff {
        "∞".into()
    } else {
        v.to_string()
    }
}

/// The short label of a state: ca_state, cwnd, ssthresh, snd_una, high_seq.
pub fn label_lines(s: &State) -> [String; 3] {
    let x = &s.sender;
    [
        format!("{:?}  t={}ms", x.ca_state, s.now),
        format!("cwnd {}  ssthresh {}", x.cwnd, fmt_ssthresh(x.ssthresh)),
        format!("snd_una {}  high_seq {}", x.snd_una, x.high_seq),
    ]
}

fn dot_escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// The graph in Graphviz DOT: path states bold and filled, path edges red and bold, states that
/// violate a property double-bordered.
pub fn to_dot(g: &StateGraph, title: &str) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "// {}", title.replace('\n', " "));
    o.push_str("digraph trc {\n  rankdir=LR;\n  node [shape=box, fontname=\"monospace\", fontsize=10];\n  edge [fontname=\"monospace\", fontsize=9];\n");
    let _ = writeln!(o, "  label=\"{}\"; labelloc=t;", dot_escape(title));
    for n in g.graph.node_indices() {
        let node = &g.graph[n];
        let [a, b, c] = label_lines(&node.state);
        let head = match node.path_index {
            Some(i) => format!("step {i} (#{})", n.index()),
            None => format!("#{} (+{})", n.index(), node.dist),
        };
        let mut attrs = format!(
            "label=\"{}\\n{}\\n{}\\n{}\"",
            dot_escape(&head),
            dot_escape(&a),
            dot_escape(&b),
            dot_escape(&c)
        );
        if node.path_index.is_some() {
            attrs.push_str(", style=\"bold,filled\", fillcolor=\"#fde2e2\", color=\"#c0392b\"");
        } else {
            attrs.push_str(", color=\"#888888\"");
        }
        if !node.violates.is_empty() {
            let _ = write!(
                attrs,
                ", peripheries=2, tooltip=\"violates {}\"",
                dot_escape(&node.violates.join("; "))
            );
        }
        let _ = writeln!(o, "  n{} [{}];", n.index(), attrs);
    }
    for e in g.graph.edge_references() {
        let w = e.weight();
        let style = if w.on_path {
            ", color=\"#c0392b\", penwidth=2.5, fontcolor=\"#c0392b\""
        } else {
            ", color=\"#999999\""
        };
        let _ = writeln!(
            o,
            "  n{} -> n{} [label=\"{}\"{}];",
            e.source().index(),
            e.target().index(),
            dot_escape(&w.event),
            style
        );
    }
    o.push_str("}\n");
    o
}
