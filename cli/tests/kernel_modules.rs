//! `--modules DIR` of `trc kernel run --kernel` / `trc kernel check --kernel`: a flat directory of
//! `.ko` files or a `make modules_install INSTALL_MOD_PATH=` tree is taken; one without tun (and
//! nothing saying tun is built in) is a clear error, exit 2, before anything boots. And one real
//! boot of a Debian 7.2 kernel with its modules copied into a flat directory, skipped (saying
//! why) without qemu, busybox-static or that kernel.

use std::path::{Path, PathBuf};

mod common;
use common::scratch;
use trc_testkit::trc;

fn fake_ko(p: &Path, name: &str, release: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(
        p,
        format!("\x7fELF\0name={name}\0depends=\0vermagic={release} SMP\0"),
    )
    .unwrap();
}

/// A file with a bzImage header naming release 9.9.9-test.
fn fake_bzimage(d: &Path) -> PathBuf {
    let fake = d.join("fake-bzImage");
    let mut b = vec![0u8; 0x1000];
    b[0x202..0x206].copy_from_slice(b"HdrS");
    b[0x206..0x208].copy_from_slice(&0x020fu16.to_le_bytes());
    b[0x20e..0x210].copy_from_slice(&0x0500u16.to_le_bytes());
    b[0x700..0x70b].copy_from_slice(b"9.9.9-test\0");
    std::fs::write(&fake, b).unwrap();
    fake
}

#[test]
fn modules_dir_errors_before_any_vm() {
    let d = scratch("kernel-modules-inputs");
    let k = fake_bzimage(&d);
    let k = k.to_str().unwrap();
    let ok = "counterexamples/kernel/fr-sack.pkt";
    let no_qemu = [("TRC_QEMU", "/nonexistent/qemu-system-x86_64")];
    // A flat directory without tun: exit 2, naming what is missing, for run and check.
    let flat = d.join("flat");
    fake_ko(&flat.join("veth.ko"), "veth", "9.9.9-test");
    for args in [
        vec![
            "kernel",
            "run",
            "--kernel",
            k,
            "--modules",
            flat.to_str().unwrap(),
            ok,
        ],
        vec![
            "kernel",
            "check",
            "--kernel",
            k,
            "--modules",
            flat.to_str().unwrap(),
            "--suite",
            "corpus",
        ],
    ] {
        let (c, _, e) = trc!(&args, &no_qemu);
        assert_eq!(c, 2, "{args:?}: {e}");
        assert!(e.contains("no tun.ko") && e.contains("9.9.9-test"), "{e}");
    }
    // The same directory saying tun is built in (modules.builtin): accepted, so the next
    // missing thing is qemu (4).
    std::fs::write(flat.join("modules.builtin"), "kernel/drivers/net/tun.ko\n").unwrap();
    let (c, _, e) = trc!(
        &[
            "kernel",
            "run",
            "--kernel",
            k,
            "--modules",
            flat.to_str().unwrap(),
            ok,
        ],
        &no_qemu,
    );
    assert_eq!(c, 4, "{e}");
    assert!(e.contains("qemu not found"), "{e}");
    // A flat directory with tun.ko.xz (the name is enough for the check).
    let flat2 = d.join("flat2");
    std::fs::create_dir_all(&flat2).unwrap();
    std::fs::write(flat2.join("tun.ko.xz"), b"not really xz").unwrap();
    let (c, _, e) = trc!(
        &[
            "kernel",
            "run",
            "--kernel",
            k,
            "--modules",
            flat2.to_str().unwrap(),
            ok,
        ],
        &no_qemu,
    );
    assert_eq!(c, 4, "{e}");
    // A modules_install tree, by its INSTALL_MOD_PATH: accepted.
    let inst = d.join("inst");
    fake_ko(
        &inst.join("lib/modules/9.9.9-test/kernel/drivers/net/tun.ko"),
        "tun",
        "9.9.9-test",
    );
    let (c, _, e) = trc!(
        &[
            "kernel",
            "run",
            "--kernel",
            k,
            "--modules",
            inst.to_str().unwrap(),
            ok,
        ],
        &no_qemu,
    );
    assert_eq!(c, 4, "{e}");
    // A tree for another release: 2.
    let other = d.join("other/lib/modules/6.1.0-other");
    fake_ko(
        &other.join("kernel/drivers/net/tun.ko"),
        "tun",
        "6.1.0-other",
    );
    std::fs::write(other.join("modules.dep"), "kernel/drivers/net/tun.ko:\n").unwrap();
    let (c, _, e) = trc!(
        &[
            "kernel",
            "run",
            "--kernel",
            k,
            "--modules",
            other.to_str().unwrap(),
            ok,
        ],
        &no_qemu,
    );
    assert_eq!(c, 2, "{e}");
    assert!(e.contains("not for 9.9.9-test"), "{e}");
}

/// A fetched Debian 7.2 kernel directory, or why there is none (as kernel_vm.rs looks for it).
fn debian_kernel() -> Result<PathBuf, String> {
    trc_vm::host::find_qemu(None).map_err(|e| e.to_string())?;
    trc_vm::initramfs::find_busybox().map_err(|e| e.to_string())?;
    if let Some(k) = std::env::var_os("TRC_VM_KERNEL").filter(|k| !k.is_empty()) {
        return Ok(PathBuf::from(k));
    }
    let cache = trc_vm::default_cache_dir();
    for k in ["7.2-sid", "sid"] {
        let d = cache.join("kernels").join(k);
        if d.join("vmlinuz").exists() && d.join("modules").exists() {
            return Ok(d);
        }
    }
    Err(format!("no fetched Debian kernel (set TRC_VM_KERNEL, or run `trc kernel fetch debian:sid`; looked in {})", cache.join("kernels").display()))
}

#[test]
fn a_flat_modules_dir_boots_and_runs() {
    let k = match debian_kernel() {
        Ok(k) => k,
        Err(e) => {
            eprintln!("skipped: {e}");
            return;
        }
    };
    let img = trc_vm::KernelImage::from_dir(&k).unwrap();
    let Some(mods) = img.modules.clone() else {
        eprintln!("skipped: {} has no modules directory", k.display());
        return;
    };
    // Copy the wanted modules and what they depend on into one flat directory.
    let d = scratch("kernel-modules-boot");
    let flat = d.join("flat");
    std::fs::create_dir_all(&flat).unwrap();
    let sel = trc_vm::modules::select(Some(&mods), &img.release).unwrap();
    for m in &sel.modules {
        std::fs::copy(&m.source, flat.join(m.source.file_name().unwrap())).unwrap();
    }
    let vmlinuz = img.vmlinuz.to_str().unwrap();
    let json = d.join("run.json");
    let cache = d.join("cache");
    let args = [
        "kernel",
        "run",
        "--kernel",
        vmlinuz,
        "--modules",
        flat.to_str().unwrap(),
        "--accel",
        "tcg-icount",
        "--cache",
        cache.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "counterexamples/kernel/fr-sack.pkt",
    ];
    let (mut c, mut out, mut err) = trc!(&args, &[]);
    if c == 1 {
        eprintln!("first run failed, running again:\n{out}\n{err}");
        (c, out, err) = trc!(&args, &[]);
    }
    assert_eq!(c, 0, "stdout:\n{out}\nstderr:\n{err}");
    let run: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let loads = run
        .pointer("/modules")
        .and_then(|m| m.as_array())
        .cloned()
        .unwrap_or_default();
    assert!(
        loads
            .iter()
            .any(|m| m["name"] == "tun" && m["error"].is_null()),
        "tun loaded from the flat directory: {run}"
    );
}
