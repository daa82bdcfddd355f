//! `--modules DIR` in the guest: the modules [`trc_vm::modules::select`] picks from a
//! `modules_install` tree (with `modules.dep`) or a flat directory go into the initramfs at the
//! manifest's paths, and the guest's init loads them in the manifest's order, dependencies first.
//! No VM: the archive is built, gzip-decoded and read back; the loader is a recording fake.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use trc_vm::initramfs::{add_modules, module_entries, Tree};
use trc_vm::proto::{BaseManifest, BaseModule};

const R: &str = "6.99.1-trc-test";

fn fresh(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn fake_ko(dir: &Path, rel: &str, name: &str, release: &str) -> Vec<u8> {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    let b =
        format!("\x7fELF fake {name}\0name={name}\0depends=\0vermagic={release} SMP mod_unload\0")
            .into_bytes();
    std::fs::write(&p, &b).unwrap();
    b
}

/// The archive of `dir`'s modules as the base builder writes it: (entries by name, manifest).
fn build(dir: &Path) -> (Vec<trc_vm::cpio::Entry>, BaseManifest) {
    let sel = trc_vm::modules::select(Some(dir), R).unwrap();
    let mods = module_entries(&sel, R);
    let manifest = BaseManifest {
        release: R.into(),
        modules: mods.clone(),
        builtin: sel.builtin.clone(),
        absent: sel.absent.clone(),
        python: None,
    };
    let mut tree = Tree::new();
    add_modules(&mut tree, &sel, &mods).unwrap();
    tree.file(
        "etc/trc-vm/base.json",
        0o644,
        0,
        trc_vm::initramfs::Data::Bytes(serde_json::to_vec(&manifest).unwrap()),
    )
    .unwrap();
    let gz = tree.to_gzip().unwrap();
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_end(&mut raw)
        .unwrap();
    let entries = trc_vm::cpio::read(&raw).unwrap();
    let mj = entries
        .iter()
        .find(|e| e.name == "etc/trc-vm/base.json")
        .expect("the manifest is in the archive");
    (entries.clone(), serde_json::from_slice(&mj.data).unwrap())
}

fn loads(m: &BaseManifest) -> Vec<String> {
    let mut order = Vec::new();
    let got = trc_vm::guest::load_modules(m, &mut |p: &str, compressed: bool| {
        order.push(format!(
            "{p}{}",
            if compressed { " (compressed)" } else { "" }
        ));
        if p.contains("veth") {
            Err(trc_vm::SysError {
                what: format!("finit_module {p}"),
                source: std::io::Error::from_raw_os_error(17),
            })
        } else {
            Ok(())
        }
    });
    // A failed load is reported and does not stop the others.
    assert!(got.iter().any(|l| l.name == "veth"
        && l.error
            .as_deref()
            .is_some_and(|e| e.contains("finit_module"))));
    order
}

#[test]
fn a_modules_install_tree_goes_in_and_loads_dependencies_first() {
    let d = fresh("mods-tree");
    let tun = fake_ko(&d, "kernel/drivers/net/tun.ko", "tun", R);
    fake_ko(&d, "kernel/net/core/tunhelper.ko", "tunhelper", R);
    fake_ko(&d, "kernel/drivers/net/veth.ko", "veth", R);
    fake_ko(&d, "kernel/net/sched/sch_netem.ko", "sch_netem", R);
    fake_ko(&d, "kernel/net/unrelated.ko", "unrelated", R);
    std::fs::write(
        d.join("modules.dep"),
        "kernel/drivers/net/tun.ko: kernel/net/core/tunhelper.ko\nkernel/net/core/tunhelper.ko:\nkernel/drivers/net/veth.ko:\nkernel/net/sched/sch_netem.ko:\nkernel/net/unrelated.ko:\n",
    )
    .unwrap();
    let (entries, manifest) = build(&d);
    let names: Vec<&str> = manifest.modules.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(
        names,
        ["tunhelper", "tun", "veth", "sch_netem"],
        "wanted modules and their dependencies only, dependencies first"
    );
    assert_eq!(manifest.absent, ["ifb"]);
    for m in &manifest.modules {
        let e = entries
            .iter()
            .find(|e| format!("/{}", e.name) == m.path)
            .unwrap_or_else(|| panic!("{} not in the archive", m.path));
        assert!(e.data.starts_with(b"\x7fELF fake"));
    }
    let t = entries
        .iter()
        .find(|e| e.name == format!("usr/lib/modules/{R}/tun.ko"))
        .unwrap();
    assert_eq!(t.data, tun, "the module's bytes unchanged");
    let order = loads(&manifest);
    assert_eq!(
        order,
        manifest
            .modules
            .iter()
            .map(|m: &BaseModule| m.path.clone())
            .collect::<Vec<_>>()
    );
    assert!(
        order[0].ends_with("/tunhelper.ko") && order[1].ends_with("/tun.ko"),
        "{order:?}"
    );
}

#[test]
fn a_flat_directory_goes_in_too() {
    let d = fresh("mods-flat");
    fake_ko(&d, "tun.ko", "tun", R);
    fake_ko(&d, "veth.ko", "veth", R);
    let (_, manifest) = build(&d);
    let names: Vec<&str> = manifest.modules.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["tun", "veth"]);
    assert_eq!(loads(&manifest).len(), 2);
}
