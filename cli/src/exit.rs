//! Exit codes: the one place they are computed from the libraries' typed results.
//!
//! 0 holds (or the command succeeded), 1 violated (a property violated outside the baseline, a
//! script failed, a diff below its bar), 2 usage or input error, 3 incomplete (something was not
//! checked: a check stopped early, a scenario did not run), 4 skipped (no root, no tun, no qemu,
//! no kernel image), 130 interrupted.

use trc_check::{CheckReport, Outcome};

pub const HOLDS: i32 = 0;
pub const VIOLATED: i32 = 1;
pub const USAGE: i32 = 2;
pub const INCOMPLETE: i32 = 3;
pub const SKIPPED: i32 = 4;
pub const INTERRUPTED: i32 = 130;

/// Prints `trc: error: MSG` and returns [`USAGE`].
pub fn usage_error(msg: &(impl std::fmt::Display + ?Sized)) -> i32 {
    eprintln!("trc: error: {msg}");
    USAGE
}

/// Prints `WHAT: MSG` and returns [`USAGE`].
pub fn bad_input(what: &str, msg: &dyn std::fmt::Display) -> i32 {
    eprintln!("{what}: {msg}");
    USAGE
}

/// A kernel target's error: bad input, a missing kernel/qemu (skipped), or a failed run.
pub fn of_target_error(e: &trc_kernel::target::TargetError) -> i32 {
    use trc_kernel::target::TargetError;
    match e {
        TargetError::Usage(_) => USAGE,
        TargetError::Missing(_) => SKIPPED,
        TargetError::Failed(_) => VIOLATED,
    }
}

/// A `trc_vm` error, printed as `WHAT: ERROR`: bad input, something missing (skipped), or a
/// failure.
pub fn of_vm_error(what: &str, e: &trc_vm::Error) -> i32 {
    eprintln!("{what}: {e}");
    match e {
        trc_vm::Error::Usage(_) => USAGE,
        trc_vm::Error::Missing(_) => SKIPPED,
        trc_vm::Error::Failed(_) => VIOLATED,
    }
}

/// A check's outcome.
pub fn of_outcome(o: Outcome) -> i32 {
    match o {
        Outcome::Holds => HOLDS,
        Outcome::Violated => VIOLATED,
        Outcome::Incomplete => INCOMPLETE,
    }
}

/// Several bounds files' checks: the worst outcome.
pub fn of_check(reports: &[CheckReport]) -> i32 {
    of_outcome(Outcome::worst(reports.iter().map(|r| r.result)))
}

/// A diff: violated when a field agrees below the bar or a kernel run failed.
pub fn of_diff(rep: &trc_diff::DiffReport, bar: f64) -> i32 {
    if !rep.below(bar).is_empty() || rep.errors > 0 {
        VIOLATED
    } else {
        HOLDS
    }
}

/// A script's run (on the model or a kernel): passed, failed, or incomplete.
pub fn of_script(v: trc_pkt::report::Verdict) -> i32 {
    match v {
        trc_pkt::report::Verdict::Passed { .. } => HOLDS,
        trc_pkt::report::Verdict::Failed { .. } => VIOLATED,
        trc_pkt::report::Verdict::Incomplete { .. } => INCOMPLETE,
    }
}

/// A VM run of scripts: its scripts' codes combined (`trc_vm::VmRun::exit_code`; the guest
/// reports each script's code on the serial port).
pub fn of_vm_run(run: &trc_vm::VmRun) -> i32 {
    run.exit_code()
}
