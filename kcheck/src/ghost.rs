//! Ghost truth for a kernel run: which original transmissions the script's network dropped.
//!
//! A script *is* the network and the receiver: a transmission it never acknowledges was
//! dropped. What a script does not say directly is which copy of a retransmitted range reached
//! the receiver. Two sources answer that:
//! * **Declared**: scripts exported from the model (`trc check --out`, `trc diff`, the
//!   `regressions/` corpus) say in their step comments which originals the model's network
//!   dropped (`the network drops seg K (A:B, original sent at ...)`); that is the model's ghost
//!   `orig_dropped`, exactly.
//! * **Inferred** (any other script): from the ACKs themselves. The original of `[a, b)` is
//!   *delivered* if an ACK covered the range before its first retransmission left, or a DSACK
//!   reported a duplicate of it, or (timestamps) the ACK that filled the hole at `a` echoes a
//!   TSval older than the first retransmission's. It is *dropped* if no ACK of the script ever
//!   covers it, or the ACK that filled the hole at `a` echoes a retransmission's TSval. Anything
//!   else (no timestamps, a range first reported by a SACK block after its retransmission) is
//!   *unknown*, and a monitor that needs it says "undecided", never "holds".

use super::observe::{covers, dsacks, ts_at_or_after, KTrace};
use serde::{Deserialize, Serialize};
use trc_model::seq::{after, before};

/// The marker of an exported script's header.
const EXPORT_SIGNATURE: &str = "// model segment k = bytes";

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum GhostSource {
    /// From the exporter's step comments (the model's ghost).
    Declared,
    /// From the script's ACKs.
    Inferred,
}

/// What became of the original transmission of a range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fate {
    Delivered(String),
    Dropped(String),
    Unknown(String),
}

#[derive(Clone, Debug, Serialize)]
pub struct Ghost {
    pub source: GhostSource,
    /// Declared: the ranges whose original was dropped.
    pub dropped: Vec<(u32, u32)>,
}

impl Ghost {
    /// The ghost of a script's text: declared if the exporter wrote it, else inferred.
    pub fn of_script(text: &str) -> Ghost {
        if !text
            .lines()
            .any(|l| l.trim_start().starts_with(EXPORT_SIGNATURE))
        {
            return Ghost {
                source: GhostSource::Inferred,
                dropped: Vec::new(),
            };
        }
        let mut dropped = Vec::new();
        for l in text.lines() {
            let Some(rest) = l.split("the network drops seg ").nth(1) else {
                continue;
            };
            // "K (A:B, original sent at ..."
            let Some(inner) = rest.split('(').nth(1) else {
                continue;
            };
            let mut it = inner.splitn(2, ", ");
            let (Some(range), Some(kind)) = (it.next(), it.next()) else {
                continue;
            };
            if !kind.starts_with("original") {
                continue;
            }
            let mut ab = range.split(':');
            if let (Some(Ok(a)), Some(Ok(b))) = (
                ab.next().map(str::parse::<u32>),
                ab.next().map(str::parse::<u32>),
            ) {
                dropped.push((a, b));
            }
        }
        Ghost {
            source: GhostSource::Declared,
            dropped,
        }
    }

    /// The fate of the original transmission of `[a, b)`.
    pub fn original(&self, k: &KTrace, a: u32, b: u32) -> Fate {
        match self.source {
            GhostSource::Declared => {
                if self
                    .dropped
                    .iter()
                    .any(|&(c, d)| before(c, b) && before(a, d))
                {
                    Fate::Dropped("the script's header declares it dropped".into())
                } else {
                    Fate::Delivered("not among the drops the script declares".into())
                }
            }
            GhostSource::Inferred => infer(k, a, b),
        }
    }
}

fn infer(k: &KTrace, a: u32, b: u32) -> Fate {
    // The original: the first send holding byte a; its retransmissions: later sends overlapping [a, b).
    let Some(oi) = k
        .sends
        .iter()
        .position(|s| !after(s.seq, a) && after(s.end, a))
    else {
        return Fate::Unknown(format!("{a}:{b} was never sent"));
    };
    let orig = &k.sends[oi];
    let Some(r1) = k.sends[oi + 1..]
        .iter()
        .find(|s| before(s.seq, b) && before(a, s.end))
    else {
        return Fate::Delivered(format!("{a}:{b} was sent once"));
    };
    if k.acks.iter().any(|x| dsacks(x, a, b)) {
        return Fate::Delivered(format!("a DSACK reported a duplicate of {a}:{b}"));
    }
    let Some(ci) = k.acks.iter().position(|x| covers(x, a, b)) else {
        return Fate::Dropped(format!("no ACK of the script covers {a}:{b}"));
    };
    let c = &k.acks[ci];
    if c.t_ms < r1.t_ms {
        return Fate::Delivered(format!("ACKed (line {}) before its retransmission", c.line));
    }
    let prev_una = k.acks[..ci]
        .iter()
        .fold(1u32, |u, x| if after(x.ack, u) { x.ack } else { u });
    let fills_hole = !before(c.ack, b) && prev_una == a;
    if let (true, true, Some(ecr), Some(v0), Some(v1)) =
        (k.ts, fills_hole, c.tsecr, orig.tsval, r1.tsval)
    {
        if v0 != v1 {
            if ts_at_or_after(ecr, v1) {
                return Fate::Dropped(format!(
                    "the ACK that filled the hole at {a} (line {}) echoes a retransmission's TSval",
                    c.line
                ));
            }
            if ts_at_or_after(ecr, v0) {
                return Fate::Delivered(format!(
                    "the ACK that filled the hole at {a} (line {}) echoes the original's TSval",
                    c.line
                ));
            }
        }
    }
    Fate::Unknown(format!("nothing tells which copy of {a}:{b} reached the receiver (no timestamp echo of the hole's filler, no DSACK)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_drops_are_read_from_the_exporters_comments() {
        let text = "// model segment k = bytes 1+1000k .. 1+1000(k+1); TS vals\n// step 1 (model t=0 ms): the network drops seg 3 (2001:3001, original sent at 0 ms): it is never ACKed\n// step 5 (model t=64 ms): the network drops seg 1 (1:1001, retransmission sent at 64 ms): it is never ACKed\n";
        let g = Ghost::of_script(text);
        assert_eq!(g.source, GhostSource::Declared);
        assert_eq!(g.dropped, vec![(2001, 3001)]);
        assert!(matches!(
            g.original(&KTrace::default(), 2001, 3001),
            Fate::Dropped(_)
        ));
        assert!(matches!(
            g.original(&KTrace::default(), 1, 1001),
            Fate::Delivered(_)
        ));
        assert_eq!(
            Ghost::of_script("// a hand-written script\n").source,
            GhostSource::Inferred
        );
    }
}
