//! Structured results of a kernel run: per-line verdicts and the trace.

use serde::Serialize;
use std::collections::BTreeMap;

use crate::packet::{self, Segment, WireOption};
use crate::tcpinfo::TcpInfoSnapshot;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pass,
    Fail,
    /// Not evaluated (e.g. a python statement other than assert/print).
    Skipped,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LineKind {
    PacketIn,
    PacketOut,
    Syscall,
    Shell,
    Assert,
    Print,
    Python,
}

/// The verdict for one script statement (a `%{ }%` block yields one result
/// per assert/print inside it).
#[derive(Debug, Clone, Serialize)]
pub struct LineResult {
    pub line: u32,
    pub col: u32,
    pub kind: LineKind,
    pub status: Status,
    /// The statement, as understood by the runner.
    pub text: String,
    pub expected: Option<String>,
    pub actual: Option<String>,
    pub message: Option<String>,
    /// Time since the script start, ms (packets).
    pub time_ms: Option<f64>,
    /// Outbound: actual minus due time; inbound: injection lateness (ms).
    pub offset_ms: Option<f64>,
    /// tcp_info at assert/print points.
    pub tcp_info: Option<TcpInfoSnapshot>,
    /// Shell command stdout.
    pub output: Option<String>,
    pub notes: Vec<String>,
}

impl LineResult {
    pub fn pass(line: u32, col: u32, kind: LineKind, text: String) -> LineResult {
        LineResult {
            line,
            col,
            kind,
            status: Status::Pass,
            text,
            expected: None,
            actual: None,
            message: None,
            time_ms: None,
            offset_ms: None,
            tcp_info: None,
            output: None,
            notes: Vec::new(),
        }
    }
    pub fn fail(line: u32, col: u32, kind: LineKind, text: String, message: String) -> LineResult {
        let mut r = LineResult::pass(line, col, kind, text);
        r.status = Status::Fail;
        r.message = Some(message);
        r
    }

    /// Human-readable rendering: `PASS file:12: text  (details)`.
    pub fn render(&self, file: &str) -> String {
        let tag = match self.status {
            Status::Pass => "PASS",
            Status::Fail => "FAIL",
            Status::Skipped => "SKIP",
        };
        let mut s = format!("{tag} {file}:{}: {}", self.line, self.text);
        if let (Some(t), Some(o)) = (self.time_ms, self.offset_ms) {
            s.push_str(&format!("  [t={t:.3} ms, offset {o:+.3} ms]"));
        }
        if matches!(self.kind, LineKind::Assert | LineKind::Print) {
            if let Some(a) = &self.actual {
                s.push_str(&format!("  => {a}"));
            }
        }
        if self.status == Status::Fail {
            if let Some(m) = &self.message {
                s.push_str(&format!("\n     error: {m}"));
            }
            if self.kind == LineKind::PacketOut {
                if let Some(e) = &self.expected {
                    s.push_str(&format!("\n     expected: {e}"));
                }
                if let Some(a) = &self.actual {
                    s.push_str(&format!("\n     actual:   {a}"));
                }
            }
        }
        if let Some(o) = &self.output {
            for l in o.lines() {
                s.push_str(&format!("\n     | {l}"));
            }
        }
        for n in &self.notes {
            s.push_str(&format!("\n     note: {n}"));
        }
        s
    }
}

/// A segment in script sequence space (plus the raw live values).
#[derive(Debug, Clone, Serialize)]
pub struct TraceSegment {
    pub flags: String,
    pub seq: u32,
    pub end_seq: u32,
    pub len: usize,
    pub ack: u32,
    pub win: u16,
    pub options: Vec<WireOption>,
    pub live_seq: u32,
    pub live_ack: u32,
    /// Human-readable, packetdrill style.
    pub text: String,
}

impl TraceSegment {
    pub fn from_seg(seg: &Segment, script_seq: u32, script_ack: u32) -> TraceSegment {
        TraceSegment {
            flags: packet::flags_to_string(seg.flags),
            seq: script_seq,
            end_seq: script_seq.wrapping_add(seg.payload_len as u32),
            len: seg.payload_len,
            ack: script_ack,
            win: seg.win,
            options: seg.options.clone(),
            live_seq: seg.seq,
            live_ack: seg.ack,
            text: packet::describe(seg.flags, script_seq, seg.payload_len, seg.has(packet::ACK).then_some(script_ack), Some(seg.win), &seg.options),
        }
    }
}

/// One entry of the time-ordered trace.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum TraceEvent {
    /// A segment injected into the kernel.
    Inbound { t_ms: f64, line: u32, segment: TraceSegment },
    /// A segment the kernel sent (`line` = the script line it matched).
    Outbound { t_ms: f64, line: Option<u32>, segment: TraceSegment },
    /// tcp_info of the connection after a statement, with the undo counters' deltas since the
    /// run started (`TcpExtTCPFullUndo`, ...).
    TcpInfo { t_ms: f64, line: u32, info: TcpInfoSnapshot, counters: BTreeMap<String, i64> },
}

/// Everything a run produced.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    pub file: String,
    pub passed: bool,
    pub interrupted: bool,
    pub lines: Vec<LineResult>,
    pub trace: Vec<TraceEvent>,
    /// Deltas over the run of TcpExtTCPFullUndo, ...PartialUndo, ...LossUndo,
    /// ...DSACKUndo, ...SpuriousRTOs, ...LostRetransmit.
    pub undo_counters: BTreeMap<String, i64>,
    /// What `getsockopt(TCP_CONGESTION)` said on the accepted connection.
    pub congestion_control: Option<String>,
    /// Outbound timing offsets (actual - due), ms.
    pub offsets_ms: Vec<f64>,
    pub tolerance_ms: f64,
    pub duration_ms: f64,
    pub notes: Vec<String>,
}

impl RunReport {
    pub fn new(file: String) -> RunReport {
        RunReport {
            file,
            passed: false,
            interrupted: false,
            lines: Vec::new(),
            trace: Vec::new(),
            undo_counters: BTreeMap::new(),
            congestion_control: None,
            offsets_ms: Vec::new(),
            tolerance_ms: 0.0,
            duration_ms: 0.0,
            notes: Vec::new(),
        }
    }

    /// Source lines with at least one failing check, in order.
    pub fn failed_lines(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self.lines.iter().filter(|l| l.status == Status::Fail).map(|l| l.line).collect();
        v.dedup();
        v
    }

    pub fn finish(&mut self) {
        self.passed = !self.interrupted && self.lines.iter().all(|l| l.status != Status::Fail);
    }

    /// The full human-readable report.
    pub fn render(&self) -> String {
        let mut s = String::new();
        for l in &self.lines {
            s.push_str(&l.render(&self.file));
            s.push('\n');
        }
        for n in &self.notes {
            s.push_str(&format!("note: {n}\n"));
        }
        s.push_str(&format!("congestion control: {}\n", self.congestion_control.as_deref().unwrap_or("(no connection)")));
        let counters: Vec<String> = self.undo_counters.iter().map(|(k, v)| format!("{k}={v}")).collect();
        s.push_str(&format!("undo counters (delta): {}\n", counters.join(" ")));
        if !self.offsets_ms.is_empty() {
            let max = self.offsets_ms.iter().fold(0f64, |m, o| m.max(o.abs()));
            s.push_str(&format!("outbound timing offsets: max |offset| {max:.3} ms (tolerance {:.1} ms)\n", self.tolerance_ms));
        }
        let fails = self.lines.iter().filter(|l| l.status == Status::Fail).count();
        if self.interrupted {
            s.push_str("INTERRUPTED\n");
        }
        s.push_str(&format!(
            "{}: {} checks, {} failed, {:.0} ms\n",
            if self.passed { "PASSED" } else { "FAILED" },
            self.lines.len(),
            fails,
            self.duration_ms
        ));
        s
    }
}
