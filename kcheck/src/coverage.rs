//! `trc kernel check --suite coverage`: scenarios drawn from the exhaustive state graph that
//! together go through every decision-point branch ([`trc_model::decision::Branch`]) reachable
//! at the given bounds.
//!
//! How the suite is chosen ([`plan`]):
//! 1. **Reachable branches and their shortest paths.** One exploration of the bounds with one
//!    `sometimes` property per branch, "some event enabled in this state goes through the
//!    branch" (the event's step is re-run with a decision sink, as `trc check --coverage` does).
//!    The engine's first hit of such a property is the canonical shortest path to a state at
//!    the smallest depth that has such an event (the same whatever the thread count); that path
//!    plus the first such event, in `Model::actions` order, is a shortest path through the
//!    branch. A branch no state hits is unreachable at these bounds.
//! 2. **Kernel-runnable paths.** A path is model-only when it holds the host queue (TSQ) (the
//!    exporter's `model_only` notes; ECE-marked ACKs export with ECN negotiated): the
//!    kernel-runnable paths at these bounds are exactly the paths of the same bounds with
//!    `max_tsq = 0`. A
//!    second exploration of those bounds gives each branch's shortest kernel-runnable path; a
//!    branch reached in the first exploration and not in the second is reachable only through
//!    model-only paths.
//! 3. **Greedy set cover.** Each candidate path (one per kernel-runnable branch, equal paths
//!    once) covers every branch its steps go through. The suite takes, while a branch is left,
//!    the candidate covering the most branches still left (ties: the shorter path, then the
//!    earlier branch in [`Branch::ALL`] order), so a path through several branches is reused.
//! 4. Each chosen path is exported as a script (as `trc diff` exports its walks, else as `trc
//!    check --out` exports a counterexample: [`export`]) and run like every other suite's
//!    scenarios.

use super::{Case, CaseResult};
use crate::PlanError;
use serde::{Deserialize, Serialize};
use stateright::{Model, Property};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use trc_engine::{check_with, Options, StateHooks, Verdict};
use trc_model::decision::{Branch, DecisionCounts};
use trc_model::model::{Action, State, TcpModel};
use trc_model::{Config, Profile};

/// The first event enabled in `s` (in `Model::actions` order) whose step goes through `b`.
pub fn first_event_through(m: &TcpModel, s: &State, b: Branch) -> Option<Action> {
    let mut acts = Vec::new();
    m.actions(s, &mut acts);
    acts.into_iter().find(|a| {
        let sink = DecisionCounts::default();
        m.record_decisions(s, *a, &sink) && sink.get(b) > 0
    })
}

/// Property condition "an event enabled here goes through branch number `I`".
fn through<const I: usize>(m: &TcpModel, s: &State) -> bool {
    Branch::ALL
        .get(I)
        .is_some_and(|b| first_event_through(m, s, *b).is_some())
}

macro_rules! conditions {
    ($($i:literal)*) => { [$(through::<$i> as fn(&TcpModel, &State) -> bool,)*] };
}

/// One condition per branch index (more than there are branches; the assert below keeps it so).
const CONDITIONS: [fn(&TcpModel, &State) -> bool; 48] = conditions!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47);
const _: () = assert!(
    Branch::ALL.len() <= CONDITIONS.len(),
    "add conditions for the new branches"
);

/// A path through the state graph: an initial state and events.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct GraphPath {
    pub init_index: usize,
    pub actions: Vec<Action>,
}

/// What one exploration found: per branch (in [`Branch::ALL`] order) a shortest path through
/// it, or `None` when no state at these bounds has an event through it.
#[derive(Clone)]
pub struct Reach {
    pub shortest: Vec<Option<GraphPath>>,
    pub unique_states: u64,
    pub transitions: u64,
}

/// Explores `cfg` on `profile` and finds a shortest path through every reachable branch.
pub fn reach(cfg: &Config, profile: &Profile, threads: usize) -> Reach {
    let props: Vec<Property<TcpModel>> = Branch::ALL
        .iter()
        .enumerate()
        .map(|(i, b)| Property::sometimes(b.label(), CONDITIONS[i]))
        .collect();
    let model = TcpModel::new(cfg.clone(), profile.clone()).with_properties(props);
    let opts = Options {
        threads,
        ..Options::default()
    };
    let report = check_with(
        &model,
        &opts,
        None,
        StateHooks {
            fingerprint: State::fingerprint,
            next_state_into: TcpModel::next_state_into,
            drop_is_noop: State::is_plain,
        },
    );
    let shortest = Branch::ALL
        .iter()
        .zip(&report.properties)
        .map(|(b, p)| match (p.verdict, &p.path) {
            (Verdict::ExampleFound, Some(path)) => {
                let states = trc_engine::replay(&model, path);
                let last = &states.last().expect("a path has its initial state").1;
                let a = first_event_through(&model, last, *b)
                    .expect("the property's state has an event through the branch");
                let mut actions = path.actions.clone();
                actions.push(a);
                Some(GraphPath {
                    init_index: path.init_index,
                    actions,
                })
            }
            _ => None,
        })
        .collect();
    Reach {
        shortest,
        unique_states: report.unique_states,
        transitions: report.transitions,
    }
}

/// The branches the steps of `path` go through, each with the first step (1-based) that does.
pub fn branches_along(model: &TcpModel, path: &GraphPath) -> BTreeMap<Branch, usize> {
    let mut out = BTreeMap::new();
    let mut s = model.init_states().swap_remove(path.init_index);
    for (i, a) in path.actions.iter().enumerate() {
        let sink = DecisionCounts::default();
        model.record_decisions(&s, *a, &sink);
        for b in Branch::ALL {
            if sink.get(*b) > 0 {
                out.entry(*b).or_insert(i + 1);
            }
        }
        s = model
            .next_state(&s, *a)
            .expect("a path of the exploration replays");
    }
    out
}

/// The bounds whose paths are the kernel-runnable paths of `cfg`: no TSQ hold.
pub fn kernel_runnable_bounds(cfg: &Config) -> Config {
    Config {
        max_tsq: 0,
        ..cfg.clone()
    }
}

/// `function: label` of a branch.
pub fn branch_name(b: Branch) -> String {
    format!("{}: {}", b.function(), b.label())
}

/// The greedy set cover of the branches the candidates go through (`covers[i]`: candidate
/// `i`'s branches, `len[i]`: its events): the indices chosen, in the order chosen.
pub fn greedy_cover(covers: &[BTreeSet<Branch>], len: &[usize]) -> Vec<usize> {
    let mut left: BTreeSet<Branch> = covers.iter().flatten().copied().collect();
    let mut chosen = Vec::new();
    while !left.is_empty() {
        let best = (0..covers.len())
            .filter(|i| !chosen.contains(i))
            .map(|i| (covers[i].intersection(&left).count(), i))
            .filter(|(n, _)| *n > 0)
            // Most branches left; then fewest events; then the earliest candidate.
            .min_by_key(|&(n, i)| (std::cmp::Reverse(n), len[i], i));
        let Some((_, i)) = best else { break };
        for b in &covers[i] {
            left.remove(b);
        }
        chosen.push(i);
    }
    chosen
}

/// How far the model reaches a branch at the bounds (in JSON: `kernel-runnable`, `model-only`,
/// `not-exported`, `unreached`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BranchReach {
    /// Through a kernel-runnable path.
    KernelRunnable,
    /// Only through model-only paths (a TSQ hold).
    ModelOnly,
    /// Through kernel-runnable paths, none of which could be exported.
    NotExported,
    /// Not at these bounds.
    Unreached,
}

/// One branch's row of the coverage report.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct BranchRow {
    pub function: String,
    pub branch: String,
    pub reach: BranchReach,
    /// Events of a shortest path through the branch (a kernel-runnable one when there is one).
    pub shortest: Option<usize>,
    /// The suite's scenarios whose path goes through it.
    pub scenarios: Vec<String>,
}

/// One chosen scenario: its events and the branches its path goes through (with the step).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ScenarioCover {
    pub name: String,
    pub events: usize,
    /// `function: label (step N)`.
    pub branches: Vec<String>,
}

/// What the coverage suite was chosen to cover (model side; the kernel's share of it is
/// [`KernelCoverage`]).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct CoveragePlan {
    pub bounds: Config,
    pub profile: String,
    /// Branches of the model's decision functions.
    pub branches: usize,
    /// Reachable at these bounds (through any path).
    pub reachable: usize,
    /// Reachable through a kernel-runnable path.
    pub kernel_runnable: usize,
    /// Gone through by the suite's scenarios (kernel-runnable, exported).
    pub covered: usize,
    /// Reachable only through model-only paths.
    pub model_only: Vec<String>,
    /// Reachable but not covered by the suite: the model-only ones and any whose paths could
    /// not be exported.
    pub uncovered: Vec<String>,
    /// Not reachable at these bounds.
    pub unreached: Vec<String>,
    /// Paths that the exporter refused (`branch: why`).
    pub export_errors: Vec<String>,
    /// The explorations' sizes: all paths, kernel-runnable paths.
    pub states: u64,
    pub transitions: u64,
    pub kernel_runnable_states: u64,
    pub rows: Vec<BranchRow>,
    pub scenarios: Vec<ScenarioCover>,
}

/// The candidate scenarios of the coverage suite, and the branches whose paths the exporter refused.
struct Candidates {
    /// (branch index, its shortest kernel-runnable path, the branches along it with their step).
    paths: Vec<(usize, GraphPath, BTreeMap<Branch, usize>)>,
    export_errors: Vec<String>,
    failed: BTreeSet<Branch>,
}

/// Each kernel-runnable branch's shortest path (equal paths once), if the exporter takes it.
fn candidates(kmodel: &TcpModel, kr: &Reach) -> Candidates {
    let mut cand: Vec<(usize, GraphPath, BTreeMap<Branch, usize>)> = Vec::new();
    let mut export_errors = Vec::new();
    let mut failed: BTreeSet<Branch> = BTreeSet::new();
    for (i, p) in kr.shortest.iter().enumerate() {
        let Some(p) = p else { continue };
        if cand.iter().any(|c| c.1 == *p) {
            continue;
        }
        // Refused by the exporter (or, impossibly, model-only): not a candidate.
        let probe = export(kmodel, p, "probe");
        match probe {
            Ok(x) if x.trace.kernel_runnable => {
                cand.push((i, p.clone(), branches_along(kmodel, p)))
            }
            Ok(x) => {
                export_errors.push(format!(
                    "{}: model-only path ({})",
                    branch_name(Branch::ALL[i]),
                    x.trace.model_only.join("; ")
                ));
                failed.insert(Branch::ALL[i]);
            }
            Err(e) => {
                export_errors.push(format!("{}: {e}", branch_name(Branch::ALL[i])));
                failed.insert(Branch::ALL[i]);
            }
        }
    }
    Candidates {
        paths: cand,
        export_errors,
        failed,
    }
}

/// One scenario of the coverage suite: the `number`th of `of`, a shortest path through `branch`.
struct Scenario<'a> {
    number: usize,
    of: usize,
    branch: Branch,
    path: &'a GraphPath,
    /// The branches along the path, with their step.
    along: &'a BTreeMap<Branch, usize>,
}

/// The scenario's script written under `cdir` (its header names the branches it covers), as a
/// case that carries its path (so that a violation found on it can shrink).
fn write_case(
    kmodel: &TcpModel,
    kcfg: &Config,
    profile: &Profile,
    cdir: &Path,
    sc: &Scenario,
) -> Result<Case, PlanError> {
    let (b, path, along) = (sc.branch, sc.path, sc.along);
    let stem = format!("cov-{:02}-{}", sc.number, b.function());
    let name = format!("coverage/{stem}");
    let title = format!(
        "coverage scenario {} of {}: a shortest path through {}",
        sc.number,
        sc.of,
        branch_name(b)
    );
    let x = export(kmodel, path, &title).map_err(|why| PlanError::Export {
        what: name.clone(),
        why,
    })?;
    let mut notes = String::new();
    for (br, step) in along {
        notes.push_str(&format!("// covers (step {step}): {}\n", branch_name(*br)));
    }
    let text = x.pkt.replacen(
        "// trc diff scenario: ",
        "// trc kernel check --suite coverage: ",
        1,
    );
    let text = match text.split_once('\n') {
        Some((first, rest)) => format!("{first}\n{notes}{rest}"),
        None => format!("{text}\n{notes}"),
    };
    let f = cdir.join(format!("{stem}.pkt"));
    trc_files::write_atomic(&f, text.as_bytes()).map_err(trc_files::at(&f))?;
    let origin = format!(
        "shortest kernel-runnable path through {} ({} events; covers {} branch(es))",
        branch_name(b),
        path.actions.len(),
        along.len()
    );
    let case = Case::from_file(&f, name.clone(), origin)?;
    // Its path, so that a violation found on it can shrink (as an engine counterexample: the
    // path may start from either initial state).
    let how = super::shrink::How::Counterexample {
        init: path.init_index,
        id: String::new(),
        name: title.clone(),
        statement: String::new(),
    };
    Ok(case.with_actions(super::shrink::ActionList {
        cfg: kcfg.clone(),
        profile: profile.clone(),
        actions: path.actions.clone(),
        how,
    }))
}

/// The coverage table's rows, and the branches it lists apart.
struct BranchRows {
    rows: Vec<BranchRow>,
    model_only: Vec<String>,
    uncovered: Vec<String>,
    unreached: Vec<String>,
}

/// One row per branch: how far the model reaches it and which scenarios cover it.
fn branch_rows(
    all: &Reach,
    kr: &Reach,
    by_branch: &BTreeMap<Branch, Vec<String>>,
    failed: &BTreeSet<Branch>,
) -> BranchRows {
    let mut rows = Vec::new();
    let (mut model_only, mut uncovered, mut unreached) = (Vec::new(), Vec::new(), Vec::new());
    for (i, b) in Branch::ALL.iter().enumerate() {
        let covered = by_branch.get(b).cloned().unwrap_or_default();
        let reach = match (&all.shortest[i], &kr.shortest[i]) {
            (None, _) => BranchReach::Unreached,
            (Some(_), None) => BranchReach::ModelOnly,
            (Some(_), Some(_)) if covered.is_empty() && failed.contains(b) => {
                BranchReach::NotExported
            }
            (Some(_), Some(_)) => BranchReach::KernelRunnable,
        };
        match reach {
            BranchReach::Unreached => unreached.push(branch_name(*b)),
            BranchReach::ModelOnly => {
                model_only.push(branch_name(*b));
                uncovered.push(branch_name(*b));
            }
            _ if covered.is_empty() => uncovered.push(branch_name(*b)),
            _ => {}
        }
        let shortest = kr.shortest[i]
            .as_ref()
            .or(all.shortest[i].as_ref())
            .map(|p| p.actions.len());
        rows.push(BranchRow {
            function: b.function().into(),
            branch: b.label().into(),
            reach,
            shortest,
            scenarios: covered,
        });
    }
    BranchRows {
        rows,
        model_only,
        uncovered,
        unreached,
    }
}

/// The coverage suite of `cfg` on `profile`: the plan and its cases, exported under `dir`.
pub fn plan(
    cfg: &Config,
    profile: &Profile,
    dir: &Path,
    threads: usize,
    log: &mut dyn FnMut(&str),
) -> Result<(CoveragePlan, Vec<Case>), PlanError> {
    let t0 = std::time::Instant::now();
    let all = reach(cfg, profile, threads);
    let kcfg = kernel_runnable_bounds(cfg);
    let kr = if kcfg == *cfg {
        all.clone()
    } else {
        reach(&kcfg, profile, threads)
    };
    log(&format!(
        "coverage: {} states ({} transitions) explored, {} of them on kernel-runnable paths, in {:.1} s",
        all.unique_states,
        all.transitions,
        kr.unique_states,
        t0.elapsed().as_secs_f64()
    ));
    let kmodel = TcpModel::new(kcfg.clone(), profile.clone());
    let Candidates {
        paths: cand,
        export_errors,
        failed,
    } = candidates(&kmodel, &kr);
    let covers: Vec<BTreeSet<Branch>> =
        cand.iter().map(|c| c.2.keys().copied().collect()).collect();
    let lens: Vec<usize> = cand.iter().map(|c| c.1.actions.len()).collect();
    let chosen = greedy_cover(&covers, &lens);
    let cdir = dir.join("coverage");
    trc_trace::write_defaults(&cdir).map_err(trc_files::at(&cdir))?;
    let mut cases = Vec::new();
    let mut scenarios = Vec::new();
    let mut by_branch: BTreeMap<Branch, Vec<String>> = BTreeMap::new();
    for (k, &ci) in chosen.iter().enumerate() {
        let (bi, path, along) = &cand[ci];
        let name = format!("coverage/cov-{:02}-{}", k + 1, Branch::ALL[*bi].function());
        let scenario = Scenario {
            number: k + 1,
            of: chosen.len(),
            branch: Branch::ALL[*bi],
            path,
            along,
        };
        cases.push(write_case(&kmodel, &kcfg, profile, &cdir, &scenario)?);
        for br in along.keys() {
            by_branch.entry(*br).or_default().push(name.clone());
        }
        scenarios.push(ScenarioCover {
            name,
            events: path.actions.len(),
            branches: along
                .iter()
                .map(|(br, s)| format!("{} (step {s})", branch_name(*br)))
                .collect(),
        });
    }
    let BranchRows {
        rows,
        model_only,
        uncovered,
        unreached,
    } = branch_rows(&all, &kr, &by_branch, &failed);
    let plan = CoveragePlan {
        bounds: cfg.clone(),
        profile: profile.name.clone(),
        branches: Branch::ALL.len(),
        reachable: all.shortest.iter().filter(|p| p.is_some()).count(),
        kernel_runnable: kr.shortest.iter().filter(|p| p.is_some()).count(),
        covered: by_branch.len(),
        model_only,
        uncovered,
        unreached,
        export_errors,
        states: all.unique_states,
        transitions: all.transitions,
        kernel_runnable_states: kr.unique_states,
        rows,
        scenarios,
    };
    log(&format!(
        "coverage: {} branches reachable, {} through kernel-runnable paths; {} scenarios cover {}",
        plan.reachable,
        plan.kernel_runnable,
        cases.len(),
        plan.covered
    ));
    Ok((plan, cases))
}

/// A path as a script: as `trc diff` exports its walks, with its default ACK spacing and timer
/// margin ([`trc_diff::GenOptions`]: ACKs `gap_ms` apart, a final timer that sends nothing asserted
/// `margin_ms` after its deadline, no race with a timer), else, when that refuses the path, as
/// `trc check --out` exports a counterexample (exact model times where spacing would change the
/// sender's decisions).
fn export(
    model: &TcpModel,
    p: &GraphPath,
    name: &str,
) -> Result<trc_trace::export::Exported, trc_trace::export::ExportError> {
    let g = trc_diff::GenOptions::default();
    match trc_trace::export::export_walk(model, p.init_index, &p.actions, name, g.spacing()) {
        Ok(x) => Ok(x),
        Err(_) => trc_trace::export::export(
            model,
            p.init_index,
            &p.actions,
            trc_trace::export::Subject {
                id: "",
                name,
                statement: "",
            },
            trc_trace::export::COUNTEREXAMPLE_GAP_MS,
        ),
    }
}

/// How much of the plan's coverage the kernel runs account for.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct KernelCoverage {
    /// Branches gone through by a scenario that ran on the kernel.
    pub ran: usize,
    /// Branches gone through by a scenario that ran and passed every check of its script (the
    /// model's prediction after each step of the path): the kernel followed the model's path.
    pub followed: usize,
    /// Covered branches whose every scenario did not run (never counted as covered on the kernel).
    pub not_run: Vec<String>,
    /// Covered branches whose every scenario that ran failed a check of its script: the kernel
    /// may have left the model's path before the branch.
    pub diverged: Vec<String>,
}

/// The kernel's share of the plan's coverage from the suite's results.
pub fn kernel_coverage(plan: &CoveragePlan, results: &[CaseResult]) -> KernelCoverage {
    let mut k = KernelCoverage {
        ran: 0,
        followed: 0,
        not_run: Vec::new(),
        diverged: Vec::new(),
    };
    for row in plan.rows.iter().filter(|r| !r.scenarios.is_empty()) {
        let name = format!("{}: {}", row.function, row.branch);
        let rs: Vec<&CaseResult> = results
            .iter()
            .filter(|r| row.scenarios.contains(&r.name) && r.kernel_ran)
            .collect();
        if rs.is_empty() {
            k.not_run.push(name);
            continue;
        }
        k.ran += 1;
        if rs.iter().any(|r| r.kernel == crate::RunVerdict::Passed) {
            k.followed += 1;
        } else {
            k.diverged.push(name);
        }
    }
    k
}

impl CoveragePlan {
    /// The text report's coverage section (after the usual report).
    pub fn render(&self, k: &KernelCoverage) -> String {
        use std::fmt::Write as _;
        let mut o = String::new();
        let b = &self.bounds;
        let _ = writeln!(
            o,
            "\ncoverage at segments {} writes {} losses {} ack-losses {} reorder {} rtos {} tlps {} tsq {} ece {} old-acks {} ({} states, {} on kernel-runnable paths), profile {}:",
            b.segments, b.extra_writes, b.max_losses, b.max_ack_losses, b.max_reorder, b.max_rtos, b.max_tlps, b.max_tsq, b.max_ece, b.max_old_acks, self.states, self.kernel_runnable_states, self.profile
        );
        let _ = writeln!(
            o,
            "  {} of {} branches reachable at these bounds; {} through kernel-runnable paths",
            self.reachable, self.branches, self.kernel_runnable
        );
        let _ = writeln!(o, "  {} covered by the suite's {} scenarios; {} of them by a scenario that ran on the kernel, {} by one that passed every check of its script", self.covered, self.scenarios.len(), k.ran, k.followed);
        let _ = writeln!(
            o,
            "  {} reachable only through model-only paths (TSQ hold)",
            self.model_only.len()
        );
        let mut last = "";
        for r in &self.rows {
            if r.function != last {
                let _ = writeln!(o, "  {}", r.function);
                last = &r.function;
            }
            let what = match (r.reach, r.scenarios.first()) {
                (_, Some(s)) => format!(
                    "covered by {s}{}",
                    if r.scenarios.len() > 1 {
                        format!(" (+{})", r.scenarios.len() - 1)
                    } else {
                        String::new()
                    }
                ),
                (BranchReach::ModelOnly, _) => {
                    "model-only: reachable only through a TSQ hold".into()
                }
                (BranchReach::Unreached, _) => "not reachable at these bounds".into(),
                (BranchReach::NotExported, _) => "UNCOVERED: its path could not be exported".into(),
                (BranchReach::KernelRunnable, None) => "UNCOVERED".into(),
            };
            let len = r
                .shortest
                .map(|n| format!(" [{n} event{}]", if n == 1 { "" } else { "s" }))
                .unwrap_or_default();
            let _ = writeln!(o, "    {}{len}: {what}", r.branch);
        }
        if self.uncovered.is_empty() {
            let _ = writeln!(o, "  uncovered: none");
        } else {
            let _ = writeln!(o, "  uncovered ({}):", self.uncovered.len());
            for u in &self.uncovered {
                let _ = writeln!(o, "    {u}");
            }
        }
        for e in &self.export_errors {
            let _ = writeln!(o, "  export refused: {e}");
        }
        for n in &k.not_run {
            let _ = writeln!(o, "  not run on the kernel (not covered there): {n}");
        }
        for n in &k.diverged {
            let _ = writeln!(
                o,
                "  every scenario through it failed a check of its script on the kernel: {n}"
            );
        }
        o
    }
}
