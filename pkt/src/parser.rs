//! Hand-written recursive-descent parser for the supported packetdrill
//! subset. See the crate documentation for the accepted grammar.

use crate::ast::*;
use crate::error::ParseError;
use crate::lexer::{LexError, Lexer, Tok, Token};

/// Maximum nesting depth of `[...]`, `{...}` and call expressions.
const MAX_DEPTH: u32 = 64;

/// Parse a packetdrill script. `file_name` is only used in error messages.
///
/// Never panics; every failure is reported as a [`ParseError`] pointing at
/// the offending token.
pub fn parse(src: &str, file_name: &str) -> Result<Script, ParseError> {
    let mut p = Parser {
        lx: Lexer::new(src),
        peeked: None,
        file: file_name,
        depth: 0,
    };
    let options = p.options()?;
    let mut statements = Vec::new();
    loop {
        if p.peek()?.tok == Tok::Eof {
            break;
        }
        statements.push(p.statement()?);
    }
    // packetdrill's grammar: `opt_init_command events opt_cleanup_command`.
    let n = statements.len();
    if let Some(st) = statements
        .iter()
        .enumerate()
        .find(|(i, s)| s.time.is_none() && *i != 0 && *i + 1 != n)
        .map(|(_, s)| s)
    {
        return Err(ParseError {
            file: file_name.to_string(),
            line: st.line,
            col: st.col,
            expected: "an event time (only the first and the last statement, the init and cleanup commands, may be untimed)".into(),
            found: "an untimed shell command".into(),
        });
    }
    Ok(Script {
        options,
        statements,
    })
}

/// The largest TCP option list packetdrill builds (a 60-byte TCP header).
const MAX_OPTION_BYTES: usize = 40;

struct Parser<'f> {
    lx: Lexer,
    peeked: Option<Token>,
    file: &'f str,
    depth: u32,
}

/// Parse a time literal (`0`, `.020`, `1.5`) into microseconds.
pub(crate) fn time_micros(text: &str) -> Option<i64> {
    let (int, frac) = match text.split_once('.') {
        Some((i, f)) => (i, f),
        None => (text, ""),
    };
    if !int.chars().all(|c| c.is_ascii_digit()) || !frac.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    // Digits beyond microseconds must be zero: no silent rounding.
    if frac.len() > 6 && frac[6..].chars().any(|c| c != '0') {
        return None;
    }
    let secs: i64 = if int.is_empty() { 0 } else { int.parse().ok()? };
    let mut usecs: i64 = 0;
    for (i, c) in frac.chars().take(6).enumerate() {
        let d = i64::from(c.to_digit(10)?);
        usecs += d * 10i64.pow(5 - i as u32);
    }
    secs.checked_mul(1_000_000)?
        .checked_add(usecs)
        .filter(|&us| us <= MAX_TIME_US)
}

/// Largest time a script may write: 10^6 s (11.6 days). Sums of such times stay far inside
/// the engine's i64 µs clock, and no test runs that long.
pub const MAX_TIME_US: i64 = 1_000_000_000_000;

/// Parse an integer literal (`12`, `-1`, `0x1f`, `-0x1f`) that fits an i64.
pub(crate) fn int_value(text: &str) -> Option<i64> {
    let (neg, body) = match text.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, text),
    };
    let magnitude: u64 =
        if let Some(hex) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
            if hex.is_empty() || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
                return None;
            }
            u64::from_str_radix(hex, 16).ok()?
        } else {
            if body.is_empty() || !body.chars().all(|c| c.is_ascii_digit()) {
                return None;
            }
            body.parse::<u64>().ok()?
        };
    let v = i128::from(magnitude);
    i64::try_from(if neg { -v } else { v }).ok()
}

const FLAG_CHARS: &str = "SFRPUEW";

impl<'f> Parser<'f> {
    fn lex_err(&self, e: LexError) -> ParseError {
        ParseError {
            file: self.file.to_string(),
            line: e.line,
            col: e.col,
            expected: e.expected,
            found: e.found,
        }
    }

    fn err_at(&self, t: &Token, expected: impl Into<String>) -> ParseError {
        ParseError {
            file: self.file.to_string(),
            line: t.line,
            col: t.col,
            expected: expected.into(),
            found: t.tok.describe(),
        }
    }

    fn peek(&mut self) -> Result<&Token, ParseError> {
        let t = match self.peeked.take() {
            Some(t) => t,
            None => self.lx.next_token().map_err(|e| self.lex_err(e))?,
        };
        Ok(self.peeked.insert(t))
    }

    fn bump(&mut self) -> Result<Token, ParseError> {
        self.peek()?;
        Ok(self.peeked.take().unwrap_or(Token {
            tok: Tok::Eof,
            line: 0,
            col: 0,
        }))
    }

    fn peek_is_punct(&mut self, c: char) -> Result<bool, ParseError> {
        Ok(self.peek()?.tok == Tok::Punct(c))
    }

    fn eat_punct(&mut self, c: char) -> Result<bool, ParseError> {
        if self.peek_is_punct(c)? {
            self.bump()?;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    fn expect_punct(&mut self, c: char, expected: &str) -> Result<Token, ParseError> {
        let t = self.bump()?;
        if t.tok == Tok::Punct(c) {
            Ok(t)
        } else {
            Err(self.err_at(&t, expected))
        }
    }

    fn peek_is_word(&mut self, w: &str) -> Result<bool, ParseError> {
        Ok(matches!(&self.peek()?.tok, Tok::Word(x) if x == w))
    }

    fn expect_word(&mut self, w: &str) -> Result<(), ParseError> {
        let t = self.bump()?;
        match &t.tok {
            Tok::Word(x) if x == w => Ok(()),
            _ => Err(self.err_at(&t, format!("'{w}'"))),
        }
    }

    /// An integer token within `[min, max]`.
    fn int_in(&mut self, what: &str, min: i64, max: i64) -> Result<i64, ParseError> {
        let t = self.bump()?;
        if let Tok::Num(s) = &t.tok {
            if let Some(v) = int_value(s) {
                if (min..=max).contains(&v) {
                    return Ok(v);
                }
            }
        }
        Err(self.err_at(&t, format!("{what} ({min}..={max})")))
    }

    fn u32_(&mut self, what: &str) -> Result<u32, ParseError> {
        Ok(self.int_in(what, 0, u32::MAX as i64)? as u32)
    }

    fn time_point(&mut self) -> Result<TimePoint, ParseError> {
        let relative = self.eat_punct('+')?;
        let t = self.bump()?;
        let v = match &t.tok {
            Tok::Num(s) => time_micros(s),
            _ => None,
        };
        match v {
            Some(v) if relative => Ok(TimePoint::Relative(v)),
            Some(v) => Ok(TimePoint::Absolute(v)),
            None => Err(self.err_at(
                &t,
                "time in seconds (non-negative, at most microsecond precision, at most 1000000)",
            )),
        }
    }

    fn time(&mut self) -> Result<Time, ParseError> {
        if self.eat_punct('*')? {
            return Ok(Time::Any);
        }
        let start = self.time_point()?;
        if !self.peek_is_punct('~')? {
            return Ok(start.into());
        }
        self.bump()?;
        let end_tok = self.peek()?.clone();
        let end = self.time_point()?;
        if start.is_relative() != end.is_relative() {
            let what = if start.is_relative() {
                "relative range end like '+.02'"
            } else {
                "absolute range end like '.02'"
            };
            return Err(self.err_at(&end_tok, what));
        }
        if end.micros() < start.micros() {
            return Err(ParseError {
                file: self.file.to_string(),
                line: end_tok.line,
                col: end_tok.col,
                expected: "range end not before range start".into(),
                found: "a backwards time range".into(),
            });
        }
        Ok(Time::Range { start, end })
    }

    /// The `--name[=value]` lines before the first event. As in packetdrill's grammar, a value
    /// is an integer, a word, a quoted string or an address; a fractional number (such as
    /// `--tolerance_percent=12.5`) is a parse error there (it is allowed on the command line).
    fn options(&mut self) -> Result<Vec<ScriptOption>, ParseError> {
        let mut out = Vec::new();
        while let Tok::Opt(name, value) = self.peek()?.tok.clone() {
            let t = self.bump()?;
            if let Some(v) = &value {
                let numeric = v.chars().all(|c| c.is_ascii_digit() || c == '.');
                if v.is_empty() || (numeric && v.matches('.').count() == 1) {
                    return Err(self.err_at(&t, format!("a value for --{name} (an integer, a word, a \"string\" or an address; fractions are only allowed on the command line)")));
                }
            }
            out.push(ScriptOption {
                line: t.line,
                col: t.col,
                name,
                value,
            });
        }
        Ok(out)
    }

    fn statement(&mut self) -> Result<Statement, ParseError> {
        let first = self.peek()?.clone();
        let (line, col) = (first.line, first.col);
        let time = match &first.tok {
            Tok::Shell(_) => None,
            Tok::Num(_) | Tok::Punct('+') | Tok::Punct('*') => Some(self.time()?),
            Tok::Punct('-') => return Err(self.err_at(&first, "event time, shell command or %{ }% block (negative times are not allowed)")),
            Tok::Opt(..) => return Err(self.err_at(&first, "event time, shell command or %{ }% block (--option lines must come before the first event)")),
            _ => {
                return Err(self.err_at(&first, "event time, shell command or %{ }% block"));
            }
        };
        let mut end_time = None;
        if self.peek()?.tok == Tok::Ellipsis {
            self.bump()?;
            end_time = Some(self.time_point()?.into());
        }
        let action = self.peek()?.clone();
        let kind = match &action.tok {
            Tok::Punct('<') | Tok::Punct('>') if end_time.is_none() => {
                StatementKind::Packet(self.packet()?)
            }
            Tok::Shell(s) if end_time.is_none() => {
                let s = s.clone();
                self.bump()?;
                StatementKind::Shell(s)
            }
            Tok::Code(c) if end_time.is_none() => {
                // packetdrill strips spaces and tabs (not newlines) at both ends.
                let c = c.trim_matches([' ', '\t']).to_string();
                self.bump()?;
                StatementKind::Python(c)
            }
            Tok::Word(_) => StatementKind::Syscall(self.syscall(end_time)?),
            _ if end_time.is_some() => {
                return Err(self.err_at(&action, "system call after 'start...end' time"))
            }
            _ => {
                return Err(self.err_at(
                    &action,
                    "packet ('<' or '>'), system call, shell command or %{ }% block",
                ))
            }
        };
        // packetdrill only allows '*' and time ranges on outbound packets.
        if matches!(time, Some(Time::Any) | Some(Time::Range { .. }))
            && !matches!(&kind, StatementKind::Packet(p) if p.direction == Direction::Out)
        {
            return Err(self.err_at(&action, "outbound packet ('>') after a '*' or range time"));
        }
        Ok(Statement {
            line,
            col,
            time,
            kind,
        })
    }

    fn flags(&mut self) -> Result<TcpFlags, ParseError> {
        let t = self.bump()?;
        let mut f = TcpFlags::default();
        let expected =
            "TCP flags (letters from S F R P U E W, optionally followed by '.', or '.' or '-')";
        match &t.tok {
            Tok::Punct('.') => {
                f.ack = true;
                return Ok(f);
            }
            Tok::Punct('-') => return Ok(f),
            Tok::Word(w) if w.chars().all(|c| FLAG_CHARS.contains(c)) => {
                for c in w.chars() {
                    let slot = match c {
                        'S' => &mut f.syn,
                        'F' => &mut f.fin,
                        'R' => &mut f.rst,
                        'P' => &mut f.psh,
                        'U' => &mut f.urg,
                        'E' => &mut f.ece,
                        _ => &mut f.cwr,
                    };
                    if *slot {
                        return Err(self.err_at(&t, "TCP flags without repeated letters"));
                    }
                    *slot = true;
                }
            }
            Tok::Word(w)
                if ["udp", "icmp", "ipv4", "ipv6", "gre", "GREv0", "mpls"]
                    .contains(&w.as_str()) =>
            {
                return Err(self.err_at(
                    &t,
                    "TCP segment (UDP, ICMP and encapsulated packets are not supported)",
                ));
            }
            Tok::Num(_) if self.peek_is_punct('>')? => {
                return Err(self.err_at(&t, "TCP flags (explicit port numbers are not supported)"));
            }
            _ => return Err(self.err_at(&t, expected)),
        }
        if self.eat_punct('.')? {
            f.ack = true;
        }
        Ok(f)
    }

    fn ecn(&mut self, direction: Direction) -> Result<Option<Ecn>, ParseError> {
        let close = if self.peek_is_punct('[')? {
            ']'
        } else if self.peek_is_punct('(')? {
            ')'
        } else {
            return Ok(None);
        };
        self.bump()?;
        let t = self.bump()?;
        let ecn = match &t.tok {
            Tok::Word(w) => match w.as_str() {
                "noecn" => Ecn::NoEcn,
                "ect0" => Ecn::Ect0,
                "ect1" => Ecn::Ect1,
                "ect01" => Ecn::Ect01,
                "ce" => Ecn::Ce,
                _ => return Err(self.err_at(&t, "IP ECN marker (noecn, ect0, ect1, ect01, ce); tos/flowlabel/ttl are not supported")),
            },
            _ => return Err(self.err_at(&t, "IP ECN marker (noecn, ect0, ect1, ect01, ce)")),
        };
        if ecn == Ecn::Ect01 && direction == Direction::In {
            return Err(self.err_at(&t, "ECN marker other than [ect01] on an inbound packet"));
        }
        self.expect_punct(close, &format!("'{close}' after the ECN marker"))?;
        Ok(Some(ecn))
    }

    fn packet(&mut self) -> Result<Packet, ParseError> {
        let d = self.bump()?;
        let direction = if d.tok == Tok::Punct('<') {
            Direction::In
        } else {
            Direction::Out
        };
        let ecn = self.ecn(direction)?;
        let flags = self.flags()?;
        let seq_tok = self.peek()?.clone();
        let seq = self.u32_("start sequence number")?;
        self.expect_punct(':', "':' after the start sequence number")?;
        let end_seq = self.u32_("end sequence number")?;
        self.expect_punct('(', "'(' before the payload length")?;
        let len = self.u32_("payload length")?;
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
        let mut options = None;
        if self.peek_is_punct('<')? {
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
                options = Some(TcpOptions::Any);
            } else {
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
                options = Some(TcpOptions::List(list));
            }
        }
        if direction == Direction::In && win.is_none() {
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
            direction,
            ecn,
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

    fn tcp_option(&mut self) -> Result<TcpOption, ParseError> {
        let t = self.bump()?;
        let name = match &t.tok {
            Tok::Word(w) => w.as_str(),
            _ => "",
        };
        Ok(match name {
            "nop" => TcpOption::Nop,
            "eol" => TcpOption::Eol,
            "sackOK" => TcpOption::SackOk,
            "mss" => TcpOption::Mss(self.int_in("MSS value", 0, 65535)? as u16),
            "wscale" => TcpOption::WScale(self.int_in("window scale", 0, 255)? as u8),
            "TS" => {
                self.expect_word("val")?;
                let val = self.u32_("TS val")?;
                self.expect_word("ecr")?;
                let ecr = self.u32_("TS ecr")?;
                TcpOption::Timestamp { val, ecr }
            }
            "sack" => {
                let mut blocks = Vec::new();
                while matches!(self.peek()?.tok, Tok::Num(_)) {
                    let l = self.u32_("SACK block left edge")?;
                    self.expect_punct(':', "':' in SACK block")?;
                    let r = self.u32_("SACK block right edge")?;
                    blocks.push((l, r));
                }
                TcpOption::Sack(blocks)
            }
            "md5" => match self.cookie()? {
                Some(d) => TcpOption::Md5(d),
                None => return Err(self.err_at(&t, "an md5 digest (hex) after 'md5'")),
            },
            "FO" => TcpOption::FastOpen(self.cookie()?),
            "FOEXP" => TcpOption::FastOpenExp(self.cookie()?),
            _ => {
                return Err(self.err_at(
                    &t,
                    "TCP option (mss, sackOK, nop, wscale, TS, sack, eol, md5, FO, FOEXP)",
                ))
            }
        })
    }

    /// An optional Fast Open cookie or MD5 digest: a word or number token (hex digits, or a name
    /// a `-D` definition replaces).
    fn cookie(&mut self) -> Result<Option<String>, ParseError> {
        match &self.peek()?.tok {
            Tok::Word(w) | Tok::Num(w) => {
                let w = w.clone();
                self.bump()?;
                Ok(Some(w))
            }
            _ => Ok(None),
        }
    }

    fn syscall(&mut self, end_time: Option<Time>) -> Result<Syscall, ParseError> {
        let t = self.bump()?;
        let name = match t.tok {
            Tok::Word(w) => w,
            _ => return Err(self.err_at(&t, "system call name")),
        };
        self.expect_punct('(', &format!("'(' after system call name '{name}'"))?;
        let args = self.expr_list(')')?;
        self.expect_punct('=', "'=' and the expected return value")?;
        let result = self.expr()?;
        let mut errno = None;
        if let Tok::Word(w) = &self.peek()?.tok {
            let name = w.clone();
            self.bump()?;
            let mut note = None;
            if self.peek_is_punct('(')? {
                let open = self.bump()?;
                // The peek buffer is empty now, so the lexer sits right
                // after the '('.
                let raw = self
                    .lx
                    .raw_until(')', open.line, open.col)
                    .map_err(|e| self.lex_err(e))?;
                note = Some(raw.trim().to_string());
            }
            errno = Some(Errno { name, note });
        }
        Ok(Syscall {
            name,
            args,
            result,
            errno,
            end_time,
        })
    }

    /// Comma-separated expressions up to and including `close`.
    fn expr_list(&mut self, close: char) -> Result<Vec<Expr>, ParseError> {
        let mut out = Vec::new();
        if self.eat_punct(close)? {
            return Ok(out);
        }
        loop {
            out.push(self.expr()?);
            let t = self.bump()?;
            match t.tok {
                Tok::Punct(',') => continue,
                Tok::Punct(c) if c == close => return Ok(out),
                _ => return Err(self.err_at(&t, format!("',' or '{close}'"))),
            }
        }
    }

    fn enter(&mut self) -> Result<(), ParseError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            let t = self.peek()?.clone();
            return Err(self.err_at(&t, format!("expression nested at most {MAX_DEPTH} deep")));
        }
        Ok(())
    }

    fn expr(&mut self) -> Result<Expr, ParseError> {
        self.enter()?;
        let r = self.expr_inner();
        self.depth -= 1;
        r
    }

    fn expr_inner(&mut self) -> Result<Expr, ParseError> {
        let first = self.primary()?;
        if !self.peek_is_punct('|')? {
            return Ok(first);
        }
        let mut parts = vec![first];
        while self.eat_punct('|')? {
            parts.push(self.primary()?);
        }
        Ok(Expr::BitOr(parts))
    }

    fn primary(&mut self) -> Result<Expr, ParseError> {
        let t = self.bump()?;
        match t.tok {
            Tok::Ellipsis => Ok(Expr::Ellipsis),
            Tok::Num(ref s) => match int_value(s) {
                Some(v) => Ok(Expr::Int(v)),
                None => Err(self.err_at(&t, "integer (64-bit, decimal or 0x hex)")),
            },
            Tok::Str(s) => Ok(Expr::Str(s)),
            Tok::Word(w) => {
                if self.eat_punct('(')? {
                    let args = self.expr_list(')')?;
                    Ok(Expr::Call { name: w, args })
                } else {
                    Ok(Expr::Word(w))
                }
            }
            Tok::Punct('[') => Ok(Expr::Array(self.expr_list(']')?)),
            Tok::Punct('{') => {
                let mut fields = Vec::new();
                if self.eat_punct('}')? {
                    return Ok(Expr::Struct(fields));
                }
                loop {
                    fields.push(self.struct_field()?);
                    let t = self.bump()?;
                    match t.tok {
                        Tok::Punct(',') => continue,
                        Tok::Punct('}') => return Ok(Expr::Struct(fields)),
                        _ => return Err(self.err_at(&t, "',' or '}' in struct literal")),
                    }
                }
            }
            _ => Err(self.err_at(
                &t,
                "expression (integer, name, string, '...', [array] or {struct})",
            )),
        }
    }

    fn struct_field(&mut self) -> Result<StructField, ParseError> {
        // `name = value` or a positional value.
        if let Tok::Word(w) = &self.peek()?.tok {
            let w = w.clone();
            self.bump()?;
            if self.eat_punct('=')? {
                let value = self.expr()?;
                return Ok(StructField {
                    name: Some(w),
                    value,
                });
            }
            // Not a named field: re-parse as an expression starting with
            // the word we already consumed.
            let first = if self.eat_punct('(')? {
                let args = self.expr_list(')')?;
                Expr::Call { name: w, args }
            } else {
                Expr::Word(w)
            };
            let value = if self.peek_is_punct('|')? {
                let mut parts = vec![first];
                while self.eat_punct('|')? {
                    parts.push(self.primary()?);
                }
                Expr::BitOr(parts)
            } else {
                first
            };
            return Ok(StructField { name: None, value });
        }
        Ok(StructField {
            name: None,
            value: self.expr()?,
        })
    }
}
