//! Lock-free open-addressing hash tables keyed by 64-bit fingerprints.
//!
//! Both tables use linear probing and map a fingerprint to its home slot with a
//! multiply-shift ("fastrange"), so capacities need not be powers of two and the
//! visited set can be grown by any factor. Fingerprints are never 0: 0 marks an
//! empty slot.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

// `AtomicU64` is documented to have the same in-memory representation as `u64`;
// on the targets we build for the alignment is the same too (checked here).
const _: () = assert!(align_of::<AtomicU64>() == align_of::<u64>());
const _: () = assert!(size_of::<AtomicU64>() == size_of::<u64>());

/// Maps the pages of `[ptr, ptr + bytes)` now, in one system call (Linux
/// `MADV_POPULATE_WRITE`; elsewhere, or if the kernel refuses, a no-op: the pages then fault in
/// on first write). The tables are written all over right after they are allocated, by all
/// worker threads at once; page faults from two threads in the same fresh mapping contend in
/// the kernel (growing the visited set took longer with 2 threads than with 1).
pub(crate) fn populate(ptr: *const u8, bytes: usize) {
    #[cfg(target_os = "linux")]
    if bytes >= 16 << 10 {
        const PAGE: usize = 4096;
        let start = (ptr as usize).next_multiple_of(PAGE);
        let end = (ptr as usize + bytes) & !(PAGE - 1);
        if end > start {
            // SAFETY: advice on memory this process owns; populating never changes contents
            // (the zeroed pages stay zero).
            unsafe {
                libc::madvise(
                    start as *mut libc::c_void,
                    end - start,
                    libc::MADV_POPULATE_WRITE,
                );
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (ptr, bytes);
}

/// [`populate`] in slices of a few MiB on the current rayon pool: clearing fresh pages is the
/// kernel's work on the calling thread, so one call for a whole table of hundreds of MiB left the
/// other workers idle (a serial phase of the growth of the visited set).
pub(crate) fn populate_parallel(ptr: *const u8, bytes: usize) {
    use rayon::prelude::*;
    const SLICE: usize = 4 << 20;
    let base = ptr as usize;
    (0..bytes.div_ceil(SLICE)).into_par_iter().for_each(|i| {
        let start = i * SLICE;
        populate((base + start) as *const u8, SLICE.min(bytes - start));
    });
}

/// `n` zeroed atomics, allocated with `alloc_zeroed` and populated ([`populate_parallel`]).
pub(crate) fn zeroed_atomics(n: usize) -> Box<[AtomicU64]> {
    let v: Vec<u64> = vec![0u64; n];
    populate_parallel(v.as_ptr() as *const u8, n * 8);
    let mut v = std::mem::ManuallyDrop::new(v);
    // SAFETY: same size and alignment (asserted above), and every bit pattern of a u64
    // is a valid AtomicU64. Ownership of the allocation moves to the new Vec.
    unsafe { Vec::from_raw_parts(v.as_mut_ptr() as *mut AtomicU64, v.len(), v.capacity()) }
        .into_boxed_slice()
}

#[inline(always)]
fn home(fp: u64, cap: usize) -> usize {
    ((fp as u128 * cap as u128) >> 64) as usize
}

/// How many keys ahead the batch loops prefetch a key's home slot: the tables are far larger
/// than the caches, so without it every lookup waits for a cache miss in turn.
pub(crate) const PREFETCH_AHEAD: usize = 8;

/// Hints the CPU to load the cache line holding `slot` (no effect on results).
#[inline(always)]
fn prefetch(slot: &AtomicU64) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults and has no architectural effect.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            slot as *const AtomicU64 as *const i8,
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = slot;
}

/// Hints the CPU to load the cache lines of the `len` bytes at `p` (no effect on results; `p`
/// need not be valid: a prefetch never faults). The frontier is far larger than the caches and
/// a state spans several lines; loading the next state while this one is expanded measurably
/// beats leaving it to the hardware prefetcher (sack seg6 loss2, 2 threads: 0.91 s with it, 1.0
/// s without).
#[inline(always)]
pub(crate) fn prefetch_bytes(p: *const u8, len: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        let mut off = 0;
        while off < len {
            // SAFETY: a prefetch never faults and has no architectural effect.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                    p.wrapping_add(off) as *const i8,
                )
            };
            off += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (p, len);
}

/// The visited set: one `AtomicU64` (the fingerprint) per slot.
pub(crate) struct FpTable {
    slots: Box<[AtomicU64]>,
}

/// Grow when the load factor would exceed this.
pub(crate) const MAX_LOAD: f64 = 0.70;
/// Load factor right after growing.
pub(crate) const GROW_LOAD: f64 = 0.50;

impl FpTable {
    pub(crate) fn with_capacity_for(n: u64) -> Self {
        FpTable {
            slots: zeroed_atomics(Self::capacity_for(n)),
        }
    }

    pub(crate) fn capacity_for(n: u64) -> usize {
        ((n as f64 / GROW_LOAD) as usize).max(64)
    }

    pub(crate) fn bytes(&self) -> u64 {
        (self.slots.len() * 8) as u64
    }

    /// Whether `len` entries fit under the maximal load factor.
    pub(crate) fn fits(&self, len: u64) -> bool {
        (len as f64) <= self.slots.len() as f64 * MAX_LOAD
    }

    /// Prefetches `fp`'s home slot (see [`PREFETCH_AHEAD`]).
    #[inline(always)]
    pub(crate) fn prefetch(&self, fp: u64) {
        prefetch(&self.slots[home(fp, self.slots.len())]);
    }

    #[inline]
    pub(crate) fn contains(&self, fp: u64) -> bool {
        let cap = self.slots.len();
        let mut i = home(fp, cap);
        loop {
            let v = self.slots[i].load(Relaxed);
            if v == fp {
                return true;
            }
            if v == 0 {
                return false;
            }
            i += 1;
            if i == cap {
                i = 0;
            }
        }
    }

    /// Inserts `fp`; returns whether it was absent. Safe to call concurrently.
    /// The caller guarantees the table never becomes full.
    #[inline]
    pub(crate) fn insert(&self, fp: u64) -> bool {
        let cap = self.slots.len();
        let mut i = home(fp, cap);
        loop {
            let mut v = self.slots[i].load(Relaxed);
            if v == 0 {
                match self.slots[i].compare_exchange(0, fp, Relaxed, Relaxed) {
                    Ok(_) => return true,
                    Err(actual) => v = actual,
                }
            }
            if v == fp {
                return false;
            }
            i += 1;
            if i == cap {
                i = 0;
            }
        }
    }

    /// Rehashes into a table of capacity `new_cap` (in parallel on the current rayon pool).
    pub(crate) fn grow_to(&mut self, new_cap: usize) {
        use rayon::prelude::*;
        let new = FpTable {
            slots: zeroed_atomics(new_cap),
        };
        self.slots.par_chunks(1 << 14).for_each(|chunk| {
            for s in chunk {
                let v = s.load(Relaxed);
                if v != 0 {
                    new.insert(v);
                }
            }
        });
        *self = new;
    }
}

/// Per-level claim table: fingerprint -> smallest candidate key (the engine uses the parent
/// link, which orders candidates canonically) that produced it.
/// Two words per slot: the fingerprint and the bitwise NOT of the minimal index
/// (so that the zeroed "empty" value means "no index" and `fetch_max` computes the min).
pub(crate) struct ClaimTable {
    slots: Box<[AtomicU64]>,
    cap: usize,
}

impl ClaimTable {
    /// Bytes allocated now.
    pub(crate) fn bytes(&self) -> u64 {
        (self.slots.len() * 8) as u64
    }

    /// Bytes allocated once [`reset`](Self::reset) has sized the table for `n` claims.
    pub(crate) fn bytes_after_reset(&self, n: usize) -> u64 {
        let need = Self::cap_for(n) * 2;
        let slots = if self.slots.len() < need {
            need.max(self.slots.len() * 2)
        } else {
            self.slots.len()
        };
        (slots * 8) as u64
    }

    fn cap_for(n: usize) -> usize {
        (n * 2).max(16)
    }

    pub(crate) fn new(n: usize) -> Self {
        let cap = Self::cap_for(n);
        ClaimTable {
            slots: zeroed_atomics(cap * 2),
            cap,
        }
    }

    /// Empties the table and sizes it for `n` claims, reusing the allocation when it is big
    /// enough (only the part in use is zeroed, in parallel on the current rayon pool).
    pub(crate) fn reset(&mut self, n: usize) {
        use rayon::prelude::*;
        let cap = Self::cap_for(n);
        if self.slots.len() < cap * 2 {
            // Grow in place (`realloc`, i.e. `mremap` for a buffer this size: the pages already
            // touched are kept; a fresh allocation would fault on every page again), with room
            // to spare so that a growing BFS reallocates only every few levels.
            let mut v = std::mem::take(&mut self.slots).into_vec();
            let want = (cap * 2).max(v.len() * 2); // as in `bytes_after_reset`
            v.reserve_exact(want - v.len());
            // The new part's pages are touched by all workers (see `populate_parallel`); it is
            // zeroed below with the rest of the part in use, and beyond that here.
            let add = want - v.len();
            let spare = &mut v.spare_capacity_mut()[..add];
            populate_parallel(spare.as_ptr() as *const u8, size_of_val(spare));
            spare.par_chunks_mut(1 << 15).for_each(|c| {
                for s in c {
                    s.write(AtomicU64::new(0));
                }
            });
            // SAFETY: every slot up to `want` was just initialised.
            unsafe { v.set_len(want) };
            self.slots = v.into_boxed_slice();
        }
        self.slots[..cap * 2].par_chunks(1 << 15).for_each(|c| {
            for s in c {
                s.store(0, Relaxed);
            }
        });
        self.cap = cap;
    }

    /// Prefetches `fp`'s home slot (see [`PREFETCH_AHEAD`]).
    #[inline(always)]
    pub(crate) fn prefetch(&self, fp: u64) {
        prefetch(&self.slots[2 * home(fp, self.cap)]);
    }

    /// The slot of `fp` and whether this call inserted it.
    #[inline]
    fn slot_of(&self, fp: u64, insert: bool) -> (usize, bool) {
        let mut i = home(fp, self.cap);
        loop {
            let mut v = self.slots[2 * i].load(Relaxed);
            if v == 0 && insert {
                match self.slots[2 * i].compare_exchange(0, fp, Relaxed, Relaxed) {
                    Ok(_) => return (i, true),
                    Err(actual) => v = actual,
                }
            }
            if v == fp {
                return (i, false);
            }
            debug_assert!(v != 0, "claim lookup of an unclaimed fingerprint");
            i += 1;
            if i == self.cap {
                i = 0;
            }
        }
    }

    /// Records that candidate `idx` reached `fp`; the minimal index wins. Returns whether `fp`
    /// was new to the table (exactly one claim of each fingerprint returns true).
    #[inline]
    pub(crate) fn claim(&self, fp: u64, idx: u64) -> bool {
        let (i, fresh) = self.slot_of(fp, true);
        self.slots[2 * i + 1].fetch_max(!idx, Relaxed);
        fresh
    }

    /// Slot ranges that together cover the table, for a parallel [`retain_in`](Self::retain_in).
    pub(crate) fn scan_chunks(&self) -> Vec<(usize, usize)> {
        const CHUNK: usize = 1 << 13;
        (0..self.cap)
            .step_by(CHUNK)
            .map(|a| (a, (a + CHUNK).min(self.cap)))
            .collect()
    }

    /// Calls `f(fp, fp of the entry PREFETCH_AHEAD entries later)` for every claimed slot in
    /// `range` (the second argument is for prefetching); where `f` returns false, the slot's
    /// claim is dropped (no candidate wins it).
    #[inline]
    pub(crate) fn retain_in(
        &self,
        range: (usize, usize),
        mut f: impl FnMut(u64, Option<u64>) -> bool,
    ) {
        let words = &self.slots[2 * range.0..2 * range.1];
        let n = range.1 - range.0;
        for k in 0..n {
            let fp = words[2 * k].load(Relaxed);
            if fp != 0 {
                let ahead = if k + PREFETCH_AHEAD < n {
                    Some(words[2 * (k + PREFETCH_AHEAD)].load(Relaxed)).filter(|&x| x != 0)
                } else {
                    None
                };
                if !f(fp, ahead) {
                    words[2 * k + 1].store(0, Relaxed);
                }
            }
        }
    }

    /// The winning (minimal) candidate index for `fp`; `fp` must have been claimed. After
    /// [`retain_in`](Self::retain_in) dropped `fp`, `u64::MAX` (no candidate's index).
    #[inline]
    pub(crate) fn winner(&self, fp: u64) -> u64 {
        let (i, _) = self.slot_of(fp, false);
        !self.slots[2 * i + 1].load(Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fp_table_insert_contains_grow() {
        let mut t = FpTable::with_capacity_for(10);
        for fp in 1..=40u64 {
            assert!(t.insert(fp.wrapping_mul(0x9E37_79B9_7F4A_7C15)));
        }
        assert!(!t.insert(3u64.wrapping_mul(0x9E37_79B9_7F4A_7C15)));
        t.grow_to(1000);
        for fp in 1..=40u64 {
            assert!(t.contains(fp.wrapping_mul(0x9E37_79B9_7F4A_7C15)));
        }
        assert!(!t.contains(12345));
    }

    #[test]
    fn claim_table_min_wins() {
        let c = ClaimTable::new(8);
        c.claim(77, 5);
        c.claim(77, 2);
        c.claim(77, 9);
        c.claim(u64::MAX, 0);
        assert_eq!(c.winner(77), 2);
        assert_eq!(c.winner(u64::MAX), 0);
    }
}
