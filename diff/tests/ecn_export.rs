//! ECN in exported scripts: a path with ECE-marked ACKs exports with the ECN handshake
//! (`tcp_ecn=1`, `SEW` / `SE.`), the ECE on its ACK lines and CWR (`W`) on the first new segment
//! after each reduction; the model's replay passes every line, and so does the kernel (when this
//! machine can run it).

use stateright::Model;
use trc_model::model::{Action, TcpModel};
use trc_model::{Config, Profile, SackMode};

/// A walk: the oldest transmission delivered each step, with ECE on the steps in `ece`.
fn walk(model: &TcpModel, steps: usize, ece: &[usize]) -> Vec<Action> {
    let mut s = model.init_states().remove(0);
    let mut out = Vec::new();
    for i in 0..steps {
        let mut acts = Vec::new();
        model.actions(&s, &mut acts);
        let want = if ece.contains(&i) {
            Action::DeliverEce { pkt: 0 }
        } else {
            Action::Deliver { pkt: 0 }
        };
        assert!(acts.contains(&want), "step {i}: {want:?} not enabled");
        s = model.next_state(&s, want).unwrap();
        out.push(want);
    }
    out
}

#[test]
fn ece_walk_exports_with_cwr_and_replays() {
    let cfg = Config {
        sack: SackMode::Sack,
        segments: 14,
        initcwnd: 6,
        ecn: true,
        max_ece: 2,
        ..Config::default()
    };
    let model = TcpModel::new(cfg, Profile::linux_6_18());
    let actions = walk(&model, 10, &[2, 7]);
    let x = trc_trace::export::export_walk(
        &model,
        0,
        &actions,
        "ecn",
        trc_trace::export::Spacing {
            gap_ms: 3,
            margin_ms: 0,
            absolute: false,
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(x.trace.kernel_runnable, "{}", x.pkt);
    assert!(
        x.pkt.contains("< SEW 0:0(0)") && x.pkt.contains("> SE. 0:0(0)"),
        "{}",
        x.pkt
    );
    assert!(x.pkt.contains("net.ipv4.tcp_ecn=1"), "{}", x.pkt);
    assert!(x.pkt.contains("< E. 1:1(0)"), "{}", x.pkt);
    let cwr_lines = x.pkt.lines().filter(|l| l.contains("> W")).count();
    assert_eq!(
        cwr_lines, 1,
        "one reduction, one CWR (the second ECE is in CWR):\n{}",
        x.pkt
    );
    let dir = std::env::temp_dir().join(format!("trc-ecn-export-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("x")).unwrap();
    // An exported script runs `./defaults.sh` from its own directory.
    std::fs::copy(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../counterexamples/common/defaults.sh"
        ),
        dir.join("x/defaults.sh"),
    )
    .unwrap();
    let path = dir.join("x/ecn.pkt");
    std::fs::write(&path, &x.pkt).unwrap();
    let script = trc_pkt::parse(&x.pkt, "ecn.pkt").unwrap();
    let name = path.display().to_string();
    let r = trc_trace::replay::replay(&script, &name, &Profile::linux_6_18(), &Default::default());
    assert!(
        matches!(r.script.verdict, trc_pkt::report::Verdict::Passed { .. }),
        "{}\n{}",
        x.pkt,
        r.render()
    );
    if let Some(why) = trc_kernel::skip_reason() {
        eprintln!("skipped the kernel run: {why}");
        return;
    }
    let opts = trc_kernel::RunOptions {
        script_dir: dir.join("x"),
        ..Default::default()
    };
    // A loaded machine injects an ACK late now and then (a timing error on an inbound line):
    // rerun; what must never fail is an outbound packet (the CWR among them) or an assert.
    let mut last = String::new();
    for _ in 0..3 {
        let k = trc_kernel::run_script(&script, &name, &opts).unwrap();
        if matches!(k.script.verdict, trc_pkt::report::Verdict::Passed { .. }) {
            let _ = std::fs::remove_dir_all(&dir);
            return;
        }
        let behaviour: Vec<_> = k
            .script
            .lines
            .iter()
            .filter(|l| l.status == trc_pkt::report::Status::Fail)
            .filter(|l| {
                l.kind != trc_pkt::report::LineKind::PacketIn
                    || !l.message.as_deref().unwrap_or("").contains("timing error")
            })
            .collect();
        assert!(behaviour.is_empty(), "{}\n{}", x.pkt, k.script.render());
        last = k.script.render();
    }
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!(
        "every run had an inbound timing error (a loaded machine); no other failure:\n{last}"
    );
}
