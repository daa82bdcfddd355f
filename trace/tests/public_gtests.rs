//! The model replay of the public recovery suite (the 43 gtests of the conformance test, read
//! from the vendored packetdrill tree at test time, never copied here): each script's verdict on
//! linux-6.18 is the one `public-gtests-replay.txt` records, with the reason for every script
//! not fully in scope. No script the model fails may be one the kernel passes (the only
//! `failed` entry fails on the kernel at the same line). Skipped without `../shared/`.

use std::path::Path;
use trc_model::profile::Profile;

#[test]
fn public_recovery_gtests_replay_as_recorded() {
    let gt = match trc_testkit::gtests() {
        Ok(g) => g,
        Err(why) => return trc_testkit::skip("public gtests replay", &why),
    };
    let profile = Profile::linux_6_18();
    let expected = include_str!("public-gtests-replay.txt");
    let mut bad = Vec::new();
    let (mut n, mut passed) = (0, 0);
    for line in expected
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
    {
        let mut w = line.split_whitespace();
        let (want, rel) = (w.next().unwrap(), w.next().unwrap());
        let path = gt.join(rel);
        assert!(
            Path::new(&path).is_file(),
            "{} not in the vendored tree",
            path.display()
        );
        let rep = trc_trace::replay::replay_file(&path, &profile, &Default::default())
            .unwrap_or_else(|e| panic!("{e}"));
        let got = match rep.exit_code() {
            0 => "passed".to_string(),
            1 => format!(
                "failed:{}",
                rep.first_failure().map(|l| l.line).unwrap_or(0)
            ),
            3 => "incomplete".to_string(),
            c => format!("exit {c}"),
        };
        n += 1;
        passed += (got == "passed") as usize;
        if got != want {
            bad.push(format!(
                "{rel}: expected {want}, got {got}\n{}",
                rep.render()
                    .lines()
                    .rev()
                    .take(6)
                    .collect::<Vec<_>>()
                    .join("\n")
            ));
        }
    }
    assert_eq!(n, 43);
    assert!(
        bad.is_empty(),
        "replay verdicts changed (update public-gtests-replay.txt if on purpose):\n{}",
        bad.join("\n\n")
    );
    assert!(passed >= 25, "{passed} of 43 pass");
}
