//! vm/mutants/: one patch per historical decision point of the built-in profiles (docs/kernel-bugs.md).
//! The list matches the profiles, each header names what it reverts, and each patch applies to
//! Debian's linux-source-7.2 tree when `trc kernel build` has unpacked it (else skipped).

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use trc_model::Profile;

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../vm/mutants")
}

/// Mutant name -> its patch's text.
fn patches() -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir()).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "patch") {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            out.insert(name, std::fs::read_to_string(&p).unwrap());
        }
    }
    out
}

/// The built-in profiles that stand for a historical kernel decision: all but the default
/// (today's kernel) and the proposed fixes (`linux-7.2-*-fix*`, patches not in any kernel).
fn historical() -> Vec<Profile> {
    Profile::builtin()
        .into_iter()
        .filter(|p| p.name != "linux-6.18" && !p.name.contains("-fix"))
        .collect()
}

/// A mutant's model profile: the built-in one of its name, or its `.toml` beside it.
fn profile_of(name: &str) -> Profile {
    Profile::by_name(name).unwrap_or_else(|| {
        let f = dir().join(format!("{name}.toml"));
        let src = std::fs::read_to_string(&f).unwrap_or_else(|e| {
            panic!(
                "{name}: neither a built-in profile nor {}: {e}",
                f.display()
            )
        });
        trc_model::profile::parse_profile_file(&src, &f.display().to_string()).unwrap()
    })
}

/// The decision-point fields where `p` differs from linux-6.18 (name and description aside).
fn differs(p: &Profile) -> BTreeMap<String, Value> {
    let base = serde_json::to_value(Profile::linux_6_18()).unwrap();
    let v = serde_json::to_value(p).unwrap();
    v.as_object()
        .unwrap()
        .iter()
        .filter(|(k, x)| !["name", "description"].contains(&k.as_str()) && base[k.as_str()] != **x)
        .map(|(k, x)| (k.clone(), x.clone()))
        .collect()
}

#[test]
fn every_historical_decision_point_has_its_mutant() {
    let ps = patches();
    for h in historical() {
        assert!(ps.contains_key(&h.name), "no vm/mutants/{}.patch", h.name);
    }
    // Single-decision mutants, by (field, value).
    let mut single: BTreeMap<(String, String), String> = BTreeMap::new();
    for (name, text) in &ps {
        let d = differs(&profile_of(name));
        assert!(!d.is_empty(), "{name}: its profile is linux-6.18's");
        let head: Vec<&str> = text
            .lines()
            .take_while(|l| !l.starts_with("--- "))
            .collect();
        assert!(
            head.iter()
                .any(|l| l.starts_with("Reverts: ") && l.len() > 20),
            "{name}: no Reverts: line"
        );
        assert!(
            head.iter().any(|l| l.starts_with("Decision point: ")),
            "{name}"
        );
        assert!(
            head.iter().any(|l| l.starts_with("7.2 differs: ")),
            "{name}"
        );
        if d.len() == 1 {
            let (f, v) = d.into_iter().next().unwrap();
            assert!(!text.contains("\nCombines: "), "{name}");
            single.insert((f, v.to_string()), name.clone());
        } else {
            assert!(
                Profile::by_name(name).is_some(),
                "{name}: a combination is a built-in profile"
            );
            let line = head
                .iter()
                .find(|l| l.starts_with("Combines: "))
                .unwrap_or_else(|| panic!("{name}: no Combines: line"));
            for part in line.trim_start_matches("Combines: ").split(" + ") {
                let part = part.split(' ').next().unwrap();
                assert!(
                    ps.contains_key(part),
                    "{name} combines {part}, which has no patch"
                );
            }
        }
    }
    // Every decision point of a combined profile has its own mutant.
    for h in historical() {
        for (f, v) in differs(&h) {
            assert!(
                single.contains_key(&(f.clone(), v.to_string())),
                "{}: no single mutant decides {f} = {v}",
                h.name
            );
        }
    }
    // And nothing else: each patch is a historical profile or one decision point of one.
    let names: Vec<String> = historical().into_iter().map(|p| p.name).collect();
    for name in ps.keys() {
        let combined_in = names.iter().any(|h| name.starts_with(&format!("{h}-")));
        assert!(
            names.contains(name) || combined_in,
            "{name}: not a historical profile or one of its decision points"
        );
    }
}

/// Debian's unpacked 7.2 tree under trc's cache, and its build directories' locks.
fn tree() -> Option<(PathBuf, Vec<PathBuf>)> {
    let cache = std::env::var_os("TRC_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("XDG_CACHE_HOME").map(|x| PathBuf::from(x).join("trc")))
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/trc")))?;
    let mut srcs: Vec<PathBuf> = std::fs::read_dir(cache.join("kbuild"))
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("linux-source-7.2_"))
        })
        .collect();
    srcs.sort();
    let src = srcs.pop()?;
    let locks = std::fs::read_dir(&src)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path().join(".trc-lock")))
        .filter(|p| p.is_file())
        .collect();
    Some((src.join("tree"), locks))
}

#[test]
fn every_mutant_applies_to_debians_7_2_tree() {
    let Some((tree, locks)) = tree().filter(|(t, _)| t.join("net/ipv4/tcp_input.c").is_file())
    else {
        eprintln!("SKIPPED every_mutant_applies_to_debians_7_2_tree: no unpacked linux-source-7.2 under trc's cache (`trc kernel build` unpacks it)");
        return;
    };
    // `trc kernel build` applies its patches to the tree under these locks: take them so the dry
    // run sees the pristine tree.
    let _held: Vec<std::fs::File> = locks
        .iter()
        .filter_map(|l| {
            let f = std::fs::OpenOptions::new().write(true).open(l).ok()?;
            f.lock().ok()?;
            Some(f)
        })
        .collect();
    for (name, text) in patches() {
        let mut c = Command::new("patch")
            .args(["-p1", "--dry-run", "-s", "-f", "-d"])
            .arg(&tree)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("patch(1)");
        use std::io::Write;
        c.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{name}.patch does not apply to {}: {}{}",
            tree.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// docs/kernel-bugs.md: its mutant table lists exactly vm/mutants/, its results table has one
/// row per mutant at most (none that is not one), and the commands it shows are the ones
/// vm/mutants/kernel-bugs.sh runs.
#[test]
fn the_benchmark_page_agrees_with_vm_mutants() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let page = std::fs::read_to_string(root.join("docs/kernel-bugs.md")).unwrap();
    let script = std::fs::read_to_string(root.join("vm/mutants/kernel-bugs.sh")).unwrap();
    let ps = patches();
    let section = |title: &str| -> String {
        let start = page.find(title).unwrap_or_else(|| panic!("no {title}"));
        let rest = &page[start + title.len()..];
        rest[..rest.find("\n## ").unwrap_or(rest.len())].to_string()
    };
    let names = |s: &str| -> Vec<String> {
        s.lines()
            .filter_map(|l| l.strip_prefix("| `"))
            .map(|l| l.split('`').next().unwrap().to_string())
            .collect()
    };
    let listed: std::collections::BTreeSet<String> =
        names(&section("## The mutants")).into_iter().collect();
    let have: std::collections::BTreeSet<String> = ps.keys().cloned().collect();
    assert_eq!(
        listed, have,
        "docs/kernel-bugs.md's mutant table against vm/mutants/"
    );
    for n in names(&section("## Results")) {
        assert!(
            have.contains(&n),
            "a result row for {n}, which has no patch"
        );
    }
    // Every command the page shows is in the script's header, and its suite arguments are
    // what the script runs.
    let block = section("## Running the benchmark");
    let cmds: Vec<&str> = block
        .lines()
        .filter_map(|l| l.find("trc ").map(|i| &l[i..]))
        .filter(|c| c.contains(" --"))
        .collect();
    assert!(cmds.len() >= 5, "{block}");
    for c in cmds {
        assert!(
            script.contains(&format!("  {c}\n")),
            "the page's `{c}` is not in kernel-bugs.sh's header"
        );
    }
    for args in [
        "--suite coverage+random:20,7",
        "--suite coverage --losses 2 --rtos 2",
        "--suite bulk",
        "--suite random:400,7",
        "--suite regressions",
        "--scenarios 20 --seed 11",
        "--packetdrill-tree",
    ] {
        assert!(
            script.matches(args).count() >= 2,
            "kernel-bugs.sh does not run {args}"
        );
    }
}
