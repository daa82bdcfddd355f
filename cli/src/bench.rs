//! `trc bench`: stateright 0.31's BFS and our engine on the same `stateright::Model` (our model)
//! over a fixed set of configurations. Each run happens in a child process of the same binary
//! (`trc bench --one CASE --engine ours|stateright`), so its peak RSS (`VmHWM`) is its own.
//! With `--instructions`, each case also runs once per engine under callgrind
//! ([`callgrind`]): instructions per state do not move with the machine's load.

use clap::Args;
use trc_bench::{
    callgrind, cases, instructions_table, machine_facts, run_one, CaseRuns, Child, Plan,
};

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Worker threads for both checkers.
    #[arg(long, default_value_t = 2, value_parser = crate::args::threads_value)]
    pub threads: usize,
    /// Only the smaller configurations (for a quick run).
    #[arg(long)]
    pub quick: bool,
    /// Skip stateright (ours only).
    #[arg(long)]
    pub ours_only: bool,
    /// Run each case this many times, ours and stateright alternating, and report the medians
    /// (the ratio column: the median of the per-pair ratios, with their range). Single runs vary
    /// by ±10 % on a VM.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: u32,
    /// Also run each case once per checker under `valgrind --tool=callgrind` (one thread) and
    /// report instructions per state and their ratio: a figure that does not move with the
    /// machine's load (wall-clock ratios do); and the model step's share, which both checkers
    /// execute, with the bound it puts on the ratio. Needs valgrind.
    #[arg(long)]
    pub instructions: bool,
    /// Only these cases (their numbers in the table, from 0; repeatable). Default: all (or the
    /// first four with --quick).
    #[arg(long = "case", value_name = "N")]
    pub cases: Vec<usize>,
    /// With --instructions: keep the callgrind output files in this directory (for
    /// `callgrind_annotate`); by default they are written to a temporary directory and removed.
    #[arg(long, value_name = "DIR", requires = "instructions")]
    pub callgrind_dir: Option<std::path::PathBuf>,
    /// Internal: run one case with one engine and print a JSON line.
    #[arg(long, hide = true)]
    pub one: Option<usize>,
    /// Internal: the engine for `--one` (`ours` or `stateright`).
    #[arg(long, hide = true, default_value = "ours")]
    pub engine: String,
}

pub fn run_bench(a: BenchArgs) -> i32 {
    let all = cases(false);
    if let Some(i) = a.one {
        let Some(case) = all.get(i) else {
            return crate::exit::usage_error("no such bench case");
        };
        println!(
            "{}",
            serde_json::to_string(&run_one(case, &a.engine, a.threads)).unwrap()
        );
        return 0;
    }
    let selected: Vec<usize> = if a.cases.is_empty() {
        (0..cases(a.quick).len()).collect()
    } else {
        a.cases.clone()
    };
    if let Some(&bad) = selected.iter().find(|&&i| i >= all.len()) {
        return crate::exit::usage_error(&format!(
            "--case {bad}: no such bench case (0 to {})",
            all.len() - 1
        ));
    }
    let dir = match a.instructions {
        false => None,
        true => match callgrind::available()
            .and_then(|()| callgrind::OutDir::new(a.callgrind_dir.as_deref()))
        {
            Ok(d) => Some(d),
            Err(e) => return crate::exit::usage_error(&format!("--instructions: {e}")),
        },
    };
    println!(
        "trc bench: linux-6.18, properties I5+I14 (hold), {} threads, each run in its own process",
        a.threads
    );
    for line in machine_facts() {
        println!("machine: {line}");
    }
    println!(
        "{:<22} {:>9} {:>10} {:>8} {:>11} {:>8} {:>8} | {:>8} {:>11} {:>8} {:>6} | {:>6}",
        "case",
        "states",
        "transit.",
        "ours s",
        "ours st/s",
        "ours MB",
        "B/state",
        "sr s",
        "sr st/s",
        "sr MB",
        "same?",
        "ratio"
    );
    let child = match std::env::current_exe() {
        Ok(exe) => Child {
            exe,
            args: vec!["bench".into()],
        },
        Err(e) => return crate::exit::usage_error(&format!("bench: {e}")),
    };
    let plan = Plan {
        threads: a.threads,
        repeat: a.repeat,
        ours_only: a.ours_only,
    };
    let mut measured = Vec::new();
    for &i in &selected {
        let r = match CaseRuns::measure(i, &child, &plan, dir.as_ref()) {
            Ok(r) => r,
            Err(e) => return crate::exit::usage_error(&format!("bench child failed: {e}")),
        };
        print!(
            "{}",
            r.wall_row(&format!("{i} {}", all[i].name), a.ours_only)
        );
        measured.push((i, r));
    }
    if a.repeat > 1 {
        println!("\n{} runs per case and checker, alternating; seconds are the medians (st/s and MB from those runs), same? = every run agreed.", a.repeat);
    }
    println!("\nratio = stateright seconds / ours seconds; MB = peak RSS of the run's process; B/state = our visited set (fingerprint table + parent links) per state.");
    if a.instructions {
        print!("{}", instructions_table(&all, &measured, a.ours_only));
        if let Some(d) = &a.callgrind_dir {
            println!(
                "callgrind profiles: {}/callgrind.case<N>.<engine> (callgrind_annotate FILE)",
                d.display()
            );
        }
    }
    0
}
