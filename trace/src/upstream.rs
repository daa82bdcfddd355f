//! Scripts in the forms upstream takes (`trc check --out DIR --format gtest|selftest`, and the
//! same for `trc kernel check`'s shrunk scripts): a script as trc writes it, rewritten
//!
//! * **gtest**: for google/packetdrill's `gtests/net/tcp/<topic>/`. Their `../common/defaults.sh`
//!   sets the namespace's sysctls, so the script sets only the ones whose value differs from it
//!   (a `sysctl -q` line in the defaults command, their convention); congestion control is chosen
//!   in the script (`setsockopt(..., TCP_CONGESTION, ...)` on the listener, as trc writes it);
//!   every step keeps its comment.
//! * **selftest**: for the kernel's `tools/testing/selftests/net/packetdrill/`: an SPDX line,
//!   `./defaults.sh` (the selftests' own, beside the script), a `tcp_` file name. Its
//!   `ksft_runner.sh` runs each script as IPv4, IPv6 and IPv4-mapped IPv6, and run_all.py runs
//!   the gtests the same way (unless the name ends in `v4.pkt`/`v6.pkt`), so both forms must not
//!   depend on the IP version.
//!
//! What trc writes that depends on the IP version, and what becomes of it:
//! * `ip route change 192.0.2.1 via 192.168.0.1 dev tun0 initcwnd N` (the model's initial window,
//!   read from the route at the SYN): nothing when N is the kernel's `TCP_INIT_CWND` (10);
//!   otherwise a line that changes every gateway route on `tun0` of either family (packetdrill
//!   installs one: IPv4 in the ipv4 and ipv4-mapped-ipv6 modes, IPv6 in the ipv6 mode).
//! * Anything else that names an address or a family (other shell lines with an IPv4 address or
//!   `ip -4`/`ip -6`, `IPPROTO_IP`/`SOL_IP`/`IPPROTO_IPV6` socket options, ICMP packets,
//!   `--ip_version`/`--local_ip`-style option lines, other route attributes) is refused:
//!   [`Unsupported`], never a silently wrong script.

use std::fmt;

/// The form of a written script.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// trc's own (what `trc check --out` writes without `--format`): `./defaults.sh` is trc's
    /// (written beside it), settings explicit, IPv4 (trc's kernel runner).
    Trc,
    /// google/packetdrill's gtests/net/tcp.
    Gtest,
    /// The kernel's tools/testing/selftests/net/packetdrill.
    Selftest,
}

impl Form {
    /// The names `--format` takes.
    pub const NAMES: [&'static str; 3] = ["trc", "gtest", "selftest"];

    pub fn parse(s: &str) -> Option<Form> {
        match s {
            "trc" => Some(Form::Trc),
            "gtest" => Some(Form::Gtest),
            "selftest" => Some(Form::Selftest),
            _ => None,
        }
    }

    /// The name `--format` takes for it.
    pub fn name(self) -> &'static str {
        match self {
            Form::Trc => "trc",
            Form::Gtest => "gtest",
            Form::Selftest => "selftest",
        }
    }

    /// The defaults command of the form (relative to the script's directory).
    fn defaults(self) -> &'static str {
        match self {
            Form::Trc | Form::Selftest => "./defaults.sh",
            Form::Gtest => "../common/defaults.sh",
        }
    }

    /// The script's file name for stem `stem` (`I1-linux-6.18`): gtests' names are lower-case
    /// with dashes; the selftests' start with `tcp_` and use `_` between words.
    pub fn file_name(self, stem: &str) -> String {
        match self {
            Form::Trc => format!("{stem}.pkt"),
            Form::Gtest => format!("{}.pkt", stem.to_ascii_lowercase()),
            Form::Selftest => format!(
                "tcp_{}.pkt",
                stem.to_ascii_lowercase().replace(['-', '.'], "_")
            ),
        }
    }
}

/// Something of the script that the form cannot express independently of the IP version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unsupported(pub String);

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unsupported: {}", self.0)
    }
}

impl std::error::Error for Unsupported {}

/// `net.ipv4.*` values every upstream script starts from: what both `defaults.sh` (gtests'
/// `gtests/net/common/defaults.sh` and the selftests' `defaults.sh`, identical in these) set,
/// and, for the ones they leave alone, a fresh network namespace's kernel default. A script in
/// an upstream form sets only the sysctls whose value differs. `tests/upstream.rs` checks the
/// `defaults.sh` entries against both files.
pub const UPSTREAM_SYSCTLS: &[(&str, &str, Origin)] = &[
    ("tcp_timestamps", "1", Origin::DefaultsSh),
    ("tcp_frto", "2", Origin::DefaultsSh),
    ("tcp_sack", "1", Origin::DefaultsSh),
    ("tcp_dsack", "1", Origin::DefaultsSh),
    ("tcp_reordering", "3", Origin::DefaultsSh),
    ("tcp_slow_start_after_idle", "0", Origin::DefaultsSh),
    ("tcp_early_retrans", "4", Origin::DefaultsSh),
    ("tcp_recovery", "1", Origin::DefaultsSh),
    ("tcp_ecn", "0", Origin::DefaultsSh),
    // TCP_MAX_REORDERING's per-namespace default (tcp_sk_init); defaults.sh does not set it.
    ("tcp_max_reordering", "300", Origin::Namespace),
];

/// Where an [`UPSTREAM_SYSCTLS`] value comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    DefaultsSh,
    Namespace,
}

/// The kernel's initial window when the route sets none (`TCP_INIT_CWND`).
const TCP_INIT_CWND: u32 = 10;

/// `script` (as trc writes it: an export, a shrunk script) in `form`.
pub fn convert(script: &str, form: Form) -> Result<String, Unsupported> {
    if form == Form::Trc {
        return Ok(script.to_string());
    }
    let stmts = statements(script);
    check_statements(&stmts)?;
    let mut out = String::new();
    if form == Form::Selftest {
        out.push_str("// SPDX-License-Identifier: GPL-2.0\n");
    }
    // Sysctls set before the first packet move into the defaults command (gtests' convention);
    // later ones stay where they are.
    let mut early_sysctls: Vec<String> = Vec::new();
    let mut defaults_at: Option<usize> = None;
    let mut seen_packet = false;
    let mut body: Vec<String> = Vec::new();
    for st in &stmts {
        match st {
            Stmt::Comment(c) if trc_only_comment(c) => {}
            Stmt::Other(text) => {
                seen_packet |= is_packet(text);
                body.push(text.clone());
            }
            Stmt::Comment(c) => body.push(c.clone()),
            Stmt::Shell { prefix, cmd } => match rewrite_shell(cmd)? {
                Shell::Defaults => {
                    defaults_at = Some(body.len());
                    body.push(String::new());
                }
                Shell::Sysctls(a) if a.is_empty() => {}
                Shell::Sysctls(a) if !seen_packet && defaults_at.is_some() => {
                    early_sysctls.extend(a)
                }
                Shell::Sysctls(a) => body.push(format!("{prefix}`sysctl -q {}`", a.join(" "))),
                Shell::Initcwnd(c) => {
                    body.push(
                        "// the initial window: the route's initcwnd (read at the SYN), either family"
                            .into(),
                    );
                    body.push(format!("{prefix}`{c}`"));
                }
                Shell::Keep(c) => body.push(format!("{prefix}`{c}`")),
                Shell::Drop => {}
            },
        }
    }
    let defaults_line = if early_sysctls.is_empty() {
        format!("`{}`", form.defaults())
    } else {
        format!(
            "`{}\nsysctl -q {}`",
            form.defaults(),
            early_sysctls.join(" ")
        )
    };
    match defaults_at {
        Some(i) => body[i] = defaults_line,
        None => {
            return Err(Unsupported(
                "a script without a defaults.sh line (its sysctls would be the host's)".into(),
            ))
        }
    }
    // The header (the comments before the first statement) and a line on the IP versions.
    let first_code = body
        .iter()
        .position(|l| !l.trim().is_empty() && !l.trim_start().starts_with("//"))
        .unwrap_or(0);
    for (i, l) in body.iter().enumerate() {
        if i == first_code {
            out.push_str(
                "// It depends on no IP version: the runner runs it as IPv4, IPv6 and IPv4-mapped IPv6.\n\n",
            );
        }
        out.push_str(l);
        out.push('\n');
    }
    Ok(out)
}

/// A statement of a script, as far as the conversion needs to tell them apart.
#[derive(Debug)]
enum Stmt {
    Comment(String),
    /// A shell command: the text before its opening backtick (indentation and time) and the
    /// command (between the backticks, possibly several lines).
    Shell {
        prefix: String,
        cmd: String,
    },
    /// Any other line, verbatim.
    Other(String),
}

/// The script's statements: comment lines, shell commands (joined across lines), other lines.
fn statements(script: &str) -> Vec<Stmt> {
    let mut out = Vec::new();
    let mut lines = script.lines();
    while let Some(line) = lines.next() {
        let t = line.trim_start();
        if t.starts_with("//") {
            out.push(Stmt::Comment(line.to_string()));
            continue;
        }
        let Some(open) = shell_open(line) else {
            out.push(Stmt::Other(line.to_string()));
            continue;
        };
        let prefix = line[..open].to_string();
        let mut rest = line[open + 1..].to_string();
        while !rest.contains('`') {
            match lines.next() {
                Some(l) => {
                    rest.push('\n');
                    rest.push_str(l);
                }
                None => break,
            }
        }
        let cmd = match rest.find('`') {
            Some(close) => rest[..close].to_string(),
            None => rest,
        };
        out.push(Stmt::Shell { prefix, cmd });
    }
    out
}

/// Where a line's shell command opens: after optional blanks and a time (`+0`, `0.1`,
/// `+.1~+.2`, `*`), a backtick.
fn shell_open(line: &str) -> Option<usize> {
    let i = line.find('`')?;
    let head = line[..i].trim();
    let timeish = head
        .chars()
        .all(|c| c.is_ascii_digit() || matches!(c, '+' | '-' | '.' | '~' | '*'));
    timeish.then_some(i)
}

/// Whether a non-comment line is a packet line (`<` inbound or `>` outbound, after the time).
fn is_packet(text: &str) -> bool {
    let t = text.trim_start();
    let after_time = t.trim_start_matches(|c: char| {
        c.is_ascii_digit() || matches!(c, '+' | '-' | '.' | '~' | '*')
    });
    let a = after_time.trim_start();
    a.starts_with('<') || a.starts_with('>')
}

/// trc's explanation of its own conventions, which an upstream form does not have (its TS vals
/// are mapped by packetdrill as any script's are; its spacing is the script's).
fn trc_only_comment(c: &str) -> bool {
    let t = c.trim_start().trim_start_matches('/').trim_start();
    t.starts_with("model segment k = ")
        || t.starts_with("timing: inbound ACKs keep")
        || t.starts_with("kernel-runnable: every event")
        || t.starts_with("sysctls as configured;")
}

/// What becomes of a shell command.
enum Shell {
    /// The defaults command (its path is the form's).
    Defaults,
    /// A `sysctl -q` command: the assignments whose value differs from [`UPSTREAM_SYSCTLS`].
    Sysctls(Vec<String>),
    /// The route's initcwnd, set for either family.
    Initcwnd(String),
    /// Kept as it is.
    Keep(String),
    /// Not needed in the form (the route's initcwnd is the kernel's default).
    Drop,
}

fn rewrite_shell(cmd: &str) -> Result<Shell, Unsupported> {
    let c = cmd.trim();
    if c.ends_with("defaults.sh") && !c.contains(char::is_whitespace) {
        return Ok(Shell::Defaults);
    }
    let words: Vec<&str> = c.split_whitespace().collect();
    if words.len() > 2 && words[0] == "sysctl" && words[1] == "-q" && !c.contains('\n') {
        let mut keep = Vec::new();
        for a in &words[2..] {
            let Some((k, v)) = a.split_once('=') else {
                return Ok(Shell::Keep(c.to_string()));
            };
            let short = k.trim_start_matches("net.ipv4.");
            let default = UPSTREAM_SYSCTLS.iter().find(|(n, _, _)| *n == short);
            if default.map(|(_, d, _)| *d) != Some(v) {
                keep.push(a.to_string());
            }
        }
        return Ok(Shell::Sysctls(keep));
    }
    if words.len() > 2 && words[0] == "ip" && words[1] == "route" {
        return route_initcwnd(c, &words).map(|n| match n {
            TCP_INIT_CWND => Shell::Drop,
            n => Shell::Initcwnd(initcwnd_any_family(n)),
        });
    }
    if let Some(w) = words.iter().find(|w| names_ipv4_address(w)) {
        return Err(Unsupported(format!(
            "shell line `{c}`: `{w}` is an IPv4 address (the script must run as IPv6 too)"
        )));
    }
    if words
        .windows(2)
        .any(|w| w[0] == "ip" && matches!(w[1], "-4" | "-6"))
    {
        return Err(Unsupported(format!(
            "shell line `{c}`: names an address family"
        )));
    }
    Ok(Shell::Keep(c.to_string()))
}

/// The initcwnd of `ip route change DEST via GW dev tun0 initcwnd N` (trc's line); refused when
/// the line sets more than the initcwnd.
fn route_initcwnd(c: &str, words: &[&str]) -> Result<u32, Unsupported> {
    let refuse = || {
        Unsupported(format!(
            "shell line `{c}`: only a route's initcwnd can be set for every IP version"
        ))
    };
    let pos = words
        .iter()
        .position(|w| *w == "initcwnd")
        .ok_or_else(refuse)?;
    let n: u32 = words
        .get(pos + 1)
        .and_then(|w| w.parse().ok())
        .ok_or_else(refuse)?;
    let known = [
        "ip", "route", "change", "replace", "via", "dev", "tun0", "initcwnd",
    ];
    // The value of initcwnd, trc's words, the addresses, and the destination (`default`).
    let allowed = |i: usize, w: &str| {
        i == pos + 1 || known.contains(&w) || names_ipv4_address(w) || (i == 3 && i < pos)
    };
    let extra = words.iter().enumerate().any(|(i, w)| !allowed(i, w));
    if extra || pos + 2 != words.len() {
        return Err(refuse());
    }
    Ok(n)
}

/// A shell line setting initcwnd `n` on the gateway route packetdrill installs on `tun0`,
/// whichever the family: packetdrill routes the remote address through the gateway on `tun0`
/// (IPv4 in the ipv4 and ipv4-mapped-ipv6 modes, IPv6 in the ipv6 mode); the loop changes the
/// one that exists. The kernel reads the route's initcwnd at the SYN.
pub fn initcwnd_any_family(n: u32) -> String {
    format!(
        "for f in -4 -6; do ip $f route show dev tun0 | grep ' via ' | while read -r r; do ip $f route change $r dev tun0 initcwnd {n}; done; done"
    )
}

/// Whether a word contains a dotted-quad IPv4 address (`192.0.2.1`, `192.0.2.0/24`).
fn names_ipv4_address(w: &str) -> bool {
    w.split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .any(|part| {
            let q: Vec<&str> = part.split('.').collect();
            q.len() == 4
                && q.iter().all(|x| {
                    !x.is_empty() && x.len() <= 3 && x.parse::<u16>().is_ok_and(|v| v < 256)
                })
        })
}

/// Refuses statements that name an address family or protocol outside TCP.
fn check_statements(stmts: &[Stmt]) -> Result<(), Unsupported> {
    for st in stmts {
        let Stmt::Other(text) = st else { continue };
        let t = text.trim();
        if t.starts_with("--") {
            let opt = t.split(['=', ' ']).next().unwrap_or(t);
            if matches!(
                opt,
                "--ip_version"
                    | "--local_ip"
                    | "--remote_ip"
                    | "--gateway_ip"
                    | "--netmask_ip"
                    | "--mtu"
            ) {
                return Err(Unsupported(format!(
                    "option line `{t}`: the runner sets the IP version and addresses"
                )));
            }
        }
        for level in ["IPPROTO_IPV6", "IPPROTO_IP,", "SOL_IPV6", "SOL_IP,"] {
            if t.contains(level) {
                return Err(Unsupported(format!(
                    "`{t}`: an IP-level socket option ({}) differs between IPv4 and IPv6",
                    level.trim_end_matches(',')
                )));
            }
        }
        if is_packet(t) && t.split_whitespace().any(|w| w.starts_with("icmp")) {
            return Err(Unsupported(format!(
                "`{t}`: ICMP differs between IPv4 and IPv6"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRC: &str = "\
// trc counterexample: I1: no undo after a real loss
// model segment k = bytes 1+1000k .. 1+1000(k+1); TS vals are labels (the runner maps them to the kernel's)
// timing: inbound ACKs keep the model's time differences, at least 3 ms apart; timer-driven sends are `~` ranges
// kernel-runnable: every event of the trace can be reproduced by a real kernel (dropped packets are simply never ACKed)

`./defaults.sh`

    +0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
    +0 setsockopt(3, IPPROTO_TCP, TCP_CONGESTION, \"cubic\", 5) = 0
// one MSS per skb, as the model has it
    +0 `ip link set dev tun0 gso_max_segs 1`
// sysctls as configured; the route's initcwnd is the model's initial window (read at the SYN)
    +0 `sysctl -q net.ipv4.tcp_frto=2 net.ipv4.tcp_early_retrans=3 net.ipv4.tcp_reordering=3 net.ipv4.tcp_max_reordering=300`
    +0 `ip route change 192.0.2.1 via 192.168.0.1 dev tun0 initcwnd 5`
    +0 < S 0:0(0) win 32792 <mss 1012,sackOK,TS val 100 ecr 0,nop,wscale 7>
// step 1 (model t=50 ms): seg 2 is delivered; its ACK arrives
  +.05 < . 1:1(0) ack 1 win 320 <nop,nop,TS val 151 ecr 200,nop,nop,sack 1001:2001>
    +0 %{ assert tcpi_ca_state == TCP_CA_Disorder, tcpi_ca_state }%
    +0 `nstat -a | grep TcpExtTCPDSACKUndo | grep -q \" 1 \"`
";

    #[test]
    fn gtest_form_relies_on_defaults_sh_and_sets_only_what_differs() {
        let g = convert(TRC, Form::Gtest).unwrap();
        assert!(
            g.contains("`../common/defaults.sh\nsysctl -q net.ipv4.tcp_early_retrans=3`"),
            "{g}"
        );
        assert!(!g.contains("tcp_frto"), "{g}");
        assert!(!g.contains("tcp_max_reordering"), "{g}");
        assert!(!g.contains("tcp_reordering"), "{g}");
        assert!(!g.contains("sysctls as configured"), "{g}");
        assert!(!g.contains("model segment k"), "{g}");
        assert!(!g.contains("192.0.2.1"), "{g}");
        assert!(g.contains(&initcwnd_any_family(5)), "{g}");
        assert!(g.contains("TCP_CONGESTION, \"cubic\""), "{g}");
        assert!(g.contains("// step 1 (model t=50 ms)"), "{g}");
        assert!(
            g.contains("`nstat -a | grep TcpExtTCPDSACKUndo | grep -q \" 1 \"`"),
            "{g}"
        );
        assert!(!g.starts_with("// SPDX"), "{g}");
        // Still a script packetdrill (and trc) reads.
        trc_pkt::parse(&g, "g.pkt").unwrap();
    }

    #[test]
    fn selftest_form_has_spdx_and_the_selftests_defaults() {
        let s = convert(TRC, Form::Selftest).unwrap();
        assert!(
            s.starts_with("// SPDX-License-Identifier: GPL-2.0\n// trc counterexample"),
            "{s}"
        );
        assert!(
            s.contains("`./defaults.sh\nsysctl -q net.ipv4.tcp_early_retrans=3`"),
            "{s}"
        );
        assert!(!s.contains("192.168.0.1"), "{s}");
        trc_pkt::parse(&s, "s.pkt").unwrap();
        assert_eq!(
            Form::Selftest.file_name("I1-linux-6.18"),
            "tcp_i1_linux_6_18.pkt"
        );
        assert_eq!(Form::Gtest.file_name("I1-linux-6.18"), "i1-linux-6.18.pkt");
    }

    #[test]
    fn the_default_initcwnd_needs_no_route_line() {
        let t = TRC.replace("initcwnd 5", "initcwnd 10");
        let s = convert(&t, Form::Selftest).unwrap();
        assert!(!s.contains("initcwnd"), "{s}");
        assert!(!s.contains("ip route"), "{s}");
    }

    #[test]
    fn what_depends_on_the_ip_version_is_refused() {
        let cases = [
            (
                "`ip route change 192.0.2.1 via 192.168.0.1 dev tun0 advmss 600 initcwnd 5`",
                "only a route's initcwnd",
            ),
            ("`ping -c 1 192.0.2.1`", "is an IPv4 address"),
            ("`ip -4 addr show dev tun0`", "names an address family"),
            (
                "+0 setsockopt(4, IPPROTO_IP, IP_TOS, [4], 4) = 0",
                "IP-level socket option (IPPROTO_IP)",
            ),
            (
                "+0 setsockopt(4, SOL_IPV6, IPV6_TCLASS, [4], 4) = 0",
                "IP-level socket option (SOL_IPV6)",
            ),
            (
                "+0 < icmp unreachable frag_needed mtu 1200 [1:1001(1000)]",
                "ICMP",
            ),
            ("--ip_version=ipv4", "the runner sets the IP version"),
        ];
        for (line, why) in cases {
            let t = format!("{TRC}    +0 {line}\n")
                .replace("+0 +0", "+0")
                .replace("+0 --", "--");
            for form in [Form::Gtest, Form::Selftest] {
                let e = convert(&t, form).unwrap_err();
                assert!(e.to_string().starts_with("unsupported: "), "{e}");
                assert!(e.0.contains(why), "{line}: {e}");
            }
        }
        // trc's own form is the script as written.
        assert_eq!(convert(TRC, Form::Trc).unwrap(), TRC);
    }

    #[test]
    fn ipv4_addresses_are_recognised() {
        assert!(names_ipv4_address("192.0.2.1"));
        assert!(names_ipv4_address("192.0.2.0/24"));
        assert!(names_ipv4_address("src=10.0.0.1"));
        assert!(!names_ipv4_address("1.2.3"));
        assert!(!names_ipv4_address("net.ipv4.tcp_frto=2"));
        assert!(!names_ipv4_address("0.5.300.1"));
    }

    #[test]
    fn a_script_without_defaults_is_refused() {
        let t = TRC.replace("`./defaults.sh`", "");
        assert!(convert(&t, Form::Gtest)
            .unwrap_err()
            .0
            .contains("defaults.sh"));
    }
}
