//! Speed comparison with stateright's own BFS (ignored by default; run in release mode):
//!
//! `cargo test -p trc-engine --release --test speed -- --ignored --nocapture`
//!
//! `TRC_BENCH_K` / `TRC_BENCH_MAX` size the `Counters` model ((MAX + 1)^K states);
//! `TRC_BENCH_ONLY_ENGINE=1` skips stateright.

use std::time::Instant;

use stateright::{Checker, Model};
use trc_engine::toy::Counters;
use trc_engine::{check, Options};

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn peak_rss_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}

#[test]
#[ignore]
fn speed_vs_stateright() {
    let m = Counters {
        k: env("TRC_BENCH_K", 4),
        max: env("TRC_BENCH_MAX", 30) as u8,
    };
    for threads in [1, 2] {
        let r = check(
            &m,
            &Options {
                threads,
                ..Options::default()
            },
            None,
        );
        let s = r.elapsed.as_secs_f64();
        println!(
            "trc-engine  threads={threads}: {} states, {} transitions in {:.2} s = {:.0} k states/s; \
             visited set {:.1} bytes/state, estimated peak {:.1} bytes/state; peak RSS so far {} MB",
            r.unique_states,
            r.transitions,
            s,
            r.unique_states as f64 / s / 1e3,
            r.visited_set_bytes as f64 / r.unique_states as f64,
            r.peak_memory_bytes as f64 / r.unique_states as f64,
            peak_rss_kb() / 1024,
        );
    }
    if std::env::var_os("TRC_BENCH_ONLY_ENGINE").is_some() {
        return;
    }
    for threads in [1, 2] {
        let t = Instant::now();
        let c = m.clone().checker().threads(threads).spawn_bfs().join();
        let s = t.elapsed().as_secs_f64();
        println!(
            "stateright threads={threads}: {} states in {:.2} s = {:.0} k states/s; peak RSS so far {} MB",
            c.unique_state_count(),
            s,
            c.unique_state_count() as f64 / s / 1e3,
            peak_rss_kb() / 1024,
        );
        assert!(c.is_done());
        let _ = m.init_states();
    }
}
