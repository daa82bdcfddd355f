//! Differential testing: the model against the real kernel (`trc diff`).
//!
//! A *scenario* is a seeded random walk over the model's own enabled environment actions
//! (deliveries in and out of order, drops, lost ACKs, RTO/TLP/RACK timer expiries, writes), from
//! a randomly drawn configuration (SACK, timestamps, segments, initcwnd, budgets, cubic/reno).
//! Actions a real kernel cannot be made to reproduce are never chosen: TSQ fills (a kernel
//! cannot be forced to hold a retransmission), ECE-marked ACKs (the exported handshake does not
//! negotiate ECN), late deliveries and idle writes (not exported). Every prefix of the walk must
//! export ([`export::export_walk`]) with inbound ACKs spaced `gap_ms` apart and at least
//! `margin_ms` away from a pending timer, so that the script means the same thing at HZ=250.
//!
//! The exported script runs on the kernel ([`trc_kernel::run_script`]); at every step that the
//! script asserts (every step with an inbound ACK, write or timer transmission) the kernel's
//! `tcp_info`, undo counters and the segments it sent since the previous step are compared with
//! the model's state after that step. Comparison stops at the first diverging step (later
//! inbound ACKs were computed from the model's behaviour and no longer mean anything).
//!
//! Timing: a kernel run in which an outbound segment left outside the tolerance, or an inbound
//! segment was injected late, is *ambiguous*; a disagreement is only reported if a rerun gives
//! the same first divergence with no timing problem. A scenario that stays ambiguous is *flaky*
//! and excluded from the agreement figures (listed separately).

use crate::export::{self, Exported};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use stateright::Model;
use trc_kernel::{RunReport, TraceEvent};
use trc_model::model::{Action, State, TcpModel};
use trc_model::state::UndoKind;
use trc_model::{CcKind, Config, Profile, SackMode};
use trc_pkt::ast::{Direction, PyStmt, StatementKind};

/// Compared fields, in report order.
pub const FIELDS: &[&str] = &["segments", "ca_state", "cwnd", "ssthresh", "unacked", "sacked", "lost", "retrans", "total_retrans", "undo_counters"];

/// An outbound segment this far (ms) outside its due time, with nothing else wrong, is timing
/// noise (HZ=250 timers, the kernel's srtt); farther, a different timer sent it.
pub const AMBIGUOUS_OFFSET_MS: f64 = 100.0;

/// The MIB counters compared (model: `UndoEvent` kinds).
pub const COUNTERS: &[&str] = &["TcpExtTCPFullUndo", "TcpExtTCPPartialUndo", "TcpExtTCPLossUndo", "TcpExtTCPDSACKUndo", "TcpExtTCPSpuriousRTOs"];

/// splitmix64: a tiny deterministic PRNG (same seed → same scenarios on every platform).
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u32, hi: u32) -> u32 {
        lo + (self.next_u64() % (hi - lo + 1) as u64) as u32
    }
    pub fn chance(&mut self, pct: u32) -> bool {
        self.range(0, 99) < pct
    }
}

/// How scenarios are drawn.
#[derive(Clone, Debug)]
pub struct GenOptions {
    /// `Some(b)`: every scenario has SACK `b`; `None`: drawn per scenario.
    pub sack: Option<bool>,
    /// `Some(b)`: timestamps `b`; `None`: drawn per scenario.
    pub ts: Option<bool>,
    /// Longest walk (actions).
    pub max_steps: usize,
    /// Minimum spacing of inbound ACKs in the script (ms).
    pub gap_ms: u32,
    /// Minimum distance of an inbound ACK or write from a pending timer's deadline (ms).
    pub margin_ms: u32,
    /// RTT samples up to `rtt_ms` + this keep the kernel's RTO/TLP timeouts comparable with the
    /// model's (constant srtt); after a larger one no RTO or TLP fires in the walk.
    pub srtt_slack_ms: u32,
}

impl Default for GenOptions {
    fn default() -> Self {
        GenOptions { sack: None, ts: None, max_steps: 24, gap_ms: 3, margin_ms: 15, srtt_slack_ms: 25 }
    }
}

/// One generated scenario.
#[derive(Clone, Debug, Serialize)]
pub struct Scenario {
    pub index: usize,
    /// The scenario's own seed (derived from the run seed and the index).
    pub seed: u64,
    pub cfg: Config,
    pub sack: bool,
    pub actions: Vec<Action>,
}

impl Scenario {
    pub fn name(&self) -> String {
        format!("{:04}-{}-{}", self.index, if self.sack { "sack" } else { "nosack" }, if self.cfg.timestamps { "ts" } else { "nots" })
    }
    pub fn model(&self, profile: &Profile) -> TcpModel {
        TcpModel::new(self.cfg.clone(), profile.clone())
    }
}

/// Seed of scenario `index` of a run with seed `seed` (independent of the number of scenarios).
pub fn scenario_seed(seed: u64, index: usize) -> u64 {
    let mut r = Rng::new(seed ^ (index as u64).wrapping_mul(0xA076_1D64_78BD_642F));
    r.next_u64()
}

/// Whether the exporter can turn `a` into something a real kernel reproduces.
pub fn kernel_reproducible(a: &Action) -> bool {
    !matches!(a, Action::TsqFill | Action::TsqDrain | Action::DeliverEce { .. } | Action::DeliverLate { .. } | Action::WriteAfter { .. })
}

/// The configuration of a scenario (bounds a real kernel reproduces within the timing margin).
pub fn draw_config(r: &mut Rng, g: &GenOptions) -> (Config, bool) {
    let sack = g.sack.unwrap_or_else(|| r.chance(50));
    let timestamps = g.ts.unwrap_or_else(|| r.chance(50));
    let segments = r.range(2, 14) as u8;
    let cfg = Config {
        segments,
        extra_writes: r.range(0, 3) as u8,
        initcwnd: r.range(2, 10),
        max_losses: r.range(0, 4) as u8,
        max_ack_losses: r.range(0, 3) as u8,
        max_reorder: r.range(0, 3) as u8,
        max_rtos: r.range(0, 2) as u8,
        max_tlps: r.range(0, 2) as u8,
        max_tsq: 0,
        max_ece: 0,
        horizon_ms: 3000,
        rtt_ms: 50,
        sack: if sack { SackMode::Sack } else { SackMode::NoSack },
        timestamps,
        frto: r.chance(85),
        tlp: r.chance(85),
        dsack: true,
        ecn: false,
        cc: if r.chance(20) { CcKind::Reno } else { CcKind::Cubic },
        ..Config::default()
    };
    (cfg, sack)
}

fn weight(a: &Action, flight: usize) -> u32 {
    match a {
        Action::Deliver { pkt: 0 } => 40,
        Action::Deliver { .. } => 8,
        Action::DeliverAckLost { .. } => 4,
        Action::Drop { .. } => (24 / flight.max(1) as u32).max(2),
        Action::Rto | Action::Tlp | Action::Reo => 12,
        Action::Write => 4,
        _ => 0,
    }
}

/// Whether delivering `a` gives the kernel an RTT sample far above the path RTT (a packet held in
/// the network, or a TSecr echoing an old TSval). The model's srtt (hence RTO and TLP timeout)
/// is constant (docs/model.md); the kernel's grows with such a sample, so later RTO/TLP expiries
/// would no longer happen at comparable times. Conservative: any newly ACKed or SACKed segment
/// sent more than `rtt + slack` ago, or an advancing ACK whose TSecr is that old.
pub fn disturbs_srtt(model: &TcpModel, s: &State, a: &Action, slack_ms: u32) -> bool {
    let Action::Deliver { pkt } = a else { return false };
    let (t, ack) = model.ack_for(s, *pkt as usize);
    let lim = model.cfg.rtt_ms + slack_ms;
    let snd = &s.sender;
    let isn = model.cfg.isn;
    let old = |seq: u32| snd.segs.get(seq.wrapping_sub(isn) as usize).is_some_and(|g| t.saturating_sub(g.xmit) > lim);
    let advances = trc_model::seq::after(ack.ack, snd.snd_una);
    if advances {
        if let (true, Some(ecr)) = (snd.ts_ok, ack.tsecr) {
            if t.saturating_sub(ecr.wrapping_sub(model.cfg.ts_base)) > lim {
                return true;
            }
        }
        let mut q = snd.snd_una;
        while trc_model::seq::before(q, ack.ack) {
            if old(q) {
                return true;
            }
            q = q.wrapping_add(1);
        }
    }
    for &(a0, b0) in &ack.sacks {
        let mut q = a0;
        while trc_model::seq::before(q, b0) {
            let sacked = snd.segs.get(q.wrapping_sub(isn) as usize).is_some_and(|g| g.tags & trc_model::state::tag::S != 0);
            if !sacked && !trc_model::seq::before(q, ack.ack) && old(q) {
                return true;
            }
            q = q.wrapping_add(1);
        }
    }
    false
}

/// Generates scenario `index` of the run with seed `seed`.
pub fn generate(profile: &Profile, seed: u64, index: usize, g: &GenOptions) -> Scenario {
    let sseed = scenario_seed(seed, index);
    let mut r = Rng::new(sseed);
    let (cfg, sack) = draw_config(&mut r, g);
    let model = TcpModel::new(cfg.clone(), profile.clone());
    let mut s: State = model.init_states().swap_remove(0);
    let mut actions: Vec<Action> = Vec::new();
    // Once the kernel's srtt may differ from the model's constant one, no RTO/TLP may fire.
    let mut srtt_disturbed = false;
    while actions.len() < g.max_steps {
        let mut cands = Vec::new();
        model.actions(&s, &mut cands);
        cands.retain(kernel_reproducible);
        if srtt_disturbed {
            cands.retain(|a| !matches!(a, Action::Rto | Action::Tlp));
        }
        let mut chosen = None;
        while !cands.is_empty() {
            let ws: Vec<u32> = cands.iter().map(|a| weight(a, s.flight.len())).collect();
            let total: u32 = ws.iter().sum();
            if total == 0 {
                break;
            }
            let mut x = r.range(0, total - 1);
            let mut i = 0;
            while x >= ws[i] {
                x -= ws[i];
                i += 1;
            }
            let a = cands.remove(i);
            let mut walk = actions.clone();
            walk.push(a);
            if export::export_walk(&model, 0, &walk, "probe", g.gap_ms, g.margin_ms).is_ok() {
                chosen = Some(a);
                break;
            }
        }
        let Some(a) = chosen else { break };
        srtt_disturbed |= disturbs_srtt(&model, &s, &a, g.srtt_slack_ms);
        match model.next_state(&s, a) {
            Some(n) => s = n,
            None => break,
        }
        actions.push(a);
        // An idle connection with nothing left to do ends the walk early, sometimes.
        if s.flight.is_empty() && s.sender.timer.is_none() && r.chance(50) {
            break;
        }
    }
    Scenario { index, seed: sseed, cfg, sack, actions }
}

/// Applies `actions` leniently (skipping any that is not enabled) and keeps the longest prefix
/// that exports; the normalized walk.
pub fn normalize(model: &TcpModel, actions: &[Action], g: &GenOptions) -> Vec<Action> {
    let mut s: State = model.init_states().swap_remove(0);
    let mut out = Vec::new();
    let mut disturbed = false;
    for a in actions {
        let mut en = Vec::new();
        model.actions(&s, &mut en);
        if !en.contains(a) || (disturbed && matches!(a, Action::Rto | Action::Tlp)) {
            continue;
        }
        disturbed |= disturbs_srtt(model, &s, a, g.srtt_slack_ms);
        if let Some(n) = model.next_state(&s, *a) {
            s = n;
            out.push(*a);
        }
    }
    loop {
        match export::export_walk(model, 0, &out, "probe", g.gap_ms, g.margin_ms) {
            Ok(_) => return out,
            Err((step, _)) if step >= 1 && step <= out.len() => out.truncate(step - 1),
            Err(_) => {
                out.clear();
                return out;
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Observations and comparison

/// What one side shows at one step.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
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
    /// Cumulative undo counters, in [`COUNTERS`] order.
    pub undo_counters: Vec<i64>,
}

impl Obs {
    fn field(&self, f: &str) -> String {
        match f {
            "segments" => {
                let v: Vec<String> = self.segments.iter().map(|(k, rtx)| format!("{}{}", crate::seq_bytes(*k), if *rtx { "R" } else { "" })).collect();
                format!("[{}]", v.join(" "))
            }
            "ca_state" => ["Open", "Disorder", "CWR", "Recovery", "Loss"].get(self.ca_state as usize).map(|s| s.to_string()).unwrap_or_else(|| self.ca_state.to_string()),
            "cwnd" => self.cwnd.to_string(),
            "ssthresh" => self.ssthresh.to_string(),
            "unacked" => self.unacked.to_string(),
            "sacked" => self.sacked.to_string(),
            "lost" => self.lost.to_string(),
            "retrans" => self.retrans.to_string(),
            "total_retrans" => self.total_retrans.to_string(),
            "undo_counters" => {
                let v: Vec<String> = COUNTERS.iter().zip(&self.undo_counters).filter(|(_, v)| **v != 0).map(|(n, v)| format!("{}={v}", n.trim_start_matches("TcpExtTCP"))).collect();
                format!("{{{}}}", v.join(","))
            }
            _ => String::new(),
        }
    }
}

/// One compared step of a scenario.
#[derive(Clone, Debug, Serialize)]
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

fn undo_vec(kinds: &BTreeMap<&'static str, i64>) -> Vec<i64> {
    COUNTERS.iter().map(|c| kinds.get(c).copied().unwrap_or(0)).collect()
}

/// The model's side of an exported walk: one view per asserted step.
pub fn model_view(x: &Exported) -> Result<Vec<StepView>, String> {
    let script = trc_pkt::parse(&x.pkt, "scenario.pkt").map_err(|e| e.to_string())?;
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
    let mut counters: BTreeMap<&'static str, i64> = BTreeMap::new();
    let mut counted = 0usize; // steps whose undo events are in `counters`
    for st in &script.statements {
        match &st.kind {
            StatementKind::Packet(p) if p.direction == Direction::Out && p.len > 0 && !p.flags.syn => {
                let first = (p.seq - 1) / crate::MSS;
                for k in 0..(p.len / crate::MSS) {
                    pending.push((first + k, false));
                }
            }
            StatementKind::Python(stmts) if stmts.iter().any(|s| matches!(s, PyStmt::Assert { field, .. } if field == "tcpi_ca_state")) => {
                let step = step_of_line.get(st.line as usize).copied().unwrap_or(0);
                let ts = x.trace.steps.get(step).ok_or_else(|| format!("line {}: step {step} not in the trace", st.line))?;
                while counted <= step {
                    for u in &x.trace.steps[counted].state.sender.ghost.ev.undos {
                        let names: &[&'static str] = match u.kind {
                            UndoKind::Full => &["TcpExtTCPFullUndo"],
                            UndoKind::Partial => &["TcpExtTCPPartialUndo"],
                            UndoKind::Loss | UndoKind::LossRecovered => &["TcpExtTCPLossUndo"],
                            UndoKind::Frto => &["TcpExtTCPLossUndo", "TcpExtTCPSpuriousRTOs"],
                            UndoKind::Dsack => &["TcpExtTCPDSACKUndo"],
                        };
                        for n in names {
                            *counters.entry(n).or_default() += 1;
                        }
                    }
                    counted += 1;
                }
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
                        undo_counters: undo_vec(&counters),
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
    for l in &k.lines {
        if l.status == trc_kernel::Status::Fail && l.kind == trc_kernel::LineKind::PacketOut {
            let m = l.message.clone().unwrap_or_default();
            // Only a modest offset is ambiguous; a segment hundreds of ms off was sent by a
            // different timer (a decision), and the comparison shows it.
            let modest = l.offset_ms.is_some_and(|o| o.abs() <= AMBIGUOUS_OFFSET_MS);
            if modest && m.split("; ").all(|e| e.starts_with("timing:")) {
                ambiguous.push((l.line, format!("line {}: outbound segment outside the timing tolerance ({m})", l.line)));
            }
        }
        if l.kind == trc_kernel::LineKind::PacketIn && l.offset_ms.is_some_and(|o| o > 10.0) {
            ambiguous.push((l.line, format!("line {}: inbound segment injected {:.1} ms late", l.line, l.offset_ms.unwrap())));
        }
    }
    if k.interrupted {
        ambiguous.push((0, "run interrupted".into()));
    }
    // Outbound data segments in time order.
    let mut outs: Vec<(f64, u32, u32)> = Vec::new();
    let mut snaps: HashMap<u32, (f64, &trc_kernel::TcpInfoSnapshot, &BTreeMap<String, i64>)> = HashMap::new();
    for ev in &k.trace {
        match ev {
            TraceEvent::Outbound { t_ms, segment, .. } if segment.len > 0 && !segment.flags.contains('S') => outs.push((*t_ms, segment.seq, segment.len as u32)),
            TraceEvent::TcpInfo { t_ms, line, info, counters } => {
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
        let Some((t, info, counters)) = snaps.get(&v.line) else {
            res.push(None);
            continue;
        };
        let mut segs = Vec::new();
        while oi < outs.len() && outs[oi].0 <= *t {
            let (_, seq, len) = outs[oi];
            let first = seq.wrapping_sub(1) / crate::MSS;
            for j in 0..len.div_ceil(crate::MSS) {
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
            undo_counters: COUNTERS.iter().map(|c| counters.get(*c).copied().unwrap_or(0)).collect(),
        }));
    }
    (res, ambiguous)
}

/// Where a scenario first diverges.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
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
        let f: Vec<String> = self.fields.iter().map(|(n, m, k)| format!("{n}: model {m}, kernel {k}")).collect();
        format!("step {} (line {}, {}): {}", self.step, self.line, self.event, f.join("; "))
    }
}

/// Per-field counts of one comparison (up to and including the first divergence).
#[derive(Clone, Debug, Default, Serialize)]
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
            c.divergence = Some(Divergence { step: v.step, line: v.line, event: v.event.clone(), fields: vec![("tcp_info".into(), "a connection".into(), "no snapshot".into())] });
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
            c.divergence = Some(Divergence { step: v.step, line: v.line, event: v.event.clone(), fields: diff });
            c.steps_skipped = (views.len() - i - 1) as u64;
            break;
        }
    }
    c
}

// ---------------------------------------------------------------------------------------------
// Running scenarios

/// One kernel run of one exported walk.
#[derive(Clone, Debug, Serialize)]
pub struct Trial {
    pub comparison: Comparison,
    pub ambiguous: Option<String>,
}

/// The verdict on one scenario.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Agree,
    Disagree,
    /// Stayed timing-ambiguous over every rerun.
    Flaky,
    /// The kernel could not run it (setup error).
    Error,
}

#[derive(Clone, Debug, Serialize)]
pub struct ScenarioResult {
    pub scenario: Scenario,
    pub verdict: Verdict,
    /// Kernel runs used (1 + reruns).
    pub runs: usize,
    pub trial: Option<Trial>,
    pub note: Option<String>,
    /// Shrunk script of a disagreement, if saved.
    pub saved: Option<String>,
    /// Actions of the shrunk walk.
    pub shrunk_steps: Option<usize>,
}

/// Exports `actions` of `sc`'s configuration.
pub fn export_actions(profile: &Profile, sc: &Scenario, actions: &[Action], g: &GenOptions) -> Result<Exported, String> {
    export::export_walk(&sc.model(profile), 0, actions, &format!("{} seed {:#x}", sc.name(), sc.seed), g.gap_ms, g.margin_ms).map_err(|e| e.1)
}

/// Runs an exported walk once on the kernel and compares it with the model.
pub fn trial(x: &Exported, name: &str) -> Result<Trial, String> {
    let views = model_view(x)?;
    let script = trc_pkt::parse(&x.pkt, name).map_err(|e| e.to_string())?;
    let opts = trc_kernel::RunOptions { script_dir: std::env::temp_dir(), ..Default::default() };
    let k = trc_kernel::run_script(&script, name, &opts).map_err(|e| e.to_string())?;
    if k.congestion_control.as_deref() != Some(if x.trace.config.cc == CcKind::Reno { "reno" } else { "cubic" }) {
        return Err(format!("the connection used {:?}", k.congestion_control));
    }
    let (kobs, problems) = kernel_view(&k, &views);
    let comparison = compare(&views, &kobs);
    // Only timing up to the diverging step's asserts can have caused the divergence. Later
    // lines ran on diverged kernel state: a segment the model expects and the kernel never
    // sends holds the runner for the outbound grace period (~1 s) and segments consumed out of
    // order shift the script's clock, so later injections are "late" because of the
    // divergence, not the other way round.
    let upto = comparison.divergence.as_ref().map_or(u32::MAX, |d| d.line);
    let ambiguous = problems.into_iter().find(|(line, _)| *line <= upto).map(|p| p.1);
    Ok(Trial { comparison, ambiguous })
}

fn same(a: &Trial, b: &Trial) -> bool {
    match (&a.comparison.divergence, &b.comparison.divergence) {
        (Some(x), Some(y)) => x.step == y.step && x.field_names() == y.field_names(),
        _ => false,
    }
}

/// Runs a scenario with the rerun policy: a clean agreement is final; a disagreement must repeat
/// (same step, same fields) without a timing problem; otherwise rerun up to `reruns` times.
pub fn run_scenario(profile: &Profile, sc: &Scenario, g: &GenOptions, reruns: usize) -> ScenarioResult {
    let mut res = ScenarioResult { scenario: sc.clone(), verdict: Verdict::Error, runs: 0, trial: None, note: None, saved: None, shrunk_steps: None };
    let x = match export_actions(profile, sc, &sc.actions, g) {
        Ok(x) => x,
        Err(e) => {
            res.note = Some(format!("export: {e}"));
            return res;
        }
    };
    let mut clean_disagreements: Vec<Trial> = Vec::new();
    let mut last = None;
    for _ in 0..=reruns {
        res.runs += 1;
        let t = match trial(&x, &format!("{}.pkt", sc.name())) {
            Ok(t) => t,
            Err(e) => {
                res.note = Some(format!("kernel: {e}"));
                return res;
            }
        };
        if t.ambiguous.is_none() {
            if t.comparison.divergence.is_none() {
                res.verdict = Verdict::Agree;
                if res.runs > 1 {
                    res.note = Some("agreed on a rerun".into());
                }
                res.trial = Some(t);
                return res;
            }
            if let Some(prev) = clean_disagreements.iter().find(|p| same(p, &t)) {
                let _ = prev;
                res.verdict = Verdict::Disagree;
                res.trial = Some(t);
                return res;
            }
            clean_disagreements.push(t.clone());
        }
        last = Some(t);
    }
    res.verdict = Verdict::Flaky;
    res.note = last.as_ref().and_then(|t| t.ambiguous.clone()).or(Some("disagreements did not repeat".into()));
    res.trial = last;
    res
}

/// Delta debugging (ddmin) of a disagreeing walk: the smallest walk (within `budget` kernel
/// runs) whose first divergence still involves one of `fields`. Returns the walk and its trial.
pub fn shrink(profile: &Profile, sc: &Scenario, g: &GenOptions, fields: &[String], budget: usize, log: &mut dyn FnMut(&str)) -> (Vec<Action>, Option<Trial>) {
    let model = sc.model(profile);
    let mut runs = 0usize;
    let mut cache: HashMap<Vec<Action>, Option<Trial>> = HashMap::new();
    let mut test = |cand: &[Action], runs: &mut usize| -> (Vec<Action>, Option<Trial>) {
        let norm = normalize(&model, cand, g);
        if let Some(r) = cache.get(&norm) {
            return (norm, r.clone());
        }
        if *runs >= budget {
            return (norm, None);
        }
        *runs += 1;
        let r = export_actions(profile, sc, &norm, g).ok().and_then(|x| trial(&x, &format!("{}-shrink.pkt", sc.name())).ok()).filter(|t| {
            t.ambiguous.is_none() && t.comparison.divergence.as_ref().is_some_and(|d| d.fields.iter().any(|f| fields.contains(&f.0)))
        });
        cache.insert(norm.clone(), r.clone());
        (norm, r)
    };
    // Start from the prefix that ends at the diverging step.
    let mut best: Vec<Action> = sc.actions.clone();
    let mut best_trial;
    let (n0, t0) = test(&best, &mut runs);
    if let Some(t) = t0 {
        let step = t.comparison.divergence.as_ref().map(|d| d.step).unwrap_or(best.len());
        best = n0;
        best_trial = Some(t);
        let (n1, t1) = test(&best[..step.min(best.len())], &mut runs);
        if let Some(t) = t1 {
            best = n1;
            best_trial = Some(t);
        }
    } else {
        return (best, None);
    }
    let mut n = 2usize;
    while best.len() >= 2 && runs < budget {
        let chunk = best.len().div_ceil(n);
        let mut reduced = false;
        for i in 0..n {
            let (lo, hi) = (i * chunk, ((i + 1) * chunk).min(best.len()));
            if lo >= hi {
                continue;
            }
            // Complement first (removes a chunk).
            let cand: Vec<Action> = best[..lo].iter().chain(&best[hi..]).copied().collect();
            let (norm, t) = test(&cand, &mut runs);
            if let Some(t) = t {
                if norm.len() < best.len() {
                    log(&format!("    shrink: {} → {} actions", best.len(), norm.len()));
                    best = norm;
                    best_trial = Some(t);
                    n = (n - 1).max(2);
                    reduced = true;
                    break;
                }
            }
        }
        if !reduced {
            if n >= best.len() {
                break;
            }
            n = (2 * n).min(best.len());
        }
    }
    (best, best_trial)
}

/// Options of a differential run.
#[derive(Clone, Debug)]
pub struct DiffOptions {
    pub profile: Profile,
    pub scenarios: usize,
    pub seed: u64,
    pub gen: GenOptions,
    /// Reruns of an ambiguous or disagreeing scenario.
    pub reruns: usize,
    /// Directory for shrunk scripts of disagreements (`None`: not saved, not shrunk).
    pub out: Option<std::path::PathBuf>,
    /// Kernel runs allowed per shrink.
    pub shrink_budget: usize,
    /// Shrink at most this many disagreements per distinct first-divergence signature.
    pub shrink_per_signature: usize,
    /// Write every scenario's script here (`<name>.pkt`), agreeing or not.
    pub keep: Option<std::path::PathBuf>,
    /// Run only these scenario indices of the seed (`None`: `0..scenarios`).
    pub only: Option<Vec<usize>>,
}

impl Default for DiffOptions {
    fn default() -> Self {
        DiffOptions { profile: Profile::linux_6_18(), scenarios: 20, seed: 1, gen: GenOptions::default(), reruns: 2, out: None, shrink_budget: 40, shrink_per_signature: 1, keep: None, only: None }
    }
}

/// The result of a differential run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct DiffReport {
    pub profile: String,
    pub seed: u64,
    pub scenarios: usize,
    pub agree: usize,
    pub disagree: usize,
    pub flaky: usize,
    pub errors: usize,
    pub kernel_runs: usize,
    pub steps_compared: u64,
    pub steps_skipped: u64,
    /// field → (agreeing, compared)
    pub fields: BTreeMap<String, (u64, u64)>,
    pub results: Vec<ScenarioResult>,
}

impl DiffReport {
    /// Agreement of `field` in [0, 1] (1 if nothing was compared).
    pub fn rate(&self, field: &str) -> f64 {
        match self.fields.get(field) {
            Some((a, n)) if *n > 0 => *a as f64 / *n as f64,
            _ => 1.0,
        }
    }

    pub fn render(&self) -> String {
        use std::fmt::Write as _;
        let mut o = String::new();
        let _ = writeln!(o, "trc diff: profile {}, seed {}, {} scenarios: {} agree, {} disagree, {} flaky, {} errors ({} kernel runs)", self.profile, self.seed, self.scenarios, self.agree, self.disagree, self.flaky, self.errors, self.kernel_runs);
        let _ = writeln!(o, "steps compared: {} (plus {} after a first divergence, not compared)", self.steps_compared, self.steps_skipped);
        for f in FIELDS {
            let (a, n) = self.fields.get(*f).copied().unwrap_or((0, 0));
            let _ = writeln!(o, "  {f:<14} {a:>6}/{n:<6} {:>8.3}%", 100.0 * self.rate(f));
        }
        for r in &self.results {
            match r.verdict {
                Verdict::Disagree => {
                    let d = r.trial.as_ref().and_then(|t| t.comparison.divergence.as_ref()).map(|d| d.describe()).unwrap_or_default();
                    let _ = writeln!(o, "DISAGREE {} (seed {:#x}): {d}", r.scenario.name(), r.scenario.seed);
                    if let Some(p) = &r.saved {
                        let _ = writeln!(o, "         shrunk ({} actions): {p}", r.shrunk_steps.unwrap_or(0));
                    }
                }
                Verdict::Flaky => {
                    let _ = writeln!(o, "FLAKY    {} (seed {:#x}): {}", r.scenario.name(), r.scenario.seed, r.note.clone().unwrap_or_default());
                }
                Verdict::Error => {
                    let _ = writeln!(o, "ERROR    {} (seed {:#x}): {}", r.scenario.name(), r.scenario.seed, r.note.clone().unwrap_or_default());
                }
                Verdict::Agree => {}
            }
        }
        o
    }
}

/// Signature of a divergence for deduplication: the fields, the model's state and the event kind.
fn signature(d: &Divergence) -> String {
    let ev: String = d.event.split(|c: char| c.is_ascii_digit() || c == '(').next().unwrap_or("").to_string();
    format!("{:?}|{ev}", d.field_names())
}

/// Runs `opts.scenarios` scenarios; `log` gets one line per scenario and shrink progress.
pub fn run(opts: &DiffOptions, log: &mut dyn FnMut(&str)) -> DiffReport {
    let mut rep = DiffReport { profile: opts.profile.name.clone(), seed: opts.seed, scenarios: opts.scenarios, ..Default::default() };
    for f in FIELDS {
        rep.fields.insert(f.to_string(), (0, 0));
    }
    let mut shrunk: HashMap<String, usize> = HashMap::new();
    let indices: Vec<usize> = opts.only.clone().unwrap_or_else(|| (0..opts.scenarios).collect());
    rep.scenarios = indices.len();
    for i in indices {
        let sc = generate(&opts.profile, opts.seed, i, &opts.gen);
        if let Some(dir) = &opts.keep {
            if let Ok(x) = export_actions(&opts.profile, &sc, &sc.actions, &opts.gen) {
                let _ = std::fs::create_dir_all(dir);
                let _ = crate::write_atomic(&dir.join(format!("{}.pkt", sc.name())), x.pkt.as_bytes());
            }
        }
        let mut r = run_scenario(&opts.profile, &sc, &opts.gen, opts.reruns);
        rep.kernel_runs += r.runs;
        match r.verdict {
            Verdict::Agree | Verdict::Disagree => {
                let c = &r.trial.as_ref().unwrap().comparison;
                rep.steps_compared += c.steps_compared;
                rep.steps_skipped += c.steps_skipped;
                for (f, (a, n)) in &c.fields {
                    let e = rep.fields.entry(f.clone()).or_default();
                    e.0 += a;
                    e.1 += n;
                }
            }
            _ => {}
        }
        let line = match r.verdict {
            Verdict::Agree => format!("[{i:>4}] {} {} actions: agree{}", sc.name(), sc.actions.len(), r.note.as_ref().map(|n| format!(" ({n})")).unwrap_or_default()),
            Verdict::Disagree => format!("[{i:>4}] {} {} actions: DISAGREE {}", sc.name(), sc.actions.len(), r.trial.as_ref().unwrap().comparison.divergence.as_ref().unwrap().describe()),
            Verdict::Flaky => format!("[{i:>4}] {} {} actions: flaky ({})", sc.name(), sc.actions.len(), r.note.clone().unwrap_or_default()),
            Verdict::Error => format!("[{i:>4}] {} {} actions: error ({})", sc.name(), sc.actions.len(), r.note.clone().unwrap_or_default()),
        };
        log(&line);
        match r.verdict {
            Verdict::Agree => rep.agree += 1,
            Verdict::Disagree => {
                rep.disagree += 1;
                if let Some(dir) = &opts.out {
                    let d = r.trial.as_ref().unwrap().comparison.divergence.clone().unwrap();
                    let sig = signature(&d);
                    let n = shrunk.entry(sig).or_default();
                    let (walk, t) = if *n < opts.shrink_per_signature {
                        *n += 1;
                        let (w, t) = shrink(&opts.profile, &sc, &opts.gen, &d.field_names(), opts.shrink_budget, log);
                        (w, t)
                    } else {
                        (sc.actions[..d.step.min(sc.actions.len())].to_vec(), None)
                    };
                    let d2 = t.as_ref().and_then(|t| t.comparison.divergence.clone()).unwrap_or(d);
                    let walk = if t.is_some() { walk } else { sc.actions[..d2.step.min(sc.actions.len())].to_vec() };
                    if let Ok(x) = export_actions(&opts.profile, &sc, &walk, &opts.gen) {
                        let mut text = String::new();
                        let mut lines = x.pkt.lines();
                        if let Some(first) = lines.next() {
                            text.push_str(first);
                            text.push('\n');
                        }
                        text.push_str(&format!("// trc diff: first diverging step {}: {}\n", d2.step, d2.describe()));
                        text.push_str(&format!("// {}: scenario {} of seed {} (scenario seed {:#x}); {} of {} actions after shrinking{}\n", sc.name(), sc.index, opts.seed, sc.seed, walk.len(), sc.actions.len(), if t.is_some() { "" } else { " (prefix only, not shrunk)" }));
                        for l in lines {
                            text.push_str(l);
                            text.push('\n');
                        }
                        let _ = std::fs::create_dir_all(dir);
                        let p = dir.join(format!("diff-{}.pkt", sc.name()));
                        if crate::write_atomic(&p, text.as_bytes()).is_ok() {
                            r.saved = Some(p.display().to_string());
                            r.shrunk_steps = Some(walk.len());
                        }
                    }
                }
            }
            Verdict::Flaky => rep.flaky += 1,
            Verdict::Error => rep.errors += 1,
        }
        rep.results.push(r);
    }
    rep
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_scenarios() {
        let p = Profile::linux_6_18();
        let g = GenOptions::default();
        for i in 0..8 {
            let a = generate(&p, 7, i, &g);
            let b = generate(&p, 7, i, &g);
            assert_eq!(a.actions, b.actions);
            assert_eq!(a.cfg, b.cfg);
        }
        assert_ne!(generate(&p, 7, 0, &g).seed, generate(&p, 8, 0, &g).seed);
    }

    #[test]
    fn walks_are_exportable_and_kernel_reproducible() {
        let p = Profile::linux_6_18();
        let g = GenOptions { sack: Some(false), ts: Some(true), ..Default::default() };
        for i in 0..20 {
            let sc = generate(&p, 3, i, &g);
            assert!(!sc.sack && sc.cfg.timestamps);
            assert!(sc.actions.iter().all(kernel_reproducible));
            let x = export_actions(&p, &sc, &sc.actions, &g).unwrap();
            assert!(x.trace.kernel_runnable);
            let v = model_view(&x).unwrap();
            assert!(!v.is_empty() && v[0].step == 0);
            assert_eq!(normalize(&sc.model(&p), &sc.actions, &g), sc.actions);
        }
    }
}
