//! Two kernels on one plan: a base and a patched build (or any two images), the same scenarios
//! run on both, and a report of what the change changed.
//!
//! - Per property and scenario: a scenario in which a property holds (or is undecided) on the
//!   base and is violated on the patched kernel is a **new violation**; violated on the base and
//!   holding on the patched kernel is **fixed**; anything else is as on the base. Absolute
//!   violations every kernel has (F1, F3) are therefore not the patch's doing.
//! - Per scenario: whether the two kernels behaved the same ([`behaviour_diff`]: the script's
//!   line verdicts, `tcp_info` and the MIB counters after every step, the data segments sent),
//!   and where not, the first differing line with both sides' values. A difference counts only
//!   when it reproduces: [`compare`] reruns every differing scenario on both kernels, and one
//!   whose rerun differs elsewhere or not at all is reported as timing noise.
//! - For a scenario with a model path (coverage, random walks, the engine's counterexamples),
//!   the decision branches the path goes through ([`crate::shrink::ActionList::branches`]), so
//!   the report can say which kernel decisions the change altered.

use crate::observe::{KTrace, Step};
use crate::run::{paths, Plan};
use crate::{evaluate_all, first_divergence, summarise, Case, CheckReport, Outcome};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use trc_kernel::target::{NoReport, ScriptRun, Target, TargetError};
use trc_kernel::RunReport;

/// What the change did to one property.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Change {
    /// Violated on the patched kernel in a scenario where it was not on the base.
    NewViolation,
    /// Violated on the base in a scenario where it holds on the patched kernel, and no new
    /// violation.
    Fixed,
    /// The same verdict in every scenario.
    AsOnBase,
}

impl Change {
    pub fn text(&self) -> &'static str {
        match self {
            Change::NewViolation => "NEW VIOLATION",
            Change::Fixed => "fixed",
            Change::AsOnBase => "as on base",
        }
    }
}

/// One property over the plan, on both kernels.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PropertyChange {
    pub id: String,
    /// The verdict over the whole suite on each kernel.
    pub base: crate::Verdict,
    pub patched: crate::Verdict,
    pub change: Change,
    /// Scenarios violated on the patched kernel and not on the base.
    pub new_violations: Vec<NewViolation>,
    /// Scenarios violated on the base and holding on the patched kernel.
    pub fixed: Vec<String>,
}

/// A scenario newly violating a property, with the patched kernel's line and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NewViolation {
    pub scenario: String,
    /// Whether the connection negotiated SACK (`None`: not known).
    pub sack: Option<bool>,
    pub line: u32,
    pub detail: String,
    /// What the base kernel's monitor said in that scenario.
    pub base: BaseVerdict,
}

/// A monitor's verdict on the base kernel in a scenario, as the patch report states it (in JSON
/// the strings `holds`, `violated at line L`, `undecided`, `no run`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum BaseVerdict {
    /// The scenario has no run (or no verdict) for the property on the base kernel.
    NoRun,
    Holds,
    ViolatedAt(u32),
    Undecided,
}

impl BaseVerdict {
    fn of(r: &crate::CaseResult, id: &str) -> BaseVerdict {
        match r.properties.get(id) {
            None => BaseVerdict::NoRun,
            Some(Outcome::Holds) => BaseVerdict::Holds,
            Some(Outcome::Violated { line, .. }) => BaseVerdict::ViolatedAt(*line),
            Some(Outcome::Undecided { .. }) => BaseVerdict::Undecided,
        }
    }
}

impl std::fmt::Display for BaseVerdict {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            BaseVerdict::NoRun => f.write_str("no run"),
            BaseVerdict::Holds => f.write_str("holds"),
            BaseVerdict::ViolatedAt(line) => write!(f, "violated at line {line}"),
            BaseVerdict::Undecided => f.write_str("undecided"),
        }
    }
}

impl From<BaseVerdict> for String {
    fn from(v: BaseVerdict) -> String {
        v.to_string()
    }
}

/// A text that is none of [`BaseVerdict`]'s.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a base verdict (holds, violated at line L, undecided, no run)")]
pub struct NotABaseVerdict(pub String);

impl TryFrom<String> for BaseVerdict {
    type Error = NotABaseVerdict;
    fn try_from(s: String) -> Result<BaseVerdict, NotABaseVerdict> {
        match s.as_str() {
            "no run" => Ok(BaseVerdict::NoRun),
            "holds" => Ok(BaseVerdict::Holds),
            "undecided" => Ok(BaseVerdict::Undecided),
            _ => s
                .strip_prefix("violated at line ")
                .and_then(|l| l.parse().ok())
                .map(BaseVerdict::ViolatedAt)
                .ok_or(NotABaseVerdict(s)),
        }
    }
}

/// One side's values after the step where two runs first differ.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SideView {
    /// `tcpi_ca_state cwnd ssthresh ...` and the counters, or what the line did.
    pub state: String,
    /// The counters whose values differ from the other side's there.
    pub counters: BTreeMap<String, i64>,
}

/// Where two kernels' runs of one script first differ.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BehaviourDiff {
    pub line: u32,
    /// What differs: `tcp_info` fields, counters, the script's verdict at the line, sends.
    pub what: Vec<String>,
    pub base: SideView,
    pub patched: SideView,
}

/// One scenario on both kernels.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScenarioChange {
    pub name: String,
    pub origin: String,
    /// Both kernels ran it.
    pub ran: bool,
    /// The first difference of the first runs; `None`: they behaved the same.
    pub difference: Option<BehaviourDiff>,
    /// The rerun gave the same first difference: a behaviour change. `false` with a difference:
    /// timing noise. `None`: not rerun (no difference, or `--no-rerun`).
    pub reproduced: Option<bool>,
    /// The model decision branches its path goes through (`function: branch`), for scenarios
    /// generated from the model.
    pub branches: Vec<String>,
    /// The side-by-side page, when written.
    pub page: Option<String>,
}

impl ScenarioChange {
    /// A difference that reproduced.
    pub fn changed(&self) -> bool {
        self.difference.is_some() && self.reproduced != Some(false)
    }
    pub fn noise(&self) -> bool {
        self.difference.is_some() && self.reproduced == Some(false)
    }
}

/// The change a patch made, as two kernels showed it.
#[derive(Clone, Debug, Serialize)]
pub struct PatchReport {
    pub suite: String,
    pub profile: String,
    pub base_kernel: String,
    pub patched_kernel: String,
    pub properties: Vec<PropertyChange>,
    pub scenarios: Vec<ScenarioChange>,
    /// Scenarios that did not run on one kernel or both.
    pub not_run: usize,
    /// The decision branches of the scenarios whose behaviour changed, with how many each.
    pub changed_branches: BTreeMap<String, usize>,
    /// Each kernel's own report (absolute verdicts, divergences from the profile).
    pub base: CheckReport,
    pub patched: CheckReport,
    /// Each scenario's first run on the base and on the patched kernel (for pictures).
    #[serde(skip)]
    pub runs: Vec<(Option<RunReport>, Option<RunReport>)>,
}

fn view(s: &Step) -> String {
    let i = &s.info;
    let ss = if i.snd_ssthresh >= crate::observe::INFINITE_SSTHRESH {
        "inf".to_string()
    } else {
        i.snd_ssthresh.to_string()
    };
    format!(
        "{} cwnd {} ssthresh {ss} unacked {} sacked {} lost {} retrans {} total_retrans {} reordering {}",
        i.ca_state_name.trim_start_matches("TCP_CA_"),
        i.snd_cwnd,
        i.unacked,
        i.sacked,
        i.lost,
        i.retrans,
        i.total_retrans,
        i.reordering
    )
}

/// The `tcp_info` fields that differ between two steps (timing-dependent ones left out: the
/// RTT estimate and the RTO follow the injection's microseconds).
fn info_fields(a: &Step, b: &Step) -> Vec<String> {
    let (x, y) = (&a.info, &b.info);
    let pairs: [(&str, u64, u64); 10] = [
        ("tcpi_ca_state", x.ca_state as u64, y.ca_state as u64),
        ("tcpi_snd_cwnd", x.snd_cwnd as u64, y.snd_cwnd as u64),
        (
            "tcpi_snd_ssthresh",
            x.snd_ssthresh as u64,
            y.snd_ssthresh as u64,
        ),
        ("tcpi_unacked", x.unacked as u64, y.unacked as u64),
        ("tcpi_sacked", x.sacked as u64, y.sacked as u64),
        ("tcpi_lost", x.lost as u64, y.lost as u64),
        ("tcpi_retrans", x.retrans as u64, y.retrans as u64),
        (
            "tcpi_total_retrans",
            x.total_retrans as u64,
            y.total_retrans as u64,
        ),
        ("tcpi_reordering", x.reordering as u64, y.reordering as u64),
        ("tcpi_dsack_dups", x.dsack_dups as u64, y.dsack_dups as u64),
    ];
    pairs
        .iter()
        .filter(|(_, p, q)| p != q)
        .map(|(n, _, _)| n.to_string())
        .collect()
}

/// Counters (MIB names) whose values differ between two steps.
fn counter_fields(a: &Step, b: &Step) -> Vec<String> {
    let names: BTreeSet<&String> = a.counters.keys().chain(b.counters.keys()).collect();
    names
        .into_iter()
        .filter(|n| a.counter(n) != b.counter(n))
        .cloned()
        .collect()
}

fn side(s: Option<&Step>, counters: &[String]) -> SideView {
    match s {
        None => SideView {
            state: "not reached".into(),
            counters: BTreeMap::new(),
        },
        Some(s) => SideView {
            state: view(s),
            counters: counters.iter().map(|c| (c.clone(), s.counter(c))).collect(),
        },
    }
}

/// The first place where two kernels' runs of the same script differ, or `None` when they
/// behaved the same: the earliest of the first step whose `tcp_info` or counters differ (or
/// that only one run reached), the first line one passes and the other fails, and the first
/// data segment that differs (sequence range or retransmission), by script line.
pub fn behaviour_diff(base: &RunReport, patched: &RunReport) -> Option<BehaviourDiff> {
    trace_diff(
        &KTrace::from_report(base),
        &KTrace::from_report(patched),
        &base.script.lines,
        &patched.script.lines,
    )
}

/// [`behaviour_diff`] on the traces and line results of the two runs.
pub fn trace_diff(
    kb: &KTrace,
    kp: &KTrace,
    base_lines: &[trc_pkt::report::LineResult],
    patched_lines: &[trc_pkt::report::LineResult],
) -> Option<BehaviourDiff> {
    let mut found: Option<BehaviourDiff> = None;
    let mut consider = |d: BehaviourDiff| {
        if found.as_ref().is_none_or(|f| d.line < f.line) {
            found = Some(d);
        }
    };
    for i in 0..kb.steps.len().max(kp.steps.len()) {
        let (a, b) = (kb.steps.get(i), kp.steps.get(i));
        let (what, counters) = match (a, b) {
            (Some(a), Some(b)) if a.line != b.line => (
                vec![format!(
                    "the step after line {} on the base, line {} on the patched kernel",
                    a.line, b.line
                )],
                Vec::new(),
            ),
            (Some(a), Some(b)) => {
                let c = counter_fields(a, b);
                let mut w = info_fields(a, b);
                w.extend(c.iter().cloned());
                (w, c)
            }
            (Some(_), None) => (vec!["a step only the base reached".into()], Vec::new()),
            (None, Some(_)) => (
                vec!["a step only the patched kernel reached".into()],
                Vec::new(),
            ),
            (None, None) => unreachable!(),
        };
        if !what.is_empty() {
            let line = a.or(b).map(|s| s.line).unwrap_or(0);
            consider(BehaviourDiff {
                line,
                what,
                base: side(a, &counters),
                patched: side(b, &counters),
            });
            break;
        }
    }
    let (cb, cp) = comparable(base_lines, patched_lines);
    if let Some(d) = first_divergence(&cb, &cp) {
        let sv = |v: &crate::LineView| SideView {
            state: format!("line {}: {v}", d.text),
            counters: BTreeMap::new(),
        };
        consider(BehaviourDiff {
            line: d.line,
            what: vec![format!("the script's check at line {}", d.line)],
            base: sv(&d.kernel),
            patched: sv(&d.profile),
        });
    }
    let key = |s: &crate::observe::Send| (s.seq, s.end, s.retrans);
    if let Some(k) = (0..kb.sends.len().max(kp.sends.len()))
        .find(|k| kb.sends.get(*k).map(key) != kp.sends.get(*k).map(key))
    {
        let at = kb
            .sends
            .get(k)
            .or(kp.sends.get(k))
            .map(|s| s.t_ms)
            .unwrap_or(0.0);
        let line = kb
            .steps
            .iter()
            .find(|s| s.t_ms >= at)
            .or(kb.steps.last())
            .map(|s| s.line)
            .unwrap_or(0);
        let show = |s: Option<&crate::observe::Send>| SideView {
            state: s.map_or("no such segment".into(), |s| {
                format!(
                    "segment {}:{}{} at {:.0} ms",
                    s.seq,
                    s.end,
                    if s.retrans { " (retransmission)" } else { "" },
                    s.t_ms
                )
            }),
            counters: BTreeMap::new(),
        };
        consider(BehaviourDiff {
            line,
            what: vec![format!("data segment {} sent", k + 1)],
            base: show(kb.sends.get(k)),
            patched: show(kp.sends.get(k)),
        });
    }
    found
}

/// The lines with the TSval of every segment shown in them blanked: each run's timestamp clock
/// starts at a random offset, so two kernels' `got ...` texts differ there even when they sent
/// the same segment.
fn without_tsval(lines: &[trc_pkt::report::LineResult]) -> Vec<trc_pkt::report::LineResult> {
    let blank = |s: &str| -> String {
        let mut out = String::with_capacity(s.len());
        let mut rest = s;
        while let Some(i) = rest.find("TS val ") {
            out.push_str(&rest[..i + 7]);
            rest = rest[i + 7..].trim_start_matches(|c: char| c.is_ascii_digit());
            out.push('_');
        }
        out.push_str(rest);
        out
    };
    lines
        .iter()
        .map(|l| {
            let mut l = l.clone();
            l.actual = l.actual.as_deref().map(blank);
            l
        })
        .collect()
}

/// How far apart (ms) the two kernels may send the same segment for a line that one of them
/// sent outside its window to count as the same behaviour: two jiffies at HZ=250. Two boots'
/// jiffy phases and the timer wheel's level-0 granularity move one timer by up to that much
/// (the lateness the exporter allows a level-0 timer, `Driver::timer_spread_us`). Seen in the
/// detection benchmark: 7.2.13 sent `findings/f11b`'s TLP 2.5 ms past its window, five mutants
/// that do not touch timers sent it inside.
const TIMING_JITTER_MS: f64 = 8.0;

/// The two runs' lines as they are compared ([`without_tsval`]), where a line failed on timing
/// alone ([`trc_pkt::report::LineResult::failed_on_timing`]) on either kernel counts as passed on
/// both when both sent the same segment within [`TIMING_JITTER_MS`] of each other: a
/// timer-driven line at the edge of its window fails on one kernel and passes on the other
/// without any change of behaviour. A patch that moves a timer further still differs there.
fn comparable(
    base: &[trc_pkt::report::LineResult],
    patched: &[trc_pkt::report::LineResult],
) -> (
    Vec<trc_pkt::report::LineResult>,
    Vec<trc_pkt::report::LineResult>,
) {
    let (mut b, mut p) = (without_tsval(base), without_tsval(patched));
    for lb in b.iter_mut() {
        let Some(lp) = p.iter_mut().find(|l| l.line == lb.line) else {
            continue;
        };
        let close = match (lb.time_ms, lp.time_ms) {
            (Some(x), Some(y)) => (x - y).abs() <= TIMING_JITTER_MS,
            _ => false,
        };
        if (lb.failed_on_timing() || lp.failed_on_timing()) && close && lb.actual == lp.actual {
            for l in [&mut *lb, &mut *lp] {
                l.status = trc_pkt::report::Status::Pass;
                l.message = None;
            }
        }
    }
    (b, p)
}

/// Per property: new violations and fixes, scenario by scenario.
pub fn property_changes(
    base: &CheckReport,
    patched: &CheckReport,
    sack: &dyn Fn(usize) -> Option<bool>,
) -> Vec<PropertyChange> {
    let mut out = Vec::new();
    for (pb, pp) in base.properties.iter().zip(&patched.properties) {
        let id = pb.id.as_str();
        let mut ch = PropertyChange {
            id: id.into(),
            base: pb.verdict,
            patched: pp.verdict,
            change: Change::AsOnBase,
            new_violations: Vec::new(),
            fixed: Vec::new(),
        };
        for (i, (rb, rp)) in base.cases.iter().zip(&patched.cases).enumerate() {
            let vb = matches!(rb.properties.get(id), Some(Outcome::Violated { .. }));
            match rp.properties.get(id) {
                Some(Outcome::Violated { line, detail }) if !vb && rb.kernel_ran => {
                    ch.new_violations.push(NewViolation {
                        scenario: rp.name.clone(),
                        sack: sack(i),
                        line: *line,
                        detail: detail.clone(),
                        base: BaseVerdict::of(rb, id),
                    })
                }
                Some(Outcome::Holds) if vb => ch.fixed.push(rp.name.clone()),
                _ => {}
            }
        }
        ch.change = if !ch.new_violations.is_empty() {
            Change::NewViolation
        } else if !ch.fixed.is_empty() {
            Change::Fixed
        } else {
            Change::AsOnBase
        };
        out.push(ch);
    }
    out
}

/// Options of [`compare`].
#[derive(Clone, Debug)]
pub struct CompareOptions {
    /// Rerun differing scenarios on both kernels (a difference counts only if it reproduces).
    pub rerun: bool,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions { rerun: true }
    }
}

/// The differing scenarios' reruns: for each index in `differ`, whether the rerun pair gives the
/// same first difference (`None`: a rerun did not run on one side).
fn reruns(
    cases: &[Case],
    differ: &[usize],
    first: &[Option<BehaviourDiff>],
    base: &mut dyn Target,
    patched: &mut dyn Target,
    log: &mut dyn FnMut(&str),
) -> Result<Vec<Option<bool>>, TargetError> {
    let rc: Vec<Case> = differ.iter().map(|k| cases[*k].clone()).collect();
    log(&format!(
        "rerunning the {} differing scenario(s) on both kernels",
        rc.len()
    ));
    let b = base.run(&paths(&rc), log)?;
    let p = patched.run(&paths(&rc), log)?;
    Ok(differ
        .iter()
        .enumerate()
        .map(|(j, k)| match (b.runs.get(j), p.runs.get(j)) {
            (Some(Ok(x)), Some(Ok(y))) => {
                let again = behaviour_diff(x, y);
                Some(again.is_some_and(|d| {
                    first[*k]
                        .as_ref()
                        .is_some_and(|f| f.line == d.line && f.what == d.what)
                }))
            }
            _ => None,
        })
        .collect())
}

/// Runs `plan.cases[todo]` on both kernels, reruns the differing scenarios, and reports the
/// change (the reports are not shrunk).
pub fn compare(
    plan: &Plan,
    todo: &[usize],
    base: &mut dyn Target,
    patched: &mut dyn Target,
    o: &CompareOptions,
    log: &mut dyn FnMut(&str),
) -> Result<PatchReport, TargetError> {
    let cases: Vec<Case> = todo.iter().map(|k| plan.cases[*k].clone()).collect();
    log(&format!("base kernel: {} scenarios", cases.len()));
    let bb = base.run(&paths(&cases), log)?;
    log(&format!("patched kernel: {} scenarios", cases.len()));
    let pb = patched.run(&paths(&cases), log)?;
    let missing: ScriptRun = Err(NoReport::Interrupted);
    let first: Vec<Option<BehaviourDiff>> = (0..cases.len())
        .map(|i| {
            match (
                bb.runs.get(i).unwrap_or(&missing),
                pb.runs.get(i).unwrap_or(&missing),
            ) {
                (Ok(x), Ok(y)) => behaviour_diff(x, y),
                _ => None,
            }
        })
        .collect();
    let differ: Vec<usize> = (0..cases.len()).filter(|i| first[*i].is_some()).collect();
    let rr = if o.rerun && !differ.is_empty() && !trc_kernel::sys::interrupted() {
        reruns(&cases, &differ, &first, base, patched, log)?
    } else {
        Vec::new()
    };
    let sack_of = |i: usize| {
        bb.runs
            .get(i)
            .and_then(|r| r.as_ref().ok())
            .map(|r| KTrace::from_report(r).sack)
    };
    let rb = summarise(
        plan.suite_name(),
        bb.kernel.clone(),
        plan.profile.name.clone(),
        evaluate_all(&cases, &bb.runs, &plan.monitors, &plan.profile),
        &plan.monitors,
        &plan.baseline,
    );
    let rp = summarise(
        plan.suite_name(),
        pb.kernel.clone(),
        plan.profile.name.clone(),
        evaluate_all(&cases, &pb.runs, &plan.monitors, &plan.profile),
        &plan.monitors,
        &plan.baseline,
    );
    let mut scenarios = Vec::new();
    for (i, c) in cases.iter().enumerate() {
        let ran = rb.cases[i].kernel_ran && rp.cases[i].kernel_ran;
        let reproduced = differ
            .iter()
            .position(|k| *k == i)
            .and_then(|j| rr.get(j).copied().flatten());
        let branches = match (&first[i], &c.actions) {
            (Some(_), Some(list)) => list
                .branches()
                .into_iter()
                .map(crate::coverage::branch_name)
                .collect(),
            _ => Vec::new(),
        };
        scenarios.push(ScenarioChange {
            name: c.name.clone(),
            origin: c.origin.clone(),
            ran,
            difference: first[i].clone(),
            reproduced,
            branches,
            page: None,
        });
    }
    let mut rep = finish(
        plan.suite_name(),
        plan.profile.name.clone(),
        rb,
        rp,
        scenarios,
        &sack_of,
    );
    rep.runs = (0..cases.len())
        .map(|i| {
            (
                bb.runs.get(i).and_then(|r| r.as_ref().ok()).cloned(),
                pb.runs.get(i).and_then(|r| r.as_ref().ok()).cloned(),
            )
        })
        .collect();
    Ok(rep)
}

/// The report from both kernels' (possibly merged) reports and the scenario comparisons.
pub fn finish(
    suite: String,
    profile: String,
    rb: CheckReport,
    rp: CheckReport,
    scenarios: Vec<ScenarioChange>,
    sack: &dyn Fn(usize) -> Option<bool>,
) -> PatchReport {
    let mut changed_branches = BTreeMap::new();
    for s in scenarios.iter().filter(|s| s.changed()) {
        for b in &s.branches {
            *changed_branches.entry(b.clone()).or_insert(0) += 1;
        }
    }
    let not_run = scenarios.iter().filter(|s| !s.ran).count();
    PatchReport {
        suite,
        profile,
        base_kernel: rb.kernel.clone(),
        patched_kernel: rp.kernel.clone(),
        properties: property_changes(&rb, &rp, sack),
        scenarios,
        not_run,
        changed_branches,
        base: rb,
        patched: rp,
        runs: Vec::new(),
    }
}

impl PatchReport {
    /// Violated: a new violation; incomplete: a scenario did not run on a kernel; else holds.
    pub fn outcome(&self) -> trc_check::Outcome {
        if self
            .properties
            .iter()
            .any(|p| p.change == Change::NewViolation)
        {
            trc_check::Outcome::Violated
        } else if self.not_run > 0 {
            trc_check::Outcome::Incomplete
        } else {
            trc_check::Outcome::Holds
        }
    }

    pub fn render(&self) -> String {
        use std::fmt::Write as _;
        let mut o = String::new();
        let _ = writeln!(
            o,
            "trc kernel check --patch: suite {}, {} scenarios, profile {}",
            self.suite,
            self.scenarios.len(),
            self.profile
        );
        let _ = writeln!(o, "  base:    {}", self.base_kernel);
        let _ = writeln!(o, "  patched: {}", self.patched_kernel);
        let _ = writeln!(
            o,
            "\nProperties (the patched kernel against the base, scenario by scenario):"
        );
        for p in &self.properties {
            let name = trc_properties::catalogue()
                .into_iter()
                .find(|s| s.id == p.id)
                .map(|s| s.name)
                .unwrap_or("");
            let _ = writeln!(
                o,
                "  {name:<72} {} (base {}, patched {})",
                p.change.text(),
                p.base,
                p.patched
            );
            for v in &p.new_violations {
                let sack = match v.sack {
                    Some(true) => " (SACK)",
                    Some(false) => " (non-SACK)",
                    None => "",
                };
                let _ = writeln!(
                    o,
                    "       new: {}{sack} line {}: {} [base: {}]",
                    v.scenario, v.line, v.detail, v.base
                );
            }
            if !p.fixed.is_empty() {
                let _ = writeln!(o, "       fixed in: {}", p.fixed.join(", "));
            }
        }
        let changed: Vec<&ScenarioChange> = self.scenarios.iter().filter(|s| s.changed()).collect();
        let noise = self.scenarios.iter().filter(|s| s.noise()).count();
        let _ = writeln!(o, "\nBehaviour: {} of {} scenarios behave differently on the patched kernel; {noise} differed once and not on the rerun (timing noise); {} not run on both", changed.len(), self.scenarios.len(), self.not_run);
        for s in &changed {
            let d = s.difference.as_ref().expect("changed has a difference");
            let _ = writeln!(
                o,
                "  {}: first difference at line {}: {}",
                s.name,
                d.line,
                d.what.join(", ")
            );
            let _ = writeln!(
                o,
                "      base:    {}{}",
                d.base.state,
                counters_text(&d.base.counters)
            );
            let _ = writeln!(
                o,
                "      patched: {}{}",
                d.patched.state,
                counters_text(&d.patched.counters)
            );
            if !s.branches.is_empty() {
                let _ = writeln!(o, "      model path through: {}", s.branches.join("; "));
            }
            if let Some(p) = &s.page {
                let _ = writeln!(o, "      page: {p}");
            }
        }
        if !self.changed_branches.is_empty() {
            let top: Vec<String> = self
                .changed_branches
                .iter()
                .map(|(b, n)| format!("{b} ({n})"))
                .collect();
            let _ = writeln!(
                o,
                "\nBehaviour changed in scenarios through: {}",
                top.join("; ")
            );
        }
        let new = self
            .properties
            .iter()
            .filter(|p| p.change == Change::NewViolation)
            .count();
        let fixed = self
            .properties
            .iter()
            .filter(|p| p.change == Change::Fixed)
            .count();
        let _ = writeln!(
            o,
            "\n{new} propert{} newly violated, {fixed} fixed, {} as on base",
            if new == 1 { "y" } else { "ies" },
            self.properties.len() - new - fixed
        );
        o
    }
}

fn counters_text(c: &BTreeMap<String, i64>) -> String {
    if c.is_empty() {
        return String::new();
    }
    let v: Vec<String> = c.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("; {}", v.join(" "))
}
