//! `trc kernel run` and a script's shell lines, the code they are: `--no-shell` refuses them
//! before anything runs, an empty script is incomplete (exit 3), root without CAP_SYS_ADMIN is
//! a skip (exit 4), a shell line cannot enter the host's network namespace, and a SIGKILL of
//! trc during a long shell line leaves nothing it started running. Kernel runs go through
//! `trc kernel run` (its machine-wide lock keeps them serial); without root or tun the tests
//! that need a run check the skip (exit 4) instead, or say why they were skipped.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn trc() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_trc"));
    c.current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    c
}

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("trc-kshell-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn is_root() -> bool {
    // SAFETY: no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// PIDs of the processes whose command line is exactly `argv`.
fn pids_running(argv: &[&str]) -> Vec<u32> {
    let want: Vec<u8> = argv.iter().flat_map(|a| a.bytes().chain([0])).collect();
    std::fs::read_dir("/proc")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
                .filter(|pid| {
                    std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == want)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Needs no root: the refusal comes before the environment is looked at.
#[test]
fn no_shell_refuses_a_script_with_shell_lines_before_running_it() {
    let d = dir("noshell");
    let marker = d.join("ran");
    let p = d.join("x.pkt");
    std::fs::write(
        &p,
        format!(
            "// a comment\n0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n+0 `touch {}`\n",
            marker.display()
        ),
    )
    .unwrap();
    let out = trc()
        .args(["kernel", "run", "--no-shell", p.to_str().unwrap()])
        .output()
        .unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(2), "{t}");
    assert!(t.contains("x.pkt:3:") && t.contains("--no-shell"), "{t}");
    assert!(!marker.exists(), "the shell line ran");
    // The same with --kernel: refused before any VM is looked for.
    let out = trc()
        .args([
            "kernel",
            "run",
            "--kernel",
            "/nonexistent/vmlinuz",
            "--no-shell",
            p.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("x.pkt:3:"), "{}", text(&out));
    // A script without shell lines is not refused (it runs, or is skipped without root/tun).
    let q = d.join("y.pkt");
    std::fs::write(&q, "0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n").unwrap();
    let out = trc()
        .args(["kernel", "run", "--no-shell", q.to_str().unwrap()])
        .output()
        .unwrap();
    let want = if trc_kernel::skip_reason().is_some() {
        4
    } else {
        0
    };
    assert_eq!(out.status.code(), Some(want), "{}", text(&out));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn empty_script_is_incomplete_not_passed() {
    let d = dir("empty");
    let p = d.join("empty.pkt");
    std::fs::write(&p, "").unwrap();
    let out = trc()
        .args(["kernel", "run", p.to_str().unwrap()])
        .output()
        .unwrap();
    let t = text(&out);
    match trc_kernel::skip_reason() {
        Some(_) => assert_eq!(out.status.code(), Some(4), "{t}"),
        None => {
            assert_eq!(out.status.code(), Some(3), "{t}");
            assert!(t.contains("INCOMPLETE") && !t.contains("PASSED"), "{t}");
        }
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn root_without_cap_sys_admin_is_skipped() {
    if !is_root() || !Path::new("/dev/net/tun").exists() {
        eprintln!(
            "skipped: needs root and /dev/net/tun (the CAP_SYS_ADMIN check comes after them)"
        );
        return;
    }
    // setpriv drops CAP_SYS_ADMIN from the bounding set, so root's trc runs without it.
    let drop = |prog: &str| {
        let mut c = Command::new("setpriv");
        c.args(["--bounding-set", "-sys_admin", "--", prog]);
        c
    };
    if !drop("true").status().is_ok_and(|s| s.success()) {
        eprintln!("skipped: setpriv cannot drop CAP_SYS_ADMIN here");
        return;
    }
    let d = dir("nocap");
    let p = d.join("x.pkt");
    std::fs::write(&p, "0 `true`\n").unwrap();
    let out = drop(env!("CARGO_BIN_EXE_trc"))
        .args(["kernel", "run", p.to_str().unwrap()])
        .output()
        .unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(4), "{t}");
    assert!(t.contains("skipped") && t.contains("CAP_SYS_ADMIN"), "{t}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn shell_lines_cannot_see_the_host_and_die_with_trc() {
    if let Some(r) = trc_kernel::skip_reason() {
        eprintln!("{r}");
        return;
    }
    for tool in ["nsenter", "unshare", "sleep"] {
        if !Command::new(tool)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
        {
            eprintln!("skipped: no {tool}");
            return;
        }
    }
    let d = dir("confine");
    shell_lines_cannot_see_the_host(&d);
    shell_lines_die_with_trc(&d);
    let _ = std::fs::remove_dir_all(&d);
}

/// Shell lines that try to reach the host's network namespace fail, and the run's own one is
/// what they see (scripts written in `d`).
fn shell_lines_cannot_see_the_host(d: &Path) {
    // Into the init process's network namespace, and into trc's own (the host's: only its
    // run thread moved), as the issue's `nsenter -t $PPID -n`: each line would print the host's
    // interfaces if it got there. Both fail, and no host interface shows up; the line after
    // sees the run's own lo and tun0. Then what stops them: the line cannot make a namespace
    // either (no CAP_SYS_ADMIN: `unshare` fails), and its bounding set (CapBnd) lacks
    // CAP_SYS_ADMIN, CAP_SYS_PTRACE and CAP_SYS_MODULE but keeps CAP_NET_ADMIN.
    let p = d.join("nsenter.pkt");
    std::fs::write(&p, "0 `nsenter -t 1 -n ip -o link show`\n+0 `nsenter -t $PPID -n ip -o link show`\n+0 `ip -o link show`\n+0 `unshare --net true`\n+0 `grep CapBnd /proc/self/status`\n").unwrap();
    let out = trc()
        .args(["kernel", "run", p.to_str().unwrap()])
        .output()
        .unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    let failed: Vec<u32> = (1..=5)
        .filter(|n| t.contains(&format!("FAIL {}:{n}:", p.display())))
        .collect();
    assert_eq!(failed, vec![1, 2, 4], "{t}");
    assert!(
        t.contains("nsenter:") && (t.contains("not permitted") || t.contains("denied")),
        "nsenter must fail for lack of privilege:\n{t}"
    );
    assert!(
        t.contains("unshare:") && t.contains("not permitted"),
        "unshare must fail for lack of privilege:\n{t}"
    );
    let host: Vec<String> = std::fs::read_dir("/sys/class/net")
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "lo")
        .collect();
    assert!(
        !host.is_empty(),
        "this test needs a host interface besides lo"
    );
    for name in &host {
        assert!(
            !t.contains(&format!(": {name}:")) && !t.contains(&format!(": {name}@")),
            "host interface {name} visible:\n{t}"
        );
    }
    assert!(
        t.contains(": lo:") && t.contains(": tun0:"),
        "the run's own interfaces are visible:\n{t}"
    );
    let bnd = t
        .split("CapBnd:")
        .nth(1)
        .and_then(|r| u64::from_str_radix(r.split_whitespace().next()?, 16).ok())
        .unwrap_or_else(|| panic!("no CapBnd line:\n{t}"));
    for (cap, name) in [
        (21, "CAP_SYS_ADMIN"),
        (19, "CAP_SYS_PTRACE"),
        (16, "CAP_SYS_MODULE"),
    ] {
        assert_eq!(
            bnd & (1 << cap),
            0,
            "{name} left in the shell line's bounding set {bnd:x}"
        );
    }
    assert_ne!(
        bnd & (1 << 12),
        0,
        "CAP_NET_ADMIN dropped from the shell line's bounding set {bnd:x}"
    );
}

/// A SIGKILL of trc during a long shell line: the line's processes go too. The `sleep` is not the
/// shell's last command, so the shell forks it: a parent-death signal on the shell alone would
/// leave it running (the script written in `d`).
fn shell_lines_die_with_trc(d: &Path) {
    let marker = format!("100.{}", std::process::id() % 1_000_000);
    let p = d.join("long.pkt");
    std::fs::write(&p, format!("0 `sleep {marker}; true`\n")).unwrap();
    let mut child = trc()
        .args(["kernel", "run", p.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    // Another kernel run may hold the machine-wide lock for a while.
    while pids_running(&["sleep", &marker]).is_empty() {
        if t0.elapsed() > Duration::from_secs(900) || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            panic!("the shell line never started");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let sleeping = pids_running(&["sleep", &marker]);
    child.kill().unwrap(); // SIGKILL, to trc's own pid only
    child.wait().unwrap();
    let t0 = Instant::now();
    let mut left = pids_running(&["sleep", &marker]);
    while !left.is_empty() && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
        left = pids_running(&["sleep", &marker]);
    }
    for pid in &left {
        // SAFETY: a process this test's script started (its unique command line).
        unsafe { libc::kill(*pid as libc::pid_t, libc::SIGKILL) };
    }
    assert!(
        left.is_empty(),
        "the shell line's sleep outlived trc: {left:?} (was {sleeping:?})"
    );
}

/// A run that is skipped (here: not root) starts nothing of the script: not even the
/// interpreter its `--code_command` names, which trc once started with `-c pass` to see that
/// it works, on the host, before any namespace existed.
#[test]
fn a_skipped_run_starts_nothing_of_the_script() {
    use std::os::unix::fs::PermissionsExt as _;
    let d = dir("probe");
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o777)).unwrap();
    let marker = d.join("started");
    let prog = d.join("interp");
    std::fs::write(&prog, format!("#!/bin/sh\ntouch {}\n", marker.display())).unwrap();
    std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o755)).unwrap();
    let p = d.join("x.pkt");
    std::fs::write(&p, format!("--code_command={}\n0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n+0 %{{ assert 1 == 1 }}%\n", prog.display())).unwrap();
    let mut c = if is_root() {
        if !Command::new("setpriv")
            .args([
                "--reuid",
                "65534",
                "--regid",
                "65534",
                "--clear-groups",
                "true",
            ])
            .status()
            .is_ok_and(|s| s.success())
        {
            eprintln!("skipped: setpriv cannot drop root here");
            return;
        }
        let mut c = Command::new("setpriv");
        c.args([
            "--reuid",
            "65534",
            "--regid",
            "65534",
            "--clear-groups",
            env!("CARGO_BIN_EXE_trc"),
        ]);
        c
    } else {
        Command::new(env!("CARGO_BIN_EXE_trc"))
    };
    let out = c
        .args(["kernel", "run", p.to_str().unwrap()])
        .current_dir(&d)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", text(&out));
    assert!(
        !marker.exists(),
        "the script's interpreter was started by a skipped run"
    );
    let _ = std::fs::remove_dir_all(&d);
}
