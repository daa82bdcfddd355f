//! `--max-memory` holds: the peak resident memory of `trc check`, measured by the kernel
//! (`getrusage(RUSAGE_CHILDREN)`), stays within 5 % of the budget, and a check it stopped
//! with no violation is incomplete (exit 3). One test in this binary, so the children whose
//! peak `RUSAGE_CHILDREN` reports are only its own.

use std::process::Command;

/// The largest peak RSS (bytes) of the children waited for so far.
fn children_peak_rss() -> u64 {
    // SAFETY: a zeroed rusage is a valid out-parameter.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: plain syscall on our own struct.
    assert_eq!(
        unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) },
        0
    );
    ru.ru_maxrss as u64 * 1024
}

#[test]
fn peak_rss_stays_within_the_budget_and_the_stop_is_incomplete() {
    // Increasing budgets: the peak over all children so far is the last one's.
    for mib in [64u64, 300] {
        let out = Command::new(env!("CARGO_BIN_EXE_trc"))
            .args([
                "check",
                "--segments",
                "9",
                "--sack",
                "--property",
                "I5",
                "--threads",
                "2",
                "--max-memory",
                &mib.to_string(),
                "--json",
            ])
            .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
        assert_eq!(
            out.status.code(),
            Some(3),
            "budget {mib} MiB: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(v["stop_reason"], "MemoryBudget");
        assert_eq!(v["result"], "incomplete");
        assert_eq!(v["incomplete"], true);
        let peak = children_peak_rss();
        let budget = mib << 20;
        assert!(
            peak <= budget + budget / 20,
            "budget {mib} MiB: peak RSS {:.1} MiB",
            peak as f64 / (1 << 20) as f64
        );
        eprintln!(
            "budget {mib} MiB: peak RSS {:.1} MiB, {} states",
            peak as f64 / (1 << 20) as f64,
            v["unique_states"]
        );
    }
}
