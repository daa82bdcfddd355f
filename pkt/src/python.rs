//! Parsing of `%{ ... }%` blocks into [`PyStmt`]s.
//!
//! Only two statement forms are understood: `assert tcpi_X OP V[, msg]` and
//! `print(tcpi_X)`. Everything else becomes [`PyStmt::Other`] with its text
//! so the caller can report it. Statements are separated by newlines or by
//! `;` (outside strings and brackets); `#` comments are dropped. A compound
//! statement (`if x:` ...) is kept whole, together with its indented body,
//! as one `Other`.

use crate::ast::{CmpOp, PyStmt, PyValue};

/// One logical line: leading-whitespace width and text (comment removed,
/// trailing whitespace trimmed, leading whitespace kept).
struct LogicalLine {
    indent: usize,
    raw: String,
}

/// Split into logical lines: newlines inside brackets or strings do not end
/// a line; `#` comments (outside strings) are removed.
fn logical_lines(code: &str) -> Vec<LogicalLine> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut depth: usize = 0;
    let mut quote: Option<char> = None;
    let mut in_comment = false;
    let mut chars = code.chars();
    while let Some(c) = chars.next() {
        if in_comment {
            if c == '\n' {
                in_comment = false;
            } else {
                continue;
            }
        }
        if let Some(q) = quote {
            cur.push(c);
            if c == '\\' {
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '\'' | '"' => {
                quote = Some(c);
                cur.push(c);
            }
            '#' => in_comment = true,
            '(' | '[' | '{' => {
                depth += 1;
                cur.push(c);
            }
            ')' | ']' | '}' => {
                depth = depth.saturating_sub(1);
                cur.push(c);
            }
            '\n' if depth == 0 => {
                out.push(std::mem::take(&mut cur));
            }
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out.into_iter()
        .enumerate()
        .map(|(i, raw)| {
            let raw = raw.trim_end().to_string();
            // The first line shares the source line with `%{`.
            let indent = if i == 0 {
                0
            } else {
                raw.chars().take_while(|c| *c == ' ' || *c == '\t').count()
            };
            LogicalLine { indent, raw }
        })
        .collect()
}

/// Split a simple-statement line on top-level `;`.
fn split_semicolons(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut depth: usize = 0;
    let mut quote: Option<char> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if let Some(q) = quote {
            cur.push(c);
            if c == '\\' {
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '\'' | '"' => quote = Some(c),
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            ';' if depth == 0 => {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    out.push(cur);
    out
}

const COMPOUND: &[&str] = &[
    "if", "elif", "else", "for", "while", "def", "class", "with", "try", "except", "finally", "async",
];

fn is_compound(text: &str) -> bool {
    let word: String = text.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
    COMPOUND.contains(&word.as_str()) || text.ends_with(':')
}

/// Parse the contents of a `%{ ... }%` block.
pub(crate) fn parse_block(code: &str) -> Vec<PyStmt> {
    let lines = logical_lines(code);
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = &lines[i];
        let text = line.raw.trim();
        i += 1;
        if text.is_empty() {
            continue;
        }
        if is_compound(text) {
            let mut whole = text.to_string();
            while i < lines.len() {
                let body = &lines[i];
                if body.raw.trim().is_empty() {
                    i += 1;
                    continue;
                }
                if body.indent <= line.indent {
                    break;
                }
                whole.push('\n');
                whole.push_str(&body.raw);
                i += 1;
            }
            out.push(PyStmt::Other(whole));
            continue;
        }
        for piece in split_semicolons(text) {
            let piece = piece.trim();
            if !piece.is_empty() {
                out.push(classify(piece));
            }
        }
    }
    out
}

fn ident(s: &str) -> (&str, &str) {
    let n = s
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '_'))
        .map_or(s.len(), |(i, _)| i);
    s.split_at(n)
}

fn is_tcpi_field(s: &str) -> bool {
    s.len() > "tcpi_".len() && s.starts_with("tcpi_")
}

fn classify(stmt: &str) -> PyStmt {
    parse_print(stmt)
        .or_else(|| parse_assert(stmt))
        .unwrap_or_else(|| PyStmt::Other(stmt.to_string()))
}

fn parse_print(stmt: &str) -> Option<PyStmt> {
    let rest = stmt.strip_prefix("print")?.trim_start();
    let inner = rest.strip_prefix('(')?.strip_suffix(')')?.trim();
    let (field, tail) = ident(inner);
    if tail.is_empty() && is_tcpi_field(field) {
        Some(PyStmt::Print(field.to_string()))
    } else {
        None
    }
}

fn parse_assert(stmt: &str) -> Option<PyStmt> {
    let rest = stmt.strip_prefix("assert")?;
    if !rest.starts_with([' ', '\t']) {
        return None;
    }
    let (field, rest) = ident(rest.trim_start());
    if !is_tcpi_field(field) {
        return None;
    }
    let rest = rest.trim_start();
    let ops = [
        ("==", CmpOp::Eq),
        ("!=", CmpOp::Ne),
        ("<=", CmpOp::Le),
        (">=", CmpOp::Ge),
        ("<", CmpOp::Lt),
        (">", CmpOp::Gt),
    ];
    let (op, rest) = ops
        .iter()
        .find_map(|(s, op)| rest.strip_prefix(s).map(|r| (*op, r)))?;
    let rest = rest.trim_start();
    let (value, rest) = if let Some(after_minus) = rest.strip_prefix('-') {
        let (digits, rest) = ident(after_minus);
        let v = crate::parser::int_value(&format!("-{digits}"))?;
        (PyValue::Int(v), rest)
    } else {
        let (word, rest) = ident(rest);
        if word.is_empty() {
            return None;
        }
        if word.starts_with(|c: char| c.is_ascii_digit()) {
            (PyValue::Int(crate::parser::int_value(word)?), rest)
        } else {
            (PyValue::Name(word.to_string()), rest)
        }
    };
    let rest = rest.trim();
    let message = if rest.is_empty() {
        None
    } else {
        let msg = rest.strip_prefix(',')?.trim();
        if msg.is_empty() {
            return None;
        }
        Some(msg.to_string())
    };
    Some(PyStmt::Assert {
        field: field.to_string(),
        op,
        value,
        message,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(field: &str, op: CmpOp, value: PyValue, msg: Option<&str>) -> PyStmt {
        PyStmt::Assert {
            field: field.into(),
            op,
            value,
            message: msg.map(str::to_string),
        }
    }

    #[test]
    fn assert_with_symbol_and_message() {
        assert_eq!(
            parse_block(" assert tcpi_ca_state == TCP_CA_Recovery, tcpi_ca_state "),
            vec![a(
                "tcpi_ca_state",
                CmpOp::Eq,
                PyValue::Name("TCP_CA_Recovery".into()),
                Some("tcpi_ca_state")
            )]
        );
    }

    #[test]
    fn assert_forms() {
        assert_eq!(
            parse_block("assert tcpi_snd_cwnd == 10,  tcpi_snd_cwnd"),
            vec![a("tcpi_snd_cwnd", CmpOp::Eq, PyValue::Int(10), Some("tcpi_snd_cwnd"))]
        );
        assert_eq!(
            parse_block("assert tcpi_rto>=200000"),
            vec![a("tcpi_rto", CmpOp::Ge, PyValue::Int(200000), None)]
        );
        assert_eq!(
            parse_block("assert tcpi_lost != -1, 'x, y'"),
            vec![a("tcpi_lost", CmpOp::Ne, PyValue::Int(-1), Some("'x, y'"))]
        );
        assert_eq!(
            parse_block("assert tcpi_lost < 0x10"),
            vec![a("tcpi_lost", CmpOp::Lt, PyValue::Int(16), None)]
        );
    }

    #[test]
    fn print_and_separators() {
        assert_eq!(
            parse_block("\nprint(tcpi_snd_cwnd); print( tcpi_sacked )\n\n assert tcpi_lost > 1 # comment\n"),
            vec![
                PyStmt::Print("tcpi_snd_cwnd".into()),
                PyStmt::Print("tcpi_sacked".into()),
                a("tcpi_lost", CmpOp::Gt, PyValue::Int(1), None),
            ]
        );
    }

    #[test]
    fn others() {
        assert_eq!(
            parse_block("x = 1; assert tcpi_rtt > 1 and tcpi_rtt < 5; print(x); assert snd_cwnd == 1"),
            vec![
                PyStmt::Other("x = 1".into()),
                PyStmt::Other("assert tcpi_rtt > 1 and tcpi_rtt < 5".into()),
                PyStmt::Other("print(x)".into()),
                PyStmt::Other("assert snd_cwnd == 1".into()),
            ]
        );
        // `;` inside strings and brackets does not split.
        assert_eq!(
            parse_block("print('a;b'); f(1;2)"),
            vec![PyStmt::Other("print('a;b')".into()), PyStmt::Other("f(1;2)".into())]
        );
    }

    #[test]
    fn compound_statements_kept_whole() {
        assert_eq!(
            parse_block("\nif tcpi_lost > 0:\n    print(tcpi_lost)\n    print(tcpi_sacked)\nprint(tcpi_rtt)\n"),
            vec![
                PyStmt::Other("if tcpi_lost > 0:\n    print(tcpi_lost)\n    print(tcpi_sacked)".into()),
                PyStmt::Print("tcpi_rtt".into()),
            ]
        );
        assert_eq!(
            parse_block("if x: print(tcpi_rtt); print(tcpi_lost)"),
            vec![PyStmt::Other("if x: print(tcpi_rtt); print(tcpi_lost)".into())]
        );
    }

    #[test]
    fn empty_block() {
        assert_eq!(parse_block("  \n # only a comment\n"), vec![]);
    }
}
