//! [`Comm`] between threads of one process: `n` ranks as scoped threads meeting at a barrier.
//! For tests (any rank count on one machine, no MPI) and as the reference the MPI communicator
//! must behave like.

use std::sync::{Barrier, Mutex};

use super::Comm;

/// One thread's end of a [`run`].
pub struct LocalComm<'a> {
    rank: usize,
    shared: &'a Shared,
}

struct Shared {
    n: usize,
    barrier: Barrier,
    /// `mail[src][dst]`: what `src` sends to `dst` in the current exchange.
    mail: Mutex<Vec<Vec<Vec<u64>>>>,
    /// Each rank's contribution to the current gather.
    gather: Mutex<Vec<Vec<u64>>>,
}

/// Runs `f` on `n` ranks, each a thread with its [`LocalComm`]; returns their results in rank
/// order.
pub fn run<R: Send>(n: usize, f: impl Fn(&LocalComm<'_>) -> R + Sync) -> Vec<R> {
    assert!(n > 0, "at least one rank");
    let shared = Shared {
        n,
        barrier: Barrier::new(n),
        mail: Mutex::new(vec![vec![Vec::new(); n]; n]),
        gather: Mutex::new(vec![Vec::new(); n]),
    };
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|rank| {
                let (f, shared) = (&f, &shared);
                s.spawn(move || f(&LocalComm { rank, shared }))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a rank panicked"))
            .collect()
    })
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
        self.shared.mail.lock().unwrap()[self.rank] = parts;
        self.shared.barrier.wait();
        let got = {
            let mut mail = self.shared.mail.lock().unwrap();
            (0..self.shared.n)
                .map(|src| std::mem::take(&mut mail[src][self.rank]))
                .collect()
        };
        self.shared.barrier.wait();
        got
    }

    fn all_gather(&self, mine: &[u64]) -> Vec<Vec<u64>> {
        self.shared.gather.lock().unwrap()[self.rank] = mine.to_vec();
        self.shared.barrier.wait();
        let all = self.shared.gather.lock().unwrap().clone();
        self.shared.barrier.wait();
        all
    }
}
