//! `Config::validate` bounds every numeric field: values the model's (and the kernel's)
//! arithmetic holds, with a message that starts with the field's name (the CLI turns that into
//! `--flag:` or `file:line:`).

use trc_model::config::{ConfigError, MAX_CWND};
use trc_model::Config;

fn err(f: impl FnOnce(&mut Config)) -> String {
    let mut c = Config::default();
    f(&mut c);
    c.validate().expect_err("must be refused").to_string()
}

#[test]
fn out_of_range_fields_are_refused_with_their_name() {
    type Case = (&'static str, Box<dyn FnOnce(&mut Config)>);
    let cases: Vec<Case> = vec![
        ("initcwnd", Box::new(|c| c.initcwnd = 6_000_000)),
        ("mss", Box::new(|c| c.mss = 0)),
        ("gso_max_size", Box::new(|c| c.gso_max_size = 0)),
        ("hystart_low_window", Box::new(|c| c.hystart_low_window = 0)),
        ("sysctl_reordering", Box::new(|c| c.sysctl_reordering = 0)),
        (
            "sysctl_max_reordering",
            Box::new(|c| c.sysctl_max_reordering = u32::MAX),
        ),
        ("isn", Box::new(|c| c.isn = u32::MAX - 3)),
        ("ts_base", Box::new(|c| c.ts_base = u32::MAX)),
        ("horizon_ms", Box::new(|c| c.horizon_ms = u32::MAX)),
        (
            "rtt_extra_ms",
            Box::new(|c| c.rtt_extra_ms = vec![5, u32::MAX]),
        ),
        ("write_gap_ms", Box::new(|c| c.write_gap_ms = vec![0])),
        (
            "rtt_extra_ms",
            Box::new(|c| c.rtt_extra_ms = (1..100).collect()),
        ),
    ];
    for (field, f) in cases {
        let e = err(f);
        assert!(e.starts_with(field), "{field}: {e}");
    }
}

#[test]
fn the_limits_themselves_are_accepted() {
    let c = Config {
        initcwnd: MAX_CWND,
        hystart_low_window: MAX_CWND,
        isn: 0x7fff_ffff,
        ts_base: 0,
        mss: 48,
        gso_max_size: 48,
        rtt_extra_ms: vec![1, 65535],
        write_gap_ms: vec![65535],
        horizon_ms: 3_600_000,
        ..Config::default()
    };
    c.validate().unwrap();
    assert_eq!(
        Config {
            initcwnd: MAX_CWND + 1,
            ..Config::default()
        }
        .validate(),
        Err(ConfigError::Range {
            field: "initcwnd",
            min: 1,
            max: 65535,
            got: 65536,
            why: ""
        })
    );
}
