//! Generation: seeded random walks over the model's own enabled environment actions, from a
//! randomly drawn configuration, kept to what a real kernel can be made to reproduce and what
//! exports with a safe timing margin.

use serde::{Deserialize, Serialize};
use stateright::Model;
use trc_model::model::{Action, State, TcpModel};
use trc_model::{CcKind, Config, Profile, SackMode};
use trc_trace::export;

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
    /// RTT samples up to `rtt_ms` + this kept the kernel's RTO/TLP timeouts comparable with the
    /// fixed-RTT model's; after a larger one no RTO or TLP fires in the walk (kept with the RTT
    /// estimator until the agreement without the rule is measured).
    pub srtt_slack_ms: u32,
    /// Script times absolute from the SYN on ([`export::Spacing::absolute`]), so that an ACK
    /// train keeps the model's spacing however long each step's lines take to run.
    pub absolute_times: bool,
}

impl Default for GenOptions {
    fn default() -> Self {
        GenOptions {
            sack: None,
            ts: None,
            max_steps: 24,
            gap_ms: 3,
            margin_ms: 15,
            srtt_slack_ms: 25,
            absolute_times: false,
        }
    }
}

impl GenOptions {
    /// The export options of a bulk transfer ([`bulk`]): its ACKs keep the spacing they have
    /// (HyStart's ACK-train detector reads it: spacing them out would be another scenario), and
    /// they come every few ms, where the random walks' 15 ms distance from a pending timer
    /// would refuse them (an injected ACK is late by well under 5 ms).
    pub fn bulk() -> Self {
        GenOptions {
            gap_ms: 0,
            margin_ms: 5,
            absolute_times: true,
            ..GenOptions::default()
        }
    }

    /// How the exporter times these scenarios' scripts.
    pub fn spacing(&self) -> export::Spacing {
        export::Spacing {
            gap_ms: self.gap_ms,
            margin_ms: self.margin_ms,
            absolute: self.absolute_times,
        }
    }
}

/// One generated scenario.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Scenario {
    pub index: usize,
    /// The scenario's own seed (derived from the run seed and the index).
    pub seed: u64,
    pub cfg: Config,
    pub sack: bool,
    pub actions: Vec<Action>,
    /// A name other than the index's (a non-random scenario such as [`bulk`]).
    pub label: Option<String>,
}

impl Scenario {
    pub fn name(&self) -> String {
        if let Some(l) = &self.label {
            return format!(
                "{l}-{}-{}",
                if self.sack { "sack" } else { "nosack" },
                if self.cfg.timestamps { "ts" } else { "nots" }
            );
        }
        format!(
            "{:04}-{}-{}",
            self.index,
            if self.sack { "sack" } else { "nosack" },
            if self.cfg.timestamps { "ts" } else { "nots" }
        )
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

/// Whether a random walk may draw `a`: not the host queue's TSQ events (a script cannot make
/// the kernel hold a segment) and not a write after an idle period (random walks draw no idle
/// gaps; [`bulk`]'s second write is one). ECE-marked and late deliveries are ACK lines like any
/// other.
pub fn kernel_reproducible(a: &Action) -> bool {
    !matches!(
        a,
        Action::TsqFill | Action::TsqDrain | Action::WriteAfter { .. }
    )
}

/// The configuration of a scenario (bounds a real kernel reproduces within the timing margin).
pub fn draw_config(r: &mut Rng, g: &GenOptions) -> (Config, bool) {
    let sack = g.sack.unwrap_or_else(|| r.chance(50));
    let timestamps = g.ts.unwrap_or_else(|| r.chance(50));
    let segments = r.range(2, 14) as u16;
    let cfg = Config {
        segments,
        extra_writes: r.range(0, 3) as u16,
        initcwnd: r.range(2, 10),
        max_losses: r.range(0, 4) as u8,
        max_ack_losses: r.range(0, 3) as u8,
        max_reorder: r.range(0, 3) as u8,
        max_rtos: r.range(0, 2) as u8,
        max_tlps: r.range(0, 2) as u8,
        max_tsq: 0,
        max_ece: 0,
        // The kernel learns its RTT from every sample; so does the model in `trc diff`.
        rtt_estimator: true,
        horizon_ms: 3000,
        rtt_ms: 50,
        sack: if sack {
            SackMode::Sack
        } else {
            SackMode::NoSack
        },
        timestamps,
        frto: r.chance(85),
        tlp: r.chance(85),
        dsack: true,
        ecn: false,
        cc: if r.chance(20) {
            CcKind::Reno
        } else {
            CcKind::Cubic
        },
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
/// the network, or a TSecr echoing an old TSval). The fixed-RTT model's srtt (hence RTO and TLP
/// timeout) was constant (docs/explanation/model.md) where the kernel's grows with such a
/// sample, so later RTO/TLP expiries would not happen at comparable times; the walks keep the
/// rule with the RTT estimator on until their agreement without it is measured. Conservative: any newly ACKed or SACKed segment
/// sent more than `rtt + slack` ago, or an advancing ACK whose TSecr is that old.
pub fn disturbs_srtt(model: &TcpModel, s: &State, a: &Action, slack_ms: u32) -> bool {
    let Action::Deliver { pkt } = a else {
        return false;
    };
    let (t, ack) = model.ack_for(s, *pkt as usize);
    let lim = model.cfg.rtt_ms + slack_ms;
    let snd = &s.sender;
    let isn = model.cfg.isn;
    let old = |seq: u32| {
        snd.segs
            .get(seq.wrapping_sub(isn) as usize)
            .is_some_and(|g| t.saturating_sub(g.xmit) > lim)
    };
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
            let sacked = snd
                .segs
                .get(q.wrapping_sub(isn) as usize)
                .is_some_and(|g| g.tags & trc_model::state::tag::S != 0);
            if !sacked && !trc_model::seq::before(q, ack.ack) && old(q) {
                return true;
            }
            q = q.wrapping_add(1);
        }
    }
    false
}

/// Why [`bulk`] cannot make its walk.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BulkError {
    #[error("--drop: segments are numbered 0..{segments}")]
    Drop { segments: u16 },
    /// The bounds the walk needs are not a valid configuration.
    #[error("{0}")]
    Config(#[from] trc_model::config::ConfigError),
    #[error("bulk walk: step {step} ({action}) has no successor")]
    NoSuccessor { step: usize, action: Action },
    #[error("bulk walk does not end")]
    NoEnd,
    /// A packet would wait longer at the bottleneck than an action can say (`u16` ms).
    #[error("bulk walk: a packet would wait {extra} ms at the bottleneck (at most 65535)")]
    Queue { extra: u32 },
    /// `--then`: the idle period must be 1..=65535 ms and the second write 1..=65535 segments.
    #[error("--then {idle_ms}:{segments}: the idle period is 1..=65535 ms and the write 1..=65535 segments")]
    Then { idle_ms: u32, segments: u32 },
}

/// The shape of a [`bulk`] transfer: what `trc diff --bulk` and `trc kernel check --suite bulk`
/// run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BulkSpec<'a> {
    /// Segments written at once (`--bulk N`).
    pub segments: u16,
    /// Segments (0-based) whose first transmission the network drops (`--drop`).
    pub drops: &'a [u32],
    pub sack: bool,
    pub ts: bool,
    /// A bottleneck forwarding one packet every this many ms (0: none; `--bottleneck`).
    pub bottleneck_ms: u32,
    /// `(at_ms, by_ms)`: the RTT falls by `by_ms` at model time `at_ms` (`--rtt-fall`), on the
    /// ACKs' way back after the bottleneck: an ACK that would reach the sender before `at_ms`
    /// takes `by_ms` longer, one forwarded at or after `at_ms` does not, and one in between
    /// arrives at `at_ms` (nothing is reordered). The handshake's RTT stays `rtt_ms`.
    pub rtt_fall: Option<(u32, u32)>,
    /// `(idle_ms, segments)`: once every segment is ACKed and no timer is pending, the
    /// application stays idle `idle_ms` and then writes `segments` more, one write of one
    /// segment each at that time (`--then`; [`Action::WriteAfter`], then [`Action::Write`]).
    pub then: Option<(u32, u16)>,
}

impl<'a> BulkSpec<'a> {
    /// A transfer with no RTT change and no second write.
    pub const fn new(segments: u16, drops: &'a [u32], sack: bool, ts: bool, neck: u32) -> Self {
        BulkSpec {
            segments,
            drops,
            sack,
            ts,
            bottleneck_ms: neck,
            rtt_fall: None,
            then: None,
        }
    }

    /// The same transfer with the path's RTT falling by `by_ms` at `at_ms`.
    pub const fn rtt_fall(self, at_ms: u32, by_ms: u32) -> Self {
        BulkSpec {
            rtt_fall: Some((at_ms, by_ms)),
            ..self
        }
    }

    /// The same transfer followed by an idle period and a second write.
    pub const fn then(self, idle_ms: u32, segments: u16) -> Self {
        BulkSpec {
            then: Some((idle_ms, segments)),
            ..self
        }
    }

    /// The scenario's label (its script's name without the SACK/TS suffix).
    pub fn label(&self) -> String {
        let mut l = format!("bulk{}", self.segments);
        if self.bottleneck_ms > 0 {
            l += &format!("-neck{}ms", self.bottleneck_ms);
        }
        if let Some((at, by)) = self.rtt_fall {
            l += &format!("-rttfall{by}at{at}");
        }
        l += "-drop-";
        l += &if self.drops.is_empty() {
            "none".to_string()
        } else {
            join(self.drops, "-")
        };
        if let Some((idle, n)) = self.then {
            l += &format!("-idle{idle}-write{n}");
        }
        l
    }

    /// The `trc diff` command line that runs the same transfer.
    pub fn command(&self) -> String {
        let mut c = format!("trc diff --bulk {}", self.segments);
        if !self.drops.is_empty() {
            c += &format!(" --drop {}", join(self.drops, ","));
        }
        if self.bottleneck_ms > 0 {
            c += &format!(" --bottleneck {}", self.bottleneck_ms);
        }
        if let Some((at, by)) = self.rtt_fall {
            c += &format!(" --rtt-fall {at}:{by}");
        }
        if let Some((idle, n)) = self.then {
            c += &format!(" --then {idle}:{n}");
        }
        if !self.sack {
            c += " --no-sack";
        }
        if !self.ts {
            c += " --no-ts";
        }
        c
    }

    /// When the ACK of a packet the bottleneck forwarded at `out` (ms) reaches the sender.
    fn ack_path(&self, out: u32) -> u32 {
        match self.rtt_fall {
            Some((at, by)) if out + by < at => out + by,
            Some((at, _)) => out.max(at),
            None => out,
        }
    }
}

fn join(v: &[u32], sep: &str) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join(sep)
}

/// A bulk transfer at a real size: `segments` written at once (initcwnd 10, CUBIC, RTT 50 ms),
/// every packet delivered in order one RTT after it left and ACKed at once, except the original
/// transmissions of the segments in `drops`, which the network drops (once each); a timer fires
/// whenever it is due before the next arrival. Not drawn at random: the same arguments give the
/// same walk. `trc diff --bulk` runs it on the kernel.
///
/// With `bottleneck_ms` > 0 the path has a bottleneck that forwards one packet every
/// `bottleneck_ms` ms: a packet arrives at the later of one RTT after it left and
/// `bottleneck_ms` after the packet before it ([`Action::DeliverLate`] by the difference). Its
/// ACKs then come as a train, one per service time, and the RTT grows with the queue a slow
/// start builds: what HyStart's ACK-train and delay detectors (`hystart_update()`) read. A
/// falling RTT ([`BulkSpec::rtt_fall`]) lowers a round's samples after some of them were
/// taken (what `hystart_update()`'s `curr_rtt` and `cubictcp_acked()`'s `delay_min` read); an
/// idle period before a second write ([`BulkSpec::then`]) is CUBIC's `CA_EVENT_TX_START`
/// (`cubictcp_cwnd_event()`; `cubictcp_cwnd_event_tx_start()` in 7.2).
pub fn bulk(spec: &BulkSpec, profile: &Profile) -> Result<Scenario, BulkError> {
    let BulkSpec {
        segments,
        drops,
        sack,
        bottleneck_ms,
        ..
    } = *spec;
    if drops.iter().any(|&d| d >= segments as u32) {
        return Err(BulkError::Drop { segments });
    }
    let (idle_ms, then_segments) = spec.then.unwrap_or((0, 0));
    if spec.then.is_some() && (idle_ms == 0 || idle_ms > u16::MAX as u32 || then_segments == 0) {
        return Err(BulkError::Then {
            idle_ms,
            segments: then_segments.into(),
        });
    }
    let cfg = bulk_config(spec);
    cfg.validate()?;
    let model = TcpModel::new(cfg.clone(), profile.clone());
    let mut s: State = model.init_states().swap_remove(0);
    let mut dropped: Vec<u32> = Vec::new();
    let mut actions = Vec::new();
    // When the bottleneck forwarded its last packet (ms).
    let mut last_out: Option<u32> = None;
    let limit = 40 * (segments as usize + then_segments as usize) + 1000;
    loop {
        let drop = s.flight.iter().position(|p| {
            !p.rtx && drops.contains(&(p.seg as u32)) && !dropped.contains(&(p.seg as u32))
        });
        let a = if let Some(i) = drop {
            dropped.push(s.flight[i].seg as u32);
            Action::Drop { pkt: i as u16 }
        } else {
            let arrival = s.flight.first().map(|p| {
                let path = s.now.max(p.sent + cfg.rtt_ms);
                let out = match last_out {
                    Some(o) if bottleneck_ms > 0 => path.max(o + bottleneck_ms),
                    _ => path,
                };
                (out, s.now.max(spec.ack_path(out)))
            });
            match (s.sender.timer, arrival) {
                (Some(tm), a) if a.is_none_or(|(_, a)| tm.deadline < a) => match tm.kind {
                    trc_model::state::TimerKind::Rto => Action::Rto,
                    trc_model::state::TimerKind::Tlp => Action::Tlp,
                    trc_model::state::TimerKind::Reo => Action::Reo,
                },
                (_, Some((out, t))) => {
                    last_out = Some(out);
                    let p = &s.flight[0];
                    let extra = t - (p.sent + cfg.rtt_ms);
                    if extra == 0 {
                        Action::Deliver { pkt: 0 }
                    } else {
                        Action::DeliverLate {
                            pkt: 0,
                            extra: u16::try_from(extra).map_err(|_| BulkError::Queue { extra })?,
                        }
                    }
                }
                // Everything ACKed: the second write, if any (its first segment after the
                // idle period, the rest at once).
                _ if s.budget.writes == then_segments && then_segments > 0 => Action::WriteAfter {
                    gap: idle_ms as u16,
                },
                _ => break,
            }
        };
        s = model.next_state(&s, a).ok_or(BulkError::NoSuccessor {
            step: actions.len(),
            action: a,
        })?;
        actions.push(a);
        if matches!(a, Action::WriteAfter { .. }) {
            for _ in 1..then_segments {
                s = model
                    .next_state(&s, Action::Write)
                    .ok_or(BulkError::NoSuccessor {
                        step: actions.len(),
                        action: Action::Write,
                    })?;
                actions.push(Action::Write);
            }
        }
        if actions.len() > limit {
            return Err(BulkError::NoEnd);
        }
    }
    let label = Some(spec.label());
    Ok(Scenario {
        index: 0,
        seed: 0,
        cfg,
        sack,
        actions,
        label,
    })
}

/// The bounds of a [`bulk`] walk: unbounded timers, the spec's drops, CUBIC at RTT 50 ms,
/// IW 10, the RTT estimator on (the kernel learns from every sample; so does `trc diff`).
fn bulk_config(spec: &BulkSpec) -> Config {
    let (idle_ms, then_segments) = spec.then.unwrap_or((0, 0));
    Config {
        segments: spec.segments,
        extra_writes: then_segments,
        write_gap_ms: if idle_ms > 0 {
            vec![idle_ms]
        } else {
            Vec::new()
        },
        initcwnd: 10,
        max_losses: spec.drops.len().min(255) as u8,
        max_ack_losses: 0,
        max_reorder: 0,
        max_rtos: 255,
        max_tlps: 255,
        max_tsq: 0,
        max_ece: 0,
        rtt_estimator: true,
        horizon_ms: trc_model::config::MAX_HORIZON_MS,
        rtt_ms: 50,
        sack: if spec.sack {
            SackMode::Sack
        } else {
            SackMode::NoSack
        },
        timestamps: spec.ts,
        cc: CcKind::Cubic,
        ..Config::default()
    }
}

/// Generates scenario `index` of the run with seed `seed`.
pub fn generate(profile: &Profile, seed: u64, index: usize, g: &GenOptions) -> Scenario {
    let sseed = scenario_seed(seed, index);
    let mut r = Rng::new(sseed);
    let (cfg, sack) = draw_config(&mut r, g);
    let model = TcpModel::new(cfg.clone(), profile.clone());
    let mut s: State = model.init_states().swap_remove(0);
    let mut actions: Vec<Action> = Vec::new();
    // Once the kernel's srtt may have left the path RTT, no RTO/TLP may fire (see above).
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
            if export::export_walk(&model, 0, &walk, "probe", g.spacing()).is_ok() {
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
    Scenario {
        index,
        seed: sseed,
        cfg,
        sack,
        actions,
        label: None,
    }
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
        match export::export_walk(model, 0, &out, "probe", g.spacing()) {
            Ok(_) => return out,
            Err(e) if (1..=out.len()).contains(&e.step()) => out.truncate(e.step() - 1),
            Err(_) => {
                out.clear();
                return out;
            }
        }
    }
}
