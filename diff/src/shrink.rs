//! Shrinking: delta debugging of a disagreeing walk with kernel runs as the test.

use crate::execute::{export_actions, trial, Trial};
use crate::generate::{normalize, GenOptions, Scenario};
use std::collections::HashMap;
use trc_model::model::Action;
use trc_model::Profile;

/// Delta debugging (ddmin) of a disagreeing walk: the smallest walk (within `budget` kernel
/// runs) whose first divergence still involves one of `fields`. Returns the walk and its trial.
pub fn shrink(profile: &Profile, sc: &Scenario, g: &GenOptions, fields: &[String], budget: usize, log: &mut dyn FnMut(&str)) -> (Vec<Action>, Option<Trial>) {
    let model = sc.model(profile);
    let mut runs = 0usize;
    let mut cache: HashMap<Vec<Action>, Option<Trial>> = HashMap::new();
    let mut test = |cand: &[Action], runs: &mut usize| -> (Vec<Action>, Option<Trial>) {
        let norm = normalize(&model, cand, g);
        if let Some(r) = cache.get(&norm) {
            return (norm, r.clone());
        }
        if *runs >= budget {
            return (norm, None);
        }
        *runs += 1;
        let r = export_actions(profile, sc, &norm, g).ok().and_then(|x| trial(&x, &format!("{}-shrink.pkt", sc.name())).ok()).filter(|t| {
            t.ambiguous.is_none() && t.comparison.divergence.as_ref().is_some_and(|d| d.fields.iter().any(|f| fields.contains(&f.0)))
        });
        cache.insert(norm.clone(), r.clone());
        (norm, r)
    };
    // Start from the prefix that ends at the diverging step.
    let mut best: Vec<Action> = sc.actions.clone();
    let mut best_trial;
    let (n0, t0) = test(&best, &mut runs);
    if let Some(t) = t0 {
        let step = t.comparison.divergence.as_ref().map(|d| d.step).unwrap_or(best.len());
        best = n0;
        best_trial = Some(t);
        let (n1, t1) = test(&best[..step.min(best.len())], &mut runs);
        if let Some(t) = t1 {
            best = n1;
            best_trial = Some(t);
        }
    } else {
        return (best, None);
    }
    let mut n = 2usize;
    while best.len() >= 2 && runs < budget {
        let chunk = best.len().div_ceil(n);
        let mut reduced = false;
        for i in 0..n {
            let (lo, hi) = (i * chunk, ((i + 1) * chunk).min(best.len()));
            if lo >= hi {
                continue;
            }
            // Complement first (removes a chunk).
            let cand: Vec<Action> = best[..lo].iter().chain(&best[hi..]).copied().collect();
            let (norm, t) = test(&cand, &mut runs);
            if let Some(t) = t {
                if norm.len() < best.len() {
                    log(&format!("    shrink: {} → {} actions", best.len(), norm.len()));
                    best = norm;
                    best_trial = Some(t);
                    n = (n - 1).max(2);
                    reduced = true;
                    break;
                }
            }
        }
        if !reduced {
            if n >= best.len() {
                break;
            }
            n = (2 * n).min(best.len());
        }
    }
    (best, best_trial)
}

