//! `trc diff`: differential testing of the model against the running kernel (see
//! docs/explanation/differential.md). The logic is in the `trc-diff` crate; this is the CLI glue.

use crate::exit::{self, usage_error};
use clap::Args;
use std::path::PathBuf;
use trc_check::load_profile;
use trc_check::shard::{units_in_order, HasUnit, Loaded, Shard, ShardFile};
use trc_diff::{run, DiffOptions, GenOptions};
use trc_kernel::target::NoReport;
use trc_vm::flags::VmFlags;
use trc_vm::target::Vm;

#[derive(Args, Debug)]
#[command(
    mut_arg("sack", |a| a.help("Only SACK connections (default: drawn per scenario)")),
    mut_arg("no_sack", |a| a.help("Only non-SACK connections (default: drawn per scenario)")),
    mut_arg("ts", |a| a.help("Only connections with timestamps (default: drawn per scenario)")),
    mut_arg("no_ts", |a| a.help("Only connections without timestamps (default: drawn per scenario)"))
)]
pub struct DiffArgs {
    /// Profile the model runs (the kernel is whatever runs here: 6.18 on our machines).
    #[arg(long, default_value = "linux-6.18")]
    pub profile: String,
    /// Number of random scenarios.
    #[arg(long, default_value_t = 20)]
    pub scenarios: usize,
    /// Seed: the same seed gives the same scenarios.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[command(flatten)]
    pub conn: crate::args::ConnFlags,
    /// Longest walk (environment actions per scenario).
    #[arg(long, default_value_t = 24)]
    pub max_steps: usize,
    /// Reruns of a timing-ambiguous or disagreeing scenario.
    #[arg(long, default_value_t = 2)]
    pub reruns: usize,
    /// Save a shrunk script of each disagreement here (shrinking needs extra kernel runs).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also write every scenario's script here (agreeing or not).
    #[arg(long)]
    pub keep: Option<PathBuf>,
    /// Kernel runs allowed per shrink.
    #[arg(long, default_value_t = 40)]
    pub shrink_budget: usize,
    /// Fail (exit 1) if any of ca_state, cwnd, ssthresh, segments agrees on fewer than this
    /// percentage of compared steps.
    #[arg(long, default_value_t = 100.0)]
    pub bar: f64,
    /// Print the report as JSON (per-scenario details included).
    #[arg(long)]
    pub json: bool,
    /// Run only these scenario indices of the seed (comma-separated, e.g. `12,24`); `--scenarios`
    /// is then ignored.
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<usize>,
    /// Quiet: no per-scenario progress lines.
    #[arg(long, short)]
    pub quiet: bool,
    /// Instead of random scenarios, one bulk transfer of this many segments (initcwnd 10, CUBIC,
    /// every packet ACKed one RTT after it left); SACK and timestamps unless `--no-sack` /
    /// `--no-ts`.
    #[arg(long, value_name = "SEGMENTS", conflicts_with = "only")]
    pub bulk: Option<u16>,
    /// With `--bulk`: the segments (0-based) whose first transmission the network drops.
    #[arg(long, value_delimiter = ',', requires = "bulk")]
    pub drop: Vec<u32>,
    /// With `--bulk`: a bottleneck forwarding one packet every MS ms (0: none), so the ACKs come
    /// as a train and the RTT grows with the queue (what HyStart reads).
    #[arg(long, value_name = "MS", default_value_t = 0, requires = "bulk")]
    pub bottleneck: u32,
    /// With `--bulk`: the RTT falls by BY ms at model time AT ms, on the ACKs' way back (an ACK
    /// that would reach the sender before AT takes BY ms longer), so a HyStart round's later
    /// samples are lower.
    #[arg(long, value_name = "AT:BY", value_parser = crate::args::ms_pair, requires = "bulk")]
    pub rtt_fall: Option<(u32, u32)>,
    /// With `--bulk`: once everything is ACKed, the application is idle IDLE ms and then
    /// writes SEGMENTS more (CUBIC's `CA_EVENT_TX_START` after an idle period).
    #[arg(long, value_name = "IDLE:SEGMENTS", value_parser = crate::args::ms_pair, requires = "bulk")]
    pub then: Option<(u32, u32)>,
    /// Run only shard I of N of the scenarios (`--only`'s list, else 0..`--scenarios`) and print
    /// it as JSON for `trc merge` (docs/reference/shards.md).
    #[arg(long, value_name = "I/N", value_parser = crate::args::shard)]
    pub shard: Option<Shard>,
    /// Run the scripts on this kernel in qemu (a bzImage, e.g. a mutant of vm/mutants/ built
    /// with `trc kernel build --patch`, or debian:SUITE) instead of the running one: each
    /// batch (all scenarios, then the reruns) in one boot; disagreements are saved unshrunk.
    #[command(flatten)]
    pub vm: VmFlags,
}

/// The `--bulk` transfer the flags describe.
fn bulk_spec(
    a: &DiffArgs,
    n: u16,
) -> Result<trc_diff::BulkSpec<'_>, trc_diff::generate::BulkError> {
    let mut spec = trc_diff::BulkSpec::new(
        n,
        &a.drop,
        a.conn.sack().unwrap_or(true),
        a.conn.ts().unwrap_or(true),
        a.bottleneck,
    );
    if let Some((at, by)) = a.rtt_fall {
        spec = spec.rtt_fall(at, by);
    }
    if let Some((idle, segs)) = a.then {
        let segs = u16::try_from(segs).map_err(|_| trc_diff::generate::BulkError::Then {
            idle_ms: idle,
            segments: segs,
        })?;
        spec = spec.then(idle, segs);
    }
    Ok(spec)
}

/// Exit codes: 0 agreement at or above the bar, 1 below it (or a kernel error), 2 usage error,
/// 4 skipped (no root / tun).
pub fn run_diff(a: DiffArgs) -> i32 {
    let profile = match load_profile(&a.profile) {
        Ok(p) => p,
        Err(e) => return usage_error(&e),
    };
    if !(0.0..=100.0).contains(&a.bar) {
        return usage_error("--bar must be a percentage");
    }
    if a.max_steps == 0 {
        return usage_error("--max-steps must be at least 1");
    }
    let mut vm = match vm_target(&a) {
        Ok(v) => v,
        Err(code) => return code,
    };
    if vm.is_none() {
        if let Some(why) = trc_kernel::skip_reason() {
            eprintln!("trc diff: skipped: {why}");
            return exit::SKIPPED;
        }
    }
    let fixed = match a.bulk {
        None => None,
        Some(n) => match bulk_spec(&a, n).and_then(|spec| trc_diff::bulk(&spec, &profile)) {
            Ok(s) => Some(s),
            Err(e) => return usage_error(&format!("--bulk: {e}")),
        },
    };
    let opts = DiffOptions {
        fixed,
        profile,
        scenarios: a.scenarios,
        seed: a.seed,
        gen: GenOptions {
            sack: a.conn.sack(),
            ts: a.conn.ts(),
            max_steps: a.max_steps,
            ..if a.bulk.is_some() {
                GenOptions::bulk()
            } else {
                GenOptions::default()
            }
        },
        reruns: a.reruns,
        out: a.out.clone(),
        shrink_budget: a.shrink_budget,
        keep: a.keep.clone(),
        only: if a.only.is_empty() {
            None
        } else {
            Some(a.only.clone())
        },
        ..DiffOptions::default()
    };
    // The work list: the scenario indices one run would do.
    let indices: Vec<usize> = if opts.fixed.is_some() {
        vec![0]
    } else if a.only.is_empty() {
        (0..a.scenarios).collect()
    } else {
        a.only.clone()
    };
    if let Some(shard) = a.shard {
        return diff_shard(&a, opts, &indices, shard, vm.as_mut());
    }
    let quiet = a.quiet || a.json;
    let rep = run_on(&opts, vm.as_mut(), &mut |l| {
        if !quiet {
            eprintln!("{l}");
        }
    });
    finish(&rep, a.bar, a.json)
}

/// A shard of the diff: its scenarios run and printed as JSON for `trc merge`.
fn diff_shard(
    a: &DiffArgs,
    opts: DiffOptions,
    indices: &[usize],
    shard: Shard,
    vm: Option<&mut Vm>,
) -> i32 {
    let mine: Vec<usize> = (0..indices.len()).filter(|k| shard.owns(*k)).collect();
    let rep = if mine.is_empty() {
        trc_diff::DiffReport::empty(opts.profile.name.clone(), opts.seed)
    } else {
        let opts = DiffOptions {
            only: if opts.fixed.is_some() {
                None
            } else {
                Some(mine.iter().map(|k| indices[*k]).collect())
            },
            ..opts
        };
        run_on(&opts, vm, &mut |l| {
            if !a.quiet {
                eprintln!("{l}");
            }
        })
    };
    let args = DiffShardArgs {
        profile: rep.profile.clone(),
        seed: a.seed,
        bar: a.bar,
        scenarios: indices.to_vec(),
        bulk: a.bulk,
        drop: a.drop.clone(),
        bulk_command: a
            .bulk
            .map(|n| bulk_spec(a, n).map(|s| s.command()).unwrap_or_default()),
    };
    let units = mine
        .iter()
        .map(|k| DiffUnit {
            unit: *k,
            scenario: indices[*k],
        })
        .collect();
    let mut file = ShardFile::new("diff", shard, indices.len(), args, units);
    file.report = Some(serde_json::to_value(&rep).expect("a report serialises"));
    crate::print_json(&file.json());
    exit::of_diff(&rep, a.bar)
}

/// The VM of `--kernel`, if given (`Err`: the exit code of a bad kernel or a missing qemu).
fn vm_target(a: &DiffArgs) -> Result<Option<Vm>, i32> {
    let Some(k) = a.vm.kernel.as_deref() else {
        return Ok(None);
    };
    let what = "trc diff";
    if let Err(e) = a.vm.validate() {
        return Err(exit::bad_input(what, &e));
    }
    if let Err(e) = trc_vm::host::find_qemu(None) {
        return Err(exit::of_vm_error(what, &e));
    }
    let (img, spec) = a.vm.kernel_vm(k).map_err(|e| exit::of_vm_error(what, &e))?;
    Ok(Some(Vm::new(&img, spec)))
}

/// The differential run on the running kernel, or batched in the VM.
fn run_on(
    opts: &DiffOptions,
    vm: Option<&mut Vm>,
    log: &mut dyn FnMut(&str),
) -> trc_diff::DiffReport {
    let Some(vm) = vm else {
        return run(opts, log);
    };
    let dir = std::env::temp_dir().join(format!("trc-diff-vm-{}", std::process::id()));
    let _cleanup = trc_vm::RemoveOnDrop(dir.clone());
    let mut round = 0;
    let mut exec = |scripts: &[(String, String)]| -> Vec<trc_kernel::target::ScriptRun> {
        round += 1;
        let d = dir.join(format!("batch-{round}"));
        if let Err(e) = trc_trace::write_defaults(&d) {
            return scripts
                .iter()
                .map(|_| Err(NoReport::Write(e.to_string())))
                .collect();
        }
        let mut paths = Vec::new();
        for (name, text) in scripts {
            let p = d.join(name);
            if let Err(e) = trc_files::write_atomic(&p, text.as_bytes()) {
                return scripts
                    .iter()
                    .map(|_| Err(NoReport::Write(e.to_string())))
                    .collect();
            }
            paths.push(p);
        }
        use trc_kernel::target::Target;
        match vm.run(&paths, &mut |m| eprintln!("trc diff: {m}")) {
            Ok(b) => b.runs,
            Err(e) => scripts
                .iter()
                .map(|_| Err(NoReport::Target(e.clone())))
                .collect(),
        }
    };
    trc_diff::batch::run_batched(opts, &mut exec, log)
}

/// Prints a diff report (`trc diff` and `trc merge`) and returns its exit code.
pub fn finish(rep: &trc_diff::DiffReport, bar: f64, json: bool) -> i32 {
    if json {
        // In the report's field order (as it always printed).
        println!(
            "{}",
            serde_json::to_string_pretty(rep).expect("a report serialises")
        );
    } else {
        print!("{}", rep.render());
        let below = rep.below(bar);
        if !below.is_empty() {
            println!("below the {}% bar: {}", bar, below.join(", "));
        }
    }
    exit::of_diff(rep, bar)
}

/// What a `trc diff` shard says about the run.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct DiffShardArgs {
    pub profile: String,
    pub seed: u64,
    pub bar: f64,
    /// The scenario indices of the work list.
    pub scenarios: Vec<usize>,
    pub bulk: Option<u16>,
    pub drop: Vec<u32>,
    /// The whole `--bulk` transfer as a command ([`trc_diff::BulkSpec::command`]).
    #[serde(default)]
    pub bulk_command: Option<String>,
}

/// A `trc diff` unit: a scenario of the work list.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct DiffUnit {
    pub unit: usize,
    pub scenario: usize,
}

impl HasUnit for DiffUnit {
    fn unit(&self) -> usize {
        self.unit
    }
}

/// `trc merge` of `trc diff` shards.
pub fn merge(shards: &[Loaded], json: bool) -> Result<i32, trc_check::Error> {
    let (args, _): (DiffShardArgs, Vec<DiffUnit>) = units_in_order(shards)?;
    let mut parts = Vec::new();
    for s in shards {
        let f: ShardFile<serde_json::Value, DiffUnit> = s.typed()?;
        let r: trc_diff::DiffReport = serde_json::from_value(f.report.unwrap_or_default())
            .map_err(|e| format!("{}: its report: {e}", s.name))?;
        let ks: Vec<usize> = f.units.iter().map(|u| u.unit).collect();
        if ks.len() != r.results.len() {
            return Err(trc_check::Error::Input(format!(
                "{}: {} units but {} scenario results",
                s.name,
                ks.len(),
                r.results.len()
            )));
        }
        parts.push((ks, r));
    }
    let rep = trc_diff::DiffReport::merge(args.profile, args.seed, shards[0].header.units, parts);
    Ok(finish(&rep, args.bar, json))
}
