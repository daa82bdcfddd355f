//! The whole grammar: every `.pkt` file of the vendored packetdrill tree that packetdrill itself
//! parses (`packetdrill --dry_run`, with run_all.py's ipv4 arguments or, failing that, its ipv6
//! ones), trc parses too, and its canonical text reads back to the same script. The scripts are
//! read from `../shared/` (never copied here); without it, or without a C toolchain to build
//! packetdrill, the test is skipped with the reason.

use std::path::{Path, PathBuf};
use std::process::Command;

/// run_all.py's arguments for its ipv4 and ipv6 variants (`gtests/net/packetdrill/run_all.py`).
const VARIANTS: [&str; 2] = [
    "--ip_version=ipv4 --local_ip=192.168.0.1 --gateway_ip=192.168.0.1 --netmask_ip=255.255.0.0 \
     --remote_ip=192.0.2.1 -D TFO_COOKIE=3021b9d889017eeb -D CODE=host_unreachable \
     -D CMSG_LEVEL_IP=SOL_IP -D CMSG_TYPE_RECVERR=IP_RECVERR",
    "--ip_version=ipv6 --mtu=1520 --local_ip=fd3d:0a0b:17d6::1 \
     --gateway_ip=fd3d:0a0b:17d6:8888::1 --remote_ip=fd3d:fa7b:d17d::1 \
     -D TFO_COOKIE=c1d1e9742a47a9bc -D CMSG_LEVEL_IP=SOL_IPV6 -D CMSG_TYPE_RECVERR=IPV6_RECVERR",
];

fn scripts(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            scripts(&p, out);
        } else if p.extension().is_some_and(|x| x == "pkt") {
            out.push(p);
        }
    }
}

/// Whether packetdrill parses `script` in one of run_all.py's variants.
fn packetdrill_parses(pd: &Path, script: &Path) -> bool {
    VARIANTS.iter().any(|args| {
        Command::new(pd)
            .arg("--dry_run")
            .args(args.split_whitespace())
            .arg(script.file_name().unwrap())
            .current_dir(script.parent().unwrap())
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

#[test]
fn trc_parses_every_script_packetdrill_parses() {
    let (net, pd) = match (trc_testkit::gtests(), trc_testkit::packetdrill_binary()) {
        (Ok(n), Ok(p)) => (n, p),
        (Err(why), _) | (_, Err(why)) => {
            trc_testkit::skip("the vendored packetdrill tree", &why);
            return;
        }
    };
    let mut all = Vec::new();
    scripts(&net, &mut all);
    all.sort();
    let (mut accepted, mut rejected, mut failures) = (0, Vec::new(), Vec::new());
    for path in &all {
        let name = path
            .strip_prefix(&net)
            .unwrap_or(path)
            .display()
            .to_string();
        if !packetdrill_parses(&pd, path) {
            rejected.push(name);
            continue;
        }
        accepted += 1;
        let src = std::fs::read_to_string(path).unwrap();
        let s = match trc_pkt::parse(&src, &name) {
            Ok(s) => s,
            Err(e) => {
                failures.push(format!("{e}"));
                continue;
            }
        };
        let text = trc_pkt::write(&s);
        match trc_pkt::parse(&text, "rewritten") {
            Ok(again) if again.without_positions() == s.without_positions() => {
                assert_eq!(
                    trc_pkt::write(&again),
                    text,
                    "{name}: the writer's fixed point"
                );
            }
            Ok(_) => failures.push(format!("{name}: the canonical text reads back differently")),
            Err(e) => failures.push(format!("{name}: its canonical text does not parse: {e}")),
        }
    }
    eprintln!(
        "{} scripts in the vendored tree: packetdrill parses {accepted}, trc parses all of those; \
         packetdrill rejects {}: {}",
        all.len(),
        rejected.len(),
        rejected.join(", ")
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The tree has 177 scripts, 167 of which packetdrill parses (the 10 PSP scripts need
    // --wire_server and -D MSS=...): a test that found
    // none would check nothing.
    assert!(
        accepted >= 150,
        "only {accepted} scripts accepted by packetdrill"
    );
}
