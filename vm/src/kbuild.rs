//! `trc kernel build`: a bootable kernel from Debian's `linux-source-X.Y` (or a developer's own
//! tree), trc's configuration fragment and optional patches, with everything that can be kept
//! kept in trc's cache:
//!
//! - `kbuild/SOURCE/tree/`: the unpacked source (Debian's), left pristine after every build;
//! - `kbuild/SOURCE/out-CONFIG/`: one persistent `O=` build directory per (source, configuration),
//!   so a patched build after the base recompiles only what the patch touches, with `build.log`;
//! - `kimages/KEY/bzImage` and `image.json`: each image, keyed by a hash of the source version,
//!   the configuration and the patches' contents, so an identical request builds nothing.
//!
//! Patches are checked (`patch --dry-run`, in order) before anything is built: one that does
//! not apply is [`Error::Usage`] naming the file and hunk. They are applied for the build and
//! reversed after it, failed or not.

use crate::{write_atomic, Error, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::io::{BufRead, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// trc's configuration fragment (vm/kconfig/trc-minimal.config), built in.
pub const FRAGMENT: &str = include_str!("../kconfig/trc-minimal.config");

/// The files a full build of the fragment compiles (measured on 7.2.13: 1250), for the progress
/// estimate before a tree's first build has counted its own.
const FULL_BUILD_FILES: usize = 1250;

/// Where the source comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// `debian:sid`, `debian:trixie`, `debian:bookworm`: that suite's newest `linux-source-*`.
    Debian(String),
    /// A kernel tree on disk (a net-next checkout, say), built out of tree; patches are applied
    /// to it for the build and reversed after.
    Dir(PathBuf),
}

impl Source {
    /// `debian:SUITE` or a directory.
    pub fn parse(s: &str) -> Result<Source> {
        if let Some(suite) = s.strip_prefix("debian:") {
            if !crate::apt::SUITES.contains(&suite) {
                return Err(Error::Usage(format!(
                    "{s}: expected debian:sid, debian:trixie or debian:bookworm"
                )));
            }
            return Ok(Source::Debian(suite.to_string()));
        }
        let p = Path::new(s);
        if !p.join("Makefile").is_file() || !p.join("net/ipv4/tcp_input.c").is_file() {
            return Err(Error::Usage(format!("{s}: not a kernel source tree (no Makefile and net/ipv4/tcp_input.c), and not debian:SUITE")));
        }
        Ok(Source::Dir(
            std::fs::canonicalize(p).map_err(|e| Error::Usage(format!("{s}: {e}")))?,
        ))
    }
}

/// What to build.
#[derive(Clone, Debug)]
pub struct BuildRequest {
    pub source: Source,
    /// The configuration fragment's text and where it came from (for messages).
    pub fragment: (String, String),
    /// Patches, applied in order with `patch -p1`.
    pub patches: Vec<PathBuf>,
    /// `make -j`.
    pub jobs: usize,
    pub cache: PathBuf,
}

impl BuildRequest {
    /// The request `trc kernel build`'s flags describe (`source`, `--patch`, `--config`, `-j`), or
    /// a usage error.
    pub fn from_flags(
        source: &str,
        patches: &[PathBuf],
        config: Option<&PathBuf>,
        jobs: Option<usize>,
        cache: PathBuf,
    ) -> Result<BuildRequest> {
        let src = Source::parse(source)?;
        let mut req = BuildRequest::new(src, &cache);
        if let Some(c) = config {
            let text = std::fs::read_to_string(c)
                .map_err(|e| Error::Usage(format!("--config {}: {e}", c.display())))?;
            req.fragment = (text, c.display().to_string());
        }
        if let Some(j) = jobs {
            if j == 0 {
                return Err(Error::Usage("-j must be at least 1".into()));
            }
            req.jobs = j;
        }
        req.patches = patches.to_vec();
        Ok(req)
    }

    /// `source` with trc's fragment, no patch, `-j` the CPU count.
    pub fn new(source: Source, cache: &Path) -> BuildRequest {
        let jobs = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        BuildRequest {
            source,
            fragment: (
                FRAGMENT.to_string(),
                "vm/kconfig/trc-minimal.config (built in)".into(),
            ),
            patches: Vec::new(),
            jobs,
            cache: cache.to_path_buf(),
        }
    }
}

/// What [`build`] tells as it goes.
#[derive(Clone, Debug)]
pub enum Progress {
    Note(String),
    /// Files compiled so far, the expected total, seconds since make started.
    Compiled {
        done: usize,
        total: usize,
        elapsed_s: f64,
    },
}

/// A built (or cached) image, as `image.json` records it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Built {
    pub bzimage: PathBuf,
    pub key: String,
    /// `linux-source-7.2 7.2.13-1`, or the tree's path and `make kernelversion`.
    pub source: String,
    pub config: String,
    /// Each patch's file name and sha256.
    pub patches: Vec<(String, String)>,
    /// Found in the image cache: nothing was built.
    #[serde(skip)]
    pub cached: bool,
    /// Seconds make ran (0 when cached).
    pub build_s: f64,
    pub files_compiled: usize,
    pub log: PathBuf,
}

fn sha256_hex(parts: &[&[u8]]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p);
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn io(what: impl std::fmt::Display, e: std::io::Error) -> Error {
    Error::Failed(format!("{what}: {e}"))
}

/// The tools a build needs that this machine lacks, with the Debian package of each.
pub fn missing_tools() -> Vec<&'static str> {
    let have = |t: &str| {
        Command::new("sh")
            .arg("-c")
            .arg(format!("command -v {t}"))
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let mut need = Vec::new();
    for (tool, pkg) in [
        ("gcc", "gcc"),
        ("make", "make"),
        ("flex", "flex"),
        ("bison", "bison"),
        ("bc", "bc"),
        ("perl", "perl"),
        ("patch", "patch"),
        ("xz", "xz-utils"),
        ("dpkg-deb", "dpkg"),
    ] {
        if !have(tool) {
            need.push(pkg);
        }
    }
    // objtool links libelf; the certificate tools include OpenSSL's headers.
    for (header, pkg) in [
        ("/usr/include/gelf.h", "libelf-dev"),
        ("/usr/include/openssl/ssl.h", "libssl-dev"),
    ] {
        if !Path::new(header).exists() {
            need.push(pkg);
        }
    }
    need
}

/// Where one source lives in the cache, and its description.
struct Tree {
    /// The source tree.
    dir: PathBuf,
    /// `kbuild/SOURCE/`: the build directories go here.
    home: PathBuf,
    desc: String,
    /// What identifies the source's contents for the image key.
    identity: String,
}

/// Where Debian's newest source package of `suite` lives in the cache (it may not be there yet),
/// and the package: `(tree, pkg, version)`.
fn debian_place(
    suite: &str,
    cache: &Path,
    log: &mut dyn FnMut(Progress),
) -> Result<(Tree, String, String)> {
    let (pkg, version) =
        crate::apt::source_package(suite, cache, &mut |m| log(Progress::Note(m.to_string())))?;
    let home = cache.join("kbuild").join(format!("{pkg}_{version}"));
    let desc = format!("{pkg} {version} ({suite})");
    Ok((
        Tree {
            dir: home.join("tree"),
            home,
            desc: desc.clone(),
            identity: desc,
        },
        pkg,
        version,
    ))
}

/// Unpacks Debian's source package for `suite` into the cache, once.
fn debian_tree(suite: &str, cache: &Path, log: &mut dyn FnMut(Progress)) -> Result<Tree> {
    let (tree, pkg, version) = debian_place(suite, cache, log)?;
    let Tree {
        dir, home, desc, ..
    } = tree;
    if dir.join("Makefile").is_file() {
        return Ok(Tree {
            dir,
            home,
            desc: desc.clone(),
            identity: desc,
        });
    }
    std::fs::create_dir_all(&home).map_err(|e| io(home.display(), e))?;
    let t = Instant::now();
    let dl = home.join(format!(".dl-{}", std::process::id()));
    let _clean = crate::RemoveOnDrop(dl.clone());
    let deb = crate::apt::download(&pkg, &version, cache, &dl)?;
    log(Progress::Note(format!(
        "downloaded {pkg}={version} in {:.1} s; unpacking",
        t.elapsed().as_secs_f64()
    )));
    let tmp = home.join(format!(".tree-{}", std::process::id()));
    let _clean_tmp = crate::RemoveOnDrop(tmp.clone());
    std::fs::create_dir_all(&tmp).map_err(|e| io(tmp.display(), e))?;
    let inner = format!("./usr/src/{pkg}.tar.xz");
    let sh = format!(
        "dpkg-deb --fsys-tarfile '{}' | tar -xO '{inner}' | tar -xJ -C '{}' --strip-components=1",
        deb.display(),
        tmp.display()
    );
    let st = Command::new("sh")
        .arg("-c")
        .arg(&sh)
        .status()
        .map_err(|e| io("sh", e))?;
    if !st.success() || !tmp.join("Makefile").is_file() {
        return Err(Error::Failed(format!(
            "unpacking {} failed ({st})",
            deb.display()
        )));
    }
    std::fs::rename(&tmp, &dir).map_err(|e| io(dir.display(), e))?;
    log(Progress::Note(format!(
        "{desc} unpacked in {:.1} s",
        t.elapsed().as_secs_f64()
    )));
    Ok(Tree {
        dir,
        home,
        desc: desc.clone(),
        identity: desc,
    })
}

/// A developer's tree: its build directories under `kbuild/local-HASH/`; its identity is the
/// path, `make kernelversion`, and, in a git checkout, HEAD and the hash of `git diff HEAD`
/// (outside git, the image cache is not used: the tree's contents are not known).
fn local_tree(dir: &Path, cache: &Path) -> Result<Tree> {
    let path = dir.display().to_string();
    let home = cache
        .join("kbuild")
        .join(format!("local-{}", &sha256_hex(&[path.as_bytes()])[..16]));
    let out = |args: &[&str]| {
        Command::new(args[0])
            .args(&args[1..])
            .current_dir(dir)
            .stderr(Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| o.stdout)
    };
    let version = out(&["make", "-s", "kernelversion"])
        .map(|v| String::from_utf8_lossy(&v).trim().to_string())
        .unwrap_or_default();
    let git = out(&["git", "rev-parse", "HEAD"]).zip(out(&["git", "diff", "HEAD"]));
    let identity = match git {
        Some((head, diff)) => format!(
            "{path} {version} {} {}",
            String::from_utf8_lossy(&head).trim(),
            sha256_hex(&[&diff])
        ),
        None => format!("{path} {version} uncached {}", std::process::id()),
    };
    Ok(Tree {
        dir: dir.to_path_buf(),
        home,
        desc: format!("{path} ({version})"),
        identity,
    })
}

/// What identifies a fragment's configuration: its `CONFIG_` lines in order (comments and blank
/// lines do not change the kernel, so they do not change the build directory or the image key).
fn fragment_identity(text: &str) -> String {
    fragment_lines(text)
        .into_iter()
        .map(|(_, l)| l)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The configuration lines of a fragment (`CONFIG_X=v`), each with its line number.
fn fragment_lines(text: &str) -> Vec<(usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| l.starts_with("CONFIG_") && l.contains('='))
        .collect()
}

/// Runs `cmd` with its output appended to `log`; an error names the log.
fn logged(mut cmd: Command, what: &str, log: &Path) -> Result<()> {
    let f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(|e| io(log.display(), e))?;
    let f2 = f.try_clone().map_err(|e| io(log.display(), e))?;
    let st = cmd
        .stdout(f)
        .stderr(f2)
        .stdin(Stdio::null())
        .status()
        .map_err(|e| io(what, e))?;
    if !st.success() {
        return Err(Error::Failed(format!(
            "{what} failed ({st}); see {}",
            log.display()
        )));
    }
    Ok(())
}

fn make(tree: &Path, out: &Path) -> Command {
    let mut c = Command::new("make");
    c.current_dir(tree)
        .arg(format!("O={}", out.display()))
        .arg("ARCH=x86_64");
    c
}

/// tinyconfig, the fragment merged, olddefconfig, and the check that no line of the fragment
/// was lost; once per build directory (a stamp holds the fragment's hash).
fn configure(
    tree: &Path,
    out: &Path,
    fragment: &(String, String),
    log: &Path,
    progress: &mut dyn FnMut(Progress),
) -> Result<()> {
    let hash = sha256_hex(&[fragment_identity(&fragment.0).as_bytes()]);
    let stamp = out.join(".trc-config");
    let config = out.join(".config");
    if std::fs::read_to_string(&stamp).is_ok_and(|s| s.trim() == hash) && config.is_file() {
        return Ok(());
    }
    let lost = |cfg: &str| -> Vec<String> {
        let have: std::collections::HashSet<&str> = cfg.lines().map(str::trim).collect();
        fragment_lines(&fragment.0)
            .into_iter()
            .filter(|(_, l)| !have.contains(l))
            .map(|(n, l)| format!("{}:{n}: {l}", fragment.1))
            .collect()
    };
    // A directory configured before (by hand, or before the stamp existed) is kept when it
    // already has every line: reconfiguring it would cost nothing but risks a full rebuild.
    if let Ok(cfg) = std::fs::read_to_string(&config) {
        if lost(&cfg).is_empty() {
            return write_atomic(&stamp, format!("{hash}\n").as_bytes());
        }
    }
    progress(Progress::Note(
        "configuring: tinyconfig, the fragment, olddefconfig".into(),
    ));
    std::fs::create_dir_all(out).map_err(|e| io(out.display(), e))?;
    let frag = out.join(".trc-fragment.config");
    write_atomic(&frag, fragment.0.as_bytes())?;
    let mut tiny = make(tree, out);
    tiny.arg("tinyconfig");
    logged(tiny, "make tinyconfig", log)?;
    let mut merge = Command::new(tree.join("scripts/kconfig/merge_config.sh"));
    merge
        .current_dir(tree)
        .arg("-m")
        .arg("-O")
        .arg(out)
        .arg(&config)
        .arg(&frag);
    logged(merge, "merge_config.sh", log)?;
    let mut old = make(tree, out);
    old.arg("olddefconfig");
    logged(old, "make olddefconfig", log)?;
    let cfg = std::fs::read_to_string(&config).map_err(|e| io(config.display(), e))?;
    let gone = lost(&cfg);
    if !gone.is_empty() {
        return Err(Error::Usage(format!("the configuration lost {} line(s) of the fragment after olddefconfig (a dependency is missing): {}", gone.len(), gone.join("; "))));
    }
    write_atomic(&stamp, format!("{hash}\n").as_bytes())
}

/// Why `patch` refused: `FILE: hunk #N of PATH FAILED at L` lines from its output.
fn refusal(file: &Path, output: &str) -> String {
    let mut current = String::new();
    let mut out = Vec::new();
    for l in output.lines() {
        if let Some(f) = l
            .strip_prefix("patching file ")
            .or_else(|| l.strip_prefix("checking file "))
        {
            current = f.trim().trim_matches('\'').to_string();
        } else if l.starts_with("Hunk #") && l.contains("FAILED") {
            let h = l.split(" FAILED").next().unwrap_or(l);
            let at = l
                .split(" at ")
                .nth(1)
                .map(|x| x.trim_end_matches('.').to_string());
            out.push(format!(
                "{h} of {current} does not apply{}",
                at.map(|a| format!(" (at line {a})")).unwrap_or_default()
            ));
        } else if l.contains("Reversed (or previously applied) patch detected") {
            out.push(format!("{current}: already applied (or reversed)"));
        } else if l.starts_with("can't find file")
            || l.contains("No such file")
            || l.contains("Only garbage")
            || l.contains("malformed")
        {
            out.push(l.trim().to_string());
        }
    }
    if out.is_empty() {
        out.push(
            output
                .lines()
                .rfind(|l| !l.trim().is_empty())
                .unwrap_or("patch failed")
                .trim()
                .to_string(),
        );
    }
    format!("{}: {}", file.display(), out.join("; "))
}

fn run_patch(tree: &Path, file: &Path, reverse: bool, dry: bool) -> Result<Patched> {
    let mut c = Command::new("patch");
    c.current_dir(tree)
        .args([
            "-p1",
            "--batch",
            "--forward",
            "--no-backup-if-mismatch",
            "-r",
            "-",
            "-i",
        ])
        .arg(file);
    if reverse {
        c.arg("-R");
    }
    if dry {
        c.arg("--dry-run");
    }
    let o = c
        .stdin(Stdio::null())
        .output()
        .map_err(|e| io("patch", e))?;
    if o.status.success() {
        return Ok(Patched::Applied);
    }
    Ok(Patched::Refused(format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )))
}

/// What `patch` did with a patch file.
enum Patched {
    Applied,
    /// It does not apply: patch's output.
    Refused(String),
}

/// Applies `patches` (absolute paths; `shown` as the user gave them, for messages) in order, each
/// checked with `--dry-run` first; when one does not apply, every earlier one is reversed and
/// the error ([`Error::Usage`]) names its hunk.
fn apply(tree: &Path, patches: &[PathBuf], shown: &[PathBuf]) -> Result<()> {
    for (i, p) in patches.iter().enumerate() {
        let res = match run_patch(tree, p, false, true)? {
            Patched::Applied => run_patch(tree, p, false, false)?,
            refused => refused,
        };
        if let Patched::Refused(out) = res {
            reverse(tree, &patches[..i]);
            return Err(Error::Usage(refusal(shown.get(i).unwrap_or(p), &out)));
        }
    }
    Ok(())
}

/// Reverses `patches` (last first), leaving the tree as it was.
fn reverse(tree: &Path, patches: &[PathBuf]) {
    for p in patches.iter().rev() {
        let _ = run_patch(tree, p, true, false);
    }
}

/// `make bzImage`, its output in `log`, progress from its `CC` lines: the files compiled.
fn compile(
    tree: &Path,
    out: &Path,
    jobs: usize,
    log: &Path,
    total: usize,
    progress: &mut dyn FnMut(Progress),
) -> Result<usize> {
    let mut c = make(tree, out);
    c.arg(format!("-j{jobs}"))
        .arg("bzImage")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().map_err(|e| io("make", e))?;
    let stderr = child.stderr.take().expect("piped");
    let log2 = log.to_path_buf();
    let err_thread = std::thread::spawn(move || -> Vec<String> {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(&log2)
            .ok();
        let mut tail = Vec::new();
        for l in BufReader::new(stderr)
            .lines()
            .map_while(std::result::Result::ok)
        {
            if let Some(f) = f.as_mut() {
                let _ = writeln!(f, "{l}");
            }
            tail.push(l);
        }
        tail
    });
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(log)
        .map_err(|e| io(log.display(), e))?;
    let t = Instant::now();
    let mut done = 0usize;
    let stdout = child.stdout.take().expect("piped");
    for l in BufReader::new(stdout)
        .lines()
        .map_while(std::result::Result::ok)
    {
        let _ = writeln!(f, "{l}");
        if l.starts_with("  CC ") {
            done += 1;
            progress(Progress::Compiled {
                done,
                total: total.max(done),
                elapsed_s: t.elapsed().as_secs_f64(),
            });
        }
    }
    let st = child.wait().map_err(|e| io("make", e))?;
    let errs = err_thread.join().unwrap_or_default();
    if !st.success() {
        let first = errs
            .iter()
            .find(|l| l.contains("error"))
            .cloned()
            .unwrap_or_default();
        return Err(Error::Failed(format!(
            "make bzImage failed ({st}){}; the build log is {}",
            if first.is_empty() {
                String::new()
            } else {
                format!(": {first}")
            },
            log.display()
        )));
    }
    Ok(done)
}

/// The image key and the patches' hashes.
fn image_key(
    tree: &Tree,
    fragment: &str,
    patches: &[PathBuf],
) -> Result<(String, Vec<(String, String)>)> {
    let mut parts: Vec<Vec<u8>> = vec![
        tree.identity.as_bytes().to_vec(),
        fragment_identity(fragment).into_bytes(),
    ];
    let mut hashes = Vec::new();
    for p in patches {
        let b = std::fs::read(p).map_err(|e| Error::Usage(format!("{}: {e}", p.display())))?;
        hashes.push((
            p.file_name()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
            sha256_hex(&[&b]),
        ));
        parts.push(b);
    }
    let refs: Vec<&[u8]> = parts.iter().map(|v| v.as_slice()).collect();
    Ok((sha256_hex(&refs)[..16].to_string(), hashes))
}

/// The cached image of `idir`, if it is complete.
fn cached_in(idir: &Path) -> Option<Built> {
    let text = std::fs::read_to_string(idir.join("image.json")).ok()?;
    let mut b = serde_json::from_str::<Built>(&text).ok()?;
    b.cached = true;
    b.bzimage.is_file().then_some(b)
}

/// The image `req` describes if the cache has it, without building or downloading anything
/// (Debian's package lists may be updated to learn the source's version).
pub fn find_cached(req: &BuildRequest) -> Result<Option<Built>> {
    let tree = match &req.source {
        Source::Debian(s) => debian_place(s, &req.cache, &mut |_| {})?.0,
        Source::Dir(d) => local_tree(d, &req.cache)?,
    };
    let (key, _) = image_key(&tree, &req.fragment.0, &req.patches)?;
    Ok(cached_in(&req.cache.join("kimages").join(key)))
}

/// Builds (or finds in the cache) the image `req` describes.
pub fn build(req: &BuildRequest, progress: &mut dyn FnMut(Progress)) -> Result<Built> {
    let mut patches = Vec::new();
    for p in &req.patches {
        if !p.is_file() {
            return Err(Error::Usage(format!("{}: no such patch file", p.display())));
        }
        patches.push(
            std::fs::canonicalize(p).map_err(|e| Error::Usage(format!("{}: {e}", p.display())))?,
        );
    }
    let need = missing_tools();
    if !need.is_empty() {
        return Err(Error::Missing(format!(
            "building a kernel needs {} (apt-get install {})",
            need.join(", "),
            need.join(" ")
        )));
    }
    let tree = match &req.source {
        Source::Debian(s) => debian_tree(s, &req.cache, progress)?,
        Source::Dir(d) => local_tree(d, &req.cache)?,
    };
    let (key, patch_hashes) = image_key(&tree, &req.fragment.0, &req.patches)?;
    let idir = req.cache.join("kimages").join(&key);
    if let Some(b) = cached_in(&idir) {
        return Ok(b);
    }
    let cfg_key = sha256_hex(&[fragment_identity(&req.fragment.0).as_bytes()])[..16].to_string();
    let out = tree.home.join(format!("out-{cfg_key}"));
    std::fs::create_dir_all(&out).map_err(|e| io(out.display(), e))?;
    let _lock = lock(&out)?;
    let log = out.join("build.log");
    write_atomic(
        &log,
        format!(
            "trc kernel build: {} with {} patch(es)\n",
            tree.desc,
            req.patches.len()
        )
        .as_bytes(),
    )?;
    // The patches first: one that does not apply stops everything before a build.
    apply(&tree.dir, &patches, &req.patches)?;
    let res = configure(&tree.dir, &out, &req.fragment, &log, progress).and_then(|()| {
        let first = !out.join("vmlinux").exists();
        let counted = std::fs::read_to_string(out.join(".trc-files")).ok().and_then(|s| s.trim().parse::<usize>().ok());
        if first {
            progress(Progress::Note(format!("first build of this tree: about 25 minutes on 2 cores (later patched builds: tens of seconds); log: {}", log.display())));
        }
        let total = if first { counted.unwrap_or(FULL_BUILD_FILES) } else { 0 };
        let t = Instant::now();
        let n = compile(&tree.dir, &out, req.jobs, &log, total, progress)?;
        if first {
            let _ = write_atomic(&out.join(".trc-files"), format!("{n}\n").as_bytes());
        }
        Ok((n, t.elapsed().as_secs_f64()))
    });
    reverse(&tree.dir, &patches);
    let (files, secs) = res?;
    let src = out.join("arch/x86/boot/bzImage");
    std::fs::create_dir_all(&idir).map_err(|e| io(idir.display(), e))?;
    let dst = idir.join("bzImage");
    let bytes = std::fs::read(&src).map_err(|e| io(src.display(), e))?;
    write_atomic(&dst, &bytes)?;
    let built = Built {
        bzimage: dst,
        key,
        source: tree.desc,
        config: req.fragment.1.clone(),
        patches: patch_hashes,
        cached: false,
        build_s: secs,
        files_compiled: files,
        log,
    };
    write_atomic(
        &idir.join("image.json"),
        serde_json::to_string_pretty(&built)
            .unwrap_or_default()
            .as_bytes(),
    )?;
    Ok(built)
}

/// An exclusive lock on a build directory for the build (another trc building the same tree
/// waits).
fn lock(out: &Path) -> Result<std::fs::File> {
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(out.join(".trc-lock"))
        .map_err(|e| io(out.display(), e))?;
    f.lock()
        .map_err(|e| io(out.join(".trc-lock").display(), e))?;
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusal_names_the_hunk() {
        let out =
            "checking file net/ipv4/tcp_input.c\nHunk #1 FAILED at 2762.\n1 out of 1 hunk FAILED\n";
        let r = refusal(Path::new("x.patch"), out);
        assert_eq!(
            r,
            "x.patch: Hunk #1 of net/ipv4/tcp_input.c does not apply (at line 2762)"
        );
        let r = refusal(Path::new("y.patch"), "checking file a.c\nReversed (or previously applied) patch detected!  Skipping patch.\n");
        assert!(r.contains("a.c: already applied"), "{r}");
    }

    #[test]
    fn fragment_lines_and_sources() {
        let l = fragment_lines(FRAGMENT);
        assert!(l.iter().any(|(_, x)| *x == "CONFIG_TUN=y"));
        assert!(l.iter().all(|(_, x)| !x.starts_with('#')));
        assert!(matches!(Source::parse("debian:sid"), Ok(Source::Debian(s)) if s == "sid"));
        assert!(matches!(Source::parse("debian:hamm"), Err(Error::Usage(_))));
        assert!(matches!(
            Source::parse("/nonexistent"),
            Err(Error::Usage(_))
        ));
    }

    #[test]
    fn keys_follow_the_patch_contents() {
        let d = std::env::temp_dir().join(format!("trc-kbuild-key-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let _c = crate::RemoveOnDrop(d.clone());
        let (a, b) = (d.join("a.patch"), d.join("b.patch"));
        std::fs::write(&a, "one").unwrap();
        std::fs::write(&b, "two").unwrap();
        let t = Tree {
            dir: d.clone(),
            home: d.clone(),
            desc: "x".into(),
            identity: "linux-source-7.2 7.2.13-1".into(),
        };
        let k0 = image_key(&t, FRAGMENT, &[]).unwrap().0;
        let ka = image_key(&t, FRAGMENT, std::slice::from_ref(&a)).unwrap().0;
        let kb = image_key(&t, FRAGMENT, std::slice::from_ref(&b)).unwrap().0;
        assert!(k0 != ka && ka != kb && k0 != kb);
        assert_eq!(
            ka,
            image_key(&t, FRAGMENT, std::slice::from_ref(&a)).unwrap().0
        );
        assert_ne!(k0, image_key(&t, "CONFIG_X=y\n", &[]).unwrap().0);
        // A comment does not change the configuration.
        assert_eq!(
            k0,
            image_key(&t, &format!("# another comment\n{FRAGMENT}\n\n"), &[])
                .unwrap()
                .0
        );
    }
}
