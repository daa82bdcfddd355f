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
        match &o.value {
            Some(v) => write_option_line(&mut out, &o.name, v),
            None => {
                out.push_str("--");
                out.push_str(&o.name);
            }
        }
        out.push('\n');
    }
    for s in &script.statements {
        out.push_str(&write_statement(s));
        out.push('\n');
    }
    out
}

/// `--name=value` in the first form the lexer reads back as this option: unquoted, else in
/// quotes. The lexer reads an unquoted value up to white space or a quote, keeps `NAME="..."`
/// (packetdrill's `--define=CC="reno"`) with its quotes, and keeps escapes inside quotes
/// verbatim, so asking it is simpler and surer than restating its rules here.
fn write_option_line(out: &mut String, name: &str, value: &str) {
    let plain = format!("--{name}={value}");
    let reads_back = |text: &str| {
        let mut lexer = crate::lexer::Lexer::new(text);
        let first = lexer.next_token().map(|t| t.tok);
        let then = lexer.next_token().map(|t| t.tok);
        first == Ok(crate::lexer::Tok::Opt(name.into(), Some(value.into())))
            && then == Ok(crate::lexer::Tok::Eof)
    };
    if !value.is_empty() && reads_back(&plain) {
        out.push_str(&plain);
    } else {
        let _ = write!(out, "--{name}=\"{value}\"");
    }
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
        StatementKind::Udp(p) => out.push_str(&write_udp(p)),
        StatementKind::Icmp(p) => out.push_str(&write_icmp(p)),
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
        (f.ae, 'A'),
    ] {
        if on {
            s.push(c);
        }
    }
    match (f.ace, f.ack) {
        // `.5` (ACK and the digit) reads back as one token; a digit needs a letter before it
        // to be a word (`S5`), which every parsed script has.
        (Some(d), true) => {
            let _ = write!(s, ".{d}");
        }
        (Some(d), false) => {
            let _ = write!(s, "{d}");
        }
        (None, true) => s.push('.'),
        (None, false) => {}
    }
    if s.is_empty() {
        s.push('-');
    }
    s
}

/// The bracketed IP info (`[ect0]`, `[tos 0x10, flowlabel 0x1]`, `[ttl 64]`), with a leading
/// space, or nothing.
fn write_ip_info(ecn: Option<Ecn>, ip: &IpExtra) -> String {
    let mut parts = Vec::new();
    if let Some(e) = ecn {
        parts.push(ecn_str(e).to_string());
    }
    if let Some(t) = ip.tos {
        parts.push(format!("tos {t:#04x}"));
    }
    if let Some(f) = ip.flowlabel {
        parts.push(format!("flowlabel {f:#x}"));
    }
    if let Some(t) = ip.ttl {
        parts.push(format!("ttl {t}"));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" [{}]", parts.join(", "))
    }
}

fn write_gre(g: &GreHeader) -> String {
    let flags = match &g.flags {
        GreFlags::Value(v) => v.to_string(),
        GreFlags::Named(v) => {
            let names: Vec<&str> = v
                .iter()
                .map(|f| match f {
                    GreFlag::None => "none",
                    GreFlag::Checksum => "checksum present",
                    GreFlag::Key => "key present",
                    GreFlag::Sequence => "sequence# present",
                })
                .collect();
            format!("[{}]", names.join(", "))
        }
    };
    format!(
        "flags {flags} sum {} off {} key {} seq {}",
        g.sum, g.off, g.key, g.seq
    )
}

fn write_mpls(stack: &[MplsEntry]) -> String {
    let items: Vec<String> = stack
        .iter()
        .map(|e| {
            format!(
                "(label {}, tc {}, {}ttl {})",
                e.label,
                e.tc,
                if e.bottom { "[S], " } else { "" },
                e.ttl
            )
        })
        .collect();
    items.join(" ")
}

/// The direction and the encapsulation headers, e.g. `< ipv4 192.0.2.1 > 192.168.0.1: gre:`.
fn write_head(direction: Direction, encap: &[Encap]) -> String {
    let mut s = String::new();
    s.push(match direction {
        Direction::In => '<',
        Direction::Out => '>',
    });
    for e in encap {
        match e {
            Encap::Ipv4 { ecn, ip, src, dst } | Encap::Ipv6 { ecn, ip, src, dst } => {
                let v = if matches!(e, Encap::Ipv4 { .. }) {
                    4
                } else {
                    6
                };
                let _ = write!(s, " ipv{v}{} {src} > {dst}:", write_ip_info(*ecn, ip));
            }
            Encap::Gre(None) => s.push_str(" gre:"),
            Encap::Gre(Some(g)) => {
                let _ = write!(s, " gre {}:", write_gre(g));
            }
            Encap::Mpls(stack) if stack.is_empty() => s.push_str(" mpls:"),
            Encap::Mpls(stack) => {
                let _ = write!(s, " mpls {}:", write_mpls(stack));
            }
        }
    }
    s
}

fn write_ports(p: Option<(u16, u16)>) -> String {
    p.map(|(a, b)| format!(" {a}>{b}")).unwrap_or_default()
}

pub fn write_udp(p: &UdpPacket) -> String {
    format!(
        "{}{} udp{} ({})",
        write_head(p.direction, &p.encap),
        write_ip_info(p.ecn, &p.ip),
        write_ports(p.ports),
        p.len
    )
}

pub fn write_icmp(p: &IcmpPacket) -> String {
    let mut s = format!(
        "{}{} icmp {}",
        write_head(p.direction, &p.encap),
        write_ip_info(p.ecn, &p.ip),
        p.icmp_type
    );
    if let Some(c) = &p.code {
        let _ = write!(s, " {c}");
    }
    if let Some(m) = p.mtu {
        let _ = write!(s, " mtu {m}");
    }
    if let Some(i) = p.echo_id {
        let _ = write!(s, " id {i}");
    }
    match p.echoed {
        None => {}
        Some(IcmpEchoed::Tcp { seq, end_seq, len }) => {
            let _ = write!(s, " [{seq}:{end_seq}({len})]");
        }
        Some(IcmpEchoed::Udp(n)) => {
            let _ = write!(s, " [udp ({n})]");
        }
        Some(IcmpEchoed::Raw(n)) => {
            let _ = write!(s, " [raw ({n})]");
        }
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
        TcpOption::AccEcn(fields) => {
            let mut s = String::from("ECN");
            for (f, v) in fields {
                let n = match f {
                    AccEcnField::E0b => "e0b",
                    AccEcnField::Ceb => "ceb",
                    AccEcnField::E1b => "e1b",
                };
                let _ = write!(s, " {n} {v}");
            }
            s
        }
    }
}

pub fn write_packet(p: &Packet) -> String {
    let mut s = write_head(p.direction, &p.encap);
    s.push_str(&write_ip_info(p.ecn, &p.ip));
    if let Some(spi) = p.psp_spi {
        let _ = write!(s, " encap psp spi {spi}");
    }
    s.push_str(&write_ports(p.ports));
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
                .map(|f| match (&f.name, &f.args) {
                    (Some(n), None) => format!("{n}={}", write_expr(&f.value)),
                    (Some(n), Some(a)) => {
                        format!("{n}({})={}", write_list(a), write_expr(&f.value))
                    }
                    (None, _) => write_expr(&f.value),
                })
                .collect();
            format!("{{{}}}", items.join(", "))
        }
        Expr::Call { name, args } => format!("{name}({})", write_list(args)),
        Expr::Concat(parts) => parts
            .iter()
            .map(|p| format!("\"{p}\""))
            .collect::<Vec<_>>()
            .join(" "),
        Expr::StrPrefix(s) => format!("\"{s}\"..."),
        Expr::Assign { name, value } => format!("{name}={}", write_expr(value)),
        Expr::Mpls(stack) => format!("{{{}}}", write_mpls(stack)),
        Expr::Gre(g) => format!("{{{}}}", write_gre(g)),
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
    if let Some(n) = &c.note {
        let _ = write!(s, " ({n})");
    }
    s
}
