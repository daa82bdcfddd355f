//! Canonical packetdrill text for a [`Script`].
//!
//! One statement per line (multi-line shell commands and `%{ }%` blocks
//! excepted), a single space between tokens, comments dropped. For every
//! script `s` accepted by [`crate::parse`],
//! `parse(write(parse(s)))` equals `parse(s)` up to source positions.

use crate::ast::*;
use std::fmt::Write as _;

/// Render a whole script, one statement per line, ending with a newline.
pub fn write(script: &Script) -> String {
    let mut out = String::new();
    for o in &script.options {
        out.push_str("--");
        out.push_str(&o.name);
        if let Some(v) = &o.value {
            let plain = !v.is_empty() && !v.contains(|c: char| c.is_whitespace() || c == '"');
            let _ = if plain {
                write!(out, "={v}")
            } else {
                write!(out, "=\"{v}\"")
            };
        }
        out.push('\n');
    }
    for s in &script.statements {
        out.push_str(&write_statement(s));
        out.push('\n');
    }
    out
}

/// Render one statement (no trailing newline).
pub fn write_statement(s: &Statement) -> String {
    let mut out = String::new();
    if let Some(t) = &s.time {
        out.push_str(&write_time(t));
        if let StatementKind::Syscall(Syscall {
            end_time: Some(end),
            ..
        }) = &s.kind
        {
            // Spaces keep `...` from running into a fractional time.
            out.push_str(" ... ");
            out.push_str(&write_time(end));
        }
        out.push(' ');
    }
    match &s.kind {
        StatementKind::Packet(p) => out.push_str(&write_packet(p)),
        StatementKind::Syscall(c) => out.push_str(&write_syscall(c)),
        StatementKind::Shell(cmd) => {
            out.push('`');
            out.push_str(cmd);
            out.push('`');
        }
        StatementKind::Python(code) => {
            out.push_str("%{ ");
            out.push_str(code);
            out.push_str(" }%");
        }
    }
    out
}

/// Seconds with up to microsecond precision, at least millisecond digits
/// when fractional: `0`, `1`, `.020`, `1.500`, `.000250`.
pub fn write_seconds(usecs: i64) -> String {
    let neg = usecs < 0;
    let abs = usecs.unsigned_abs();
    let secs = abs / 1_000_000;
    let frac = abs % 1_000_000;
    let mut s = String::new();
    if neg {
        s.push('-');
    }
    if frac == 0 {
        let _ = write!(s, "{secs}");
        return s;
    }
    if secs != 0 {
        let _ = write!(s, "{secs}");
    }
    let mut digits = format!("{frac:06}");
    while digits.len() > 3 && digits.ends_with('0') {
        digits.pop();
    }
    s.push('.');
    s.push_str(&digits);
    s
}

fn write_point(p: &TimePoint) -> String {
    match p {
        TimePoint::Absolute(v) => write_seconds(*v),
        TimePoint::Relative(v) => format!("+{}", write_seconds(*v)),
    }
}

pub fn write_time(t: &Time) -> String {
    match t {
        Time::Absolute(v) => write_point(&TimePoint::Absolute(*v)),
        Time::Relative(v) => write_point(&TimePoint::Relative(*v)),
        Time::Range { start, end } => format!("{}~{}", write_point(start), write_point(end)),
        Time::Any => "*".to_string(),
    }
}

pub fn write_flags(f: &TcpFlags) -> String {
    let mut s = String::new();
    for (on, c) in [
        (f.syn, 'S'),
        (f.fin, 'F'),
        (f.rst, 'R'),
        (f.psh, 'P'),
        (f.urg, 'U'),
        (f.ece, 'E'),
        (f.cwr, 'W'),
        (f.ack, '.'),
    ] {
        if on {
            s.push(c);
        }
    }
    if s.is_empty() {
        s.push('-');
    }
    s
}

fn ecn_str(e: Ecn) -> &'static str {
    match e {
        Ecn::NoEcn => "noecn",
        Ecn::Ect0 => "ect0",
        Ecn::Ect1 => "ect1",
        Ecn::Ect01 => "ect01",
        Ecn::Ce => "ce",
    }
}

pub fn write_option(o: &TcpOption) -> String {
    match o {
        TcpOption::Mss(v) => format!("mss {v}"),
        TcpOption::SackOk => "sackOK".into(),
        TcpOption::Nop => "nop".into(),
        TcpOption::WScale(v) => format!("wscale {v}"),
        TcpOption::Timestamp { val, ecr } => format!("TS val {val} ecr {ecr}"),
        TcpOption::Sack(blocks) => {
            let mut s = String::from("sack");
            for (l, r) in blocks {
                let _ = write!(s, " {l}:{r}");
            }
            s
        }
        TcpOption::Eol => "eol".into(),
        TcpOption::Md5(d) => format!("md5 {d}"),
        TcpOption::FastOpen(c) => c
            .as_ref()
            .map_or_else(|| "FO".to_string(), |c| format!("FO {c}")),
        TcpOption::FastOpenExp(c) => c
            .as_ref()
            .map_or_else(|| "FOEXP".to_string(), |c| format!("FOEXP {c}")),
    }
}

pub fn write_packet(p: &Packet) -> String {
    let mut s = String::new();
    s.push(match p.direction {
        Direction::In => '<',
        Direction::Out => '>',
    });
    if let Some(e) = p.ecn {
        let _ = write!(s, " [{}]", ecn_str(e));
    }
    let _ = write!(
        s,
        " {} {}:{}({})",
        write_flags(&p.flags),
        p.seq,
        p.end_seq,
        p.len
    );
    if let Some(a) = p.ack {
        let _ = write!(s, " ack {a}");
    }
    if let Some(w) = p.win {
        let _ = write!(s, " win {w}");
    }
    if let Some(u) = p.urg {
        let _ = write!(s, " urg {u}");
    }
    match &p.options {
        None => {}
        Some(TcpOptions::Any) => s.push_str(" <...>"),
        Some(TcpOptions::List(list)) => {
            let items: Vec<String> = list.iter().map(write_option).collect();
            let _ = write!(s, " <{}>", items.join(","));
        }
    }
    s
}

pub fn write_expr(e: &Expr) -> String {
    match e {
        Expr::Ellipsis => "...".into(),
        Expr::Int(v) => v.to_string(),
        Expr::Word(w) => w.clone(),
        Expr::Str(s) => format!("\"{s}\""),
        Expr::BitOr(parts) => parts.iter().map(write_expr).collect::<Vec<_>>().join("|"),
        Expr::Array(items) => format!("[{}]", write_list(items)),
        Expr::Struct(fields) => {
            let items: Vec<String> = fields
                .iter()
                .map(|f| match &f.name {
                    Some(n) => format!("{n}={}", write_expr(&f.value)),
                    None => write_expr(&f.value),
                })
                .collect();
            format!("{{{}}}", items.join(", "))
        }
        Expr::Call { name, args } => format!("{name}({})", write_list(args)),
    }
}

fn write_list(items: &[Expr]) -> String {
    items.iter().map(write_expr).collect::<Vec<_>>().join(", ")
}

/// The call itself; a blocking call's `...end` time is written by
/// [`write_statement`] right after the start time.
pub fn write_syscall(c: &Syscall) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "{}({}) = {}",
        c.name,
        write_list(&c.args),
        write_expr(&c.result)
    );
    if let Some(e) = &c.errno {
        let _ = write!(s, " {}", e.name);
        if let Some(n) = &e.note {
            let _ = write!(s, " ({n})");
        }
    }
    s
}
