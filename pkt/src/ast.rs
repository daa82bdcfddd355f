//! Typed AST for the supported packetdrill subset.
//!
//! Times are stored as integer **microseconds** so that parsing and writing
//! round-trips exactly (packetdrill itself works at microsecond resolution).
//!
//! Every [`Statement`] carries the 1-based `line` and `col` of its first
//! token.  Use [`Script::without_positions`] to compare scripts structurally.

use serde::{Deserialize, Serialize};

/// A whole packetdrill script.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Script {
    /// The `--name=value` lines at the top (packetdrill's in-script command-line options).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<ScriptOption>,
    pub statements: Vec<Statement>,
}

/// One `--name[=value]` option line at the top of a script (before any event). packetdrill
/// applies them before its own command line, which overrides them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScriptOption {
    pub line: u32,
    pub col: u32,
    /// Without the leading `--`, e.g. `tolerance_usecs`.
    pub name: String,
    /// The text after `=` (quotes removed), if any.
    pub value: Option<String>,
}

impl Script {
    /// A copy with every statement's `line`/`col` set to 0 (for structural
    /// comparison, e.g. round-trip tests).
    pub fn without_positions(&self) -> Script {
        Script {
            options: self
                .options
                .iter()
                .map(|o| ScriptOption {
                    line: 0,
                    col: 0,
                    ..o.clone()
                })
                .collect(),
            statements: self
                .statements
                .iter()
                .map(|s| Statement {
                    line: 0,
                    col: 0,
                    ..s.clone()
                })
                .collect(),
        }
    }
}

/// One event line (possibly spanning several source lines for shell commands
/// and `%{ }%` blocks).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Statement {
    /// 1-based source line of the statement's first token.
    pub line: u32,
    /// 1-based source column of the statement's first token.
    pub col: u32,
    /// The event time; `None` when the script gave no time (allowed by
    /// packetdrill for shell commands and python blocks, e.g. a leading
    /// `` `../common/defaults.sh` ``).
    pub time: Option<Time>,
    pub kind: StatementKind,
}

/// A single point in time, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TimePoint {
    /// `0`, `.1`, `1.5`: microseconds since the start of the script.
    Absolute(i64),
    /// `+.020`, `+0`: microseconds after the previous event.
    Relative(i64),
}

impl TimePoint {
    pub fn micros(self) -> i64 {
        match self {
            TimePoint::Absolute(v) | TimePoint::Relative(v) => v,
        }
    }
    pub fn is_relative(self) -> bool {
        matches!(self, TimePoint::Relative(_))
    }
}

/// Event time specification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Time {
    /// Absolute time in microseconds (`0`, `.1`, `2.000`).
    Absolute(i64),
    /// Relative to the previous event, microseconds (`+0`, `+.020`).
    Relative(i64),
    /// A tolerance range `start~end`, e.g. `+.01~+.02` or `.1~.2`.
    Range { start: TimePoint, end: TimePoint },
    /// `*`: any time.
    Any,
}

impl From<TimePoint> for Time {
    fn from(p: TimePoint) -> Time {
        match p {
            TimePoint::Absolute(v) => Time::Absolute(v),
            TimePoint::Relative(v) => Time::Relative(v),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum StatementKind {
    /// An inbound (`<`) or outbound (`>`) TCP segment.
    Packet(Packet),
    /// A UDP datagram: `< udp (100)`, `> udp 53>8080 (0)`.
    Udp(UdpPacket),
    /// An ICMP message: `< icmp unreachable frag_needed mtu 800 [0:1000(1000)]`.
    Icmp(IcmpPacket),
    /// A system call such as `socket(...)`, `write(4, ..., 1000) = 1000`.
    Syscall(Syscall),
    /// Text between backticks, verbatim (may contain newlines).
    Shell(String),
    /// A `%{ ... }%` block: Python code, verbatim but for the spaces and tabs packetdrill strips
    /// at both ends. It is run by `python3` (see `crate::python`).
    Python(String),
}

/// Packet direction, from the point of view of the kernel under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Direction {
    /// `<`: injected into the kernel (sent by the remote peer).
    In,
    /// `>`: expected to be sent by the kernel.
    Out,
}

/// TCP header flags. Written in packetdrill's letters:
/// `S` SYN, `F` FIN, `R` RST, `P` PSH, `.` ACK, `U` URG, `E` ECE, `W` CWR, `A` AE (AccECN), and
/// AccECN's ACE field as one digit `0`..`7` (instead of the letters E, W and A).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct TcpFlags {
    pub syn: bool,
    pub fin: bool,
    pub rst: bool,
    pub psh: bool,
    pub ack: bool,
    pub urg: bool,
    pub ece: bool,
    pub cwr: bool,
    /// `A`: the AccECN AE bit.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ae: bool,
    /// A digit `0`..`7`: AccECN's ACE field (AE, CWR and ECE as one number).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ace: Option<u8>,
}

/// IP-level ECN codepoint marker (`[noecn]`, `[ect0]`, `[ect1]`, `[ce]`,
/// `[ect01]` = either ECT codepoint accepted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Ecn {
    NoEcn,
    Ect0,
    Ect1,
    Ect01,
    Ce,
}

/// IP header details a packet line may give in brackets besides the ECN codepoint (packetdrill's
/// `ip_info`): `[tos 0x10]`, `[ect0, flowlabel 0x12345]`, `[ttl 64]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct IpExtra {
    /// `tos 0xNN`: the whole TOS byte (instead of an ECN marker).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tos: Option<u8>,
    /// `flowlabel 0xNNNNN` (IPv6, 20 bits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flowlabel: Option<u32>,
    /// `ttl N` (IPv4 TTL or IPv6 hop limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<u8>,
}

impl IpExtra {
    pub fn is_empty(&self) -> bool {
        *self == IpExtra::default()
    }
}

/// An outer header written before a packet (packetdrill's `packet_prefix`), outermost first:
/// `ipv4 192.0.2.1 > 192.168.0.1:`, `ipv6 ...:`, `gre:`, `gre flags 0 sum 0 off 0 key 0 seq 0:`,
/// `mpls (label 1, tc 0, [S], ttl 255):`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Encap {
    Ipv4 {
        ecn: Option<Ecn>,
        ip: IpExtra,
        src: String,
        dst: String,
    },
    Ipv6 {
        ecn: Option<Ecn>,
        ip: IpExtra,
        src: String,
        dst: String,
    },
    Gre(Option<GreHeader>),
    Mpls(Vec<MplsEntry>),
}

/// A GRE header's fields, all given (`flags [checksum present, key present] sum 0 off 0 key 5
/// seq 0`, or `flags 0x3000 ...`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GreHeader {
    pub flags: GreFlags,
    pub sum: i64,
    pub off: i64,
    pub key: i64,
    pub seq: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum GreFlags {
    /// `flags [none]`, `flags [checksum present, key present, sequence# present]`.
    Named(Vec<GreFlag>),
    /// `flags 0x3000`.
    Value(i64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum GreFlag {
    None,
    Checksum,
    Key,
    Sequence,
}

/// One MPLS label stack entry: `(label 100, tc 0, [S], ttl 255)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MplsEntry {
    pub label: i64,
    pub tc: i64,
    /// `[S]`: the bottom of the stack.
    pub bottom: bool,
    pub ttl: i64,
}

/// A TCP segment line, e.g. `+0 > P. 1:10001(10000) ack 1 win 257 <nop,nop,TS val 1 ecr 2>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Packet {
    pub direction: Direction,
    /// Outer headers (tunnels), outermost first; none for a plain segment.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub encap: Vec<Encap>,
    pub ecn: Option<Ecn>,
    /// `tos`, `flowlabel`, `ttl` in the brackets.
    #[serde(default, skip_serializing_if = "IpExtra::is_empty")]
    pub ip: IpExtra,
    /// `encap psp spi N`: a PSP-encapsulated segment with this SPI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub psp_spi: Option<i64>,
    /// `SRC>DST` explicit ports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ports: Option<(u16, u16)>,
    pub flags: TcpFlags,
    /// Start sequence number (relative to the ISN, as in packetdrill).
    pub seq: u32,
    /// End sequence number (`seq + len`, as written in the script).
    pub end_seq: u32,
    /// Payload length, the value in parentheses.
    pub len: u32,
    pub ack: Option<u32>,
    pub win: Option<u32>,
    /// `urg N` urgent pointer.
    pub urg: Option<u32>,
    /// `None`: no `<...>` clause at all.
    pub options: Option<TcpOptions>,
}

/// The `<...>` TCP option clause of a packet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum TcpOptions {
    /// `<...>`: any options are acceptable (outbound packets).
    Any,
    /// An explicit, comma-separated option list (may be empty: `<>`).
    List(Vec<TcpOption>),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum TcpOption {
    /// `mss N`
    Mss(u16),
    /// `sackOK`
    SackOk,
    /// `nop`
    Nop,
    /// `wscale N`
    WScale(u8),
    /// `TS val N ecr N`
    Timestamp { val: u32, ecr: u32 },
    /// `sack A:B C:D ...` (may be empty: `sack`)
    Sack(Vec<(u32, u32)>),
    /// `eol`
    Eol,
    /// `md5 HEX`: TCP MD5 signature (kind 19), the digest as written (hex, up to 16 bytes).
    Md5(String),
    /// `FO [COOKIE]`: TCP Fast Open (kind 34); the cookie as written (hex digits, or a name that a
    /// `-D NAME=hex` definition replaces, e.g. `TFO_COOKIE`).
    FastOpen(Option<String>),
    /// `FOEXP [COOKIE]`: the experimental Fast Open option (kind 254, magic 0xF989).
    FastOpenExp(Option<String>),
    /// `ECN e0b N ceb N e1b N` (any order packetdrill's grammar allows, 1 to 3 fields): the
    /// AccECN option, its byte counters as written (24 bits each).
    AccEcn(Vec<(AccEcnField, u32)>),
}

/// A field of the AccECN option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AccEcnField {
    E0b,
    Ceb,
    E1b,
}

impl TcpOption {
    /// Bytes on the wire, as packetdrill counts them when it checks that an option list pads the
    /// TCP header to a multiple of 4 bytes. A cookie or digest that is a not-yet-resolved name
    /// (a `-D` definition) counts as 8 bytes (the length of every definition packetdrill's
    /// runners pass).
    pub fn wire_len(&self) -> usize {
        let hex_bytes = |h: &str| {
            if h.bytes().all(|b| b.is_ascii_hexdigit()) && h.len().is_multiple_of(2) {
                h.len() / 2
            } else {
                8
            }
        };
        match self {
            TcpOption::Nop | TcpOption::Eol => 1,
            TcpOption::Mss(_) => 4,
            TcpOption::WScale(_) => 3,
            TcpOption::SackOk => 2,
            TcpOption::Sack(b) => 2 + 8 * b.len(),
            TcpOption::Timestamp { .. } => 10,
            TcpOption::Md5(d) => 2 + hex_bytes(d),
            TcpOption::FastOpen(c) => 2 + c.as_deref().map_or(0, hex_bytes),
            TcpOption::FastOpenExp(c) => 4 + c.as_deref().map_or(0, hex_bytes),
            TcpOption::AccEcn(f) => 2 + 3 * f.len(),
        }
    }
}

/// A UDP datagram line: `< udp (100)`, `> [tos 0x10] udp 53>8080 (0)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UdpPacket {
    pub direction: Direction,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub encap: Vec<Encap>,
    /// `[ect01]` only: packetdrill refuses other ECN markers on UDP.
    pub ecn: Option<Ecn>,
    #[serde(default, skip_serializing_if = "IpExtra::is_empty")]
    pub ip: IpExtra,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ports: Option<(u16, u16)>,
    pub len: u32,
}

/// An ICMP message line: `< icmp unreachable frag_needed mtu 800 [0:1000(1000)]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IcmpPacket {
    pub direction: Direction,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub encap: Vec<Encap>,
    pub ecn: Option<Ecn>,
    #[serde(default, skip_serializing_if = "IpExtra::is_empty")]
    pub ip: IpExtra,
    /// The type's name (`unreachable`, `packet_too_big`, ...).
    pub icmp_type: String,
    /// The code's name (`frag_needed`, `host_unreachable`, or a `-D` name such as `CODE`).
    pub code: Option<String>,
    /// `mtu N`
    pub mtu: Option<i64>,
    /// `id N` (echo id)
    pub echo_id: Option<i64>,
    /// The packet the message quotes, in brackets.
    pub echoed: Option<IcmpEchoed>,
}

/// What an ICMP message quotes: `[1:1001(1000)]` (TCP, the default), `[udp (100)]`, `[raw (8)]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum IcmpEchoed {
    Tcp { seq: u32, end_seq: u32, len: u32 },
    Udp(u32),
    Raw(u32),
}

/// A system call line: `name(args) = result [ERRNO [(note)]]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Syscall {
    pub name: String,
    pub args: Vec<Expr>,
    /// The expected return value (e.g. `Int(3)`, `Int(-1)`, `Ellipsis`).
    pub result: Expr,
    /// `EAGAIN (Resource temporarily unavailable)` after the result.
    pub errno: Option<Errno>,
    /// A note after the result (and errno): `= 0x2 (flags O_RDWR)`, `= -1 (Invalid Argument)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// For blocking calls written `start...end name(...)`: the end time, as
    /// written (packetdrill writes it without `+`, e.g. `+.002 ... 0.004`,
    /// which is stored as `Absolute(4000)`; `+N` is also accepted).
    pub end_time: Option<Time>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Errno {
    /// Symbolic errno name, e.g. `EAGAIN`.
    pub name: String,
    /// Free text inside the parentheses after the errno, if any.
    pub note: Option<String>,
}

/// Syscall argument / result expressions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Expr {
    /// `...`: any value / don't care.
    Ellipsis,
    /// Integer literal (decimal, negative or `0x` hex in the source).
    Int(i64),
    /// Symbolic constant, e.g. `SOL_SOCKET`, `TCP_CONGESTION`, `O_NONBLOCK`.
    Word(String),
    /// String literal: the raw text between the quotes, backslash escapes
    /// kept as written (e.g. `"cubic"` => `cubic`).
    Str(String),
    /// `A|B|C` bitwise-or of flags.
    BitOr(Vec<Expr>),
    /// `[a, b, ...]` array / pointer-to-value literal, e.g. `[1]`.
    Array(Vec<Expr>),
    /// `{...}` / `{name=value, ...}` struct literal.
    Struct(Vec<StructField>),
    /// `name(args)`, e.g. `htons(8080)`, `inet_addr("1.2.3.4")`.
    Call { name: String, args: Vec<Expr> },
    /// Adjacent string literals, concatenated (`"ab" "cd"`), at least two.
    Concat(Vec<String>),
    /// `"abc"...`: a string prefix (what follows does not matter).
    StrPrefix(String),
    /// `name=value` outside a struct literal (packetdrill's symbol assignment).
    Assign { name: String, value: Box<Expr> },
    /// `{(label 1, tc 0, [S], ttl 255) ...}`: an MPLS label stack.
    Mpls(Vec<MplsEntry>),
    /// `{flags [...] sum N off N key N seq N}`: a GRE header.
    Gre(GreHeader),
}

/// One field of a struct literal: `name=value`, `name(args)=value` (packetdrill's
/// `msg_iov(1)=[...]`, `msg_name(...)=...`) or a bare positional value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StructField {
    pub name: Option<String>,
    /// The arguments in `name(args)=value`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<Expr>>,
    pub value: Expr,
}
