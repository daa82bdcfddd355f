//! Hand-written recursive-descent parser for packetdrill's grammar (its `parser.y` and
//! `lexer.l` are the reference). See the crate documentation for the accepted grammar.

mod expr;
mod packet;

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
        in_result: false,
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
    /// Parsing a system call's result expression.
    in_result: bool,
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
            Tok::Punct('<') | Tok::Punct('>') if end_time.is_none() => self.packet_statement()?,
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
        let outbound = match &kind {
            StatementKind::Packet(p) => p.direction == Direction::Out,
            StatementKind::Udp(p) => p.direction == Direction::Out,
            StatementKind::Icmp(p) => p.direction == Direction::Out,
            _ => false,
        };
        if matches!(time, Some(Time::Any) | Some(Time::Range { .. })) && !outbound {
            return Err(self.err_at(&action, "outbound packet ('>') after a '*' or range time"));
        }
        Ok(Statement {
            line,
            col,
            time,
            kind,
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
            "ECN" => self.accecn_option(&t)?,
            _ => {
                return Err(self.err_at(
                    &t,
                    "TCP option (mss, sackOK, nop, wscale, TS, sack, eol, md5, FO, FOEXP, ECN)",
                ))
            }
        })
    }

    /// The AccECN option: `ECN` then the byte counters in one of the orders packetdrill's grammar
    /// allows (`e0b [ceb [e1b]]` or `e1b [ceb [e0b]]`), each at most 24 bits.
    fn accecn_option(&mut self, t: &Token) -> Result<TcpOption, ParseError> {
        let mut fields = Vec::new();
        let names = |f: AccEcnField| match f {
            AccEcnField::E0b => "e0b",
            AccEcnField::Ceb => "ceb",
            AccEcnField::E1b => "e1b",
        };
        let first = if self.peek_is_word("e0b")? {
            AccEcnField::E0b
        } else if self.peek_is_word("e1b")? {
            AccEcnField::E1b
        } else {
            let n = self.peek()?.clone();
            return Err(self.err_at(&n, "'e0b' or 'e1b' after 'ECN'"));
        };
        let last = if first == AccEcnField::E0b {
            AccEcnField::E1b
        } else {
            AccEcnField::E0b
        };
        for f in [first, AccEcnField::Ceb, last] {
            if !fields.is_empty() && !self.peek_is_word(names(f))? {
                break;
            }
            self.bump()?;
            let v = self.int_in("AccECN field value", 0, (1 << 24) - 1)? as u32;
            fields.push((f, v));
        }
        if fields.is_empty() {
            return Err(self.err_at(t, "AccECN fields"));
        }
        Ok(TcpOption::AccEcn(fields))
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
        // packetdrill has no calls in a result: `= WORD (note)` is a word and a note.
        self.in_result = true;
        let result = self.expr();
        self.in_result = false;
        let result = result?;
        let mut errno = None;
        if let Tok::Word(w) = &self.peek()?.tok {
            let name = w.clone();
            self.bump()?;
            errno = Some(Errno {
                name,
                note: self.opt_note()?,
            });
        }
        // packetdrill's `opt_note`: a note after the result, with or without an errno.
        let note = self.opt_note()?;
        Ok(Syscall {
            name,
            args,
            result,
            errno,
            note,
            end_time,
        })
    }

    /// `(free text)` after a result or an errno, if there.
    fn opt_note(&mut self) -> Result<Option<String>, ParseError> {
        if !self.peek_is_punct('(')? {
            return Ok(None);
        }
        let open = self.bump()?;
        // The peek buffer is empty now, so the lexer sits right after the '('.
        let raw = self
            .lx
            .raw_until(')', open.line, open.col)
            .map_err(|e| self.lex_err(e))?;
        Ok(Some(raw.trim().to_string()))
    }
}
