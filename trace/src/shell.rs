//! What a script's shell line means to the model. The forms kernel developers use to configure a
//! test (packetdrill's `defaults.sh`, `sysctl`, the gtests' `set_sysctls.py`, `ip route ...
//! initcwnd`, a `tc` qdisc, module parameters) configure the model and are not run; commands
//! that need no kernel — `nstat`, answered from the model's counters, and text tools (`awk`,
//! `grep`, `tee`, ...) — are run by `/bin/sh` ([`crate::model_shell`]); anything else that needs
//! the kernel is not modelled, and the replay stops there with its name.

/// The effect of one simple command on the model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// `../common/defaults.sh` (and the selftests' `./defaults.sh`): the namespace defaults.
    Defaults,
    /// Sysctls set (`net.ipv4.tcp_sack`, value).
    Sysctl(Vec<(String, String)>),
    /// `echo V > /sys/module/M/parameters/P`: a module parameter (machine-wide on a kernel).
    ModuleParam {
        module: String,
        param: String,
        value: String,
    },
    /// The route's `initcwnd`.
    InitCwnd(u32),
    /// A command the shell runs: `nstat` (the model's counters) and tools that need no kernel.
    Run,
    /// `sleep S`: the script's clock moves on (µs).
    Sleep(i64),
    /// `: trc-model-only EVENT` (exported model-only events, no-ops on a kernel).
    ModelOnly(String),
    /// No effect on the connection (a note why).
    None(String),
    /// A command that only reads the kernel (`ss`): the line is not evaluated, the replay goes on.
    Unchecked(String),
    /// Something the model does not model, that may change the connection.
    NotModelled(String),
}

/// How a simple command is joined to the one before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sep {
    /// First command, or after a newline or `;`: runs whatever came before.
    Seq,
    /// After `&&`: runs only if the command before succeeded.
    And,
    /// After `||`: runs only if the command before failed.
    Or,
}

/// A shell line split into simple commands (at newlines, `;`, `&&` and `||` outside quotes;
/// `#` comments dropped; a backslash-newline continues the line), each with the separator
/// before it.
pub fn commands(line: &str) -> Vec<(Sep, String)> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut sep = Sep::Seq;
    let mut quote: Option<char> = None;
    let mut chars = line.chars().peekable();
    let mut comment = false;
    let push = |out: &mut Vec<(Sep, String)>, cur: &mut String, sep: Sep| {
        let c = std::mem::take(cur);
        if !c.trim().is_empty() {
            out.push((sep, c.trim().to_string()));
        }
    };
    while let Some(c) = chars.next() {
        if comment {
            if c == '\n' {
                comment = false;
                push(&mut out, &mut cur, sep);
                sep = Sep::Seq;
            }
            continue;
        }
        if c == '\\' && quote != Some('\'') && chars.peek() == Some(&'\n') {
            // sh removes a backslash-newline pair entirely.
            chars.next();
            continue;
        }
        if let Some(q) = quote {
            cur.push(c);
            if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '\'' | '"' => {
                quote = Some(c);
                cur.push(c);
            }
            '#' if cur.is_empty() || cur.ends_with(char::is_whitespace) => comment = true,
            '\n' | ';' => {
                push(&mut out, &mut cur, sep);
                sep = Sep::Seq;
            }
            '&' if chars.peek() == Some(&'&') => {
                chars.next();
                push(&mut out, &mut cur, sep);
                sep = Sep::And;
            }
            '|' if chars.peek() == Some(&'|') => {
                chars.next();
                push(&mut out, &mut cur, sep);
                sep = Sep::Or;
            }
            _ => cur.push(c),
        }
    }
    push(&mut out, &mut cur, sep);
    out
}

/// The simple commands of a shell line (see [`commands`]), without their separators.
pub fn simple_commands(line: &str) -> Vec<String> {
    commands(line).into_iter().map(|(_, c)| c).collect()
}

/// Words of a simple command, quotes removed.
fn words(cmd: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut any = false;
    for c in cmd.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                any = true;
            }
            (None, c) if c.is_whitespace() => {
                if !cur.is_empty() || any {
                    out.push(std::mem::take(&mut cur));
                }
                any = false;
            }
            (None, c) => cur.push(c),
        }
    }
    if !cur.is_empty() || any {
        out.push(cur);
    }
    out
}

/// The effect of one simple command.
pub fn interpret(cmd: &str) -> Effect {
    let w = words(cmd);
    let Some(first) = w.first().map(String::as_str) else {
        return Effect::None(String::new());
    };
    let name = first.rsplit('/').next().unwrap_or(first);
    match name {
        _ if name.ends_with("defaults.sh") => Effect::Defaults,
        "sysctl" => sysctl(&w[1..]),
        "set_sysctls.py" => Effect::Sysctl(
            w[1..]
                .iter()
                .filter_map(|a| a.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        ),
        "ip" => ip(&w[1..], cmd),
        "tc" => tc(&w[1..], cmd),
        "sleep" => match w.get(1).and_then(|s| s.parse::<f64>().ok()) {
            Some(s) if (0.0..3600.0).contains(&s) => Effect::Sleep((s * 1e6) as i64),
            _ => Effect::NotModelled(format!("`{cmd}`: an unreadable sleep")),
        },
        ":" if w.get(1).map(String::as_str) == Some("trc-model-only") => {
            Effect::ModelOnly(w.get(2).cloned().unwrap_or_default())
        }
        ":" | "true" => Effect::None(String::new()),
        "echo" if redirects_to_setting(&w[1..]) => echo(&w[1..], cmd),
        "ss" => Effect::Unchecked(format!(
            "`{}`: socket statistics come from the kernel (the model's are tcpi_* in %{{ }}% blocks)",
            first_line(cmd)
        )),
        _ if first.starts_with("/tmp/sysctl_restore_") => {
            Effect::None("restores the sysctls set_sysctls.py changed".into())
        }
        _ => runnable(cmd),
    }
}

/// Commands that need no kernel: the shell runs them ([`Effect::Run`]). `nstat` answers from
/// the model's counters ([`crate::model_shell`]); the rest are text tools and shell builtins.
const RUNNABLE: &[&str] = &[
    "nstat", "awk", "mawk", "gawk", "grep", "egrep", "fgrep", "sed", "tee", "cat", "echo",
    "printf", "test", "[", "true", "false", "wc", "head", "tail", "sort", "uniq", "cut", "tr",
    "expr", "seq", "exit", "return", "read", "set", "export", "local", "shift", "ls",
];

/// Shell reserved words that may begin a part of a line: the command after them is what runs.
const RESERVED: &[&str] = &[
    "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}",
];

/// A command line (a pipeline, maybe with command substitutions) the shell may run for the
/// model: every program in it is [`RUNNABLE`], and it touches no kernel setting.
fn runnable(cmd: &str) -> Effect {
    match programs(cmd) {
        Err(why) => Effect::NotModelled(format!("`{}`: {why}", first_line(cmd))),
        Ok(progs) => match progs.iter().find(|p| !RUNNABLE.contains(&p.as_str())) {
            Some(p) => Effect::NotModelled(format!(
                "shell command `{p}` needs the kernel (the model runs only nstat and text tools): `{}`",
                first_line(cmd)
            )),
            None if writes_kernel_file(cmd) => Effect::NotModelled(format!(
                "`{}`: writes a kernel file the model does not read this way",
                first_line(cmd)
            )),
            None if cmd.contains("/proc/") || cmd.contains("/sys/") => Effect::Unchecked(format!(
                "`{}`: reads the kernel's /proc or /sys, which the model does not have",
                first_line(cmd)
            )),
            None => Effect::Run,
        },
    }
}

/// A redirection (`>`, `>>`) into `/proc` or `/sys`.
fn writes_kernel_file(cmd: &str) -> bool {
    cmd.match_indices('>').any(|(i, _)| {
        let rest = cmd[i..].trim_start_matches('>').trim_start();
        rest.starts_with("/proc/") || rest.starts_with("/sys/")
    })
}

fn first_line(cmd: &str) -> &str {
    cmd.lines().next().unwrap_or("")
}

/// Why the programs of a command line are not known.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum Unparsed {
    /// `(`, `)` or `&`.
    #[error("`{0}`: subshells and background jobs are not run for the model")]
    Subshell(char),
    #[error("an unterminated `$(`")]
    Unterminated,
}

/// The programs a command line runs: the first word of each pipeline stage (after variable
/// assignments and reserved words), and those of its command substitutions (`$(...)`, backquotes).
fn programs(cmd: &str) -> Result<Vec<String>, Unparsed> {
    let mut progs = Vec::new();
    let mut stage = String::new();
    let mut chars = cmd.chars().peekable();
    let mut quote: Option<char> = None;
    let mut stages = Vec::new();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some('\''), '\'') => quote = None,
            (Some('\''), _) => {}
            (_, '$') if chars.peek() == Some(&'(') => {
                chars.next();
                let inner = balanced(&mut chars)?;
                for (_, part) in commands(&inner) {
                    progs.extend(programs(&part)?);
                }
                stage.push('_');
                continue;
            }
            (_, '`') => {
                let inner: String = chars.by_ref().take_while(|&c| c != '`').collect();
                for (_, part) in commands(&inner) {
                    progs.extend(programs(&part)?);
                }
                stage.push('_');
                continue;
            }
            (Some('"'), '"') => quote = None,
            (None, '\'' | '"') => quote = Some(c),
            (None, '|') => {
                stages.push(std::mem::take(&mut stage));
                continue;
            }
            (None, '(' | ')' | '&') => return Err(Unparsed::Subshell(c)),
            _ => {}
        }
        stage.push(c);
    }
    stages.push(stage);
    for st in &stages {
        let w = words(st);
        let mut it = w.iter().skip_while(|x| {
            RESERVED.contains(&x.as_str()) || (x.contains('=') && !x.starts_with('='))
        });
        match it.next() {
            Some(p) if p == "for" || p == "case" || p == "esac" => {}
            Some(p) => progs.push(p.rsplit('/').next().unwrap_or(p).to_string()),
            None => {}
        }
    }
    Ok(progs)
}

/// The text up to the `)` that closes an opened `$(` (nested parentheses and quotes kept).
fn balanced(chars: &mut std::iter::Peekable<std::str::Chars>) -> Result<String, Unparsed> {
    let (mut depth, mut quote, mut out) = (1, None::<char>, String::new());
    for c in chars.by_ref() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '(') => depth += 1,
            (None, ')') => {
                depth -= 1;
                if depth == 0 {
                    return Ok(out);
                }
            }
            _ => {}
        }
        out.push(c);
    }
    Err(Unparsed::Unterminated)
}

/// `echo V > /proc/sys/...` or `> /sys/module/...`: a setting, not output.
fn redirects_to_setting(args: &[String]) -> bool {
    args.iter()
        .position(|a| a == ">" || a == ">>")
        .and_then(|i| args.get(i + 1))
        .is_some_and(|t| t.starts_with("/proc/sys/") || t.starts_with("/sys/module/"))
}

fn sysctl(args: &[String]) -> Effect {
    let set: Vec<(String, String)> = args
        .iter()
        .filter(|a| !a.starts_with('-'))
        .filter_map(|a| a.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    if set.is_empty() {
        Effect::None("sysctl read: no effect".into())
    } else {
        Effect::Sysctl(set)
    }
}

fn ip(args: &[String], cmd: &str) -> Effect {
    // `ip link set dev tun0 gso_max_segs 1`: one MSS per skb, the model's own assumption.
    let gso = args
        .iter()
        .position(|a| a == "gso_max_segs")
        .and_then(|i| args.get(i + 1));
    if args.first().map(String::as_str) == Some("link") && gso.is_some() {
        return match gso.map(String::as_str) {
            Some("1") if args.len() == 6 => {
                Effect::None("one MSS per skb: what the model assumes".into())
            }
            _ => Effect::NotModelled(format!(
                "`{cmd}`: multi-segment skbs (TSO/GSO sizes) are not modelled"
            )),
        };
    }
    let route = args
        .first()
        .is_some_and(|a| "route".starts_with(a.as_str()) && !a.is_empty() && a.starts_with('r'));
    if !route {
        return Effect::NotModelled(format!(
            "`{cmd}`: only `ip route ... initcwnd N` is modelled"
        ));
    }
    let attrs: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .filter(|a| {
            [
                "advmss",
                "mtu",
                "window",
                "rtt",
                "rttvar",
                "ssthresh",
                "cwnd",
                "reordering",
                "hoplimit",
                "rto_min",
                "features",
                "quickack",
                "fastopen_no_cookie",
                "congctl",
            ]
            .contains(a)
        })
        .collect();
    if !attrs.is_empty() {
        return Effect::NotModelled(format!(
            "`{cmd}`: route attribute {} is not modelled",
            attrs.join(", ")
        ));
    }
    match args
        .iter()
        .position(|a| a == "initcwnd")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse::<u32>().ok())
    {
        Some(n) => Effect::InitCwnd(n),
        None if args
            .iter()
            .any(|a| a == "show" || a == "list" || a == "get") =>
        {
            Effect::None("route lookup: no effect".into())
        }
        None => Effect::NotModelled(format!(
            "`{cmd}`: route changes other than initcwnd are not modelled"
        )),
    }
}

fn tc(args: &[String], cmd: &str) -> Effect {
    let has = |w: &str| args.iter().any(|a| a == w);
    if has("pfifo") && !has("limit") {
        return Effect::None(
            "a pfifo qdisc (what defaults.sh installs): no effect on the model".into(),
        );
    }
    if has("fq") {
        return Effect::NotModelled(format!("`{cmd}`: fq pacing is not modelled"));
    }
    Effect::NotModelled(format!(
        "`{cmd}`: qdisc changes (drops, delays, pacing) are not modelled"
    ))
}

fn echo(args: &[String], cmd: &str) -> Effect {
    if let Some(i) = args.iter().position(|a| a == ">" || a == ">>") {
        let target = args.get(i + 1).map(String::as_str).unwrap_or("");
        if let Some(name) = target.strip_prefix("/proc/sys/") {
            return Effect::Sysctl(vec![(name.replace('/', "."), args[..i].join(" "))]);
        }
        if let Some((module, param)) = target
            .strip_prefix("/sys/module/")
            .and_then(|r| r.split_once("/parameters/"))
        {
            return Effect::ModuleParam {
                module: module.into(),
                param: param.into(),
                value: args[..i].join(" "),
            };
        }
        if target != "/dev/null" {
            return Effect::NotModelled(format!("`{cmd}`: writes a file the model does not know"));
        }
    }
    Effect::None(String::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_and_read_the_common_forms() {
        let cmds = simple_commands("../common/defaults.sh\nsysctl -q net.ipv4.tcp_sack=0  # no SACK\n  ; ip route change 192.0.2.1 dev tun0 initcwnd 5 && nstat -n");
        assert_eq!(
            cmds,
            vec![
                "../common/defaults.sh",
                "sysctl -q net.ipv4.tcp_sack=0",
                "ip route change 192.0.2.1 dev tun0 initcwnd 5",
                "nstat -n"
            ]
        );
        assert_eq!(interpret(&cmds[0]), Effect::Defaults);
        assert_eq!(
            interpret(&cmds[1]),
            Effect::Sysctl(vec![("net.ipv4.tcp_sack".into(), "0".into())])
        );
        assert_eq!(interpret(&cmds[2]), Effect::InitCwnd(5));
        assert_eq!(interpret(&cmds[3]), Effect::Run);
        for run in [
            "nstat | grep TcpExtTCPFullUndo | grep -q \" 1 \"",
            "nstat -asz TcpExtTCPLossProbes TcpRetransSegs | awk '$2 != 1 {exit 1}'",
            "nstat -a | tee /tmp/x | grep -c Undo",
            "test \"$(nstat -as TcpRetransSegs | awk 'NR==2{print $2}')\" -eq 3",
            "if nstat -as | grep -q TcpExtTCPLossUndo",
            "x=$(nstat -as TcpRetransSegs) echo $x",
        ] {
            assert_eq!(interpret(run), Effect::Run, "{run}");
        }
        for not in [
            "nstat | ping -c1 x",
            "ethtool -K tun0 tso off",
            "awk '{print}' > /proc/sys/net/ipv4/tcp_sack",
            "nstat & sleep 1",
            "(nstat)",
            "x=$(ip route show)",
        ] {
            assert!(matches!(interpret(not), Effect::NotModelled(_)), "{not}");
        }
        assert!(matches!(interpret("ss -ti"), Effect::Unchecked(_)));
        assert!(matches!(
            interpret("grep \" 0A \" /proc/net/tcp | grep -q :1F90"),
            Effect::Unchecked(_)
        ));
        assert_eq!(
            commands("a && b || c; d"),
            vec![
                (Sep::Seq, "a".into()),
                (Sep::And, "b".into()),
                (Sep::Or, "c".into()),
                (Sep::Seq, "d".into())
            ]
        );
        assert_eq!(
            simple_commands("sysctl -q net.ipv4.tcp_sack=0 \\\n  net.ipv4.tcp_dsack=0"),
            vec!["sysctl -q net.ipv4.tcp_sack=0   net.ipv4.tcp_dsack=0"]
        );
        assert_eq!(
            interpret("../common/set_sysctls.py /proc/sys/net/ipv4/tcp_slow_start_after_idle=1"),
            Effect::Sysctl(vec![(
                "/proc/sys/net/ipv4/tcp_slow_start_after_idle".into(),
                "1".into()
            )])
        );
        assert_eq!(
            interpret("echo 0 > /proc/sys/net/ipv4/tcp_frto"),
            Effect::Sysctl(vec![("net.ipv4.tcp_frto".into(), "0".into())])
        );
        assert_eq!(interpret("sleep 0.2"), Effect::Sleep(200_000));
        assert!(matches!(
            interpret("tc qdisc add dev tun0 root pfifo"),
            Effect::None(_)
        ));
        assert!(matches!(
            interpret("tc qdisc replace dev tun0 root pfifo limit 0"),
            Effect::NotModelled(_)
        ));
        assert!(matches!(
            interpret("ip route change 192.0.2.1 via 192.168.0.2 dev tun0 advmss 600 initcwnd 11"),
            Effect::NotModelled(_)
        ));
        assert!(matches!(interpret("rm -rf /tmp/x"), Effect::NotModelled(_)));
        assert_eq!(
            interpret(": trc-model-only tsq-fill"),
            Effect::ModelOnly("tsq-fill".into())
        );
        assert!(matches!(
            interpret("ip link set dev tun0 gso_max_segs 1"),
            Effect::None(_)
        ));
        assert!(matches!(
            interpret("ip link set dev tun0 gso_max_segs 4"),
            Effect::NotModelled(_)
        ));
    }
}
