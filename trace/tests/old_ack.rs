//! ACK reordering (`Config::max_old_acks`): a path that uses an old ACK (one the network held
//! back and delivered below `snd_una`) exports to a script whose replay agrees with the model
//! line by line; the late ACK is an ordinary inbound packetdrill line.

use stateright::Model;
use std::collections::{HashSet, VecDeque};
use trc_engine::{check_with, Classified, Options, StateHooks};
use trc_model::config::SackMode;
use trc_model::model::{Action, State, TcpModel};
use trc_model::state::CaState;
use trc_model::{Config, Profile};
use trc_trace::export::{export_walk, states, Spacing};
use trc_trace::replay::{replay, ReplayOptions};

/// A shortest kernel-runnable path (no TSQ or ECE events) whose last step is an old ACK that
/// carries a DSACK and undoes a cwnd reduction: a DSACK that arrives late, below `snd_una`.
fn late_dsack_undo(model: &TcpModel) -> (usize, Vec<Action>) {
    let runnable = |a: &Action| {
        !matches!(
            a,
            Action::TsqFill | Action::TsqDrain | Action::DeliverEce { .. }
        )
    };
    let mut seen = HashSet::new();
    let mut q = VecDeque::new();
    for (i, s) in model.init_states().into_iter().enumerate() {
        seen.insert(s.fingerprint());
        q.push_back((i, s, Vec::new()));
    }
    while let Some((i, s, path)) = q.pop_front() {
        let mut acts = Vec::new();
        model.actions(&s, &mut acts);
        for a in acts.into_iter().filter(runnable) {
            let Some(n) = model.next_state(&s, a) else {
                continue;
            };
            let mut p = path.clone();
            p.push(a);
            let h = &s.held_ack;
            let dsack = h.n > 0
                && (h.blocks[0].0 < h.ack
                    || (h.n > 1
                        && h.blocks[1].0 <= h.blocks[0].0
                        && h.blocks[0].1 <= h.blocks[1].1));
            if a == Action::OldAck && dsack && !n.sender.ghost.ev.undos.is_empty() {
                return (i, p);
            }
            if p.len() < 12 && seen.insert(n.fingerprint()) {
                q.push_back((i, n, p));
            }
        }
    }
    panic!("no late-DSACK undo within 12 events");
}

/// The model finds a late DSACK's undo on the OLD_ACK path; its export replays with every line
/// passing (the model agrees with itself through the script), and the old ACK is written as an
/// inbound ACK below the one before it.
#[test]
fn old_ack_with_dsack_exports_and_replays() {
    let cfg = Config {
        sack: SackMode::Sack,
        max_old_acks: 1,
        ..Config::default()
    };
    let model = TcpModel::new(cfg, Profile::linux_6_18());
    let (init, path) = late_dsack_undo(&model);
    assert_eq!(path.last(), Some(&Action::OldAck));
    let x = export_walk(
        &model,
        init,
        &path,
        "late DSACK below snd_una",
        Spacing {
            gap_ms: 3,
            margin_ms: 0,
            absolute: false,
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(x.trace.kernel_runnable, "{}", x.pkt);
    // The last inbound ACK line acknowledges less than an earlier one, and carries the DSACK.
    let acks: Vec<(u32, &str)> = x
        .pkt
        .lines()
        .filter(|l| l.contains("< . 1:1(0) ack "))
        .map(|l| {
            (
                l.split("ack ")
                    .nth(1)
                    .unwrap()
                    .split(' ')
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap(),
                l,
            )
        })
        .collect();
    let (last, line) = *acks.last().unwrap();
    assert!(
        acks.iter().any(|(a, _)| *a > last),
        "the old ACK is below an earlier one:\n{}",
        x.pkt
    );
    assert!(
        line.contains("sack "),
        "the old ACK carries its SACK blocks: {line}"
    );
    let script = trc_pkt::parse(&x.pkt, "old-ack.pkt").unwrap_or_else(|e| panic!("{e}\n{}", x.pkt));
    let r = replay(
        &script,
        "old-ack.pkt",
        &model.profile,
        &ReplayOptions::default(),
    );
    assert!(
        matches!(r.script.verdict, trc_pkt::report::Verdict::Passed { .. }),
        "{}\n{}",
        x.pkt,
        r.render()
    );
    if let Ok(dir) = std::env::var("TRC_OLD_ACK_OUT") {
        trc_trace::write_export(std::path::Path::new(&dir), &x).unwrap();
    }
}

/// The default budget keeps ACKs monotone: no state holds an ACK, and no action uses one.
#[test]
fn budget_zero_never_holds_an_ack() {
    let model = TcpModel::new(
        Config {
            segments: 4,
            ..Config::default()
        },
        Profile::linux_6_18(),
    );
    let mut seen = HashSet::new();
    let mut q: VecDeque<State> = model.init_states().into();
    while let Some(s) = q.pop_front() {
        assert!(!s.held_ack.held);
        let mut acts = Vec::new();
        model.actions(&s, &mut acts);
        assert!(!acts
            .iter()
            .any(|a| matches!(a, Action::DeliverAckHeld { .. } | Action::OldAck)));
        for a in acts {
            if let Some(n) = model.next_state(&s, a) {
                if seen.insert(n.fingerprint()) && seen.len() < 20_000 {
                    q.push_back(n);
                }
            }
        }
    }
}

/// Holding an ACK and releasing it: the held ACK is the one the receiver built for the
/// delivery, the release is offered only once it is below `snd_una`, and it runs `tcp_ack()`'s
/// OLD_ACK path (snd_una unchanged).
#[test]
fn held_ack_is_released_only_below_snd_una() {
    let cfg = Config {
        sack: SackMode::Sack,
        max_old_acks: 1,
        ..Config::default()
    };
    let model = TcpModel::new(cfg.clone(), Profile::linux_6_18());
    let s0 = model.init_states().remove(0);
    // Segment 1 arrives first; its ACK (ack of segment 0, SACK of segment 1) is held.
    let (_, want) = model.ack_for(&s0, 1);
    let s1 = model
        .next_state(&s0, Action::DeliverAckHeld { pkt: 1 })
        .unwrap();
    assert_eq!(s1.held_ack.ack_seg(&cfg, s1.sender.ts_ok), want);
    assert_eq!(
        (s1.budget.old_acks, s1.sender.sacked_out),
        (0, 0),
        "the sender saw nothing"
    );
    let mut acts = Vec::new();
    model.actions(&s1, &mut acts);
    assert!(
        !acts.contains(&Action::OldAck),
        "not old yet: snd_una is still its ack"
    );
    assert!(
        !acts
            .iter()
            .any(|a| matches!(a, Action::DeliverAckHeld { .. })),
        "budget spent, one held at a time"
    );
    // Segment 0 arrives: snd_una passes the held ACK, which may now arrive.
    let s2 = model.next_state(&s1, Action::Deliver { pkt: 0 }).unwrap();
    acts.clear();
    model.actions(&s2, &mut acts);
    assert!(acts.contains(&Action::OldAck));
    let s3 = model.next_state(&s2, Action::OldAck).unwrap();
    assert!(!s3.held_ack.held);
    assert_eq!(s3.sender.snd_una, s2.sender.snd_una);
    assert_ne!(s2.fingerprint(), s3.fingerprint());
}

/// Every signature of `id`'s violations at `cfg`, with its shortest path.
fn signatures(cfg: Config, id: &str) -> (TcpModel, Vec<(String, trc_engine::Path<Action>)>) {
    let specs = trc_properties::select(&[id.to_string()]).unwrap();
    let model = TcpModel::new(cfg, Profile::linux_6_18())
        .with_properties(trc_properties::properties(&specs));
    let hooks = Classified {
        hooks: StateHooks {
            fingerprint: State::fingerprint,
            next_state_into: TcpModel::next_state_into,
            drop_is_noop: State::is_plain,
        },
        classify: trc_properties::signature::classifier(&specs),
    };
    let report = check_with(
        &model,
        &Options {
            threads: 2,
            ..Options::default()
        },
        None,
        hooks,
    );
    let out = report.properties[0]
        .classes
        .iter()
        .map(|c| {
            (
                trc_properties::signature::describe(id, c.class),
                c.path.clone(),
            )
        })
        .collect();
    (model, out)
}

/// The triage of docs/lab/notebook.md ("Old ACKs", 2026-12-02), at the default bounds: with `--old-acks 1`, I1 has
/// every signature `--ack-losses 1` has (a held ACK never released is a lost ACK) and exactly one
/// more, F5's mechanism in Disorder, whose shortest path ends with an old ACK moving the Open
/// sender to Disorder and then a DSACK of forgotten data undoing. Run with `--nocapture` to see
/// the path.
#[test]
fn triage_one_signature_needs_an_old_ack() {
    let (model, old) = signatures(
        Config {
            max_old_acks: 1,
            ..Config::default()
        },
        "I1",
    );
    let (_, lost) = signatures(
        Config {
            max_ack_losses: 1,
            ..Config::default()
        },
        "I1",
    );
    let lost: HashSet<&String> = lost.iter().map(|(s, _)| s).collect();
    let extra: Vec<&(String, trc_engine::Path<Action>)> =
        old.iter().filter(|(s, _)| !lost.contains(s)).collect();
    assert!(
        old.len() > extra.len() && lost.iter().all(|s| old.iter().any(|(o, _)| o == *s)),
        "every ACK-loss signature is reached"
    );
    assert_eq!(
        extra.iter().map(|(s, _)| s.as_str()).collect::<Vec<_>>(),
        vec!["I1:tcp_try_undo_dsack:Disorder:undo-retrans-zero+dsack-forgotten"]
    );
    let path = &extra[0].1;
    let steps = states(&model, path.init_index, &path.actions).unwrap();
    for (a, s) in steps.iter().skip(1) {
        let snd = &s.sender;
        println!("   {:<40} t={:>5} {:?} cwnd {} una {} out/sacked/lost/retrans {}/{}/{}/{} undo_retrans {}", a.unwrap().to_string(), s.now, snd.ca_state, snd.cwnd, snd.snd_una, snd.packets_out, snd.sacked_out, snd.lost_out, snd.retrans_out, snd.undo_retrans);
    }
    let i = path
        .actions
        .iter()
        .position(|a| *a == Action::OldAck)
        .expect("the path uses the old ACK");
    let (before, after) = (&steps[i].1.sender, &steps[i + 1].1.sender);
    assert_eq!(
        (before.ca_state, after.ca_state),
        (CaState::Open, CaState::Disorder),
        "the old ACK's tcp_fastretrans_alert → tcp_try_keep_open"
    );
    assert_eq!(before.snd_una, after.snd_una);
}

/// Replay of ACKs below `snd_una`: within `min(max_window, bytes_acked)` they take the OLD_ACK
/// path; further below, the kernel answers with a challenge ACK and discards them (RFC 5961
/// 5.2), which the model does not do, so the replay stops there as out of scope instead of
/// processing them.
#[test]
fn replay_refuses_an_ack_older_than_the_peer_window() {
    let script = |win: u32, old_ack: u32| {
        format!(
            "0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
+0 setsockopt(3, SOL_SOCKET, SO_REUSEADDR, [1], 4) = 0
+0 bind(3, ..., ...) = 0
+0 listen(3, 1) = 0
+0 < S 0:0(0) win {win} <mss 1000,sackOK,nop,nop,nop,wscale 0>
+0 > S. 0:0(0) ack 1 <...>
+.05 < . 1:1(0) ack 1 win {win}
+0 accept(3, ..., ...) = 4
+0 write(4, ..., 2000) = 2000
+0 > . 1:2001(2000) ack 1
+.05 < . 1:1(0) ack 2001 win {win}
+0 write(4, ..., 2000) = 2000
+0 > . 2001:4001(2000) ack 1
+.05 < . 1:1(0) ack 4001 win {win}
+0 < . 1:1(0) ack {old_ack} win {win} <sack 2001:3001,nop,nop>
+0 %{{ assert tcpi_ca_state == TCP_CA_Open, tcpi_ca_state }}%
"
        )
    };
    let run = |win: u32, old_ack: u32| {
        let text = script(win, old_ack);
        let s = trc_pkt::parse(&text, "old.pkt").unwrap_or_else(|e| panic!("{e}\n{text}"));
        replay(
            &s,
            "old.pkt",
            &Profile::linux_6_18(),
            &ReplayOptions::default(),
        )
    };
    // 3000 bytes below snd_una 4001, within the 32792-byte window: processed, every check passes.
    let r = run(32792, 1001);
    assert!(
        matches!(r.script.verdict, trc_pkt::report::Verdict::Passed { .. }),
        "{}",
        r.render()
    );
    // The same ACK with a 2000-byte window is too old (the data goes out in two writes of
    // 2000 bytes, each within that window, as the kernel would send it).
    let r = run(2000, 1001);
    let text = r.render();
    assert!(
        !matches!(r.script.verdict, trc_pkt::report::Verdict::Passed { .. }),
        "{text}"
    );
    assert!(text.contains("RFC 5961"), "{text}");
    assert!(!text.contains("receive window"), "{text}");
}
