//! The model replay's `nstat` (`trace/src/nstat.py`) against iproute2's: both read the same
//! counters — the real one from `/proc/net`-format files named by its `PROC_NET_*` variables,
//! the shim from trc's counter table — through a sequence of invocations (every option the
//! shim implements, patterns, the history file between them, counters moving in between), and
//! must print the same, exit the same and leave the same history file. Skips without `nstat`
//! or `python3`.

use std::path::{Path, PathBuf};
use std::process::Command;
use trc_trace::model_shell::kernel_counters;

/// The table prefixes of the counters, longest first (how nstat joins table and field).
const PREFIXES: &[&str] = &[
    "MPTcpExt", "TcpExt", "IpExt", "UdpLite6", "UdpLite", "Udp6", "Udp", "Icmp6", "Icmp", "Ip6",
    "Ip", "Tcp",
];

fn have(prog: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {prog}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The `/proc/net/{snmp,netstat}` ("Table: f1 f2\nTable: v1 v2") and `snmp6` ("name value")
/// files of `values`.
fn proc_files(dir: &Path, values: &[(String, u64)]) {
    let (mut snmp, mut netstat, mut snmp6) = (String::new(), String::new(), String::new());
    let mut tables: Vec<(&str, Vec<(String, u64)>)> = Vec::new();
    for (name, v) in values {
        let p = PREFIXES.iter().find(|p| name.starts_with(*p)).unwrap();
        if p.ends_with('6') {
            snmp6.push_str(&format!("{name:<32}{v}\n"));
            continue;
        }
        match tables.last_mut() {
            Some((q, fields)) if q == p => fields.push((name[p.len()..].to_string(), *v)),
            _ => tables.push((p, vec![(name[p.len()..].to_string(), *v)])),
        }
    }
    for (p, fields) in tables {
        let names: Vec<&str> = fields.iter().map(|f| f.0.as_str()).collect();
        let vals: Vec<String> = fields.iter().map(|f| f.1.to_string()).collect();
        let text = format!("{p}: {}\n{p}: {}\n", names.join(" "), vals.join(" "));
        if p.ends_with("Ext") {
            netstat.push_str(&text);
        } else {
            snmp.push_str(&text);
        }
    }
    std::fs::write(dir.join("snmp"), snmp).unwrap();
    std::fs::write(dir.join("netstat"), netstat).unwrap();
    std::fs::write(dir.join("snmp6"), snmp6).unwrap();
    let table: String = values.iter().map(|(n, v)| format!("{n} {v}\n")).collect();
    std::fs::write(dir.join("table"), table).unwrap();
}

/// (stdout, exit code, history file) of one nstat invocation.
fn run(real: bool, dir: &Path, shim: &Path, args: &[&str]) -> (String, Option<i32>, String) {
    let hist = dir.join(if real { "hist-real" } else { "hist-shim" });
    let mut c = if real {
        let mut c = Command::new("nstat");
        c.env("PROC_NET_SNMP", dir.join("snmp"))
            .env("PROC_NET_NETSTAT", dir.join("netstat"))
            .env("PROC_NET_SNMP6", dir.join("snmp6"));
        c
    } else {
        let mut c = Command::new("python3");
        c.arg(shim)
            .env("TRC_MODEL_NSTAT", dir.join("table"))
            .env("TRC_MODEL_NSTAT_UNMODELLED", dir.join("unmodelled"))
            .env("TRC_MODEL_BOOT", "0");
        c
    };
    let o = c.args(args).env("NSTAT_HISTORY", &hist).output().unwrap();
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        o.status.code(),
        std::fs::read_to_string(&hist).unwrap_or_default(),
    )
}

#[test]
fn the_shim_answers_as_iproute2_nstat() {
    if !have("nstat") || !have("python3") {
        eprintln!("skipped: needs iproute2's nstat and python3 on PATH");
        return;
    }
    let dir = std::env::temp_dir().join(format!("trc-nstat-shim-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let shim: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/nstat.py");
    let names: Vec<String> = kernel_counters().map(String::from).collect();
    // Counters move between invocations: every 7th counter by its round, a few by more.
    let values = |round: u64| -> Vec<(String, u64)> {
        names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let i = i as u64;
                let v = if i.is_multiple_of(7) {
                    round * (i % 5)
                } else if i.is_multiple_of(11) {
                    3
                } else {
                    0
                };
                (n.clone(), v)
            })
            .collect()
    };
    let calls: &[&[&str]] = &[
        &["-n"],
        &[],
        &["-z"],
        &["-a"],
        &[
            "-asz",
            "TcpExtTCPLossProbes",
            "TcpExt*Undo",
            "TcpRetransSegs",
        ],
        &["-s", "Tcp*"],
        &["Ip*", "-z"],
        &["-j"],
        &["-jpz", "TcpExtTCPSackRecovery", "IpInReceives"],
        &["--ignore", "--zeros", "Udp*"],
        &["-r", "TcpExt*"],
        &[],
        &["-x"],
        &["-t", "0"],
        &["--noupdate", "--nooutput"],
        &["-azs"],
    ];
    let mut failures = Vec::new();
    for (round, args) in calls.iter().enumerate() {
        proc_files(&dir, &values(round as u64));
        let real = run(true, &dir, &shim, args);
        let model = run(false, &dir, &shim, args);
        if real != model {
            failures.push(format!(
                "nstat {}:\n--- iproute2 (exit {:?})\n{}--- history\n{}--- shim (exit {:?})\n{}--- history\n{}",
                args.join(" "),
                real.1,
                real.0,
                real.2,
                model.1,
                model.0,
                model.2
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
