//! States/s of trc-engine vs stateright's `spawn_bfs` on the `Counters` toy model.
//!
//! `cargo bench -p trc-engine --bench bfs`

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use stateright::{Checker, Model};
use trc_engine::toy::Counters;
use trc_engine::{check, Options};

fn bfs(c: &mut Criterion) {
    let model = Counters { k: 4, max: 20 };
    let states = 21u64.pow(4);
    let mut g = c.benchmark_group("counters_k4_max20");
    g.sample_size(10);
    g.throughput(Throughput::Elements(states));
    for threads in [1, 2] {
        g.bench_function(format!("trc-engine/threads={threads}"), |b| {
            b.iter(|| {
                let r = check(
                    &model,
                    &Options {
                        threads,
                        ..Options::default()
                    },
                    None,
                );
                assert_eq!(r.unique_states, states);
            })
        });
        g.bench_function(format!("stateright-spawn_bfs/threads={threads}"), |b| {
            b.iter(|| {
                let c = model.clone().checker().threads(threads).spawn_bfs().join();
                assert_eq!(c.unique_state_count() as u64, states);
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bfs);
criterion_main!(benches);
