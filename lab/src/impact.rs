//! `trc-lab impact`: the impact experiment of finding F1 on a kernel booted in qemu (the
//! experiment itself is `trc_vm::impact`; docs/findings/F1-impact.md). It prints one line per
//! run and the medians, and `--json` writes everything (parameters, every run's samples and
//! undo events) for `docs/findings/F1-impact-plot.py`.

use crate::exit;
use clap::Args;
use std::path::PathBuf;

/// Arguments of `trc-lab impact`.
#[derive(Debug, Args)]
#[command(
    after_help = "Inside the VM only (qemu has no network device): two network namespaces (sender, receiver) \
joined through the guest's own namespace as a router, with netem on the router's two veths: RTT/2 each way, and on \
the data path random loss and reordering (netem `reorder`: that share of packets skips the delay). A bulk transfer \
for --duration guest seconds; TCP_INFO and the MIB sampled every --sample-ms; AF_PACKET taps before and after netem \
tell which originals were really dropped, so each undo event is classified: after a real loss, spurious only, or \
not placed. Exit codes: 0 measured, 1 a run failed, 2 bad option, 3 incomplete, 4 skipped (no qemu, kernel, veth or \
netem)."
)]
pub struct ImpactArgs {
    #[command(flatten)]
    pub vm: trc_vm::flags::VmFlags,
    /// Base round-trip time, ms (half each way).
    #[arg(long, default_value = "40")]
    pub rtt: f64,
    /// Random loss on the data path, percent.
    #[arg(long, default_value = "1")]
    pub loss: f64,
    /// Reordering on the data path (netem reorder), percent.
    #[arg(long, default_value = "1")]
    pub reorder: f64,
    /// Delay variation on the data path, ms (netem reorders packets whose delays cross).
    #[arg(long, default_value = "0")]
    pub jitter: f64,
    /// The jitter's distribution: uniform (netem's default), normal, pareto, paretonormal.
    #[arg(long, value_name = "DIST")]
    pub jitter_dist: Option<String>,
    /// A bottleneck rate on the data path, Mbit/s (default none).
    #[arg(long)]
    pub rate: Option<f64>,
    /// netem queue limit, packets.
    #[arg(long, default_value = "10000")]
    pub limit: u32,
    /// Transfer length, guest seconds.
    #[arg(long, default_value = "30")]
    pub duration: f64,
    /// Sampling interval, guest ms.
    #[arg(long, default_value = "10")]
    pub sample_ms: f64,
    /// Runs in the one boot (each with fresh namespaces).
    #[arg(long, default_value = "5")]
    pub runs: usize,
    /// Sender's congestion control.
    #[arg(long, default_value = "cubic")]
    pub cc: String,
    /// A label for the kernel in the JSON and the plots (default: its release).
    #[arg(long)]
    pub label: Option<String>,
    /// Write the whole measurement as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write the VM's console here.
    #[arg(long, value_name = "FILE")]
    pub console: Option<PathBuf>,
}

/// What `--json` writes.
#[derive(serde::Serialize)]
struct Output<'a> {
    label: String,
    release: String,
    kernel: String,
    params: &'a trc_vm::impact::ImpactParams,
    accelerator: String,
    boot_wall_s: f64,
    total_wall_s: f64,
    total_qemu_cpu_s: f64,
    load: (f64, f64),
    runs: Vec<&'a trc_vm::impact::ImpactRun>,
    failed: Vec<String>,
    medians: Medians,
}

#[derive(serde::Serialize)]
struct Medians {
    goodput_mbit: f64,
    retrans_rate: f64,
    mean_cwnd: f64,
    undo_events: f64,
    undos_after_real_loss: f64,
    undos_after_real_loss_ts: f64,
    undos_spurious: f64,
    tap_dropped: f64,
}

/// An argument of `trc-lab impact` out of its range.
#[derive(Debug, thiserror::Error)]
enum BadArg {
    #[error(transparent)]
    Param(#[from] trc_vm::impact::BadParam),
    #[error(transparent)]
    Vm(#[from] trc_vm::flags::BadLimits),
    #[error("--runs must be 1..100")]
    Runs,
}

impl ImpactArgs {
    /// The experiment's parameters, checked (with the VM flags and the number of runs).
    fn params(&self) -> Result<trc_vm::impact::ImpactParams, BadArg> {
        let params = trc_vm::impact::ImpactParams {
            rtt_ms: self.rtt,
            loss_pct: self.loss,
            reorder_pct: self.reorder,
            jitter_ms: self.jitter,
            jitter_dist: self.jitter_dist.clone(),
            rate_mbit: self.rate,
            limit: self.limit,
            duration_s: self.duration,
            sample_ms: self.sample_ms,
            cc: self.cc.clone(),
        };
        params.validate()?;
        self.vm.validate()?;
        if !(1..=100).contains(&self.runs) {
            return Err(BadArg::Runs);
        }
        Ok(params)
    }
}

/// The runs' table: one line per run, and a note for a run whose attribution is incomplete.
fn print_runs(results: &[&trc_vm::impact::ImpactRun]) {
    println!(
        "{:>4} {:>9} {:>8} {:>7} {:>8} {:>7} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>8} {:>6}",
        "run",
        "goodput",
        "retrans",
        "cwnd",
        "dropped",
        "undos",
        "real",
        "F1ts",
        "spur",
        "unpl",
        "Full",
        "Part",
        "Loss",
        "DSACKU",
        "SpRTO"
    );
    for r in results {
        let s = &r.summary;
        let c = |k: &str| s.counters.get(k).copied().unwrap_or(0);
        println!(
            "{:>4} {:>9.3} {:>7.2}% {:>7.1} {:>8} {:>7} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>8} {:>6}",
            r.index,
            s.goodput_mbit,
            s.retrans_rate * 100.0,
            s.mean_cwnd,
            s.netem_dropped.unwrap_or(s.tap_dropped),
            s.undo_events,
            s.undos_after_real_loss,
            s.undos_after_real_loss_ts,
            s.undos_spurious,
            s.undos_unplaced,
            c("TcpExtTCPFullUndo"),
            c("TcpExtTCPPartialUndo"),
            c("TcpExtTCPLossUndo"),
            c("TcpExtTCPDSACKUndo"),
            c("TcpExtTCPSpuriousRTOs")
        );
        if !s.captured {
            println!("     run {}: no capture (the kernel has no AF_PACKET): real/F1ts/spur/unpl not attributed", r.index);
        }
        if s.tap_losses > 0 || s.oversize > 0 {
            println!("     run {}: taps lost {} packets, {} packets longer than the MSS: its attribution is incomplete", r.index, s.tap_losses, s.oversize);
        }
    }
}

/// The runs' medians, printed, and the totals of the undo events.
fn print_medians(results: &[&trc_vm::impact::ImpactRun]) -> Medians {
    let med = |f: &dyn Fn(&trc_vm::impact::ImpactSummary) -> f64| {
        trc_vm::impact::median_of(results.iter().map(|r| f(&r.summary)))
    };
    let medians = Medians {
        goodput_mbit: med(&|s| s.goodput_mbit),
        retrans_rate: med(&|s| s.retrans_rate),
        mean_cwnd: med(&|s| s.mean_cwnd),
        undo_events: med(&|s| s.undo_events as f64),
        undos_after_real_loss: med(&|s| s.undos_after_real_loss as f64),
        undos_after_real_loss_ts: med(&|s| s.undos_after_real_loss_ts as f64),
        undos_spurious: med(&|s| s.undos_spurious as f64),
        tap_dropped: med(&|s| s.netem_dropped.unwrap_or(s.tap_dropped) as f64),
    };
    println!(
        "median of {}: goodput {:.3} Mbit/s, retrans {:.2} %, mean cwnd {:.1}, undo events {}, after a real loss {}, spurious only {}, netem drops {}",
        results.len(),
        medians.goodput_mbit,
        medians.retrans_rate * 100.0,
        medians.mean_cwnd,
        medians.undo_events,
        medians.undos_after_real_loss,
        medians.undos_spurious,
        medians.tap_dropped
    );
    let total = |f: &dyn Fn(&trc_vm::impact::ImpactSummary) -> usize| {
        results.iter().map(|r| f(&r.summary)).sum::<usize>()
    };
    println!(
        "total: {} undo events, {} after a real loss ({} of them with an ACK echoing a TSval older than the first retransmission), {} spurious only, {} not placed",
        total(&|s| s.undo_events),
        total(&|s| s.undos_after_real_loss),
        total(&|s| s.undos_after_real_loss_ts),
        total(&|s| s.undos_spurious),
        total(&|s| s.undos_unplaced)
    );
    medians
}

/// The runs the VM measured, and the names of those it did not, with why.
fn measured(run: &trc_vm::VmRun) -> (Vec<&trc_vm::impact::ImpactRun>, Vec<String>) {
    let mut results = Vec::new();
    let mut failed = Vec::new();
    for s in &run.scripts {
        match &s.outcome {
            trc_vm::ScriptOutcome::Measured { result } => results.push(result.as_ref()),
            trc_vm::ScriptOutcome::Error { message, .. } => {
                failed.push(format!("{}: {message}", s.name))
            }
            _ => failed.push(format!("{}: no result from the VM", s.name)),
        }
    }
    (results, failed)
}

pub fn main(args: ImpactArgs) -> i32 {
    let what = "trc-lab impact";
    let Some(kspec) = args.vm.kernel.clone() else {
        eprintln!("{what}: --kernel is required (the experiment runs only inside a VM)");
        return exit::USAGE;
    };
    let params = match args.params() {
        Ok(p) => p,
        Err(e) => return exit::bad_input(what, &e),
    };
    let (img, mut spec) = match args.vm.kernel_vm(&kspec) {
        Ok(v) => v,
        Err(e) => return exit::of_vm_error(what, &e),
    };
    // A run lasts its duration plus the drain; the per-run limit of the guest does not apply.
    spec.script_timeout = std::time::Duration::from_secs_f64(args.duration + 60.0);
    let ij = trc_vm::impact::ImpactJob {
        params: params.clone(),
        runs: args.runs,
    };
    let mut progress = |e: &trc_vm::Event| {
        if let Some(l) = e.line(&img.release, args.runs) {
            eprintln!("{what}: {l}");
        }
    };
    let run = match trc_vm::run_impact_in_vm_with(&spec, &ij, &mut progress) {
        Ok(r) => r,
        Err(e) => return exit::of_vm_error(what, &e),
    };
    let (results, failed) = measured(&run);
    let release = if run.release.is_empty() {
        img.release.clone()
    } else {
        run.release.clone()
    };
    let label = args.label.clone().unwrap_or_else(|| release.clone());
    println!(
        "kernel: {release} ({}), label {label}",
        run.kernel.display()
    );
    println!("path: RTT {} ms, jitter {} ms ({}), loss {} %, reorder {} %, rate {}, {} s per run, sampled every {} ms, cc {}", params.rtt_ms, params.jitter_ms, params.jitter_dist.as_deref().unwrap_or("uniform"), params.loss_pct, params.reorder_pct, params.rate_mbit.map(|r| format!("{r} Mbit/s")).unwrap_or_else(|| "unlimited".into()), params.duration_s, params.sample_ms, params.cc);
    print_runs(&results);
    let medians = print_medians(&results);
    println!("accelerator: {}; boot {:.1} s wall; total {:.1} s wall, {:.1} s qemu CPU (load {:.1} -> {:.1})", run.accelerator, run.boot.wall_s, run.total.wall_s, run.total.cpu_s, run.load.0, run.load.1);
    for f in &failed {
        println!("failed: {f}");
    }
    if let Err(e) = trc_vm::flags::problem_and_console(
        run.problem.as_deref(),
        &run.console,
        args.console.as_deref(),
        what,
    ) {
        return exit::bad_input(what, &e);
    }
    if let Some(out) = &args.json {
        let o = Output {
            label,
            release,
            kernel: run.kernel.display().to_string(),
            params: &params,
            accelerator: run.accelerator.to_string(),
            boot_wall_s: run.boot.wall_s,
            total_wall_s: run.total.wall_s,
            total_qemu_cpu_s: run.total.cpu_s,
            load: run.load,
            runs: results.clone(),
            failed: failed.clone(),
            medians,
        };
        if let Err(e) = trc_files::write_json_atomic(out, &o) {
            return exit::bad_input(what, &format!("cannot write {}: {e}", out.display()));
        }
    }
    if !failed.is_empty() && (run.complete || !results.is_empty()) {
        exit::VIOLATED
    } else if !run.complete {
        exit::INCOMPLETE
    } else {
        0
    }
}
