//! Test-only helpers for material that is *not* in the repository: the vendored packetdrill
//! source (its gtests are the public conformance suite; its binary is the reference runner) and
//! the seed mails with their attached scripts. They live in `../shared/` next to the checkout
//! (or wherever `TRC_SHARED` points); a user's clone has none of it, so every helper returns
//! `Err(reason)` and the caller skips with that message.
//!
//! Third-party scripts are read from there at test time and never copied into the repository.
#![forbid(unsafe_code)]

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("testkit sits in the workspace")
        .to_path_buf()
}

/// The files under `dir` whose name `keep` accepts, sorted, looking into the subdirectories
/// whose name `enter` accepts: the sources, scripts or pages a repository-wide test reads.
pub fn files_under(
    dir: &Path,
    enter: impl Fn(&str) -> bool,
    keep: impl Fn(&str) -> bool,
) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        let entries = std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
        for e in entries {
            let p = e.unwrap_or_else(|e| panic!("{}: {e}", d.display())).path();
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            if p.is_dir() {
                if enter(&name) {
                    dirs.push(p);
                }
            } else if keep(&name) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// `../shared` (or `$TRC_SHARED`), if present.
pub fn shared() -> Result<PathBuf, String> {
    let p = std::env::var_os("TRC_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("../shared"));
    if p.join("vendor").is_dir() {
        Ok(p)
    } else {
        Err(format!("{} not found (the vendored packetdrill and the seeds are not part of a clone; set TRC_SHARED)", p.display()))
    }
}

/// Where helpers keep what they unpack and build (under the cargo target directory).
fn cache() -> PathBuf {
    let t = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target"));
    t.join("trc-testkit")
}

/// Runs `f` holding an exclusive lock on `cache()/name.lock` (test binaries run in parallel).
fn locked<T>(name: &str, f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    std::fs::create_dir_all(cache()).map_err(|e| e.to_string())?;
    let lock = File::create(cache().join(format!("{name}.lock"))).map_err(|e| e.to_string())?;
    lock.lock().map_err(|e| e.to_string())?;
    f()
}

/// The vendored packetdrill tarball.
fn tarball() -> Result<PathBuf, String> {
    let dir = shared()?.join("vendor");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("packetdrill-") && n.ends_with(".tar.gz"))
        })
        .collect();
    found.sort();
    found
        .pop()
        .ok_or_else(|| format!("no packetdrill-*.tar.gz in {}", dir.display()))
}

/// The unpacked packetdrill source tree (`.../packetdrill`), unpacked once.
pub fn packetdrill_tree() -> Result<PathBuf, String> {
    let tar = tarball()?;
    let stem = tar
        .file_name()
        .unwrap()
        .to_string_lossy()
        .trim_end_matches(".tar.gz")
        .to_string();
    let dest = cache().join(&stem);
    let root = dest.join("packetdrill");
    locked("unpack", || {
        if root.join("gtests/net").is_dir() {
            return Ok(());
        }
        std::fs::create_dir_all(&dest).map_err(|e| e.to_string())?;
        let st = Command::new("tar")
            .arg("-xzf")
            .arg(&tar)
            .arg("-C")
            .arg(&dest)
            .status()
            .map_err(|e| format!("tar: {e}"))?;
        if !st.success() {
            return Err(format!("tar -xzf {} failed", tar.display()));
        }
        Ok(())
    })?;
    Ok(root)
}

/// `gtests/net` of the vendored tree (scripts are run from their own directory, so
/// `../common/defaults.sh` resolves).
pub fn gtests() -> Result<PathBuf, String> {
    Ok(packetdrill_tree()?.join("gtests/net"))
}

/// The packetdrill binary, built once from the vendored tree (needs gcc, make, bison, flex).
pub fn packetdrill_binary() -> Result<PathBuf, String> {
    let src = packetdrill_tree()?.join("gtests/net/packetdrill");
    let bin = src.join("packetdrill");
    locked("build", || {
        if bin.is_file() {
            return Ok(());
        }
        for tool in ["gcc", "make", "bison", "flex"] {
            if Command::new("sh")
                .arg("-c")
                .arg(format!("command -v {tool}"))
                .output()
                .map(|o| !o.status.success())
                .unwrap_or(true)
            {
                return Err(format!(
                    "{tool} is not installed (needed to build packetdrill; .ci/run installs it)"
                ));
            }
        }
        let out = Command::new("sh")
            .arg("-c")
            .arg("./configure >/dev/null && make -j2 >/dev/null")
            .current_dir(&src)
            .output()
            .map_err(|e| e.to_string())?;
        if !out.status.success() || !bin.is_file() {
            return Err(format!(
                "building packetdrill failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(())
    })?;
    Ok(bin)
}

/// packetdrill built from a second copy of the vendored tree with
/// `testkit/patches/packetdrill-tun-capture.patch` (ours): when `PACKETDRILL_TUN_CAPTURE` is set
/// it reads the kernel's outbound packets from its tun device instead of an `AF_PACKET` socket,
/// which trc's minimal kernels (vm/kconfig/trc-minimal.config) lack. Everything else is
/// packetdrill's own; without the variable it behaves as [`packetdrill_binary`]'s.
pub fn packetdrill_binary_tun_capture() -> Result<PathBuf, String> {
    let tar = tarball()?;
    let dest = cache().join("packetdrill-tun-capture");
    let src = dest.join("packetdrill/gtests/net/packetdrill");
    let bin = src.join("packetdrill");
    let patch = workspace().join("testkit/patches/packetdrill-tun-capture.patch");
    locked("build-tun-capture", || {
        if bin.is_file() {
            return Ok(());
        }
        let _ = std::fs::remove_dir_all(&dest);
        std::fs::create_dir_all(&dest).map_err(|e| e.to_string())?;
        let script = format!(
            "tar -xzf '{}' -C '{}' && cd '{}/packetdrill' && patch -p1 -s < '{}' && cd gtests/net/packetdrill && ./configure >/dev/null && make -j2 >/dev/null",
            tar.display(),
            dest.display(),
            dest.display(),
            patch.display()
        );
        let out = Command::new("sh")
            .arg("-c")
            .arg(script)
            .output()
            .map_err(|e| e.to_string())?;
        if !out.status.success() || !bin.is_file() {
            return Err(format!(
                "building packetdrill (tun capture) failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(())
    })?;
    Ok(bin)
}

/// The kernel's own packetdrill selftests (`tools/testing/selftests/net/packetdrill`, with
/// `ksft_runner.sh` and `defaults.sh`) in a Debian kernel source tree that `trc kernel build`
/// unpacked (`$TRC_CACHE/kbuild/*/tree`, as `trc_vm::default_cache_dir` finds the cache): the
/// newest such tree.
pub fn kernel_selftests_packetdrill() -> Result<PathBuf, String> {
    let cache = if let Some(d) = std::env::var_os("TRC_CACHE").filter(|d| !d.is_empty()) {
        PathBuf::from(d)
    } else if let Some(d) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        PathBuf::from(d).join("trc")
    } else {
        PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/root".into())).join(".cache/trc")
    };
    let kb = cache.join("kbuild");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&kb)
        .map_err(|e| {
            format!(
                "{}: {e} (no kernel source unpacked: trc kernel build debian:sid)",
                kb.display()
            )
        })?
        .flatten()
        .map(|e| {
            e.path()
                .join("tree/tools/testing/selftests/net/packetdrill")
        })
        .filter(|d| d.join("ksft_runner.sh").is_file())
        .collect();
    found.sort();
    found.pop().ok_or_else(|| {
        format!(
            "no kernel source tree with tools/testing/selftests/net/packetdrill/ksft_runner.sh under {}",
            kb.display()
        )
    })
}

/// The script attached to a seed mail as `[-- Attachment #N: NAME --]` (its declared size in
/// bytes, after the `Type:` line and a blank line).
pub fn seed_attachment(name: &str) -> Result<String, String> {
    let dir = shared()?.join("seeds");
    for e in std::fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .flatten()
    {
        let text = std::fs::read_to_string(e.path()).unwrap_or_default();
        let Some(i) = text.find(&format!(": {name} --]")) else {
            continue;
        };
        let rest = &text[i..];
        let Some(ty) = rest.find("[-- Type:") else {
            continue;
        };
        let line_end = rest[ty..]
            .find('\n')
            .map(|n| ty + n + 1)
            .unwrap_or(rest.len());
        let size: usize = rest[ty..line_end]
            .split("Size:")
            .nth(1)
            .and_then(|s| s.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        let body = rest[line_end..]
            .strip_prefix('\n')
            .unwrap_or(&rest[line_end..]);
        let bytes = body.as_bytes();
        return Ok(String::from_utf8_lossy(&bytes[..size.min(bytes.len())]).into_owned());
    }
    Err(format!("no attachment {name} in {}", dir.display()))
}

/// Prints a skip message for a test that cannot run here.
pub fn skip(test: &str, why: &str) {
    eprintln!("skipped {test}: {why}");
}

/// What a run of a binary gave: its exit code (-1 when a signal ended it), stdout and stderr.
pub type Ran = (i32, String, String);

/// Runs `bin` with `args` and the extra environment `env`, in the workspace root.
pub fn run_in_workspace(bin: &str, args: &[&str], env: &[(&str, &str)]) -> Ran {
    let mut c = Command::new(bin);
    c.args(args).current_dir(workspace());
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c
        .output()
        .unwrap_or_else(|e| panic!("cannot run {bin}: {e}"));
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// `v` without the object fields named `keys`, at every depth (the figures of a JSON report that
/// differ between runs or engines: `seconds`, `peak_memory_bytes`, `distributed`, ...).
pub fn without_keys(v: &mut serde_json::Value, keys: &[&str]) {
    match v {
        serde_json::Value::Object(m) => {
            for k in keys {
                m.remove(*k);
            }
            m.values_mut().for_each(|x| without_keys(x, keys));
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(|x| without_keys(x, keys)),
        _ => {}
    }
}

/// `trc!(args)` / `trc!(args, env)`: the calling package's `trc` binary (`CARGO_BIN_EXE_trc`,
/// so only in the cli's tests) run with [`run_in_workspace`]: (exit code, stdout, stderr).
#[macro_export]
macro_rules! trc {
    ($args:expr $(,)?) => {
        $crate::run_in_workspace(env!("CARGO_BIN_EXE_trc"), $args, &[])
    };
    ($args:expr, $env:expr $(,)?) => {
        $crate::run_in_workspace(env!("CARGO_BIN_EXE_trc"), $args, $env)
    };
}

/// `dir` created afresh (what was there is removed): a test's scratch directory.
pub fn fresh_dir(dir: PathBuf) -> PathBuf {
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

/// `scratch!(name)`: a fresh scratch directory `name` under the calling package's test temporary
/// directory (`CARGO_TARGET_TMPDIR`, so only in integration tests).
#[macro_export]
macro_rules! scratch {
    ($name:expr) => {
        $crate::fresh_dir(std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join($name))
    };
}

/// The flags of a test's VM run: `kernel` under TCG icount (deterministic guest time), its
/// cache in `cache`.
pub fn tcg_vm<'a>(kernel: &'a str, cache: &'a Path) -> [&'a str; 6] {
    [
        "--kernel",
        kernel,
        "--accel",
        "tcg-icount",
        "--cache",
        cache.to_str().expect("a UTF-8 cache path"),
    ]
}
