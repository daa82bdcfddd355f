//! `--shard I/N` and `trc merge`: one run's work list split across N processes (a CI matrix, a
//! Slurm array, GNU parallel) and the shards combined into the report the one run would have
//! printed (docs/reference/shards.md).
//!
//! Every sharded command has a *work list* in a canonical order (`trc check`: bounds files ×
//! SACK modes × property groups; `trc matrix`: profiles × SACK modes; `trc diff` and `trc
//! kernel check`: scenarios). Unit `k` belongs to shard `k mod N + 1`, so the N shards do each
//! unit exactly once whatever N is. A shard is a [`ShardFile`]: a header, `args` (everything the
//! merge needs to know about the run: the profile, the bounds, the property selection; the
//! same in every shard), its units and an optional report.
//!
//! Why the merge is the one run's answer: the two SACK modes start from different initial
//! states and `sack_ok` is part of every state, so their state spaces are disjoint and one BFS
//! over both is the union of two (states and transitions add up, depths take the maximum). The
//! one run's shortest counterexample is the shortest of the two; at equal length the one run
//! finds the SACK one first (its initial state comes first and BFS order keeps the order of the
//! initial states at every level), which is the unit order the merge breaks ties with.

use crate::export::Exports;
use crate::report::{
    accepted_why, counterexample, outcome, Against, Base, CheckReport, PropResult, SigResult,
    SigStatus, Step,
};
use crate::run::Run;
use crate::units::{check_work_list, CheckUnit};
use crate::{CheckRequest, Error, MatrixRow, Observer};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use trc_engine::{Options, Report, SpillReport, StopReason, Verdict};
use trc_model::model::{Action, TcpModel};
use trc_model::{Config, Profile};
use trc_properties::baseline::Accepted;

/// `--shard I/N`: shard `index` (1-based) of `count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl Shard {
    /// Whether unit `k` of the work list is this shard's (round robin).
    pub fn owns(&self, k: usize) -> bool {
        k % self.count == self.index - 1
    }
}

/// Why a `--shard` value is not `I/N` with 1 <= I <= N <= 100000 (`text`: the value).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadShard {
    #[error("`{text}` is not I/N (e.g. 2/8)")]
    NotIOfN { text: String },
    #[error("`{index}` in `{text}` is not a shard number")]
    Index { index: String, text: String },
    #[error("`{count}` in `{text}` is not a number of shards")]
    Count { count: String, text: String },
    #[error("`{text}`: the number of shards must be 1 to 100000")]
    CountRange { text: String },
    #[error("`{text}`: the shard must be 1 to {count}")]
    IndexRange { text: String, count: usize },
}

/// Parses `I/N` with 1 <= I <= N <= 100000.
pub fn parse_shard(s: &str) -> Result<Shard, BadShard> {
    let text = s.to_string();
    let (i, n) = s
        .split_once('/')
        .ok_or_else(|| BadShard::NotIOfN { text: text.clone() })?;
    let index: usize = i.trim().parse().map_err(|_| BadShard::Index {
        index: i.to_string(),
        text: text.clone(),
    })?;
    let count: usize = n.trim().parse().map_err(|_| BadShard::Count {
        count: n.to_string(),
        text: text.clone(),
    })?;
    if count == 0 || count > 100_000 {
        return Err(BadShard::CountRange { text });
    }
    if index == 0 || index > count {
        return Err(BadShard::IndexRange { text, count });
    }
    Ok(Shard { index, count })
}

/// The header of a shard's output.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Header {
    pub version: u32,
    /// `check`, `matrix`, `diff` or `kernel-check`.
    pub command: String,
    pub index: usize,
    pub count: usize,
    /// Units in the whole work list.
    pub units: usize,
}

/// A shard's output: `{"trc_shard": header, "args", "units": [...], "report"?}`.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct ShardFile<A, U> {
    pub trc_shard: Header,
    pub args: A,
    pub units: Vec<U>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub report: Option<Value>,
}

impl<A: Serialize, U: Serialize> ShardFile<A, U> {
    /// A shard's output of `command` with `units` units in all.
    pub fn new(command: &str, shard: Shard, units: usize, args: A, done: Vec<U>) -> Self {
        ShardFile {
            trc_shard: Header {
                version: 1,
                command: command.to_string(),
                index: shard.index,
                count: shard.count,
                units,
            },
            args,
            units: done,
            report: None,
        }
    }

    /// The JSON it prints (keys sorted at every level).
    pub fn json(&self) -> Value {
        serde_json::to_value(self).expect("a shard serialises")
    }
}

/// A shard file as read: its name, header and JSON.
pub struct Loaded {
    pub name: String,
    pub header: Header,
    pub v: Value,
}

impl Loaded {
    /// The file as the command's typed shard.
    pub fn typed<A: DeserializeOwned, U: DeserializeOwned>(
        &self,
    ) -> Result<ShardFile<A, U>, Error> {
        serde_json::from_value(self.v.clone())
            .map_err(|e| Error::Input(format!("{}: {e} (a shard of another trc?)", self.name)))
    }

    /// The unit indices it holds.
    fn unit_indices(&self) -> Result<Vec<usize>, Error> {
        let units = self.v["units"]
            .as_array()
            .ok_or_else(|| Error::Input(format!("{}: no units", self.name)))?;
        units
            .iter()
            .map(|u| {
                u["unit"]
                    .as_u64()
                    .map(|k| k as usize)
                    .filter(|k| *k < self.header.units)
                    .ok_or_else(|| {
                        Error::Input(format!("{}: a unit without a valid index", self.name))
                    })
            })
            .collect()
    }
}

fn read_shard(p: &Path) -> Result<Loaded, Error> {
    let src = trc_files::read_source(p)?;
    let v: Value = serde_json::from_str(&src)
        .map_err(|e| format!("{}:{}: not JSON: {e}", p.display(), e.line()))?;
    let h = &v["trc_shard"];
    for k in ["index", "count", "units"] {
        if !h[k].is_u64() {
            return Err(Error::Input(format!(
                "{}: not a shard output (no trc_shard.{k}; run the command with --shard I/N)",
                p.display()
            )));
        }
    }
    if h["version"] != 1 {
        return Err(Error::Input(format!(
            "{}: not a shard output of this trc (trc_shard.version is not 1)",
            p.display()
        )));
    }
    if !h["command"].is_string() {
        return Err(Error::Input(format!(
            "{}: no trc_shard.command",
            p.display()
        )));
    }
    let header: Header = serde_json::from_value(h.clone())
        .map_err(|e| format!("{}: trc_shard: {e}", p.display()))?;
    Ok(Loaded {
        name: p.display().to_string(),
        header,
        v,
    })
}

/// The shards agree: one command, one N, the same arguments.
fn same_run(first: &Loaded, s: &Loaded) -> Result<(), Error> {
    let (h, f) = (&s.header, &first.header);
    if h.command != f.command {
        return Err(Error::Input(format!(
            "{} is a shard of `trc {}`, {} of `trc {}`",
            s.name,
            h.command.replace('-', " "),
            first.name,
            f.command.replace('-', " ")
        )));
    }
    if h.count != f.count {
        return Err(Error::Input(format!(
            "{} is shard {}/{}, {} is {}/{}: every shard must come from the same split",
            s.name, h.index, h.count, first.name, f.index, f.count
        )));
    }
    if h.units != f.units || s.v["args"] != first.v["args"] {
        return Err(Error::Input(format!(
            "{} and {} come from different runs (profile, bounds or selection differ)",
            s.name, first.name
        )));
    }
    Ok(())
}

/// Every shard 1..=N exactly once.
fn every_shard_once(shards: &[Loaded], n: usize) -> Result<(), Error> {
    let mut seen = vec![None::<&str>; n + 1];
    for s in shards {
        if let Some(other) = seen[s.header.index] {
            return Err(Error::Input(format!(
                "shard {}/{n} given twice ({other} and {})",
                s.header.index, s.name
            )));
        }
        seen[s.header.index] = Some(&s.name);
    }
    let missing: Vec<String> = (1..=n)
        .filter(|i| seen[*i].is_none())
        .map(|i| format!("{i}/{n}"))
        .collect();
    if !missing.is_empty() {
        return Err(Error::Input(format!(
            "missing shard{} {}: the merge of a subset is not the run's result",
            if missing.len() > 1 { "s" } else { "" },
            missing.join(", ")
        )));
    }
    Ok(())
}

/// Every unit exactly once and in the shard that owns it.
fn every_unit_once(shards: &[Loaded], n: usize, total: usize) -> Result<(), Error> {
    let mut unit_seen = vec![false; total];
    for s in shards {
        let sh = Shard {
            index: s.header.index,
            count: n,
        };
        for k in s.unit_indices()? {
            if unit_seen[k] || !sh.owns(k) {
                return Err(Error::Input(format!(
                    "{}: unit {k} is not shard {}/{n}'s or appears twice",
                    s.name, s.header.index
                )));
            }
            unit_seen[k] = true;
        }
    }
    if let Some(k) = unit_seen.iter().position(|x| !x) {
        return Err(Error::Input(format!(
            "unit {k} of {total} is in no shard (a shard's output was cut short?)"
        )));
    }
    Ok(())
}

/// Reads and validates the shards: one command, one N, the same arguments, every shard 1..=N
/// exactly once, every unit exactly once and in the shard that owns it. In shard order.
pub fn load(files: &[PathBuf]) -> Result<Vec<Loaded>, Error> {
    let mut shards: Vec<Loaded> = files
        .iter()
        .map(|p| read_shard(p))
        .collect::<Result<_, _>>()?;
    let first = shards.first().ok_or("no shard given")?;
    for s in &shards[1..] {
        same_run(first, s)?;
    }
    let (n, total) = (first.header.count, first.header.units);
    every_shard_once(&shards, n)?;
    every_unit_once(&shards, n, total)?;
    shards.sort_by_key(|s| s.header.index);
    Ok(shards)
}

/// Every unit of every shard, in work-list order.
pub fn units_in_order<A: DeserializeOwned, U: DeserializeOwned + HasUnit>(
    shards: &[Loaded],
) -> Result<(A, Vec<U>), Error> {
    let mut args = None;
    let mut all = Vec::new();
    for s in shards {
        let f: ShardFile<A, U> = s.typed()?;
        args.get_or_insert(f.args);
        all.extend(f.units);
    }
    all.sort_by_key(|u| u.unit());
    Ok((args.ok_or("no shard given")?, all))
}

/// A unit's index in the work list.
pub trait HasUnit {
    fn unit(&self) -> usize;
}

// ---- trc check ----

/// What a `trc check` shard says about the run.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct CheckArgs {
    pub profile: Profile,
    pub configs: Vec<Config>,
    pub properties: Vec<String>,
    pub reduce: bool,
    pub against: Option<String>,
    /// The units' labels.
    pub units: Vec<String>,
}

impl CheckArgs {
    /// What `req` asks, with its property ids resolved and its units' labels in order.
    pub fn new(req: &CheckRequest, properties: Vec<String>, units: Vec<String>) -> CheckArgs {
        CheckArgs {
            profile: req.profile.clone(),
            configs: req.configs.clone(),
            properties,
            reduce: req.reduce,
            against: req.against.as_ref().map(|p| p.name.clone()),
            units,
        }
    }
}

/// A `trc check` unit's result.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct CheckUnitOut {
    pub unit: usize,
    pub label: String,
    pub config: usize,
    pub run: CheckReport,
    pub detail: UnitDetail,
}

impl CheckUnitOut {
    /// Unit `k` (`u` of the work list) and its run: the report, and the detail `trc merge`
    /// needs to judge signatures as the one run does.
    pub fn new(k: usize, u: &CheckUnit, run: Run) -> CheckUnitOut {
        CheckUnitOut {
            unit: k,
            label: u.label.clone(),
            config: u.config,
            detail: UnitDetail::new(&run.model, &run.engine, run.base.as_ref()),
            run: run.report,
        }
    }
}

impl HasUnit for CheckUnitOut {
    fn unit(&self) -> usize {
        self.unit
    }
}

/// A `trc check` shard's file.
pub type CheckShard = ShardFile<CheckArgs, CheckUnitOut>;

/// `trc check --shard`: the shard's units explored and exported (each into `out/<its label>`),
/// as the file `trc merge` reads, with how many scripts the form could not express.
pub fn run_check(
    req: &CheckRequest,
    shard: Shard,
    exports: &Exports,
    obs: &dyn Observer,
) -> Result<(CheckShard, usize), Error> {
    let ids = req.property_ids()?;
    let units = check_work_list(&req.configs, &ids, req.reduce);
    let mut done = Vec::new();
    let mut unsupported = 0usize;
    crate::run::run_units(req, &|k| shard.owns(k), obs, &mut |k, u, run| {
        let dir = exports.out.as_ref().map(|d| d.join(&u.label));
        unsupported += exports.export(&run, dir.as_deref(), obs)?;
        done.push(CheckUnitOut::new(k, u, run));
        Ok(())
    })?;
    let args = CheckArgs::new(req, ids, units.iter().map(|u| u.label.clone()).collect());
    let file = ShardFile::new("check", shard, units.len(), args, done);
    Ok((file, unsupported))
}

/// What a shard's unit carries beside its report so that `trc merge` judges signatures as the
/// one run does: every signature's shortest counterexample (the report shows one per property,
/// which after the merge may be another unit's or another signature's) and the comparison
/// profile's signatures on this unit (a signature is "also on" the base if it occurs there in
/// any unit).
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct UnitDetail {
    /// Property id → signature → its shortest counterexample.
    pub counterexamples: BTreeMap<String, BTreeMap<String, Vec<Step>>>,
    pub base: Option<Base>,
}

impl UnitDetail {
    /// The detail of one exploration.
    pub fn new(model: &TcpModel, report: &Report<Action>, base: Option<&Base>) -> UnitDetail {
        let counterexamples = report
            .properties
            .iter()
            .map(|p| {
                let id = crate::property_id(p.name).to_string();
                let m = p
                    .classes
                    .iter()
                    .map(|c| {
                        (
                            trc_properties::signature::describe(&id, c.class),
                            counterexample(model, &c.path),
                        )
                    })
                    .collect();
                (id, m)
            })
            .collect();
        UnitDetail {
            counterexamples,
            base: base.cloned(),
        }
    }
}

/// The stop reason of a union of explorations: the strongest of theirs.
fn merged_stop_reason(reasons: impl Iterator<Item = StopReason>) -> StopReason {
    let reasons: Vec<StopReason> = reasons.collect();
    [
        StopReason::MemoryBudget,
        StopReason::MaxStates,
        StopReason::FailFast,
        StopReason::MaxDepth,
    ]
    .into_iter()
    .find(|r| reasons.contains(r))
    .unwrap_or(StopReason::Complete)
}

/// The units' frontier spills (`--max-memory`) as one: bytes summed, the largest in-memory
/// peak, the first directory and error; none when no unit spilled.
fn merged_spill<'a>(spills: impl Iterator<Item = &'a SpillReport>) -> Option<SpillReport> {
    let spills: Vec<&SpillReport> = spills.collect();
    let first = spills.first()?;
    Some(SpillReport {
        dir: first.dir.clone(),
        bytes_written: spills.iter().map(|s| s.bytes_written).sum(),
        bytes_read: spills.iter().map(|s| s.bytes_read).sum(),
        file_bytes_written: spills.iter().map(|s| s.file_bytes_written).sum(),
        file_bytes_read: spills.iter().map(|s| s.file_bytes_read).sum(),
        peak_block_bytes: spills.iter().map(|s| s.peak_block_bytes).max().unwrap_or(0),
        error: spills.iter().find_map(|s| s.error.clone()),
    })
}

/// The property result of a union of explorations without classified violations: a violation
/// (or example) with the shortest path, the earliest unit at equal length; otherwise the first
/// unit's verdict.
fn merged_property(cands: &[&PropResult]) -> PropResult {
    let len = |c: &PropResult| c.counterexample.as_ref().map_or(usize::MAX, Vec::len);
    for kind in [Verdict::Violated, Verdict::ExampleFound] {
        let mut best: Option<&PropResult> = None;
        for c in cands.iter().filter(|c| c.verdict == kind) {
            if best.is_none_or(|b| len(c) < len(b)) {
                best = Some(c);
            }
        }
        if let Some(b) = best {
            return b.clone();
        }
    }
    cands[0].clone()
}

/// A signature met in several units.
struct Sig<'a> {
    accepted: bool,
    finding: Option<String>,
    states: u64,
    /// (events, unit, position in the unit's list) of its shortest occurrence.
    key: (usize, usize, usize),
    counterexample: &'a Vec<Step>,
}

/// A property's result over several units from its violations' signatures, as the one run
/// classifies them ([`crate::report::results`]): a signature's count is the sum over the units
/// (their state spaces are disjoint), its shortest counterexample the shortest of theirs, the
/// earliest unit at equal length; signatures are in the order of their shortest
/// counterexamples, at equal length the earlier unit's first, then each unit's own order (the
/// one run's canonical order: by depth, and within a level the SACK half first). A signature
/// accepted by the baseline stays so; any other is "also on" the comparison profile if it
/// occurs there in any unit, else new. `None` when no unit classified a violation.
fn merged_classified(
    id: &str,
    cands: &[(&PropResult, &UnitDetail)],
    base: Option<(&str, &BTreeSet<&str>)>,
) -> Result<Option<PropResult>, Error> {
    let mut sigs: BTreeMap<&str, Sig> = BTreeMap::new();
    for (ui, (p, d)) in cands.iter().enumerate() {
        for (pos, s) in p.signatures.iter().enumerate() {
            let name = s.signature.as_str();
            let ce = d.counterexamples.get(id).and_then(|m| m.get(name)).ok_or_else(|| {
                Error::Input(format!("property {id}: signature {name} has no counterexample in its shard (a shard of another trc?)"))
            })?;
            let key = (s.events, ui, pos);
            let e = sigs.entry(name).or_insert(Sig {
                accepted: s.status == SigStatus::Accepted,
                finding: s.finding.clone(),
                states: 0,
                key,
                counterexample: ce,
            });
            e.states += s.states;
            if key < e.key {
                e.key = key;
                e.counterexample = ce;
            }
        }
    }
    if sigs.is_empty() {
        return Ok(None);
    }
    let mut order: Vec<(&str, Sig)> = sigs.into_iter().collect();
    order.sort_by_key(|(_, s)| s.key);
    let on_base = |name: &str| base.is_some_and(|(_, b)| b.contains(name));
    let signatures: Vec<SigResult> = order
        .iter()
        .map(|(name, s)| SigResult {
            signature: name.to_string(),
            status: if s.accepted {
                SigStatus::Accepted
            } else if on_base(name) {
                SigStatus::AlsoOnBase
            } else {
                SigStatus::New
            },
            finding: s.finding.clone(),
            states: s.states,
            events: s.key.0,
            also_on_base: on_base(name),
        })
        .collect();
    let failing = signatures.iter().position(|s| s.status == SigStatus::New);
    let shown = failing.unwrap_or(0);
    Ok(Some(PropResult {
        id: id.to_string(),
        name: cands[0].0.name.clone(),
        verdict: Verdict::Violated,
        accepted: failing
            .is_none()
            .then(|| accepted_why(&signatures, base.map(|(b, _)| b))),
        counterexample_signature: Some(signatures[shown].signature.clone()),
        counterexample: Some(order[shown].1.counterexample.clone()),
        path: None,
        signatures,
    }))
}

/// One property's result over the units of a bounds file.
fn merged_result(
    id: &str,
    units: &[&CheckUnitOut],
    against: Option<&str>,
) -> Result<PropResult, Error> {
    // (property result, its unit's detail), in unit order.
    let cands: Vec<(&PropResult, &UnitDetail)> = units
        .iter()
        .flat_map(|u| {
            u.run
                .properties
                .iter()
                .filter(|p| p.id == id)
                .map(move |p| (p, &u.detail))
        })
        .collect();
    if cands.is_empty() {
        return Err(Error::Input(format!("property {id} is in no unit")));
    }
    let base_sigs: BTreeSet<&str> = units
        .iter()
        .filter_map(|u| u.detail.base.as_ref())
        .filter_map(|b| b.signatures.get(id))
        .flatten()
        .map(String::as_str)
        .collect();
    Ok(
        match merged_classified(id, &cands, against.map(|a| (a, &base_sigs)))? {
            Some(p) => p,
            None => merged_property(&cands.iter().map(|(p, _)| *p).collect::<Vec<_>>()),
        },
    )
}

impl CheckReport {
    /// The report of one bounds file from its units (`trc merge`): figures summed (states,
    /// transitions, seconds, spills) or maximised (depth, peak memory), the strongest stop
    /// reason, and every property judged over all units ([`merged_classified`]).
    pub fn merge(
        args: &CheckArgs,
        config: usize,
        units: &[&CheckUnitOut],
    ) -> Result<CheckReport, Error> {
        let runs: Vec<&CheckReport> = units.iter().map(|u| &u.run).collect();
        if runs.is_empty() {
            return Err(Error::Input(format!(
                "bounds file {config} has no unit in the shards"
            )));
        }
        let incomplete = runs.iter().any(|r| r.incomplete);
        let against = args.against.as_deref();
        let properties = args
            .properties
            .iter()
            .map(|id| merged_result(id, units, against))
            .collect::<Result<Vec<_>, _>>()?;
        let base_incomplete = units
            .iter()
            .any(|u| u.detail.base.as_ref().is_some_and(|b| b.incomplete));
        Ok(CheckReport {
            result: outcome(&properties, incomplete),
            profile: args.profile.clone(),
            against: against.map(|a| Against {
                profile: a.to_string(),
                incomplete: base_incomplete,
            }),
            config: args.configs[config].clone(),
            unique_states: runs.iter().map(|r| r.unique_states).sum(),
            transitions: runs.iter().map(|r| r.transitions).sum(),
            max_depth: runs.iter().map(|r| r.max_depth).max().unwrap_or(0),
            seconds: runs.iter().map(|r| r.seconds).sum(),
            complete: runs.iter().all(|r| r.complete),
            incomplete,
            stop_reason: merged_stop_reason(runs.iter().map(|r| r.stop_reason)),
            peak_memory_bytes: runs.iter().map(|r| r.peak_memory_bytes).max().unwrap_or(0),
            spill: merged_spill(runs.iter().filter_map(|r| r.spill.as_ref())),
            distributed: None,
            properties,
            coverage: None,
        })
    }
}

/// `trc merge` of `trc check` shards: one report per bounds file.
pub fn merge_check(shards: &[Loaded]) -> Result<Vec<CheckReport>, Error> {
    let (args, units): (CheckArgs, Vec<CheckUnitOut>) = units_in_order(shards)?;
    (0..args.configs.len())
        .map(|ci| {
            let mine: Vec<&CheckUnitOut> = units.iter().filter(|u| u.config == ci).collect();
            CheckReport::merge(&args, ci, &mine)
        })
        .collect()
}

// ---- trc matrix ----

/// What a `trc matrix` shard says about the run.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct MatrixArgs {
    pub profiles: Vec<Profile>,
    pub config: Config,
    pub properties: Vec<String>,
    /// The units' names (`PROFILE-sack`).
    pub units: Vec<String>,
}

/// A `trc matrix` unit's row.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct MatrixUnitOut {
    pub unit: usize,
    /// Index into [`MatrixArgs::profiles`].
    pub profile: usize,
    pub row: MatrixRow,
}

impl HasUnit for MatrixUnitOut {
    fn unit(&self) -> usize {
        self.unit
    }
}

/// `trc matrix --shard`: the shard's units (profile × SACK mode within `cfg`), as the file `trc
/// merge` reads.
pub fn run_matrix(
    profiles: Vec<Profile>,
    cfg: Config,
    opts: &Options,
    baseline: &[Accepted],
    shard: Shard,
) -> ShardFile<MatrixArgs, MatrixUnitOut> {
    let units = crate::units::matrix_work_list(profiles.len(), &cfg);
    let mut done = Vec::new();
    for (k, (pi, mode)) in units.iter().enumerate().filter(|(k, _)| shard.owns(*k)) {
        let mut c = cfg.clone();
        c.sack = *mode;
        done.push(MatrixUnitOut {
            unit: k,
            profile: *pi,
            row: crate::matrix::matrix_row(&c, &profiles[*pi], opts, baseline),
        });
    }
    let names = units
        .iter()
        .map(|(p, m)| format!("{}-{}", profiles[*p].name, crate::units::sack_label(*m)));
    let args = MatrixArgs {
        units: names.collect(),
        config: cfg,
        properties: trc_properties::catalogue()
            .iter()
            .map(|s| s.id.to_string())
            .collect(),
        profiles,
    };
    let n = args.units.len();
    ShardFile::new("matrix", shard, n, args, done)
}

/// `trc merge` of `trc matrix` shards: one row per profile, its SACK halves absorbed.
pub fn merge_matrix(shards: &[Loaded]) -> Result<Vec<MatrixRow>, Error> {
    let (args, units): (MatrixArgs, Vec<MatrixUnitOut>) = units_in_order(shards)?;
    let mut rows = Vec::new();
    for (pi, p) in args.profiles.iter().enumerate() {
        let mut merged: Option<MatrixRow> = None;
        for u in units.iter().filter(|u| u.profile == pi) {
            match &mut merged {
                None => merged = Some(u.row.clone()),
                Some(m) => m.absorb(&u.row),
            }
        }
        rows.push(merged.ok_or_else(|| {
            Error::Input(format!("profile {} has no unit in the shards", p.name))
        })?);
    }
    Ok(rows)
}
