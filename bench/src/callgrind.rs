//! One bench child under callgrind: the number of instructions it executes (valgrind's `Ir`,
//! user space, every thread), which is the same for the same binary and input whatever else the
//! machine does. The kernel's work for the process (page faults, clearing fresh pages) is not
//! counted: compare the wall-clock columns for that.
//!
//! Of those, [`Counts::step`] is the model step: the instructions both checkers spend in the
//! same model code (the transition function and the properties), read from the profile's self
//! cost per source line ([`step_instructions`]). No checker can execute fewer instructions per
//! state than the step, so stateright's instructions per state over our step bound the
//! instruction ratio any engine could reach on that case.

use crate::BenchError;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The instructions of one callgrind run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counts {
    /// The whole process (the profile's totals).
    pub total: u64,
    /// The model step within it ([`step_instructions`]).
    pub step: u64,
}

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
/// the child's standard output and its instruction counts.
pub fn run(exe: &Path, args: &[String], out: &Path) -> Result<(Vec<u8>, Counts), BenchError> {
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
    let total = instructions(&text).ok_or_else(|| BenchError::NoTotals(out.to_path_buf()))?;
    let step = step_instructions(&self_costs(&text));
    Ok((o.stdout, Counts { total, step }))
}

/// The self cost (`Ir`) of a profile per (source file, function), summed over its cost lines,
/// as `callgrind_annotate` groups it: a line's file is that of its function (`fl=`) unless an
/// inlined file (`fi=`, `fe=`) says otherwise; the cost line after a `calls=` line is the
/// callee's inclusive cost and is not counted. Names may be compressed (`(id) name` defines,
/// `(id)` refers). Lines it does not know are skipped.
pub fn self_costs(profile: &str) -> HashMap<(String, String), u64> {
    #[derive(Default)]
    struct Names(HashMap<String, String>);
    impl Names {
        /// `(id) name`, `(id)` or `name`.
        fn resolve(&mut self, v: &str) -> String {
            let Some(rest) = v.strip_prefix('(') else {
                return v.to_string();
            };
            let Some((id, name)) = rest.split_once(')') else {
                return v.to_string();
            };
            match name.strip_prefix(' ') {
                Some(n) => {
                    self.0.insert(id.to_string(), n.to_string());
                    n.to_string()
                }
                None => self.0.get(id).cloned().unwrap_or_default(),
            }
        }
    }
    let (mut files, mut fns) = (Names::default(), Names::default());
    let (mut fl, mut file, mut func) = (String::new(), String::new(), String::new());
    let mut inclusive_next = false;
    let mut costs: HashMap<(String, String), u64> = HashMap::new();
    for line in profile.lines() {
        if let Some((key, v)) = line.split_once('=') {
            match key {
                "fl" => {
                    fl = files.resolve(v);
                    file = fl.clone();
                }
                "fi" | "fe" => file = files.resolve(v),
                "fn" => {
                    func = fns.resolve(v);
                    file = fl.clone();
                }
                // A callee's name may be defined here and referred to later.
                "cfi" | "cfl" => _ = files.resolve(v),
                "cfn" => _ = fns.resolve(v),
                "calls" => inclusive_next = true,
                _ => {}
            }
            continue;
        }
        if !line.starts_with(|c: char| c.is_ascii_digit() || "+-*".contains(c)) {
            continue;
        }
        if std::mem::take(&mut inclusive_next) {
            continue;
        }
        let ir = line
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse::<u64>().ok());
        if let Some(ir) = ir {
            *costs.entry((file.clone(), func.clone())).or_default() += ir;
        }
    }
    costs
}

/// The model step's share of [`self_costs`]: lines of the model's and the properties' own
/// functions (`trc_model::`, `trc_properties::`, or their impls, wherever the line's source is),
/// and lines of their source files inlined into a checker's functions (`model/src/`,
/// `properties/src/`), less what only a checker does with a state: fingerprinting and hashing
/// it (`fingerprint.rs`, the derived `Hash`), copying it (`plain.rs`, `Clone`), comparing and
/// dropping it. What a checker inlines from the standard library into its own functions is not
/// counted, so the figure errs low, and a bound drawn from it errs high. Both checkers' profiles
/// are classified alike, and they agree within a percent on `trc bench`'s cases.
pub fn step_instructions(costs: &HashMap<(String, String), u64>) -> u64 {
    let model_fn = |func: &str| {
        let f = func.trim_start_matches('<');
        f.starts_with("trc_model::") || f.starts_with("trc_properties::")
    };
    // Paths as the profile has them: relative to the workspace, or absolute.
    let model_file = |file: &str| {
        ["model/src/", "properties/src/"]
            .iter()
            .any(|p| file.starts_with(p) || file.contains(&format!("/{p}")))
    };
    let checker_side = |file: &str, func: &str| {
        let f = func.to_ascii_lowercase();
        file.ends_with("model/src/fingerprint.rs")
            || file.ends_with("model/src/plain.rs")
            || ["fingerprint", "hash", "clone", "partialeq", "drop"]
                .iter()
                .any(|w| f.contains(w))
    };
    costs
        .iter()
        .filter(|((file, func), _)| {
            (model_fn(func) || model_file(file)) && !checker_side(file, func)
        })
        .map(|(_, &ir)| ir)
        .sum()
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
    use super::{instructions, self_costs, step_instructions};

    /// Compressed names, inlined files, a call's inclusive cost (not self), and the model
    /// step's classification: a model function with an inlined library line, a model file
    /// inlined into a checker's function, and what a checker does with states (fingerprinting,
    /// a model file inlined into it) left out.
    #[test]
    fn self_costs_and_the_model_step() {
        let p = "events: Ir
fl=(1) /w/model/src/sender/ack.rs
fn=(1) trc_model::sender::ack::tcp_ack
10 100
fi=(2) /rustc/library/core/src/option.rs
11 5
fe=(1)
12 7
cfl=(3) /w/engine/src/lib.rs
cfn=(2) trc_engine::helper
calls=1 0
13 1000
fl=(3)
fn=(2)
0 40
fi=(1)
+1 9
fl=(4) /w/model/src/fingerprint.rs
fn=(3) trc_model::fingerprint::fp
2 60
fn=(4) stateright::fingerprint
fi=(5) /w/model/src/segmask.rs
3 70
totals: 291
";
        let c = self_costs(p);
        let at = |f: &str, n: &str| c[&(f.to_string(), n.to_string())];
        assert_eq!(
            at(
                "/w/model/src/sender/ack.rs",
                "trc_model::sender::ack::tcp_ack"
            ),
            107
        );
        assert_eq!(
            at(
                "/rustc/library/core/src/option.rs",
                "trc_model::sender::ack::tcp_ack"
            ),
            5
        );
        assert_eq!(at("/w/engine/src/lib.rs", "trc_engine::helper"), 40);
        assert_eq!(at("/w/model/src/sender/ack.rs", "trc_engine::helper"), 9);
        assert_eq!(at("/w/model/src/segmask.rs", "stateright::fingerprint"), 70);
        assert_eq!(c.values().sum::<u64>(), instructions(p).unwrap());
        assert_eq!(step_instructions(&c), 107 + 5 + 9);
    }

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
