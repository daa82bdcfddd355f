//! The parallel level-synchronous engine (see the crate docs for the design).

use std::hash::Hash;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::Instant;

use rayon::prelude::*;
use stateright::{Expectation, Model, Property};

use crate::table::{ClaimTable, FpTable};
use crate::{
    build_properties, fingerprint, is_hit, path_from_indices, Options, Progress, Report,
    StopReason, ACTION_BITS, ACTION_MASK,
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

/// A successor not in the visited set when generated.
struct Cand<S> {
    fp: u64,
    /// `parent rank << ACTION_BITS | action index`.
    link: u64,
    state: S,
}

struct ChunkOut<S> {
    cands: Vec<Cand<S>>,
    transitions: u64,
    /// Per property: first rank in this chunk that is a hit.
    hits: Vec<Option<usize>>,
}

struct Ctx<'a, M: Model> {
    model: &'a M,
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

const FLUSH: u64 = 256;

impl<M: Model> Ctx<'_, M>
where
    M::State: Hash,
{
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

    fn expand_chunk(&self, base: usize, chunk: &[M::State]) -> ChunkOut<M::State> {
        let model = self.model;
        let mut out = ChunkOut { cands: Vec::new(), transitions: 0, hits: vec![None; self.props.len()] };
        let mut actions = Vec::new();
        let mut pending = 0u64;
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
                        let Some(next) = model.next_state(state, a) else { continue };
                        if model.within_boundary(&next) && !self.table.contains(fingerprint(&next)) {
                            self.probe_found.store(true, Relaxed);
                            break;
                        }
                    }
                }
                Mode::Expand => {
                    if self.over_budget.load(Relaxed) {
                        if out.cands.capacity() > 0 {
                            out.cands = Vec::new();
                        }
                        continue;
                    }
                    assert!((rank as u64) >> (64 - ACTION_BITS) == 0, "BFS level too wide");
                    let link = (rank as u64) << ACTION_BITS;
                    let before = out.cands.len();
                    actions.clear();
                    model.actions(state, &mut actions);
                    for (ai, a) in actions.drain(..).enumerate() {
                        let Some(next) = model.next_state(state, a) else { continue };
                        if !model.within_boundary(&next) {
                            continue;
                        }
                        out.transitions += 1;
                        let fp = fingerprint(&next);
                        if self.table.contains(fp) {
                            continue;
                        }
                        assert!(ai as u64 <= ACTION_MASK, "more than 2^24 actions in one state");
                        out.cands.push(Cand { fp, link: link | ai as u64, state: next });
                    }
                    if self.cand_limit.is_some() {
                        pending += (out.cands.len() - before) as u64;
                        if pending >= FLUSH {
                            self.flush(&mut pending);
                        }
                    }
                }
            }
        }
        self.flush(&mut pending);
        out
    }
}

/// Checks `model` exhaustively with the parallel engine. See the crate docs for the semantics;
/// the result (apart from `elapsed`) does not depend on `opts.threads`.
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
    let threads = match opts.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("trc-bfs-{i}"))
        .build()
        .expect("failed to build the rayon thread pool");
    pool.install(|| run(model, opts, progress, threads))
}

fn run<M>(
    model: &M,
    opts: &Options,
    progress: Option<&(dyn Fn(&Progress) + Sync)>,
    threads: usize,
) -> Report<M::Action>
where
    M: Model + Sync,
    M::State: Hash + Send + Sync,
    M::Action: Send + Sync + Clone,
{
    let start = Instant::now();
    let props = model.properties();
    let state_bytes = (std::mem::size_of::<M::State>() + opts.state_heap_bytes) as u64;
    let cand_bytes = (std::mem::size_of::<Cand<M::State>>() + opts.state_heap_bytes) as u64;
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
            props: &props,
            active: &active,
            table: &table,
            mode,
            cand_limit: budget.map(|b| b.saturating_sub(base) / cand_bytes.max(1)),
            cand_count: AtomicU64::new(0),
            over_budget: AtomicBool::new(base > budget.unwrap_or(u64::MAX)),
            probe_found: AtomicBool::new(false),
        };

        // 1. Expand.
        let chunk = frontier.len().div_ceil(threads * 8).clamp(1, 2048);
        let mut outs: Vec<ChunkOut<M::State>> = frontier
            .par_chunks(chunk)
            .enumerate()
            .map(|(ci, c)| ctx.expand_chunk(ci * chunk, c))
            .collect();

        for (i, h) in hits.iter_mut().enumerate() {
            if h.is_none() {
                if let Some(rank) = outs.iter().filter_map(|o| o.hits[i]).min() {
                    *h = Some((depth, rank));
                }
            }
        }
        let violated = props
            .iter()
            .zip(&hits)
            .any(|(p, h)| p.expectation == Expectation::Always && h.is_some());
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
        let level_transitions: u64 = outs.iter().map(|o| o.transitions).sum();
        let total: usize = outs.iter().map(|o| o.cands.len()).sum();
        peak = peak.max(base + total as u64 * cand_bytes);
        if total == 0 {
            transitions += level_transitions;
            break StopReason::Complete;
        }

        // 2. Claim: the minimal candidate index wins each fingerprint.
        let claim_mem = base + total as u64 * cand_bytes + ClaimTable::bytes_for(total);
        if budget.is_some_and(|b| claim_mem > b) {
            break StopReason::MemoryBudget;
        }
        peak = peak.max(claim_mem);
        let mut offsets = Vec::with_capacity(outs.len());
        let mut acc = 0usize;
        for o in &outs {
            offsets.push(acc);
            acc += o.cands.len();
        }
        {
            let claim = ClaimTable::new(total);
            outs.par_iter().zip(&offsets).for_each(|(o, &off)| {
                for (k, c) in o.cands.iter().enumerate() {
                    claim.claim(c.fp, (off + k) as u64);
                }
            });
            // 3. Select the winners, in canonical order.
            outs.par_iter_mut().zip(&offsets).for_each(|(o, &off)| {
                let mut k = off as u64;
                o.cands.retain(|c| {
                    let won = claim.winner(c.fp) == k;
                    k += 1;
                    won
                });
            });
        }
        let winners: u64 = outs.iter().map(|o| o.cands.len() as u64).sum();
        let room = opts.max_states.map_or(u64::MAX, |m| m.saturating_sub(unique));
        let take = winners.min(room);
        cut = winners > room;

        // Memory after the commit (the old and new visited tables coexist while growing).
        let new_len = unique + take;
        let grow = !table.fits(new_len);
        let table_after = if grow { FpTable::capacity_for(new_len) as u64 * 8 } else { 0 };
        let commit_mem = base + winners * cand_bytes + take * 8 + table_after;
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

        // Commit the next level.
        let mut remaining = take as usize;
        for o in outs.iter_mut() {
            let k = o.cands.len().min(remaining);
            o.cands.truncate(k);
            remaining -= k;
        }
        outs.par_iter().for_each(|o| {
            for c in &o.cands {
                table.insert(c.fp);
            }
        });
        let mut next = Vec::with_capacity(take as usize);
        let mut level_links = Vec::with_capacity(take as usize);
        for o in outs.iter_mut() {
            for c in o.cands.drain(..) {
                next.push(c.state);
                level_links.push(c.link);
            }
        }
        drop(outs);
        frontier = next;
        links.push(level_links);
        link_count += take;
        unique += take;
        depth += 1;
        report_progress(
            depth,
            frontier.len(),
            unique,
            transitions,
            base_memory(&table, link_count, frontier.len()),
        );
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
