//! The parallel level-synchronous engine (see the crate docs for the design).
//!
//! [`run`] drives a check: [`Bfs::new`] makes level 0 the frontier, each [`Bfs::level`] runs
//! one level's steps (setup, expand, property hits, claim, visited, select, commit) until one of
//! them stops the check, and [`Bfs::finish`] builds the report. The per-state work of the
//! expansion is [`Ctx::expand_chunk`].

use std::hash::Hash;
use std::mem::MaybeUninit;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::Instant;

use rayon::prelude::*;
use stateright::{Expectation, Model, Property};

use crate::store::{block_bytes, stream_fence, Blocks, ChunkStore, Spill, Stored};
use crate::table::{ClaimTable, FpTable, PREFETCH_AHEAD};
use crate::{
    build_properties, fingerprint, is_hit, path_from_indices, Hooks, Options, Path, Progress,
    Report, SpillReport, StopReason, ACTION_BITS, ACTION_MASK,
};

/// What a level does with its frontier (chosen by [`Bfs::mode`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    /// Check properties and generate the next level.
    Expand,
    /// At `max_depth`: check properties and only look for an unvisited successor.
    Probe,
    /// After `max_states` cut this level: check properties only.
    CheckOnly,
}

/// A frontier state: where it is in a [`ChunkStore`] of the current level.
#[derive(Clone, Copy)]
struct StatePtr<S>(Stored<S>);
// SAFETY: a frontier state is only read while its store is alive (a store is released only
// after every chunk that reads from it has finished), so sharing its place is sharing `&S`.
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
    /// With a classifier: (property, class, first rank in this chunk, count), in order of
    /// first occurrence.
    classes: Vec<(usize, u64, usize, u64)>,
    /// This level's [`Hooks::tally`] sums.
    tally: Vec<u64>,
}

/// Slots of [`Seen`]; it takes at most half as many fingerprints.
const SEEN_SLOTS: usize = 4096;

/// The candidate fingerprints of the chunk being expanded (open addressing, 0 = empty; one per
/// worker thread, [`SEEN`]): a successor already generated in this chunk is dropped before it is
/// stored (its first occurrence has the smaller link: links grow through a chunk). Most of a
/// level's duplicates are near each other (siblings reached by commuting events).
struct Seen {
    slots: Box<[u64; SEEN_SLOTS]>,
    /// The slots in use, so that [`Seen::clear`] empties only those (a chunk of a few hundred
    /// states fills a few hundred of the 4096: clearing all of them cost 64 bytes of stores per
    /// state, and building the set on the stack as much again in a copy).
    used: Vec<u16>,
}

std::thread_local! {
    static SEEN: std::cell::RefCell<Seen> = std::cell::RefCell::new(Seen {
        slots: Box::new([0; SEEN_SLOTS]),
        used: Vec::with_capacity(SEEN_SLOTS / 2),
    });
}

impl Seen {
    /// Empties the set for the next chunk.
    fn clear(&mut self) {
        for i in self.used.drain(..) {
            self.slots[i as usize] = 0;
        }
    }

    /// Whether `fp` is new to this chunk (recording it while there is room; once the set is
    /// half full, fingerprints not in it count as new).
    #[inline]
    fn first(&mut self, fp: u64) -> bool {
        let mask = SEEN_SLOTS - 1;
        let mut i = (fp >> 52) as usize & mask;
        loop {
            match self.slots[i] {
                0 => {
                    if self.used.len() < SEEN_SLOTS / 2 {
                        self.slots[i] = fp;
                        self.used.push(i as u16);
                    }
                    return true;
                }
                x if x == fp => return false,
                _ => i = (i + 1) & mask,
            }
        }
    }
}

/// Bytes per candidate besides its state (fingerprint, link, and its place in its store).
const CAND_BYTES: u64 = 20;

/// Bytes of a frontier state's place ([`StatePtr`]: a reference and a record address).
const PLACE_BYTES: u64 = size_of::<StatePtr<u8>>() as u64;

impl<S> Default for ChunkOut<S> {
    fn default() -> Self {
        ChunkOut {
            fps: Vec::new(),
            links: Vec::new(),
            store: ChunkStore::default(),
            winners: Vec::new(),
            transitions: 0,
            hits: Vec::new(),
            classes: Vec::new(),
            tally: Vec::new(),
        }
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
        self.classes.clear();
    }

    /// Zeroes the tally counters (`n` of them).
    fn reset_tally(&mut self, n: usize) {
        self.tally.clear();
        self.tally.resize(n, 0);
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
                self.winners
                    .push(u32::try_from(k).expect("more than 2^32 candidates in one chunk"));
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
fn gather_winners<S: Sync>(
    outs: &[ChunkOut<S>],
    take: usize,
    ptrs: &mut Vec<StatePtr<S>>,
    links: &mut Vec<u64>,
) {
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
        parts
            .into_par_iter()
            .zip(outs.par_iter())
            .with_max_len(1)
            .for_each(|((p, l), o)| {
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

/// What the expansion workers of one level share: the model, the properties still to check,
/// the visited set (read only, for probes), the level's mode and candidate budget, and the
/// flags the workers raise.
struct Ctx<'a, M: Model, F> {
    model: &'a M,
    hooks: &'a F,
    props: &'a [Property<M>],
    /// Per property: not hit at an earlier depth (only those are checked).
    active: &'a [bool],
    table: &'a FpTable,
    pool: &'a Blocks<M::State>,
    mode: Mode,
    /// Candidates allowed by the memory budget in this level.
    cand_limit: Option<u64>,
    /// Candidates counted so far (in batches of [`FLUSH`]; only with a budget).
    cand_count: AtomicU64,
    /// The level's candidates exceed `cand_limit`, or the process's measured RSS the budget
    /// (expansion stops).
    over_budget: AtomicBool,
    /// `max_rss_bytes`.
    rss_budget: Option<u64>,
    /// A probed state has an unvisited successor (probing stops).
    probe_found: AtomicBool,
}

/// The least state blocks a spilling check keeps in memory (4 MiB of 64 KiB blocks).
const MIN_SPILL_BLOCKS: usize = 64;

/// Candidates a worker counts locally before adding them to [`Ctx::cand_count`].
const FLUSH: u64 = 1 << 10;
/// Expansion chunks per wave (see [`Bfs::expand`]).
const WAVE_CHUNKS: usize = 32;

impl<'a, M: Model, F: Hooks<M>> Ctx<'a, M, F> {
    /// Level setup: the workers' view of a level expanded in `mode`. With a budget, the
    /// candidates may take what the level's `base` memory (visited set, links, frontier) leaves;
    /// a base already over the budget expands nothing.
    fn new(
        env: &'a Env<'_, M, F>,
        table: &'a FpTable,
        active: &'a [bool],
        mode: Mode,
        base: u64,
    ) -> Self {
        let budget = env.opts.max_memory_bytes;
        Ctx {
            model: env.model,
            hooks: env.hooks,
            props: &env.props,
            active,
            table,
            pool: &env.pool,
            mode,
            cand_limit: budget
                .map(|b| b.saturating_sub(base) / (CAND_BYTES + env.stored_state_bytes())),
            cand_count: AtomicU64::new(0),
            rss_budget: env.opts.max_rss_bytes,
            over_budget: AtomicBool::new(
                base > budget.unwrap_or(u64::MAX)
                    || env
                        .opts
                        .max_rss_bytes
                        .is_some_and(|b| crate::rss::over(b, 0)),
            ),
            probe_found: AtomicBool::new(false),
        }
    }

    /// Adds the worker's `pending` candidate count to the level's and raises `over_budget` if
    /// the total exceeds the limit.
    fn flush(&self, pending: &mut u64) {
        if *pending == 0 {
            return;
        }
        let total = self.cand_count.fetch_add(*pending, Relaxed) + *pending;
        *pending = 0;
        if self.cand_limit.is_some_and(|l| total > l)
            || self.rss_budget.is_some_and(|b| crate::rss::over(b, 0))
            || self.pool.spill().is_some_and(Spill::failed)
        {
            self.over_budget.store(true, Relaxed);
        }
    }

    /// Expands frontier states `base..base + chunk.len()` into `out`: checks the properties on
    /// each state, then, by the level's [`Mode`], probes it or stores its chunk-new successors
    /// (while the level is within its candidate budget, which is counted here in batches of
    /// [`FLUSH`]).
    fn expand_chunk(
        &self,
        base: usize,
        chunk: &[StatePtr<M::State>],
        out: &mut ChunkOut<M::State>,
    ) {
        out.reset(self.props.len());
        out.reset_tally(self.hooks.tallies());
        debug_assert!(out.store.is_empty());
        let mut actions = Vec::new();
        // Successors are built here (in the cache), fingerprinted, and streamed to the store if
        // they are new to the chunk.
        let mut scratch_box = Aligned(MaybeUninit::<M::State>::uninit());
        let scratch = &mut scratch_box.0;
        // A frontier state stored as a record is decoded here.
        let mut parent_box = Aligned(MaybeUninit::<M::State>::uninit());
        SEEN.with_borrow_mut(|seen| {
            let bufs = (&mut parent_box.0, scratch);
            self.expand_states(base, chunk, out, seen, bufs, &mut actions);
            seen.clear();
        });
        stream_fence();
        out.store.finish(self.pool);
    }

    /// The loop of [`Self::expand_chunk`]: each state checked, then probed or expanded by the
    /// level's [`Mode`], its candidates counted against the budget.
    #[inline(always)]
    fn expand_states(
        &self,
        base: usize,
        chunk: &[StatePtr<M::State>],
        out: &mut ChunkOut<M::State>,
        seen: &mut Seen,
        (parent, scratch): (&mut MaybeUninit<M::State>, &mut MaybeUninit<M::State>),
        actions: &mut Vec<M::Action>,
    ) {
        let mut pending = 0u64;
        for (j, p) in chunk.iter().enumerate() {
            let rank = base + j;
            if let Some(ahead) = chunk.get(j + 1) {
                ahead.0.prefetch();
            }
            // SAFETY: a frontier state (see `StatePtr`); `parent` is not used for anything else.
            let state = unsafe { p.0.read(parent) };
            self.check_properties(rank, state, out);
            match self.mode {
                Mode::CheckOnly => {}
                Mode::Probe => {
                    if !self.probe_found.load(Relaxed) && self.probe(state, scratch, actions) {
                        self.probe_found.store(true, Relaxed);
                    }
                }
                Mode::Expand => {
                    if self.over_budget.load(Relaxed) {
                        continue;
                    }
                    let before = out.fps.len();
                    self.expand_state(rank, state, out, seen, scratch, actions);
                    if self.cand_limit.is_some() || self.rss_budget.is_some() {
                        pending += (out.fps.len() - before) as u64;
                        if pending >= FLUSH {
                            self.flush(&mut pending);
                        }
                    }
                }
            }
        }
        self.flush(&mut pending);
    }

    /// Records in `out.hits` every property not hit in an earlier level that frontier state
    /// `rank` hits, unless an earlier state of the chunk already did (the chunk's first hit is
    /// its smallest rank).
    #[inline(always)]
    fn check_properties(&self, rank: usize, state: &M::State, out: &mut ChunkOut<M::State>) {
        if self.hooks.classifies() {
            return self.check_classified(rank, state, out);
        }
        for (i, p) in self.props.iter().enumerate() {
            if self.active[i] && out.hits[i].is_none() && is_hit(self.model, p, state) {
                out.hits[i] = Some(rank);
            }
        }
    }

    /// [`Self::check_properties`] with a classifier: every `always` property on every state,
    /// each violation counted in its class.
    #[inline(never)]
    fn check_classified(&self, rank: usize, state: &M::State, out: &mut ChunkOut<M::State>) {
        for (i, p) in self.props.iter().enumerate() {
            let always = p.expectation == Expectation::Always;
            if !(always || self.active[i] && out.hits[i].is_none()) || !is_hit(self.model, p, state)
            {
                continue;
            }
            if out.hits[i].is_none() {
                out.hits[i] = Some(rank);
            }
            if always {
                let c = self.hooks.classify(self.model, i, state);
                match out.classes.iter_mut().find(|e| e.0 == i && e.1 == c) {
                    Some(e) => e.3 += 1,
                    None => out.classes.push((i, c, rank, 1)),
                }
            }
        }
    }

    /// Probe (a state at `max_depth`): whether `state` has an in-boundary successor that is not
    /// in the visited set, i.e. whether the depth limit cut off a state. Each successor is built
    /// in `scratch` and dropped at once; nothing is stored.
    #[inline(always)]
    fn probe(
        &self,
        state: &M::State,
        scratch: &mut MaybeUninit<M::State>,
        actions: &mut Vec<M::Action>,
    ) -> bool {
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
            let found =
                model.within_boundary(next) && !self.table.contains(hooks.fingerprint(next));
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
        assert!(
            (rank as u64) >> (64 - ACTION_BITS) == 0,
            "BFS level too wide"
        );
        let link = (rank as u64) << ACTION_BITS;
        actions.clear();
        model.actions(state, actions);
        let tallied = hooks.tallies() != 0;
        for (ai, a) in actions.drain(..).enumerate() {
            if tallied {
                hooks.tally(model, state, &a, &mut out.tally);
            }
            if !hooks.next_state_into(model, state, a, scratch) {
                continue;
            }
            // SAFETY: `next_state_into` returned true: `scratch` is initialised.
            let next = unsafe { scratch.assume_init_ref() };
            let keep = if model.within_boundary(next) {
                out.transitions += 1;
                assert!(
                    ai as u64 <= ACTION_MASK,
                    "more than 2^24 actions in one state"
                );
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
pub fn check<M>(
    model: &M,
    opts: &Options,
    progress: Option<&(dyn Fn(&Progress) + Sync)>,
) -> Report<M::Action>
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
pub(crate) struct NonZeroFp<H>(pub(crate) H);

impl<M: Model, H: Hooks<M>> Hooks<M> for NonZeroFp<H> {
    #[inline(always)]
    fn fingerprint(&self, s: &M::State) -> u64 {
        match self.0.fingerprint(s) {
            0 => 1,
            x => x,
        }
    }
    #[inline(always)]
    fn next_state_into(
        &self,
        model: &M,
        s: &M::State,
        a: M::Action,
        out: &mut MaybeUninit<M::State>,
    ) -> bool {
        self.0.next_state_into(model, s, a, out)
    }
    #[inline(always)]
    fn drop_is_noop(&self, s: &M::State) -> bool {
        self.0.drop_is_noop(s)
    }
    #[inline(always)]
    fn classifies(&self) -> bool {
        self.0.classifies()
    }
    #[inline(always)]
    fn classify(&self, model: &M, prop: usize, s: &M::State) -> u64 {
        self.0.classify(model, prop, s)
    }
    #[inline(always)]
    fn tallies(&self) -> usize {
        self.0.tallies()
    }
    #[inline(always)]
    fn tally(&self, model: &M, s: &M::State, a: &M::Action, counts: &mut [u64]) {
        self.0.tally(model, s, a, counts)
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

/// Runs one check on the current rayon pool: level 0, then one [`Bfs::level`] after another
/// until a step stops the check, then the report.
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
    let (spill, spill_error) = match (&opts.spill_dir, opts.max_memory_bytes) {
        (Some(dir), Some(_)) => match Spill::create(dir) {
            Ok(s) => (Some(s), None),
            Err(e) => (None, Some(e)),
        },
        _ => (None, None),
    };
    let env = Env {
        model,
        opts,
        hooks,
        progress,
        start: Instant::now(),
        props: model.properties(),
        state_bytes: (size_of::<M::State>() + opts.state_heap_bytes) as u64,
        pool: Blocks::new(spill),
        spill_error,
    };
    let mut bfs = Bfs::new(env);
    let stop = loop {
        if let ControlFlow::Break(stop) = bfs.level() {
            break stop;
        }
    };
    bfs.finish(stop)
}

/// What the steps of a check share and never replace.
struct Env<'a, M: Model, F> {
    model: &'a M,
    opts: &'a Options,
    hooks: &'a F,
    progress: Option<&'a (dyn Fn(&Progress) + Sync)>,
    start: Instant,
    props: Vec<Property<M>>,
    /// Bytes of one stored state in the memory estimate (its size plus `opts.state_heap_bytes`).
    /// An upper bound where states are stored as records ([`crate::delta`]): a record's size
    /// depends on the state's padding bytes, which are not part of its value, so the estimate
    /// (part of the report) would not be deterministic.
    state_bytes: u64,
    /// Free store blocks, shared by every store of the check, and the spill file.
    pool: Blocks<M::State>,
    /// Why the spill file could not be created.
    spill_error: Option<crate::store::SpillError>,
}

impl<M: Model, F> Env<'_, M, F> {
    /// Bytes per frontier state or candidate in the memory estimate for its state: none when
    /// spilling (the blocks in memory are counted as they are instead).
    fn stored_state_bytes(&self) -> u64 {
        if self.pool.spill().is_some() {
            0
        } else {
            self.state_bytes
        }
    }

    /// The state blocks in memory when spilling (0 otherwise: counted per state).
    fn block_bytes_now(&self) -> u64 {
        if self.pool.spill().is_some() {
            self.pool.resident_bytes().0
        } else {
            0
        }
    }
}

/// The level being expanded: its states in canonical order, read in place from the stores of
/// the chunks that generated them (the initial states' own store at depth 0).
struct Frontier<S> {
    ptrs: Vec<StatePtr<S>>,
    /// The pointer array of the previous level, reused for the next one (fresh pages cost).
    spare: Vec<StatePtr<S>>,
    /// The stores holding the frontier, and the frontier index where each one's states begin.
    stores: Vec<ChunkOut<S>>,
    start: Vec<usize>,
    /// `stores[..released]` are back in the pool: the expansion has passed their states.
    released: usize,
    /// `stores[..loaded]` are in memory (their spilled blocks read back): see
    /// [`Frontier::load_before`].
    loaded: usize,
}

impl<S: Send + Sync> Frontier<S> {
    fn len(&self) -> usize {
        self.ptrs.len()
    }

    /// Store release wave: gives back to `pool` the stores whose states all lie before frontier
    /// index `done`, which no later chunk of the expansion reads. The next waves' stores reuse
    /// their blocks, so about one level of states is in memory.
    fn release_before(&mut self, done: usize, pool: &Blocks<S>) {
        let n = self.ptrs.len();
        let mut upto = self.released;
        while upto < self.stores.len() && self.start.get(upto + 1).map_or(n, |&e| e) <= done {
            upto += 1;
        }
        release(&mut self.stores[self.released..upto], pool);
        self.released = upto;
    }

    /// Spill read-back: makes every state before frontier index `end` readable, reading the
    /// spilled blocks of the stores holding them (in parallel) and setting their frontier
    /// addresses (null until then). False if a read failed (recorded in the spill).
    fn load_before(&mut self, end: usize, pool: &Blocks<S>) -> bool {
        let mut upto = self.loaded;
        while upto < self.stores.len() && self.start[upto] < end {
            upto += 1;
        }
        let first = self.loaded;
        let read: Vec<usize> = self.stores[first..upto]
            .par_iter_mut()
            .with_max_len(1)
            .enumerate()
            .filter_map(|(i, o)| pool.load(&mut o.store).then_some(first + i))
            .collect();
        self.loaded = upto;
        if pool.spill().is_some_and(Spill::failed) {
            return false;
        }
        for i in read {
            let (o, s) = (&self.stores[i], self.start[i]);
            for (p, &k) in self.ptrs[s..s + o.winners.len()].iter_mut().zip(&o.winners) {
                *p = StatePtr(o.store.get(k as usize));
            }
        }
        if pool.spill().is_some() {
            // Every state the wave reads is in memory (a cheap scan; a null here would be a
            // store whose spilled blocks were not counted).
            let from = self.start.get(first).copied().unwrap_or(end).min(end);
            assert!(
                self.ptrs[from..end.min(self.ptrs.len())]
                    .iter()
                    .all(|p| !p.0.is_null()),
                "frontier state not read back from the spill file"
            );
        }
        true
    }

    /// Makes the next level the frontier: `ptrs`, the addresses of the winners held by
    /// `outs[..nchunks]` (chunk `k`'s from index `start[k]` on). The rest of the old
    /// level's stores go back to `pool`; the old chunk outputs (now empty) are handed back in
    /// `outs`, to be reused by the next expansion.
    fn advance(
        &mut self,
        ptrs: Vec<StatePtr<S>>,
        outs: &mut Vec<ChunkOut<S>>,
        nchunks: usize,
        start: Vec<usize>,
        pool: &Blocks<S>,
    ) {
        release(&mut self.stores[self.released..], pool);
        std::mem::swap(&mut self.stores, outs);
        self.stores.truncate(nchunks);
        self.start = start;
        self.spare = std::mem::replace(&mut self.ptrs, ptrs);
        self.released = 0;
        self.loaded = 0;
    }

    /// At the end of the check: forgets the frontier and gives every store back, the
    /// frontier's and those in `outs`.
    fn release_all(&mut self, outs: &mut [ChunkOut<S>], pool: &Blocks<S>) {
        self.ptrs.clear();
        release(&mut self.stores, pool);
        release(outs, pool);
    }
}

/// Releases the stores of `outs` (in parallel); hands memory back to the system if blocks were
/// freed (spilling under a cap).
fn release<S: Send>(outs: &mut [ChunkOut<S>], pool: &Blocks<S>) {
    let freed = outs
        .par_iter_mut()
        .with_max_len(1)
        .map(|o| o.store.release(pool))
        .reduce(|| false, |a, b| a | b);
    if freed {
        pool.trim();
    }
}

/// What one level's expansion left for the steps after it.
struct Expanded {
    /// Chunk outputs written (`outs[..nchunks]`).
    nchunks: usize,
    /// A probed state has an unvisited successor.
    probe_found: bool,
    /// The level's candidates went over the memory budget (or its base memory already had).
    over_budget: bool,
    /// A spill-file write or read failed (the level's results are not used).
    spill_failed: bool,
}

impl Expanded {
    /// Probe and depth handling, and the budget stop of the expansion: a level that was only
    /// checked (`max_states` cut it) stops the check with `MaxStates`; a probed one (at
    /// `max_depth`) with `MaxDepth` if it has an unvisited successor, else `Complete`; an
    /// expanded one with `MemoryBudget` if its candidates went over the budget.
    fn stop(&self, mode: Mode) -> ControlFlow<StopReason> {
        match mode {
            Mode::CheckOnly => ControlFlow::Break(StopReason::MaxStates),
            Mode::Probe if self.probe_found => ControlFlow::Break(StopReason::MaxDepth),
            Mode::Probe => ControlFlow::Break(StopReason::Complete),
            Mode::Expand if self.over_budget => ControlFlow::Break(StopReason::MemoryBudget),
            Mode::Expand => ControlFlow::Continue(()),
        }
    }
}

/// One check in progress: the visited set, the parent links and the frontier (the states of
/// depth `depth`), advanced one BFS level at a time by [`Bfs::level`].
struct Bfs<'a, M: Model, F> {
    env: Env<'a, M, F>,
    /// The visited set: the fingerprints of depths `0..=depth`.
    table: FpTable,
    /// The claims of a level's candidates (allocated once, cleared per level).
    claim: ClaimTable,
    /// Index in `init_states()` of each state of depth 0, by rank.
    init_index: Vec<usize>,
    /// `links[d - 1][rank]` = parent link of the state of depth `d` and this rank.
    links: Vec<Vec<u64>>,
    link_count: u64,
    frontier: Frontier<M::State>,
    /// The chunk outputs the level being expanded writes to (reused from level to level).
    outs: Vec<ChunkOut<M::State>>,
    /// First hit of each property: (depth, rank).
    hits: Vec<Option<(usize, usize)>>,
    /// With a classifier: (property, class, first (depth, rank), count), in order of first
    /// occurrence (canonical, as the chunks are merged in order).
    classes: Vec<(usize, u64, (usize, usize), u64)>,
    /// Sums of [`Hooks::tally`] over the levels expanded so far.
    tally: Vec<u64>,
    /// `max_states` cut the frontier: it is checked, not expanded.
    cut: bool,
    unique: u64,
    transitions: u64,
    depth: usize,
    /// Peak of the memory estimate.
    peak: u64,
    /// The largest ratio of a level's candidates to its frontier so far (the spill cap's
    /// estimate of the next level's).
    cand_ratio: f64,
}

/// Level 0: the initial states in `init_states()` order, skipping those outside the boundary
/// and duplicates, and cut at `max_states`; they go to one store, as a chunk's candidates do.
/// Returns the visited set holding them, their store, their indices in `init_states()` and
/// whether the cut left any out.
fn level_zero<M: Model, F: Hooks<M>>(
    env: &Env<'_, M, F>,
) -> (FpTable, ChunkOut<M::State>, Vec<usize>, bool) {
    let (model, hooks) = (env.model, env.hooks);
    let inits = model.init_states();
    let table = FpTable::with_capacity_for(inits.len() as u64);
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
        if env
            .opts
            .max_states
            .is_some_and(|m| init_out.store.len() as u64 >= m)
        {
            cut = true;
            continue;
        }
        table.insert(fp);
        let noop = hooks.drop_is_noop(&s);
        let src = Aligned(MaybeUninit::new(s));
        // SAFETY: `src` is initialised; its state moves to the store (a `MaybeUninit` is never
        // dropped).
        unsafe { init_out.store.push_from(&env.pool, &src.0, noop) };
        init_index.push(i);
    }
    stream_fence();
    (table, init_out, init_index, cut)
}

impl<'a, M, F> Bfs<'a, M, F>
where
    M: Model + Sync,
    M::State: Send + Sync,
    M::Action: Send + Sync + Clone,
    F: Hooks<M>,
{
    /// Level 0 ([`level_zero`]) as the frontier; reports progress for it.
    fn new(env: Env<'a, M, F>) -> Self {
        let (table, init_out, init_index, cut) = level_zero(&env);
        let ptrs: Vec<StatePtr<M::State>> = (0..init_out.store.len())
            .map(|k| StatePtr(init_out.store.get(k)))
            .collect();
        let unique = ptrs.len() as u64;
        let frontier = Frontier {
            ptrs,
            spare: Vec::new(),
            stores: vec![init_out],
            start: vec![0],
            released: 0,
            loaded: 1,
        };
        let hits = vec![None; env.props.len()];
        let mut bfs = Bfs {
            env,
            table,
            claim: ClaimTable::new(0),
            init_index,
            links: Vec::new(),
            link_count: 0,
            frontier,
            outs: Vec::new(),
            hits,
            classes: Vec::new(),
            tally: Vec::new(),
            cut,
            unique,
            transitions: 0,
            depth: 0,
            peak: 0,
            cand_ratio: 4.0,
        };
        bfs.peak = bfs.base_memory();
        bfs.report_progress(bfs.peak);
        bfs
    }

    /// One BFS level: the frontier is expanded (and checked), its candidates claimed, the new
    /// ones inserted into the visited set and selected, and the winners committed as the next
    /// frontier. Each step that can end the check returns `Break(reason)`, which ends the level
    /// at once. (Steps 1–4 are the crate docs' steps; step 5 is the end of their step 4.)
    fn level(&mut self) -> ControlFlow<StopReason> {
        let mode = self.mode();
        let base = self.base_memory();
        let expanded = self.expand(mode, base);
        let nchunks = expanded.nchunks;
        if expanded.spill_failed {
            return ControlFlow::Break(StopReason::MemoryBudget);
        }
        self.record_hits(nchunks)?;
        expanded.stop(mode)?;
        let (total, mem) = self.tally(nchunks, base)?;
        let (distinct, mem) = self.claim(nchunks, total, mem)?;
        self.insert(distinct, mem)?;
        let take = self.select(nchunks)?;
        self.commit(nchunks, take as usize);
        ControlFlow::Continue(())
    }

    /// Level setup: what this level does with its frontier. Only check it once `max_states`
    /// has cut it, probe it at `max_depth`, else expand it.
    fn mode(&self) -> Mode {
        if self.cut {
            Mode::CheckOnly
        } else if self.env.opts.max_depth == Some(self.depth) {
            Mode::Probe
        } else {
            Mode::Expand
        }
    }

    /// The memory estimate between levels: the visited set, the links, and each frontier
    /// state's slot and address. It is computed from counts that do not depend on the thread
    /// count.
    fn base_memory(&self) -> u64 {
        self.visited_bytes()
            + self.frontier.len() as u64 * (PLACE_BYTES + self.env.stored_state_bytes())
            + self.env.block_bytes_now()
    }

    /// Spilling: how many state blocks may stay in memory while this level is expanded. The
    /// budget less what stays in memory whatever happens: the visited set (grown for the
    /// expected candidates, old and new table at once while it grows), the parent links, the
    /// frontier addresses, the expected candidates' fingerprints, links and claim-table slots,
    /// and a margin (1/16 of the budget plus 64 MiB: allocator, thread stacks, the binary, the
    /// blocks read back for a wave). The candidates are expected at the largest
    /// candidates-per-frontier-state ratio seen so far (4 at first), plus a quarter.
    fn spill_cap(&self) -> usize {
        if let Some(m) = self.env.opts.spill_max_blocks {
            return m.max(1);
        }
        let budget = self.env.opts.max_memory_bytes.unwrap_or(u64::MAX);
        let n = self.frontier.len() as u64;
        let cands = (n as f64 * self.cand_ratio * 1.25) as u64;
        let grow_len = self.unique + cands;
        let table = self.table.bytes()
            + if self.table.fits(grow_len) {
                0
            } else {
                FpTable::capacity_for(grow_len) as u64 * 8
            };
        let fixed = table
            + (self.link_count + self.init_index.len() as u64) * 8
            + n * 2 * PLACE_BYTES
            + cands * (CAND_BYTES + 8 + 4)
            + self.claim.bytes_after_reset(cands as usize)
            + budget / 16
            + (64 << 20);
        let room = budget.saturating_sub(fixed);
        ((room / block_bytes::<M::State>() as u64) as usize).max(MIN_SPILL_BLOCKS)
    }

    /// The visited set's fingerprint table plus the parent links (a link per state of depth
    /// 1 and more, an init index per state of depth 0).
    fn visited_bytes(&self) -> u64 {
        self.table.bytes() + (self.link_count + self.init_index.len() as u64) * 8
    }

    /// Memory budget: `Break(MemoryBudget)` if the estimate `mem` of the next step would
    /// exceed `max_memory_bytes`, or the process's measured RSS plus the `alloc` bytes the step
    /// allocates would exceed `max_rss_bytes` (the check stops before that step allocates);
    /// otherwise `mem` counts towards the peak.
    fn admit(&mut self, mem: u64, alloc: u64) -> ControlFlow<StopReason> {
        if self.env.opts.max_memory_bytes.is_some_and(|b| mem > b)
            || self
                .env
                .opts
                .max_rss_bytes
                .is_some_and(|b| crate::rss::over(b, alloc))
        {
            return ControlFlow::Break(StopReason::MemoryBudget);
        }
        self.peak = self.peak.max(mem);
        ControlFlow::Continue(())
    }

    /// Progress report for the frontier, with memory estimate `mem`.
    fn report_progress(&self, mem: u64) {
        if let Some(cb) = self.env.progress {
            cb(&Progress {
                depth: self.depth,
                frontier: self.frontier.len() as u64,
                unique_states: self.unique,
                transitions: self.transitions,
                elapsed: self.env.start.elapsed(),
                memory_bytes: mem,
            });
        }
    }

    /// Step 1, expand: the frontier in chunks of [`chunk_len`] states, in waves of
    /// [`WAVE_CHUNKS`] chunks on the thread pool, each chunk into its output in `outs`
    /// ([`Ctx::expand_chunk`]); the candidates may take the memory left by `base`. After each
    /// wave, the stores that no later chunk reads are released ([`Frontier::release_before`]).
    fn expand(&mut self, mode: Mode, base: u64) -> Expanded {
        let active: Vec<bool> = self.hits.iter().map(|h| h.is_none()).collect();
        if self.env.pool.spill().is_some() {
            self.env.pool.set_cap(self.spill_cap());
        }
        let ctx = Ctx::new(&self.env, &self.table, &active, mode, base);
        let n = self.frontier.len();
        let chunk = chunk_len(n);
        let nchunks = n.div_ceil(chunk);
        if self.outs.len() < nchunks {
            self.outs.resize_with(nchunks, ChunkOut::default);
        }
        let mut spill_failed = self.env.pool.spill().is_some_and(Spill::failed);
        for w0 in (0..nchunks).step_by(WAVE_CHUNKS) {
            let w1 = nchunks.min(w0 + WAVE_CHUNKS);
            if spill_failed || !self.frontier.load_before(n.min(w1 * chunk), &self.env.pool) {
                spill_failed = true;
                break;
            }
            let fr = &self.frontier.ptrs[..];
            self.outs[w0..w1]
                .par_iter_mut()
                .enumerate()
                .with_max_len(1)
                .for_each(|(k, o)| {
                    let lo = (w0 + k) * chunk;
                    ctx.expand_chunk(lo, &fr[lo..n.min(lo + chunk)], o)
                });
            self.frontier
                .release_before(n.min(w1 * chunk), &self.env.pool);
        }
        spill_failed |= self.env.pool.spill().is_some_and(Spill::failed);
        Expanded {
            nchunks,
            probe_found: ctx.probe_found.load(Relaxed),
            over_budget: ctx.over_budget.load(Relaxed),
            spill_failed,
        }
    }

    /// Property hits: the first hit of each property not hit before is the level's smallest
    /// rank that hits it (the minimum over the chunks' first hits). With `fail_fast`, stops the
    /// check once an `always` property is violated; the whole level was checked, so the paths
    /// reported are the canonical ones.
    fn record_hits(&mut self, nchunks: usize) -> ControlFlow<StopReason> {
        let outs = &self.outs[..nchunks];
        for (i, h) in self.hits.iter_mut().enumerate() {
            if h.is_none() {
                if let Some(rank) = outs.iter().filter_map(|o| o.hits[i]).min() {
                    *h = Some((self.depth, rank));
                }
            }
        }
        // Chunks in order, each chunk's classes in order of first rank: a class new in this
        // level is appended at its smallest rank (the first chunk that met it).
        let level_start = self.classes.len();
        for o in outs {
            for &(i, c, rank, n) in &o.classes {
                match self.classes.iter_mut().find(|e| e.0 == i && e.1 == c) {
                    Some(e) => e.3 += n,
                    None => self.classes.push((i, c, (self.depth, rank), n)),
                }
            }
        }
        self.classes[level_start..].sort_by_key(|e| e.2);
        for o in outs {
            if self.tally.len() < o.tally.len() {
                self.tally.resize(o.tally.len(), 0);
            }
            for (t, n) in self.tally.iter_mut().zip(&o.tally) {
                *t += n;
            }
        }
        let props = &self.env.props;
        let violated = props
            .iter()
            .zip(&self.hits)
            .any(|(p, h)| p.expectation == Expectation::Always && h.is_some());
        if self.env.opts.fail_fast && violated {
            return ControlFlow::Break(StopReason::FailFast);
        }
        ControlFlow::Continue(())
    }

    /// After an expansion that went on: adds the level's transitions, and counts its
    /// candidates (their memory, estimated on top of `base`, goes into the peak: the expansion
    /// itself kept them within the budget). Returns their number and the estimate, or stops
    /// the check (`Complete`) if there are none.
    fn tally(&mut self, nchunks: usize, base: u64) -> ControlFlow<StopReason, (usize, u64)> {
        let outs = &self.outs[..nchunks];
        let level_transitions: u64 = outs.iter().map(|o| o.transitions).sum();
        let total: usize = outs.iter().map(|o| o.fps.len()).sum();
        let base = if self.env.pool.spill().is_some() {
            self.base_memory()
        } else {
            base
        };
        let mem = base + total as u64 * (CAND_BYTES + self.env.stored_state_bytes());
        self.cand_ratio = self
            .cand_ratio
            .max(total as f64 / self.frontier.len().max(1) as f64);
        self.peak = self.peak.max(mem);
        self.transitions += level_transitions;
        if total == 0 {
            return ControlFlow::Break(StopReason::Complete);
        }
        ControlFlow::Continue((total, mem))
    }

    /// Step 2, claim: every one of the `total` candidates claims its fingerprint with its link
    /// in the claim table (sized for them first, within the budget: `mem` is the estimate so
    /// far); the minimal link, i.e. the first discoverer in canonical order, wins. Returns the
    /// number of distinct fingerprints and the estimate with the claim table.
    fn claim(
        &mut self,
        nchunks: usize,
        total: usize,
        mem: u64,
    ) -> ControlFlow<StopReason, (u64, u64)> {
        let claim_after = self.claim.bytes_after_reset(total);
        let mem = mem + claim_after;
        self.admit(mem, claim_after.saturating_sub(self.claim.bytes()))?;
        self.claim.reset(total);
        let claim = &self.claim;
        let distinct: u64 = self.outs[..nchunks]
            .par_iter()
            .with_max_len(1)
            .map(|o| o.claim_all(claim))
            .sum();
        ControlFlow::Continue((distinct, mem))
    }

    /// Step 3, visited: the `distinct` claimed fingerprints are inserted into the visited set,
    /// which is first grown to fit all of them if needed (within the budget: `mem` is the
    /// estimate so far); one that was already there loses its claim.
    fn insert(&mut self, distinct: u64, mem: u64) -> ControlFlow<StopReason> {
        let grow_len = self.unique + distinct;
        let grow = !self.table.fits(grow_len);
        let table_after = if grow {
            FpTable::capacity_for(grow_len) as u64 * 8
        } else {
            0
        };
        self.admit(mem + table_after, table_after)?;
        if grow {
            self.table.grow_to(FpTable::capacity_for(grow_len));
        }
        let (t, c) = (&self.table, &self.claim);
        c.scan_chunks()
            .into_par_iter()
            .with_max_len(1)
            .for_each(|range| {
                c.retain_in(range, |fp, next_fp| {
                    if let Some(f) = next_fp {
                        t.prefetch(f);
                    }
                    t.insert(fp)
                });
            });
        ControlFlow::Continue(())
    }

    /// Step 4, select: a candidate is a new state iff it holds its fingerprint's claim; the
    /// chunks' winners, in order, are the next level in canonical order. Returns how many of
    /// them it takes: all, or as many as `max_states` leaves room for (then `cut` is set and
    /// the next level is only checked). Stops the check with `Complete` if there are no
    /// winners, with `MaxStates` if there is no room for any.
    fn select(&mut self, nchunks: usize) -> ControlFlow<StopReason, u64> {
        let claim = &self.claim;
        self.outs[..nchunks]
            .par_iter_mut()
            .with_max_len(1)
            .for_each(|o| o.select_winners(claim));
        let winners: u64 = self.outs[..nchunks]
            .iter()
            .map(|o| o.winners.len() as u64)
            .sum();
        if winners == 0 {
            return ControlFlow::Break(StopReason::Complete);
        }
        let room = self
            .env
            .opts
            .max_states
            .map_or(u64::MAX, |m| m.saturating_sub(self.unique));
        let take = winners.min(room);
        self.cut = winners > room;
        if take == 0 {
            return ControlFlow::Break(StopReason::MaxStates);
        }
        ControlFlow::Continue(take)
    }

    /// Step 5, commit: the first `take` winners become the frontier, read in place from the
    /// chunk stores, and their links become the level's link array; the old level's stores go
    /// back to the pool ([`Frontier::advance`]). Reports progress for the new level.
    fn commit(&mut self, nchunks: usize, take: usize) {
        let outs = &mut self.outs[..nchunks];
        let starts = truncate_winners(outs, take);
        let mut ptrs = std::mem::take(&mut self.frontier.spare);
        ptrs.clear();
        ptrs.reserve(take);
        let mut level_links: Vec<u64> = Vec::with_capacity(take);
        gather_winners(outs, take, &mut ptrs, &mut level_links);
        self.frontier
            .advance(ptrs, &mut self.outs, nchunks, starts, &self.env.pool);
        self.links.push(level_links);
        self.link_count += take as u64;
        self.unique += take as u64;
        self.depth += 1;
        let mem = self.base_memory();
        self.peak = self.peak.max(mem);
        self.report_progress(mem);
    }

    /// The path to the state of depth `d` and rank `rank`: its parent links followed back to
    /// an initial state, then the model re-run forwards.
    fn path_to(&self, (d, mut rank): (usize, usize)) -> Path<M::Action> {
        let mut indices = Vec::with_capacity(d);
        for level in self.links[..d].iter().rev() {
            let link = level[rank];
            indices.push((link & ACTION_MASK) as usize);
            rank = (link >> ACTION_BITS) as usize;
        }
        indices.reverse();
        path_from_indices(self.env.model, self.init_index[rank], &indices)
    }

    /// The report of a check that stopped for `stop`: each property's verdict, with the path
    /// of its first hit. Reports progress a last time (with the peak memory) and releases every
    /// store.
    fn finish(mut self, stop: StopReason) -> Report<M::Action> {
        let mut properties = build_properties(&self.env.props, &self.hits, |hit| self.path_to(hit));
        for &(i, class, first, count) in &self.classes {
            properties[i].classes.push(crate::ClassReport {
                class,
                count,
                path: self.path_to(first),
            });
        }
        let elapsed = self.env.start.elapsed();
        self.report_progress(self.peak);
        self.frontier.release_all(&mut self.outs, &self.env.pool);
        let spill = match (self.env.pool.spill(), &self.env.spill_error) {
            (Some(s), _) => {
                let (bytes_written, bytes_read) = s.traffic();
                let (file_bytes_written, file_bytes_read) = s.file_traffic();
                let peak_block_bytes = self.env.pool.resident_bytes().1;
                Some(SpillReport {
                    dir: s.dir().display().to_string(),
                    bytes_written,
                    bytes_read,
                    file_bytes_written,
                    file_bytes_read,
                    peak_block_bytes,
                    error: s.error(),
                })
            }
            (None, Some(e)) => Some(SpillReport {
                error: Some(e.to_string()),
                ..SpillReport::default()
            }),
            (None, None) => None,
        };
        Report {
            unique_states: self.unique,
            transitions: self.transitions,
            max_depth: self.depth,
            elapsed,
            complete: stop == StopReason::Complete,
            stop_reason: stop,
            properties,
            peak_memory_bytes: self.peak,
            visited_set_bytes: self.visited_bytes(),
            tally: std::mem::take(&mut self.tally),
            spill,
            dist: None,
        }
    }
}
