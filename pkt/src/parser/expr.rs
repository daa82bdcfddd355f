//! System-call argument and result expressions: packetdrill's `expression` (integers, words,
//! strings and their concatenation, `"prefix"...`, `A|B`, `name=value`, arrays, struct literals
//! such as sockaddr, msghdr with `msg_iov(N)=[...]` and `msg_control=[cmsg...]`, iovec, pollfd,
//! epoll_event, linger, sock_extended_err, scm_timestamping, MPLS stacks and GRE headers), plus
//! calls such as `htons(8080)` and `inet_addr("...")`.

use super::{int_value, Parser, MAX_DEPTH};
use crate::ast::*;
use crate::error::ParseError;
use crate::lexer::Tok;

impl Parser<'_> {
    /// Comma-separated expressions up to and including `close`.
    pub(super) fn expr_list(&mut self, close: char) -> Result<Vec<Expr>, ParseError> {
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

    pub(super) fn expr(&mut self) -> Result<Expr, ParseError> {
        self.enter()?;
        let r = self.expr_inner();
        self.depth -= 1;
        r
    }

    fn expr_inner(&mut self) -> Result<Expr, ParseError> {
        let first = self.primary()?;
        self.or_rest(first)
    }

    /// `first | b | c ...`, or `first` alone.
    fn or_rest(&mut self, first: Expr) -> Result<Expr, ParseError> {
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
            Tok::Str(s) => self.strings(s),
            Tok::Word(w) => self.after_word(w, true),
            Tok::Punct('[') => Ok(Expr::Array(self.expr_list(']')?)),
            Tok::Punct('{') => self.braces(),
            _ => Err(self.err_at(
                &t,
                "expression (integer, name, string, '...', [array] or {struct})",
            )),
        }
    }

    /// After a string literal: more literals (concatenated) or `...` (a prefix).
    fn strings(&mut self, first: String) -> Result<Expr, ParseError> {
        if self.peek()?.tok == Tok::Ellipsis {
            self.bump()?;
            return Ok(Expr::StrPrefix(first));
        }
        let mut parts = vec![first];
        while let Tok::Str(s) = &self.peek()?.tok {
            parts.push(s.clone());
            self.bump()?;
        }
        Ok(if parts.len() == 1 {
            Expr::Str(parts.pop().unwrap_or_default())
        } else {
            Expr::Concat(parts)
        })
    }

    /// After a word: a call `w(args)` (not at the top of a result, where `(` starts a note), an
    /// assignment `w=value` (when `assign`), or the word.
    fn after_word(&mut self, w: String, assign: bool) -> Result<Expr, ParseError> {
        if !(self.in_result && self.depth == 1) && self.eat_punct('(')? {
            let args = self.expr_list(')')?;
            return Ok(Expr::Call { name: w, args });
        }
        if assign && self.eat_punct('=')? {
            return Ok(Expr::Assign {
                name: w,
                value: Box::new(self.expr()?),
            });
        }
        Ok(Expr::Word(w))
    }

    /// After `{`: an MPLS label stack `{(label ...) ...}`, a GRE header `{flags ...}`, or a struct
    /// literal `{a=1, b(2)=[...], 3}` (empty: `{}`).
    fn braces(&mut self) -> Result<Expr, ParseError> {
        if self.peek_is_punct('(')? {
            let stack = self.mpls_stack()?;
            self.expect_punct('}', "'}' after the MPLS label stack")?;
            return Ok(Expr::Mpls(stack));
        }
        if let Tok::Word(w) = &self.peek()?.tok {
            if w == "flags" || w == "Flags" {
                let gre = self.gre_header()?;
                self.expect_punct('}', "'}' after the GRE header")?;
                return Ok(Expr::Gre(gre));
            }
        }
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

    /// `name=value`, `name(args)=value`, or a positional value.
    fn struct_field(&mut self) -> Result<StructField, ParseError> {
        let Tok::Word(w) = &self.peek()?.tok else {
            return Ok(StructField {
                name: None,
                args: None,
                value: self.expr()?,
            });
        };
        let w = w.clone();
        self.bump()?;
        let args = if self.eat_punct('(')? {
            Some(self.expr_list(')')?)
        } else {
            None
        };
        if self.eat_punct('=')? {
            return Ok(StructField {
                name: Some(w),
                args,
                value: self.expr()?,
            });
        }
        // Not a named field: the word (or call) starts a positional expression.
        self.enter()?;
        let first = match args {
            Some(args) => Expr::Call { name: w, args },
            None => self.after_word(w, false)?,
        };
        let value = self.or_rest(first);
        self.depth -= 1;
        Ok(StructField {
            name: None,
            args: None,
            value: value?,
        })
    }
}
