//! # trc-engine: deterministic, parallel, shortest-counterexample BFS over `stateright::Model`
//!
//! [`check`] exhaustively explores the states of any [`stateright::Model`] breadth-first and
//! reports, for each property, a **shortest** counterexample (`always`) or example
//! (`sometimes`). `eventually` properties are reported as [`Verdict::Unchecked`]: they are not
//! checked (stateright's own BFS check for them is unsound on cycles).
//!
//! ## The canonical answer
//!
//! Results are defined by a sequential BFS that
//! 1. visits the initial states in `init_states()` order (skipping those outside
//!    `within_boundary` and duplicates of earlier ones),
//! 2. expands each state's successors in the order `actions()` pushes them (skipping actions
//!    whose `next_state` is `None` and successors outside `within_boundary`),
//! 3. keeps the **first** discoverer of each state as its parent,
//! 4. checks every property on every visited state, in visiting order; the reported path of a
//!    property is the one of the first state (in that order) that violates it (`always`) or
//!    satisfies it (`sometimes`). Since BFS visits states by increasing depth, that path is a
//!    shortest one.
//!
//! ```
//! use trc_engine::{check, replay, toy::Jugs, Options, Verdict};
//!
//! let opts = Options { threads: 2, ..Options::default() };
//! let progress = |p: &trc_engine::Progress| eprintln!("depth {} states {}", p.depth, p.unique_states);
//! let report = check(&Jugs, &opts, Some(&progress));
//! let p = report.property("big jug never holds 4").unwrap();
//! assert_eq!(p.verdict, Verdict::Violated);
//! let path = p.path.as_ref().unwrap();
//! assert_eq!(path.actions.len(), 6); // shortest
//! let states = replay(&Jugs, path);
//! assert_eq!(states.last().unwrap().1, (3, 4));
//! ```
//!
//! [`check_reference`] is that sequential BFS, written plainly (`HashSet<u64>` + `VecDeque`).
//! [`check`] computes exactly the same [`Report`] (apart from `elapsed`) with any number of
//! threads.
//!
//! ## Determinism design (level-synchronous BFS with a min-index claim)
//!
//! In the sequential BFS, the states of depth `d+1` are visited in the order of their first
//! discoverer's key `(rank of the parent within depth d, action index)`. [`check`] rebuilds that
//! order level by level:
//!
//! 1. **Expand** (parallel): the frontier (the states of depth `d`, in canonical order) is cut
//!    into chunks (their boundaries depend only on the level's size, not on the thread count);
//!    each chunk checks the properties on its states (remembering the first hit of each
//!    property in the chunk) and generates successors into a scratch state (in place when the
//!    caller supplies [`StateHooks`]). A successor already generated earlier in the same chunk
//!    is dropped (a small set on the worker's stack; the earlier one has the smaller key, and
//!    most of a level's duplicates are siblings met within a chunk). The others, the chunk's
//!    *candidates*, are kept in order: fingerprint and parent link `(parent rank << 24 | action
//!    index)` (16 bytes; the link is also the candidate's canonical order key) and the state
//!    itself in the chunk's store (blocks recycled through a pool): a block's first state
//!    whole, copied with non-temporal stores, and, for a state of 128 bytes or more in whole
//!    words, each later one as the words where it differs from that first one (`delta.rs`;
//!    about a third of the size on trc's model). Candidates are not looked up in the visited set here: almost none of a level's
//!    successors are in it, so that lookup is done once per distinct fingerprint in step 3.
//!    The chunks run in waves; after each wave the stores holding frontier states that no later
//!    chunk reads go back to the pool, so about one level of states is in memory.
//! 2. **Claim** (parallel): every candidate stores its link in a per-level lock-free table
//!    keyed by fingerprint (allocated once, cleared per level); `fetch_max` on the bitwise
//!    complement keeps the **minimal** link, i.e. the first discoverer. (Looked up in batches,
//!    prefetching the table slot 8 candidates ahead, as in steps 3 and 4: the tables are far
//!    larger than the caches.)
//! 3. **Visited** (parallel): the claim table is scanned; each of its fingerprints is inserted
//!    (CAS) into the visited set, which holds exactly depths `0..=d`; one that was already
//!    there loses its claim.
//! 4. **Select** (parallel): each chunk keeps, in order, the candidates that hold their
//!    fingerprint's claim. Chunk by chunk, they are the states of depth `d+1` in canonical
//!    order, read in place from the stores; their links become the level's link array.
//!
//! A level's duplicates across chunks are stored (and dropped when their store is released),
//! which costs memory traffic but no second `next_state`; an earlier version regenerated the
//! winners from their parents instead (docs/lab/notebook.md compares them).
//!
//! The first violation of a property is the one at the smallest depth and, within it, the
//! smallest rank (minimum over chunks). Options that stop early do so only at level boundaries
//! and cut the next frontier in canonical order (`max_states`), so partial results are
//! deterministic too.
//!
//! ## Memory
//!
//! The visited set is an open-addressing table of 8-byte fingerprints kept between 50% and 70%
//! full (11.4–16 bytes per state) plus 8 bytes of parent link per state: 19.4–24 bytes per
//! state in total ([`Report::visited_set_bytes`]). Full states are kept only for the current
//! frontier (as it is being expanded) and the level being built; candidates take 16 bytes each
//! besides their states. Counterexample paths are rebuilt at the end by following parent links
//! back to an initial state and re-running `actions`/`next_state` forwards.
//!
//! Fingerprints ([`fingerprint`]) feed the state's `Hash` stream to [`fphash::FpHasher`], a
//! buffering wyhash-style hasher: one store per `write_*` call and one 128-bit multiply per 16
//! bytes (stateright's ahash mixes on every call, which dominates for a state with ~150 fields).
//! They are therefore not the same numbers as stateright's internal fingerprints.
//! [`check_with`] takes the model's own fingerprint function instead (the TCP model packs its
//! state into words: about half the cost); any function works that gives equal states equal
//! values and different states different ones with 64-bit-hash quality — the report does not
//! depend on the fingerprint values, only on which states they identify.
//!
//! ## Differences from stateright's `spawn_bfs`
//! * Exploration is exhaustive even when the model has no property or every property has
//!   been decided (stateright stops in both cases), unless `fail_fast` is set.
//! * `max_depth` counts transitions (initial states have depth 0; stateright's `max_depth`
//!   is ours + 1), and properties *are* checked on states at the depth limit.
//! * `transitions` counts generated in-boundary successors, duplicates included: for a full
//!   run it equals stateright's `state_count() - <number of in-boundary initial states>`.
//! * [`Path::init_index`] indexes the unfiltered `init_states()` vector.

use std::hash::{Hash, Hasher};
use std::time::Duration;

use serde::{Deserialize, Serialize};
pub use stateright::Expectation;
use stateright::Model;

pub(crate) mod delta;
pub mod dist;
pub mod fphash;
mod parallel;
mod reference;
mod rss;
mod store;
mod table;
pub mod toy;

pub use parallel::{check, check_with};
pub use reference::check_reference;

/// Options of a check. `Options::default()`: all threads, no limit, no fail-fast.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Worker threads; 0 means `std::thread::available_parallelism()`.
    pub threads: usize,
    /// Do not expand states at this depth (number of transitions from an initial state).
    /// States at the limit are still checked. If any of them has an unvisited successor the
    /// check stops with [`StopReason::MaxDepth`], otherwise it is complete.
    pub max_depth: Option<usize>,
    /// Stop at the end of the BFS level in which the first `always` property was violated
    /// (that whole level is checked, so the reported paths are still the canonical ones).
    pub fail_fast: bool,
    /// Stop cleanly with [`StopReason::MemoryBudget`] before the estimated memory of the
    /// visited set, parent links, frontier and candidates would exceed this.
    pub max_memory_bytes: Option<u64>,
    /// Visit at most this many unique states (the last level is cut in canonical order; its
    /// states are checked but not expanded) and stop with [`StopReason::MaxStates`].
    pub max_states: Option<u64>,
    /// Heap bytes owned by a state beyond `size_of::<State>()`, for the memory estimate.
    pub state_heap_bytes: usize,
    /// Also stop with [`StopReason::MemoryBudget`] when the process's measured resident memory
    /// (plus what the next step allocates) would exceed this: the backstop for what the
    /// estimate does not see (the allocator, the binary; see `rss.rs`). Such a stop point
    /// depends on the allocator and the process, not only on the model. `trc check
    /// --max-memory` sets both limits.
    pub max_rss_bytes: Option<u64>,
    /// With `max_memory_bytes`: instead of stopping when the states of the frontier and of the
    /// level being built would not fit in the budget, write them to a spill file created in a
    /// private directory `trc-spill-<pid>-<n>-<ns>` (mode 0700) under this directory (e.g.
    /// `std::env::temp_dir()`, i.e. `$TMPDIR` or `/tmp`); the file and the directory are unlinked
    /// right after the file is opened, so nothing is left behind however the process ends. The
    /// visited set, the parent links and the claim table stay in memory: the check still stops
    /// with [`StopReason::MemoryBudget`] if those would not fit. The report is the same as
    /// without spilling (apart from `elapsed`, `peak_memory_bytes` and [`Report::spill`]).
    pub spill_dir: Option<std::path::PathBuf>,
    /// With `spill_dir`: at most this many 64 KiB state blocks in memory (by default the
    /// engine derives the cap from the budget, level by level). For tests and tuning.
    pub spill_max_blocks: Option<usize>,
}

/// What the spill file did in a check with [`Options::spill_dir`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpillReport {
    /// The private directory the file was created in (removed right away).
    pub dir: String,
    /// State bytes written to the file and read back.
    pub bytes_written: u64,
    pub bytes_read: u64,
    /// What those took in the file: the blocks are LZ4-compressed.
    pub file_bytes_written: u64,
    pub file_bytes_read: u64,
    /// Peak bytes of the state blocks in memory.
    pub peak_block_bytes: u64,
    /// The first I/O error (the check then stopped with [`StopReason::MemoryBudget`]), or why
    /// the file could not be created (the check then stopped at the budget as without spilling).
    pub error: Option<String>,
}

/// Why a check stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum StopReason {
    /// Every reachable state (within the boundary and `max_depth`) was visited.
    Complete,
    /// `fail_fast` and an `always` property was violated.
    FailFast,
    /// `max_depth` cut off unvisited states.
    MaxDepth,
    /// `max_states` was reached.
    MaxStates,
    /// `max_memory_bytes` would have been exceeded.
    MemoryBudget,
}

/// Outcome for one property. When [`Report::complete`] is false, `Holds` and `NotFound` only
/// speak for the explored part of the state space.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Verdict {
    /// `always`: no visited state violates it.
    Holds,
    /// `always`: a counterexample was found (see `path`).
    Violated,
    /// `sometimes`: an example was found (see `path`).
    ExampleFound,
    /// `sometimes`: no visited state satisfies it.
    NotFound,
    /// `eventually`: not supported by this engine.
    Unchecked,
}

/// A path from an initial state: `init_states()[init_index]`, then `actions` in order.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Path<A> {
    /// Index into the (unfiltered) `Model::init_states()` vector.
    pub init_index: usize,
    pub actions: Vec<A>,
}

impl<A> Path<A> {
    /// Number of transitions.
    pub fn len(&self) -> usize {
        self.actions.len()
    }
    pub fn is_empty(&self) -> bool {
        self.actions.is_empty()
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PropertyReport<A> {
    pub name: &'static str,
    pub expectation: Expectation,
    pub verdict: Verdict,
    /// Shortest counterexample (`Violated`) or example (`ExampleFound`).
    pub path: Option<Path<A>>,
    /// With a classifier ([`Hooks::classify`], `always` properties only): every class of
    /// violating state met, in the canonical order of its first state, each with its number of
    /// violating states and the path to the first one (a shortest violation of that class).
    /// Empty without a classifier.
    pub classes: Vec<ClassReport<A>>,
}

/// One class of violations of a property (see [`Hooks::classify`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ClassReport<A> {
    /// The classifier's value.
    pub class: u64,
    /// Visited states that violate the property and fall in this class.
    pub count: u64,
    /// Path to the first of them in canonical order (a shortest one).
    pub path: Path<A>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Report<A> {
    /// Distinct states visited (inserted into the visited set).
    pub unique_states: u64,
    /// In-boundary successors generated while expanding states, duplicates included.
    pub transitions: u64,
    /// Depth (in transitions) of the deepest visited state.
    pub max_depth: usize,
    pub elapsed: Duration,
    /// `stop_reason == StopReason::Complete`.
    pub complete: bool,
    pub stop_reason: StopReason,
    /// In `Model::properties()` order.
    pub properties: Vec<PropertyReport<A>>,
    /// Peak of the memory estimate (visited set, parent links, frontier, candidates); 0 for
    /// [`check_reference`].
    pub peak_memory_bytes: u64,
    /// Final size of the visited set: fingerprint table plus parent links (0 for
    /// [`check_reference`]). Divided by `unique_states`: 19.4–24 bytes per state.
    pub visited_set_bytes: u64,
    /// The sums of [`Hooks::tally`] (empty without a tally, and for [`check_reference`]).
    pub tally: Vec<u64>,
    /// With [`Options::spill_dir`] and a budget: what the spill file did.
    pub spill: Option<SpillReport>,
    /// A distributed check's figures per rank and per level ([`dist::check_distributed`]).
    pub dist: Option<dist::DistReport>,
}

impl<A> Report<A> {
    pub fn property(&self, name: &str) -> Option<&PropertyReport<A>> {
        self.properties.iter().find(|p| p.name == name)
    }
}

/// Statistics passed to the progress callback, at least once per BFS level.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Progress {
    /// Depth of the level just visited.
    pub depth: usize,
    /// States in that level.
    pub frontier: u64,
    pub unique_states: u64,
    pub transitions: u64,
    pub elapsed: Duration,
    pub memory_bytes: u64,
}

/// The fingerprint of a state: its `Hash` stream through [`fphash::FpHasher`]; never 0.
#[inline]
pub fn fingerprint<T: Hash + ?Sized>(value: &T) -> u64 {
    let mut h = fphash::FpHasher::default();
    value.hash(&mut h);
    h.finish()
}

/// The states along `path`: first `(None, initial state)`, then `(Some(action), next state)`
/// for each action. Panics if the path does not fit the model (bad init index or an action
/// whose `next_state` is `None`).
pub fn replay<M: Model>(model: &M, path: &Path<M::Action>) -> Vec<(Option<M::Action>, M::State)>
where
    M::Action: Clone,
{
    let mut inits = model.init_states();
    assert!(
        path.init_index < inits.len(),
        "path init_index {} out of range",
        path.init_index
    );
    let mut out = Vec::with_capacity(path.actions.len() + 1);
    out.push((None, inits.swap_remove(path.init_index)));
    for (i, a) in path.actions.iter().enumerate() {
        let next = model
            .next_state(&out.last().unwrap().1, a.clone())
            .unwrap_or_else(|| panic!("replay: action {i} of the path has no next state"));
        out.push((Some(a.clone()), next));
    }
    out
}

/// Builds a [`Path`] from action indices (positions in the `actions()` vector) by re-running
/// the model forwards.
pub(crate) fn path_from_indices<M: Model>(
    model: &M,
    init_index: usize,
    indices: &[usize],
) -> Path<M::Action>
where
    M::Action: Clone,
{
    let mut state = model.init_states().swap_remove(init_index);
    let mut actions = Vec::with_capacity(indices.len());
    let mut buf = Vec::new();
    for &ai in indices {
        buf.clear();
        model.actions(&state, &mut buf);
        let a = buf.swap_remove(ai);
        state = model
            .next_state(&state, a.clone())
            .expect("path reconstruction: model is not deterministic");
        actions.push(a);
    }
    Path {
        init_index,
        actions,
    }
}

/// Verdicts from the first hit (a node id) of each property.
pub(crate) fn build_properties<M: Model, H: Copy, F>(
    props: &[stateright::Property<M>],
    hits: &[Option<H>],
    mut path_of: F,
) -> Vec<PropertyReport<M::Action>>
where
    F: FnMut(H) -> Path<M::Action>,
{
    props
        .iter()
        .zip(hits)
        .map(|(p, hit)| {
            let (verdict, path) = match (&p.expectation, hit) {
                (Expectation::Always, None) => (Verdict::Holds, None),
                (Expectation::Always, Some(n)) => (Verdict::Violated, Some(path_of(*n))),
                (Expectation::Sometimes, None) => (Verdict::NotFound, None),
                (Expectation::Sometimes, Some(n)) => (Verdict::ExampleFound, Some(path_of(*n))),
                (Expectation::Eventually, _) => (Verdict::Unchecked, None),
            };
            PropertyReport {
                name: p.name,
                expectation: p.expectation.clone(),
                verdict,
                path,
                classes: Vec::new(),
            }
        })
        .collect()
}

/// Whether `state` is a hit for `p` (violates an `always`, satisfies a `sometimes`).
#[inline]
pub(crate) fn is_hit<M: Model>(model: &M, p: &stateright::Property<M>, state: &M::State) -> bool {
    match p.expectation {
        Expectation::Always => !(p.condition)(model, state),
        Expectation::Sometimes => (p.condition)(model, state),
        Expectation::Eventually => false,
    }
}

pub(crate) const ACTION_BITS: u32 = 24;
pub(crate) const ACTION_MASK: u64 = (1 << ACTION_BITS) - 1;

/// How [`check_with`] fingerprints states and computes successors.
///
/// A plain `Fn(&State) -> u64` is a `Hooks`: it supplies the fingerprint, and successors come
/// from [`Model::next_state`]. [`StateHooks`] also supplies an in-place successor function,
/// which builds each successor straight into the engine's buffer instead of returning it by
/// value (for a large state the moves cost as much as the step), and a test for states that own
/// no heap memory (their drop is skipped).
pub trait Hooks<M: Model>: Sync {
    /// The state's fingerprint (see [`check_with`] for the requirements).
    fn fingerprint(&self, s: &M::State) -> u64;
    /// Writes the successor of `s` under `a` into `out` and returns true, or returns false and
    /// leaves `out` uninitialised if `a` has none. Must agree with [`Model::next_state`].
    #[inline]
    fn next_state_into(
        &self,
        model: &M,
        s: &M::State,
        a: M::Action,
        out: &mut std::mem::MaybeUninit<M::State>,
    ) -> bool {
        match model.next_state(s, a) {
            Some(n) => {
                out.write(n);
                true
            }
            None => false,
        }
    }
    /// True only if dropping `s` would do nothing (it owns no heap memory): the engine then
    /// forgets a store of such states instead of dropping each one (which reads every state
    /// once more), and does not drop a scratch successor it discards. `false` is always
    /// correct.
    #[inline]
    fn drop_is_noop(&self, _s: &M::State) -> bool {
        false
    }
    /// Whether [`Hooks::classify`] is used: then every `always` property is checked on every
    /// visited state (not only until its first violation) and its violations are reported per
    /// class ([`PropertyReport::classes`]).
    #[inline]
    fn classifies(&self) -> bool {
        false
    }
    /// The class of a state `s` that violates `always` property number `prop` (in
    /// `Model::properties()` order). Must depend only on the model and the state, so that the
    /// classes, their counts and first states do not depend on the thread count.
    #[inline]
    fn classify(&self, _model: &M, _prop: usize, _s: &M::State) -> u64 {
        0
    }
    /// Number of counters [`Hooks::tally`] adds to (0: no tally). The sums are in
    /// [`Report::tally`].
    #[inline]
    fn tallies(&self) -> usize {
        0
    }
    /// Called once for every action of every expanded state, before its successor is built:
    /// adds to `counts` (length [`Hooks::tallies`]) whatever the caller counts about that
    /// transition (e.g. the branches of the model's code it runs). Sums do not depend on the
    /// thread count.
    #[inline]
    fn tally(&self, _model: &M, _s: &M::State, _a: &M::Action, _counts: &mut [u64]) {}
}

/// Hooks `H` with a transition tally `T` over `n` counters (see [`Hooks::tally`]).
pub struct Tallied<H, T> {
    pub hooks: H,
    pub n: usize,
    pub tally: T,
}

impl<M, H, T> Hooks<M> for Tallied<H, T>
where
    M: Model,
    H: Hooks<M>,
    T: Fn(&M, &M::State, &M::Action, &mut [u64]) + Sync,
{
    #[inline]
    fn fingerprint(&self, s: &M::State) -> u64 {
        self.hooks.fingerprint(s)
    }
    #[inline]
    fn next_state_into(
        &self,
        model: &M,
        s: &M::State,
        a: M::Action,
        out: &mut std::mem::MaybeUninit<M::State>,
    ) -> bool {
        self.hooks.next_state_into(model, s, a, out)
    }
    #[inline]
    fn drop_is_noop(&self, s: &M::State) -> bool {
        self.hooks.drop_is_noop(s)
    }
    #[inline]
    fn classifies(&self) -> bool {
        self.hooks.classifies()
    }
    #[inline]
    fn classify(&self, model: &M, prop: usize, s: &M::State) -> u64 {
        self.hooks.classify(model, prop, s)
    }
    #[inline]
    fn tallies(&self) -> usize {
        self.n
    }
    #[inline]
    fn tally(&self, model: &M, s: &M::State, a: &M::Action, counts: &mut [u64]) {
        (self.tally)(model, s, a, counts)
    }
}

/// Hooks `H` with a violation classifier `C` (see [`Hooks::classify`]).
pub struct Classified<H, C> {
    pub hooks: H,
    pub classify: C,
}

impl<M, H, C> Hooks<M> for Classified<H, C>
where
    M: Model,
    H: Hooks<M>,
    C: Fn(&M, usize, &M::State) -> u64 + Sync,
{
    #[inline]
    fn fingerprint(&self, s: &M::State) -> u64 {
        self.hooks.fingerprint(s)
    }
    #[inline]
    fn next_state_into(
        &self,
        model: &M,
        s: &M::State,
        a: M::Action,
        out: &mut std::mem::MaybeUninit<M::State>,
    ) -> bool {
        self.hooks.next_state_into(model, s, a, out)
    }
    #[inline]
    fn drop_is_noop(&self, s: &M::State) -> bool {
        self.hooks.drop_is_noop(s)
    }
    #[inline]
    fn classifies(&self) -> bool {
        true
    }
    #[inline]
    fn classify(&self, model: &M, prop: usize, s: &M::State) -> u64 {
        (self.classify)(model, prop, s)
    }
}

impl<M: Model, F: Fn(&M::State) -> u64 + Sync> Hooks<M> for F {
    #[inline]
    fn fingerprint(&self, s: &M::State) -> u64 {
        self(s)
    }
}

/// [`Hooks`] from three functions (see there).
pub struct StateHooks<F, G, P> {
    pub fingerprint: F,
    pub next_state_into: G,
    pub drop_is_noop: P,
}

impl<M, F, G, P> Hooks<M> for StateHooks<F, G, P>
where
    M: Model,
    F: Fn(&M::State) -> u64 + Sync,
    G: Fn(&M, &M::State, M::Action, &mut std::mem::MaybeUninit<M::State>) -> bool + Sync,
    P: Fn(&M::State) -> bool + Sync,
{
    #[inline]
    fn fingerprint(&self, s: &M::State) -> u64 {
        (self.fingerprint)(s)
    }
    #[inline]
    fn next_state_into(
        &self,
        model: &M,
        s: &M::State,
        a: M::Action,
        out: &mut std::mem::MaybeUninit<M::State>,
    ) -> bool {
        (self.next_state_into)(model, s, a, out)
    }
    #[inline]
    fn drop_is_noop(&self, s: &M::State) -> bool {
        (self.drop_is_noop)(s)
    }
}
