//! The checked system: sender + network + receiver + ghost truth, and its `stateright::Model`.
//!
//! Time is discrete (ms) and bounded by `horizon_ms`. A packet's ACK arrives no earlier than
//! `rtt_ms` after it was sent; the environment chooses the order of deliveries (within
//! `max_reorder`), drops, lost ACKs, ECE marks, TSQ, application writes, and lets the pending
//! timer fire at its deadline. An event may not happen after the pending timer's deadline
//! (the timer would have fired first).

use crate::config::{Config, SackMode};
use crate::inline_vec::InlineVec;
use crate::mib::MibDelta;
use crate::net::{HeldAck, Pkt, Receiver};
use crate::profile::Profile;
use crate::reduce::Reduce;
use crate::segmask::SegMask;
use crate::sender::ack::AckSeg;
use crate::sender::Cx;
use crate::seq::before;
use crate::state::*;
use serde::{Deserialize, Serialize};
use stateright::{Expectation, Model, Property};
use std::fmt;

/// An environment event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Action {
    /// The `pkt`-th transmission in flight (0 = oldest) reaches the receiver; its ACK arrives.
    Deliver { pkt: u16 },
    /// Same, but the ACK carries ECE.
    DeliverEce { pkt: u16 },
    /// The segment reaches the receiver but its ACK is lost.
    DeliverAckLost { pkt: u16 },
    /// The network drops the `pkt`-th transmission in flight.
    Drop { pkt: u16 },
    /// The retransmission timer fires.
    Rto,
    /// The TLP timer fires.
    Tlp,
    /// The RACK reordering timer fires.
    Reo,
    /// The host queue fills up: TSQ holds further transmissions.
    TsqFill,
    /// TX completion: the host queue drains (`tcp_tsq_handler`).
    TsqDrain,
    /// The application writes one more segment.
    Write,
    /// Like `Deliver`, but the packet arrives `extra` ms later than the path RTT allows
    /// (`Config::rtt_extra_ms`): a larger RTT sample.
    DeliverLate { pkt: u16, extra: u16 },
    /// With nothing in flight, the application stays idle `gap` ms, then writes one more segment
    /// (`Config::write_gap_ms`).
    WriteAfter { gap: u16 },
    /// The segment reaches the receiver; the network holds its ACK (`Config::max_old_acks`), to
    /// deliver it after a newer one ([`Action::OldAck`]).
    DeliverAckHeld { pkt: u16 },
    /// The held ACK arrives, now below `snd_una` (a newer ACK overtook it): `tcp_ack()`'s
    /// OLD_ACK path.
    OldAck,
}

/// Ghost truth about the network, kept beside the modelled state.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Ghost {
    /// The segments whose original transmission the network dropped.
    pub orig_dropped: SegMask,
}

/// Remaining environment budgets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Budget {
    pub losses: u8,
    pub ack_losses: u8,
    pub rtos: u8,
    pub tlps: u8,
    pub tsq: u8,
    pub ece: u8,
    pub writes: u16,
    /// ACKs the network may still hold back (`Config::max_old_acks`).
    pub old_acks: u8,
}

/// One state of the checked system. (`Clone` is in `plain.rs`: a single copy.)
///
/// Aligned to 16 bytes so its size is a multiple of 16: the engine's frontier store then copies
/// states with 16-byte non-temporal stores (`engine::store::stream_copy`); at a size of 8 mod 16
/// it falls back to `memcpy`, which cost 6 % of the checker's time (perf, `trc check`).
#[repr(align(16))]
#[derive(Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct State {
    /// Model time (ms).
    pub now: u32,
    pub sender: Sender,
    /// Transmissions in flight, oldest first.
    pub flight: InlineVec<[Pkt; 8]>,
    pub rcv: Receiver,
    /// The ACK the network holds back (ACK reordering); never set with `max_old_acks == 0`.
    pub held_ack: HeldAck,
    pub tsq_full: bool,
    pub budget: Budget,
    pub ghost: Ghost,
}

/// The model: bounds, the profile under test and the properties to check.
#[derive(Clone)]
pub struct TcpModel {
    pub cfg: Config,
    pub profile: Profile,
    pub properties: Vec<Property<TcpModel>>,
    /// Exact state-space reductions applied to every produced state (off by default).
    pub reduce: Reduce,
}

impl TcpModel {
    pub fn new(cfg: Config, profile: Profile) -> TcpModel {
        TcpModel {
            cfg,
            profile,
            properties: Vec::new(),
            reduce: Reduce::default(),
        }
    }

    /// Turns on the given reductions (see [`crate::reduce`]).
    pub fn with_reduce(mut self, r: Reduce) -> TcpModel {
        self.reduce = r;
        self
    }

    /// The canonical form of a produced state under `self.reduce`. Inlined into every step:
    /// with the reductions off (the default) it is one test, without the call and the register
    /// saves of [`Self::canonicalize_reduced`] (about 40 instructions per state).
    #[inline(always)]
    pub fn canonicalize(&self, s: &mut State) {
        if !self.reduce.is_off() {
            self.canonicalize_reduced(s);
        }
    }

    /// [`Self::canonicalize`] with some reduction on.
    #[inline(never)]
    fn canonicalize_reduced(&self, s: &mut State) {
        self.reduce.canonicalize(&self.cfg, s);
        if self.reduce.ev && s.sender.ghost.ev != Events::default() && self.all_always_hold(s) {
            let mut c = s.clone();
            Reduce::clear_ev(&mut c);
            if self.all_always_hold(&c) {
                *s = c;
            }
        }
    }

    /// Every property is an `always` one and holds in `s` (false if any other kind is checked).
    fn all_always_hold(&self, s: &State) -> bool {
        self.properties
            .iter()
            .all(|p| p.expectation == Expectation::Always && (p.condition)(self, s))
    }

    pub fn with_properties(mut self, p: Vec<Property<TcpModel>>) -> TcpModel {
        self.properties = p;
        self
    }

    /// The initial state for one SACK choice: established connection, first flight sent at t=0.
    pub fn initial(&self, sack_ok: bool) -> State {
        let cfg = &self.cfg;
        let mut s = State {
            now: 0,
            sender: Sender::new(cfg, sack_ok),
            flight: InlineVec::new(),
            rcv: Receiver::new(cfg),
            held_ack: HeldAck::default(),
            tsq_full: false,
            budget: Budget {
                losses: cfg.max_losses,
                ack_losses: cfg.max_ack_losses,
                rtos: cfg.max_rtos,
                tlps: cfg.max_tlps,
                tsq: cfg.max_tsq,
                ece: cfg.max_ece,
                writes: cfg.extra_writes,
                old_acks: cfg.max_old_acks,
            },
            ghost: Ghost::default(),
        };
        self.step(&mut s, 0, |snd, cx| snd.tcp_write_xmit(cx));
        s
    }

    /// Runs one sender operation at time `now`, then moves its transmissions into the network.
    fn step(&self, s: &mut State, now: u32, f: impl FnOnce(&mut Sender, &mut Cx)) {
        self.step_counted(s, now, &mut (), f)
    }

    /// [`Self::step`], handing the step's MIB counter deltas to `sink` (nothing for `()`).
    fn step_counted<'d, K: StepSink<'d>>(
        &self,
        s: &mut State,
        now: u32,
        sink: &mut K,
        f: impl FnOnce(&mut Sender, &mut Cx),
    ) {
        s.now = now;
        s.sender.ghost.ev = Events::default();
        let mut cx = Cx::new(&self.cfg, &self.profile, now, s.tsq_full);
        cx.decisions = sink.decisions();
        f(&mut s.sender, &mut cx);
        sink.take(&cx.mib);
        for tx in cx.out {
            s.flight.push(Pkt {
                seg: tx.seg as u16,
                sent: now,
                rtx: tx.rtx,
            });
        }
    }

    /// Earliest time packet `i` of the flight can arrive.
    fn arrival(&self, s: &State, i: usize) -> u32 {
        s.now.max(s.flight[i].sent + self.cfg.rtt_ms)
    }

    /// Whether an event at time `t` is possible (not past the horizon, not after the pending timer).
    fn in_time(&self, s: &State, t: u32) -> bool {
        t <= self.cfg.horizon_ms && s.sender.timer.is_none_or(|tm| t <= tm.deadline)
    }

    /// The ACK the receiver would send if packet `i` of the flight were delivered now, and the
    /// time it would arrive; `s` is not changed (exporters and replays use it).
    pub fn ack_for(&self, s: &State, i: usize) -> (u32, AckSeg) {
        let mut rcv = s.rcv.clone();
        let ack = rcv.receive(&self.cfg, &s.flight[i], s.sender.sack_ok, s.sender.ts_ok);
        (self.arrival(s, i), ack)
    }

    /// Delivers packet `i` `extra` ms later than the path RTT allows; its ACK arrives normally.
    pub fn deliver_late(&self, s: &mut State, i: usize, extra: u32) {
        self.deliver_late_counted(s, i, extra, &mut ())
    }

    fn deliver_late_counted<'d, K: StepSink<'d>>(
        &self,
        s: &mut State,
        i: usize,
        extra: u32,
        sink: &mut K,
    ) {
        let t = s.now.max(s.flight[i].sent + self.cfg.rtt_ms + extra);
        let pkt = s.flight.remove(i);
        let (sack_ok, ts_ok) = (s.sender.sack_ok, s.sender.ts_ok);
        let ack: AckSeg = s.rcv.receive(&self.cfg, &pkt, sack_ok, ts_ok);
        self.step_counted(s, t, sink, |snd, cx| snd.tcp_ack(cx, &ack));
    }

    /// The ACK the receiver sends for delivered packet `pkt`.
    pub fn deliver(&self, s: &mut State, i: usize, ack_fate: AckFate) {
        self.deliver_counted(s, i, ack_fate, &mut ())
    }

    fn deliver_counted<'d, K: StepSink<'d>>(
        &self,
        s: &mut State,
        i: usize,
        ack_fate: AckFate,
        sink: &mut K,
    ) {
        let t = self.arrival(s, i);
        let pkt = s.flight.remove(i);
        let (sack_ok, ts_ok) = (s.sender.sack_ok, s.sender.ts_ok);
        let mut ack: AckSeg = s.rcv.receive(&self.cfg, &pkt, sack_ok, ts_ok);
        match ack_fate {
            AckFate::Lost => {
                s.now = t;
                s.sender.ghost.ev = Events::default();
                return;
            }
            AckFate::Held => {
                s.held_ack = HeldAck::hold(&self.cfg, &ack);
                s.now = t;
                s.sender.ghost.ev = Events::default();
                return;
            }
            AckFate::Ece => ack.ece = true,
            AckFate::Normal => {}
        }
        self.step_counted(s, t, sink, |snd, cx| snd.tcp_ack(cx, &ack));
    }
}

/// What happens to the ACK of a delivered segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AckFate {
    Normal,
    Ece,
    Lost,
    /// The network holds it ([`State::held_ack`]).
    Held,
}

impl Model for TcpModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        let mut v = match self.cfg.sack {
            SackMode::Both => vec![self.initial(true), self.initial(false)],
            SackMode::Sack => vec![self.initial(true)],
            SackMode::NoSack => vec![self.initial(false)],
        };
        for s in &mut v {
            self.canonicalize(s);
        }
        v
    }

    fn actions(&self, s: &State, actions: &mut Vec<Action>) {
        let b = &s.budget;
        let n = s.flight.len().min(self.cfg.max_reorder as usize + 1);
        for i in 0..n {
            let t = self.arrival(s, i);
            if !self.in_time(s, t) {
                continue;
            }
            let pkt = i as u16;
            actions.push(Action::Deliver { pkt });
            if b.ece > 0 {
                actions.push(Action::DeliverEce { pkt });
            }
            if b.ack_losses > 0 {
                actions.push(Action::DeliverAckLost { pkt });
            }
            if b.old_acks > 0 && !s.held_ack.held {
                actions.push(Action::DeliverAckHeld { pkt });
            }
        }
        if s.held_ack.held
            && before(s.held_ack.ack_seq(&self.cfg), s.sender.snd_una)
            && self.in_time(s, s.now)
        {
            actions.push(Action::OldAck);
        }
        if b.losses > 0 {
            for i in 0..s.flight.len() {
                actions.push(Action::Drop { pkt: i as u16 });
            }
        }
        if let Some(tm) = s.sender.timer {
            if tm.deadline >= s.now && tm.deadline <= self.cfg.horizon_ms {
                match tm.kind {
                    TimerKind::Rto if b.rtos > 0 => actions.push(Action::Rto),
                    TimerKind::Tlp if b.tlps > 0 => actions.push(Action::Tlp),
                    TimerKind::Reo => actions.push(Action::Reo),
                    _ => {}
                }
            }
        }
        if s.tsq_full {
            actions.push(Action::TsqDrain);
        } else if b.tsq > 0 {
            actions.push(Action::TsqFill);
        }
        if b.writes > 0 {
            actions.push(Action::Write);
            if s.sender.packets_out == 0 {
                for &gap in &self.cfg.write_gap_ms {
                    if gap > 0 && gap <= u16::MAX as u32 && self.in_time(s, s.now + gap) {
                        actions.push(Action::WriteAfter { gap: gap as u16 });
                    }
                }
            }
        }
        for i in 0..n {
            for &extra in &self.cfg.rtt_extra_ms {
                let t = s.now.max(s.flight[i].sent + self.cfg.rtt_ms + extra);
                if extra > 0 && extra <= u16::MAX as u32 && self.in_time(s, t) {
                    actions.push(Action::DeliverLate {
                        pkt: i as u16,
                        extra: extra as u16,
                    });
                }
            }
        }
    }

    fn next_state(&self, s: &State, a: Action) -> Option<State> {
        let mut n = s.clone();
        self.apply(&mut n, a).then_some(n)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        self.properties.clone()
    }

    fn format_action(&self, a: &Action) -> String {
        format!("{a}")
    }
}

impl TcpModel {
    /// [`Model::next_state`] into `out`, without moving the 600-byte state around: `s` is copied
    /// straight into `out` and the step runs there. Returns false (and leaves `out`
    /// uninitialised) when the action has no successor. The checker's hot loop uses this.
    #[inline]
    pub fn next_state_into(
        &self,
        s: &State,
        a: Action,
        out: &mut std::mem::MaybeUninit<State>,
    ) -> bool {
        let n = s.clone_into_uninit(out);
        if self.apply(n, a) {
            true
        } else {
            // SAFETY: `clone_into_uninit` initialised `out`; the caller treats it as uninitialised
            // after a false return.
            unsafe { out.assume_init_drop() };
            false
        }
    }

    /// Runs action `a` on `s` in place (`s` starts as a copy of the parent); false if `a` has no
    /// successor (then `s` is left partly updated and must be discarded).
    #[inline]
    fn apply(&self, s: &mut State, a: Action) -> bool {
        self.apply_counted(s, a, &mut ())
    }

    /// The successor of `s` under `a` and the MIB counters the step moved (`None`: no
    /// successor). For counterexample printing and traces; the checker uses `next_state_into`.
    /// Runs transition `a` from `s` on a copy, recording the decision branches its step takes
    /// in `sink` (`trc check --coverage`); false if `a` has no successor. The successor is not
    /// returned: this is only the record of what the step decided.
    pub fn record_decisions(
        &self,
        s: &State,
        a: Action,
        sink: &crate::decision::DecisionCounts,
    ) -> bool {
        let mut n = s.clone();
        self.apply_counted(&mut n, a, &mut Decisions(sink))
    }

    pub fn next_state_counted(&self, s: &State, a: Action) -> Option<(State, MibDelta)> {
        let mut n = s.clone();
        let mut mib = MibDelta::default();
        self.apply_counted(&mut n, a, &mut mib).then_some((n, mib))
    }

    #[inline]
    fn apply_counted<'d, K: StepSink<'d>>(&self, s: &mut State, a: Action, sink: &mut K) -> bool {
        match a {
            Action::Deliver { pkt } => self.deliver_counted(s, pkt as usize, AckFate::Normal, sink),
            Action::DeliverEce { pkt } => {
                s.budget.ece -= 1;
                self.deliver_counted(s, pkt as usize, AckFate::Ece, sink)
            }
            Action::DeliverAckLost { pkt } => {
                s.budget.ack_losses -= 1;
                self.deliver_counted(s, pkt as usize, AckFate::Lost, sink)
            }
            Action::Drop { pkt } => {
                s.budget.losses -= 1;
                let p = s.flight.remove(pkt as usize);
                if !p.rtx {
                    s.ghost.orig_dropped.insert(p.seg as u32);
                }
                s.sender.ghost.ev = Events::default();
            }
            Action::Rto | Action::Tlp | Action::Reo => {
                let Some(tm) = s.sender.timer else {
                    return false;
                };
                match a {
                    Action::Rto => s.budget.rtos -= 1,
                    Action::Tlp => s.budget.tlps -= 1,
                    _ => {}
                }
                self.step_counted(s, tm.deadline, sink, |snd, cx| {
                    snd.tcp_write_timer_handler(cx, tm.kind)
                });
            }
            Action::TsqFill => {
                s.budget.tsq -= 1;
                s.tsq_full = true;
                s.sender.ghost.ev = Events::default();
            }
            Action::TsqDrain => {
                s.tsq_full = false;
                let now = s.now;
                self.step_counted(s, now, sink, |snd, cx| snd.tcp_tsq_handler(cx));
            }
            Action::DeliverLate { pkt, extra } => {
                self.deliver_late_counted(s, pkt as usize, extra as u32, sink)
            }
            Action::DeliverAckHeld { pkt } => {
                s.budget.old_acks -= 1;
                self.deliver_counted(s, pkt as usize, AckFate::Held, sink)
            }
            Action::OldAck => {
                let ack = s.held_ack.ack_seg(&self.cfg, s.sender.ts_ok);
                s.held_ack = HeldAck::default();
                let now = s.now;
                self.step_counted(s, now, sink, |snd, cx| snd.tcp_ack(cx, &ack));
            }
            Action::WriteAfter { gap } => {
                s.budget.writes -= 1;
                let now = s.now + gap as u32;
                self.step_counted(s, now, sink, |snd, cx| {
                    cx.idle_ms = gap as u32;
                    snd.tcp_sendmsg(cx, 1)
                });
            }
            Action::Write => {
                s.budget.writes -= 1;
                let now = s.now;
                self.step_counted(s, now, sink, |snd, cx| snd.tcp_sendmsg(cx, 1));
            }
        }
        self.canonicalize(s);
        true
    }
}

/// What a [`TcpModel`] step reports beyond its successor: the MIB counter deltas (to a
/// [`MibDelta`]: counterexamples, traces) and the decision branches taken (to [`Decisions`]:
/// `--coverage`). The checker passes `()`, for which both compile away.
pub trait StepSink<'d> {
    fn take(&mut self, _d: &MibDelta) {}
    fn decisions(&self) -> Option<&'d crate::decision::DecisionCounts> {
        None
    }
}

impl StepSink<'_> for () {
    #[inline(always)]
    fn take(&mut self, _: &MibDelta) {}
}

/// A step that records its decision branches.
pub struct Decisions<'d>(pub &'d crate::decision::DecisionCounts);

impl<'d> StepSink<'d> for Decisions<'d> {
    fn decisions(&self) -> Option<&'d crate::decision::DecisionCounts> {
        Some(self.0)
    }
}

impl StepSink<'_> for MibDelta {
    fn take(&mut self, d: &MibDelta) {
        for (m, n) in d.nonzero() {
            self.add(m, n);
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::Deliver { pkt } => write!(f, "deliver #{pkt}"),
            Action::DeliverEce { pkt } => write!(f, "deliver #{pkt} (ACK with ECE)"),
            Action::DeliverAckLost { pkt } => write!(f, "deliver #{pkt} (ACK lost)"),
            Action::Drop { pkt } => write!(f, "drop #{pkt}"),
            Action::Rto => write!(f, "RTO fires"),
            Action::Tlp => write!(f, "TLP fires"),
            Action::Reo => write!(f, "RACK reorder timer fires"),
            Action::TsqFill => write!(f, "host queue fills (TSQ)"),
            Action::TsqDrain => write!(f, "host queue drains (TSQ)"),
            Action::Write => write!(f, "application writes a segment"),
            Action::DeliverLate { pkt, extra } => write!(f, "deliver #{pkt} {extra} ms late"),
            Action::WriteAfter { gap } => {
                write!(f, "application idle {gap} ms, then writes a segment")
            }
            Action::DeliverAckHeld { pkt } => write!(f, "deliver #{pkt} (ACK held by the network)"),
            Action::OldAck => write!(f, "the held ACK arrives (below snd_una)"),
        }
    }
}

#[cfg(test)]
mod size_tests {
    /// The state's size is a cost of every explored state (docs/explanation/performance.md): a new field
    /// must fit in existing padding or be justified. 768 bytes, 16-byte aligned (688 before the
    /// Eifel-proof ghosts of I20/I20e, 704 before the RTT estimator's `RttEst`, 752 before
    /// `Rack::sub`, the rank that orders `rack.mstamp` within its ms as the kernel's µs stamp
    /// does; it took the last byte of slack: docs/lab/notebook.md, 2026-12-02 "State size",
    /// 2026-12-03 "RTT estimator", 2026-12-04 "RACK's same-ms order").
    #[test]
    fn state_size_is_768_bytes() {
        assert_eq!(size_of::<super::State>(), 768);
    }
}
