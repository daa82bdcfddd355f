//! `trc graph`: the explored state graph around a counterexample, as DOT and as one
//! self-contained HTML page (`graph_html.rs`).
//!
//! The graph is built with petgraph: the counterexample's states are the *path*, and the states
//! reachable from path states in at most `--depth` events (generated with `Model::actions` /
//! `Model::next_state`, deduplicated by `trc_engine::fingerprint`) are its *neighbours*. Node
//! indices are assigned path first, so node `i` is path step `i`.

use crate::check::explore;
use crate::output::{self, describe};
use clap::Args;
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::EdgeRef;
use stateright::{Expectation, Model};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path as FsPath, PathBuf};
use trc_engine::{fingerprint, replay, Options, Path, Verdict};
use trc_model::model::{Action, State, TcpModel};

#[derive(Args, Debug)]
pub struct GraphArgs {
    #[command(flatten)]
    pub model: crate::ModelArgs,
    /// Worker threads for the check (0 = all cores; at most 4 per core).
    #[arg(long, default_value_t = 0, value_parser = crate::threads_value)]
    pub threads: usize,
    /// Check at most this many events deep (bounded depth).
    #[arg(long)]
    pub max_depth: Option<usize>,
    /// Stop the check cleanly when the explored states would need more memory.
    #[arg(long, value_name = "MiB")]
    pub max_memory: Option<u64>,
    /// Neighbourhood: also draw states up to N events away from a path state.
    #[arg(long, default_value_t = 1)]
    pub depth: usize,
    /// Stop adding neighbours beyond this many states in the graph.
    #[arg(long, default_value_t = 2000)]
    pub max_nodes: usize,
    /// Output directory (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

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
    /// Readable event text (`output::describe`).
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
                    event: describe(ps, &a),
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
                            event: describe(&s, &a),
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

/// Writes `content` to `path` atomically: a temporary file in the same directory, then rename.
pub fn write_atomic(path: &FsPath, content: &str) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(FsPath::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let res = (|| {
        use std::io::Write;
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(content.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if res.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    res
}

/// A file-name-safe version of a profile name (a file profile's name is its stem already).
fn safe(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

pub fn run_graph(a: GraphArgs) -> i32 {
    let (cfg, profile) = match a.model.load() {
        Ok(x) => x,
        Err(e) => return output::usage_error(&e),
    };
    if a.max_nodes == 0 {
        return output::usage_error("--max-nodes must be at least 1");
    }
    if a.out.exists() && !a.out.is_dir() {
        return output::usage_error(&format!("--out {}: not a directory", a.out.display()));
    }
    let opts = Options {
        threads: a.threads,
        max_depth: a.max_depth,
        max_memory_bytes: a.max_memory.map(|m| m.saturating_mul(1024 * 1024)),
        max_rss_bytes: a.max_memory.map(|m| m.saturating_mul(1024 * 1024)),
        ..Options::default()
    };
    eprintln!("trc graph: checking profile {} ...", profile.name);
    let (model, report) = match explore(&cfg, &profile, &a.model.properties, &opts, None) {
        Ok(x) => x,
        Err(e) => return output::usage_error(&e),
    };
    let hit = report
        .properties
        .iter()
        .find(|p| p.verdict == Verdict::Violated && p.path.is_some());
    let (stem, path, title) = match hit {
        Some(p) => {
            let id = p.name.split(':').next().unwrap_or(p.name).to_string();
            let path = p.path.clone().unwrap();
            let title = format!(
                "{} — profile {} — shortest counterexample, {} events",
                p.name,
                profile.name,
                path.len()
            );
            (
                format!("{}-{}", safe(&id), safe(&profile.name)),
                path,
                title,
            )
        }
        None => {
            let ids: Vec<String> = report
                .properties
                .iter()
                .map(|p| p.name.split(':').next().unwrap_or(p.name).to_string())
                .collect();
            println!(
                "trc graph: no property violated ({}{}); drawing the neighbourhood of the initial states instead",
                ids.join(", "),
                if report.complete { "" } else { ", check stopped early" }
            );
            let title = format!(
                "profile {} — no violation of {} — initial states and their neighbours",
                profile.name,
                ids.join(", ")
            );
            (
                format!("init-{}", safe(&profile.name)),
                Path {
                    init_index: 0,
                    actions: Vec::new(),
                },
                title,
            )
        }
    };
    let g = build(&model, &path, a.depth, a.max_nodes);
    if let Err(e) = std::fs::create_dir_all(&a.out) {
        return output::usage_error(&format!("--out {}: {e}", a.out.display()));
    }
    let dot_path = a.out.join(format!("{stem}.dot"));
    let html_path = a.out.join(format!("{stem}.html"));
    let pictures = crate::pictures::render_path(
        &model,
        &path,
        hit.map(|p| p.name.split(':').next().unwrap_or(p.name)),
    );
    let html = crate::graph_html::render(&g, &model, &title, &pictures);
    for (p, content) in [(&dot_path, to_dot(&g, &title)), (&html_path, html)] {
        if let Err(e) = write_atomic(p, &content) {
            return output::usage_error(&format!("{}: {e}", p.display()));
        }
    }
    println!(
        "trc graph: {} — path of {} states, {} states and {} transitions drawn (depth {}){}",
        title,
        g.path.len(),
        g.graph.node_count(),
        g.graph.edge_count(),
        a.depth,
        if g.truncated {
            format!(", cut at --max-nodes {}", a.max_nodes)
        } else {
            String::new()
        }
    );
    println!(
        "wrote {}\nwrote {}",
        dot_path.display(),
        html_path.display()
    );
    0
}
