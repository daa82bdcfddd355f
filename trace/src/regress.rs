//! The regression corpus: `counterexamples/regressions/manifest.toml` and one exported script
//! per known bug. Each entry names the property, the profiles on which the violation must
//! reproduce (the script replays with every line passing) and those on which it must not (the
//! replay fails, at or after the step where the property breaks).

use crate::export::Exported;
use crate::replay::{replay, ReplayOptions, ReplayReport};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use trc_model::Profile;

/// Why the regression corpus could not be read or added to.
#[derive(Debug, thiserror::Error)]
pub enum CorpusError {
    /// The manifest cannot be read or is not the manifest's TOML (`file:line: why`).
    #[error(transparent)]
    Manifest(#[from] trc_files::ReadError),
    /// An exported script does not parse.
    #[error(transparent)]
    Parse(#[from] trc_pkt::ParseError),
    /// The corpus directory, a script or the manifest cannot be written.
    #[error(transparent)]
    Io(#[from] trc_files::PathError),
}

/// One regression.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// Short name (the bug / commit it documents).
    pub name: String,
    /// Property id (`I1`, ...).
    pub property: String,
    /// Script file, relative to the manifest.
    pub script: String,
    /// Profiles that must fail the property: the script replays with every checked line passing.
    pub violated_on: Vec<String>,
    /// Profiles that must pass the property: the replay fails (on linux-6.18, at or after the
    /// step where the property breaks).
    pub holds_on: Vec<String>,
    /// A real kernel can run the script (no model-only events); the test then checks the
    /// running kernel against the model's replay of the matching profile, assert by assert.
    #[serde(default)]
    pub kernel_runnable: bool,
    /// Lines where the live 6.18 kernel is known to differ from the model's linux-6.18 replay,
    /// with the reason (e.g. CUBIC window growth, not modelled yet).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kernel_differences: Vec<KernelDifference>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
}

/// A known kernel/model difference on one line of a regression script.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelDifference {
    pub line: u32,
    pub reason: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    #[serde(default, rename = "regression")]
    pub regressions: Vec<Entry>,
}

pub const MANIFEST: &str = "manifest.toml";

impl Manifest {
    /// Reads `dir/manifest.toml` (empty if absent).
    pub fn load(dir: &Path) -> Result<Manifest, CorpusError> {
        let p = dir.join(MANIFEST);
        if !p.exists() {
            return Ok(Manifest::default());
        }
        Ok(trc_files::read_toml(&p)?)
    }

    pub fn save(&self, dir: &Path) -> std::io::Result<()> {
        let body = toml::to_string_pretty(self).map_err(std::io::Error::other)?;
        let text = format!("# Regression corpus: one exported counterexample per known bug (see docs/reference/export.md).\n# violated_on: profiles that must fail the property (the script replays with every line passing);\n# holds_on: profiles that must pass it (the replay fails at or after the step where it breaks).\n\n{body}");
        trc_files::write_atomic(&dir.join(MANIFEST), text.as_bytes())
    }
}

/// Line of the `*** <id> breaks at step N` comment in an exported script (1-based).
pub fn break_line(pkt: &str) -> Option<u32> {
    pkt.lines()
        .position(|l| l.starts_with("// ***") && l.contains("breaks at step"))
        .map(|i| i as u32 + 1)
}

/// Whether a replay reproduces the violation: every line run and every check passed.
pub fn reproduces(r: &ReplayReport) -> bool {
    matches!(r.script.verdict, trc_pkt::report::Verdict::Passed { .. })
}

/// Classifies every built-in profile for an exported script: (violated_on, holds_on).
pub fn classify(pkt: &str, file: &str) -> Result<(Vec<String>, Vec<String>), CorpusError> {
    let script = trc_pkt::parse(pkt, file)?;
    let (mut v, mut h) = (Vec::new(), Vec::new());
    for p in Profile::builtin() {
        let r = replay(&script, file, &p, &ReplayOptions::default());
        if reproduces(&r) {
            v.push(p.name.clone());
        } else {
            h.push(p.name.clone());
        }
    }
    Ok((v, h))
}

/// Outcome of adding one export to the corpus.
#[derive(Debug, PartialEq, Eq)]
pub enum Saved {
    Added(PathBuf),
    AlreadyPresent(String),
}

/// Adds an export to the corpus in `dir` unless an entry with the same script exists.
pub fn add(dir: &Path, x: &Exported) -> Result<Saved, CorpusError> {
    std::fs::create_dir_all(dir).map_err(trc_files::at(dir))?;
    let mut m = Manifest::load(dir)?;
    let file = format!(
        "{}-{}-{}.pkt",
        x.trace.property,
        x.trace.profile.name,
        if x.trace.sack { "sack" } else { "nosack" }
    );
    if let Some(e) = m.regressions.iter().find(|e| {
        e.script == file
            || (e.property == x.trace.property
                && e.violated_on.contains(&x.trace.profile.name)
                && script_sack(dir, e) == Some(x.trace.sack))
    }) {
        return Ok(Saved::AlreadyPresent(e.name.clone()));
    }
    let (violated_on, holds_on) = classify(&x.pkt, &file)?;
    let path = dir.join(&file);
    // The corpus keeps the gtests' layout: `../common/defaults.sh` (counterexamples/common/).
    let pkt = x
        .pkt
        .replacen(crate::EXPORT_INIT, "`../common/defaults.sh`", 1);
    trc_files::write_atomic(&path, pkt.as_bytes()).map_err(trc_files::at(&path))?;
    m.regressions.push(Entry {
        name: file.trim_end_matches(".pkt").to_string(),
        property: x.trace.property.clone(),
        script: file,
        violated_on,
        holds_on,
        kernel_runnable: x.trace.kernel_runnable,
        kernel_differences: Vec::new(),
        note: String::new(),
    });
    m.save(dir).map_err(trc_files::at(dir))?;
    Ok(Saved::Added(path))
}

/// SACK mode of an entry's script (from its handshake), if readable.
fn script_sack(dir: &Path, e: &Entry) -> Option<bool> {
    let src = std::fs::read_to_string(dir.join(&e.script)).ok()?;
    let syn = src.lines().find(|l| l.contains("< S "))?;
    Some(syn.contains("sackOK"))
}

/// Checks one entry on the model; returns the problems found.
pub fn check_entry(dir: &Path, e: &Entry) -> Vec<String> {
    let mut bad = Vec::new();
    let path = dir.join(&e.script);
    let src = match std::fs::read_to_string(&path) {
        Ok(s) => s,
        Err(err) => return vec![format!("{}: {err}", path.display())],
    };
    let script = match trc_pkt::parse(&src, &e.script) {
        Ok(s) => s,
        Err(err) => return vec![err.to_string()],
    };
    let brk = break_line(&src);
    for (names, want) in [(&e.violated_on, true), (&e.holds_on, false)] {
        for n in names {
            let Some(p) = Profile::by_name(n) else {
                bad.push(format!("{}: unknown profile {n}", e.name));
                continue;
            };
            let r = replay(&script, &e.script, &p, &ReplayOptions::default());
            if reproduces(&r) != want {
                let f = r
                    .first_failure()
                    .map(|l| {
                        format!(
                            "first failure line {}: {} (model {})",
                            l.line,
                            l.text,
                            l.actual.clone().unwrap_or_default()
                        )
                    })
                    .unwrap_or_else(|| "no failure".into());
                bad.push(format!(
                    "{} on {n}: expected the violation to {}reproduce; {f}",
                    e.name,
                    if want { "" } else { "not " }
                ));
            } else if !want && p.name == "linux-6.18" {
                // 6.18 has every fix: its replay must go wrong exactly where the bug shows
                // (other profiles may diverge earlier on their own decision points).
                if let (Some(b), Some(f)) = (brk, r.first_failure()) {
                    if f.line < b {
                        bad.push(format!("{} on {n}: fails at line {} before the step where {} breaks (line {b})", e.name, f.line, e.property));
                    }
                }
            }
            if let Some(stopped) = &r.script.stopped {
                bad.push(format!("{} on {n}: replay stopped: {stopped:?}", e.name));
            }
        }
    }
    bad
}
