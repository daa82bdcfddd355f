//! The parallel level-synchronous engine (see the crate docs for the design).

use std::hash::Hash;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::Instant;

use rayon::prelude::*;
use stateright::{Expectation, Model, Property};

use crate::table::{ClaimTable, FpTable, PREFETCH_AHEAD};
use crate::{
    build_properties, fingerprint, is_hit, path_from_indices, Options, Progress, Report, StopReason, ACTION_BITS,
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
    /// Keeps the candidates that won their fingerprint's claim (in order).
    fn select(&mut self, claim: &ClaimTable) {
        let mut w = 0usize;
        let n = self.fps.len();
        for k in 0..n {
            if k + PREFETCH_AHEAD < n {
                claim.prefetch(self.fps[k + PREFETCH_AHEAD]);
            }
            if claim.winner(self.fps[k]) == self.links[k] {
                self.fps[w] = self.fps[k];
                self.links[w] = self.links[k];
                w += 1;
            }
        }
        self.fps.truncate(w);
        self.links.truncate(w);
    }
}

struct Ctx<'a, M: Model, F> {
    model: &'a M,
    fp: &'a F,
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
/// Successors generated before they are checked against the visited set in one batch.
const FILTER_BATCH: usize = 256;

impl<M: Model, F: Fn(&M::State) -> u64> Ctx<'_, M, F> {
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
        let fingerprint = self.fp;
        out.reset(self.props.len());
        let mut actions = Vec::new();
        let mut pending = 0u64;
        // `out.fps[..filtered]` are already checked against the visited set.
        let mut filtered = 0usize;
        for (j, state) in chunk.iter().enumerate() {
            let rank = base + j;
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
                        let Some(next) = model.next_state(state, a) else {
                            continue;
                        };
                        if model.within_boundary(&next) && !self.table.contains(fingerprint(&next)) {
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
                        let Some(next) = model.next_state(state, a) else {
                            continue;
                        };
                        if !model.within_boundary(&next) {
                            continue;
                        }
                        out.transitions += 1;
                        assert!(ai as u64 <= ACTION_MASK, "more than 2^24 actions in one state");
                        out.fps.push(fingerprint(&next));
                        out.links.push(link | ai as u64);
                    }
                    if out.fps.len() - filtered >= FILTER_BATCH {
                        self.filter_visited(out, filtered, &mut pending);
                        filtered = out.fps.len();
                    }
                }
            }
        }
        self.filter_visited(out, filtered, &mut pending);
        self.flush(&mut pending);
    }

    /// Drops the successors `out[from..]` already in the visited set (in order), prefetching
    /// table slots ahead of the lookups, and counts the survivors against the memory budget.
    fn filter_visited(&self, out: &mut ChunkOut, from: usize, pending: &mut u64) {
        let n = out.fps.len();
        let mut w = from;
        for k in from..n {
            if k + PREFETCH_AHEAD < n {
                self.table.prefetch(out.fps[k + PREFETCH_AHEAD]);
            }
            let fp = out.fps[k];
            if !self.table.contains(fp) {
                out.fps[w] = fp;
                out.links[w] = out.links[k];
                w += 1;
            }
        }
        out.fps.truncate(w);
        out.links.truncate(w);
        if self.cand_limit.is_some() {
            *pending += (w - from) as u64;
            if *pending >= FLUSH {
                self.flush(pending);
            }
        }
    }
}

/// The states of a chunk's winners, regenerated from their parents in `frontier`, written to
/// `dst` in order.
fn regenerate<M: Model>(
    model: &M,
    _fingerprint: impl Fn(&M::State) -> u64,
    frontier: &[M::State],
    out: &ChunkOut,
    dst: &mut [MaybeUninit<M::State>],
) where
    M::Action: Clone,
{
    let mut actions = Vec::new();
    let mut parent = usize::MAX;
    crate::table::populate(dst.as_ptr() as *const u8, std::mem::size_of_val(dst));
    for ((slot, &link), &_fp) in dst.iter_mut().zip(&out.links).zip(&out.fps) {
        let rank = (link >> ACTION_BITS) as usize;
        let ai = (link & ACTION_MASK) as usize;
        if rank != parent {
            parent = rank;
            actions.clear();
            model.actions(&frontier[rank], &mut actions);
        }
        let next = model
            .next_state(&frontier[rank], actions[ai].clone())
            .expect("regenerating a successor: the model is not deterministic");
        debug_assert_eq!(_fingerprint(&next), _fp, "regenerated successor differs");
        slot.write(next);
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

/// [`check`] with the model's own fingerprint function instead of the state's `Hash`.
///
/// `fp` must be deterministic, give equal states equal fingerprints and different states
/// different ones with 64-bit-hash quality (a collision merges two states). The report is the
/// same as [`check`]'s (the canonical order depends on parent ranks and action indices, not on
/// fingerprint values), barring a collision.
pub fn check_with<M, F>(
    model: &M,
    opts: &Options,
    progress: Option<&(dyn Fn(&Progress) + Sync)>,
    fp: F,
) -> Report<M::Action>
where
    M: Model + Sync,
    M::State: Send + Sync,
    M::Action: Send + Sync + Clone,
    F: Fn(&M::State) -> u64 + Sync,
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
    // 0 marks an empty table slot.
    let fp = |s: &M::State| match fp(s) {
        0 => 1,
        x => x,
    };
    pool.install(|| run(model, opts, progress, threads, &fp))
}

fn run<M, F>(
    model: &M,
    opts: &Options,
    progress: Option<&(dyn Fn(&Progress) + Sync)>,
    threads: usize,
    fingerprint: &F,
) -> Report<M::Action>
where
    M: Model + Sync,
    M::State: Send + Sync,
    M::Action: Send + Sync + Clone,
    F: Fn(&M::State) -> u64 + Sync,
{
    let start = Instant::now();
    let props = model.properties();
    let state_bytes = (std::mem::size_of::<M::State>() + opts.state_heap_bytes) as u64;
    let budget = opts.max_memory_bytes;

    // Level 0.
    let inits = model.init_states();
    let mut table = FpTable::with_capacity_for(inits.len() as u64);
    let mut frontier: Vec<M::State> = Vec::new();
    let mut init_index: Vec<usize> = Vec::new();
    let mut cut = false;
    for (i, s) in inits.into_iter().enumerate() {
        if !model.within_boundary(&s) {
            continue;
        }
        let fp = fingerprint(&s);
        if table.contains(fp) {
            continue;
        }
        if opts.max_states.is_some_and(|m| frontier.len() as u64 >= m) {
            cut = true;
            continue;
        }
        table.insert(fp);
        frontier.push(s);
        init_index.push(i);
    }
    let mut next: Vec<M::State> = Vec::new();
    let mut outs: Vec<ChunkOut> = Vec::new();
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
            fp: fingerprint,
            props: &props,
            active: &active,
            table: &table,
            mode,
            cand_limit: budget.map(|b| b.saturating_sub(base) / CAND_BYTES),
            cand_count: AtomicU64::new(0),
            over_budget: AtomicBool::new(base > budget.unwrap_or(u64::MAX)),
            probe_found: AtomicBool::new(false),
        };

        // 1. Expand.
        let n = frontier.len();
        let chunk = n.div_ceil(threads * 8).clamp(1, 1024);
        let nchunks = n.div_ceil(chunk);
        if outs.len() < nchunks {
            outs.resize_with(nchunks, ChunkOut::default);
        }
        let outs_l = &mut outs[..nchunks];
        outs_l
            .par_iter_mut()
            .zip(frontier.par_chunks(chunk))
            .enumerate()
            .with_max_len(1)
            .for_each(|(ci, (o, c))| ctx.expand_chunk(ci * chunk, c, o));

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
        drop(ctx);
        let level_transitions: u64 = outs_l.iter().map(|o| o.transitions).sum();
        let total: usize = outs_l.iter().map(|o| o.fps.len()).sum();
        let cand_mem = total as u64 * CAND_BYTES;
        peak = peak.max(base + cand_mem);
        if total == 0 {
            transitions += level_transitions;
            break StopReason::Complete;
        }

        // 2. Claim: the minimal link (= the first discoverer in canonical order) wins each
        // fingerprint.
        let claim_mem = base + cand_mem + claim.bytes_after_reset(total);
        if budget.is_some_and(|b| claim_mem > b) {
            break StopReason::MemoryBudget;
        }
        peak = peak.max(claim_mem);
        claim.reset(total);
        outs_l.par_iter().with_max_len(1).for_each(|o| {
            let n = o.fps.len();
            for k in 0..n {
                if k + PREFETCH_AHEAD < n {
                    claim.prefetch(o.fps[k + PREFETCH_AHEAD]);
                }
                claim.claim(o.fps[k], o.links[k]);
            }
        });
        // 3. Select the winners, in canonical order.
        outs_l.par_iter_mut().with_max_len(1).for_each(|o| o.select(&claim));
        let winners: u64 = outs_l.iter().map(|o| o.fps.len() as u64).sum();
        let room = opts.max_states.map_or(u64::MAX, |m| m.saturating_sub(unique));
        let take = winners.min(room);
        cut = winners > room;

        // Memory after the commit: the next frontier's states, its links, and the visited
        // table (the old and new tables coexist while growing).
        let new_len = unique + take;
        let grow = !table.fits(new_len);
        let table_after = if grow { FpTable::capacity_for(new_len) as u64 * 8 } else { 0 };
        let commit_mem = base + winners * CAND_BYTES + take * (8 + state_bytes) + table_after;
        if budget.is_some_and(|b| commit_mem > b) {
            break StopReason::MemoryBudget;
        }
        peak = peak.max(commit_mem);
        transitions += level_transitions;
        if take == 0 {
            break StopReason::MaxStates;
        }
        if grow {
            table.grow_to(FpTable::capacity_for(new_len));
        }

        // 4. Commit the next level: insert the winners' fingerprints, regenerate their states
        // from their parents straight into the next frontier (in canonical order).
        let mut remaining = take as usize;
        for o in outs_l.iter_mut() {
            let k = o.fps.len().min(remaining);
            o.fps.truncate(k);
            o.links.truncate(k);
            remaining -= k;
        }
        {
            let t = &table;
            outs_l.par_iter().with_max_len(1).for_each(|o| {
                let n = o.fps.len();
                for k in 0..n {
                    if k + PREFETCH_AHEAD < n {
                        t.prefetch(o.fps[k + PREFETCH_AHEAD]);
                    }
                    t.insert(o.fps[k]);
                }
            });
        }
        // The states of two levels ago: dropped in parallel (a drop reads each state, i.e. a few
        // cache misses per state; sequentially that was ≈ 4 % of a 2-thread run).
        next.par_drain(..).for_each(drop);
        // `reserve` on the empty vector: `realloc`, which for a buffer this size is `mremap`
        // in glibc, keeping the pages already touched (a fresh allocation would touch new pages:
        // a page fault per 4 KiB, the largest cost of writing the next frontier).
        next.reserve(take as usize);
        {
            let mut dsts: Vec<&mut [MaybeUninit<M::State>]> = Vec::with_capacity(nchunks);
            let mut rest = &mut next.spare_capacity_mut()[..take as usize];
            for o in outs_l.iter() {
                let (d, r) = std::mem::take(&mut rest).split_at_mut(o.fps.len());
                dsts.push(d);
                rest = r;
            }
            let fr = &frontier[..];
            outs_l.par_iter().zip(dsts.into_par_iter()).with_max_len(1).for_each(|(o, d)| regenerate(model, fingerprint, fr, o, d));
        }
        // SAFETY: the `take` slots were split among the chunks (their winner counts sum to
        // `take`) and every chunk wrote all of its slots (`regenerate` panics otherwise, and a
        // panic propagates out of `for_each` before this line).
        unsafe { next.set_len(take as usize) };
        let mut level_links = Vec::with_capacity(take as usize);
        for o in outs_l.iter() {
            level_links.extend_from_slice(&o.links);
        }
        std::mem::swap(&mut frontier, &mut next);
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
