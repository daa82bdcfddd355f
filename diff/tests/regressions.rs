//! The regression corpus (counterexamples/regressions/manifest.toml) on the live kernel: when
//! this machine can run the kernel (root + tun), the kernel-runnable scripts agree with the
//! model's replay of `linux-6.18` assert by assert, except the differences the manifest lists.
//! (The model-only check of the manifest is `trace/tests/regressions.rs`.)

use std::path::{Path, PathBuf};
use trc_model::Profile;
use trc_pkt::report::{LineKind, Status};
use trc_trace::regress::Manifest;
use trc_trace::replay::{replay, ReplayOptions};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../counterexamples/regressions")
}

/// Block-by-block comparison of the live kernel with the model's linux-6.18 replay of the same
/// `%{ }%` asserts. Returns (blocks compared, agreeing, differences as text).
pub fn kernel_vs_model(path: &Path) -> Result<(usize, usize, Vec<String>), String> {
    let src = std::fs::read_to_string(path).unwrap();
    let name = path.display().to_string();
    let script = trc_pkt::parse(&src, &name).unwrap();
    let model = replay(
        &script,
        &name,
        &Profile::linux_6_18(),
        &ReplayOptions::default(),
    );
    let opts = trc_kernel::RunOptions {
        script_dir: path.parent().unwrap().to_path_buf(),
        ..Default::default()
    };
    let k = trc_kernel::run_script(&script, &name, &opts).map_err(|e| e.to_string())?;
    let (mut n, mut agree, mut diffs) = (0, 0, Vec::new());
    for kl in k
        .script
        .lines
        .iter()
        .filter(|l| l.kind == LineKind::Code && l.is_check())
    {
        let Some(ml) = model
            .lines()
            .iter()
            .find(|m| m.line == kl.line && m.kind == LineKind::Code)
        else {
            diffs.push(format!(
                "line {}: {} not reached by the model",
                kl.line, kl.text
            ));
            continue;
        };
        n += 1;
        // Same verdict and, for failures, the same values.
        if kl.status == ml.status && (kl.status == Status::Pass || kl.values == ml.values) {
            agree += 1;
        } else {
            diffs.push(format!(
                "line {}: {} — kernel {:?} {:?}, model linux-6.18 {:?} {:?}",
                kl.line, kl.text, kl.status, kl.values, ml.status, ml.values
            ));
        }
    }
    for kl in k
        .script
        .lines
        .iter()
        .filter(|l| l.kind == LineKind::PacketOut && l.status == Status::Fail)
    {
        diffs.push(format!(
            "line {} (packet, kernel): {} — {}",
            kl.line,
            kl.text,
            kl.message.clone().unwrap_or_default()
        ));
    }
    Ok((n, agree, diffs))
}

#[test]
fn kernel_agrees_with_the_linux_6_18_replay() {
    if let Some(why) = trc_kernel::skip_reason() {
        eprintln!("skipped: kernel runs impossible here: {why}");
        return;
    }
    let dir = corpus();
    let m = Manifest::load(&dir).unwrap();
    let mut report = Vec::new();
    let mut unexpected = Vec::new();
    for e in m.regressions.iter().filter(|e| e.kernel_runnable) {
        let (n, agree, diffs) = kernel_vs_model(&dir.join(&e.script)).unwrap();
        report.push(format!("{}: {agree}/{n} assert blocks agree", e.name));
        for d in &diffs {
            report.push(format!("    {d}"));
            let line: u32 = d
                .trim_start_matches("line ")
                .split([' ', ':'])
                .next()
                .and_then(|x| x.parse().ok())
                .unwrap_or(0);
            if !e.kernel_differences.iter().any(|k| k.line == line) {
                unexpected.push(format!("{}: {d}", e.name));
            }
        }
    }
    eprintln!("{}", report.join("\n"));
    assert!(
        unexpected.is_empty(),
        "kernel and model disagree beyond the manifest's known differences:\n{}",
        unexpected.join("\n")
    );
}
