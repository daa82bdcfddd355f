//! The pictures of a model path (a counterexample): a column per step of the path, the model's
//! time under it, a row per segment.

use super::{Column, Item, Pictures};
use std::collections::HashMap;
use trc_engine::Path;
use trc_model::model::{Action, State, TcpModel};

/// Both pictures of `path` (the `trc graph` page, the page beside each `.pkt` of `trc check
/// --out`); `violated` names the property the last step breaks, if any.
pub fn render_path(model: &TcpModel, path: &Path<Action>, violated: Option<&str>) -> String {
    super::render(&of_path(model, path, violated))
}

/// What the pictures draw of `path`.
pub fn of_path(model: &TcpModel, path: &Path<Action>, violated: Option<&str>) -> Pictures {
    let steps = trc_engine::replay(model, path);
    let isn = model.cfg.isn;
    // Sequence numbers drawn: isn .. one past the highest segment that ever left.
    let top_seg = steps
        .iter()
        .flat_map(|(_, s)| s.flight.iter().map(|p| p.seg as u32 + 1))
        .chain(
            steps
                .iter()
                .map(|(_, s)| s.sender.snd_nxt.wrapping_sub(isn)),
        )
        .max()
        .unwrap_or(1)
        .max(1);
    // Where each transmission (seg, sent, rtx) was drawn: its column.
    let mut tx_col: HashMap<(u16, u32, bool), usize> = HashMap::new();
    let mut columns = Vec::new();
    for (k, (a, s)) in steps.iter().enumerate() {
        let prev = if k > 0 { Some(&steps[k - 1].1) } else { None };
        let mut items = Vec::new();
        if let (Some(a), Some(p)) = (a, prev) {
            delivery(&mut items, model, a, p, s, &tx_col);
        }
        markers(&mut items, a.as_ref(), s);
        transmissions(&mut items, k, prev, s, &mut tx_col);
        undos(&mut items, s);
        columns.push(Column {
            time_ms: s.now as f64,
            cwnd: s.sender.cwnd,
            ssthresh: s.sender.ssthresh,
            ca: s.sender.ca_state,
            title: format!("step {k}"),
            items,
        });
    }
    let n = columns.len();
    Pictures {
        columns,
        row_labels: (0..=top_seg)
            .map(|off| isn.wrapping_add(off).to_string())
            .collect(),
        violated: violated.filter(|_| n > 1).map(|id| (n - 1, id.to_string())),
        note: "a column per step, model time below; sequence numbers up".into(),
    }
}

/// What the network did at this step with a packet in flight before it (`p`: the state before;
/// `s`: after): its travel from the column it was sent in, a drop mark, and the ACK a delivery
/// caused with the receiver's SACK blocks.
fn delivery(
    items: &mut Vec<Item>,
    model: &TcpModel,
    a: &Action,
    p: &State,
    s: &State,
    tx_col: &HashMap<(u16, u32, bool), usize>,
) {
    let isn = model.cfg.isn;
    let pkt = match a {
        Action::Deliver { pkt }
        | Action::DeliverEce { pkt }
        | Action::DeliverAckLost { pkt }
        | Action::DeliverAckHeld { pkt }
        | Action::DeliverLate { pkt, .. }
        | Action::Drop { pkt } => p.flight.get(*pkt as usize).copied(),
        _ => None,
    };
    let dropped = matches!(a, Action::Drop { .. });
    if let Some(pk) = pkt {
        let mid = pk.seg as f64 + 0.5;
        if let Some(c) = tx_col.get(&(pk.seg, pk.sent, pk.rtx)) {
            items.push(Item::Travel {
                from: *c,
                mid,
                dropped,
            });
        }
        if dropped {
            let seg = pk.seg as u32 + 1;
            items.push(Item::Drop {
                mid,
                dx: 0.0,
                seg: seg.to_string(),
                desc: format!(
                    "the network drops seg {seg} ({})",
                    if pk.rtx { "retransmission" } else { "original" }
                ),
            });
        }
    }
    // The ACK it caused: cumulative ACK and the receiver's SACK blocks after it; or the held
    // ACK arriving late (an old ACK, below snd_una), with the blocks it was sent with.
    type AckBlocks = (u32, Vec<(u32, u32)>, &'static str);
    let ack_blocks: Option<AckBlocks> = match a {
        Action::Deliver { .. } | Action::DeliverEce { .. } | Action::DeliverLate { .. } => Some((
            s.rcv.rcv_nxt(&model.cfg),
            s.rcv.sack_blocks(&model.cfg).collect(),
            "",
        )),
        Action::DeliverAckLost { .. } => Some((
            s.rcv.rcv_nxt(&model.cfg),
            s.rcv.sack_blocks(&model.cfg).collect(),
            "lost",
        )),
        Action::DeliverAckHeld { .. } => Some((
            s.rcv.rcv_nxt(&model.cfg),
            s.rcv.sack_blocks(&model.cfg).collect(),
            "held",
        )),
        Action::OldAck => Some((
            p.held_ack.ack_seq(&model.cfg),
            p.held_ack
                .ack_seg(&model.cfg, p.sender.ts_ok)
                .sacks
                .to_vec(),
            "old",
        )),
        _ => None,
    };
    if let Some((ack, blocks, kind)) = ack_blocks {
        let blocks = if s.sender.sack_ok { blocks } else { Vec::new() };
        // Blocks are drawn where they reach the sender (not on a lost or a held ACK).
        let sacks = if kind.is_empty() || kind == "old" {
            blocks
                .iter()
                .map(|&(b, e)| (b.wrapping_sub(isn) as f64, e.wrapping_sub(isn) as f64))
                .collect()
        } else {
            Vec::new()
        };
        let names: Vec<String> = blocks.iter().map(|(b, e)| format!("{b}-{e}")).collect();
        let why = match kind {
            "lost" => " (lost on the way back)",
            "held" => " (held by the network, arrives later)",
            "old" => " (the held ACK, arriving below snd_una)",
            _ => "",
        };
        let desc = format!(
            "ACK {ack}{}{why}",
            if names.is_empty() {
                String::new()
            } else {
                format!(" SACK {}", names.join(" "))
            }
        );
        items.push(Item::Ack {
            at: ack.wrapping_sub(isn) as f64,
            ack: ack.to_string(),
            sacks,
            kind,
            desc,
        });
    }
}

/// The step's timer (a labelled line across the diagram) or write / TSQ event (a label on top).
fn markers(items: &mut Vec<Item>, a: Option<&Action>, s: &State) {
    let timer = match a {
        Some(Action::Rto) => Some(("RTO", "rto")),
        Some(Action::Tlp) => Some(("TLP", "tlp")),
        Some(Action::Reo) => Some(("RACK timer", "reo")),
        _ => None,
    };
    if let Some((label, kind)) = timer {
        items.push(Item::Timer {
            kind,
            label,
            desc: format!("{label} fires at {} ms", s.now),
        });
    }
    if let Some(label) = match a {
        Some(Action::Write) | Some(Action::WriteAfter { .. }) => Some("write"),
        Some(Action::TsqFill) => Some("TSQ full"),
        Some(Action::TsqDrain) => Some("TSQ drain"),
        _ => None,
    } {
        items.push(Item::Event {
            label: label.into(),
        });
    }
}

/// Step `k`'s transmissions (packets in flight after it that were not before), each noted in
/// `tx_col` with its column.
fn transmissions(
    items: &mut Vec<Item>,
    k: usize,
    prev: Option<&State>,
    s: &State,
    tx_col: &mut HashMap<(u16, u32, bool), usize>,
) {
    let before: Vec<(u16, u32, bool)> = prev
        .map(|p| p.flight.iter().map(|q| (q.seg, q.sent, q.rtx)).collect())
        .unwrap_or_default();
    for q in s.flight.iter() {
        let key = (q.seg, q.sent, q.rtx);
        if before.contains(&key) {
            continue;
        }
        tx_col.insert(key, k);
        let seg = q.seg as u32 + 1;
        items.push(Item::Tx {
            lo: q.seg as f64,
            hi: q.seg as f64 + 1.0,
            rtx: q.rtx,
            seg: seg.to_string(),
            desc: format!(
                "{} of seg {seg} at {} ms",
                if q.rtx {
                    "retransmission"
                } else {
                    "transmission"
                },
                q.sent
            ),
        });
    }
}

/// The step's undos (from its observations).
fn undos(items: &mut Vec<Item>, s: &State) {
    for u in &s.sender.ghost.ev.undos {
        items.push(Item::Undo {
            desc: format!(
                "undo {:?}: cwnd {}→{}, ssthresh {}→{}",
                u.kind,
                u.cwnd_before,
                u.cwnd_after,
                crate::graph::fmt_ssthresh(u.ssthresh_before),
                crate::graph::fmt_ssthresh(u.ssthresh_after)
            ),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use trc_model::config::SackMode;
    use trc_model::{Config, Profile};

    /// The seed bug's counterexample: linux-6.15, no SACK, I1.
    fn seed() -> (TcpModel, Path<Action>) {
        let cfg = Config {
            sack: SackMode::NoSack,
            ..Config::default()
        };
        let specs = trc_properties::select(&["I1".to_string()]).unwrap();
        let model = TcpModel::new(cfg, Profile::by_name("linux-6.15").unwrap())
            .with_properties(trc_properties::properties(&specs));
        let report = trc_engine::check(&model, &trc_engine::Options::default(), None);
        let path = report.properties[0]
            .path
            .clone()
            .expect("I1 is violated on linux-6.15 without SACK");
        (model, path)
    }

    #[test]
    fn seed_bug_pictures_show_drop_rto_retransmission_undo_and_cwnd_back_to_5() {
        let (model, path) = seed();
        let html = render_path(&model, &path, Some("I1"));
        assert_eq!(path.len(), 8);
        // 5 originals at step 0, seg 6 later; one retransmission (of seg 1, at the RTO).
        assert_eq!(html.matches("class=\"tsd-tx\"").count(), 6, "{html}");
        assert_eq!(html.matches("class=\"tsd-tx rtx\"").count(), 1);
        assert!(html.contains("class=\"tsd-tx rtx\" data-pstep=\"2\" data-seg=\"1\""));
        assert!(html.contains("class=\"tsd-drop\" data-pstep=\"1\" data-seg=\"1\""));
        assert_eq!(html.matches("class=\"tsd-timer\"").count(), 1);
        assert!(html.contains("class=\"tsd-timer\" data-pstep=\"2\" data-kind=\"rto\""));
        assert_eq!(
            html.matches("class=\"tsd-ack\"").count(),
            6,
            "six deliveries"
        );
        assert_eq!(
            html.matches("class=\"tsd-undo\" data-pstep=\"8\"").count(),
            1
        );
        // The timeline: a point per step; cwnd 5, 1 at the RTO, 3, then back to 5 at the undo.
        let cwnd: Vec<u32> = (0..=8)
            .map(|k| {
                let tag = format!("class=\"tl-cwnd\" data-pstep=\"{k}\" data-value=\"");
                let i = html.find(&tag).unwrap() + tag.len();
                html[i..].split('"').next().unwrap().parse().unwrap()
            })
            .collect();
        assert_eq!(
            (cwnd[0], cwnd[2], cwnd[7], cwnd[8]),
            (5, 1, 3, 5),
            "{cwnd:?}"
        );
        assert_eq!(html.matches("class=\"tl-ca\"").count(), 9);
        assert!(html.contains("class=\"tl-ca\" data-pstep=\"2\" data-state=\"Loss\""));
        assert!(html.contains("class=\"pic-viol\" data-pstep=\"8\""));
    }
}
