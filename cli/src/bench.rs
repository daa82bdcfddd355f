//! `trc bench`: stateright 0.31's BFS and our engine on the same `stateright::Model` (our model),
//! in one process, over a fixed set of configurations. Peak memory of each run is measured by
//! resetting the kernel's peak-RSS counter (`/proc/self/clear_refs` ← 5) before it and reading
//! `VmHWM` after it.

use clap::Args;
use stateright::{Checker, Model};
use std::time::Instant;
use trc_engine::{check, Options};
use trc_model::config::SackMode;
use trc_model::model::TcpModel;
use trc_model::{Config, Profile};

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Worker threads for both checkers.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// Only the smaller configurations (for a quick run).
    #[arg(long)]
    pub quick: bool,
    /// Skip stateright (ours only).
    #[arg(long)]
    pub ours_only: bool,
}

/// One benchmark configuration.
struct Case {
    name: &'static str,
    cfg: Config,
}

fn cases(quick: bool) -> Vec<Case> {
    let base = Config::default();
    let mut v = vec![
        Case { name: "no-sack seg6 loss1", cfg: Config { sack: SackMode::NoSack, ..base.clone() } },
        Case { name: "no-sack seg6 loss2", cfg: Config { sack: SackMode::NoSack, max_losses: 2, ..base.clone() } },
        Case { name: "sack seg4 loss1", cfg: Config { sack: SackMode::Sack, segments: 4, initcwnd: 4, ..base.clone() } },
        Case { name: "sack seg6 loss1", cfg: Config { sack: SackMode::Sack, ..base.clone() } },
    ];
    if !quick {
        v.push(Case { name: "sack seg6 loss2", cfg: Config { sack: SackMode::Sack, max_losses: 2, ..base.clone() } });
        v.push(Case { name: "both seg8 loss1", cfg: Config { segments: 8, initcwnd: 6, ..base } });
    }
    v
}

fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn peak_rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok()))
        .map(|kb| kb * 1024)
        .unwrap_or(0)
}

struct Row {
    states: u64,
    transitions: u64,
    secs: f64,
    peak: u64,
    verdicts: Vec<bool>,
}

pub fn run_bench(a: BenchArgs) -> i32 {
    // I5 holds on linux-6.18 everywhere, so stateright cannot stop early on a discovery and both
    // checkers explore the whole reachable graph.
    let specs = trc_properties::select(&["I5".into(), "I14".into()]).expect("ids exist");
    println!("trc bench: linux-6.18, properties I5+I14 (hold), {} threads", a.threads);
    println!(
        "{:<20} {:>9} {:>10} {:>8} {:>11} {:>9} {:>8} | {:>8} {:>11} {:>9} {:>8} | {:>6}",
        "case", "states", "transit.", "ours s", "ours st/s", "ours MB", "B/state", "sr s", "sr st/s", "sr MB", "same?", "ratio"
    );
    for case in cases(a.quick) {
        let model = TcpModel::new(case.cfg.clone(), Profile::linux_6_18()).with_properties(trc_properties::properties(&specs));
        reset_peak_rss();
        let base_rss = peak_rss_bytes();
        let r = check(&model, &Options { threads: a.threads, ..Options::default() }, None);
        let ours = Row {
            states: r.unique_states,
            transitions: r.transitions,
            secs: r.elapsed.as_secs_f64(),
            peak: peak_rss_bytes().saturating_sub(base_rss),
            verdicts: r.properties.iter().map(|p| p.verdict == trc_engine::Verdict::Violated).collect(),
        };
        let bytes_per_state = r.visited_set_bytes as f64 / r.unique_states.max(1) as f64;
        print!(
            "{:<20} {:>9} {:>10} {:>8.2} {:>11.0} {:>9.1} {:>8.1} |",
            case.name,
            ours.states,
            ours.transitions,
            ours.secs,
            ours.states as f64 / ours.secs.max(1e-9),
            ours.peak as f64 / 1e6,
            bytes_per_state
        );
        if a.ours_only {
            println!();
            continue;
        }
        reset_peak_rss();
        let base_rss = peak_rss_bytes();
        let t = Instant::now();
        let c = model.clone().checker().threads(a.threads).spawn_bfs().join();
        let secs = t.elapsed().as_secs_f64();
        let sr = Row {
            states: c.unique_state_count() as u64,
            transitions: (c.state_count() as u64).saturating_sub(model.init_states().len() as u64),
            secs,
            peak: peak_rss_bytes().saturating_sub(base_rss),
            verdicts: model.properties().iter().map(|p| c.discovery(p.name).is_some()).collect(),
        };
        let same = sr.states == ours.states && sr.verdicts == ours.verdicts;
        println!(
            " {:>8.2} {:>11.0} {:>9.1} {:>8} | {:>5.1}x",
            sr.secs,
            sr.states as f64 / sr.secs.max(1e-9),
            sr.peak as f64 / 1e6,
            if same { "yes" } else { "NO" },
            sr.secs / ours.secs.max(1e-9)
        );
        if !same {
            eprintln!("  mismatch: ours {} states {:?}, stateright {} states (transitions {}) {:?}", ours.states, ours.verdicts, sr.states, sr.transitions, sr.verdicts);
        }
    }
    println!("\nratio = stateright seconds / ours seconds; B/state = our visited set (fingerprint table + parent links) per state.");
    0
}
