//! The coverage suite of `trc kernel check` (model side, no kernel): the chosen scenarios go
//! through every branch the exploration reached except those reported model-only; each branch's
//! path is a shortest one; the plan does not depend on the thread count. The reachable sets are
//! checked against an independent count, the engine's transition tally (what `trc check
//! --coverage` counts).

use std::collections::BTreeSet;
use std::path::PathBuf;
use trc_engine::{check_with, Options, StateHooks, Tallied};
use trc_kcheck::coverage::{self, BranchReach, CoveragePlan};
use trc_kcheck::Case;
use trc_model::decision::{Branch, DecisionCounts};
use trc_model::model::{Action, State, TcpModel};
use trc_model::{Config, Profile};

/// Transitions through each branch (paths of at most `max_depth` events), as `trc check --coverage` counts them.
fn tally(cfg: &Config, profile: &Profile, max_depth: Option<usize>) -> Vec<u64> {
    let model = TcpModel::new(cfg.clone(), profile.clone());
    let hooks = Tallied {
        hooks: StateHooks {
            fingerprint: State::fingerprint,
            next_state_into: TcpModel::next_state_into,
            drop_is_noop: State::is_plain,
        },
        n: Branch::ALL.len(),
        tally: |m: &TcpModel, s: &State, a: &Action, counts: &mut [u64]| {
            let sink = DecisionCounts::default();
            if m.record_decisions(s, *a, &sink) {
                sink.add_to(counts);
            }
        },
    };
    let r = check_with(
        &model,
        &Options {
            threads: 2,
            max_depth,
            ..Options::default()
        },
        None,
        hooks,
    );
    let mut t = r.tally;
    t.resize(Branch::ALL.len(), 0);
    t
}

fn scratch(name: &str) -> PathBuf {
    trc_testkit::scratch!(name)
}

fn plan(cfg: &Config, threads: usize, name: &str) -> (CoveragePlan, Vec<Case>) {
    coverage::plan(
        cfg,
        &Profile::linux_6_18(),
        &scratch(name),
        threads,
        &mut |_| {},
    )
    .unwrap()
}

fn check_plan(cfg: &Config, p: &CoveragePlan, cases: &[Case]) {
    let profile = Profile::linux_6_18();
    let all = tally(cfg, &profile, None);
    let kr = tally(&coverage::kernel_runnable_bounds(cfg), &profile, None);
    for (i, (b, row)) in Branch::ALL.iter().zip(&p.rows).enumerate() {
        assert_eq!(
            (row.function.as_str(), row.branch.as_str()),
            (b.function(), b.label())
        );
        let expect = match (all[i] > 0, kr[i] > 0) {
            (false, _) => BranchReach::Unreached,
            (true, false) => BranchReach::ModelOnly,
            (true, true) => BranchReach::KernelRunnable,
        };
        assert_eq!(
            row.reach,
            expect,
            "{}: tally {} / {} on kernel-runnable paths",
            coverage::branch_name(*b),
            all[i],
            kr[i]
        );
        // Every kernel-runnable branch is covered (no export was refused at these bounds).
        assert_eq!(
            !row.scenarios.is_empty(),
            expect == BranchReach::KernelRunnable,
            "{row:?}"
        );
    }
    assert!(p.export_errors.is_empty(), "{:?}", p.export_errors);
    assert_eq!(p.reachable, all.iter().filter(|n| **n > 0).count());
    assert_eq!(p.kernel_runnable, kr.iter().filter(|n| **n > 0).count());
    assert_eq!(p.covered, p.kernel_runnable);
    assert_eq!(p.covered + p.model_only.len(), p.reachable);
    assert_eq!(p.uncovered, p.model_only);

    // The scenarios, recomputed from their own paths: the union of their branches is exactly
    // the kernel-runnable set, each goes through a branch no earlier one did (greedy), and each
    // script is an exported, kernel-runnable script with the model's ghost declared.
    assert_eq!(cases.len(), p.scenarios.len());
    let mut union = BTreeSet::new();
    for (c, s) in cases.iter().zip(&p.scenarios) {
        assert_eq!(c.name, s.name);
        let before = union.len();
        union.extend(
            s.branches
                .iter()
                .map(|b| b.rsplit_once(" (step").unwrap().0.to_string()),
        );
        assert!(union.len() > before, "{} covers nothing new", c.name);
        let text = std::fs::read_to_string(&c.path).unwrap();
        assert!(trc_pkt::parse(&text, &c.path.display().to_string()).is_ok());
        assert!(!text.contains("trc-model-only"), "{}", c.name);
        assert!(text.contains("// kernel-runnable:"), "{}", c.name);
        assert_eq!(c.ghost.source, trc_kcheck::GhostSource::Declared);
        assert!(c.path.with_file_name("defaults.sh").exists());
        // Its path is kept, so that a violation on it can shrink: the same events, and they
        // export again as a kernel-runnable script.
        let list = c
            .actions
            .as_ref()
            .expect("a coverage scenario keeps its path");
        assert_eq!(list.actions.len(), s.events, "{}", c.name);
        assert!(list.export(&list.actions).is_ok(), "{}", c.name);
    }
    let kernel_runnable: BTreeSet<String> = Branch::ALL
        .iter()
        .zip(&kr)
        .filter(|(_, n)| **n > 0)
        .map(|(b, _)| coverage::branch_name(*b))
        .collect();
    assert_eq!(union, kernel_runnable);

    // Shortest: a branch whose shortest kernel-runnable path has L events has no transition in
    // the paths of L - 1 events and one in those of L.
    let kcfg = coverage::kernel_runnable_bounds(cfg);
    let lens: BTreeSet<usize> = p
        .rows
        .iter()
        .filter(|r| r.reach == BranchReach::KernelRunnable)
        .map(|r| r.shortest.unwrap())
        .collect();
    for l in lens {
        let below = tally(&kcfg, &profile, Some(l - 1));
        let at = tally(&kcfg, &profile, Some(l));
        for (i, r) in p.rows.iter().enumerate() {
            if r.reach == BranchReach::KernelRunnable && r.shortest == Some(l) {
                assert_eq!(below[i], 0, "{}: a path shorter than {l} events", r.branch);
                assert!(at[i] > 0, "{}: no path of {l} events", r.branch);
            }
        }
    }
}

/// The default coverage suite (`trc check`'s default bounds, which allow one TSQ hold).
#[test]
fn default_suite_covers_every_kernel_runnable_branch() {
    let cfg = Config::default();
    let (p, cases) = plan(&cfg, 2, "cov-default-2");
    check_plan(&cfg, &p, &cases);
    assert!(p.reachable > 20, "{p:?}");
    assert!(
        !p.model_only.is_empty(),
        "a TSQ hold is needed for some branch at these bounds: {p:?}"
    );
    assert!(
        cases.len() < p.covered,
        "the greedy cover reuses paths: {} scenarios for {} branches",
        cases.len(),
        p.covered
    );
    // The same plan and the same scripts with one thread.
    let (p1, cases1) = plan(&cfg, 1, "cov-default-1");
    assert_eq!(p, p1);
    for (a, b) in cases.iter().zip(&cases1) {
        assert_eq!(a.name, b.name);
        assert_eq!(a.text, b.text, "{}", a.name);
    }
}

/// Smaller bounds with more TSQ holds and ECE marks: the model-only branches are found and
/// reported as such, and never given a scenario.
#[test]
fn model_only_branches_are_reported_not_covered() {
    let cfg = Config {
        segments: 4,
        initcwnd: 4,
        max_tsq: 2,
        max_ece: 1,
        ecn: true,
        ..Config::default()
    };
    let (p, cases) = plan(&cfg, 2, "cov-tsq");
    check_plan(&cfg, &p, &cases);
    assert!(!p.model_only.is_empty(), "{p:?}");
    // Without TSQ holds every reachable branch is kernel-runnable, and covered.
    let cfg = Config { max_tsq: 0, ..cfg };
    let (p, cases) = plan(&cfg, 2, "cov-no-tsq");
    check_plan(&cfg, &p, &cases);
    assert!(p.model_only.is_empty() && p.uncovered.is_empty(), "{p:?}");
}
