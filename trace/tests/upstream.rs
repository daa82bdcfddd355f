//! The upstream forms (`trace/src/upstream.rs`) against upstream itself: the sysctl values the
//! forms leave to `defaults.sh` are the ones google/packetdrill's `gtests/net/common/defaults.sh`
//! (the vendored tree) and the kernel's selftests' `defaults.sh` (a Debian source tree that `trc
//! kernel build` unpacked) set, and every corpus script either converts to a script that names
//! no IPv4 address or is refused with "unsupported: ...".

use std::collections::BTreeMap;
use std::path::Path;
use trc_trace::upstream::{convert, Form, Origin, UPSTREAM_SYSCTLS};

/// The `net.ipv4.*` assignments of a `defaults.sh` (`sysctl -q a=b [c=d]` lines; quoted values
/// are not the ones the table holds and are skipped).
fn sysctls_of(defaults_sh: &str) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for line in defaults_sh.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        if w.len() < 3 || w[0] != "sysctl" || w[1] != "-q" {
            continue;
        }
        for a in &w[2..] {
            if let Some((k, v)) = a.split_once('=') {
                if let Some(k) = k.strip_prefix("net.ipv4.") {
                    m.insert(k.to_string(), v.to_string());
                }
            }
        }
    }
    m
}

fn check_table(file: &Path) {
    let text = std::fs::read_to_string(file).unwrap();
    let set = sysctls_of(&text);
    assert!(set.len() > 10, "{}: {set:?}", file.display());
    for (name, value, origin) in UPSTREAM_SYSCTLS {
        match origin {
            Origin::DefaultsSh => assert_eq!(
                set.get(*name).map(String::as_str),
                Some(*value),
                "{}: {name}",
                file.display()
            ),
            Origin::Namespace => assert!(
                !set.contains_key(*name),
                "{}: sets {name}, which the table takes from the namespace",
                file.display()
            ),
        }
    }
}

#[test]
fn defaults_table_is_what_gtests_defaults_sh_sets() {
    let gtests = match trc_testkit::gtests() {
        Ok(g) => g,
        Err(e) => return trc_testkit::skip("defaults_table_is_what_gtests_defaults_sh_sets", &e),
    };
    check_table(&gtests.join("common/defaults.sh"));
    check_table(&gtests.join("tcp/common/defaults.sh"));
}

#[test]
fn defaults_table_is_what_the_kernel_selftests_defaults_sh_sets() {
    let dir = match trc_testkit::kernel_selftests_packetdrill() {
        Ok(d) => d,
        Err(e) => {
            return trc_testkit::skip(
                "defaults_table_is_what_the_kernel_selftests_defaults_sh_sets",
                &e,
            )
        }
    };
    check_table(&dir.join("defaults.sh"));
}

/// Every script of counterexamples/{findings,kernel,regressions} in both upstream forms: a script
/// trc's parser reads, with no IPv4 address left and the defaults line of the form, or a refusal
/// that says what is unsupported. The F9 and F11 reproducers convert.
#[test]
fn corpus_scripts_convert_or_are_refused() {
    let root = trc_testkit::workspace().join("counterexamples");
    let mut converted = 0;
    for sub in ["findings", "kernel", "regressions"] {
        let mut files: Vec<_> = std::fs::read_dir(root.join(sub))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "pkt"))
            .collect();
        files.sort();
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            for form in [Form::Gtest, Form::Selftest] {
                match convert(&text, form) {
                    Ok(s) => {
                        trc_pkt::parse(&s, "x.pkt")
                            .unwrap_or_else(|e| panic!("{}: {form:?}: {e}\n{s}", f.display()));
                        assert!(!s.contains("192.0.2.1"), "{}: {form:?}\n{s}", f.display());
                        assert!(!s.contains("192.168.0.1"), "{}: {form:?}\n{s}", f.display());
                        let defaults = match form {
                            Form::Gtest => "`../common/defaults.sh",
                            _ => "`./defaults.sh",
                        };
                        assert!(s.contains(defaults), "{}: {form:?}\n{s}", f.display());
                        converted += 1;
                    }
                    Err(u) => {
                        let name = f.file_name().unwrap().to_string_lossy().into_owned();
                        assert!(
                            !name.starts_with("f11") && !name.starts_with("f9"),
                            "{name}: {u}"
                        );
                        assert!(u.to_string().starts_with("unsupported: "), "{u}");
                    }
                }
            }
        }
    }
    assert!(converted > 20, "{converted}");
}
