//! The model's sender driven from outside: inbound ACKs, application writes, timer expiries and
//! the host queue at times chosen by the caller (a script, or an exporter that re-times a
//! trace). Both export and replay run through this, so an exported script replays to the
//! same sender states by construction.

use std::collections::VecDeque;
use trc_model::mib::{MibDelta, MibTotals};
use trc_model::sender::ack::AckSeg;
use trc_model::sender::Cx;
use trc_model::state::{Timer, TimerKind};
use trc_model::{Config, Profile, Sender};

/// One transmission the model made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sent {
    /// Segment index (`seq - isn`).
    pub seg: u32,
    pub rtx: bool,
    /// The header's CWR flag (`tcp_ecn_send()`: the first new segment after a reduction of an
    /// ECN connection).
    pub cwr: bool,
    /// Model time (ms) it left.
    pub at: u32,
    /// The timer whose expiry sent it (`None`: an ACK or a write did).
    pub timer: Option<TimerKind>,
    /// That timer's timeout when it was last armed (expiry minus arming time), in jiffies:
    /// what decides its timer-wheel level.
    pub timer_jiffies: u64,
}

/// The sender plus its clock and the transmissions not yet consumed.
#[derive(Clone, Debug)]
pub struct Driver {
    pub cfg: Config,
    pub profile: Profile,
    pub snd: Sender,
    /// Model time (ms) of the last event.
    pub now: u32,
    pub tsq_full: bool,
    /// Transmissions not yet matched against a script line (oldest first).
    pub out: VecDeque<Sent>,
    /// The MIB counters the model maintains (`trc_model::mib`), since the start.
    pub counters: MibTotals,
    /// What the last event added to them.
    pub last_mib: MibDelta,
    /// The pending timer and the model time (ms) it was last (re)armed.
    armed: Option<(Timer, u32)>,
}

impl Driver {
    /// A connection right after the passive open; the first `cfg.segments` are written at
    /// model time 0 and the first flight is sent (as `TcpModel::initial`).
    pub fn start(cfg: Config, profile: Profile, sack_ok: bool) -> Driver {
        let snd = Sender::new(&cfg, sack_ok);
        let mut d = Driver {
            cfg,
            profile,
            snd,
            now: 0,
            tsq_full: false,
            out: VecDeque::new(),
            counters: MibTotals::default(),
            last_mib: MibDelta::default(),
            armed: None,
        };
        d.run(0, |s, cx| s.tcp_write_xmit(cx));
        d
    }

    fn run(&mut self, now: u32, f: impl FnOnce(&mut Sender, &mut Cx)) -> Vec<Sent> {
        self.run_timer(now, None, f)
    }

    fn run_timer(
        &mut self,
        now: u32,
        timer: Option<TimerKind>,
        f: impl FnOnce(&mut Sender, &mut Cx),
    ) -> Vec<Sent> {
        let timer_jiffies = match self.armed {
            Some((t, at)) if timer.is_some() => {
                ms_to_jiffies(t.deadline.saturating_sub(at), self.cfg.hz)
            }
            _ => 0,
        };
        let before = self.snd.timer;
        self.now = now;
        self.snd.ghost.ev = Default::default();
        let mut cx = Cx::new(&self.cfg, &self.profile, now, self.tsq_full);
        f(&mut self.snd, &mut cx);
        self.counters.absorb(&cx.mib);
        self.last_mib = cx.mib.clone();
        // `sk_reset_timer()` with a new expiry re-queues the timer (its wheel level computed
        // from the new timeout); the same expiry leaves it where it is (`mod_timer()`).
        if self.snd.timer != before || timer.is_some() {
            self.armed = self.snd.timer.map(|t| (t, now));
        }
        let sent: Vec<Sent> = cx
            .out
            .iter()
            .map(|t| Sent {
                seg: t.seg,
                rtx: t.rtx,
                cwr: t.cwr,
                at: now,
                timer,
                timer_jiffies,
            })
            .collect();
        self.out.extend(sent.iter().copied());
        sent
    }

    /// The pending timer.
    pub fn timer(&self) -> Option<Timer> {
        self.snd.timer
    }

    /// An inbound ACK at `now` (ms).
    pub fn ack(&mut self, now: u32, ack: &AckSeg) -> Vec<Sent> {
        self.run(now.max(self.now), |s, cx| s.tcp_ack(cx, ack))
    }

    /// Fires the pending timer at its deadline; `None` if none is armed.
    pub fn fire(&mut self) -> Option<(TimerKind, Vec<Sent>)> {
        self.fire_late(0)
    }

    /// Fires the pending timer `late_ms` after its deadline (a kernel timer's slack).
    pub fn fire_late(&mut self, late_ms: u32) -> Option<(TimerKind, Vec<Sent>)> {
        let tm = self.snd.timer?;
        let at = (tm.deadline + late_ms).max(self.now);
        let sent = self.run_timer(at, Some(tm.kind), |s, cx| {
            s.tcp_write_timer_handler(cx, tm.kind)
        });
        Some((tm.kind, sent))
    }

    /// The application writes `segs` more segments at `now`.
    pub fn write(&mut self, now: u32, segs: u32) -> Vec<Sent> {
        self.run(now.max(self.now), |s, cx| s.tcp_sendmsg(cx, segs))
    }

    /// The host queue fills (TSQ): model-only.
    pub fn tsq_fill(&mut self, now: u32) {
        self.now = now.max(self.now);
        self.snd.ghost.ev = Default::default();
        self.last_mib = MibDelta::default();
        self.tsq_full = true;
    }

    /// The host queue drains (`tcp_tsq_handler`): model-only.
    pub fn tsq_drain(&mut self, now: u32) -> Vec<Sent> {
        self.tsq_full = false;
        self.run(now.max(self.now), |s, cx| s.tcp_tsq_handler(cx))
    }

    /// How much later than the model's time the kernel may really send `s` (µs): a
    /// timer-driven transmission is rounded to jiffies whose phase the model does not know. The
    /// timeout goes through `usecs_to_jiffies()` (up to a jiffy later), then the timer wheel
    /// (kernel/time/timer.c, `calc_wheel_index()`): a timeout below 63 jiffies sits in level 0
    /// and expires on the next tick, one of 63..504 in level 1 whose 8-jiffy buckets expire up
    /// to 8 jiffies after the deadline, and so on (granularity 8^level).
    pub fn timer_spread_us(&self, s: &Sent) -> i64 {
        let jiffy = 1_000_000 / self.cfg.hz as i64;
        if s.timer.is_none() {
            return 0;
        }
        let (mut start, mut gran) = (63u64, 1i64);
        while s.timer_jiffies >= start && gran < 8i64.pow(4) {
            start <<= 3;
            gran *= 8;
        }
        (gran + 1) * jiffy
    }

    /// `tcp_info` as the model computes it; `None` for fields the model does not compute.
    pub fn tcpi(&self, field: &str) -> Option<i64> {
        let s = &self.snd;
        Some(match field {
            "tcpi_state" => 1, // TCP_ESTABLISHED
            "tcpi_ca_state" => s.ca_state as i64,
            "tcpi_snd_cwnd" => s.cwnd as i64,
            "tcpi_snd_ssthresh" => s.ssthresh as i64,
            "tcpi_unacked" => s.packets_out as i64,
            "tcpi_sacked" => s.sacked_out as i64,
            "tcpi_lost" => s.lost_out as i64,
            "tcpi_retrans" => s.retrans_out as i64,
            "tcpi_total_retrans" => s.total_retrans as i64,
            "tcpi_retransmits" => s.icsk_retransmits as i64,
            "tcpi_backoff" => s.icsk_backoff as i64,
            "tcpi_reordering" => s.reordering as i64,
            // `tp->reord_seen`: the model's counter saturates at 3 (its decisions only test it
            // for zero), so it is the kernel's value only below that.
            "tcpi_reord_seen" if s.reord_seen < 3 => s.reord_seen as i64,
            // tcp_get_info(): srtt, mdev (not rttvar), icsk_rto with its backoff, min_rtt; only
            // when the model learns them (the fixed-RTT model does not compute them).
            "tcpi_rtt" if self.cfg.rtt_estimator => s.srtt_us() as i64,
            "tcpi_rttvar" if self.cfg.rtt_estimator => (s.rtt_est.mdev_us >> 2) as i64,
            "tcpi_min_rtt" if self.cfg.rtt_estimator => s.tcp_min_rtt() as i64,
            "tcpi_rto" if self.cfg.rtt_estimator => {
                (s.icsk_rto_jiffies(&self.cfg) * 1_000_000 / self.cfg.hz as u64) as i64
            }
            _ => return None,
        })
    }
}

/// A model duration in ms as jiffies (rounded up, as `msecs_to_jiffies()`).
fn ms_to_jiffies(ms: u32, hz: u32) -> u64 {
    (ms as u64 * hz as u64).div_ceil(1000)
}
