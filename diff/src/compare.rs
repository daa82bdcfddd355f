//! Comparison: the model's view of an exported walk (its state after every asserted step) and
//! the kernel's (tcp_info, undo counters and segments at the same script lines), compared field
//! by field up to the first divergence.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use trc_kernel::{RunReport, TraceEvent};
use trc_model::mib::Mib;
use trc_pkt::ast::{Direction, StatementKind};
use trc_trace::export::Exported;
use trc_trace::MSS;

/// Compared fields, in report order.
pub const FIELDS: &[&str] = &[
    "segments",
    "ca_state",
    "cwnd",
    "ssthresh",
    "unacked",
    "sacked",
    "lost",
    "retrans",
    "total_retrans",
    "counters",
];

/// An outbound segment this far (ms) outside its due time, with nothing else wrong, is timing
/// noise (HZ=250 timers, the kernel's srtt); farther, a different timer sent it.
pub const AMBIGUOUS_OFFSET_MS: f64 = 100.0;

/// The MIB counters compared: every counter the model maintains (`trc_model::mib`).
pub fn counters() -> impl Iterator<Item = &'static str> {
    Mib::ALL.iter().map(|m| m.name())
}

/// What one side shows at one step.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Obs {
    /// Segments sent during the step: (segment index, retransmission?).
    pub segments: Vec<(u32, bool)>,
    pub ca_state: u8,
    pub cwnd: u32,
    pub ssthresh: u32,
    pub unacked: u32,
    pub sacked: u32,
    pub lost: u32,
    pub retrans: u32,
    pub total_retrans: u32,
    /// Cumulative MIB counters, in [`counters`] order.
    pub counters: Vec<i64>,
}

impl Obs {
    fn field(&self, f: &str) -> String {
        match f {
            "segments" => {
                let v: Vec<String> = self
                    .segments
                    .iter()
                    .map(|(k, rtx)| {
                        format!(
                            "{}{}",
                            trc_trace::seq_bytes(*k),
                            if *rtx { "R" } else { "" }
                        )
                    })
                    .collect();
                format!("[{}]", v.join(" "))
            }
            "ca_state" => ["Open", "Disorder", "CWR", "Recovery", "Loss"]
                .get(self.ca_state as usize)
                .map(|s| s.to_string())
                .unwrap_or_else(|| self.ca_state.to_string()),
            "cwnd" => self.cwnd.to_string(),
            "ssthresh" => self.ssthresh.to_string(),
            "unacked" => self.unacked.to_string(),
            "sacked" => self.sacked.to_string(),
            "lost" => self.lost.to_string(),
            "retrans" => self.retrans.to_string(),
            "total_retrans" => self.total_retrans.to_string(),
            "counters" => {
                let v: Vec<String> = counters()
                    .zip(&self.counters)
                    .filter(|(_, v)| **v != 0)
                    .map(|(n, v)| {
                        format!(
                            "{}={v}",
                            n.trim_start_matches("TcpExt").trim_start_matches("TCP")
                        )
                    })
                    .collect();
                format!("{{{}}}", v.join(","))
            }
            _ => String::new(),
        }
    }
}

/// One compared step of a scenario.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StepView {
    /// Step index in the walk (0 = initial flight; step k follows action k-1).
    pub step: usize,
    /// Script line of the step's first assert.
    pub line: u32,
    pub event: String,
    pub model: Obs,
}

/// Per-step rtx classification: a segment below the highest end sent so far is a retransmission.
fn classify(segs: &mut [(u32, bool)], hi: &mut u32) {
    for s in segs.iter_mut() {
        s.1 = s.0 < *hi;
        *hi = (*hi).max(s.0 + 1);
    }
}

/// The model's side of an exported walk: one view per asserted step.
pub fn model_view(x: &Exported) -> Result<Vec<StepView>, crate::TrialError> {
    let script = trc_pkt::parse(&x.pkt, "scenario.pkt")?;
    // Step of each line, from the `// step N (` comments.
    let mut step_of_line = vec![0usize; x.pkt.lines().count() + 2];
    let mut cur = 0usize;
    for (i, l) in x.pkt.lines().enumerate() {
        if let Some(rest) = l.strip_prefix("// step ") {
            if let Some(n) = rest.split(' ').next().and_then(|n| n.parse().ok()) {
                cur = n;
            }
        }
        step_of_line[i + 1] = cur;
    }
    let mut views: Vec<StepView> = Vec::new();
    let mut pending: Vec<(u32, bool)> = Vec::new();
    let mut hi = 0u32;
    for st in &script.statements {
        match &st.kind {
            StatementKind::Packet(p)
                if p.direction == Direction::Out && p.len > 0 && !p.flags.syn =>
            {
                let first = (p.seq - 1) / MSS;
                for k in 0..(p.len / MSS) {
                    pending.push((first + k, false));
                }
            }
            StatementKind::Python(code) if trc_pkt::python::mentions(code, "tcpi_ca_state") => {
                let step = step_of_line.get(st.line as usize).copied().unwrap_or(0);
                let ts = x
                    .trace
                    .steps
                    .get(step)
                    .ok_or(crate::TrialError::MissingStep {
                        line: st.line,
                        step,
                    })?;
                let s = &ts.state.sender;
                let mut segs = std::mem::take(&mut pending);
                classify(&mut segs, &mut hi);
                views.push(StepView {
                    step,
                    line: st.line,
                    event: ts.event.clone(),
                    model: Obs {
                        segments: segs,
                        ca_state: s.ca_state as u8,
                        cwnd: s.cwnd,
                        ssthresh: s.ssthresh,
                        unacked: s.packets_out,
                        sacked: s.sacked_out,
                        lost: s.lost_out,
                        retrans: s.retrans_out,
                        total_retrans: s.total_retrans,
                        counters: Mib::ALL.iter().map(|m| ts.mib.get(*m) as i64).collect(),
                    },
                });
            }
            _ => {}
        }
    }
    Ok(views)
}

/// The kernel's side: the observation at each view's assert line, and a timing problem if any.
pub fn kernel_view(k: &RunReport, views: &[StepView]) -> (Vec<Option<Obs>>, Vec<(u32, String)>) {
    // Timing problems, by script line (the first one up to the first divergence makes a run
    // ambiguous: see `trial`).
    let mut ambiguous: Vec<(u32, String)> = Vec::new();
    for l in &k.script.lines {
        if l.status == trc_kernel::Status::Fail && l.kind == trc_kernel::LineKind::PacketOut {
            let m = l.message.clone().unwrap_or_default();
            // Only a modest offset is ambiguous; a segment hundreds of ms off was sent by a
            // different timer (a decision), and the comparison shows it.
            let modest = l.offset_ms.is_some_and(|o| o.abs() <= AMBIGUOUS_OFFSET_MS);
            if modest && m.split("; ").all(|e| e.starts_with("timing error:")) {
                ambiguous.push((
                    l.line,
                    format!(
                        "line {}: outbound segment outside the timing tolerance ({m})",
                        l.line
                    ),
                ));
            }
        }
        if l.kind == trc_kernel::LineKind::PacketIn && l.offset_ms.is_some_and(|o| o > 10.0) {
            ambiguous.push((
                l.line,
                format!(
                    "line {}: inbound segment injected {:.1} ms late",
                    l.line,
                    l.offset_ms.unwrap()
                ),
            ));
        }
    }
    if k.script.interrupted {
        ambiguous.push((0, "run interrupted".into()));
    }
    // Outbound data segments in time order.
    let mut outs: Vec<(f64, u32, u32)> = Vec::new();
    let mut snaps: HashMap<u32, (f64, &trc_kernel::TcpInfoSnapshot, &BTreeMap<String, i64>)> =
        HashMap::new();
    for ev in &k.trace {
        match ev {
            TraceEvent::Outbound { t_ms, segment, .. }
                if segment.len > 0 && !segment.flags.syn() =>
            {
                outs.push((*t_ms, segment.seq, segment.len as u32))
            }
            TraceEvent::TcpInfo {
                t_ms,
                line,
                info,
                counters,
            } => {
                snaps.entry(*line).or_insert((*t_ms, info, counters));
            }
            _ => {}
        }
    }
    outs.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal));
    let mut res = Vec::new();
    let mut oi = 0;
    let mut hi = 0u32;
    for v in views {
        let Some((t, info, k_counters)) = snaps.get(&v.line) else {
            res.push(None);
            continue;
        };
        let mut segs = Vec::new();
        while oi < outs.len() && outs[oi].0 <= *t {
            let (_, seq, len) = outs[oi];
            let first = seq.wrapping_sub(1) / MSS;
            for j in 0..len.div_ceil(MSS) {
                segs.push((first + j, false));
            }
            oi += 1;
        }
        classify(&mut segs, &mut hi);
        res.push(Some(Obs {
            segments: segs,
            ca_state: info.ca_state,
            cwnd: info.snd_cwnd,
            ssthresh: info.snd_ssthresh,
            unacked: info.unacked,
            sacked: info.sacked,
            lost: info.lost,
            retrans: info.retrans,
            total_retrans: info.total_retrans,
            counters: counters()
                .map(|c| k_counters.get(c).copied().unwrap_or(0))
                .collect(),
        }));
    }
    (res, ambiguous)
}

/// Where a scenario first diverges.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Divergence {
    pub step: usize,
    pub line: u32,
    pub event: String,
    /// (field, model, kernel)
    pub fields: Vec<(String, String, String)>,
}

impl Divergence {
    pub fn field_names(&self) -> Vec<String> {
        self.fields.iter().map(|f| f.0.clone()).collect()
    }
    pub fn describe(&self) -> String {
        let f: Vec<String> = self
            .fields
            .iter()
            .map(|(n, m, k)| format!("{n}: model {m}, kernel {k}"))
            .collect();
        format!(
            "step {} (line {}, {}): {}",
            self.step,
            self.line,
            self.event,
            f.join("; ")
        )
    }
}

/// Per-field counts of one comparison (up to and including the first divergence).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Comparison {
    /// field → (steps agreeing, steps compared)
    pub fields: BTreeMap<String, (u64, u64)>,
    pub steps_compared: u64,
    /// Asserted steps after the first divergence (not compared).
    pub steps_skipped: u64,
    pub divergence: Option<Divergence>,
}

pub fn compare(views: &[StepView], kernel: &[Option<Obs>]) -> Comparison {
    let mut c = Comparison::default();
    for f in FIELDS {
        c.fields.insert(f.to_string(), (0, 0));
    }
    for (i, (v, k)) in views.iter().zip(kernel).enumerate() {
        let Some(k) = k else {
            c.divergence = Some(Divergence {
                step: v.step,
                line: v.line,
                event: v.event.clone(),
                fields: vec![(
                    "tcp_info".into(),
                    "a connection".into(),
                    "no snapshot".into(),
                )],
            });
            c.steps_skipped = (views.len() - i - 1) as u64;
            break;
        };
        c.steps_compared += 1;
        let mut diff = Vec::new();
        for f in FIELDS {
            let (m, kv) = (v.model.field(f), k.field(f));
            let e = c.fields.get_mut(*f).unwrap();
            e.1 += 1;
            if m == kv {
                e.0 += 1;
            } else {
                diff.push((f.to_string(), m, kv));
            }
        }
        if !diff.is_empty() {
            c.divergence = Some(Divergence {
                step: v.step,
                line: v.line,
                event: v.event.clone(),
                fields: diff,
            });
            c.steps_skipped = (views.len() - i - 1) as u64;
            break;
        }
    }
    c
}
