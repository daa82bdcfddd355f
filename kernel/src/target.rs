//! Where a batch of prepared scripts runs: a [`Target`] is a kernel that takes scripts and gives
//! back one [`RunReport`] per script. [`Host`] is the running kernel (each script in a private
//! network namespace, [`crate::run_file`]); `trc-vm` implements the trait for a kernel booted in
//! qemu. `trc kernel check` and its shrinking drive any of them the same way.

use crate::{RunOptions, RunReport};
use std::path::PathBuf;

/// Why a target could not run a batch at all (a script that fails is a report, not this).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    /// Bad input: a script that does not parse, a kernel file that is not a kernel (exit 2).
    #[error("{0}")]
    Usage(String),
    /// Something this machine lacks: root, tun, qemu, a kernel image (exit 4, skipped).
    #[error("{0}")]
    Missing(String),
    /// Anything else: the VM died, an I/O error (exit 1).
    #[error("{0}")]
    Failed(String),
}

impl TargetError {
    /// The exit code of trc's convention for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            TargetError::Usage(_) => 2,
            TargetError::Missing(_) => crate::EXIT_SKIPPED,
            TargetError::Failed(_) => 1,
        }
    }
}

/// Why a script of a batch has no report.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoReport {
    /// The runner failed on it (on the running kernel): its message.
    #[error("{0}")]
    Runner(String),
    /// The VM's runner failed on it: its message, as the guest sent it.
    #[error("in the VM: {0}")]
    InVm(String),
    /// The VM sent nothing for it.
    #[error("no result from the VM")]
    NoVmResult,
    /// The whole batch could not run.
    #[error(transparent)]
    Target(#[from] TargetError),
    /// The script (or its `defaults.sh`) could not be written for the batch.
    #[error("{0}")]
    Write(String),
    /// The batch ended before it ran (interrupted).
    #[error("no result (interrupted)")]
    Interrupted,
    /// The batch gave fewer runs than it had scripts.
    #[error("no result")]
    Missing,
}

/// One script's run in a batch: its report, or why it has none.
pub type ScriptRun = Result<RunReport, NoReport>;

/// What a batch gave: the kernel's description (`RELEASE (running kernel)`, `RELEASE (VM, tcg)`)
/// and, for each script in order, its report or why it has none.
#[derive(Debug, Clone)]
pub struct Batch {
    pub kernel: String,
    pub runs: Vec<ScriptRun>,
}

/// A kernel that runs scripts.
pub trait Target {
    /// A short name for progress lines ("base", "patched", or the kernel's file name).
    fn label(&self) -> String;
    /// Runs `scripts` in order; `log` gets one progress line per event worth telling.
    fn run(&mut self, scripts: &[PathBuf], log: &mut dyn FnMut(&str))
        -> Result<Batch, TargetError>;
    /// Whether a run has a fixed cost (a boot) that makes one batch cheaper than several
    /// single-script runs.
    fn batched(&self) -> bool {
        false
    }
}

/// The running kernel, each script in a fresh private network namespace.
pub struct Host {
    pub options: RunOptions,
}

impl Host {
    /// The running kernel with trc's default run options and signal handling (Ctrl-C ends the
    /// batch after the current script).
    pub fn new() -> Host {
        Host {
            options: RunOptions {
                handle_signals: true,
                ..Default::default()
            },
        }
    }

    /// The running kernel's release, as `uname -r` gives it.
    pub fn release() -> String {
        std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    }
}

impl Default for Host {
    fn default() -> Self {
        Host::new()
    }
}

impl Target for Host {
    fn label(&self) -> String {
        format!("{} (running kernel)", Host::release())
    }

    fn run(
        &mut self,
        scripts: &[PathBuf],
        log: &mut dyn FnMut(&str),
    ) -> Result<Batch, TargetError> {
        if let Some(r) = crate::skip_reason() {
            return Err(TargetError::Missing(r));
        }
        let n = scripts.len();
        let mut runs = Vec::with_capacity(n);
        for (i, p) in scripts.iter().enumerate() {
            if crate::sys::interrupted() {
                break;
            }
            let r = crate::run_file(p, &self.options).map_err(|e| NoReport::Runner(e.to_string()));
            let v = match &r {
                Ok(r) => r.script.verdict.render(),
                Err(e) => format!("error: {e}"),
            };
            let name = p
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            log(&format!("[{}/{n}] {name}: {v}", i + 1));
            runs.push(r);
        }
        Ok(Batch {
            kernel: self.label(),
            runs,
        })
    }
}
