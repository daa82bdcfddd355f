//! `trc merge`: the shards of one `--shard I/N` run combined into the report the one run prints
//! (docs/reference/shards.md). The shards are read and validated by `trc_check::shard::load`; each command's
//! library merges its typed units.

use crate::exit;
use clap::Args;
use std::path::PathBuf;

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
        Err(e) => return exit::usage_error(&e),
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
        "diff" => crate::diff::merge(&shards, a.json),
        "kernel-check" => return crate::kernel::check::merge(&shards, a.json),
        other => Err(trc_check::Error::Input(format!(
            "{}: shards of `trc {other}` cannot be merged",
            shards[0].name
        ))),
    };
    r.unwrap_or_else(|e| exit::usage_error(&e))
}
