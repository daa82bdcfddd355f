//! One bench child under callgrind: the number of instructions it executes (valgrind's `Ir`,
//! user space, every thread), which is the same for the same binary and input whatever else the
//! machine does. The kernel's work for the process (page faults, clearing fresh pages) is not
//! counted: compare the wall-clock columns for that.

use crate::BenchError;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Whether `valgrind` can be run (`valgrind --version`); the reason if not.
pub fn available() -> Result<(), BenchError> {
    match Command::new("valgrind").arg("--version").output() {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(BenchError::ValgrindVersion(
            String::from_utf8_lossy(&o.stderr).trim().to_string(),
        )),
        Err(e) => Err(BenchError::NoValgrind(e)),
    }
}

/// Runs `exe args..` under `valgrind --tool=callgrind`, its profile written to `out`; returns
/// the child's standard output and its instruction count.
pub fn run(exe: &Path, args: &[String], out: &Path) -> Result<(Vec<u8>, u64), BenchError> {
    let o = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg("-q")
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(exe)
        .args(args)
        .output()
        .map_err(BenchError::Valgrind)?;
    if !o.status.success() {
        return Err(BenchError::Callgrind {
            args: args.join(" "),
            stderr: String::from_utf8_lossy(&o.stderr).trim().to_string(),
        });
    }
    let text = std::fs::read_to_string(out).map_err(BenchError::file(out))?;
    let ir = instructions(&text).ok_or_else(|| BenchError::NoTotals(out.to_path_buf()))?;
    Ok((o.stdout, ir))
}

/// The total `Ir` of a callgrind profile: its `totals:` line (or, in older formats, its
/// `summary:` line), whose first number is the first event, `Ir` by default.
pub fn instructions(profile: &str) -> Option<u64> {
    let events_ir = profile
        .lines()
        .find_map(|l| l.strip_prefix("events:"))
        .is_none_or(|e| e.split_whitespace().next() == Some("Ir"));
    if !events_ir {
        return None;
    }
    ["totals:", "summary:"].iter().find_map(|key| {
        profile
            .lines()
            .rev()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
    })
}

/// Where the profiles go: the directory given, or a fresh temporary one removed on drop.
pub struct OutDir {
    path: PathBuf,
    remove: bool,
}

impl OutDir {
    pub fn new(keep: Option<&Path>) -> Result<OutDir, BenchError> {
        let (path, remove) = match keep {
            Some(d) => (d.to_path_buf(), false),
            None => (
                std::env::temp_dir().join(format!("trc-callgrind-{}", std::process::id())),
                true,
            ),
        };
        std::fs::create_dir_all(&path).map_err(BenchError::file(&path))?;
        Ok(OutDir { path, remove })
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }
}

impl Drop for OutDir {
    fn drop(&mut self) {
        if self.remove {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::instructions;

    #[test]
    fn totals_line_is_read() {
        let p = "version: 1\ncreator: callgrind-3.19.0\nevents: Ir\nfn=(1) main\n3 10\ntotals: 123456\n";
        assert_eq!(instructions(p), Some(123456));
        assert_eq!(instructions("events: Ir\nsummary: 42\n"), Some(42));
        // A profile of another event first is not read as instructions.
        assert_eq!(instructions("events: Bc Ir\ntotals: 5 6\n"), None);
        assert_eq!(instructions("events: Ir\n"), None);
    }
}
