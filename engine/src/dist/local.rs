//! [`Comm`] between threads of one process: `n` ranks as scoped threads meeting at a gate. For
//! `trc check --ranks N` (one state space split across ranks without MPI: each rank keeps its
//! level compressed), for the tests (any rank count on one machine), and as the reference the
//! MPI communicator must behave like.
//!
//! A rank that panics opens the gate for good: the others panic at their next collective instead
//! of waiting for it forever, and [`run`] resumes the first rank's own panic.

use std::panic::{catch_unwind, panic_any, resume_unwind, AssertUnwindSafe};
use std::sync::{Condvar, Mutex, MutexGuard};

use serde::{de::DeserializeOwned, Serialize};
use stateright::Model;

use super::{check_distributed, Comm};
use crate::{Hooks, Options, Progress, Report};

/// One thread's end of a [`run`].
pub struct LocalComm<'a> {
    rank: usize,
    shared: &'a Shared,
}

struct Shared {
    n: usize,
    gate: Gate,
    /// `mail[src][dst]`: what `src` sends to `dst` in the current exchange.
    mail: Mutex<Vec<Vec<Vec<u64>>>>,
    /// Each rank's contribution to the current gather.
    gather: Mutex<Vec<Vec<u64>>>,
}

/// The panic of a rank stopped because another one panicked (not the cause).
struct OtherRankPanicked;

/// A reusable barrier that a panicking rank can break.
struct Gate {
    n: usize,
    /// Ranks arrived in this round, the round, and whether a rank panicked.
    state: Mutex<(usize, u64, bool)>,
    turn: Condvar,
}

/// A lock that a panic elsewhere does not make unusable (the data stays consistent: every
/// critical section here is a plain store or take).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Gate {
    /// Waits until every rank has arrived; panics if a rank panicked.
    fn wait(&self) {
        let mut s = lock(&self.state);
        if s.2 {
            drop(s);
            panic_any(OtherRankPanicked);
        }
        s.0 += 1;
        if s.0 == self.n {
            s.0 = 0;
            s.1 += 1;
            self.turn.notify_all();
            return;
        }
        let round = s.1;
        while s.1 == round && !s.2 {
            s = self.turn.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        if s.2 {
            drop(s);
            panic_any(OtherRankPanicked);
        }
    }

    fn break_open(&self) {
        lock(&self.state).2 = true;
        self.turn.notify_all();
    }
}

/// Runs `f` on `n` ranks, each a thread with its [`LocalComm`]; returns their results in rank
/// order. If a rank panics, so do the others (at their next collective), and this resumes the
/// first rank's own panic.
pub fn run<R: Send>(n: usize, f: impl Fn(&LocalComm<'_>) -> R + Sync) -> Vec<R> {
    assert!(n > 0, "at least one rank");
    let shared = Shared {
        n,
        gate: Gate {
            n,
            state: Mutex::new((0, 0, false)),
            turn: Condvar::new(),
        },
        mail: Mutex::new(vec![vec![Vec::new(); n]; n]),
        gather: Mutex::new(vec![Vec::new(); n]),
    };
    let results: Vec<std::thread::Result<R>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|rank| {
                let (f, shared) = (&f, &shared);
                s.spawn(move || {
                    let r = catch_unwind(AssertUnwindSafe(|| f(&LocalComm { rank, shared })));
                    if r.is_err() {
                        shared.gate.break_open();
                    }
                    r
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(Err))
            .collect()
    });
    if results.iter().any(Result::is_err) {
        let first = results
            .into_iter()
            .filter_map(Result::err)
            .find(|p| !p.is::<OtherRankPanicked>());
        resume_unwind(first.unwrap_or_else(|| Box::new("a rank panicked") as Box<_>));
    }
    results.into_iter().map(|r| r.ok().unwrap()).collect()
}

/// [`check_distributed`] on `n` ranks that are threads of this process ([`run`]): the same
/// report as [`crate::check_with`] (apart from timings and memory, and with [`Report::dist`]),
/// each rank's level kept compressed. `hooks` makes each rank's hooks.
pub fn check<M, H>(
    model: &M,
    opts: &Options,
    progress: Option<&(dyn Fn(&Progress) + Sync)>,
    n: usize,
    hooks: impl Fn() -> H + Sync,
) -> Report<M::Action>
where
    M: Model + Sync,
    M::State: Send + Sync + Serialize + DeserializeOwned,
    M::Action: Send + Sync + Clone,
    H: Hooks<M>,
{
    let mut reports = run(n, |comm| {
        check_distributed(model, opts, progress, hooks(), comm)
    });
    let mut report = reports.swap_remove(0);
    if let Some(d) = &mut report.dist {
        d.in_one_process = true;
    }
    report
}

impl Comm for LocalComm<'_> {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.shared.n
    }

    fn all_to_all(&self, parts: Vec<Vec<u64>>) -> Vec<Vec<u64>> {
        assert_eq!(parts.len(), self.shared.n, "one part per rank");
        lock(&self.shared.mail)[self.rank] = parts;
        self.shared.gate.wait();
        let got = {
            let mut mail = lock(&self.shared.mail);
            (0..self.shared.n)
                .map(|src| std::mem::take(&mut mail[src][self.rank]))
                .collect()
        };
        self.shared.gate.wait();
        got
    }

    fn all_gather(&self, mine: &[u64]) -> Vec<Vec<u64>> {
        lock(&self.shared.gather)[self.rank] = mine.to_vec();
        self.shared.gate.wait();
        let all = lock(&self.shared.gather).clone();
        self.shared.gate.wait();
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panicking_rank_stops_the_others_and_its_panic_is_resumed() {
        let got = catch_unwind(|| {
            run(3, |comm| {
                comm.all_gather(&[1]);
                if comm.rank() == 1 {
                    panic!("rank 1 fails");
                }
                // Ranks 0 and 2 wait here for rank 1, which never comes.
                comm.all_gather(&[2]);
            })
        });
        let payload = got.expect_err("the run panics");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"rank 1 fails"));
    }

    #[test]
    fn collectives_between_threads() {
        let sums = run(4, |comm| {
            let parts = (0..4)
                .map(|d| vec![(comm.rank() * 10 + d) as u64])
                .collect();
            let got = comm.all_to_all(parts);
            let mut v = [comm.rank() as u64];
            comm.all_sum(&mut v);
            (got, v[0])
        });
        for (rank, (got, sum)) in sums.into_iter().enumerate() {
            assert_eq!(
                got,
                (0..4)
                    .map(|s| vec![(s * 10 + rank) as u64])
                    .collect::<Vec<_>>()
            );
            assert_eq!(sum, 6);
        }
    }
}
