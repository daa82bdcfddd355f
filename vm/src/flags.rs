//! The command-line side of a VM run shared by `trc kernel run --kernel`, `trc kernel check
//! --kernel` and the impact experiment: the VM flags (clap), the kernel they name, and a run's
//! problem and console.

use clap::{Args, ValueEnum};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `--accel`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AccelArg {
    /// KVM if /dev/kvm works here (and did before), else TCG icount.
    Auto,
    Kvm,
    /// TCG with virtual time (-icount shift=0,sleep=off): timing independent of the host.
    TcgIcount,
}

/// The VM flags of `trc kernel run` and `trc kernel check` (one set, flattened into both).
#[derive(Args, Debug, Clone)]
pub struct VmFlags {
    /// Boot this kernel in qemu and run there: a bzImage, a directory from `trc kernel fetch`,
    /// or debian:SUITE (fetched before).
    #[arg(long, value_name = "VMLINUZ")]
    pub kernel: Option<String>,
    /// The kernel's lib/modules/RELEASE directory (for tun.ko); default the fetched one.
    #[arg(long, value_name = "DIR", requires = "kernel")]
    pub modules: Option<PathBuf>,
    /// The VM's accelerator.
    #[arg(long, value_enum, default_value = "auto", requires = "kernel")]
    pub accel: AccelArg,
    /// Cache directory for kernels and the VM's initramfs (default $TRC_CACHE, $XDG_CACHE_HOME/trc or ~/.cache/trc).
    #[arg(long, value_name = "DIR")]
    pub cache: Option<PathBuf>,
    /// A limit on the whole VM run, in wall-clock seconds (besides the boot and progress limits).
    #[arg(long, value_name = "SECS", requires = "kernel")]
    pub vm_timeout: Option<f64>,
    /// Per-script wall-clock limit (in a VM: guest seconds): past it the run stops where it is
    /// and says so (incomplete, exit 3).
    #[arg(long, value_name = "SECS", default_value = "120")]
    pub script_timeout: f64,
    /// The VM's memory, MB.
    #[arg(long, value_name = "MB", default_value = "1024", requires = "kernel")]
    pub memory: u32,
}

/// A VM flag out of its range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--script-timeout must be at least 1 s, --vm-timeout positive, --memory at least 256 MB")]
pub struct BadLimits;

/// `--console FILE` could not be written (`what`: the command).
#[derive(Debug, thiserror::Error)]
#[error("{what}: cannot write {}: {source}", path.display())]
pub struct ConsoleError {
    pub what: String,
    pub path: PathBuf,
    pub source: std::io::Error,
}

/// No kernel for the VM tests: where it was looked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no Debian 7.2 kernel (set TRC_VM_KERNEL, or run `trc kernel fetch debian:sid`; looked in {})", looked_in.display())]
pub struct NoTestKernel {
    pub looked_in: PathBuf,
}

impl VmFlags {
    /// The limits' ranges, checked before anything runs.
    pub fn validate(&self) -> Result<(), BadLimits> {
        if !(self.script_timeout.is_finite() && self.script_timeout >= 1.0)
            || self.vm_timeout.is_some_and(|t| !(t.is_finite() && t > 0.0))
            || self.memory < 256
        {
            return Err(BadLimits);
        }
        Ok(())
    }

    pub fn cache_dir(&self) -> PathBuf {
        self.cache.clone().unwrap_or_else(crate::default_cache_dir)
    }

    /// The kernel `kernel` names (as `--kernel` does, with these flags' `--modules`) and the VM
    /// for it as these flags ask.
    pub fn kernel_vm(
        &self,
        kernel: &str,
    ) -> Result<(crate::KernelImage, crate::VmSpec), crate::Error> {
        let cache = self.cache_dir();
        let img = resolve_kernel(kernel, self.modules.as_deref(), &cache)?;
        let spec = self.spec(&img, cache);
        Ok((img, spec))
    }

    /// The VM for `img` as these flags ask (the guest's options are the caller's).
    pub fn spec(&self, img: &crate::KernelImage, cache: PathBuf) -> crate::VmSpec {
        let mut spec = crate::VmSpec::new(&img.vmlinuz, img.modules.as_deref());
        spec.accel = match self.accel {
            AccelArg::Auto => crate::Accel::Auto,
            AccelArg::Kvm => crate::Accel::Kvm,
            AccelArg::TcgIcount => crate::Accel::TcgIcount,
        };
        spec.timeout = self.vm_timeout.map(Duration::from_secs_f64);
        spec.script_timeout = Duration::from_secs_f64(self.script_timeout);
        spec.cache_dir = cache;
        spec.memory_mb = self.memory;
        spec
    }
}

/// The kernel `--kernel` names.
pub fn resolve_kernel(
    spec: &str,
    modules: Option<&Path>,
    cache: &Path,
) -> Result<crate::KernelImage, crate::Error> {
    let mut img = if spec.starts_with("debian:") {
        crate::cached_kernel(spec, cache)?
    } else {
        let p = Path::new(spec);
        if p.is_dir() {
            crate::KernelImage::from_dir(p)?
        } else if p.exists() {
            crate::KernelImage::from_files(p, modules)?
        } else {
            return Err(crate::Error::Missing(format!(
                "{spec}: no such kernel image"
            )));
        }
    };
    if let Some(m) = modules {
        img = crate::KernelImage::from_files(&img.vmlinuz, Some(m))?;
    }
    Ok(img)
}

/// Prints a VM run's problem (with the console's last 20 lines on stderr) and, with
/// `--console FILE`, writes the whole console atomically; `Err` when that write fails.
pub fn problem_and_console(
    problem: Option<&str>,
    console: &[String],
    file: Option<&Path>,
    what: &str,
) -> Result<(), ConsoleError> {
    if let Some(p) = problem {
        println!("problem: {p}");
        for l in console
            .iter()
            .rev()
            .take(20)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
        {
            eprintln!("console: {l}");
        }
    }
    if let Some(c) = file {
        let mut text = console.join("\n");
        text.push('\n');
        trc_files::write_atomic(c, text.as_bytes()).map_err(|source| ConsoleError {
            what: what.to_string(),
            path: c.to_path_buf(),
            source,
        })?;
    }
    Ok(())
}

/// The Debian 7.2 kernel the VM tests boot: `$TRC_VM_KERNEL`, else the one `trc kernel fetch
/// debian:sid` unpacked into the default cache; or why there is none.
pub fn test_kernel() -> Result<String, NoTestKernel> {
    if let Some(k) = std::env::var_os("TRC_VM_KERNEL").filter(|k| !k.is_empty()) {
        return Ok(k.to_string_lossy().into_owned());
    }
    let cache = crate::default_cache_dir();
    for k in ["7.2-sid", "sid"] {
        let d = cache.join("kernels").join(k);
        if d.join("vmlinuz").exists()
            && crate::KernelImage::from_dir(&d).is_ok_and(|i| i.release.starts_with("7.2"))
        {
            return Ok(d.to_string_lossy().into_owned());
        }
    }
    Err(NoTestKernel {
        looked_in: cache.join("kernels"),
    })
}

/// What a VM test needs (qemu, busybox-static, a Debian 7.2 kernel): the kernel, or `None`
/// after saying on stderr why the test skips.
pub fn test_kernel_or_skip() -> Option<String> {
    let k = crate::host::find_qemu(None)
        .and_then(|_| crate::initramfs::find_busybox())
        .map_err(|e| e.to_string())
        .and_then(|_| test_kernel().map_err(|e| e.to_string()));
    k.map_err(|e| eprintln!("skipped: {e}")).ok()
}
