//! Script time as packetdrill resolves it: when each event is due, and how far from that it may
//! happen.
//!
//! * **Relative times** (`+t`, `+a~+b`, `*`) count from the moment the previous event
//!   *completed* — for an outbound packet, when it was seen; for a syscall, when it returned; for
//!   a blocking call, when it blocked — except that an inbound packet right after an inbound
//!   packet counts from that packet's *scheduled* time, so a burst of injected segments keeps
//!   the script's spacing (packetdrill's `adjust_relative_event_times` and
//!   `is_event_start_time_anchored` in `run.c`). Absolute times are used as written.
//! * **Tolerance**: the larger of `--tolerance_usecs` (default 4000 µs) and
//!   `--tolerance_percent` (default 12.5 %) of the gap since the previous event's due time,
//!   both early and late (`verify_time` in `run.c`). A range `a~b` accepts `a - tol ..= b + tol`;
//!   `*` accepts any time.
//! * A blocking call `+a...b` is due to *return* at `b`, counted from the same anchor as its
//!   start, with a tolerance taken from the gap between its start and end.

use crate::ast::{Time, TimePoint};

/// packetdrill's `--tolerance_usecs` default.
pub const DEFAULT_TOLERANCE_USECS: i64 = 4000;
/// packetdrill's `--tolerance_percent` default.
pub const DEFAULT_TOLERANCE_PERCENT: f64 = 12.5;

/// The timing tolerance rule.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerance {
    pub usecs: i64,
    pub percent: f64,
}

impl Default for Tolerance {
    fn default() -> Tolerance {
        Tolerance {
            usecs: DEFAULT_TOLERANCE_USECS,
            percent: DEFAULT_TOLERANCE_PERCENT,
        }
    }
}

impl Tolerance {
    /// The tolerance of an event due `gap_us` after the previous event's due time.
    pub fn after_gap(&self, gap_us: i64) -> i64 {
        let pct = (self.percent / 100.0 * gap_us.max(0) as f64) as i64;
        self.usecs.max(pct)
    }
}

/// The event kinds that matter to the relative-time rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    Inbound,
    Outbound,
    Syscall,
    Shell,
    Code,
}

/// When one event is due, in script µs (time 0 = the first event).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Due {
    /// Due time (the start of a range).
    pub start: i64,
    /// End of a range (`start` otherwise).
    pub end: i64,
    /// `*`: any time is right.
    pub any: bool,
    /// Allowed distance from `start..=end`.
    pub tol: i64,
    /// What relative times were counted from.
    pub anchor: i64,
    /// The time was written relative (`+t`, `+a~+b`).
    pub relative: bool,
}

impl Due {
    /// Whether an event that happened at `t_us` is on time.
    pub fn accepts(&self, t_us: i64) -> bool {
        self.any
            || (t_us >= self.start.saturating_sub(self.tol)
                && t_us <= self.end.saturating_add(self.tol))
    }

    /// packetdrill's wording of a timing error for `what` ("outbound packet", "inbound
    /// packet", "system call start", "command", "data collection for code").
    pub fn error(&self, what: &str, actual_us: i64) -> String {
        let s = |us: i64| format!("{:.6}", us as f64 / 1e6);
        if self.start == self.end {
            format!(
                "timing error: expected {what} at {} sec but happened at {} sec; tolerance {} sec",
                s(self.start),
                s(actual_us),
                s(self.tol)
            )
        } else {
            format!("timing error: expected {what} in time range {}~{} sec but happened at {} sec; tolerance {} sec", s(self.start), s(self.end), s(actual_us), s(self.tol))
        }
    }
}

/// The script clock: the previous event's kind and due time.
#[derive(Clone, Debug, Default)]
pub struct Clock {
    prev: Option<(EventKind, i64)>,
}

fn point(p: TimePoint, anchor: i64) -> i64 {
    match p {
        TimePoint::Absolute(v) => v,
        TimePoint::Relative(v) => anchor.saturating_add(v),
    }
}

impl Clock {
    /// When an event of `kind` written with `time` is due, given that the previous event
    /// completed at `now_us`; records it as the previous event.
    pub fn resolve(&mut self, time: Time, kind: EventKind, now_us: i64, tol: &Tolerance) -> Due {
        let anchor = match self.prev {
            Some((EventKind::Inbound, t)) if kind == EventKind::Inbound => t,
            _ => now_us,
        };
        let relative = matches!(
            time,
            Time::Relative(_)
                | Time::Range {
                    start: TimePoint::Relative(_),
                    ..
                }
        );
        let (start, end, any) = match time {
            Time::Absolute(v) => (v, v, false),
            Time::Relative(v) => (anchor.saturating_add(v), anchor.saturating_add(v), false),
            Time::Range { start, end } => (point(start, anchor), point(end, anchor), false),
            Time::Any => (now_us, now_us, true),
        };
        let gap = self.prev.map_or(0, |(_, t)| start.saturating_sub(t));
        self.prev = Some((kind, start));
        Due {
            start,
            end,
            any,
            tol: tol.after_gap(gap),
            anchor,
            relative,
        }
    }

    /// When a blocking call that started as `start` is due to return (its `...end` time).
    pub fn blocking_end(start: &Due, end: Time, tol: &Tolerance) -> Due {
        let t = match end {
            // packetdrill writes the end without '+' and counts it from the start's anchor when
            // the start was relative.
            Time::Absolute(v) if start.relative => start.anchor.saturating_add(v),
            Time::Absolute(v) => v,
            Time::Relative(v) => start.anchor.saturating_add(v),
            Time::Range { start: s, .. } => point(s, start.anchor),
            Time::Any => start.start,
        };
        Due {
            start: t,
            end: t,
            any: matches!(end, Time::Any),
            tol: tol.after_gap(t.saturating_sub(start.start)),
            anchor: start.anchor,
            relative: start.relative,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOL: Tolerance = Tolerance {
        usecs: 4000,
        percent: 12.5,
    };

    #[test]
    fn relative_counts_from_completion_except_inbound_after_inbound() {
        let mut c = Clock::default();
        let w = c.resolve(Time::Absolute(0), EventKind::Syscall, 0, &TOL);
        assert_eq!((w.start, w.tol), (0, 4000));
        // An outbound packet 100 ms after a write that completed at 0.2 ms.
        let o = c.resolve(Time::Relative(100_000), EventKind::Outbound, 200, &TOL);
        assert_eq!(o.start, 100_200);
        assert_eq!(o.tol, 12_525, "12.5 % of the gap");
        // The packet was seen at 103 ms: the next relative time counts from there.
        let i1 = c.resolve(Time::Relative(50_000), EventKind::Inbound, 103_000, &TOL);
        assert_eq!(i1.start, 153_000);
        // Inbound after inbound: from the previous one's due time, not from when it went out.
        let i2 = c.resolve(Time::Relative(3_000), EventKind::Inbound, 153_400, &TOL);
        assert_eq!(i2.start, 156_000);
        // A range counts both ends from the anchor.
        let r = c.resolve(
            Time::Range {
                start: TimePoint::Relative(300_000),
                end: TimePoint::Relative(310_000),
            },
            EventKind::Outbound,
            156_100,
            &TOL,
        );
        assert_eq!((r.start, r.end), (456_100, 466_100));
        assert!(
            r.accepts(456_100 - r.tol) && r.accepts(466_100 + r.tol) && !r.accepts(466_101 + r.tol)
        );
        let any = c.resolve(Time::Any, EventKind::Outbound, 500_000, &TOL);
        assert!(any.any && any.accepts(0));
    }

    #[test]
    fn tolerance_is_the_larger_of_the_two() {
        assert_eq!(TOL.after_gap(1000), 4000);
        assert_eq!(TOL.after_gap(250_000), 31_250);
        assert_eq!(TOL.after_gap(-5), 4000);
        let d = Due {
            start: 1_000_000,
            end: 1_000_000,
            any: false,
            tol: 6250,
            anchor: 0,
            relative: false,
        };
        assert_eq!(d.error("inbound packet", 1_154_286), "timing error: expected inbound packet at 1.000000 sec but happened at 1.154286 sec; tolerance 0.006250 sec");
    }

    #[test]
    fn blocking_end_shares_the_anchor() {
        let mut c = Clock::default();
        let start = c.resolve(Time::Relative(2_000), EventKind::Syscall, 10_000, &TOL);
        assert_eq!(start.start, 12_000);
        // `+.002 ... 0.004 connect(...)`: due to return at anchor + 4 ms.
        let end = Clock::blocking_end(&start, Time::Absolute(4_000), &TOL);
        assert_eq!(end.start, 14_000);
        // `0.1...0.3` with an absolute start: absolute end.
        let mut c = Clock::default();
        let s = c.resolve(Time::Absolute(100_000), EventKind::Syscall, 0, &TOL);
        assert_eq!(
            Clock::blocking_end(&s, Time::Absolute(300_000), &TOL).start,
            300_000
        );
    }
}
