//! The shell of the model replay: a script's shell line run by `/bin/sh`, confined as the kernel
//! runner confines its lines (`trc_shell`), in a network namespace of its own, with a directory
//! first on its `PATH` whose `nstat` answers from the model's MIB counters (`nstat.py`: nstat's
//! options, output format and history file). What the line's settings mean to the model was
//! applied before it runs ([`crate::shell`]); they run as `:` here.
//!
//! The counters the model does not keep are still listed to `nstat` by name (from the kernel's
//! own list, `nstat-names-6.18.txt`), so an invocation that asks for one by name is reported,
//! never answered with a guess: the line is out of scope with the counter's name. A line that
//! names such a counter anywhere (`nstat | grep TcpExtTCPDelivered`) is out of scope too, before
//! it runs.

use std::io;
use std::path::{Path, PathBuf};
use trc_model::mib::{Mib, MibTotals};

/// The shim (`nstat` on the line's `PATH`).
const NSTAT_PY: &str = include_str!("nstat.py");

/// The counters `nstat -az` lists on Linux 6.18, in its order (`/proc/net/snmp`, `snmp6`,
/// `netstat`).
const KERNEL_COUNTERS: &str = include_str!("nstat-names-6.18.txt");

/// What running a line gave.
#[derive(Debug)]
pub enum LineRun {
    /// It ran: exit status (`None`: killed), standard output and error.
    Ran {
        code: Option<i32>,
        stdout: String,
        stderr: String,
        timed_out: bool,
    },
    /// It asked `nstat` for counters the model does not keep (their names).
    Unmodelled(Vec<String>),
    /// It could not run confined (why).
    CannotRun(String),
}

/// The replay's shell: a private directory with the shim, the counter table and the `nstat`
/// history, removed when dropped.
pub struct ModelShell {
    dir: PathBuf,
    /// When the replay began (seconds since the epoch): an older history file is aged out.
    boot: u64,
}

impl Drop for ModelShell {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Every counter the kernel lists, in its order.
pub fn kernel_counters() -> impl Iterator<Item = &'static str> {
    KERNEL_COUNTERS
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
}

/// A counter name of the kernel's that the model does not keep, named in `line`.
pub fn unmodelled_named(line: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in line.split(|c: char| !c.is_ascii_alphanumeric() && c != '_') {
        if Mib::from_name(w).is_none()
            && kernel_counters().any(|k| k == w)
            && !out.iter().any(|o| o == w)
        {
            out.push(w.to_string());
        }
    }
    out
}

impl ModelShell {
    /// A fresh shell directory under the temporary directory (mode 0700).
    pub fn new() -> io::Result<ModelShell> {
        use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let dir = std::env::temp_dir().join(format!(
            "trc-replay-shell.{}.{}",
            std::process::id(),
            now.as_nanos()
        ));
        std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
        let sh = ModelShell {
            dir,
            boot: now.as_secs(),
        };
        let bin = sh.dir.join("bin");
        std::fs::DirBuilder::new().mode(0o700).create(&bin)?;
        let nstat = bin.join("nstat");
        std::fs::write(&nstat, NSTAT_PY)?;
        std::fs::set_permissions(&nstat, std::fs::Permissions::from_mode(0o755))?;
        Ok(sh)
    }

    /// The table the shim reads: every kernel counter, the model's value or `-`.
    fn write_counters(&self, c: &MibTotals) -> io::Result<()> {
        let mut t = String::new();
        for name in kernel_counters() {
            match Mib::from_name(name) {
                Some(m) => t.push_str(&format!("{name} {}\n", c.get(m))),
                None => t.push_str(&format!("{name} -\n")),
            }
        }
        trc_files::write_atomic(&self.dir.join("counters"), t.as_bytes())
    }

    /// Runs `text` (the line with its settings replaced by `:`) in `cwd` with the script's
    /// environment `env`, `nstat` answering from `counters`.
    pub fn run(
        &self,
        text: &str,
        cwd: &Path,
        env: &[(String, String)],
        counters: &MibTotals,
    ) -> LineRun {
        let named = unmodelled_named(text);
        if !named.is_empty() {
            return LineRun::Unmodelled(named);
        }
        if let Err(e) = self.write_counters(counters) {
            return LineRun::CannotRun(format!("cannot write the counter table: {e}"));
        }
        let asked = self.dir.join("unmodelled");
        let _ = std::fs::remove_file(&asked);
        let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into());
        let mut env: Vec<(String, String)> = env.to_vec();
        if !env.iter().any(|(k, _)| k == "NSTAT_HISTORY") {
            env.push((
                "NSTAT_HISTORY".into(),
                self.dir.join("history").display().to_string(),
            ));
        }
        let d = |f: &str| self.dir.join(f).display().to_string();
        env.extend([
            ("PATH".into(), format!("{}:{path}", d("bin"))),
            ("TRC_MODEL_NSTAT".into(), d("counters")),
            ("TRC_MODEL_NSTAT_UNMODELLED".into(), d("unmodelled")),
            ("TRC_MODEL_BOOT".into(), self.boot.to_string()),
        ]);
        let conf = trc_shell::Confinement { private_net: true };
        let out = match trc_shell::run_with(text, cwd, &env, conf, trc_shell::TIME_LIMIT) {
            Ok(o) => o,
            Err(e) => {
                return LineRun::CannotRun(format!(
                    "cannot run /bin/sh confined (a mount and network namespace of its own: root or user namespaces): {e}"
                ))
            }
        };
        if let Ok(a) = std::fs::read_to_string(&asked) {
            let mut names: Vec<String> = Vec::new();
            for n in a.lines().filter(|l| !l.is_empty()) {
                if !names.iter().any(|x| x == n) {
                    names.push(n.to_string());
                }
            }
            if !names.is_empty() {
                return LineRun::Unmodelled(names);
            }
        }
        LineRun::Ran {
            code: out.code,
            stdout: out.stdout,
            stderr: out.stderr,
            timed_out: out.timed_out,
        }
    }
}
