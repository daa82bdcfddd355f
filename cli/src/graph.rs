//! `trc graph`: the explored state graph around a counterexample (or the initial states), as
//! DOT and as one self-contained HTML page, drawn by `trc-viz`.

use crate::exit;
use clap::Args;
use std::path::PathBuf;
use trc_engine::{Options, Path, Verdict};

#[derive(Args, Debug)]
pub struct GraphArgs {
    #[command(flatten)]
    pub model: crate::args::ModelArgs,
    /// Worker threads for the check (0 = all cores; at most 4 per core).
    #[arg(long, default_value_t = 0, value_parser = crate::args::threads_value)]
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

pub fn run_graph(a: GraphArgs) -> i32 {
    let (cfg, profile) = match a.model.load() {
        Ok(x) => x,
        Err(e) => return exit::usage_error(&e),
    };
    if a.max_nodes == 0 {
        return exit::usage_error("--max-nodes must be at least 1");
    }
    if a.out.exists() && !a.out.is_dir() {
        return exit::usage_error(&format!("--out {}: not a directory", a.out.display()));
    }
    let opts = Options {
        threads: a.threads,
        max_depth: a.max_depth,
        max_memory_bytes: a.max_memory.map(|m| m.saturating_mul(1024 * 1024)),
        max_rss_bytes: a.max_memory.map(|m| m.saturating_mul(1024 * 1024)),
        ..Options::default()
    };
    eprintln!("trc graph: checking profile {} ...", profile.name);
    let (model, report) = match trc_check::explore(&cfg, &profile, &a.model.properties, &opts, None)
    {
        Ok(x) => x,
        Err(e) => return exit::usage_error(&e),
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
                trc_trace::file_safe(&format!("{id}-{}", profile.name)),
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
                trc_trace::file_safe(&format!("init-{}", profile.name)),
                Path {
                    init_index: 0,
                    actions: Vec::new(),
                },
                title,
            )
        }
    };
    let g = trc_viz::graph::build(&model, &path, a.depth, a.max_nodes);
    if let Err(e) = std::fs::create_dir_all(&a.out) {
        return exit::usage_error(&format!("--out {}: {e}", a.out.display()));
    }
    let dot_path = a.out.join(format!("{stem}.dot"));
    let html_path = a.out.join(format!("{stem}.html"));
    let pictures = trc_viz::pictures::render_path(
        &model,
        &path,
        hit.map(|p| p.name.split(':').next().unwrap_or(p.name)),
    );
    let html = trc_viz::graph_html::render(&g, &model, &title, &pictures);
    for (p, content) in [
        (&dot_path, trc_viz::graph::to_dot(&g, &title)),
        (&html_path, html),
    ] {
        if let Err(e) = trc_files::write_atomic(p, content.as_bytes()) {
            return exit::usage_error(&format!("{}: {e}", p.display()));
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
