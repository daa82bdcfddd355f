//! The single-threaded reference BFS: the definition of the canonical answer, written plainly.

use std::collections::{HashSet, VecDeque};
use std::hash::Hash;
use std::time::Instant;

use stateright::{Expectation, Model};

use crate::{build_properties, fingerprint, is_hit, path_from_indices, Options, Report, StopReason};

const NO_PARENT: usize = usize::MAX;

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
    let mut visited: HashSet<u64> = HashSet::new();
    // Per node: (parent node or NO_PARENT, action index or init index).
    let mut nodes: Vec<(usize, usize)> = Vec::new();
    let mut queue: VecDeque<(M::State, usize, usize)> = VecDeque::new();
    // Depth of the first level whose states are not expanded because `max_states` was hit.
    let mut cut_at: Option<usize> = None;
    let full = |visited: &HashSet<u64>| opts.max_states.is_some_and(|m| visited.len() as u64 >= m);

    for (i, s) in model.init_states().into_iter().enumerate() {
        if !model.within_boundary(&s) {
            continue;
        }
        let fp = fingerprint(&s);
        if visited.contains(&fp) {
            continue;
        }
        if full(&visited) {
            cut_at.get_or_insert(0);
            continue;
        }
        visited.insert(fp);
        nodes.push((NO_PARENT, i));
        queue.push_back((s, 0, nodes.len() - 1));
    }

    let mut cur = 0usize;
    let mut transitions = 0u64;
    let mut level_transitions = 0u64;
    let mut probe_new = false;
    let mut actions = Vec::new();
    let stop = loop {
        if !matches!(queue.front(), Some((_, d, _)) if *d <= cur) {
            // End of level `cur`.
            let violated = props
                .iter()
                .zip(&hits)
                .any(|(p, h)| p.expectation == Expectation::Always && h.is_some());
            if opts.fail_fast && violated {
                transitions -= level_transitions;
                break StopReason::FailFast;
            }
            if cut_at.is_some_and(|c| cur >= c) {
                break StopReason::MaxStates;
            }
            if opts.max_depth == Some(cur) {
                break if probe_new { StopReason::MaxDepth } else { StopReason::Complete };
            }
            if queue.is_empty() {
                break if cut_at.is_some() { StopReason::MaxStates } else { StopReason::Complete };
            }
            cur += 1;
            level_transitions = 0;
            continue;
        }
        let (state, depth, node) = queue.pop_front().unwrap();
        for (i, p) in props.iter().enumerate() {
            if hits[i].is_none() && is_hit(model, p, &state) {
                hits[i] = Some(node);
            }
        }
        if cut_at.is_some_and(|c| depth >= c) {
            continue;
        }
        let probe = opts.max_depth == Some(depth);
        if probe && probe_new {
            continue;
        }
        actions.clear();
        model.actions(&state, &mut actions);
        for (ai, a) in actions.drain(..).enumerate() {
            let Some(next) = model.next_state(&state, a) else { continue };
            if !model.within_boundary(&next) {
                continue;
            }
            let fp = fingerprint(&next);
            if probe {
                if !visited.contains(&fp) {
                    probe_new = true;
                    break;
                }
                continue;
            }
            transitions += 1;
            level_transitions += 1;
            if visited.contains(&fp) {
                continue;
            }
            if full(&visited) {
                cut_at.get_or_insert(depth + 1);
                continue;
            }
            visited.insert(fp);
            nodes.push((node, ai));
            queue.push_back((next, depth + 1, nodes.len() - 1));
        }
    };

    let properties = build_properties(&props, &hits, |mut node| {
        let mut indices = Vec::new();
        while nodes[node].0 != NO_PARENT {
            indices.push(nodes[node].1);
            node = nodes[node].0;
        }
        indices.reverse();
        path_from_indices(model, nodes[node].1, &indices)
    });
    Report {
        unique_states: (visited.len() - queue.len()) as u64,
        transitions,
        max_depth: cur,
        elapsed: start.elapsed(),
        complete: stop == StopReason::Complete,
        stop_reason: stop,
        properties,
        peak_memory_bytes: 0,
        visited_set_bytes: 0,
    }
}
