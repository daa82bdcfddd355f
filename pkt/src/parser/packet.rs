//! Packet lines: packetdrill's `packet_spec` (`tcp_packet_spec`, `udp_packet_spec`,
//! `icmp_packet_spec`) with its `packet_prefix` (IPv4/IPv6/GRE/MPLS encapsulation), `ip_info`,
//! PSP encapsulation, explicit ports, flags (AccECN's AE and ACE included) and TCP options, and
//! the semantic checks packetdrill's parser makes on them.

use super::{Parser, MAX_OPTION_BYTES};
use crate::ast::*;
use crate::error::ParseError;
use crate::lexer::Tok;

/// The flag characters packetdrill accepts in a TCP flags word (`valid_tcp_flags`; `.` is ACK).
const FLAG_CHARS: &str = "FSRPEWAU01234567";

/// ICMP type and code names packetdrill knows (IPv4 and IPv6 together: which table applies
/// depends on the address family the script runs with, `icmp_packet.c`).
const ICMP_NAMES: &[&str] = &[
    "net_unreachable",
    "host_unreachable",
    "protocol_unreachable",
    "port_unreachable",
    "frag_needed",
    "source_route_failed",
    "net_unknown",
    "host_unknown",
    "source_host_isolated",
    "net_prohibited",
    "host_prohibited",
    "net_unreachable_for_tos",
    "host_unreachable_for_tos",
    "packet_filtered",
    "precedence_violation",
    "precedence_cutoff",
    "echo_reply",
    "unreachable",
    "source_quench",
    "redirect",
    "echo_request",
    "time_exceeded",
    "parameter_problem",
    "timestamp_request",
    "timestamp_reply",
    "information_request",
    "information_reply",
    "address_mask_request",
    "address_mask_reply",
    "no_route",
    "admin_prohibited",
    "not_neighbour",
    "address_unreachable",
    "exceeded_hop_limit",
    "exceeded_frag_time",
    "header_field",
    "unknown_next_header",
    "unknown_option",
    "packet_too_big",
];

/// A packetdrill ICMP type or code: a known name, `type_N`/`code_N`, or a word a `-D` definition
/// may stand for (one with an upper-case letter, such as run_all.py's `CODE`).
fn icmp_name_ok(w: &str, prefix: &str) -> bool {
    ICMP_NAMES.contains(&w)
        || w.strip_prefix(prefix)
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        || w.bytes().any(|b| b.is_ascii_uppercase())
}

/// The packet-level header fields shared by TCP, UDP and ICMP lines.
struct Head {
    direction: Direction,
    encap: Vec<Encap>,
    ecn: Option<Ecn>,
    ip: IpExtra,
}

impl Parser<'_> {
    /// A packet line, from its direction on.
    pub(super) fn packet_statement(&mut self) -> Result<StatementKind, ParseError> {
        let d = self.bump()?;
        let direction = if d.tok == Tok::Punct('<') {
            Direction::In
        } else {
            Direction::Out
        };
        let encap = self.packet_prefix()?;
        let (ecn, ip) = self.opt_ip_info()?;
        let head = Head {
            direction,
            encap,
            ecn,
            ip,
        };
        if head.ecn == Some(Ecn::Ect01) && direction == Direction::In {
            return Err(self.err_at(&d, "ECN marker other than [ect01] on an inbound packet"));
        }
        if self.peek_is_word("udp")? {
            return Ok(StatementKind::Udp(self.udp(head)?));
        }
        if self.peek_is_word("icmp")? {
            return Ok(StatementKind::Icmp(self.icmp(head)?));
        }
        Ok(StatementKind::Packet(self.tcp(head, &d)?))
    }

    /// Outer headers: `ipv4 [info] A > B:`, `ipv6 [info] A > B:`, `gre:`, `gre [,] HEADER:`,
    /// `mpls (ENTRY)...:`.
    fn packet_prefix(&mut self) -> Result<Vec<Encap>, ParseError> {
        let mut out = Vec::new();
        loop {
            let t = self.peek()?.clone();
            let Tok::Word(w) = &t.tok else {
                return Ok(out);
            };
            let e = match w.as_str() {
                "ipv4" | "ipv6" => {
                    let v6 = w == "ipv6";
                    self.bump()?;
                    let (ecn, ip) = self.opt_ip_info()?;
                    let src = self.address(v6)?;
                    self.expect_punct('>', "'>' between the addresses")?;
                    let dst = self.address(v6)?;
                    if v6 {
                        Encap::Ipv6 { ecn, ip, src, dst }
                    } else {
                        Encap::Ipv4 { ecn, ip, src, dst }
                    }
                }
                "gre" | "GREv0" => {
                    self.bump()?;
                    if self.peek_is_punct(':')? {
                        Encap::Gre(None)
                    } else {
                        self.eat_punct(',')?;
                        Encap::Gre(Some(self.gre_header()?))
                    }
                }
                "mpls" => {
                    self.bump()?;
                    Encap::Mpls(self.mpls_stack()?)
                }
                _ => return Ok(out),
            };
            self.expect_punct(':', "':' after the encapsulation header")?;
            out.push(e);
        }
    }

    fn address(&mut self, v6: bool) -> Result<String, ParseError> {
        let t = self.bump()?;
        match &t.tok {
            Tok::Addr(a) if a.contains(':') == v6 => Ok(a.clone()),
            _ => Err(self.err_at(
                &t,
                if v6 {
                    "an IPv6 address"
                } else {
                    "an IPv4 address"
                },
            )),
        }
    }

    /// packetdrill's `gre_header_expression`: `flags [F, ...] | flags N`, then `sum N`, `off N`,
    /// `key [=] N`, `seq N`, commas optional between them.
    pub(super) fn gre_header(&mut self) -> Result<GreHeader, ParseError> {
        let t = self.bump()?;
        if !matches!(&t.tok, Tok::Word(w) if w == "flags" || w == "Flags") {
            return Err(self.err_at(&t, "'flags' (a GRE header)"));
        }
        let flags = if self.eat_punct('[')? {
            let mut v = Vec::new();
            loop {
                let f = self.bump()?;
                let flag =
                    match &f.tok {
                        Tok::Word(w) if w == "none" => GreFlag::None,
                        Tok::Word(w) if w == "checksum" => GreFlag::Checksum,
                        Tok::Word(w) if w == "key" => GreFlag::Key,
                        Tok::Word(w) if w == "sequence" => {
                            self.expect_punct('#', "'sequence#'")?;
                            GreFlag::Sequence
                        }
                        _ => return Err(self.err_at(
                            &f,
                            "a GRE flag (none, checksum present, key present, sequence# present)",
                        )),
                    };
                if flag != GreFlag::None {
                    self.expect_word("present")?;
                }
                v.push(flag);
                if !self.eat_punct(',')? {
                    break;
                }
            }
            self.expect_punct(']', "']' after the GRE flags")?;
            GreFlags::Named(v)
        } else {
            GreFlags::Value(self.any_int("GRE flags")?)
        };
        let field = |p: &mut Self, name: &str, eq: bool| -> Result<i64, ParseError> {
            p.eat_punct(',')?;
            p.expect_word(name)?;
            if eq {
                p.eat_punct('=')?;
            }
            p.any_int(name)
        };
        let sum = field(self, "sum", false)?;
        let off = field(self, "off", false)?;
        let key = field(self, "key", true)?;
        let seq = field(self, "seq", false)?;
        Ok(GreHeader {
            flags,
            sum,
            off,
            key,
            seq,
        })
    }

    /// Zero or more `(label N, tc N, [[S],] ttl N)` entries (packetdrill's `mpls_stack`, at most
    /// 6 entries).
    pub(super) fn mpls_stack(&mut self) -> Result<Vec<MplsEntry>, ParseError> {
        let mut v = Vec::new();
        while self.peek_is_punct('(')? {
            let open = self.bump()?;
            self.expect_word("label")?;
            let label = self.int_in("MPLS label", 0, (1 << 20) - 1)?;
            self.expect_punct(',', "',' after the label")?;
            self.expect_word("tc")?;
            let tc = self.int_in("MPLS traffic class", 0, 7)?;
            self.expect_punct(',', "',' after the traffic class")?;
            let bottom = self.eat_punct('[')?;
            if bottom {
                self.expect_word("S")?;
                self.expect_punct(']', "']' after [S")?;
                self.expect_punct(',', "',' after [S]")?;
            }
            self.expect_word("ttl")?;
            let ttl = self.int_in("MPLS TTL", 0, 255)?;
            self.expect_punct(')', "')' after the MPLS entry")?;
            if v.len() == 6 {
                return Err(self.err_at(&open, "at most 6 MPLS labels"));
            }
            v.push(MplsEntry {
                label,
                tc,
                bottom,
                ttl,
            });
        }
        Ok(v)
    }

    /// An integer written in decimal or hex (packetdrill's `any_int`).
    fn any_int(&mut self, what: &str) -> Result<i64, ParseError> {
        self.int_in(what, i64::MIN, i64::MAX)
    }

    /// A hex integer (packetdrill's `HEX_INTEGER`, for `tos` and `flowlabel`) within `max`.
    fn hex_in(&mut self, what: &str, max: i64) -> Result<i64, ParseError> {
        let t = self.bump()?;
        if let Tok::Num(s) = &t.tok {
            if s.starts_with("0x") || s.starts_with("0X") {
                if let Some(v) = super::int_value(s).filter(|v| (0..=max).contains(v)) {
                    return Ok(v);
                }
            }
        }
        Err(self.err_at(&t, format!("{what} in hex (0x0..={max:#x})")))
    }

    /// `[ip_info]` or `(ip_info)`: an ECN marker or `tos 0xNN`, optionally `, flowlabel 0xN`;
    /// or `flowlabel 0xN` alone; or `ttl N` alone.
    fn opt_ip_info(&mut self) -> Result<(Option<Ecn>, IpExtra), ParseError> {
        let close = if self.peek_is_punct('[')? {
            ']'
        } else if self.peek_is_punct('(')? {
            ')'
        } else {
            return Ok((None, IpExtra::default()));
        };
        self.bump()?;
        let t = self.bump()?;
        let mut ip = IpExtra::default();
        let mut ecn = None;
        let word = match &t.tok {
            Tok::Word(w) => w.as_str(),
            _ => "",
        };
        let tos_spec = match word {
            "noecn" => Some(Ecn::NoEcn),
            "ect0" => Some(Ecn::Ect0),
            "ect1" => Some(Ecn::Ect1),
            "ect01" => Some(Ecn::Ect01),
            "ce" => Some(Ecn::Ce),
            _ => None,
        };
        match word {
            _ if tos_spec.is_some() || word == "tos" => {
                if word == "tos" {
                    ip.tos = Some(self.hex_in("tos", 0xff)? as u8);
                } else {
                    ecn = tos_spec;
                }
                if self.eat_punct(',')? {
                    self.expect_word("flowlabel")?;
                    ip.flowlabel = Some(self.hex_in("flowlabel", 0xf_ffff)? as u32);
                }
            }
            "flowlabel" => ip.flowlabel = Some(self.hex_in("flowlabel", 0xf_ffff)? as u32),
            "ttl" => ip.ttl = Some(self.int_in("TTL", 0, 255)? as u8),
            _ => {
                return Err(self.err_at(
                    &t,
                    "IP info (noecn, ect0, ect1, ect01, ce, tos 0xNN, flowlabel 0xN, ttl N)",
                ))
            }
        }
        self.expect_punct(close, &format!("'{close}' after the IP info"))?;
        Ok((ecn, ip))
    }

    /// `SRC>DST` ports, if given (an integer here cannot be TCP flags, so it starts ports).
    fn opt_ports(&mut self) -> Result<Option<(u16, u16)>, ParseError> {
        if !matches!(&self.peek()?.tok, Tok::Num(s) if !s.starts_with('.')) {
            return Ok(None);
        }
        let src = self.int_in("source port", 0, 65535)?;
        self.expect_punct('>', "'>' between the ports")?;
        let dst = self.int_in("destination port", 0, 65535)?;
        Ok(Some((src as u16, dst as u16)))
    }

    fn udp(&mut self, h: Head) -> Result<UdpPacket, ParseError> {
        let t = self.bump()?; // udp
        if matches!(h.ecn, Some(e) if e != Ecn::Ect01) {
            return Err(self.err_at(&t, "a TCP packet (ECN can only be used with TCP packets)"));
        }
        let ports = self.opt_ports()?;
        self.expect_punct('(', "'(' before the UDP payload length")?;
        let len = self.int_in("UDP payload size", 0, 65535)? as u32;
        self.expect_punct(')', "')' after the UDP payload length")?;
        Ok(UdpPacket {
            direction: h.direction,
            encap: h.encap,
            ecn: h.ecn,
            ip: h.ip,
            ports,
            len,
        })
    }

    fn icmp(&mut self, h: Head) -> Result<IcmpPacket, ParseError> {
        self.bump()?; // icmp
        let t = self.bump()?;
        let icmp_type = match &t.tok {
            Tok::Word(w) if icmp_name_ok(w, "type_") => w.clone(),
            _ => return Err(self.err_at(&t, "an ICMP type (unreachable, packet_too_big, ...)")),
        };
        let mut code = None;
        if let Tok::Word(w) = &self.peek()?.tok {
            if w != "mtu" && w != "id" {
                let t = self.bump()?;
                match &t.tok {
                    Tok::Word(w) if icmp_name_ok(w, "code_") => code = Some(w.clone()),
                    _ => return Err(self.err_at(&t, "an ICMP code (frag_needed, ...)")),
                }
            }
        }
        let mtu = if self.peek_is_word("mtu")? {
            self.bump()?;
            Some(self.int_in("ICMP MTU", 0, u32::MAX as i64)?)
        } else {
            None
        };
        let echo_id = if self.peek_is_word("id")? {
            self.bump()?;
            Some(self.int_in("ICMP echo id", 0, 65535)?)
        } else {
            None
        };
        let echoed = if self.eat_punct('[')? {
            let e = if self.peek_is_word("udp")? || self.peek_is_word("raw")? {
                let udp = self.peek_is_word("udp")?;
                self.bump()?;
                self.expect_punct('(', "'(' before the payload length")?;
                let n = self.u32_("payload length")?;
                self.expect_punct(')', "')' after the payload length")?;
                if udp {
                    IcmpEchoed::Udp(n)
                } else {
                    IcmpEchoed::Raw(n)
                }
            } else {
                let (seq, end_seq, len) = self.seq()?;
                IcmpEchoed::Tcp { seq, end_seq, len }
            };
            self.expect_punct(']', "']' after the echoed packet")?;
            Some(e)
        } else {
            None
        };
        Ok(IcmpPacket {
            direction: h.direction,
            encap: h.encap,
            ecn: h.ecn,
            ip: h.ip,
            icmp_type,
            code,
            mtu,
            echo_id,
            echoed,
        })
    }

    /// `start:end(len)` with `end == start + len` and a 16-bit length.
    fn seq(&mut self) -> Result<(u32, u32, u32), ParseError> {
        let seq_tok = self.peek()?.clone();
        let seq = self.u32_("start sequence number")?;
        self.expect_punct(':', "':' after the start sequence number")?;
        let end_seq = self.u32_("end sequence number")?;
        self.expect_punct('(', "'(' before the payload length")?;
        let len = self.int_in("payload length", 0, 65535)? as u32;
        self.expect_punct(')', "')' after the payload length")?;
        if u64::from(seq) + u64::from(len) != u64::from(end_seq) {
            return Err(ParseError {
                file: self.file.to_string(),
                line: seq_tok.line,
                col: seq_tok.col,
                expected: "end sequence number equal to start + length".into(),
                found: format!("{seq}:{end_seq}({len})"),
            });
        }
        Ok((seq, end_seq, len))
    }

    fn tcp(&mut self, h: Head, d: &crate::lexer::Token) -> Result<Packet, ParseError> {
        let psp_spi = if self.peek_is_word("encap")? {
            self.bump()?;
            self.expect_word("psp")?;
            self.expect_word("spi")?;
            Some(self.any_int("PSP SPI")?)
        } else {
            None
        };
        let ports = self.opt_ports()?;
        let flags = self.flags()?;
        let (seq, end_seq, len) = self.seq()?;
        let mut ack = None;
        let mut win = None;
        let mut urg = None;
        if self.peek_is_word("ack")? {
            self.bump()?;
            ack = Some(self.u32_("ack number")?);
        }
        if self.peek_is_word("win")? {
            self.bump()?;
            win = Some(self.int_in("window", 0, 65535)? as u32);
        }
        if self.peek_is_word("urg")? {
            self.bump()?;
            urg = Some(self.int_in("urgent pointer", 0, 65535)? as u32);
        }
        let options = self.opt_tcp_options(h.direction)?;
        if h.direction == Direction::In && win.is_none() {
            return Err(ParseError {
                file: self.file.to_string(),
                line: d.line,
                col: d.col,
                expected: "'win N' on an inbound packet (packetdrill requires the window of every injected segment)".into(),
                found: "no window".into(),
            });
        }
        if let Some(TcpOptions::List(list)) = &options {
            let bytes: usize = list.iter().map(TcpOption::wire_len).sum();
            if bytes > MAX_OPTION_BYTES || !bytes.is_multiple_of(4) {
                let found = if bytes > MAX_OPTION_BYTES {
                    format!("{bytes} bytes of options")
                } else {
                    format!("{bytes} bytes of options, {} excess", bytes % 4)
                };
                return Err(ParseError {
                    file: self.file.to_string(),
                    line: d.line,
                    col: d.col,
                    expected: format!("TCP options padded to a multiple of 4 bytes and at most {MAX_OPTION_BYTES} (add nop or eol)"),
                    found,
                });
            }
        }
        Ok(Packet {
            direction: h.direction,
            encap: h.encap,
            ecn: h.ecn,
            ip: h.ip,
            psp_spi,
            ports,
            flags,
            seq,
            end_seq,
            len,
            ack,
            win,
            urg,
            options,
        })
    }

    fn opt_tcp_options(&mut self, direction: Direction) -> Result<Option<TcpOptions>, ParseError> {
        if !self.peek_is_punct('<')? {
            return Ok(None);
        }
        let lt = self.bump()?;
        if self.peek()?.tok == Tok::Ellipsis {
            if direction == Direction::In {
                return Err(self.err_at(
                    &lt,
                    "explicit TCP options ('<...>' is only allowed on outbound packets)",
                ));
            }
            self.bump()?;
            self.expect_punct('>', "'>' after '<...'")?;
            return Ok(Some(TcpOptions::Any));
        }
        let mut list = Vec::new();
        if !self.eat_punct('>')? {
            loop {
                list.push(self.tcp_option()?);
                let t = self.bump()?;
                match t.tok {
                    Tok::Punct(',') => continue,
                    Tok::Punct('>') => break,
                    _ => return Err(self.err_at(&t, "',' or '>' in TCP option list")),
                }
            }
        }
        Ok(Some(TcpOptions::List(list)))
    }

    /// packetdrill's `flags`: a word of flag letters (and at most one ACE digit, which excludes
    /// E, W and A), then `.` (ACK) or `.D` (ACK and an ACE digit); or `.` / `.D` alone; or `-`.
    fn flags(&mut self) -> Result<TcpFlags, ParseError> {
        let t = self.bump()?;
        let expected =
            "TCP flags (letters from F S R P E W A U and one ACE digit 0-7, optionally followed by '.', or '.' or '-')";
        let mut text = match &t.tok {
            Tok::Punct('.') => return Ok(ack_only()),
            Tok::Punct('-') => return Ok(TcpFlags::default()),
            Tok::Num(s) if is_ack_and_ace(s) => s.clone(),
            Tok::Word(w) if w.chars().all(|c| FLAG_CHARS.contains(c)) => w.clone(),
            _ => return Err(self.err_at(&t, expected)),
        };
        if matches!(&t.tok, Tok::Word(_)) {
            let next = self.peek()?.tok.clone();
            match next {
                Tok::Punct('.') => {
                    self.bump()?;
                    text.push('.');
                }
                Tok::Num(s) if is_ack_and_ace(&s) => {
                    self.bump()?;
                    text.push_str(&s);
                }
                _ => {}
            }
        }
        flags_of(&text).map_err(|m| self.err_at(&t, m.to_string()))
    }
}

fn ack_only() -> TcpFlags {
    TcpFlags {
        ack: true,
        ..TcpFlags::default()
    }
}

/// A `.D` token (packetdrill's `ack_and_ace`: a FLOAT such as `.5`).
fn is_ack_and_ace(s: &str) -> bool {
    s.strip_prefix('.')
        .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}

/// Why a flags text is not valid (the parser says "expected" before it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum BadFlags {
    /// An E, W or A with an ACE digit.
    #[error("TCP flags without conflicting '{0}' (an ACE digit is given)")]
    EcnWithAce(char),
    /// A second ACE digit, or one after E, W or A.
    #[error("TCP flags without conflicting '{0}' (one ACE digit, and no E, W or A with it)")]
    AceWithEcn(char),
    #[error("TCP flags (invalid TCP flag '{0}')")]
    Invalid(char),
}

/// The flags of a flags text (packetdrill's `is_tcp_flags_spec_valid` and `new_tcp_packet`):
/// letters may repeat; an ACE digit conflicts with E, W, A and another digit.
fn flags_of(text: &str) -> Result<TcpFlags, BadFlags> {
    let mut f = TcpFlags::default();
    let mut ecn_letter = false;
    for c in text.chars() {
        match c {
            'S' => f.syn = true,
            'F' => f.fin = true,
            'R' => f.rst = true,
            'P' => f.psh = true,
            'U' => f.urg = true,
            '.' => f.ack = true,
            'E' | 'W' | 'A' => {
                if f.ace.is_some() {
                    return Err(BadFlags::EcnWithAce(c));
                }
                ecn_letter = true;
                match c {
                    'E' => f.ece = true,
                    'W' => f.cwr = true,
                    _ => f.ae = true,
                }
            }
            '0'..='7' => {
                if ecn_letter || f.ace.is_some() {
                    return Err(BadFlags::AceWithEcn(c));
                }
                f.ace = Some(c as u8 - b'0');
            }
            _ => return Err(BadFlags::Invalid(c)),
        }
    }
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_texts() {
        assert_eq!(flags_of("S.").unwrap(), {
            let mut f = ack_only();
            f.syn = true;
            f
        });
        assert_eq!(flags_of(".5").unwrap().ace, Some(5));
        assert!(flags_of("SE.5").is_err(), "E with an ACE digit");
        assert!(flags_of("S1.5").is_err(), "two ACE digits");
        assert!(
            flags_of("SS").unwrap().syn,
            "repeats are accepted, as packetdrill does"
        );
        assert!(flags_of("S8").is_err());
        assert!(flags_of("SEWA.").unwrap().ae);
    }
}
