//! `trc check --coverage`: how often the explored space went through each branch of each
//! decision function (`trc_model::decision`), and which branches it never reached.
//!
//! A second exploration with the same bounds and properties, whose engine tally
//! (`trc_engine::Hooks::tally`) re-runs every transition of every expanded state with a
//! decision sink: the counts are transitions, duplicates included, and do not depend on the
//! thread count.

use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use trc_engine::{check_with, Options};
use trc_model::decision::{Branch, DecisionCounts};
use trc_model::model::{Action, State, TcpModel};
use trc_model::{Config, Profile};

/// One branch and its count.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct Row {
    pub function: String,
    /// The profile field choosing this function's behaviour and its value on the checked
    /// profile (`packet_delayed=d0fa59`); empty for an undo entry point.
    pub choice: String,
    pub branch: String,
    pub transitions: u64,
}

/// The coverage of one check.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct Coverage {
    pub transitions: u64,
    pub rows: Vec<Row>,
    /// Branches with no transition.
    pub never_reached: Vec<String>,
    /// Warnings for a profile file: decision points it overrides that no transition reached.
    pub warnings: Vec<String>,
}

/// The profile's value of field `f`, as its file would spell it.
fn choice(profile: &Profile, f: &str) -> String {
    if f.is_empty() {
        return String::new();
    }
    let v = serde_json::to_value(profile)
        .ok()
        .and_then(|v| v.get(f).cloned());
    match v {
        Some(serde_json::Value::String(s)) => format!("{f}={s}"),
        Some(other) => format!("{f}={other}"),
        None => f.to_string(),
    }
}

/// Explores `profile` within `cfg` counting decision branches per transition.
pub fn explore(
    cfg: &Config,
    profile: &Profile,
    ids: &[String],
    opts: &Options,
    reduce: bool,
) -> Coverage {
    let model = crate::explore::model(cfg, profile, ids, reduce)
        .expect("ids were checked by the main exploration");
    let hooks = trc_engine::Tallied {
        hooks: crate::state_hooks!(),
        n: Branch::ALL.len(),
        tally: |m: &TcpModel, s: &State, a: &Action, counts: &mut [u64]| {
            let sink = DecisionCounts::default();
            if m.record_decisions(s, *a, &sink) {
                sink.add_to(counts);
            }
        },
    };
    let report = check_with(&model, opts, None, hooks);
    let rows: Vec<Row> = Branch::ALL
        .iter()
        .zip(report.tally.iter().copied().chain(std::iter::repeat(0)))
        .map(|(b, n)| Row {
            function: b.function().to_string(),
            choice: choice(profile, b.profile_field()),
            branch: b.label().to_string(),
            transitions: n,
        })
        .collect();
    let never_reached = rows
        .iter()
        .filter(|r| r.transitions == 0)
        .map(|r| format!("{} [{}]: {}", r.function, r.choice, r.branch))
        .collect();
    Coverage {
        transitions: report.transitions,
        rows,
        never_reached,
        warnings: Vec::new(),
    }
}

impl Coverage {
    /// Warns for each decision point a profile file overrides (`overrides`: its keys) when no
    /// transition went through a situation where its variants differ, at these bounds. Fields without a counted branch
    /// (CUBIC/HyStart ones) get a warning that says so.
    pub fn warn_overrides(&mut self, overrides: &[String]) {
        for f in overrides {
            // The situations where the variants differ (all of the function's, if none is marked).
            let all: Vec<(&Branch, &Row)> = Branch::ALL
                .iter()
                .zip(&self.rows)
                .filter(|(b, _)| b.profile_field() == f)
                .collect();
            let applies: Vec<&Row> = all
                .iter()
                .filter(|(b, _)| b.choice_applies())
                .map(|(_, r)| *r)
                .collect();
            let rows: Vec<&Row> = if applies.is_empty() {
                all.iter().map(|(_, r)| *r).collect()
            } else {
                applies
            };
            if rows.is_empty() {
                self.warnings.push(format!("`{f}`: --coverage does not count this decision point's branches (CUBIC/HyStart are not instrumented); its effect is unknown"));
            } else if rows.iter().all(|r| r.transitions == 0) {
                self.warnings.push(format!(
                    "`{f}` ({}): your change was not exercised: no explored transition reached it at these bounds; try larger bounds (--segments, --losses, --rtos, --tlps, --reorder, --writes)",
                    rows[0].function
                ));
            }
        }
    }

    /// The coverage table as `trc check --coverage` prints it after the summary.
    pub fn render(&self) -> String {
        let mut o = String::new();
        let _ = writeln!(o, "\ndecision-point coverage ({} transitions explored; counts are transitions through the branch):", self.transitions);
        let mut last = ("", "");
        for r in &self.rows {
            if (r.function.as_str(), r.choice.as_str()) != last {
                let choice = if r.choice.is_empty() {
                    String::new()
                } else {
                    format!(" [{}]", r.choice)
                };
                let _ = writeln!(o, "  {}{choice}", r.function);
                last = (r.function.as_str(), r.choice.as_str());
            }
            let _ = writeln!(o, "    {:>10}  {}", r.transitions, r.branch);
        }
        if self.never_reached.is_empty() {
            let _ = writeln!(o, "every branch was reached");
        } else {
            let _ = writeln!(o, "never reached ({}):", self.never_reached.len());
            for n in &self.never_reached {
                let _ = writeln!(o, "  {n}");
            }
        }
        for w in &self.warnings {
            let _ = writeln!(o, "warning: {w}");
        }
        o
    }
}
