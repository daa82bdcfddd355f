//! `trc-diff`: differential testing, the model against the real kernel (`trc diff`).
//!
//! A *scenario* is a seeded random walk over the model's own enabled environment actions
//! (deliveries in and out of order, drops, lost ACKs, RTO/TLP/RACK timer expiries, writes), from
//! a randomly drawn configuration (SACK, timestamps, segments, initcwnd, budgets, cubic/reno).
//! Actions a real kernel cannot be made to reproduce are never chosen: TSQ fills (a kernel
//! cannot be forced to hold a retransmission), ECE-marked ACKs (the exported handshake does not
//! negotiate ECN), late deliveries and idle writes (not exported). Every prefix of the walk must
//! export ([`trc_trace::export::export_walk`]) with inbound ACKs spaced `gap_ms` apart and at least
//! `margin_ms` away from a pending timer, so that the script means the same thing at HZ=250.
//!
//! The exported script runs on the kernel ([`trc_kernel::run_script`]); at every step that the
//! script asserts (every step with an inbound ACK, write or timer transmission) the kernel's
//! `tcp_info`, undo counters and the segments it sent since the previous step are compared with
//! the model's state after that step. Comparison stops at the first diverging step (later
//! inbound ACKs were computed from the model's behaviour and no longer mean anything).
//!
//! Timing: a kernel run in which an outbound segment left outside the tolerance, or an inbound
//! segment was injected late, is *ambiguous*; a disagreement is only reported if a rerun gives
//! the same first divergence with no timing problem. A scenario that stays ambiguous is *flaky*
//! and excluded from the agreement figures (listed separately).
//!
//! Modules, in the order a run uses them: [`generate`] (scenarios), [`execute`] (kernel runs and
//! the rerun policy), [`compare`] (model and kernel views, first divergence), [`shrink`] (delta
//! debugging of a disagreement). [`run`] drives them and builds the [`DiffReport`].
#![forbid(unsafe_code)]

pub mod batch;
pub mod compare;
pub mod execute;
pub mod generate;
pub mod shrink;

pub use compare::{counters, Comparison, Divergence, Obs, StepView, FIELDS};
pub use execute::{
    export_actions, run_scenario, trial, ScenarioResult, Trial, TrialError, Verdict,
};
pub use generate::{bulk, generate, normalize, BulkSpec, GenOptions, Rng, Scenario};
pub use shrink::shrink;

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use trc_model::Profile;

/// Options of a differential run.
#[derive(Clone, Debug)]
pub struct DiffOptions {
    pub profile: Profile,
    pub scenarios: usize,
    pub seed: u64,
    pub gen: GenOptions,
    /// Reruns of an ambiguous or disagreeing scenario.
    pub reruns: usize,
    /// Directory for shrunk scripts of disagreements (`None`: not saved, not shrunk).
    pub out: Option<std::path::PathBuf>,
    /// Kernel runs allowed per shrink.
    pub shrink_budget: usize,
    /// Shrink at most this many disagreements per distinct first-divergence signature.
    pub shrink_per_signature: usize,
    /// Write every scenario's script here (`<name>.pkt`), agreeing or not.
    pub keep: Option<std::path::PathBuf>,
    /// Run only these scenario indices of the seed (`None`: `0..scenarios`).
    pub only: Option<Vec<usize>>,
    /// Instead of random scenarios, this one (e.g. [`generate::bulk`]).
    pub fixed: Option<Scenario>,
}

impl Default for DiffOptions {
    fn default() -> Self {
        DiffOptions {
            profile: Profile::linux_6_18(),
            scenarios: 20,
            seed: 1,
            gen: GenOptions::default(),
            reruns: 2,
            out: None,
            shrink_budget: 40,
            shrink_per_signature: 1,
            keep: None,
            only: None,
            fixed: None,
        }
    }
}

/// The result of a differential run.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct DiffReport {
    pub profile: String,
    pub seed: u64,
    pub scenarios: usize,
    pub agree: usize,
    pub disagree: usize,
    pub flaky: usize,
    pub errors: usize,
    pub kernel_runs: usize,
    pub steps_compared: u64,
    pub steps_skipped: u64,
    /// field → (agreeing, compared)
    pub fields: BTreeMap<String, (u64, u64)>,
    pub results: Vec<ScenarioResult>,
}

impl DiffReport {
    /// A report of no scenario (every field at 0 of 0).
    pub fn empty(profile: String, seed: u64) -> DiffReport {
        DiffReport {
            profile,
            seed,
            fields: FIELDS.iter().map(|f| (f.to_string(), (0, 0))).collect(),
            ..Default::default()
        }
    }

    /// The report of a sharded run (`trc merge`) from its shards' reports, each with the
    /// work-list indices of its scenarios: counts and field agreement summed, the scenarios'
    /// results in work-list order.
    pub fn merge(
        profile: String,
        seed: u64,
        scenarios: usize,
        parts: Vec<(Vec<usize>, DiffReport)>,
    ) -> DiffReport {
        let mut rep = DiffReport::empty(profile, seed);
        rep.scenarios = scenarios;
        let mut results: Vec<(usize, ScenarioResult)> = Vec::new();
        for (ks, r) in parts {
            rep.agree += r.agree;
            rep.disagree += r.disagree;
            rep.flaky += r.flaky;
            rep.errors += r.errors;
            rep.kernel_runs += r.kernel_runs;
            rep.steps_compared += r.steps_compared;
            rep.steps_skipped += r.steps_skipped;
            for (f, (a, n)) in &r.fields {
                let e = rep.fields.entry(f.clone()).or_default();
                e.0 += a;
                e.1 += n;
            }
            results.extend(ks.into_iter().zip(r.results));
        }
        results.sort_by_key(|(k, _)| *k);
        rep.results = results.into_iter().map(|(_, r)| r).collect();
        rep
    }

    /// The fields the verdict reads (segments, ca_state, cwnd, ssthresh) that agree on fewer than
    /// `bar` percent of the compared steps.
    pub fn below(&self, bar: f64) -> Vec<&'static str> {
        ["segments", "ca_state", "cwnd", "ssthresh"]
            .into_iter()
            .filter(|f| 100.0 * self.rate(f) < bar)
            .collect()
    }

    /// Agreement of `field` in [0, 1] (1 if nothing was compared).
    pub fn rate(&self, field: &str) -> f64 {
        match self.fields.get(field) {
            Some((a, n)) if *n > 0 => *a as f64 / *n as f64,
            _ => 1.0,
        }
    }

    pub fn render(&self) -> String {
        use std::fmt::Write as _;
        let mut o = String::new();
        let _ = writeln!(o, "trc diff: profile {}, seed {}, {} scenarios: {} agree, {} disagree, {} flaky, {} errors ({} kernel runs)", self.profile, self.seed, self.scenarios, self.agree, self.disagree, self.flaky, self.errors, self.kernel_runs);
        let _ = writeln!(
            o,
            "steps compared: {} (plus {} after a first divergence, not compared)",
            self.steps_compared, self.steps_skipped
        );
        for f in FIELDS {
            let (a, n) = self.fields.get(*f).copied().unwrap_or((0, 0));
            let _ = writeln!(o, "  {f:<14} {a:>6}/{n:<6} {:>8.3}%", 100.0 * self.rate(f));
        }
        for r in &self.results {
            match r.verdict {
                Verdict::Disagree => {
                    let d = r
                        .trial
                        .as_ref()
                        .and_then(|t| t.comparison.divergence.as_ref())
                        .map(|d| d.describe())
                        .unwrap_or_default();
                    let _ = writeln!(
                        o,
                        "DISAGREE {} (seed {:#x}): {d}",
                        r.scenario.name(),
                        r.scenario.seed
                    );
                    if let Some(p) = &r.saved {
                        let _ = writeln!(
                            o,
                            "         shrunk ({} actions): {p}",
                            r.shrunk_steps.unwrap_or(0)
                        );
                    }
                }
                Verdict::Flaky => {
                    let _ = writeln!(
                        o,
                        "FLAKY    {} (seed {:#x}): {}",
                        r.scenario.name(),
                        r.scenario.seed,
                        r.note.clone().unwrap_or_default()
                    );
                }
                Verdict::Error => {
                    let _ = writeln!(
                        o,
                        "ERROR    {} (seed {:#x}): {}",
                        r.scenario.name(),
                        r.scenario.seed,
                        r.note.clone().unwrap_or_default()
                    );
                }
                Verdict::Agree => {}
            }
        }
        o
    }
}

/// Signature of a divergence for deduplication: the fields, the model's state and the event kind.
fn signature(d: &Divergence) -> String {
    let ev: String = d
        .event
        .split(|c: char| c.is_ascii_digit() || c == '(')
        .next()
        .unwrap_or("")
        .to_string();
    format!("{:?}|{ev}", d.field_names())
}

/// Runs `opts.scenarios` scenarios; `log` gets one line per scenario and shrink progress.
pub fn run(opts: &DiffOptions, log: &mut dyn FnMut(&str)) -> DiffReport {
    let mut rep = DiffReport {
        profile: opts.profile.name.clone(),
        seed: opts.seed,
        scenarios: opts.scenarios,
        ..Default::default()
    };
    for f in FIELDS {
        rep.fields.insert(f.to_string(), (0, 0));
    }
    let mut shrunk: HashMap<String, usize> = HashMap::new();
    let indices: Vec<usize> = match (&opts.fixed, &opts.only) {
        (Some(_), _) => vec![0],
        (None, Some(o)) => o.clone(),
        (None, None) => (0..opts.scenarios).collect(),
    };
    rep.scenarios = indices.len();
    for i in indices {
        let sc = opts
            .fixed
            .clone()
            .unwrap_or_else(|| generate(&opts.profile, opts.seed, i, &opts.gen));
        if let Some(dir) = &opts.keep {
            if let Ok(x) = export_actions(&opts.profile, &sc, &sc.actions, &opts.gen) {
                let _ = std::fs::create_dir_all(dir);
                let _ = trc_files::write_atomic(
                    &dir.join(format!("{}.pkt", sc.name())),
                    x.pkt.as_bytes(),
                );
            }
        }
        let mut r = run_scenario(&opts.profile, &sc, &opts.gen, opts.reruns);
        account(&mut rep, i, &sc, &r, log);
        if matches!(r.verdict, Verdict::Disagree) {
            if let Some(dir) = &opts.out {
                save_disagreement(opts, &sc, &mut r, dir, &mut shrunk, log);
            }
        }
        rep.results.push(r);
    }
    rep
}

/// Adds one scenario's result to the report's figures and logs its line.
pub(crate) fn account(
    rep: &mut DiffReport,
    i: usize,
    sc: &Scenario,
    r: &ScenarioResult,
    log: &mut dyn FnMut(&str),
) {
    rep.kernel_runs += r.runs;
    match r.verdict {
        Verdict::Agree | Verdict::Disagree => {
            let c = &r.trial.as_ref().unwrap().comparison;
            rep.steps_compared += c.steps_compared;
            rep.steps_skipped += c.steps_skipped;
            for (f, (a, n)) in &c.fields {
                let e = rep.fields.entry(f.clone()).or_default();
                e.0 += a;
                e.1 += n;
            }
        }
        _ => {}
    }
    let line = match r.verdict {
        Verdict::Agree => format!(
            "[{i:>4}] {} {} actions: agree{}",
            sc.name(),
            sc.actions.len(),
            r.note
                .as_ref()
                .map(|n| format!(" ({n})"))
                .unwrap_or_default()
        ),
        Verdict::Disagree => format!(
            "[{i:>4}] {} {} actions: DISAGREE {}",
            sc.name(),
            sc.actions.len(),
            r.trial
                .as_ref()
                .unwrap()
                .comparison
                .divergence
                .as_ref()
                .unwrap()
                .describe()
        ),
        Verdict::Flaky => format!(
            "[{i:>4}] {} {} actions: flaky ({})",
            sc.name(),
            sc.actions.len(),
            r.note.clone().unwrap_or_default()
        ),
        Verdict::Error => format!(
            "[{i:>4}] {} {} actions: error ({})",
            sc.name(),
            sc.actions.len(),
            r.note.clone().unwrap_or_default()
        ),
    };
    log(&line);
    match r.verdict {
        Verdict::Agree => rep.agree += 1,
        Verdict::Disagree => rep.disagree += 1,
        Verdict::Flaky => rep.flaky += 1,
        Verdict::Error => rep.errors += 1,
    }
}

/// Shrinks a disagreement (at most `opts.shrink_per_signature` per signature; otherwise its
/// prefix up to the diverging step) and saves its script as `DIR/diff-<name>.pkt`, with the
/// first divergence in the header.
fn save_disagreement(
    opts: &DiffOptions,
    sc: &Scenario,
    r: &mut ScenarioResult,
    dir: &std::path::Path,
    shrunk: &mut HashMap<String, usize>,
    log: &mut dyn FnMut(&str),
) {
    let d = r
        .trial
        .as_ref()
        .unwrap()
        .comparison
        .divergence
        .clone()
        .unwrap();
    let n = shrunk.entry(signature(&d)).or_default();
    let (walk, t) = if *n < opts.shrink_per_signature {
        *n += 1;
        shrink(
            &opts.profile,
            sc,
            &opts.gen,
            &d.field_names(),
            opts.shrink_budget,
            log,
        )
    } else {
        (sc.actions[..d.step.min(sc.actions.len())].to_vec(), None)
    };
    let d2 = t
        .as_ref()
        .and_then(|t| t.comparison.divergence.clone())
        .unwrap_or(d);
    let walk = if t.is_some() {
        walk
    } else {
        sc.actions[..d2.step.min(sc.actions.len())].to_vec()
    };
    let Ok(x) = export_actions(&opts.profile, sc, &walk, &opts.gen) else {
        return;
    };
    let mut text = String::new();
    let mut lines = x.pkt.lines();
    if let Some(first) = lines.next() {
        text.push_str(first);
        text.push('\n');
    }
    text.push_str(&format!(
        "// trc diff: first diverging step {}: {}\n",
        d2.step,
        d2.describe()
    ));
    text.push_str(&format!(
        "// {}: scenario {} of seed {} (scenario seed {:#x}); {} of {} actions after shrinking{}\n",
        sc.name(),
        sc.index,
        opts.seed,
        sc.seed,
        walk.len(),
        sc.actions.len(),
        if t.is_some() {
            ""
        } else {
            " (prefix only, not shrunk)"
        }
    ));
    for l in lines {
        text.push_str(l);
        text.push('\n');
    }
    let _ = std::fs::create_dir_all(dir);
    let p = dir.join(format!("diff-{}.pkt", sc.name()));
    if trc_files::write_atomic(&p, text.as_bytes()).is_ok() {
        r.saved = Some(p.display().to_string());
        r.shrunk_steps = Some(walk.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::model_view;
    use crate::generate::kernel_reproducible;

    #[test]
    fn same_seed_same_scenarios() {
        let p = Profile::linux_6_18();
        let g = GenOptions::default();
        for i in 0..8 {
            let a = generate(&p, 7, i, &g);
            let b = generate(&p, 7, i, &g);
            assert_eq!(a.actions, b.actions);
            assert_eq!(a.cfg, b.cfg);
        }
        assert_ne!(generate(&p, 7, 0, &g).seed, generate(&p, 8, 0, &g).seed);
    }

    #[test]
    fn walks_are_exportable_and_kernel_reproducible() {
        let p = Profile::linux_6_18();
        let g = GenOptions {
            sack: Some(false),
            ts: Some(true),
            ..Default::default()
        };
        for i in 0..20 {
            let sc = generate(&p, 3, i, &g);
            assert!(!sc.sack && sc.cfg.timestamps);
            assert!(sc.actions.iter().all(kernel_reproducible));
            let x = export_actions(&p, &sc, &sc.actions, &g).unwrap();
            assert!(x.trace.kernel_runnable);
            let v = model_view(&x).unwrap();
            assert!(!v.is_empty() && v[0].step == 0);
            assert_eq!(normalize(&sc.model(&p), &sc.actions, &g), sc.actions);
        }
    }

    #[test]
    fn a_script_the_model_cannot_view_is_a_typed_error() {
        let p = Profile::linux_6_18();
        let g = GenOptions::default();
        let sc = generate(&p, 3, 0, &g);
        let mut x = export_actions(&p, &sc, &sc.actions, &g).unwrap();
        // A step the trace does not have: the view names the line.
        x.trace.steps.clear();
        let e = model_view(&x).unwrap_err();
        assert!(matches!(e, TrialError::MissingStep { .. }), "{e:?}");
        assert!(e.to_string().contains("not in the trace"), "{e}");
        x.pkt = "0 bogus\n".into();
        let e = model_view(&x).unwrap_err();
        assert!(matches!(e, TrialError::Parse(_)), "{e:?}");
    }
}
