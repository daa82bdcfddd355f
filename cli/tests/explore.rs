//! `trc explore`: stateright's Explorer answers on 127.0.0.1; a busy port is an input error.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn spawn(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_trc"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// `GET path` over HTTP/1.0: (status line, body).
fn get(port: u16, path: &str) -> std::io::Result<(String, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf)?;
    let text = String::from_utf8_lossy(&buf).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    Ok((
        head.lines().next().unwrap_or("").to_string(),
        body.to_string(),
    ))
}

struct Kill(Child);
impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn explorer_serves_states_on_localhost() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let p = port.to_string();
    let _child = Kill(spawn(&[
        "explore",
        "--profile",
        "linux-6.15",
        "--no-sack",
        "--segments",
        "3",
        "--port",
        &p,
    ]));
    let t0 = Instant::now();
    let (status, body) = loop {
        match get(port, "/.states") {
            Ok(r) => break r,
            Err(_) if t0.elapsed() < Duration::from_secs(60) => {
                std::thread::sleep(Duration::from_millis(100))
            }
            Err(e) => panic!("explorer did not answer: {e}"),
        }
    };
    assert!(status.contains("200"), "{status}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let init = &v.as_array().unwrap()[0];
    assert!(
        init["state"].as_str().unwrap().contains("ca_state"),
        "{init}"
    );
    // One step further: the first event's outcome is readable.
    let (status, body) = get(port, "/.states/0").unwrap();
    assert!(status.contains("200"), "{status}");
    let steps: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert!(!steps.as_array().unwrap().is_empty());
    assert!(
        steps[0]["action"].as_str().unwrap().contains("deliver"),
        "{steps}"
    );
    let outcome = steps[0]["outcome"].as_str().unwrap();
    assert!(
        outcome.starts_with("deliver seg 1 (original, sent at 0 ms) → ACK\n⇒ t=50ms"),
        "readable step: {outcome}"
    );
    let (status, page) = get(port, "/").unwrap();
    assert!(status.contains("200") && page.contains("<html"), "{status}");
    let (_, st) = get(port, "/.status").unwrap();
    assert!(
        st.contains("I1: no undo after a real loss"),
        "properties registered: {st}"
    );
}

#[test]
fn busy_port_exits_2() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port().to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_trc"))
        .args(["explore", "--port", &port])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("cannot listen"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn port_0_prints_the_port_it_serves_on() {
    use std::io::BufRead;
    let mut child = Command::new(env!("CARGO_BIN_EXE_trc"))
        .args([
            "explore",
            "--profile",
            "linux-6.15",
            "--no-sack",
            "--segments",
            "3",
            "--port",
            "0",
        ])
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let _child = Kill(child);
    let mut line = String::new();
    std::io::BufReader::new(stdout)
        .read_line(&mut line)
        .unwrap();
    let port: u16 = line
        .split("http://127.0.0.1:")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    assert_ne!(port, 0, "{line}");
    let t0 = Instant::now();
    loop {
        match get(port, "/.states") {
            Ok((status, _)) => {
                assert!(status.contains("200"), "{status}");
                break;
            }
            Err(_) if t0.elapsed() < Duration::from_secs(60) => {
                std::thread::sleep(Duration::from_millis(100))
            }
            Err(e) => panic!("no explorer on the printed port {port}: {e}"),
        }
    }
}
