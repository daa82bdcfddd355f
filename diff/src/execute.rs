//! Execution: an exported walk run on the kernel (with the rerun policy for timing-ambiguous
//! runs) and judged by [`crate::compare`].

use crate::compare::{compare, kernel_view, model_view, Comparison};
use crate::generate::{GenOptions, Scenario};
use serde::{Deserialize, Serialize};
use trc_model::model::Action;
use trc_model::{CcKind, Profile};
use trc_trace::export::{self, Exported};

/// Why a scenario's kernel run could not be judged against the model (the scenario's note says
/// it, and the scenario is an error, not an agreement or a disagreement).
#[derive(Debug, thiserror::Error)]
pub enum TrialError {
    /// The exported script does not parse.
    #[error(transparent)]
    Parse(#[from] trc_pkt::ParseError),
    /// The script's line `line` belongs to step `step`, which the model's trace does not have.
    #[error("line {line}: step {step} not in the trace")]
    MissingStep { line: u32, step: usize },
    /// The kernel connection did not use the model's congestion control.
    #[error("the connection used {0:?}")]
    WrongCc(Option<String>),
    /// The script's directory could not be prepared.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The kernel run failed ([`trial`]).
    #[error(transparent)]
    Run(#[from] trc_kernel::RunError),
    /// The kernel run failed, as the batch's target reports it.
    #[error(transparent)]
    Target(#[from] trc_kernel::target::NoReport),
}

/// One kernel run of one exported walk.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Trial {
    pub comparison: Comparison,
    pub ambiguous: Option<String>,
}

/// The verdict on one scenario.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Agree,
    Disagree,
    /// Stayed timing-ambiguous over every rerun.
    Flaky,
    /// The kernel could not run it (setup error).
    Error,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ScenarioResult {
    pub scenario: Scenario,
    pub verdict: Verdict,
    /// Kernel runs used (1 + reruns).
    pub runs: usize,
    pub trial: Option<Trial>,
    pub note: Option<String>,
    /// Shrunk script of a disagreement, if saved.
    pub saved: Option<String>,
    /// Actions of the shrunk walk.
    pub shrunk_steps: Option<usize>,
}

/// Exports `actions` of `sc`'s configuration.
pub fn export_actions(
    profile: &Profile,
    sc: &Scenario,
    actions: &[Action],
    g: &GenOptions,
) -> Result<Exported, export::ExportError> {
    export::export_walk(
        &sc.model(profile),
        0,
        actions,
        &format!("{} seed {:#x}", sc.name(), sc.seed),
        g.spacing(),
    )
}

/// Runs an exported walk once on the kernel and compares it with the model.
pub fn trial(x: &Exported, name: &str) -> Result<Trial, TrialError> {
    let views = model_view(x)?;
    let script = trc_pkt::parse(&x.pkt, name)?;
    let dir = std::env::temp_dir().join(format!("trc-diff-{}", std::process::id()));
    trc_trace::write_defaults(&dir)?;
    let opts = trc_kernel::RunOptions {
        script_dir: dir,
        ..Default::default()
    };
    let k = trc_kernel::run_script(&script, name, &opts)?;
    judge(x, &views, &k)
}

/// Judges one kernel run (`k`, of the script `x` exported) against the model's views.
pub fn judge(
    x: &Exported,
    views: &[crate::compare::StepView],
    k: &trc_kernel::RunReport,
) -> Result<Trial, TrialError> {
    if k.congestion_control.as_deref()
        != Some(if x.trace.config.cc == CcKind::Reno {
            "reno"
        } else {
            "cubic"
        })
    {
        return Err(TrialError::WrongCc(k.congestion_control.clone()));
    }
    let (kobs, problems) = kernel_view(k, views);
    let comparison = compare(views, &kobs);
    // Only timing up to the diverging step's asserts can have caused the divergence. Later
    // lines ran on diverged kernel state: a segment the model expects and the kernel never
    // sends holds the runner for the outbound grace period (~1 s) and segments consumed out of
    // order shift the script's clock, so later injections are "late" because of the
    // divergence, not the other way round.
    let upto = comparison.divergence.as_ref().map_or(u32::MAX, |d| d.line);
    let ambiguous = problems
        .into_iter()
        .find(|(line, _)| *line <= upto)
        .map(|p| p.1);
    Ok(Trial {
        comparison,
        ambiguous,
    })
}

pub(crate) fn same(a: &Trial, b: &Trial) -> bool {
    match (&a.comparison.divergence, &b.comparison.divergence) {
        (Some(x), Some(y)) => x.step == y.step && x.field_names() == y.field_names(),
        _ => false,
    }
}

/// Runs a scenario with the rerun policy: a clean agreement is final; a disagreement must repeat
/// (same step, same fields) without a timing problem; otherwise rerun up to `reruns` times.
pub fn run_scenario(
    profile: &Profile,
    sc: &Scenario,
    g: &GenOptions,
    reruns: usize,
) -> ScenarioResult {
    let mut res = ScenarioResult {
        scenario: sc.clone(),
        verdict: Verdict::Error,
        runs: 0,
        trial: None,
        note: None,
        saved: None,
        shrunk_steps: None,
    };
    let x = match export_actions(profile, sc, &sc.actions, g) {
        Ok(x) => x,
        Err(e) => {
            res.note = Some(format!("export: {e}"));
            return res;
        }
    };
    let mut clean_disagreements: Vec<Trial> = Vec::new();
    let mut last = None;
    for _ in 0..=reruns {
        res.runs += 1;
        let t = match trial(&x, &format!("{}.pkt", sc.name())) {
            Ok(t) => t,
            Err(e) => {
                res.note = Some(format!("kernel: {e}"));
                return res;
            }
        };
        if t.ambiguous.is_none() {
            if t.comparison.divergence.is_none() {
                res.verdict = Verdict::Agree;
                if res.runs > 1 {
                    res.note = Some("agreed on a rerun".into());
                }
                res.trial = Some(t);
                return res;
            }
            if let Some(prev) = clean_disagreements.iter().find(|p| same(p, &t)) {
                let _ = prev;
                res.verdict = Verdict::Disagree;
                res.trial = Some(t);
                return res;
            }
            clean_disagreements.push(t.clone());
        }
        last = Some(t);
    }
    res.verdict = Verdict::Flaky;
    res.note = last
        .as_ref()
        .and_then(|t| t.ambiguous.clone())
        .or(Some("disagreements did not repeat".into()));
    res.trial = last;
    res
}
