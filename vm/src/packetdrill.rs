//! Real packetdrill in the guest: the public gtests run by packetdrill itself on a kernel booted
//! in qemu (the detection benchmark's column (c), docs/kernel-bugs.md). The binary (built from
//! the vendored source, never shipped with trc) and a directory of scripts with their support
//! files go into the job's archive; the guest runs each script as `packetdrill ARGS SCRIPT` from
//! the script's directory, in a network namespace of its own, and sends back packetdrill's exit
//! code and the tail of its output ([`proto::Record::Result`]'s `output`).
//!
//! The scripts' shell lines need what packetdrill's own run needs: `/bin/sh`, `ip`, `tc`,
//! `sysctl` (in the base archive) and `python3` for `%{ }%` blocks (the base's, with the modules
//! trc's driver needs; a block importing others fails on every kernel alike).

use crate::host::{Event, VmRun, VmSpec};
use crate::initramfs::{self, Data, Tree};
use crate::proto::{Job, JobScript, ScriptJob};
use crate::Error;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Where packetdrill is in the guest.
pub const GUEST_BINARY: &str = "/t/pd/packetdrill";

/// What packetdrill's python preamble (`sys`, `traceback`) and the gtests' `set_sysctls.py`
/// (`os`, `subprocess`) import.
const PYTHON_MODULES: &[&str] = &["sys", "traceback", "os", "subprocess"];

/// The job's packetdrill part (`/t/job.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PacketdrillJob {
    pub binary: String,
    /// Arguments before the script's file name.
    pub args: Vec<String>,
    /// A test runner (a bash script, guest path) that runs packetdrill itself: each script is
    /// run as `bash RUNNER NAME` from its directory, with packetdrill on `PATH`, and `args` are
    /// not used (e.g. the kernel selftests' `ksft_runner.sh`, which runs the script for IPv4,
    /// IPv6 and IPv4-mapped IPv6 and prints KTAP).
    #[serde(default)]
    pub runner: Option<String>,
}

/// What to run: the host's packetdrill, the directory whose whole content goes to the guest
/// (scripts and support files, e.g. a prepared copy of gtests/net), and packetdrill's arguments.
#[derive(Debug, Clone)]
pub struct Setup {
    pub binary: PathBuf,
    pub tree: PathBuf,
    pub args: Vec<String>,
    /// A runner script under `tree` ([`PacketdrillJob::runner`]).
    pub runner: Option<PathBuf>,
}

/// run_all.py's ipv4 arguments and defines (as `../shared/tools/packetdrill-run` passes them).
pub fn run_all_ipv4_args() -> Vec<String> {
    [
        "--send_omit_free",
        "--ip_version=ipv4",
        "--local_ip=192.168.0.1",
        "--gateway_ip=192.168.0.1",
        "--netmask_ip=255.255.0.0",
        "--remote_ip=192.0.2.1",
        "-D",
        "TFO_COOKIE=3021b9d889017eeb",
        "-D",
        "CODE=host_unreachable",
        "-D",
        "CMSG_LEVEL_IP=SOL_IP",
        "-D",
        "CMSG_TYPE_RECVERR=IP_RECVERR",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// Every regular file under `dir`, sorted.
fn files_under(dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let rd =
            std::fs::read_dir(&d).map_err(|e| Error::Usage(format!("{}: {e}", d.display())))?;
        for e in rd {
            let p = e.map_err(|e| Error::Failed(e.to_string()))?.path();
            if p.is_dir() {
                todo.push(p);
            } else if p.is_file() {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The job archive: the binary and its libraries, `setup.tree` under `/t/tree`, the job.
fn archive(setup: &Setup, scripts: &[PathBuf], job: ScriptJob) -> Result<Vec<u8>, Error> {
    let tree_root = std::fs::canonicalize(&setup.tree)
        .map_err(|e| Error::Usage(format!("{}: {e}", setup.tree.display())))?;
    let mut t = Tree::new();
    t.host_file(GUEST_BINARY.trim_start_matches('/'), &setup.binary)?;
    for lib in initramfs::ldd(&setup.binary)? {
        let g = lib.to_string_lossy().trim_start_matches('/').to_string();
        if !t.contains(&g) {
            t.host_file(&g, &lib)?;
        }
    }
    // bash (the gtests' defaults.sh and set_sysctls.py's restore script) and the python
    // modules their code blocks and set_sysctls.py import, beside the base archive's.
    if let Some(bash) = ["/bin/bash", "/usr/bin/bash"]
        .iter()
        .map(Path::new)
        .find(|p| p.is_file())
    {
        t.host_file("usr/bin/bash", bash)?;
        for lib in initramfs::ldd(bash)? {
            let g = lib.to_string_lossy().trim_start_matches('/').to_string();
            if !t.contains(&g) {
                t.host_file(&g, &lib)?;
            }
        }
    }
    if let Some(py) = initramfs::find_python() {
        for f in initramfs::python_module_files(&py, PYTHON_MODULES)? {
            let g = f.to_string_lossy().trim_start_matches('/').to_string();
            if !t.contains(&g) {
                t.host_file(&g, &f)?;
            }
        }
    }
    for f in files_under(&tree_root)? {
        let rel = f
            .strip_prefix(&tree_root)
            .unwrap_or(&f)
            .to_string_lossy()
            .into_owned();
        t.host_file(&format!("t/tree/{rel}"), &f)?;
    }
    let mut job = job;
    for s in scripts {
        let c =
            std::fs::canonicalize(s).map_err(|e| Error::Usage(format!("{}: {e}", s.display())))?;
        let rel = c.strip_prefix(&tree_root).map_err(|_| {
            Error::Usage(format!(
                "{}: not under the packetdrill tree {}",
                s.display(),
                tree_root.display()
            ))
        })?;
        job.scripts.push(JobScript {
            guest_path: format!("/t/tree/{}", rel.to_string_lossy()),
            name: s.display().to_string(),
        });
    }
    let j =
        serde_json::to_vec_pretty(&Job::Scripts(job)).map_err(|e| Error::Failed(e.to_string()))?;
    t.file("t/job.json", 0o644, 0, Data::Bytes(j))?;
    t.to_gzip()
}

/// The guest path of `file` (relative to `tree`, or absolute inside it), which goes to the
/// guest with the tree.
fn guest_path_under(tree: &Path, file: &Path) -> Result<String, Error> {
    let root = std::fs::canonicalize(tree)
        .map_err(|e| Error::Usage(format!("{}: {e}", tree.display())))?;
    let f = if file.is_absolute() {
        file.to_path_buf()
    } else {
        root.join(file)
    };
    let c = std::fs::canonicalize(&f).map_err(|e| Error::Usage(format!("{}: {e}", f.display())))?;
    let rel = c.strip_prefix(&root).map_err(|_| {
        Error::Usage(format!(
            "{}: not under the packetdrill tree {}",
            file.display(),
            root.display()
        ))
    })?;
    Ok(format!("/t/tree/{}", rel.to_string_lossy()))
}

/// Boots `spec.kernel` and runs `scripts` (each under `setup.tree`) with real packetdrill, in
/// order: one [`crate::ScriptRun`] per script, its outcome
/// [`crate::ScriptOutcome::Exited`] (rc 0 passed; packetdrill's non-zero code otherwise).
pub fn run_in_vm_with(
    spec: &VmSpec,
    setup: &Setup,
    scripts: &[PathBuf],
    events: &mut dyn FnMut(&Event),
) -> Result<VmRun, Error> {
    if scripts.is_empty() {
        return Err(Error::Usage("no scripts to run".into()));
    }
    if !setup.binary.is_file() {
        return Err(Error::Missing(format!(
            "{}: no packetdrill binary",
            setup.binary.display()
        )));
    }
    let runner = match &setup.runner {
        Some(r) => Some(guest_path_under(&setup.tree, r)?),
        None => None,
    };
    let prepared = crate::host::prepare(spec)?;
    let job = crate::host::script_job(
        spec,
        Some(PacketdrillJob {
            binary: GUEST_BINARY.into(),
            args: setup.args.clone(),
            runner,
        }),
    );
    let gz = archive(setup, scripts, job)?;
    let entries: Vec<(PathBuf, String)> = scripts
        .iter()
        .map(|p| (p.clone(), p.display().to_string()))
        .collect();
    crate::host::boot(spec, &prepared, &gz, &entries, events)
}

/// The guest side: runs one script, returning (exit code, output tail, error).
pub mod guest {
    use super::PacketdrillJob;
    use std::io::Read;
    use std::os::unix::process::CommandExt;
    use std::path::Path;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    /// The last `n` bytes of `s` (on a char boundary).
    fn tail(s: &str, n: usize) -> String {
        let mut i = s.len().saturating_sub(n);
        while !s.is_char_boundary(i) {
            i += 1;
        }
        s[i..].to_string()
    }

    /// Whether this kernel has packet sockets (CONFIG_PACKET), packetdrill's sniffer. Without
    /// them (trc's minimal kernels) packetdrill must be built with testkit's tun-capture patch
    /// and is told to read the tun device instead (`PACKETDRILL_TUN_CAPTURE`).
    pub fn af_packet() -> bool {
        // SAFETY: socket(2) and close(2) on a descriptor this function owns.
        unsafe {
            let fd = libc::socket(libc::AF_PACKET, libc::SOCK_RAW, 0);
            if fd >= 0 {
                libc::close(fd);
            }
            fd >= 0
        }
    }

    /// Runs `packetdrill ARGS NAME` (or `bash RUNNER NAME`) in the script's directory, in a new
    /// network namespace with `lo` up, killed after `limit`: (rc, output tail; rc 124 on the
    /// time limit).
    pub fn run(pd: &PacketdrillJob, script: &Path, limit: Duration) -> (i32, String) {
        let dir = script.parent().unwrap_or(Path::new("/t"));
        let file = script
            .file_name()
            .map(|f| f.to_os_string())
            .unwrap_or_default();
        let mut c = match &pd.runner {
            Some(r) => {
                let mut c = Command::new("/usr/bin/bash");
                let bin_dir = Path::new(&pd.binary).parent().unwrap_or(Path::new("/t"));
                let path = std::env::var("PATH")
                    .unwrap_or_else(|_| "/usr/sbin:/usr/bin:/sbin:/bin".into());
                c.arg(r)
                    .env("PATH", format!("{}:{path}", bin_dir.display()));
                c
            }
            None => {
                let mut c = Command::new(&pd.binary);
                c.args(&pd.args);
                c
            }
        };
        if !af_packet() {
            c.env("PACKETDRILL_TUN_CAPTURE", "1");
        }
        c.arg(&file)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // SAFETY: between fork and exec the child only calls unshare(2) and the ioctls of
        // lo_up (async-signal-safe system calls, no allocation after the fork).
        unsafe {
            c.pre_exec(|| {
                if libc::unshare(libc::CLONE_NEWNET) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                crate::guest::lo_up().map_err(std::io::Error::other)
            });
        }
        let mut child = match c.spawn() {
            Ok(ch) => ch,
            Err(e) => return (127, format!("cannot run {}: {e}", pd.binary)),
        };
        let mut out = child.stdout.take();
        let mut err = child.stderr.take();
        let ro = std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(o) = out.as_mut() {
                let _ = o.read_to_string(&mut s);
            }
            s
        });
        let re = std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(e) = err.as_mut() {
                let _ = e.read_to_string(&mut s);
            }
            s
        });
        let t0 = Instant::now();
        let rc = loop {
            match child.try_wait() {
                Ok(Some(st)) => break st.code().unwrap_or(128),
                Ok(None) if t0.elapsed() > limit => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break 124;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                Err(_) => break 128,
            }
        };
        let text = format!(
            "{}{}",
            ro.join().unwrap_or_default(),
            re.join().unwrap_or_default()
        );
        (rc, tail(&text, 4000))
    }
}
