//! The parallel level-synchronous engine (see the crate docs for the design).

use std::hash::Hash;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::Instant;

use rayon::prelude::*;
use stateright::{Expectation, Model, Property};

use crate::store::{stream_fence, ChunkStore, Pool};
use crate::table::{prefetch_value, ClaimTable, FpTable, PREFETCH_AHEAD};
use crate::{
    build_properties, fingerprint, is_hit, path_from_indices, Hooks, Options, Progress, Report, StopReason, ACTION_BITS,
    ACTION_MASK,
};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    /// Check properties and generate the next level.
    Expand,
    /// At `max_depth`: check properties and only look for an unvisited successor.
    Probe,
    /// After `max_states` cut this level: check properties only.
    CheckOnly,
}

/// A frontier state: its address in a [`ChunkStore`] of the current level.
#[derive(Clone, Copy)]
struct StatePtr<S>(*const S);
// SAFETY: a frontier state is only read while its store is alive (a store is released only
// after every chunk that reads from it has finished), so sharing the address is sharing `&S`.
unsafe impl<S: Sync> Send for StatePtr<S> {}
unsafe impl<S: Sync> Sync for StatePtr<S> {}

/// Per-chunk output of the expand phase. Candidates are the chunk's successors that were new to
/// the chunk, in `(parent rank, action index)` order: their fingerprints, their parent links
/// (`parent rank << ACTION_BITS | action index`, which is also their canonical order key) and,
/// in `store`, their states (candidate `k` is slot `k` of the store).
struct ChunkOut<S> {
    fps: Vec<u64>,
    links: Vec<u64>,
    store: ChunkStore<S>,
    /// Candidate indices of the winners (after the select step), in order.
    winners: Vec<u32>,
    transitions: u64,
    /// Per property: first rank in this chunk that is a hit.
    hits: Vec<Option<usize>>,
}

/// Slots of [`Seen`]; it takes at most half as many fingerprints.
const SEEN_SLOTS: usize = 4096;

/// The candidate fingerprints of the chunk being expanded (open addressing, 0 = empty; on the
/// worker's stack): a successor already generated in this chunk is dropped before it is stored
/// (its first occurrence has the smaller link: links grow through a chunk). Most of a level's
/// duplicates are near each other (siblings reached by commuting events).
struct Seen {
    slots: [u64; SEEN_SLOTS],
    len: usize,
}

impl Seen {
    /// Whether `fp` is new to this chunk (recording it while there is room; once the set is
    /// half full, fingerprints not in it count as new).
    #[inline]
    fn first(&mut self, fp: u64) -> bool {
        let mask = SEEN_SLOTS - 1;
        let mut i = (fp >> 52) as usize & mask;
        loop {
            match self.slots[i] {
                0 => {
                    if self.len < SEEN_SLOTS / 2 {
                        self.slots[i] = fp;
                        self.len += 1;
                    }
                    return true;
                }
                x if x == fp => return false,
                _ => i = (i + 1) & mask,
            }
        }
    }
}

/// Bytes per candidate besides its state (fingerprint + link).
const CAND_BYTES: u64 = 16;

impl<S> Default for ChunkOut<S> {
    fn default() -> Self {
        ChunkOut { fps: Vec::new(), links: Vec::new(), store: ChunkStore::default(), winners: Vec::new(), transitions: 0, hits: Vec::new() }
    }
}

impl<S> ChunkOut<S> {
    fn reset(&mut self, props: usize) {
        self.fps.clear();
        self.links.clear();
        self.winners.clear();
        self.transitions = 0;
        self.hits.clear();
        self.hits.resize(props, None);
    }

    /// Claims each candidate's fingerprint with its link (the minimal link wins); returns how
    /// many of the fingerprints were new to the table.
    fn claim_all(&self, claim: &ClaimTable) -> u64 {
        let n = self.fps.len();
        let mut fresh = 0u64;
        for k in 0..n {
            if k + PREFETCH_AHEAD < n {
                claim.prefetch(self.fps[k + PREFETCH_AHEAD]);
            }
            fresh += claim.claim(self.fps[k], self.links[k]) as u64;
        }
        fresh
    }

    /// Appends to `winners`, in order, the candidates that hold their fingerprint's claim (no
    /// candidate holds the claim of a fingerprint that was already visited).
    fn select_winners(&mut self, claim: &ClaimTable) {
        let n = self.fps.len();
        for k in 0..n {
            if k + PREFETCH_AHEAD < n {
                claim.prefetch(self.fps[k + PREFETCH_AHEAD]);
            }
            if claim.winner(self.fps[k]) == self.links[k] {
                self.winners.push(u32::try_from(k).expect("more than 2^32 candidates in one chunk"));
            }
        }
    }
}

/// Keeps the first `take` winners of `outs` (in chunk order; they must number at least `take`)
/// and returns the index in the next frontier at which each chunk's winners begin.
fn truncate_winners<S>(outs: &mut [ChunkOut<S>], take: usize) -> Vec<usize> {
    let mut starts = Vec::with_capacity(outs.len());
    let mut acc = 0usize;
    for o in outs.iter_mut() {
        starts.push(acc);
        let k = o.winners.len().min(take - acc);
        o.winners.truncate(k);
        acc += k;
    }
    starts
}

/// Writes the winners of `outs` (`take` in all), in order: their addresses to `ptrs` and their
/// links to `links`. Both vectors are empty with room for `take`; each chunk writes its own part
/// of them, on the thread pool.
fn gather_winners<S: Sync>(outs: &[ChunkOut<S>], take: usize, ptrs: &mut Vec<StatePtr<S>>, links: &mut Vec<u64>) {
    debug_assert!(ptrs.is_empty() && links.is_empty());
    {
        let ps = &mut ptrs.spare_capacity_mut()[..take];
        let ls = &mut links.spare_capacity_mut()[..take];
        let mut parts = Vec::with_capacity(outs.len());
        let (mut pr, mut lr) = (ps, ls);
        for o in outs {
            let (p, p2) = std::mem::take(&mut pr).split_at_mut(o.winners.len());
            let (l, l2) = std::mem::take(&mut lr).split_at_mut(o.winners.len());
            parts.push((p, l));
            pr = p2;
            lr = l2;
        }
        parts.into_par_iter().zip(outs.par_iter()).with_max_len(1).for_each(|((p, l), o)| {
            for ((p, l), &k) in p.iter_mut().zip(l.iter_mut()).zip(&o.winners) {
                p.write(StatePtr(o.store.get(k as usize)));
                l.write(o.links[k as usize]);
            }
        });
    }
    // SAFETY: the `take` slots of both vectors were split among the chunks (their winner counts
    // sum to `take`) and every part was written in full.
    unsafe {
        ptrs.set_len(take);
        links.set_len(take);
    }
}

struct Ctx<'a, M: Model, F> {
    model: &'a M,
    hooks: &'a F,
    props: &'a [Property<M>],
    active: &'a [bool],
    table: &'a FpTable,
    pool: &'a Mutex<Pool<M::State>>,
    mode: Mode,
    /// Candidates allowed by the memory budget in this level.
    cand_limit: Option<u64>,
    cand_count: AtomicU64,
    over_budget: AtomicBool,
    probe_found: AtomicBool,
}

const FLUSH: u64 = 1 << 10;
/// Expansion chunks per wave (see step 1 in `run`).
const WAVE_CHUNKS: usize = 32;

impl<M: Model, F: Hooks<M>> Ctx<'_, M, F> {
    fn flush(&self, pending: &mut u64) {
        if *pending == 0 {
            return;
        }
        let total = self.cand_count.fetch_add(*pending, Relaxed) + *pending;
        *pending = 0;
        if self.cand_limit.is_some_and(|l| total > l) {
            self.over_budget.store(true, Relaxed);
        }
    }

    /// Expands frontier states `base..base + chunk.len()` into `out`: checks the properties on
    /// each state, then, by the level's [`Mode`], probes it or stores its chunk-new successors
    /// (while the level is within its candidate budget, which is counted here in batches of
    /// [`FLUSH`]).
    fn expand_chunk(&self, base: usize, chunk: &[StatePtr<M::State>], out: &mut ChunkOut<M::State>) {
        out.reset(self.props.len());
        debug_assert!(out.store.is_empty());
        let mut actions = Vec::new();
        // Successors are built here (in the cache), fingerprinted, and streamed to the store if
        // they are new to the chunk.
        let mut scratch_box = Aligned(MaybeUninit::<M::State>::uninit());
        let scratch = &mut scratch_box.0;
        let mut seen = Seen { slots: [0; SEEN_SLOTS], len: 0 };
        let mut pending = 0u64;
        for (j, p) in chunk.iter().enumerate() {
            let rank = base + j;
            if let Some(ahead) = chunk.get(j + 1) {
                // SAFETY: a frontier address (see `StatePtr`).
                prefetch_value(unsafe { &*ahead.0 });
            }
            // SAFETY: a frontier address (see `StatePtr`).
            let state = unsafe { &*p.0 };
            self.check_properties(rank, state, out);
            match self.mode {
                Mode::CheckOnly => {}
                Mode::Probe => {
                    if !self.probe_found.load(Relaxed) && self.probe(state, scratch, &mut actions) {
                        self.probe_found.store(true, Relaxed);
                    }
                }
                Mode::Expand => {
                    if self.over_budget.load(Relaxed) {
                        continue;
                    }
                    let before = out.fps.len();
                    self.expand_state(rank, state, out, &mut seen, scratch, &mut actions);
                    if self.cand_limit.is_some() {
                        pending += (out.fps.len() - before) as u64;
                        if pending >= FLUSH {
                            self.flush(&mut pending);
                        }
                    }
                }
            }
        }
        stream_fence();
        self.flush(&mut pending);
    }

    /// Records in `out.hits` every property not hit in an earlier level that frontier state
    /// `rank` hits, unless an earlier state of the chunk already did (the chunk's first hit is
    /// its smallest rank).
    #[inline(always)]
    fn check_properties(&self, rank: usize, state: &M::State, out: &mut ChunkOut<M::State>) {
        for (i, p) in self.props.iter().enumerate() {
            if self.active[i] && out.hits[i].is_none() && is_hit(self.model, p, state) {
                out.hits[i] = Some(rank);
            }
        }
    }

    /// Probe (a state at `max_depth`): whether `state` has an in-boundary successor that is not
    /// in the visited set, i.e. whether the depth limit cut off a state. Each successor is built
    /// in `scratch` and dropped at once; nothing is stored.
    #[inline(always)]
    fn probe(&self, state: &M::State, scratch: &mut MaybeUninit<M::State>, actions: &mut Vec<M::Action>) -> bool {
        let (model, hooks) = (self.model, self.hooks);
        actions.clear();
        model.actions(state, actions);
        for a in actions.drain(..) {
            if !hooks.next_state_into(model, state, a, scratch) {
                continue;
            }
            // SAFETY: `next_state_into` returned true: `scratch` is initialised; it is dropped
            // right after this use.
            let next = unsafe { scratch.assume_init_ref() };
            let found = model.within_boundary(next) && !self.table.contains(hooks.fingerprint(next));
            unsafe { scratch.assume_init_drop() };
            if found {
                return true;
            }
        }
        false
    }

    /// Expand (one state): generates the successors of frontier state `rank` in action order,
    /// counts the in-boundary ones as transitions and appends those new to the chunk (see
    /// [`Seen`]) to `out` as candidates: fingerprint, link and the state itself, moved from
    /// `scratch` to the chunk's store.
    #[inline(always)]
    fn expand_state(
        &self,
        rank: usize,
        state: &M::State,
        out: &mut ChunkOut<M::State>,
        seen: &mut Seen,
        scratch: &mut MaybeUninit<M::State>,
        actions: &mut Vec<M::Action>,
    ) {
        let (model, hooks) = (self.model, self.hooks);
        assert!((rank as u64) >> (64 - ACTION_BITS) == 0, "BFS level too wide");
        let link = (rank as u64) << ACTION_BITS;
        actions.clear();
        model.actions(state, actions);
        for (ai, a) in actions.drain(..).enumerate() {
            if !hooks.next_state_into(model, state, a, scratch) {
                continue;
            }
            // SAFETY: `next_state_into` returned true: `scratch` is initialised.
            let next = unsafe { scratch.assume_init_ref() };
            let keep = if model.within_boundary(next) {
                out.transitions += 1;
                assert!(ai as u64 <= ACTION_MASK, "more than 2^24 actions in one state");
                let fp = hooks.fingerprint(next);
                seen.first(fp).then_some(fp)
            } else {
                None
            };
            match keep {
                Some(fp) => {
                    out.fps.push(fp);
                    out.links.push(link | ai as u64);
                    let noop = hooks.drop_is_noop(next);
                    // SAFETY: `scratch` is initialised; its state moves to the store and
                    // `scratch` is uninitialised again.
                    unsafe { out.store.push_from(self.pool, scratch, noop) };
                }
                None => {
                    if !hooks.drop_is_noop(next) {
                        // SAFETY: initialised, dropped once.
                        unsafe { scratch.assume_init_drop() };
                    }
                }
            }
        }
    }
}

/// Checks `model` exhaustively with the parallel engine. See the crate docs for the semantics;
/// the result (apart from `elapsed`) does not depend on `opts.threads`. States are
/// fingerprinted through their `Hash` ([`crate::fingerprint`]).
pub fn check<M>(model: &M, opts: &Options, progress: Option<&(dyn Fn(&Progress) + Sync)>) -> Report<M::Action>
where
    M: Model + Sync,
    M::State: Hash + Send + Sync,
    M::Action: Send + Sync + Clone,
{
    check_with(model, opts, progress, fingerprint::<M::State>)
}

/// [`check`] with the model's own fingerprint function (and, optionally, an in-place successor
/// function: see [`Hooks`]) instead of the state's `Hash` and [`Model::next_state`].
///
/// The fingerprint must be deterministic, give equal states equal fingerprints and different
/// states different ones with 64-bit-hash quality (a collision merges two states). The report is
/// the same as [`check`]'s (the canonical order depends on parent ranks and action indices, not on
/// fingerprint values), barring a collision.
pub fn check_with<M, H>(
    model: &M,
    opts: &Options,
    progress: Option<&(dyn Fn(&Progress) + Sync)>,
    hooks: H,
) -> Report<M::Action>
where
    M: Model + Sync,
    M::State: Send + Sync,
    M::Action: Send + Sync + Clone,
    H: Hooks<M>,
{
    let threads = match opts.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("trc-bfs-{i}"))
        .build()
        .expect("failed to build the rayon thread pool");
    let hooks = NonZeroFp(hooks);
    let hooks = &hooks;
    pool.install(|| run(model, opts, progress, hooks))
}

/// The hooks with fingerprint 0 mapped to 1 (0 marks an empty table slot).
struct NonZeroFp<H>(H);

impl<M: Model, H: Hooks<M>> Hooks<M> for NonZeroFp<H> {
    #[inline(always)]
    fn fingerprint(&self, s: &M::State) -> u64 {
        match self.0.fingerprint(s) {
            0 => 1,
            x => x,
        }
    }
    #[inline(always)]
    fn next_state_into(&self, model: &M, s: &M::State, a: M::Action, out: &mut MaybeUninit<M::State>) -> bool {
        self.0.next_state_into(model, s, a, out)
    }
    #[inline(always)]
    fn drop_is_noop(&self, s: &M::State) -> bool {
        self.0.drop_is_noop(s)
    }
}

/// A value aligned for [`stream_copy`](crate::store::stream_copy)'s fast path.
#[repr(C, align(64))]
struct Aligned<T>(MaybeUninit<T>);

/// Frontier states per expansion chunk for a level of `n` states. It must not depend on the
/// thread count: the per-chunk dedup, and so the candidate counts and memory estimates, depend
/// on the chunk boundaries.
fn chunk_len(n: usize) -> usize {
    n.div_ceil(16).clamp(1, 512)
}

fn run<M, F>(
    model: &M,
    opts: &Options,
    progress: Option<&(dyn Fn(&Progress) + Sync)>,
    hooks: &F,
) -> Report<M::Action>
where
    M: Model + Sync,
    M::State: Send + Sync,
    M::Action: Send + Sync + Clone,
    F: Hooks<M>,
{
    let start = Instant::now();
    let props = model.properties();
    let state_bytes = (std::mem::size_of::<M::State>() + opts.state_heap_bytes) as u64;
    let budget = opts.max_memory_bytes;
    let pool: Mutex<Pool<M::State>> = Mutex::new(Pool::new());

    // Level 0.
    let inits = model.init_states();
    let mut table = FpTable::with_capacity_for(inits.len() as u64);
    let mut init_out: ChunkOut<M::State> = ChunkOut::default();
    let mut init_index: Vec<usize> = Vec::new();
    let mut cut = false;
    for (i, s) in inits.into_iter().enumerate() {
        if !model.within_boundary(&s) {
            continue;
        }
        let fp = hooks.fingerprint(&s);
        if table.contains(fp) {
            continue;
        }
        if opts.max_states.is_some_and(|m| init_out.store.len() as u64 >= m) {
            cut = true;
            continue;
        }
        table.insert(fp);
        let noop = hooks.drop_is_noop(&s);
        let src = Aligned(MaybeUninit::new(s));
        // SAFETY: `src` is initialised; its state moves to the store (a `MaybeUninit` is never
        // dropped).
        unsafe { init_out.store.push_from(&pool, &src.0, noop) };
        init_index.push(i);
    }
    stream_fence();
    let mut frontier: Vec<StatePtr<M::State>> = (0..init_out.store.len()).map(|k| StatePtr(init_out.store.get(k))).collect();
    // The frontier array of the previous level, reused for the next one (fresh pages cost).
    let mut spare_ptrs: Vec<StatePtr<M::State>> = Vec::new();
    // The stores holding the frontier, and the frontier index where each one's states begin.
    let mut fstores: Vec<ChunkOut<M::State>> = vec![init_out];
    let mut fstart: Vec<usize> = vec![0];
    // The chunk outputs the level being expanded writes to (reused from level to level).
    let mut outs: Vec<ChunkOut<M::State>> = Vec::new();
    let mut claim = ClaimTable::new(0);
    let mut unique = frontier.len() as u64;
    let mut transitions = 0u64;
    let mut depth = 0usize;
    // links[d - 1][rank] = parent link of the state of depth d and this rank.
    let mut links: Vec<Vec<u64>> = Vec::new();
    let mut link_count = 0u64;
    // First hit of each property: (depth, rank).
    let mut hits: Vec<Option<(usize, usize)>> = vec![None; props.len()];

    // Memory is estimated from counts that do not depend on the thread count: the visited set,
    // the links, and each frontier state's slot and address.
    let base_memory = |table: &FpTable, link_count: u64, frontier_len: usize| {
        table.bytes() + (link_count + init_index.len() as u64) * 8 + frontier_len as u64 * (8 + state_bytes)
    };
    let mut peak = base_memory(&table, link_count, frontier.len());
    let report_progress = |depth: usize, frontier: usize, unique: u64, transitions: u64, mem: u64| {
        if let Some(cb) = progress {
            cb(&Progress {
                depth,
                frontier: frontier as u64,
                unique_states: unique,
                transitions,
                elapsed: start.elapsed(),
                memory_bytes: mem,
            });
        }
    };
    report_progress(0, frontier.len(), unique, 0, peak);

    let stop = loop {
        let mode = if cut {
            Mode::CheckOnly
        } else if opts.max_depth == Some(depth) {
            Mode::Probe
        } else {
            Mode::Expand
        };
        let base = base_memory(&table, link_count, frontier.len());
        let active: Vec<bool> = hits.iter().map(|h| h.is_none()).collect();
        let ctx = Ctx {
            model,
            hooks,
            props: &props,
            active: &active,
            table: &table,
            pool: &pool,
            mode,
            cand_limit: budget.map(|b| b.saturating_sub(base) / (CAND_BYTES + state_bytes)),
            cand_count: AtomicU64::new(0),
            over_budget: AtomicBool::new(base > budget.unwrap_or(u64::MAX)),
            probe_found: AtomicBool::new(false),
        };

        // 1. Expand, in waves of WAVE_CHUNKS chunks: after each wave, the stores whose states
        // all lie before the next wave are released (their blocks are then reused by the next
        // waves' stores).
        let n = frontier.len();
        let chunk = chunk_len(n);
        let nchunks = n.div_ceil(chunk);
        if outs.len() < nchunks {
            outs.resize_with(nchunks, ChunkOut::default);
        }
        let mut released = 0usize;
        for w0 in (0..nchunks).step_by(WAVE_CHUNKS) {
            let w1 = nchunks.min(w0 + WAVE_CHUNKS);
            let fr = &frontier[..];
            outs[w0..w1].par_iter_mut().enumerate().with_max_len(1).for_each(|(k, o)| {
                let lo = (w0 + k) * chunk;
                ctx.expand_chunk(lo, &fr[lo..n.min(lo + chunk)], o)
            });
            let done = n.min(w1 * chunk);
            let mut upto = released;
            while upto < fstores.len() && fstart.get(upto + 1).map_or(n, |&e| e) <= done {
                upto += 1;
            }
            fstores[released..upto].par_iter_mut().with_max_len(1).for_each(|o| o.store.release(&pool));
            released = upto;
        }
        let outs_l = &mut outs[..nchunks];

        for (i, h) in hits.iter_mut().enumerate() {
            if h.is_none() {
                if let Some(rank) = outs_l.iter().filter_map(|o| o.hits[i]).min() {
                    *h = Some((depth, rank));
                }
            }
        }
        let violated = props.iter().zip(&hits).any(|(p, h)| p.expectation == Expectation::Always && h.is_some());
        if opts.fail_fast && violated {
            break StopReason::FailFast;
        }
        match mode {
            Mode::CheckOnly => break StopReason::MaxStates,
            Mode::Probe if ctx.probe_found.load(Relaxed) => break StopReason::MaxDepth,
            Mode::Probe => break StopReason::Complete,
            Mode::Expand => {}
        }
        if ctx.over_budget.load(Relaxed) {
            break StopReason::MemoryBudget;
        }
        let level_transitions: u64 = outs_l.iter().map(|o| o.transitions).sum();
        let total: usize = outs_l.iter().map(|o| o.fps.len()).sum();
        let cand_mem = base + total as u64 * (CAND_BYTES + state_bytes);
        peak = peak.max(cand_mem);
        transitions += level_transitions;
        if total == 0 {
            break StopReason::Complete;
        }

        // 2. Claim: the minimal link (= the first discoverer in canonical order) wins each
        // fingerprint.
        let claim_mem = cand_mem + claim.bytes_after_reset(total);
        if budget.is_some_and(|b| claim_mem > b) {
            break StopReason::MemoryBudget;
        }
        peak = peak.max(claim_mem);
        claim.reset(total);
        let distinct: u64 = outs_l
            .par_iter()
            .with_max_len(1)
            .map(|o| o.claim_all(&claim))
            .sum();

        // 3. Each distinct fingerprint is inserted into the visited set (which must first fit
        // all of them); one that was already there loses its claim.
        let grow_len = unique + distinct;
        let grow = !table.fits(grow_len);
        let table_after = if grow { FpTable::capacity_for(grow_len) as u64 * 8 } else { 0 };
        let select_mem = claim_mem + table_after;
        if budget.is_some_and(|b| select_mem > b) {
            break StopReason::MemoryBudget;
        }
        peak = peak.max(select_mem);
        if grow {
            table.grow_to(FpTable::capacity_for(grow_len));
        }
        {
            let t = &table;
            let c = &claim;
            claim.scan_chunks().into_par_iter().with_max_len(1).for_each(|range| {
                c.retain_in(range, |fp, next_fp| {
                    if let Some(f) = next_fp {
                        t.prefetch(f);
                    }
                    t.insert(fp)
                });
            });
        }

        // 4. Select: a candidate is a new state iff it holds its fingerprint's claim; the
        // chunks' winners, in order, are the next level in canonical order.
        outs_l.par_iter_mut().with_max_len(1).for_each(|o| o.select_winners(&claim));
        let winners: u64 = outs_l.iter().map(|o| o.winners.len() as u64).sum();
        if winners == 0 {
            break StopReason::Complete;
        }
        let room = opts.max_states.map_or(u64::MAX, |m| m.saturating_sub(unique));
        let take = winners.min(room);
        cut = winners > room;
        if take == 0 {
            break StopReason::MaxStates;
        }

        // 5. Commit: the winners (the first `take` of them) become the frontier, read in place
        // from the chunk stores; their links become the level's link array.
        let starts = truncate_winners(outs_l, take as usize);
        let mut next_ptrs = std::mem::take(&mut spare_ptrs);
        next_ptrs.clear();
        next_ptrs.reserve(take as usize);
        let mut level_links: Vec<u64> = Vec::with_capacity(take as usize);
        gather_winners(outs_l, take as usize, &mut next_ptrs, &mut level_links);
        // The rest of the old level's stores, then the swap: the chunk outputs just written hold
        // the new frontier; the old ones (now empty) are reused for the next level.
        fstores[released..].par_iter_mut().with_max_len(1).for_each(|o| o.store.release(&pool));
        std::mem::swap(&mut fstores, &mut outs);
        fstores.truncate(nchunks);
        fstart = starts;
        spare_ptrs = std::mem::replace(&mut frontier, next_ptrs);
        links.push(level_links);
        link_count += take;
        unique += take;
        depth += 1;
        let mem = base_memory(&table, link_count, frontier.len());
        peak = peak.max(mem);
        report_progress(depth, frontier.len(), unique, transitions, mem);
    };

    let properties = build_properties(&props, &hits, |(d, mut rank)| {
        let mut indices = Vec::with_capacity(d);
        for level in links[..d].iter().rev() {
            let link = level[rank];
            indices.push((link & ACTION_MASK) as usize);
            rank = (link >> ACTION_BITS) as usize;
        }
        indices.reverse();
        path_from_indices(model, init_index[rank], &indices)
    });
    let elapsed = start.elapsed();
    report_progress(depth, frontier.len(), unique, transitions, peak);
    frontier.clear();
    fstores.par_iter_mut().chain(outs.par_iter_mut()).with_max_len(1).for_each(|o| o.store.release(&pool));
    Report {
        unique_states: unique,
        transitions,
        max_depth: depth,
        elapsed,
        complete: stop == StopReason::Complete,
        stop_reason: stop,
        properties,
        peak_memory_bytes: peak,
        visited_set_bytes: table.bytes() + (link_count + init_index.len() as u64) * 8,
    }
}
