//! `trc kernel check`: the arguments, the request they make of `trc-kcheck`
//! (`trc_kcheck::request`), and the printing; `trc kernel` sends `--patch` and
//! `--against-kernel` to patch.rs instead.

use crate::exit;
use clap::Args;
use std::path::{Path, PathBuf};
use trc_kcheck::request::{Request, Shrink};
use trc_vm::flags::VmFlags;

/// Arguments of `trc kernel check`.
#[derive(Debug, Args)]
#[command(
    after_help = "Suites: regressions (every .pkt under counterexamples/, plus the shortest counterexample of every \
property on every built-in profile that a kernel can run, exported as trc check --out does), corpus (the .pkt \
files of --corpus only), random:N[,SEED] \
(trc diff's seeded walks on --profile), coverage (shortest kernel-runnable paths of the state graph at the bounds \
flags or --config, trc check's defaults unless given, chosen so that together they go through every decision-point \
branch reachable there; the report says which branches were covered, which are reachable only through model-only \
paths and which not at all) or bulk (nine transfers of 120-150 segments as trc diff --bulk runs them: ACK \
trains through a 1 ms bottleneck, ACKs 3 ms apart through a growing queue, or bursts, with or without a loss in a \
large window, SACK or not, an RTT that falls within a round, an idle second before a second write; slow start \
past HyStart's detectors and CUBIC's growth after a reduction and after idleness). Each scenario runs once on the kernel (the running one, in a private network \
namespace; or --kernel in qemu) and is replayed on --profile. Per property: holds, VIOLATED (with the shortest \
violating scenario) or undecided; per scenario: the first line where the kernel and the profile differ. Properties \
with a kernel monitor: I1, I2, I3, I11, I12, I13, I14, I15b, I15c, I17, I20, I20e (docs/reference/properties.md). Exit codes: 0 every property holds, 1 one is \
violated, 2 usage error, 3 incomplete (a scenario did not run, or no scenario decided a property), 4 skipped \
(not root or no tun; with --kernel: no qemu or no kernel image)."
)]
pub struct CheckArgs {
    /// regressions, corpus, random:N[,SEED], coverage or bulk, or several joined by `+`
    /// (default: regressions; with --patch or --against-kernel: regressions+coverage+random:20).
    #[arg(long)]
    pub suite: Option<String>,
    /// The bounds of the coverage suite's state graph (as `trc check` takes them; only with
    /// --suite coverage).
    #[command(flatten)]
    pub bounds: crate::args::BoundArgs,
    /// Only these properties (comma-separated ids).
    #[arg(long, value_delimiter = ',', value_name = "I1,I2,...")]
    pub properties: Vec<String>,
    /// The model's profile the kernel is compared with (and random walks are drawn on).
    #[arg(long, default_value = "linux-6.18", value_name = "NAME|FILE.toml")]
    pub profile: String,
    /// The counterexamples/ directory (default ./counterexamples, else the one of the source tree trc was built from).
    #[arg(long, value_name = "DIR")]
    pub corpus: Option<PathBuf>,
    /// Keep the generated scripts and write report.json here (default: a temporary directory, removed).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Also write each shrunk script in this form, beside OUT/shrunk/ in OUT/shrunk-FORM/:
    /// gtest or selftest, as `trc check --format` writes them (a script the form cannot express
    /// is not written: "unsupported: ...", exit 3).
    #[arg(long, value_name = "FORM", default_value = "trc", value_parser = trc_trace::upstream::Form::NAMES)]
    pub format: String,
    /// Threads for generating the engine's counterexamples and exploring the coverage suite's state graph.
    #[arg(long, default_value = "0")]
    pub threads: usize,
    #[command(flatten)]
    pub vm: VmFlags,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Run only shard I of N of the suite's scenarios (scenario k is shard k mod N + 1's) and
    /// print it as JSON for `trc merge` (docs/reference/shards.md).
    #[arg(long, value_name = "I/N", value_parser = crate::args::shard)]
    pub shard: Option<trc_check::shard::Shard>,
    /// Kernel runs allowed for shrinking each violated property's shortest scenario that comes
    /// from a model action list (random walks, coverage scenarios, the engine's counterexamples).
    #[arg(long, value_name = "N", default_value = "20")]
    pub shrink_budget: usize,
    /// Do not shrink violating scenarios.
    #[arg(long)]
    pub no_shrink: bool,
    /// Check this change: build the base kernel (--base) and the base with these patches
    /// applied (`trc kernel build`), run the same suites on both and report what changed.
    #[arg(long, value_name = "FILE", num_args = 1.., conflicts_with_all = ["kernel", "against_kernel"])]
    pub patch: Vec<PathBuf>,
    /// The source the patches apply to: debian:sid (default), debian:trixie, debian:bookworm or
    /// a kernel tree.
    #[arg(long, value_name = "SRC", requires = "patch")]
    pub base: Option<String>,
    /// Compare --kernel (the changed kernel) with this one (the base), as --patch does.
    #[arg(long, value_name = "VMLINUZ", requires = "kernel")]
    pub against_kernel: Option<String>,
    /// `make -j` for --patch builds (default: the CPU count).
    #[arg(short = 'j', long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Report differences between the two kernels from one run each, without rerunning them.
    #[arg(long)]
    pub no_rerun: bool,
    /// With --patch: keep the base kernel's first run of each scenario in DIR and reuse it when
    /// the same base image runs the same script again (a benchmark over many patches runs the
    /// base once); reruns of differing scenarios always run.
    #[arg(long, value_name = "DIR")]
    pub base_runs: Option<PathBuf>,
    /// Accepted findings: a violation in a scenario that stands for one (its model signature is
    /// accepted) is reported as accepted, not as a failure (default baseline.toml, else the one
    /// of the source tree trc was built from).
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
}

/// Why the arguments of `trc kernel check` make no request (exit 2): the library's error, as it
/// says it.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    /// The bounds flags or `--config`, or the baseline file.
    #[error(transparent)]
    Input(#[from] trc_check::Error),
    /// A suite, bound, property or profile the check does not take.
    #[error(transparent)]
    Plan(#[from] trc_kcheck::PlanError),
    /// The VM's limits.
    #[error(transparent)]
    Vm(#[from] trc_vm::flags::BadLimits),
}

impl CheckArgs {
    /// The request these arguments make (the plan's scenarios are prepared later), or why
    /// one is wrong.
    pub fn request(&self) -> Result<Request, RequestError> {
        let two_kernels = !self.patch.is_empty() || self.against_kernel.is_some();
        let cfg = self.bounds.config()?;
        let bounds_given = cfg != trc_model::Config::default() || !self.bounds.config.is_empty();
        let mut req = Request::new(
            self.suite.as_deref(),
            two_kernels,
            bounds_given.then_some(cfg),
            &self.properties,
            &self.profile,
        )?;
        self.vm.validate()?;
        if let Some(c) = &self.corpus {
            req.corpus = c.clone();
        }
        req.threads = self.threads;
        let bfile = self
            .baseline
            .clone()
            .unwrap_or_else(trc_kcheck::request::default_baseline);
        let baseline = crate::check::load_baseline(&bfile, "trc kernel check");
        req.baseline = baseline?.accepted;
        req.shard = self.shard;
        req.shrink = if self.no_shrink {
            Shrink::Off("not shrunk (--no-shrink)".into())
        } else if self.shrink_budget == 0 {
            Shrink::Off("not shrunk (--shrink-budget 0)".into())
        } else {
            // The shrunk scripts go to OUT/shrunk/, or, without --out, to a directory under the
            // temporary directory that is kept.
            let out_dir = match &self.out {
                Some(d) => d.join("shrunk"),
                None => {
                    std::env::temp_dir().join(format!("trc-kcheck-shrunk-{}", std::process::id()))
                }
            };
            Shrink::On {
                budget: self.shrink_budget,
                out_dir,
            }
        };
        Ok(req)
    }
}

/// The plan of `req` (every suite's scenarios prepared under `work`), or exit 2.
pub(crate) fn make_plan(
    req: &Request,
    work: &Path,
    what: &str,
) -> Result<trc_kcheck::run::Plan, i32> {
    let t0 = std::time::Instant::now();
    let plan = req
        .plan(work, &mut |m| eprintln!("{what}: {m}"))
        .map_err(|e| exit::bad_input(what, &e))?;
    eprintln!(
        "{what}: {} scenarios ({:.1} s to prepare)",
        plan.cases.len(),
        t0.elapsed().as_secs_f64()
    );
    if let Some(s) = req.shard {
        eprintln!(
            "{what}: shard {}/{}: {} of the {} scenarios",
            s.index,
            s.count,
            req.owned(&plan).len(),
            plan.cases.len()
        );
    }
    Ok(plan)
}

/// `trc kernel check` without `--patch` / `--against-kernel` (those are patch.rs's).
pub fn check_cli(args: CheckArgs) -> i32 {
    let what = "trc kernel check";
    let req = match args.request() {
        Ok(r) => r,
        Err(e) => return exit::bad_input(what, &e),
    };
    // Skips first: nothing is generated for a run that cannot happen.
    let mut target = match target_of(&args.vm, args.vm.kernel.as_deref(), what) {
        Ok(t) => t,
        Err(rc) => return rc,
    };
    let (work, _cleanup) = match work_dir(args.out.as_deref(), what) {
        Ok(w) => w,
        Err(rc) => return rc,
    };
    let t0 = std::time::Instant::now();
    let plan = match make_plan(&req, &work, what) {
        Ok(p) => p,
        Err(rc) => return rc,
    };
    let mine = req.owned(&plan);
    let log = &mut |m: &str| eprintln!("{what}: {m}");
    let rep = match trc_kcheck::request::check(&req, &plan, &mine, target.as_mut(), &work, log) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{what}: {e}");
            return exit::of_target_error(&e);
        }
    };
    let seconds = t0.elapsed().as_secs_f64();
    let unsupported = shrunk_in_form(&args.format, &rep, what);
    let rc = check_finish(&args, &plan, &mine, &rep, &work, seconds, what);
    if unsupported > 0 && matches!(rc, exit::HOLDS | exit::VIOLATED) {
        return exit::INCOMPLETE;
    }
    rc
}

/// `--format`: every shrunk script of `rep` also in that form, in `shrunk-FORM/` beside its
/// directory. Returns how many the form cannot express (said on stderr).
fn shrunk_in_form(format: &str, rep: &trc_kcheck::CheckReport, what: &str) -> usize {
    let Some(form) = trc_trace::upstream::Form::parse(format) else {
        return 0;
    };
    if form == trc_trace::upstream::Form::Trc {
        return 0;
    }
    let mut unsupported = 0;
    for s in rep.properties.iter().filter_map(|p| p.shrunk.as_ref()) {
        let src = Path::new(&s.path);
        let written = std::fs::read_to_string(src)
            .map_err(|e| format!("{}: {e}", src.display()))
            .and_then(|text| trc_trace::upstream::convert(&text, form).map_err(|u| u.to_string()))
            .and_then(|text| {
                let dir = src
                    .parent()
                    .and_then(|d| d.parent())
                    .unwrap_or(Path::new("."))
                    .join(format!("shrunk-{format}"));
                let stem = src
                    .file_stem()
                    .map(|f| f.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let f = dir.join(form.file_name(&stem));
                std::fs::create_dir_all(&dir)
                    .and_then(|_| trc_files::write_atomic(&f, text.as_bytes()))
                    .map(|_| f)
                    .map_err(|e| format!("{}: {e}", dir.display()))
            });
        match written {
            Ok(f) => eprintln!("{what}: shrunk script in {format} form: {}", f.display()),
            Err(e) => {
                eprintln!("{what}: {}: no {format} script: {e}", s.path);
                unsupported += 1;
            }
        }
    }
    unsupported
}

/// The report printed (or the shard's file) and the check's exit code.
fn check_finish(
    args: &CheckArgs,
    plan: &trc_kcheck::run::Plan,
    mine: &[usize],
    rep: &trc_kcheck::CheckReport,
    work: &Path,
    seconds: f64,
    what: &str,
) -> i32 {
    if let Some(shard) = args.shard {
        let v = trc_kcheck::request::shard_file(plan, mine, rep, shard, seconds).json();
        crate::print_json(&v);
        let file = format!("shard-{}-of-{}.json", shard.index, shard.count);
        return finish(
            args.out.is_some(),
            &work.join(file),
            &v,
            rep.outcome(),
            what,
        );
    }
    let v = print_report(rep, plan.coverage.as_ref(), args.json, seconds);
    finish(
        args.out.is_some(),
        &work.join("report.json"),
        &v,
        rep.outcome(),
        what,
    )
}

/// The end of a kernel check: the report (or a shard's output) written to `file` (with
/// `--out`), then the exit code (interrupted, or 2 when the file cannot be written).
pub(crate) fn finish(
    out: bool,
    file: &Path,
    json: &serde_json::Value,
    outcome: trc_check::Outcome,
    what: &str,
) -> i32 {
    if out {
        if let Err(e) = trc_files::write_json_atomic(file, json) {
            return exit::bad_input(what, &format!("cannot write {}: {e}", file.display()));
        }
    }
    if trc_kernel::sys::interrupted() {
        return exit::INTERRUPTED;
    }
    exit::of_outcome(outcome)
}

/// Prints a kernel check's report (`trc kernel check` and `trc merge`): JSON, or the text and
/// the run's total time. Returns the JSON report.
pub fn print_report(
    rep: &trc_kcheck::CheckReport,
    coverage: Option<&trc_kcheck::coverage::CoveragePlan>,
    json: bool,
    seconds: f64,
) -> serde_json::Value {
    let v = trc_kcheck::request::report_json(rep, coverage);
    if json {
        crate::print_json(&v);
    } else {
        print!("{}", trc_kcheck::request::report_text(rep, coverage));
        println!("total: {seconds:.1} s");
    }
    v
}

/// `trc merge` of `trc kernel check` shards: the exit code of the merged report, or of the
/// shards' error (printed).
pub fn merge(shards: &[trc_check::shard::Loaded], json: bool) -> i32 {
    match trc_kcheck::request::merge(shards) {
        Ok((rep, coverage, seconds)) => {
            print_report(&rep, coverage.as_ref(), json, seconds);
            exit::of_outcome(rep.outcome())
        }
        Err(e) => exit::usage_error(&e),
    }
}

/// The kernel `args` name as a [`trc_kernel::target::Target`]: the running kernel, or
/// `--kernel` in qemu. Skips (exit 4) and bad images (exit 2) are `Err(code)`.
pub(crate) fn target_of(
    vm: &VmFlags,
    kernel: Option<&str>,
    what: &str,
) -> Result<Box<dyn trc_kernel::target::Target>, i32> {
    match kernel {
        None => {
            if let Some(r) = trc_kernel::skip_reason() {
                eprintln!("{what}: skipped: {r}");
                return Err(exit::SKIPPED);
            }
            Ok(Box::new(trc_kernel::target::Host::new()))
        }
        Some(k) => {
            let (img, spec) = vm.kernel_vm(k).map_err(|e| exit::of_vm_error(what, &e))?;
            trc_vm::host::find_qemu(None).map_err(|e| exit::of_vm_error(what, &e))?;
            let mut t = trc_vm::target::Vm::new(&img, spec);
            t.name = Some(img.release.clone());
            Ok(Box::new(t))
        }
    }
}

/// The work directory: `--out`, else a temporary one removed at the end (the guard).
pub(crate) fn work_dir(
    out: Option<&Path>,
    what: &str,
) -> Result<(PathBuf, Option<trc_vm::RemoveOnDrop>), i32> {
    let (work, guard) = match out {
        Some(d) => (d.to_path_buf(), None),
        None => {
            let d = std::env::temp_dir().join(format!("trc-kcheck-{}", std::process::id()));
            (d.clone(), Some(trc_vm::RemoveOnDrop(d)))
        }
    };
    if let Err(e) = std::fs::create_dir_all(&work) {
        eprintln!("{what}: {}: {e}", work.display());
        return Err(exit::USAGE);
    }
    Ok((work, guard))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use trc_kcheck::PlanError;

    #[derive(Parser)]
    struct Argv {
        #[command(flatten)]
        args: CheckArgs,
    }

    fn request(argv: &[&str]) -> Result<Request, RequestError> {
        let argv = std::iter::once("trc-kernel-check").chain(argv.iter().copied());
        Argv::try_parse_from(argv).unwrap().args.request()
    }

    /// Each wrong argument is the library's typed error (printed as it says it, exit 2); the
    /// request is only made: nothing runs.
    #[test]
    fn wrong_arguments_are_the_libraries_typed_errors() {
        let e = request(&["--suite", "bogus"]).unwrap_err();
        assert!(
            matches!(e, RequestError::Plan(PlanError::Suite { .. })),
            "{e:?}"
        );
        let e = request(&["--properties", "I99"]).unwrap_err();
        assert!(
            matches!(e, RequestError::Plan(PlanError::Property(_))),
            "{e:?}"
        );
        assert_eq!(e.to_string(), "unknown property `I99`");
        let e = request(&["--profile", "no-such-profile"]).unwrap_err();
        assert!(
            matches!(e, RequestError::Plan(PlanError::Profile(_))),
            "{e:?}"
        );
        let e = request(&["--script-timeout", "0"]).unwrap_err();
        assert!(matches!(e, RequestError::Vm(_)), "{e:?}");
        let e = request(&["--suite", "coverage", "--initcwnd", "0"]).unwrap_err();
        assert!(matches!(e, RequestError::Input(_)), "{e:?}");
        assert!(
            e.to_string().starts_with("--initcwnd: impossible bounds"),
            "{e}"
        );
        assert!(request(&["--suite", "corpus"]).is_ok());
    }
}
