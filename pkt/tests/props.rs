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
    "udp (10)",
    "icmp unreachable frag_needed mtu 800 [0:10(10)]",
    "ipv4 1.2.3.4 > 5.6.7.8:",
    "ipv6 fd::1 > fd::2:",
    "gre flags [key present] sum 0 off 0 key = 1 seq 2:",
    "mpls (label 1, tc 0, [S], ttl 9):",
    "encap psp spi 7",
    "[tos 0x10, flowlabel 0x1]",
    "[ttl 64]",
    "8080>40000",
    "S.5",
    "<ECN e0b 1 ceb 2>",
    "msg_iov(1)=[{..., 10}]",
    "\"a\" \"b\"",
    "\"ab\"...",
    "= 0x2 (flags O_RDWR)",
    "{(label 1, tc 0, ttl 9)}",
    "fd3d::1",
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
    (any::<[bool; 9]>(), prop::option::of(0u8..8)).prop_map(|(b, ace)| {
        let mut f = TcpFlags {
            syn: b[0],
            fin: b[1],
            rst: b[2],
            psh: b[3],
            ack: b[4],
            urg: b[5],
            ece: b[6],
            cwr: b[7],
            ae: b[8],
            ace: None,
        };
        // An ACE digit excludes E, W and A, and needs a letter or the ACK dot before it.
        if ace.is_some() && !(f.ece || f.cwr || f.ae) && (f.ack || f.syn || f.fin || f.psh) {
            f.ace = ace;
        }
        f
    })
}

/// An ECN marker or a TOS byte, a flow label, or a TTL, as packetdrill's `ip_info` combines them.
fn ip_info(out: bool, tcp: bool) -> impl Strategy<Value = (Option<Ecn>, IpExtra)> {
    let ecn = prop_oneof![
        Just(Some(Ecn::NoEcn)),
        Just(Some(Ecn::Ect0)),
        Just(Some(Ecn::Ect1)),
        Just(Some(Ecn::Ce)),
        Just(Some(Ecn::Ect01)),
    ]
    .prop_map(move |e| match e {
        Some(Ecn::Ect01) if !out => None,
        Some(e) if !tcp && e != Ecn::Ect01 => None,
        e => e,
    });
    prop_oneof![
        4 => Just((None, IpExtra::default())),
        2 => ecn.clone().prop_map(|e| (e, IpExtra::default())),
        1 => (ecn, prop::option::of(0u32..0x10_0000)).prop_map(|(e, flowlabel)| {
            (e, IpExtra { flowlabel, ..IpExtra::default() })
        }),
        1 => (any::<u8>(), prop::option::of(0u32..0x10_0000)).prop_map(|(t, flowlabel)| {
            (None, IpExtra { tos: Some(t), flowlabel, ttl: None })
        }),
        1 => (0u32..0x10_0000).prop_map(|f| (None, IpExtra { flowlabel: Some(f), ..IpExtra::default() })),
        1 => any::<u8>().prop_map(|t| (None, IpExtra { ttl: Some(t), ..IpExtra::default() })),
    ]
}

fn mpls_stack() -> impl Strategy<Value = Vec<MplsEntry>> {
    prop::collection::vec(
        (0i64..(1 << 20), 0i64..8, any::<bool>(), 0i64..256).prop_map(
            |(label, tc, bottom, ttl)| MplsEntry {
                label,
                tc,
                bottom,
                ttl,
            },
        ),
        0..4,
    )
}

fn gre_header() -> impl Strategy<Value = GreHeader> {
    let flag = prop_oneof![
        Just(GreFlag::None),
        Just(GreFlag::Checksum),
        Just(GreFlag::Key),
        Just(GreFlag::Sequence)
    ];
    (
        prop_oneof![
            prop::collection::vec(flag, 1..4).prop_map(GreFlags::Named),
            (0i64..0x10000).prop_map(GreFlags::Value),
        ],
        [0i64..100_000, 0i64..100_000, 0i64..100_000, 0i64..100_000],
    )
        .prop_map(|(flags, [sum, off, key, seq])| GreHeader {
            flags,
            sum,
            off,
            key,
            seq,
        })
}

fn encap(out: bool) -> impl Strategy<Value = Vec<Encap>> {
    let v4 = prop::sample::select(vec!["192.0.2.1", "10.0.0.1", "1.2.3.4"]);
    let v6 = prop::sample::select(vec!["fd3d:a0b:17d6::1", "::1", "2001:db8::2"]);
    let one = prop_oneof![
        (ip_info(out, true), v4.clone(), v4).prop_map(|((ecn, ip), a, b)| Encap::Ipv4 {
            ecn,
            ip,
            src: a.to_string(),
            dst: b.to_string()
        }),
        (ip_info(out, true), v6.clone(), v6).prop_map(|((ecn, ip), a, b)| Encap::Ipv6 {
            ecn,
            ip,
            src: a.to_string(),
            dst: b.to_string()
        }),
        prop::option::of(gre_header()).prop_map(Encap::Gre),
        mpls_stack().prop_map(Encap::Mpls),
    ];
    prop_oneof![
        6 => Just(Vec::new()),
        1 => prop::collection::vec(one, 1..3),
    ]
}

fn direction() -> impl Strategy<Value = Direction> {
    prop_oneof![Just(Direction::In), Just(Direction::Out)]
}

fn udp() -> impl Strategy<Value = UdpPacket> {
    direction().prop_flat_map(|d| {
        let out = d == Direction::Out;
        (
            encap(out),
            ip_info(out, false),
            prop::option::of(any::<(u16, u16)>()),
            0u32..=65535,
        )
            .prop_map(move |(encap, (ecn, ip), ports, len)| UdpPacket {
                direction: d,
                encap,
                ecn,
                ip,
                ports,
                len,
            })
    })
}

fn icmp() -> impl Strategy<Value = IcmpPacket> {
    let name = prop::sample::select(vec![
        "unreachable",
        "packet_too_big",
        "echo_request",
        "type_3",
    ]);
    let code = prop::sample::select(vec!["frag_needed", "host_unreachable", "CODE", "code_4"]);
    let echoed = prop_oneof![
        (any::<u32>(), 0u32..=65535).prop_map(|(seq, len)| {
            let seq = seq.min(u32::MAX - len);
            IcmpEchoed::Tcp {
                seq,
                end_seq: seq + len,
                len,
            }
        }),
        any::<u32>().prop_map(IcmpEchoed::Udp),
        any::<u32>().prop_map(IcmpEchoed::Raw),
    ];
    (
        direction(),
        name,
        prop::option::of(code),
        prop::option::of(0i64..=u32::MAX as i64),
        prop::option::of(0i64..=65535),
        prop::option::of(echoed),
    )
        .prop_flat_map(|(d, t, code, mtu, echo_id, echoed)| {
            let out = d == Direction::Out;
            (encap(out), ip_info(out, true)).prop_map(move |(encap, (ecn, ip))| IcmpPacket {
                direction: d,
                encap,
                ecn,
                ip,
                icmp_type: t.to_string(),
                code: code.map(str::to_string),
                mtu,
                echo_id,
                echoed,
            })
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
        (any::<bool>(), prop::collection::vec(0u32..(1 << 24), 1..4)).prop_map(|(e1b, v)| {
            use AccEcnField::*;
            let order = if e1b {
                [E1b, Ceb, E0b]
            } else {
                [E0b, Ceb, E1b]
            };
            TcpOption::AccEcn(order.into_iter().zip(v).collect())
        }),
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
    let extra = (
        encap(out),
        ip_info(out, true),
        prop::option::of(any::<u32>().prop_map(i64::from)),
        prop::option::of(any::<(u16, u16)>()),
    );
    (
        ecn,
        flags(),
        any::<u32>(),
        0u32..=65535,
        prop::option::of(any::<u32>()),
        prop::option::of(0u32..=65535),
        prop::option::of(0u32..=65535),
        options,
        (any::<bool>(), extra),
    )
        .prop_map(
            move |(ecn, flags, seq, len, ack, win, urg, options, (x, extra))| {
                // packetdrill requires the window of an inbound packet.
                let win = if out { win } else { Some(win.unwrap_or(0)) };
                let seq = seq.min(u32::MAX - len);
                let (encap, (ecn, ip), psp_spi, ports) = if x {
                    extra
                } else {
                    (Vec::new(), (ecn, IpExtra::default()), None, None)
                };
                Packet {
                    direction,
                    encap,
                    ecn,
                    ip,
                    psp_spi,
                    ports,
                    flags,
                    seq,
                    end_seq: seq + len,
                    len,
                    ack,
                    win,
                    urg,
                    options,
                }
            },
        )
}

fn expr() -> impl Strategy<Value = Expr> {
    let leaf = prop_oneof![
        Just(Expr::Ellipsis),
        any::<i64>().prop_map(Expr::Int),
        ident().prop_map(Expr::Word),
        "[a-z0-9 ;,.%/]{0,8}".prop_map(Expr::Str),
        prop::collection::vec("[a-z0-9 ]{0,4}", 2..4).prop_map(Expr::Concat),
        "[a-z0-9]{0,4}".prop_map(Expr::StrPrefix),
        // `{}` reads back as an empty struct: a stack expression has entries.
        mpls_stack()
            .prop_filter("an entry", |v| !v.is_empty())
            .prop_map(Expr::Mpls),
        gre_header().prop_map(Expr::Gre),
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
                (
                    prop::option::of((
                        ident(),
                        prop::option::of(prop::collection::vec(inner.clone(), 0..2))
                    )),
                    inner.clone()
                )
                    .prop_map(|(name, value)| match name {
                        Some((n, args)) => StructField {
                            name: Some(n),
                            args,
                            value
                        },
                        None => StructField {
                            name: None,
                            args: None,
                            value
                        },
                    }),
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
    // `name=value` as an argument (not inside `|` or a struct, where it reads otherwise).
    let arg = prop_oneof![
        4 => expr(),
        1 => (ident(), expr()).prop_map(|(name, v)| Expr::Assign { name, value: Box::new(v) }),
    ];
    // A result is no call (`= W (x)` is a word and a note), nor one inside `|`.
    let result = expr().prop_filter("no call at the top of a result", |e| match e {
        Expr::Call { .. } => false,
        Expr::BitOr(v) => !v.iter().any(|p| matches!(p, Expr::Call { .. })),
        _ => true,
    });
    (
        "[a-z_][a-z0-9_]{0,10}",
        prop::collection::vec(arg, 0..5),
        result,
        errno,
        prop::option::of("[A-Za-z]{1,8}( [A-Za-z]{1,8}){0,3}"),
        prop::option::of(plain_time()),
    )
        .prop_map(|(name, args, result, errno, note, end_time)| Syscall {
            name,
            args,
            result,
            // A note right after an errno is the errno's (packetdrill's grammar).
            note: note.filter(|_| errno.as_ref().is_none_or(|e| e.note.is_some())),
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
        (any_time_for_outbound(), udp()).prop_map(|(t, p)| {
            let t = if p.direction == Direction::Out {
                t
            } else {
                Time::Relative(0)
            };
            (Some(t), StatementKind::Udp(p))
        }),
        (any_time_for_outbound(), icmp()).prop_map(|(t, p)| {
            let t = if p.direction == Direction::Out {
                t
            } else {
                Time::Relative(0)
            };
            (Some(t), StatementKind::Icmp(p))
        }),
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
