//! `--shard I/N` and `trc merge`: one run's work list split across N processes (a CI matrix, a
//! Slurm array, GNU parallel) and the shards' JSON combined into the report the one run would
//! have printed (docs/reference/shards.md).
//!
//! Every sharded command has a *work list* in a canonical order (`trc check`: bounds files ×
//! SACK modes × property groups; `trc matrix`: profiles × SACK modes; `trc diff` and `trc
//! kernel check`: scenarios).
//! Unit `k` belongs to shard `k mod N + 1`, so the N shards do each unit exactly once whatever
//! N is. A shard prints `{"trc_shard": {command, index, count, units}, "args": ..., "units":
//! [...]}`; `args` is everything the merge needs to know about the run (the profile, the
//! bounds, the property selection) and must be the same in every shard.
//!
//! Why the merge is the one run's answer: the two SACK modes start from different initial
//! states and `sack_ok` is part of every state, so their state spaces are disjoint and one BFS
//! over both is the union of two (states and transitions add up, depths take the maximum). The
//! one run's shortest counterexample is the shortest of the two; at equal length the one run
//! finds the SACK one first (its initial state comes first and BFS order keeps the order of the
//! initial states at every level), which is the unit order the merge breaks ties with.

use crate::check::{self, MatrixRow};
use crate::output::usage_error;
use clap::Args;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// `--shard I/N`: shard `index` (1-based) of `count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl Shard {
    /// Whether unit `k` of the work list is this shard's (round robin).
    pub fn owns(&self, k: usize) -> bool {
        k % self.count == self.index - 1
    }
}

/// Parses `I/N` with 1 <= I <= N <= 100000.
pub fn parse_shard(s: &str) -> Result<Shard, String> {
    let (i, n) = s
        .split_once('/')
        .ok_or_else(|| format!("`{s}` is not I/N (e.g. 2/8)"))?;
    let index: usize = i
        .trim()
        .parse()
        .map_err(|_| format!("`{i}` in `{s}` is not a shard number"))?;
    let count: usize = n
        .trim()
        .parse()
        .map_err(|_| format!("`{n}` in `{s}` is not a number of shards"))?;
    if count == 0 || count > 100_000 {
        return Err(format!("`{s}`: the number of shards must be 1 to 100000"));
    }
    if index == 0 || index > count {
        return Err(format!("`{s}`: the shard must be 1 to {count}"));
    }
    Ok(Shard { index, count })
}

/// Prints a shard's JSON on stdout.
pub fn print_shard(command: &str, shard: Shard, units: usize, args: Value, done: Vec<Value>) {
    print_shard_with(command, shard, units, args, done, None);
}

/// [`print_shard`] with an extra `report` (the diff's own report of the shard's scenarios).
pub fn print_shard_with(
    command: &str,
    shard: Shard,
    units: usize,
    args: Value,
    done: Vec<Value>,
    report: Option<Value>,
) {
    println!(
        "{}",
        serde_json::to_string_pretty(&shard_json(command, shard, units, args, done, report))
            .unwrap()
    );
}

/// A shard's JSON: the header, the run's arguments, its units and an optional `report`.
pub fn shard_json(
    command: &str,
    shard: Shard,
    units: usize,
    args: Value,
    done: Vec<Value>,
    report: Option<Value>,
) -> Value {
    let mut v = serde_json::json!({
        "trc_shard": {"version": 1, "command": command, "index": shard.index, "count": shard.count, "units": units},
        "args": args,
        "units": done,
    });
    if let Some(r) = report {
        v["report"] = r;
    }
    v
}

#[derive(Args, Debug)]
pub struct MergeArgs {
    /// The shards' JSON outputs (`trc check|matrix|diff|kernel check --shard I/N`), every shard once, in
    /// any order.
    #[arg(required = true, value_name = "FILE.json")]
    pub files: Vec<PathBuf>,
    /// Print the merged result as JSON (what the unsharded command prints with `--json`).
    #[arg(long)]
    pub json: bool,
}

/// A shard file: its header fields and its JSON.
struct ShardFile {
    name: String,
    command: String,
    index: usize,
    count: usize,
    units: usize,
    v: Value,
}

fn read_shard(p: &std::path::Path) -> Result<ShardFile, String> {
    let src = crate::read_source(p)?;
    let v: Value = serde_json::from_str(&src)
        .map_err(|e| format!("{}:{}: not JSON: {e}", p.display(), e.line()))?;
    let h = &v["trc_shard"];
    let field = |k: &str| {
        h[k].as_u64().map(|x| x as usize).ok_or_else(|| {
            format!(
                "{}: not a shard output (no trc_shard.{k}; run the command with --shard I/N)",
                p.display()
            )
        })
    };
    if h["version"] != 1 {
        return Err(format!(
            "{}: not a shard output of this trc (trc_shard.version is not 1)",
            p.display()
        ));
    }
    let command = h["command"]
        .as_str()
        .ok_or_else(|| format!("{}: no trc_shard.command", p.display()))?
        .to_string();
    Ok(ShardFile {
        name: p.display().to_string(),
        index: field("index")?,
        count: field("count")?,
        units: field("units")?,
        command,
        v,
    })
}

/// Reads and validates the shards: one command, one N, the same arguments, every shard
/// 1..=N exactly once, every unit exactly once and in the shard that owns it.
fn load(files: &[PathBuf]) -> Result<Vec<ShardFile>, String> {
    let mut shards: Vec<ShardFile> = files
        .iter()
        .map(|p| read_shard(p))
        .collect::<Result<_, _>>()?;
    let first = &shards[0];
    for s in &shards[1..] {
        if s.command != first.command {
            return Err(format!(
                "{} is a shard of `trc {}`, {} of `trc {}`",
                s.name,
                s.command.replace('-', " "),
                first.name,
                first.command.replace('-', " ")
            ));
        }
        if s.count != first.count {
            return Err(format!(
                "{} is shard {}/{}, {} is {}/{}: every shard must come from the same split",
                s.name, s.index, s.count, first.name, first.index, first.count
            ));
        }
        if s.units != first.units || s.v["args"] != first.v["args"] {
            return Err(format!(
                "{} and {} come from different runs (profile, bounds or selection differ)",
                s.name, first.name
            ));
        }
    }
    let n = first.count;
    let mut seen = vec![None::<&str>; n + 1];
    for s in &shards {
        if let Some(other) = seen[s.index] {
            return Err(format!(
                "shard {}/{n} given twice ({other} and {})",
                s.index, s.name
            ));
        }
        seen[s.index] = Some(&s.name);
    }
    let missing: Vec<String> = (1..=n)
        .filter(|i| seen[*i].is_none())
        .map(|i| format!("{i}/{n}"))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "missing shard{} {}: the merge of a subset is not the run's result",
            if missing.len() > 1 { "s" } else { "" },
            missing.join(", ")
        ));
    }
    let total = first.units;
    let mut unit_seen = vec![false; total];
    for s in &shards {
        let sh = Shard {
            index: s.index,
            count: n,
        };
        for u in s.v["units"]
            .as_array()
            .ok_or_else(|| format!("{}: no units", s.name))?
        {
            let k = u["unit"]
                .as_u64()
                .map(|k| k as usize)
                .filter(|k| *k < total)
                .ok_or_else(|| format!("{}: a unit without a valid index", s.name))?;
            if unit_seen[k] || !sh.owns(k) {
                return Err(format!(
                    "{}: unit {k} is not shard {}/{n}'s or appears twice",
                    s.name, s.index
                ));
            }
            unit_seen[k] = true;
        }
    }
    if let Some(k) = unit_seen.iter().position(|x| !x) {
        return Err(format!(
            "unit {k} of {total} is in no shard (a shard's output was cut short?)"
        ));
    }
    shards.sort_by_key(|s| s.index);
    Ok(shards)
}

/// Every unit of every shard, in work-list order.
fn units_in_order(shards: &[ShardFile]) -> Vec<Value> {
    let mut all: Vec<Value> = shards
        .iter()
        .flat_map(|s| s.v["units"].as_array().cloned().unwrap_or_default())
        .collect();
    all.sort_by_key(|u| u["unit"].as_u64().unwrap_or(0));
    all
}

pub fn run_merge(a: MergeArgs) -> i32 {
    let shards = match load(&a.files) {
        Ok(s) => s,
        Err(e) => return usage_error(&e),
    };
    let r = match shards[0].command.as_str() {
        "check" => merge_check(&shards, a.json),
        "matrix" => merge_matrix(&shards, a.json),
        "diff" => merge_diff(&shards, a.json),
        "kernel-check" => merge_kernel_check(&shards, a.json),
        other => Err(format!(
            "{}: shards of `trc {other}` cannot be merged",
            shards[0].name
        )),
    };
    r.unwrap_or_else(|e| usage_error(&e))
}

/// The stop reason of a union of explorations: the strongest of theirs.
/// The units' frontier spills (`--max-memory`) as one: bytes summed, the largest in-memory
/// peak, the first directory and error; null when no unit spilled.
fn merged_spill(runs: &[&Value]) -> Value {
    let spills: Vec<&Value> = runs
        .iter()
        .map(|r| &r["spill"])
        .filter(|s| s.is_object())
        .collect();
    if spills.is_empty() {
        return Value::Null;
    }
    let sum = |k: &str| {
        spills
            .iter()
            .map(|s| s[k].as_u64().unwrap_or(0))
            .sum::<u64>()
    };
    serde_json::json!({
        "dir": spills[0]["dir"],
        "bytes_written": sum("bytes_written"),
        "bytes_read": sum("bytes_read"),
        "peak_block_bytes": spills.iter().map(|s| s["peak_block_bytes"].as_u64().unwrap_or(0)).max().unwrap_or(0),
        "error": spills.iter().find_map(|s| s["error"].as_str()),
    })
}

fn merged_stop_reason(reasons: &[&str]) -> String {
    for r in ["MemoryBudget", "MaxStates", "FailFast", "MaxDepth"] {
        if reasons.contains(&r) {
            return r.to_string();
        }
    }
    "Complete".to_string()
}

/// The property result of a union of explorations: a violation (or example) with the shortest
/// path, the earliest unit at equal length; otherwise the first unit's verdict.
fn merged_property<'a>(cands: &[&'a Value]) -> &'a Value {
    for kind in ["Violated", "ExampleFound"] {
        let mut best: Option<&Value> = None;
        for c in cands.iter().filter(|c| c["verdict"] == kind) {
            let len = c["counterexample"]
                .as_array()
                .map_or(usize::MAX, |x| x.len());
            if best.is_none_or(|b| {
                len < b["counterexample"]
                    .as_array()
                    .map_or(usize::MAX, |x| x.len())
            }) {
                best = Some(c);
            }
        }
        if let Some(b) = best {
            return b;
        }
    }
    cands[0]
}

/// A property's result over several units from its violations' signatures, as the one run
/// classifies them (`output::results`): a signature's count is the sum over the units (their
/// state spaces are disjoint), its shortest counterexample the shortest of theirs, the
/// earliest unit at equal length; signatures are in the order of their shortest
/// counterexamples, at equal length the earlier unit's first, then each unit's own order (the
/// one run's canonical order: by depth, and within a level the SACK half first). A signature
/// accepted by the baseline stays so; any other is "also on" the comparison profile if it
/// occurs there in any unit, else new. `None` when no unit classified a violation.
fn merged_classified(
    id: &str,
    cands: &[(&Value, &Value)],
    base: Option<(&str, &BTreeSet<&str>)>,
) -> Result<Option<Value>, String> {
    struct Sig<'a> {
        accepted: bool,
        finding: &'a Value,
        states: u64,
        /// (events, unit, position in the unit's list) of its shortest occurrence.
        key: (u64, usize, usize),
        counterexample: &'a Value,
    }
    let mut sigs: BTreeMap<&str, Sig> = BTreeMap::new();
    for (ui, (p, d)) in cands.iter().enumerate() {
        for (pos, s) in p["signatures"].as_array().into_iter().flatten().enumerate() {
            let name = s["signature"]
                .as_str()
                .ok_or_else(|| format!("property {id}: a signature without a name"))?;
            let ce = &d["counterexamples"][id][name];
            if !ce.is_array() {
                return Err(format!("property {id}: signature {name} has no counterexample in its shard (a shard of another trc?)"));
            }
            let key = (s["events"].as_u64().unwrap_or(0), ui, pos);
            let states = s["states"].as_u64().unwrap_or(0);
            match sigs.get_mut(name) {
                None => {
                    sigs.insert(
                        name,
                        Sig {
                            accepted: s["status"] == "accepted",
                            finding: &s["finding"],
                            states,
                            key,
                            counterexample: ce,
                        },
                    );
                }
                Some(e) => {
                    e.states += states;
                    if key < e.key {
                        e.key = key;
                        e.counterexample = ce;
                    }
                }
            }
        }
    }
    if sigs.is_empty() {
        return Ok(None);
    }
    let mut order: Vec<(&str, Sig)> = sigs.into_iter().collect();
    order.sort_by_key(|(_, s)| s.key);
    let on_base = |name: &str| base.is_some_and(|(_, b)| b.contains(name));
    let status = |name: &str, s: &Sig| {
        if s.accepted {
            "accepted"
        } else if on_base(name) {
            "also-on-base"
        } else {
            "new"
        }
    };
    let signatures: Vec<Value> = order
        .iter()
        .map(|(name, s)| serde_json::json!({"signature": name, "status": status(name, s), "finding": s.finding, "states": s.states, "events": s.key.0, "also_on_base": on_base(name)}))
        .collect();
    let failing = order.iter().find(|(name, s)| status(name, s) == "new");
    let (shown, shown_sig) = match failing {
        Some((name, s)) => (*name, s),
        None => (order[0].0, &order[0].1),
    };
    let accepted = if failing.is_none() {
        let mut why: Vec<String> = Vec::new();
        for (_, s) in &order {
            let w = if s.accepted {
                format!("accepted {}", s.finding.as_str().unwrap_or("?"))
            } else {
                format!("also on {}", base.map_or("?", |(b, _)| b))
            };
            if !why.contains(&w) {
                why.push(w);
            }
        }
        Value::String(why.join(", "))
    } else {
        Value::Null
    };
    Ok(Some(serde_json::json!({
        "id": id,
        "name": cands[0].0["name"],
        "verdict": "Violated",
        "accepted": accepted,
        "signatures": signatures,
        "counterexample_signature": shown,
        "counterexample": shown_sig.counterexample,
    })))
}

fn merge_check(shards: &[ShardFile], json: bool) -> Result<i32, String> {
    let args = &shards[0].v["args"];
    let units = units_in_order(shards);
    let configs = args["configs"]
        .as_array()
        .ok_or("shard args without configs")?;
    let ids: Vec<&str> = args["properties"]
        .as_array()
        .ok_or("shard args without properties")?
        .iter()
        .filter_map(|x| x.as_str())
        .collect();
    let mut runs = Vec::new();
    let (mut failing, mut incomplete_any) = (false, false);
    for (ci, cfg) in configs.iter().enumerate() {
        let mine: Vec<&Value> = units
            .iter()
            .filter(|u| u["config"] == ci)
            .map(|u| &u["run"])
            .collect();
        if mine.is_empty() {
            return Err(format!("bounds file {ci} has no unit in the shards"));
        }
        let sum = |k: &str| mine.iter().map(|r| r[k].as_u64().unwrap_or(0)).sum::<u64>();
        let max = |k: &str| {
            mine.iter()
                .map(|r| r[k].as_u64().unwrap_or(0))
                .max()
                .unwrap_or(0)
        };
        let seconds: f64 = mine
            .iter()
            .map(|r| r["seconds"].as_f64().unwrap_or(0.0))
            .sum();
        let reasons: Vec<&str> = mine
            .iter()
            .map(|r| r["stop_reason"].as_str().unwrap_or("Complete"))
            .collect();
        let incomplete = mine.iter().any(|r| r["incomplete"] == true);
        // The comparison profile's signatures: the union over this bounds file's units.
        let against = args["against"].as_str();
        let details: Vec<&Value> = units
            .iter()
            .filter(|u| u["config"] == ci)
            .map(|u| &u["detail"])
            .collect();
        let base_incomplete = details.iter().any(|d| d["base"]["incomplete"] == true);
        let mut props = Vec::new();
        for id in &ids {
            // (property result, its unit's detail), in unit order.
            let cands: Vec<(&Value, &Value)> = mine
                .iter()
                .zip(&details)
                .flat_map(|(r, d)| {
                    r["properties"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter(|p| p["id"] == *id)
                        .map(move |p| (p, *d))
                })
                .collect();
            if cands.is_empty() {
                return Err(format!("property {id} of bounds file {ci} is in no unit"));
            }
            let base_sigs: BTreeSet<&str> = details
                .iter()
                .flat_map(|d| {
                    d["base"]["signatures"][*id]
                        .as_array()
                        .into_iter()
                        .flatten()
                })
                .filter_map(|s| s.as_str())
                .collect();
            match merged_classified(id, &cands, against.map(|a| (a, &base_sigs)))? {
                Some(p) => props.push(p),
                None => props.push(
                    merged_property(&cands.iter().map(|(p, _)| *p).collect::<Vec<_>>()).clone(),
                ),
            }
        }
        let result = crate::output::result_word(&props, incomplete);
        failing |= result == "violated";
        incomplete_any |= incomplete;
        runs.push(serde_json::json!({
            "result": result,
            "profile": args["profile"],
            "against": against.map(|a| serde_json::json!({"profile": a, "incomplete": base_incomplete})),
            "config": cfg,
            "unique_states": sum("unique_states"),
            "transitions": sum("transitions"),
            "max_depth": max("max_depth"),
            "seconds": seconds,
            "complete": mine.iter().all(|r| r["complete"] == true),
            "incomplete": incomplete,
            "stop_reason": merged_stop_reason(&reasons),
            "peak_memory_bytes": max("peak_memory_bytes"),
            "spill": merged_spill(&mine),
            "properties": props,
            "coverage": Value::Null,
        }));
    }
    check::print_check(&runs, json);
    Ok(check::exit_code(failing, incomplete_any))
}

fn merge_matrix(shards: &[ShardFile], json: bool) -> Result<i32, String> {
    let args = &shards[0].v["args"];
    let profiles = args["profiles"]
        .as_array()
        .ok_or("shard args without profiles")?;
    let units = units_in_order(shards);
    let mut rows = Vec::new();
    for (pi, p) in profiles.iter().enumerate() {
        let mut merged: Option<MatrixRow> = None;
        for u in units.iter().filter(|u| u["profile"] == pi) {
            let r: MatrixRow = serde_json::from_value(u["row"].clone())
                .map_err(|e| format!("a matrix unit: {e}"))?;
            merged = Some(match merged {
                None => r,
                Some(mut m) => {
                    m.absorb(&r);
                    m
                }
            });
        }
        rows.push(
            merged.ok_or_else(|| format!("profile {} has no unit in the shards", p["name"]))?,
        );
    }
    check::print_matrix(&rows, json);
    Ok(0)
}

fn merge_diff(shards: &[ShardFile], json: bool) -> Result<i32, String> {
    let args = &shards[0].v["args"];
    let mut results: Vec<(u64, trc_diff::ScenarioResult)> = Vec::new();
    let mut rep = trc_diff::DiffReport {
        profile: args["profile"].as_str().unwrap_or("").to_string(),
        seed: args["seed"].as_u64().unwrap_or(0),
        scenarios: shards[0].units,
        ..Default::default()
    };
    for f in trc_diff::FIELDS {
        rep.fields.insert(f.to_string(), (0, 0));
    }
    for s in shards {
        let r: trc_diff::DiffReport = serde_json::from_value(s.v["report"].clone())
            .map_err(|e| format!("{}: its report: {e}", s.name))?;
        let ks: Vec<u64> = s.v["units"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|u| u["unit"].as_u64())
            .collect();
        if ks.len() != r.results.len() {
            return Err(format!(
                "{}: {} units but {} scenario results",
                s.name,
                ks.len(),
                r.results.len()
            ));
        }
        rep.agree += r.agree;
        rep.disagree += r.disagree;
        rep.flaky += r.flaky;
        rep.errors += r.errors;
        rep.kernel_runs += r.kernel_runs;
        rep.steps_compared += r.steps_compared;
        rep.steps_skipped += r.steps_skipped;
        for (f, (a, n)) in &r.fields {
            let e = rep.fields.entry(f.clone()).or_default();
            e.0 += a;
            e.1 += n;
        }
        results.extend(ks.into_iter().zip(r.results));
    }
    results.sort_by_key(|(k, _)| *k);
    rep.results = results.into_iter().map(|(_, r)| r).collect();
    let bar = args["bar"].as_f64().ok_or("diff shard args without bar")?;
    Ok(crate::diff::finish(&rep, bar, json))
}

/// `trc kernel check` shards: the scenarios' results in suite order, summarised as the one run
/// summarises them (the summary is a function of the case results alone). Shards that ran
/// scenarios must have run them on the same kernel.
fn merge_kernel_check(shards: &[ShardFile], json: bool) -> Result<i32, String> {
    let args = &shards[0].v["args"];
    let mut kernel: Option<(&str, &str)> = None;
    let mut seconds = 0.0;
    for s in shards {
        seconds += s.v["report"]["seconds"].as_f64().unwrap_or(0.0);
        let Some(k) = s.v["report"]["kernel"].as_str() else {
            continue;
        };
        match kernel {
            None => kernel = Some((k, &s.name)),
            Some((k0, n0)) if k0 != k => {
                return Err(format!(
                    "{} ran on {k}, {n0} on {k0}: the shards of one check run on one kernel",
                    s.name
                ))
            }
            _ => {}
        }
    }
    let ids: Vec<String> = args["properties"]
        .as_array()
        .ok_or("kernel-check shard args without properties")?
        .iter()
        .filter_map(|x| x.as_str().map(String::from))
        .collect();
    let mons = trc_kcheck::monitor::select(&ids)?;
    let names = args["scenarios"]
        .as_array()
        .ok_or("kernel-check shard args without scenarios")?;
    let mut results = Vec::new();
    for u in units_in_order(shards) {
        let k = u["unit"].as_u64().unwrap_or(0) as usize;
        let r: trc_kcheck::CaseResult = serde_json::from_value(u["result"].clone())
            .map_err(|e| format!("scenario {k}: its result: {e}"))?;
        if names.get(k).and_then(|n| n.as_str()) != Some(r.name.as_str()) {
            return Err(format!(
                "unit {k} is scenario {} but the suite's scenario {k} is {}",
                r.name,
                names.get(k).unwrap_or(&Value::Null)
            ));
        }
        results.push(r);
    }
    // The baseline the shards judged by (absent in shards of older trc versions: none).
    let baseline: Vec<trc_kcheck::Accepted> = match &args["baseline"] {
        Value::Null => Vec::new(),
        b => serde_json::from_value(b.clone())
            .map_err(|e| format!("kernel-check shard args: the baseline: {e}"))?,
    };
    let rep = trc_kcheck::summarise(
        args["suite"].as_str().unwrap_or("").to_string(),
        kernel.map_or(String::new(), |(k, _)| k.to_string()),
        args["profile"].as_str().unwrap_or("").to_string(),
        results,
        &mons,
        &baseline,
    );
    // The coverage suite's plan, when the shards ran one.
    let coverage: Option<trc_kcheck::coverage::CoveragePlan> = match &args["coverage"] {
        Value::Null => None,
        c => Some(
            serde_json::from_value(c.clone())
                .map_err(|e| format!("kernel-check shard args: the coverage plan: {e}"))?,
        ),
    };
    let mut rep = rep;
    // As the one run would say when nothing could shrink; shards do not shrink the rest.
    trc_kcheck::shrink::note_unshrunk(
        &mut rep,
        Some("not shrunk: shards do not shrink (run the suite without --shard to shrink it)"),
    );
    crate::kernel::print_check_report(&rep, coverage.as_ref(), json, seconds);
    Ok(rep.exit_code())
}
