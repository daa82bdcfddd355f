//! The parallel level-synchronous engine (see the crate docs for the design).

use std::hash::Hash;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::Instant;

use rayon::prelude::*;
use stateright::{Expectation, Model, Property};

use crate::frontier::{Frontier, Pool};
use crate::table::{prefetch_value, ClaimTable, FpTable, PREFETCH_AHEAD};
use crate::{
    build_properties, fingerprint, is_hit, Hooks, path_from_indices, Options, Progress, Report, StopReason, ACTION_BITS,
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

/// Per-chunk output of the expand phase, reused from level to level (no reallocation, no
/// fresh pages once the buffers have grown). Candidates are successors that were not in the
/// visited set when generated, in `(parent rank, action index)` order; only their fingerprint
/// and parent link (`parent rank << ACTION_BITS | action index`, which is also their canonical
/// order key) are kept: the winners' states are regenerated from their parents afterwards.
#[derive(Default)]
struct ChunkOut {
    fps: Vec<u64>,
    links: Vec<u64>,
    transitions: u64,
    /// Per property: first rank in this chunk that is a hit.
    hits: Vec<Option<usize>>,
}

/// Slots of [`Seen`]; it takes at most half as many fingerprints.
const SEEN_SLOTS: usize = 4096;

/// The candidate fingerprints of the chunk being expanded (open addressing, 0 = empty; on the
/// worker's stack): a successor already generated in this chunk is dropped before it reaches the
/// claim (its first occurrence has the smaller link: links grow through a chunk). Most of a
/// level's duplicates are near each other (siblings reached by commuting events), so this
/// removes a large part of the claim table's work while it is still in the cache.
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

/// Bytes per candidate (fingerprint + link).
const CAND_BYTES: u64 = 16;

impl ChunkOut {
    fn reset(&mut self, props: usize) {
        self.fps.clear();
        self.links.clear();
        self.transitions = 0;
        self.hits.clear();
        self.hits.resize(props, None);
    }
}

struct Ctx<'a, M: Model, F> {
    model: &'a M,
    hooks: &'a F,
    props: &'a [Property<M>],
    active: &'a [bool],
    table: &'a FpTable,
    mode: Mode,
    /// Candidates allowed by the memory budget in this level.
    cand_limit: Option<u64>,
    cand_count: AtomicU64,
    over_budget: AtomicBool,
    probe_found: AtomicBool,
}

const FLUSH: u64 = 1 << 12;
/// Frontier blocks regenerated per wave (see step 4 in `run`).
const WAVE_BLOCKS: usize = 64;

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

    /// Expands frontier states `base..base + chunk.len()` into `out`.
    fn expand_chunk(&self, base: usize, chunk: &[M::State], out: &mut ChunkOut) {
        let model = self.model;
        let hooks = self.hooks;
        out.reset(self.props.len());
        let mut actions = Vec::new();
        // Successors are built here, fingerprinted and dropped.
        let mut scratch = MaybeUninit::<M::State>::uninit();
        let mut seen = Seen { slots: [0; SEEN_SLOTS], len: 0 };
        let mut pending = 0u64;
        // `out.fps[..counted]` are already counted against the memory budget.
        let mut counted = 0usize;
        for (j, state) in chunk.iter().enumerate() {
            let rank = base + j;
            if let Some(ahead) = chunk.get(j + 1) {
                prefetch_value(ahead);
            }
            for (i, p) in self.props.iter().enumerate() {
                if self.active[i] && out.hits[i].is_none() && is_hit(model, p, state) {
                    out.hits[i] = Some(rank);
                }
            }
            match self.mode {
                Mode::CheckOnly => {}
                Mode::Probe => {
                    if self.probe_found.load(Relaxed) {
                        continue;
                    }
                    actions.clear();
                    model.actions(state, &mut actions);
                    for a in actions.drain(..) {
                        if !hooks.next_state_into(model, state, a, &mut scratch) {
                            continue;
                        }
                        // SAFETY: `next_state_into` returned true: `scratch` is initialised; it is
                        // dropped right after this use.
                        let next = unsafe { scratch.assume_init_ref() };
                        let found = model.within_boundary(next) && !self.table.contains(hooks.fingerprint(next));
                        unsafe { scratch.assume_init_drop() };
                        if found {
                            self.probe_found.store(true, Relaxed);
                            break;
                        }
                    }
                }
                Mode::Expand => {
                    if self.over_budget.load(Relaxed) {
                        continue;
                    }
                    assert!((rank as u64) >> (64 - ACTION_BITS) == 0, "BFS level too wide");
                    let link = (rank as u64) << ACTION_BITS;
                    actions.clear();
                    model.actions(state, &mut actions);
                    for (ai, a) in actions.drain(..).enumerate() {
                        if !hooks.next_state_into(model, state, a, &mut scratch) {
                            continue;
                        }
                        // SAFETY: `next_state_into` returned true: `scratch` is initialised; it is
                        // dropped right after this use.
                        let next = unsafe { scratch.assume_init_ref() };
                        let fp = model.within_boundary(next).then(|| hooks.fingerprint(next));
                        if !hooks.drop_is_noop(next) {
                            unsafe { scratch.assume_init_drop() };
                        }
                        let Some(fp) = fp else { continue };
                        out.transitions += 1;
                        assert!(ai as u64 <= ACTION_MASK, "more than 2^24 actions in one state");
                        if !seen.first(fp) {
                            continue;
                        }
                        out.fps.push(fp);
                        out.links.push(link | ai as u64);
                    }
                    if self.cand_limit.is_some() && out.fps.len() - counted >= FLUSH as usize {
                        pending += (out.fps.len() - counted) as u64;
                        counted = out.fps.len();
                        self.flush(&mut pending);
                    }
                }
            }
        }
        pending += (out.fps.len() - counted) as u64;
        self.flush(&mut pending);
    }
}

/// The states of the winners with parent links `links` (in canonical order), regenerated from
/// their parents in `frontier` and written to `dst` in order. Returns whether every one of them
/// has a no-op drop ([`Hooks::drop_is_noop`]).
fn regenerate<M: Model>(
    model: &M,
    hooks: &impl Hooks<M>,
    frontier: &Frontier<M::State>,
    links: &[u64],
    dst: &mut [MaybeUninit<M::State>],
) -> bool
where
    M::Action: Clone,
{
    let mut actions = Vec::new();
    let mut parent = usize::MAX;
    let mut noop = true;
    crate::table::populate(dst.as_ptr() as *const u8, std::mem::size_of_val(dst));
    for (k, (slot, &link)) in dst.iter_mut().zip(links).enumerate() {
        let rank = (link >> ACTION_BITS) as usize;
        let ai = (link & ACTION_MASK) as usize;
        if rank != parent {
            parent = rank;
            if let Some(&ahead) = links.get(k + 2) {
                prefetch_value(frontier.get((ahead >> ACTION_BITS) as usize));
            }
            actions.clear();
            model.actions(frontier.get(rank), &mut actions);
        }
        let ok = hooks.next_state_into(model, frontier.get(rank), actions[ai].clone(), slot);
        assert!(ok, "regenerating a successor: the model is not deterministic");
        // SAFETY: `next_state_into` returned true.
        noop &= hooks.drop_is_noop(unsafe { slot.assume_init_ref() });
    }
    noop
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

    // Level 0.
    let inits = model.init_states();
    let mut table = FpTable::with_capacity_for(inits.len() as u64);
    let mut pool: Pool<M::State> = Pool::new();
    let per = pool.per_block();
    let mut frontier: Frontier<M::State> = Frontier::new(&pool);
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
        if opts.max_states.is_some_and(|m| frontier.len() as u64 >= m) {
            cut = true;
            continue;
        }
        table.insert(fp);
        let noop = hooks.drop_is_noop(&s);
        frontier.push(&mut pool, s, noop);
        init_index.push(i);
    }
    let mut outs: Vec<ChunkOut> = Vec::new();
    // Per claim-table scan chunk: the links of the winners it found (reused from level to level).
    let mut selected: Vec<Vec<u64>> = Vec::new();
    let mut claim = ClaimTable::new(0);
    let mut unique = frontier.len() as u64;
    let mut transitions = 0u64;
    let mut depth = 0usize;
    // links[d - 1][rank] = parent link of the state of depth d and this rank.
    let mut links: Vec<Vec<u64>> = Vec::new();
    let mut link_count = 0u64;
    // First hit of each property: (depth, rank).
    let mut hits: Vec<Option<(usize, usize)>> = vec![None; props.len()];

    let base_memory = |table: &FpTable, link_count: u64, frontier_len: usize| {
        table.bytes() + (link_count + init_index.len() as u64) * 8 + frontier_len as u64 * state_bytes
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
            mode,
            cand_limit: budget.map(|b| b.saturating_sub(base) / CAND_BYTES),
            cand_count: AtomicU64::new(0),
            over_budget: AtomicBool::new(base > budget.unwrap_or(u64::MAX)),
            probe_found: AtomicBool::new(false),
        };

        // 1. Expand (a chunk of work is a frontier block).
        let nchunks = frontier.block_count();
        if outs.len() < nchunks {
            outs.resize_with(nchunks, ChunkOut::default);
        }
        let outs_l = &mut outs[..nchunks];
        {
            let fr = &frontier;
            outs_l
                .par_iter_mut()
                .enumerate()
                .with_max_len(1)
                .for_each(|(ci, o)| ctx.expand_chunk(ci * per, fr.block(ci), o));
        }

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
        let cand_mem = total as u64 * CAND_BYTES;
        peak = peak.max(base + cand_mem);
        if total == 0 {
            transitions += level_transitions;
            break StopReason::Complete;
        }

        // 2. Claim: the minimal link (= the first discoverer in canonical order) wins each
        // fingerprint. Candidates were not checked against the visited set (almost none of a
        // level's successors are in it; most duplicates are within the level), so each distinct
        // fingerprint is looked up there once, below, instead of every candidate.
        let claim_mem = base + cand_mem + claim.bytes_after_reset(total);
        if budget.is_some_and(|b| claim_mem > b) {
            break StopReason::MemoryBudget;
        }
        peak = peak.max(claim_mem);
        claim.reset(total);
        let distinct: u64 = outs_l
            .par_iter()
            .with_max_len(1)
            .map(|o| {
                let n = o.fps.len();
                let mut fresh = 0u64;
                for k in 0..n {
                    if k + PREFETCH_AHEAD < n {
                        claim.prefetch(o.fps[k + PREFETCH_AHEAD]);
                    }
                    fresh += claim.claim(o.fps[k], o.links[k]) as u64;
                }
                fresh
            })
            .sum();

        // 3. Select: each distinct fingerprint not yet visited is inserted into the visited set
        // (which must first fit all of them) and its winning link kept; sorted, the links are
        // the next level in canonical order.
        let grow_len = unique + distinct;
        let grow = !table.fits(grow_len);
        let table_after = if grow { FpTable::capacity_for(grow_len) as u64 * 8 } else { 0 };
        let select_mem = claim_mem + distinct * 8 + table_after;
        if budget.is_some_and(|b| select_mem > b) {
            break StopReason::MemoryBudget;
        }
        peak = peak.max(select_mem);
        if grow {
            table.grow_to(FpTable::capacity_for(grow_len));
        }
        let scans = claim.scan_chunks();
        if selected.len() < scans.len() {
            selected.resize_with(scans.len(), Vec::new);
        }
        {
            let t = &table;
            selected[..scans.len()].par_iter_mut().zip(scans.par_iter()).with_max_len(1).for_each(|(out, &range)| {
                out.clear();
                claim.for_each_in(range, |fp, link, next_fp| {
                    if let Some(f) = next_fp {
                        t.prefetch(f);
                    }
                    if t.insert(fp) {
                        out.push(link);
                    }
                });
            });
        }
        let winners: u64 = selected[..scans.len()].iter().map(|v| v.len() as u64).sum();
        if winners == 0 {
            transitions += level_transitions;
            break StopReason::Complete;
        }
        // Concatenated in parallel: a level's links are fresh memory (kept for the paths).
        let mut level_links: Vec<u64> = Vec::with_capacity(winners as usize);
        {
            let spare = &mut level_links.spare_capacity_mut()[..winners as usize];
            let mut parts = Vec::with_capacity(scans.len());
            let mut rest = spare;
            for v in &selected[..scans.len()] {
                let (d, r) = std::mem::take(&mut rest).split_at_mut(v.len());
                parts.push(d);
                rest = r;
            }
            parts.into_par_iter().zip(selected[..scans.len()].par_iter()).for_each(|(d, v)| {
                for (d, &l) in d.iter_mut().zip(v) {
                    d.write(l);
                }
            });
        }
        // SAFETY: the `winners` slots were split among the scan chunks (their lengths sum to
        // `winners`) and each part was written in full.
        unsafe { level_links.set_len(winners as usize) };
        level_links.par_sort_unstable();
        let room = opts.max_states.map_or(u64::MAX, |m| m.saturating_sub(unique));
        let take = winners.min(room);
        cut = winners > room;
        level_links.truncate(take as usize);

        // Memory after the commit: the next frontier's states and its links.
        let commit_mem = base + table_after + take * (8 + state_bytes);
        if budget.is_some_and(|b| commit_mem > b) {
            break StopReason::MemoryBudget;
        }
        peak = peak.max(commit_mem);
        transitions += level_transitions;
        if take == 0 {
            break StopReason::MaxStates;
        }

        // 4. Commit the next level: regenerate the winners' states from their parents straight
        // into the next frontier's blocks (in canonical order), in waves of WAVE_BLOCKS blocks;
        // after each wave the blocks of parents no later winner needs go back to the pool.
        let mut next: Frontier<M::State> = Frontier::new(&pool);
        for wave in level_links.chunks(per * WAVE_BLOCKS) {
            let mut dst = Frontier::take_blocks(&mut pool, wave.len().div_ceil(per));
            let noop: Vec<bool> = {
                let fr = &frontier;
                dst.par_iter_mut()
                    .zip(wave.par_chunks(per))
                    .with_max_len(1)
                    .map(|(d, l)| regenerate(model, hooks, fr, l, &mut d[..l.len()]))
                    .collect()
            };
            for ((d, l), noop) in dst.into_iter().zip(wave.chunks(per)).zip(noop) {
                // `regenerate` initialised the first `l.len()` slots (it panics otherwise).
                next.push_block(d, l.len(), noop);
            }
            let last_parent = (wave[wave.len() - 1] >> ACTION_BITS) as usize;
            frontier.release_below(last_parent / per, &mut pool);
        }
        frontier.clear(&mut pool);
        frontier = next;
        links.push(level_links);
        link_count += take;
        unique += take;
        depth += 1;
        report_progress(depth, frontier.len(), unique, transitions, base_memory(&table, link_count, frontier.len()));
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
    frontier.clear(&mut pool);
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
