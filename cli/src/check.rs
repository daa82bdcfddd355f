//! `trc check` and `trc matrix`: the arguments, the request they make of `trc-check` (which
//! explores and writes the exports of `--out`), and the printing.

use crate::args::{threads_value, BoundArgs, ModelArgs};
use crate::exit;
use crate::progress::LevelProgress;
use clap::Args;
use std::io;
use std::path::{Path, PathBuf};
use trc_check::export::Exports;
use trc_check::shard::Shard;
use trc_check::{CheckReport, CheckRequest, MatrixRow, Outcome, PropResult};
use trc_engine::{Options, Path as EnginePath};
use trc_model::model::{Action, TcpModel};
use trc_model::{Config, Profile};
use trc_trace::upstream::Form;

#[derive(Args, Debug)]
pub struct CheckArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// Worker threads (0 = all cores; at most 4 per core).
    #[arg(long, default_value_t = 0, value_parser = threads_value)]
    pub threads: usize,
    /// Stop at the end of the BFS level where the first violation is found.
    #[arg(long)]
    pub fail_fast: bool,
    /// Memory budget. The states of the BFS frontier that do not fit are written to a
    /// temporary file in a private directory $TMPDIR/trc-spill-<pid>-... ($TMPDIR: default
    /// /tmp), unlinked as soon as it is opened (no file is left behind, even if trc is killed).
    /// When the visited set, parent links and claim table (≈ 25-40 bytes per state) would not
    /// fit, the check stops cleanly with partial statistics (exit 3 if nothing was violated).
    #[arg(long, value_name = "MiB")]
    pub max_memory: Option<u64>,
    /// With --max-memory: do not spill the frontier to disk; stop when it would not fit.
    #[arg(long, requires = "max_memory")]
    pub no_spill: bool,
    /// Explore at most this many events deep (bounded depth).
    #[arg(long)]
    pub max_depth: Option<usize>,
    /// Exact state-space reductions (same verdicts, same counterexample lengths, fewer states):
    /// step observations cleared where every property holds, ghost fields no checked property
    /// reads, dead time stamps. Counterexamples show the reduced states (see docs/explanation/performance.md).
    #[arg(long)]
    pub reduce: bool,
    /// Print the result as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Baseline of accepted findings (violations reported but not failing).
    #[arg(long, value_name = "FILE", default_value = "baseline.toml")]
    pub baseline: PathBuf,
    /// Write each violated property's counterexample as DIR/<property>-<profile>.{pkt,json,dot}.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// The form of the scripts --out writes: trc (trc's own, with its defaults.sh beside it),
    /// gtest (google/packetdrill's gtests/net/tcp: their ../common/defaults.sh, only the sysctls
    /// that differ from it) or selftest (the kernel's selftests/net/packetdrill: SPDX line,
    /// ./defaults.sh, tcp_*.pkt). Both upstream forms run as IPv4, IPv6 and IPv4-mapped IPv6; a
    /// script that cannot is not written ("unsupported: ...", exit 3).
    #[arg(long, value_name = "FORM", default_value = "trc", value_parser = trc_trace::upstream::Form::NAMES, requires = "out")]
    pub format: String,
    /// Add new violations to the regression corpus (see --regressions).
    #[arg(long)]
    pub save_regressions: bool,
    /// Regression corpus directory (manifest.toml + scripts) for --save-regressions.
    #[arg(
        long,
        value_name = "DIR",
        default_value = "counterexamples/regressions"
    )]
    pub regressions: PathBuf,
    /// Compare with this profile (built-in name or file): a violation whose signature also
    /// occurs there is reported as "also on PROFILE" and does not fail. Default for a profile
    /// file: its `base`; for a built-in profile: none.
    #[arg(long, value_name = "PROFILE")]
    pub against: Option<String>,
    /// Count, for every decision function and branch of it, the transitions of the explored
    /// space that went through it, and list those never reached (about twice the time).
    #[arg(long)]
    pub coverage: bool,
    /// Do only shard I of N of the work list (bounds files × SACK modes × property groups, see
    /// docs/reference/shards.md) and print it as JSON for `trc merge`.
    #[arg(long, value_name = "I/N", value_parser = crate::args::shard)]
    pub shard: Option<Shard>,
    /// One state space across the processes of an MPI job (`mpirun -np N trc check --mpi`): rank
    /// 0 prints the one-process report and alone writes files. Needs `--features mpi` (see ci.md).
    #[arg(long)]
    pub mpi: bool,
    /// One state space split across N ranks that are threads of this process (the MPI check's
    /// engine without MPI; one thread per rank): each rank keeps its level compressed, so large
    /// bounds need far less memory than the default engine (`--segments 10 --sack`: about 10 GiB
    /// with 2 ranks, where the default needs --max-memory and the disk). The same report.
    #[arg(long, value_name = "N", value_parser = crate::args::ranks_value, conflicts_with = "mpi")]
    pub ranks: Option<usize>,
}

#[derive(Args, Debug)]
pub struct MatrixArgs {
    /// Profiles to include (default: all built-in).
    #[arg(long = "profile", value_name = "NAME")]
    pub profiles: Vec<String>,
    #[command(flatten)]
    pub bounds: BoundArgs,
    /// Worker threads (0 = all cores; at most 4 per core).
    #[arg(long, default_value_t = 0, value_parser = threads_value)]
    pub threads: usize,
    /// Print the matrix as JSON.
    #[arg(long)]
    pub json: bool,
    /// Baseline of accepted findings: a property violated only by accepted signatures is shown
    /// as `acc`, not as a failure.
    #[arg(long, default_value = "baseline.toml")]
    pub baseline: PathBuf,
    /// Do only shard I of N of the work list (profiles × SACK modes, see docs/reference/shards.md) and print it
    /// as JSON for `trc merge`.
    #[arg(long, value_name = "I/N", value_parser = crate::args::shard)]
    pub shard: Option<Shard>,
}

/// The baseline file's accepted findings (none, with a note on stderr, when the file does not
/// exist).
pub fn load_baseline(p: &Path, what: &str) -> Result<trc_check::Baseline, trc_check::Error> {
    Ok(trc_check::load_baseline(p)?.unwrap_or_else(|| {
        eprintln!("{what}: {}", trc_check::input::missing_baseline_note(p));
        trc_check::Baseline::default()
    }))
}

/// The combinations `trc check` refuses before anything runs.
fn refused(a: &CheckArgs) -> Option<&'static str> {
    if a.coverage && a.shard.is_some() {
        return Some("--coverage cannot be sharded (--shard): run it unsharded");
    }
    if a.shard.is_some() && a.fail_fast {
        return Some("--fail-fast cannot be sharded: it stops at a BFS level of the whole state space, which no shard sees");
    }
    if a.shard.is_some() && a.save_regressions {
        return Some("--save-regressions needs the merged result: run it on an unsharded check");
    }
    if a.mpi && (a.shard.is_some() || a.max_memory.is_some() || a.coverage) {
        return Some("--mpi takes no --shard, --max-memory or --coverage: one exploration, in memory, split across the ranks (docs/guides/ci.md)");
    }
    if a.ranks.is_some() && (a.max_memory.is_some() || a.coverage) {
        return Some("--ranks takes no --max-memory or --coverage: each exploration in memory, split across the ranks (docs/guides/ci.md)");
    }
    None
}

/// The request `a` makes, with each configuration's bounds file, or a usage error.
fn request(a: &CheckArgs) -> Result<(CheckRequest, Vec<Option<PathBuf>>), trc_check::Error> {
    let configs = a.model.bounds.configs()?;
    let (profile, file) = trc_check::load_profile_info(&a.model.profile)?;
    // The comparison profile: --against, else a profile file's base.
    let against = match a
        .against
        .clone()
        .or_else(|| file.as_ref().map(|f| f.base.clone()))
    {
        Some(name) => Some(trc_check::load_profile(&name).map_err(|e| format!("--against: {e}"))?),
        None => None,
    };
    let baseline = load_baseline(&a.baseline, "trc check")?;
    let mut req = CheckRequest::new(profile, Config::default());
    req.profile_file = file;
    req.configs = configs.iter().map(|(_, c)| c.clone()).collect();
    req.properties = a.model.properties.clone();
    req.properties = req.property_ids()?;
    req.options = Options {
        threads: a.threads,
        max_depth: a.max_depth,
        fail_fast: a.fail_fast,
        max_memory_bytes: a.max_memory.map(|m| m.saturating_mul(1024 * 1024)),
        max_rss_bytes: a.max_memory.map(|m| m.saturating_mul(1024 * 1024)),
        spill_dir: (a.max_memory.is_some() && !a.no_spill).then(std::env::temp_dir),
        ..Options::default()
    };
    req.reduce = a.reduce;
    req.against = against;
    req.baseline = baseline.accepted;
    req.coverage = a.coverage;
    req.ranks = a.ranks.map(trc_check::Ranks::Threads);
    Ok((req, configs.into_iter().map(|(p, _)| p).collect()))
}

pub fn run_check(a: CheckArgs) -> i32 {
    let (mut req, files) = match request(&a) {
        Ok(x) => x,
        Err(e) => return exit::usage_error(&e),
    };
    if let Some(e) = refused(&a) {
        return exit::usage_error(e);
    }
    if a.mpi {
        if let Err(e) = req.join_mpi() {
            eprintln!("trc: {e}");
            return exit::INCOMPLETE;
        }
    }
    // Rank 0 alone writes `--out`; every rank stops with it if the directory is unusable.
    if let Err(e) = req.check_out(a.out.as_deref()) {
        return e.map_or(exit::USAGE, |e| exit::usage_error(&e));
    }
    let progress = LevelProgress::new(a.json || a.shard.is_some() || !req.primary());
    let exports = Exports {
        out: a.out.clone(),
        form: Form::parse(&a.format).unwrap_or(Form::Trc),
        corpus: a.save_regressions.then(|| a.regressions.clone()),
        page: &page,
    };
    let code = match a.shard {
        Some(shard) => check_shard(&req, shard, &exports, progress),
        None => check_all(&a, &req, &files, &exports, progress),
    };
    req.agreed(code)
}

/// The counterexample page `--out` writes beside each script.
fn page(m: &TcpModel, path: &EnginePath<Action>, p: &PropResult, file: &Path) -> io::Result<()> {
    trc_viz::counterexample_page(m, path, &p.name, &p.id, file)
}

/// The unsharded check: every bounds file explored, exported and printed.
fn check_all(
    a: &CheckArgs,
    req: &CheckRequest,
    files: &[Option<PathBuf>],
    exports: &Exports,
    progress: LevelProgress,
) -> i32 {
    let r = trc_check::run_exported(req, files, exports, &progress);
    progress.finish();
    let checked = match r {
        Ok(c) => c,
        Err(e) => return exit::usage_error(&e),
    };
    if let Some(e) = checked.export_error {
        return exit::usage_error(&e);
    }
    if req.primary() {
        print_check(&checked.reports, a.json);
    }
    match checked.unsupported {
        0 => exit::of_check(&checked.reports),
        _ => exit::INCOMPLETE,
    }
}

/// A shard of the check: its units explored (and exported) and printed as JSON for `trc merge`.
fn check_shard(
    req: &CheckRequest,
    shard: Shard,
    exports: &Exports,
    progress: LevelProgress,
) -> i32 {
    let r = trc_check::shard::run_check(req, shard, exports, &progress);
    progress.finish();
    let (file, unsupported) = match r {
        Ok(x) => x,
        Err(e) => return exit::usage_error(&e),
    };
    crate::print_json(&file.json());
    match unsupported {
        0 => exit::of_outcome(Outcome::worst(file.units.iter().map(|u| u.run.result))),
        _ => exit::INCOMPLETE,
    }
}

/// Prints one report per bounds file (`trc check` and `trc merge`): one file's JSON as it is,
/// several as `{"result", "runs": [...]}`; the human summaries one after the other.
pub fn print_check(reports: &[CheckReport], json: bool) {
    if json {
        crate::print_json(&CheckReport::json(reports));
    } else {
        print!("{}", CheckReport::render_runs(reports));
    }
}

pub fn run_matrix(a: MatrixArgs) -> i32 {
    let cfg = match a.bounds.config() {
        Ok(c) => c,
        Err(e) => return exit::usage_error(&e),
    };
    let profiles: Vec<Profile> = if a.profiles.is_empty() {
        Profile::builtin()
    } else {
        match a
            .profiles
            .iter()
            .map(|n| trc_check::load_profile(n))
            .collect()
        {
            Ok(v) => v,
            Err(e) => return exit::usage_error(&e),
        }
    };
    let opts = Options {
        threads: a.threads,
        ..Options::default()
    };
    let baseline = match load_baseline(&a.baseline, "trc check") {
        Ok(b) => b.accepted,
        Err(e) => return exit::usage_error(&e),
    };
    if let Some(shard) = a.shard {
        let file = trc_check::shard::run_matrix(profiles, cfg, &opts, &baseline, shard);
        crate::print_json(&file.json());
        return exit::HOLDS;
    }
    let rows: Vec<MatrixRow> = profiles
        .iter()
        .map(|p| trc_check::matrix::matrix_row(&cfg, p, &opts, &baseline))
        .collect();
    print_matrix(&rows, a.json);
    exit::HOLDS
}

/// Prints the matrix (`trc matrix` and `trc merge`).
pub fn print_matrix(rows: &[MatrixRow], json: bool) {
    if json {
        let v: Vec<_> = rows.iter().map(MatrixRow::json).collect();
        crate::print_json(&serde_json::to_value(v).expect("rows serialise"));
    } else {
        print!("{}", trc_check::matrix::render(rows));
    }
}
