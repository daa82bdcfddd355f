//! `trc diff` on a kernel that runs scripts in batches (a VM: one boot per batch): every
//! scenario's script runs in the first batch; the ones that disagreed or were timing-ambiguous
//! run again in the next batch, up to `reruns` times, with [`crate::run_scenario`]'s policy (a
//! clean agreement is final, a disagreement must repeat at the same step and fields without a
//! timing problem, anything else is flaky). Disagreements are saved as their diverging prefix,
//! not shrunk (shrinking needs kernel runs one candidate at a time).

use crate::execute::{export_actions, judge, same, ScenarioResult, Trial, TrialError, Verdict};
use crate::generate::{generate, Scenario};
use crate::{account, DiffOptions, DiffReport, FIELDS};
use trc_kernel::target::{NoReport, ScriptRun};
use trc_trace::export::Exported;

/// Runs a batch of scripts `(name, text)` on the kernel: one report (or why none) per script.
pub type Exec<'a> = dyn FnMut(&[(String, String)]) -> Vec<ScriptRun> + 'a;

struct Pending {
    i: usize,
    sc: Scenario,
    x: Option<Exported>,
    views: Vec<crate::compare::StepView>,
    res: ScenarioResult,
    clean: Vec<Trial>,
    last: Option<Trial>,
    done: bool,
}

/// One judged run of scenario `p`: updates it with [`crate::run_scenario`]'s policy.
fn step(p: &mut Pending, run: &ScriptRun) {
    p.res.runs += 1;
    let t = match run
        .as_ref()
        .map_err(|e| TrialError::Target(e.clone()))
        .and_then(|k| judge(p.x.as_ref().expect("exported"), &p.views, k))
    {
        Ok(t) => t,
        Err(e) => {
            p.res.note = Some(format!("kernel: {e}"));
            p.done = true;
            return;
        }
    };
    if t.ambiguous.is_none() {
        if t.comparison.divergence.is_none() {
            p.res.verdict = Verdict::Agree;
            if p.res.runs > 1 {
                p.res.note = Some("agreed on a rerun".into());
            }
            p.res.trial = Some(t);
            p.done = true;
            return;
        }
        if p.clean.iter().any(|c| same(c, &t)) {
            p.res.verdict = Verdict::Disagree;
            p.res.trial = Some(t);
            p.done = true;
            return;
        }
        p.clean.push(t.clone());
    }
    p.last = Some(t);
}

/// The differential run of `opts` with batched kernel runs (`exec`); the report as [`crate::run`]'s.
pub fn run_batched(opts: &DiffOptions, exec: &mut Exec, log: &mut dyn FnMut(&str)) -> DiffReport {
    let mut rep = DiffReport {
        profile: opts.profile.name.clone(),
        seed: opts.seed,
        fields: FIELDS.iter().map(|f| (f.to_string(), (0, 0))).collect(),
        ..Default::default()
    };
    let indices: Vec<usize> = match (&opts.fixed, &opts.only) {
        (Some(_), _) => vec![0],
        (None, Some(o)) => o.clone(),
        (None, None) => (0..opts.scenarios).collect(),
    };
    rep.scenarios = indices.len();
    let mut ps: Vec<Pending> = indices
        .iter()
        .map(|&i| {
            let sc = opts
                .fixed
                .clone()
                .unwrap_or_else(|| generate(&opts.profile, opts.seed, i, &opts.gen));
            let mut res = ScenarioResult {
                scenario: sc.clone(),
                verdict: Verdict::Error,
                runs: 0,
                trial: None,
                note: None,
                saved: None,
                shrunk_steps: None,
            };
            let x = export_actions(&opts.profile, &sc, &sc.actions, &opts.gen)
                .map_err(|e| res.note = Some(format!("export: {e}")))
                .ok();
            let views = x
                .as_ref()
                .and_then(|x| {
                    crate::compare::model_view(x)
                        .map_err(|e| res.note = Some(e.to_string()))
                        .ok()
                })
                .unwrap_or_default();
            let done = views.is_empty();
            Pending {
                i,
                sc,
                x,
                views,
                res,
                clean: Vec::new(),
                last: None,
                done,
            }
        })
        .collect();
    for round in 0..=opts.reruns {
        let todo: Vec<usize> = (0..ps.len()).filter(|k| !ps[*k].done).collect();
        if todo.is_empty() {
            break;
        }
        log(&format!("batch {}: {} scenario(s)", round + 1, todo.len()));
        let scripts: Vec<(String, String)> = todo
            .iter()
            .map(|k| {
                let p = &ps[*k];
                (
                    format!("{}.pkt", p.sc.name()),
                    p.x.as_ref().expect("exported").pkt.clone(),
                )
            })
            .collect();
        let runs = exec(&scripts);
        for (j, k) in todo.iter().enumerate() {
            let r = runs.get(j).cloned().unwrap_or(Err(NoReport::Missing));
            step(&mut ps[*k], &r);
        }
    }
    for p in ps.iter_mut() {
        if !p.done {
            p.res.verdict = Verdict::Flaky;
            p.res.note = p
                .last
                .as_ref()
                .and_then(|t| t.ambiguous.clone())
                .or(Some("disagreements did not repeat".into()));
            p.res.trial = p.last.take();
        }
    }
    for p in ps {
        account(&mut rep, p.i, &p.sc, &p.res, log);
        let mut r = p.res;
        if let (Verdict::Disagree, Some(dir), Some(t)) = (&r.verdict, &opts.out, &r.trial) {
            if let Some(d) = &t.comparison.divergence {
                let walk = &p.sc.actions[..d.step.min(p.sc.actions.len())];
                if let Ok(x) = export_actions(&opts.profile, &p.sc, walk, &opts.gen) {
                    let _ = std::fs::create_dir_all(dir);
                    let path = dir.join(format!("diff-{}.pkt", p.sc.name()));
                    let text = format!(
                        "// trc diff: first diverging step {}: {} (prefix only, not shrunk)\n{}",
                        d.step,
                        d.describe(),
                        x.pkt
                    );
                    if trc_files::write_atomic(&path, text.as_bytes()).is_ok() {
                        r.saved = Some(path.display().to_string());
                        r.shrunk_steps = Some(walk.len());
                    }
                }
            }
        }
        rep.results.push(r);
    }
    rep
}
