//! Human and JSON output of a check.

use crate::check::Accepted;
use serde::Serialize;
use serde_json::Value;
use trc_engine::{replay, Report, Verdict};
use trc_model::mib::MibDelta;
use trc_model::model::{Action, State, TcpModel};
use trc_trace::notes;

pub fn usage_error(msg: &str) -> i32 {
    eprintln!("trc: error: {msg}");
    2
}

/// A property's outcome, with the baseline entry that accepts it, if any.
#[derive(Serialize)]
pub struct PropResult {
    pub id: String,
    pub name: String,
    pub verdict: Verdict,
    pub accepted: Option<String>,
    pub counterexample: Option<Vec<Step>>,
}

/// One step of a counterexample in kernel terms.
#[derive(Serialize)]
pub struct Step {
    pub event: String,
    pub sack: bool,
    pub time_ms: u32,
    pub ca_state: String,
    pub cwnd: u32,
    pub ssthresh: u32,
    pub snd_una: u32,
    pub snd_nxt: u32,
    pub high_seq: u32,
    pub retrans_stamp: u32,
    pub undo_marker: u32,
    pub undo_retrans: i32,
    pub packets_out: u32,
    pub sacked_out: u32,
    pub lost_out: u32,
    pub retrans_out: u32,
    pub notes: Vec<String>,
    /// The MIB counters this step moved, by their nstat names (e.g. `TcpExtTCPLossUndo`).
    pub counters: std::collections::BTreeMap<String, u32>,
}


fn step(event: String, s: &State, mib: &MibDelta) -> Step {
    let x = &s.sender;
    Step {
        event,
        sack: x.sack_ok,
        time_ms: s.now,
        ca_state: format!("{:?}", x.ca_state),
        cwnd: x.cwnd,
        ssthresh: x.ssthresh,
        snd_una: x.snd_una,
        snd_nxt: x.snd_nxt,
        high_seq: x.high_seq,
        retrans_stamp: x.retrans_stamp,
        undo_marker: x.undo_marker,
        undo_retrans: x.undo_retrans,
        packets_out: x.packets_out,
        sacked_out: x.sacked_out,
        lost_out: x.lost_out,
        retrans_out: x.retrans_out,
        notes: notes(s),
        counters: mib.nonzero().map(|(m, n)| (m.name().to_string(), n)).collect(),
    }
}

/// Describes an action with the packet it refers to (seq and whether it is a retransmission).
pub fn describe(prev: &State, a: &Action) -> String {
    let pk = |i: u16| {
        let p = prev.flight[i as usize];
        format!("seg {} ({}, sent at {} ms)", p.seg as u32 + 1, if p.rtx { "retransmission" } else { "original" }, p.sent)
    };
    match a {
        Action::Deliver { pkt } => format!("deliver {} → ACK", pk(*pkt)),
        Action::DeliverEce { pkt } => format!("deliver {} → ACK with ECE", pk(*pkt)),
        Action::DeliverAckLost { pkt } => format!("deliver {} → its ACK is lost", pk(*pkt)),
        Action::Drop { pkt } => format!("network drops {}", pk(*pkt)),
        other => other.to_string(),
    }
}

pub fn counterexample(model: &TcpModel, path: &trc_engine::Path<Action>) -> Vec<Step> {
    // The engine's replay, step by step with the MIB counters each step moved.
    let init = replay(model, &trc_engine::Path { init_index: path.init_index, actions: vec![] }).swap_remove(0).1;
    let mut out = vec![step(format!("initial state ({}), first flight sent", if init.sender.sack_ok { "SACK" } else { "no SACK" }), &init, &MibDelta::default())];
    let mut prev = init;
    for (i, a) in path.actions.iter().enumerate() {
        let (next, mib) = model.next_state_counted(&prev, *a).unwrap_or_else(|| panic!("counterexample: action {i} of the path has no next state"));
        out.push(step(describe(&prev, a), &next, &mib));
        prev = next;
    }
    out
}

pub fn results(model: &TcpModel, report: &Report<Action>, baseline: &[Accepted]) -> Vec<PropResult> {
    report
        .properties
        .iter()
        .map(|p| {
            let id = p.name.split(':').next().unwrap_or(p.name).to_string();
            let ce = p.path.as_ref().map(|path| counterexample(model, path));
            let sack = ce.as_ref().and_then(|c| c.first()).map(|s| s.sack);
            let accepted = if p.verdict == Verdict::Violated {
                baseline
                    .iter()
                    .find(|b| b.property == id && b.profile == model.profile.name && (b.sack.is_none() || b.sack == sack))
                    .map(|b| b.reason.clone())
            } else {
                None
            };
            PropResult { id, name: p.name.to_string(), verdict: p.verdict, accepted, counterexample: ce }
        })
        .collect()
}

/// The check stopped before its bounds were explored (memory budget, state limit): without a
/// violation that is not a pass (exit 3). `--max-depth` and `--fail-fast` are not this: the
/// first is a bound, the second stops only at a violation.
pub fn incomplete(report: &Report<Action>) -> bool {
    matches!(report.stop_reason, trc_engine::StopReason::MemoryBudget | trc_engine::StopReason::MaxStates)
}

/// Why an incomplete check stopped, for the summary line (empty when complete), from a check's
/// JSON (`stop_reason`, `max_depth`, `peak_memory_bytes`).
fn stop_note(v: &Value) -> String {
    let reason = v["stop_reason"].as_str().unwrap_or("Complete");
    let why = match reason {
        "Complete" => return String::new(),
        "FailFast" => "--fail-fast: a property was violated (its BFS level was finished, so the counterexample is still a shortest one)".to_string(),
        "MaxDepth" => format!("--max-depth {} reached with unexplored successors", v["max_depth"]),
        "MaxStates" => "the state limit was reached".to_string(),
        _ => format!(
            "--max-memory: exploring the next level would exceed the budget (estimated peak {:.1} MiB so far)",
            v["peak_memory_bytes"].as_u64().unwrap_or(0) as f64 / (1 << 20) as f64
        ),
    };
    format!("\nstopped early ({reason}): {why}; \"holds\" below covers only the states explored")
}

/// The human summary of one check, from its JSON ([`check_json`], or a merge of shards).
pub fn print_summary(v: &Value) {
    let secs = v["seconds"].as_f64().unwrap_or(0.0);
    let states = v["unique_states"].as_u64().unwrap_or(0);
    println!("trc check: profile {} ({})", v["profile"]["name"].as_str().unwrap_or(""), v["profile"]["description"].as_str().unwrap_or(""));
    println!(
        "explored {} states, {} transitions, depth {} in {:.2} s ({:.0} states/s){}",
        states,
        v["transitions"],
        v["max_depth"],
        secs,
        states as f64 / secs.max(1e-9),
        stop_note(v)
    );
    let props = v["properties"].as_array().cloned().unwrap_or_default();
    for r in &props {
        let verdict = match (r["verdict"].as_str(), r["accepted"].is_string()) {
            (Some("Violated"), true) => "VIOLATED (accepted finding, baseline)",
            (Some("Violated"), false) => "VIOLATED",
            (Some("Holds"), _) => "holds",
            _ => "not checked",
        };
        println!("  {:<70} {}", r["name"].as_str().unwrap_or(""), verdict);
    }
    for r in &props {
        let Some(ce) = r["counterexample"].as_array() else { continue };
        let accepted = r["accepted"].as_str().map(|a| format!(" [accepted: {a}]")).unwrap_or_default();
        println!("\n{} — shortest counterexample ({} events){}:", r["name"].as_str().unwrap_or(""), ce.len() - 1, accepted);
        for (i, s) in ce.iter().enumerate() {
            println!("  {:>2}. t={:>5}ms {}", i, s["time_ms"].to_string(), s["event"].as_str().unwrap_or(""));
            println!(
                "      {:<9} cwnd {:>3} ssthresh {:>10} snd_una {:>3} snd_nxt {:>3} high_seq {:>3} retrans_stamp {:>5} undo_marker {:>3} undo_retrans {:>2} out/sacked/lost/retrans {}/{}/{}/{}",
                s["ca_state"].as_str().unwrap_or(""),
                s["cwnd"].to_string(),
                s["ssthresh"].to_string(),
                s["snd_una"].to_string(),
                s["snd_nxt"].to_string(),
                s["high_seq"].to_string(),
                s["retrans_stamp"].to_string(),
                s["undo_marker"].to_string(),
                s["undo_retrans"].to_string(),
                s["packets_out"],
                s["sacked_out"],
                s["lost_out"],
                s["retrans_out"]
            );
            for n in s["notes"].as_array().into_iter().flatten() {
                println!("      → {}", n.as_str().unwrap_or(""));
            }
            if let Some(c) = s["counters"].as_object().filter(|c| !c.is_empty()) {
                let c: Vec<String> = c.iter().map(|(k, v)| format!("{k} +{v}")).collect();
                println!("      counters: {}", c.join(", "));
            }
        }
    }
}

/// The result of a check in words, as its exit code says it: violated (1), incomplete (3),
/// holds (0).
pub fn result_word(results: &[Value], incomplete: bool) -> &'static str {
    let violated = results.iter().any(|r| r["verdict"] == "Violated" && r["accepted"].is_null());
    if violated {
        "violated"
    } else if incomplete {
        "incomplete"
    } else {
        "holds"
    }
}

/// A check's machine-readable result (`trc check --json`); the human summary is printed from it.
pub fn check_json(model: &TcpModel, report: &Report<Action>, results: &[PropResult]) -> Value {
    let props: Vec<Value> = results.iter().map(|r| serde_json::to_value(r).unwrap()).collect();
    serde_json::json!({
        "result": result_word(&props, incomplete(report)),
        "profile": model.profile,
        "config": model.cfg,
        "unique_states": report.unique_states,
        "transitions": report.transitions,
        "max_depth": report.max_depth,
        "seconds": report.elapsed.as_secs_f64(),
        "complete": report.complete,
        "incomplete": incomplete(report),
        "stop_reason": format!("{:?}", report.stop_reason),
        "peak_memory_bytes": report.peak_memory_bytes,
        "properties": props,
    })
}
