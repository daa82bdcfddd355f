//! What a kernel run observed, in the shape the monitors read: the data the kernel sent (with
//! its TSval and whether it was a retransmission), the ACKs the script injected (cumulative ACK,
//! SACK and DSACK blocks, TSecr), and one step per script statement with the connection's
//! `tcp_info` and the MIB counters' deltas.

use std::collections::BTreeMap;
use trc_kernel::packet::WireOption;
use trc_kernel::{RunReport, TcpInfoSnapshot, TraceEvent};
use trc_model::seq::{after, before};

/// `tcpi_ca_state` values (`enum tcp_ca_state`).
pub const CA_OPEN: u8 = 0;
pub const CA_DISORDER: u8 = 1;
pub const CA_CWR: u8 = 2;
pub const CA_RECOVERY: u8 = 3;
pub const CA_LOSS: u8 = 4;

/// `TCP_INFINITE_SSTHRESH`.
pub const INFINITE_SSTHRESH: u32 = 0x7fff_ffff;

/// A data segment the kernel sent (script sequence space).
#[derive(Clone, Debug)]
pub struct Send {
    pub t_ms: f64,
    pub seq: u32,
    pub end: u32,
    pub tsval: Option<u32>,
    /// It (re)sent data below the highest end sent before it.
    pub retrans: bool,
}

/// An ACK the script injected (script sequence space).
#[derive(Clone, Debug)]
pub struct Ack {
    pub t_ms: f64,
    pub line: u32,
    pub ack: u32,
    /// SACK blocks other than the DSACK one.
    pub sacks: Vec<(u32, u32)>,
    /// The first block when it reports a duplicate (RFC 2883: below the ACK, or inside the
    /// second block).
    pub dsack: Option<(u32, u32)>,
    pub tsecr: Option<u32>,
}

/// One script statement after which the kernel's state was read.
#[derive(Clone, Debug)]
pub struct Step {
    pub line: u32,
    pub t_ms: f64,
    pub info: TcpInfoSnapshot,
    /// MIB counters' deltas since the run started (nstat names).
    pub counters: BTreeMap<String, i64>,
    /// Indices into [`KTrace::acks`] of the ACKs injected by this statement.
    pub acks: Vec<usize>,
}

impl Step {
    pub fn counter(&self, name: &str) -> i64 {
        self.counters.get(name).copied().unwrap_or(0)
    }
}

/// The observations of one run.
#[derive(Clone, Debug, Default)]
pub struct KTrace {
    /// SACK negotiated (both SYNs carried sackOK).
    pub sack: bool,
    /// Timestamps negotiated.
    pub ts: bool,
    pub sends: Vec<Send>,
    pub acks: Vec<Ack>,
    pub steps: Vec<Step>,
    /// The connection's congestion control (`TCP_CONGESTION`), when the runner read it.
    pub cc: Option<String>,
}

fn ts_of(opts: &[WireOption]) -> Option<(u32, u32)> {
    opts.iter().find_map(|o| match o {
        WireOption::Timestamp { val, ecr } => Some((*val, *ecr)),
        _ => None,
    })
}

impl KTrace {
    /// Reads a run's trace.
    pub fn from_report(r: &RunReport) -> KTrace {
        let mut k = KTrace {
            cc: r.congestion_control.clone(),
            ..KTrace::default()
        };
        let (mut peer_sack, mut peer_ts, mut our_sack, mut our_ts) = (false, false, false, false);
        let mut max_end: Option<u32> = None;
        let mut pending: Vec<usize> = Vec::new();
        for ev in &r.trace {
            match ev {
                TraceEvent::Inbound {
                    t_ms,
                    line,
                    segment: s,
                } => {
                    if s.flags.syn() {
                        peer_sack = s.options.iter().any(|o| matches!(o, WireOption::SackOk));
                        peer_ts = ts_of(&s.options).is_some();
                        continue;
                    }
                    if !s.flags.ack() {
                        continue;
                    }
                    // Live SACK blocks → script space: the same offset as the ACK field's.
                    let off = s.live_ack.wrapping_sub(s.ack);
                    let mut blocks: Vec<(u32, u32)> = s
                        .options
                        .iter()
                        .filter_map(|o| match o {
                            WireOption::Sack { blocks } => Some(blocks.clone()),
                            _ => None,
                        })
                        .flatten()
                        .map(|(a, b)| (a.wrapping_sub(off), b.wrapping_sub(off)))
                        .collect();
                    let mut dsack = None;
                    if let Some(&(a, b)) = blocks.first() {
                        let below = !after(b, s.ack);
                        let inside = blocks
                            .get(1)
                            .is_some_and(|&(c, d)| !before(a, c) && !after(b, d));
                        if below || inside {
                            dsack = Some((a, b));
                            blocks.remove(0);
                        }
                    }
                    k.acks.push(Ack {
                        t_ms: *t_ms,
                        line: *line,
                        ack: s.ack,
                        sacks: blocks,
                        dsack,
                        tsecr: ts_of(&s.options).map(|t| t.1),
                    });
                    pending.push(k.acks.len() - 1);
                }
                TraceEvent::Outbound {
                    t_ms, segment: s, ..
                } => {
                    if s.flags.syn() {
                        our_sack = s.options.iter().any(|o| matches!(o, WireOption::SackOk));
                        our_ts = ts_of(&s.options).is_some();
                        continue;
                    }
                    if s.len == 0 {
                        continue;
                    }
                    let retrans = max_end.is_some_and(|m| before(s.seq, m));
                    if max_end.is_none_or(|m| after(s.end_seq, m)) {
                        max_end = Some(s.end_seq);
                    }
                    k.sends.push(Send {
                        t_ms: *t_ms,
                        seq: s.seq,
                        end: s.end_seq,
                        tsval: ts_of(&s.options).map(|t| t.0),
                        retrans,
                    });
                }
                TraceEvent::TcpInfo {
                    t_ms,
                    line,
                    info,
                    counters,
                } => {
                    k.steps.push(Step {
                        line: *line,
                        t_ms: *t_ms,
                        info: info.clone(),
                        counters: counters.clone(),
                        acks: std::mem::take(&mut pending),
                    });
                }
            }
        }
        k.sends.sort_by(|a, b| a.t_ms.total_cmp(&b.t_ms));
        k.sack = peer_sack && our_sack;
        k.ts = peer_ts && our_ts;
        k
    }

    /// The counter's change at step `i` (from the step before, or from the start).
    pub fn delta(&self, i: usize, name: &str) -> i64 {
        let now = self.steps[i].counter(name);
        let before = if i == 0 {
            0
        } else {
            self.steps[i - 1].counter(name)
        };
        now - before
    }

    /// The highest cumulative ACK injected before time `t` (1 if none: the first data byte).
    pub fn snd_una_before(&self, t: f64) -> u32 {
        let mut una = 1u32;
        for a in self.acks.iter().filter(|a| a.t_ms < t) {
            if after(a.ack, una) {
                una = a.ack;
            }
        }
        una
    }

    /// The highest end of data sent before time `t` (`snd_nxt`; 1 if nothing was sent).
    pub fn snd_nxt_before(&self, t: f64) -> u32 {
        let mut nxt = 1u32;
        for s in self.sends.iter().filter(|s| s.t_ms < t) {
            if after(s.end, nxt) {
                nxt = s.end;
            }
        }
        nxt
    }

    /// When step `i`'s own events began: its first ACK's injection, else its first send, else
    /// the previous step's snapshot.
    pub fn event_time(&self, i: usize) -> f64 {
        let prev = if i == 0 { 0.0 } else { self.steps[i - 1].t_ms };
        if let Some(&a) = self.steps[i].acks.first() {
            return self.acks[a].t_ms;
        }
        self.sends
            .iter()
            .find(|s| s.t_ms > prev && s.t_ms <= self.steps[i].t_ms)
            .map_or(prev, |s| s.t_ms)
    }

    /// Whether `[a, b)` was covered (cumulatively or by a SACK block) by an ACK injected before `t`.
    pub fn covered_before(&self, a: u32, b: u32, t: f64) -> bool {
        self.acks
            .iter()
            .filter(|x| x.t_ms < t)
            .any(|x| covers(x, a, b))
    }

    /// Segments newly delivered at step `i` (from `tcpi_delivered`).
    pub fn delivered_delta(&self, i: usize) -> u32 {
        let before = if i == 0 {
            0
        } else {
            self.steps[i - 1].info.delivered
        };
        self.steps[i].info.delivered.saturating_sub(before)
    }
}

/// Whether ACK `x` reports `[a, b)` as received (cumulatively or in a SACK block).
pub fn covers(x: &Ack, a: u32, b: u32) -> bool {
    !before(x.ack, b) || x.sacks.iter().any(|&(c, d)| !after(c, a) && !before(d, b))
}

/// Whether ACK `x`'s DSACK block overlaps `[a, b)`.
pub fn dsacks(x: &Ack, a: u32, b: u32) -> bool {
    x.dsack.is_some_and(|(c, d)| before(c, b) && before(a, d))
}

/// TS values in wrapping order: `x` at or after `y`.
pub fn ts_at_or_after(x: u32, y: u32) -> bool {
    (x.wrapping_sub(y) as i32) >= 0
}
