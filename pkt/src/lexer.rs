//! On-demand tokenizer for packetdrill scripts.
//!
//! Whitespace (including newlines) and `//` / `/* */` comments separate
//! tokens but are otherwise ignored, as in packetdrill: statement boundaries
//! are found by the grammar, not by line breaks.

/// Kinds of token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Tok {
    /// Numeric literal text as written: `12`, `-1`, `.020`, `1.5`, `0x1f`.
    Num(String),
    /// `[A-Za-z0-9_]+` that is not a number.
    Word(String),
    /// Contents of a `"..."` literal, escapes kept verbatim.
    Str(String),
    /// Contents between backticks, verbatim.
    Shell(String),
    /// Contents of a `%{ ... }%` block, verbatim.
    Code(String),
    /// `...`
    Ellipsis,
    /// An IPv4 (`192.0.2.1`) or IPv6 (`fd3d::1`) address, as packetdrill's lexer finds them.
    Addr(String),
    /// `--name` or `--name=value` (a script option line; the value's quotes removed).
    Opt(String, Option<String>),
    /// Any other single character.
    Punct(char),
    Eof,
}

impl Tok {
    /// Human-readable description for error messages.
    pub(crate) fn describe(&self) -> String {
        fn clip(s: &str) -> String {
            let mut out: String = s.chars().take(24).collect();
            if s.chars().count() > 24 {
                out.push_str("...");
            }
            out.replace('\n', "\\n")
        }
        match self {
            Tok::Num(s) => format!("number '{s}'"),
            Tok::Word(s) => format!("'{}'", clip(s)),
            Tok::Str(s) => format!("string \"{}\"", clip(s)),
            Tok::Shell(s) => format!("shell command `{}`", clip(s)),
            Tok::Code(_) => "%{ }% block".to_string(),
            Tok::Ellipsis => "'...'".to_string(),
            Tok::Addr(a) => format!("address {}", clip(a)),
            Tok::Opt(n, _) => format!("option '--{}'", clip(n)),
            Tok::Punct(c) => format!("'{c}'"),
            Tok::Eof => "end of input".to_string(),
        }
    }
}

/// A token with its 1-based start position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Token {
    pub tok: Tok,
    pub line: u32,
    pub col: u32,
}

/// Lexical error: (line, col, expected, found).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LexError {
    pub line: u32,
    pub col: u32,
    pub expected: String,
    pub found: String,
}

pub(crate) struct Lexer {
    chars: Vec<char>,
    pos: usize,
    line: u32,
    col: u32,
}

/// Longer than any address (an IPv6 address with an embedded IPv4 one has at most 45 characters).
const MAX_ADDRESS_LEN: usize = 64;

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

impl Lexer {
    pub(crate) fn new(src: &str) -> Lexer {
        Lexer {
            chars: src.chars().collect(),
            pos: 0,
            line: 1,
            col: 1,
        }
    }

    fn peek_char(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.pos.saturating_add(ahead)).copied()
    }

    fn advance(&mut self) -> Option<char> {
        let c = self.chars.get(self.pos).copied()?;
        self.pos += 1;
        if c == '\n' {
            self.line = self.line.saturating_add(1);
            self.col = 1;
        } else {
            self.col = self.col.saturating_add(1);
        }
        Some(c)
    }

    fn take_while(&mut self, f: impl Fn(char) -> bool) -> String {
        let mut s = String::new();
        while let Some(c) = self.peek_char(0) {
            if !f(c) {
                break;
            }
            s.push(c);
            self.advance();
        }
        s
    }

    /// Skip whitespace and comments.
    fn skip_trivia(&mut self) -> Result<(), LexError> {
        loop {
            match (self.peek_char(0), self.peek_char(1)) {
                (Some(c), _) if c.is_whitespace() => {
                    self.advance();
                }
                (Some('/'), Some('/')) => {
                    while let Some(c) = self.peek_char(0) {
                        if c == '\n' {
                            break;
                        }
                        self.advance();
                    }
                }
                (Some('/'), Some('*')) => {
                    let (line, col) = (self.line, self.col);
                    self.advance();
                    self.advance();
                    loop {
                        match (self.peek_char(0), self.peek_char(1)) {
                            (Some('*'), Some('/')) => {
                                self.advance();
                                self.advance();
                                break;
                            }
                            (Some(_), _) => {
                                self.advance();
                            }
                            (None, _) => {
                                return Err(LexError {
                                    line,
                                    col,
                                    expected: "'*/' closing this comment".into(),
                                    found: "end of input".into(),
                                })
                            }
                        }
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    /// Scan a delimited literal whose opening delimiter was consumed; a
    /// backslash escapes the next character. Returns the raw contents.
    fn delimited(
        &mut self,
        close: char,
        what: &str,
        line: u32,
        col: u32,
    ) -> Result<String, LexError> {
        let mut s = String::new();
        loop {
            match self.advance() {
                None => {
                    return Err(LexError {
                        line,
                        col,
                        expected: format!("closing {what}"),
                        found: "end of input".into(),
                    })
                }
                Some('\\') => {
                    s.push('\\');
                    if let Some(c) = self.advance() {
                        s.push(c);
                    }
                }
                Some(c) if c == close => return Ok(s),
                Some(c) => s.push(c),
            }
        }
    }

    fn digits(&mut self) -> String {
        self.take_while(|c| c.is_ascii_digit())
    }

    /// Scan `.` digits if present (the '.' must be followed by a digit).
    fn fraction(&mut self, s: &mut String) {
        if self.peek_char(0) == Some('.') && self.peek_char(1).is_some_and(|c| c.is_ascii_digit()) {
            self.advance();
            s.push('.');
            s.push_str(&self.digits());
        }
    }

    /// Raw text up to (not including) `close`, which is consumed. Used for
    /// the free-text note after an errno. Stops with an error at a newline
    /// or end of input.
    pub(crate) fn raw_until(
        &mut self,
        close: char,
        line: u32,
        col: u32,
    ) -> Result<String, LexError> {
        let mut s = String::new();
        loop {
            match self.peek_char(0) {
                Some(c) if c == close => {
                    self.advance();
                    return Ok(s);
                }
                Some('\n') | None => {
                    return Err(LexError {
                        line,
                        col,
                        expected: format!("'{close}' on the same line"),
                        found: if self.peek_char(0).is_some() {
                            "end of line".into()
                        } else {
                            "end of input".into()
                        },
                    })
                }
                Some(c) => {
                    s.push(c);
                    self.advance();
                }
            }
        }
    }

    /// The length of an IPv4 or IPv6 address starting here, if packetdrill's lexer would take
    /// one (its `ipv4_addr` and `ipv6_addr` patterns, the longest match winning over a number or
    /// a word): four dotted decimal numbers, or hex groups with `::` or eight groups (an
    /// embedded IPv4 address included). Sequence ranges like `1:1001` are not addresses.
    fn address_len(&self) -> Option<usize> {
        let run: String = self.chars[self.pos..]
            .iter()
            .take_while(|c| c.is_ascii_hexdigit() || **c == ':' || **c == '.')
            .take(MAX_ADDRESS_LEN)
            .collect();
        let word = self.chars[self.pos..]
            .iter()
            .take_while(|c| is_word_char(**c))
            .count();
        (1..=run.len()).rev().find(|&n| {
            let cand = &run[..n];
            let v4 = cand.split('.').count() == 4
                && cand
                    .split('.')
                    .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
            let v6 = cand.contains(':')
                && (cand.contains("::") || cand.matches(':').count() == 7)
                && cand.parse::<std::net::Ipv6Addr>().is_ok();
            (v4 || v6) && n > word
        })
    }

    /// The text of a `%{ ... }%` block after its opening `%{`, through its closing `}%`.
    fn code_block(&mut self, line: u32, col: u32) -> Result<String, LexError> {
        let mut s = String::new();
        loop {
            match (self.peek_char(0), self.peek_char(1)) {
                (Some('}'), Some('%')) => {
                    self.advance();
                    self.advance();
                    return Ok(s);
                }
                (Some(c), _) => {
                    s.push(c);
                    self.advance();
                }
                (None, _) => {
                    return Err(LexError {
                        line,
                        col,
                        expected: "'}%' closing this %{ block".into(),
                        found: "end of input".into(),
                    })
                }
            }
        }
    }

    /// An option `--name` or `--name=value` after its `--`.
    fn option(&mut self, line: u32, col: u32) -> Result<Tok, LexError> {
        let name = self.take_while(is_word_char);
        if self.peek_char(0) != Some('=') {
            return Ok(Tok::Opt(name, None));
        }
        self.advance();
        let value = if self.peek_char(0) == Some('"') {
            self.advance();
            self.delimited('"', "quote '\"'", line, col)?
        } else {
            // A quote cannot be part of an unquoted value (packetdrill's words and
            // numbers have none), so every value the writer quotes or not reads back;
            // except after `NAME=`, where packetdrill's grammar takes a quoted or
            // backquoted value (`--define=CC="reno"`), kept with its quotes.
            let mut v = self.take_while(|c| !c.is_whitespace() && c != '"' && c != '`');
            if let (true, Some(q @ ('"' | '`'))) = (v.ends_with('='), self.peek_char(0)) {
                self.advance();
                let inner = self.delimited(q, "closing quote", line, col)?;
                v.push(q);
                v.push_str(&inner);
                v.push(q);
            }
            v
        };
        Ok(Tok::Opt(name, Some(value)))
    }

    pub(crate) fn next_token(&mut self) -> Result<Token, LexError> {
        self.skip_trivia()?;
        let (line, col) = (self.line, self.col);
        let mk = |tok| Ok(Token { tok, line, col });
        let c = match self.peek_char(0) {
            None => return mk(Tok::Eof),
            Some(c) => c,
        };
        let next = self.peek_char(1);
        let next_is_digit = next.is_some_and(|d| d.is_ascii_digit());
        match c {
            '`' => {
                self.advance();
                let s = self.delimited('`', "backtick '`'", line, col)?;
                mk(Tok::Shell(s))
            }
            '"' => {
                self.advance();
                let s = self.delimited('"', "quote '\"'", line, col)?;
                mk(Tok::Str(s))
            }
            '%' if next == Some('{') => {
                self.advance();
                self.advance();
                mk(Tok::Code(self.code_block(line, col)?))
            }
            '-' if next == Some('-') && self.peek_char(2).is_some_and(is_word_char) => {
                self.advance();
                self.advance();
                mk(self.option(line, col)?)
            }
            '.' if next == Some('.') && self.peek_char(2) == Some('.') => {
                self.advance();
                self.advance();
                self.advance();
                mk(Tok::Ellipsis)
            }
            '.' if next_is_digit => {
                let mut s = String::new();
                self.fraction(&mut s);
                mk(Tok::Num(s))
            }
            '-' if next_is_digit
                || (next == Some('.') && self.peek_char(2).is_some_and(|d| d.is_ascii_digit())) =>
            {
                self.advance();
                let mut s = String::from("-");
                let body = self.take_while(is_word_char);
                let all_digits = body.chars().all(|c| c.is_ascii_digit());
                s.push_str(&body);
                if all_digits {
                    self.fraction(&mut s);
                }
                // Malformed forms like `-12ab` stay one token and are
                // rejected by whoever needs a number.
                mk(Tok::Num(s))
            }
            c if (c.is_ascii_hexdigit() || c == ':') && self.address_len().is_some() => {
                let n = self.address_len().unwrap_or(0);
                let mut s = String::new();
                for _ in 0..n {
                    s.extend(self.advance());
                }
                mk(Tok::Addr(s))
            }
            c if is_word_char(c) => {
                let mut s = self.take_while(is_word_char);
                if s.chars().all(|c| c.is_ascii_digit()) {
                    self.fraction(&mut s);
                    mk(Tok::Num(s))
                } else if (s.starts_with("0x") || s.starts_with("0X"))
                    && s.len() > 2
                    && s[2..].chars().all(|c| c.is_ascii_hexdigit())
                {
                    mk(Tok::Num(s))
                } else {
                    mk(Tok::Word(s))
                }
            }
            c => {
                self.advance();
                mk(Tok::Punct(c))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(src: &str) -> Vec<Tok> {
        let mut lx = Lexer::new(src);
        let mut out = vec![];
        loop {
            let t = lx.next_token().expect("lex ok");
            if t.tok == Tok::Eof {
                return out;
            }
            out.push(t.tok);
        }
    }

    #[test]
    fn numbers_and_words() {
        use Tok::*;
        assert_eq!(
            toks("+.020 0 1.5 -1 0x1F S. 12ab ..."),
            vec![
                Punct('+'),
                Num(".020".into()),
                Num("0".into()),
                Num("1.5".into()),
                Num("-1".into()),
                Num("0x1F".into()),
                Word("S".into()),
                Punct('.'),
                Word("12ab".into()),
                Ellipsis
            ]
        );
    }

    #[test]
    fn comments_and_literals() {
        use Tok::*;
        assert_eq!(
            toks("// c\n/* multi\nline */ `a\nb` \"x\\\"y\" %{ print(x) }%"),
            vec![
                Shell("a\nb".into()),
                Str("x\\\"y".into()),
                Code(" print(x) ".into())
            ]
        );
    }

    #[test]
    fn positions() {
        let mut lx = Lexer::new("a\n  bc");
        let a = lx.next_token().unwrap();
        let b = lx.next_token().unwrap();
        assert_eq!((a.line, a.col), (1, 1));
        assert_eq!((b.line, b.col), (2, 3));
    }

    #[test]
    fn unterminated() {
        let e = Lexer::new("\n x `abc").next_token();
        assert!(e.is_ok()); // 'x'
        let mut lx = Lexer::new("\n x `abc");
        lx.next_token().unwrap();
        let e = lx.next_token().unwrap_err();
        assert_eq!((e.line, e.col), (2, 4));
        assert_eq!(e.found, "end of input");
    }
}
