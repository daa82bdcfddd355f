//! A kernel booted in qemu as a [`trc_kernel::target::Target`]: each batch is one boot that runs
//! the scripts in order ([`crate::run_in_vm_with`]).

use crate::{Error, Event, KernelImage, ScriptOutcome, VmRun, VmSpec};
use std::path::PathBuf;
use trc_kernel::target::{Batch, NoReport, ScriptRun, Target, TargetError};

impl From<Error> for TargetError {
    fn from(e: Error) -> TargetError {
        match e {
            Error::Usage(m) => TargetError::Usage(m),
            Error::Missing(m) => TargetError::Missing(m),
            Error::Failed(m) => TargetError::Failed(m),
        }
    }
}

/// `spec.kernel` booted once per batch.
pub struct Vm {
    pub spec: VmSpec,
    /// The kernel's release (from the image), for progress lines before the guest says its own.
    pub release: String,
    /// A name for progress lines; default the release.
    pub name: Option<String>,
}

impl Vm {
    pub fn new(img: &KernelImage, spec: VmSpec) -> Vm {
        Vm {
            spec,
            release: img.release.clone(),
            name: None,
        }
    }
}

/// Each script's report from a VM run (found by path, else by position), or why there is none.
pub fn reports(scripts: &[PathBuf], run: &VmRun) -> Vec<ScriptRun> {
    scripts
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let s = run
                .scripts
                .iter()
                .find(|s| s.path == *p)
                .or(run.scripts.get(i));
            match s {
                None => Err(NoReport::NoVmResult),
                Some(s) => match (&s.outcome, s.report()) {
                    (ScriptOutcome::Ran { .. }, Some(r)) => Ok(r.clone()),
                    (ScriptOutcome::Error { message, .. }, _) => {
                        Err(NoReport::InVm(message.clone()))
                    }
                    _ => Err(NoReport::NoVmResult),
                },
            }
        })
        .collect()
}

impl Target for Vm {
    fn label(&self) -> String {
        self.name.clone().unwrap_or_else(|| self.release.clone())
    }

    fn batched(&self) -> bool {
        true
    }

    fn run(
        &mut self,
        scripts: &[PathBuf],
        log: &mut dyn FnMut(&str),
    ) -> Result<Batch, TargetError> {
        let n = scripts.len();
        let label = self.label();
        let mut progress = |e: &Event| {
            if let Some(l) = e.line(&label, n) {
                log(&l);
            }
        };
        let run = crate::run_in_vm_with(&self.spec, scripts, &mut progress)?;
        let runs = reports(scripts, &run);
        let release = if run.release.is_empty() {
            self.release.clone()
        } else {
            run.release.clone()
        };
        log(&format!(
            "VM: boot {:.1} s wall, total {:.1} s wall, {:.1} s qemu CPU",
            run.boot.wall_s, run.total.wall_s, run.total.cpu_s
        ));
        Ok(Batch {
            kernel: format!("{release} (VM, {})", run.accelerator),
            runs,
        })
    }
}
