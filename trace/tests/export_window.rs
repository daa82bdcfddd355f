//! The window an exported script's peer advertises: large enough that the kernel's
//! `tcp_snd_wnd_test()` never holds back what the model sends (the model has no flow control),
//! and the historical `win 320` at `wscale 7` wherever that suffices.

#[test]
fn exports_advertise_a_window_that_never_binds() {
    use trc_model::Config;
    use trc_trace::export::{peer_max_window, peer_wscale};
    // Small configurations keep the exports' historical `wscale 7` (40960 bytes).
    let small = Config::default();
    assert_eq!(peer_wscale(&small), 7);
    assert_eq!(peer_max_window(&small), 40_960);
    // 1000 segments of 1000 bytes (a bulk walk): the window covers all of it.
    let bulk = Config {
        segments: 900,
        extra_writes: 100,
        ..Config::default()
    };
    assert_eq!(peer_wscale(&bulk), 12);
    assert!(peer_max_window(&bulk) >= 1_000_000);
}
