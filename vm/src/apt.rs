//! Debian kernels through a private apt configuration: nothing of the machine's apt state is
//! read or changed except the *mirror*, which is taken at run time from the machine's own
//! sources (deb822 `/etc/apt/sources.list.d/*.sources`, else the one-line `/etc/apt/sources.list`);
//! no host name is written into the code. Everything else lives under `CACHE/apt/`:
//! `apt.conf` (read through `APT_CONFIG` *before* `/etc/apt/apt.conf.d`, pointing every
//! `Dir::` at private directories, so the host's hooks and settings stay out), `sources.list`
//! (`deb [signed-by=debian-archive-keyring] MIRROR SUITE main` for sid, trixie and bookworm),
//! `lists/`, `cache/`, `state/status` (empty). `apt-get` and `apt-cache` are run as the
//! ecosystem's tools, with the same `-o` overrides on every call.
//!
//! The kernel: Debian's `cloud-amd64` flavour (small, virtio built in). Candidates are
//! `linux-binary-ABI` (the split layout of sid's 7.x: vmlinuz in one package,
//! `linux-modules-ABI` and `linux-base-ABI` beside it) and else `linux-image-ABI`; the newest
//! version in the suite wins. The packages are downloaded (`apt-get download`), unpacked with
//! `dpkg-deb -x` into `CACHE/kernels/ABI/root/` (renamed into place when complete), and the
//! pieces are linked as `vmlinuz`, `modules`, `config`, `System.map` with an `image.json`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use crate::{debver, write_atomic, Error, KernelImage};

/// The suites the private sources always list (bookworm's keyring verifies all three).
pub const SUITES: &[&str] = &["sid", "trixie", "bookworm"];
/// Debian's archive keyring (package `debian-archive-keyring`).
pub const KEYRING: &str = "/usr/share/keyrings/debian-archive-keyring.gpg";
/// The kernel flavour fetched.
pub const FLAVOUR: &str = "cloud-amd64";
/// Lists older than this are refreshed.
const LISTS_MAX_AGE: Duration = Duration::from_secs(24 * 3600);

/// What `trc kernel fetch` was asked for: `[debian:][VERSION-]SUITE` or `[debian:]VERSION`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelSpec {
    /// A version prefix such as `7.2` or `6.12.117`.
    pub version: Option<String>,
    /// `sid`, `trixie`, ...; `None`: every suite of [`SUITES`].
    pub suite: Option<String>,
}

impl KernelSpec {
    pub fn parse(s: &str) -> Result<KernelSpec, Error> {
        let t = s.strip_prefix("debian:").unwrap_or(s);
        let bad = || {
            Error::Usage(format!("{s}: expected debian:SUITE, debian:VERSION-SUITE or debian:VERSION (e.g. debian:sid, debian:6.12-trixie)"))
        };
        if t.is_empty() {
            return Err(bad());
        }
        let suite_ok = |x: &str| {
            x.starts_with(|c: char| c.is_ascii_lowercase())
                && x.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        };
        if t.starts_with(|c: char| c.is_ascii_digit()) {
            let n = t
                .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                .unwrap_or(t.len());
            let (v, rest) = t.split_at(n);
            if v.ends_with('.') {
                return Err(bad());
            }
            let suite = match rest {
                "" => None,
                r => match r.strip_prefix('-') {
                    Some(x) if suite_ok(x) => Some(x.to_string()),
                    _ => return Err(bad()),
                },
            };
            Ok(KernelSpec {
                version: Some(v.to_string()),
                suite,
            })
        } else if suite_ok(t) {
            Ok(KernelSpec {
                version: None,
                suite: Some(t.to_string()),
            })
        } else {
            Err(bad())
        }
    }

    /// The name of the cache link (`7.2-sid`, `sid`, `6.12`).
    pub fn link_name(&self) -> String {
        match (&self.version, &self.suite) {
            (Some(v), Some(s)) => format!("{v}-{s}"),
            (Some(v), None) => v.clone(),
            (None, Some(s)) => s.clone(),
            (None, None) => "any".into(),
        }
    }
}

// ---- the machine's mirror ----------------------------------------------------------------

/// The first archive URI of deb822 text whose stanza is enabled, of type `deb`, and not a
/// security suite.
pub fn mirror_from_deb822(text: &str) -> Option<String> {
    for stanza in text.split("\n\n").map(str::trim).filter(|s| !s.is_empty()) {
        let mut uris = None;
        let mut suites = String::new();
        let mut types = String::new();
        let mut enabled = true;
        for line in stanza.lines() {
            if line.starts_with('#') || line.starts_with(char::is_whitespace) {
                continue;
            }
            let Some((k, v)) = line.split_once(':') else {
                continue;
            };
            let v = v.trim();
            match k.trim().to_ascii_lowercase().as_str() {
                "uris" => uris = v.split_whitespace().next().map(str::to_string),
                "suites" => suites = v.to_string(),
                "types" => types = v.to_string(),
                "enabled" => enabled = !v.eq_ignore_ascii_case("no"),
                _ => {}
            }
        }
        let Some(u) = uris else { continue };
        if enabled
            && types.split_whitespace().any(|t| t == "deb")
            && !suites.contains("-security")
            && !u.contains("security")
            && u.contains("://")
        {
            return Some(u.trim_end_matches('/').to_string());
        }
    }
    None
}

/// The first `deb` URI of one-line sources text that is not a security archive.
pub fn mirror_from_one_line(text: &str) -> Option<String> {
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        let mut w = line.split_whitespace();
        if w.next() != Some("deb") {
            continue;
        }
        // Skip `[ options ]`, which may contain spaces.
        let mut in_opts = false;
        for t in w {
            if t.starts_with('[') {
                in_opts = !t.ends_with(']');
                continue;
            }
            if in_opts {
                in_opts = !t.ends_with(']');
                continue;
            }
            if t.contains("://") && !t.contains("security") {
                return Some(t.trim_end_matches('/').to_string());
            }
            break;
        }
    }
    None
}

/// The machine's Debian mirror, read from its apt sources now.
pub fn host_mirror() -> Result<String, Error> {
    let mut files: Vec<PathBuf> = std::fs::read_dir("/etc/apt/sources.list.d")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "sources"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    for f in &files {
        if let Some(m) = std::fs::read_to_string(f)
            .ok()
            .as_deref()
            .and_then(mirror_from_deb822)
        {
            return Ok(m);
        }
    }
    for f in ["/etc/apt/sources.list"] {
        if let Some(m) = std::fs::read_to_string(f)
            .ok()
            .as_deref()
            .and_then(mirror_from_one_line)
        {
            return Ok(m);
        }
    }
    Err(Error::Missing("no Debian mirror in the machine's apt sources (/etc/apt/sources.list.d/*.sources, /etc/apt/sources.list)".into()))
}

// ---- the private configuration -------------------------------------------------------------

/// The private apt directory and how to call apt in it.
pub struct PrivateApt {
    pub dir: PathBuf,
}

/// `sources.list` text for `suites` on `mirror`.
pub fn sources_list(mirror: &str, suites: &[String]) -> String {
    suites
        .iter()
        .map(|s| format!("deb [signed-by={KEYRING}] {mirror} {s} main\n"))
        .collect()
}

/// `apt.conf` text for the private directory `d`.
pub fn apt_conf(d: &Path) -> String {
    let d = d.display();
    format!(
        "Dir::Etc::parts \"{d}/etc/apt.conf.d\";
Dir::Etc::main \"/dev/null\";
Dir::Etc::sourcelist \"{d}/sources.list\";
Dir::Etc::sourceparts \"-\";
Dir::Etc::preferences \"/dev/null\";
Dir::Etc::preferencesparts \"{d}/etc/preferences.d\";
Dir::State \"{d}/state\";
Dir::State::Lists \"{d}/lists\";
Dir::State::status \"{d}/state/status\";
Dir::Cache \"{d}/cache\";
Dir::Cache::archives \"{d}/cache/archives\";
Dir::Log \"{d}/state\";
APT::Architecture \"amd64\";
APT::Architectures {{ \"amd64\"; }};
Acquire::Languages \"none\";
Acquire::GzipIndexes \"true\";
Acquire::Check-Valid-Until \"false\";
APT::Sandbox::User \"root\";
"
    )
}

fn io_err(what: impl std::fmt::Display, e: std::io::Error) -> Error {
    Error::Failed(format!("{what}: {e}"))
}

impl PrivateApt {
    /// Writes the configuration for `suites` under `dir` (the mirror read from the machine now).
    pub fn setup(dir: &Path, suites: &[String]) -> Result<PrivateApt, Error> {
        let mirror = host_mirror()?;
        for d in [
            "lists/partial",
            "cache/archives/partial",
            "state",
            "etc/apt.conf.d",
            "etc/preferences.d",
            "debs",
        ] {
            std::fs::create_dir_all(dir.join(d)).map_err(|e| io_err(dir.join(d).display(), e))?;
        }
        let status = dir.join("state/status");
        if !status.exists() {
            write_atomic(&status, b"")?;
        }
        write_atomic(
            &dir.join("sources.list"),
            sources_list(&mirror, suites).as_bytes(),
        )?;
        write_atomic(&dir.join("apt.conf"), apt_conf(dir).as_bytes())?;
        Ok(PrivateApt {
            dir: dir.to_path_buf(),
        })
    }

    fn cmd(&self, tool: &str) -> Command {
        let d = &self.dir;
        let mut c = Command::new(tool);
        c.env("APT_CONFIG", d.join("apt.conf"))
            .env("LC_ALL", "C")
            .env("DEBIAN_FRONTEND", "noninteractive")
            .arg("-o")
            .arg(format!(
                "Dir::Etc::sourcelist={}",
                d.join("sources.list").display()
            ))
            .args(["-o", "Dir::Etc::sourceparts=-"])
            .arg("-o")
            .arg(format!("Dir::State::Lists={}", d.join("lists").display()))
            .arg("-o")
            .arg(format!("Dir::Cache={}", d.join("cache").display()))
            .stdin(std::process::Stdio::null());
        c
    }

    fn run(&self, tool: &str, args: &[&str], cwd: Option<&Path>) -> Result<String, Error> {
        let mut c = self.cmd(tool);
        c.args(args);
        if let Some(d) = cwd {
            c.current_dir(d);
        }
        let out = c.output().map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                Error::Missing(format!(
                    "{tool} is not installed (Debian's apt is needed to fetch a Debian kernel)"
                ))
            } else {
                Error::Failed(format!("{tool}: {e}"))
            }
        })?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            let tail: Vec<&str> = err
                .lines()
                .rev()
                .take(6)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            return Err(Error::Failed(format!(
                "{tool} {} failed ({}): {}",
                args.join(" "),
                out.status,
                tail.join(" | ")
            )));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// `apt-get update` when the lists are missing, older than a day, for another suite set, or
    /// when `force`.
    pub fn update_if_stale(&self, suites: &[String], force: bool) -> Result<bool, Error> {
        let stamp = self.dir.join("state/updated");
        let want = suites.join(" ");
        let fresh = std::fs::read_to_string(&stamp)
            .ok()
            .is_some_and(|s| s.trim() == want)
            && std::fs::metadata(&stamp)
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| SystemTime::now().duration_since(t).ok())
                .is_some_and(|age| age < LISTS_MAX_AGE);
        if fresh && !force {
            return Ok(false);
        }
        self.run("apt-get", &["-q", "update"], None)?;
        write_atomic(&stamp, format!("{want}\n").as_bytes())?;
        Ok(true)
    }
}

/// One line of `apt-cache madison`: `pkg | version | URI suite/component arch Packages`.
pub fn parse_madison(text: &str) -> Vec<(String, String, String)> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split('|').map(str::trim);
            let (p, v, rest) = (f.next()?, f.next()?, f.next()?);
            let suite = rest.split_whitespace().nth(1)?.split('/').next()?;
            Some((p.to_string(), v.to_string(), suite.to_string()))
        })
        .collect()
}

/// Whether `pkg` is a kernel package of the flavour for `version` (`linux-KIND-ABI` where ABI
/// starts with the version followed by `.`, `-` or `+`, or with any digit if no version).
pub fn candidate_abi<'a>(pkg: &'a str, kind: &str, version: Option<&str>) -> Option<&'a str> {
    let abi = pkg
        .strip_prefix("linux-")?
        .strip_prefix(kind)?
        .strip_prefix('-')?;
    if !abi.ends_with(&format!("-{FLAVOUR}")) || !abi.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    if let Some(v) = version {
        let rest = abi.strip_prefix(v)?;
        if !rest.starts_with(['.', '-', '+']) {
            return None;
        }
    }
    Some(abi)
}

/// Options of [`crate::fetch_debian_kernel_with`].
#[derive(Debug, Clone, Default)]
pub struct FetchOptions {
    /// `apt-get update` even if the lists are fresh.
    pub refresh: bool,
    /// Download and unpack again even if this release is already in the cache.
    pub force: bool,
}

/// The newest kernel package for `spec` in the suites apt knows: (version, package, abi, suite).
/// `linux-binary-*` packages win over `linux-image-*` ones.
fn newest_package(
    apt: &PrivateApt,
    spec: &KernelSpec,
) -> Result<Option<(String, String, String, String)>, Error> {
    let in_suite = |s: &str| spec.suite.as_deref().is_none_or(|w| w == s);
    // (version, package, abi, suite)
    let mut best: Option<(String, String, String, String)> = None;
    for kind in ["binary", "image"] {
        let names = apt.run("apt-cache", &["pkgnames", &format!("linux-{kind}-")], None)?;
        let pkgs: Vec<&str> = names
            .lines()
            .map(str::trim)
            .filter(|p| candidate_abi(p, kind, spec.version.as_deref()).is_some())
            .collect();
        if pkgs.is_empty() {
            continue;
        }
        let mut args = vec!["madison"];
        args.extend(pkgs.iter().copied());
        for (p, v, s) in parse_madison(&apt.run("apt-cache", &args, None)?) {
            if !in_suite(&s) || !pkgs.contains(&p.as_str()) {
                continue;
            }
            if best
                .as_ref()
                .is_none_or(|b| debver::compare(&v, &b.0).is_gt())
            {
                let abi = candidate_abi(&p, kind, None)
                    .unwrap_or_default()
                    .to_string();
                best = Some((v, p, abi, s));
            }
        }
        if best.is_some() {
            break;
        }
    }
    Ok(best)
}

/// `apt-get download` of `pkgs` into `debs`: the .deb files, sorted.
fn download_debs(
    apt: &PrivateApt,
    debs: &Path,
    pkgs: &[String],
    log: &mut dyn FnMut(&str),
) -> Result<Vec<PathBuf>, Error> {
    let t = std::time::Instant::now();
    let mut args = vec!["-q", "download"];
    args.extend(pkgs.iter().map(String::as_str));
    apt.run("apt-get", &args, Some(debs))?;
    let mut files: Vec<PathBuf> = std::fs::read_dir(debs)
        .map_err(|e| io_err(debs.display(), e))?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "deb"))
        .collect();
    files.sort();
    let bytes: u64 = files
        .iter()
        .filter_map(|f| f.metadata().ok())
        .map(|m| m.len())
        .sum();
    log(&format!(
        "downloaded {} packages, {:.1} MB, in {:.1} s",
        files.len(),
        bytes as f64 / 1e6,
        t.elapsed().as_secs_f64()
    ));
    Ok(files)
}

/// `dpkg-deb -x` of each file into `root`.
fn unpack(files: &[PathBuf], root: &Path) -> Result<(), Error> {
    for f in files {
        let st = Command::new("dpkg-deb")
            .arg("-x")
            .arg(f)
            .arg(root)
            .status()
            .map_err(|e| io_err("dpkg-deb", e))?;
        if !st.success() {
            return Err(Error::Failed(format!(
                "dpkg-deb -x {} failed ({st})",
                f.display()
            )));
        }
    }
    Ok(())
}

/// See [`crate::fetch_debian_kernel`].
pub fn fetch(
    spec: &KernelSpec,
    cache: &Path,
    o: &FetchOptions,
    log: &mut dyn FnMut(&str),
) -> Result<KernelImage, Error> {
    let mut suites: Vec<String> = SUITES.iter().map(|s| s.to_string()).collect();
    if let Some(s) = &spec.suite {
        if !suites.contains(s) {
            suites.push(s.clone());
        }
    }
    if !Path::new(KEYRING).exists() {
        return Err(Error::Missing(format!(
            "{KEYRING} is missing (apt-get install debian-archive-keyring)"
        )));
    }
    for tool in ["dpkg-deb"] {
        if Command::new(tool).arg("--version").output().is_err() {
            return Err(Error::Missing(format!("{tool} is not installed")));
        }
    }
    let apt = PrivateApt::setup(&cache.join("apt"), &suites)?;
    let t = std::time::Instant::now();
    if apt.update_if_stale(&suites, o.refresh)? {
        log(&format!(
            "apt-get update ({}): {:.1} s",
            suites.join(" "),
            t.elapsed().as_secs_f64()
        ));
    }
    let best = newest_package(&apt, spec)?;
    let Some((version, pkg, abi, suite)) = best else {
        return Err(Error::Failed(format!(
            "no linux-binary-*-{FLAVOUR} or linux-image-*-{FLAVOUR}{} in {}",
            spec.version
                .as_deref()
                .map(|v| format!(" for {v}"))
                .unwrap_or_default(),
            spec.suite.as_deref().unwrap_or("sid, trixie or bookworm")
        )));
    };
    let kdir = cache.join("kernels");
    std::fs::create_dir_all(&kdir).map_err(|e| io_err(kdir.display(), e))?;
    let out = kdir.join(&abi);
    if !o.force {
        if let Ok(img) = KernelImage::from_dir(&out) {
            if img.package_version.as_deref() == Some(version.as_str()) {
                link(&kdir, &spec.link_name(), &abi)?;
                log(&format!(
                    "{suite}: {pkg}={version} already in {}",
                    out.display()
                ));
                return Ok(img);
            }
        }
    }
    let mut pkgs = vec![format!("{pkg}={version}")];
    if pkg.starts_with("linux-binary-") {
        for extra in [format!("linux-modules-{abi}"), format!("linux-base-{abi}")] {
            let pv = format!("{extra}={version}");
            if apt.run("apt-cache", &["show", &pv], None).is_ok() {
                pkgs.push(pv);
            }
        }
    }
    log(&format!("{suite}: {}", pkgs.join(" ")));
    // Download into a fresh directory, unpack into a temporary tree, rename into place.
    let debs = apt.dir.join("debs").join(&abi);
    let _ = std::fs::remove_dir_all(&debs);
    std::fs::create_dir_all(&debs).map_err(|e| io_err(debs.display(), e))?;
    let _clean_debs = crate::RemoveOnDrop(debs.clone());
    let files = download_debs(&apt, &debs, &pkgs, log)?;
    let tmp = kdir.join(format!(".{abi}.tmp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let guard = crate::RemoveOnDrop(tmp.clone());
    let root = tmp.join("root");
    std::fs::create_dir_all(&root).map_err(|e| io_err(root.display(), e))?;
    unpack(&files, &root)?;
    let img = lay_out(&tmp, &abi, &suite, &version, &pkgs)?;
    drop(img);
    // Replace an older unpacking of the same release.
    let old = kdir.join(format!(".{abi}.old-{}", std::process::id()));
    if out.exists() {
        std::fs::rename(&out, &old).map_err(|e| io_err(out.display(), e))?;
    }
    std::fs::rename(&tmp, &out).map_err(|e| io_err(out.display(), e))?;
    std::mem::forget(guard);
    let _ = std::fs::remove_dir_all(&old);
    link(&kdir, &spec.link_name(), &abi)?;
    KernelImage::from_dir(&out)
}

/// The newest `linux-source-X.Y` package of `suite` (`sid`, `trixie`, `bookworm`): its name and
/// version, through trc's private apt state under `cache/apt`.
pub fn source_package(
    suite: &str,
    cache: &Path,
    log: &mut dyn FnMut(&str),
) -> Result<(String, String), Error> {
    let mut suites: Vec<String> = SUITES.iter().map(|s| s.to_string()).collect();
    if !suites.iter().any(|s| s == suite) {
        suites.push(suite.to_string());
    }
    if !Path::new(KEYRING).exists() {
        return Err(Error::Missing(format!(
            "{KEYRING} is missing (apt-get install debian-archive-keyring)"
        )));
    }
    let apt = PrivateApt::setup(&cache.join("apt"), &suites)?;
    let t = std::time::Instant::now();
    if apt.update_if_stale(&suites, false)? {
        log(&format!(
            "apt-get update ({}): {:.1} s",
            suites.join(" "),
            t.elapsed().as_secs_f64()
        ));
    }
    let names = apt.run("apt-cache", &["pkgnames", "linux-source-"], None)?;
    let pkgs: Vec<&str> = names
        .lines()
        .map(str::trim)
        .filter(|p| {
            p.strip_prefix("linux-source-")
                .is_some_and(|v| v.starts_with(|c: char| c.is_ascii_digit()))
        })
        .collect();
    if pkgs.is_empty() {
        return Err(Error::Failed(format!(
            "no linux-source-* package in {suite}"
        )));
    }
    let mut args = vec!["madison"];
    args.extend(pkgs.iter().copied());
    let mut best: Option<(String, String)> = None;
    for (p, v, s) in parse_madison(&apt.run("apt-cache", &args, None)?) {
        if s == suite
            && best
                .as_ref()
                .is_none_or(|b| debver::compare(&v, &b.1).is_gt())
        {
            best = Some((p, v));
        }
    }
    best.ok_or_else(|| Error::Failed(format!("no linux-source-* package in {suite}")))
}

/// Downloads `pkg=version` into `dir` (a fresh directory): the `.deb`'s path.
pub fn download(pkg: &str, version: &str, cache: &Path, dir: &Path) -> Result<PathBuf, Error> {
    let apt = PrivateApt {
        dir: cache.join("apt"),
    };
    std::fs::create_dir_all(dir).map_err(|e| io_err(dir.display(), e))?;
    apt.run(
        "apt-get",
        &["-q", "download", &format!("{pkg}={version}")],
        Some(dir),
    )?;
    std::fs::read_dir(dir)
        .map_err(|e| io_err(dir.display(), e))?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "deb"))
        .ok_or_else(|| {
            Error::Failed(format!(
                "apt-get download {pkg}={version}: no .deb in {}",
                dir.display()
            ))
        })
}

/// Finds vmlinuz, the modules directory, config and System.map in either package layout
/// (`boot/` + `usr/lib/modules/ABI`, or all in `usr/lib/modules/ABI/`), links them at the top
/// of `dir` and writes `image.json`.
fn lay_out(
    dir: &Path,
    abi: &str,
    suite: &str,
    version: &str,
    pkgs: &[String],
) -> Result<KernelImage, Error> {
    let root = dir.join("root");
    let first = |c: &[String]| c.iter().find(|p| root.join(p).exists()).cloned();
    let modules = first(&[
        format!("usr/lib/modules/{abi}"),
        format!("lib/modules/{abi}"),
    ])
    .ok_or_else(|| Error::Failed(format!("no lib/modules/{abi} in the packages")))?;
    let vmlinuz = first(&[format!("boot/vmlinuz-{abi}"), format!("{modules}/vmlinuz")])
        .ok_or_else(|| Error::Failed("no vmlinuz in the packages".into()))?;
    let config = first(&[format!("boot/config-{abi}"), format!("{modules}/config")]);
    let smap = first(&[
        format!("boot/System.map-{abi}"),
        format!("{modules}/System.map"),
    ]);
    let sl = |target: &str, name: &str| {
        std::os::unix::fs::symlink(format!("root/{target}"), dir.join(name))
            .map_err(|e| io_err(dir.join(name).display(), e))
    };
    sl(&vmlinuz, "vmlinuz")?;
    sl(&modules, "modules")?;
    if let Some(c) = &config {
        sl(c, "config")?;
    }
    if let Some(s) = &smap {
        sl(s, "System.map")?;
    }
    let info = crate::ImageInfo {
        release: abi.into(),
        suite: Some(suite.into()),
        package_version: Some(version.into()),
        packages: pkgs.to_vec(),
    };
    write_atomic(
        &dir.join("image.json"),
        serde_json::to_string_pretty(&info)
            .unwrap_or_default()
            .as_bytes(),
    )?;
    KernelImage::from_dir(dir)
}

/// `kdir/name -> abi`, replaced atomically.
fn link(kdir: &Path, name: &str, abi: &str) -> Result<(), Error> {
    if name == abi {
        return Ok(());
    }
    let tmp = kdir.join(format!(".{name}.link-{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    std::os::unix::fs::symlink(abi, &tmp).map_err(|e| io_err(tmp.display(), e))?;
    std::fs::rename(&tmp, kdir.join(name)).map_err(|e| io_err(kdir.join(name).display(), e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deb822_mirror() {
        let t = "Types: deb\n# http://snapshot.example/archive/debian/20250520T000000Z\nURIs: http://mirror.example/debian/\nSuites: bookworm bookworm-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\nTypes: deb\nURIs: http://mirror.example/debian-security\nSuites: bookworm-security\nComponents: main\n";
        assert_eq!(
            mirror_from_deb822(t).as_deref(),
            Some("http://mirror.example/debian")
        );
        // The security stanza first: skipped; a disabled stanza and a deb-src-only stanza too.
        let t = "Types: deb\nURIs: http://sec.example/debian-security\nSuites: trixie-security\n\nTypes: deb-src\nURIs: http://src.example/debian\nSuites: trixie\n\nEnabled: no\nTypes: deb\nURIs: http://off.example/debian\nSuites: trixie\n\nTypes: deb deb-src\nURIs: https://on.example/debian https://second.example/debian\nSuites: trixie\n";
        assert_eq!(
            mirror_from_deb822(t).as_deref(),
            Some("https://on.example/debian")
        );
        assert_eq!(mirror_from_deb822("Types: deb\nSuites: sid\n"), None);
        assert_eq!(mirror_from_deb822(""), None);
    }

    #[test]
    fn one_line_mirror() {
        let t = "# comment\ndeb-src http://src.example/debian bookworm main\ndeb http://security.example/debian-security bookworm-security main\ndeb [arch=amd64 signed-by=/k.gpg] http://mirror.example/debian/ bookworm main\n";
        assert_eq!(
            mirror_from_one_line(t).as_deref(),
            Some("http://mirror.example/debian")
        );
        assert_eq!(
            mirror_from_one_line("deb [ arch=amd64 ] http://m.example/debian sid main").as_deref(),
            Some("http://m.example/debian")
        );
        assert_eq!(
            mirror_from_one_line("deb cdrom:[Debian]/ bookworm main"),
            None
        );
        assert_eq!(mirror_from_one_line(""), None);
    }

    #[test]
    fn generated_config() {
        let s = sources_list("http://m.example/debian", &["sid".into(), "trixie".into()]);
        assert_eq!(s, format!("deb [signed-by={KEYRING}] http://m.example/debian sid main\ndeb [signed-by={KEYRING}] http://m.example/debian trixie main\n"));
        let c = apt_conf(Path::new("/c/apt"));
        assert!(c.contains("Dir::Etc::parts \"/c/apt/etc/apt.conf.d\";"));
        assert!(c.contains("Dir::State::status \"/c/apt/state/status\";"));
        assert!(c.contains("APT::Architectures { \"amd64\"; };"));
        assert!(!c.contains("http"), "no host in the configuration");
    }

    #[test]
    fn specs() {
        let p = |s: &str| KernelSpec::parse(s).map(|k| (k.version, k.suite));
        assert_eq!(p("debian:sid").unwrap(), (None, Some("sid".into())));
        assert_eq!(p("trixie").unwrap(), (None, Some("trixie".into())));
        assert_eq!(
            p("debian:7.2-sid").unwrap(),
            (Some("7.2".into()), Some("sid".into()))
        );
        assert_eq!(
            p("6.1-bookworm-backports").unwrap(),
            (Some("6.1".into()), Some("bookworm-backports".into()))
        );
        assert_eq!(p("6.12.117").unwrap(), (Some("6.12.117".into()), None));
        for bad in [
            "",
            "debian:",
            "Sid",
            "7.-sid",
            "7.2_sid",
            "sid main",
            "debian:../x",
            "7.2-",
        ] {
            assert!(p(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            KernelSpec::parse("debian:7.2-sid").unwrap().link_name(),
            "7.2-sid"
        );
    }

    #[test]
    fn candidates_and_madison() {
        assert_eq!(
            candidate_abi("linux-binary-7.2.13+deb14-cloud-amd64", "binary", None),
            Some("7.2.13+deb14-cloud-amd64")
        );
        assert_eq!(
            candidate_abi(
                "linux-binary-7.2.13+deb14-cloud-amd64",
                "binary",
                Some("7.2")
            ),
            Some("7.2.13+deb14-cloud-amd64")
        );
        assert_eq!(
            candidate_abi(
                "linux-binary-7.2.13+deb14-cloud-amd64",
                "binary",
                Some("7.20")
            ),
            None
        );
        assert_eq!(
            candidate_abi(
                "linux-binary-unsigned-7.2.13+deb14-cloud-amd64",
                "binary",
                None
            ),
            None
        );
        assert_eq!(
            candidate_abi("linux-image-6.12.117+deb13-cloud-amd64-dbg", "image", None),
            None
        );
        assert_eq!(
            candidate_abi("linux-image-cloud-amd64", "image", None),
            None
        );
        assert_eq!(
            candidate_abi("linux-image-6.1.0-50-cloud-amd64", "image", Some("6.1")),
            Some("6.1.0-50-cloud-amd64")
        );
        assert_eq!(
            candidate_abi("linux-image-6.1.0-50-amd64", "image", None),
            None
        );
        let m = "linux-image-6.12.117+deb13-cloud-amd64 | 6.12.117-1 | http://m.example/debian trixie/main amd64 Packages\n\
                 linux-image-6.1.0-50-cloud-amd64 |  6.1.176-1 | http://m.example/debian bookworm/main amd64 Packages\n";
        assert_eq!(
            parse_madison(m),
            vec![
                (
                    "linux-image-6.12.117+deb13-cloud-amd64".into(),
                    "6.12.117-1".into(),
                    "trixie".into()
                ),
                (
                    "linux-image-6.1.0-50-cloud-amd64".into(),
                    "6.1.176-1".into(),
                    "bookworm".into()
                )
            ]
        );
        assert!(parse_madison("garbage\n").is_empty());
    }
}
