//! Shrinking: delta debugging (ddmin) of an action list with kernel runs as the test. [`ddmin`]
//! is the loop, generic over the test; [`shrink`] uses it for a `trc diff` disagreement, and
//! `trc kernel check` (`kcheck::shrink`) for a property violated on a kernel.

use crate::execute::{export_actions, trial, Trial};
use crate::generate::{normalize, GenOptions, Scenario};
use std::collections::HashMap;
use std::hash::Hash;
use trc_model::model::Action;
use trc_model::Profile;

/// What [`ddmin`] found: the smallest list that passed the test, its result, and how many tests
/// it ran (each one a kernel run in practice).
#[derive(Clone, Debug)]
pub struct Shrunk<A, T> {
    pub list: Vec<A>,
    pub result: T,
    pub tests: usize,
    /// The budget ran out before ddmin finished (the list may shrink further).
    pub budget_exhausted: bool,
}

/// A batch of candidate action lists tested together: for each, its result if it still fails.
pub type BatchTest<'a, A, T> = dyn FnMut(&[Vec<A>]) -> Vec<Option<T>> + 'a;

/// Delta debugging (Zeller's ddmin, complements only) from `start`, which passed the test with
/// `start_result`. Each round splits the list into `n` chunks and tries the list without each
/// one; the first candidate (in chunk order) that passes and is shorter becomes the list.
///
/// `normalize` maps a candidate to the list actually tested (for an action list: the actions
/// the model still allows); candidates are cached by it. `test` receives a batch of candidates
/// in order and returns results for a prefix of it (at least one when the batch is not empty):
/// a test that runs one at a time may stop at the first pass, one that runs a batch together
/// (a VM boot) returns them all. The result is the same either way: the first pass in order is
/// taken. At most `budget` tests are run in all.
pub fn ddmin<A: Clone + Eq + Hash, T: Clone>(
    start: Vec<A>,
    start_result: T,
    budget: usize,
    normalize: &dyn Fn(&[A]) -> Vec<A>,
    test: &mut BatchTest<'_, A, T>,
    log: &mut dyn FnMut(&str),
) -> Shrunk<A, T> {
    let mut best = start;
    let mut result = start_result;
    let mut cache: HashMap<Vec<A>, Option<T>> = HashMap::new();
    let mut tests = 0usize;
    let mut exhausted = false;
    let mut n = 2usize;
    while best.len() >= 2 {
        let chunk = best.len().div_ceil(n);
        // The round's candidates, normalized, shorter than the list, each once.
        let mut cands: Vec<Vec<A>> = Vec::new();
        for i in 0..n {
            let (lo, hi) = (i * chunk, ((i + 1) * chunk).min(best.len()));
            if lo >= hi {
                continue;
            }
            let cand: Vec<A> = best[..lo].iter().chain(&best[hi..]).cloned().collect();
            let norm = normalize(&cand);
            if norm.len() < best.len() && !cands.contains(&norm) {
                cands.push(norm);
            }
        }
        // Cached ones answer without a test; the first uncached run of candidates goes as a batch.
        let mut found: Option<(Vec<A>, T)> = None;
        let mut i = 0;
        while i < cands.len() && found.is_none() {
            if let Some(r) = cache.get(&cands[i]) {
                if let Some(t) = r {
                    found = Some((cands[i].clone(), t.clone()));
                }
                i += 1;
                continue;
            }
            let left = budget.saturating_sub(tests);
            if left == 0 {
                exhausted = true;
                break;
            }
            let j = (i..cands.len())
                .take_while(|&j| !cache.contains_key(&cands[j]))
                .take(left)
                .last()
                .unwrap_or(i)
                + 1;
            let batch = &cands[i..j];
            let rs = test(batch);
            // A test that answers nothing for a candidate failed it.
            let answered = rs.len().clamp(1, batch.len());
            tests += answered;
            for (c, r) in batch
                .iter()
                .zip(rs.iter().chain(std::iter::repeat(&None)))
                .take(answered)
            {
                cache.insert(c.clone(), r.clone());
            }
            for (c, r) in batch.iter().zip(rs) {
                if let Some(t) = r {
                    found = Some((c.clone(), t));
                    break;
                }
            }
            i += answered;
        }
        match found {
            Some((list, t)) => {
                log(&format!(
                    "    shrink: {} → {} actions",
                    best.len(),
                    list.len()
                ));
                best = list;
                result = t;
                n = (n - 1).max(2);
            }
            None if exhausted => break,
            None => {
                if n >= best.len() {
                    break;
                }
                n = (2 * n).min(best.len());
            }
        }
    }
    Shrunk {
        list: best,
        result,
        tests,
        budget_exhausted: exhausted,
    }
}

/// Delta debugging (ddmin) of a disagreeing walk: the smallest walk (within `budget` kernel
/// runs) whose first divergence still involves one of `fields`. Returns the walk and its trial.
pub fn shrink(
    profile: &Profile,
    sc: &Scenario,
    g: &GenOptions,
    fields: &[String],
    budget: usize,
    log: &mut dyn FnMut(&str),
) -> (Vec<Action>, Option<Trial>) {
    let model = sc.model(profile);
    let norm = |cand: &[Action]| normalize(&model, cand, g);
    let run = |cand: &[Action]| -> Option<Trial> {
        export_actions(profile, sc, cand, g)
            .ok()
            .and_then(|x| trial(&x, &format!("{}-shrink.pkt", sc.name())).ok())
            .filter(|t| {
                t.ambiguous.is_none()
                    && t.comparison
                        .divergence
                        .as_ref()
                        .is_some_and(|d| d.fields.iter().any(|f| fields.contains(&f.0)))
            })
    };
    if budget == 0 {
        return (sc.actions.clone(), None);
    }
    // Start from the prefix that ends at the diverging step.
    let full = norm(&sc.actions);
    let Some(t0) = run(&full) else {
        return (full, None);
    };
    let mut runs = 1;
    let step = t0
        .comparison
        .divergence
        .as_ref()
        .map(|d| d.step)
        .unwrap_or(full.len());
    let (mut best, mut best_trial) = (full.clone(), t0);
    if runs < budget {
        let prefix = norm(&full[..step.min(full.len())]);
        if prefix != full {
            runs += 1;
            if let Some(t) = run(&prefix) {
                best = prefix;
                best_trial = t;
            }
        }
    }
    // One kernel run at a time: stop at the first candidate that still disagrees.
    let mut one_by_one = |batch: &[Vec<Action>]| -> Vec<Option<Trial>> {
        let mut out = Vec::new();
        for c in batch {
            let r = run(c);
            let pass = r.is_some();
            out.push(r);
            if pass {
                break;
            }
        }
        out
    };
    let s = ddmin(best, best_trial, budget - runs, &norm, &mut one_by_one, log);
    (s.list, Some(s.result))
}

#[cfg(test)]
mod tests {
    use super::ddmin;

    /// A fake oracle: the list "fails" (passes the test) while it still contains every one of
    /// `needles`, in any order. Counts the tests and checks the budget.
    fn oracle<'a>(
        needles: &'a [u32],
        calls: &'a mut usize,
        one_by_one: bool,
    ) -> impl FnMut(&[Vec<u32>]) -> Vec<Option<usize>> + 'a {
        move |batch: &[Vec<u32>]| {
            let mut out = Vec::new();
            for c in batch {
                *calls += 1;
                let pass = needles.iter().all(|n| c.contains(n));
                out.push(pass.then_some(c.len()));
                if pass && one_by_one {
                    break;
                }
            }
            out
        }
    }

    #[test]
    fn ddmin_finds_the_needles_with_a_fake_oracle() {
        let start: Vec<u32> = (0..40).collect();
        for one_by_one in [true, false] {
            let mut calls = 0;
            let s = ddmin(
                start.clone(),
                40,
                1000,
                &|c: &[u32]| c.to_vec(),
                &mut oracle(&[3, 17, 31], &mut calls, one_by_one),
                &mut |_| {},
            );
            assert_eq!(s.list, vec![3, 17, 31], "one_by_one {one_by_one}");
            assert_eq!(s.result, 3);
            assert!(!s.budget_exhausted);
            assert_eq!(s.tests, calls, "every oracle call is counted");
        }
    }

    #[test]
    fn batches_and_single_runs_give_the_same_list() {
        // A non-monotone oracle (passes only for some sizes too): the choice is the first pass
        // in chunk order in both modes.
        let start: Vec<u32> = (0..23).collect();
        let run = |one: bool| {
            let mut calls = 0usize;
            let mut t = |batch: &[Vec<u32>]| {
                let mut out = Vec::new();
                for c in batch {
                    calls += 1;
                    let pass = c.contains(&5) && (c.len() % 3 != 1 || c.contains(&20));
                    out.push(pass.then_some(()));
                    if pass && one {
                        break;
                    }
                }
                out
            };
            ddmin(
                start.clone(),
                (),
                1000,
                &|c: &[u32]| c.to_vec(),
                &mut t,
                &mut |_| {},
            )
            .list
        };
        assert_eq!(run(true), run(false));
        assert!(run(true).contains(&5) && run(true).len() < 23);
    }

    #[test]
    fn the_budget_bounds_the_tests() {
        let start: Vec<u32> = (0..64).collect();
        let mut calls = 0;
        let s = ddmin(
            start.clone(),
            64,
            5,
            &|c: &[u32]| c.to_vec(),
            &mut oracle(&[1, 62], &mut calls, false),
            &mut |_| {},
        );
        assert!(calls <= 5, "{calls} tests for a budget of 5");
        assert!(s.budget_exhausted);
        assert!(s.list.contains(&1) && s.list.contains(&62) && s.list.len() < 64);
    }

    #[test]
    fn normalization_is_what_is_tested_and_cached() {
        // The normalizer drops odd numbers (actions the model no longer allows).
        let start: Vec<u32> = (0..16).map(|x| x * 2).collect();
        let mut seen: Vec<Vec<u32>> = Vec::new();
        let mut t = |batch: &[Vec<u32>]| {
            batch
                .iter()
                .map(|c| {
                    assert!(c.iter().all(|x| x % 2 == 0));
                    assert!(!seen.contains(c), "a candidate tested twice: {c:?}");
                    seen.push(c.clone());
                    c.contains(&10).then_some(())
                })
                .collect()
        };
        let s = ddmin(
            start,
            (),
            1000,
            &|c: &[u32]| c.iter().copied().filter(|x| x % 2 == 0).collect(),
            &mut t,
            &mut |_| {},
        );
        assert_eq!(s.list, vec![10]);
    }
}
