//! Scripts on another kernel: trc boots a kernel image in qemu and runs the scripts there with
//! the same runner (`trc_kernel::run_script`) and the same options as `trc kernel run` on the
//! host, and brings back one [`trc_kernel::RunReport`] per script.
//!
//! # API
//! * [`fetch_debian_kernel`]`(spec, cache) -> `[`KernelImage`]: a Debian `cloud-amd64` kernel
//!   through a private apt configuration ([`apt`]).
//! * [`KernelImage::from_dir`] (a fetched image) and [`KernelImage::from_files`] (your own
//!   `bzImage` and `lib/modules/RELEASE` tree).
//! * [`run_in_vm`]`(&`[`VmSpec`]`, scripts) -> `[`VmRun`]: builds the initramfs
//!   ([`initramfs`]: a base archive cached per kernel and trc build, plus a small archive with
//!   the scripts), boots qemu ([`host`]) with no network device, under TCG with virtual time
//!   (`-icount shift=0,sleep=off`) or KVM, and decodes the results from a virtio-serial port
//!   ([`proto`]).
//! * [`guest::main`]: the guest's `/init` — `trc` itself, as pid 1 (`trc kernel guest`).
//!
//! Only `trc-kernel` and `trc-pkt` are trc dependencies; the command line is `cli/src/kernel.rs`.
//! See `docs/explanation/vm.md`.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub mod apt;
pub mod cpio;
pub mod debver;
pub mod elf;
pub mod flags;
pub mod guest;
pub mod host;
pub mod impact;
pub mod initramfs;
pub mod kbuild;
pub mod modules;
pub mod packetdrill;
pub mod proto;
pub mod target;

pub use apt::{FetchOptions, KernelSpec};
pub use host::{
    run_impact_in_vm_with, run_in_vm, run_in_vm_with, Accel, AccelUsed, Event, ScriptOutcome,
    ScriptRun, VmRun, VmSpec,
};
pub use proto::GuestOptions;

/// Why something could not be done. The command line maps these to exit codes.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad input (a file that is not a kernel image, a bad spec): exit 2.
    #[error("{0}")]
    Usage(String),
    /// Something this machine lacks (qemu, busybox-static, a kernel image, apt): exit 4.
    #[error("{0}")]
    Missing(String),
    /// Anything else (an I/O error, apt failed, the VM died).
    #[error("{0}")]
    Failed(String),
}

pub type Result<T> = std::result::Result<T, Error>;

/// A system call or file of the guest's setup that failed: `what` (the call and its object),
/// and the OS's error.
#[derive(Debug, thiserror::Error)]
#[error("{what}: {source}")]
pub struct SysError {
    pub what: String,
    pub source: std::io::Error,
}

impl SysError {
    /// `what` failed with the calling thread's last OS error.
    pub fn last(what: impl Into<String>) -> SysError {
        SysError {
            what: what.into(),
            source: std::io::Error::last_os_error(),
        }
    }
}

/// The cache directory: `$TRC_CACHE`, else `$XDG_CACHE_HOME/trc`, else `~/.cache/trc`.
pub fn default_cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("TRC_CACHE").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(d).join("trc");
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/root"));
    home.join(".cache/trc")
}

/// `trc_files::write_atomic` with this crate's error.
pub fn write_atomic(path: &Path, data: &[u8]) -> Result<()> {
    trc_files::write_atomic(path, data)
        .map_err(|e| Error::Failed(format!("cannot write {}: {e}", path.display())))
}

/// Removes a file or directory tree when dropped (temporary files on every exit path).
pub struct RemoveOnDrop(pub PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        if self.0.is_dir() {
            let _ = std::fs::remove_dir_all(&self.0);
        } else {
            let _ = std::fs::remove_file(&self.0);
        }
    }
}

/// `image.json` of a fetched kernel.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ImageInfo {
    pub release: String,
    pub suite: Option<String>,
    pub package_version: Option<String>,
    pub packages: Vec<String>,
}

/// A kernel to boot.
#[derive(Debug, Clone, Serialize)]
pub struct KernelImage {
    /// `uname -r` of the kernel (from the bzImage header).
    pub release: String,
    /// The bzImage.
    pub vmlinuz: PathBuf,
    /// `lib/modules/RELEASE`, where `tun.ko*` is looked up.
    pub modules: Option<PathBuf>,
    pub config: Option<PathBuf>,
    pub system_map: Option<PathBuf>,
    /// The Debian suite and package version, for a fetched image.
    pub suite: Option<String>,
    pub package_version: Option<String>,
    pub packages: Vec<String>,
}

impl KernelImage {
    /// A directory laid out by [`fetch_debian_kernel`] (or the prototype's `fetch-kernel.sh`):
    /// `vmlinuz`, `modules`, and optionally `config`, `System.map`, `image.json`.
    pub fn from_dir(dir: &Path) -> Result<KernelImage> {
        let vmlinuz = dir.join("vmlinuz");
        if !vmlinuz.exists() {
            return Err(Error::Missing(format!(
                "{}: no vmlinuz (not a kernel directory from `trc kernel fetch`)",
                dir.display()
            )));
        }
        let info: Option<ImageInfo> = std::fs::read(dir.join("image.json"))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok());
        let canon = |p: PathBuf| std::fs::canonicalize(&p).unwrap_or(p);
        let modules = Some(dir.join("modules")).filter(|p| p.is_dir()).map(canon);
        let mut img = KernelImage::from_files(&canon(vmlinuz), modules.as_deref())?;
        img.config = Some(dir.join("config")).filter(|p| p.exists()).map(canon);
        img.system_map = Some(dir.join("System.map"))
            .filter(|p| p.exists())
            .map(canon);
        if let Some(i) = info {
            img.suite = i.suite;
            img.package_version = i.package_version;
            img.packages = i.packages;
        }
        Ok(img)
    }

    /// Your own kernel: a bzImage and, optionally, its `lib/modules/RELEASE` directory (as
    /// `make modules_install INSTALL_MOD_PATH=DIR` leaves it). The release comes from the
    /// bzImage's header; a modules directory for another release is refused.
    pub fn from_files(vmlinuz: &Path, modules: Option<&Path>) -> Result<KernelImage> {
        if !vmlinuz.exists() {
            return Err(Error::Missing(format!(
                "{}: no such kernel image",
                vmlinuz.display()
            )));
        }
        let release = elf::bzimage_release(vmlinuz)?;
        if let Some(m) = modules {
            if !m.is_dir() {
                return Err(Error::Usage(format!(
                    "{}: not a directory (expected lib/modules/{release})",
                    m.display()
                )));
            }
            let name = m
                .file_name()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let canon_name = std::fs::canonicalize(m)
                .ok()
                .and_then(|c| c.file_name().map(|s| s.to_string_lossy().into_owned()))
                .unwrap_or_default();
            if name != release && canon_name != release {
                // A parent such as `DIR/lib/modules`: step into RELEASE.
                if m.join(&release).is_dir() {
                    return KernelImage::from_files(vmlinuz, Some(&m.join(&release)));
                }
                if m.join("lib/modules").join(&release).is_dir() {
                    return KernelImage::from_files(
                        vmlinuz,
                        Some(&m.join("lib/modules").join(&release)),
                    );
                }
                // A depmod'ed tree for another release is refused; a flat directory of modules
                // is taken as it is (each module's vermagic is checked when it is read).
                let release_like =
                    |n: &str| n.starts_with(|c: char| c.is_ascii_digit()) && n.contains('.');
                let depmod_tree =
                    m.join("kernel").is_dir() || release_like(&name) || release_like(&canon_name);
                if depmod_tree || !modules::has_module_files(m) {
                    return Err(Error::Usage(format!("{}: modules directory is not for {release} (the kernel's release), and not a flat directory of .ko files", m.display())));
                }
            }
            // The runner needs tun: a kernel that has it neither as a module here nor built in
            // cannot run anything.
            let mut configs = vec![m.join("config"), m.join(".config"), m.join("build/.config")];
            if let Some(d) = vmlinuz.parent() {
                configs.extend([
                    d.join("config"),
                    d.join(".config"),
                    d.join(format!("config-{release}")),
                    d.join("../../../.config"),
                ]);
            }
            if !modules::has_tun(m, &configs) {
                return Err(Error::Usage(format!(
                    "{}: no tun.ko (.ko.xz, .ko.gz, .ko.zst) for {release}, and nothing says tun is built in (modules.builtin, or CONFIG_TUN=y in the kernel's .config beside it or the bzImage); the runner needs tun",
                    m.display()
                )));
            }
        }
        Ok(KernelImage {
            release,
            vmlinuz: vmlinuz.to_path_buf(),
            modules: modules.map(Path::to_path_buf),
            config: None,
            system_map: None,
            suite: None,
            package_version: None,
            packages: Vec::new(),
        })
    }
}

/// Downloads and unpacks a Debian `cloud-amd64` kernel: `spec` is `sid`, `trixie`, `bookworm`,
/// `VERSION-SUITE` (`7.2-sid`) or `VERSION` (the newest of the three suites), optionally
/// prefixed `debian:`. Into `cache_dir/kernels/RELEASE/`, with `cache_dir/kernels/SPEC` linking
/// to it; the private apt state is `cache_dir/apt/`.
pub fn fetch_debian_kernel(suite_or_version: &str, cache_dir: &Path) -> Result<KernelImage> {
    fetch_debian_kernel_with(
        suite_or_version,
        cache_dir,
        &FetchOptions::default(),
        &mut |_| {},
    )
}

/// [`fetch_debian_kernel`] with options and a progress log.
pub fn fetch_debian_kernel_with(
    suite_or_version: &str,
    cache_dir: &Path,
    o: &FetchOptions,
    log: &mut dyn FnMut(&str),
) -> Result<KernelImage> {
    let spec = KernelSpec::parse(suite_or_version)?;
    apt::fetch(&spec, cache_dir, o, log)
}

/// A kernel fetched before: `cache_dir/kernels/SPEC` (`sid`, `7.2-sid`, or a release).
pub fn cached_kernel(spec: &str, cache_dir: &Path) -> Result<KernelImage> {
    let s = KernelSpec::parse(spec)?;
    let dir = cache_dir.join("kernels").join(s.link_name());
    if !dir.exists() {
        return Err(Error::Missing(format!(
            "{spec}: not in {} (run `trc kernel fetch {spec}` first)",
            cache_dir.join("kernels").display()
        )));
    }
    KernelImage::from_dir(&dir)
}
