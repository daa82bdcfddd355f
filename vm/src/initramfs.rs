//! The guest's initramfs: a **base** archive, built once per kernel and trc build and cached,
//! and a small **scripts** archive per run, appended to it (the kernel unpacks concatenated
//! archives, each gzip-compressed on its own).
//!
//! The base (merged `/usr`: `bin sbin lib lib64` link into `usr/`):
//! * `/init` → `/usr/bin/trc`: the running trc binary (`std::env::current_exe`, debug info
//!   stripped with `objcopy` when it is there) — the guest's pid 1 (`trc kernel guest`);
//! * Debian's static busybox (`busybox-static`) with a link per applet, for shell lines;
//! * iproute2's `ip`, `tc`, `nstat`, procps' `sysctl`, `/bin/sh` (the host's, dash);
//! * python3 (Debian's `/usr/bin/python3.X`, a static libpython) and the standard-library
//!   files the `%{ }%` driver imports (found by running it on the host), for Python blocks;
//! * the libraries `ldd` lists for each of them, at their host paths;
//! * the modules of [`crate::modules`], decompressed, and `/etc/trc-vm/base.json`
//!   ([`BaseManifest`]: release, load order);
//! * `/dev/console`, `/dev/null`, empty `/proc /sys /tmp /run /t`.
//!
//! The scripts archive has `/t/job.json` ([`Job`]) and the scripts under `/t/`, laid out as on
//! the host relative to their common directory, with the files their shell lines name
//! (`../common/defaults.sh`, `./defaults.sh`), so relative paths work unchanged.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::cpio::{self, Entry};
use crate::proto::{BaseManifest, BaseModule, Job, JobScript, ScriptJob};
use crate::{write_atomic, Error, KernelImage, RemoveOnDrop};

/// Bumped when the base archive's layout changes (part of the cache key).
const FORMAT: u32 = 1;

/// A file's contents: in memory or read from the host when written.
#[derive(Debug, Clone)]
pub enum Data {
    Bytes(Vec<u8>),
    Host(PathBuf),
}

#[derive(Debug, Clone)]
enum Node {
    Dir(u32),
    File { perm: u32, mtime: u32, data: Data },
    Symlink(String),
    Char { perm: u32, major: u32, minor: u32 },
}

/// A file tree to archive; parents are created as directories, and entries come out sorted,
/// so a directory always precedes its contents (the kernel does not create parents).
#[derive(Debug, Clone, Default)]
pub struct Tree {
    nodes: BTreeMap<String, Node>,
}

fn clean(p: &str) -> Result<String, Error> {
    let s = p.trim_start_matches('/').trim_end_matches('/');
    if s.is_empty() || s.split('/').any(|c| c.is_empty() || c == "." || c == "..") {
        return Err(Error::Failed(format!("initramfs: bad path {p:?}")));
    }
    Ok(s.to_string())
}

/// Where a host path goes in the merged-/usr guest (`/lib/x` → `usr/lib/x`).
pub fn guest_path(host: &Path) -> String {
    let s = host.to_string_lossy();
    let s = s.trim_start_matches('/');
    for (from, to) in [
        ("bin/", "usr/bin/"),
        ("sbin/", "usr/sbin/"),
        ("lib/", "usr/lib/"),
        ("lib64/", "usr/lib64/"),
    ] {
        if let Some(rest) = s.strip_prefix(from) {
            return format!("{to}{rest}");
        }
    }
    s.to_string()
}

impl Tree {
    pub fn new() -> Tree {
        Tree::default()
    }

    fn parents(&mut self, p: &str) -> Result<(), Error> {
        let mut acc = String::new();
        let comps: Vec<&str> = p.split('/').collect();
        for c in &comps[..comps.len() - 1] {
            if !acc.is_empty() {
                acc.push('/');
            }
            acc.push_str(c);
            match self.nodes.get(&acc) {
                None => {
                    self.nodes.insert(acc.clone(), Node::Dir(0o755));
                }
                Some(Node::Dir(_)) => {}
                Some(_) => {
                    return Err(Error::Failed(format!(
                        "initramfs: {acc} is not a directory (adding {p})"
                    )))
                }
            }
        }
        Ok(())
    }

    pub fn dir(&mut self, p: &str, perm: u32) -> Result<(), Error> {
        let p = clean(p)?;
        self.parents(&p)?;
        self.nodes.insert(p, Node::Dir(perm));
        Ok(())
    }

    pub fn file(&mut self, p: &str, perm: u32, mtime: u32, data: Data) -> Result<(), Error> {
        let p = clean(p)?;
        self.parents(&p)?;
        self.nodes.insert(p, Node::File { perm, mtime, data });
        Ok(())
    }

    pub fn symlink(&mut self, p: &str, target: &str) -> Result<(), Error> {
        let p = clean(p)?;
        self.parents(&p)?;
        self.nodes.insert(p, Node::Symlink(target.to_string()));
        Ok(())
    }

    pub fn char_device(&mut self, p: &str, perm: u32, major: u32, minor: u32) -> Result<(), Error> {
        let p = clean(p)?;
        self.parents(&p)?;
        self.nodes.insert(p, Node::Char { perm, major, minor });
        Ok(())
    }

    pub fn contains(&self, p: &str) -> bool {
        clean(p).is_ok_and(|p| self.nodes.contains_key(&p))
    }

    /// A host file (symlinks followed) at `guest`, with its permissions and mtime.
    pub fn host_file(&mut self, guest: &str, host: &Path) -> Result<(), Error> {
        let m = std::fs::metadata(host)
            .map_err(|e| Error::Failed(format!("{}: {e}", host.display())))?;
        if !m.is_file() {
            return Err(Error::Failed(format!(
                "{}: not a regular file",
                host.display()
            )));
        }
        self.file(
            guest,
            m.mode() & 0o7777,
            m.mtime().clamp(0, u32::MAX as i64) as u32,
            Data::Host(host.to_path_buf()),
        )
    }

    /// Writes the archive (uncompressed) to `w`.
    pub fn write_cpio<W: std::io::Write>(&self, w: W) -> Result<W, Error> {
        let e = |x: std::io::Error| Error::Failed(format!("initramfs: {x}"));
        let mut c = cpio::Writer::new(w);
        for (name, n) in &self.nodes {
            match n {
                Node::Dir(perm) => c.dir(name, *perm).map_err(e)?,
                Node::Symlink(t) => c.symlink(name, t).map_err(e)?,
                Node::Char { perm, major, minor } => {
                    c.char_device(name, *perm, *major, *minor).map_err(e)?
                }
                Node::File { perm, mtime, data } => {
                    let bytes;
                    let d: &[u8] = match data {
                        Data::Bytes(b) => b,
                        Data::Host(p) => {
                            bytes = std::fs::read(p)
                                .map_err(|x| Error::Failed(format!("{}: {x}", p.display())))?;
                            &bytes
                        }
                    };
                    c.entry(&Entry {
                        name: name.clone(),
                        mode: cpio::S_IFREG | perm,
                        mtime: *mtime,
                        data: d.to_vec(),
                        rdev: (0, 0),
                    })
                    .map_err(e)?
                }
            }
        }
        c.finish().map_err(e)
    }

    /// The archive, gzip-compressed (level 1: the kernel's inflate is not the bottleneck).
    pub fn to_gzip(&self) -> Result<Vec<u8>, Error> {
        let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        self.write_cpio(gz)?
            .finish()
            .map_err(|e| Error::Failed(format!("gzip: {e}")))
    }

    /// Entry names, sorted.
    pub fn names(&self) -> Vec<String> {
        self.nodes.keys().cloned().collect()
    }
}

// ---- the host's files ----------------------------------------------------------------------

/// The libraries `ldd` lists for a dynamically linked ELF file (nothing for a static one).
pub fn ldd(bin: &Path) -> Result<Vec<PathBuf>, Error> {
    let head = read_head(bin, 4096)?;
    if crate::elf::is_dynamic(&head) != Some(true) {
        return Ok(Vec::new());
    }
    let out = Command::new("ldd").arg(bin).output().map_err(|e| {
        Error::Missing(format!(
            "ldd (libc-bin) is needed to collect the libraries of {}: {e}",
            bin.display()
        ))
    })?;
    let text = String::from_utf8_lossy(&out.stdout);
    let libs =
        parse_ldd(&text).map_err(|l| Error::Failed(format!("ldd {}: {l}", bin.display())))?;
    Ok(libs)
}

/// A library `ldd` reports `not found` (its line of `ldd` output).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct LibraryNotFound(pub String);

/// The paths in `ldd` output; `Err` for a library that is `not found`.
pub fn parse_ldd(text: &str) -> Result<Vec<PathBuf>, LibraryNotFound> {
    let mut v = Vec::new();
    for l in text.lines().map(str::trim) {
        if l.contains("not found") {
            return Err(LibraryNotFound(l.to_string()));
        }
        let p = match l.split_once("=>") {
            Some((_, r)) => r.split_whitespace().next().unwrap_or(""),
            None => l.split_whitespace().next().unwrap_or(""),
        };
        if p.starts_with('/') {
            v.push(PathBuf::from(p));
        }
    }
    Ok(v)
}

fn read_head(p: &Path, n: usize) -> Result<Vec<u8>, Error> {
    use std::io::Read;
    let f = std::fs::File::open(p).map_err(|e| Error::Failed(format!("{}: {e}", p.display())))?;
    let mut b = Vec::new();
    f.take(n as u64)
        .read_to_end(&mut b)
        .map_err(|e| Error::Failed(format!("{}: {e}", p.display())))?;
    Ok(b)
}

/// A program on the host: the first of `/usr/sbin /usr/bin /sbin /bin` that has it.
pub fn find_tool(name: &str) -> Option<PathBuf> {
    ["/usr/sbin", "/usr/bin", "/sbin", "/bin"]
        .iter()
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
}

/// Debian's static busybox.
pub fn find_busybox() -> Result<PathBuf, Error> {
    for p in ["/bin/busybox", "/usr/bin/busybox"] {
        let p = Path::new(p);
        if p.is_file() {
            if crate::elf::is_dynamic(&read_head(p, 4096)?) == Some(false) {
                return Ok(p.to_path_buf());
            }
            return Err(Error::Missing(format!(
                "{} is dynamically linked: install busybox-static (apt-get install busybox-static)",
                p.display()
            )));
        }
    }
    Err(Error::Missing(
        "busybox is not installed: apt-get install busybox-static".into(),
    ))
}

/// Debian's python3 (the ELF, not a pyenv shim): `/usr/bin/python3` resolved.
pub fn find_python() -> Option<PathBuf> {
    let p = std::fs::canonicalize("/usr/bin/python3").ok()?;
    (crate::elf::is_dynamic(&read_head(&p, 4096).ok()?).is_some()).then_some(p)
}

/// Runs the `%{ }%` driver on the host's `python` over sample blocks (a pass, a failed assert,
/// an error, a print) and lists the files of every module it imported: what the guest needs.
pub fn python_files(python: &Path) -> Result<(String, Vec<PathBuf>), Error> {
    let collector = format!(
        "import atexit, sys\n\
         def _trc_files():\n\
         \x20   for m in list(sys.modules.values()):\n\
         \x20       for a in ('__file__', '__cached__'):\n\
         \x20           f = getattr(m, a, None)\n\
         \x20           if isinstance(f, str): sys.stderr.write('TRC-PYFILE ' + f + '\\n')\n\
         \x20   sys.stderr.write('TRC-PYVERSION %d.%d.%d\\n' % sys.version_info[:3])\n\
         atexit.register(_trc_files)\n{}",
        trc_pkt::python::DRIVER
    );
    let input = r#"{"file":"t.pkt","common":{},"blocks":[
        {"line":1,"code":"x = 1\nprint('%d %s' % (x, 'y'))","bindings":{"tcpi_snd_cwnd":7},"missing":[]},
        {"line":2,"code":"assert tcpi_snd_cwnd == 8, 'cwnd %d' % tcpi_snd_cwnd","bindings":{"tcpi_snd_cwnd":7},"missing":[]},
        {"line":3,"code":"assert tcpi_snd_cwnd in range(1, 10) and (1, 2) == (1, 2)","bindings":{"tcpi_snd_cwnd":7},"missing":[]},
        {"line":4,"code":"undefined_name + 1","bindings":{},"missing":[]},
        {"line":5,"code":"if (","bindings":{},"missing":[]}]}"#;
    let mut child = Command::new(python)
        .args(["-I", "-c", &collector])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| Error::Failed(format!("{}: {e}", python.display())))?;
    if let Some(mut i) = child.stdin.take() {
        let _ = i.write_all(input.as_bytes());
    }
    let out = child
        .wait_with_output()
        .map_err(|e| Error::Failed(format!("{}: {e}", python.display())))?;
    let err = String::from_utf8_lossy(&out.stderr);
    let mut version = String::new();
    let mut files = Vec::new();
    for l in err.lines() {
        if let Some(f) = l.strip_prefix("TRC-PYFILE ") {
            let p = PathBuf::from(f);
            if p.is_absolute() && p.is_file() {
                files.push(p);
            }
        } else if let Some(v) = l.strip_prefix("TRC-PYVERSION ") {
            version = v.to_string();
        }
    }
    if !out.status.success() || version.is_empty() {
        return Err(Error::Failed(format!(
            "{} cannot run the %{{ }}% driver: {}",
            python.display(),
            err.lines().last().unwrap_or("")
        )));
    }
    files.sort();
    files.dedup();
    Ok((version, files))
}

/// The files of `modules` (and what they import) in the host's `python`, as [`python_files`]
/// lists the driver's: for guests whose scripts import more (packetdrill's code blocks and
/// `set_sysctls.py`).
pub fn python_module_files(python: &Path, modules: &[&str]) -> Result<Vec<PathBuf>, Error> {
    let code = format!(
        "import sys\nimport {}\nfor m in list(sys.modules.values()):\n    for a in ('__file__', '__cached__'):\n        f = getattr(m, a, None)\n        if isinstance(f, str): print(f)\n",
        modules.join(", ")
    );
    let out = Command::new(python)
        .args(["-I", "-c", &code])
        .output()
        .map_err(|e| Error::Failed(format!("{}: {e}", python.display())))?;
    if !out.status.success() {
        return Err(Error::Failed(format!(
            "{}: {}",
            python.display(),
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or("")
        )));
    }
    let mut files: Vec<PathBuf> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(PathBuf::from)
        .filter(|p| p.is_absolute() && p.is_file())
        .collect();
    files.sort();
    files.dedup();
    Ok(files)
}

// ---- the base archive ------------------------------------------------------------------------

/// What [`base`] made or found.
#[derive(Debug, Clone)]
pub struct Base {
    pub path: PathBuf,
    pub manifest: BaseManifest,
    /// Taken from the cache (not built now).
    pub cached: bool,
    pub bytes: u64,
    pub notes: Vec<String>,
}

/// Options of [`base`].
#[derive(Debug, Clone, Default)]
pub struct BaseOptions {
    /// The trc binary for the guest; default the running one.
    pub trc: Option<PathBuf>,
    /// Leave python3 out.
    pub no_python: bool,
}

fn fnv(h: &mut u64, b: &[u8]) {
    for x in b {
        *h ^= *x as u64;
        *h = h.wrapping_mul(0x100000001b3);
    }
}

/// The base archive for `kernel` in `cache/initramfs/RELEASE/`, built if it is not there.
pub fn base(kernel: &KernelImage, cache: &Path, o: &BaseOptions) -> Result<Base, Error> {
    let trc = match &o.trc {
        Some(p) => p.clone(),
        None => std::env::current_exe()
            .map_err(|e| Error::Failed(format!("cannot find the running trc binary: {e}")))?,
    };
    let busybox = find_busybox()?;
    let mut notes = Vec::new();
    let mut tree = Tree::new();
    skeleton(&mut tree)?;

    // Host files: (guest path, host path); their stats make the cache key.
    let mut host: Vec<(String, PathBuf)> = Vec::new();
    let mut elves: Vec<PathBuf> = vec![trc.clone()];
    host.push(("usr/bin/busybox".into(), busybox.clone()));
    add_host_tools(&mut host, &mut elves, &mut notes)?;
    let sh =
        std::fs::canonicalize("/bin/sh").map_err(|e| Error::Missing(format!("/bin/sh: {e}")))?;
    let sh_guest = guest_path(&sh);
    host.push((sh_guest.clone(), sh.clone()));
    elves.push(sh.clone());
    let python_version = if o.no_python {
        None
    } else {
        add_python(&mut tree, &mut host, &mut elves, &mut notes)?
    };
    for b in &elves {
        // At the path ldd names (the loader's), with the real file's contents.
        for l in ldd(b)? {
            host.push((guest_path(&l), l));
        }
    }
    let sel = crate::modules::select(kernel.modules.as_deref(), &kernel.release)?;
    if !sel.modules.iter().any(|m| m.name == "tun") && !sel.builtin.iter().any(|m| m == "tun") {
        notes.push(match &kernel.modules {
            None => "no modules directory given: tun must be built into the kernel".to_string(),
            Some(d) => format!(
                "tun is neither a module in {} nor built in: runs will be skipped",
                d.display()
            ),
        });
    }

    let h = cache_key(kernel, o, &trc, &host, &sel);
    let dir = cache.join("initramfs").join(&kernel.release);
    let path = dir.join(format!("base-{h:016x}.cpio.gz"));
    let manifest = BaseManifest {
        release: kernel.release.clone(),
        modules: module_entries(&sel, &kernel.release),
        builtin: sel.builtin.clone(),
        absent: sel.absent.clone(),
        python: python_version,
    };
    if let Ok(m) = std::fs::metadata(&path) {
        return Ok(Base {
            path,
            manifest,
            cached: true,
            bytes: m.len(),
            notes,
        });
    }

    // Build it.
    std::fs::create_dir_all(&dir).map_err(|e| Error::Failed(format!("{}: {e}", dir.display())))?;
    for (g, p) in &host {
        if !tree.contains(g) {
            tree.host_file(g, p)?;
        }
    }
    if sh_guest != "usr/bin/sh" {
        let target = Path::new(&sh_guest)
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        tree.symlink("usr/bin/sh", &target)?;
    }
    add_trc(&mut tree, &dir, &trc, &mut notes)?;
    add_busybox_applets(&mut tree, &busybox)?;
    add_modules(&mut tree, &sel, &manifest.modules)?;
    let mj = serde_json::to_vec_pretty(&manifest).map_err(|e| Error::Failed(e.to_string()))?;
    tree.file("etc/trc-vm/base.json", 0o644, 0, Data::Bytes(mj))?;
    let gz = tree.to_gzip()?;
    write_atomic(&path, &gz)?;
    remove_older_bases(&dir, &path);
    Ok(Base {
        path,
        manifest,
        cached: false,
        bytes: gz.len() as u64,
        notes,
    })
}

/// The manifest's modules: where each of `sel` goes in the guest, in load order (dependencies
/// first, as [`crate::modules::select`] ordered them).
pub fn module_entries(sel: &crate::modules::Selection, release: &str) -> Vec<BaseModule> {
    sel.modules
        .iter()
        .map(|m| BaseModule {
            name: m.name.clone(),
            path: format!(
                "/usr/lib/modules/{release}/{}.ko{}",
                m.name,
                if m.compressed { ".zst" } else { "" }
            ),
            compressed: m.compressed,
        })
        .collect()
}

/// Puts `sel`'s module files into `tree` at the paths of `entries` ([`module_entries`]).
pub fn add_modules(
    tree: &mut Tree,
    sel: &crate::modules::Selection,
    entries: &[BaseModule],
) -> Result<(), Error> {
    for m in &sel.modules {
        let g = entries
            .iter()
            .find(|b| b.name == m.name)
            .map(|b| b.path.clone())
            .unwrap_or_default();
        tree.file(&g, 0o644, 0, Data::Bytes(m.data.clone()))?;
    }
    Ok(())
}

/// The guest's fixed skeleton: the top directories, the `/bin` -> `/usr/bin` style links, the
/// console and null devices, and a root-only passwd and group.
fn skeleton(tree: &mut Tree) -> Result<(), Error> {
    for d in [
        "proc",
        "sys",
        "dev",
        "tmp",
        "run",
        "root",
        "etc/trc-vm",
        "t",
        "usr/bin",
        "usr/sbin",
        "usr/lib",
        "usr/lib64",
    ] {
        tree.dir(d, if d == "tmp" { 0o1777 } else { 0o755 })?;
    }
    for d in ["bin", "sbin", "lib", "lib64"] {
        tree.symlink(d, &format!("usr/{d}"))?;
    }
    tree.char_device("dev/console", 0o600, 5, 1)?;
    tree.char_device("dev/null", 0o666, 1, 3)?;
    tree.file(
        "etc/passwd",
        0o644,
        0,
        Data::Bytes(b"root:x:0:0:root:/root:/bin/sh\n".to_vec()),
    )?;
    tree.file("etc/group", 0o644, 0, Data::Bytes(b"root:x:0:\n".to_vec()))?;
    Ok(())
}

/// The host's ip (required), tc, nstat and sysctl, at their canonical guest paths; a missing
/// optional one is a note.
fn add_host_tools(
    host: &mut Vec<(String, PathBuf)>,
    elves: &mut Vec<PathBuf>,
    notes: &mut Vec<String>,
) -> Result<(), Error> {
    let ip = find_tool("ip").ok_or_else(|| {
        Error::Missing("iproute2's ip is not installed (the runner needs it in the guest)".into())
    })?;
    for (name, p) in [
        ("ip", Some(ip)),
        ("tc", find_tool("tc")),
        ("nstat", find_tool("nstat")),
        ("sysctl", find_tool("sysctl")),
    ] {
        match p {
            Some(p) => {
                let g = guest_path(&std::fs::canonicalize(&p).unwrap_or(p.clone()));
                host.push((g, p.clone()));
                elves.push(p);
            }
            None => notes.push(format!(
                "{name} is not installed on the host: not in the guest"
            )),
        }
    }
    // tc's delay distribution tables (netem `distribution normal|pareto|paretonormal`), where
    // iproute2 keeps them (/usr/lib/tc or /usr/lib/MULTIARCH/tc).
    let mut dirs = vec![PathBuf::from("/usr/lib/tc")];
    if let Ok(rd) = std::fs::read_dir("/usr/lib") {
        let mut v: Vec<PathBuf> = rd
            .filter_map(|e| e.ok())
            .map(|e| e.path().join("tc"))
            .filter(|p| p.is_dir())
            .collect();
        v.sort();
        dirs.extend(v);
    }
    for d in dirs {
        for n in ["normal", "pareto", "paretonormal"] {
            let f = d.join(format!("{n}.dist"));
            if f.is_file() {
                host.push((guest_path(&f), f));
            }
        }
    }
    Ok(())
}

/// The host's python3 with the files it loads at start-up, the prefix landmark and the basic
/// encodings; its version, or `None` (with a note) when there is no usable python.
fn add_python(
    tree: &mut Tree,
    host: &mut Vec<(String, PathBuf)>,
    elves: &mut Vec<PathBuf>,
    notes: &mut Vec<String>,
) -> Result<Option<String>, Error> {
    let Some(py) = find_python() else {
        notes.push("no Debian python3 (/usr/bin/python3) on the host: scripts with %{ }% blocks will fail in the guest".into());
        return Ok(None);
    };
    let (v, files) = match python_files(&py) {
        Ok(x) => x,
        Err(e) => {
            notes.push(format!("no python3 in the guest: {e}"));
            return Ok(None);
        }
    };
    let name = py
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    host.push((guest_path(&py), py.clone()));
    elves.push(py.clone());
    tree.symlink("usr/bin/python3", &name)?;
    // The prefix landmark and the exec-prefix directory python looks for.
    let lib = Path::new("/usr/lib").join(&name);
    host.push((guest_path(&lib.join("os.py")), lib.join("os.py")));
    tree.dir(&guest_path(&lib.join("lib-dynload")), 0o755)?;
    for e in ["__init__", "aliases", "utf_8", "latin_1", "ascii"] {
        let f = lib.join("encodings").join(format!("{e}.py"));
        if f.is_file() {
            host.push((guest_path(&f), f));
        }
    }
    for f in files {
        if f.extension().is_some_and(|x| x == "so") {
            elves.push(f.clone());
        }
        host.push((guest_path(&f), f));
    }
    Ok(Some(v))
}

/// The base's cache key: format, kernel, the stats of every host file, the modules' sources.
fn cache_key(
    kernel: &KernelImage,
    o: &BaseOptions,
    trc: &Path,
    host: &[(String, PathBuf)],
    sel: &crate::modules::Selection,
) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    fnv(
        &mut h,
        format!("{FORMAT}\0{}\0{}\0", kernel.release, o.no_python).as_bytes(),
    );
    let stat = |p: &Path| {
        std::fs::metadata(p)
            .map(|m| format!("{}:{}:{}:{}", m.len(), m.mtime(), m.mtime_nsec(), m.ino()))
            .unwrap_or_default()
    };
    fnv(
        &mut h,
        format!("trc\0{}\0{}\0", trc.display(), stat(trc)).as_bytes(),
    );
    for (g, p) in host {
        fnv(
            &mut h,
            format!("{g}\0{}\0{}\0", p.display(), stat(p)).as_bytes(),
        );
    }
    for m in &sel.modules {
        fnv(
            &mut h,
            format!("{}\0{}\0{}\0", m.name, m.source.display(), stat(&m.source)).as_bytes(),
        );
    }
    h
}

/// trc as the guest's `/usr/bin/trc` and `/init`, stripped of its debug info when objcopy is
/// there (36 MB -> 6 MB with debug=1).
fn add_trc(tree: &mut Tree, dir: &Path, trc: &Path, notes: &mut Vec<String>) -> Result<(), Error> {
    let stripped = dir.join(format!(".trc-stripped-{}", std::process::id()));
    let _rm = RemoveOnDrop(stripped.clone());
    let trc_src = match Command::new("objcopy")
        .arg("--strip-debug")
        .arg(trc)
        .arg(&stripped)
        .status()
    {
        Ok(s) if s.success() => stripped.clone(),
        _ => {
            notes.push(
                "objcopy is not installed: trc goes into the initramfs with its debug info".into(),
            );
            trc.to_path_buf()
        }
    };
    let data = std::fs::read(&trc_src)
        .map_err(|e| Error::Failed(format!("{}: {e}", trc_src.display())))?;
    tree.file("usr/bin/trc", 0o755, 0, Data::Bytes(data))?;
    tree.symlink("init", "usr/bin/trc")?;
    Ok(())
}

/// busybox applets as links to busybox, where no real program is.
fn add_busybox_applets(tree: &mut Tree, busybox: &Path) -> Result<(), Error> {
    let list = Command::new(busybox)
        .arg("--list-full")
        .output()
        .map_err(|e| Error::Failed(format!("{}: {e}", busybox.display())))?;
    for a in String::from_utf8_lossy(&list.stdout).lines() {
        let Some((d, n)) = a.rsplit_once('/') else {
            continue;
        };
        let d = if d.ends_with("sbin") {
            "usr/sbin"
        } else {
            "usr/bin"
        };
        let g = format!("{d}/{n}");
        let other = format!(
            "{}/{n}",
            if d == "usr/sbin" {
                "usr/bin"
            } else {
                "usr/sbin"
            }
        );
        if !tree.contains(&g) && !tree.contains(&other) && !n.is_empty() && !n.contains(['/', '\0'])
        {
            tree.symlink(&g, "/usr/bin/busybox")?;
        }
    }
    Ok(())
}

/// Removes the older bases of this release (earlier trc builds) in `dir`, all but `keep`.
fn remove_older_bases(dir: &Path, keep: &Path) {
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.filter_map(|e| e.ok()) {
            let n = e.file_name().to_string_lossy().into_owned();
            if n.starts_with("base-") && n.ends_with(".cpio.gz") && e.path() != keep {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}

// ---- the scripts archive ---------------------------------------------------------------------

/// Files a shell line names that exist relative to `dir` (`../common/defaults.sh`, `./x.py`):
/// words that contain a `/` or end in `.sh` / `.py`.
pub fn referenced_files(cmd: &str, dir: &Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    for w in cmd.split(|c: char| c.is_whitespace() || ";|&<>()`'\"=$".contains(c)) {
        if w.is_empty()
            || w.starts_with('/')
            || w.starts_with('-')
            || !(w.contains('/') || w.ends_with(".sh") || w.ends_with(".py"))
        {
            continue;
        }
        let p = dir.join(w);
        if p.metadata()
            .is_ok_and(|m| m.is_file() && m.len() < (1 << 20))
        {
            if let Ok(c) = std::fs::canonicalize(&p) {
                v.push(c);
            }
        }
    }
    v
}

fn common_dir(paths: &[PathBuf]) -> PathBuf {
    let mut it = paths.iter().filter_map(|p| p.parent());
    let Some(first) = it.next() else {
        return PathBuf::from("/");
    };
    let mut acc: Vec<std::path::Component> = first.components().collect();
    for p in it {
        let c: Vec<_> = p.components().collect();
        let n = acc.iter().zip(&c).take_while(|(a, b)| a == b).count();
        acc.truncate(n);
    }
    acc.iter().collect()
}

/// The scripts archive (gzip) and the job it carries. `scripts`: (host path, name in reports,
/// parsed script).
pub fn scripts_archive(
    scripts: &[(PathBuf, String, trc_pkt::Script)],
    mut job: ScriptJob,
) -> Result<(Vec<u8>, ScriptJob), Error> {
    let mut files: Vec<PathBuf> = Vec::new();
    let mut canon_scripts = Vec::new();
    for (p, _, s) in scripts {
        let c =
            std::fs::canonicalize(p).map_err(|e| Error::Usage(format!("{}: {e}", p.display())))?;
        let dir = c
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("/"));
        files.push(c.clone());
        canon_scripts.push(c);
        let mut todo: Vec<PathBuf> = Vec::new();
        for st in &s.statements {
            if let trc_pkt::StatementKind::Shell(cmd) = &st.kind {
                todo.extend(referenced_files(cmd, &dir));
            }
        }
        // One more level: what the named files name (set_sysctls.py from defaults.sh).
        let mut more = Vec::new();
        for f in &todo {
            if let Ok(t) = std::fs::read_to_string(f) {
                more.extend(referenced_files(&t, &dir));
                if let Some(fd) = f.parent() {
                    more.extend(referenced_files(&t, fd));
                }
            }
        }
        files.extend(todo);
        files.extend(more);
    }
    files.sort();
    files.dedup();
    let root = common_dir(&files);
    let mut tree = Tree::new();
    let rel = |p: &Path| -> String {
        let r = p
            .strip_prefix(&root)
            .unwrap_or(p)
            .to_string_lossy()
            .trim_start_matches('/')
            .to_string();
        format!("t/{r}")
    };
    for f in &files {
        tree.host_file(&rel(f), f)?;
    }
    job.scripts = scripts
        .iter()
        .zip(&canon_scripts)
        .map(|((_, name, _), c)| JobScript {
            guest_path: format!("/{}", rel(c)),
            name: name.clone(),
        })
        .collect();
    let j = serde_json::to_vec_pretty(&Job::Scripts(job.clone()))
        .map_err(|e| Error::Failed(e.to_string()))?;
    tree.file("t/job.json", 0o644, 0, Data::Bytes(j))?;
    Ok((tree.to_gzip()?, job))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_usr_paths() {
        assert_eq!(
            guest_path(Path::new("/lib/x86_64-linux-gnu/libc.so.6")),
            "usr/lib/x86_64-linux-gnu/libc.so.6"
        );
        assert_eq!(
            guest_path(Path::new("/lib64/ld-linux-x86-64.so.2")),
            "usr/lib64/ld-linux-x86-64.so.2"
        );
        assert_eq!(guest_path(Path::new("/usr/sbin/ip")), "usr/sbin/ip");
        assert_eq!(guest_path(Path::new("/bin/dash")), "usr/bin/dash");
    }

    #[test]
    fn ldd_output() {
        let t = "\tlinux-vdso.so.1 (0x00007ffd)\n\tlibgcc_s.so.1 => /lib/x86_64-linux-gnu/libgcc_s.so.1 (0x00007f)\n\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)\n\t/lib64/ld-linux-x86-64.so.2 (0x00007f)\n";
        assert_eq!(
            parse_ldd(t).unwrap(),
            vec![
                PathBuf::from("/lib/x86_64-linux-gnu/libgcc_s.so.1"),
                PathBuf::from("/lib/x86_64-linux-gnu/libc.so.6"),
                PathBuf::from("/lib64/ld-linux-x86-64.so.2")
            ]
        );
        assert!(parse_ldd("\tlibfoo.so => not found\n").is_err());
        let me = std::env::current_exe().unwrap();
        let libs = ldd(&me).unwrap();
        assert!(
            libs.iter().any(|l| l.to_string_lossy().contains("libc.so")),
            "{libs:?}"
        );
    }

    #[test]
    fn tree_orders_parents_first() {
        let mut t = Tree::new();
        t.file(
            "usr/lib/x86_64-linux-gnu/libc.so.6",
            0o755,
            0,
            Data::Bytes(b"x".to_vec()),
        )
        .unwrap();
        t.symlink("lib", "usr/lib").unwrap();
        t.file("usr-x", 0o644, 0, Data::Bytes(Vec::new())).unwrap();
        assert!(
            t.file("lib/x", 0o644, 0, Data::Bytes(Vec::new())).is_err(),
            "lib is a symlink"
        );
        assert!(t.file("../x", 0o644, 0, Data::Bytes(Vec::new())).is_err());
        let names = t.names();
        assert_eq!(
            names,
            [
                "lib",
                "usr",
                "usr-x",
                "usr/lib",
                "usr/lib/x86_64-linux-gnu",
                "usr/lib/x86_64-linux-gnu/libc.so.6"
            ]
        );
        let b = t.write_cpio(Vec::new()).unwrap();
        let e = cpio::read(&b).unwrap();
        assert_eq!(e.iter().map(|e| e.name.clone()).collect::<Vec<_>>(), names);
        // And through gzip.
        let gz = t.to_gzip().unwrap();
        let mut raw = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut raw).unwrap();
        assert_eq!(raw, b);
    }

    #[test]
    fn shell_line_references() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../counterexamples");
        let dir = root.join("kernel");
        let v = referenced_files("../common/defaults.sh", &dir);
        assert_eq!(
            v,
            vec![std::fs::canonicalize(root.join("common/defaults.sh")).unwrap()]
        );
        assert!(referenced_files(
            "sysctl -q net.ipv4.tcp_sack=0; /proc/x; ./nonexistent.sh",
            &dir
        )
        .is_empty());
        assert_eq!(
            common_dir(&[
                PathBuf::from("/a/b/k/x.pkt"),
                PathBuf::from("/a/b/common/d.sh")
            ]),
            PathBuf::from("/a/b")
        );
        assert_eq!(
            common_dir(&[PathBuf::from("/a/b/x.pkt")]),
            PathBuf::from("/a/b")
        );
    }
}
