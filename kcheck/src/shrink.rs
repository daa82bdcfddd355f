//! Shrinking a property violated on a kernel: delta debugging ([`trc_diff::shrink::ddmin`]) over the
//! model action list a scenario was exported from, with the test "the kernel run of the exported
//! candidate still violates the same property (the same monitor) and the run is unambiguous"
//! (no timing error at or before the violating line). Only scenarios that come from an action
//! list can shrink: `random:N` walks, `coverage` scenarios and the engine's counterexamples; the corpus scripts are
//! hand-written or exported long ago and are reported as they are.

use super::monitor::{Monitor, Outcome};
use super::{Case, KTrace};
use serde::{Deserialize, Serialize};
use stateright::Model as _;
use std::path::{Path, PathBuf};
use trc_diff::generate::{normalize, GenOptions};
use trc_kernel::target::ScriptRun;
use trc_kernel::RunReport;
use trc_model::decision::{Branch, DecisionCounts};
use trc_model::model::{Action, TcpModel};
use trc_model::{Config, Profile};
use trc_pkt::report::{LineKind, Status};

/// Why a violation was not shrunk, or a candidate list has no script.
#[derive(Debug, thiserror::Error)]
pub enum ShrinkError {
    /// A file or directory of the shrink.
    #[error(transparent)]
    Io(#[from] trc_files::PathError),
    /// The candidate list does not export (the exporter refuses it).
    #[error(transparent)]
    Export(#[from] trc_trace::export::ExportError),
    /// The candidate counterexample has model-only events.
    #[error("not kernel-runnable")]
    NotKernelRunnable,
    /// The candidate's script is not a case.
    #[error(transparent)]
    Case(#[from] super::PlanError),
    /// None of the property's violating scenarios comes from an action list.
    #[error("{NO_ACTION_LIST}")]
    NoActionList,
}

/// How a scenario's action list is exported back into a script.
#[derive(Clone, Debug)]
pub enum How {
    /// A `trc diff` walk (`export_walk` with the generator's spacing; `normalize` keeps what
    /// the model allows and what exports).
    Walk { gen: GenOptions, name: String },
    /// An engine counterexample (`export`, as `trc check --out`), from initial state `init`.
    Counterexample {
        init: usize,
        id: String,
        name: String,
        statement: String,
    },
}

/// The model action list a scenario was exported from.
#[derive(Clone, Debug)]
pub struct ActionList {
    pub cfg: Config,
    pub profile: Profile,
    pub actions: Vec<Action>,
    pub how: How,
}

impl ActionList {
    /// The initial state the list starts from (a walk's is its configuration's only one).
    fn init(&self) -> usize {
        match self.how {
            How::Walk { .. } => 0,
            How::Counterexample { init, .. } => init,
        }
    }

    fn model(&self) -> TcpModel {
        let m = TcpModel::new(self.cfg.clone(), self.profile.clone());
        match self.how {
            How::Walk { .. } => m,
            How::Counterexample { .. } => {
                m.with_properties(trc_properties::properties(&trc_properties::catalogue()))
            }
        }
    }

    /// The script of `actions`, or why it does not export (or could not run on a kernel).
    pub fn export(&self, actions: &[Action]) -> Result<String, ShrinkError> {
        let m = self.model();
        match &self.how {
            How::Walk { gen, name } => {
                trc_trace::export::export_walk(&m, 0, actions, name, gen.spacing())
                    .map(|x| x.pkt)
                    .map_err(ShrinkError::from)
            }
            How::Counterexample {
                init,
                id,
                name,
                statement,
            } => {
                let x = trc_trace::export::export(
                    &m,
                    *init,
                    actions,
                    trc_trace::export::Subject {
                        id,
                        name,
                        statement,
                    },
                    trc_trace::export::COUNTEREXAMPLE_GAP_MS,
                )?;
                if !x.trace.kernel_runnable {
                    return Err(ShrinkError::NotKernelRunnable);
                }
                Ok(x.pkt)
            }
        }
    }

    /// The signature of every catalogue property the model violates along the list (at its
    /// first violating state, [`trc_properties::signature`]), in catalogue order: what the
    /// scenario stands for on the model, so that a kernel violation in it can be attributed to
    /// an accepted finding.
    pub fn signatures(&self) -> Vec<String> {
        let m = TcpModel::new(self.cfg.clone(), self.profile.clone());
        let Some(mut s) = m.init_states().into_iter().nth(self.init()) else {
            return Vec::new();
        };
        let specs = trc_properties::catalogue();
        let mut found: Vec<Option<String>> = vec![None; specs.len()];
        for a in &self.actions {
            match m.next_state(&s, *a) {
                Some(n) => s = n,
                None => break,
            }
            for (i, sp) in specs.iter().enumerate() {
                if found[i].is_none() && !(sp.holds)(&m, &s) {
                    found[i] = Some(trc_properties::signature::describe(
                        sp.id,
                        trc_properties::signature::class(sp.id, &m, &s),
                    ));
                }
            }
        }
        found.into_iter().flatten().collect()
    }

    /// The decision branches the list's steps go through on its profile (each once, in
    /// [`Branch::ALL`] order), up to the first step the model does not allow.
    pub fn branches(&self) -> Vec<Branch> {
        let m = self.model();
        let Some(mut s) = m.init_states().into_iter().nth(self.init()) else {
            return Vec::new();
        };
        let mut seen = std::collections::BTreeSet::new();
        for a in &self.actions {
            let sink = DecisionCounts::default();
            m.record_decisions(&s, *a, &sink);
            seen.extend(Branch::ALL.iter().copied().filter(|b| sink.get(*b) > 0));
            match m.next_state(&s, *a) {
                Some(n) => s = n,
                None => break,
            }
        }
        Branch::ALL
            .iter()
            .copied()
            .filter(|b| seen.contains(b))
            .collect()
    }

    /// `actions` reduced to what the model allows in order, cut before the first step that does
    /// not export: the list a candidate really stands for.
    pub fn normalize(&self, actions: &[Action]) -> Vec<Action> {
        let m = self.model();
        match &self.how {
            How::Walk { gen, .. } => normalize(&m, actions, gen),
            How::Counterexample { init, .. } => {
                let Some(mut s) = m.init_states().into_iter().nth(*init) else {
                    return Vec::new();
                };
                let mut out = Vec::new();
                for a in actions {
                    let mut en = Vec::new();
                    m.actions(&s, &mut en);
                    if !en.contains(a) {
                        continue;
                    }
                    if let Some(n) = m.next_state(&s, *a) {
                        s = n;
                        out.push(*a);
                    }
                }
                while !out.is_empty() && self.export(&out).is_err() {
                    out.pop();
                }
                out
            }
        }
    }
}

/// A property's shrunk violation, as the report carries it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShrinkResult {
    /// The scenario shrunk (the shortest violating one that has an action list).
    pub scenario: String,
    /// Model events (actions) of its walk before and after.
    pub events_before: usize,
    pub events_after: usize,
    /// The shrunk script (written atomically), its violating line and why.
    pub path: String,
    pub line: u32,
    pub detail: String,
    /// Kernel runs used, of the budget.
    pub kernel_runs: usize,
    pub budget: usize,
    /// The budget ran out before ddmin finished.
    pub budget_exhausted: bool,
}

/// Whether `run` of `case` violates `mon` unambiguously (no setup failure, no timing error at or
/// before the violating line, not after the kernel left the script): the violating line and why.
pub fn still_violates(case: &Case, run: &RunReport, mon: &Monitor) -> Option<(u32, String)> {
    if run
        .script
        .lines
        .iter()
        .any(|l| l.kind == LineKind::Shell && l.status == Status::Fail)
    {
        return None;
    }
    let k = KTrace::from_report(run);
    let Outcome::Violated { line, detail } = (mon.check)(&k, &case.ghost) else {
        return None;
    };
    let timing = run
        .script
        .lines
        .iter()
        .any(|l| l.line <= line && l.failed_on_timing());
    // As the suite judges it: not after the kernel's first wrong send.
    let left = crate::left_the_script(&run.script.lines).is_some_and(|l| l.line < line);
    (!timing && !left).then_some((line, detail))
}

/// A batch of cases run on a kernel: a report (or why not) for each case, in order.
pub type RunCases<'a> = dyn FnMut(&[Case]) -> Vec<ScriptRun> + 'a;

/// Runs scripts on the kernel: reports for a prefix of the cases given (at least the first).
/// `batched`: it runs all the cases it is given together (a VM boot), so ddmin hands it a round's
/// candidates at once; otherwise one at a time.
pub struct Runner<'a> {
    pub run: &'a mut RunCases<'a>,
    pub batched: bool,
}

/// Shrinks `case`'s violation of `mon` over `list` within `budget` kernel runs. Candidates are
/// written under `work`; the shrunk script goes to `out_dir/ID-NAME.pkt` (atomically, with the
/// `defaults.sh` it names). `first` is the violation of the run as the suite ran it.
#[allow(clippy::too_many_arguments)]
pub fn shrink_violation(
    case: &Case,
    list: &ActionList,
    mon: &Monitor,
    first: (u32, String),
    budget: usize,
    work: &Path,
    out_dir: &Path,
    runner: &mut Runner,
    log: &mut dyn FnMut(&str),
) -> Result<ShrinkResult, ShrinkError> {
    std::fs::create_dir_all(work).map_err(trc_files::at(work))?;
    trc_trace::write_defaults(work).map_err(trc_files::at(work))?;
    let stem = trc_trace::file_safe(&format!(
        "{}-{}",
        mon.id,
        case.name.trim_end_matches(".pkt").replace('/', "-")
    ));
    let mut n = 0usize;
    let mut runs = 0usize;
    let mut make = |actions: &[Action]| -> Result<Case, ShrinkError> {
        n += 1;
        let pkt = list.export(actions)?;
        let f = work.join(format!("{stem}-{n}.pkt"));
        trc_files::write_atomic(&f, pkt.as_bytes()).map_err(trc_files::at(&f))?;
        Ok(Case::from_file(
            &f,
            format!("{}~shrink{n}", case.name),
            format!("shrinking {} for {}", case.name, mon.id),
        )?)
    };
    let batched = runner.batched;
    let mut test = |batch: &[Vec<Action>]| -> Vec<Option<(u32, String, PathBuf)>> {
        let batch = if batched {
            batch
        } else {
            &batch[..1.min(batch.len())]
        };
        let cases: Vec<Option<Case>> = batch.iter().map(|a| make(a).ok()).collect();
        let runnable: Vec<Case> = cases.iter().flatten().cloned().collect();
        let reports = if runnable.is_empty() {
            Vec::new()
        } else {
            (runner.run)(&runnable)
        };
        runs += reports.len();
        let mut it = reports.iter();
        let mut out = Vec::new();
        for c in &cases {
            match c {
                None => out.push(None),
                Some(c) => match it.next() {
                    Some(Ok(r)) => {
                        out.push(still_violates(c, r, mon).map(|(l, d)| (l, d, c.path.clone())))
                    }
                    Some(Err(_)) => out.push(None),
                    None => break,
                },
            }
        }
        out
    };
    let norm = |a: &[Action]| list.normalize(a);
    let start = (first.0, first.1, case.path.clone());
    let s = trc_diff::shrink::ddmin(list.actions.clone(), start, budget, &norm, &mut test, log);
    let (line, detail, from) = s.result;
    let text = std::fs::read_to_string(&from).map_err(trc_files::at(&from))?;
    trc_trace::write_defaults(out_dir).map_err(trc_files::at(out_dir))?;
    let dest = out_dir.join(format!("{stem}.pkt"));
    trc_files::write_atomic(&dest, text.as_bytes()).map_err(trc_files::at(&dest))?;
    Ok(ShrinkResult {
        scenario: case.name.clone(),
        events_before: list.actions.len(),
        events_after: s.list.len(),
        path: dest.display().to_string(),
        line,
        detail,
        kernel_runs: runs,
        budget,
        budget_exhausted: s.budget_exhausted,
    })
}

/// Why a violated property cannot shrink when none of its violating scenarios comes from an
/// action list (the report's `shrink_note`).
pub const NO_ACTION_LIST: &str = "not shrunk: no violating scenario comes from a model action list (corpus scripts are reported as they are)";

/// For each violated property of `rep` none of whose violating scenarios has an action list
/// (`CaseResult::events`), the note [`NO_ACTION_LIST`]; `otherwise` for the other violated
/// ones, if given (a merged report of shards: nothing was shrunk). From the case results alone.
pub fn note_unshrunk(rep: &mut super::CheckReport, otherwise: Option<&str>) {
    for p in rep
        .properties
        .iter_mut()
        .filter(|p| p.verdict == super::Verdict::Violated && p.shrunk.is_none())
    {
        let shrinkable = rep.cases.iter().any(|r| {
            r.events.is_some()
                && p.violated.contains(&r.name)
                && matches!(r.properties.get(&p.id), Some(Outcome::Violated { .. }))
        });
        p.shrink_note = if !shrinkable {
            Some(NO_ACTION_LIST.into())
        } else {
            otherwise.map(str::to_string)
        };
    }
}

/// A violation to shrink: the case's index, and the violation (the script line, the monitor's
/// detail).
pub type Target = (usize, (u32, String));

/// What to shrink for each violated property of `rep` (whose cases are `cases`, in order): the
/// shortest case violating it outside the baseline that has an action list (fewest inbound segments, the earliest at
/// equal size), with its violation; or why none can shrink.
pub fn targets(
    rep: &super::CheckReport,
    cases: &[Case],
) -> Vec<(usize, Result<Target, ShrinkError>)> {
    let mut out = Vec::new();
    for (pi, p) in rep.properties.iter().enumerate() {
        if p.verdict != super::Verdict::Violated {
            continue;
        }
        let mut best: Option<(usize, usize, (u32, String))> = None;
        for (ci, r) in rep.cases.iter().enumerate() {
            let Some(Outcome::Violated { line, detail }) = r.properties.get(&p.id) else {
                continue;
            };
            // Only violations outside the baseline: an accepted finding needs no shrinking.
            if !p.violated.contains(&r.name)
                || cases
                    .get(ci)
                    .is_none_or(|c| c.actions.is_none() || c.name != r.name)
            {
                continue;
            }
            if best.as_ref().is_none_or(|b| r.inbound < b.0) {
                best = Some((r.inbound, ci, (*line, detail.clone())));
            }
        }
        out.push((
            pi,
            best.map(|b| (b.1, b.2)).ok_or(ShrinkError::NoActionList),
        ));
    }
    out
}

/// Shrinks every violated property of `rep` ([`targets`], [`shrink_violation`] with `budget`
/// kernel runs per property) and records the result or why not in its summary.
#[allow(clippy::too_many_arguments)]
pub fn shrink_report(
    rep: &mut super::CheckReport,
    cases: &[Case],
    mons: &[Monitor],
    budget: usize,
    work: &Path,
    out_dir: &Path,
    runner: &mut Runner,
    log: &mut dyn FnMut(&str),
) {
    for (pi, t) in targets(rep, cases) {
        let id = rep.properties[pi].id.clone();
        let Some(mon) = mons.iter().find(|m| m.id == id) else {
            continue;
        };
        match t {
            Err(note) => rep.properties[pi].shrink_note = Some(note.to_string()),
            Ok((ci, first)) => {
                let c = &cases[ci];
                let list = c
                    .actions
                    .as_ref()
                    .expect("targets keeps cases with an action list");
                log(&format!(
                    "shrinking {} for {id}: {} events, up to {budget} kernel runs",
                    c.name,
                    list.actions.len()
                ));
                match shrink_violation(
                    c,
                    list,
                    mon,
                    first,
                    budget,
                    &work.join(&id),
                    out_dir,
                    runner,
                    log,
                ) {
                    Ok(s) => {
                        log(&format!(
                            "{id}: {} -> {} events in {} kernel runs: {}",
                            s.events_before, s.events_after, s.kernel_runs, s.path
                        ));
                        rep.properties[pi].shrunk = Some(s);
                    }
                    Err(e) => rep.properties[pi].shrink_note = Some(format!("not shrunk: {e}")),
                }
            }
        }
    }
}
