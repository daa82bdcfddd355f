//! The progress display of a check on a terminal (`trc check` without `--json`, stdout and
//! stderr both terminals): one line per BFS level (depth, states, states/s, memory) above a
//! spinner, and a one-line summary after each exploration. Nothing otherwise, so piped output
//! is plain. The files a check's exports write are said on stderr, terminal or not.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::Duration;
use trc_engine::{Progress, Report};
use trc_model::model::Action;

const MIB: f64 = (1u64 << 20) as f64;

pub struct LevelProgress {
    pb: Option<ProgressBar>,
    last_depth: Mutex<Option<usize>>,
}

impl LevelProgress {
    /// A display on a terminal, unless `quiet` (`--json`, a shard); nothing otherwise.
    pub fn new(quiet: bool) -> LevelProgress {
        let tty = std::io::stdout().is_terminal() && std::io::stderr().is_terminal();
        let pb = (!quiet && tty).then(|| {
            let pb = ProgressBar::new_spinner();
            pb.set_style(
                ProgressStyle::with_template("{spinner} {elapsed} {msg}").expect("a template"),
            );
            pb.enable_steady_tick(Duration::from_millis(120));
            pb
        });
        LevelProgress {
            pb,
            last_depth: Mutex::new(None),
        }
    }

    /// Clears the spinner.
    pub fn finish(self) {
        if let Some(pb) = self.pb {
            pb.finish_and_clear();
        }
    }
}

impl trc_check::Observer for LevelProgress {
    /// The engine's callback (at least once per level): a line when a level is done.
    fn progress(&self, p: &Progress) {
        let Some(pb) = &self.pb else { return };
        let secs = p.elapsed.as_secs_f64().max(1e-9);
        let mib = p.memory_bytes as f64 / MIB;
        let rate = p.unique_states as f64 / secs;
        let mut last = self.last_depth.lock().expect("not poisoned");
        if *last != Some(p.depth) {
            *last = Some(p.depth);
            pb.println(format!(
                "level {:>3}: {:>10} states ({:>9} new) {:>10.0} states/s {:>8.1} MiB",
                p.depth, p.unique_states, p.frontier, rate, mib
            ));
        }
        pb.set_message(format!(
            "depth {} · {} states · {rate:.0} states/s · {mib:.1} MiB",
            p.depth, p.unique_states
        ));
    }

    /// The one-line summary of an exploration (on stderr, like the levels).
    fn explored(&self, report: &Report<Action>) {
        let Some(pb) = &self.pb else { return };
        *self.last_depth.lock().expect("not poisoned") = None;
        let secs = report.elapsed.as_secs_f64();
        pb.println(format!(
            "done: {} states, {} transitions, depth {} in {:.2} s ({:.0} states/s), peak {:.1} MiB",
            report.unique_states,
            report.transitions,
            report.max_depth,
            secs,
            report.unique_states as f64 / secs.max(1e-9),
            report.peak_memory_bytes as f64 / MIB
        ));
    }

    /// What an export wrote, on stderr (so `--json` output stays machine-readable).
    fn exported(&self, n: &trc_check::export::Note) {
        eprintln!("trc check: {n}");
    }
}
