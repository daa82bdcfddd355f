//! `trc-check`: `trc check` and `trc matrix` as a library.
//!
//! A [`CheckRequest`] (a profile, bounds files, properties, engine options, a baseline and an
//! optional comparison profile) is explored by the engine ([`run::check_one`] per bounds file
//! and SACK half, [`run::run`] for all of it) into a typed [`CheckReport`]: the verdict of every
//! property, every signature of its violations judged against the baseline and the comparison
//! profile, a shortest counterexample in kernel terms, the exploration's figures and, with
//! `coverage`, the decision-branch counts ([`coverage`]). `trc check --json` prints the report
//! as it serialises; its text is [`CheckReport::render`].
//!
//! Sharding ([`shard`]): every command has a work list ([`units`]), a shard does every N-th
//! unit, and [`shard::merge_check`] / [`MatrixRow::absorb`] combine the shards' typed units into
//! exactly the report the one run gives. [`input`] reads the files a check takes (profile files,
//! the baseline) with `file:line` errors.
#![forbid(unsafe_code)]

pub mod coverage;
pub mod explore;
pub mod export;
pub mod input;
pub mod matrix;
mod render;
pub mod report;
pub mod run;
pub mod shard;
pub mod units;

pub use explore::{explore, explore_classified, explore_reduced, signatures, Split};
pub use input::{load_baseline, load_profile, load_profile_info, FileInfo};
pub use matrix::MatrixRow;
pub use report::{Base, CheckReport, Outcome, PropResult, SigResult, SigStatus, Step};
#[cfg(feature = "mpi")]
pub mod mpi;
pub use run::{check_one, run, run_exported, CheckRequest, Checked, Observer, Ranks, Run};
pub use trc_properties::baseline::{Accepted, Baseline};

/// Why a check could not be made or its results not written.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad input: an unknown profile or property, a malformed file, impossible bounds, or
    /// shards that do not belong together (`file:line: why` where there is a file).
    #[error("{0}")]
    Input(String),
    /// A file that cannot be read or is not the TOML its reader wants.
    #[error(transparent)]
    Read(#[from] trc_files::ReadError),
    /// A property id that is not in the catalogue.
    #[error(transparent)]
    UnknownProperty(#[from] trc_properties::UnknownProperty),
    /// A profile file with an error (`file:line: why`).
    #[error(transparent)]
    ProfileFile(#[from] trc_model::profile::ProfileFileError),
    /// `--profile NAME` that is neither a built-in profile nor a file.
    #[error("unknown profile `{name}`: not a built-in profile ({}) and no such file", builtin.join(", "))]
    UnknownProfile { name: String, builtin: Vec<String> },
    /// Bounds the model cannot explore; `at` is the flag that set the bound or the bounds file's
    /// `file:line` (`None`: a default).
    #[error("{}impossible bounds: {source}", at.as_ref().map(|a| format!("{a}: ")).unwrap_or_default())]
    Bounds {
        at: Option<String>,
        source: trc_model::config::ConfigError,
    },
    /// Writing a result failed (an export, the regression corpus).
    #[error("{0}")]
    Write(String),
    /// `--mpi` could not join an MPI job, or this build has no MPI.
    #[error("{0}")]
    Mpi(String),
}

impl From<String> for Error {
    fn from(s: String) -> Error {
        Error::Input(s)
    }
}

impl From<&str> for Error {
    fn from(s: &str) -> Error {
        Error::Input(s.to_string())
    }
}

/// The property id of an engine property name (`"I1: statement"` → `I1`).
pub fn property_id(name: &str) -> &str {
    name.split(':').next().unwrap_or(name)
}
