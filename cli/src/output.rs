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

/// A property's outcome: its verdict and, when violated, every signature its violations have,
/// each classified against the baseline and the comparison profile.
#[derive(Serialize)]
pub struct PropResult {
    pub id: String,
    pub name: String,
    pub verdict: Verdict,
    /// Violated, but every signature is accepted or also on the comparison profile: why, in
    /// one line (the findings, the base).
    pub accepted: Option<String>,
    /// In the canonical order of their first violating states (shortest first).
    pub signatures: Vec<SigResult>,
    /// The signature of the counterexample below: the shortest one that fails, else the
    /// shortest of all.
    pub counterexample_signature: Option<String>,
    pub counterexample: Option<Vec<Step>>,
    /// The path of that counterexample (for `--out`).
    #[serde(skip)]
    pub path: Option<trc_engine::Path<Action>>,
}

impl PropResult {
    /// Whether this property fails the check: a violation with a new signature.
    pub fn fails(&self) -> bool {
        self.verdict == Verdict::Violated && self.accepted.is_none()
    }
}

/// How a signature is judged.
#[derive(Serialize, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "kebab-case")]
pub enum SigStatus {
    /// Neither accepted nor on the comparison profile: fails the check.
    New,
    /// Listed in the baseline.
    Accepted,
    /// Also occurs on the comparison profile (`--against`, a profile file's base).
    AlsoOnBase,
}

/// One signature of a property's violations.
#[derive(Serialize)]
pub struct SigResult {
    pub signature: String,
    pub status: SigStatus,
    /// The baseline's finding (`F1`), if accepted.
    pub finding: Option<String>,
    /// Violating states with this signature.
    pub states: u64,
    /// Events of its shortest counterexample.
    pub events: usize,
    /// It also occurs on the comparison profile (whatever its status).
    pub also_on_base: bool,
}

/// The comparison profile's signatures (same bounds, same properties).
pub struct Base {
    pub name: String,
    pub signatures: std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
    /// Its check stopped early: signatures missing there are not evidence of a new one.
    pub incomplete: bool,
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
        counters: mib
            .nonzero()
            .map(|(m, n)| (m.name().to_string(), n))
            .collect(),
    }
}

/// Describes an action with the packet it refers to (seq and whether it is a retransmission).
pub fn describe(prev: &State, a: &Action) -> String {
    let pk = |i: u16| {
        let p = prev.flight[i as usize];
        format!(
            "seg {} ({}, sent at {} ms)",
            p.seg as u32 + 1,
            if p.rtx { "retransmission" } else { "original" },
            p.sent
        )
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
    let init = replay(
        model,
        &trc_engine::Path {
            init_index: path.init_index,
            actions: vec![],
        },
    )
    .swap_remove(0)
    .1;
    let mut out = vec![step(
        format!(
            "initial state ({}), first flight sent",
            if init.sender.sack_ok {
                "SACK"
            } else {
                "no SACK"
            }
        ),
        &init,
        &MibDelta::default(),
    )];
    let mut prev = init;
    for (i, a) in path.actions.iter().enumerate() {
        let (next, mib) = model
            .next_state_counted(&prev, *a)
            .unwrap_or_else(|| panic!("counterexample: action {i} of the path has no next state"));
        out.push(step(describe(&prev, a), &next, &mib));
        prev = next;
    }
    out
}

pub fn results(
    model: &TcpModel,
    report: &Report<Action>,
    baseline: &[Accepted],
    base: Option<&Base>,
) -> Vec<PropResult> {
    report
        .properties
        .iter()
        .map(|p| {
            let id = p.name.split(':').next().unwrap_or(p.name).to_string();
            let mut signatures = Vec::new();
            for c in &p.classes {
                let signature = trc_properties::signature::describe(&id, c.class);
                let acc = baseline.iter().find(|b| b.signature == signature);
                let on_base = base.is_some_and(|b| {
                    b.signatures
                        .get(&id)
                        .is_some_and(|s| s.contains(&signature))
                });
                let status = if acc.is_some() {
                    SigStatus::Accepted
                } else if on_base {
                    SigStatus::AlsoOnBase
                } else {
                    SigStatus::New
                };
                signatures.push(SigResult {
                    signature,
                    status,
                    finding: acc.map(|a| a.finding.clone()),
                    states: c.count,
                    events: c.path.len(),
                    also_on_base: on_base,
                });
            }
            let failing = p
                .classes
                .iter()
                .zip(&signatures)
                .find(|(_, s)| s.status == SigStatus::New);
            let (shown_sig, shown_path) = match (failing, p.classes.first()) {
                (Some((c, s)), _) => (Some(s.signature.clone()), Some(&c.path)),
                (None, Some(c)) => (Some(signatures[0].signature.clone()), Some(&c.path)),
                (None, None) => (None, p.path.as_ref()),
            };
            let accepted =
                if p.verdict == Verdict::Violated && !p.classes.is_empty() && failing.is_none() {
                    let mut why: Vec<String> = Vec::new();
                    for s in &signatures {
                        let w = match s.status {
                            SigStatus::Accepted => {
                                format!("accepted {}", s.finding.as_deref().unwrap_or("?"))
                            }
                            _ => format!("also on {}", base.map_or("?", |b| b.name.as_str())),
                        };
                        if !why.contains(&w) {
                            why.push(w);
                        }
                    }
                    Some(why.join(", "))
                } else {
                    None
                };
            let ce = shown_path.map(|path| counterexample(model, path));
            let path = if p.verdict == Verdict::Violated {
                shown_path.cloned()
            } else {
                None
            };
            PropResult {
                id,
                name: p.name.to_string(),
                verdict: p.verdict,
                accepted,
                signatures,
                counterexample_signature: shown_sig,
                counterexample: ce,
                path,
            }
        })
        .collect()
}

/// The check stopped before its bounds were explored (memory budget, state limit): without a
/// violation that is not a pass (exit 3). `--max-depth` and `--fail-fast` are not this: the
/// first is a bound, the second stops only at a violation.
pub fn incomplete(report: &Report<Action>) -> bool {
    matches!(
        report.stop_reason,
        trc_engine::StopReason::MemoryBudget | trc_engine::StopReason::MaxStates
    )
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
        _ => match v["spill"]["error"].as_str() {
            Some(e) if v["spill"]["dir"].as_str().is_some_and(|d| !d.is_empty()) => format!("--max-memory: the frontier's spill file failed: {e}"),
            _ => format!(
                "--max-memory: exploring the next level would exceed the budget (estimated peak {:.1} MiB so far){}",
                v["peak_memory_bytes"].as_u64().unwrap_or(0) as f64 / (1 << 20) as f64,
                match v["spill"]["error"].as_str() {
                    Some(e) => format!(", and no spill file: {e}"),
                    None if v["spill"].is_object() => " even with the frontier spilled to disk (the visited set stays in memory)".to_string(),
                    None => String::new(),
                }
            ),
        },
    };
    format!("\nstopped early ({reason}): {why}; \"holds\" below covers only the states explored")
}

/// The human summary of one check, from its JSON ([`check_json`], or a merge of shards): the
/// verdicts, every signature with its count, shortest length and status, and the counterexamples.
pub fn print_summary(v: &Value) {
    let secs = v["seconds"].as_f64().unwrap_or(0.0);
    let states = v["unique_states"].as_u64().unwrap_or(0);
    println!(
        "trc check: profile {} ({})",
        v["profile"]["name"].as_str().unwrap_or(""),
        v["profile"]["description"].as_str().unwrap_or("")
    );
    let base = v["against"]["profile"].as_str().unwrap_or("?");
    if v["against"].is_object() {
        println!(
            "compared with {base} (same bounds){}",
            if v["against"]["incomplete"] == true {
                " — its check stopped early"
            } else {
                ""
            }
        );
    }
    println!(
        "explored {} states, {} transitions, depth {} in {:.2} s ({:.0} states/s){}",
        states,
        v["transitions"],
        v["max_depth"],
        secs,
        states as f64 / secs.max(1e-9),
        stop_note(v)
    );
    if let Some(w) = v["spill"]["bytes_written"].as_u64().filter(|&w| w > 0) {
        println!(
            "frontier spilled to a temporary file in {}: {:.1} GiB written, {:.1} GiB read back; state blocks in memory at most {:.1} GiB",
            v["spill"]["dir"].as_str().unwrap_or("?"),
            w as f64 / (1u64 << 30) as f64,
            v["spill"]["bytes_read"].as_u64().unwrap_or(0) as f64 / (1u64 << 30) as f64,
            v["spill"]["peak_block_bytes"].as_u64().unwrap_or(0) as f64 / (1u64 << 30) as f64
        );
    }
    let props = v["properties"].as_array().cloned().unwrap_or_default();
    for r in &props {
        let verdict = match (r["verdict"].as_str(), r["accepted"].as_str()) {
            (Some("Violated"), Some(why)) => format!("VIOLATED ({why})"),
            (Some("Violated"), None) => "VIOLATED".to_string(),
            (Some("Holds"), _) => "holds".to_string(),
            _ => "not checked".to_string(),
        };
        println!("  {:<70} {}", r["name"].as_str().unwrap_or(""), verdict);
        for s in r["signatures"].as_array().into_iter().flatten() {
            let finding = s["finding"].as_str().unwrap_or("?");
            let status = match s["status"].as_str() {
                Some("accepted") => format!(
                    "accepted ({finding}, baseline){}",
                    if s["also_on_base"] == true {
                        format!("; also on {base}")
                    } else {
                        String::new()
                    }
                ),
                Some("also-on-base") => format!("also on {base}"),
                _ => "NEW".to_string(),
            };
            println!(
                "      {:<66} {:>7} states, shortest {:>2} events: {status}",
                s["signature"].as_str().unwrap_or(""),
                s["states"].as_u64().unwrap_or(0),
                s["events"].as_u64().unwrap_or(0)
            );
        }
    }
    for r in &props {
        let Some(ce) = r["counterexample"].as_array() else {
            continue;
        };
        let sig = r["counterexample_signature"]
            .as_str()
            .map(|s| format!(" {s}"))
            .unwrap_or_default();
        let accepted = r["accepted"]
            .as_str()
            .map(|a| format!(" [{a}]"))
            .unwrap_or_default();
        println!(
            "\n{} — shortest counterexample{sig} ({} events){accepted}:",
            r["name"].as_str().unwrap_or(""),
            ce.len() - 1
        );
        for (i, s) in ce.iter().enumerate() {
            println!(
                "  {:>2}. t={:>5}ms {}",
                i,
                s["time_ms"].to_string(),
                s["event"].as_str().unwrap_or("")
            );
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

/// The result of a check in words, as its exit code says it: violated (1: a property violated
/// with a new signature), incomplete (3), holds (0).
pub fn result_word(results: &[Value], incomplete: bool) -> &'static str {
    let violated = results
        .iter()
        .any(|r| r["verdict"] == "Violated" && r["accepted"].is_null());
    if violated {
        "violated"
    } else if incomplete {
        "incomplete"
    } else {
        "holds"
    }
}

/// A check's machine-readable result (`trc check --json`); the human summary is printed from it.
pub fn check_json(
    model: &TcpModel,
    report: &Report<Action>,
    results: &[PropResult],
    base: Option<&Base>,
    coverage: Option<&crate::coverage::Coverage>,
) -> Value {
    let props: Vec<Value> = results
        .iter()
        .map(|r| serde_json::to_value(r).unwrap())
        .collect();
    serde_json::json!({
        "result": result_word(&props, incomplete(report)),
        "profile": model.profile,
        "against": base.map(|b| serde_json::json!({"profile": b.name, "incomplete": b.incomplete})),
        "config": model.cfg,
        "unique_states": report.unique_states,
        "transitions": report.transitions,
        "max_depth": report.max_depth,
        "seconds": report.elapsed.as_secs_f64(),
        "complete": report.complete,
        "incomplete": incomplete(report),
        "stop_reason": format!("{:?}", report.stop_reason),
        "peak_memory_bytes": report.peak_memory_bytes,
        "spill": report.spill,
        "properties": props,
        "coverage": coverage,
    })
}

/// What a shard's unit carries beside its run's JSON so that `trc merge` judges signatures as
/// the one run does: every signature's shortest counterexample (the run's JSON shows one per
/// property, which after the merge may be another unit's or another signature's) and the
/// comparison profile's signatures on this unit (a signature is "also on" the base if it occurs
/// there in any unit).
pub fn shard_detail(model: &TcpModel, report: &Report<Action>, base: Option<&Base>) -> Value {
    let mut cex = serde_json::Map::new();
    for p in &report.properties {
        let id = p.name.split(':').next().unwrap_or(p.name).to_string();
        let m: serde_json::Map<String, Value> = p
            .classes
            .iter()
            .map(|c| {
                (
                    trc_properties::signature::describe(&id, c.class),
                    serde_json::to_value(counterexample(model, &c.path)).unwrap(),
                )
            })
            .collect();
        cex.insert(id, Value::Object(m));
    }
    serde_json::json!({
        "counterexamples": cex,
        "base": base.map(|b| serde_json::json!({"profile": b.name, "incomplete": b.incomplete, "signatures": b.signatures})),
    })
}
