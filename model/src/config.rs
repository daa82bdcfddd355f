//! Bounds and options of one exploration. Defaults mirror the kernel's sysctl defaults
//! (`tcp_sack=1`, `tcp_timestamps=1`, `tcp_frto=2`, `tcp_early_retrans=3`, `tcp_dsack=1`,
//! `tcp_reordering=3`) except where an exhaustive run needs a small bound (segments, losses...).

use serde::{Deserialize, Serialize};

/// Which congestion-control module the connection uses (`tcp_congestion_ops`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum CcKind {
    /// `tcp_reno_*` (`net/ipv4/tcp_cong.c`).
    Reno,
    /// CUBIC with HyStart (`tcp_cubic.c`): loss response, cubic window growth, HyStart.
    #[default]
    Cubic,
}

/// Whether SACK is negotiated: both (an initial nondeterministic choice), or only one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum SackMode {
    #[default]
    Both,
    Sack,
    NoSack,
}

/// Bounds and options. All times are milliseconds of model time.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Segments the application has written at the start (MSS-sized).
    pub segments: u16,
    /// Extra segments the application may write later, one `Write` event each.
    pub extra_writes: u16,
    /// Initial congestion window (the route's `initcwnd`; kernel default 10).
    pub initcwnd: u32,
    /// Transmissions the network may drop.
    pub max_losses: u8,
    /// ACKs the network may lose (the segment is delivered, its ACK never arrives).
    pub max_ack_losses: u8,
    /// How many older in-flight packets a delivered packet may overtake.
    pub max_reorder: u8,
    /// RTO expiries the environment may let happen.
    pub max_rtos: u8,
    /// TLP expiries.
    pub max_tlps: u8,
    /// Times the host queue may fill up (TSQ holds retransmissions and new data until drained).
    pub max_tsq: u8,
    /// ACKs that may carry ECE (only with `ecn`).
    pub max_ece: u8,
    /// ACKs the network may hold back and deliver after a newer one (ACK reordering): the sender
    /// gets them below `snd_una`, `tcp_ack()`'s OLD_ACK path. 0 (default): ACKs are monotone.
    #[serde(skip_serializing_if = "is_zero_u8")]
    pub max_old_acks: u8,
    /// Model time horizon: no event may happen later than this.
    pub horizon_ms: u32,
    /// Path round-trip time: a packet's ACK arrives no earlier than this after it was sent.
    pub rtt_ms: u32,
    /// SACK negotiation.
    pub sack: SackMode,
    /// TCP timestamps (RFC 7323) negotiated.
    pub timestamps: bool,
    /// `tcp_frto` != 0.
    pub frto: bool,
    /// `tcp_early_retrans` in {3,4}: TLP enabled.
    pub tlp: bool,
    /// `tcp_dsack`: the receiver sends DSACKs.
    pub dsack: bool,
    /// ECN negotiated (ECE may be set on ACKs).
    pub ecn: bool,
    /// `tcp_reordering` sysctl.
    pub sysctl_reordering: u32,
    /// `tcp_max_reordering` sysctl.
    pub sysctl_max_reordering: u32,
    /// Initial sequence number of the first data byte (segment 0 covers `[isn, isn+1)`).
    pub isn: u32,
    /// TS clock value at model time 0 (so TSvals are never the sentinel 0 unless asked).
    pub ts_base: u32,
    /// Congestion control.
    pub cc: CcKind,
    /// Extra delays (ms) the environment may add to a delivery ("late" ACKs, so RTT samples
    /// vary and HyStart's paths are reachable). Empty (default): every ACK is on time.
    pub rtt_extra_ms: Vec<u32>,
    /// Idle gaps (ms) the application may leave before a later write (`extra_writes`): the
    /// write happens that much after the current time, with nothing in flight. Empty (default):
    /// writes happen at the current time only.
    pub write_gap_ms: Vec<u32>,
    /// `HZ`: jiffies per second (CUBIC's epoch clock). 100, 250 (our machines) or 1000.
    pub hz: u32,
    /// µs that one model millisecond stands for in CUBIC/HyStart's clocks (jiffies, µs
    /// `tcp_mstamp`). 1000 (default) = real time; smaller values model sub-ms paths for HyStart
    /// only (timers and the TS clock stay in ms).
    pub cc_us_per_ms: u32,
    /// `sk_pacing_status != SK_PACING_NONE` (fq qdisc or internal pacing); our machines: false.
    pub pacing: bool,
    /// `sk_gso_max_size` in bytes (65536 without BIG TCP).
    pub gso_max_size: u32,
    /// CUBIC's `hystart_low_window` module parameter (16); tests lower it to keep bounds small.
    pub hystart_low_window: u32,
    /// CUBIC's `hystart` module parameter.
    pub hystart: bool,
    /// `tcp_slow_start_after_idle` (a fresh namespace: 1; packetdrill's defaults.sh: 0). Only a
    /// write after an idle gap (`write_gap_ms`) can meet it.
    #[serde(skip_serializing_if = "is_false")]
    pub slow_start_after_idle: bool,
    /// CUBIC's `hystart_detect` module parameter: 1 ACK train, 2 delay, 3 both (default).
    #[serde(skip_serializing_if = "is_three")]
    pub hystart_detect: u8,
    /// MSS in bytes (only for the pacing rate HyStart's cushion reads).
    pub mss: u32,
    /// The RTT estimator (`sender/rtt.rs`: `tcp_rtt_estimator()`, `tcp_set_rto()`, the
    /// `min_rtt` filter) learns from every RTT sample, in µs. Off, the model keeps the
    /// handshake's RTT (`rtt_ms`) as srtt and min_rtt, rttvar at its floor, and whole-ms RACK
    /// arithmetic. `trc replay` and `trc diff` always turn it on; `trc check --rtt-estimator`.
    #[serde(skip_serializing_if = "is_false")]
    pub rtt_estimator: bool,
    /// Where the kernel's jiffy boundaries fall: model time 0 is this many µs after one
    /// (`0 <= jiffy_phase_us < 10^6/hz`; default 0). Only CUBIC reads jiffies (`bictcp_update`,
    /// the HyStart blackout, `TX_START`); a real kernel's phase is unknown, so `trc diff` refuses
    /// walks whose decisions change with it (docs/explanation/differential.md, "CUBIC's jiffy phase").
    #[serde(skip_serializing_if = "is_zero")]
    pub jiffy_phase_us: u32,
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

fn is_zero_u8(v: &u8) -> bool {
    *v == 0
}

fn is_false(v: &bool) -> bool {
    !*v
}

fn is_three(v: &u8) -> bool {
    *v == 3
}

impl Default for Config {
    fn default() -> Self {
        Config {
            segments: 6,
            extra_writes: 0,
            initcwnd: 5,
            max_losses: 1,
            max_ack_losses: 0,
            max_reorder: 1,
            max_rtos: 1,
            max_tlps: 1,
            max_tsq: 1,
            max_ece: 0,
            max_old_acks: 0,
            horizon_ms: 10_000,
            rtt_ms: 50,
            sack: SackMode::Both,
            timestamps: true,
            frto: true,
            tlp: true,
            dsack: true,
            ecn: false,
            sysctl_reordering: 3,
            sysctl_max_reordering: 300,
            isn: 1,
            ts_base: 1,
            cc: CcKind::Cubic,
            rtt_extra_ms: Vec::new(),
            write_gap_ms: Vec::new(),
            hz: 250,
            cc_us_per_ms: 1000,
            pacing: false,
            gso_max_size: 65536,
            hystart_low_window: 16,
            hystart: true,
            hystart_detect: 3,
            slow_start_after_idle: false,
            mss: 1000,
            rtt_estimator: false,
            jiffy_phase_us: 0,
        }
    }
}

/// A bound that makes the exploration impossible or meaningless.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("segments must be between 1 and {max} (got {got})")]
    Segments { got: u32, max: u32 },
    #[error("initcwnd must be at least 1")]
    InitCwnd,
    #[error("rtt_ms must be between 1 and 10000 (got {0})")]
    Rtt(u32),
    #[error("horizon_ms must be at least rtt_ms")]
    Horizon,
    #[error("max_ece > 0 needs ecn = true")]
    EceWithoutEcn,
    #[error("hz must be 100, 250, 500 or 1000 (got {0})")]
    Hz(u32),
    #[error("hystart_detect must be 0..=3 (1 ACK train, 2 delay; got {0})")]
    HystartDetect(u8),
    #[error("cc_us_per_ms must be between 1 and 1000 (got {0})")]
    UsPerMs(u32),
    #[error("jiffy_phase_us must be below one jiffy, 10^6/hz µs (got {0})")]
    JiffyPhase(u32),
    /// A field outside the range the model's (and the kernel's) arithmetic holds for.
    #[error("{field} must be between {min} and {max} (got {got}){why}")]
    Range {
        field: &'static str,
        min: u64,
        max: u64,
        got: u64,
        why: &'static str,
    },
    #[error("{field} may list at most {max} values (got {got})")]
    TooMany {
        field: &'static str,
        max: usize,
        got: usize,
    },
}

/// Upper bound on `segments + extra_writes`. The per-segment state (tags, transmit times, the
/// ghost masks) grows with the data; small bounds keep it inline in the state (see
/// [`SegMask`](crate::segmask::SegMask)), so the exhaustive checker pays for large ones only
/// when asked. The bound keeps segment indices and flight positions in 16 bits.
pub const MAX_SEGMENTS: u32 = 16_384;

impl Config {
    /// Total application data, in segments.
    pub fn total_segments(&self) -> u32 {
        self.segments as u32 + self.extra_writes as u32
    }

    /// Rejects impossible bounds with a clear message.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let total = self.total_segments();
        if self.segments == 0 || total > MAX_SEGMENTS {
            return Err(ConfigError::Segments {
                got: total,
                max: MAX_SEGMENTS,
            });
        }
        if self.initcwnd == 0 {
            return Err(ConfigError::InitCwnd);
        }
        if self.rtt_ms == 0 || self.rtt_ms > 10_000 {
            return Err(ConfigError::Rtt(self.rtt_ms));
        }
        if self.horizon_ms < self.rtt_ms {
            return Err(ConfigError::Horizon);
        }
        if self.max_ece > 0 && !self.ecn {
            return Err(ConfigError::EceWithoutEcn);
        }
        if ![100, 250, 500, 1000].contains(&self.hz) {
            return Err(ConfigError::Hz(self.hz));
        }
        if self.hystart_detect > 3 {
            return Err(ConfigError::HystartDetect(self.hystart_detect));
        }
        if self.cc_us_per_ms == 0 || self.cc_us_per_ms > 1000 {
            return Err(ConfigError::UsPerMs(self.cc_us_per_ms));
        }
        if self.jiffy_phase_us >= 1_000_000 / self.hz {
            return Err(ConfigError::JiffyPhase(self.jiffy_phase_us));
        }
        self.validate_ranges()
    }

    /// The numeric fields' ranges (the constants below): values the kernel's own types hold without
    /// overflow in every computation the model makes with them (`cwnd · 717` and
    /// `cwnd · 1741` in CUBIC, the pacing rate `mss · 80000 · 200 · cwnd`), sequence numbers and
    /// TS values that do not wrap within a run, and times the model's u32 clocks hold.
    pub fn validate_ranges(&self) -> Result<(), ConfigError> {
        let range = |field: &'static str, got: u64, min: u64, max: u64, why: &'static str| {
            if (min..=max).contains(&got) {
                Ok(())
            } else {
                Err(ConfigError::Range {
                    field,
                    min,
                    max,
                    got,
                    why,
                })
            }
        };
        range("initcwnd", self.initcwnd.into(), 1, MAX_CWND.into(), "")?;
        range(
            "horizon_ms",
            self.horizon_ms.into(),
            self.rtt_ms.into(),
            MAX_HORIZON_MS.into(),
            "",
        )?;
        range(
            "sysctl_reordering",
            self.sysctl_reordering.into(),
            1,
            MAX_REORDERING.into(),
            "",
        )?;
        range(
            "sysctl_max_reordering",
            self.sysctl_max_reordering.into(),
            1,
            MAX_REORDERING.into(),
            "",
        )?;
        range(
            "isn",
            self.isn.into(),
            0,
            MAX_SEQ_BASE.into(),
            " (the model's sequence numbers do not wrap)",
        )?;
        range(
            "ts_base",
            self.ts_base.into(),
            0,
            MAX_SEQ_BASE.into(),
            " (the model's TS values do not wrap)",
        )?;
        range("mss", self.mss.into(), MIN_MSS.into(), MAX_MSS.into(), "")?;
        range(
            "gso_max_size",
            self.gso_max_size.into(),
            self.mss.into(),
            MAX_GSO_SIZE.into(),
            " (at least one MSS)",
        )?;
        range(
            "hystart_low_window",
            self.hystart_low_window.into(),
            1,
            MAX_CWND.into(),
            "",
        )?;
        range(
            "max_old_acks",
            self.max_old_acks.into(),
            0,
            MAX_OLD_ACKS.into(),
            " (each one multiplies the branching)",
        )?;
        for (field, v) in [
            ("rtt_extra_ms", &self.rtt_extra_ms),
            ("write_gap_ms", &self.write_gap_ms),
        ] {
            if v.len() > MAX_DELAY_CHOICES {
                return Err(ConfigError::TooMany {
                    field,
                    max: MAX_DELAY_CHOICES,
                    got: v.len(),
                });
            }
            for &d in v {
                range(field, d.into(), 1, u16::MAX.into(), " (each value)")?;
            }
        }
        Ok(())
    }
}

/// Largest `initcwnd` (and `hystart_low_window`): cwnd stays far below the 5.99 M at which
/// CUBIC's `cwnd · 717` (u32 in the kernel too) overflows.
pub const MAX_CWND: u32 = 65_535;
/// Largest `horizon_ms` (1 h: the µs clocks CUBIC and HyStart keep in u32 hold 71 minutes).
pub const MAX_HORIZON_MS: u32 = 3_600_000;
/// Largest `tcp_reordering` / `tcp_max_reordering`.
pub const MAX_REORDERING: u32 = 65_535;
/// Largest `isn` / `ts_base`: a run adds at most a horizon's worth to them, far from a wrap.
pub const MAX_SEQ_BASE: u32 = 0x7fff_ffff;
/// `net.ipv4.tcp_min_snd_mss` and the largest MSS of an IPv4 path (MTU 65535).
pub const MIN_MSS: u32 = 48;
pub const MAX_MSS: u32 = 65_495;
/// Largest `gso_max_size` (BIG TCP's 512 KiB).
pub const MAX_GSO_SIZE: u32 = 512 * 1024;
/// Largest `max_old_acks` budget.
pub const MAX_OLD_ACKS: u8 = 16;
/// Most `rtt_extra_ms` / `write_gap_ms` choices (each one multiplies the branching).
pub const MAX_DELAY_CHOICES: usize = 16;
