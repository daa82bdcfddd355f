//! The single-threaded reference BFS: the definition of the canonical answer, written plainly.

use std::collections::{HashSet, VecDeque};
use std::hash::Hash;
use std::time::Instant;

use stateright::{Expectation, Model};

use crate::{
    build_properties, fingerprint, is_hit, path_from_indices, Options, Path, Report, StopReason,
};

const NO_PARENT: usize = usize::MAX;

/// The visited states: their fingerprints, the BFS tree and the queue of states to expand.
struct Visited<S> {
    fps: HashSet<u64>,
    /// Per node: (parent node or NO_PARENT, action index or init index).
    nodes: Vec<(usize, usize)>,
    /// (state, depth, node), in visiting order.
    queue: VecDeque<(S, usize, usize)>,
    /// Depth of the first level whose states are not expanded because `max_states` was hit.
    cut_at: Option<usize>,
    max_states: Option<u64>,
}

impl<S> Visited<S> {
    /// Visits `state` (fingerprint `fp`) at `depth`, reached from node `parent` by action
    /// `index` (or initial state `index`, without a parent), unless it was visited before. Once
    /// `max_states` states are visited, a new state is not visited and cuts its level instead.
    fn discover(&mut self, state: S, fp: u64, depth: usize, parent: usize, index: usize) {
        if self.fps.contains(&fp) {
            return;
        }
        if self.max_states.is_some_and(|m| self.fps.len() as u64 >= m) {
            self.cut_at.get_or_insert(depth);
            return;
        }
        self.fps.insert(fp);
        self.nodes.push((parent, index));
        self.queue.push_back((state, depth, self.nodes.len() - 1));
    }

    /// The path to `node`: the tree followed back to its initial state, then the model re-run
    /// forwards.
    fn path_to<M: Model<State = S>>(&self, model: &M, mut node: usize) -> Path<M::Action>
    where
        M::Action: Clone,
    {
        let mut indices = Vec::new();
        while self.nodes[node].0 != NO_PARENT {
            indices.push(self.nodes[node].1);
            node = self.nodes[node].0;
        }
        indices.reverse();
        path_from_indices(model, self.nodes[node].1, &indices)
    }
}

/// Sequential BFS with a `HashSet<u64>` of fingerprints and a `VecDeque`, used to cross-check
/// [`crate::check`]. Honours every option except `threads` and `max_memory_bytes`.
pub fn check_reference<M>(model: &M, opts: &Options) -> Report<M::Action>
where
    M: Model,
    M::State: Hash,
    M::Action: Clone,
{
    let start = Instant::now();
    let props = model.properties();
    let mut hits: Vec<Option<usize>> = vec![None; props.len()];
    let mut visited = Visited {
        fps: HashSet::new(),
        nodes: Vec::new(),
        queue: VecDeque::new(),
        cut_at: None,
        max_states: opts.max_states,
    };

    for (i, s) in model.init_states().into_iter().enumerate() {
        if !model.within_boundary(&s) {
            continue;
        }
        let fp = fingerprint(&s);
        visited.discover(s, fp, 0, NO_PARENT, i);
    }

    let mut cur = 0usize;
    let mut transitions = 0u64;
    let mut level_transitions = 0u64;
    let mut probe_new = false;
    let mut actions = Vec::new();
    let stop = loop {
        if !matches!(visited.queue.front(), Some((_, d, _)) if *d <= cur) {
            // End of level `cur`.
            let violated = props
                .iter()
                .zip(&hits)
                .any(|(p, h)| p.expectation == Expectation::Always && h.is_some());
            if opts.fail_fast && violated {
                transitions -= level_transitions;
                break StopReason::FailFast;
            }
            if visited.cut_at.is_some_and(|c| cur >= c) {
                break StopReason::MaxStates;
            }
            if opts.max_depth == Some(cur) {
                break if probe_new {
                    StopReason::MaxDepth
                } else {
                    StopReason::Complete
                };
            }
            if visited.queue.is_empty() {
                break if visited.cut_at.is_some() {
                    StopReason::MaxStates
                } else {
                    StopReason::Complete
                };
            }
            cur += 1;
            level_transitions = 0;
            continue;
        }
        let (state, depth, node) = visited.queue.pop_front().unwrap();
        for (i, p) in props.iter().enumerate() {
            if hits[i].is_none() && is_hit(model, p, &state) {
                hits[i] = Some(node);
            }
        }
        if visited.cut_at.is_some_and(|c| depth >= c) {
            continue;
        }
        let probe = opts.max_depth == Some(depth);
        if probe && probe_new {
            continue;
        }
        actions.clear();
        model.actions(&state, &mut actions);
        for (ai, a) in actions.drain(..).enumerate() {
            let Some(next) = model.next_state(&state, a) else {
                continue;
            };
            if !model.within_boundary(&next) {
                continue;
            }
            let fp = fingerprint(&next);
            if probe {
                if !visited.fps.contains(&fp) {
                    probe_new = true;
                    break;
                }
                continue;
            }
            transitions += 1;
            level_transitions += 1;
            visited.discover(next, fp, depth + 1, node, ai);
        }
    };

    let properties = build_properties(&props, &hits, |node| visited.path_to(model, node));
    Report {
        unique_states: (visited.fps.len() - visited.queue.len()) as u64,
        transitions,
        max_depth: cur,
        elapsed: start.elapsed(),
        complete: stop == StopReason::Complete,
        stop_reason: stop,
        properties,
        peak_memory_bytes: 0,
        visited_set_bytes: 0,
        tally: Vec::new(),
        spill: None,
        dist: None,
    }
}
