//! `trc kernel check`: input errors and skips (no kernel needed), a small suite on the running
//! kernel (root + tun: findings F1 and F3 must show I1 violated from the kernel's behaviour, the
//! other monitored properties hold), a few random walks, and the same small suite in a VM on
//! Debian's 7.2 when qemu and the kernel are there (`$TRC_VM_KERNEL`, or `trc kernel fetch
//! debian:sid` in the cache). Each skips, saying why, when what it needs is missing.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn trc(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_trc")).args(args).current_dir(root()).output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

/// The host runs and the VM run one after the other: a VM's CPU load makes host packets late.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A corpus of three scripts in the repository's layout: F1, F3 and a plain fast retransmit.
fn small_corpus(name: &str) -> PathBuf {
    let d = scratch(name);
    for f in ["common/defaults.sh", "findings/i1-eifel-undo-after-real-loss.pkt", "regressions/diff-nested-dsack-counted-twice.pkt", "kernel/fr-sack.pkt"] {
        let to = d.join(f);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(root().join("counterexamples").join(f), &to).unwrap();
    }
    d
}

fn kernel_skip() -> Option<String> {
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root".into());
    }
    if !Path::new("/dev/net/tun").exists() {
        return Some("no /dev/net/tun".into());
    }
    None
}

fn property<'a>(v: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    v["properties"].as_array().unwrap().iter().find(|p| p["id"] == id).unwrap_or_else(|| panic!("no {id} in {v}"))
}

/// What the small corpus must give on a kernel with F1 and F3 (6.18, 7.2 and 6.12 all have them).
fn assert_small_suite(code: i32, out: &str, err: &str) {
    assert_eq!(code, 1, "I1 violated: exit 1\n{out}\n{err}");
    let v: serde_json::Value = serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(v["cases"].as_array().unwrap().len(), 3);
    assert_eq!(v["not_run"], 0, "{out}");
    let i1 = property(&v, "I1");
    assert_eq!(i1["verdict"], "violated", "{out}");
    let violated: Vec<&str> = i1["violated"].as_array().unwrap().iter().map(|x| x.as_str().unwrap()).collect();
    assert!(violated.contains(&"findings/i1-eifel-undo-after-real-loss.pkt"), "F1: {violated:?}\n{out}");
    assert!(violated.contains(&"regressions/diff-nested-dsack-counted-twice.pkt"), "F3: {violated:?}\n{out}");
    assert!(!violated.contains(&"kernel/fr-sack.pkt"), "{out}");
    for id in ["I2", "I3", "I11", "I13", "I14"] {
        assert_eq!(property(&v, id)["verdict"], "holds", "{id}\n{out}");
    }
    // F1's verdict comes from the script's own timestamps (hand-written), F3's from its header.
    let case = |n: &str| v["cases"].as_array().unwrap().iter().find(|c| c["name"] == n).unwrap().clone();
    assert_eq!(case("findings/i1-eifel-undo-after-real-loss.pkt")["ghost"], "inferred");
    assert_eq!(case("regressions/diff-nested-dsack-counted-twice.pkt")["ghost"], "declared");
}

#[test]
fn input_errors_and_skips() {
    let (c, _, e) = trc(&["kernel", "check", "--suite", "bogus"]);
    assert_eq!(c, 2, "{e}");
    assert!(e.contains("expected regressions, corpus or random"), "{e}");
    let (c, _, e) = trc(&["kernel", "check", "--suite", "random:0"]);
    assert_eq!(c, 2, "{e}");
    let (c, _, e) = trc(&["kernel", "check", "--properties", "I1,I5"]);
    assert_eq!(c, 2, "{e}");
    assert!(e.contains("no kernel monitor"), "{e}");
    let (c, _, e) = trc(&["kernel", "check", "--properties", "I99"]);
    assert_eq!(c, 2, "{e}");
    let (c, _, e) = trc(&["kernel", "check", "--profile", "no-such-profile"]);
    assert_eq!(c, 2, "{e}");
    // A kernel image that does not exist: skipped (4), like `kernel run --kernel`.
    let (c, _, e) = trc(&["kernel", "check", "--kernel", "/nonexistent/vmlinuz"]);
    assert_eq!(c, 4, "{e}");
    assert!(e.contains("no such kernel image"), "{e}");
}

#[test]
fn small_suite_on_the_running_kernel() {
    if let Some(why) = kernel_skip() {
        eprintln!("SKIPPED small_suite_on_the_running_kernel: {why}");
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let corpus = small_corpus("kcheck-host");
    let t = std::time::Instant::now();
    let (c, out, err) = trc(&["kernel", "check", "--suite", "corpus", "--corpus", corpus.to_str().unwrap(), "--json"]);
    eprintln!("small suite on the running kernel: {:.1} s", t.elapsed().as_secs_f64());
    assert_small_suite(c, &out, &err);
    // Random walks: every one runs and is judged by every monitor.
    let (c, out, err) = trc(&["kernel", "check", "--suite", "random:3,7", "--json"]);
    assert!(matches!(c, 0 | 1 | 3), "{c}\n{out}\n{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    let cases = v["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 3);
    for cs in cases {
        assert_eq!(cs["kernel_ran"], true, "{cs}");
        assert_eq!(cs["ghost"], "declared", "{cs}");
        assert_eq!(cs["properties"].as_object().unwrap().len(), 6, "{cs}");
    }
}

fn vm_kernel() -> Result<String, String> {
    if let Ok(k) = std::env::var("TRC_VM_KERNEL") {
        return Ok(k);
    }
    let which = Command::new("sh").args(["-c", "command -v qemu-system-x86_64"]).output().map_err(|e| e.to_string())?;
    if !which.status.success() {
        return Err("no qemu-system-x86_64".into());
    }
    let cache = std::env::var_os("TRC_CACHE").map(PathBuf::from).or_else(|| std::env::var_os("XDG_CACHE_HOME").map(|x| PathBuf::from(x).join("trc"))).or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/trc"))).ok_or("no cache directory")?;
    if !cache.join("kernels/sid").exists() {
        return Err(format!("no Debian sid kernel in {} (trc kernel fetch debian:sid)", cache.display()));
    }
    Ok("debian:sid".into())
}

#[test]
fn small_suite_in_a_vm() {
    let k = match vm_kernel() {
        Ok(k) => k,
        Err(why) => {
            eprintln!("SKIPPED small_suite_in_a_vm: {why}");
            return;
        }
    };
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let corpus = small_corpus("kcheck-vm");
    let t = std::time::Instant::now();
    let (c, out, err) = trc(&["kernel", "check", "--kernel", &k, "--suite", "corpus", "--corpus", corpus.to_str().unwrap(), "--json"]);
    eprintln!("small suite in a VM: {:.1} s", t.elapsed().as_secs_f64());
    if c == 4 {
        eprintln!("SKIPPED small_suite_in_a_vm: {err}");
        return;
    }
    assert_small_suite(c, &out, &err);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let kd = v["kernel"].as_str().unwrap();
    assert!(kd.contains("(VM, tcg-icount)") || kd.contains("(VM, kvm)"), "the accelerator is named: {kd}");
}
