//! `trc kernel check` as a library call: a [`Request`] (suites, monitors, profile, corpus,
//! baseline, shard, shrinking) → a [`Plan`] of scenarios → [`check`] on any [`Target`] → a
//! [`CheckReport`], shrunk. `trc kernel check` is this plus argument parsing and printing; a
//! shard's output and `trc merge` of shards are [`shard_file`] and [`merge`].

use crate::coverage::{kernel_coverage, CoveragePlan};
use crate::run::{parse_suites, run, shrink_on, Plan};
use crate::PlanError;
use crate::{Accepted, Case, CaseResult, CheckReport, Monitor, Suite};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use trc_check::shard::{HasUnit, Loaded, Shard, ShardFile};
use trc_check::Error;
use trc_kernel::target::{Target, TargetError};
use trc_model::{Config, Profile};

/// The suites of a patch check unless the caller says otherwise.
pub const PATCH_SUITES: &str = "regressions+coverage+random:20";

/// How the violations are shrunk.
#[derive(Clone, Debug)]
pub enum Shrink {
    /// Not shrunk; why (the report says it).
    Off(String),
    /// At most `budget` kernel runs per violated property; the shrunk scripts go to `out_dir`.
    On { budget: usize, out_dir: PathBuf },
}

/// What to check on a kernel.
#[derive(Clone, Debug)]
pub struct Request {
    pub suites: Vec<Suite>,
    pub monitors: Vec<Monitor>,
    /// The model's profile the kernel is compared with (and random walks are drawn on).
    pub profile: Profile,
    /// The `counterexamples/` directory.
    pub corpus: PathBuf,
    /// Threads for the engine's counterexamples and the coverage suite's state graph.
    pub threads: usize,
    pub baseline: Vec<Accepted>,
    /// Only this shard's scenarios (scenario k is shard k mod N + 1's).
    pub shard: Option<Shard>,
    pub shrink: Shrink,
}

impl Request {
    /// The request of `trc kernel check`'s words: `suite` (`+`-joined suites; default
    /// `regressions`, or [`PATCH_SUITES`] for a comparison of two kernels), the coverage suite's
    /// bounds (`None`: none given), the property ids (all monitored ones when empty) and the
    /// profile (a name or a file). Nothing accepted, every scenario, no shrinking.
    pub fn new(
        suite: Option<&str>,
        two_kernels: bool,
        bounds: Option<Config>,
        properties: &[String],
        profile: &str,
    ) -> Result<Request, PlanError> {
        let default = if two_kernels {
            PATCH_SUITES
        } else {
            "regressions"
        };
        let mut suites = parse_suites(suite.unwrap_or(default))?;
        let has_cov = suites.iter().any(|s| matches!(s, Suite::Coverage(_)));
        if bounds.is_some() && !has_cov {
            let names: Vec<String> = suites.iter().map(Suite::name).collect();
            return Err(PlanError::BoundsWithoutCoverage {
                suites: names.join("+"),
            });
        }
        for s in suites.iter_mut() {
            if let Suite::Coverage(c) = s {
                **c = bounds.clone().unwrap_or_default();
            }
        }
        Ok(Request {
            suites,
            monitors: crate::monitor::select(properties)?,
            profile: trc_check::load_profile(profile)?,
            corpus: default_corpus(),
            threads: 0,
            baseline: Vec::new(),
            shard: None,
            shrink: Shrink::Off("not shrunk".into()),
        })
    }

    /// Every suite's scenarios, prepared under `work` (generated scripts), with the baseline.
    pub fn plan(&self, work: &Path, log: &mut dyn FnMut(&str)) -> Result<Plan, PlanError> {
        let mut plan = Plan::make(
            self.suites.clone(),
            self.monitors.clone(),
            self.profile.clone(),
            &self.corpus,
            work,
            self.threads,
            log,
        )?;
        plan.baseline = self.baseline.clone();
        Ok(plan)
    }

    /// The scenarios of `plan` this request runs (all, or its shard's).
    pub fn owned(&self, plan: &Plan) -> Vec<usize> {
        (0..plan.cases.len())
            .filter(|k| self.shard.is_none_or(|s| s.owns(*k)))
            .collect()
    }
}

/// `counterexamples/` here, else the one of the source tree trc was built from.
pub fn default_corpus() -> PathBuf {
    let here = PathBuf::from("counterexamples");
    if here.is_dir() {
        return here;
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../counterexamples")
}

/// `baseline.toml` here, else the one of the source tree trc was built from.
pub fn default_baseline() -> PathBuf {
    let here = PathBuf::from("baseline.toml");
    if here.is_file() {
        return here;
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../baseline.toml")
}

/// Runs `plan.cases[mine]` on `target`, judges them, and shrinks the violations (unsharded
/// requests only: shards do not shrink) on the same target, the candidates under `work`.
pub fn check(
    req: &Request,
    plan: &Plan,
    mine: &[usize],
    target: &mut dyn Target,
    work: &Path,
    log: &mut dyn FnMut(&str),
) -> Result<CheckReport, TargetError> {
    let (mut rep, _) = run(plan, mine, target, log)?;
    if req.shard.is_some() || !rep.violated() {
        return Ok(rep);
    }
    match &req.shrink {
        Shrink::Off(why) => rep
            .properties
            .iter_mut()
            .filter(|p| p.verdict == crate::Verdict::Violated)
            .for_each(|p| p.shrink_note = Some(why.clone())),
        Shrink::On { budget, out_dir } => {
            std::fs::create_dir_all(out_dir)
                .map_err(|e| TargetError::Usage(format!("{}: {e}", out_dir.display())))?;
            let cases: Vec<Case> = mine.iter().map(|k| plan.cases[*k].clone()).collect();
            shrink_on(
                &mut rep,
                &cases,
                &plan.monitors,
                target,
                *budget,
                &work.join("shrink"),
                out_dir,
                log,
            );
        }
    }
    Ok(rep)
}

/// The report as `--json` prints it: the report's fields and, for the coverage suite, its
/// coverage (`coverage.plan`, and `coverage.kernel`: the share the kernel runs account for).
pub fn report_json(rep: &CheckReport, coverage: Option<&CoveragePlan>) -> serde_json::Value {
    let mut v = serde_json::to_value(rep).expect("a report serialises");
    if let Some(p) = coverage {
        let k = kernel_coverage(p, &rep.cases);
        v["coverage"] = serde_json::json!({"plan": p, "kernel": k});
    }
    v
}

/// The report's text, with the coverage suite's coverage after it.
pub fn report_text(rep: &CheckReport, coverage: Option<&CoveragePlan>) -> String {
    let mut o = rep.render();
    if let Some(p) = coverage {
        o.push_str(&p.render(&kernel_coverage(p, &rep.cases)));
    }
    o
}

/// What a `trc kernel check` shard says about the run (the same in every shard: `trc merge`
/// checks that they agree).
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct ShardArgs {
    pub suite: String,
    pub profile: String,
    pub properties: Vec<String>,
    pub scenarios: Vec<String>,
    /// The baseline the shard judged by (absent in shards of older trc versions: none).
    #[serde(default)]
    pub baseline: Vec<Accepted>,
    /// The coverage suite's plan, when it is one of the suites.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub coverage: Option<CoveragePlan>,
}

/// A `trc kernel check` unit: a scenario's result.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Unit {
    pub unit: usize,
    pub scenario: String,
    pub result: CaseResult,
}

impl HasUnit for Unit {
    fn unit(&self) -> usize {
        self.unit
    }
}

/// The shard's own report: the kernel it ran on (none if it ran no scenario) and its time.
#[derive(Serialize, Deserialize, Clone, Debug, Default)]
pub struct ShardReport {
    pub kernel: Option<String>,
    #[serde(default)]
    pub seconds: f64,
}

/// A shard's output for `trc merge`.
pub fn shard_file(
    plan: &Plan,
    mine: &[usize],
    rep: &CheckReport,
    shard: Shard,
    seconds: f64,
) -> ShardFile<ShardArgs, Unit> {
    let args = ShardArgs {
        suite: plan.suite_name(),
        profile: plan.profile.name.clone(),
        properties: plan.monitors.iter().map(|m| m.id.to_string()).collect(),
        scenarios: plan.cases.iter().map(|c| c.name.clone()).collect(),
        baseline: plan.baseline.clone(),
        coverage: plan.coverage.clone(),
    };
    let units = mine
        .iter()
        .zip(&rep.cases)
        .map(|(k, r)| Unit {
            unit: *k,
            scenario: plan.cases[*k].name.clone(),
            result: r.clone(),
        })
        .collect();
    let mut f = ShardFile::new("kernel-check", shard, plan.cases.len(), args, units);
    let report = ShardReport {
        kernel: (!mine.is_empty()).then(|| rep.kernel.clone()),
        seconds,
    };
    f.report = Some(serde_json::to_value(report).expect("a report serialises"));
    f
}

/// Why `trc merge` cannot merge `trc kernel check` shards (input errors, exit 2).
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// The shard files do not belong together (trc_check's shard checks).
    #[error(transparent)]
    Shards(#[from] Error),
    /// A property the shards were checked for that this trc has no monitor for.
    #[error(transparent)]
    Property(#[from] crate::monitor::SelectError),
    /// Two shards that ran scenarios ran on different kernels.
    #[error("{shard} ran on {kernel}, {other} on {other_kernel}: the shards of one check run on one kernel")]
    Kernels {
        shard: String,
        kernel: String,
        other: String,
        other_kernel: String,
    },
    /// A unit whose scenario is not the suite's scenario of that number (`None`: the suite has
    /// fewer).
    #[error("unit {unit} is scenario {scenario} but the suite's scenario {unit} is {}", expected.as_deref().unwrap_or("none"))]
    Scenario {
        unit: usize,
        scenario: String,
        expected: Option<String>,
    },
}

/// The one kernel the shards ran on (shards that ran scenarios must agree) and their total time.
fn shards_kernel(shards: &[Loaded]) -> Result<(String, f64), MergeError> {
    let mut kernel: Option<(String, &str)> = None;
    let mut seconds = 0.0;
    for s in shards {
        let r: ShardReport = serde_json::from_value(s.v["report"].clone()).unwrap_or_default();
        seconds += r.seconds;
        let Some(k) = r.kernel else { continue };
        match &kernel {
            None => kernel = Some((k, &s.name)),
            Some((k0, n0)) if *k0 != k => {
                return Err(MergeError::Kernels {
                    shard: s.name.clone(),
                    kernel: k,
                    other: n0.to_string(),
                    other_kernel: k0.clone(),
                })
            }
            _ => {}
        }
    }
    Ok((kernel.map(|(k, _)| k).unwrap_or_default(), seconds))
}

/// `trc merge` of `trc kernel check` shards: the scenarios' results in suite order, summarised
/// as the one run summarises them (the summary is a function of the case results alone); the
/// coverage suite's plan, if any; the shards' total time.
pub fn merge(shards: &[Loaded]) -> Result<(CheckReport, Option<CoveragePlan>, f64), MergeError> {
    let (kernel, seconds) = shards_kernel(shards)?;
    let (args, units): (ShardArgs, Vec<Unit>) = trc_check::shard::units_in_order(shards)?;
    let mons = crate::monitor::select(&args.properties)?;
    let mut results = Vec::new();
    for u in units {
        let k = u.unit;
        if args.scenarios.get(k) != Some(&u.result.name) {
            return Err(MergeError::Scenario {
                unit: k,
                scenario: u.result.name,
                expected: args.scenarios.get(k).cloned(),
            });
        }
        results.push(u.result);
    }
    let mut rep = crate::summarise(
        args.suite,
        kernel,
        args.profile,
        results,
        &mons,
        &args.baseline,
    );
    // As the one run would say when nothing could shrink; shards do not shrink the rest.
    crate::shrink::note_unshrunk(
        &mut rep,
        Some("not shrunk: shards do not shrink (run the suite without --shard to shrink it)"),
    );
    Ok((rep, args.coverage, seconds))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::monitor::{Outcome, SelectError};
    use crate::{BadSuite, RunVerdict};

    /// Shard `index` of 2 of a corpus suite of scenarios `a` and `b`, run on `kernel`.
    fn shard(index: usize, kernel: &str, properties: &[&str], scenario: &str) -> Loaded {
        let args = ShardArgs {
            suite: "corpus".into(),
            profile: "linux-6.18".into(),
            properties: properties.iter().map(|p| p.to_string()).collect(),
            scenarios: vec!["a".into(), "b".into()],
            baseline: Vec::new(),
            coverage: None,
        };
        let unit = Unit {
            unit: index - 1,
            scenario: scenario.into(),
            result: crate::tests::case_result(scenario, Outcome::Holds, &[]),
        };
        let shard = Shard { index, count: 2 };
        let mut f = ShardFile::new("kernel-check", shard, 2, args, vec![unit]);
        let report = ShardReport {
            kernel: Some(kernel.into()),
            seconds: 1.0,
        };
        f.report = Some(serde_json::to_value(report).unwrap());
        Loaded {
            name: format!("s{index}.json"),
            header: f.trc_shard.clone(),
            v: f.json(),
        }
    }

    /// The shards' case results come back typed from their JSON; what does not merge is a typed
    /// error with the message the cli prints.
    #[test]
    fn merge_reads_typed_results_and_says_why_not() {
        let (rep, _, seconds) =
            merge(&[shard(1, "k", &["I1"], "a"), shard(2, "k", &["I1"], "b")]).unwrap();
        assert_eq!((rep.kernel.as_str(), seconds), ("k", 2.0));
        assert_eq!(rep.cases.len(), 2);
        assert_eq!(rep.cases[1].kernel, RunVerdict::Passed);
        let e = merge(&[shard(1, "k1", &["I1"], "a"), shard(2, "k2", &["I1"], "b")]).unwrap_err();
        assert!(matches!(e, MergeError::Kernels { .. }), "{e:?}");
        assert_eq!(
            e.to_string(),
            "s2.json ran on k2, s1.json on k1: the shards of one check run on one kernel"
        );
        let e = merge(&[shard(1, "k", &["I99"], "a"), shard(2, "k", &["I99"], "b")]).unwrap_err();
        assert!(
            matches!(&e, MergeError::Property(SelectError::Unknown(id)) if id == "I99"),
            "{e:?}"
        );
        let e = merge(&[shard(1, "k", &["I1"], "a"), shard(2, "k", &["I1"], "x")]).unwrap_err();
        assert!(matches!(e, MergeError::Scenario { unit: 1, .. }), "{e:?}");
        assert_eq!(
            e.to_string(),
            "unit 1 is scenario x but the suite's scenario 1 is b"
        );
    }

    /// Each refused request is its own PlanError variant, with the message it always had.
    #[test]
    fn refused_suites_and_bounds_are_typed_plan_errors() {
        let suite = |s: &str| Request::new(Some(s), false, None, &[], "linux-6.18").unwrap_err();
        for (s, why, text) in [
            (
                "random:x",
                BadSuite::RandomCount,
                "expected random:N[,SEED] with N a number",
            ),
            ("random:3,y", BadSuite::Seed, "SEED must be a number"),
            (
                "random:0",
                BadSuite::RandomRange,
                "N must be between 1 and 10000",
            ),
            (
                "bogus",
                BadSuite::Unknown,
                "expected regressions, corpus, random:N[,SEED], coverage or bulk",
            ),
            ("corpus+corpus", BadSuite::Twice, "a suite is named twice"),
            (
                "regressions+corpus",
                BadSuite::CorpusTwice,
                "regressions already contains corpus",
            ),
        ] {
            let e = suite(s);
            assert!(
                matches!(&e, PlanError::Suite { suite, why: w } if suite == s && *w == why),
                "{e:?}"
            );
            assert_eq!(e.to_string(), format!("--suite {s}: {text}"));
        }
        let bounds = Some(Config::default());
        let e = Request::new(Some("corpus"), false, bounds, &[], "linux-6.18").unwrap_err();
        assert_eq!(e.to_string(), "bounds flags and --config apply only to --suite coverage (the corpus suite's scenarios are fixed)");
        let mut req = Request::new(Some("corpus"), false, None, &[], "linux-6.18").unwrap();
        let dir = std::env::temp_dir().join(format!("trc-kcheck-empty-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        req.corpus = dir.clone();
        let Err(e) = req.plan(&dir.join("work"), &mut |_| {}) else {
            panic!("an empty corpus is planned");
        };
        let _ = std::fs::remove_dir_all(&dir);
        assert!(
            matches!(&e, PlanError::NoScripts { corpus } if *corpus == dir),
            "{e:?}"
        );
    }

    #[test]
    fn a_property_without_a_monitor_is_a_typed_plan_error() {
        let e = Request::new(None, false, None, &["I99".into()], "linux-6.18").unwrap_err();
        assert!(
            matches!(&e, PlanError::Property(SelectError::Unknown(id)) if id == "I99"),
            "{e:?}"
        );
        assert_eq!(e.to_string(), "unknown property `I99`");
    }
}
