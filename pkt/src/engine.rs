//! The one script engine: packetdrill's meaning of a script, walked statement by statement over a
//! [`Backend`] that does the work — the real kernel (`trc kernel run`) or the model (`trc
//! replay`). Everything both must agree on lives here, once:
//!
//! * the script's `--option` lines and the command line's overrides ([`Settings`]);
//! * time: when each event is due and how far from that it may happen ([`crate::time`]);
//! * the init and cleanup commands (an untimed first / last shell line; the cleanup runs only
//!   after an init command, as in packetdrill), and "the first event is at time 0";
//! * the script ↔ live mapping of sequence numbers (relative to the ISNs), SACK blocks and TS
//!   echoes (an inbound echo must name a TS val the sender used; packetdrill's
//!   `map_inbound_packet`);
//! * outbound matching: the next packets of the connection merged until the line's payload is
//!   reached (TSO/GSO super-packets and their splits, unless `--strict_segments`), headers from
//!   the last fragment, seq and CWR from the first; flags (PSH, ECE, CWR included), seq, ack,
//!   window (when written), urgent pointer, ECN (when written), options exactly (unless
//!   `<...>`; the TS val only with `--tcp_ts_tick_usecs`, the TS echo never), then the time
//!   (packetdrill's `verify_outbound_live_packet` and `do_outbound_script_packet`);
//! * system-call results and errnos (an fd-returning call's non-negative result matches any);
//! * `%{ }%` blocks: the backend's values captured at the block's time, evaluated by Python at
//!   the end ([`crate::python`]);
//! * the report and its verdict ([`crate::report`]).
//!
//! Where packetdrill stops at the first failure, the engine goes on (each line has its own
//! result) and reports the line packetdrill would have stopped at. A backend that cannot go on
//! (the model at an active open, say) halts the walk: the rest is not run, and the run is
//! incomplete.

use crate::ast::{
    Direction, Ecn, Expr, Packet, Script, Statement, StatementKind, Syscall, TcpOptions, Time,
};
use crate::python::{self, Block, Outcome};
use crate::report::{LineKind, LineResult, Report, Status};
use crate::time::{Clock, Due, EventKind, Tolerance};
use crate::wire::{self, WireOption, ACK, CWR, ECE, FIN, PSH, RST, SYN, URG};
use std::collections::{BTreeMap, HashMap};

/// How long past its window (plus tolerance) an expected outbound packet is waited for before
/// the line fails as "not sent" (packetdrill waits at least 2 s; a later packet fails the line
/// either way, on timing).
pub const OUTBOUND_GRACE_US: i64 = 1_000_000;

/// A packet the backend saw leave, in live sequence space.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Captured {
    /// Script µs at which it left (a model: the earliest time it can leave).
    pub at_us: i64,
    /// How much later it may leave than `at_us`, when the backend cannot know (a model's
    /// timer-driven packet: the kernel rounds timers to jiffies and timer-wheel buckets whose
    /// phase the model does not know). 0: exactly at `at_us`.
    pub spread_us: i64,
    pub flags: u8,
    pub seq: u32,
    pub ack: u32,
    pub win: u16,
    pub urg: u16,
    /// IP TOS byte (ECN in the low two bits).
    pub tos: u8,
    pub options: Vec<WireOption>,
    pub payload_len: u32,
    /// Fields the backend does not know (not compared).
    pub unknown: Unknown,
    /// The backend's description (e.g. "retransmission").
    pub note: Option<String>,
    /// Not something the backend decides, only plays along with (the model's SYN-ACK: the
    /// model starts established): the line is *applied*, with this note, not checked.
    pub applied: Option<String>,
}

/// What [`Backend::next_outbound`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Next {
    Packet(Captured),
    /// Nothing was sent by the deadline.
    Timeout,
    /// The backend cannot produce such a packet (the model and a pure ACK): the line is out of
    /// scope.
    OutOfScope(String),
}

/// Header fields a backend cannot know: the model has no PSH, window or IP TOS.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Unknown {
    pub psh: bool,
    pub win: bool,
    pub tos: bool,
}

/// An inbound packet, mapped to live values, for the backend to inject.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LivePacket {
    pub flags: u8,
    pub seq: u32,
    pub ack: u32,
    pub win: u16,
    pub urg: u16,
    pub tos: u8,
    pub options: Vec<WireOption>,
    pub payload_len: u32,
}

/// Why a backend stops the walk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Halt {
    /// SIGINT/SIGTERM.
    Interrupted,
    /// The backend cannot go on (the rest of the script is meaningless to it).
    Stop(String),
    /// The line uses a feature the backend does not implement (a system call, an argument
    /// form, a packet kind): the run stops there with `unsupported: X` (incomplete, never a
    /// failure), and no later line runs.
    Unsupported(String),
}

/// What a backend made of a statement (other than an outbound packet).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome1 {
    pub status: Status,
    pub message: Option<String>,
    pub output: Option<String>,
    pub notes: Vec<String>,
}

impl Outcome1 {
    pub fn applied(note: Option<String>) -> Outcome1 {
        Outcome1 {
            status: Status::Applied,
            message: None,
            output: None,
            notes: note.into_iter().collect(),
        }
    }
    pub fn pass() -> Outcome1 {
        Outcome1 {
            status: Status::Pass,
            message: None,
            output: None,
            notes: Vec::new(),
        }
    }
    pub fn fail(m: impl Into<String>) -> Outcome1 {
        Outcome1 {
            status: Status::Fail,
            message: Some(m.into()),
            output: None,
            notes: Vec::new(),
        }
    }
    pub fn out_of_scope(m: impl Into<String>) -> Outcome1 {
        Outcome1 {
            status: Status::OutOfScope,
            message: Some(m.into()),
            output: None,
            notes: Vec::new(),
        }
    }
}

/// A system call's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SysResult {
    /// It returned: the engine checks the script's result and errno.
    Returned {
        ret: i64,
        errno: i32,
        notes: Vec<String>,
        problems: Vec<String>,
    },
    /// A blocking call (`...end`) is in progress; [`Backend::blocking_result`] tells when it ends.
    Blocked,
    /// Anything else (an input applied to the model, out of scope, ...).
    Other(Outcome1),
}

/// What the backend knows at a `%{ }%` block.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CodeValues {
    /// `tcpi_*` values (and any other name the backend binds; a later pair wins).
    pub values: Vec<(&'static str, u64)>,
    /// `tcpi_*` names it cannot provide.
    pub missing: Vec<&'static str>,
}

/// Why a backend has no values for a `%{ }%` block (packetdrill's words: its `getsockopt` of
/// `TCP_INFO` failed).
#[derive(Debug, thiserror::Error)]
pub enum CodeValuesError {
    #[error("can't find getsockopt to get TCP info: no socket under test")]
    NoSocket,
    #[error("can't find getsockopt to get TCP info: {0}")]
    TcpInfo(#[from] std::io::Error),
}

/// Why an inbound script packet has no live form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InboundError {
    /// A cookie or digest of its options.
    #[error(transparent)]
    Option(#[from] wire::NotHex),
    /// Its TS echo names a TS val no outbound packet carried.
    #[error("unable to infer live TS ecr for script TS ecr {0}; no matching or preceding outbound TS val")]
    TsEcr(u32),
}

/// Context of a system call.
pub struct SysCtx<'a> {
    /// The call has a `...end` time (it may block).
    pub blocking: bool,
    /// `-D` definitions (a word in an argument may name one).
    pub defines: &'a BTreeMap<String, String>,
}

/// What runs a script: the real kernel or the model.
pub trait Backend {
    /// Script µs now.
    fn now_us(&mut self) -> i64;
    /// The first event is about to run: script time 0 is now.
    fn start_clock(&mut self);
    /// Waits until script time `t_us` (the model: runs its timers due before then).
    fn wait_until(&mut self, t_us: i64) -> Result<(), Halt>;
    /// Injects an inbound packet.
    fn inbound(&mut self, p: &LivePacket) -> Result<Outcome1, Halt>;
    /// The next packet of the connection under test, waiting until script time `deadline_us`.
    /// `expect` is the script line being matched (the kernel ignores it; the model needs it to
    /// say it cannot produce such a packet).
    fn next_outbound(&mut self, deadline_us: i64, expect: &Packet) -> Result<Next, Halt>;
    /// Runs a system call.
    fn syscall(&mut self, s: &Syscall, cx: &SysCtx) -> Result<SysResult, Halt>;
    /// The blocking call in progress has returned: (result, errno, script µs).
    fn blocking_result(&mut self) -> Option<(i64, i32, i64)> {
        None
    }
    /// Runs a shell command (`env`: what packetdrill adds to its environment).
    fn shell(&mut self, cmd: &str, env: &[(String, String)]) -> Result<Outcome1, Halt>;
    /// The values a `%{ }%` block reads, now.
    fn code_values(&mut self) -> Result<CodeValues, CodeValuesError>;
    /// Called before every statement (the kernel labels its trace with the line).
    fn statement_begins(&mut self, _line: u32) {}
    /// Called after every statement (the kernel records tcp_info for its trace).
    fn after_statement(&mut self, _line: u32) {}
    /// Called once after the last statement ran (or the run stopped), before anything that
    /// takes time (a blocking call's end, the `%{ }%` blocks' Python): the kernel reads the
    /// counters the last statements left.
    fn statements_done(&mut self) {}
    /// Whether the user asked the run to stop.
    fn interrupted(&self) -> bool {
        false
    }
    /// `Some(why)` when the run's wall-clock limit has passed: the walk stops before the next
    /// statement (incomplete).
    fn time_up(&mut self) -> Option<String> {
        None
    }
}

/// The settings a script runs with: its `--option` lines, then the command line's.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    pub tolerance: Tolerance,
    /// `--strict_segments`: one live packet per outbound line (no merging).
    pub strict_segments: bool,
    /// `--tcp_ts_tick_usecs`: check outbound TS vals at this tick (0: not checked).
    pub ts_tick_usecs: u32,
    /// `--tcp_ts_ecr_scaled`: an inbound echo of an unseen TS val is extrapolated.
    pub ts_ecr_scaled: bool,
    /// `--non_fatal=packet` (packetdrill only warns; trc reports the lines as failed anyway and
    /// notes it).
    pub non_fatal_packet: bool,
    /// `-D NAME=value` definitions.
    pub defines: BTreeMap<String, String>,
    /// The interpreter for `%{ }%` blocks (`--code_command`, default `python3`).
    pub python: String,
    /// An option packetdrill knows whose final value trc cannot run with (`--ip_version=ipv6`,
    /// `--mtu=1520`, `--psp_udp_port=N`, ...): (script line or 0 for the command line, the
    /// option). The run stops before its first line with `unsupported: --option=value`.
    pub unsupported: Option<(u32, String)>,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            tolerance: Tolerance::default(),
            strict_segments: false,
            ts_tick_usecs: 0,
            ts_ecr_scaled: false,
            non_fatal_packet: false,
            defines: BTreeMap::new(),
            python: "python3".into(),
            unsupported: None,
        }
    }
}

/// The command line packetdrill's run_all.py gives its ipv4 variant, which is what trc runs: the
/// addresses (they win over a script's own `--local_ip=...` lines, as any packetdrill command
/// line does) and the `-D` definitions the gtests use. A backend's own command line comes after.
pub fn run_all_ipv4() -> Vec<(String, Option<String>)> {
    let opt = |n: &str, v: &str| (n.to_string(), Some(v.to_string()));
    let mut v = vec![
        opt("ip_version", "ipv4"),
        opt("local_ip", "192.168.0.1"),
        opt("gateway_ip", "192.168.0.1"),
        opt("netmask_ip", "255.255.0.0"),
        opt("remote_ip", "192.0.2.1"),
    ];
    v.extend(run_all_defines());
    v
}

/// Options packetdrill accepts that change nothing for trc (its runner and addresses are fixed
/// to what run_all.py uses: IPv4, 192.168.0.1 and 192.0.2.1, ports 8080).
const HARMLESS_OPTIONS: &[(&str, Option<&str>)] = &[
    ("send_omit_free", None),
    ("verbose", None),
    ("debug", None),
    ("dry_run", None),
    ("ip_version", Some("ipv4")),
    ("local_ip", Some("192.168.0.1")),
    ("gateway_ip", Some("192.168.0.1")),
    ("netmask_ip", Some("255.255.0.0")),
    ("remote_ip", Some("192.0.2.1")),
    ("bind_port", Some("8080")),
    ("connect_port", Some("8080")),
    ("mtu", Some("1500")),
    ("code_format", Some("python")),
    ("code_sockopt", None),
];

/// Every other option packetdrill knows: trc runs with one value of each (above) or none, so a
/// script that needs another is unsupported (unless the command line sets it back, as
/// packetdrill's own command line wins over a script's options).
const KNOWN_OPTIONS: &[&str] = &[
    "ip_version",
    "local_ip",
    "remote_ip",
    "gateway_ip",
    "netmask_ip",
    "bind_port",
    "connect_port",
    "mtu",
    "mss",
    "speed",
    "init_scripts",
    "wire_client",
    "wire_server",
    "wire_server_ip",
    "wire_server_at",
    "wire_server_port",
    "wire_client_dev",
    "wire_server_dev",
    "so_filename",
    "so_flags",
    "is_anyip",
    "psp_udp_port",
];

/// The `-D` definitions packetdrill's run_all.py passes for its ipv4 variant (the gtests use
/// them); a script or the command line may override them. Both backends start from these.
pub fn run_all_defines() -> Vec<(String, Option<String>)> {
    [
        "TFO_COOKIE=3021b9d889017eeb",
        "CODE=host_unreachable",
        "CMSG_LEVEL_IP=SOL_IP",
        "CMSG_TYPE_RECVERR=IP_RECVERR",
    ]
    .iter()
    .map(|d| ("define".to_string(), Some(d.to_string())))
    .collect()
}

/// Why a packetdrill option is refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BadOption {
    #[error("option '--{0}' requires an argument")]
    NoValue(String),
    #[error("bad --{name}={value} (an integer from {lo} to {hi})")]
    Int {
        name: String,
        value: String,
        lo: i64,
        hi: i64,
    },
    #[error("bad --tolerance_percent={0} (0 to 100)")]
    Percent(String),
    #[error("bad --non_fatal value '{0}' (packet, syscall)")]
    NonFatal(String),
    #[error("bad definition '{0}' (NAME=value)")]
    Definition(String),
    #[error("option '{0}' unknown")]
    Unknown(String),
}

/// A refused option and where it was given.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OptionError {
    /// On the script's `--option` line.
    #[error("{file}:{line}: {why}")]
    Script {
        file: String,
        line: u32,
        why: BadOption,
    },
    /// On the command line (`--name`).
    #[error("--{name}: {why}")]
    CommandLine { name: String, why: BadOption },
}

impl Settings {
    /// The script's options, then `command_line`'s (`name`, `value` pairs, `--` stripped):
    /// `Err` names the offending option (`file:line:` for the script's).
    pub fn resolve(
        script: &Script,
        file: &str,
        command_line: &[(String, Option<String>)],
    ) -> Result<Settings, OptionError> {
        let mut s = Settings::default();
        // The last value of each option trc has one value for, and where it was set.
        let mut fixed: BTreeMap<String, (Option<String>, u32)> = BTreeMap::new();
        for o in &script.options {
            s.apply(&o.name, o.value.as_deref(), o.line, &mut fixed)
                .map_err(|why| OptionError::Script {
                    file: file.to_string(),
                    line: o.line,
                    why,
                })?;
        }
        for (n, v) in command_line {
            s.apply(n, v.as_deref(), 0, &mut fixed)
                .map_err(|why| OptionError::CommandLine {
                    name: n.clone(),
                    why,
                })?;
        }
        s.unsupported = fixed.into_iter().find_map(|(name, (value, line))| {
            let ok = HARMLESS_OPTIONS
                .iter()
                .any(|(n, want)| *n == name && (want.is_none() || *want == value.as_deref()));
            (!ok).then(|| {
                let v = value.map(|v| format!("={v}")).unwrap_or_default();
                (line, format!("--{name}{v} (trc runs packetdrill's ipv4 variant: 192.168.0.1 and 192.0.2.1 on tun0, ports 8080, MTU 1500)"))
            })
        });
        Ok(s)
    }

    fn apply(
        &mut self,
        name: &str,
        value: Option<&str>,
        line: u32,
        fixed: &mut BTreeMap<String, (Option<String>, u32)>,
    ) -> Result<(), BadOption> {
        let need = || value.ok_or_else(|| BadOption::NoValue(name.to_string()));
        let int = |lo: i64, hi: i64| -> Result<i64, BadOption> {
            let v = need()?;
            v.parse::<i64>()
                .ok()
                .filter(|x| (lo..=hi).contains(x))
                .ok_or_else(|| BadOption::Int {
                    name: name.to_string(),
                    value: v.to_string(),
                    lo,
                    hi,
                })
        };
        match name {
            "tolerance_usecs" => self.tolerance.usecs = int(1, 100_000_000)?,
            "tolerance_percent" => {
                let v = need()?;
                self.tolerance.percent = v
                    .parse::<f64>()
                    .ok()
                    .filter(|p| (0.0..=100.0).contains(p))
                    .ok_or_else(|| BadOption::Percent(v.to_string()))?;
            }
            "strict_segments" => self.strict_segments = true,
            "tcp_ts_tick_usecs" => self.ts_tick_usecs = int(0, 1_000_000)? as u32,
            "tcp_ts_ecr_scaled" => self.ts_ecr_scaled = true,
            "non_fatal" => {
                let v = need()?;
                for part in v.split(',') {
                    match part.trim() {
                        "packet" => self.non_fatal_packet = true,
                        "syscall" => {}
                        other => return Err(BadOption::NonFatal(other.to_string())),
                    }
                }
            }
            "define" | "D" => {
                let v = need()?;
                let (k, d) = v
                    .split_once('=')
                    .ok_or_else(|| BadOption::Definition(v.to_string()))?;
                self.defines
                    .insert(k.to_string(), d.trim_matches('"').to_string());
            }
            "code_command" => self.python = need()?.to_string(),
            _ => {
                let known = HARMLESS_OPTIONS.iter().any(|(n, _)| *n == name)
                    || KNOWN_OPTIONS.contains(&name);
                if !known {
                    return Err(BadOption::Unknown(name.to_string()));
                }
                fixed.insert(name.to_string(), (value.map(str::to_string), line));
            }
        }
        Ok(())
    }

    fn define(&self) -> impl Fn(&str) -> Option<String> + '_ {
        move |n: &str| self.defines.get(n).cloned()
    }
}

/// The script ↔ live mapping of the connection under test (packetdrill's `socket.h`).
#[derive(Default, Debug)]
struct Conn {
    /// The local ISN in the script (its SYN or SYN-ACK) and live (the sniffed one).
    script_local_isn: Option<u32>,
    live_local_isn: Option<u32>,
    /// The remote ISN (the script's inbound SYN or SYN-ACK; injected unchanged).
    remote_isn: Option<u32>,
    /// Outbound TS vals seen: script val → live val (the last one wins).
    ts_map: HashMap<u32, u32>,
    /// The first (script, live) outbound TS val pair.
    first_ts: Option<(u32, u32)>,
}

impl Conn {
    fn local(&self) -> u32 {
        self.live_local_isn.unwrap_or(0)
    }
    fn remote(&self) -> u32 {
        self.remote_isn.unwrap_or(0)
    }

    /// An inbound script packet in live values.
    fn inbound(&mut self, p: &Packet, set: &Settings) -> Result<LivePacket, InboundError> {
        let flags = wire::flag_bits(&p.flags);
        let syn = flags & SYN != 0;
        if syn && flags & ACK == 0 {
            self.remote_isn = Some(p.seq);
        }
        if syn && flags & ACK != 0 && self.remote_isn.is_none() {
            self.remote_isn = Some(p.seq);
        }
        let seq = if syn {
            p.seq
        } else {
            p.seq.wrapping_add(self.remote())
        };
        let ack = match p.ack {
            None => 0,
            Some(a) if flags & ACK == 0 => a,
            // An inbound SYN-ACK acks the script's own ISN space.
            Some(a) if syn => a
                .wrapping_sub(self.script_local_isn.unwrap_or(0))
                .wrapping_add(self.local()),
            Some(a) => a.wrapping_add(self.local()),
        };
        let mut options = Vec::new();
        if let Some(TcpOptions::List(list)) = &p.options {
            for o in list {
                let w = match wire::from_script(o, &set.define())? {
                    WireOption::Sack { blocks } => WireOption::Sack {
                        blocks: blocks
                            .iter()
                            .map(|(l, r)| {
                                (l.wrapping_add(self.local()), r.wrapping_add(self.local()))
                            })
                            .collect(),
                    },
                    WireOption::Timestamp { val, ecr } if flags & ACK != 0 => {
                        WireOption::Timestamp {
                            val,
                            ecr: self.live_ecr(ecr, set)?,
                        }
                    }
                    w => w,
                };
                options.push(w);
            }
        }
        Ok(LivePacket {
            flags,
            seq,
            ack,
            win: p.win.unwrap_or(0) as u16,
            urg: p.urg.unwrap_or(0) as u16,
            tos: ecn_bits(p.ecn),
            options,
            payload_len: p.len,
        })
    }

    /// The live TS echo for a script echo: a TS val an outbound packet carried.
    fn live_ecr(&self, ecr: u32, set: &Settings) -> Result<u32, InboundError> {
        if let Some(v) = self.ts_map.get(&ecr) {
            return Ok(*v);
        }
        match (set.ts_ecr_scaled, self.first_ts) {
            (true, Some((s, l))) => Ok(ecr.wrapping_sub(s).wrapping_add(l)),
            _ => Err(InboundError::TsEcr(ecr)),
        }
    }

    /// A captured packet in script space (seq, ack, SACK blocks, TS val).
    fn script_view(&mut self, c: &Captured, script_syn_seq: u32) -> (u32, u32, Vec<WireOption>) {
        let syn = c.flags & SYN != 0;
        // A SYN or SYN-ACK with a new ISN is a new connection (a second accept or connect in
        // the script): packetdrill's new socket under test, with its own sequence spaces.
        if syn && self.live_local_isn != Some(c.seq) {
            if c.flags & ACK == 0 {
                self.remote_isn = None;
            }
            self.live_local_isn = Some(c.seq);
            self.script_local_isn = Some(script_syn_seq);
        }
        let seq = if syn {
            c.seq
                .wrapping_sub(self.local())
                .wrapping_add(self.script_local_isn.unwrap_or(0))
        } else {
            c.seq.wrapping_sub(self.local())
        };
        let ack = if syn {
            c.ack
        } else {
            c.ack.wrapping_sub(self.remote())
        };
        let opts = c
            .options
            .iter()
            .map(|o| match o {
                WireOption::Sack { blocks } => WireOption::Sack {
                    blocks: blocks
                        .iter()
                        .map(|(l, r)| {
                            (l.wrapping_sub(self.remote()), r.wrapping_sub(self.remote()))
                        })
                        .collect(),
                },
                o => o.clone(),
            })
            .collect();
        (seq, ack, opts)
    }
}

fn ecn_bits(e: Option<Ecn>) -> u8 {
    match e {
        None | Some(Ecn::NoEcn) => 0,
        Some(Ecn::Ect1) => 1,
        Some(Ecn::Ect0) | Some(Ecn::Ect01) => 2,
        Some(Ecn::Ce) => 3,
    }
}

/// Whether live ECN bits match a script marker.
fn ecn_matches(e: Ecn, tos: u8) -> bool {
    let got = tos & 3;
    match e {
        Ecn::NoEcn => got == 0,
        Ecn::Ect1 => got == 1,
        Ecn::Ect0 => got == 2,
        Ecn::Ect01 => got == 1 || got == 2,
        Ecn::Ce => got == 3,
    }
}

/// The statement as written, on one line (the first line of a multi-line one).
pub fn statement_text(st: &Statement) -> String {
    let s = crate::writer::write_statement(st);
    s.lines().next().unwrap_or("").to_string()
}

fn ms(us: i64) -> f64 {
    us as f64 / 1000.0
}

/// The packets of one outbound line, or why there are none.
enum Gathered {
    Parts(Vec<Captured>),
    Fail(String),
    OutOfScope(String),
}

/// A blocking call in progress.
struct Pending {
    /// Index of its line in the report.
    idx: usize,
    end: Due,
    result: Expr,
    errno: Option<String>,
    name: String,
}

/// The walk in progress.
struct Engine<'a> {
    file: &'a str,
    set: Settings,
    clock: Clock,
    conn: Conn,
    report: Report,
    /// `%{ }%` blocks waiting for Python: (report index, block).
    blocks: Vec<(usize, Block)>,
    started: bool,
    /// A timed event has run (the first one is not timing-checked).
    timed: bool,
    init_ran: bool,
    pending: Option<Pending>,
    env: Vec<(String, String)>,
}

/// Runs `script` on `backend` with `settings` (see [`Settings::resolve`]). The report always
/// comes back; `Report::verdict` is its summary.
pub fn run(script: &Script, file: &str, settings: Settings, backend: &mut dyn Backend) -> Report {
    let mut e = Engine {
        file,
        set: settings,
        clock: Clock::default(),
        conn: Conn::default(),
        report: Report::new(file),
        blocks: Vec::new(),
        started: false,
        timed: false,
        init_ran: false,
        pending: None,
        env: vec![("PACKETDRILL_PID".into(), std::process::id().to_string())],
    };
    if let Some(u) = e.set.unsupported.clone() {
        e.report.unsupported = Some(u);
        e.report.finish();
        return e.report;
    }
    let n = script.statements.len();
    for (i, st) in script.statements.iter().enumerate() {
        if backend.interrupted() {
            e.report.interrupted = true;
            break;
        }
        backend.statement_begins(st.line);
        let r = match (backend.time_up(), unsupported_feature(st)) {
            (Some(why), _) => Err(Halt::Stop(why)),
            (None, Some(what)) => Err(Halt::Unsupported(what)),
            (None, None) => e.statement(st, i == 0, i + 1 == n, backend),
        };
        match r {
            Ok(()) => {}
            Err(Halt::Interrupted) => {
                e.report.interrupted = true;
                break;
            }
            Err(Halt::Stop(why)) => {
                e.stop_line(st, format!("not run: {why}"));
                e.report.stopped = Some((st.line, why));
                break;
            }
            Err(Halt::Unsupported(what)) => {
                e.stop_line(st, format!("unsupported: {what}"));
                e.report.unsupported = Some((st.line, what));
                break;
            }
        }
        e.poll_blocking(backend);
        backend.after_statement(st.line);
    }
    backend.statements_done();
    e.finish_blocking(backend);
    e.evaluate_python();
    e.report.finish();
    e.report
}

/// What a statement needs that no backend here implements (trc runs TCP over IPv4 on one tun
/// device, as packetdrill's ipv4 variant does): `Some(feature)`, or `None`.
pub fn unsupported_feature(st: &Statement) -> Option<String> {
    let ip = |ip: &crate::ast::IpExtra| {
        if ip.tos.is_some() {
            Some("an IP TOS byte ([tos 0x..])".to_string())
        } else if ip.flowlabel.is_some() {
            Some("an IPv6 flow label ([flowlabel 0x..])".to_string())
        } else if ip.ttl.is_some() {
            Some("an IP TTL ([ttl N])".to_string())
        } else {
            None
        }
    };
    match &st.kind {
        StatementKind::Udp(_) => Some("UDP packets".into()),
        StatementKind::Icmp(_) => Some("ICMP packets".into()),
        StatementKind::Packet(p) if !p.encap.is_empty() => {
            Some("encapsulated packets (ipv4/ipv6/gre/mpls headers before the segment)".into())
        }
        StatementKind::Packet(p) if p.psp_spi.is_some() => {
            Some("PSP encapsulation (encap psp spi N)".into())
        }
        StatementKind::Packet(p) if p.ports.is_some() => {
            Some("explicit port numbers (SRC>DST) on a packet".into())
        }
        StatementKind::Packet(p) if p.flags.ae || p.flags.ace.is_some() => {
            Some("AccECN flags (the AE flag 'A' and ACE digits)".into())
        }
        StatementKind::Packet(p) => ip(&p.ip),
        _ => None,
    }
}

fn kind_of(st: &Statement) -> LineKind {
    let dir = |d: Direction| match d {
        Direction::In => LineKind::PacketIn,
        Direction::Out => LineKind::PacketOut,
    };
    match &st.kind {
        StatementKind::Packet(p) => dir(p.direction),
        StatementKind::Udp(p) => dir(p.direction),
        StatementKind::Icmp(p) => dir(p.direction),
        StatementKind::Syscall(_) => LineKind::Syscall,
        StatementKind::Shell(_) => LineKind::Shell,
        StatementKind::Python(_) => LineKind::Code,
    }
}

impl Engine<'_> {
    fn push(&mut self, l: LineResult) -> usize {
        self.report.lines.push(l);
        self.report.lines.len() - 1
    }

    /// The line the walk stopped at: not checked, with why.
    fn stop_line(&mut self, st: &Statement, why: String) {
        let mut l = LineResult::new(
            st.line,
            st.col,
            kind_of(st),
            Status::OutOfScope,
            statement_text(st),
        );
        l.message = Some(why);
        self.push(l);
    }

    fn statement(
        &mut self,
        st: &Statement,
        first: bool,
        last: bool,
        b: &mut dyn Backend,
    ) -> Result<(), Halt> {
        let Some(time) = st.time else {
            return self.untimed(st, first, last, b);
        };
        if !self.started {
            self.started = true;
            b.start_clock();
            if !matches!(time, Time::Absolute(0) | Time::Relative(0)) {
                let l = LineResult::new(
                    st.line,
                    st.col,
                    kind_of(st),
                    Status::Fail,
                    statement_text(st),
                )
                .with_message("first event should be at time 0");
                self.push(l);
            }
        }
        match &st.kind {
            StatementKind::Packet(p) if p.direction == Direction::In => {
                self.inbound(st, time, p, b)
            }
            StatementKind::Packet(p) => self.outbound(st, time, p, b),
            // `unsupported_feature` stops the walk before these.
            StatementKind::Udp(_) | StatementKind::Icmp(_) => {
                Err(Halt::Unsupported("non-TCP packets".into()))
            }
            StatementKind::Syscall(s) => self.syscall(st, time, s, b),
            StatementKind::Shell(cmd) => self.shell(st, Some(time), cmd, b),
            StatementKind::Python(code) => self.code(st, time, code, b),
        }
    }

    /// An untimed shell line: the init command (first) or the cleanup command (last).
    fn untimed(
        &mut self,
        st: &Statement,
        first: bool,
        last: bool,
        b: &mut dyn Backend,
    ) -> Result<(), Halt> {
        let StatementKind::Shell(cmd) = &st.kind else {
            return Ok(());
        };
        if first {
            self.init_ran = true;
            return self.shell(st, None, cmd, b);
        }
        if last && !self.init_ran {
            let mut l = LineResult::new(
                st.line,
                st.col,
                LineKind::Shell,
                Status::Applied,
                statement_text(st),
            );
            l.notes.push(
                "cleanup command not run: packetdrill runs it only after an init command".into(),
            );
            self.push(l);
            return Ok(());
        }
        self.shell(st, None, cmd, b)
    }

    /// Resolves `time`, waits for it, and checks the lateness (`what` in packetdrill's words).
    fn arrive(
        &mut self,
        time: Time,
        kind: EventKind,
        what: &str,
        b: &mut dyn Backend,
        l: &mut LineResult,
    ) -> Result<Due, Halt> {
        let now = b.now_us();
        let due = self.clock.resolve(time, kind, now, &self.set.tolerance);
        b.wait_until(due.start)?;
        let at = b.now_us();
        l.time_ms = Some(ms(at));
        l.offset_ms = Some(ms(at - due.start));
        // packetdrill does not check the very first event's time.
        let first = !std::mem::replace(&mut self.timed, true);
        if !due.accepts(at) && !first {
            l.status = Status::Fail;
            l.message = Some(due.error(what, at));
        }
        Ok(due)
    }

    fn inbound(
        &mut self,
        st: &Statement,
        time: Time,
        p: &Packet,
        b: &mut dyn Backend,
    ) -> Result<(), Halt> {
        let mut l = LineResult::new(
            st.line,
            st.col,
            LineKind::PacketIn,
            Status::Applied,
            statement_text(st),
        );
        self.arrive(time, EventKind::Inbound, "inbound packet", b, &mut l)?;
        match self.conn.inbound(p, &self.set) {
            Err(e) => {
                l.status = Status::Fail;
                l.message = Some(e.to_string());
            }
            Ok(live) => {
                let o = b.inbound(&live)?;
                merge(&mut l, o);
            }
        }
        self.push(l);
        Ok(())
    }

    fn outbound(
        &mut self,
        st: &Statement,
        time: Time,
        p: &Packet,
        b: &mut dyn Backend,
    ) -> Result<(), Halt> {
        let mut l = LineResult::new(
            st.line,
            st.col,
            LineKind::PacketOut,
            Status::Pass,
            statement_text(st),
        );
        let now = b.now_us();
        let due = self
            .clock
            .resolve(time, EventKind::Outbound, now, &self.set.tolerance);
        let deadline = if due.any {
            now + 10 * OUTBOUND_GRACE_US
        } else {
            due.end + due.tol + OUTBOUND_GRACE_US
        };
        let parts = match self.gather(p, deadline, b)? {
            Gathered::Parts(parts) => parts,
            Gathered::Fail(m) => {
                l.status = Status::Fail;
                l.message = Some(m);
                self.push(l);
                return Ok(());
            }
            Gathered::OutOfScope(m) => {
                l.status = Status::OutOfScope;
                l.message = Some(m);
                self.push(l);
                return Ok(());
            }
        };
        let agg = aggregate(&parts);
        let (seq, ack, opts) = self.conn.script_view(&agg, p.seq);
        l.actual = Some(describe_captured(&agg, seq, ack, &opts));
        l.time_ms = Some(ms(agg.at_us));
        l.offset_ms = Some(ms(agg.at_us - due.start));
        self.record_ts(p, &opts);
        if let Some(why) = &agg.applied {
            l.status = Status::Applied;
            l.notes.push(why.clone());
            self.push(l);
            return Ok(());
        }
        if parts.len() > 1 {
            l.notes
                .push(format!("{} live packets merged (TSO/GSO)", parts.len()));
        }
        if let Some(n) = &agg.note {
            l.notes.push(n.clone());
        }
        let mut errors = self.compare(p, &agg, seq, ack, &opts, due.start);
        let latest = agg.at_us + agg.spread_us.max(0);
        match (due.accepts(agg.at_us), due.accepts(latest)) {
            (true, true) => {}
            (false, false) if agg.at_us > due.end + due.tol || latest < due.start - due.tol => {
                errors.push(due.error("outbound packet", agg.at_us))
            }
            _ if errors.is_empty() => {
                l.status = Status::OutOfScope;
                l.message = Some(format!(
                    "timing depends on where the kernel's jiffies fall: this packet leaves between {:.3} and {:.3} sec, the script allows {:.3} to {:.3} sec",
                    agg.at_us as f64 / 1e6,
                    latest as f64 / 1e6,
                    (due.start - due.tol) as f64 / 1e6,
                    (due.end + due.tol) as f64 / 1e6
                ));
                self.push(l);
                return Ok(());
            }
            _ => {}
        }
        if !errors.is_empty() {
            l.status = Status::Fail;
            l.message = Some(errors.join("; "));
            l.expected = Some(statement_text(st));
            if self.set.non_fatal_packet {
                l.notes
                    .push("--non_fatal=packet: packetdrill would only warn here".into());
            }
        }
        self.push(l);
        Ok(())
    }

    /// The live packets of one outbound line: the next one, then (unless `--strict_segments`)
    /// more contiguous ones of the same size until the line's payload is reached.
    fn gather(&mut self, p: &Packet, deadline: i64, b: &mut dyn Backend) -> Result<Gathered, Halt> {
        let first = match b.next_outbound(deadline, p)? {
            Next::Packet(c) => c,
            Next::Timeout => {
                return Ok(Gathered::Fail(format!(
                    "Timed out waiting for packet (nothing sent by {:.3} sec)",
                    deadline as f64 / 1e6
                )))
            }
            Next::OutOfScope(m) => return Ok(Gathered::OutOfScope(m)),
        };
        let mut total = first.payload_len;
        let mut parts = vec![first];
        while !self.set.strict_segments && total < p.len && total > 0 {
            let next = match b.next_outbound(deadline, p)? {
                Next::Packet(c) => c,
                Next::Timeout | Next::OutOfScope(_) => break,
            };
            let prev = parts.last().unwrap();
            if let Some(why) = incompatible(prev, &next) {
                return Ok(Gathered::Fail(format!(
                    "fragment {}: {why} (script packet {}:{}({}))",
                    parts.len(),
                    p.seq,
                    p.end_seq,
                    p.len
                )));
            }
            total += next.payload_len;
            parts.push(next);
        }
        if total != p.len {
            return Ok(Gathered::Fail(format!(
                "live packet payload: expected {} bytes vs actual {total} bytes",
                p.len
            )));
        }
        Ok(Gathered::Parts(parts))
    }

    /// Field-by-field comparison of the merged packet with the script line (packetdrill's
    /// order: headers, then options). `since_start_us` scales the TS val tolerance.
    fn compare(
        &self,
        p: &Packet,
        c: &Captured,
        seq: u32,
        ack: u32,
        opts: &[WireOption],
        since_start_us: i64,
    ) -> Vec<String> {
        let mut e = Vec::new();
        let want = wire::flag_bits(&p.flags);
        let mask = if c.unknown.psh { !PSH } else { !0 };
        for (bit, name) in [
            (FIN, "tcp_fin"),
            (SYN, "tcp_syn"),
            (RST, "tcp_rst"),
            (PSH, "tcp_psh"),
            (ACK, "tcp_ack"),
            (URG, "tcp_urg"),
            (ECE, "tcp_ece"),
            (CWR, "tcp_cwr"),
        ] {
            if bit & mask != 0 && (want & bit != 0) != (c.flags & bit != 0) {
                e.push(format!(
                    "live packet field {name}: expected: {} vs actual: {}",
                    (want & bit != 0) as u8,
                    (c.flags & bit != 0) as u8
                ));
            }
        }
        if seq != p.seq {
            e.push(format!(
                "live packet field tcp_seq: expected: {} vs actual: {seq}",
                p.seq
            ));
        }
        if c.flags & ACK != 0 && want & ACK != 0 && ack != p.ack.unwrap_or(0) {
            e.push(format!(
                "live packet field tcp_ack_seq: expected: {} vs actual: {ack}",
                p.ack.unwrap_or(0)
            ));
        }
        if let (Some(w), false) = (p.win, c.unknown.win) {
            if u32::from(c.win) != w {
                e.push(format!(
                    "live packet field tcp_window: expected: {w} vs actual: {}",
                    c.win
                ));
            }
        }
        if u32::from(c.urg) != p.urg.unwrap_or(0) {
            e.push(format!(
                "live packet field tcp_urg_ptr: expected: {} vs actual: {}",
                p.urg.unwrap_or(0),
                c.urg
            ));
        }
        if let (Some(m), false) = (p.ecn, c.unknown.tos) {
            if !ecn_matches(m, c.tos) {
                e.push(format!(
                    "live packet field ip_ecn: expected: {m:?} vs actual: {}",
                    c.tos & 3
                ));
            }
        }
        match &p.options {
            Some(TcpOptions::Any) => {}
            None if !opts.is_empty() => e.push(format!(
                "bad outbound TCP options: expected none, actual <{}>",
                join(opts)
            )),
            None => {}
            Some(TcpOptions::List(list)) => {
                if let Some(m) = self.compare_options(list, opts, since_start_us) {
                    e.push(m);
                }
            }
        }
        e
    }

    fn compare_options(
        &self,
        want: &[crate::ast::TcpOption],
        got: &[WireOption],
        since_start_us: i64,
    ) -> Option<String> {
        let want: Vec<WireOption> = match want
            .iter()
            .map(|o| wire::from_script(o, &self.set.define()))
            .collect()
        {
            Ok(w) => w,
            Err(e) => return Some(e.to_string()),
        };
        let shown = || {
            format!(
                "bad outbound TCP options: expected <{}> actual <{}>",
                join(&want),
                join(got)
            )
        };
        if want.len() != got.len() {
            return Some(shown());
        }
        for (w, g) in want.iter().zip(got) {
            match (w, g) {
                (WireOption::Timestamp { val, .. }, WireOption::Timestamp { val: lv, .. }) => {
                    if let (true, Some((fs, fl))) = (self.set.ts_tick_usecs > 0, self.conn.first_ts)
                    {
                        let mapped = fs.wrapping_add(lv.wrapping_sub(fl));
                        let tol = self.set.tolerance.after_gap(since_start_us);
                        let off =
                            (mapped as i64 - *val as i64).abs() * self.set.ts_tick_usecs as i64;
                        if off > tol {
                            return Some(format!("bad outbound TCP timestamp value {mapped} (script {val}), tolerance {tol} us"));
                        }
                    }
                }
                (a, b) if a == b => {}
                _ => return Some(shown()),
            }
        }
        None
    }

    /// Records the script → live TS val pair of an outbound line (for inbound echoes).
    fn record_ts(&mut self, p: &Packet, live: &[WireOption]) {
        let Some(TcpOptions::List(list)) = &p.options else {
            return;
        };
        let sv = list.iter().find_map(|o| {
            if let crate::ast::TcpOption::Timestamp { val, .. } = o {
                Some(*val)
            } else {
                None
            }
        });
        let lv = live.iter().find_map(|o| {
            if let WireOption::Timestamp { val, .. } = o {
                Some(*val)
            } else {
                None
            }
        });
        if let (Some(s), Some(l)) = (sv, lv) {
            self.conn.ts_map.insert(s, l);
            if self.conn.first_ts.is_none() {
                self.conn.first_ts = Some((s, l));
            }
        }
    }

    fn syscall(
        &mut self,
        st: &Statement,
        time: Time,
        s: &Syscall,
        b: &mut dyn Backend,
    ) -> Result<(), Halt> {
        let mut l = LineResult::new(
            st.line,
            st.col,
            LineKind::Syscall,
            Status::Pass,
            statement_text(st),
        );
        let due = self.arrive(time, EventKind::Syscall, "system call start", b, &mut l)?;
        if self.pending.is_some() && !self.await_blocking(b)? && s.end_time.is_some() {
            l.status = Status::Fail;
            l.message = Some("runtime error: blocking system call while another blocking system call is already in progress".into());
            self.push(l);
            return Ok(());
        }
        let late = (l.status == Status::Fail)
            .then(|| l.message.clone())
            .flatten();
        let cx = SysCtx {
            blocking: s.end_time.is_some(),
            defines: &self.set.defines,
        };
        match b.syscall(s, &cx)? {
            SysResult::Returned {
                ret,
                errno,
                notes,
                problems,
            } => {
                let mut problems = problems;
                problems.extend(late);
                problems.extend(check_result(
                    &s.name,
                    &s.result,
                    s.errno.as_ref().map(|e| e.name.as_str()),
                    ret,
                    errno,
                ));
                l.actual = Some(if ret < 0 {
                    format!("{ret} {}", crate::symbols::errno_name(errno))
                } else {
                    ret.to_string()
                });
                l.notes.extend(notes);
                if matches!(s.result, Expr::Ellipsis) && problems.is_empty() {
                    l.status = Status::Applied;
                }
                if !problems.is_empty() {
                    l.status = Status::Fail;
                    l.message = Some(problems.join("; "));
                }
                self.push(l);
            }
            SysResult::Blocked => {
                let end =
                    Clock::blocking_end(&due, s.end_time.unwrap_or(time), &self.set.tolerance);
                l.notes.push("blocking call in progress".into());
                let idx = self.push(l);
                self.pending = Some(Pending {
                    idx,
                    end,
                    result: s.result.clone(),
                    errno: s.errno.as_ref().map(|e| e.name.clone()),
                    name: s.name.clone(),
                });
            }
            SysResult::Other(o) => {
                l.status = Status::Applied;
                merge(&mut l, o);
                if let Some(m) = late {
                    l.status = Status::Fail;
                    l.message = Some(m);
                }
                self.push(l);
            }
        }
        Ok(())
    }

    /// A blocking call that returned since the last statement.
    fn poll_blocking(&mut self, b: &mut dyn Backend) {
        if self.pending.is_none() {
            return;
        }
        if let Some((ret, errno, at)) = b.blocking_result() {
            let p = self.pending.take().unwrap();
            let mut problems = check_result(&p.name, &p.result, p.errno.as_deref(), ret, errno);
            if !p.end.accepts(at) {
                problems.push(p.end.error("system call return", at));
            }
            let l = &mut self.report.lines[p.idx];
            l.actual = Some(if ret < 0 {
                format!("{ret} {}", crate::symbols::errno_name(errno))
            } else {
                ret.to_string()
            });
            l.notes.retain(|n| n != "blocking call in progress");
            l.notes.push(format!("returned at {:.3} ms", ms(at)));
            if !problems.is_empty() {
                l.status = Status::Fail;
                l.message = Some(problems.join("; "));
            }
        }
    }

    /// At the end: a blocking call still in progress is an error (as in packetdrill), unless
    /// the walk stopped early (then its end was never due: not checked).
    fn finish_blocking(&mut self, b: &mut dyn Backend) {
        let early = self.report.interrupted
            || self.report.stopped.is_some()
            || self.report.unsupported.is_some();
        if early {
            self.poll_blocking(b);
        } else if self.pending.is_some() {
            // packetdrill waits up to 1 s for its system-call thread at the end too.
            let _ = self.await_blocking(b);
        }
        if let Some(p) = self.pending.take() {
            let l = &mut self.report.lines[p.idx];
            if early {
                l.status = Status::OutOfScope;
                l.message = Some("not finished when the run stopped".into());
            } else {
                l.status = Status::Fail;
                l.message = Some(
                    "runtime error: exiting while a blocking system call is in progress".into(),
                );
            }
        }
    }

    /// Before a system call, a blocking call in progress gets up to 1 s to return (packetdrill's
    /// `await_idle_thread`); `false` when it is still in progress.
    fn await_blocking(&mut self, b: &mut dyn Backend) -> Result<bool, Halt> {
        let until = b.now_us() + 1_000_000;
        loop {
            self.poll_blocking(b);
            if self.pending.is_none() {
                return Ok(true);
            }
            let now = b.now_us();
            if now >= until {
                return Ok(false);
            }
            b.wait_until((now + 1_000).min(until))?;
        }
    }

    fn shell(
        &mut self,
        st: &Statement,
        time: Option<Time>,
        cmd: &str,
        b: &mut dyn Backend,
    ) -> Result<(), Halt> {
        let mut l = LineResult::new(
            st.line,
            st.col,
            LineKind::Shell,
            Status::Pass,
            format!("`{}`", cmd.trim()),
        );
        if let Some(t) = time {
            self.arrive(t, EventKind::Shell, "command", b, &mut l)?;
        }
        let late = (l.status == Status::Fail)
            .then(|| l.message.clone())
            .flatten();
        let o = b.shell(cmd, &self.env)?;
        merge(&mut l, o);
        if let Some(m) = late {
            l.status = Status::Fail;
            l.message = Some(m);
        }
        self.push(l);
        Ok(())
    }

    fn code(
        &mut self,
        st: &Statement,
        time: Time,
        code: &str,
        b: &mut dyn Backend,
    ) -> Result<(), Halt> {
        let mut l = LineResult::new(
            st.line,
            st.col,
            LineKind::Code,
            Status::Pass,
            statement_text(st),
        );
        self.arrive(time, EventKind::Code, "data collection for code", b, &mut l)?;
        match b.code_values() {
            Ok(v) => {
                // The constants are bound by `python::evaluate`, once for all blocks: not
                // copied here, in the time between two events.
                let bindings = v.values;
                let idx = self.push(l);
                self.blocks.push((
                    idx,
                    Block {
                        line: st.line,
                        code: code.to_string(),
                        bindings,
                        missing: v.missing,
                    },
                ));
            }
            Err(m) => {
                l.status = Status::Fail;
                l.message = Some(format!("runtime error in code: {m}"));
                self.push(l);
            }
        }
        Ok(())
    }

    /// Runs the queued blocks in one Python process and fills in their lines.
    fn evaluate_python(&mut self) {
        if self.blocks.is_empty() {
            return;
        }
        let blocks: Vec<Block> = self.blocks.iter().map(|(_, b)| b.clone()).collect();
        match python::evaluate(self.file, &blocks, &self.set.python) {
            Err(m) => {
                for (idx, _) in &self.blocks {
                    let l = &mut self.report.lines[*idx];
                    if l.status != Status::Fail {
                        l.status = Status::OutOfScope;
                        l.message = Some(format!("not evaluated: {m}"));
                    }
                }
            }
            Ok(outcomes) => {
                for ((idx, _), o) in self.blocks.iter().zip(outcomes) {
                    apply_outcome(&mut self.report.lines[*idx], o);
                }
            }
        }
    }
}

/// A block's Python outcome on its line (a timing failure of the block stays a failure).
fn apply_outcome(l: &mut LineResult, o: Outcome) {
    let late = l.status == Status::Fail;
    match o {
        Outcome::Pass {
            checks,
            output,
            values,
        } => {
            if !late {
                l.status = if checks {
                    Status::Pass
                } else {
                    Status::Applied
                };
            }
            l.output = Some(output).filter(|s| !s.is_empty());
            l.values = values;
        }
        Outcome::Fail {
            message,
            output,
            values,
        } => {
            l.status = Status::Fail;
            l.message = Some(match l.message.take() {
                Some(t) => format!("{t}; {message}"),
                None => message,
            });
            l.output = Some(output).filter(|s| !s.is_empty());
            l.values = values;
        }
        Outcome::Error { message, output } => {
            l.status = Status::Fail;
            l.message = Some(format!("error in Python code: {message}"));
            l.output = Some(output).filter(|s| !s.is_empty());
        }
        Outcome::OutOfScope { names } => {
            if !late {
                l.status = Status::OutOfScope;
                l.message = Some(format!("reads {} (not computed here)", names.join(", ")));
            }
        }
    }
}

/// A backend's outcome merged into a line (a failure already on the line stays).
fn merge(l: &mut LineResult, o: Outcome1) {
    if l.status != Status::Fail {
        l.status = o.status;
        if o.message.is_some() {
            l.message = o.message;
        }
    } else if let Some(m) = o.message {
        l.notes.push(m);
    }
    if o.output.is_some() {
        l.output = o.output;
    }
    l.notes.extend(o.notes);
}

/// packetdrill's `end_syscall` checks: the result (an fd-returning call with a non-negative
/// expected result matches any non-negative one) and the errno name.
fn check_result(
    name: &str,
    result: &Expr,
    errno_want: Option<&str>,
    ret: i64,
    errno: i32,
) -> Vec<String> {
    let mut p = Vec::new();
    let fd_call = matches!(
        name,
        "socket" | "accept" | "accept4" | "open" | "pipe" | "epoll_create"
    );
    match result {
        Expr::Ellipsis => {}
        Expr::Int(want) => {
            if fd_call && *want >= 0 {
                if ret < 0 {
                    p.push(format!(
                        "Expected non-negative result but got {ret} with errno {errno} ({})",
                        crate::symbols::errno_name(errno)
                    ));
                }
            } else if ret != *want {
                p.push(format!(
                    "Expected result {want} but got {ret} with errno {errno} ({})",
                    crate::symbols::errno_name(errno)
                ));
            }
        }
        other => p.push(format!(
            "unsupported result expression {}",
            crate::writer::write_expr(other)
        )),
    }
    if let (Some(want), true) = (errno_want, ret < 0) {
        if crate::symbols::errno_value(want) != Some(errno) {
            p.push(format!(
                "Expected errno {want} but got {}",
                crate::symbols::errno_name(errno)
            ));
        }
    }
    p
}

/// Why `next` cannot be merged after `prev` (packetdrill's fragment checks), if it cannot.
fn incompatible(prev: &Captured, next: &Captured) -> Option<String> {
    let same = !(FIN | PSH | CWR);
    if next.flags & same != prev.flags & same {
        return Some(format!(
            "flags {} after {}",
            wire::flags_to_string(next.flags),
            wire::flags_to_string(prev.flags)
        ));
    }
    if next.seq != prev.seq.wrapping_add(prev.payload_len) {
        return Some(format!(
            "not contiguous (seq {} after {}+{})",
            next.seq, prev.seq, prev.payload_len
        ));
    }
    if next.ack != prev.ack || next.win != prev.win || next.urg != prev.urg {
        return Some("ack, window or urgent pointer differ".into());
    }
    if next.payload_len > prev.payload_len {
        return Some(format!(
            "a {}-byte packet after a {}-byte one",
            next.payload_len, prev.payload_len
        ));
    }
    None
}

/// The merged packet: headers, options and time from the last fragment, seq and CWR from the
/// first, the payloads added.
fn aggregate(parts: &[Captured]) -> Captured {
    let (first, last) = (&parts[0], parts.last().unwrap());
    let mut a = last.clone();
    a.seq = first.seq;
    a.flags = (last.flags & !CWR) | (first.flags & CWR);
    a.payload_len = parts.iter().map(|p| p.payload_len).sum();
    a.note = first.note.clone();
    a.spread_us = parts.iter().map(|p| p.spread_us).max().unwrap_or(0);
    a
}

fn join(o: &[WireOption]) -> String {
    o.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

fn describe_captured(c: &Captured, seq: u32, ack: u32, opts: &[WireOption]) -> String {
    let mut s = wire::describe(
        c.flags,
        seq,
        c.payload_len as usize,
        (c.flags & ACK != 0).then_some(ack),
        (!c.unknown.win).then_some(c.win),
        opts,
    );
    if c.unknown.psh {
        s.push_str(" (PSH not known)");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cap(at_us: i64, flags: u8, seq: u32, len: u32) -> Captured {
        Captured {
            at_us,
            spread_us: 0,
            flags,
            seq,
            ack: 1,
            win: 502,
            urg: 0,
            tos: 0,
            options: vec![],
            payload_len: len,
            unknown: Unknown::default(),
            note: None,
            applied: None,
        }
    }

    #[test]
    fn fragments_merge_like_packetdrill() {
        let a = cap(10, ACK, 1, 2000);
        let b = cap(11, ACK | PSH, 2001, 1000);
        assert_eq!(incompatible(&a, &b), None);
        let m = aggregate(&[a.clone(), b.clone()]);
        assert_eq!(
            (m.seq, m.payload_len, m.flags, m.at_us),
            (1, 3000, ACK | PSH, 11)
        );
        assert!(
            incompatible(&b, &cap(12, ACK, 3001, 2000)).is_some(),
            "bigger after smaller"
        );
        assert!(
            incompatible(&a, &cap(12, ACK, 5001, 1000)).is_some(),
            "a hole"
        );
        assert!(incompatible(&a, &cap(12, ACK | SYN, 2001, 1000)).is_some());
    }

    #[test]
    fn results() {
        assert!(check_result("socket", &Expr::Int(3), None, 7, 0).is_empty());
        assert!(!check_result("write", &Expr::Int(1000), None, 500, 0).is_empty());
        assert!(check_result("read", &Expr::Int(-1), Some("EAGAIN"), -1, 11).is_empty());
        assert!(!check_result("read", &Expr::Int(-1), Some("EAGAIN"), -1, 4).is_empty());
    }

    #[test]
    fn settings_from_script_then_command_line() {
        let s = crate::parse(
            "--tolerance_usecs=7000\n--strict_segments\n0 `true`\n",
            "t.pkt",
        )
        .unwrap();
        let set = Settings::resolve(
            &s,
            "t.pkt",
            &[("tolerance_usecs".into(), Some("9000".into()))],
        )
        .unwrap();
        assert_eq!(set.tolerance.usecs, 9000, "the command line wins");
        assert!(set.strict_segments);
        let v6 = crate::parse("--ip_version=ipv6\n--mtu=1520\n0 `true`\n", "t.pkt").unwrap();
        let u = Settings::resolve(&v6, "t.pkt", &[]).unwrap().unsupported;
        assert!(
            matches!(&u, Some((1, m)) if m.starts_with("--ip_version=ipv6 ")),
            "an option trc cannot honour is unsupported, at its line: {u:?}"
        );
        // run_all.py's command line wins over the script's address lines, as in packetdrill;
        // the MTU stays unsupported.
        let u = Settings::resolve(&v6, "t.pkt", &run_all_ipv4())
            .unwrap()
            .unsupported;
        assert!(
            matches!(&u, Some((2, m)) if m.starts_with("--mtu=1520 ")),
            "{u:?}"
        );
        let local = crate::parse("--local_ip=192.168.0.2\n0 `true`\n", "t.pkt").unwrap();
        assert_eq!(
            Settings::resolve(&local, "t.pkt", &run_all_ipv4())
                .unwrap()
                .unsupported,
            None
        );
        let unknown = crate::parse("--frobnicate=1\n0 `true`\n", "t.pkt").unwrap();
        let e = Settings::resolve(&unknown, "t.pkt", &[]).unwrap_err();
        assert!(
            matches!(
                &e,
                OptionError::Script {
                    why: BadOption::Unknown(_),
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(e.to_string().contains("unknown"), "{e}");
    }
}
