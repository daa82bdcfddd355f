//! The model's RTT estimator in `trc replay` (model/src/sender/rtt.rs): F5's script, whose RTT
//! samples vary (50 ms, then SACK samples of 152 ms for segments delayed behind the TLP, then a
//! TS-echo sample of 152 ms on the ACK that covers a retransmission, Karn), with asserts of
//! what `tcp_get_info()` reports after each sample. The expected values follow
//! `tcp_rtt_estimator()`/`tcp_set_rto()` by hand (srtt += err/8; mdev 3/4 + |err|/4, a
//! negative error's gain /8; rttvar follows mdev_max up; RTO = usecs_to_jiffies(srtt +
//! rttvar), HZ=250): the RTO grows from 252 ms (63 jiffies, the fixed-RTT model's for the whole
//! connection) to 340 ms (85 jiffies) before the RTO fires. The asserts follow the inbound ACK
//! with the given TS value (the script's labels), so a re-export that keeps the events keeps
//! the test.

use std::path::Path;
use trc_model::profile::Profile;
use trc_pkt::report::Verdict;

/// (the TS value of the inbound ACK after which to assert, tcpi_rtt, tcpi_rttvar (mdev/4),
/// tcpi_rto, tcpi_min_rtt), µs.
const EXPECTED: [(u32, u32, u32, u32, u32); 5] = [
    // step 1: the first data ACK, 50 ms after the write.
    (151, 50_000, 18_750, 252_000, 50_000),
    // steps 4-6: SACK samples (first_sackt: the originals sent at 0 ms), 152 ms.
    (152, 62_750, 39_562, 264_000, 50_000),
    (153, 73_906, 51_984, 284_000, 50_000),
    (154, 83_668, 58_512, 320_000, 50_000),
    // step 7: the ACK covers the fast retransmit (Karn): the TS echo's 152 ms.
    (155, 92_209, 60_967, 340_000, 50_000),
];

#[test]
fn f5_rtt_samples_move_srtt_rttvar_and_the_rto() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../counterexamples");
    let text =
        std::fs::read_to_string(root.join("findings/f5-dsack-undo-rto-after-tlp-repair.pkt"))
            .unwrap();
    let mut out = String::new();
    for l in text.lines() {
        out.push_str(l);
        out.push('\n');
        let inbound = l.split_whitespace().nth(1) == Some("<");
        let hit = EXPECTED
            .iter()
            .find(|e| inbound && l.contains(&format!("TS val {} ecr", e.0)));
        if let Some((_, rtt, var, rto, min)) = hit {
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
