//! What a script run produced, line by line, whatever ran it (the kernel or the model), and the
//! one verdict rule.
//!
//! A line is a *check* when it passes or fails: an outbound packet, a system call whose result
//! the script states, a shell command's exit status, a `%{ }%` block with an `assert`. Inputs
//! (an injected packet, a write to the model) are *applied*. A check that could not be made is
//! *out of scope*, never a pass.
//!
//! Verdict: **failed** if any check failed, at the line packetdrill would stop at (the first
//! failing line that is not Python, else the first failing Python block: packetdrill runs the
//! Python after everything else); otherwise **incomplete** if anything was out of scope, the
//! run stopped or was interrupted early, the run reached a feature the backend does not
//! implement (`unsupported: X`; nothing after it runs, so nothing after it can fail), or nothing
//! was checked; otherwise **passed**. Exit codes 0 / 1 / 3 ([`Verdict::exit_code`]).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    Pass,
    Fail,
    /// Not checked: the backend cannot check this (the model and a `tcpi_rtt` assert).
    OutOfScope,
    /// An input applied (an injected packet, a setup call), nothing to check.
    Applied,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LineKind {
    PacketIn,
    PacketOut,
    Syscall,
    Shell,
    Code,
}

/// The result of one statement.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LineResult {
    pub line: u32,
    pub col: u32,
    pub kind: LineKind,
    pub status: Status,
    /// The statement as written (one line of it).
    pub text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actual: Option<String>,
    /// Why it failed or is out of scope.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Script time (ms) at which it happened.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_ms: Option<f64>,
    /// Outbound: actual minus due time; inbound and calls: lateness (ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset_ms: Option<f64>,
    /// Output of a shell command or of a block's `print`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// The integer values a `%{ }%` block read.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub values: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl LineResult {
    pub fn new(line: u32, col: u32, kind: LineKind, status: Status, text: String) -> LineResult {
        LineResult {
            line,
            col,
            kind,
            status,
            text,
            expected: None,
            actual: None,
            message: None,
            time_ms: None,
            offset_ms: None,
            output: None,
            values: BTreeMap::new(),
            notes: Vec::new(),
        }
    }

    pub fn with_message(mut self, m: impl Into<String>) -> LineResult {
        self.message = Some(m.into());
        self
    }

    /// Whether the line is a check (passed or failed).
    pub fn is_check(&self) -> bool {
        matches!(self.status, Status::Pass | Status::Fail)
    }

    /// Whether the line failed on its timing alone: the expected packet, outside its time (the
    /// message [`crate::time`] writes starts with "timing error"; a wrong packet says so first).
    pub fn failed_on_timing(&self) -> bool {
        self.status == Status::Fail
            && self
                .message
                .as_deref()
                .is_some_and(|m| m.starts_with("timing error"))
    }

    /// `PASS file:12: text  (details)`.
    pub fn render(&self, file: &str) -> String {
        use std::fmt::Write as _;
        let tag = match self.status {
            Status::Pass => "PASS",
            Status::Fail => "FAIL",
            Status::OutOfScope => "OUT ",
            Status::Applied => "    ",
        };
        let mut s = format!("{tag} {file}:{}: {}", self.line, self.text);
        if let (Some(t), Some(o)) = (self.time_ms, self.offset_ms) {
            let _ = write!(s, "  [t={t:.3} ms, offset {o:+.3} ms]");
        } else if let Some(t) = self.time_ms {
            let _ = write!(s, "  [t={t:.3} ms]");
        }
        if !self.values.is_empty() && self.status != Status::Fail {
            let v: Vec<String> = self
                .values
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            let _ = write!(s, "  => {}", v.join(" "));
        }
        if let Some(m) = &self.message {
            let what = match self.status {
                Status::Fail => "error",
                Status::OutOfScope => "out of scope",
                _ => "note",
            };
            let _ = write!(s, "\n     {what}: {m}");
        }
        if self.status == Status::Fail {
            if let Some(e) = &self.expected {
                let _ = write!(s, "\n     expected: {e}");
            }
            if let Some(a) = &self.actual {
                let _ = write!(s, "\n     actual:   {a}");
            }
            if !self.values.is_empty() {
                let v: Vec<String> = self
                    .values
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect();
                let _ = write!(s, "\n     values:   {}", v.join(" "));
            }
        }
        if let Some(o) = &self.output {
            for l in o.lines() {
                let _ = write!(s, "\n     | {l}");
            }
        }
        for n in &self.notes {
            let _ = write!(s, "\n     note: {n}");
        }
        s
    }
}

/// The verdict of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "kebab-case")]
pub enum Verdict {
    /// Every statement ran and every check passed.
    Passed { checks: usize },
    /// A check failed; `line` is where packetdrill would report it.
    Failed { line: u32, failed: usize },
    /// Nothing failed, but not everything was checked.
    Incomplete { reason: String },
}

impl Verdict {
    /// 0 passed, 1 failed, 3 incomplete.
    pub fn exit_code(&self) -> i32 {
        match self {
            Verdict::Passed { .. } => 0,
            Verdict::Failed { .. } => 1,
            Verdict::Incomplete { .. } => EXIT_INCOMPLETE,
        }
    }

    pub fn render(&self) -> String {
        match self {
            Verdict::Passed { checks } => format!("PASSED: {checks} checks"),
            Verdict::Failed { line, failed } => {
                format!("FAILED at line {line} ({failed} failed checks)")
            }
            Verdict::Incomplete { reason } => format!("INCOMPLETE: {reason}"),
        }
    }
}

/// Exit code of a run that neither failed nor checked everything.
pub const EXIT_INCOMPLETE: i32 = 3;

/// The line-by-line report of one run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub file: String,
    pub lines: Vec<LineResult>,
    /// The run stopped here, later lines not run: (line, why).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<(u32, String)>,
    /// The run stopped here at a feature the backend does not implement, later lines not run:
    /// (line, the feature). Line 0: an option (nothing ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unsupported: Option<(u32, String)>,
    pub interrupted: bool,
    pub verdict: Verdict,
}

impl Report {
    pub fn new(file: &str) -> Report {
        Report {
            file: file.to_string(),
            lines: Vec::new(),
            stopped: None,
            unsupported: None,
            interrupted: false,
            verdict: Verdict::Incomplete {
                reason: "not run".into(),
            },
        }
    }

    /// Computes [`Report::verdict`] from the lines (see the module docs).
    pub fn finish(&mut self) {
        self.verdict = self.compute_verdict();
    }

    fn compute_verdict(&self) -> Verdict {
        let failed = self
            .lines
            .iter()
            .filter(|l| l.status == Status::Fail)
            .count();
        let first = |code: bool| {
            self.lines
                .iter()
                .find(|l| l.status == Status::Fail && (l.kind == LineKind::Code) == code)
                .map(|l| l.line)
        };
        if let Some(line) = first(false).or_else(|| first(true)) {
            return Verdict::Failed { line, failed };
        }
        if self.interrupted {
            return Verdict::Incomplete {
                reason: "interrupted".into(),
            };
        }
        if let Some((line, what)) = &self.unsupported {
            return Verdict::Incomplete {
                reason: if *line == 0 {
                    format!("unsupported: {what} (nothing run)")
                } else {
                    format!("unsupported: {what} (line {line}; later lines not run)")
                },
            };
        }
        if let Some((line, why)) = &self.stopped {
            return Verdict::Incomplete {
                reason: format!("stopped at line {line}: {why}"),
            };
        }
        let out: Vec<u32> = self
            .lines
            .iter()
            .filter(|l| l.status == Status::OutOfScope)
            .map(|l| l.line)
            .collect();
        if !out.is_empty() {
            let shown: Vec<String> = out.iter().take(8).map(|l| l.to_string()).collect();
            return Verdict::Incomplete {
                reason: format!(
                    "{} checks not made (lines {}{})",
                    out.len(),
                    shown.join(", "),
                    if out.len() > 8 { ", ..." } else { "" }
                ),
            };
        }
        let checks = self.lines.iter().filter(|l| l.is_check()).count();
        if checks == 0 {
            return Verdict::Incomplete {
                reason: "nothing checked".into(),
            };
        }
        Verdict::Passed { checks }
    }

    /// Counts of (passed, failed, out of scope).
    pub fn counts(&self) -> (usize, usize, usize) {
        let n = |s| self.lines.iter().filter(|l| l.status == s).count();
        (n(Status::Pass), n(Status::Fail), n(Status::OutOfScope))
    }

    /// Source lines with a failed check, in order.
    pub fn failed_lines(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self
            .lines
            .iter()
            .filter(|l| l.status == Status::Fail)
            .map(|l| l.line)
            .collect();
        v.dedup();
        v
    }

    /// The first failing line in packetdrill's order, if any.
    pub fn failed_line(&self) -> Option<u32> {
        match self.verdict {
            Verdict::Failed { line, .. } => Some(line),
            _ => None,
        }
    }

    /// Every line, then the verdict.
    pub fn render(&self) -> String {
        let mut s = String::new();
        for l in &self.lines {
            s.push_str(&l.render(&self.file));
            s.push('\n');
        }
        if let Some((line, why)) = &self.stopped {
            s.push_str(&format!(
                "stopped at line {line}: {why} (later lines not run)\n"
            ));
        }
        if let Some((line, what)) = &self.unsupported {
            s.push_str(&format!(
                "unsupported: {what}, at line {line}: trc's runner does not implement it (later lines not run)\n"
            ));
        }
        let (p, f, o) = self.counts();
        s.push_str(&format!(
            "{} ({p} passed, {f} failed, {o} out of scope)\n",
            self.verdict.render()
        ));
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(line: u32, kind: LineKind, status: Status) -> LineResult {
        LineResult::new(line, 1, kind, status, String::new())
    }

    #[test]
    fn verdicts() {
        let mut r = Report::new("t.pkt");
        r.finish();
        assert!(
            matches!(r.verdict, Verdict::Incomplete { .. }),
            "an empty run checked nothing"
        );
        r.lines.push(l(3, LineKind::PacketIn, Status::Applied));
        r.finish();
        assert!(matches!(r.verdict, Verdict::Incomplete { .. }));
        r.lines.push(l(4, LineKind::PacketOut, Status::Pass));
        r.finish();
        assert_eq!(r.verdict, Verdict::Passed { checks: 1 });
        r.lines.push(l(5, LineKind::Code, Status::OutOfScope));
        r.finish();
        assert_eq!(r.verdict.exit_code(), 3);
        r.lines.push(l(6, LineKind::Code, Status::Fail));
        r.lines.push(l(9, LineKind::PacketOut, Status::Fail));
        r.finish();
        assert_eq!(
            r.verdict,
            Verdict::Failed { line: 9, failed: 2 },
            "packetdrill stops at the packet; Python runs last"
        );
        assert_eq!(r.verdict.exit_code(), 1);
    }
}
