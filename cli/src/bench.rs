//! `trc bench`: stateright 0.31's BFS and our engine on the same `stateright::Model` (our model)
//! over a fixed set of configurations. Each run happens in a child process of the same binary
//! (`trc bench --one CASE --engine ours|stateright`), so its peak RSS (`VmHWM`) is its own.
//! With `--instructions`, each case also runs once per engine under callgrind
//! ([`callgrind`]): instructions per state do not move with the machine's load.

mod callgrind;

use clap::Args;
use stateright::{Checker, Model};
use std::time::Instant;
use trc_engine::{check_with, Options};
use trc_model::config::SackMode;
use trc_model::model::{State, TcpModel};
use trc_model::{Config, Profile};

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
    /// machine's load (wall-clock ratios do). Needs valgrind.
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

/// One benchmark configuration.
struct Case {
    name: &'static str,
    cfg: Config,
}

fn cases(quick: bool) -> Vec<Case> {
    let base = Config::default();
    let mut v = vec![
        Case {
            name: "no-sack seg6 loss1",
            cfg: Config {
                sack: SackMode::NoSack,
                ..base.clone()
            },
        },
        Case {
            name: "no-sack seg6 loss2",
            cfg: Config {
                sack: SackMode::NoSack,
                max_losses: 2,
                ..base.clone()
            },
        },
        Case {
            name: "sack seg4 loss1",
            cfg: Config {
                sack: SackMode::Sack,
                segments: 4,
                initcwnd: 4,
                ..base.clone()
            },
        },
        Case {
            name: "sack seg6 loss1",
            cfg: Config {
                sack: SackMode::Sack,
                ..base.clone()
            },
        },
    ];
    if !quick {
        v.push(Case {
            name: "sack seg6 loss2",
            cfg: Config {
                sack: SackMode::Sack,
                max_losses: 2,
                ..base.clone()
            },
        });
        v.push(Case {
            name: "both seg8 loss1",
            cfg: Config {
                segments: 8,
                initcwnd: 6,
                ..base
            },
        });
    }
    v
}

fn peak_rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .map(|kb| kb * 1024)
        .unwrap_or(0)
}

#[derive(Clone, serde::Serialize, serde::Deserialize)]
struct Row {
    states: u64,
    transitions: u64,
    secs: f64,
    peak: u64,
    bytes_per_state: f64,
    verdicts: Vec<bool>,
}

fn model_for(case: &Case) -> TcpModel {
    // I5 and I14 hold on linux-6.18 everywhere, so stateright cannot stop early on a discovery
    // and both checkers explore the whole reachable graph.
    let specs = trc_properties::select(&["I5".into(), "I14".into()]).expect("ids exist");
    TcpModel::new(case.cfg.clone(), Profile::linux_6_18())
        .with_properties(trc_properties::properties(&specs))
}

fn run_one(case: &Case, engine: &str, threads: usize) -> Row {
    let model = model_for(case);
    if engine == "stateright" {
        let t = Instant::now();
        let c = model.clone().checker().threads(threads).spawn_bfs().join();
        let secs = t.elapsed().as_secs_f64();
        Row {
            states: c.unique_state_count() as u64,
            transitions: (c.state_count() as u64).saturating_sub(model.init_states().len() as u64),
            secs,
            peak: peak_rss_bytes(),
            bytes_per_state: 0.0,
            verdicts: model
                .properties()
                .iter()
                .map(|p| c.discovery(p.name).is_some())
                .collect(),
        }
    } else {
        let r = check_with(
            &model,
            &Options {
                threads,
                ..Options::default()
            },
            None,
            trc_engine::StateHooks {
                fingerprint: State::fingerprint,
                next_state_into: TcpModel::next_state_into,
                drop_is_noop: State::is_plain,
            },
        );
        Row {
            states: r.unique_states,
            transitions: r.transitions,
            secs: r.elapsed.as_secs_f64(),
            peak: peak_rss_bytes(),
            bytes_per_state: r.visited_set_bytes as f64 / r.unique_states.max(1) as f64,
            verdicts: r
                .properties
                .iter()
                .map(|p| p.verdict == trc_engine::Verdict::Violated)
                .collect(),
        }
    }
}

/// The run with the median time (its other figures come with it).
fn median_row(runs: &[Row]) -> Row {
    let mut v: Vec<&Row> = runs.iter().collect();
    v.sort_by(|a, b| a.secs.total_cmp(&b.secs));
    v[v.len() / 2].clone()
}

/// The arguments of a bench child that runs case `case` with `engine`.
fn child_args(case: usize, engine: &str, threads: usize) -> Vec<String> {
    vec![
        "bench".into(),
        "--one".into(),
        case.to_string(),
        "--engine".into(),
        engine.into(),
        "--threads".into(),
        threads.to_string(),
    ]
}

fn child(case: usize, engine: &str, threads: usize) -> Result<Row, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let out = std::process::Command::new(exe)
        .args(child_args(case, engine, threads))
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())
}

/// A bench child under callgrind, one thread: its row and its instruction count.
fn child_callgrind(case: usize, engine: &str, dir: &callgrind::OutDir) -> Result<Counted, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let file = dir.file(&format!("callgrind.case{case}.{engine}"));
    let (stdout, ir) = callgrind::run(&exe, &child_args(case, engine, 1), &file)?;
    let row = serde_json::from_slice(&stdout).map_err(|e| e.to_string())?;
    Ok((row, ir))
}

/// A run under callgrind: its row and the instructions it executed.
type Counted = (Row, u64);

/// One case's runs: wall-clock (`repeat` of each checker, alternating) and, with
/// `--instructions`, one callgrind run of each.
struct CaseRuns {
    ours: Vec<Row>,
    sr: Vec<Row>,
    /// (ours, stateright) under callgrind.
    ir: Option<(Counted, Option<Counted>)>,
}

impl CaseRuns {
    fn measure(
        i: usize,
        a: &BenchArgs,
        dir: Option<&callgrind::OutDir>,
    ) -> Result<CaseRuns, String> {
        let mut r = CaseRuns {
            ours: Vec::new(),
            sr: Vec::new(),
            ir: None,
        };
        for _ in 0..a.repeat {
            r.ours.push(child(i, "ours", a.threads)?);
            if !a.ours_only {
                r.sr.push(child(i, "stateright", a.threads)?);
            }
        }
        if let Some(dir) = dir {
            let ours = child_callgrind(i, "ours", dir)?;
            let sr = match a.ours_only {
                true => None,
                false => Some(child_callgrind(i, "stateright", dir)?),
            };
            r.ir = Some((ours, sr));
        }
        Ok(r)
    }

    /// Same unique states, transitions and verdicts in every run of both checkers.
    fn same(&self) -> bool {
        let first = &self.ours[0];
        let ir_rows = self
            .ir
            .iter()
            .flat_map(|(o, s)| std::iter::once(&o.0).chain(s.iter().map(|s| &s.0)));
        self.ours.iter().chain(&self.sr).chain(ir_rows).all(|r| {
            r.states == first.states
                && r.transitions == first.transitions
                && r.verdicts == first.verdicts
        })
    }

    /// The median of the per-pair wall-clock ratios, with their range when there are several.
    fn wall_ratio(&self) -> String {
        let mut ratios: Vec<f64> = self
            .ours
            .iter()
            .zip(&self.sr)
            .map(|(o, s)| s.secs / o.secs.max(1e-9))
            .collect();
        ratios.sort_by(f64::total_cmp);
        let mid = ratios[ratios.len() / 2];
        if ratios.len() > 1 {
            format!(
                "{mid:>5.1}x ({:.1}-{:.1})",
                ratios[0],
                ratios[ratios.len() - 1]
            )
        } else {
            format!("{mid:>5.1}x")
        }
    }
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
    let mut measured = Vec::new();
    for &i in &selected {
        let r = match CaseRuns::measure(i, &a, dir.as_ref()) {
            Ok(r) => r,
            Err(e) => return crate::exit::usage_error(&format!("bench child failed: {e}")),
        };
        print_wall_row(&format!("{i} {}", all[i].name), &r, a.ours_only);
        measured.push((i, r));
    }
    if a.repeat > 1 {
        println!("\n{} runs per case and checker, alternating; seconds are the medians (st/s and MB from those runs), same? = every run agreed.", a.repeat);
    }
    println!("\nratio = stateright seconds / ours seconds; MB = peak RSS of the run's process; B/state = our visited set (fingerprint table + parent links) per state.");
    if a.instructions {
        print_instructions(&all, &measured, a.ours_only);
        if let Some(d) = &a.callgrind_dir {
            println!(
                "callgrind profiles: {}/callgrind.case<N>.<engine> (callgrind_annotate FILE)",
                d.display()
            );
        }
    }
    0
}

/// One case's wall-clock row: medians of each checker's runs and the ratio column.
fn print_wall_row(label: &str, r: &CaseRuns, ours_only: bool) {
    let ours = median_row(&r.ours);
    print!(
        "{:<22} {:>9} {:>10} {:>8.2} {:>11.0} {:>8.1} {:>8.1} |",
        label,
        ours.states,
        ours.transitions,
        ours.secs,
        ours.states as f64 / ours.secs.max(1e-9),
        ours.peak as f64 / 1e6,
        ours.bytes_per_state
    );
    if ours_only {
        println!();
        return;
    }
    let sr = median_row(&r.sr);
    println!(
        " {:>8.2} {:>11.0} {:>8.1} {:>6} | {}",
        sr.secs,
        sr.states as f64 / sr.secs.max(1e-9),
        sr.peak as f64 / 1e6,
        if r.same() { "yes" } else { "NO" },
        r.wall_ratio()
    );
}

/// The instruction table: per case, instructions per state of each checker under callgrind (one
/// thread, the whole child process) and their ratio, beside the wall-clock ratio.
fn print_instructions(all: &[Case], measured: &[(usize, CaseRuns)], ours_only: bool) {
    println!("\ninstructions (valgrind --tool=callgrind, 1 thread, whole process, user space):");
    println!(
        "{:<22} {:>9} {:>14} {:>11} | {:>14} {:>11} | {:>8} {:>16}",
        "case", "states", "ours Ir", "ours Ir/st", "sr Ir", "sr Ir/st", "Ir ratio", "wall ratio"
    );
    for (i, r) in measured {
        let Some(((orow, oir), sr)) = &r.ir else {
            continue;
        };
        let per = |ir: u64, row: &Row| ir as f64 / row.states.max(1) as f64;
        print!(
            "{:<22} {:>9} {:>14} {:>11.0} |",
            format!("{i} {}", all[*i].name),
            orow.states,
            oir,
            per(*oir, orow)
        );
        match (sr, ours_only) {
            (Some((srow, sir)), false) => println!(
                " {:>14} {:>11.0} | {:>7.2}x {:>16}",
                sir,
                per(*sir, srow),
                per(*sir, srow) / per(*oir, orow),
                r.wall_ratio()
            ),
            _ => println!(),
        }
    }
    println!("Ir ratio = stateright instructions per state / ours; the kernel's work (page faults) is not counted.");
}

/// The facts about this machine that move the figures (docs/explanation/performance.md): CPU model, cores
/// and hardware threads, transparent huge pages, page size, kernel release, whether hardware
/// performance counters can be opened (VMs often have none), and the load when the bench starts.
pub fn machine_facts() -> Vec<String> {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "?".to_string())
    };
    let cpuinfo = read("/proc/cpuinfo");
    let field = |name: &str| {
        cpuinfo
            .lines()
            .find(|l| l.split(':').next().is_some_and(|k| k.trim() == name))
            .and_then(|l| l.split_once(':'))
            .map_or("?".to_string(), |(_, v)| v.trim().to_string())
    };
    let logical = cpuinfo
        .lines()
        .filter(|l| l.starts_with("processor"))
        .count();
    let per_core = read("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list");
    let per_core = per_core
        .split(',')
        .map(|r| {
            r.split_once('-').map_or(1, |(a, b)| {
                b.parse::<usize>()
                    .unwrap_or(0)
                    .saturating_sub(a.parse().unwrap_or(0))
                    + 1
            })
        })
        .sum::<usize>();
    let usable = std::thread::available_parallelism().map_or(0, |n| n.get());
    let thp = |p: &str| {
        let s = read(p);
        s.split_whitespace()
            .find(|w| w.starts_with('['))
            .map_or(s.clone(), |w| w.trim_matches(['[', ']']).to_string())
    };
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    vec![
        format!(
            "cpu {} ({} logical CPUs, {} hardware thread(s) per core, {} usable by this process)",
            field("model name"),
            logical,
            per_core,
            usable
        ),
        format!(
            "kernel {}, page size {} B, transparent huge pages {} (defrag {}), load average {}",
            read("/proc/sys/kernel/osrelease"),
            page,
            thp("/sys/kernel/mm/transparent_hugepage/enabled"),
            thp("/sys/kernel/mm/transparent_hugepage/defrag"),
            read("/proc/loadavg")
                .split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        ),
        format!("hardware performance counters: {}", hw_counters()),
    ]
}

/// Whether a hardware cycle counter can be opened for this process (`perf_event_open` of
/// `PERF_COUNT_HW_CPU_CYCLES`, user space only).
fn hw_counters() -> String {
    // struct perf_event_attr, first version (64 bytes): type, size, config, ..., flags at 40.
    let mut attr = [0u64; 8];
    attr[0] = 64u64 << 32; // type PERF_TYPE_HARDWARE (0), size 64 (little-endian u32 pair)
    attr[1] = 0; // PERF_COUNT_HW_CPU_CYCLES
    attr[5] = 1 | 1 << 5 | 1 << 6; // disabled, exclude_kernel, exclude_hv
                                   // SAFETY: the syscall reads a perf_event_attr of the size it names; the fd is closed.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            attr.as_ptr(),
            0 as libc::pid_t,
            -1 as libc::c_int,
            -1 as libc::c_int,
            0 as libc::c_ulong,
        )
    };
    if fd >= 0 {
        // SAFETY: our own descriptor.
        unsafe { libc::close(fd as libc::c_int) };
        return "available (cycles can be counted)".to_string();
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) | Some(libc::ENODEV) => {
            format!("not available ({e}; software events only)")
        }
        Some(libc::EACCES) | Some(libc::EPERM) => format!(
            "not permitted ({e}; kernel.perf_event_paranoid = {})",
            std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
                .unwrap_or_default()
                .trim()
        ),
        _ => format!("not available ({e})"),
    }
}
