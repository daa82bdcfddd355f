//! The model's step function: `actions` + `next_state` over a fixed sample of reachable states,
//! and the per-state costs the checker adds (clone, `Hash`, the engine's `FpHasher`, the model's
//! own `State::fingerprint`).
//!
//! `cargo bench -p trc-model --bench step`

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use stateright::Model;
use std::collections::{HashSet, VecDeque};
use std::hash::{Hash, Hasher};
use trc_model::config::SackMode;
use trc_model::model::{State, TcpModel};
use trc_model::{Config, Profile};

/// The first `n` states of a BFS of the default SACK configuration (deterministic).
fn sample(model: &TcpModel, n: usize) -> Vec<State> {
    let mut seen = HashSet::new();
    let mut queue: VecDeque<State> = model.init_states().into();
    let mut out = Vec::new();
    let mut acts = Vec::new();
    while let Some(s) = queue.pop_front() {
        if out.len() >= n {
            break;
        }
        acts.clear();
        model.actions(&s, &mut acts);
        for a in acts.drain(..) {
            if let Some(t) = model.next_state(&s, a) {
                if seen.insert(t.clone()) {
                    queue.push_back(t);
                }
            }
        }
        out.push(s);
    }
    out
}

fn step(c: &mut Criterion) {
    let cfg = Config {
        sack: SackMode::Sack,
        ..Config::default()
    };
    let model = TcpModel::new(cfg, Profile::linux_6_18());
    let states = sample(
        &model,
        std::env::var("STEP_SAMPLE").map_or(20_000, |v| v.parse().unwrap()),
    );
    let mut acts = Vec::new();
    let transitions: usize = states
        .iter()
        .map(|s| {
            acts.clear();
            model.actions(s, &mut acts);
            acts.len()
        })
        .sum();
    let mut g = c.benchmark_group("sack_seg6");
    g.sample_size(20);
    g.throughput(Throughput::Elements(transitions as u64));
    g.bench_function("actions+next_state (per transition)", |b| {
        b.iter(|| {
            let mut acts = Vec::new();
            for s in &states {
                acts.clear();
                model.actions(s, &mut acts);
                for a in acts.drain(..) {
                    black_box(model.next_state(s, a));
                }
            }
        })
    });
    g.throughput(Throughput::Elements(states.len() as u64));
    g.bench_function("clone (per state)", |b| {
        b.iter(|| {
            for s in &states {
                black_box(s.clone());
            }
        })
    });
    g.bench_function("hash (per state)", |b| {
        let rs = ahash::RandomState::with_seeds(1, 2, 0, 0);
        b.iter(|| {
            for s in &states {
                black_box(rs.hash_one(s));
            }
        })
    });
    g.bench_function("FpHasher (per state)", |b| {
        b.iter(|| {
            for s in &states {
                let mut h = trc_engine::fphash::FpHasher::default();
                s.hash(&mut h);
                black_box(h.finish());
            }
        })
    });
    g.bench_function("State::fingerprint (per state)", |b| {
        b.iter(|| {
            for s in &states {
                black_box(s.fingerprint());
            }
        })
    });
    g.finish();
}

criterion_group!(benches, step);
criterion_main!(benches);
