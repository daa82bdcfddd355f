//! Which of `trc diff`'s random walks (as `trc kernel check --suite random:N,SEED` generates
//! them from linux-6.18) a profile's model decides differently: each walk's actions replayed on
//! the profile's model, compared step by step (cwnd, ssthresh, CA state, packets in flight).
//! A walk no profile separates from 6.18 on the model cannot show that profile's mutant kernel
//! a difference either (docs/kernel-bugs.md uses it to explain the random suite's misses).
//!
//!   cargo run --release -p trc-diff --example screen -- [--n N] [--seed S] PROFILE...
//!
//! PROFILE: a built-in name or a profile file (`vm/mutants/NAME.toml`).

use stateright::Model;
use trc_model::profile::Profile;

fn load(name: &str) -> Result<Profile, String> {
    if let Some(p) = Profile::by_name(name) {
        return Ok(p);
    }
    let src = std::fs::read_to_string(name).map_err(|e| format!("{name}: {e}"))?;
    trc_model::profile::parse_profile_file(&src, name).map_err(|e| e.to_string())
}

/// The first step of walk `sc` at which `p`'s model differs from `base`'s, if any.
fn separates(sc: &trc_diff::Scenario, base: &Profile, p: &Profile) -> Option<usize> {
    let (mb, mp) = (sc.model(base), sc.model(p));
    let (mut sb, mut sp) = (
        mb.init_states().swap_remove(0),
        mp.init_states().swap_remove(0),
    );
    for (k, a) in sc.actions.iter().enumerate() {
        let nb = mb.next_state(&sb, *a)?;
        let Some(np) = mp.next_state(&sp, *a) else {
            return Some(k);
        };
        let view = |s: &trc_model::model::State| {
            (
                s.sender.cwnd,
                s.sender.ssthresh,
                s.sender.ca_state,
                s.flight.len(),
            )
        };
        if view(&nb) != view(&np) {
            return Some(k);
        }
        (sb, sp) = (nb, np);
    }
    None
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut n, mut seed, mut names) = (100usize, 7u64, Vec::new());
    while let Some(a) = args.next() {
        let mut num = |what: &str| {
            args.next()
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or_else(|| {
                    eprintln!("screen: {what} needs a whole number");
                    std::process::exit(2)
                })
        };
        match a.as_str() {
            "--n" => n = num("--n") as usize,
            "--seed" => seed = num("--seed"),
            _ => names.push(a),
        }
    }
    let base = Profile::linux_6_18();
    let g = trc_diff::GenOptions::default();
    let walks: Vec<_> = (0..n)
        .map(|i| trc_diff::generate(&base, seed, i, &g))
        .collect();
    for name in names {
        let p = load(&name).unwrap_or_else(|e| {
            eprintln!("screen: {e}");
            std::process::exit(2)
        });
        let hits: Vec<String> = walks
            .iter()
            .enumerate()
            .filter_map(|(i, sc)| separates(sc, &base, &p).map(|k| format!("{i}@{k}")))
            .collect();
        println!(
            "{name}: {} of {n} walks of seed {seed} (walk@step): {}",
            hits.len(),
            hits.join(" ")
        );
    }
}
