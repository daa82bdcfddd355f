//! The base kernel's runs kept between `trc kernel check --patch` invocations (`--base-runs
//! DIR`): a benchmark of many patches against one base runs each base scenario once.
//!
//! [`FirstBatchCache`] wraps the base [`Target`]: its first batch (the comparison's main run) is
//! served from `DIR/KEY.json` where a run of the same script on the same base image with the same
//! options and the same trc binary exists, and runs (and is stored) otherwise; every later batch
//! (the reruns of differing scenarios, which must show that a difference reproduces) runs for
//! real. KEY is a SHA-256 of [`identity`], the script's bytes and those of the files next to it
//! and in `../common` (the `defaults.sh` its shell line runs).

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use trc_kernel::target::{Batch, NoReport, ScriptRun, Target, TargetError};
use trc_kernel::RunReport;

/// What makes two base runs interchangeable: the image's bytes, the guest options and the trc
/// binary (its runner records the trace).
pub fn identity(image: &Path, options: &impl serde::Serialize) -> String {
    let mut h = Sha256::new();
    h.update(std::fs::read(image).unwrap_or_default());
    h.update(serde_json::to_vec(options).unwrap_or_default());
    if let Ok(exe) = std::env::current_exe() {
        h.update(std::fs::read(exe).unwrap_or_default());
    }
    hex(&h.finalize())
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The support files a script may read: the regular files of its directory and of `../common`.
fn support_files(script: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(dir) = script.parent() {
        for d in [dir.to_path_buf(), dir.join("../common")] {
            if let Ok(rd) = std::fs::read_dir(&d) {
                out.extend(
                    rd.filter_map(|e| e.ok().map(|e| e.path()))
                        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x != "pkt")),
                );
            }
        }
    }
    out.sort();
    out
}

fn key(identity: &str, script: &Path) -> Option<String> {
    let mut h = Sha256::new();
    h.update(identity.as_bytes());
    h.update(std::fs::read(script).ok()?);
    for f in support_files(script) {
        h.update(f.file_name()?.to_string_lossy().as_bytes());
        h.update(std::fs::read(&f).ok()?);
    }
    Some(hex(&h.finalize()))
}

/// A base target whose first batch is cached (see the module comment).
pub struct FirstBatchCache<'a> {
    inner: &'a mut dyn Target,
    dir: PathBuf,
    identity: String,
    used: bool,
}

impl<'a> FirstBatchCache<'a> {
    pub fn new(inner: &'a mut dyn Target, dir: &Path, identity: &str) -> FirstBatchCache<'a> {
        FirstBatchCache {
            inner,
            dir: dir.to_path_buf(),
            identity: identity.to_string(),
            used: false,
        }
    }
}

impl Target for FirstBatchCache<'_> {
    fn label(&self) -> String {
        self.inner.label()
    }

    fn batched(&self) -> bool {
        self.inner.batched()
    }

    fn run(
        &mut self,
        scripts: &[PathBuf],
        log: &mut dyn FnMut(&str),
    ) -> Result<Batch, TargetError> {
        if self.used {
            return self.inner.run(scripts, log);
        }
        self.used = true;
        let keys: Vec<Option<String>> = scripts.iter().map(|p| key(&self.identity, p)).collect();
        let mut runs: Vec<Option<ScriptRun>> = keys
            .iter()
            .map(|k| {
                let k = k.as_ref()?;
                let b = std::fs::read(self.dir.join(format!("{k}.json"))).ok()?;
                serde_json::from_slice::<RunReport>(&b).ok().map(Ok)
            })
            .collect();
        let kernel_file = self.dir.join(format!("{}.kernel", &self.identity[..16]));
        let misses: Vec<usize> = (0..scripts.len()).filter(|i| runs[*i].is_none()).collect();
        log(&format!(
            "base runs: {} of {} from {}",
            scripts.len() - misses.len(),
            scripts.len(),
            self.dir.display()
        ));
        let kernel = if misses.is_empty() {
            std::fs::read_to_string(&kernel_file).unwrap_or_else(|_| self.inner.label())
        } else {
            let paths: Vec<PathBuf> = misses.iter().map(|i| scripts[*i].clone()).collect();
            let b = self.inner.run(&paths, log)?;
            let _ = std::fs::create_dir_all(&self.dir);
            let _ = trc_vm::write_atomic(&kernel_file, b.kernel.as_bytes());
            for (j, r) in b.runs.into_iter().enumerate() {
                let i = misses[j];
                if let (Ok(rep), Some(k)) = (&r, &keys[i]) {
                    if let Ok(bytes) = serde_json::to_vec(rep) {
                        let _ = trc_vm::write_atomic(&self.dir.join(format!("{k}.json")), &bytes);
                    }
                }
                runs[i] = Some(r);
            }
            b.kernel
        };
        Ok(Batch {
            kernel,
            runs: runs
                .into_iter()
                .map(|r| r.unwrap_or(Err(NoReport::Missing)))
                .collect(),
        })
    }
}
