//! One test (or a few) per supported construct: parse, check the AST, and
//! check that the canonical writer round-trips it.

use trc_pkt::*;

fn one(src: &str) -> Statement {
    let s = parse(src, "t.pkt").unwrap_or_else(|e| panic!("{src:?}: {e}"));
    assert_eq!(s.statements.len(), 1, "{src:?} => {s:?}");
    let w = write(&s);
    let again = parse(&w, "w.pkt").unwrap_or_else(|e| panic!("rewritten {w:?}: {e}"));
    assert_eq!(
        again.without_positions(),
        s.without_positions(),
        "round trip of {w:?}"
    );
    s.statements.into_iter().next().unwrap()
}

fn packet(src: &str) -> Packet {
    match one(src).kind {
        StatementKind::Packet(p) => p,
        k => panic!("not a packet: {k:?}"),
    }
}

fn syscall(src: &str) -> Syscall {
    match one(src).kind {
        StatementKind::Syscall(c) => c,
        k => panic!("not a syscall: {k:?}"),
    }
}

fn python(src: &str) -> String {
    match one(src).kind {
        StatementKind::Python(p) => p,
        k => panic!("not python: {k:?}"),
    }
}

fn time_of(src: &str) -> Option<Time> {
    one(src).time
}

#[test]
fn times() {
    assert_eq!(time_of("0 close(3) = 0"), Some(Time::Absolute(0)));
    assert_eq!(time_of("+0 close(3) = 0"), Some(Time::Relative(0)));
    assert_eq!(time_of("+.020 close(3) = 0"), Some(Time::Relative(20_000)));
    assert_eq!(time_of(".1 close(3) = 0"), Some(Time::Absolute(100_000)));
    assert_eq!(time_of("1.5 close(3) = 0"), Some(Time::Absolute(1_500_000)));
    assert_eq!(time_of("+.000001 close(3) = 0"), Some(Time::Relative(1)));
    assert_eq!(
        time_of("+2.0000010 close(3) = 0"),
        Some(Time::Relative(2_000_001))
    );
    assert_eq!(
        time_of("+.01~+.02 > . 1:1(0) ack 1"),
        Some(Time::Range {
            start: TimePoint::Relative(10_000),
            end: TimePoint::Relative(20_000)
        })
    );
    assert_eq!(
        time_of(".1~.25 > . 1:1(0) ack 1"),
        Some(Time::Range {
            start: TimePoint::Absolute(100_000),
            end: TimePoint::Absolute(250_000)
        })
    );
    assert_eq!(time_of("* > . 1:1(0) ack 1"), Some(Time::Any));
}

#[test]
fn time_writer_is_canonical() {
    let s = parse(
        "+.02 close(3) = 0\n1.5 close(3) = 0\n0 close(3) = 0\n+.000250 close(3)=0",
        "t",
    )
    .unwrap();
    assert_eq!(
        write(&s),
        "+.020 close(3) = 0\n1.500 close(3) = 0\n0 close(3) = 0\n+.00025 close(3) = 0\n"
    );
}

#[test]
fn blocking_syscall_end_time() {
    let st = one("+.002 ... 0.004 connect(4, ..., ...) = 0");
    assert_eq!(st.time, Some(Time::Relative(2_000)));
    match st.kind {
        StatementKind::Syscall(c) => {
            assert_eq!(c.name, "connect");
            assert_eq!(c.end_time, Some(Time::Absolute(4_000)));
        }
        k => panic!("{k:?}"),
    }
    let st = one("0...0.1 read(4, ..., 1000) = 1000");
    assert_eq!(st.time, Some(Time::Absolute(0)));
}

#[test]
fn inbound_syn_with_options() {
    let p = packet("0 < S 0:0(0) win 32792 <mss 1000,sackOK,nop,nop,nop,wscale 7>");
    assert_eq!(p.direction, Direction::In);
    assert_eq!(
        p.flags,
        TcpFlags {
            syn: true,
            ..Default::default()
        }
    );
    assert_eq!((p.seq, p.end_seq, p.len), (0, 0, 0));
    assert_eq!(p.ack, None);
    assert_eq!(p.win, Some(32792));
    assert_eq!(
        p.options,
        Some(TcpOptions::List(vec![
            TcpOption::Mss(1000),
            TcpOption::SackOk,
            TcpOption::Nop,
            TcpOption::Nop,
            TcpOption::Nop,
            TcpOption::WScale(7)
        ]))
    );
}

#[test]
fn flags() {
    let f = |src: &str| packet(src).flags;
    let t = TcpFlags::default();
    assert_eq!(
        f("0 > S. 0:0(0) ack 1"),
        TcpFlags {
            syn: true,
            ack: true,
            ..t
        }
    );
    assert_eq!(
        f("0 > P. 1:1001(1000) ack 1"),
        TcpFlags {
            psh: true,
            ack: true,
            ..t
        }
    );
    assert_eq!(
        f("0 > F. 1:1(0) ack 1"),
        TcpFlags {
            fin: true,
            ack: true,
            ..t
        }
    );
    assert_eq!(f("0 > R 1:1(0)"), TcpFlags { rst: true, ..t });
    assert_eq!(
        f("0 > R. 1:1(0) ack 1"),
        TcpFlags {
            rst: true,
            ack: true,
            ..t
        }
    );
    assert_eq!(f("0 < . 1:1(0) ack 1 win 320"), TcpFlags { ack: true, ..t });
    assert_eq!(
        f("0 > SEW 0:0(0)"),
        TcpFlags {
            syn: true,
            ece: true,
            cwr: true,
            ..t
        }
    );
    assert_eq!(
        f("0 < SE. 0:0(0) ack 1 win 5"),
        TcpFlags {
            syn: true,
            ece: true,
            ack: true,
            ..t
        }
    );
    assert_eq!(f("0 < - 1:1(0) win 5"), t);
    assert_eq!(
        f("0 < U. 1:1(0) ack 1 win 5 urg 1"),
        TcpFlags {
            urg: true,
            ack: true,
            ..t
        }
    );
}

#[test]
fn data_segments_and_fields() {
    let p = packet("+.1 > P. 1:10001(10000) ack 1 win 257 urg 3");
    assert_eq!((p.seq, p.end_seq, p.len), (1, 10001, 10000));
    assert_eq!((p.ack, p.win, p.urg), (Some(1), Some(257), Some(3)));
    assert_eq!(p.options, None);
    let p = packet("0 > . 4294967295:4294967295(0) ack 4294967295");
    assert_eq!(p.seq, u32::MAX);
    assert_eq!(p.ack, Some(u32::MAX));
}

#[test]
fn timestamp_sack_eol_options() {
    let p = packet("0 < . 1:1(0) ack 1 win 257 <nop,nop,TS val 100 ecr 4294967295,sack 1001:2001 3001:4001,eol,eol>");
    assert_eq!(
        p.options,
        Some(TcpOptions::List(vec![
            TcpOption::Nop,
            TcpOption::Nop,
            TcpOption::Timestamp {
                val: 100,
                ecr: u32::MAX
            },
            TcpOption::Sack(vec![(1001, 2001), (3001, 4001)]),
            TcpOption::Eol,
            TcpOption::Eol
        ]))
    );
    let p = packet("0 > S. 0:0(0) ack 1 <...>");
    assert_eq!(p.options, Some(TcpOptions::Any));
    let p = packet("0 > S. 0:0(0) ack 1 <>");
    assert_eq!(p.options, Some(TcpOptions::List(vec![])));
}

#[test]
fn packetdrill_packet_rules() {
    // Inbound packets need a window; option lists must pad the header to 4-byte words.
    assert!(parse("0 < . 1:1(0) ack 1", "t.pkt")
        .unwrap_err()
        .to_string()
        .contains("'win N' on an inbound packet"));
    let e = parse(
        "0 < . 1:1(0) ack 1 win 9 <nop,nop,sack 1:2,TS val 1 ecr 2>",
        "t.pkt",
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("padded to a multiple of 4") && e.contains("22 bytes of options, 2 excess"),
        "{e}"
    );
    assert!(
        parse("0 > . 1:1(0) ack 1 <sack 1:2 3:4 5:6 7:8 9:10>", "t.pkt")
            .unwrap_err()
            .to_string()
            .contains("42 bytes")
    );
}

#[test]
fn ecn_markers() {
    assert_eq!(
        packet("0 > [ect0] P. 1:1001(1000) ack 1").ecn,
        Some(Ecn::Ect0)
    );
    assert_eq!(
        packet("0 < [ce] . 1:1001(1000) ack 1 win 5").ecn,
        Some(Ecn::Ce)
    );
    assert_eq!(
        packet("0 < [ect1] . 1:1(0) ack 1 win 5").ecn,
        Some(Ecn::Ect1)
    );
    assert_eq!(
        packet("0 < [noecn] . 1:1(0) ack 1 win 5").ecn,
        Some(Ecn::NoEcn)
    );
    assert_eq!(packet("0 > [ect01] . 1:1(0) ack 1").ecn, Some(Ecn::Ect01));
    assert_eq!(packet("0 > (ect0) . 1:1(0) ack 1").ecn, Some(Ecn::Ect0));
    assert_eq!(packet("0 > . 1:1(0) ack 1").ecn, None);
}

#[test]
fn passive_open_syscalls() {
    let c = syscall("0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3");
    assert_eq!(c.name, "socket");
    assert_eq!(
        c.args,
        vec![
            Expr::Ellipsis,
            Expr::Word("SOCK_STREAM".into()),
            Expr::Word("IPPROTO_TCP".into())
        ]
    );
    assert_eq!(c.result, Expr::Int(3));
    assert_eq!(c.errno, None);

    let c = syscall("+0 setsockopt(3, SOL_SOCKET, SO_REUSEADDR, [1], 4) = 0");
    assert_eq!(c.args[3], Expr::Array(vec![Expr::Int(1)]));
    let c = syscall("+0 bind(3, ..., ...) = 0");
    assert_eq!(c.args, vec![Expr::Int(3), Expr::Ellipsis, Expr::Ellipsis]);
    assert_eq!(syscall("+0 listen(3, 1) = 0").name, "listen");
    assert_eq!(syscall("+0 accept(3, ..., ...) = 4").result, Expr::Int(4));
    assert_eq!(
        syscall("+0 write(4, ..., 15000) = 15000").args[2],
        Expr::Int(15000)
    );
    assert_eq!(syscall("+0 close(4) = 0").args, vec![Expr::Int(4)]);
    assert_eq!(syscall("+0 getpid() = ...").args, vec![]);
    assert_eq!(syscall("+0 getpid() = ...").result, Expr::Ellipsis);
}

#[test]
fn errno_and_note() {
    let c = syscall("+0 read(4, ..., 1000) = -1 EAGAIN (Resource temporarily unavailable)");
    assert_eq!(c.result, Expr::Int(-1));
    assert_eq!(
        c.errno,
        Some(Errno {
            name: "EAGAIN".into(),
            note: Some("Resource temporarily unavailable".into())
        })
    );
    let c = syscall("+0 connect(3, ..., ...) = -1 EINPROGRESS");
    assert_eq!(
        c.errno,
        Some(Errno {
            name: "EINPROGRESS".into(),
            note: None
        })
    );
}

#[test]
fn expression_forms() {
    let c = syscall(r#"+0 setsockopt(3, SOL_TCP, TCP_CONGESTION, "cubic", 5) = 0"#);
    assert_eq!(c.args[2], Expr::Word("TCP_CONGESTION".into()));
    assert_eq!(c.args[3], Expr::Str("cubic".into()));
    let c = syscall("+0 fcntl(3, F_SETFL, O_RDWR|O_NONBLOCK) = 0");
    assert_eq!(
        c.args[2],
        Expr::BitOr(vec![
            Expr::Word("O_RDWR".into()),
            Expr::Word("O_NONBLOCK".into())
        ])
    );
    let c = syscall("+0 getsockopt(4, SOL_SOCKET, SO_LINGER, {l_onoff=1, l_linger=0}, [8]) = 0");
    assert_eq!(
        c.args[3],
        Expr::Struct(vec![
            StructField {
                name: Some("l_onoff".into()),
                args: None,
                value: Expr::Int(1)
            },
            StructField {
                name: Some("l_linger".into()),
                args: None,
                value: Expr::Int(0)
            },
        ])
    );
    let c = syscall("+0 writev(4, [{..., 1000}], 1) = 1000");
    assert_eq!(
        c.args[1],
        Expr::Array(vec![Expr::Struct(vec![
            StructField {
                name: None,
                args: None,
                value: Expr::Ellipsis
            },
            StructField {
                name: None,
                args: None,
                value: Expr::Int(1000)
            }
        ])])
    );
    let c = syscall(
        r#"+0 connect(3, {sa_family=AF_INET, sin_port=htons(8080), sin_addr=inet_addr("192.0.2.1")}, 16) = 0"#,
    );
    match &c.args[1] {
        Expr::Struct(f) => assert_eq!(
            f[1].value,
            Expr::Call {
                name: "htons".into(),
                args: vec![Expr::Int(8080)]
            }
        ),
        e => panic!("{e:?}"),
    }
    let c = syscall("+0 ioctl(4, 0x541B, [0x10], {A|B, []}) = -0x1");
    assert_eq!(c.args[1], Expr::Int(0x541B));
    assert_eq!(c.result, Expr::Int(-1));
}

#[test]
fn shell_commands() {
    let st = one("`../common/defaults.sh`");
    assert_eq!(st.time, None);
    assert_eq!(
        st.kind,
        StatementKind::Shell("../common/defaults.sh".into())
    );
    let st = one("+0 `sysctl -q net.ipv4.tcp_sack=0`");
    assert_eq!(st.time, Some(Time::Relative(0)));
    assert_eq!(
        st.kind,
        StatementKind::Shell("sysctl -q net.ipv4.tcp_sack=0".into())
    );
    let st = one("`a.sh\nsysctl -q x=1  # comment\n`");
    assert_eq!(
        st.kind,
        StatementKind::Shell("a.sh\nsysctl -q x=1  # comment\n".into())
    );
}

#[test]
fn python_blocks() {
    // Kept verbatim: packetdrill strips spaces and tabs at both ends, nothing else.
    assert_eq!(
        python("+0 %{ assert tcpi_ca_state == TCP_CA_Recovery, tcpi_ca_state }%"),
        "assert tcpi_ca_state == TCP_CA_Recovery, tcpi_ca_state"
    );
    assert_eq!(
        python("+0 %{ assert (tcpi_ca_state, tcpi_snd_cwnd) == (TCP_CA_Recovery, 7) }%"),
        "assert (tcpi_ca_state, tcpi_snd_cwnd) == (TCP_CA_Recovery, 7)"
    );
    assert_eq!(
        python("+.01 %{\nassert tcpi_snd_cwnd == 7, tcpi_snd_cwnd\nassert tcpi_snd_ssthresh >= 7; print(tcpi_lost)\n}%"),
        "\nassert tcpi_snd_cwnd == 7, tcpi_snd_cwnd\nassert tcpi_snd_ssthresh >= 7; print(tcpi_lost)\n"
    );
    assert_eq!(python("0 %{ }%"), "");
    // Only the init (first) and cleanup (last) commands may be untimed; a block never.
    assert!(parse("%{ print(tcpi_rtt) }%", "t.pkt").is_err());
}

#[test]
fn option_lines_and_more_tcp_options() {
    let s = parse("--tolerance_usecs=7000\n--strict_segments\n--define=\"X=1\"\n0 < S 0:0(0) win 100 <mss 1000,FO TFO_COOKIE,nop,nop>\n", "o.pkt").unwrap();
    let opts: Vec<(String, Option<String>)> = s
        .options
        .iter()
        .map(|o| (o.name.clone(), o.value.clone()))
        .collect();
    assert_eq!(
        opts,
        vec![
            ("tolerance_usecs".into(), Some("7000".into())),
            ("strict_segments".into(), None),
            ("define".into(), Some("X=1".into()))
        ]
    );
    assert_eq!(s.options[1].line, 2);
    let again = parse(&write(&s), "w.pkt").unwrap();
    assert_eq!(again.without_positions(), s.without_positions());
    match &s.statements[0].kind {
        StatementKind::Packet(p) => assert_eq!(
            p.options,
            Some(TcpOptions::List(vec![
                TcpOption::Mss(1000),
                TcpOption::FastOpen(Some("TFO_COOKIE".into())),
                TcpOption::Nop,
                TcpOption::Nop
            ]))
        ),
        k => panic!("{k:?}"),
    }
    assert_eq!(
        packet("0 < S 0:0(0) win 1 <FO,nop,nop>").options,
        Some(TcpOptions::List(vec![
            TcpOption::FastOpen(None),
            TcpOption::Nop,
            TcpOption::Nop
        ]))
    );
    assert_eq!(
        packet("0 > S. 0:0(0) ack 1 <FOEXP 0102030405060708>").options,
        Some(TcpOptions::List(vec![TcpOption::FastOpenExp(Some(
            "0102030405060708".into()
        ))]))
    );
    assert_eq!(
        packet("0 > S 0:0(0) <md5 000102030405060708090a0b0c0d0e0f,nop,nop>").options,
        Some(TcpOptions::List(vec![
            TcpOption::Md5("000102030405060708090a0b0c0d0e0f".into()),
            TcpOption::Nop,
            TcpOption::Nop
        ]))
    );
}

#[test]
fn symbols() {
    use trc_pkt::symbols::*;
    assert_eq!(syscall_constant("TCP_CONGESTION"), Some(13));
    assert_eq!(syscall_constant("IP_MTU_DISCOVER"), Some(10));
    assert_eq!(syscall_constant("TCP_CA_LOSS"), Some(4));
    assert_eq!(ca_state_name(4), Some("TCP_CA_Loss"));
    assert!(PYTHON_CONSTANTS.contains(&("TCP_CA_Recovery", 3)));
    assert!(is_tcpi_field("tcpi_total_retrans"));
}

#[test]
fn comments_and_blank_lines() {
    let s = parse(
        "// header\n\n/* block\n comment */\n   0 close(3) = 0 // trailing\n\n+0 /* inline */ close(4) = 0\n",
        "c.pkt",
    )
    .unwrap();
    assert_eq!(s.statements.len(), 2);
    assert_eq!((s.statements[0].line, s.statements[0].col), (5, 4));
    assert_eq!((s.statements[1].line, s.statements[1].col), (7, 1));
}

#[test]
fn statement_positions() {
    let s = parse(
        "`x`\n  +0 < . 1:1(0) ack 1 win 9\n\t0 %{\nprint(tcpi_rtt)\n}%\n",
        "p",
    )
    .unwrap();
    let pos: Vec<(u32, u32)> = s.statements.iter().map(|s| (s.line, s.col)).collect();
    assert_eq!(pos, vec![(1, 1), (2, 3), (3, 2)]);
}
