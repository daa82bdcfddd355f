//! `trc-trace`: counterexamples users can run and keep.
//!
//! * [`export`]: a model trace (a counterexample path) → a packetdrill script with the model's
//!   predicted `tcpi_*` asserts after every step, the full trace as JSON, and a DOT chain.
//! * [`replay`]: a packetdrill script (ours or one written for the kernel) → the model's sender
//!   driven by its inbound segments, writes and timers, every outbound segment and assert
//!   checked line by line; lines outside the model's scope are reported as such.
//! * [`regress`]: the regression corpus (`counterexamples/regressions/manifest.toml`).
//!
//! Both directions run the sender through [`driver::Driver`], so an exported script replays to
//! the states it was exported from. Script sequence space: model segment `k` is bytes
//! `1 + 1000k .. 1 + 1000(k+1)` (MSS 1000).
#![forbid(unsafe_code)]

pub mod driver;
pub mod export;
pub mod model_shell;
pub mod regress;
pub mod replay;
pub mod shell;
pub mod upstream;

use std::fmt::Write as _;
use std::path::Path;
use trc_files::{remove_stale_tmp, write_atomic};
use trc_model::model::{Action, State};

/// Bytes per model segment in exported scripts.
pub const MSS: u32 = 1000;

/// Script sequence number of the start of model segment `k` (MSS 1000).
pub fn seq_bytes(k: u32) -> u32 {
    1 + k * MSS
}

/// The ghost observations of the step that produced `s`, in words.
pub fn notes(s: &State) -> Vec<String> {
    let ev = &s.sender.ghost.ev;
    let mut n = Vec::new();
    for u in &ev.undos {
        n.push(format!(
            "undo {:?}: cwnd {}→{}, ssthresh {}→{} (prior_cwnd {}, prior_ssthresh {})",
            u.kind,
            u.cwnd_before,
            u.cwnd_after,
            u.ssthresh_before,
            u.ssthresh_after,
            u.prior_cwnd,
            u.prior_ssthresh
        ));
    }
    for r in &ev.reductions {
        n.push(format!(
            "ssthresh reduction ({:?} from {:?})",
            r.kind, r.from
        ));
    }
    if ev.nonsack_hold {
        n.push("non-SACK hold at snd_una == high_seq".into());
    }
    if ev.prr_zero_prior_cwnd {
        n.push("PRR with prior_cwnd == 0".into());
    }
    n
}

/// An event of a model path in words, with the packet it refers to (segment, original or
/// retransmission, when it was sent): the short form of `trc check`'s counterexamples, the graph
/// pages and the Explorer ([`export::describe`] is the exported scripts' longer form).
pub fn event_text(prev: &State, a: &Action) -> String {
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

fn dot_escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// The path as a chain graph: one node per state (ca_state, cwnd, ssthresh, snd_una,
/// high_seq), one edge per event; the violating state is red.
pub fn dot(t: &export::TraceFile) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "digraph \"{}-{}\" {{",
        dot_escape(&t.property),
        dot_escape(&t.profile.name)
    );
    let _ = writeln!(
        o,
        "  label=\"{} on {}\"; labelloc=t; rankdir=TB; node [shape=box, fontname=monospace];",
        dot_escape(&t.property_name),
        dot_escape(&t.profile.name)
    );
    for st in &t.steps {
        let x = &st.state.sender;
        let lbl = format!(
            "{}: t={} ms\\n{:?} cwnd {} ssthresh {}\\nsnd_una {} snd_nxt {} high_seq {}",
            st.index,
            st.state.now,
            x.ca_state,
            x.cwnd,
            x.ssthresh,
            x.snd_una,
            x.snd_nxt,
            x.high_seq
        );
        let style = if st.index == t.violation_step {
            ", color=red, penwidth=2"
        } else {
            ""
        };
        let _ = writeln!(o, "  s{} [label=\"{}\"{}];", st.index, lbl, style);
    }
    for w in t.steps.windows(2) {
        let _ = writeln!(
            o,
            "  s{} -> s{} [label=\"{}\"];",
            w[0].index,
            w[1].index,
            dot_escape(&w[1].event)
        );
    }
    let _ = writeln!(o, "}}");
    o
}

/// `s` with every character that is not a letter, a digit, `.`, `_`, `+` or `-` replaced by
/// `_`, and no leading `.` (a file name in the directory it is written to, never a path).
pub fn file_safe(s: &str) -> String {
    let mut out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '+' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.starts_with('.') || out.is_empty() {
        out.insert(0, '_');
    }
    out
}

/// trc's `counterexamples/common/defaults.sh`: the namespace settings exported scripts expect
/// (the values of packetdrill's gtests). Exports call it as `./defaults.sh` (the layout of the
/// kernel's packetdrill selftests: beside the script); the regression corpus as
/// `../common/defaults.sh` (the gtests' layout).
pub const DEFAULTS_SH: &str = include_str!("../../counterexamples/common/defaults.sh");

/// The init line exported scripts start with.
pub const EXPORT_INIT: &str = "`./defaults.sh`";

/// Writes [`DEFAULTS_SH`] as `dir/defaults.sh` (executable) unless it is there already, so the
/// scripts exported into `dir` run from there on packetdrill and on a kernel.
pub fn write_defaults(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir)?;
    let d = dir.join("defaults.sh");
    if std::fs::read_to_string(&d).ok().as_deref() != Some(DEFAULTS_SH) {
        write_atomic(&d, DEFAULTS_SH.as_bytes())?;
    }
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755))
}

/// Writes `DIR/<property>-<profile>.{pkt,json,dot}` for one export (and `DIR/defaults.sh`);
/// returns the `.pkt` path.
pub fn write_export(dir: &Path, x: &export::Exported) -> std::io::Result<std::path::PathBuf> {
    write_export_as(dir, x, upstream::Form::Trc)?.map_err(std::io::Error::other)
}

/// [`write_export`] with the script in `form` ([`upstream`]): `.json` and `.dot` as always; the
/// script named as the form names it, and trc's `defaults.sh` beside it only in trc's form (the
/// upstream forms use upstream's). The inner error: the form cannot express the script (no
/// script written).
pub fn write_export_as(
    dir: &Path,
    x: &export::Exported,
    form: upstream::Form,
) -> std::io::Result<Result<std::path::PathBuf, upstream::Unsupported>> {
    std::fs::create_dir_all(dir)?;
    remove_stale_tmp(dir);
    let stem = file_safe(&format!("{}-{}", x.trace.property, x.trace.profile.name));
    let json = serde_json::to_string_pretty(&x.trace).map_err(std::io::Error::other)?;
    write_atomic(&dir.join(format!("{stem}.json")), json.as_bytes())?;
    write_atomic(&dir.join(format!("{stem}.dot")), x.dot.as_bytes())?;
    let text = match upstream::convert(&x.pkt, form) {
        Ok(t) => t,
        Err(u) => return Ok(Err(u)),
    };
    if form == upstream::Form::Trc {
        write_defaults(dir)?;
    }
    let pkt = dir.join(form.file_name(&stem));
    write_atomic(&pkt, text.as_bytes())?;
    Ok(Ok(pkt))
}
