//! The text of a check's report: what `trc check` prints without `--json` (and `trc merge`
//! prints for the shards of one).

use crate::report::{CheckReport, Outcome, SigStatus, Step};
use std::fmt::Write as _;
use trc_engine::{StopReason, Verdict};

const MIB: f64 = (1u64 << 20) as f64;
const GIB: f64 = (1u64 << 30) as f64;

impl CheckReport {
    /// Why an incomplete check stopped, for the summary line (empty when complete).
    fn stop_note(&self) -> String {
        let why = match self.stop_reason {
            StopReason::Complete => return String::new(),
            StopReason::FailFast => "--fail-fast: a property was violated (its BFS level was finished, so the counterexample is still a shortest one)".to_string(),
            StopReason::MaxDepth => format!("--max-depth {} reached with unexplored successors", self.max_depth),
            StopReason::MaxStates => "the state limit was reached".to_string(),
            StopReason::MemoryBudget => self.memory_note(),
        };
        format!(
            "\nstopped early ({:?}): {why}; \"holds\" below covers only the states explored",
            self.stop_reason
        )
    }

    /// Why the memory budget stopped the check: the spill file failed, or the states would not
    /// fit (with or without spilling).
    fn memory_note(&self) -> String {
        let spill = self.spill.as_ref();
        match spill.and_then(|s| s.error.as_deref()) {
            Some(e) if spill.is_some_and(|s| !s.dir.is_empty()) => {
                format!("--max-memory: the frontier's spill file failed: {e}")
            }
            err => format!(
                "--max-memory: exploring the next level would exceed the budget (estimated peak {:.1} MiB so far){}",
                self.peak_memory_bytes as f64 / MIB,
                match (err, spill) {
                    (Some(e), _) => format!(", and no spill file: {e}"),
                    (None, Some(_)) => " even with the frontier spilled to disk (the visited set stays in memory)".to_string(),
                    (None, None) => String::new(),
                }
            ),
        }
    }

    /// The human summary: the verdicts, every signature with its count, shortest length and
    /// status, and the counterexamples.
    pub fn render(&self) -> String {
        let mut o = String::new();
        self.render_head(&mut o);
        self.render_verdicts(&mut o);
        for r in &self.properties {
            let Some(ce) = &r.counterexample else {
                continue;
            };
            let sig = r
                .counterexample_signature
                .as_ref()
                .map(|s| format!(" {s}"))
                .unwrap_or_default();
            let accepted = r
                .accepted
                .as_ref()
                .map(|a| format!(" [{a}]"))
                .unwrap_or_default();
            let _ = writeln!(
                o,
                "\n{} — shortest counterexample{sig} ({} events){accepted}:",
                r.name,
                ce.len() - 1
            );
            render_steps(&mut o, ce);
        }
        o
    }

    fn render_head(&self, o: &mut String) {
        let _ = writeln!(
            o,
            "trc check: profile {} ({})",
            self.profile.name, self.profile.description
        );
        if let Some(a) = &self.against {
            let stopped = if a.incomplete {
                " — its check stopped early"
            } else {
                ""
            };
            let _ = writeln!(o, "compared with {} (same bounds){stopped}", a.profile);
        }
        let _ = writeln!(
            o,
            "explored {} states, {} transitions, depth {} in {:.2} s ({:.0} states/s){}",
            self.unique_states,
            self.transitions,
            self.max_depth,
            self.seconds,
            self.unique_states as f64 / self.seconds.max(1e-9),
            self.stop_note()
        );
        if let Some(s) = self.spill.as_ref().filter(|s| s.bytes_written > 0) {
            let _ = writeln!(
                o,
                "frontier spilled to a temporary file in {}: {:.1} GiB of states written ({:.1} GiB compressed), {:.1} GiB read back; state blocks in memory at most {:.1} GiB",
                s.dir,
                s.bytes_written as f64 / GIB,
                s.file_bytes_written as f64 / GIB,
                s.bytes_read as f64 / GIB,
                s.peak_block_bytes as f64 / GIB
            );
        }
        if let Some(d) = &self.distributed {
            let most = |v: &[u64]| v.iter().copied().max().unwrap_or(0) as f64 / MIB;
            let (rss, visited) = (
                most(&d.rank_peak_rss_bytes),
                most(&d.rank_visited_set_bytes),
            );
            let _ = if d.in_one_process {
                writeln!(
                    o,
                    "split across {} ranks in this process: peak resident memory {rss:.0} MiB, a rank's part of the visited set at most {visited:.0} MiB",
                    d.ranks
                )
            } else {
                writeln!(
                    o,
                    "distributed over {} ranks: peak resident memory of a rank at most {rss:.0} MiB, its part of the visited set at most {visited:.0} MiB",
                    d.ranks
                )
            };
        }
    }

    fn render_verdicts(&self, o: &mut String) {
        let base = self.against.as_ref().map_or("?", |a| a.profile.as_str());
        for r in &self.properties {
            let verdict = match (r.verdict, &r.accepted) {
                (Verdict::Violated, Some(why)) => format!("VIOLATED ({why})"),
                (Verdict::Violated, None) => "VIOLATED".to_string(),
                (Verdict::Holds, _) => "holds".to_string(),
                _ => "not checked".to_string(),
            };
            let _ = writeln!(o, "  {:<70} {}", r.name, verdict);
            for s in &r.signatures {
                let finding = s.finding.as_deref().unwrap_or("?");
                let status = match s.status {
                    SigStatus::Accepted if s.also_on_base => {
                        format!("accepted ({finding}, baseline); also on {base}")
                    }
                    SigStatus::Accepted => format!("accepted ({finding}, baseline)"),
                    SigStatus::AlsoOnBase => format!("also on {base}"),
                    SigStatus::New => "NEW".to_string(),
                };
                let _ = writeln!(
                    o,
                    "      {:<66} {:>7} states, shortest {:>2} events: {status}",
                    s.signature, s.states, s.events
                );
            }
        }
    }

    /// Several bounds files' reports (`trc check` with several `--config`, and `trc merge`):
    /// each summary with its `--coverage` table, one after the other, and the INCOMPLETE line.
    pub fn render_runs(runs: &[CheckReport]) -> String {
        let mut o = String::new();
        for (i, r) in runs.iter().enumerate() {
            if runs.len() > 1 {
                let gap = if i > 0 { "\n" } else { "" };
                let _ = writeln!(o, "{gap}== bounds file {} of {}", i + 1, runs.len());
            }
            o.push_str(&r.render());
            if let Some(c) = &r.coverage {
                o.push_str(&c.render());
            }
        }
        if Outcome::worst(runs.iter().map(|r| r.result)) == Outcome::Incomplete {
            let reasons: Vec<String> = runs
                .iter()
                .filter(|r| r.result == Outcome::Incomplete)
                .map(|r| format!("{:?}", r.stop_reason))
                .collect();
            let _ = writeln!(
                o,
                "\nINCOMPLETE: stopped early ({}) with no violation among the states explored (exit 3)",
                reasons.join(", ")
            );
        }
        o
    }
}

/// A counterexample's steps: the event, the sender's variables after it, the notes and the
/// counters it moved.
fn render_steps(o: &mut String, ce: &[Step]) {
    for (i, s) in ce.iter().enumerate() {
        let _ = writeln!(o, "  {:>2}. t={:>5}ms {}", i, s.time_ms, s.event);
        let _ = writeln!(
            o,
            "      {:<9} cwnd {:>3} ssthresh {:>10} snd_una {:>3} snd_nxt {:>3} high_seq {:>3} retrans_stamp {:>5} undo_marker {:>3} undo_retrans {:>2} out/sacked/lost/retrans {}/{}/{}/{}",
            format!("{:?}", s.ca_state),
            s.cwnd,
            s.ssthresh,
            s.snd_una,
            s.snd_nxt,
            s.high_seq,
            s.retrans_stamp,
            s.undo_marker,
            s.undo_retrans,
            s.packets_out,
            s.sacked_out,
            s.lost_out,
            s.retrans_out
        );
        for n in &s.notes {
            let _ = writeln!(o, "      → {n}");
        }
        if !s.counters.is_empty() {
            let c: Vec<String> = s
                .counters
                .iter()
                .map(|(k, v)| format!("{k} +{v}"))
                .collect();
            let _ = writeln!(o, "      counters: {}", c.join(", "));
        }
    }
}
