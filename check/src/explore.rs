//! One exploration: the model with the catalogue's properties, through the engine.

use std::collections::{BTreeMap, BTreeSet};
use trc_engine::dist::Comm;
use trc_engine::{check_with, Options, Progress, Report};
use trc_model::model::{Action, TcpModel};
use trc_model::{Config, Profile};

/// The engine's progress callback.
pub type ProgressFn<'a> = Option<&'a (dyn Fn(&Progress) + Sync)>;

/// The model of `profile` within `cfg` with the properties `ids` (all when empty), reduced
/// (`--reduce`) if `reduce`.
pub fn model(
    cfg: &Config,
    profile: &Profile,
    ids: &[String],
    reduce: bool,
) -> Result<TcpModel, trc_properties::UnknownProperty> {
    let specs = trc_properties::select(ids)?;
    let mut model = TcpModel::new(cfg.clone(), profile.clone())
        .with_properties(trc_properties::properties(&specs));
    if reduce {
        model = model.with_reduce(trc_properties::reductions(&specs));
    }
    Ok(model)
}

/// The engine's hooks for the model's states (a macro, not a function: the hooks stay function
/// items the engine inlines, not function pointers).
#[macro_export]
macro_rules! state_hooks {
    () => {
        trc_engine::StateHooks {
            fingerprint: trc_model::model::State::fingerprint,
            next_state_into: trc_model::model::TcpModel::next_state_into,
            drop_is_noop: trc_model::model::State::is_plain,
        }
    };
}

/// One exploration: model + engine + the catalogue's properties.
pub fn explore(
    cfg: &Config,
    profile: &Profile,
    ids: &[String],
    opts: &Options,
    progress: ProgressFn,
) -> Result<(TcpModel, Report<Action>), trc_properties::UnknownProperty> {
    explore_reduced(cfg, profile, ids, opts, progress, false)
}

/// [`explore`], with every exact reduction (`--reduce`) if `reduce`.
pub fn explore_reduced(
    cfg: &Config,
    profile: &Profile,
    ids: &[String],
    opts: &Options,
    progress: ProgressFn,
    reduce: bool,
) -> Result<(TcpModel, Report<Action>), trc_properties::UnknownProperty> {
    let model = model(cfg, profile, ids, reduce)?;
    let report = check_with(&model, opts, progress, crate::state_hooks!());
    Ok((model, report))
}

/// Where one exploration's state space lives.
#[derive(Clone, Copy)]
pub enum Split<'a> {
    /// The one-process engine ([`check_with`]).
    One,
    /// Across the ranks of an MPI job (`trc check --mpi`; every rank makes the same call).
    Mpi(&'a dyn Comm),
    /// Across this many ranks that are threads of this process (`trc check --ranks N`).
    Threads(usize),
}

/// [`explore_reduced`] with every violation classified by its signature
/// (`trc_properties::signature`): each property's report lists every signature met, with its
/// count and a shortest counterexample. Split across ranks ([`Split::Mpi`], [`Split::Threads`]),
/// one state space explored by [`trc_engine::dist::check_distributed`]: the same report (on
/// every rank), equal to the one-process engine's apart from timings, memory and
/// [`Report::dist`].
pub fn explore_classified(
    cfg: &Config,
    profile: &Profile,
    ids: &[String],
    opts: &Options,
    progress: ProgressFn,
    reduce: bool,
    split: Split,
) -> Result<(TcpModel, Report<Action>), trc_properties::UnknownProperty> {
    let specs = trc_properties::select(ids)?;
    let model = model(cfg, profile, ids, reduce)?;
    let hooks = || trc_engine::Classified {
        hooks: crate::state_hooks!(),
        classify: trc_properties::signature::classifier(&specs),
    };
    let report = match split {
        Split::One => check_with(&model, opts, progress, hooks()),
        Split::Mpi(comm) => {
            trc_engine::dist::check_distributed(&model, opts, progress, hooks(), comm)
        }
        Split::Threads(n) => trc_engine::dist::local::check(&model, opts, progress, n, hooks),
    };
    Ok((model, report))
}

/// The signatures each property's violations have (property id → signatures).
pub fn signatures(report: &Report<Action>) -> BTreeMap<String, BTreeSet<String>> {
    report
        .properties
        .iter()
        .map(|p| {
            let id = crate::property_id(p.name).to_string();
            let set = p
                .classes
                .iter()
                .map(|c| trc_properties::signature::describe(&id, c.class))
                .collect();
            (id, set)
        })
        .collect()
}
