//! What a script's shell line means to the model: the forms kernel developers use to configure
//! a test (packetdrill's `defaults.sh`, `sysctl`, the gtests' `set_sysctls.py`, `ip route ...
//! initcwnd`, a `tc` qdisc) and to read MIB counters (`nstat -n`, then
//! `nstat | grep NAME | grep -q " N "`, as the kernel's packetdrill selftests do). Anything
//! else that may change the connection is not modelled, and the replay stops there.

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
    /// `nstat -n` (or any `nstat` whose output is thrown away): a new baseline.
    NstatReset,
    /// `nstat | grep NAME | grep -q " N "` (`value` N), or `nstat | grep NAME` /
    /// `nstat | grep -q NAME` (`None`: the counter's line is printed at all). `zeros`: `-z`,
    /// counters at 0 are printed too; `absolute`: `-a`, values since the namespace was made
    /// rather than since the last `nstat`. `nstat` without `-s` also takes a new baseline.
    NstatCheck {
        counter: String,
        value: Option<i64>,
        zeros: bool,
        absolute: bool,
    },
    /// `sleep S`: the script's clock moves on (µs).
    Sleep(i64),
    /// `: trc-model-only EVENT` (exported model-only events, no-ops on a kernel).
    ModelOnly(String),
    /// No effect on the connection (a note why).
    None(String),
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
        "nstat" => nstat(cmd),
        "sleep" => match w.get(1).and_then(|s| s.parse::<f64>().ok()) {
            Some(s) if (0.0..3600.0).contains(&s) => Effect::Sleep((s * 1e6) as i64),
            _ => Effect::NotModelled(format!("`{cmd}`: an unreadable sleep")),
        },
        ":" if w.get(1).map(String::as_str) == Some("trc-model-only") => {
            Effect::ModelOnly(w.get(2).cloned().unwrap_or_default())
        }
        ":" | "true" => Effect::None(String::new()),
        "echo" => echo(&w[1..], cmd),
        "ss" | "cat" | "ls" | "printf" => {
            Effect::None(format!("`{name}`: no effect on the connection"))
        }
        _ if first.starts_with("/tmp/sysctl_restore_") => {
            Effect::None("restores the sysctls set_sysctls.py changed".into())
        }
        _ => Effect::NotModelled(format!(
            "shell command `{}` is not modelled and may change the connection's behaviour",
            cmd.lines().next().unwrap_or("")
        )),
    }
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

/// `nstat` in the forms tests use: `nstat -n` / `nstat > /dev/null` (a baseline), and
/// `nstat [-z] [-a] | grep [-q] NAME [| grep -q " N "]` (a check).
fn nstat(cmd: &str) -> Effect {
    let stages: Vec<Vec<String>> = cmd.split('|').map(words).collect();
    let head = &stages[0];
    let flag = |short: &str, long: &str| {
        head.iter().any(|a| {
            a == short
                || a == long
                || (a.starts_with('-')
                    && !a.starts_with("--")
                    && a.contains(short.trim_start_matches('-')))
        })
    };
    let unread = || {
        Effect::NotModelled(format!(
            "`{cmd}`: an nstat pipeline the model does not read"
        ))
    };
    if flag("-s", "--noupdate")
        || flag("-r", "--reset")
        || flag("-d", "--scan")
        || flag("-j", "--json")
    {
        return unread();
    }
    if stages.len() == 1 {
        // Its output goes nowhere a test can check (or to /dev/null): only the new baseline.
        return Effect::NstatReset;
    }
    let pattern = |g: &Vec<String>| -> Option<(String, bool)> {
        if g.first().map(String::as_str) != Some("grep") {
            return None;
        }
        let opts: Vec<&String> = g[1..].iter().filter(|a| a.starts_with('-')).collect();
        if opts
            .iter()
            .any(|o| o.as_str() != "-q" && o.as_str() != "-w")
        {
            return None;
        }
        let pat: Vec<&String> = g[1..].iter().filter(|a| !a.starts_with('-')).collect();
        match pat.as_slice() {
            [p] => Some((p.to_string(), false)),
            // `grep NAME > /dev/null`: output discarded, the status is what matters.
            [p, r, d] if r.as_str() == ">" && d.as_str() == "/dev/null" => {
                Some((p.to_string(), true))
            }
            _ => None,
        }
    };
    let Some((counter, _)) = stages.get(1).and_then(pattern) else {
        return unread();
    };
    if !counter
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return unread();
    }
    let value = match stages.get(2) {
        None => None,
        Some(g) => match pattern(g).and_then(|(p, _)| {
            p.trim()
                .parse::<i64>()
                .ok()
                .filter(|_| p.starts_with(' ') && p.ends_with(' '))
        }) {
            Some(v) => Some(v),
            None => return unread(),
        },
    };
    if stages.len() > 3 {
        return unread();
    }
    Effect::NstatCheck {
        counter,
        value,
        zeros: flag("-z", "--zeros"),
        absolute: flag("-a", "--ignore"),
    }
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
        assert_eq!(interpret(&cmds[3]), Effect::NstatReset);
        let check = |counter: &str, value, zeros, absolute| Effect::NstatCheck {
            counter: counter.into(),
            value,
            zeros,
            absolute,
        };
        assert_eq!(
            interpret("nstat | grep TcpExtTCPFullUndo | grep -q \" 1 \""),
            check("TcpExtTCPFullUndo", Some(1), false, false)
        );
        assert_eq!(
            interpret("nstat | grep TcpExtTCPHystartTrainDetect | grep -q ' 1 '"),
            check("TcpExtTCPHystartTrainDetect", Some(1), false, false)
        );
        assert_eq!(
            interpret("nstat | grep TcpExtTCPLossUndo > /dev/null"),
            check("TcpExtTCPLossUndo", None, false, false)
        );
        assert_eq!(
            interpret("nstat | grep -q TcpExtTCPSpuriousRTOs"),
            check("TcpExtTCPSpuriousRTOs", None, false, false)
        );
        assert_eq!(
            interpret("nstat -az | grep TcpRetransSegs | grep -q \" 0 \""),
            check("TcpRetransSegs", Some(0), true, true)
        );
        assert_eq!(interpret("nstat > /dev/null"), Effect::NstatReset);
        assert!(matches!(
            interpret("nstat | grep -i retrans"),
            Effect::NotModelled(_)
        ));
        assert!(matches!(
            interpret("nstat | grep 'TcpExt.*Undo'"),
            Effect::NotModelled(_)
        ));
        assert!(matches!(
            interpret("nstat -s | grep TcpRetransSegs"),
            Effect::NotModelled(_)
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
