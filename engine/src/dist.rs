//! One state space across processes: a hash-partitioned, level-synchronous exact BFS over a
//! message-passing [`Comm`] (an MPI communicator across processes and machines; threads in the
//! tests: [`local`]).
//!
//! Every rank runs [`check_distributed`] with the same model, options and hooks; together they
//! compute exactly [`crate::check`]'s [`Report`] (the canonical answer of the crate docs: same
//! states, transitions, verdicts, counterexamples and classes), on every rank, for any number of
//! ranks.
//!
//! ## How a level is split
//!
//! * **Holding.** The states of level `d`, in canonical order, are cut into `N` contiguous blocks
//!   of (nearly) equal size; rank `k` holds block `k` ([`block_start`]): their states, and their
//!   parent links (for the counterexamples). A state's global *rank* (its index in the level's
//!   canonical order) is what its children's links carry, as in the one-process engine.
//! * **Owning.** The visited set is partitioned by fingerprint: rank `fp % N` owns `fp`.
//!
//! A level then takes these steps (each rank, in lockstep):
//!
//! 1. **Expand** the held block in order: check the properties (first hit per property: the
//!    smallest global rank), generate the successors, and keep the first of each fingerprint
//!    met in the block (later ones have a larger link) as a *candidate*: fingerprint, link
//!    `(parent rank << 24 | action index)` and state.
//! 2. **Claim** (all-to-all): each candidate's `(fingerprint, link)` goes to the fingerprint's
//!    owner, which keeps the minimal link per fingerprint, inserts the fingerprints new to its
//!    part of the visited set and answers each sender, candidate by candidate, whether it won
//!    (new, and the minimal link). Only 16 bytes per candidate and a bit back cross ranks.
//! 3. **Number**: since a rank's parents are one contiguous range of the level, its winners (in
//!    link order) are one contiguous range of the next level's canonical order, which starts at
//!    the exclusive prefix sum of the ranks' winner counts.
//! 4. **Rebalance** (all-to-all): each winner goes to the rank that holds its position in the
//!    next level's blocks, with its link. Branching is even enough that most stay where they
//!    are (the move traffic is reported per level).
//!
//! Property hits, classes, tallies and counts are combined with collectives; the counterexample
//! paths are rebuilt by following parent links back through the holders of each level (one
//! collective per step) and re-running the model forwards, on every rank.
//!
//! States cross ranks, and wait in a rank's frontier, as their bytes when they own no heap memory
//! ([`crate::Hooks::drop_is_noop`]: every rank runs the same binary, checked at the start by the
//! state's size), else as their compact binary `serde` form (postcard, [`packed`]: a TCP model
//! state from 9 segments on in about 230 bytes, against 768 and its heap in memory and about
//! 2,400 as JSON); the frontier's blocks LZ4-compressed. Not supported here: `max_memory_bytes`
//! (no spilling; every rank keeps its part in memory), the measured-memory backstop and
//! [`crate::Hooks::tally`] is summed as in one process.

use std::mem::MaybeUninit;
use std::time::Instant;

use serde::{de::DeserializeOwned, Deserialize, Serialize};
use stateright::{Expectation, Model, Property};

use crate::table::{ClaimTable, FpTable};
use crate::{
    build_properties, is_hit, path_from_indices, Hooks, Options, Path, Progress, Report,
    StopReason, ACTION_BITS, ACTION_MASK,
};

pub mod local;
mod packed;

use packed::{Form, Packed};

/// The collectives the distributed BFS needs, on `u64` words. Every rank calls each one in the
/// same order (they are collective: a rank that skips one deadlocks the others).
pub trait Comm {
    /// This process's rank, `0..size()`.
    fn rank(&self) -> usize;
    /// The number of ranks.
    fn size(&self) -> usize;
    /// Sends `parts[k]` to rank `k` (`parts.len() == size()`); returns what each rank sent to
    /// this one, in rank order.
    fn all_to_all(&self, parts: Vec<Vec<u64>>) -> Vec<Vec<u64>>;
    /// Every rank's `mine`, in rank order.
    fn all_gather(&self, mine: &[u64]) -> Vec<Vec<u64>>;
    /// Element-wise sum over the ranks, in place.
    fn all_sum(&self, v: &mut [u64]) {
        let all = self.all_gather(v);
        for (i, x) in v.iter_mut().enumerate() {
            *x = all.iter().map(|p| p[i]).sum();
        }
    }
    /// Element-wise minimum over the ranks, in place.
    fn all_min(&self, v: &mut [u64]) {
        let all = self.all_gather(v);
        for (i, x) in v.iter_mut().enumerate() {
            *x = all.iter().map(|p| p[i]).min().unwrap_or(*x);
        }
    }
    /// The sum of `x` over the ranks before this one.
    fn exscan_sum(&self, x: u64) -> u64 {
        self.all_gather(&[x])[..self.rank()]
            .iter()
            .map(|p| p[0])
            .sum()
    }
}

/// What one level did across the ranks (summed over the ranks unless said otherwise).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LevelTraffic {
    /// Depth of the level that was expanded.
    pub depth: usize,
    /// Its states.
    pub states: u64,
    /// Candidates sent to their fingerprints' owners (16 bytes each, a bit back).
    pub candidates: u64,
    /// Bytes of the claim step sent to other ranks (fingerprint + link, and the answers).
    pub claim_bytes: u64,
    /// Winners that moved to another rank to rebalance the next level, and their bytes.
    pub moved_states: u64,
    pub move_bytes: u64,
}

/// What a distributed check measured (in [`Report::dist`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DistReport {
    pub ranks: usize,
    /// Per rank: the peak of its memory estimate (its part of the visited set, its links, its
    /// block of the frontier, its candidates and claim table), in rank order.
    pub rank_peak_memory_bytes: Vec<u64>,
    /// Per rank: its final part of the visited set (fingerprint table plus links).
    pub rank_visited_set_bytes: Vec<u64>,
    /// Per rank: its process's measured peak resident memory (`VmHWM`; ranks that are threads
    /// of one process all show that process's).
    pub rank_peak_rss_bytes: Vec<u64>,
    /// Per level, the messages between ranks.
    pub levels: Vec<LevelTraffic>,
    /// The ranks were threads of one process ([`local::check`], `trc check --ranks`): each
    /// rank's `rank_peak_rss_bytes` is the whole process's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub in_one_process: bool,
}

/// The first position of block `k` when `total` positions are cut into `n` nearly equal blocks.
pub fn block_start(k: usize, n: usize, total: u64) -> u64 {
    ((k as u128 * total as u128) / n as u128) as u64
}

/// The block (rank) holding position `x` of `total` cut into `n` blocks ([`block_start`]).
fn block_of(x: u64, n: usize, total: u64) -> usize {
    debug_assert!(x < total);
    (((x as u128 + 1) * n as u128 - 1) / total as u128) as usize
}

/// The rank owning fingerprint `fp` in the visited set.
#[inline]
fn owner(fp: u64, n: usize) -> usize {
    (fp % n as u64) as usize
}

/// A state's form ([`Packed::drain_forms`]) as words for another rank: `[byte length | plain
/// flag << 63, bytes...]`.
fn encode(form: Form, out: &mut Vec<u64>) {
    let len = form.bytes.len();
    out.push(len as u64 | (form.plain as u64) << 63);
    let start = out.len();
    out.resize(start + len.div_ceil(8), 0);
    // SAFETY: `out[start..]` has room for the form's bytes.
    unsafe {
        crate::store::copy_frozen(
            form.bytes.as_ptr(),
            out[start..].as_mut_ptr() as *mut u8,
            len,
        )
    };
}

/// The form written by [`encode`] at the start of `words`, and the words it took.
fn decode(words: &[u64]) -> (Form<'_>, usize) {
    let len = (words[0] & !(1 << 63)) as usize;
    let used = 1 + len.div_ceil(8);
    // SAFETY: `len` bytes written by `encode` in `words[1..used]`, all initialised.
    let bytes = unsafe { std::slice::from_raw_parts(words[1..used].as_ptr() as *const u8, len) };
    let plain = words[0] >> 63 == 1;
    (Form { bytes, plain }, used)
}

/// A set of fingerprints (already uniform hashes: used as they are).
type FpSet = std::collections::HashSet<u64, std::hash::BuildHasherDefault<FpIdentity>>;

/// The identity hash of a fingerprint.
#[derive(Default)]
struct FpIdentity(u64);

impl std::hash::Hasher for FpIdentity {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ b as u64;
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = x;
    }
}

/// This rank's candidates of one level, in link order.
struct Candidates<S> {
    fps: Vec<u64>,
    links: Vec<u64>,
    states: Packed<S>,
}

/// What checking one level's held block found: per property the first hit (global rank), the
/// classes `(property, class, first rank, count)` in order of first occurrence, the tally, and
/// the in-boundary successors generated.
struct LevelFinds {
    hits: Vec<Option<usize>>,
    classes: Vec<(usize, u64, usize, u64)>,
    tally: Vec<u64>,
    transitions: u64,
    /// At `max_depth`: the in-boundary successors' fingerprints, by owner, to ask whether any is
    /// unvisited.
    probe: Vec<Vec<u64>>,
}

/// One rank's check in progress.
struct Rank<'a, M: Model, H, C: ?Sized> {
    model: &'a M,
    opts: &'a Options,
    hooks: &'a H,
    comm: &'a C,
    props: Vec<Property<M>>,
    start: Instant,
    progress: Option<&'a (dyn Fn(&Progress) + Sync)>,
    /// This rank's part of the visited set, and how many fingerprints it holds.
    table: FpTable,
    owned: u64,
    claim: ClaimTable,
    /// Per level: the global rank of this rank's first held state and the held states' links
    /// (level 0: their indices in `init_states()`).
    links: Vec<(u64, Vec<u64>)>,
    /// Per level: its size (to find the holder of a global rank).
    sizes: Vec<u64>,
    /// The held block of the current level, in canonical order (read once, by the level's
    /// expansion).
    frontier: Packed<M::State>,
    hits: Vec<Option<(usize, usize)>>,
    classes: Vec<(usize, u64, (usize, usize), u64)>,
    tally: Vec<u64>,
    cut: bool,
    unique: u64,
    transitions: u64,
    depth: usize,
    /// Peak of this rank's memory estimate.
    peak: u64,
    traffic: Vec<LevelTraffic>,
}

/// [`crate::check_with`] across the ranks of `comm`: every rank calls it with the same
/// arguments; every rank returns the same report, which equals the one-process report (apart
/// from `elapsed`, the memory figures and [`Report::dist`]). See the module docs.
///
/// Panics if `opts.max_memory_bytes` or `opts.max_rss_bytes` is set (not supported across
/// ranks), or if the ranks' state sizes differ (not the same binary).
pub fn check_distributed<M, H, C>(
    model: &M,
    opts: &Options,
    progress: Option<&(dyn Fn(&Progress) + Sync)>,
    hooks: H,
    comm: &C,
) -> Report<M::Action>
where
    M: Model + Sync,
    M::State: Send + Sync + Serialize + DeserializeOwned,
    M::Action: Send + Sync + Clone,
    H: Hooks<M>,
    C: Comm + ?Sized,
{
    assert!(
        opts.max_memory_bytes.is_none() && opts.max_rss_bytes.is_none(),
        "a memory budget is not supported by the distributed check"
    );
    let sizes = comm.all_gather(&[size_of::<M::State>() as u64]);
    assert!(
        sizes.iter().all(|s| s[0] == size_of::<M::State>() as u64),
        "ranks with different state sizes: every rank must run the same binary"
    );
    let hooks = crate::parallel::NonZeroFp(hooks);
    let mut r = Rank::new(model, opts, progress, &hooks, comm);
    let stop = loop {
        if let std::ops::ControlFlow::Break(stop) = r.level() {
            break stop;
        }
    };
    r.finish(stop)
}

/// The initial states as the one-process engine takes them: in `init_states()` order, without
/// those outside the boundary and duplicates, cut at `max_states`; with their indices and
/// fingerprints. Returns whether the cut left some out.
fn initial<M: Model, H: Hooks<M>>(
    model: &M,
    hooks: &H,
    max_states: Option<u64>,
) -> (Vec<(usize, u64, M::State)>, bool) {
    let mut seen = std::collections::HashSet::new();
    let mut kept = Vec::new();
    let mut cut = false;
    for (i, s) in model.init_states().into_iter().enumerate() {
        if !model.within_boundary(&s) {
            continue;
        }
        let fp = hooks.fingerprint(&s);
        if seen.contains(&fp) {
            continue;
        }
        if max_states.is_some_and(|m| kept.len() as u64 >= m) {
            cut = true;
            continue;
        }
        seen.insert(fp);
        kept.push((i, fp, s));
    }
    (kept, cut)
}

impl<'a, M, H, C> Rank<'a, M, H, C>
where
    M: Model + Sync,
    M::State: Send + Sync + Serialize + DeserializeOwned,
    M::Action: Send + Sync + Clone,
    H: Hooks<M>,
    C: Comm + ?Sized,
{
    /// Level 0 ([`initial`], every rank computing the same list): each rank keeps its block and
    /// inserts the fingerprints it owns.
    fn new(
        model: &'a M,
        opts: &'a Options,
        progress: Option<&'a (dyn Fn(&Progress) + Sync)>,
        hooks: &'a H,
        comm: &'a C,
    ) -> Self {
        let (n, me) = (comm.size(), comm.rank());
        let (kept, cut) = initial(model, hooks, opts.max_states);
        let total = kept.len() as u64;
        let table = FpTable::with_capacity_for(total / n as u64 + 1);
        let (lo, hi) = (block_start(me, n, total), block_start(me + 1, n, total));
        let (mut init_index, mut frontier, mut owned) = (Vec::new(), Packed::default(), 0);
        for (g, (i, fp, s)) in kept.into_iter().enumerate() {
            if owner(fp, n) == me {
                table.insert(fp);
                owned += 1;
            }
            if (lo..hi).contains(&(g as u64)) {
                init_index.push(i as u64);
                let plain = hooks.drop_is_noop(&s);
                frontier.push(s, plain);
            }
        }
        let props = model.properties();
        let r = Rank {
            model,
            opts,
            hooks,
            comm,
            hits: vec![None; props.len()],
            props,
            start: Instant::now(),
            progress,
            table,
            owned,
            claim: ClaimTable::new(0),
            links: vec![(lo, init_index)],
            sizes: vec![total],
            frontier,
            classes: Vec::new(),
            tally: Vec::new(),
            cut,
            unique: total,
            transitions: 0,
            depth: 0,
            peak: 0,
            traffic: Vec::new(),
        };
        let mut r = r;
        r.note_memory(0);
        r.report_progress(0);
        r
    }

    /// One level: check (and expand) the held block, combine the hits, then claim, number and
    /// rebalance the candidates into the next level. The stops are the one-process engine's, in
    /// its order (`Bfs::level`).
    fn level(&mut self) -> std::ops::ControlFlow<StopReason> {
        use std::ops::ControlFlow::{Break, Continue};
        let probe = self.opts.max_depth == Some(self.depth);
        let expand = !self.cut && !probe;
        let (cands, mut finds) = self.expand(expand, probe && !self.cut);
        let level_transitions = finds.transitions;
        let probe_parts = std::mem::take(&mut finds.probe);
        self.combine(finds);
        let violated = self
            .props
            .iter()
            .zip(&self.hits)
            .any(|(p, h)| p.expectation == Expectation::Always && h.is_some());
        if self.opts.fail_fast && violated {
            return Break(StopReason::FailFast);
        }
        if self.cut {
            return Break(StopReason::MaxStates);
        }
        if probe {
            return Break(match self.probe(probe_parts) {
                true => StopReason::MaxDepth,
                false => StopReason::Complete,
            });
        }
        let mut t = [cands.fps.len() as u64, level_transitions];
        self.comm.all_sum(&mut t);
        self.transitions += t[1];
        let mut traffic = LevelTraffic {
            depth: self.depth,
            states: self.sizes[self.depth],
            candidates: t[0],
            ..LevelTraffic::default()
        };
        let step = self.next_level(cands, &mut traffic);
        let mut sent = [
            traffic.claim_bytes,
            traffic.moved_states,
            traffic.move_bytes,
        ];
        self.comm.all_sum(&mut sent);
        [
            traffic.claim_bytes,
            traffic.moved_states,
            traffic.move_bytes,
        ] = sent;
        self.traffic.push(traffic);
        step?;
        self.report_progress(0);
        Continue(())
    }

    /// Claim, number and rebalance a level's candidates (`Break` if there is no next level).
    fn next_level(
        &mut self,
        cands: Candidates<M::State>,
        traffic: &mut LevelTraffic,
    ) -> std::ops::ControlFlow<StopReason> {
        use std::ops::ControlFlow::{Break, Continue};
        if traffic.candidates == 0 {
            return Break(StopReason::Complete);
        }
        let won = self.claim(&cands, traffic);
        let w = won.iter().filter(|&&b| b).count() as u64;
        let first = self.comm.exscan_sum(w);
        let mut total = [w];
        self.comm.all_sum(&mut total);
        let total = total[0];
        if total == 0 {
            return Break(StopReason::Complete);
        }
        let room = self
            .opts
            .max_states
            .map_or(u64::MAX, |m| m.saturating_sub(self.unique));
        if room == 0 {
            return Break(StopReason::MaxStates);
        }
        let take = total.min(room);
        self.cut = total > room;
        self.rebalance(cands, &won, first, take, traffic);
        self.unique += take;
        self.depth += 1;
        Continue(())
    }

    /// Step 1: checks the properties on the held block and, if `expand`, generates its
    /// candidates: the in-boundary successors whose fingerprint is new to the block, in link
    /// order (the first of each fingerprint has the smallest link); if `probe` (at
    /// `max_depth`), collects the successors' fingerprints instead. The block is consumed.
    fn expand(&mut self, expand: bool, probe: bool) -> (Candidates<M::State>, LevelFinds) {
        let (model, hooks, n) = (self.model, self.hooks, self.comm.size());
        let lo = self.links[self.depth].0 as usize;
        let mut c = Candidates {
            fps: Vec::new(),
            links: Vec::new(),
            states: Packed::default(),
        };
        let mut f = LevelFinds {
            hits: vec![None; self.props.len()],
            classes: Vec::new(),
            tally: vec![0; hooks.tallies()],
            transitions: 0,
            probe: vec![Vec::new(); if probe { n } else { 0 }],
        };
        let mut local = FpSet::default();
        let active: Vec<bool> = self.hits.iter().map(Option::is_none).collect();
        let mut actions = Vec::new();
        let mut scratch = MaybeUninit::<M::State>::uninit();
        let mut j = 0;
        std::mem::take(&mut self.frontier).drain(|state| {
            let g = lo + j;
            j += 1;
            self.check_state(g, &state, &active, &mut f);
            if !expand && !probe {
                return;
            }
            actions.clear();
            model.actions(&state, &mut actions);
            for (ai, a) in actions.drain(..).enumerate() {
                if expand && !f.tally.is_empty() {
                    hooks.tally(model, &state, &a, &mut f.tally);
                }
                if !hooks.next_state_into(model, &state, a, &mut scratch) {
                    continue;
                }
                // SAFETY: `next_state_into` returned true: `scratch` is initialised; it is read
                // out once (and the copy left behind is never used again).
                let next = unsafe { scratch.assume_init_read() };
                if !model.within_boundary(&next) {
                    continue;
                }
                let fp = hooks.fingerprint(&next);
                if probe {
                    f.probe[owner(fp, n)].push(fp);
                    continue;
                }
                f.transitions += 1;
                assert!(
                    ai as u64 <= ACTION_MASK,
                    "more than 2^24 actions in one state"
                );
                if local.insert(fp) {
                    c.fps.push(fp);
                    c.links.push((g as u64) << ACTION_BITS | ai as u64);
                    let plain = hooks.drop_is_noop(&next);
                    c.states.push(next, plain);
                }
            }
        });
        self.note_memory(c.states.bytes() + c.fps.len() as u64 * 16 + local.capacity() as u64 * 9);
        (c, f)
    }

    /// Records in `f` the properties held state `g` hits (as the one-process engine does: each
    /// property until its first hit, or with a classifier every `always` property on every
    /// state, counted in its class).
    fn check_state(&self, g: usize, state: &M::State, active: &[bool], f: &mut LevelFinds) {
        let classifies = self.hooks.classifies();
        for (i, p) in self.props.iter().enumerate() {
            let always = p.expectation == Expectation::Always;
            let wanted = if classifies {
                always || active[i] && f.hits[i].is_none()
            } else {
                active[i] && f.hits[i].is_none()
            };
            if !wanted || !is_hit(self.model, p, state) {
                continue;
            }
            if f.hits[i].is_none() {
                f.hits[i] = Some(g);
            }
            if classifies && always {
                let c = self.hooks.classify(self.model, i, state);
                match f.classes.iter_mut().find(|e| e.0 == i && e.1 == c) {
                    Some(e) => e.3 += 1,
                    None => f.classes.push((i, c, g, 1)),
                }
            }
        }
    }

    /// The ranks' finds of a level combined: each property's first hit is the smallest rank that
    /// hits it; classes merged in rank order (so each class's first state is its smallest rank)
    /// and the level's new classes sorted by it; tallies summed.
    fn combine(&mut self, f: LevelFinds) {
        let mut hits: Vec<u64> = f
            .hits
            .iter()
            .map(|h| h.map_or(u64::MAX, |g| g as u64))
            .collect();
        self.comm.all_min(&mut hits);
        for (h, &g) in self.hits.iter_mut().zip(&hits) {
            if h.is_none() && g != u64::MAX {
                *h = Some((self.depth, g as usize));
            }
        }
        let flat: Vec<u64> = f
            .classes
            .iter()
            .flat_map(|&(i, c, g, n)| [i as u64, c, g as u64, n])
            .collect();
        let level_start = self.classes.len();
        for part in self.comm.all_gather(&flat) {
            for e in part.chunks_exact(4) {
                let (i, c, g, n) = (e[0] as usize, e[1], e[2] as usize, e[3]);
                match self.classes.iter_mut().find(|x| x.0 == i && x.1 == c) {
                    Some(x) => x.3 += n,
                    None => self.classes.push((i, c, (self.depth, g), n)),
                }
            }
        }
        self.classes[level_start..].sort_by_key(|e| e.2);
        let mut tally = f.tally;
        self.comm.all_sum(&mut tally);
        if self.tally.len() < tally.len() {
            self.tally.resize(tally.len(), 0);
        }
        for (t, n) in self.tally.iter_mut().zip(&tally) {
            *t += n;
        }
    }

    /// At `max_depth`: whether some held state has an in-boundary successor that no rank's part
    /// of the visited set holds (each successor's fingerprint, in `parts` by owner, is asked of
    /// its owner).
    fn probe(&mut self, parts: Vec<Vec<u64>>) -> bool {
        let unvisited = self
            .comm
            .all_to_all(parts)
            .iter()
            .flatten()
            .filter(|&&fp| !self.table.contains(fp))
            .count() as u64;
        let mut found = [unvisited];
        self.comm.all_sum(&mut found);
        found[0] > 0
    }

    /// Step 2, claim: each candidate's fingerprint and link go to the fingerprint's owner, which
    /// keeps the minimal link per fingerprint, inserts the new fingerprints into its part of the
    /// visited set, and answers, candidate by candidate, whether it won. Returns the answers,
    /// in candidate order.
    fn claim(&mut self, c: &Candidates<M::State>, traffic: &mut LevelTraffic) -> Vec<bool> {
        let (n, me) = (self.comm.size(), self.comm.rank());
        let mut parts = vec![Vec::new(); n];
        let mut order: Vec<Vec<u32>> = vec![Vec::new(); n];
        for (k, (&fp, &link)) in c.fps.iter().zip(&c.links).enumerate() {
            let o = owner(fp, n);
            parts[o].extend([fp, link]);
            order[o].push(k as u32);
        }
        traffic.claim_bytes += bytes_to_others(&parts, me);
        let got = self.comm.all_to_all(parts);
        let received: usize = got.iter().map(|p| p.len() / 2).sum();
        self.note_memory(
            c.states.bytes() + c.fps.len() as u64 * 16 + self.claim.bytes_after_reset(received),
        );
        self.claim.reset(received);
        let mut distinct = 0u64;
        for p in &got {
            for e in p.chunks_exact(2) {
                distinct += self.claim.claim(e[0], e[1]) as u64;
            }
        }
        if !self.table.fits(self.owned + distinct) {
            self.table
                .grow_to(FpTable::capacity_for(self.owned + distinct));
        }
        let (table, mut fresh) = (&self.table, 0u64);
        for range in self.claim.scan_chunks() {
            self.claim.retain_in(range, |fp, _| {
                let new = table.insert(fp);
                fresh += new as u64;
                new
            });
        }
        self.owned += fresh;
        let answers: Vec<Vec<u64>> = got
            .iter()
            .map(|p| {
                let mut bits = vec![0u64; (p.len() / 2).div_ceil(64)];
                for (i, e) in p.chunks_exact(2).enumerate() {
                    if self.claim.winner(e[0]) == e[1] {
                        bits[i / 64] |= 1 << (i % 64);
                    }
                }
                bits
            })
            .collect();
        traffic.claim_bytes += bytes_to_others(&answers, me);
        let mut won = vec![false; c.fps.len()];
        for (bits, idx) in self.comm.all_to_all(answers).iter().zip(&order) {
            for (i, &k) in idx.iter().enumerate() {
                won[k as usize] = bits[i / 64] >> (i % 64) & 1 == 1;
            }
        }
        won
    }

    /// Step 4, rebalance: the winners (global ranks `first..`, the first `take` of the level
    /// kept) go to the ranks holding their positions in the next level's blocks, with their
    /// links; the held block received, in rank order, is the new frontier.
    fn rebalance(
        &mut self,
        c: Candidates<M::State>,
        won: &[bool],
        first: u64,
        take: u64,
        traffic: &mut LevelTraffic,
    ) {
        let (n, me) = (self.comm.size(), self.comm.rank());
        let mut parts = vec![Vec::new(); n];
        let (mut own_links, mut own_states) = (Vec::new(), Packed::default());
        let (mut k, mut x) = (0, first);
        c.states.drain_forms(|form| {
            let (link, w) = (c.links[k], won[k]);
            k += 1;
            if !w || x >= take {
                return;
            }
            let dest = block_of(x, n, take);
            x += 1;
            if dest == me {
                own_links.push(link);
                own_states.push_form(form);
                return;
            }
            parts[dest].push(link);
            encode(form, &mut parts[dest]);
            traffic.moved_states += 1;
        });
        traffic.move_bytes += bytes_to_others(&parts, me);
        let got = self.comm.all_to_all(parts);
        let (mut links, mut frontier) = (Vec::new(), Packed::default());
        for (src, words) in got.into_iter().enumerate() {
            if src == me {
                links.append(&mut own_links);
                frontier.append(std::mem::take(&mut own_states));
                continue;
            }
            let mut k = 0;
            while k < words.len() {
                links.push(words[k]);
                let (form, used) = decode(&words[k + 1..]);
                frontier.push_form(form);
                k += 1 + used;
            }
        }
        debug_assert_eq!(
            frontier.len() as u64,
            block_start(me + 1, n, take) - block_start(me, n, take)
        );
        self.links.push((block_start(me, n, take), links));
        self.sizes.push(take);
        self.frontier = frontier;
        self.note_memory(0);
    }

    /// This rank's memory estimate now, plus `extra` bytes of the step in progress, into its
    /// peak: its part of the visited set, its links, its block of the frontier.
    fn note_memory(&mut self, extra: u64) {
        let links: u64 = self.links.iter().map(|(_, l)| l.len() as u64 * 8).sum();
        let mem = self.table.bytes() + links + self.frontier.bytes() + extra;
        self.peak = self.peak.max(mem);
    }

    /// Progress for the level just reached (rank 0 calls the callback).
    fn report_progress(&self, memory_bytes: u64) {
        if let (Some(cb), 0) = (self.progress, self.comm.rank()) {
            cb(&Progress {
                depth: self.depth,
                frontier: self.sizes[self.depth],
                unique_states: self.unique,
                transitions: self.transitions,
                elapsed: self.start.elapsed(),
                memory_bytes,
            });
        }
    }

    /// The link of the state of depth `d` and global rank `g` (its init index at depth 0), from
    /// the rank holding it (a collective).
    fn link_of(&self, d: usize, g: u64) -> u64 {
        let n = self.comm.size();
        let mut v = [0u64];
        if block_of(g, n, self.sizes[d]) == self.comm.rank() {
            let (lo, links) = &self.links[d];
            v[0] = links[(g - lo) as usize];
        }
        self.comm.all_sum(&mut v);
        v[0]
    }

    /// The path to the state of depth `d` and global rank `g`: parent links followed back
    /// through their holders, then the model re-run forwards (on every rank).
    fn path_to(&self, (d, g): (usize, usize)) -> Path<M::Action> {
        let mut g = g as u64;
        let mut indices = Vec::with_capacity(d);
        for level in (1..=d).rev() {
            let link = self.link_of(level, g);
            indices.push((link & ACTION_MASK) as usize);
            g = link >> ACTION_BITS;
        }
        indices.reverse();
        let init = self.link_of(0, g) as usize;
        path_from_indices(self.model, init, &indices)
    }

    /// The report (the same on every rank).
    fn finish(self, stop: StopReason) -> Report<M::Action> {
        let mut properties = build_properties(&self.props, &self.hits, |hit| self.path_to(hit));
        for &(i, class, first, count) in &self.classes {
            properties[i].classes.push(crate::ClassReport {
                class,
                count,
                path: self.path_to(first),
            });
        }
        let links: u64 = self.links.iter().map(|(_, l)| l.len() as u64 * 8).sum();
        let visited = self.table.bytes() + links;
        let rss = crate::rss::peak_resident_bytes();
        let peaks = self.comm.all_gather(&[self.peak, visited, rss]);
        let dist = DistReport {
            ranks: self.comm.size(),
            rank_peak_memory_bytes: peaks.iter().map(|p| p[0]).collect(),
            rank_visited_set_bytes: peaks.iter().map(|p| p[1]).collect(),
            rank_peak_rss_bytes: peaks.iter().map(|p| p[2]).collect(),
            levels: self.traffic,
            in_one_process: false,
        };
        Report {
            unique_states: self.unique,
            transitions: self.transitions,
            max_depth: self.depth,
            elapsed: self.start.elapsed(),
            complete: stop == StopReason::Complete,
            stop_reason: stop,
            properties,
            peak_memory_bytes: dist.rank_peak_memory_bytes.iter().sum(),
            visited_set_bytes: dist.rank_visited_set_bytes.iter().sum(),
            tally: self.tally,
            spill: None,
            dist: Some(dist),
        }
    }
}

/// Bytes in `parts` bound for ranks other than `me`.
fn bytes_to_others(parts: &[Vec<u64>], me: usize) -> u64 {
    parts
        .iter()
        .enumerate()
        .filter(|&(k, _)| k != me)
        .map(|(_, p)| p.len() as u64 * 8)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_cover_every_position_once() {
        for n in 1..6 {
            for total in 1..40u64 {
                for x in 0..total {
                    let k = block_of(x, n, total);
                    assert!(block_start(k, n, total) <= x && x < block_start(k + 1, n, total));
                }
                assert_eq!(block_start(n, n, total), total);
            }
        }
    }

    #[test]
    fn forms_round_trip_as_words() {
        let forms = [
            (&[1u8, 2, 3][..], true),
            (&[][..], false),
            (&[9; 17][..], false),
        ];
        let mut w = Vec::new();
        for (bytes, plain) in forms {
            encode(Form { bytes, plain }, &mut w);
        }
        let mut k = 0;
        for (bytes, plain) in forms {
            let (f, used) = decode(&w[k..]);
            assert_eq!(
                (f.bytes, f.plain, used),
                (bytes, plain, 1 + bytes.len().div_ceil(8))
            );
            k += used;
        }
        assert_eq!(k, w.len());
    }
}
