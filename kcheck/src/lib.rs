//! `trc-kcheck`: `trc kernel check`, the catalogue's invariants checked on a real kernel's behaviour.
//!
//! A *suite* is a list of scenarios (packetdrill scripts with their ghost truth, [`ghost`]). Each
//! runs once on a kernel — any [`trc_kernel::target::Target`]: the running one, or another booted
//! in qemu by `trc-vm` — and the property monitors
//! ([`monitor`]) judge the run from what it observed ([`observe`]). Side by side, the script is
//! replayed on the model's profile, and the first line where the kernel and the profile differ
//! is reported: "violated on this kernel" and "this kernel behaves differently from the profile
//! here" are two separate answers.
//!
//! Suites: `regressions` (every `.pkt` under `counterexamples/`, plus the shortest
//! counterexample of every property on every built-in profile that a kernel can run, exported
//! as `trc check --out` does), `corpus` (the scripts only) and `random:N[,SEED]` (`trc diff`'s
//! seeded walks); `coverage` ([`coverage`]: paths of the exhaustive state graph that go through
//! every decision-point branch reachable at the given bounds); `bulk` ([`BULK_SUITE`]: whole
//! transfers of 120-150 segments, as `trc diff --bulk` generates them).
//!
//! [`run`] is the check as a library call (a [`run::Plan`] on a target); [`patch`] compares two
//! kernels (a base and a patched build) on the same plan.
#![forbid(unsafe_code)]

pub mod basecache;
pub mod cc_monitor;
pub mod coverage;
pub mod ghost;
pub mod missed_undo;
pub mod monitor;
pub mod observe;
pub mod patch;
pub mod request;
pub mod run;
pub mod run_verdict;
pub mod shrink;
pub mod timeline;

pub use ghost::{Fate, Ghost, GhostSource};
pub use monitor::{monitors, Monitor, Outcome};
pub use observe::KTrace;
pub use run_verdict::{LineView, RunVerdict};

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use trc_diff::generate::{generate, BulkSpec, GenOptions};
use trc_kernel::target::{NoReport, ScriptRun};
use trc_model::model::{State, TcpModel};
use trc_model::{Config, Profile};
use trc_pkt::report::{LineResult, Status};

/// Why a kernel check could not be planned: a request it does not take, or a scenario that
/// could not be read, exported or written (all input errors of `trc kernel check`, exit 2).
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// `--suite S`: not a suite, or suites the check does not take together.
    #[error("--suite {suite}: {why}")]
    Suite { suite: String, why: BadSuite },
    /// Bounds given for suites without the coverage suite (`suites`: their names).
    #[error("bounds flags and --config apply only to --suite coverage (the {suites} suite's scenarios are fixed)")]
    BoundsWithoutCoverage { suites: String },
    /// A corpus directory without scripts.
    #[error("{}: no .pkt scripts (the suite needs the repository's counterexamples/ directory; --corpus names it)", corpus.display())]
    NoScripts { corpus: PathBuf },
    /// A property the check cannot judge on a kernel: unknown, or without a monitor.
    #[error(transparent)]
    Property(#[from] monitor::SelectError),
    /// The profile: not a built-in one nor a file, or its file has an error.
    #[error(transparent)]
    Profile(#[from] trc_check::Error),
    /// A scenario's script cannot be read.
    #[error(transparent)]
    Read(#[from] trc_files::ReadError),
    /// A scenario's script does not parse.
    #[error(transparent)]
    Parse(#[from] trc_pkt::ParseError),
    /// A directory or script the plan lists or writes.
    #[error(transparent)]
    Io(#[from] trc_files::PathError),
    /// A transfer of the bulk suite the model cannot walk (a table entry's error).
    #[error("bulk suite: {0}")]
    Bulk(#[from] trc_diff::generate::BulkError),
    /// A model path that could not be exported as a script; `what` names it.
    #[error("{what}: {why}")]
    Export {
        what: String,
        why: trc_trace::export::ExportError,
    },
}

/// Why a `--suite` text is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadSuite {
    #[error("expected random:N[,SEED] with N a number")]
    RandomCount,
    #[error("N must be between 1 and 10000")]
    RandomRange,
    #[error("SEED must be a number")]
    Seed,
    #[error("expected regressions, corpus, random:N[,SEED], coverage or bulk")]
    Unknown,
    #[error("a suite is named twice")]
    Twice,
    #[error("regressions already contains corpus")]
    CorpusTwice,
}

pub use trc_properties::baseline::Accepted;

/// Which scenarios.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Suite {
    Regressions,
    /// Only the scripts of the corpus directory (no engine counterexamples).
    Corpus,
    Random {
        n: usize,
        seed: u64,
    },
    /// Shortest paths through every decision-point branch reachable at these bounds
    /// ([`coverage::plan`]).
    Coverage(Box<Config>),
    /// Transfers at a real size ([`BULK_SUITE`]), as `trc diff --bulk` runs them: slow start
    /// past HyStart's detectors, a loss in a large window and CUBIC's growth after it.
    Bulk,
}

/// The bulk suite: the transfers ([`trc_diff::BulkSpec`], [`trc_diff::bulk`]), from the model
/// alone. A bottleneck of 1 ms makes the ACKs a train (HyStart's ACK-train detector in
/// `hystart_update()` counts an ACK within `hystart_ack_delta_us`, 2000 us by default, of the
/// last); one of 3 ms spaces them past it, so the RTT that grows with the queue ends slow start
/// by the delay detector instead; none sends them in bursts; a drop ends slow start by a loss,
/// so CUBIC reduces and grows again (`cubictcp_recalc_ssthresh()`, `bictcp_update()`). The RTT
/// also falls once (60 to 50 ms at 150 ms, in the middle of a round's ACKs: the round's
/// minimum in `hystart_update()` and `delay_min` in `cubictcp_acked()`), and one transfer
/// goes idle for a second and writes again (`CA_EVENT_TX_START`: `cubictcp_cwnd_event()`,
/// `cubictcp_cwnd_event_tx_start()` in 7.2; then `bictcp_update()`'s growth from the shifted epoch).
pub const BULK_SUITE: &[BulkSpec<'static>] = &[
    BulkSpec::new(150, &[], true, true, 1),
    BulkSpec::new(150, &[], true, true, 3),
    BulkSpec::new(150, &[], true, true, 0),
    BulkSpec::new(150, &[80], true, true, 1),
    BulkSpec::new(150, &[80], false, true, 1),
    BulkSpec::new(120, &[], true, false, 1),
    BulkSpec::new(150, &[40], true, true, 0),
    BulkSpec::new(150, &[], true, true, 1).rtt_fall(150, 10),
    BulkSpec::new(150, &[120], true, true, 1).then(1000, 100),
];

impl Suite {
    /// `regressions`, `corpus`, `random:N[,SEED]` (seed 1 by default), `coverage` (at the
    /// default bounds; the caller sets others) or `bulk`.
    pub fn parse(s: &str) -> Result<Suite, PlanError> {
        if s == "regressions" {
            return Ok(Suite::Regressions);
        }
        if s == "corpus" {
            return Ok(Suite::Corpus);
        }
        if s == "coverage" {
            return Ok(Suite::Coverage(Box::default()));
        }
        if s == "bulk" {
            return Ok(Suite::Bulk);
        }
        let bad = |why| PlanError::Suite {
            suite: s.to_string(),
            why,
        };
        if let Some(rest) = s.strip_prefix("random:") {
            let mut it = rest.splitn(2, ',');
            let n = it
                .next()
                .unwrap_or("")
                .parse::<usize>()
                .map_err(|_| bad(BadSuite::RandomCount))?;
            let seed = match it.next() {
                Some(x) => x.parse::<u64>().map_err(|_| bad(BadSuite::Seed))?,
                None => 1,
            };
            if n == 0 || n > 10_000 {
                return Err(bad(BadSuite::RandomRange));
            }
            return Ok(Suite::Random { n, seed });
        }
        Err(bad(BadSuite::Unknown))
    }

    pub fn name(&self) -> String {
        match self {
            Suite::Regressions => "regressions".into(),
            Suite::Corpus => "corpus".into(),
            Suite::Random { n, seed } => format!("random:{n},{seed}"),
            Suite::Coverage(_) => "coverage".into(),
            Suite::Bulk => "bulk".into(),
        }
    }
}

/// One scenario of a suite.
#[derive(Clone, Debug, Serialize)]
pub struct Case {
    pub name: String,
    /// Where it comes from.
    pub origin: String,
    /// The script on disk (its directory holds what its shell lines name).
    pub path: PathBuf,
    #[serde(skip)]
    pub text: String,
    pub ghost: Ghost,
    /// The model action list the script was exported from (a walk or an engine counterexample),
    /// which shrinking reduces; `None` for a corpus script.
    #[serde(skip)]
    pub actions: Option<shrink::ActionList>,
    /// The model signatures the scenario stands for: its script's `// trc-signature: SIG` lines,
    /// and those the model's own run of its action list violates ([`Case::with_actions`]).
    pub signatures: Vec<String>,
}

/// The `// trc-signature: SIG` lines of a script: the violation mechanisms (as `trc check` names
/// them) it reproduces.
pub fn declared_signatures(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("// trc-signature:"))
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

impl Case {
    fn from_file(path: &Path, name: String, origin: String) -> Result<Case, PlanError> {
        let text = trc_files::read_source(path)?;
        trc_pkt::parse(&text, &path.display().to_string())?;
        let ghost = Ghost::of_script(&text);
        let signatures = declared_signatures(&text);
        Ok(Case {
            name,
            origin,
            path: path.to_path_buf(),
            text,
            ghost,
            actions: None,
            signatures,
        })
    }

    /// The case with the action list it was exported from, and the signatures the model
    /// violates along it.
    pub fn with_actions(mut self, list: shrink::ActionList) -> Case {
        for s in list.signatures() {
            if !self.signatures.contains(&s) {
                self.signatures.push(s);
            }
        }
        self.actions = Some(list);
        self
    }
}

fn pkt_files(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let p = e.path();
        if p.is_dir() {
            pkt_files(&p, out)?;
        } else if p.extension().is_some_and(|x| x == "pkt") {
            out.push(p);
        }
    }
    Ok(())
}

/// The shortest counterexample of every property on every built-in profile (default bounds,
/// both SACK modes), exported into `dir` like `trc check --out`; only kernel-runnable ones, and
/// one script for profiles whose counterexample is the same (its origin lists them all).
pub fn engine_counterexamples(
    dir: &Path,
    threads: usize,
    log: &mut dyn FnMut(&str),
) -> Result<Vec<Case>, PlanError> {
    let specs = trc_properties::catalogue();
    let mut cases: Vec<Case> = Vec::new();
    let mut bodies: Vec<(String, String)> = Vec::new();
    for p in Profile::builtin() {
        let model = TcpModel::new(Config::default(), p.clone())
            .with_properties(trc_properties::properties(&specs));
        let opts = trc_engine::Options {
            threads,
            ..trc_engine::Options::default()
        };
        let report = trc_engine::check_with(
            &model,
            &opts,
            None,
            trc_engine::StateHooks {
                fingerprint: State::fingerprint,
                next_state_into: TcpModel::next_state_into,
                drop_is_noop: State::is_plain,
            },
        );
        let mut n = 0;
        for pr in &report.properties {
            let (trc_engine::Verdict::Violated, Some(path)) = (pr.verdict, &pr.path) else {
                continue;
            };
            let id = pr.name.split(':').next().unwrap_or(pr.name);
            let statement = specs
                .iter()
                .find(|s| s.id == id)
                .map(|s| s.statement)
                .unwrap_or("");
            let subject = trc_trace::export::Subject {
                id,
                name: pr.name,
                statement,
            };
            let x = trc_trace::export::export(
                &model,
                path.init_index,
                &path.actions,
                subject,
                trc_trace::export::COUNTEREXAMPLE_GAP_MS,
            )
            .map_err(|why| PlanError::Export {
                what: format!("export of {id} on {}", p.name),
                why,
            })?;
            if !x.trace.kernel_runnable {
                continue;
            }
            // Several profiles often share one shortest counterexample: run its script once.
            let body: String = x
                .pkt
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .collect::<Vec<_>>()
                .join("\n");
            if let Some(i) = bodies
                .iter()
                .position(|b| *b == (id.to_string(), body.clone()))
            {
                let c: &mut Case = &mut cases[i];
                c.origin = c.origin.replacen(" (", &format!(", {} (", p.name), 1);
                continue;
            }
            let f = trc_trace::write_export(dir, &x).map_err(trc_files::at(dir))?;
            let name = format!(
                "check/{}",
                f.file_name().unwrap_or_default().to_string_lossy()
            );
            let mut c = Case::from_file(
                &f,
                name,
                format!(
                    "shortest counterexample of {id} on {} ({} events, trc check default bounds)",
                    p.name,
                    path.actions.len()
                ),
            )?;
            let how = shrink::How::Counterexample {
                init: path.init_index,
                id: id.to_string(),
                name: pr.name.to_string(),
                statement: statement.to_string(),
            };
            c = c.with_actions(shrink::ActionList {
                cfg: Config::default(),
                profile: p.clone(),
                actions: path.actions.clone(),
                how,
            });
            cases.push(c);
            bodies.push((id.to_string(), body));
            n += 1;
        }
        log(&format!(
            "{}: {} states, {n} kernel-runnable counterexample(s)",
            p.name, report.unique_states
        ));
    }
    Ok(cases)
}

/// The scenarios of `suite`. `corpus` is the `counterexamples/` directory; generated scripts go
/// under `work`.
pub fn plan(
    suite: &Suite,
    corpus: &Path,
    work: &Path,
    profile: &Profile,
    threads: usize,
    log: &mut dyn FnMut(&str),
) -> Result<Vec<Case>, PlanError> {
    match suite {
        Suite::Regressions | Suite::Corpus => {
            let mut files = Vec::new();
            pkt_files(corpus, &mut files).map_err(trc_files::at(corpus))?;
            if files.is_empty() {
                return Err(PlanError::NoScripts {
                    corpus: corpus.to_path_buf(),
                });
            }
            let mut cases = Vec::new();
            for f in &files {
                let rel = f.strip_prefix(corpus).unwrap_or(f).display().to_string();
                cases.push(Case::from_file(
                    f,
                    rel.clone(),
                    format!("counterexamples/{rel}"),
                )?);
            }
            if *suite == Suite::Regressions {
                cases.extend(engine_counterexamples(&work.join("check"), threads, log)?);
            }
            Ok(cases)
        }
        Suite::Coverage(cfg) => {
            coverage::plan(cfg, profile, work, threads, log).map(|(_, cases)| cases)
        }
        Suite::Random { n, seed } => {
            let g = GenOptions::default();
            let dir = work.join("random");
            trc_trace::write_defaults(&dir).map_err(trc_files::at(&dir))?;
            (0..*n)
                .map(|i| {
                    let sc = generate(profile, *seed, i, &g);
                    let origin = format!(
                        "trc diff walk {i} of seed {seed} ({} actions, scenario seed {:#x})",
                        sc.actions.len(),
                        sc.seed
                    );
                    walk_case(&dir, "random", &sc, origin, &g, profile)
                })
                .collect()
        }
        Suite::Bulk => {
            let g = GenOptions::bulk();
            let dir = work.join("bulk");
            trc_trace::write_defaults(&dir).map_err(trc_files::at(&dir))?;
            BULK_SUITE
                .iter()
                .map(|spec| {
                    let sc = trc_diff::bulk(spec, profile)?;
                    let origin = format!("{} ({} actions)", spec.command(), sc.actions.len());
                    walk_case(&dir, "bulk", &sc, origin, &g, profile)
                })
                .collect()
        }
    }
}

/// A generated scenario as a case: exported with `g` into `dir`, named `SUITE/NAME`, with its
/// action list for shrinking.
fn walk_case(
    dir: &Path,
    suite: &str,
    sc: &trc_diff::Scenario,
    origin: String,
    g: &GenOptions,
    profile: &Profile,
) -> Result<Case, PlanError> {
    let x =
        trc_diff::export_actions(profile, sc, &sc.actions, g).map_err(|why| PlanError::Export {
            what: format!("scenario {}", sc.name()),
            why,
        })?;
    let f = dir.join(format!("{}.pkt", sc.name()));
    trc_files::write_atomic(&f, x.pkt.as_bytes()).map_err(trc_files::at(&f))?;
    let c = Case::from_file(&f, format!("{suite}/{}", sc.name()), origin)?;
    Ok(c.with_actions(shrink::ActionList {
        cfg: sc.cfg.clone(),
        profile: profile.clone(),
        actions: sc.actions.clone(),
        how: shrink::How::Walk {
            gen: g.clone(),
            name: format!("{} seed {:#x}", sc.name(), sc.seed),
        },
    }))
}

/// The first line where the kernel run and the profile's replay differ.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Divergence {
    pub line: u32,
    pub text: String,
    pub kernel: LineView,
    pub profile: LineView,
    /// The kernel's side is a timing error (a late or early packet), not a value.
    pub timing: bool,
}

/// Compares two runs of one script line by line: the first line that passes on one and fails
/// on the other, or fails on both with different values. A line applied on one side and passed
/// on the other agrees (a shell line is run by the kernel and read by the model); a line the
/// model cannot check (out of scope) is skipped.
pub fn first_divergence(kernel: &[LineResult], profile: &[LineResult]) -> Option<Divergence> {
    let norm = |l: Option<&LineResult>| match l.map(|l| l.status) {
        None => Some(None),
        Some(Status::OutOfScope) => None,
        Some(Status::Fail) => Some(Some(false)),
        Some(Status::Pass | Status::Applied) => Some(Some(true)),
    };
    let mut lines: Vec<u32> = kernel.iter().chain(profile).map(|l| l.line).collect();
    lines.sort_unstable();
    lines.dedup();
    for ln in lines {
        let k = kernel.iter().find(|l| l.line == ln);
        let p = profile.iter().find(|l| l.line == ln);
        let differ = match (norm(k), norm(p)) {
            (None, _) | (_, None) => false,
            (Some(None), Some(None)) => false,
            (Some(a), Some(b)) if a != b => true,
            (Some(Some(false)), Some(Some(false))) => k.unwrap().actual != p.unwrap().actual,
            _ => false,
        };
        if differ {
            let text = k
                .or(p)
                .map(|l| l.text.trim().to_string())
                .unwrap_or_default();
            let timing = k.is_some_and(|l| l.failed_on_timing());
            return Some(Divergence {
                line: ln,
                text,
                kernel: LineView::of(k),
                profile: LineView::of(p),
                timing,
            });
        }
    }
    None
}

/// One scenario's result (also what a `--shard` output carries per scenario, read back by
/// `trc merge`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CaseResult {
    pub name: String,
    pub origin: String,
    pub path: String,
    pub ghost: GhostSource,
    /// The kernel run's verdict on the script's own checks, or why there is no run.
    pub kernel: RunVerdict,
    pub kernel_ran: bool,
    /// Property id → the monitor's verdict (absent: no run).
    pub properties: BTreeMap<String, Outcome>,
    /// The profile's replay of the script: its verdict.
    pub profile: RunVerdict,
    pub divergence: Option<Divergence>,
    /// Segments the kernel took in (the size of the scenario, for "shortest").
    pub inbound: usize,
    /// Model events of the action list the script was exported from (it can be shrunk);
    /// `None` for a corpus script.
    #[serde(default)]
    pub events: Option<usize>,
    /// The model signatures the scenario stands for ([`Case::signatures`]).
    #[serde(default)]
    pub signatures: Vec<String>,
}

/// A kernel violation in a scenario that stands for an accepted finding.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AcceptedViolation {
    pub scenario: String,
    pub signature: String,
    pub finding: String,
}

/// A property's verdict over a suite.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Decided by a scenario, violated by none.
    Holds,
    /// Violated in a scenario that stands for no accepted finding.
    Violated,
    /// Violated only in scenarios that stand for accepted findings.
    Accepted,
    /// No scenario decided it.
    Undecided,
}

/// Its name in the JSON (`holds`, `violated`, `accepted`, `undecided`).
impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(match self {
            Verdict::Holds => "holds",
            Verdict::Violated => "violated",
            Verdict::Accepted => "accepted",
            Verdict::Undecided => "undecided",
        })
    }
}

impl Verdict {
    /// As the report prints it.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Holds => "holds",
            Verdict::Violated => "VIOLATED",
            Verdict::Accepted => "accepted",
            Verdict::Undecided => "undecided",
        }
    }
}

/// Per property over the suite.
#[derive(Clone, Debug, Serialize)]
pub struct PropertySummary {
    pub id: String,
    pub verdict: Verdict,
    pub decided: usize,
    pub undecided: usize,
    /// The scenarios violating it outside the baseline.
    pub violated: Vec<String>,
    /// The violations in scenarios that stand for an accepted finding (the baseline's).
    #[serde(default)]
    pub accepted: Vec<AcceptedViolation>,
    /// The violating scenario with the fewest inbound segments (its name), its line and why.
    pub shortest: Option<(String, u32, String)>,
    /// That scenario's script.
    pub shortest_path: Option<String>,
    /// The shortest violating scenario that has a model action list, shrunk on the kernel
    /// ([`shrink`]); `None` when nothing was shrunk, with `shrink_note` saying why.
    pub shrunk: Option<shrink::ShrinkResult>,
    pub shrink_note: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct CheckReport {
    pub suite: String,
    /// `running kernel RELEASE` or the VM's description.
    pub kernel: String,
    pub profile: String,
    pub cases: Vec<CaseResult>,
    pub properties: Vec<PropertySummary>,
    /// Scenarios with no kernel report.
    pub not_run: usize,
}

/// Judges one case's run and replays it on `profile`.
pub fn evaluate(c: &Case, run: &ScriptRun, mons: &[Monitor], profile: &Profile) -> CaseResult {
    let replay = trc_pkt::parse(&c.text, &c.path.display().to_string()).map(|s| {
        trc_trace::replay::replay(
            &s,
            &c.path.display().to_string(),
            profile,
            &trc_trace::replay::ReplayOptions::default(),
        )
    });
    let (profile_verdict, replay_lines) = match &replay {
        Ok(r) => (RunVerdict::of_replay(r), r.script.lines.clone()),
        Err(e) => (RunVerdict::NotReplayed(e.to_string()), Vec::new()),
    };
    let mut res = CaseResult {
        name: c.name.clone(),
        origin: c.origin.clone(),
        path: c.path.display().to_string(),
        ghost: c.ghost.source.clone(),
        kernel: RunVerdict::NotRun(String::new()),
        kernel_ran: false,
        properties: BTreeMap::new(),
        profile: profile_verdict,
        divergence: None,
        inbound: 0,
        events: c.actions.as_ref().map(|l| l.actions.len()),
        signatures: c.signatures.clone(),
    };
    match run {
        Err(e) => res.kernel = RunVerdict::NotRun(e.to_string()),
        Ok(r) => {
            res.kernel_ran = true;
            res.kernel = RunVerdict::of_kernel(r);
            let k = KTrace::from_report(r);
            res.inbound = k.acks.len();
            let setup = failed_setup_line(&r.script.lines);
            let left = left_the_script(&r.script.lines);
            for m in mons {
                let o = match setup {
                    Some(l) => Outcome::Undecided {
                        reason: format!(
                            "the script's setup failed at line {}: {}",
                            l.line,
                            l.message.clone().unwrap_or_default()
                        ),
                    },
                    None => after_leaving_the_script((m.check)(&k, &c.ghost), left),
                };
                res.properties.insert(m.id.to_string(), o);
            }
            res.divergence = first_divergence(&r.script.lines, &replay_lines);
        }
    }
    res
}

/// The first outbound line the kernel did not send as the script says (another segment, or
/// none), timing aside: from there on the script's ACKs answer packets the kernel did not send
/// that way, so what they echo (a TSecr, a SACK block) no longer describes one network.
pub(crate) fn left_the_script(lines: &[LineResult]) -> Option<&LineResult> {
    use trc_pkt::report::{LineKind, Status};
    lines.iter().find(|l| {
        l.kind == LineKind::PacketOut && l.status == Status::Fail && !l.failed_on_timing()
    })
}

/// A violation after the kernel left the script ([`left_the_script`]) is not decided: the ghost
/// truth (which originals the network dropped) still holds, but the ACKs around it were written
/// for another sequence of sends, and an ACK that echoes the timestamp of a copy that was never
/// delivered can make a correct kernel undo. The violation at the line where the kernel left
/// (the first wrong send is the violation itself, as a wrong undo's burst is) still counts.
fn after_leaving_the_script(o: Outcome, left: Option<&LineResult>) -> Outcome {
    match (o, left) {
        (Outcome::Violated { line, detail }, Some(l)) if line > l.line => Outcome::Undecided {
            reason: format!(
                "violated at line {line} ({detail}), after the kernel left the script at line {}: {}",
                l.line,
                l.message.clone().unwrap_or_default()
            ),
        },
        (o, _) => o,
    }
}

/// The shell line that failed before the connection's first packet (defaults.sh, a sysctl, the
/// route): the connection then did not run in the configuration the scenario describes, and
/// nothing is decided from it. A shell line that fails once packets flow (a counter check such
/// as `nstat -a | grep NAME | grep -q " 1 "`) is a failed check like an assert: the run stops
/// there, and what the kernel did up to it is judged.
fn failed_setup_line(lines: &[LineResult]) -> Option<&LineResult> {
    use trc_pkt::report::{LineKind, Status};
    let first_packet = lines
        .iter()
        .filter(|l| matches!(l.kind, LineKind::PacketIn | LineKind::PacketOut))
        .map(|l| l.line)
        .min();
    lines.iter().find(|l| {
        l.kind == LineKind::Shell
            && l.status == Status::Fail
            && first_packet.is_none_or(|p| l.line < p)
    })
}

/// The whole report from the cases and their runs (`runs[i]` for `cases[i]`; missing ones count
/// as not run).
pub fn report(
    suite: &Suite,
    kernel: String,
    profile: &Profile,
    cases: &[Case],
    runs: &[ScriptRun],
    mons: &[Monitor],
    baseline: &[Accepted],
) -> CheckReport {
    summarise(
        suite.name(),
        kernel,
        profile.name.clone(),
        evaluate_all(cases, runs, mons, profile),
        mons,
        baseline,
    )
}

/// Every case judged ([`evaluate`]); a case without a run (`runs` cut short by an interrupt)
/// counts as not run.
pub fn evaluate_all(
    cases: &[Case],
    runs: &[ScriptRun],
    mons: &[Monitor],
    profile: &Profile,
) -> Vec<CaseResult> {
    let missing: ScriptRun = Err(NoReport::Interrupted);
    cases
        .iter()
        .enumerate()
        .map(|(i, c)| evaluate(c, runs.get(i).unwrap_or(&missing), mons, profile))
        .collect()
}

/// The report from the judged cases, in suite order: per property, the scenarios that decided
/// it, those that violate it (outside the baseline, and those that stand for a finding
/// `baseline` accepts) and the shortest violating one (the fewest inbound segments, the earliest
/// at equal size; one outside the baseline first). A function of the case results alone, so
/// `trc merge` builds the one run's report from the shards' case results.
pub fn summarise(
    suite: String,
    kernel: String,
    profile: String,
    results: Vec<CaseResult>,
    mons: &[Monitor],
    baseline: &[Accepted],
) -> CheckReport {
    let mut props = Vec::new();
    for m in mons {
        let mut s = PropertySummary {
            id: m.id.to_string(),
            verdict: Verdict::Undecided,
            decided: 0,
            undecided: 0,
            violated: Vec::new(),
            accepted: Vec::new(),
            shortest: None,
            shortest_path: None,
            shrunk: None,
            shrink_note: None,
        };
        // The shortest violation outside the baseline, else the shortest accepted one.
        let mut best: [Option<(&CaseResult, u32, &String)>; 2] = [None, None];
        for r in &results {
            match r.properties.get(m.id) {
                Some(Outcome::Holds) => s.decided += 1,
                Some(Outcome::Violated { line, detail }) => {
                    s.decided += 1;
                    let acc = r
                        .signatures
                        .iter()
                        .filter(|g| g.split(':').next() == Some(m.id))
                        .find_map(|g| trc_properties::baseline::find(baseline, g));
                    let slot = match acc {
                        Some(a) => {
                            s.accepted.push(AcceptedViolation {
                                scenario: r.name.clone(),
                                signature: a.signature.clone(),
                                finding: a.finding.clone(),
                            });
                            1
                        }
                        None => {
                            s.violated.push(r.name.clone());
                            0
                        }
                    };
                    if best[slot].is_none_or(|b| r.inbound < b.0.inbound) {
                        best[slot] = Some((r, *line, detail));
                    }
                }
                Some(Outcome::Undecided { .. }) => s.undecided += 1,
                None => {}
            }
        }
        let [new, acc] = best;
        let best = new.or(acc);
        s.shortest_path = best.map(|b| b.0.path.clone());
        s.shortest = best.map(|(r, line, detail)| (r.name.clone(), line, detail.clone()));
        s.verdict = if !s.violated.is_empty() {
            Verdict::Violated
        } else if !s.accepted.is_empty() {
            Verdict::Accepted
        } else if s.decided > 0 {
            Verdict::Holds
        } else {
            Verdict::Undecided
        };
        props.push(s);
    }
    let not_run = results.iter().filter(|r| !r.kernel_ran).count();
    CheckReport {
        suite,
        kernel,
        profile,
        cases: results,
        properties: props,
        not_run,
    }
}

impl CheckReport {
    /// Violated if a property is; else incomplete if a scenario did not run or a property was
    /// decided by none; else holds.
    pub fn outcome(&self) -> trc_check::Outcome {
        if self.violated() {
            trc_check::Outcome::Violated
        } else if self.not_run > 0
            || self
                .properties
                .iter()
                .any(|p| p.verdict == Verdict::Undecided)
        {
            trc_check::Outcome::Incomplete
        } else {
            trc_check::Outcome::Holds
        }
    }

    /// Whether a property is violated outside the baseline.
    pub fn violated(&self) -> bool {
        self.properties
            .iter()
            .any(|p| p.verdict == Verdict::Violated)
    }

    /// One line per scenario.
    pub fn case_line(r: &CaseResult) -> String {
        let props: Vec<String> = r
            .properties
            .iter()
            .filter(|(_, o)| !matches!(o, Outcome::Holds))
            .map(|(id, o)| match o {
                Outcome::Violated { line, .. } => format!("{id} VIOLATED (line {line})"),
                _ => format!("{id} undecided"),
            })
            .collect();
        let div = match &r.divergence {
            // An incomplete replay compared only what it made: say so, not "same".
            None if r.kernel_ran && r.profile.incomplete() => format!(
                "no difference from the profile where its replay ran (profile {})",
                r.profile
            ),
            None if r.kernel_ran => "same as the profile".to_string(),
            None => String::new(),
            Some(d) => format!(
                "differs from the profile at line {}{} ({}): kernel {}, profile {}",
                d.line,
                if d.timing { " [timing]" } else { "" },
                d.text,
                d.kernel,
                d.profile
            ),
        };
        format!(
            "{}: kernel {}; {}; {}",
            r.name,
            r.kernel,
            if props.is_empty() {
                "all hold".to_string()
            } else {
                props.join(", ")
            },
            div
        )
    }

    pub fn render(&self) -> String {
        use std::fmt::Write as _;
        let mut o = String::new();
        let _ = writeln!(
            o,
            "trc kernel check: suite {}, {} scenarios, kernel {}, profile {}",
            self.suite,
            self.cases.len(),
            self.kernel,
            self.profile
        );
        for r in &self.cases {
            let _ = writeln!(o, "  {}", Self::case_line(r));
        }
        let _ = writeln!(o);
        for p in &self.properties {
            let name = trc_properties::catalogue()
                .into_iter()
                .find(|s| s.id == p.id)
                .map(|s| s.name)
                .unwrap_or("");
            let word = p.verdict.word();
            let _ = writeln!(
                o,
                "  {name:<72} {word} ({} decided, {} undecided)",
                p.decided, p.undecided
            );
            if !p.violated.is_empty() {
                let _ = writeln!(
                    o,
                    "      in {} scenario(s): {}",
                    p.violated.len(),
                    p.violated.join(", ")
                );
            }
            if !p.accepted.is_empty() {
                let acc: Vec<String> = p
                    .accepted
                    .iter()
                    .map(|a| format!("{} ({} {})", a.scenario, a.finding, a.signature))
                    .collect();
                let _ = writeln!(
                    o,
                    "      accepted in {} scenario(s) that stand for accepted findings: {}",
                    p.accepted.len(),
                    acc.join(", ")
                );
            }
            if let Some((name, line, detail)) = &p.shortest {
                let _ = writeln!(o, "      shortest: {name} line {line}: {detail}");
            }
            if let Some(s) = &p.shrunk {
                let _ = writeln!(
                    o,
                    "      shrunk: {}: {} -> {} events ({} kernel runs of {}{}), line {}: {}",
                    s.scenario,
                    s.events_before,
                    s.events_after,
                    s.kernel_runs,
                    s.budget,
                    if s.budget_exhausted {
                        ", budget exhausted"
                    } else {
                        ""
                    },
                    s.line,
                    s.detail
                );
                let _ = writeln!(o, "      shrunk script: {}", s.path);
            }
            if let Some(n) = &p.shrink_note {
                let _ = writeln!(o, "      {n}");
            }
        }
        let differ = self
            .cases
            .iter()
            .filter(|r| r.divergence.as_ref().is_some_and(|d| !d.timing))
            .count();
        let timing = self
            .cases
            .iter()
            .filter(|r| r.divergence.as_ref().is_some_and(|d| d.timing))
            .count();
        let _ = writeln!(o, "\n{differ} of {} scenarios behave differently from profile {} (first differing line above), {timing} differ first by a timing error; {} not run", self.cases.len(), self.profile, self.not_run);
        o
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_undo;
