//! The workspace's code hygiene that no lint checks: no function spans more than 120 lines, from
//! its `fn` line to its closing brace (clippy's `too_many_lines` counts only code lines, so a
//! function padded with comments and blank lines passes it). A data table is exempt when it says
//! so: `#[allow(clippy::too_many_lines)]` and a `//` comment with its reason above the `fn`.

use std::fs;
use std::path::{Path, PathBuf};

/// The most lines a function may span.
const MAX_LINES: usize = 120;

/// Every `.rs` file of the workspace (crates, their tests and benches, fuzz/), not build output.
fn rust_files(root: &Path) -> Vec<PathBuf> {
    trc_testkit::files_under(
        root,
        |d| d != "target" && !d.starts_with('.'),
        |f| f.ends_with(".rs"),
    )
}

/// A token of Rust source that matters to find functions: a word or one of `{}()[];`, with its
/// line (1-based). Comments, string and character literals are skipped.
#[derive(Debug, PartialEq)]
enum Tok {
    Word(String),
    Punct(char),
}

/// The index after the literal or comment starting at `i`, if one starts there; `line` counts
/// the newlines it spans.
fn skip_literal(c: &[char], i: usize, line: &mut usize) -> Option<usize> {
    let at = |k: usize| c.get(k).copied();
    let mut j = match (c[i], at(i + 1)) {
        ('/', Some('/')) => {
            return Some(
                c[i..]
                    .iter()
                    .position(|&x| x == '\n')
                    .map_or(c.len(), |n| i + n),
            )
        }
        ('/', Some('*')) => {
            let (mut depth, mut j) = (1, i + 2);
            while depth > 0 && j < c.len() {
                match (c[j], at(j + 1)) {
                    ('/', Some('*')) => (depth, j) = (depth + 1, j + 2),
                    ('*', Some('/')) => (depth, j) = (depth - 1, j + 2),
                    (x, _) => (*line, j) = (*line + usize::from(x == '\n'), j + 1),
                }
            }
            return Some(j);
        }
        ('"', _) => i + 1,
        // A character literal ('x', '\n', '\u{7b}'), not a lifetime or a label ('a).
        // An escape: the closing quote is after the escaped character ('\'' too).
        ('\'', Some('\\')) => {
            return Some(i + 3 + c.get(i + 3..)?.iter().position(|&x| x == '\'')? + 1)
        }
        ('\'', Some(_)) if at(i + 2) == Some('\'') => return Some(i + 3),
        _ => return None,
    };
    while j < c.len() && c[j] != '"' {
        let step = if c[j] == '\\' { 2 } else { 1 };
        *line += c[j..(j + step).min(c.len())]
            .iter()
            .filter(|&&x| x == '\n')
            .count();
        j += step;
    }
    Some(j + 1)
}

/// The index after the raw string (`r"…"`, `r#"…"#`, after a `b`/`c` prefix) whose `r` is at
/// `i`, if one starts there.
fn skip_raw_string(c: &[char], i: usize, line: &mut usize) -> Option<usize> {
    let hashes = c[i + 1..].iter().take_while(|&&x| x == '#').count();
    if c.get(i + 1 + hashes) != Some(&'"') {
        return None;
    }
    let close: Vec<char> = std::iter::once('"')
        .chain(std::iter::repeat_n('#', hashes))
        .collect();
    let mut j = i + 2 + hashes;
    while j < c.len() && !c[j..].starts_with(&close) {
        *line += usize::from(c[j] == '\n');
        j += 1;
    }
    Some(j + close.len())
}

fn tokens(src: &str) -> Vec<(Tok, usize)> {
    let c: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < c.len() {
        if let Some(j) = skip_literal(&c, i, &mut line) {
            i = j;
        } else if c[i].is_alphanumeric() || c[i] == '_' {
            let n = c[i..]
                .iter()
                .take_while(|x| x.is_alphanumeric() || **x == '_')
                .count();
            let word: String = c[i..i + n].iter().collect();
            let raw = matches!(word.as_str(), "r" | "br" | "cr");
            match raw
                .then(|| skip_raw_string(&c, i + n - 1, &mut line))
                .flatten()
            {
                Some(j) => i = j,
                None => {
                    out.push((Tok::Word(word), line));
                    i += n;
                }
            }
        } else {
            if "{}()[];".contains(c[i]) {
                out.push((Tok::Punct(c[i]), line));
            }
            line += usize::from(c[i] == '\n');
            i += 1;
        }
    }
    out
}

/// Each function with a body: its name, the line of its `fn` and the line of its closing brace.
fn functions(src: &str) -> Vec<(String, usize, usize)> {
    let t = tokens(src);
    let mut out = Vec::new();
    for (k, w) in t.windows(2).enumerate() {
        let (Tok::Word(f), first) = &w[0] else {
            continue;
        };
        let (Tok::Word(name), _) = &w[1] else {
            continue;
        };
        if f != "fn" {
            continue;
        }
        // The body's `{`: the first `{` or `;` outside the signature's parentheses and brackets.
        let mut depth = 0i32;
        let mut body = None;
        for (j, (tok, _)) in t.iter().enumerate().skip(k + 2) {
            match tok {
                Tok::Punct('(' | '[') => depth += 1,
                Tok::Punct(')' | ']') => depth -= 1,
                Tok::Punct(';') if depth == 0 => break,
                Tok::Punct('{') if depth == 0 => {
                    body = Some(j);
                    break;
                }
                _ => {}
            }
        }
        let Some(open) = body else { continue };
        let mut braces = 0;
        for (tok, last) in &t[open..] {
            match tok {
                Tok::Punct('{') => braces += 1,
                Tok::Punct('}') => braces -= 1,
                _ => {}
            }
            if braces == 0 {
                out.push((name.clone(), *first, *last));
                break;
            }
        }
    }
    out
}

/// Whether the attributes and comments right above line `line` (1-based) exempt the function
/// there: `#[allow(clippy::too_many_lines)]` with a `//` comment giving the reason.
fn exempt_table(lines: &[&str], line: usize) -> bool {
    let above: Vec<&str> = lines[..line - 1]
        .iter()
        .rev()
        .map(|l| l.trim())
        .take_while(|l| l.starts_with("#[") || l.starts_with("//"))
        .collect();
    above
        .iter()
        .any(|l| l.starts_with("#[allow(clippy::too_many_lines)]"))
        && above
            .iter()
            .any(|l| l.starts_with("//") && !l.starts_with("///"))
}

#[test]
fn no_function_spans_more_than_120_lines() {
    let root = trc_testkit::workspace();
    let mut long = Vec::new();
    for file in rust_files(&root) {
        let src = fs::read_to_string(&file).unwrap();
        let lines: Vec<&str> = src.lines().collect();
        for (name, first, last) in functions(&src) {
            let n = last - first + 1;
            if n > MAX_LINES && !exempt_table(&lines, first) {
                let rel = file.strip_prefix(&root).unwrap().display();
                long.push(format!("{rel}:{first}: fn {name}: {n} lines"));
            }
        }
    }
    assert!(
        long.is_empty(),
        "functions over {MAX_LINES} lines (split them; a data table says so with \
         #[allow(clippy::too_many_lines)] and a // reason):\n{}",
        long.join("\n")
    );
}

#[test]
fn functions_are_found_past_literals_and_comments() {
    let src = "fn a() {\n    let s = \"}\";\n    let c = ['\\'','}'];\n    // }\n    /* } /* } */ */\n}\n\
               fn b<'x>(v: [u8; 2]) -> &'x str {\n    r#\"}\"\n\"#\n}\n\
               trait T { fn c(&self); fn d(&self) {} }\n";
    assert_eq!(
        functions(src),
        vec![
            ("a".to_string(), 1, 6),
            ("b".to_string(), 7, 10),
            ("d".to_string(), 11, 11)
        ]
    );
    let table = [
        "// A table: one row per entry.",
        "#[allow(clippy::too_many_lines)]",
        "fn t() {",
    ];
    assert!(exempt_table(&table, 3));
    assert!(!exempt_table(&table[1..], 2), "no reason given");
}
