//! `trc-viz`: the pictures trc draws, as self-contained HTML (inline SVG, the page's CSS and
//! JavaScript from `assets/`, built in with `include_str!`) and Graphviz DOT.
//!
//! * [`graph`]: the explored state graph around a model path (petgraph), as DOT;
//!   [`graph_html`]: the same graph as an interactive page with the path's pictures
//!   (`trc graph`, and the page `trc check --out` writes beside each counterexample).
//! * [`pictures`]: the time-sequence diagram and the cwnd / ssthresh / ca_state timeline, from a
//!   model path ([`pictures::model`]) or a kernel run's trace ([`pictures::kernel`], `trc kernel
//!   run --plot`, the patch check's pages).
#![forbid(unsafe_code)]

pub mod explorer;
pub mod graph;
pub mod graph_html;
pub mod pictures;

use std::path::Path;
use trc_model::model::{Action, TcpModel};

/// Why pages could not be written.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A script the page shows could not be read.
    #[error(transparent)]
    Read(#[from] trc_files::ReadError),
    /// A page or its directory could not be written; `what` names it (`cannot write FILE`).
    #[error("{what}: {source}")]
    Write {
        what: String,
        source: std::io::Error,
    },
}

impl Error {
    /// A failed write of `what`.
    pub(crate) fn write(what: String) -> impl FnOnce(std::io::Error) -> Error {
        move |source| Error::Write { what, source }
    }
}

/// The first reference in a page to a resource outside it (a stylesheet link, a script or
/// image URL, a CSS import), if any: the pages this crate writes have none, so that they open
/// offline and from a CI artifact.
pub fn external_reference(html: &str) -> Option<&'static str> {
    [
        "<link",
        "<script src",
        "src=\"http",
        "href=\"http",
        "url(http",
        "@import",
    ]
    .into_iter()
    .find(|bad| html.contains(bad))
}

/// The page of a counterexample (`trc check --out` writes it beside the script): the state
/// graph one event around the path and the path's pictures, `name` the property's name, `id`
/// its id.
pub fn counterexample_page(
    model: &TcpModel,
    path: &trc_engine::Path<Action>,
    name: &str,
    id: &str,
    file: &Path,
) -> std::io::Result<()> {
    let g = graph::build(model, path, 1, 2000);
    let title = format!(
        "{name} — profile {} — shortest counterexample, {} events",
        model.profile.name,
        path.len()
    );
    let html = graph_html::render(
        &g,
        model,
        &title,
        &pictures::render_path(model, path, Some(id)),
    );
    trc_files::write_atomic(file, html.as_bytes())
}

/// The page of one changed scenario of a patch check: the base's and the patched kernel's pages
/// side by side (`diff`: the first difference, in words).
pub fn side_by_side(name: &str, diff: &str, base: &str, patched: &str) -> String {
    let esc = pictures::esc;
    format!(
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{n}: base and patched kernel</title>
<style>{css}</style></head>
<body><h1>{n}</h1><p>{d}</p><div class="two"><div><p>base</p><iframe src="{b}"></iframe></div><div><p>patched</p><iframe src="{p}"></iframe></div></div></body></html>
"#,
        css = include_str!("../assets/side-by-side.css").trim_end(),
        n = esc(name),
        d = esc(diff),
        b = esc(base),
        p = esc(patched)
    )
}

/// One page per scenario whose behaviour changed: the base's and the patched kernel's pages
/// (time-sequence diagram, cwnd timeline, steps) side by side.
pub fn patch_pages(
    rep: &mut trc_kcheck::patch::PatchReport,
    plan: &trc_kcheck::run::Plan,
    mine: &[usize],
    dir: &Path,
) -> Result<(), Error> {
    let changed: Vec<usize> = (0..rep.scenarios.len())
        .filter(|i| rep.scenarios[*i].changed())
        .collect();
    if changed.is_empty() {
        return Ok(());
    }
    std::fs::create_dir_all(dir).map_err(Error::write(dir.display().to_string()))?;
    for i in changed {
        let (Some(b), Some(p)) = rep.runs[i].clone() else {
            continue;
        };
        let case = &plan.cases[mine[i]];
        let text = trc_files::read_source(&case.path)?;
        let stem = trc_trace::file_safe(&case.name.trim_end_matches(".pkt").replace('/', "-"));
        let title = case.path.display().to_string();
        for (side, r) in [("base", &b), ("patched", &p)] {
            let html = pictures::kernel::page(r, &text, &format!("{title} on the {side} kernel"));
            let f = dir.join(format!("{stem}.{side}.html"));
            trc_files::write_atomic(&f, html.as_bytes())
                .map_err(Error::write(format!("cannot write {}", f.display())))?;
        }
        let d = rep.scenarios[i]
            .difference
            .as_ref()
            .map(|d| format!("first difference at line {}: {}", d.line, d.what.join(", ")))
            .unwrap_or_default();
        let html = side_by_side(
            &case.name,
            &d,
            &format!("{stem}.base.html"),
            &format!("{stem}.patched.html"),
        );
        let f = dir.join(format!("{stem}.html"));
        trc_files::write_atomic(&f, html.as_bytes())
            .map_err(Error::write(format!("cannot write {}", f.display())))?;
        rep.scenarios[i].page = Some(f.display().to_string());
    }
    Ok(())
}
