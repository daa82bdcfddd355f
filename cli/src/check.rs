//! `trc check` and `trc matrix`.

use crate::output;
use crate::BoundArgs;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Duration;
use trc_engine::{check_with, Options, Progress, Report, Verdict};
use trc_model::config::SackMode;
use trc_model::model::{Action, State, TcpModel};
use trc_model::profile::parse_profile_file;
use trc_model::{Config, Profile};

#[derive(Args, Debug)]
pub struct CheckArgs {
    #[command(flatten)]
    pub model: crate::ModelArgs,
    /// Worker threads (0 = all cores; at most 4 per core).
    #[arg(long, default_value_t = 0, value_parser = crate::threads_value)]
    pub threads: usize,
    /// Stop at the end of the BFS level where the first violation is found.
    #[arg(long)]
    pub fail_fast: bool,
    /// Memory budget. The states of the BFS frontier that do not fit are written to a
    /// temporary file in a private directory $TMPDIR/trc-spill-<pid>-... ($TMPDIR: default
    /// /tmp), unlinked as soon as it is opened (no file is left behind, even if trc is killed).
    /// When the visited set, parent links and claim table (≈ 25-40 bytes per state) would not
    /// fit, the check stops cleanly with partial statistics (exit 3 if nothing was violated).
    #[arg(long, value_name = "MiB")]
    pub max_memory: Option<u64>,
    /// With --max-memory: do not spill the frontier to disk; stop when it would not fit.
    #[arg(long, requires = "max_memory")]
    pub no_spill: bool,
    /// Explore at most this many events deep (bounded depth).
    #[arg(long)]
    pub max_depth: Option<usize>,
    /// Exact state-space reductions (same verdicts, same counterexample lengths, fewer states):
    /// step observations cleared where every property holds, ghost fields no checked property
    /// reads, dead time stamps. Counterexamples show the reduced states (see docs/explanation/performance.md).
    #[arg(long)]
    pub reduce: bool,
    /// Print the result as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Baseline of accepted findings (violations reported but not failing).
    #[arg(long, value_name = "FILE", default_value = "baseline.toml")]
    pub baseline: PathBuf,
    /// Write each violated property's counterexample as DIR/<property>-<profile>.{pkt,json,dot}.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Add new violations to the regression corpus (see --regressions).
    #[arg(long)]
    pub save_regressions: bool,
    /// Regression corpus directory (manifest.toml + scripts) for --save-regressions.
    #[arg(
        long,
        value_name = "DIR",
        default_value = "counterexamples/regressions"
    )]
    pub regressions: PathBuf,
    /// Compare with this profile (built-in name or file): a violation whose signature also
    /// occurs there is reported as "also on PROFILE" and does not fail. Default for a profile
    /// file: its `base`; for a built-in profile: none.
    #[arg(long, value_name = "PROFILE")]
    pub against: Option<String>,
    /// Count, for every decision function and branch of it, the transitions of the explored
    /// space that went through it, and list those never reached (about twice the time).
    #[arg(long)]
    pub coverage: bool,
    /// Do only shard I of N of the work list (bounds files × SACK modes × property groups, see
    /// docs/reference/shards.md) and print it as JSON for `trc merge`.
    #[arg(long, value_name = "I/N", value_parser = crate::shard::parse_shard)]
    pub shard: Option<crate::shard::Shard>,
}

#[derive(Args, Debug)]
pub struct MatrixArgs {
    /// Profiles to include (default: all built-in).
    #[arg(long = "profile", value_name = "NAME")]
    pub profiles: Vec<String>,
    #[command(flatten)]
    pub bounds: BoundArgs,
    /// Worker threads (0 = all cores; at most 4 per core).
    #[arg(long, default_value_t = 0, value_parser = crate::threads_value)]
    pub threads: usize,
    /// Print the matrix as JSON.
    #[arg(long)]
    pub json: bool,
    /// Baseline of accepted findings: a property violated only by accepted signatures is shown
    /// as `acc`, not as a failure.
    #[arg(long, default_value = "baseline.toml")]
    pub baseline: PathBuf,
    /// Do only shard I of N of the work list (profiles × SACK modes, see docs/reference/shards.md) and print it
    /// as JSON for `trc merge`.
    #[arg(long, value_name = "I/N", value_parser = crate::shard::parse_shard)]
    pub shard: Option<crate::shard::Shard>,
}

pub use trc_properties::baseline::{Accepted, Baseline};

/// The baseline file's accepted findings (none, with a note, when the file does not exist).
pub(crate) fn load_baseline(p: &Path, what: &str) -> Result<Baseline, String> {
    if !p.exists() {
        // Not an error (a check outside the repository is legitimate), but a silent empty
        // baseline turns every accepted finding into a failure: say so.
        eprintln!("{what}: note: no baseline file {}: no finding is accepted (run from the repository root or pass --baseline FILE)", p.display());
        return Ok(Baseline::default());
    }
    let src = crate::read_source(p)?;
    toml::from_str(&src).map_err(|e| crate::toml_error(p, &src, &e))
}

/// Resolves `--profile`: a built-in name, else a file.
pub fn load_profile(arg: &str) -> Result<Profile, String> {
    load_profile_info(arg).map(|(p, _)| p)
}

/// What a profile file says beside its decision points: its base and the decision points it
/// overrides.
#[derive(Debug, Clone)]
pub struct FileInfo {
    pub base: String,
    pub overrides: Vec<String>,
}

/// [`load_profile`], with the file's [`FileInfo`] (`None` for a built-in profile).
pub fn load_profile_info(arg: &str) -> Result<(Profile, Option<FileInfo>), String> {
    if let Some(p) = Profile::by_name(arg) {
        return Ok((p, None));
    }
    let path = Path::new(arg);
    if !path.exists() {
        return Err(format!(
            "unknown profile `{arg}`: not a built-in profile ({}) and no such file",
            Profile::builtin()
                .iter()
                .map(|p| p.name.clone())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let src = crate::read_source(path)?;
    let p = parse_profile_file(&src, arg).map_err(|e| e.to_string())?;
    let (base, overrides) = trc_model::profile::profile_file_base(&src);
    Ok((p, Some(FileInfo { base, overrides })))
}

/// One exploration: model + engine + the catalogue's properties.
pub fn explore(
    cfg: &Config,
    profile: &Profile,
    ids: &[String],
    opts: &Options,
    progress: Option<&(dyn Fn(&Progress) + Sync)>,
) -> Result<(TcpModel, Report<Action>), String> {
    explore_reduced(cfg, profile, ids, opts, progress, false)
}

/// [`explore`], with every exact reduction (`--reduce`) if `reduce`.
pub fn explore_reduced(
    cfg: &Config,
    profile: &Profile,
    ids: &[String],
    opts: &Options,
    progress: Option<&(dyn Fn(&Progress) + Sync)>,
    reduce: bool,
) -> Result<(TcpModel, Report<Action>), String> {
    let specs = trc_properties::select(ids)?;
    let mut model = TcpModel::new(cfg.clone(), profile.clone())
        .with_properties(trc_properties::properties(&specs));
    if reduce {
        model = model.with_reduce(trc_properties::reductions(&specs));
    }
    let report = check_with(
        &model,
        opts,
        progress,
        trc_engine::StateHooks {
            fingerprint: State::fingerprint,
            next_state_into: TcpModel::next_state_into,
            drop_is_noop: State::is_plain,
        },
    );
    Ok((model, report))
}

/// [`explore_reduced`] with every violation classified by its signature
/// (`trc_properties::signature`): each property's report lists every signature met, with its
/// count and a shortest counterexample.
pub fn explore_classified(
    cfg: &Config,
    profile: &Profile,
    ids: &[String],
    opts: &Options,
    progress: Option<&(dyn Fn(&Progress) + Sync)>,
    reduce: bool,
) -> Result<(TcpModel, Report<Action>), String> {
    let specs = trc_properties::select(ids)?;
    let mut model = TcpModel::new(cfg.clone(), profile.clone())
        .with_properties(trc_properties::properties(&specs));
    if reduce {
        model = model.with_reduce(trc_properties::reductions(&specs));
    }
    let hooks = trc_engine::Classified {
        hooks: trc_engine::StateHooks {
            fingerprint: State::fingerprint,
            next_state_into: TcpModel::next_state_into,
            drop_is_noop: State::is_plain,
        },
        classify: trc_properties::signature::classifier(&specs),
    };
    let report = check_with(&model, opts, progress, hooks);
    Ok((model, report))
}

/// The signatures each property's violations have (property id → signatures).
pub fn signatures(
    report: &Report<Action>,
) -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    let mut out = std::collections::BTreeMap::new();
    for p in &report.properties {
        let id = p.name.split(':').next().unwrap_or(p.name).to_string();
        let set: std::collections::BTreeSet<String> = p
            .classes
            .iter()
            .map(|c| trc_properties::signature::describe(&id, c.class))
            .collect();
        out.insert(id, set);
    }
    out
}

/// The progress display of a check on a terminal (`trc check` without `--json`, stdout and
/// stderr both terminals): one line per BFS level (depth, states, states/s, memory) above a
/// spinner, and a one-line summary at the end. Nothing otherwise, so piped output is plain.
pub struct LevelProgress {
    pb: ProgressBar,
    last_depth: std::sync::Mutex<Option<usize>>,
}

impl LevelProgress {
    pub fn new(json: bool) -> Option<LevelProgress> {
        if json || !std::io::stdout().is_terminal() || !std::io::stderr().is_terminal() {
            return None;
        }
        let pb = ProgressBar::new_spinner();
        pb.set_style(ProgressStyle::with_template("{spinner} {elapsed} {msg}").unwrap());
        pb.enable_steady_tick(Duration::from_millis(120));
        Some(LevelProgress {
            pb,
            last_depth: std::sync::Mutex::new(None),
        })
    }

    /// The engine's callback (at least once per level): a line when a level is done.
    pub fn update(&self, p: &Progress) {
        let secs = p.elapsed.as_secs_f64().max(1e-9);
        let mib = p.memory_bytes as f64 / (1 << 20) as f64;
        let mut last = self.last_depth.lock().unwrap();
        if *last != Some(p.depth) {
            *last = Some(p.depth);
            self.pb.println(format!(
                "level {:>3}: {:>10} states ({:>9} new) {:>10.0} states/s {:>8.1} MiB",
                p.depth,
                p.unique_states,
                p.frontier,
                p.unique_states as f64 / secs,
                mib
            ));
        }
        self.pb.set_message(format!(
            "depth {} · {} states · {:.0} states/s · {:.1} MiB",
            p.depth,
            p.unique_states,
            p.unique_states as f64 / secs,
            mib
        ));
    }

    /// Clears the spinner and prints the one-line summary (on stderr, like the levels).
    pub fn finish(self, report: &Report<Action>) {
        self.pb.finish_and_clear();
        let secs = report.elapsed.as_secs_f64();
        eprintln!(
            "done: {} states, {} transitions, depth {} in {:.2} s ({:.0} states/s), peak {:.1} MiB",
            report.unique_states,
            report.transitions,
            report.max_depth,
            secs,
            report.unique_states as f64 / secs.max(1e-9),
            report.peak_memory_bytes as f64 / (1 << 20) as f64
        );
    }
}

/// One unit of `trc check`'s work list: a bounds file, a SACK mode (the two halves of
/// `SackMode::Both` are disjoint state spaces), and a property group.
#[derive(Clone, Debug)]
pub struct CheckUnit {
    pub config: usize,
    pub sack: SackMode,
    /// Property ids, in the selection's order.
    pub group: Vec<String>,
    /// Printed name, also the export subdirectory under `--out` (e.g. `no-sack`, `c1-sack-g2`).
    pub label: String,
}

/// The work list of `trc check` in its canonical order: bounds files, then SACK modes (SACK
/// first, as the model's initial states), then property groups. Property groups are the
/// properties sharing the ghost fields they read, and only with `--reduce` (each group's
/// reduced space is then smaller than the whole selection's); without it every group would
/// explore the same states, so the selection is one group.
pub fn check_work_list(configs: &[Config], ids: &[String], reduce: bool) -> Vec<CheckUnit> {
    let groups: Vec<Vec<String>> = if reduce {
        let mut g: Vec<(trc_model::reduce::GhostSet, Vec<String>)> = Vec::new();
        for id in ids {
            let reads = trc_properties::ghost_reads(id);
            match g.iter_mut().find(|(r, _)| *r == reads) {
                Some((_, v)) => v.push(id.clone()),
                None => g.push((reads, vec![id.clone()])),
            }
        }
        g.into_iter().map(|(_, v)| v).collect()
    } else {
        vec![ids.to_vec()]
    };
    let mut units = Vec::new();
    for (ci, c) in configs.iter().enumerate() {
        let modes: Vec<SackMode> = match c.sack {
            SackMode::Both => vec![SackMode::Sack, SackMode::NoSack],
            m => vec![m],
        };
        for m in &modes {
            for (gi, g) in groups.iter().enumerate() {
                let mut label = String::new();
                if configs.len() > 1 {
                    label.push_str(&format!("c{ci}-"));
                }
                label.push_str(if *m == SackMode::Sack {
                    "sack"
                } else {
                    "no-sack"
                });
                if groups.len() > 1 {
                    label.push_str(&format!("-g{gi}"));
                }
                units.push(CheckUnit {
                    config: ci,
                    sack: *m,
                    group: g.clone(),
                    label,
                });
            }
        }
    }
    units
}

pub fn run_check(a: CheckArgs) -> i32 {
    let configs = match a.model.bounds.configs() {
        Ok(x) => x,
        Err(e) => return output::usage_error(&e),
    };
    let (profile, file) = match load_profile_info(&a.model.profile) {
        Ok(x) => x,
        Err(e) => return output::usage_error(&e),
    };
    let ids: Vec<String> = match trc_properties::select(&a.model.properties) {
        Ok(specs) => specs.iter().map(|s| s.id.to_string()).collect(),
        Err(e) => return output::usage_error(&e),
    };
    if a.coverage && a.shard.is_some() {
        return output::usage_error("--coverage cannot be sharded (--shard): run it unsharded");
    }
    // The comparison profile: --against, else a profile file's base.
    let against = match a
        .against
        .clone()
        .or_else(|| file.as_ref().map(|f| f.base.clone()))
    {
        Some(name) => match load_profile(&name) {
            Ok(p) => Some(p),
            Err(e) => return output::usage_error(&format!("--against: {e}")),
        },
        None => None,
    };
    let baseline = match load_baseline(&a.baseline, "trc check") {
        Ok(b) => b,
        Err(e) => return output::usage_error(&e),
    };
    if let Some(dir) = &a.out {
        if let Err(e) = out_dir_ok(dir) {
            return output::usage_error(&e);
        }
    }
    if a.shard.is_some() && a.fail_fast {
        return output::usage_error("--fail-fast cannot be sharded: it stops at a BFS level of the whole state space, which no shard sees");
    }
    if a.shard.is_some() && a.save_regressions {
        return output::usage_error(
            "--save-regressions needs the merged result: run it on an unsharded check",
        );
    }
    let opts = Options {
        threads: a.threads,
        max_depth: a.max_depth,
        fail_fast: a.fail_fast,
        max_memory_bytes: a.max_memory.map(|m| m.saturating_mul(1024 * 1024)),
        max_rss_bytes: a.max_memory.map(|m| m.saturating_mul(1024 * 1024)),
        spill_dir: (a.max_memory.is_some() && !a.no_spill).then(std::env::temp_dir),
        ..Options::default()
    };
    let several = configs.len() > 1;
    let cfgs: Vec<Config> = configs.iter().map(|(_, c)| c.clone()).collect();
    // One exploration (and its comparison profile's): its JSON, exports, whether it fails, its
    // coverage and, for a shard, what the merge needs to judge signatures (`shard_detail`).
    let run_one =
        |cfg: &Config, ids: &[String], out_dir: Option<PathBuf>| -> Result<RunOut, String> {
            let progress = LevelProgress::new(a.json || a.shard.is_some());
            let cb = |p: &Progress| {
                if let Some(pr) = &progress {
                    pr.update(p);
                }
            };
            let (model, report) =
                explore_classified(cfg, &profile, ids, &opts, Some(&cb), a.reduce)?;
            // The same bounds and properties on the comparison profile, for its signatures.
            let base = match &against {
                Some(bp) => {
                    let (_, r) = explore_classified(cfg, bp, ids, &opts, Some(&cb), a.reduce)?;
                    Some(output::Base {
                        name: bp.name.clone(),
                        signatures: signatures(&r),
                        incomplete: output::incomplete(&r),
                    })
                }
                None => None,
            };
            let coverage = if a.coverage {
                let mut c = crate::coverage::explore(cfg, &profile, ids, &opts, a.reduce);
                if let Some(f) = &file {
                    c.warn_overrides(&f.overrides);
                }
                Some(c)
            } else {
                None
            };
            if let Some(pr) = progress {
                pr.finish(&report);
            }
            let results = output::results(&model, &report, &baseline.accepted, base.as_ref());
            let v = output::check_json(&model, &report, &results, base.as_ref(), coverage.as_ref());
            if out_dir.is_some() || a.save_regressions {
                let corpus = a.save_regressions.then_some(a.regressions.as_path());
                export_violations(&model, &results, out_dir.as_deref(), corpus)?;
            }
            let failing = results.iter().any(output::PropResult::fails);
            let detail = a
                .shard
                .is_some()
                .then(|| output::shard_detail(&model, &report, base.as_ref()));
            Ok(RunOut {
                json: v,
                failing,
                incomplete: output::incomplete(&report),
                coverage,
                detail,
            })
        };
    if let Some(shard) = a.shard {
        let units = check_work_list(&cfgs, &ids, a.reduce);
        let mut done = Vec::new();
        let (mut failing, mut incomplete) = (false, false);
        for (k, u) in units.iter().enumerate() {
            if !shard.owns(k) {
                continue;
            }
            let mut cfg = cfgs[u.config].clone();
            cfg.sack = u.sack;
            let r = match run_one(&cfg, &u.group, a.out.as_ref().map(|d| d.join(&u.label))) {
                Ok(x) => x,
                Err(e) => return output::usage_error(&e),
            };
            failing |= r.failing;
            incomplete |= r.incomplete;
            done.push(serde_json::json!({"unit": k, "label": u.label, "config": u.config, "run": r.json, "detail": r.detail}));
        }
        let args = serde_json::json!({
            "profile": profile,
            "configs": cfgs,
            "properties": ids,
            "reduce": a.reduce,
            "against": against.as_ref().map(|p| p.name.clone()),
            "units": units.iter().map(|u| u.label.clone()).collect::<Vec<_>>(),
        });
        crate::shard::print_shard("check", shard, units.len(), args, done);
        return exit_code(failing, incomplete);
    }
    let (mut runs, mut coverages, mut failing, mut incomplete) =
        (Vec::new(), Vec::new(), false, false);
    for (path, cfg) in &configs {
        let out_dir = a.out.as_ref().map(|d| {
            if several {
                d.join(config_label(path.as_deref()))
            } else {
                d.clone()
            }
        });
        let r = match run_one(cfg, &ids, out_dir) {
            Ok(x) => x,
            Err(e) => return output::usage_error(&e),
        };
        failing |= r.failing;
        incomplete |= r.incomplete;
        runs.push(r.json);
        coverages.push(r.coverage);
    }
    print_check_with(&runs, a.json, &coverages);
    exit_code(failing, incomplete)
}

/// What one exploration of `trc check` gives.
struct RunOut {
    json: Value,
    failing: bool,
    incomplete: bool,
    coverage: Option<crate::coverage::Coverage>,
    /// With `--shard`: [`output::shard_detail`].
    detail: Option<Value>,
}

/// The export subdirectory of a bounds file when several are checked: its file stem.
fn config_label(path: Option<&Path>) -> String {
    path.and_then(|p| p.file_stem())
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "default".into())
}

/// Prints one run per bounds file (`trc check` and `trc merge`): one file's JSON as it is, several
/// as `{"result", "runs": [...]}`; the human summaries one after the other.
pub fn print_check(runs: &[Value], json: bool) {
    print_check_with(runs, json, &[]);
}

/// [`print_check`], with each run's `--coverage` table after its summary (text only: the JSON
/// has it).
fn print_check_with(runs: &[Value], json: bool, coverages: &[Option<crate::coverage::Coverage>]) {
    if json {
        let v = if runs.len() == 1 {
            runs[0].clone()
        } else {
            let results: Vec<&str> = runs
                .iter()
                .map(|r| r["result"].as_str().unwrap_or(""))
                .collect();
            let result = ["violated", "incomplete", "holds"]
                .into_iter()
                .find(|w| results.contains(w))
                .unwrap_or("holds");
            serde_json::json!({"result": result, "runs": runs})
        };
        println!("{}", serde_json::to_string_pretty(&v).unwrap());
        return;
    }
    for (i, v) in runs.iter().enumerate() {
        if runs.len() > 1 {
            println!(
                "{}== bounds file {} of {}",
                if i > 0 { "\n" } else { "" },
                i + 1,
                runs.len()
            );
        }
        output::print_summary(v);
        if let Some(Some(c)) = coverages.get(i) {
            c.print();
        }
    }
    if runs.iter().any(|r| r["result"] == "incomplete")
        && !runs.iter().any(|r| r["result"] == "violated")
    {
        let reasons: Vec<&str> = runs
            .iter()
            .filter(|r| r["result"] == "incomplete")
            .map(|r| r["stop_reason"].as_str().unwrap_or(""))
            .collect();
        println!(
            "\nINCOMPLETE: stopped early ({}) with no violation among the states explored (exit 3)",
            reasons.join(", ")
        );
    }
}

/// 1: a violation outside the baseline; 3 (incomplete): none, but the check stopped before
/// the bounds were explored (`--max-memory`, a state limit), so "holds" is not a verdict; 0:
/// none within the bounds (`--max-depth` is a bound like the others).
pub fn exit_code(failing: bool, incomplete: bool) -> i32 {
    if failing {
        1
    } else if incomplete {
        3
    } else {
        0
    }
}

/// `--out DIR` is usable before the exploration starts (not after it): a directory, or one that
/// can be created.
fn out_dir_ok(dir: &Path) -> Result<(), String> {
    if dir.exists() && !dir.is_dir() {
        return Err(format!(
            "--out {}: not a directory (--out names the directory the counterexamples go to)",
            dir.display()
        ));
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("--out {}: {e}", dir.display()))
}

/// `--out` / `--save-regressions`: export every violated property's counterexample — the one
/// printed: of the shortest failing signature, else the shortest — (messages on stderr, so
/// `--json` output stays machine-readable).
fn export_violations(
    model: &TcpModel,
    results: &[output::PropResult],
    out: Option<&Path>,
    corpus: Option<&Path>,
) -> Result<(), String> {
    for p in results {
        let (Verdict::Violated, Some(path)) = (p.verdict, &p.path) else {
            continue;
        };
        let id = p.id.as_str();
        let statement = trc_properties::catalogue()
            .into_iter()
            .find(|s| s.id == id)
            .map(|s| s.statement)
            .unwrap_or("");
        let subject = trc_trace::export::Subject {
            id,
            name: &p.name,
            statement,
        };
        let x = trc_trace::export::export(
            model,
            path.init_index,
            &path.actions,
            subject,
            trc_trace::export::COUNTEREXAMPLE_GAP_MS,
        )
        .map_err(|e| format!("export of {id}: {e}"))?;
        if let Some(dir) = out {
            let f =
                trc_trace::write_export(dir, &x).map_err(|e| format!("{}: {e}", dir.display()))?;
            // The counterexample page beside the script: what `trc graph` draws for it.
            let g = crate::graph::build(model, path, 1, 2000);
            let title = format!(
                "{} — profile {} — shortest counterexample, {} events",
                p.name,
                model.profile.name,
                path.len()
            );
            let html = crate::graph_html::render(
                &g,
                model,
                &title,
                &crate::pictures::render_path(model, path, Some(id)),
            );
            let page = f.with_extension("html");
            crate::graph::write_atomic(&page, &html)
                .map_err(|e| format!("{}: {e}", page.display()))?;
            eprintln!(
                "trc check: wrote {} (+ .json, .dot, .html){}",
                f.display(),
                if x.trace.kernel_runnable {
                    ""
                } else {
                    " [model-only events: see its header]"
                }
            );
        }
        if let Some(dir) = corpus {
            match trc_trace::regress::add(dir, &x)? {
                trc_trace::regress::Saved::Added(f) => {
                    eprintln!("trc check: added {} to the regression corpus", f.display())
                }
                trc_trace::regress::Saved::AlreadyPresent(n) => eprintln!(
                    "trc check: {id} on {} already in the regression corpus ({n})",
                    model.profile.name
                ),
            }
        }
    }
    Ok(())
}

/// One row of `trc matrix`: a profile's states, seconds and, per catalogue property, the
/// length of the shortest counterexample whose signature the baseline does not accept (`cells`)
/// and the findings of the accepted signatures that occurred (`accepted`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct MatrixRow {
    pub profile: String,
    pub states: u64,
    pub seconds: f64,
    pub cells: Vec<Option<usize>>,
    #[serde(default)]
    pub accepted: Vec<Vec<String>>,
}

impl MatrixRow {
    /// The row of the other SACK mode added in (`trc merge`): states and seconds summed, the
    /// shorter new violation, the union of the accepted findings.
    pub fn absorb(&mut self, r: &MatrixRow) {
        self.states += r.states;
        self.seconds += r.seconds;
        for (a, b) in self.cells.iter_mut().zip(&r.cells) {
            *a = match (*a, *b) {
                (Some(x), Some(y)) => Some(x.min(y)),
                (x, y) => x.or(y),
            };
        }
        self.accepted.resize(self.cells.len(), Vec::new());
        for (a, b) in self.accepted.iter_mut().zip(&r.accepted) {
            for f in b {
                if !a.contains(f) {
                    a.push(f.clone());
                }
            }
            a.sort();
        }
    }
}

/// The work list of `trc matrix`: profiles, then SACK modes (both halves of `Both`).
pub fn matrix_work_list(profiles: usize, cfg: &Config) -> Vec<(usize, SackMode)> {
    let modes: Vec<SackMode> = match cfg.sack {
        SackMode::Both => vec![SackMode::Sack, SackMode::NoSack],
        m => vec![m],
    };
    (0..profiles)
        .flat_map(|p| modes.iter().map(move |m| (p, *m)))
        .collect()
}

fn matrix_row(cfg: &Config, p: &Profile, opts: &Options, baseline: &[Accepted]) -> MatrixRow {
    let (model, report) =
        explore_classified(cfg, p, &[], opts, None, false).expect("catalogue ids are valid");
    let results = output::results(&model, &report, baseline, None);
    let mut cells = Vec::new();
    let mut accepted = Vec::new();
    for r in &results {
        let new = r
            .signatures
            .iter()
            .filter(|s| s.status == output::SigStatus::New)
            .map(|s| s.events)
            .min();
        // A violation without a signature cannot be accepted: it shows as violated.
        let unclassified = r.verdict == Verdict::Violated && r.signatures.is_empty();
        cells.push(if unclassified {
            r.path.as_ref().map(|x| x.actions.len())
        } else {
            new
        });
        let mut f: Vec<String> = r
            .signatures
            .iter()
            .filter(|s| s.status == output::SigStatus::Accepted)
            .filter_map(|s| s.finding.clone())
            .collect();
        f.sort();
        f.dedup();
        accepted.push(f);
    }
    MatrixRow {
        profile: p.name.clone(),
        states: report.unique_states,
        seconds: report.elapsed.as_secs_f64(),
        cells,
        accepted,
    }
}

pub fn run_matrix(a: MatrixArgs) -> i32 {
    let cfg = match a.bounds.config() {
        Ok(c) => c,
        Err(e) => return output::usage_error(&e),
    };
    let profiles: Vec<Profile> = if a.profiles.is_empty() {
        Profile::builtin()
    } else {
        let mut v = Vec::new();
        for n in &a.profiles {
            match load_profile(n) {
                Ok(p) => v.push(p),
                Err(e) => return output::usage_error(&e),
            }
        }
        v
    };
    let opts = Options {
        threads: a.threads,
        ..Options::default()
    };
    let baseline = match load_baseline(&a.baseline, "trc check") {
        Ok(b) => b.accepted,
        Err(e) => return output::usage_error(&e),
    };
    if let Some(shard) = a.shard {
        let units = matrix_work_list(profiles.len(), &cfg);
        let mut done = Vec::new();
        for (k, (pi, mode)) in units.iter().enumerate() {
            if !shard.owns(k) {
                continue;
            }
            let mut c = cfg.clone();
            c.sack = *mode;
            let row = matrix_row(&c, &profiles[*pi], &opts, &baseline);
            done.push(serde_json::json!({"unit": k, "profile": pi, "row": row}));
        }
        let args = serde_json::json!({
            "profiles": profiles,
            "config": cfg,
            "properties": trc_properties::catalogue().iter().map(|s| s.id).collect::<Vec<_>>(),
            "units": units.iter().map(|(p, m)| format!("{}-{}", profiles[*p].name, if *m == SackMode::Sack { "sack" } else { "no-sack" })).collect::<Vec<_>>(),
        });
        crate::shard::print_shard("matrix", shard, units.len(), args, done);
        return 0;
    }
    let rows: Vec<MatrixRow> = profiles
        .iter()
        .map(|p| matrix_row(&cfg, p, &opts, &baseline))
        .collect();
    print_matrix(&rows, a.json);
    0
}

/// Prints the matrix (`trc matrix` and `trc merge`).
pub fn print_matrix(rows: &[MatrixRow], json: bool) {
    let specs = trc_properties::catalogue();
    if json {
        let v: Vec<_> = rows
            .iter()
            .map(|r| {
                let props: serde_json::Map<String, Value> = specs
                    .iter()
                    .enumerate()
                    .map(|(i, s)| {
                        let acc = r.accepted.get(i).cloned().unwrap_or_default();
                        let v = match r.cells[i] {
                            Some(n) => serde_json::json!({"violated": true, "steps": n, "accepted": acc}),
                            None => serde_json::json!({"violated": false, "accepted": acc}),
                        };
                        (s.id.to_string(), v)
                    })
                    .collect();
                serde_json::json!({"profile": r.profile, "states": r.states, "seconds": r.seconds, "properties": props})
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&v).unwrap());
        return;
    }
    print!("{:<20}", "profile");
    for s in &specs {
        print!(" {:>6}", s.id);
    }
    println!(" {:>10} {:>8}", "states", "seconds");
    let (mut total_states, mut total_secs) = (0u64, 0f64);
    for r in rows {
        total_states += r.states;
        total_secs += r.seconds;
        print!("{:<20}", r.profile);
        for (i, c) in r.cells.iter().enumerate() {
            let acc = r.accepted.get(i).is_some_and(|a| !a.is_empty());
            match c {
                Some(n) => print!(" {:>6}", format!("✗{n}")),
                None if acc => print!(" {:>6}", "acc"),
                None => print!(" {:>6}", "ok"),
            }
        }
        println!(" {:>10} {:>8.2}", r.states, r.seconds);
    }
    println!("\n✗N: violated by a signature the baseline does not accept, shortest such counterexample N events;");
    println!("acc: violated only by accepted findings (baseline.toml; `trc check --profile P` lists them); ok: holds within the bounds.");
    // The findings met, per property, over all rows (each cell's list is in the JSON).
    let mut met: Vec<String> = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        let mut f: Vec<&String> = rows
            .iter()
            .filter_map(|r| r.accepted.get(i))
            .flatten()
            .collect();
        f.sort();
        f.dedup();
        if !f.is_empty() {
            met.push(format!(
                "{}: {}",
                spec.id,
                f.iter().map(|x| x.as_str()).collect::<Vec<_>>().join(" ")
            ));
        }
    }
    if !met.is_empty() {
        println!(
            "accepted findings met (per cell in --json): {}",
            met.join("; ")
        );
    }
    println!(
        "total: {} states in {:.2} s ({:.0} states/s)",
        total_states,
        total_secs,
        total_states as f64 / total_secs.max(1e-9)
    );
}
