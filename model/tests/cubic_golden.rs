//! CUBIC congestion avoidance after an RTO, step by step, with the values the 6.18 kernel shows
//! for counterexamples/kernel/cubic-ca-growth.pkt (MSS 1000, SACK, no timestamps, RTT 50 ms,
//! HZ 250, F-RTO and TLP off).

use trc_model::sender::ack::AckSeg;
use trc_model::sender::Cx;
use trc_model::state::{CaState, Sender};
use trc_model::{Config, Profile, SackMode};

fn ack(snd: &mut Sender, cfg: &Config, prof: &Profile, now: u32, a: u32) -> Vec<u32> {
    snd.ghost.ev = Default::default();
    let mut cx = Cx::new(cfg, prof, now, false);
    let seg = AckSeg {
        ack: a,
        sacks: Default::default(),
        ece: false,
        tsecr: None,
    };
    snd.tcp_ack(&mut cx, &seg);
    cx.out.iter().map(|t| t.seg + 1).collect()
}

/// Returns cwnd after each round of the script (seq numbers in segments of 1000 bytes).
pub fn ca_rounds() -> Vec<(CaState, u32, u32)> {
    let cfg = Config {
        segments: 24,
        initcwnd: 10,
        timestamps: false,
        sack: SackMode::Sack,
        frto: false,
        tlp: false,
        ..Config::default()
    };
    let prof = Profile::linux_6_18();
    let mut snd = Sender::new(&cfg, true);
    let mut cx = Cx::new(&cfg, &prof, 0, false);
    snd.write_seq = cfg.isn + 10;
    snd.tcp_write_xmit(&mut cx);
    // RTO at 250 ms.
    snd.timer = None;
    let mut cx = Cx::new(&cfg, &prof, 250, false);
    snd.tcp_retransmit_timer(&mut cx);
    let mut out = vec![(snd.ca_state, snd.cwnd, snd.ssthresh)];
    // Slow-start repair: cumulative ACKs 2, 4, 8, 11 at 300, 350, 400, 450 ms.
    for (t, a) in [(300, 2), (350, 4), (400, 8), (450, 11)] {
        ack(&mut snd, &cfg, &prof, t, a);
        out.push((snd.ca_state, snd.cwnd, snd.ssthresh));
    }
    // 14 more segments written; each round every segment is ACKed one by one 50 ms later.
    snd.write_seq = cfg.isn + 24;
    let mut cx = Cx::new(&cfg, &prof, 450, false);
    snd.tcp_write_xmit(&mut cx);
    let mut t = 500;
    while snd.snd_una != snd.write_seq {
        let (from, to) = (snd.snd_una, snd.snd_nxt);
        for a in from + 1..=to {
            ack(&mut snd, &cfg, &prof, t, a);
        }
        out.push((snd.ca_state, snd.cwnd, snd.ssthresh));
        t += 50;
    }
    out
}

#[test]
fn cubic_ca_growth_after_rto() {
    let r = ca_rounds();
    for (i, x) in r.iter().enumerate() {
        eprintln!("{i}: {x:?}");
    }
    assert_eq!(r[0], (CaState::Loss, 1, 7));
    assert_eq!(r[4], (CaState::Open, 7, 7));
    // Kernel 6.18 (cubic-ca-growth.pkt): still 7 after both congestion-avoidance rounds.
    assert_eq!(&r[5..], &[(CaState::Open, 7, 7), (CaState::Open, 7, 7)]);
}
