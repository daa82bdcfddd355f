//! Conformance with real packetdrill (built from `../shared/vendor/` by `trc-testkit`), on this
//! kernel, one script at a time:
//!
//! 1. every `.pkt` under `counterexamples/`, run from where it is in the repository, unchanged;
//! 2. the public recovery suite (`conformance-suite.txt`: 43 gtests of the vendored tree), from a
//!    copy of its `gtests/net` whose `defaults.sh` also puts cubic on the route (a namespace here
//!    cannot make cubic its default, and the gtests expect it).
//!
//! Each script runs on packetdrill (its ipv4 variant, as run_all.py runs it, in a fresh network
//! namespace) and on `trc kernel run`; both must give the same verdict at the same line
//! (packetdrill stops at the first failure; trc reports the line packetdrill would stop at). A
//! disagreement is rerun twice (timer slack at HZ=250 can move a packet out of its window on
//! either side). `KNOWN` lists the explained exceptions. Skipped, with the reason, without root,
//! tun, the shared material or a C toolchain.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Scripts whose verdicts are known to differ, with the reason (none at the moment).
const KNOWN: &[(&str, &str)] = &[];

/// What a run said: `None` passed, `Some(line)` failed there (0: no line given).
type Verdict = Option<u32>;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The line of an untimed first statement (the init command), for packetdrill's message about
/// it, which names no line.
fn init_line(script: &Path) -> u32 {
    let src = std::fs::read_to_string(script).unwrap_or_default();
    trc_pkt::parse(&src, "x")
        .ok()
        .and_then(|s| {
            s.statements
                .first()
                .filter(|st| st.time.is_none())
                .map(|st| st.line)
        })
        .unwrap_or(0)
}

/// packetdrill on `script` in a fresh network namespace (run_all.py's ipv4 arguments).
fn packetdrill(pd: &Path, script: &Path) -> Verdict {
    let dir = script.parent().unwrap();
    let name = script.file_name().unwrap().to_string_lossy().to_string();
    let args = "--send_omit_free --ip_version=ipv4 --local_ip=192.168.0.1 --gateway_ip=192.168.0.1 --netmask_ip=255.255.0.0 --remote_ip=192.0.2.1 -D TFO_COOKIE=3021b9d889017eeb -D CODE=host_unreachable -D CMSG_LEVEL_IP=SOL_IP -D CMSG_TYPE_RECVERR=IP_RECVERR";
    let cmd = format!(
        "ip link set lo up && exec timeout -k 5 180 {} {args} {name}",
        pd.display()
    );
    let out = Command::new("unshare")
        .args(["-n", "sh", "-c", &cmd])
        .current_dir(dir)
        .output()
        .expect("unshare runs");
    if out.status.success() {
        return None;
    }
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("error executing init command") {
        return Some(init_line(script));
    }
    let prefix = format!("{name}:");
    let line = err.lines().find_map(|l| {
        l.strip_prefix(&prefix)
            .and_then(|r| r.split(':').next())
            .and_then(|n| n.parse().ok())
    });
    Some(line.unwrap_or(0))
}

fn trc(script: &Path) -> Verdict {
    let r = trc_kernel::run_file(script, &trc_kernel::RunOptions::default())
        .unwrap_or_else(|e| panic!("{}: {e}", script.display()));
    match r.script.verdict {
        trc_kernel::Verdict::Passed { .. } => None,
        _ => Some(
            r.script
                .failed_line()
                .or(r.script.stopped.as_ref().map(|s| s.0))
                .unwrap_or(0),
        ),
    }
}

fn show(v: Verdict) -> String {
    v.map(|l| format!("fails at line {l}"))
        .unwrap_or_else(|| "passes".into())
}

/// CUBIC's `hystart_detect` is a machine-wide module parameter two gtests write: put it back.
struct RestoreHystart(Option<String>);

impl Drop for RestoreHystart {
    fn drop(&mut self) {
        if let Some(v) = &self.0 {
            let _ = std::fs::write("/sys/module/tcp_cubic/parameters/hystart_detect", v);
        }
    }
}

/// Compares the two on `scripts`; returns the disagreements (name, packetdrill, trc).
fn compare(pd: &Path, scripts: &[PathBuf], label: &str) -> Vec<String> {
    let mut bad = Vec::new();
    let hystart = std::fs::read_to_string("/sys/module/tcp_cubic/parameters/hystart_detect")
        .ok()
        .map(|s| s.trim().to_string());
    let t0 = Instant::now();
    for s in scripts {
        let name = s.display().to_string();
        let mut last = (None, None);
        let mut agree = false;
        for attempt in 0..3 {
            let _restore = RestoreHystart(hystart.clone());
            let p = packetdrill(pd, s);
            drop(_restore);
            let _restore = RestoreHystart(hystart.clone());
            let t = trc(s);
            last = (p, t);
            if p == t {
                agree = true;
                break;
            }
            eprintln!(
                "  {name}: attempt {}: packetdrill {}, trc {}",
                attempt + 1,
                show(p),
                show(t)
            );
        }
        eprintln!(
            "{label}: {name}: {} ({})",
            if agree { "same" } else { "DIFFERENT" },
            show(last.0)
        );
        let known = KNOWN.iter().any(|(k, _)| name.ends_with(k));
        if !agree && !known {
            bad.push(format!(
                "{name}: packetdrill {}, trc {}",
                show(last.0),
                show(last.1)
            ));
        }
    }
    eprintln!(
        "{label}: {} scripts in {:.0?}, {} disagreements",
        scripts.len(),
        t0.elapsed(),
        bad.len()
    );
    bad
}

fn ready() -> Option<PathBuf> {
    if let Some(r) = trc_kernel::skip_reason() {
        trc_testkit::skip("conformance", &r);
        return None;
    }
    if Command::new("unshare").arg("--version").output().is_err() {
        trc_testkit::skip("conformance", "util-linux's unshare is not installed");
        return None;
    }
    match trc_testkit::packetdrill_binary() {
        Ok(p) => Some(p),
        Err(why) => {
            trc_testkit::skip("conformance", &why);
            None
        }
    }
}

/// Serialises the two tests (kernel runs must not overlap).
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn counterexamples_mean_the_same_on_packetdrill() {
    let Some(pd) = ready() else { return };
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut scripts = Vec::new();
    for d in [
        "counterexamples/kernel",
        "counterexamples/findings",
        "counterexamples/regressions",
    ] {
        let dir = workspace().join(d);
        scripts.extend(
            std::fs::read_dir(&dir)
                .unwrap()
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "pkt")),
        );
    }
    scripts.sort();
    assert!(scripts.len() >= 20, "{scripts:?}");
    let bad = compare(&pd, &scripts, "counterexamples");
    assert!(
        bad.is_empty(),
        "trc kernel run and packetdrill disagree:\n{}",
        bad.join("\n")
    );
}

/// A copy of the vendored `gtests/net` whose two `defaults.sh` also select cubic on the route.
fn gtests_copy() -> Result<PathBuf, String> {
    let src = trc_testkit::gtests()?;
    let dest = src.parent().unwrap().join("net-conformance");
    if !dest.is_dir() {
        let tmp = src
            .parent()
            .unwrap()
            .join(format!("net-conformance.tmp-{}", std::process::id()));
        let st = Command::new("cp")
            .arg("-r")
            .arg(&src)
            .arg(&tmp)
            .status()
            .map_err(|e| e.to_string())?;
        if !st.success() {
            return Err("cp -r failed".into());
        }
        for d in ["common/defaults.sh", "tcp/common/defaults.sh"] {
            let p = tmp.join(d);
            let mut s = std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
            s.push_str("\n# trc conformance: cubic for connections that do not select it (a namespace cannot make it the default)\nip route change 192.0.2.1 via 192.168.0.1 dev tun0 congctl cubic\n");
            std::fs::write(&p, s).map_err(|e| e.to_string())?;
        }
        std::fs::rename(&tmp, &dest).map_err(|e| e.to_string())?;
    }
    Ok(dest)
}

#[test]
fn public_recovery_gtests_mean_the_same_on_packetdrill() {
    let Some(pd) = ready() else { return };
    let gt = match gtests_copy() {
        Ok(g) => g,
        Err(why) => return trc_testkit::skip("public gtests", &why),
    };
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let list = include_str!("conformance-suite.txt");
    let scripts: Vec<PathBuf> = list
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| gt.join(l.trim()))
        .collect();
    assert_eq!(scripts.len(), 43);
    for s in &scripts {
        assert!(s.is_file(), "{} not in the vendored tree", s.display());
    }
    let bad = compare(&pd, &scripts, "gtests");
    assert!(
        bad.is_empty(),
        "trc kernel run and packetdrill disagree:\n{}",
        bad.join("\n")
    );
    let _ = Duration::ZERO;
}
