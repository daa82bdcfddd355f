//! A BFS level's states in canonical order, stored in fixed-size blocks that are recycled
//! through a pool.
//!
//! Blocks let the next level be built while the current one is released: the winners are
//! regenerated in canonical order, i.e. by nondecreasing parent rank, so once a wave of them is
//! written, every block of parents below the wave's last parent is no longer needed and goes
//! back to the pool, where the next wave takes its blocks from. The states in memory at any
//! time are about one level's worth instead of two adjacent levels' (with a `Vec` per level,
//! the whole current level had to outlive the whole next one); since every fresh page costs a
//! page fault and clearing, that is also time.

#![allow(clippy::manual_is_multiple_of)] // rust-version 1.80

use std::mem::MaybeUninit;

/// Bytes of states per block (at most [`MAX_PER_BLOCK`] states).
const BLOCK_BYTES: usize = 128 << 10;
/// States per block at most (so that small states still make several blocks per level, the
/// unit of parallel work).
const MAX_PER_BLOCK: usize = 1024;

type Slots<S> = Box<[MaybeUninit<S>]>;

/// Free blocks.
pub(crate) struct Pool<S> {
    free: Vec<Slots<S>>,
    per: usize,
}

impl<S> Pool<S> {
    pub(crate) fn new() -> Pool<S> {
        Pool { free: Vec::new(), per: (BLOCK_BYTES / std::mem::size_of::<S>().max(1)).clamp(1, MAX_PER_BLOCK) }
    }

    /// States per block.
    pub(crate) fn per_block(&self) -> usize {
        self.per
    }

    fn take(&mut self) -> Slots<S> {
        self.free.pop().unwrap_or_else(|| Self::fresh(self.per))
    }

    /// A new block, its pages populated ([`crate::table::populate`]).
    fn fresh(per: usize) -> Slots<S> {
        let mut v: Vec<MaybeUninit<S>> = Vec::with_capacity(per);
        // SAFETY: `MaybeUninit` needs no initialisation.
        unsafe { v.set_len(per) };
        crate::table::populate(v.as_ptr() as *const u8, std::mem::size_of_val(&v[..]));
        v.into_boxed_slice()
    }
}

/// States `0..len` of a level; state `r` is slot `r % per` of block `r / per`.
pub(crate) struct Frontier<S> {
    blocks: Vec<Option<Slots<S>>>,
    /// Per block: every state in it has a no-op drop ([`crate::Hooks::drop_is_noop`]).
    noop: Vec<bool>,
    len: usize,
    per: usize,
    /// Blocks `..released` have gone back to the pool.
    released: usize,
}

impl<S> Frontier<S> {
    pub(crate) fn new(pool: &Pool<S>) -> Frontier<S> {
        Frontier { blocks: Vec::new(), noop: Vec::new(), len: 0, per: pool.per, released: 0 }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// State `r`, which must exist and not be released.
    #[inline(always)]
    pub(crate) fn get(&self, r: usize) -> &S {
        debug_assert!(r < self.len);
        let b = self.blocks[r / self.per].as_ref().expect("frontier block already released");
        // SAFETY: slots `0..len` are initialised (`push_block` requires it).
        unsafe { b[r % self.per].assume_init_ref() }
    }

    /// The states of block `i` (a chunk of work).
    pub(crate) fn block(&self, i: usize) -> &[S] {
        let n = self.per.min(self.len - i * self.per);
        let b = self.blocks[i].as_ref().expect("frontier block already released");
        // SAFETY: slots `0..n` of the block are initialised; `MaybeUninit<S>` has `S`'s layout.
        unsafe { std::slice::from_raw_parts(b.as_ptr() as *const S, n) }
    }

    pub(crate) fn block_count(&self) -> usize {
        self.blocks.len()
    }

    /// `n` empty blocks for the caller to fill and then [`push_block`](Self::push_block).
    /// Blocks the pool lacks are allocated by all workers (clearing fresh pages is the kernel's
    /// work on the faulting thread).
    pub(crate) fn take_blocks(pool: &mut Pool<S>, n: usize) -> Vec<Slots<S>>
    where
        S: Send,
    {
        use rayon::prelude::*;
        let reuse = n.min(pool.free.len());
        let mut v = pool.free.split_off(pool.free.len() - reuse);
        let per = pool.per;
        v.par_extend((reuse..n).into_par_iter().map(|_| Pool::fresh(per)));
        v
    }

    /// Appends a block whose first `filled` slots the caller initialised. Only the last block
    /// may be partly filled.
    pub(crate) fn push_block(&mut self, b: Slots<S>, filled: usize, noop: bool) {
        assert!(self.len % self.per == 0 && filled <= self.per, "only the last frontier block may be partly filled");
        self.blocks.push(Some(b));
        self.noop.push(noop);
        self.len += filled;
    }

    /// Appends one state (used for the initial states).
    pub(crate) fn push(&mut self, pool: &mut Pool<S>, s: S, noop: bool) {
        if self.len % self.per == 0 {
            self.blocks.push(Some(pool.take()));
            self.noop.push(true);
        }
        let i = self.len / self.per;
        self.blocks[i].as_mut().unwrap()[self.len % self.per].write(s);
        self.noop[i] &= noop;
        self.len += 1;
    }

    /// Drops the states of blocks `..upto` (unless their drop is a no-op) and gives the blocks
    /// back to the pool.
    pub(crate) fn release_below(&mut self, upto: usize, pool: &mut Pool<S>)
    where
        S: Send,
    {
        use rayon::prelude::*;
        let upto = upto.min(self.blocks.len());
        if upto <= self.released {
            return;
        }
        let (per, len) = (self.per, self.len);
        let first = self.released;
        let mut freed: Vec<Slots<S>> = self.blocks[first..upto].iter_mut().map(|b| b.take().unwrap()).collect();
        if std::mem::needs_drop::<S>() {
            let noop = &self.noop[first..upto];
            freed.par_iter_mut().zip(noop.par_iter()).enumerate().for_each(|(k, (b, &noop))| {
                if !noop {
                    let n = per.min(len - (first + k) * per);
                    for s in &mut b[..n] {
                        // SAFETY: the first `n` slots of a frontier block are initialised, and
                        // the block has just been taken out of the frontier: dropped once.
                        unsafe { s.assume_init_drop() };
                    }
                }
            });
        }
        pool.free.append(&mut freed);
        self.released = upto;
    }

    /// Releases every block and empties the frontier.
    pub(crate) fn clear(&mut self, pool: &mut Pool<S>)
    where
        S: Send,
    {
        self.release_below(self.blocks.len(), pool);
        self.blocks.clear();
        self.noop.clear();
        self.len = 0;
        self.released = 0;
    }
}

impl<S> Drop for Frontier<S> {
    fn drop(&mut self) {
        if !std::mem::needs_drop::<S>() {
            return;
        }
        for (i, b) in self.blocks.iter_mut().enumerate() {
            if let Some(b) = b {
                let n = self.per.min(self.len - i * self.per);
                for s in &mut b[..n] {
                    // SAFETY: as in `release_below`.
                    unsafe { s.assume_init_drop() };
                }
            }
        }
    }
}
