//! The model's RTT estimator in `trc replay` (model/src/sender/rtt.rs): F5's script, whose RTT
//! samples vary (50 ms, then SACK samples of 155, 158 and 161 ms for segments delayed behind the
//! TLP, then a TS-echo sample of 164 ms on the ACK that covers a retransmission, Karn), with
//! asserts of what `tcp_get_info()` reports after each sample. The expected values follow
//! `tcp_rtt_estimator()`/`tcp_set_rto()` by hand (srtt += err/8; mdev 3/4 + |err|/4, a
//! negative error's gain /8; rttvar follows mdev_max up; RTO = usecs_to_jiffies(srtt +
//! rttvar), HZ=250): the RTO grows from 252 ms (63 jiffies, the fixed-RTT model's for the whole
//! connection) to 360 ms (90 jiffies) before the RTO fires.

use std::path::Path;
use trc_model::profile::Profile;
use trc_pkt::report::Verdict;

/// (line after which to assert, tcpi_rtt, tcpi_rttvar (mdev/4), tcpi_rto, tcpi_min_rtt), µs.
const EXPECTED: [(usize, u32, u32, u32, u32); 5] = [
    (50, 50_000, 18_750, 252_000, 50_000),
    (62, 63_125, 40_312, 264_000, 50_000),
    (67, 74_984, 53_953, 292_000, 50_000),
    (72, 85_736, 61_969, 336_000, 50_000),
    (78, 95_519, 66_042, 360_000, 50_000),
];

#[test]
fn f5_rtt_samples_move_srtt_rttvar_and_the_rto() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../counterexamples");
    let text =
        std::fs::read_to_string(root.join("findings/f5-dsack-undo-rto-after-tlp-repair.pkt"))
            .unwrap();
    let mut out = String::new();
    for (i, l) in text.lines().enumerate() {
        out.push_str(l);
        out.push('\n');
        if let Some((_, rtt, var, rto, min)) = EXPECTED.iter().find(|e| e.0 == i + 1) {
            out.push_str(&format!(
                "    +0 %{{ assert (tcpi_rtt, tcpi_rttvar, tcpi_rto, tcpi_min_rtt) == \
                 ({rtt}, {var}, {rto}, {min}), (tcpi_rtt, tcpi_rttvar, tcpi_rto) }}%\n"
            ));
        }
    }
    let dir = std::env::temp_dir().join(format!("trc-rtt-estimator-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("findings")).unwrap();
    std::fs::create_dir_all(dir.join("common")).unwrap();
    std::fs::copy(
        root.join("common/defaults.sh"),
        dir.join("common/defaults.sh"),
    )
    .unwrap();
    let script = dir.join("findings/f5-rtt.pkt");
    std::fs::write(&script, out).unwrap();
    let r = trc_trace::replay::replay_file(&script, &Profile::linux_6_18(), &Default::default())
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let s = &r.script;
    assert!(
        matches!(s.verdict, Verdict::Passed { .. }),
        "{:?}\n{:#?}",
        s.verdict,
        s.lines
            .iter()
            .filter(|l| format!("{l:?}").contains("tcpi_rto"))
            .collect::<Vec<_>>()
    );
    let checked = s
        .lines
        .iter()
        .filter(|l| format!("{l:?}").contains("tcpi_rto") && format!("{l:?}").contains("Pass"))
        .count();
    assert_eq!(checked, EXPECTED.len(), "every RTT assert evaluated");
}
