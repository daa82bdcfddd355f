//! `%{ }%` blocks evaluated by Python, as packetdrill evaluates them (`code.c`): the values a
//! backend captured at each block's time are bound under packetdrill's names (the `tcpi_*`
//! fields and the constants of [`crate::symbols::PYTHON_CONSTANTS`]), and every block of a
//! script runs in one `python3` process, in script order, in one shared namespace (a variable
//! set by one block is seen by the next, e.g. `TCP_INFINITE_SSTHRESH = 0x7fffffff`).
//!
//! Where packetdrill stops at the first failing assert, trc reports each block: pass, fail (the
//! assertion's message and the values of the names it used), error (any other exception), or
//! out of scope — a block that reads a `tcpi_*` field the backend did not provide (the model
//! does not compute `tcpi_rtt`, say) is never executed and never counts as a pass.
//!
//! A block is a check if it contains an `assert`; one without (an assignment, a `print`) is code
//! that only fails if it raises.
//!
//! The driver program is fed the blocks as JSON on stdin and answers with JSON on stdout; it runs
//! as `python3 -I` (isolated: no user site-packages, no `PYTHON*` environment), with a time
//! limit. A script's Python is code like its shell lines: it runs with the caller's privileges.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One block with what it may read. Made between two events of a live run: the names are the
/// backend's static ones, nothing is allocated per name.
#[derive(Clone, Debug)]
pub struct Block {
    /// Script line of the block (packetdrill's `_line`).
    pub line: u32,
    pub code: String,
    /// Names bound before the block runs, besides the constants [`evaluate`] binds for every
    /// block: the backend's `tcpi_*` values (a later pair wins).
    pub bindings: Vec<(&'static str, u64)>,
    /// `tcpi_*` names the backend could not provide: a block reading one is out of scope.
    pub missing: Vec<&'static str>,
}

/// A block as the driver reads it.
#[derive(Serialize)]
struct SentBlock<'a> {
    line: u32,
    code: &'a str,
    bindings: BTreeMap<&'a str, u64>,
    missing: &'a [&'static str],
}

/// What became of one block.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub enum Outcome {
    /// Ran to the end. `checks`: it contains an `assert`.
    Pass {
        checks: bool,
        output: String,
        values: BTreeMap<String, String>,
    },
    /// An `assert` failed: its message (or the failing source line) and the values it read.
    Fail {
        message: String,
        output: String,
        values: BTreeMap<String, String>,
    },
    /// Another exception (a syntax error, a name packetdrill does not bind, ...).
    Error { message: String, output: String },
    /// It reads `tcpi_*` fields the backend does not provide; not executed.
    OutOfScope { names: Vec<String> },
}

/// How long one script's Python may run.
pub const TIME_LIMIT: Duration = Duration::from_secs(30);

/// The program python3 runs: reads `{"file", "blocks": [...]}`, prints `[outcome, ...]`. Public
/// so that the VM's initramfs builder (`trc-vm`) can find which standard-library files it imports.
pub const DRIVER: &str = r#"
import ast, contextlib, io, json, sys
req = json.load(sys.stdin)
ns = {"__name__": "__packetdrill__"}
common = req["common"]
out = []
def used_names(tree):
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
def ints(names):
    v = {}
    for n in sorted(names):
        x = ns.get(n)
        if isinstance(x, int) and not isinstance(x, bool):
            v[n] = str(x)
    return v
for b in req["blocks"]:
    # packetdrill writes each block followed by two newlines (code.c), so a block whose last
    # line ends in a backslash continues onto an empty line.
    src = b["code"] + "\n\n"
    try:
        tree = ast.parse(src, filename="%s:%d" % (req["file"], b["line"]))
        code = compile(tree, "%s:%d" % (req["file"], b["line"]), "exec")
    except SyntaxError as e:
        out.append({"outcome": "error", "message": "SyntaxError: %s" % e.msg, "output": ""})
        continue
    names = used_names(tree)
    missing = sorted(names & set(b["missing"]) - set(ns))
    if missing:
        out.append({"outcome": "out-of-scope", "names": missing})
        continue
    ns.update(common)
    ns.update(b["bindings"])
    checks = any(isinstance(n, ast.Assert) for n in ast.walk(tree))
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            exec(code, ns)
        out.append({"outcome": "pass", "checks": checks, "output": buf.getvalue(), "values": ints(names)})
    except AssertionError as e:
        tb = e.__traceback__
        while tb.tb_next is not None:
            tb = tb.tb_next
        lines = src.splitlines()
        where = lines[tb.tb_lineno - 1].strip() if 0 < tb.tb_lineno <= len(lines) else ""
        msg = str(e)
        message = "%s (AssertionError: %s)" % (where, msg) if msg else where
        out.append({"outcome": "fail", "message": message, "output": buf.getvalue(), "values": ints(names)})
    except Exception as e:
        out.append({"outcome": "error", "message": "%s: %s" % (type(e).__name__, e), "output": buf.getvalue()})
json.dump(out, sys.stdout)
"#;

/// The bindings every block gets besides the backend's values: packetdrill's constants.
pub fn constant_bindings() -> BTreeMap<String, u64> {
    crate::symbols::PYTHON_CONSTANTS
        .iter()
        .map(|(n, v)| (n.to_string(), *v))
        .collect()
}

/// Why Python could not evaluate a script's blocks (the lines are then "not evaluated").
#[derive(Debug, thiserror::Error)]
pub enum PythonError {
    /// The blocks could not be encoded for the driver.
    #[error("{0}")]
    Request(serde_json::Error),
    /// `python` could not be started.
    #[error("cannot run {python} for the script's %{{ }}% blocks: {source} (packetdrill's Python needs python3 on PATH)")]
    Spawn {
        python: String,
        source: std::io::Error,
    },
    /// A pipe to the child was not set up (`no stdin`, `no stdout`, `no stderr`).
    #[error("no {0}")]
    NoPipe(&'static str),
    /// Waiting for the child failed.
    #[error("{0}")]
    Wait(std::io::Error),
    /// The child ran past the time limit (seconds) and was killed.
    #[error("the script's Python ran longer than {0} s and was killed")]
    TimeLimit(u64),
    /// The child exited with an error; `stderr` is what it wrote, trimmed.
    #[error("{python} failed ({status}): {stderr}")]
    Failed {
        python: String,
        status: std::process::ExitStatus,
        stderr: String,
    },
    /// Its answer is not the driver's JSON.
    #[error("unreadable answer from {python}: {source}")]
    Answer {
        python: String,
        source: serde_json::Error,
    },
    /// It answered for another number of blocks than it was given.
    #[error("{python} answered for {answered} of {blocks} blocks")]
    Count {
        python: String,
        answered: usize,
        blocks: usize,
    },
}

/// Evaluates `blocks` (in order, one namespace) with `python` (normally `python3`). `Err` when
/// Python cannot be run at all or misbehaves (not found, killed, time limit, garbage output).
pub fn evaluate(file: &str, blocks: &[Block], python: &str) -> Result<Vec<Outcome>, PythonError> {
    if blocks.is_empty() {
        return Ok(Vec::new());
    }
    #[derive(Serialize)]
    struct Req<'a> {
        file: &'a str,
        /// The constants, bound before every block (sent once: thousands of blocks).
        common: BTreeMap<String, u64>,
        blocks: Vec<SentBlock<'a>>,
    }
    let common = constant_bindings();
    // Each block sends only what differs from the constants: its pairs as a map first (a later
    // pair wins), then those equal to a constant dropped.
    let sent: Vec<SentBlock> = blocks
        .iter()
        .map(|b| {
            let mut bindings: BTreeMap<&str, u64> = b.bindings.iter().copied().collect();
            bindings.retain(|k, v| common.get(*k) != Some(v));
            SentBlock {
                line: b.line,
                code: &b.code,
                bindings,
                missing: &b.missing,
            }
        })
        .collect();
    let input = serde_json::to_vec(&Req {
        file,
        common,
        blocks: sent,
    })
    .map_err(PythonError::Request)?;
    let mut child = Command::new(python)
        .args(["-I", "-c", DRIVER])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| PythonError::Spawn {
            python: python.to_string(),
            source,
        })?;
    // A writer thread and reader threads, so neither a huge input nor a huge answer (thousands
    // of blocks) can deadlock against a full pipe.
    let mut stdin = child.stdin.take().ok_or(PythonError::NoPipe("stdin"))?;
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let read = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            v
        })
    };
    let stdout = read(Box::new(
        child.stdout.take().ok_or(PythonError::NoPipe("stdout"))?,
    ));
    let stderr = read(Box::new(
        child.stderr.take().ok_or(PythonError::NoPipe("stderr"))?,
    ));
    let start = Instant::now();
    loop {
        match child.try_wait().map_err(PythonError::Wait)? {
            Some(_) => break,
            None if start.elapsed() > TIME_LIMIT => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(PythonError::TimeLimit(TIME_LIMIT.as_secs()));
            }
            None => std::thread::sleep(Duration::from_millis(2)),
        }
    }
    let _ = writer.join();
    let status = child.wait().map_err(PythonError::Wait)?;
    let (out, err) = (
        stdout.join().unwrap_or_default(),
        stderr.join().unwrap_or_default(),
    );
    if !status.success() {
        return Err(PythonError::Failed {
            python: python.to_string(),
            status,
            stderr: String::from_utf8_lossy(&err).trim().to_string(),
        });
    }
    let res: Vec<Outcome> = serde_json::from_slice(&out).map_err(|source| PythonError::Answer {
        python: python.to_string(),
        source,
    })?;
    if res.len() != blocks.len() {
        return Err(PythonError::Count {
            python: python.to_string(),
            answered: res.len(),
            blocks: blocks.len(),
        });
    }
    Ok(res)
}

/// Whether Python code mentions `name` as a whole word (for callers that look for, say, the
/// blocks that read `tcpi_ca_state` without running them).
pub fn mentions(code: &str, name: &str) -> bool {
    code.match_indices(name).any(|(i, _)| {
        let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
        let before = code[..i].chars().next_back().is_none_or(|c| !word(c));
        let after = code[i + name.len()..]
            .chars()
            .next()
            .is_none_or(|c| !word(c));
        before && after
    })
}

/// Why the script's `%{ }%` blocks could not be evaluated here (no python3 on PATH), if they could not.
pub fn problem(script: &crate::Script) -> Option<String> {
    if !script
        .statements
        .iter()
        .any(|s| matches!(s.kind, crate::StatementKind::Python(_)))
    {
        return None;
    }
    let py = script
        .options
        .iter()
        .find(|o| o.name == "code_command")
        .and_then(|o| o.value.clone())
        .unwrap_or_else(|| "python3".into());
    // Looked up, not started: the interpreter is the script's choice (`--code_command`), and
    // nothing of a script runs before (or outside) the run itself.
    match find_program(&py) {
        Some(_) => None,
        None => Some(format!("the script has %{{ }}% blocks and `{py}` cannot be run: packetdrill evaluates them with python3, so install it")),
    }
}

/// The executable `name` names: a path as given, or the first match on `PATH`.
fn find_program(name: &str) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    let runnable = |p: &std::path::Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if name.contains('/') {
        let p = std::path::PathBuf::from(name);
        return runnable(&p).then_some(p);
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| runnable(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(line: u32, code: &str, b: &[(&'static str, u64)], missing: &[&'static str]) -> Block {
        Block {
            line,
            code: code.into(),
            bindings: b.to_vec(),
            missing: missing.to_vec(),
        }
    }

    fn have_python() -> bool {
        Command::new("python3")
            .arg("-c")
            .arg("pass")
            .status()
            .is_ok_and(|s| s.success())
    }

    /// A block's pairs are bound in order (a later one wins) after the constants, also where
    /// the later pair has a constant's value and is therefore not sent.
    #[test]
    fn a_later_pair_wins_even_with_a_constants_value() {
        if !have_python() {
            eprintln!("skipped: no python3");
            return;
        }
        let pairs = [
            ("TCP_CA_Recovery", 9),
            ("TCP_CA_Recovery", 3),
            ("tcpi_lost", 2),
        ];
        let b = [block(
            1,
            "assert (TCP_CA_Recovery, tcpi_lost) == (3, 2)",
            &pairs,
            &[],
        )];
        let r = evaluate("t.pkt", &b, "python3").unwrap();
        assert!(matches!(&r[0], Outcome::Pass { .. }), "{:?}", r[0]);
    }

    #[test]
    fn packetdrill_forms() {
        if !have_python() {
            eprintln!("skipped: no python3");
            return;
        }
        let b = [
            block(10, "assert (tcpi_ca_state, tcpi_snd_cwnd) == (TCP_CA_Recovery, 7), tcpi_snd_cwnd", &[("tcpi_ca_state", 3), ("tcpi_snd_cwnd", 7)], &[]),
            block(11, "TCP_INFINITE_SSTHRESH = 0x7fffffff", &[], &[]),
            block(12, "assert tcpi_snd_ssthresh == TCP_INFINITE_SSTHRESH and tcpi_snd_cwnd in range(5, 9), tcpi_snd_cwnd", &[("tcpi_snd_ssthresh", 0x7fff_ffff), ("tcpi_snd_cwnd", 10)], &[]),
            block(13, "print(tcpi_snd_cwnd)", &[("tcpi_snd_cwnd", 10)], &[]),
            block(14, "assert tcpi_rtt < 60000", &[], &["tcpi_rtt"]),
            block(15, "assert tcpi_x == 1", &[], &[]),
            block(16, "\nassert tcpi_snd_cwnd == 10\nassert tcpi_lost == 0, 'lost=%d' % tcpi_lost\n", &[("tcpi_snd_cwnd", 10), ("tcpi_lost", 2)], &[]),
            // A last line ending in a backslash (gtests tcp_info/tcp-info-rwnd-limited.pkt).
            block(17, "assert tcpi_snd_cwnd == 10, tcpi_snd_cwnd;\\\n assert tcpi_lost == 2;\\\n", &[("tcpi_snd_cwnd", 10), ("tcpi_lost", 2)], &[]),
        ];
        let r = evaluate("t.pkt", &b, "python3").unwrap();
        assert!(
            matches!(&r[0], Outcome::Pass { checks: true, .. }),
            "{:?}",
            r[0]
        );
        assert!(
            matches!(&r[1], Outcome::Pass { checks: false, .. }),
            "{:?}",
            r[1]
        );
        match &r[2] {
            Outcome::Fail {
                message, values, ..
            } => {
                assert!(message.contains("AssertionError: 10"), "{message}");
                assert_eq!(values.get("tcpi_snd_cwnd").map(String::as_str), Some("10"));
                assert_eq!(
                    values.get("TCP_INFINITE_SSTHRESH").map(String::as_str),
                    Some("2147483647"),
                    "set by the block before"
                );
            }
            o => panic!("{o:?}"),
        }
        assert!(
            matches!(&r[3], Outcome::Pass { output, .. } if output == "10\n"),
            "{:?}",
            r[3]
        );
        assert_eq!(
            r[4],
            Outcome::OutOfScope {
                names: vec!["tcpi_rtt".into()]
            }
        );
        assert!(
            matches!(&r[5], Outcome::Error { message, .. } if message.starts_with("NameError")),
            "{:?}",
            r[5]
        );
        assert!(
            matches!(&r[6], Outcome::Fail { message, .. } if message.contains("lost=2")),
            "{:?}",
            r[6]
        );
        assert!(
            matches!(&r[7], Outcome::Pass { checks: true, .. }),
            "{:?}",
            r[7]
        );
    }

    #[test]
    fn no_python_is_a_clear_error() {
        let e = evaluate(
            "t.pkt",
            &[block(1, "pass", &[], &[])],
            "/nonexistent/python3",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("needs python3"), "{e}");
    }

    #[test]
    fn mentions_whole_words() {
        assert!(mentions("assert tcpi_ca_state == 1", "tcpi_ca_state"));
        assert!(!mentions("assert tcpi_ca_state_x == 1", "tcpi_ca_state"));
    }
}
