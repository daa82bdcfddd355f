//! Input hardening of the `trc` binary: every numeric input bounded with the flag or the
//! file's line, files read as bytes (invalid UTF-8 reported with its line), profile names that
//! cannot escape `--out`, `--out` checked before the exploration, stale temporary files
//! removed.

use std::path::PathBuf;
use trc_testkit::trc;

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("trc-hardening-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn file(d: &std::path::Path, name: &str, content: &[u8]) -> String {
    let p = d.join(name);
    std::fs::write(&p, content).unwrap();
    p.to_string_lossy().into_owned()
}

#[test]
fn cwnd_scale_and_other_numbers_are_bounded_at_the_boundary() {
    // cwnd * 717 would overflow 32 bits and give false I17/I3 violations: a usage error.
    let (code, _, err) = trc!(&["check", "--initcwnd", "6000000"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--initcwnd: impossible bounds: initcwnd must be between 1 and 65535"),
        "{err}"
    );
    let d = dir("cfg");
    for (field, value) in [
        ("mss", "0"),
        ("gso_max_size", "0"),
        ("hystart_low_window", "0"),
        ("sysctl_reordering", "0"),
        ("isn", "4294967295"),
        ("rtt_extra_ms", "[4294967295]"),
        ("write_gap_ms", "[100000]"),
        ("horizon_ms", "4000000000"),
    ] {
        let c = file(
            &d,
            "c.toml",
            format!("# based on the defaults\nsegments = 4\n{field} = {value}\n").as_bytes(),
        );
        let (code, _, err) = trc!(&["check", "--config", &c]);
        assert_eq!(code, 2, "{field}: {err}");
        assert!(
            err.contains("c.toml:3: impossible bounds: ") && err.contains(field),
            "{field}: {err}"
        );
    }
}

#[test]
fn invalid_utf8_in_profile_config_baseline_and_script_files_is_reported_with_its_line() {
    let d = dir("utf8");
    let p = file(&d, "p.toml", b"base = \"linux-6.18\"\n# caf\xe9\n");
    let (code, _, err) = trc!(&["check", "--profile", &p]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("p.toml:2: not valid UTF-8"), "{err}");
    let c = file(&d, "c.toml", b"segments = 4\n\n\xff = 1\n");
    let (code, _, err) = trc!(&["check", "--config", &c]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("c.toml:3: not valid UTF-8"), "{err}");
    let b = file(&d, "b.toml", b"[[accepted]]\n\xc3\n");
    let (code, _, err) = trc!(&["check", "--segments", "2", "--baseline", &b]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("b.toml:2: not valid UTF-8"), "{err}");
    // Scripts too, for the model and for the kernel (before any run, so also where runs skip).
    let s = file(
        &d,
        "s.pkt",
        b"0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n+0 bind(3, ..., ...) = 0\n// caf\xe9\n",
    );
    for cmd in [
        &["replay", &s][..],
        &["kernel", "run", &s],
        &["kernel", "run", "--kernel", "/nonexistent/vmlinuz", &s],
    ] {
        let (code, _, err) = trc!(cmd);
        assert_eq!(code, 2, "{cmd:?}: {err}");
        assert!(err.contains("s.pkt:3: not valid UTF-8"), "{cmd:?}: {err}");
    }
}

#[test]
fn unknown_base_points_at_the_base_line() {
    let d = dir("base");
    let p = file(
        &d,
        "p.toml",
        b"# based on linux-6.18\n\nbase = \"linux-9.99\"\n",
    );
    let (code, _, err) = trc!(&["check", "--profile", &p]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("p.toml:3: unknown base profile `linux-9.99`"),
        "{err}"
    );
}

/// The test mutants cannot be switched on from the binary, not even from the one
/// `cargo test --workspace` builds (where the `mutants` feature is unified into the model):
/// `mutants` is an unknown key of a profile file.
#[test]
fn a_profile_file_cannot_switch_on_a_test_mutant() {
    let d = dir("mutants");
    let p = file(
        &d,
        "m.toml",
        b"base = \"linux-6.18\"\nmutants = [\"end-cwnd-no-snap\"]\n",
    );
    let (code, _, err) = trc!(&["check", "--profile", &p, "--property", "I13"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("m.toml:2: unknown field `mutants`"), "{err}");
}

#[test]
fn profile_names_cannot_escape_the_out_directory() {
    let d = dir("name");
    for name in ["../../escaped", ".hidden", "a/b", "", "x y"] {
        let p = file(
            &d,
            "p.toml",
            format!("base = \"linux-6.15\"\n\nname = \"{name}\"\n").as_bytes(),
        );
        let out = d.join("out");
        let (code, _, err) = trc!(&[
            "check",
            "--profile",
            &p,
            "--no-sack",
            "--property",
            "I1",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_eq!(code, 2, "{name:?}: {err}");
        assert!(err.contains("p.toml:3: profile name"), "{name:?}: {err}");
    }
    assert!(!d.join("escaped").exists() && !std::env::temp_dir().join("escaped").exists());
}

#[test]
fn out_must_be_a_directory_before_the_exploration() {
    let d = dir("outfile");
    let f = file(&d, "not-a-dir", b"");
    let t0 = std::time::Instant::now();
    let (code, out, err) = trc!(&[
        "check",
        "--profile",
        "linux-6.15",
        "--no-sack",
        "--property",
        "I1",
        "--out",
        &f,
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not a directory"), "{err}");
    assert!(out.is_empty(), "nothing explored: {out}");
    assert!(t0.elapsed() < std::time::Duration::from_secs(10));
}

#[test]
fn stale_temporary_files_of_a_killed_run_are_removed() {
    let d = dir("stale");
    // A PID above the kernel's maximum (2^22) is never running.
    let stale = d.join(".I1-linux-6.15.pkt.tmp-99999999");
    let live = d.join(format!(".I1-linux-6.15.json.tmp-{}", std::process::id()));
    std::fs::write(&stale, "half").unwrap();
    std::fs::write(&live, "in use").unwrap();
    let (code, _, err) = trc!(&[
        "check",
        "--profile",
        "linux-6.15",
        "--no-sack",
        "--property",
        "I1",
        "--out",
        d.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(d.join("I1-linux-6.15.pkt").exists(), "{err}");
    assert!(!stale.exists(), "the dead run's temporary file is gone");
    assert!(live.exists(), "a running process's temporary file stays");
}
