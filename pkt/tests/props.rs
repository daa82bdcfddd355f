//! Property tests: the parser never panics (arbitrary strings, token soup,
//! mutations of real scripts), anything it accepts round-trips through the
//! writer, and generated ASTs round-trip exactly.

use proptest::prelude::*;
use trc_pkt::*;

/// If `src` parses, its canonical text must parse back to the same AST.
fn check_no_panic_and_round_trip(src: &str) -> Result<(), TestCaseError> {
    if let Ok(s) = parse(src, "fuzz.pkt") {
        let text = write(&s);
        match parse(&text, "rewritten.pkt") {
            Ok(again) => {
                prop_assert_eq!(again.without_positions(), s.without_positions(), "{}", text)
            }
            Err(e) => prop_assert!(
                false,
                "rewritten text does not parse: {e}\n{text}\nfrom {src:?}"
            ),
        }
    }
    Ok(())
}

/// Mutation seeds: scripts of our own corpus (the public gtests are read from the vendored
/// packetdrill tree by the golden tests, not copied here).
const SEEDS: &[&str] = &[
    include_str!("../../counterexamples/kernel/fr-sack.pkt"),
    include_str!("../../counterexamples/kernel/tlp.pkt"),
    include_str!("../../counterexamples/kernel/frto-spurious-undo.pkt"),
    include_str!("../../counterexamples/regressions/I1-linux-6.15-nosack.pkt"),
    include_str!("../../counterexamples/regressions/diff-nested-dsack-counted-twice.pkt"),
];

/// Fragments that are likely to create interesting near-valid inputs.
const SNIPPETS: &[&str] = &[
    "<",
    ">",
    ".",
    "+",
    "~",
    "*",
    "...",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ":",
    "=",
    "|",
    "-",
    "`",
    "\"",
    "%{",
    "}%",
    "/*",
    "*/",
    "//",
    "\n",
    " ",
    "0",
    "+.020",
    "1:1001(1000)",
    "ack 1",
    "win 320",
    "<mss 1000,nop>",
    "S.",
    "P.",
    "[ect0]",
    "sack 1:2 3:4",
    "TS val 1 ecr 2",
    "socket(",
    "= -1 EAGAIN (x)",
    "assert tcpi_lost == 1",
    "print(tcpi_rtt)",
    ";",
    "#",
    "if x:\n    ",
    "4294967296",
    "-9223372036854775809",
    "0x",
    "é",
    "\t",
    "\r",
    "--tolerance_usecs=7000",
    "--strict_segments",
    "FO TFO_COOKIE",
    "md5 0011",
    "<mss 1000,sackOK,nop,nop>",
];

#[derive(Debug, Clone)]
enum Mutation {
    Delete { at: usize, len: usize },
    Insert { at: usize, snippet: usize },
    InsertChar { at: usize, c: char },
    Duplicate { at: usize, len: usize },
    Truncate { at: usize },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 1usize..20).prop_map(|(at, len)| Mutation::Delete { at, len }),
        (any::<usize>(), 0..SNIPPETS.len())
            .prop_map(|(at, snippet)| Mutation::Insert { at, snippet }),
        (any::<usize>(), any::<char>()).prop_map(|(at, c)| Mutation::InsertChar { at, c }),
        (any::<usize>(), 1usize..40).prop_map(|(at, len)| Mutation::Duplicate { at, len }),
        any::<usize>().prop_map(|at| Mutation::Truncate { at }),
    ]
}

fn apply(src: &str, muts: &[Mutation]) -> String {
    let mut chars: Vec<char> = src.chars().collect();
    for m in muts {
        let n = chars.len();
        let pos = |at: usize| if n == 0 { 0 } else { at % (n + 1) };
        match *m {
            Mutation::Delete { at, len } => {
                let a = pos(at);
                let b = (a + len).min(n);
                chars.drain(a..b);
            }
            Mutation::Insert { at, snippet } => {
                let a = pos(at);
                let ins: Vec<char> = SNIPPETS[snippet].chars().collect();
                chars.splice(a..a, ins);
            }
            Mutation::InsertChar { at, c } => {
                let a = pos(at);
                chars.insert(a, c);
            }
            Mutation::Duplicate { at, len } => {
                let a = pos(at);
                let b = (a + len).min(n);
                let dup: Vec<char> = chars[a..b].to_vec();
                chars.splice(b..b, dup);
            }
            Mutation::Truncate { at } => {
                let a = pos(at);
                chars.truncate(a);
            }
        }
    }
    chars.into_iter().collect()
}

// ---------- AST generators (canonical, parser-producible forms) ----------

fn ident() -> impl Strategy<Value = String> {
    "[A-Za-z_][A-Za-z0-9_]{0,8}"
}

fn usecs() -> impl Strategy<Value = i64> {
    prop_oneof![0i64..2_000_000, 0i64..1_000_000_000_000, Just(0)]
}

fn time_point() -> impl Strategy<Value = TimePoint> {
    prop_oneof![
        usecs().prop_map(TimePoint::Absolute),
        usecs().prop_map(TimePoint::Relative)
    ]
}

fn plain_time() -> impl Strategy<Value = Time> {
    time_point().prop_map(Time::from)
}

fn any_time_for_outbound() -> impl Strategy<Value = Time> {
    prop_oneof![
        4 => plain_time(),
        1 => Just(Time::Any),
        1 => (usecs(), 0i64..1_000_000, any::<bool>()).prop_map(|(s, d, rel)| {
            let (start, end) = if rel {
                (TimePoint::Relative(s), TimePoint::Relative(s + d))
            } else {
                (TimePoint::Absolute(s), TimePoint::Absolute(s + d))
            };
            Time::Range { start, end }
        }),
    ]
}

fn flags() -> impl Strategy<Value = TcpFlags> {
    any::<[bool; 8]>().prop_map(|b| TcpFlags {
        syn: b[0],
        fin: b[1],
        rst: b[2],
        psh: b[3],
        ack: b[4],
        urg: b[5],
        ece: b[6],
        cwr: b[7],
    })
}

fn tcp_option() -> impl Strategy<Value = TcpOption> {
    let hex = "([0-9a-f]{2}){1,8}";
    prop_oneof![
        any::<u16>().prop_map(TcpOption::Mss),
        Just(TcpOption::SackOk),
        Just(TcpOption::Nop),
        any::<u8>().prop_map(TcpOption::WScale),
        (any::<u32>(), any::<u32>()).prop_map(|(val, ecr)| TcpOption::Timestamp { val, ecr }),
        prop::collection::vec((any::<u32>(), any::<u32>()), 0..4).prop_map(TcpOption::Sack),
        Just(TcpOption::Eol),
        hex.prop_map(TcpOption::Md5),
        prop::option::of(hex).prop_map(TcpOption::FastOpen),
        prop::option::of("TFO_COOKIE|([0-9a-f]{2}){1,8}").prop_map(TcpOption::FastOpenExp),
    ]
}

/// An option list as packetdrill accepts it: padded with nops to a multiple of 4 bytes, at most
/// 40.
fn option_list() -> impl Strategy<Value = Vec<TcpOption>> {
    prop::collection::vec(tcp_option(), 0..5).prop_filter_map("at most 40 bytes", |mut l| {
        while l.iter().map(TcpOption::wire_len).sum::<usize>() % 4 != 0 {
            l.push(TcpOption::Nop);
        }
        (l.iter().map(TcpOption::wire_len).sum::<usize>() <= 40).then_some(l)
    })
}

fn packet(direction: Direction) -> impl Strategy<Value = Packet> {
    let out = direction == Direction::Out;
    let ecn = prop_oneof![
        Just(None),
        Just(Some(Ecn::NoEcn)),
        Just(Some(Ecn::Ect0)),
        Just(Some(Ecn::Ect1)),
        Just(Some(Ecn::Ce)),
        Just(if out { Some(Ecn::Ect01) } else { None }),
    ];
    let options = prop_oneof![
        Just(None),
        Just(if out { Some(TcpOptions::Any) } else { None }),
        option_list().prop_map(|l| Some(TcpOptions::List(l))),
    ];
    (
        ecn,
        flags(),
        any::<u32>(),
        0u32..=65535,
        prop::option::of(any::<u32>()),
        prop::option::of(0u32..=65535),
        prop::option::of(0u32..=65535),
        options,
    )
        .prop_map(move |(ecn, flags, seq, len, ack, win, urg, options)| {
            // packetdrill requires the window of an inbound packet.
            let win = if out { win } else { Some(win.unwrap_or(0)) };
            let seq = seq.min(u32::MAX - len);
            Packet {
                direction,
                ecn,
                flags,
                seq,
                end_seq: seq + len,
                len,
                ack,
                win,
                urg,
                options,
            }
        })
}

fn expr() -> impl Strategy<Value = Expr> {
    let leaf = prop_oneof![
        Just(Expr::Ellipsis),
        any::<i64>().prop_map(Expr::Int),
        ident().prop_map(Expr::Word),
        "[a-z0-9 ;,.%/]{0,8}".prop_map(Expr::Str),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        // BitOr parts are never BitOr themselves (the parser flattens).
        let part = inner
            .clone()
            .prop_filter("no nested bit-or", |e| !matches!(e, Expr::BitOr(_)));
        prop_oneof![
            prop::collection::vec(part, 2..4).prop_map(Expr::BitOr),
            prop::collection::vec(inner.clone(), 0..4).prop_map(Expr::Array),
            prop::collection::vec(
                (prop::option::of(ident()), inner.clone())
                    .prop_map(|(name, value)| StructField { name, value }),
                0..4
            )
            .prop_map(Expr::Struct),
            (ident(), prop::collection::vec(inner, 0..3))
                .prop_map(|(name, args)| Expr::Call { name, args }),
        ]
    })
}

fn syscall() -> impl Strategy<Value = Syscall> {
    let errno = prop::option::of(
        (
            "[A-Z][A-Z0-9_]{0,8}",
            prop::option::of("[A-Za-z]{1,8}( [A-Za-z]{1,8}){0,3}"),
        )
            .prop_map(|(name, note)| Errno { name, note }),
    );
    (
        "[a-z_][a-z0-9_]{0,10}",
        prop::collection::vec(expr(), 0..5),
        expr(),
        errno,
        prop::option::of(plain_time()),
    )
        .prop_map(|(name, args, result, errno, end_time)| Syscall {
            name,
            args,
            result,
            errno,
            end_time,
        })
}

/// `%{ }%` code as the parser keeps it (no spaces or tabs at either end).
fn python_code() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "",
        "assert tcpi_ca_state == TCP_CA_Recovery, tcpi_ca_state",
        "assert (tcpi_ca_state, tcpi_snd_cwnd) == (TCP_CA_Loss, 1)",
        "x = 1",
        "print(tcpi_rtt)",
        "assert tcpi_rtt > 1 and tcpi_rtt < 9",
        "if tcpi_lost > 0: print(tcpi_lost)",
        "\nif x:\n    print(tcpi_lost)\n    y = 2\n",
        "f('a;b', [1,\n 2])",
    ])
    .prop_map(str::to_string)
}

fn statement() -> impl Strategy<Value = Statement> {
    let kind_and_time = prop_oneof![
        (any_time_for_outbound(), packet(Direction::Out))
            .prop_map(|(t, p)| (Some(t), StatementKind::Packet(p))),
        (plain_time(), packet(Direction::In))
            .prop_map(|(t, p)| (Some(t), StatementKind::Packet(p))),
        (plain_time(), syscall()).prop_map(|(t, c)| (Some(t), StatementKind::Syscall(c))),
        (plain_time(), "[a-z0-9 ./=_\n-]{0,20}")
            .prop_map(|(t, s)| (Some(t), StatementKind::Shell(s))),
        (plain_time(), python_code()).prop_map(|(t, p)| (Some(t), StatementKind::Python(p))),
    ];
    kind_and_time.prop_map(|(time, kind)| Statement {
        line: 0,
        col: 0,
        time,
        kind,
    })
}

/// An untimed init or cleanup command.
fn untimed_shell() -> impl Strategy<Value = Statement> {
    "[a-z0-9 ./=_\n-]{0,20}".prop_map(|s| Statement {
        line: 0,
        col: 0,
        time: None,
        kind: StatementKind::Shell(s),
    })
}

fn script_option() -> impl Strategy<Value = ScriptOption> {
    (
        "[a-z][a-z0-9_]{0,12}",
        prop::option::of("[0-9]{1,6}|[a-z_][a-z0-9_]{0,8}|a b|1\\.2\\.3\\.4"),
    )
        .prop_map(|(name, value)| ScriptOption {
            line: 0,
            col: 0,
            name,
            value,
        })
}

fn script() -> impl Strategy<Value = Script> {
    (
        prop::collection::vec(script_option(), 0..3),
        prop::option::of(untimed_shell()),
        prop::collection::vec(statement(), 0..8),
        prop::option::of(untimed_shell()),
    )
        .prop_map(|(options, init, body, cleanup)| {
            let mut statements: Vec<Statement> = init.into_iter().collect();
            statements.extend(body);
            // A cleanup command needs something before it to not be the init command too.
            if !statements.is_empty() {
                statements.extend(cleanup);
            }
            Script {
                options,
                statements,
            }
        })
}

fn cases() -> u32 {
    std::env::var("PKT_PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300)
}

proptest! {
    // Bounded so `cargo test -p trc-pkt` stays fast; raise with
    // PKT_PROPTEST_CASES=20000 for a deeper local run.
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_strings_do_not_panic(s in any::<String>()) {
        check_no_panic_and_round_trip(&s)?;
    }

    #[test]
    fn ascii_soup_does_not_panic(s in "[ -~\t\n]{0,200}") {
        check_no_panic_and_round_trip(&s)?;
    }

    #[test]
    fn snippet_soup_does_not_panic(idx in prop::collection::vec(0..SNIPPETS.len(), 0..40)) {
        let s: String = idx.iter().map(|i| SNIPPETS[*i]).collect::<Vec<_>>().join(" ");
        check_no_panic_and_round_trip(&s)?;
    }

    #[test]
    fn mutated_scripts_do_not_panic(
        seed in 0..SEEDS.len(),
        muts in prop::collection::vec(mutation(), 1..6),
    ) {
        let src = apply(SEEDS[seed], &muts);
        check_no_panic_and_round_trip(&src)?;
    }

    #[test]
    fn generated_asts_round_trip(s in script()) {
        let text = write(&s);
        let parsed = parse(&text, "gen.pkt");
        prop_assert!(parsed.is_ok(), "{:?}\n{}", parsed, text);
        prop_assert_eq!(parsed.unwrap().without_positions(), s, "{}", text);
    }
}
