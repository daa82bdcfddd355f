#![allow(dead_code)]
//! The fuzz targets' bodies, shared by the libFuzzer binaries (`fuzz/fuzz_targets/`) and by the
//! corpus test that `cargo test -p trc-trace` runs (`trace/tests/fuzz_corpus.rs`), so a corpus
//! file means the same to both. Each function panics only on a bug; any input is allowed.

/// The script parser: never panics; whatever it accepts, its canonical text parses back to the
/// same script (the writer round-trips).
pub fn parse(data: &[u8]) {
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(script) = trc_pkt::parse(src, "fuzz.pkt") else {
        return;
    };
    let text = trc_pkt::write(&script);
    match trc_pkt::parse(&text, "rewritten.pkt") {
        Ok(again) => assert_eq!(
            again.without_positions(),
            script.without_positions(),
            "round trip changed the script:\n{text}"
        ),
        Err(e) => panic!("the canonical text does not parse: {e}\n{text}"),
    }
}

/// Replay on the model of a parsed script, with its `%{ }%` blocks dropped: they are evaluated
/// by running `python3` (a process per input would make the fuzzer slow and test Python, not
/// trc), and the engine's handling of their values is covered by the pkt tests. Shell lines are
/// not run (`no_shell`: their settings still configure the model), so nothing here starts a
/// process.
/// The replay must not panic, and its exit code is one of the engine's (0, 1, 3).
pub fn replay(data: &[u8]) {
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(mut script) = trc_pkt::parse(src, "fuzz.pkt") else {
        return;
    };
    script
        .statements
        .retain(|s| !matches!(s.kind, trc_pkt::StatementKind::Python(_)));
    let profile = trc_model::Profile::by_name("linux-6.18").expect("built-in profile");
    let r = trc_trace::replay::replay(
        &script,
        "fuzz.pkt",
        &profile,
        &trc_trace::replay::ReplayOptions {
            no_shell: true,
            ..Default::default()
        },
    );
    let code = r.exit_code();
    assert!(matches!(code, 0 | 1 | 3), "exit code {code}");
    let _ = r.render();
}
