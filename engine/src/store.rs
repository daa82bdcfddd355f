//! Where a BFS level's states live: per expansion chunk, in fixed-size blocks recycled through a
//! pool.
//!
//! A chunk of the expansion of level `d` writes the successors that are new to it (its
//! *candidates*) to its own [`ChunkStore`], in order, as they are generated. After the level's
//! claim, the winners among them are the states of level `d + 1`: read in place, in canonical
//! order (chunk by chunk, and in order within a chunk, since links grow through a chunk and
//! across chunks). A store is released to the pool as soon as the expansion of level `d + 1` has
//! passed every state in it, so the blocks written by one level are mostly those the previous
//! one gave back: about one level of states is in memory, and fresh pages (a fault and clearing
//! each) are needed only while levels grow.
//!
//! A candidate is built in a scratch state (in the cache) and copied to its slot with
//! non-temporal stores ([`stream_copy`]): it is not read again before the next level, by which
//! time it would have left the caches anyway, so a normal store's read of every destination line
//! (read-for-ownership) would be wasted memory traffic.

#![allow(clippy::manual_is_multiple_of)] // rust-version 1.80

use std::mem::MaybeUninit;
use std::sync::Mutex;

/// Bytes of states per block (at most [`MAX_PER_BLOCK`] states, at least one).
const BLOCK_BYTES: usize = 64 << 10;
const MAX_PER_BLOCK: usize = 1024;

/// States per block.
pub(crate) const fn per_block<S>() -> usize {
    let n = BLOCK_BYTES / if std::mem::size_of::<S>() == 0 { 1 } else { std::mem::size_of::<S>() };
    if n == 0 {
        1
    } else if n > MAX_PER_BLOCK {
        MAX_PER_BLOCK
    } else {
        n
    }
}

pub(crate) type Slots<S> = Box<[MaybeUninit<S>]>;

/// Free blocks.
pub(crate) struct Pool<S> {
    free: Vec<Slots<S>>,
}

impl<S> Pool<S> {
    pub(crate) fn new() -> Pool<S> {
        Pool { free: Vec::new() }
    }

    /// A block from `pool`, or a new one (allocated and populated outside the lock).
    pub(crate) fn take(pool: &Mutex<Pool<S>>) -> Slots<S> {
        if let Some(b) = pool.lock().unwrap().free.pop() {
            return b;
        }
        let per = per_block::<S>();
        let mut v: Vec<MaybeUninit<S>> = Vec::with_capacity(per);
        // SAFETY: `MaybeUninit` needs no initialisation.
        unsafe { v.set_len(per) };
        crate::table::populate(v.as_ptr() as *const u8, std::mem::size_of_val(&v[..]));
        v.into_boxed_slice()
    }
}

/// One chunk's candidates: slots `0..len` (block `k / per`, slot `k % per`) are initialised.
pub(crate) struct ChunkStore<S> {
    blocks: Vec<Slots<S>>,
    len: usize,
    /// Every stored state's drop is a no-op ([`crate::Hooks::drop_is_noop`]).
    noop: bool,
}

impl<S> Default for ChunkStore<S> {
    fn default() -> Self {
        ChunkStore { blocks: Vec::new(), len: 0, noop: true }
    }
}

impl<S> ChunkStore<S> {
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Moves the state in `src` to the next slot (taking a block from `pool` when needed);
    /// `src` is left uninitialised.
    ///
    /// # Safety
    /// `src` is initialised.
    #[inline]
    pub(crate) unsafe fn push_from(&mut self, pool: &Mutex<Pool<S>>, src: &MaybeUninit<S>, noop: bool) {
        let per = per_block::<S>();
        if self.len % per == 0 && self.len / per == self.blocks.len() {
            self.blocks.push(Pool::take(pool));
        }
        let dst = self.blocks[self.len / per][self.len % per].as_mut_ptr();
        // SAFETY: `src` is initialised (the caller's contract); `dst` is a free slot of a block
        // this store owns.
        unsafe { stream_copy(src.as_ptr(), dst) };
        self.len += 1;
        self.noop &= noop;
    }

    /// The address of stored state `k` (`k < len`).
    #[inline]
    pub(crate) fn get(&self, k: usize) -> *const S {
        debug_assert!(k < self.len);
        let per = per_block::<S>();
        self.blocks[k / per][k % per].as_ptr()
    }

    /// Drops the stored states (unless their drop is a no-op) and gives the blocks back.
    pub(crate) fn release(&mut self, pool: &Mutex<Pool<S>>) {
        self.drop_states();
        pool.lock().unwrap().free.append(&mut self.blocks);
    }

    fn drop_states(&mut self) {
        if !self.noop && std::mem::needs_drop::<S>() {
            let per = per_block::<S>();
            for k in 0..self.len {
                // SAFETY: slots `0..len` are initialised; `len` is reset below, so each is
                // dropped once.
                unsafe { self.blocks[k / per][k % per].assume_init_drop() };
            }
        }
        self.len = 0;
        self.noop = true;
    }
}

impl<S> Drop for ChunkStore<S> {
    fn drop(&mut self) {
        self.drop_states();
    }
}

/// Copies `*src` to `*dst` with non-temporal stores when the value is large and both are
/// 16-byte aligned (x86-64), else with a plain copy. Call [`stream_fence`] before the stores
/// must be visible to other threads.
///
/// # Safety
/// `src` and `dst` are valid for one `T` and do not overlap; `*src` is initialised.
#[inline(always)]
pub(crate) unsafe fn stream_copy<T>(src: *const T, dst: *mut T) {
    #[cfg(target_arch = "x86_64")]
    {
        let n = std::mem::size_of::<T>();
        if n >= 256 && n % 16 == 0 && (src as usize) % 16 == 0 && (dst as usize) % 16 == 0 {
            // SAFETY: `n / 16` 16-byte blocks of valid, aligned, non-overlapping memory (the
            // caller's contract); the copy is done in assembly, so padding bytes are copied as
            // bytes, as `copy_nonoverlapping` would.
            unsafe {
                std::arch::asm!(
                    "2:",
                    "movdqa xmm0, [{s}]",
                    "movntdq [{d}], xmm0",
                    "add {s}, 16",
                    "add {d}, 16",
                    "sub {k}, 1",
                    "jnz 2b",
                    s = inout(reg) src => _,
                    d = inout(reg) dst => _,
                    k = inout(reg) n / 16 => _,
                    out("xmm0") _,
                    options(nostack),
                );
            }
            return;
        }
    }
    // SAFETY: the caller's contract.
    unsafe { std::ptr::copy_nonoverlapping(src, dst, 1) };
}

/// Orders the non-temporal stores of [`stream_copy`] before later stores (x86-64 `sfence`).
#[inline(always)]
pub(crate) fn stream_fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a fence has no other effect.
    unsafe {
        std::arch::x86_64::_mm_sfence();
    }
}
