//! `trc check --mpi`: the engine's distributed check ([`trc_engine::dist`]) over MPI (the `mpi`
//! crate, Open MPI). Built only with `--features mpi`; started by `mpirun -np N trc check --mpi
//! ...` (or `srun`). Every rank explores its part of the one state space and computes the whole
//! report; rank 0 alone prints it and writes files, and every rank exits with its code.

use std::cell::RefCell;
use std::rc::Rc;

use mpi::collective::SystemOperation;
use mpi::datatype::{Partition, PartitionMut};
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use mpi::Count;
use trc_engine::dist::Comm;

/// Most `u64` words one rank sends another in one `MPI_Alltoallv` round (MPI counts are C
/// `int`s): larger parts go in several rounds.
const ROUND_WORDS: usize = 1 << 27;

/// The world communicator as a [`Comm`].
pub struct MpiComm {
    world: SimpleCommunicator,
}

thread_local! {
    /// MPI's environment, from [`init`] to [`finish`] (its drop finalises MPI).
    static UNIVERSE: RefCell<Option<mpi::environment::Universe>> = const { RefCell::new(None) };
}

/// MPI was initialised by someone else before [`init`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("MPI is already initialised")]
pub struct AlreadyInitialised;

/// Joins the MPI job (initialises MPI once; only this thread makes MPI calls) and returns its
/// world communicator.
pub fn init() -> Result<crate::Ranks, AlreadyInitialised> {
    UNIVERSE.with_borrow_mut(|u| {
        if u.is_none() {
            let (universe, _) = mpi::initialize_with_threading(mpi::Threading::Funneled)
                .ok_or(AlreadyInitialised)?;
            *u = Some(universe);
            abort_on_panic();
        }
        let world = u.as_ref().expect("initialised above").world();
        Ok(crate::Ranks::Mpi(Rc::new(MpiComm { world })))
    })
}

/// A panicking rank ends the whole job (`MPI_Abort`) after the usual message: the other ranks
/// would otherwise wait for it in their next collective forever.
fn abort_on_panic() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        default(info);
        SimpleCommunicator::world().abort(101);
    }));
}

/// Finalises MPI (drops the environment) if [`init`] ran: after the last collective, before the
/// process exits.
pub fn finish() {
    UNIVERSE.with_borrow_mut(|u| drop(u.take()));
}

fn count(n: usize) -> Count {
    Count::try_from(n).expect("an MPI count fits in an int")
}

/// Exclusive prefix sums of `counts` (the displacements of a partition).
fn displs(counts: &[Count]) -> Vec<Count> {
    counts
        .iter()
        .scan(0, |acc, &c| {
            let d = *acc;
            *acc += c;
            Some(d)
        })
        .collect()
}

impl Comm for MpiComm {
    fn rank(&self) -> usize {
        self.world.rank() as usize
    }

    fn size(&self) -> usize {
        self.world.size() as usize
    }

    /// At most two copies of a round's words at once (a level's moved states are most of a
    /// rank's memory at its peak): each part is freed once it is copied into the send buffer,
    /// the send buffer once MPI has sent it, and the receive buffer is cut into the parts.
    fn all_to_all(&self, mut parts: Vec<Vec<u64>>) -> Vec<Vec<u64>> {
        let n = self.size();
        assert_eq!(parts.len(), n, "one part per rank");
        let mut got = vec![Vec::new(); n];
        let mut sent = vec![0usize; n];
        loop {
            let send_counts: Vec<Count> = (0..n)
                .map(|k| count((parts[k].len() - sent[k]).min(ROUND_WORDS)))
                .collect();
            let mut recv_counts = vec![0 as Count; n];
            self.world
                .all_to_all_into(&send_counts[..], &mut recv_counts[..]);
            let mut more = [send_counts.iter().any(|&c| c > 0) as u64];
            self.all_sum(&mut more);
            if more[0] == 0 {
                return got;
            }
            let mut send = Vec::with_capacity(send_counts.iter().map(|&c| c as usize).sum());
            for k in 0..n {
                let c = send_counts[k] as usize;
                send.extend_from_slice(&parts[k][sent[k]..sent[k] + c]);
                sent[k] += c;
                if sent[k] == parts[k].len() {
                    (parts[k], sent[k]) = (Vec::new(), 0);
                }
            }
            let mut recv = vec![0u64; recv_counts.iter().map(|&c| c as usize).sum()];
            {
                let (sd, rd) = (displs(&send_counts), displs(&recv_counts));
                let sp = Partition::new(&send[..], &send_counts[..], &sd[..]);
                let mut rp = PartitionMut::new(&mut recv[..], &recv_counts[..], &rd[..]);
                self.world.all_to_all_varcount_into(&sp, &mut rp);
            }
            drop(send);
            // From the last part back: each split shrinks the receive buffer.
            for (k, at) in displs(&recv_counts).into_iter().enumerate().rev() {
                let part = recv.split_off(at as usize);
                recv.shrink_to_fit();
                if got[k].is_empty() {
                    got[k] = part;
                } else {
                    got[k].extend_from_slice(&part);
                }
            }
        }
    }

    fn all_gather(&self, mine: &[u64]) -> Vec<Vec<u64>> {
        let n = self.size();
        let mut counts = vec![0 as Count; n];
        self.world
            .all_gather_into(&count(mine.len()), &mut counts[..]);
        let mut all = vec![0u64; counts.iter().map(|&c| c as usize).sum()];
        {
            let d = displs(&counts);
            let mut p = PartitionMut::new(&mut all[..], &counts[..], &d[..]);
            self.world.all_gather_varcount_into(mine, &mut p);
        }
        let mut at = 0;
        counts
            .iter()
            .map(|&c| {
                let part = all[at..at + c as usize].to_vec();
                at += c as usize;
                part
            })
            .collect()
    }

    fn all_sum(&self, v: &mut [u64]) {
        let mine = v.to_vec();
        self.world
            .all_reduce_into(&mine[..], v, SystemOperation::sum());
    }

    fn all_min(&self, v: &mut [u64]) {
        let mine = v.to_vec();
        self.world
            .all_reduce_into(&mine[..], v, SystemOperation::min());
    }

    fn exscan_sum(&self, x: u64) -> u64 {
        let mut out = 0u64;
        self.world
            .exclusive_scan_into(&x, &mut out, SystemOperation::sum());
        // MPI leaves rank 0's result undefined.
        if self.rank() == 0 {
            0
        } else {
            out
        }
    }
}
