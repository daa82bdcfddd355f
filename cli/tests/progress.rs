//! `trc check` on a terminal shows a line per BFS level (states, states/s, memory) and a one-line
//! summary; piped, or with `--json`, its output is plain: nothing on stderr, no escape codes.

use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Command, Stdio};

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

/// Runs trc with stdout and stderr on a new pseudo-terminal; (exit code, everything written).
fn on_terminal(args: &[&str]) -> (i32, String) {
    let (mut master, mut slave) = (-1, -1);
    let ws = libc::winsize {
        ws_row: 40,
        ws_col: 160,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    let r = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            &ws,
        )
    };
    assert_eq!(r, 0, "openpty: {}", std::io::Error::last_os_error());
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    let mut child = Command::new(env!("CARGO_BIN_EXE_trc"))
        .args(args)
        .current_dir(ROOT)
        .env("TERM", "xterm")
        .stdin(Stdio::null())
        .stdout(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave))
        .spawn()
        .unwrap();
    // Read until the child has exited and the terminal is drained (EIO once no writer is left).
    let mut f = std::fs::File::from(master);
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match f.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => out.extend_from_slice(&buf[..n]),
            }
        }
        out
    });
    let code = child.wait().unwrap().code().unwrap_or(-1);
    let out = reader.join().unwrap();
    (code, String::from_utf8_lossy(&out).into_owned())
}

const ARGS: &[&str] = &[
    "check",
    "--profile",
    "linux-6.15",
    "--no-sack",
    "--property",
    "I1",
];

#[test]
fn terminal_shows_levels_and_a_summary() {
    let (code, out) = on_terminal(ARGS);
    assert_eq!(code, 1, "{out}");
    let levels: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("level ") && l.contains("states/s") && l.contains("MiB"))
        .collect();
    // The seed bug's space is 14 levels deep: a line for (nearly) every level.
    assert!(
        levels.len() >= 10,
        "{} level lines in:\n{out}",
        levels.len()
    );
    let done: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("done: ") && l.contains("states/s") && l.contains("peak"))
        .collect();
    assert_eq!(done.len(), 1, "{out}");
    assert!(done[0].contains("30763 states"), "{}", done[0]);
    // The report itself follows, unchanged.
    assert!(
        out.contains("I1: no undo after a real loss repaired by retransmission")
            && out.contains("VIOLATED"),
        "{out}"
    );
}

#[test]
fn piped_and_json_output_is_plain() {
    let out = Command::new(env!("CARGO_BIN_EXE_trc"))
        .args(ARGS)
        .current_dir(ROOT)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        out.stderr.is_empty(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = String::from_utf8(out.stdout).unwrap();
    assert!(
        !s.contains('\x1b') && !s.contains("level ") && !s.contains("done: "),
        "{s}"
    );
    assert!(s.starts_with("trc check: profile linux-6.15 ("), "{s}");
    // --json on a terminal: only the JSON.
    let mut a = ARGS.to_vec();
    a.push("--json");
    let (code, out) = on_terminal(&a);
    assert_eq!(code, 1);
    assert!(
        !out.contains("level ") && !out.contains("done: ") && !out.contains('\x1b'),
        "{out}"
    );
    let v: serde_json::Value =
        serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(v["result"], "violated");
}
