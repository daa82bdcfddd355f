//! `trc bench` as a library: stateright 0.31's BFS and trc's engine on the same
//! `stateright::Model` (trc's model) over a fixed set of configurations ([`cases`]). Each run
//! happens in a child process (the caller's binary, which runs [`run_one`] when asked: see
//! [`Child`]), so its peak RSS (`VmHWM`) is its own. Under callgrind ([`callgrind`]), instructions
//! per state do not move with the machine's load. [`machine_facts`]: what moves the figures.

pub mod callgrind;

use stateright::{Checker, Model};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;
use trc_engine::{check_with, Options};
use trc_model::config::SackMode;
use trc_model::model::{State, TcpModel};
use trc_model::{Config, Profile};

/// One benchmark configuration.
pub struct Case {
    pub name: &'static str,
    pub cfg: Config,
}

/// The cases: the first four with `quick`.
pub fn cases(quick: bool) -> Vec<Case> {
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

/// This process's peak resident set (`VmHWM`), in bytes.
pub fn peak_rss_bytes() -> u64 {
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

/// One run's figures (a child prints it as JSON).
#[derive(Clone, serde::Serialize, serde::Deserialize)]
pub struct Row {
    pub states: u64,
    pub transitions: u64,
    pub secs: f64,
    /// Peak RSS of the run's process, bytes.
    pub peak: u64,
    /// Our visited set (fingerprint table + parent links) per state; 0 for stateright.
    pub bytes_per_state: f64,
    /// Per property: violated.
    pub verdicts: Vec<bool>,
}

fn model_for(case: &Case) -> TcpModel {
    // I5 and I14 hold on linux-6.18 everywhere, so stateright cannot stop early on a discovery
    // and both checkers explore the whole reachable graph.
    let specs = trc_properties::select(&["I5".into(), "I14".into()]).expect("ids exist");
    TcpModel::new(case.cfg.clone(), Profile::linux_6_18())
        .with_properties(trc_properties::properties(&specs))
}

/// Runs `case` with `engine` (`stateright`, else ours) in this process.
pub fn run_one(case: &Case, engine: &str, threads: usize) -> Row {
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
pub fn median_row(runs: &[Row]) -> Row {
    let mut v: Vec<&Row> = runs.iter().collect();
    v.sort_by(|a, b| a.secs.total_cmp(&b.secs));
    v[v.len() / 2].clone()
}

/// How to start a bench child: `exe` with `args` and then `--one CASE --engine ENGINE --threads
/// N` (the caller's binary answers those with [`run_one`]'s row as JSON).
pub struct Child {
    pub exe: PathBuf,
    pub args: Vec<String>,
}

impl Child {
    /// The arguments of a child that runs case `case` with `engine`.
    fn args(&self, case: usize, engine: &str, threads: usize) -> Vec<String> {
        let mut a = self.args.clone();
        a.extend([
            "--one".into(),
            case.to_string(),
            "--engine".into(),
            engine.into(),
            "--threads".into(),
            threads.to_string(),
        ]);
        a
    }

    fn run(&self, case: usize, engine: &str, threads: usize) -> Result<Row, BenchError> {
        let out = std::process::Command::new(&self.exe)
            .args(self.args(case, engine, threads))
            .output()
            .map_err(BenchError::Start)?;
        if !out.status.success() {
            return Err(BenchError::ChildFailed(
                String::from_utf8_lossy(&out.stderr).into_owned(),
            ));
        }
        Ok(serde_json::from_slice(&out.stdout)?)
    }

    /// A child under callgrind, one thread: its row and its instruction count.
    fn callgrind(
        &self,
        case: usize,
        engine: &str,
        dir: &callgrind::OutDir,
    ) -> Result<Counted, BenchError> {
        let file = dir.file(&format!("callgrind.case{case}.{engine}"));
        let (stdout, ir) = callgrind::run(&self.exe, &self.args(case, engine, 1), &file)?;
        let row = serde_json::from_slice(&stdout)?;
        Ok((row, ir))
    }
}

/// Why a bench child or its callgrind run gave no row.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("valgrind --version failed: {0}")]
    ValgrindVersion(String),
    #[error("valgrind not found ({0}): install valgrind for --instructions")]
    NoValgrind(std::io::Error),
    /// valgrind could not start.
    #[error("valgrind: {0}")]
    Valgrind(std::io::Error),
    /// callgrind's run failed: the child's arguments and valgrind's stderr.
    #[error("valgrind --tool=callgrind {args}: {stderr}")]
    Callgrind { args: String, stderr: String },
    /// A profile file or directory.
    #[error("{}: {source}", path.display())]
    File {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: no totals line", .0.display())]
    NoTotals(PathBuf),
    /// The child could not start.
    #[error(transparent)]
    Start(std::io::Error),
    /// The child failed: its stderr.
    #[error("{0}")]
    ChildFailed(String),
    /// The child's row is not the JSON it should print.
    #[error(transparent)]
    Row(#[from] serde_json::Error),
}

impl BenchError {
    /// For `map_err`: an I/O error on `path`.
    fn file(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> BenchError + '_ {
        move |source| BenchError::File {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// What to measure of each case.
pub struct Plan {
    pub threads: usize,
    /// Runs of each checker, alternating.
    pub repeat: u32,
    pub ours_only: bool,
}

/// A run under callgrind: its row and the instructions it executed.
pub type Counted = (Row, callgrind::Counts);

/// One case's runs: wall-clock (`repeat` of each checker, alternating) and, with
/// `--instructions`, one callgrind run of each.
pub struct CaseRuns {
    pub ours: Vec<Row>,
    pub sr: Vec<Row>,
    /// (ours, stateright) under callgrind.
    pub ir: Option<(Counted, Option<Counted>)>,
}

impl CaseRuns {
    /// Case `i`: `plan.repeat` runs of each checker (alternating) and, with `dir`, one run of
    /// each under callgrind.
    pub fn measure(
        i: usize,
        child: &Child,
        plan: &Plan,
        dir: Option<&callgrind::OutDir>,
    ) -> Result<CaseRuns, BenchError> {
        let mut r = CaseRuns {
            ours: Vec::new(),
            sr: Vec::new(),
            ir: None,
        };
        for _ in 0..plan.repeat {
            r.ours.push(child.run(i, "ours", plan.threads)?);
            if !plan.ours_only {
                r.sr.push(child.run(i, "stateright", plan.threads)?);
            }
        }
        if let Some(dir) = dir {
            let ours = child.callgrind(i, "ours", dir)?;
            let sr = match plan.ours_only {
                true => None,
                false => Some(child.callgrind(i, "stateright", dir)?),
            };
            r.ir = Some((ours, sr));
        }
        Ok(r)
    }

    /// Same unique states, transitions and verdicts in every run of both checkers.
    pub fn same(&self) -> bool {
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
    pub fn wall_ratio(&self) -> String {
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

impl CaseRuns {
    /// One case's wall-clock row: medians of each checker's runs and the ratio column.
    pub fn wall_row(&self, label: &str, ours_only: bool) -> String {
        let r = self;
        let mut o = String::new();
        let ours = median_row(&r.ours);
        let _ = write!(
            o,
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
            o.push('\n');
            return o;
        }
        let sr = median_row(&r.sr);
        let _ = writeln!(
            o,
            " {:>8.2} {:>11.0} {:>8.1} {:>6} | {}",
            sr.secs,
            sr.states as f64 / sr.secs.max(1e-9),
            sr.peak as f64 / 1e6,
            if r.same() { "yes" } else { "NO" },
            r.wall_ratio()
        );
        o
    }
}

/// The instruction table: per case, instructions per state of each checker under callgrind (one
/// thread, the whole child process) and their ratio, beside the wall-clock ratio; then each
/// checker's model step per state ([`callgrind::step_instructions`]) and the bound it puts on
/// the instruction ratio.
pub fn instructions_table(all: &[Case], measured: &[(usize, CaseRuns)], ours_only: bool) -> String {
    let mut o = String::new();
    o.push_str(
        "\ninstructions (valgrind --tool=callgrind, 1 thread, whole process, user space):\n",
    );
    let _ = writeln!(
        o,
        "{:<22} {:>9} {:>14} {:>11} | {:>14} {:>11} | {:>8} {:>16}",
        "case", "states", "ours Ir", "ours Ir/st", "sr Ir", "sr Ir/st", "Ir ratio", "wall ratio"
    );
    let per = |ir: u64, row: &Row| ir as f64 / row.states.max(1) as f64;
    let mut steps = String::new();
    for (i, r) in measured {
        let Some(((orow, ours), sr)) = &r.ir else {
            continue;
        };
        let sr = sr.as_ref().filter(|_| !ours_only);
        let name = format!("{i} {}", all[*i].name);
        let ostep = per(ours.step, orow);
        let _ = write!(
            o,
            "{name:<22} {:>9} {:>14} {:>11.0} |",
            orow.states,
            ours.total,
            per(ours.total, orow)
        );
        let _ = write!(steps, "{name:<22} {ostep:>13.0} |");
        match sr {
            Some((srow, sr)) => {
                let srper = per(sr.total, srow);
                let _ = writeln!(
                    o,
                    " {:>14} {:>11.0} | {:>7.2}x {:>16}",
                    sr.total,
                    srper,
                    srper / per(ours.total, orow),
                    r.wall_ratio()
                );
                let _ = writeln!(
                    steps,
                    " {:>11.0} | {:>7.2}x",
                    per(sr.step, srow),
                    srper / ostep.max(1.0)
                );
            }
            None => {
                o.push('\n');
                steps.push('\n');
            }
        }
    }
    let _ = writeln!(o, "Ir ratio = stateright instructions per state / ours; the kernel's work (page faults) is not counted.");
    let _ = writeln!(
        o,
        "\nthe model step (the transition function and the properties, which both checkers run):"
    );
    let _ = writeln!(
        o,
        "{:<22} {:>13} | {:>11} | {:>8}",
        "case", "ours step/st", "sr step/st", "bound"
    );
    o.push_str(&steps);
    let _ = writeln!(o, "step = instructions per state in the model's and the properties' code, less fingerprinting, hashing, copying and dropping states; bound = sr Ir/st / ours step/st: the largest Ir ratio an engine running this step could reach.");
    o
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
