//! `trc check` and `trc matrix`.

use crate::output;
use crate::BoundArgs;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use serde::{Deserialize, Serialize};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Duration;
use trc_engine::{check_with, Options, Progress, Report, Verdict};
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
    /// Stop cleanly (with partial statistics) when the explored states would need more memory.
    #[arg(long, value_name = "MiB")]
    pub max_memory: Option<u64>,
    /// Explore at most this many events deep (bounded depth).
    #[arg(long)]
    pub max_depth: Option<usize>,
    /// Exact state-space reductions (same verdicts, same counterexample lengths, fewer states):
    /// step observations cleared where every property holds, ghost fields no checked property
    /// reads, dead time stamps. Counterexamples show the reduced states (see docs/performance.md).
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
    #[arg(long, value_name = "DIR", default_value = "counterexamples/regressions")]
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
}

/// A baseline entry: a violation *mechanism* (its signature, see
/// `trc_properties::signature`) confirmed as real kernel behaviour (docs/findings.md). It is
/// reported without failing the check, on every profile and SACK mode where it occurs.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Accepted {
    /// `PROPERTY:FUNCTION:STATE:EVIDENCE`, as `trc check` prints it.
    pub signature: String,
    /// The finding's name in docs/findings.md (`F1`).
    pub finding: String,
    pub reason: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    #[serde(default)]
    pub accepted: Vec<Accepted>,
}

fn load_baseline(p: &Path) -> Result<Baseline, String> {
    if !p.exists() {
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
            Profile::builtin().iter().map(|p| p.name.clone()).collect::<Vec<_>>().join(", ")
        ));
    }
    let src = crate::read_source(path)?;
    let p = parse_profile_file(&src, arg).map_err(|e| e.to_string())?;
    let (base, overrides) = trc_model::profile::profile_file_base(&src);
    Ok((p, Some(FileInfo { base, overrides })))
}

/// One exploration: model + engine + the catalogue's properties.
pub fn explore(cfg: &Config, profile: &Profile, ids: &[String], opts: &Options, progress: Option<&(dyn Fn(&Progress) + Sync)>) -> Result<(TcpModel, Report<Action>), String> {
    explore_reduced(cfg, profile, ids, opts, progress, false)
}

/// [`explore`], with every exact reduction (`--reduce`) if `reduce`.
pub fn explore_reduced(cfg: &Config, profile: &Profile, ids: &[String], opts: &Options, progress: Option<&(dyn Fn(&Progress) + Sync)>, reduce: bool) -> Result<(TcpModel, Report<Action>), String> {
    let specs = trc_properties::select(ids)?;
    let mut model = TcpModel::new(cfg.clone(), profile.clone()).with_properties(trc_properties::properties(&specs));
    if reduce {
        model = model.with_reduce(trc_properties::reductions(&specs));
    }
    let report = check_with(&model, opts, progress, trc_engine::StateHooks { fingerprint: State::fingerprint, next_state_into: TcpModel::next_state_into, drop_is_noop: State::is_plain });
    Ok((model, report))
}

/// [`explore_reduced`] with every violation classified by its signature
/// (`trc_properties::signature`): each property's report lists every signature met, with its
/// count and a shortest counterexample.
pub fn explore_classified(cfg: &Config, profile: &Profile, ids: &[String], opts: &Options, progress: Option<&(dyn Fn(&Progress) + Sync)>, reduce: bool) -> Result<(TcpModel, Report<Action>), String> {
    let specs = trc_properties::select(ids)?;
    let mut model = TcpModel::new(cfg.clone(), profile.clone()).with_properties(trc_properties::properties(&specs));
    if reduce {
        model = model.with_reduce(trc_properties::reductions(&specs));
    }
    let hooks = trc_engine::Classified {
        hooks: trc_engine::StateHooks { fingerprint: State::fingerprint, next_state_into: TcpModel::next_state_into, drop_is_noop: State::is_plain },
        classify: trc_properties::signature::classifier(&specs),
    };
    let report = check_with(&model, opts, progress, hooks);
    Ok((model, report))
}

/// The signatures each property's violations have (property id → signatures).
pub fn signatures(report: &Report<Action>) -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    let mut out = std::collections::BTreeMap::new();
    for p in &report.properties {
        let id = p.name.split(':').next().unwrap_or(p.name).to_string();
        let set: std::collections::BTreeSet<String> = p.classes.iter().map(|c| trc_properties::signature::describe(&id, c.class)).collect();
        out.insert(id, set);
    }
    out
}

fn progress_bar() -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let pb = ProgressBar::new_spinner();
    pb.set_style(ProgressStyle::with_template("{spinner} {elapsed} {msg}").unwrap());
    pb.enable_steady_tick(Duration::from_millis(120));
    Some(pb)
}

pub fn run_check(a: CheckArgs) -> i32 {
    let cfg = match a.model.bounds.config() {
        Ok(x) => x,
        Err(e) => return output::usage_error(&e),
    };
    let (profile, file) = match load_profile_info(&a.model.profile) {
        Ok(x) => x,
        Err(e) => return output::usage_error(&e),
    };
    // The comparison profile: --against, else a profile file's base.
    let against = match a.against.clone().or_else(|| file.as_ref().map(|f| f.base.clone())) {
        Some(name) => match load_profile(&name) {
            Ok(p) => Some(p),
            Err(e) => return output::usage_error(&format!("--against: {e}")),
        },
        None => None,
    };
    let baseline = match load_baseline(&a.baseline) {
        Ok(b) => b,
        Err(e) => return output::usage_error(&e),
    };
    if let Some(dir) = &a.out {
        if let Err(e) = out_dir_ok(dir) {
            return output::usage_error(&e);
        }
    }
    let opts = Options {
        threads: a.threads,
        max_depth: a.max_depth,
        fail_fast: a.fail_fast,
        max_memory_bytes: a.max_memory.map(|m| m.saturating_mul(1024 * 1024)),
        max_rss_bytes: a.max_memory.map(|m| m.saturating_mul(1024 * 1024)),
        ..Options::default()
    };
    let pb = progress_bar();
    let cb = |p: &Progress| {
        if let Some(pb) = &pb {
            pb.set_message(format!("depth {} · {} states · {} in frontier", p.depth, p.unique_states, p.frontier));
        }
    };
    let (model, report) = match explore_classified(&cfg, &profile, &a.model.properties, &opts, Some(&cb), a.reduce) {
        Ok(x) => x,
        Err(e) => return output::usage_error(&e),
    };
    // The same bounds and properties on the comparison profile, for its signatures.
    let base = match &against {
        Some(bp) => match explore_classified(&cfg, bp, &a.model.properties, &opts, Some(&cb), a.reduce) {
            Ok((_, r)) => Some(output::Base { name: bp.name.clone(), signatures: signatures(&r), incomplete: output::incomplete(&r) }),
            Err(e) => return output::usage_error(&e),
        },
        None => None,
    };
    let coverage = if a.coverage {
        let mut c = crate::coverage::explore(&cfg, &profile, &a.model.properties, &opts, a.reduce);
        if let Some(f) = &file {
            c.warn_overrides(&f.overrides);
        }
        Some(c)
    } else {
        None
    };
    if let Some(pb) = pb {
        pb.finish_and_clear();
    }
    let results = output::results(&model, &report, &baseline.accepted, base.as_ref());
    if a.json {
        output::print_json(&model, &report, &results, base.as_ref(), coverage.as_ref());
    } else {
        output::print_summary(&model, &report, &results, base.as_ref());
        if let Some(c) = &coverage {
            c.print();
        }
    }
    if a.out.is_some() || a.save_regressions {
        let corpus = a.save_regressions.then_some(a.regressions.as_path());
        if let Err(e) = export_violations(&model, &results, a.out.as_deref(), corpus) {
            return output::usage_error(&e);
        }
    }
    let failing = results.iter().any(output::PropResult::fails);
    let code = exit_code(failing, &report);
    if code == 3 && !a.json {
        println!("\nINCOMPLETE: stopped early ({:?}) with no violation among the states explored (exit 3)", report.stop_reason);
    }
    code
}

/// 1: a violation outside the baseline; 3 (incomplete): none, but the check stopped before
/// the bounds were explored (`--max-memory`, a state limit), so "holds" is not a verdict; 0:
/// none within the bounds (`--max-depth` is a bound like the others).
fn exit_code(failing: bool, report: &Report<Action>) -> i32 {
    if failing {
        1
    } else if output::incomplete(report) {
        3
    } else {
        0
    }
}

/// `--out DIR` is usable before the exploration starts (not after it): a directory, or one that
/// can be created.
fn out_dir_ok(dir: &Path) -> Result<(), String> {
    if dir.exists() && !dir.is_dir() {
        return Err(format!("--out {}: not a directory (--out names the directory the counterexamples go to)", dir.display()));
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("--out {}: {e}", dir.display()))
}

/// `--out` / `--save-regressions`: export every violated property's counterexample — the one
/// printed: of the shortest failing signature, else the shortest — (messages on stderr, so
/// `--json` output stays machine-readable).
fn export_violations(model: &TcpModel, results: &[output::PropResult], out: Option<&Path>, corpus: Option<&Path>) -> Result<(), String> {
    for p in results {
        let (Verdict::Violated, Some(path)) = (p.verdict, &p.path) else { continue };
        let id = p.id.as_str();
        let statement = trc_properties::catalogue().into_iter().find(|s| s.id == id).map(|s| s.statement).unwrap_or("");
        let subject = trc_trace::export::Subject { id, name: &p.name, statement };
        let x = trc_trace::export::export(model, path.init_index, &path.actions, subject, 3).map_err(|e| format!("export of {id}: {e}"))?;
        if let Some(dir) = out {
            let f = trc_trace::write_export(dir, &x).map_err(|e| format!("{}: {e}", dir.display()))?;
            eprintln!("trc check: wrote {} (+ .json, .dot){}", f.display(), if x.trace.kernel_runnable { "" } else { " [model-only events: see its header]" });
        }
        if let Some(dir) = corpus {
            match trc_trace::regress::add(dir, &x)? {
                trc_trace::regress::Saved::Added(f) => eprintln!("trc check: added {} to the regression corpus", f.display()),
                trc_trace::regress::Saved::AlreadyPresent(n) => eprintln!("trc check: {id} on {} already in the regression corpus ({n})", model.profile.name),
            }
        }
    }
    Ok(())
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
    let opts = Options { threads: a.threads, ..Options::default() };
    let specs = trc_properties::catalogue();
    let mut rows = Vec::new();
    let mut total_states = 0u64;
    let mut total_secs = 0f64;
    for p in &profiles {
        let (model, report) = explore(&cfg, p, &[], &opts, None).expect("catalogue ids are valid");
        total_states += report.unique_states;
        total_secs += report.elapsed.as_secs_f64();
        let cells: Vec<Option<usize>> = report
            .properties
            .iter()
            .map(|pr| if pr.verdict == Verdict::Violated { pr.path.as_ref().map(|x| x.actions.len()) } else { None })
            .collect();
        let _ = model;
        rows.push((p.name.clone(), report.unique_states, report.elapsed.as_secs_f64(), cells));
    }
    if a.json {
        let v: Vec<_> = rows
            .iter()
            .map(|(name, states, secs, cells)| {
                let props: serde_json::Map<String, serde_json::Value> = specs
                    .iter()
                    .zip(cells)
                    .map(|(s, c)| (s.id.to_string(), match c { Some(n) => serde_json::json!({"violated": true, "steps": n}), None => serde_json::json!({"violated": false}) }))
                    .collect();
                serde_json::json!({"profile": name, "states": states, "seconds": secs, "properties": props})
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&v).unwrap());
        return 0;
    }
    print!("{:<20}", "profile");
    for s in &specs {
        print!(" {:>6}", s.id);
    }
    println!(" {:>10} {:>8}", "states", "seconds");
    for (name, states, secs, cells) in &rows {
        print!("{:<20}", name);
        for c in cells {
            match c {
                Some(n) => print!(" {:>6}", format!("✗{n}")),
                None => print!(" {:>6}", "ok"),
            }
        }
        println!(" {:>10} {:>8.2}", states, secs);
    }
    println!("\n✗N: violated, shortest counterexample N events; ok: holds within the bounds.");
    println!("total: {} states in {:.2} s ({:.0} states/s)", total_states, total_secs, total_states as f64 / total_secs.max(1e-9));
    0
}
