//! The kernel modules the guest loads: `tun` (required by the runner), and `veth`, `sch_netem`,
//! `ifb` when the kernel has them. The directory is a `lib/modules/RELEASE` tree (Debian's, or
//! what `make modules_install INSTALL_MOD_PATH=` leaves) or a flat directory of `.ko` files.
//! Dependencies come from its `modules.dep` when it has one (depmod's output, which also covers
//! a `.ko.zst` whose `.modinfo` cannot be read here); Debian's packages carry none (depmod makes
//! it at install time), so otherwise they come from the `depends=` string of the module's
//! `.modinfo`. `vermagic=` is checked against the kernel's release. Modules are decompressed on the
//! host (`.ko.xz`, `.ko.gz`); a `.ko.zst` is shipped as it is and loaded with
//! `MODULE_INIT_COMPRESSED_FILE` (the kernel decompresses it if it has `MODULE_DECOMPRESS`).

use crate::Error;
use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};

/// The modules asked for; only `tun` must exist (as a module or built in).
pub const WANTED: &[&str] = &["tun", "veth", "sch_netem", "ifb"];

/// A module ready for the initramfs.
#[derive(Debug, Clone)]
pub struct Module {
    pub name: String,
    pub source: PathBuf,
    /// The bytes to ship (decompressed unless `compressed`).
    pub data: Vec<u8>,
    /// Still compressed (zstd): load with `MODULE_INIT_COMPRESSED_FILE`.
    pub compressed: bool,
    pub depends: Vec<String>,
}

/// What was found for the wanted modules.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// In load order (dependencies first).
    pub modules: Vec<Module>,
    /// Wanted modules that are built into the kernel.
    pub builtin: Vec<String>,
    /// Wanted modules that do not exist at all.
    pub absent: Vec<String>,
}

fn walk(dir: &Path, out: &mut BTreeMap<String, PathBuf>, depth: usize) {
    if depth > 8 {
        return;
    }
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = rd.filter_map(|e| e.ok()).collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let p = e.path();
        let Ok(ft) = e.file_type() else { continue };
        if ft.is_dir() {
            walk(&p, out, depth + 1);
        } else if let Some(n) = p.file_name().and_then(|n| n.to_str()) {
            for ext in [".ko", ".ko.xz", ".ko.gz", ".ko.zst"] {
                if let Some(stem) = n.strip_suffix(ext) {
                    // Module names use `_` and `-` interchangeably.
                    out.entry(stem.replace('-', "_"))
                        .or_insert_with(|| p.clone());
                }
            }
        }
    }
}

/// Decompresses a module file as needed: `(bytes, still_compressed)`.
pub fn load_file(p: &Path) -> Result<(Vec<u8>, bool), Error> {
    let raw = std::fs::read(p).map_err(|e| Error::Failed(format!("{}: {e}", p.display())))?;
    let name = p.to_string_lossy();
    let bad = |e: String| Error::Failed(format!("{}: cannot decompress: {e}", p.display()));
    if name.ends_with(".xz") {
        let mut out = Vec::new();
        lzma_rs::xz_decompress(&mut std::io::Cursor::new(&raw), &mut out)
            .map_err(|e| bad(format!("{e:?}")))?;
        Ok((out, false))
    } else if name.ends_with(".gz") {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&raw[..])
            .read_to_end(&mut out)
            .map_err(|e| bad(e.to_string()))?;
        Ok((out, false))
    } else if name.ends_with(".zst") {
        Ok((raw, true))
    } else {
        Ok((raw, false))
    }
}

/// The value of `key=` in a module's `.modinfo` strings (NUL-separated), if any.
pub fn modinfo(ko: &[u8], key: &str) -> Option<String> {
    let pat = format!("{key}=");
    ko.split(|&b| b == 0)
        .find_map(|s| s.strip_prefix(pat.as_bytes()))
        .map(|v| String::from_utf8_lossy(v).into_owned())
}

/// `modules.dep` of `dir`: module name -> the names of the modules it needs (all of them, as
/// depmod lists them). Empty when the file is absent.
pub fn read_modules_dep(dir: &Path) -> BTreeMap<String, Vec<String>> {
    let name_of = |p: &str| -> Option<String> {
        let f = p.trim().rsplit('/').next()?;
        [".ko", ".ko.xz", ".ko.gz", ".ko.zst"]
            .iter()
            .find_map(|e| f.strip_suffix(e))
            .map(|s| s.replace('-', "_"))
    };
    let mut out = BTreeMap::new();
    for l in std::fs::read_to_string(dir.join("modules.dep"))
        .unwrap_or_default()
        .lines()
    {
        let Some((m, deps)) = l.split_once(':') else {
            continue;
        };
        let Some(m) = name_of(m) else { continue };
        out.insert(m, deps.split_whitespace().filter_map(name_of).collect());
    }
    out
}

/// Whether `dir/modules.builtin` lists module `name` (`-` and `_` alike) as built into the kernel.
pub fn is_builtin(dir: &Path, name: &str) -> bool {
    let builtin = std::fs::read_to_string(dir.join("modules.builtin")).unwrap_or_default();
    builtin.lines().any(|l| {
        l.trim()
            .rsplit('/')
            .next()
            .and_then(|f| f.strip_suffix(".ko"))
            .is_some_and(|f| f.replace('-', "_") == name)
    })
}

/// Whether `dir` holds module files: directly (a flat directory) or anywhere below.
pub fn has_module_files(dir: &Path) -> bool {
    let mut files = BTreeMap::new();
    walk(dir, &mut files, 0);
    !files.is_empty()
}

/// Whether the kernel has `tun` given its modules directory `dir`: a `tun.ko` (`.xz`, `.gz`,
/// `.zst`) in it, or tun listed as built in — in `dir/modules.builtin`, or `CONFIG_TUN=y` in one
/// of `configs` (the kernel's `.config`, where known).
pub fn has_tun(dir: &Path, configs: &[PathBuf]) -> bool {
    let mut files = BTreeMap::new();
    walk(dir, &mut files, 0);
    if files.contains_key("tun") {
        return true;
    }
    if is_builtin(dir, "tun") {
        return true;
    }
    configs.iter().any(|c| {
        std::fs::read_to_string(c).is_ok_and(|t| t.lines().any(|l| l.trim() == "CONFIG_TUN=y"))
    })
}

/// Finds [`WANTED`] (and their dependencies) under `dir` (`lib/modules/RELEASE`, or a flat
/// directory of modules).
pub fn select(dir: Option<&Path>, release: &str) -> Result<Selection, Error> {
    let mut sel = Selection::default();
    let Some(dir) = dir else {
        // No modules: tun must be built in (the guest reports it if it is not).
        sel.absent = WANTED.iter().map(|s| s.to_string()).collect();
        return Ok(sel);
    };
    let mut files = BTreeMap::new();
    walk(dir, &mut files, 0);
    let deps = read_modules_dep(dir);
    fn add(
        n: &str,
        files: &BTreeMap<String, PathBuf>,
        deps: &BTreeMap<String, Vec<String>>,
        release: &str,
        sel: &mut Selection,
        depth: usize,
    ) -> Result<bool, Error> {
        if sel.modules.iter().any(|m| m.name == n) {
            return Ok(true);
        }
        let Some(p) = files.get(n) else {
            return Ok(false);
        };
        if depth > 16 {
            return Err(Error::Failed(format!("module {n}: dependency loop")));
        }
        let (data, compressed) = load_file(p)?;
        let mut depends = Vec::new();
        if !compressed {
            if let Some(v) = modinfo(&data, "vermagic") {
                let r = v.split_whitespace().next().unwrap_or("");
                if r != release {
                    return Err(Error::Usage(format!(
                        "{}: built for {r}, but the kernel is {release}",
                        p.display()
                    )));
                }
            }
            depends = modinfo(&data, "depends")
                .unwrap_or_default()
                .split(',')
                .filter(|s| !s.is_empty())
                .map(|s| s.replace('-', "_"))
                .collect();
        }
        if let Some(d) = deps.get(n) {
            // depmod's list (every module needed, the direct ones included) is the authority.
            depends = d.clone();
        }
        for d in &depends {
            if !add(d, files, deps, release, sel, depth + 1)? {
                return Err(Error::Failed(format!(
                    "module {n} needs {d}, which is not in the modules directory"
                )));
            }
        }
        sel.modules.push(Module {
            name: n.to_string(),
            source: p.clone(),
            data,
            compressed,
            depends,
        });
        Ok(true)
    }
    for w in WANTED {
        if add(w, &files, &deps, release, &mut sel, 0)? {
            continue;
        }
        if is_builtin(dir, w) {
            sel.builtin.push(w.to_string());
        } else {
            sel.absent.push(w.to_string());
        }
    }
    Ok(sel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modinfo_strings() {
        let ko = b"\x7fELF junk\0license=GPL\0depends=ifb,veth\0vermagic=7.2.13+deb14-cloud-amd64 SMP preempt mod_unload\0name=x\0";
        assert_eq!(modinfo(ko, "depends").as_deref(), Some("ifb,veth"));
        assert_eq!(
            modinfo(ko, "vermagic").unwrap().split_whitespace().next(),
            Some("7.2.13+deb14-cloud-amd64")
        );
        assert_eq!(modinfo(ko, "alias"), None);
        assert_eq!(modinfo(b"depends=\0", "depends").as_deref(), Some(""));
    }

    fn fake_ko(dir: &Path, rel: &str, name: &str, depends: &str, release: &str) {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(
            &p,
            format!("\x7fELF\0name={name}\0depends={depends}\0vermagic={release} SMP mod_unload\0"),
        )
        .unwrap();
    }

    fn fresh(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("trc-vm-modules-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn modules_dep_orders_the_loads_and_wins_over_modinfo() {
        let r = "6.99.0-test";
        let d = fresh("dep");
        // tun's .modinfo names no dependency; modules.dep says it needs a (hypothetical) helper.
        fake_ko(&d, "kernel/drivers/net/tun.ko", "tun", "", r);
        fake_ko(&d, "kernel/net/core/tunhelper.ko", "tunhelper", "", r);
        fake_ko(&d, "kernel/drivers/net/veth.ko", "veth", "", r);
        std::fs::write(d.join("modules.dep"), "kernel/drivers/net/tun.ko: kernel/net/core/tunhelper.ko\nkernel/net/core/tunhelper.ko:\nkernel/drivers/net/veth.ko:\n").unwrap();
        let sel = select(Some(&d), r).unwrap();
        let names: Vec<&str> = sel.modules.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(
            names,
            ["tunhelper", "tun", "veth"],
            "dependencies load first"
        );
        assert_eq!(sel.absent, ["sch_netem", "ifb"]);
        assert!(has_tun(&d, &[]));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_flat_directory_and_the_tun_check() {
        let r = "6.99.0-test";
        let d = fresh("flat");
        fake_ko(&d, "veth.ko", "veth", "", r);
        assert!(has_module_files(&d));
        assert!(
            !has_tun(&d, &[]),
            "no tun.ko and nothing says it is built in"
        );
        std::fs::write(d.join("modules.builtin"), "kernel/drivers/net/tun.ko\n").unwrap();
        assert!(has_tun(&d, &[]));
        std::fs::remove_file(d.join("modules.builtin")).unwrap();
        let cfg = d.join("config");
        std::fs::write(&cfg, "CONFIG_TUN=y\n").unwrap();
        assert!(has_tun(&d, std::slice::from_ref(&cfg)));
        std::fs::write(&cfg, "CONFIG_TUN=m\n").unwrap();
        assert!(!has_tun(&d, &[cfg]));
        fake_ko(&d, "tun.ko", "tun", "", r);
        assert!(has_tun(&d, &[]));
        // A module built for another release is refused.
        fake_ko(&d, "sch_netem.ko", "sch_netem", "", "6.1.0-other");
        let e = select(Some(&d), r).unwrap_err().to_string();
        assert!(e.contains("built for 6.1.0-other"), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }
}
