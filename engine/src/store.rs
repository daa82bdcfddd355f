//! Where a BFS level's states live: per expansion chunk, in fixed-size blocks recycled through a
//! pool.
//!
//! A chunk of the expansion of level `d` writes the successors that are new to it (its
//! *candidates*) to its own [`ChunkStore`], in order, as they are generated. After the level's
//! claim, the winners among them are the states of level `d + 1`: read from the store (in place,
//! or decoded from a record, below), in canonical order (chunk by chunk, and in order within a chunk, since links grow through a chunk and
//! across chunks). A store is released to the pool as soon as the expansion of level `d + 1` has
//! passed every state in it, so the blocks written by one level are mostly those the previous
//! one gave back: about one level of states is in memory, and fresh pages (a fault and clearing
//! each) are needed only while levels grow.
//!
//! A candidate is built in a scratch state (in the cache). The first state of a block is copied
//! to it whole with non-temporal stores ([`stream_copy`]): it is not read again before the next
//! level, by which time it would have left the caches anyway, so a normal store's read of every
//! destination line (read-for-ownership) would be wasted memory traffic. Where the state type and
//! the CPU allow ([`crate::delta`]), each later state of the block is written as a *record*: the
//! words where it differs from that first one, about a third of the size on trc's model; else
//! whole, like the first.
//!
//! **Spilling** (with [`Spill`], `Options::spill_dir`): the blocks in memory are capped
//! ([`Blocks::set_cap`]). A store that needs a block when none is free and the cap is reached
//! writes its own full block to the spill file (an unlinked temporary file: sequential writes at
//! offsets handed out atomically) and reuses it; a chunk that ends while the cap is reached
//! writes all its blocks out and gives them back. Before an expansion wave reads a store, its
//! written blocks are read back ([`Blocks::load`]) and their file range is freed (a punched
//! hole), so the file holds about one level at a time. A block's bytes are moved as they are
//! (up to its last record), so the results are those of the run in memory.

use std::mem::MaybeUninit;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

use crate::delta::{coded, decode, encode, max_record_bytes, OVERRUN};

/// Bytes of states per block (at most [`MAX_PER_BLOCK`] states, at least one).
const BLOCK_BYTES: usize = 64 << 10;
const MAX_PER_BLOCK: usize = 1024;

/// States per block.
pub(crate) const fn per_block<S>() -> usize {
    let n = BLOCK_BYTES
        / if size_of::<S>() == 0 {
            1
        } else {
            size_of::<S>()
        };
    if n == 0 {
        1
    } else if n > MAX_PER_BLOCK {
        MAX_PER_BLOCK
    } else {
        n
    }
}

/// Bytes of one block's slots.
pub(crate) const fn block_bytes<S>() -> usize {
    per_block::<S>() * size_of::<S>()
}

pub(crate) type Slots<S> = Box<[MaybeUninit<S>]>;

/// A store's block: in memory, or written to the spill file (its first `len` bytes, compressed
/// to the `stored` bytes at `off`).
pub(crate) enum Block<S> {
    Mem(Slots<S>),
    Disk { off: u64, len: usize, stored: usize },
}

/// Free blocks, and how many blocks exist (free or in a store).
pub(crate) struct Pool<S> {
    free: Vec<Slots<S>>,
    allocated: usize,
    /// Blocks allowed in memory while spilling (`usize::MAX` without spilling).
    cap: usize,
    peak: usize,
}

/// The block pool of a check, with its spill file if it has one.
pub(crate) struct Blocks<S> {
    pool: Mutex<Pool<S>>,
    spill: Option<Spill>,
}

fn new_block<S>() -> Slots<S> {
    let per = per_block::<S>();
    let mut v: Vec<MaybeUninit<S>> = Vec::with_capacity(per);
    // SAFETY: `MaybeUninit` needs no initialisation.
    unsafe { v.set_len(per) };
    crate::table::populate(v.as_ptr() as *const u8, size_of_val(&v[..]));
    v.into_boxed_slice()
}

impl<S> Blocks<S> {
    pub(crate) fn new(spill: Option<Spill>) -> Blocks<S> {
        Blocks {
            pool: Mutex::new(Pool {
                free: Vec::new(),
                allocated: 0,
                cap: usize::MAX,
                peak: 0,
            }),
            spill,
        }
    }

    pub(crate) fn spill(&self) -> Option<&Spill> {
        self.spill.as_ref()
    }

    /// Caps the blocks in memory (spilling only): blocks given back beyond it are freed.
    pub(crate) fn set_cap(&self, cap: usize) {
        self.pool.lock().unwrap().cap = cap;
    }

    /// Bytes of the blocks that exist now, and at most so far.
    pub(crate) fn resident_bytes(&self) -> (u64, u64) {
        let p = self.pool.lock().unwrap();
        (
            (p.allocated * block_bytes::<S>()) as u64,
            (p.peak * block_bytes::<S>()) as u64,
        )
    }

    /// A free block, or a new one (allocated and populated outside the lock).
    fn take(&self) -> Slots<S> {
        {
            let mut p = self.pool.lock().unwrap();
            if let Some(b) = p.free.pop() {
                return b;
            }
            p.allocated += 1;
            p.peak = p.peak.max(p.allocated);
        }
        new_block()
    }

    /// Appends a block to `blocks` (whose last block, if any, is full and in memory, with
    /// `last_used` bytes written): a free one; else, when spilling and the cap is reached, the
    /// last block itself once it is written to the spill file; else a new one. Returns whether
    /// it wrote the last block.
    fn next_block(&self, blocks: &mut Vec<Block<S>>, last_used: usize) -> bool {
        let spill = {
            let mut p = self.pool.lock().unwrap();
            if let Some(b) = p.free.pop() {
                drop(p);
                blocks.push(Block::Mem(b));
                return false;
            }
            let own = matches!(blocks.last(), Some(Block::Mem(_)));
            match &self.spill {
                Some(s) if own && p.allocated >= p.cap && !s.failed() => s,
                _ => {
                    p.allocated += 1;
                    p.peak = p.peak.max(p.allocated);
                    drop(p);
                    blocks.push(Block::Mem(new_block()));
                    return false;
                }
            }
        };
        let Some(Block::Mem(b)) = blocks.pop() else {
            unreachable!()
        };
        let len = last_used;
        match spill.write(b.as_ptr() as *const u8, len) {
            Some((off, stored)) => {
                blocks.push(Block::Disk { off, len, stored });
                blocks.push(Block::Mem(b));
                true
            }
            None => {
                // The write failed (recorded): keep the block in memory; the level stops.
                blocks.push(Block::Mem(b));
                blocks.push(Block::Mem(self.take()));
                false
            }
        }
    }

    /// Gives `b` back: to the free list, or to the allocator when more blocks exist than
    /// the cap allows (then returns true).
    fn give_back(&self, b: Slots<S>) -> bool {
        let mut p = self.pool.lock().unwrap();
        if p.allocated > p.cap {
            p.allocated -= 1;
            drop(p);
            drop(b);
            true
        } else {
            p.free.push(b);
            false
        }
    }

    /// Whether blocks are being spilled: a spill file, and the cap reached with none free.
    fn pressed(&self) -> bool {
        self.spill.as_ref().is_some_and(|s| !s.failed()) && {
            let p = self.pool.lock().unwrap();
            p.free.is_empty() && p.allocated >= p.cap
        }
    }

    /// Reads the written blocks of `store` back into memory (and frees their file range).
    /// Returns whether it had any. A read error is recorded in the spill ([`Spill::error`]) and
    /// leaves the block unread (the caller must not use the store then).
    pub(crate) fn load(&self, store: &mut ChunkStore<S>) -> bool {
        if store.disk == 0 {
            return false;
        }
        let spill = self
            .spill
            .as_ref()
            .expect("written blocks without a spill file");
        for blk in store.blocks.iter_mut() {
            if let Block::Disk { off, len, stored } = *blk {
                let b = self.take();
                if !spill.read(off, stored, b.as_ptr() as *mut u8, len) {
                    self.give_back(b);
                    return true;
                }
                spill.punch(off, stored);
                *blk = Block::Mem(b);
                store.disk -= 1;
            }
        }
        true
    }

    /// Frees memory the allocator holds but does not use (after blocks were freed).
    pub(crate) fn trim(&self) {
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        // SAFETY: no preconditions.
        unsafe {
            libc::malloc_trim(0);
        }
    }
}

/// One chunk's candidates, in order: each block's first state whole (its *reference*), the
/// others as records against it when the state type is [`coded`] (see [`crate::delta`]),
/// else whole too.
pub(crate) struct ChunkStore<S> {
    blocks: Vec<Block<S>>,
    /// Per block: bytes written.
    used: Vec<u32>,
    /// Per stored state: its block and byte offset in it, `block << 16 | offset` (a block has
    /// at most 64 KiB, or one state).
    at: Vec<u32>,
    /// Blocks written to the spill file.
    disk: usize,
    /// Every stored state's drop is a no-op ([`crate::Hooks::drop_is_noop`]).
    noop: bool,
}

impl<S> Default for ChunkStore<S> {
    fn default() -> Self {
        ChunkStore {
            blocks: Vec::new(),
            used: Vec::new(),
            at: Vec::new(),
            disk: 0,
            noop: true,
        }
    }
}

/// Where a stored state is: whole at `full`, or, with a `delta` record, `full` is its block's
/// reference and the record says how the state differs from it. Null when its block is in the
/// spill file.
pub(crate) struct Stored<S> {
    full: *const S,
    delta: *const u64,
}

impl<S> Clone for Stored<S> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<S> Copy for Stored<S> {}

impl<S> Stored<S> {
    pub(crate) fn is_null(&self) -> bool {
        self.full.is_null()
    }

    /// The state: in place, or decoded into `scratch` (a bitwise copy, never to be dropped).
    ///
    /// # Safety
    /// Not null, and its store is alive and unchanged while the result is used.
    #[inline(always)]
    pub(crate) unsafe fn read<'a>(&self, scratch: &'a mut MaybeUninit<S>) -> &'a S {
        if self.delta.is_null() {
            // SAFETY: the caller's contract.
            unsafe { &*self.full }
        } else {
            // SAFETY: a record against its block's reference (the caller's contract).
            unsafe {
                decode(self.full, self.delta, scratch);
                scratch.assume_init_ref()
            }
        }
    }

    /// Prefetches what [`Stored::read`] will read first (the reference is shared by the states
    /// of a block and mostly in the cache).
    #[inline(always)]
    pub(crate) fn prefetch(&self) {
        if self.delta.is_null() {
            crate::table::prefetch_bytes(self.full as *const u8, size_of::<S>());
        } else {
            crate::table::prefetch_bytes(self.delta as *const u8, PREFETCH_RECORD);
        }
    }
}

/// Bytes of a record prefetched ahead of its decoding (a typical record's size).
const PREFETCH_RECORD: usize = 256;

impl<S> ChunkStore<S> {
    pub(crate) fn is_empty(&self) -> bool {
        self.at.is_empty()
    }

    pub(crate) fn len(&self) -> usize {
        self.at.len()
    }

    /// Moves the state in `src` to the store (taking a block from `blocks` when needed);
    /// `src` is left uninitialised.
    ///
    /// # Safety
    /// `src` is initialised.
    #[inline]
    pub(crate) unsafe fn push_from(
        &mut self,
        blocks: &Blocks<S>,
        src: &MaybeUninit<S>,
        noop: bool,
    ) {
        let coded = coded::<S>();
        let need = if coded {
            max_record_bytes::<S>() + OVERRUN
        } else {
            size_of::<S>()
        };
        let last = self.used.last().map(|&u| u as usize);
        if last.is_none_or(|u| u + need > block_bytes::<S>()) {
            if blocks.next_block(&mut self.blocks, last.unwrap_or(0)) {
                // The last full block went to the spill file and is being reused.
                self.disk += 1;
            }
            self.used.push(0);
        }
        let bi = self.blocks.len() - 1;
        let Block::Mem(b) = &mut self.blocks[bi] else {
            unreachable!("writing to a spilled block")
        };
        let base = b.as_mut_ptr() as *mut u8;
        let off = self.used[bi] as usize;
        let written = if off == 0 || !coded {
            // SAFETY: `src` is initialised (the caller's contract); `off` is a free slot of a
            // block this store owns (whole states lie at multiples of their size).
            unsafe { stream_copy(src.as_ptr(), base.add(off) as *mut S) };
            size_of::<S>()
        } else {
            // SAFETY: the block's reference is at its start; `off` is 8-byte aligned (records
            // are whole words) with room for any record (checked above).
            unsafe { encode(base as *const S, src.as_ptr(), base.add(off) as *mut u64) }
        };
        self.used[bi] += written as u32;
        assert!(
            bi >> 16 == 0 && off >> 16 == 0,
            "a chunk store of 65536 blocks"
        );
        self.at.push((bi as u32) << 16 | off as u32);
        self.noop &= noop;
    }

    /// At the end of the chunk that wrote this store: while blocks are being spilled, writes
    /// every block still in memory to the spill file (each up to its last state) and gives
    /// them back, for the chunks still running.
    pub(crate) fn finish(&mut self, blocks: &Blocks<S>) {
        if self.at.is_empty() || !blocks.pressed() {
            return;
        }
        let Some(spill) = blocks.spill() else { return };
        stream_fence();
        for (blk, &used) in self.blocks.iter_mut().zip(&self.used) {
            if let Block::Mem(b) = blk {
                let len = used as usize;
                let Some((off, stored)) = spill.write(b.as_ptr() as *const u8, len) else {
                    return;
                };
                let Block::Mem(b) = std::mem::replace(blk, Block::Disk { off, len, stored }) else {
                    unreachable!()
                };
                self.disk += 1;
                blocks.give_back(b);
            }
        }
    }

    /// Where stored state `k` (`k < len`) is, or null if its block is in the spill file.
    #[inline]
    pub(crate) fn get(&self, k: usize) -> Stored<S> {
        let at = self.at[k];
        let (bi, off) = ((at >> 16) as usize, (at & 0xffff) as usize);
        match &self.blocks[bi] {
            Block::Mem(b) => {
                let base = b.as_ptr() as *const u8;
                if off == 0 || !coded::<S>() {
                    Stored {
                        full: base.wrapping_add(off) as *const S,
                        delta: std::ptr::null(),
                    }
                } else {
                    Stored {
                        full: base as *const S,
                        delta: base.wrapping_add(off) as *const u64,
                    }
                }
            }
            Block::Disk { .. } => Stored {
                full: std::ptr::null(),
                delta: std::ptr::null(),
            },
        }
    }

    /// Drops the stored states (unless their drop is a no-op) and gives the blocks back
    /// (those in the spill file are freed there). Returns whether some block was freed.
    pub(crate) fn release(&mut self, blocks: &Blocks<S>) -> bool {
        if !self.noop && std::mem::needs_drop::<S>() && self.disk > 0 {
            // States that own memory are dropped in memory.
            blocks.load(self);
        }
        self.drop_states();
        let mut freed = false;
        for blk in self.blocks.drain(..) {
            match blk {
                Block::Mem(b) => freed |= blocks.give_back(b),
                Block::Disk { off, stored, .. } => {
                    if let Some(s) = blocks.spill() {
                        s.punch(off, stored);
                    }
                }
            }
        }
        self.used.clear();
        self.disk = 0;
        freed
    }

    /// Drops every stored state in memory, last first (a block's reference, its first state,
    /// after the records decoded against it), unless their drop is a no-op; empties the store.
    fn drop_states(&mut self) {
        if !self.noop && std::mem::needs_drop::<S>() {
            let mut tmp = MaybeUninit::<S>::uninit();
            for k in (0..self.at.len()).rev() {
                let st = self.get(k);
                if st.is_null() {
                    continue;
                }
                // SAFETY: stored states are initialised; each is dropped once (the store is
                // emptied below), a record's copy standing for the stored state.
                unsafe {
                    if st.delta.is_null() {
                        std::ptr::drop_in_place(st.full as *mut S);
                    } else {
                        decode(st.full, st.delta, &mut tmp);
                        tmp.assume_init_drop();
                    }
                }
            }
        }
        self.at.clear();
        self.noop = true;
    }
}

impl<S> Drop for ChunkStore<S> {
    fn drop(&mut self) {
        self.drop_states();
    }
}

/// The spill file of a check: created in a private directory (mode 0700) under the directory
/// given, then unlinked at once with its directory, so it takes disk space only while the check
/// runs, whatever way the process ends. Blocks are written LZ4-compressed (states are mostly
/// zero bytes and small numbers: about 1/8 of their size, docs/explanation/performance.md) at offsets
/// rounded to 4 KiB (so a block read back can be freed with a punched hole).
pub(crate) struct Spill {
    file: std::fs::File,
    /// The private directory it was created in (already removed).
    dir: PathBuf,
    next: AtomicU64,
    written: AtomicU64,
    read: AtomicU64,
    stored_written: AtomicU64,
    stored_read: AtomicU64,
    failed: AtomicBool,
    error: Mutex<Option<String>>,
}

const SPILL_ALIGN: u64 = 4096;

std::thread_local! {
    /// A worker's buffers for a block's bytes and its compressed form (written or read back).
    static SPILL_BUF: std::cell::RefCell<(Vec<u8>, Vec<u8>)> =
        const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

/// Why the spill file could not be created (the check then runs without one, and its report
/// says why).
#[derive(Debug, thiserror::Error)]
pub(crate) enum SpillError {
    #[error("spill directory {}: {source}", path.display())]
    Dir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("spill file {}: {source}", path.display())]
    File {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl Spill {
    /// Creates the spill file under `parent` (e.g. `std::env::temp_dir()`, which is `$TMPDIR`
    /// or `/tmp`).
    pub(crate) fn create(parent: &Path) -> Result<Spill, SpillError> {
        use std::os::unix::fs::DirBuilderExt;
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = parent.join(format!(
            "trc-spill-{}-{}-{nanos}",
            std::process::id(),
            SEQ.fetch_add(1, Relaxed)
        ));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .map_err(|source| SpillError::Dir {
                path: dir.clone(),
                source,
            })?;
        let path = dir.join("frontier");
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path);
        let _ = std::fs::remove_file(&path);
        let _ = std::fs::remove_dir(&dir);
        let file = file.map_err(|source| SpillError::File { path, source })?;
        Ok(Spill {
            file,
            dir,
            next: AtomicU64::new(0),
            written: AtomicU64::new(0),
            read: AtomicU64::new(0),
            stored_written: AtomicU64::new(0),
            stored_read: AtomicU64::new(0),
            failed: AtomicBool::new(false),
            error: Mutex::new(None),
        })
    }

    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    pub(crate) fn failed(&self) -> bool {
        self.failed.load(Relaxed)
    }

    pub(crate) fn error(&self) -> Option<String> {
        self.error.lock().unwrap().clone()
    }

    /// State bytes written and read so far.
    pub(crate) fn traffic(&self) -> (u64, u64) {
        (self.written.load(Relaxed), self.read.load(Relaxed))
    }

    /// File bytes (compressed) written and read so far.
    pub(crate) fn file_traffic(&self) -> (u64, u64) {
        (
            self.stored_written.load(Relaxed),
            self.stored_read.load(Relaxed),
        )
    }

    fn fail(&self, what: &str, e: std::io::Error) {
        self.failed.store(true, Relaxed);
        let mut g = self.error.lock().unwrap();
        if g.is_none() {
            *g = Some(format!("spill file in {}: {what}: {e}", self.dir.display()));
        }
    }

    /// Writes the `len` bytes at `src` (a block's states), LZ4-compressed when that makes them
    /// smaller, to a new range of the file; its offset and the bytes stored there (`len`: not
    /// compressed), or `None` after recording the error.
    fn write(&self, src: *const u8, len: usize) -> Option<(u64, usize)> {
        SPILL_BUF.with_borrow_mut(|(raw, buf)| {
            raw.resize(len, 0);
            // SAFETY: `src` is valid for `len` bytes (a block's initialised slots), `raw` has
            // room for them.
            unsafe { copy_frozen(src, raw.as_mut_ptr(), len) };
            buf.resize(lz4_flex::block::get_maximum_output_size(len), 0);
            let data = match lz4_flex::block::compress_into(raw, buf) {
                Ok(n) if n < len => &buf[..n],
                _ => &raw[..],
            };
            let off = self
                .next
                .fetch_add((data.len() as u64).next_multiple_of(SPILL_ALIGN), Relaxed);
            if let Err(e) = std::os::unix::fs::FileExt::write_all_at(&self.file, data, off) {
                self.fail("write", e);
                return None;
            }
            self.written.fetch_add(len as u64, Relaxed);
            self.stored_written.fetch_add(data.len() as u64, Relaxed);
            Some((off, data.len()))
        })
    }

    /// Reads the `stored` bytes at `off` written by [`Spill::write`] and decompresses them into
    /// the `len` bytes at `dst`; false after recording the error.
    fn read(&self, off: u64, stored: usize, dst: *mut u8, len: usize) -> bool {
        // SAFETY: `dst` is valid for `len` bytes (a block's slots, owned by the caller).
        let out = unsafe { std::slice::from_raw_parts_mut(dst, len) };
        let io = |buf: &mut [u8]| std::os::unix::fs::FileExt::read_exact_at(&self.file, buf, off);
        let done = if stored == len {
            io(out)
        } else {
            SPILL_BUF.with_borrow_mut(|(_, buf)| {
                buf.resize(stored, 0);
                io(buf)?;
                match lz4_flex::block::decompress_into(buf, out) {
                    Ok(n) if n == len => Ok(()),
                    Ok(n) => Err(std::io::Error::other(format!(
                        "a block decompressed to {n} bytes, not {len}"
                    ))),
                    Err(e) => Err(std::io::Error::other(e)),
                }
            })
        };
        if let Err(e) = done {
            self.fail("read", e);
            return false;
        }
        self.read.fetch_add(len as u64, Relaxed);
        self.stored_read.fetch_add(stored as u64, Relaxed);
        true
    }

    /// Frees the file range of a block that was read back or released (best effort: where
    /// holes cannot be punched the file only grows).
    fn punch(&self, off: u64, len: usize) {
        let len = (len as u64).next_multiple_of(SPILL_ALIGN);
        // SAFETY: plain system call on our own file.
        unsafe {
            libc::fallocate(
                std::os::unix::io::AsRawFd::as_raw_fd(&self.file),
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                off as libc::off_t,
                len as libc::off_t,
            );
        }
    }
}

/// Copies `*src` to `*dst` with non-temporal stores when the value is large and both are
/// 16-byte aligned (x86-64; 32-byte stores with AVX when the size is a multiple of 256, else
/// 16-byte ones), else with a plain copy. Call [`stream_fence`] before the stores
/// must be visible to other threads.
///
/// # Safety
/// `src` and `dst` are valid for one `T` and do not overlap; `*src` is initialised.
#[inline(always)]
pub(crate) unsafe fn stream_copy<T>(src: *const T, dst: *mut T) {
    #[cfg(target_arch = "x86_64")]
    {
        let n = size_of::<T>();
        let aligned = (src as usize).is_multiple_of(16) && (dst as usize).is_multiple_of(16);
        if n.is_multiple_of(256) && n > 0 && aligned && std::arch::is_x86_feature_detected!("avx") {
            // SAFETY: the caller's contract; the CPU has AVX.
            unsafe { stream_copy_avx(src, dst) };
            return;
        }
        if n >= 256 && n.is_multiple_of(16) && aligned {
            // SAFETY: `n / 16` 16-byte blocks of valid, aligned, non-overlapping memory (the
            // caller's contract), copied 256 bytes per asm block (all sixteen `xmm` registers:
            // two address computations per 256 bytes), then 64, then the rest 16 at a time; the
            // copy is done in assembly, so padding bytes are copied as bytes, as
            // `copy_nonoverlapping` would. `n` is a constant, so the blocks are unrolled: no
            // loop counter or pointer increments between them.
            unsafe {
                let (s, d) = (src.cast::<u8>(), dst.cast::<u8>());
                let mut off = 0;
                while off + 256 <= n {
                    copy_256(s.add(off), d.add(off));
                    off += 256;
                }
                while off + 64 <= n {
                    std::arch::asm!(
                        "movdqa xmm0, [{s}]",
                        "movdqa xmm1, [{s} + 16]",
                        "movdqa xmm2, [{s} + 32]",
                        "movdqa xmm3, [{s} + 48]",
                        "movntdq [{d}], xmm0",
                        "movntdq [{d} + 16], xmm1",
                        "movntdq [{d} + 32], xmm2",
                        "movntdq [{d} + 48], xmm3",
                        s = in(reg) s.add(off),
                        d = in(reg) d.add(off),
                        out("xmm0") _,
                        out("xmm1") _,
                        out("xmm2") _,
                        out("xmm3") _,
                        options(nostack, preserves_flags),
                    );
                    off += 64;
                }
                while off < n {
                    copy_16(s.add(off), d.add(off));
                    off += 16;
                }
            }
            return;
        }
    }
    // SAFETY: the caller's contract.
    unsafe { std::ptr::copy_nonoverlapping(src, dst, 1) };
}

/// [`stream_copy`] with AVX: 32-byte non-temporal stores, 256 bytes per asm block (half the
/// instructions of the 16-byte stores). The destination is 16-byte aligned and 32-byte stores
/// need 32: when it is 16 bytes off, each 256-byte block is a 16-byte store, seven 32-byte
/// ones and a 16-byte one (all VEX-encoded, so no SSE/AVX transitions).
///
/// # Safety
/// `src` and `dst` are 16-byte aligned, valid for one `T` and do not overlap; `*src` is
/// initialised; `size_of::<T>()` is a multiple of 256; the CPU has AVX.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn stream_copy_avx<T>(src: *const T, dst: *mut T) {
    let n = size_of::<T>();
    let (s, d) = (src.cast::<u8>(), dst.cast::<u8>());
    // SAFETY: the caller's contract: `n / 256` blocks within the value, each store aligned
    // to its width (`d` is 16-byte aligned, and 32-byte aligned on the first path).
    unsafe {
        if (d as usize).is_multiple_of(32) {
            for k in 0..n / 256 {
                copy_256_avx(s.add(256 * k), d.add(256 * k));
            }
        } else {
            for k in 0..n / 256 {
                copy_256_avx_off16(s.add(256 * k), d.add(256 * k));
            }
        }
        std::arch::x86_64::_mm256_zeroupper();
    }
}

/// [`stream_copy_avx`]'s 256-byte block to a 32-byte aligned destination: eight 32-byte
/// unaligned loads, then eight non-temporal stores.
///
/// # Safety
/// `s` and `d` are valid for 256 bytes and do not overlap; `d` is 32-byte aligned; AVX.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
#[inline]
unsafe fn copy_256_avx(s: *const u8, d: *mut u8) {
    // SAFETY: the caller's contract.
    unsafe {
        std::arch::asm!(
            "vmovdqu ymm0, [{s}]",
            "vmovdqu ymm1, [{s} + 32]",
            "vmovdqu ymm2, [{s} + 64]",
            "vmovdqu ymm3, [{s} + 96]",
            "vmovdqu ymm4, [{s} + 128]",
            "vmovdqu ymm5, [{s} + 160]",
            "vmovdqu ymm6, [{s} + 192]",
            "vmovdqu ymm7, [{s} + 224]",
            "vmovntdq [{d}], ymm0",
            "vmovntdq [{d} + 32], ymm1",
            "vmovntdq [{d} + 64], ymm2",
            "vmovntdq [{d} + 96], ymm3",
            "vmovntdq [{d} + 128], ymm4",
            "vmovntdq [{d} + 160], ymm5",
            "vmovntdq [{d} + 192], ymm6",
            "vmovntdq [{d} + 224], ymm7",
            s = in(reg) s,
            d = in(reg) d,
            out("ymm0") _,
            out("ymm1") _,
            out("ymm2") _,
            out("ymm3") _,
            out("ymm4") _,
            out("ymm5") _,
            out("ymm6") _,
            out("ymm7") _,
            options(nostack, preserves_flags),
        );
    }
}

/// [`stream_copy_avx`]'s 256-byte block to a destination 16 bytes off 32-byte alignment: a
/// 16-byte store, seven 32-byte ones from `d + 16`, a 16-byte one at `d + 240`.
///
/// # Safety
/// `s` and `d` are valid for 256 bytes and do not overlap; `d + 16` is 32-byte aligned; AVX.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
#[inline]
unsafe fn copy_256_avx_off16(s: *const u8, d: *mut u8) {
    // SAFETY: the caller's contract.
    unsafe {
        std::arch::asm!(
            "vmovdqu xmm0, [{s}]",
            "vmovdqu ymm1, [{s} + 16]",
            "vmovdqu ymm2, [{s} + 48]",
            "vmovdqu ymm3, [{s} + 80]",
            "vmovdqu ymm4, [{s} + 112]",
            "vmovdqu ymm5, [{s} + 144]",
            "vmovdqu ymm6, [{s} + 176]",
            "vmovdqu ymm7, [{s} + 208]",
            "vmovdqu xmm8, [{s} + 240]",
            "vmovntdq [{d}], xmm0",
            "vmovntdq [{d} + 16], ymm1",
            "vmovntdq [{d} + 48], ymm2",
            "vmovntdq [{d} + 80], ymm3",
            "vmovntdq [{d} + 112], ymm4",
            "vmovntdq [{d} + 144], ymm5",
            "vmovntdq [{d} + 176], ymm6",
            "vmovntdq [{d} + 208], ymm7",
            "vmovntdq [{d} + 240], xmm8",
            s = in(reg) s,
            d = in(reg) d,
            out("ymm0") _,
            out("ymm1") _,
            out("ymm2") _,
            out("ymm3") _,
            out("ymm4") _,
            out("ymm5") _,
            out("ymm6") _,
            out("ymm7") _,
            out("ymm8") _,
            options(nostack, preserves_flags),
        );
    }
}

/// One 16-byte aligned load and non-temporal store.
///
/// # Safety
/// `s` and `d` are 16-byte aligned, valid for 16 bytes and do not overlap.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn copy_16(s: *const u8, d: *mut u8) {
    // SAFETY: the caller's contract.
    unsafe {
        std::arch::asm!(
            "movdqa xmm0, [{s}]",
            "movntdq [{d}], xmm0",
            s = in(reg) s,
            d = in(reg) d,
            out("xmm0") _,
            options(nostack, preserves_flags),
        );
    }
}

/// [`stream_copy`]'s 256-byte block: sixteen 16-byte aligned loads, then sixteen non-temporal
/// stores.
///
/// # Safety
/// `s` and `d` are 16-byte aligned, valid for 256 bytes and do not overlap.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn copy_256(s: *const u8, d: *mut u8) {
    // SAFETY: the caller's contract.
    unsafe {
        std::arch::asm!(
            "movdqa xmm0, [{s}]",
            "movdqa xmm1, [{s} + 16]",
            "movdqa xmm2, [{s} + 32]",
            "movdqa xmm3, [{s} + 48]",
            "movdqa xmm4, [{s} + 64]",
            "movdqa xmm5, [{s} + 80]",
            "movdqa xmm6, [{s} + 96]",
            "movdqa xmm7, [{s} + 112]",
            "movdqa xmm8, [{s} + 128]",
            "movdqa xmm9, [{s} + 144]",
            "movdqa xmm10, [{s} + 160]",
            "movdqa xmm11, [{s} + 176]",
            "movdqa xmm12, [{s} + 192]",
            "movdqa xmm13, [{s} + 208]",
            "movdqa xmm14, [{s} + 224]",
            "movdqa xmm15, [{s} + 240]",
            "movntdq [{d}], xmm0",
            "movntdq [{d} + 16], xmm1",
            "movntdq [{d} + 32], xmm2",
            "movntdq [{d} + 48], xmm3",
            "movntdq [{d} + 64], xmm4",
            "movntdq [{d} + 80], xmm5",
            "movntdq [{d} + 96], xmm6",
            "movntdq [{d} + 112], xmm7",
            "movntdq [{d} + 128], xmm8",
            "movntdq [{d} + 144], xmm9",
            "movntdq [{d} + 160], xmm10",
            "movntdq [{d} + 176], xmm11",
            "movntdq [{d} + 192], xmm12",
            "movntdq [{d} + 208], xmm13",
            "movntdq [{d} + 224], xmm14",
            "movntdq [{d} + 240], xmm15",
            s = in(reg) s,
            d = in(reg) d,
            out("xmm0") _,
            out("xmm1") _,
            out("xmm2") _,
            out("xmm3") _,
            out("xmm4") _,
            out("xmm5") _,
            out("xmm6") _,
            out("xmm7") _,
            out("xmm8") _,
            out("xmm9") _,
            out("xmm10") _,
            out("xmm11") _,
            out("xmm12") _,
            out("xmm13") _,
            out("xmm14") _,
            out("xmm15") _,
            options(nostack, preserves_flags),
        );
    }
}

/// Copies `len` bytes from `src` to `dst` in assembly (`rep movsb`), so that `dst` holds
/// initialised bytes even where `src` holds a value's padding: the bytes can then be read as
/// bytes (compressed, sent), which reading the padding in place would not allow. Elsewhere than
/// on x86-64, a plain copy.
///
/// # Safety
/// `src` is valid for reads and `dst` for writes of `len` bytes; they do not overlap.
#[inline]
pub(crate) unsafe fn copy_frozen(src: *const u8, dst: *mut u8, len: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the caller's contract; the direction flag is clear on entry to `asm!`.
    unsafe {
        std::arch::asm!(
            "rep movsb",
            inout("rcx") len => _,
            inout("rsi") src => _,
            inout("rdi") dst => _,
            options(nostack, preserves_flags),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: the caller's contract.
    unsafe {
        std::ptr::copy_nonoverlapping(src, dst, len)
    };
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

#[cfg(test)]
mod tests {
    use super::{stream_copy, stream_fence};

    /// A 16-byte-aligned value of `N` bytes.
    #[repr(C, align(16))]
    struct Bytes<const N: usize>([u8; N]);

    fn copies<const N: usize>() {
        let src = Bytes::<N>(std::array::from_fn(|i| (i * 7 + 3) as u8));
        let mut dst = Bytes::<N>([0; N]);
        // SAFETY: two distinct, aligned, initialised values.
        unsafe { stream_copy(&src, &mut dst) };
        stream_fence();
        assert_eq!(src.0, dst.0, "{N} bytes");
    }

    #[test]
    fn stream_copy_copies_every_size_it_takes() {
        // 64-byte iterations (after 256-byte ones from 256 bytes on), with a 16-byte tail of 1,
        // 2 and 3 blocks, and the fallback.
        copies::<256>();
        copies::<272>();
        copies::<288>();
        copies::<304>();
        copies::<704>();
        copies::<720>();
        // 256-byte blocks, then 64 and 16.
        copies::<768>();
        copies::<1040>();
        copies::<100>();
    }

    /// Copies `N` bytes to a destination 32-byte aligned and to one 16 bytes off (the AVX
    /// path's two phases: 32-byte stores only, or a 16-byte head and tail around them).
    fn copies_at_both_phases<const N: usize>() {
        #[repr(C, align(64))]
        struct Buf<const M: usize>([u8; M]);
        let src = Bytes::<N>(std::array::from_fn(|i| (i * 5 + 1) as u8));
        for off in [0, 16] {
            let mut buf = Buf::<1100>([0; 1100]);
            let dst = buf.0[off..].as_mut_ptr().cast::<Bytes<N>>();
            // SAFETY: `dst` is 16-byte aligned, within `buf` (N + 16 <= 1100) and apart from
            // `src`.
            unsafe { stream_copy(&src, dst) };
            stream_fence();
            assert_eq!(&buf.0[off..off + N], &src.0[..], "{N} bytes at {off}");
            assert!(buf.0[..off]
                .iter()
                .chain(&buf.0[off + N..])
                .all(|&b| b == 0));
        }
    }

    #[test]
    fn stream_copy_copies_at_both_32_byte_phases() {
        copies_at_both_phases::<256>();
        copies_at_both_phases::<288>();
        copies_at_both_phases::<768>();
        copies_at_both_phases::<1056>();
        copies_at_both_phases::<272>();
    }
}
