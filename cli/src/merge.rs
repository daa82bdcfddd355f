//! `trc merge`: the shards of one `--shard I/N` run combined into the report the one run prints
//! (docs/reference/shards.md). The shards are read and validated by `trc_check::shard::load`; each command's
//! library merges its typed units.

use crate::exit;
use clap::Args;
use serde_json::Value;
use std::path::PathBuf;
use trc_check::shard::{units_in_order, HasUnit, Loaded};

#[derive(Args, Debug)]
pub struct MergeArgs {
    /// The shards' JSON outputs (`trc check|matrix|diff|kernel check --shard I/N`), every shard once, in
    /// any order.
    #[arg(required = true, value_name = "FILE.json")]
    pub files: Vec<PathBuf>,
    /// Print the merged result as JSON (what the unsharded command prints with `--json`).
    #[arg(long)]
    pub json: bool,
}

pub fn run_merge(a: MergeArgs) -> i32 {
    let shards = match trc_check::shard::load(&a.files) {
        Ok(s) => s,
        Err(e) => return exit::usage_error(&e.to_string()),
    };
    let r = match shards[0].header.command.as_str() {
        "check" => trc_check::shard::merge_check(&shards).map(|reports| {
            crate::check::print_check(&reports, a.json);
            exit::of_check(&reports)
        }),
        "matrix" => trc_check::shard::merge_matrix(&shards).map(|rows| {
            crate::check::print_matrix(&rows, a.json);
            exit::HOLDS
        }),
        "diff" => merge_diff(&shards, a.json),
        "kernel-check" => crate::kernel::check::merge(&shards, a.json),
        other => Err(trc_check::Error::Input(format!(
            "{}: shards of `trc {other}` cannot be merged",
            shards[0].name
        ))),
    };
    r.unwrap_or_else(|e| exit::usage_error(&e.to_string()))
}

/// What a `trc diff` shard says about the run.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct DiffShardArgs {
    pub profile: String,
    pub seed: u64,
    pub bar: f64,
    /// The scenario indices of the work list.
    pub scenarios: Vec<usize>,
    pub bulk: Option<u16>,
    pub drop: Vec<u32>,
}

/// A `trc diff` unit: a scenario of the work list.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct DiffUnit {
    pub unit: usize,
    pub scenario: usize,
}

impl HasUnit for DiffUnit {
    fn unit(&self) -> usize {
        self.unit
    }
}

fn merge_diff(shards: &[Loaded], json: bool) -> Result<i32, trc_check::Error> {
    let (args, _): (DiffShardArgs, Vec<DiffUnit>) = units_in_order(shards)?;
    let mut parts = Vec::new();
    for s in shards {
        let f: trc_check::shard::ShardFile<Value, DiffUnit> = s.typed()?;
        let r: trc_diff::DiffReport = serde_json::from_value(f.report.unwrap_or_default())
            .map_err(|e| format!("{}: its report: {e}", s.name))?;
        let ks: Vec<usize> = f.units.iter().map(|u| u.unit).collect();
        if ks.len() != r.results.len() {
            return Err(trc_check::Error::Input(format!(
                "{}: {} units but {} scenario results",
                s.name,
                ks.len(),
                r.results.len()
            )));
        }
        parts.push((ks, r));
    }
    let rep = trc_diff::DiffReport::merge(args.profile, args.seed, shards[0].header.units, parts);
    Ok(crate::diff::finish(&rep, args.bar, json))
}
