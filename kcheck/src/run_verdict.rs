//! What one run of a scenario's script said, as its [`CaseResult`](crate::CaseResult) keeps it:
//! the kernel's run ([`CaseResult::kernel`](crate::CaseResult::kernel)) and the profile's replay
//! ([`CaseResult::profile`](crate::CaseResult::profile)), and how each went on the line where
//! they first differ ([`LineView`], a [`Divergence`](crate::Divergence)'s two sides).

use serde::{Deserialize, Serialize};
use trc_kernel::RunReport;
use trc_pkt::report::{LineResult, Status, Verdict};

/// A script run's verdict. In JSON (a report, a shard's units) it is its text, as printed:
/// `passed`, `failed at line L: WHY`, the script's verdict (`PASSED: N checks`,
/// `FAILED at line L (N failed checks)`, `INCOMPLETE: WHY`), `not run: WHY`, `not replayed: WHY`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum RunVerdict {
    /// The kernel's run passed every check of its script.
    Passed,
    /// The first line that failed: its number and why (its message; the kernel's run gives the
    /// line's text when it has no message).
    FailedAt { line: u32, why: String },
    /// The script's own verdict where no line failed: the replay's, or that of a kernel run that
    /// did not pass (an incomplete one).
    Script(Verdict),
    /// The kernel did not run the script: why.
    NotRun(String),
    /// The profile did not replay the script (it does not parse): why.
    NotReplayed(String),
}

impl RunVerdict {
    /// The kernel run's verdict on the script's own checks.
    pub fn of_kernel(r: &RunReport) -> RunVerdict {
        if r.passed() {
            return RunVerdict::Passed;
        }
        match r.script.lines.iter().find(|l| l.status == Status::Fail) {
            Some(l) => RunVerdict::FailedAt {
                line: l.line,
                why: l
                    .message
                    .clone()
                    .unwrap_or_else(|| l.text.trim().to_string()),
            },
            None => RunVerdict::Script(r.script.verdict.clone()),
        }
    }

    /// The replay's verdict: its first failed line, else the script's verdict.
    pub fn of_replay(r: &trc_trace::replay::ReplayReport) -> RunVerdict {
        match r.first_failure() {
            Some(l) => RunVerdict::FailedAt {
                line: l.line,
                why: l.message.clone().unwrap_or_default(),
            },
            None => RunVerdict::Script(r.script.verdict.clone()),
        }
    }

    /// A replay that checked only part of the script.
    pub fn incomplete(&self) -> bool {
        matches!(self, RunVerdict::Script(Verdict::Incomplete { .. }))
    }
}

impl std::fmt::Display for RunVerdict {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            RunVerdict::Passed => f.write_str("passed"),
            RunVerdict::FailedAt { line, why } => write!(f, "failed at line {line}: {why}"),
            RunVerdict::Script(v) => f.write_str(&v.render()),
            RunVerdict::NotRun(why) => write!(f, "not run: {why}"),
            RunVerdict::NotReplayed(why) => write!(f, "not replayed: {why}"),
        }
    }
}

impl From<RunVerdict> for String {
    fn from(v: RunVerdict) -> String {
        v.to_string()
    }
}

/// A text that is none of [`RunVerdict`]'s.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a script run's verdict (passed, failed at line L: WHY, PASSED: N checks, FAILED at line L (N failed checks), INCOMPLETE: WHY, not run: WHY, not replayed: WHY)")]
pub struct NotARunVerdict(pub String);

/// The script verdict `s` renders ([`Verdict::render`]), if it is one.
fn script_verdict(s: &str) -> Option<Verdict> {
    if let Some(n) = s
        .strip_prefix("PASSED: ")
        .and_then(|r| r.strip_suffix(" checks"))
    {
        return Some(Verdict::Passed {
            checks: n.parse().ok()?,
        });
    }
    if let Some(r) = s
        .strip_prefix("FAILED at line ")
        .and_then(|r| r.strip_suffix(" failed checks)"))
    {
        let (line, failed) = r.split_once(" (")?;
        return Some(Verdict::Failed {
            line: line.parse().ok()?,
            failed: failed.parse().ok()?,
        });
    }
    s.strip_prefix("INCOMPLETE: ")
        .map(|reason| Verdict::Incomplete {
            reason: reason.to_string(),
        })
}

impl TryFrom<String> for RunVerdict {
    type Error = NotARunVerdict;
    fn try_from(s: String) -> Result<RunVerdict, NotARunVerdict> {
        if s == "passed" {
            return Ok(RunVerdict::Passed);
        }
        if let Some((line, why)) = s
            .strip_prefix("failed at line ")
            .and_then(|r| r.split_once(": "))
        {
            if let Ok(line) = line.parse() {
                let why = why.to_string();
                return Ok(RunVerdict::FailedAt { line, why });
            }
        }
        if let Some(why) = s.strip_prefix("not run: ") {
            return Ok(RunVerdict::NotRun(why.to_string()));
        }
        if let Some(why) = s.strip_prefix("not replayed: ") {
            return Ok(RunVerdict::NotReplayed(why.to_string()));
        }
        script_verdict(&s)
            .map(RunVerdict::Script)
            .ok_or(NotARunVerdict(s))
    }
}

/// How one run went on a line of the script, as a [`Divergence`](crate::Divergence) shows it.
/// In JSON it is its text: `not reached`, the line's status (`pass`, `fail`, `applied`,
/// `outofscope`), with `(got VALUE)` when the run read a value there, or `(WHY)` for a failure
/// without one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum LineView {
    /// The run did not get to the line.
    NotReached,
    /// The line ran with `status`; `got`: the value the run read there.
    Ran { status: Status, got: Option<String> },
    /// The line failed without a value read: why.
    Failed(String),
}

impl LineView {
    /// The view of a run's result for a line (`None`: the run has none).
    pub fn of(l: Option<&LineResult>) -> LineView {
        let Some(l) = l else {
            return LineView::NotReached;
        };
        match (&l.actual, &l.message) {
            (None, Some(m)) if l.status == Status::Fail => LineView::Failed(m.clone()),
            (got, _) => LineView::Ran {
                status: l.status,
                got: got.clone(),
            },
        }
    }
}

/// A status as a line view writes it.
fn status_word(s: Status) -> &'static str {
    match s {
        Status::Pass => "pass",
        Status::Fail => "fail",
        Status::OutOfScope => "outofscope",
        Status::Applied => "applied",
    }
}

impl std::fmt::Display for LineView {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            LineView::NotReached => f.write_str("not reached"),
            LineView::Ran { status, got: None } => f.write_str(status_word(*status)),
            LineView::Ran {
                status,
                got: Some(g),
            } => write!(f, "{} (got {g})", status_word(*status)),
            LineView::Failed(why) => write!(f, "fail ({why})"),
        }
    }
}

impl From<LineView> for String {
    fn from(v: LineView) -> String {
        v.to_string()
    }
}

/// A text that is none of [`LineView`]'s.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a line's view (not reached, or pass, fail, applied, outofscope, with (got VALUE) or (WHY))")]
pub struct NotALineView(pub String);

impl TryFrom<String> for LineView {
    type Error = NotALineView;
    fn try_from(s: String) -> Result<LineView, NotALineView> {
        if s == "not reached" {
            return Ok(LineView::NotReached);
        }
        let (word, rest) = s.split_once(' ').unwrap_or((&s, ""));
        let status = [
            Status::Pass,
            Status::Fail,
            Status::OutOfScope,
            Status::Applied,
        ]
        .into_iter()
        .find(|st| status_word(*st) == word);
        let inner = rest.strip_prefix('(').and_then(|r| r.strip_suffix(')'));
        let view = match (status, rest, inner) {
            (Some(status), "", _) => Some(LineView::Ran { status, got: None }),
            (Some(status), _, Some(i)) if i.starts_with("got ") => Some(LineView::Ran {
                status,
                got: Some(i["got ".len()..].to_string()),
            }),
            (Some(Status::Fail), _, Some(why)) => Some(LineView::Failed(why.to_string())),
            _ => None,
        };
        view.ok_or(NotALineView(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_verdict_is_its_text_in_json_and_back() {
        let all = [
            (RunVerdict::Passed, "passed"),
            (
                RunVerdict::FailedAt {
                    line: 12,
                    why: "timing error: expected at 1.2 s: x".into(),
                },
                "failed at line 12: timing error: expected at 1.2 s: x",
            ),
            (
                RunVerdict::FailedAt {
                    line: 3,
                    why: String::new(),
                },
                "failed at line 3: ",
            ),
            (
                RunVerdict::Script(Verdict::Passed { checks: 10 }),
                "PASSED: 10 checks",
            ),
            (
                RunVerdict::Script(Verdict::Failed { line: 7, failed: 2 }),
                "FAILED at line 7 (2 failed checks)",
            ),
            (
                RunVerdict::Script(Verdict::Incomplete {
                    reason: "2 checks not made (lines 45, 62)".into(),
                }),
                "INCOMPLETE: 2 checks not made (lines 45, 62)",
            ),
            (
                RunVerdict::NotRun("no result (interrupted)".into()),
                "not run: no result (interrupted)",
            ),
            (
                RunVerdict::NotReplayed("t.pkt:3: syntax error".into()),
                "not replayed: t.pkt:3: syntax error",
            ),
        ];
        for (v, text) in all {
            // The text is the script verdict's own rendering where it is one.
            if let RunVerdict::Script(s) = &v {
                assert_eq!(s.render(), text);
            }
            let json = serde_json::to_string(&v).unwrap();
            assert_eq!(json, serde_json::to_string(text).unwrap());
            assert_eq!(serde_json::from_str::<RunVerdict>(&json).unwrap(), v);
        }
        for bad in ["", "Passed", "failed at line x: y", "PASSED: many checks"] {
            let e = serde_json::from_str::<RunVerdict>(&serde_json::to_string(bad).unwrap());
            assert!(e.is_err(), "{bad}");
        }
    }

    #[test]
    fn each_line_view_is_its_text_in_json_and_back() {
        let all = [
            (LineView::NotReached, "not reached"),
            (
                LineView::Ran {
                    status: Status::Pass,
                    got: None,
                },
                "pass",
            ),
            (
                LineView::Ran {
                    status: Status::OutOfScope,
                    got: None,
                },
                "outofscope",
            ),
            (
                LineView::Ran {
                    status: Status::Fail,
                    got: Some("cwnd 7 (of 10)".into()),
                },
                "fail (got cwnd 7 (of 10))",
            ),
            (
                LineView::Failed("timing error: 4 ms late".into()),
                "fail (timing error: 4 ms late)",
            ),
        ];
        for (v, text) in all {
            let json = serde_json::to_string(&v).unwrap();
            assert_eq!(json, serde_json::to_string(text).unwrap());
            assert_eq!(serde_json::from_str::<LineView>(&json).unwrap(), v);
        }
        for bad in ["", "passed", "pass (why)", "fail (x", "not run"] {
            let e = serde_json::from_str::<LineView>(&serde_json::to_string(bad).unwrap());
            assert!(e.is_err(), "{bad}");
        }
    }
}
