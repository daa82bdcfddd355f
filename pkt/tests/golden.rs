//! Golden tests on real packetdrill scripts: public gtests read from the vendored packetdrill
//! tree and the two scripts attached to the 2025 netdev thread (the seed), read where they are
//! (`../shared/`, see `trc-testkit`) and never copied into the repository. Skipped with a
//! message where that material is absent (a user's clone).

use trc_pkt::*;

/// The script called `name`, or `None` (skip) when the shared material is not here.
fn data(name: &str) -> Option<String> {
    let res = match name {
        "fr-non-sack-hold-at-high-seq.pkt" | "frto-real-timeout-nonsack-hold-at-high-seq.pkt" => {
            trc_testkit::seed_attachment(name)
        }
        _ => trc_testkit::gtests().and_then(|g| {
            let dir = ["fast_recovery", "fast_retransmit", "cubic", "sack", "ecn"]
                .iter()
                .map(|d| g.join("tcp").join(d).join(name))
                .find(|p| p.is_file());
            let p = dir.ok_or_else(|| format!("{name} not in {}", g.display()))?;
            std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))
        }),
    };
    match res {
        Ok(s) => Some(s),
        Err(why) => {
            trc_testkit::skip(name, &why);
            None
        }
    }
}

fn parse_data(name: &str) -> Option<Script> {
    data(name).map(|src| parse(&src, name).unwrap_or_else(|e| panic!("{e}")))
}

const ALL: &[&str] = &[
    "fr-non-sack-hold-at-high-seq.pkt",
    "frto-real-timeout-nonsack-hold-at-high-seq.pkt",
    "prr-ss-10pkt-lost-1.pkt",
    "prr-ss-ack-below-snd_una-cubic.pkt",
    "fr-4pkt-sack.pkt",
    "cubic-rto-ss-ca-cwnd-bump.pkt",
    "cubic-rack-reo-timeout-retrans-failed-incoming-data.pkt",
    "sack-shift-sacked-2-6-8-3-9-nofack.pkt",
    "ecn-uses-ect0.pkt",
];

/// (packets, syscalls, shell commands, python blocks)
fn census(s: &Script) -> (usize, usize, usize, usize) {
    let mut c = (0, 0, 0, 0);
    for st in &s.statements {
        match st.kind {
            StatementKind::Packet(_) | StatementKind::Udp(_) | StatementKind::Icmp(_) => c.0 += 1,
            StatementKind::Syscall(_) => c.1 += 1,
            StatementKind::Shell(_) => c.2 += 1,
            StatementKind::Python(_) => c.3 += 1,
        }
    }
    c
}

#[test]
fn all_scripts_parse_and_round_trip() {
    for name in ALL {
        let Some(s) = parse_data(name) else { continue };
        let text = write(&s);
        let again = parse(&text, "rewritten").unwrap_or_else(|e| panic!("{name}: {e}\n{text}"));
        assert_eq!(again.without_positions(), s.without_positions(), "{name}");
        // The canonical form is a fixed point of the writer.
        assert_eq!(write(&again), text, "{name}");
        // Serde round trip through JSON.
        let json = serde_json::to_string(&s).unwrap();
        let back: Script = serde_json::from_str(&json).unwrap();
        assert_eq!(back, s, "{name}");
    }
}

#[test]
fn census_of_each_script() {
    // Independently counted with grep: lines with `[<>] ` after the time,
    // lines with `) = `, backtick pairs, and `%{` occurrences.
    let expect = [
        (
            "cubic-rack-reo-timeout-retrans-failed-incoming-data.pkt",
            (10, 7, 2, 14),
        ),
        ("cubic-rto-ss-ca-cwnd-bump.pkt", (52, 9, 1, 10)),
        ("ecn-uses-ect0.pkt", (4, 3, 1, 0)),
        ("fr-4pkt-sack.pkt", (12, 7, 1, 0)),
        ("fr-non-sack-hold-at-high-seq.pkt", (20, 6, 3, 9)),
        (
            "frto-real-timeout-nonsack-hold-at-high-seq.pkt",
            (21, 6, 3, 10),
        ),
        ("prr-ss-10pkt-lost-1.pkt", (26, 7, 1, 2)),
        ("prr-ss-ack-below-snd_una-cubic.pkt", (13, 7, 1, 0)),
        ("sack-shift-sacked-2-6-8-3-9-nofack.pkt", (15, 6, 1, 8)),
    ];
    for (name, c) in expect {
        let Some(s) = parse_data(name) else { continue };
        assert_eq!(census(&s), c, "{name}");
    }
}

#[test]
fn fr_non_sack_details() {
    let Some(s) = parse_data("fr-non-sack-hold-at-high-seq.pkt") else {
        return;
    };
    let st = &s.statements;
    // `../common/defaults.sh` on line 6, no time.
    assert_eq!((st[0].line, st[0].col, st[0].time), (6, 1, None));
    assert_eq!(
        st[0].kind,
        StatementKind::Shell("../common/defaults.sh".into())
    );
    // `    0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3` on line 9.
    assert_eq!(
        (st[1].line, st[1].col, st[1].time),
        (9, 5, Some(Time::Absolute(0)))
    );
    // `  +0 `nstat -n`` on line 14.
    assert_eq!((st[5].line, st[5].col), (14, 3));
    assert_eq!(st[5].kind, StatementKind::Shell("nstat -n".into()));
    // `+.020 < . 1:1(0) ack 1 win 320` on line 18.
    assert_eq!(st[8].line, 18);
    assert_eq!(st[8].time, Some(Time::Relative(20_000)));
    assert_eq!(
        st[8].kind,
        StatementKind::Packet(Packet {
            direction: Direction::In,
            encap: Vec::new(),
            ecn: None,
            ip: IpExtra::default(),
            psp_spi: None,
            ports: None,
            flags: TcpFlags {
                ack: true,
                ..Default::default()
            },
            seq: 1,
            end_seq: 1,
            len: 0,
            ack: Some(1),
            win: Some(320),
            urg: None,
            options: None,
        })
    );
    // `  +0 %{ assert tcpi_snd_cwnd == 10,  tcpi_snd_cwnd }%` on line 34.
    let cwnd = st.iter().find(|s| s.line == 34).unwrap();
    assert_eq!(cwnd.col, 3);
    assert_eq!(
        cwnd.kind,
        StatementKind::Python("assert tcpi_snd_cwnd == 10,  tcpi_snd_cwnd".into())
    );
    // Last statement: `   +0 `nstat`` on line 78.
    let last = st.last().unwrap();
    assert_eq!((last.line, last.col), (78, 4));
    assert_eq!(last.kind, StatementKind::Shell("nstat".into()));
    // Three blocks assert the CA state.
    let states = st
        .iter()
        .filter(
            |s| matches!(&s.kind, StatementKind::Python(p) if python::mentions(p, "tcpi_ca_state")),
        )
        .count();
    assert_eq!(states, 3);
}

#[test]
fn frto_details() {
    let Some(s) = parse_data("frto-real-timeout-nonsack-hold-at-high-seq.pkt") else {
        return;
    };
    // ` +.22 > . 1:1001(1000) ack 1` (RTO retransmit of the head).
    let rto = s
        .statements
        .iter()
        .find(|s| s.time == Some(Time::Relative(220_000)))
        .unwrap();
    match &rto.kind {
        StatementKind::Packet(p) => {
            assert_eq!(p.direction, Direction::Out);
            assert_eq!((p.seq, p.end_seq, p.len, p.ack), (1, 1001, 1000, Some(1)));
        }
        k => panic!("{k:?}"),
    }
    // The three asserts after the probes are acked, verbatim.
    let loss: Vec<&str> = s
        .statements
        .iter()
        .filter_map(|s| match &s.kind {
            StatementKind::Python(p) => Some(p.as_str()),
            _ => None,
        })
        .take(3)
        .collect();
    assert_eq!(
        loss,
        vec![
            "assert tcpi_ca_state == TCP_CA_Loss, tcpi_ca_state",
            "assert tcpi_snd_cwnd == 2, tcpi_snd_cwnd",
            "assert tcpi_snd_ssthresh == 7, tcpi_snd_ssthresh"
        ]
    );
}

#[test]
fn packetdrill_tree_details() {
    // SACK blocks.
    let Some(s) = parse_data("sack-shift-sacked-2-6-8-3-9-nofack.pkt") else {
        return;
    };
    let sacks: Vec<&TcpOptions> = s
        .statements
        .iter()
        .filter_map(|s| match &s.kind {
            StatementKind::Packet(p) => p.options.as_ref(),
            _ => None,
        })
        .collect();
    assert!(sacks.contains(&&TcpOptions::List(vec![
        TcpOption::Sack(vec![(2001, 3001), (6001, 7001), (8001, 9001)]),
        TcpOption::Nop,
        TcpOption::Nop
    ])));
    // Five asserts in one multi-line block at the end.
    match &s.statements.last().unwrap().kind {
        StatementKind::Python(p) => assert_eq!(p.matches("assert").count(), 5),
        k => panic!("{k:?}"),
    }

    // Time ranges and `<...>`.
    let Some(s) = parse_data("cubic-rto-ss-ca-cwnd-bump.pkt") else {
        return;
    };
    let ranges = s
        .statements
        .iter()
        .filter(|s| {
            s.time
                == Some(Time::Range {
                    start: TimePoint::Relative(300_000),
                    end: TimePoint::Relative(303_000),
                })
        })
        .count();
    assert_eq!(ranges, 2);
    let Some(s) = parse_data("cubic-rack-reo-timeout-retrans-failed-incoming-data.pkt") else {
        return;
    };
    assert!(s.statements.iter().any(|s| matches!(
        &s.kind,
        StatementKind::Packet(p) if p.options == Some(TcpOptions::Any)
    )));
    // A %-formatted assert message is kept verbatim.
    assert!(s.statements.iter().any(|s| matches!(&s.kind, StatementKind::Python(p) if p.contains("'ca_state: %d min_rtt: %d rtt: %d' % (tcpi_ca_state, tcpi_min_rtt, tcpi_rtt)"))));

    // ECN, multi-line shell and a blocking connect.
    let Some(s) = parse_data("ecn-uses-ect0.pkt") else {
        return;
    };
    assert_eq!(
        s.statements[0].kind,
        StatementKind::Shell(
            "../common/defaults.sh\nsysctl -q net.ipv4.tcp_ecn=1  # fully enabled\n".into()
        )
    );
    match &s.statements.last().unwrap().kind {
        StatementKind::Packet(p) => assert_eq!(p.ecn, Some(Ecn::Ect0)),
        k => panic!("{k:?}"),
    }
}

#[test]
fn canonical_text_of_a_script_prefix() {
    let Some(s) = parse_data("fr-non-sack-hold-at-high-seq.pkt") else {
        return;
    };
    let head = Script {
        options: vec![],
        statements: s.statements[..10].to_vec(),
    };
    assert_eq!(
        write(&head),
        "`../common/defaults.sh`
0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
+0 setsockopt(3, SOL_SOCKET, SO_REUSEADDR, [1], 4) = 0
+0 bind(3, ..., ...) = 0
+0 listen(3, 1) = 0
+0 `nstat -n`
+0 < S 0:0(0) win 32792 <mss 1000,nop,wscale 7>
+0 > S. 0:0(0) ack 1 <mss 1460,nop,wscale 8>
+.020 < . 1:1(0) ack 1 win 320
+0 accept(3, ..., ...) = 4
"
    );
}
