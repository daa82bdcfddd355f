//! `trc-lab impact`: input errors before any VM, and the experiment in a Debian 7.2 VM (qemu,
//! busybox-static and the kernel needed; skips otherwise).

/// Runs `trc-lab` from the workspace root: (exit code, stdout, stderr).
macro_rules! lab {
    ($args:expr, $env:expr $(,)?) => {
        trc_testkit::run_in_workspace(env!("CARGO_BIN_EXE_trc-lab"), $args, $env)
    };
}

#[test]
fn impact_input_errors_before_any_vm() {
    // The experiment runs only in a VM: no --kernel is a usage error, as are bad path values.
    let (c, _, e) = lab!(&["impact"], &[]);
    assert_eq!(c, 2, "{e}");
    assert!(e.contains("--kernel is required"), "{e}");
    for bad in [
        ["--loss", "70"],
        ["--rtt", "0"],
        ["--jitter-dist", "zipf"],
        ["--runs", "0"],
    ] {
        let (c, _, e) = lab!(
            &["impact", "--kernel", "/nonexistent/vmlinuz", bad[0], bad[1],],
            &[],
        );
        assert_eq!(c, 2, "{bad:?}: {e}");
    }
    let (c, _, e) = lab!(&["impact", "--kernel", "/nonexistent/vmlinuz"], &[],);
    assert_eq!(c, 4, "{e}");
}

#[test]
fn impact_experiment_in_a_debian_7_2_vm() {
    let Some(k) = trc_vm::flags::test_kernel_or_skip() else {
        return;
    };
    let d = trc_testkit::scratch!("kernel-vm-impact");
    let json = d.join("impact.json");
    let cache = d.join("cache");
    // Two short runs with 5 % loss: drops are certain, so the taps and netem must agree.
    let args = [
        &["impact"][..],
        &trc_testkit::tcg_vm(&k, &cache),
        &[
            "--runs",
            "2",
            "--duration",
            "3",
            "--loss",
            "5",
            "--json",
            json.to_str().unwrap(),
        ][..],
    ]
    .concat();
    let (c, out, err) = lab!(&args, &[]);
    assert_eq!(c, 0, "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.contains("median of 2: goodput"), "{out}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "{out}");
    for r in runs {
        let s = &r["summary"];
        assert_eq!(s["captured"], true, "{s}");
        assert!(s["goodput_mbit"].as_f64().unwrap() > 0.0, "{s}");
        assert!(s["tap_sent"].as_u64().unwrap() > 100, "{s}");
        assert_eq!(s["tap_losses"], 0, "{s}");
        assert_eq!(s["oversize"], 0, "segments, not GSO packets: {s}");
        // What the taps saw dropped (data segments, and packets without payload) is what
        // netem counted, give or take the few packets of the router's own on r1 (ARP, IPv6
        // neighbour discovery) that netem may drop too and the taps do not count.
        assert!(s["tap_dropped"].as_u64().unwrap() > 0, "{s}");
        let nodata =
            s["tap_nodata_sent"].as_u64().unwrap() - s["tap_nodata_delivered"].as_u64().unwrap();
        let seen = s["tap_dropped"].as_u64().unwrap() + nodata;
        let netem = s["netem_dropped"].as_u64().unwrap();
        assert!(
            seen <= netem && netem <= seen + 5,
            "taps {seen}, netem {netem}: {s}"
        );
        assert!(s["counters"]["TcpRetransSegs"].as_i64().unwrap() > 0, "{s}");
        assert!(r["samples"].as_array().unwrap().len() > 100, "{s}");
    }
}

#[test]
fn sweep_threads_are_bounded_by_the_machine() {
    let (code, _, err) = lab!(&["sweep", "--threads", "100000"], &[]);
    assert_eq!(code, 2, "{err}");
}
