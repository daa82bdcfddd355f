//! What a kernel run produced: the script engine's line-by-line report and verdict
//! (`trc_pkt::report`), plus the trace the differential tester and the kernel check read.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::packet::{self, Segment, WireOption};
use crate::tcpinfo::TcpInfoSnapshot;
pub use trc_pkt::report::{LineKind, LineResult, Report, Status, Verdict};

/// A segment in script sequence space (plus the raw live values).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TraceSegment {
    pub flags: trc_pkt::wire::TcpFlags,
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
            flags: trc_pkt::wire::TcpFlags(seg.flags),
            seq: script_seq,
            end_seq: script_seq.wrapping_add(seg.payload_len as u32),
            len: seg.payload_len,
            ack: script_ack,
            win: seg.win,
            options: seg.options.clone(),
            live_seq: seg.seq,
            live_ack: seg.ack,
            text: packet::describe(
                seg.flags,
                script_seq,
                seg.payload_len,
                seg.has(packet::ACK).then_some(script_ack),
                Some(seg.win),
                &seg.options,
            ),
        }
    }
}

/// One entry of the time-ordered trace.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum TraceEvent {
    /// A segment injected into the kernel.
    Inbound {
        t_ms: f64,
        line: u32,
        segment: TraceSegment,
    },
    /// A segment the kernel sent (`line` = the script line that consumed it; `None`: no line did).
    Outbound {
        t_ms: f64,
        line: Option<u32>,
        segment: TraceSegment,
    },
    /// tcp_info of the connection after a statement, with the undo counters' deltas since the
    /// run started (`TcpExtTCPFullUndo`, ...).
    TcpInfo {
        t_ms: f64,
        line: u32,
        info: TcpInfoSnapshot,
        counters: BTreeMap<String, i64>,
    },
}

/// Everything a run produced.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunReport {
    /// The lines and the verdict.
    pub script: Report,
    pub trace: Vec<TraceEvent>,
    /// The `Tcp*` / `TcpExt*` MIB counters that moved during the run (nstat names, deltas; the
    /// namespace is the run's own, so they are the connection's).
    pub counters: BTreeMap<String, i64>,
    /// What `getsockopt(TCP_CONGESTION)` said on the connection.
    pub congestion_control: Option<String>,
    pub duration_ms: f64,
    pub notes: Vec<String>,
}

impl RunReport {
    pub fn new(file: String) -> RunReport {
        RunReport {
            script: Report::new(&file),
            trace: Vec::new(),
            counters: BTreeMap::new(),
            congestion_control: None,
            duration_ms: 0.0,
            notes: Vec::new(),
        }
    }

    /// Whether the run passed (every statement run, every check passed).
    pub fn passed(&self) -> bool {
        matches!(self.script.verdict, Verdict::Passed { .. })
    }

    /// The lines, the notes, the kernel's counters and the verdict.
    pub fn render(&self) -> String {
        let mut s = String::new();
        for l in &self.script.lines {
            s.push_str(&l.render(&self.script.file));
            s.push('\n');
        }
        for n in &self.notes {
            s.push_str(&format!("note: {n}\n"));
        }
        s.push_str(&format!(
            "congestion control: {}\n",
            self.congestion_control
                .as_deref()
                .unwrap_or("(no connection)")
        ));
        let counters: Vec<String> = self
            .counters
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        s.push_str(&format!(
            "MIB counters that moved: {}\n",
            if counters.is_empty() {
                "none".to_string()
            } else {
                counters.join(" ")
            }
        ));
        if let Some((line, why)) = &self.script.stopped {
            s.push_str(&format!("stopped at line {line}: {why}\n"));
        }
        if let Some((line, what)) = &self.script.unsupported {
            s.push_str(&format!(
                "unsupported: {what}, at line {line}: trc's runner does not implement it (later lines not run)\n"
            ));
        }
        let (p, f, o) = self.script.counts();
        s.push_str(&format!(
            "{} ({p} passed, {f} failed, {o} not evaluated, {:.0} ms)\n",
            self.script.verdict.render(),
            self.duration_ms
        ));
        s
    }
}
