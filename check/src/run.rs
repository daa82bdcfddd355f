//! `trc check` as a library call: a [`CheckRequest`] explored into [`CheckReport`]s.

use crate::coverage::{self, Coverage};
use crate::export::{config_label, out_dir_ok, Exports, Note};
use crate::input::FileInfo;
use crate::report::{results, Base, CheckReport};
use crate::units::check_work_list;
use crate::Error;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use trc_engine::dist::Comm;
use trc_engine::{Options, Progress, Report};
use trc_model::model::{Action, TcpModel};
use trc_model::{Config, Profile};
use trc_properties::baseline::Accepted;

/// What to check.
#[derive(Clone, Debug)]
pub struct CheckRequest {
    pub profile: Profile,
    /// The profile file's base and overrides (`--coverage` warns about overrides never reached).
    pub profile_file: Option<FileInfo>,
    /// One check per configuration (bounds file), in order.
    pub configs: Vec<Config>,
    /// Property ids (all when empty).
    pub properties: Vec<String>,
    pub options: Options,
    /// Exact state-space reductions (`--reduce`).
    pub reduce: bool,
    /// The comparison profile: a violation whose signature also occurs there does not fail.
    pub against: Option<Profile>,
    /// Accepted findings: reported, not failing.
    pub baseline: Vec<Accepted>,
    /// Count the decision branches (a second exploration).
    pub coverage: bool,
    /// Every exploration as one state space split across ranks (`None`: the one-process
    /// engine).
    pub ranks: Option<Ranks>,
}

/// The ranks a distributed check splits each state space across.
#[derive(Clone)]
pub enum Ranks {
    /// The ranks of an MPI job (`trc check --mpi`), through their communicator
    /// ([`trc_engine::dist::Comm`]): every rank makes the same request and gets the same reports.
    Mpi(Rc<dyn Comm>),
    /// `trc check --ranks N`: N ranks that are threads of this process (each keeps its level
    /// compressed: far less memory than the one-process engine on large bounds).
    Threads(usize),
}

impl std::fmt::Debug for Ranks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ranks::Mpi(c) => write!(f, "MPI rank {} of {}", c.rank(), c.size()),
            Ranks::Threads(n) => write!(f, "{n} thread ranks"),
        }
    }
}

impl CheckRequest {
    /// `trc check --mpi`: joins the MPI job (`mpi::init`), whose ranks then explore every state
    /// space together; in a build without the feature `mpi`, "unsupported" and why.
    pub fn join_mpi(&mut self) -> Result<(), Error> {
        #[cfg(feature = "mpi")]
        {
            let ranks = crate::mpi::init().map_err(|e| Error::Mpi(format!("--mpi: {e}")))?;
            self.ranks = Some(ranks);
            Ok(())
        }
        #[cfg(not(feature = "mpi"))]
        Err(Error::Mpi("unsupported: --mpi: this trc was built without MPI (cargo build --release --features mpi, with Open MPI and libclang installed: docs/guides/ci.md)".into()))
    }

    /// `--out DIR` checked by the primary process before anything is explored
    /// ([`out_dir_ok`]), its answer agreed across an MPI job's ranks (collective): on failure
    /// `Err(Some(why))` on the primary process, `Err(None)` on the other ranks.
    pub fn check_out(&self, out: Option<&Path>) -> Result<(), Option<Error>> {
        let mine = match out.filter(|_| self.primary()) {
            Some(dir) => out_dir_ok(dir),
            None => Ok(()),
        };
        match (self.agreed(mine.is_err() as i32), mine) {
            (0, _) => Ok(()),
            (_, mine) => Err(mine.err()),
        }
    }

    /// Whether this process prints the report and writes files: always, except the ranks other
    /// than 0 of an MPI job (they compute the same report).
    pub fn primary(&self) -> bool {
        match &self.ranks {
            Some(Ranks::Mpi(c)) => c.rank() == 0,
            _ => true,
        }
    }

    /// The exit code of the check: rank 0's `code` for every rank of an MPI job (only it writes
    /// files, so only it sees their failures), `code` otherwise. Collective across the ranks.
    pub fn agreed(&self, code: i32) -> i32 {
        match &self.ranks {
            Some(Ranks::Mpi(c)) => c.all_gather(&[code as u64])[0][0] as i32,
            _ => code,
        }
    }

    /// `profile` within `config`, every property, default options, nothing accepted.
    pub fn new(profile: Profile, config: Config) -> CheckRequest {
        CheckRequest {
            profile,
            profile_file: None,
            configs: vec![config],
            properties: Vec::new(),
            options: Options::default(),
            reduce: false,
            against: None,
            baseline: Vec::new(),
            coverage: false,
            ranks: None,
        }
    }

    /// The selected property ids in catalogue order (all when none was named), or why a name
    /// is not a property.
    pub fn property_ids(&self) -> Result<Vec<String>, Error> {
        Ok(trc_properties::select(&self.properties)?
            .iter()
            .map(|s| s.id.to_string())
            .collect())
    }
}

/// What a caller sees while a check runs: the engine's progress (at least once per BFS level)
/// and each exploration's end (the check's own, the comparison profile's).
pub trait Observer: Sync {
    fn progress(&self, _p: &Progress) {}
    fn explored(&self, _r: &Report<Action>) {}
    /// A file an export wrote, or a script it could not write.
    fn exported(&self, _n: &Note) {}
}

/// An observer that sees nothing.
pub struct Quiet;
impl Observer for Quiet {}

/// One exploration's result: its report and the model it explored (for exports).
pub struct Run {
    pub report: CheckReport,
    pub model: TcpModel,
    /// The comparison profile's signatures on the same bounds (a shard's merge needs them).
    pub base: Option<Base>,
    /// The engine's report (a shard's merge needs every signature's counterexample).
    pub engine: Report<Action>,
}

/// One exploration of `req.profile` within `cfg` for the properties `ids`, with the comparison
/// profile's and, if asked, the coverage exploration.
pub fn check_one(
    req: &CheckRequest,
    cfg: &Config,
    ids: &[String],
    obs: &dyn Observer,
) -> Result<Run, Error> {
    let cb = |p: &Progress| obs.progress(p);
    let split = match &req.ranks {
        Some(Ranks::Mpi(c)) => crate::Split::Mpi(&**c),
        Some(Ranks::Threads(n)) => crate::Split::Threads(*n),
        None => crate::Split::One,
    };
    let explore = |p: &Profile| {
        crate::explore_classified(cfg, p, ids, &req.options, Some(&cb), req.reduce, split)
    };
    let (model, report) = explore(&req.profile)?;
    // The same bounds and properties on the comparison profile, for its signatures.
    let base = match &req.against {
        Some(bp) => {
            let (_, r) = explore(bp)?;
            Some(Base {
                name: bp.name.clone(),
                signatures: crate::signatures(&r),
                incomplete: crate::report::incomplete(r.stop_reason),
            })
        }
        None => None,
    };
    let coverage = req.coverage.then(|| covered(req, cfg, ids));
    obs.explored(&report);
    let props = results(&model, &report, &req.baseline, base.as_ref());
    Ok(Run {
        report: CheckReport::new(&model, &report, props, base.as_ref(), coverage),
        model,
        base,
        engine: report,
    })
}

/// The coverage exploration, with the profile file's overrides never reached as warnings.
fn covered(req: &CheckRequest, cfg: &Config, ids: &[String]) -> Coverage {
    let mut c = coverage::explore(cfg, &req.profile, ids, &req.options, req.reduce);
    if let Some(f) = &req.profile_file {
        c.warn_overrides(&f.overrides);
    }
    c
}

/// The whole check: one [`CheckReport`] per configuration.
pub fn run(req: &CheckRequest, obs: &dyn Observer) -> Result<Vec<Run>, Error> {
    let ids = req.property_ids()?;
    req.configs
        .iter()
        .map(|cfg| check_one(req, cfg, &ids, obs))
        .collect()
}

/// What [`run_exported`] did: a report per bounds file, how many scripts the form could not
/// express, and the first export that failed (nothing more is written after it, but the
/// explorations go on: every rank of an MPI job takes part in each).
pub struct Checked {
    pub reports: Vec<CheckReport>,
    pub unsupported: usize,
    pub export_error: Option<Error>,
}

/// `trc check` unsharded: every bounds file explored and, by the primary process, exported
/// (into `out/<file stem>` when there are several; `files[i]` is `req.configs[i]`'s file).
pub fn run_exported(
    req: &CheckRequest,
    files: &[Option<PathBuf>],
    exports: &Exports,
    obs: &dyn Observer,
) -> Result<Checked, Error> {
    let ids = req.property_ids()?;
    let several = req.configs.len() > 1;
    let mut done = Checked {
        reports: Vec::new(),
        unsupported: 0,
        export_error: None,
    };
    for (i, cfg) in req.configs.iter().enumerate() {
        let run = check_one(req, cfg, &ids, obs)?;
        if req.primary() && done.export_error.is_none() {
            let file = files.get(i).and_then(|f| f.as_deref());
            let dir = exports.out.as_ref().map(|d| match several {
                true => d.join(config_label(file)),
                false => d.clone(),
            });
            match exports.export(&run, dir.as_deref(), obs) {
                Ok(n) => done.unsupported += n,
                Err(e) => done.export_error = Some(e),
            }
        }
        done.reports.push(run.report);
    }
    Ok(done)
}

/// The units of the work list a shard owns, each explored: `(unit index, its label, the run)`.
pub fn run_units(
    req: &CheckRequest,
    owns: &dyn Fn(usize) -> bool,
    obs: &dyn Observer,
    each: &mut dyn FnMut(usize, &crate::units::CheckUnit, Run) -> Result<(), Error>,
) -> Result<(), Error> {
    let ids = req.property_ids()?;
    for (k, u) in check_work_list(&req.configs, &ids, req.reduce)
        .iter()
        .enumerate()
    {
        if !owns(k) {
            continue;
        }
        let mut cfg = req.configs[u.config].clone();
        cfg.sack = u.sack;
        each(k, u, check_one(req, &cfg, &u.group, obs)?)?;
    }
    Ok(())
}

/// Most worker threads `--threads` takes: 4 per core (at least 4, at most 256). More only cost
/// memory and time to create (`--threads 100000` spent minutes creating threads).
pub fn max_threads() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (4 * cores).clamp(4, 256)
}

/// Why a `--threads` value is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadThreads {
    #[error("`{0}` is not a number of threads")]
    NotANumber(String),
    #[error("at most {max} threads (4 per core on this machine); 0 uses every core")]
    TooMany { max: usize },
}

/// `--threads N`: 0 (all cores) up to [`max_threads`].
pub fn threads_value(s: &str) -> Result<usize, BadThreads> {
    let n: usize = s
        .parse()
        .map_err(|_| BadThreads::NotANumber(s.to_string()))?;
    let max = max_threads();
    if n > max {
        return Err(BadThreads::TooMany { max });
    }
    Ok(n)
}
