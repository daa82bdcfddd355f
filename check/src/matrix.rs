//! `trc matrix`: every profile against every property, one row per profile.

use crate::report::{results, SigStatus};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use trc_engine::{Options, Verdict};
use trc_model::{Config, Profile};
use trc_properties::baseline::Accepted;

/// One row of `trc matrix`: a profile's states, seconds and, per catalogue property, the
/// length of the shortest counterexample whose signature the baseline does not accept (`cells`)
/// and the findings of the accepted signatures that occurred (`accepted`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct MatrixRow {
    pub profile: String,
    pub states: u64,
    pub seconds: f64,
    pub cells: Vec<Option<usize>>,
    #[serde(default)]
    pub accepted: Vec<Vec<String>>,
}

/// A cell of `trc matrix --json`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Cell {
    pub violated: bool,
    /// The shortest such counterexample's events, when violated.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub steps: Option<usize>,
    pub accepted: Vec<String>,
}

/// A row of `trc matrix --json`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct JsonRow {
    pub profile: String,
    pub states: u64,
    pub seconds: f64,
    /// Property id → its cell.
    pub properties: BTreeMap<String, Cell>,
}

impl MatrixRow {
    /// The row of the other SACK mode added in (`trc merge`): states and seconds summed, the
    /// shorter new violation, the union of the accepted findings.
    pub fn absorb(&mut self, r: &MatrixRow) {
        self.states += r.states;
        self.seconds += r.seconds;
        for (a, b) in self.cells.iter_mut().zip(&r.cells) {
            *a = match (*a, *b) {
                (Some(x), Some(y)) => Some(x.min(y)),
                (x, y) => x.or(y),
            };
        }
        self.accepted.resize(self.cells.len(), Vec::new());
        for (a, b) in self.accepted.iter_mut().zip(&r.accepted) {
            for f in b {
                if !a.contains(f) {
                    a.push(f.clone());
                }
            }
            a.sort();
        }
    }

    /// The row as `--json` prints it.
    pub fn json(&self) -> JsonRow {
        let properties = trc_properties::catalogue()
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let cell = Cell {
                    violated: self.cells[i].is_some(),
                    steps: self.cells[i],
                    accepted: self.accepted.get(i).cloned().unwrap_or_default(),
                };
                (s.id.to_string(), cell)
            })
            .collect();
        JsonRow {
            profile: self.profile.clone(),
            states: self.states,
            seconds: self.seconds,
            properties,
        }
    }
}

/// A profile's row: one classified exploration of every catalogue property.
pub fn matrix_row(cfg: &Config, p: &Profile, opts: &Options, baseline: &[Accepted]) -> MatrixRow {
    let (model, report) =
        crate::explore_classified(cfg, p, &[], opts, None, false, crate::Split::One)
            .expect("catalogue ids are valid");
    let results = results(&model, &report, baseline, None);
    let mut cells = Vec::new();
    let mut accepted = Vec::new();
    for r in &results {
        let new = r
            .signatures
            .iter()
            .filter(|s| s.status == SigStatus::New)
            .map(|s| s.events)
            .min();
        // A violation without a signature cannot be accepted: it shows as violated.
        let unclassified = r.verdict == Verdict::Violated && r.signatures.is_empty();
        cells.push(if unclassified {
            r.path.as_ref().map(|x| x.actions.len())
        } else {
            new
        });
        let mut f: Vec<String> = r
            .signatures
            .iter()
            .filter(|s| s.status == SigStatus::Accepted)
            .filter_map(|s| s.finding.clone())
            .collect();
        f.sort();
        f.dedup();
        accepted.push(f);
    }
    MatrixRow {
        profile: p.name.clone(),
        states: report.unique_states,
        seconds: report.elapsed.as_secs_f64(),
        cells,
        accepted,
    }
}

/// The matrix as `trc matrix` prints it (`trc merge` too): the table, its legend, the accepted
/// findings met and the totals.
pub fn render(rows: &[MatrixRow]) -> String {
    let specs = trc_properties::catalogue();
    let mut o = String::new();
    let _ = write!(o, "{:<20}", "profile");
    for s in &specs {
        let _ = write!(o, " {:>6}", s.id);
    }
    let _ = writeln!(o, " {:>10} {:>8}", "states", "seconds");
    let (mut total_states, mut total_secs) = (0u64, 0f64);
    for r in rows {
        total_states += r.states;
        total_secs += r.seconds;
        let _ = write!(o, "{:<20}", r.profile);
        for (i, c) in r.cells.iter().enumerate() {
            let acc = r.accepted.get(i).is_some_and(|a| !a.is_empty());
            let cell = match c {
                Some(n) => format!("✗{n}"),
                None if acc => "acc".to_string(),
                None => "ok".to_string(),
            };
            let _ = write!(o, " {cell:>6}");
        }
        let _ = writeln!(o, " {:>10} {:>8.2}", r.states, r.seconds);
    }
    let _ = writeln!(o, "\n✗N: violated by a signature the baseline does not accept, shortest such counterexample N events;");
    let _ = writeln!(o, "acc: violated only by accepted findings (baseline.toml; `trc check --profile P` lists them); ok: holds within the bounds.");
    // The findings met, per property, over all rows (each cell's list is in the JSON).
    let mut met: Vec<String> = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        let mut f: Vec<&String> = rows
            .iter()
            .filter_map(|r| r.accepted.get(i))
            .flatten()
            .collect();
        f.sort();
        f.dedup();
        if !f.is_empty() {
            let f: Vec<&str> = f.iter().map(|x| x.as_str()).collect();
            met.push(format!("{}: {}", spec.id, f.join(" ")));
        }
    }
    if !met.is_empty() {
        let _ = writeln!(
            o,
            "accepted findings met (per cell in --json): {}",
            met.join("; ")
        );
    }
    let _ = writeln!(
        o,
        "total: {} states in {:.2} s ({:.0} states/s)",
        total_states,
        total_secs,
        total_states as f64 / total_secs.max(1e-9)
    );
    o
}
