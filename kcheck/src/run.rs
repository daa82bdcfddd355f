//! The check as a library call: a [`Plan`] (the suites' scenarios, the monitors, the profile),
//! [`run`] on any [`Target`], and [`shrink_on`] for the violations found. `trc kernel check`
//! is this plus argument parsing and printing.

use crate::coverage::{self, CoveragePlan};
use crate::{
    evaluate_all, plan as plan_suite, summarise, Accepted, Case, CheckReport, Monitor, Suite,
};
use crate::{BadSuite, PlanError};
use std::path::{Path, PathBuf};
use trc_kernel::target::{Batch, NoReport, ScriptRun, Target, TargetError};
use trc_model::Profile;

/// What a check runs: the scenarios of one or more suites, in order, with the monitors that
/// judge them and the profile they are replayed on.
pub struct Plan {
    pub suites: Vec<Suite>,
    pub cases: Vec<Case>,
    /// The coverage suite's plan, when it is one of the suites.
    pub coverage: Option<CoveragePlan>,
    pub monitors: Vec<Monitor>,
    pub profile: Profile,
    /// The accepted findings: a kernel violation in a scenario that stands for one is reported
    /// as accepted, not as a failure.
    pub baseline: Vec<Accepted>,
}

/// `+`-separated suites (`regressions+coverage+random:20`), each as [`Suite::parse`] takes it.
pub fn parse_suites(s: &str) -> Result<Vec<Suite>, PlanError> {
    let out: Vec<Suite> = s
        .split('+')
        .map(str::trim)
        .map(Suite::parse)
        .collect::<Result<_, _>>()?;
    let mut names: Vec<String> = out.iter().map(Suite::name).collect();
    names.sort();
    let bad = |why| PlanError::Suite {
        suite: s.to_string(),
        why,
    };
    if names.windows(2).any(|w| w[0] == w[1]) {
        return Err(bad(BadSuite::Twice));
    }
    if out.contains(&Suite::Regressions) && out.contains(&Suite::Corpus) {
        return Err(bad(BadSuite::CorpusTwice));
    }
    Ok(out)
}

impl Plan {
    /// Prepares every suite's scenarios (generated scripts go under `work`; `corpus` is the
    /// `counterexamples/` directory), with no finding accepted (set [`Plan::baseline`]).
    pub fn make(
        suites: Vec<Suite>,
        monitors: Vec<Monitor>,
        profile: Profile,
        corpus: &Path,
        work: &Path,
        threads: usize,
        log: &mut dyn FnMut(&str),
    ) -> Result<Plan, PlanError> {
        let mut cases = Vec::new();
        let mut cov = None;
        for s in &suites {
            match s {
                Suite::Coverage(cfg) => {
                    let (p, c) = coverage::plan(cfg, &profile, work, threads, log)?;
                    cov = Some(p);
                    cases.extend(c);
                }
                _ => cases.extend(plan_suite(s, corpus, work, &profile, threads, log)?),
            }
        }
        Ok(Plan {
            suites,
            cases,
            coverage: cov,
            monitors,
            profile,
            baseline: Vec::new(),
        })
    }

    /// The suites' names, `+`-joined.
    pub fn suite_name(&self) -> String {
        self.suites
            .iter()
            .map(Suite::name)
            .collect::<Vec<_>>()
            .join("+")
    }
}

/// The scripts of `cases`.
pub fn paths(cases: &[Case]) -> Vec<PathBuf> {
    cases.iter().map(|c| c.path.clone()).collect()
}

/// Runs `plan.cases[todo]` on `target` and judges them: the report (not yet shrunk) and the
/// batch's raw runs (in `todo` order).
pub fn run(
    plan: &Plan,
    todo: &[usize],
    target: &mut dyn Target,
    log: &mut dyn FnMut(&str),
) -> Result<(CheckReport, Vec<ScriptRun>), TargetError> {
    let cases: Vec<Case> = todo.iter().map(|k| plan.cases[*k].clone()).collect();
    let batch = if cases.is_empty() {
        Batch {
            kernel: String::new(),
            runs: Vec::new(),
        }
    } else {
        target.run(&paths(&cases), log)?
    };
    let results = evaluate_all(&cases, &batch.runs, &plan.monitors, &plan.profile);
    Ok((
        summarise(
            plan.suite_name(),
            batch.kernel,
            plan.profile.name.clone(),
            results,
            &plan.monitors,
            &plan.baseline,
        ),
        batch.runs,
    ))
}

/// Shrinks `rep`'s violations on `target` ([`crate::shrink::shrink_report`], `budget` kernel
/// runs per property), the candidates under `work`, the shrunk scripts in `out_dir`.
#[allow(clippy::too_many_arguments)]
pub fn shrink_on(
    rep: &mut CheckReport,
    cases: &[Case],
    monitors: &[Monitor],
    target: &mut dyn Target,
    budget: usize,
    work: &Path,
    out_dir: &Path,
    log: &mut dyn FnMut(&str),
) {
    let batched = target.batched();
    let mut quiet = |_: &str| {};
    let mut run = |cs: &[Case]| -> Vec<ScriptRun> {
        if trc_kernel::sys::interrupted() || cs.is_empty() {
            return Vec::new();
        }
        let cs = if batched { cs } else { &cs[..1] };
        match target.run(&paths(cs), &mut quiet) {
            Ok(b) => b.runs,
            Err(e) => cs
                .iter()
                .map(|_| Err(NoReport::Target(e.clone())))
                .collect(),
        }
    };
    let mut runner = crate::shrink::Runner {
        run: &mut run,
        batched,
    };
    crate::shrink::shrink_report(
        rep,
        cases,
        monitors,
        budget,
        work,
        out_dir,
        &mut runner,
        log,
    );
}
