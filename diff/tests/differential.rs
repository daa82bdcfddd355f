//! CI differential test: a bounded number of `trc diff` scenarios (fixed seed, SACK and
//! non-SACK, timestamps on and off) on the live kernel; fails below 100% agreement on
//! segments, ca_state, cwnd and ssthresh. Skipped (with a message) without root or /dev/net/tun.
//! See docs/explanation/differential.md.

use trc_diff::{run, DiffOptions, GenOptions, Verdict};

/// The committed seed and the number of scenarios per (SACK, timestamps) combination.
const SEED: u64 = 11;
const PER_MODE: usize = 6;

#[test]
fn model_agrees_with_the_kernel_on_the_committed_seed() {
    if let Some(why) = trc_kernel::skip_reason() {
        eprintln!("skipped: kernel runs impossible here: {why}");
        return;
    }
    let mut problems = Vec::new();
    for (sack, ts) in [(true, true), (true, false), (false, true), (false, false)] {
        let opts = DiffOptions {
            scenarios: PER_MODE,
            seed: SEED,
            gen: GenOptions {
                sack: Some(sack),
                ts: Some(ts),
                ..GenOptions::default()
            },
            ..DiffOptions::default()
        };
        let rep = run(&opts, &mut |l| eprintln!("{l}"));
        eprint!("{}", rep.render());
        for f in ["segments", "ca_state", "cwnd", "ssthresh"] {
            if rep.rate(f) < 1.0 {
                problems.push(format!(
                    "sack={sack} ts={ts}: {f} agrees on {:.3}% of steps",
                    100.0 * rep.rate(f)
                ));
            }
        }
        for r in rep
            .results
            .iter()
            .filter(|r| matches!(r.verdict, Verdict::Disagree | Verdict::Error))
        {
            problems.push(format!(
                "sack={sack} ts={ts}: {} {:?}: {}",
                r.scenario.name(),
                r.verdict,
                r.trial
                    .as_ref()
                    .and_then(|t| t.comparison.divergence.as_ref())
                    .map(|d| d.describe())
                    .or(r.note.clone())
                    .unwrap_or_default()
            ));
        }
        assert!(rep.steps_compared > 0, "nothing compared");
    }
    assert!(
        problems.is_empty(),
        "the model and the kernel disagree:\n{}",
        problems.join("\n")
    );
}
