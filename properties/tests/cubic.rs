//! CUBIC and HyStart: each HyStart/CUBIC fix of docs/reference/profiles.md is rediscovered on its pre-fix
//! profile and holds on linux-6.18; every CUBIC/HyStart property is shown to be able to fail.
//!
//! Dedicated small bounds (documented in docs/reference/properties.md): SACK with timestamps, no losses,
//! RTOs, TLPs or TSQ unless the scenario needs them, in-order delivery, short RTTs; HyStart's
//! `hystart_low_window` keeps its default 16 where 24 segments suffice, else it is lowered.

use trc_model::config::SackMode;
use trc_model::model::TcpModel;
use trc_model::profile::{HystartClock, Mutant, Profile};
use trc_model::Config;

mod common;
use common::{idle_after_ca, run_property};

fn run(cfg: &Config, profile: Profile, id: &str) -> (Option<usize>, u64) {
    run_property(cfg, profile, id, 2)
}

fn violated(cfg: &Config, profile: Profile, id: &str) -> Option<usize> {
    let name = profile.name.clone();
    let (v, states) = run(cfg, profile, id);
    eprintln!("{id} on {name}: {v:?} ({states} states)");
    v
}

fn mutant(m: Mutant) -> Profile {
    let mut p = Profile::linux_6_18();
    p.name = format!("mutant-{m:?}");
    p.mutants = vec![m];
    p
}

/// A bulk transfer in slow start, nothing lost: 24 segments, IW `iw`, RTT `rtt` ms.
fn bulk(iw: u32, rtt: u32) -> Config {
    Config {
        sack: SackMode::Sack,
        segments: 24,
        initcwnd: iw,
        rtt_ms: rtt,
        max_losses: 0,
        max_rtos: 0,
        max_tlps: 0,
        max_tsq: 0,
        max_reorder: 0,
        ..Config::default()
    }
}

/// 25c1a9ca53db: below `hystart_low_window` the round was not tracked, so the first round
/// starts mid-flight and an ACK train spanning two flights ends slow start (IW 10, the default
/// low window 16, RTT 2 ms: ACK batches 2 ms apart).
#[test]
fn f25c1a9_round_start_below_low_window_i15() {
    let c = bulk(10, 2);
    assert!(violated(&c, Profile::pre_25c1a9(), "I15").is_some());
    assert!(violated(&c, Profile::linux_5_6(), "I15").is_some());
    assert_eq!(violated(&c, Profile::linux_6_18(), "I15"), None);
}

/// 4e1fddc98d25: the round was reset in cong_avoid, after HyStart had already judged the ACK
/// against the finished round (and never when not cwnd-limited).
#[test]
fn f4e1fddc_round_reset_in_cong_avoid_i15() {
    let c = bulk(10, 2);
    assert!(violated(&c, Profile::pre_4e1fddc(), "I15").is_some());
    assert_eq!(violated(&c, Profile::linux_6_18(), "I15"), None);
    // Application-limited: the application writes one segment at a time.
    let app = Config {
        segments: 2,
        extra_writes: 14,
        initcwnd: 16,
        hystart_low_window: 2,
        ..bulk(16, 2)
    };
    assert!(
        violated(&app, Profile::pre_4e1fddc(), "I15").is_some(),
        "not-cwnd-limited flow keeps a stale round"
    );
    assert_eq!(violated(&app, Profile::linux_6_18(), "I15"), None);
}

/// b344579ca847: samples 9.. of a round did not lower curr_rtt, so a drop of the min RTT after
/// the first 8 samples made a spurious delay exit. Deliveries may be 6 ms late (RTT 20 ms).
#[test]
fn fb344579_delay_exit_on_min_rtt_drop_i15b() {
    let c = Config {
        initcwnd: 3,
        segments: 21,
        rtt_ms: 20,
        rtt_extra_ms: vec![6],
        hystart_low_window: 2,
        ..bulk(3, 20)
    };
    assert!(violated(&c, Profile::pre_b344579(), "I15b").is_some());
    assert_eq!(violated(&c, Profile::linux_6_18(), "I15b"), None);
}

/// The Dec 2019 usec series: with the ms clock a path whose half-RTT is below 1 ms exits on
/// the first ACK that lands in the next millisecond. Model ms stand for 100 µs here (RTT 300 µs).
#[test]
fn ms_clock_below_resolution_i15c() {
    let c = Config {
        initcwnd: 4,
        segments: 16,
        rtt_ms: 3,
        rtt_extra_ms: vec![1],
        cc_us_per_ms: 100,
        hystart_low_window: 2,
        ..bulk(4, 3)
    };
    let ms = Profile {
        name: "6.18-ms-clock".into(),
        hystart_clock: HystartClock::Ms,
        ..Profile::linux_6_18()
    };
    assert!(violated(&c, ms, "I15c").is_some());
    assert!(violated(&c, Profile::linux_5_5(), "I15c").is_some());
    assert_eq!(violated(&c, Profile::linux_6_18(), "I15c"), None);
    assert_eq!(violated(&c, Profile::linux_5_6(), "I15c"), None);
}

/// Pacing-aware threshold (5.6): a paced flow's ACK train may legitimately last RTT/2.
#[test]
fn pacing_aware_threshold_i15c() {
    // Model ms stand for 500 µs: RTT 4 ms, deliveries may be 1.5 or 3 ms late.
    let c = Config {
        pacing: true,
        initcwnd: 4,
        segments: 16,
        rtt_ms: 8,
        cc_us_per_ms: 500,
        rtt_extra_ms: vec![3, 6],
        hystart_low_window: 2,
        ..bulk(4, 8)
    };
    let not_aware = Profile {
        name: "6.18-not-pacing-aware".into(),
        hystart_pacing_aware: false,
        ..Profile::linux_6_18()
    };
    assert!(violated(&c, not_aware, "I15c").is_some());
    assert_eq!(violated(&c, Profile::linux_6_18(), "I15c"), None);
}

/// 30927520dbae (v4.3): after idle the epoch was not shifted, so the curve ran on.
#[test]
fn f30927520_no_epoch_shift_after_idle_i16i() {
    let c = idle_after_ca();
    assert!(violated(&c, Profile::pre_30927520(), "I16i").is_some());
    assert_eq!(violated(&c, Profile::linux_6_18(), "I16i"), None);
}

/// 2015 follow-up: the shifted epoch could land in the future.
#[test]
fn epoch_start_in_the_future_i16() {
    let c = idle_after_ca();
    assert!(violated(&c, Profile::pre_epoch_clamp(), "I16").is_some());
    assert_eq!(violated(&c, Profile::linux_6_18(), "I16"), None);
}

#[test]
fn ssthresh_floor_i12_i17() {
    let c = Config {
        sack: SackMode::Sack,
        segments: 3,
        initcwnd: 2,
        max_tlps: 0,
        max_tsq: 0,
        ..Config::default()
    };
    for id in ["I12", "I17"] {
        assert!(
            violated(&c, mutant(Mutant::CubicNoSsthreshFloor), id).is_some(),
            "{id}"
        );
        assert_eq!(violated(&c, Profile::linux_6_18(), id), None, "{id}");
    }
}

#[test]
fn rto_resets_cubic_i18() {
    let c = Config {
        sack: SackMode::Sack,
        segments: 4,
        initcwnd: 4,
        max_tlps: 0,
        max_tsq: 0,
        ..Config::default()
    };
    assert!(violated(&c, mutant(Mutant::CubicNoLossReset), "I18").is_some());
    assert_eq!(violated(&c, Profile::linux_6_18(), "I18"), None);
}

/// I16's `cnt >= 2` can fail: without the floor, a target far above cwnd gives `cnt` = 0
/// (cwnd would double on every ACK). The state is built directly: ten seconds into an epoch
/// whose origin is the current cwnd.
#[test]
fn cnt_floor_i16() {
    use trc_model::cc::Cc;
    use trc_model::sender::Cx;
    let c = Config {
        sack: SackMode::Sack,
        ..Config::default()
    };
    for (p, expect_fail) in [
        (mutant(Mutant::CubicNoCntFloor), true),
        (Profile::linux_6_18(), false),
    ] {
        let model = TcpModel::new(c.clone(), p.clone());
        let mut s = model.initial(true);
        s.now = 10_000;
        let cx = Cx::new(&model.cfg, &model.profile, s.now, false);
        let w = s.sender.window(&cx);
        let Cc::Cubic(cu) = &mut s.sender.cc else {
            panic!("cubic")
        };
        cu.epoch_start = w.p.jiffies(0);
        cu.bic_k = 0;
        cu.bic_origin_point = w.cwnd;
        cu.bictcp_update(&w, w.cwnd, 1);
        let cnt = cu.cnt;
        let i16 = trc_properties::select(&["I16".into()]).unwrap();
        assert_eq!(
            !(i16[0].holds)(&model, &s),
            expect_fail,
            "{}: cnt {cnt}",
            p.name
        );
    }
}
