//! The typed report of a check: [`CheckReport`] (one bounds file's exploration, or the merge of
//! its shards), its properties' [`PropResult`]s with their signatures, and counterexamples in
//! kernel terms ([`Step`]).

use crate::coverage::Coverage;
use crate::property_id;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use trc_engine::dist::DistReport;
use trc_engine::{replay, Report, SpillReport, StopReason, Verdict};
use trc_model::mib::MibDelta;
use trc_model::model::{Action, State, TcpModel};
use trc_model::state::CaState;
use trc_model::{Config, Profile};
use trc_properties::baseline::Accepted;

/// A check's result, as its exit code says it.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// No violation outside the baseline within the bounds (exit 0).
    Holds,
    /// No violation, but the check stopped before the bounds were explored (exit 3).
    Incomplete,
    /// A property is violated with a signature neither accepted nor on the comparison profile
    /// (exit 1).
    Violated,
}

impl Outcome {
    /// The outcome of several checks: the worst.
    pub fn worst(all: impl IntoIterator<Item = Outcome>) -> Outcome {
        all.into_iter().max().unwrap_or(Outcome::Holds)
    }
}

/// The comparison profile of a report (`--against`, a profile file's base).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Against {
    pub profile: String,
    /// Its check stopped early.
    pub incomplete: bool,
}

/// One bounds file's check (`trc check --json` prints it; several bounds files print
/// `{"result", "runs": [...]}`).
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct CheckReport {
    pub result: Outcome,
    pub profile: Profile,
    pub against: Option<Against>,
    pub config: Config,
    pub unique_states: u64,
    pub transitions: u64,
    pub max_depth: usize,
    pub seconds: f64,
    pub complete: bool,
    pub incomplete: bool,
    pub stop_reason: StopReason,
    pub peak_memory_bytes: u64,
    pub spill: Option<SpillReport>,
    /// A distributed check's figures (`trc check --mpi`): per-rank memory, traffic per level.
    pub distributed: Option<DistReport>,
    pub properties: Vec<PropResult>,
    pub coverage: Option<Coverage>,
}

/// A property's outcome: its verdict and, when violated, every signature its violations have,
/// each classified against the baseline and the comparison profile.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct PropResult {
    pub id: String,
    pub name: String,
    pub verdict: Verdict,
    /// Violated, but every signature is accepted or also on the comparison profile: why, in
    /// one line (the findings, the base).
    pub accepted: Option<String>,
    /// In the canonical order of their first violating states (shortest first).
    pub signatures: Vec<SigResult>,
    /// The signature of the counterexample below: the shortest one that fails, else the
    /// shortest of all.
    pub counterexample_signature: Option<String>,
    pub counterexample: Option<Vec<Step>>,
    /// The path of that counterexample (for `--out`); not in the JSON.
    #[serde(skip)]
    pub path: Option<trc_engine::Path<Action>>,
}

impl PropResult {
    /// Whether this property fails the check: a violation with a new signature.
    pub fn fails(&self) -> bool {
        self.verdict == Verdict::Violated && self.accepted.is_none()
    }
}

/// How a signature is judged.
#[derive(Serialize, Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "kebab-case")]
pub enum SigStatus {
    /// Neither accepted nor on the comparison profile: fails the check.
    New,
    /// Listed in the baseline.
    Accepted,
    /// Also occurs on the comparison profile (`--against`, a profile file's base).
    AlsoOnBase,
}

/// One signature of a property's violations.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct SigResult {
    pub signature: String,
    pub status: SigStatus,
    /// The baseline's finding (`F1`), if accepted.
    pub finding: Option<String>,
    /// Violating states with this signature.
    pub states: u64,
    /// Events of its shortest counterexample.
    pub events: usize,
    /// It also occurs on the comparison profile (whatever its status).
    pub also_on_base: bool,
}

/// The comparison profile's signatures (same bounds, same properties).
#[derive(Serialize, Deserialize, Clone, Debug, Default)]
pub struct Base {
    #[serde(rename = "profile")]
    pub name: String,
    /// Its check stopped early: signatures missing there are not evidence of a new one.
    pub incomplete: bool,
    pub signatures: BTreeMap<String, BTreeSet<String>>,
}

/// One step of a counterexample in kernel terms.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Step {
    pub event: String,
    pub sack: bool,
    pub time_ms: u32,
    /// Serialised as its name (`"Recovery"`).
    pub ca_state: CaState,
    pub cwnd: u32,
    pub ssthresh: u32,
    pub snd_una: u32,
    pub snd_nxt: u32,
    pub high_seq: u32,
    pub retrans_stamp: u32,
    pub undo_marker: u32,
    pub undo_retrans: i32,
    pub packets_out: u32,
    pub sacked_out: u32,
    pub lost_out: u32,
    pub retrans_out: u32,
    pub notes: Vec<String>,
    /// The MIB counters this step moved, by their nstat names (e.g. `TcpExtTCPLossUndo`).
    pub counters: BTreeMap<String, u32>,
}

impl Step {
    fn of(event: String, s: &State, mib: &MibDelta) -> Step {
        let x = &s.sender;
        Step {
            event,
            sack: x.sack_ok,
            time_ms: s.now,
            ca_state: x.ca_state,
            cwnd: x.cwnd,
            ssthresh: x.ssthresh,
            snd_una: x.snd_una,
            snd_nxt: x.snd_nxt,
            high_seq: x.high_seq,
            retrans_stamp: x.retrans_stamp,
            undo_marker: x.undo_marker,
            undo_retrans: x.undo_retrans,
            packets_out: x.packets_out,
            sacked_out: x.sacked_out,
            lost_out: x.lost_out,
            retrans_out: x.retrans_out,
            notes: trc_trace::notes(s),
            counters: mib
                .nonzero()
                .map(|(m, n)| (m.name().to_string(), n))
                .collect(),
        }
    }
}

/// A path in kernel terms: the initial state, then every step with the MIB counters it moved.
pub fn counterexample(model: &TcpModel, path: &trc_engine::Path<Action>) -> Vec<Step> {
    let init = replay(
        model,
        &trc_engine::Path {
            init_index: path.init_index,
            actions: vec![],
        },
    )
    .swap_remove(0)
    .1;
    let sack = if init.sender.sack_ok {
        "SACK"
    } else {
        "no SACK"
    };
    let mut out = vec![Step::of(
        format!("initial state ({sack}), first flight sent"),
        &init,
        &MibDelta::default(),
    )];
    let mut prev = init;
    for (i, a) in path.actions.iter().enumerate() {
        let (next, mib) = model
            .next_state_counted(&prev, *a)
            .unwrap_or_else(|| panic!("counterexample: action {i} of the path has no next state"));
        out.push(Step::of(trc_trace::event_text(&prev, a), &next, &mib));
        prev = next;
    }
    out
}

/// The status of `signature` of property `id`: accepted by the baseline, also on the
/// comparison profile, or new.
fn judge(
    id: &str,
    signature: &str,
    baseline: &[Accepted],
    base: Option<&Base>,
) -> (SigStatus, Option<String>, bool) {
    let acc = trc_properties::baseline::find(baseline, signature);
    let on_base = base.is_some_and(|b| b.signatures.get(id).is_some_and(|s| s.contains(signature)));
    let status = if acc.is_some() {
        SigStatus::Accepted
    } else if on_base {
        SigStatus::AlsoOnBase
    } else {
        SigStatus::New
    };
    (status, acc.map(|a| a.finding.clone()), on_base)
}

/// Why a violated property whose signatures are all accepted or on the base does not fail, in
/// one line (`accepted F1, also on linux-6.15`).
pub(crate) fn accepted_why(signatures: &[SigResult], base: Option<&str>) -> String {
    let mut why: Vec<String> = Vec::new();
    for s in signatures {
        let w = match s.status {
            SigStatus::Accepted => format!("accepted {}", s.finding.as_deref().unwrap_or("?")),
            _ => format!("also on {}", base.unwrap_or("?")),
        };
        if !why.contains(&w) {
            why.push(w);
        }
    }
    why.join(", ")
}

/// Every property's result from the engine's report, judged against the baseline and the base.
pub fn results(
    model: &TcpModel,
    report: &Report<Action>,
    baseline: &[Accepted],
    base: Option<&Base>,
) -> Vec<PropResult> {
    report
        .properties
        .iter()
        .map(|p| {
            let id = property_id(p.name).to_string();
            let signatures: Vec<SigResult> = p
                .classes
                .iter()
                .map(|c| {
                    let signature = trc_properties::signature::describe(&id, c.class);
                    let (status, finding, also_on_base) = judge(&id, &signature, baseline, base);
                    SigResult {
                        signature,
                        status,
                        finding,
                        states: c.count,
                        events: c.path.len(),
                        also_on_base,
                    }
                })
                .collect();
            let failing = p
                .classes
                .iter()
                .zip(&signatures)
                .find(|(_, s)| s.status == SigStatus::New);
            let (shown_sig, shown_path) = match (failing, p.classes.first()) {
                (Some((c, s)), _) => (Some(s.signature.clone()), Some(&c.path)),
                (None, Some(c)) => (Some(signatures[0].signature.clone()), Some(&c.path)),
                (None, None) => (None, p.path.as_ref()),
            };
            let accepted =
                (p.verdict == Verdict::Violated && !p.classes.is_empty() && failing.is_none())
                    .then(|| accepted_why(&signatures, base.map(|b| b.name.as_str())));
            PropResult {
                id,
                name: p.name.to_string(),
                verdict: p.verdict,
                accepted,
                counterexample_signature: shown_sig,
                counterexample: shown_path.map(|path| counterexample(model, path)),
                path: shown_path
                    .filter(|_| p.verdict == Verdict::Violated)
                    .cloned(),
                signatures,
            }
        })
        .collect()
}

/// The check stopped before its bounds were explored (memory budget, state limit): without a
/// violation that is not a pass (exit 3). `--max-depth` and `--fail-fast` are not this: the
/// first is a bound, the second stops only at a violation.
pub fn incomplete(stop: StopReason) -> bool {
    matches!(stop, StopReason::MemoryBudget | StopReason::MaxStates)
}

/// The outcome of a report's properties: violated when one fails, else incomplete or holds.
pub fn outcome(properties: &[PropResult], incomplete: bool) -> Outcome {
    if properties.iter().any(PropResult::fails) {
        Outcome::Violated
    } else if incomplete {
        Outcome::Incomplete
    } else {
        Outcome::Holds
    }
}

impl CheckReport {
    /// The report of one exploration.
    pub fn new(
        model: &TcpModel,
        report: &Report<Action>,
        properties: Vec<PropResult>,
        base: Option<&Base>,
        coverage: Option<Coverage>,
    ) -> CheckReport {
        let incomplete = incomplete(report.stop_reason);
        CheckReport {
            result: outcome(&properties, incomplete),
            profile: model.profile.clone(),
            against: base.map(|b| Against {
                profile: b.name.clone(),
                incomplete: b.incomplete,
            }),
            config: model.cfg.clone(),
            unique_states: report.unique_states,
            transitions: report.transitions,
            max_depth: report.max_depth,
            seconds: report.elapsed.as_secs_f64(),
            complete: report.complete,
            incomplete,
            stop_reason: report.stop_reason,
            peak_memory_bytes: report.peak_memory_bytes,
            spill: report.spill.clone(),
            distributed: report.dist.clone(),
            properties,
            coverage,
        }
    }

    /// Whether a property fails the check (exit 1).
    pub fn failing(&self) -> bool {
        self.result == Outcome::Violated
    }

    /// The property `id`'s result.
    pub fn property(&self, id: &str) -> Option<&PropResult> {
        self.properties.iter().find(|p| p.id == id)
    }

    /// The JSON `trc check --json` prints: one report as it is, several (one per bounds file) as
    /// `{"result", "runs": [...]}`. Keys are sorted at every level.
    pub fn json(runs: &[CheckReport]) -> serde_json::Value {
        let v = |r: &CheckReport| serde_json::to_value(r).expect("a report serialises");
        if runs.len() == 1 {
            return v(&runs[0]);
        }
        serde_json::json!({
            "result": Outcome::worst(runs.iter().map(|r| r.result)),
            "runs": runs.iter().map(v).collect::<Vec<_>>(),
        })
    }
}
