//! TCP on the wire, as both backends see it: flag bits, options as carried (raw values), their
//! encoding and decoding, and packetdrill-style text. The IPv4 framing and checksums are the
//! kernel runner's (`trc-kernel`'s `packet` module).

use serde::Serialize;
use std::fmt;

/// TCP flag bits as they sit in byte 13 of the TCP header.
pub const FIN: u8 = 0x01;
pub const SYN: u8 = 0x02;
pub const RST: u8 = 0x04;
pub const PSH: u8 = 0x08;
pub const ACK: u8 = 0x10;
pub const URG: u8 = 0x20;
pub const ECE: u8 = 0x40;
pub const CWR: u8 = 0x80;

/// A TCP option as carried on the wire (values are raw wire values).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum WireOption {
    Eol,
    Nop,
    Mss {
        mss: u16,
    },
    WScale {
        shift: u8,
    },
    SackOk,
    Sack {
        blocks: Vec<(u32, u32)>,
    },
    Timestamp {
        val: u32,
        ecr: u32,
    },
    /// Kind 19, the digest.
    Md5 {
        digest: Vec<u8>,
    },
    /// Kind 34 (RFC 7413), the cookie (may be empty: a cookie request).
    FastOpen {
        cookie: Vec<u8>,
    },
    /// Kind 254 with magic 0xF989 (the experimental Fast Open option), the cookie.
    FastOpenExp {
        cookie: Vec<u8>,
    },
    Unknown {
        kind: u8,
        data: Vec<u8>,
    },
}

/// The magic of the experimental Fast Open option (kind 254).
pub const FASTOPEN_EXP_MAGIC: u16 = 0xF989;

/// A segment's TCP flags (byte 13 of the header). Serialised as packetdrill's letters (`S.`,
/// `P.`, `-` for none), as [`fmt::Display`] writes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct TcpFlags(pub u8);

impl TcpFlags {
    pub fn has(self, bit: u8) -> bool {
        self.0 & bit != 0
    }
    pub fn syn(self) -> bool {
        self.has(SYN)
    }
    pub fn ack(self) -> bool {
        self.has(ACK)
    }
    pub fn fin(self) -> bool {
        self.has(FIN)
    }
    pub fn rst(self) -> bool {
        self.has(RST)
    }
}

impl fmt::Display for TcpFlags {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&flags_to_string(self.0))
    }
}

/// A letter of a flags text that is not a TCP flag.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{letter}` in `{text}` is not a TCP flag")]
pub struct NotAFlag {
    pub letter: char,
    pub text: String,
}

impl std::str::FromStr for TcpFlags {
    type Err = NotAFlag;
    /// packetdrill's letters (`S`, `F`, `R`, `P`, `.`, `U`, `E`, `W`; `-` for none).
    fn from_str(s: &str) -> Result<TcpFlags, NotAFlag> {
        let mut b = 0;
        for c in s.chars() {
            b |= match c {
                'S' => SYN,
                'F' => FIN,
                'R' => RST,
                'P' => PSH,
                '.' => ACK,
                'U' => URG,
                'E' => ECE,
                'W' => CWR,
                '-' => 0,
                _ => {
                    return Err(NotAFlag {
                        letter: c,
                        text: s.to_string(),
                    })
                }
            };
        }
        Ok(TcpFlags(b))
    }
}

impl Serialize for TcpFlags {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for TcpFlags {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<TcpFlags, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// packetdrill letters for a flag byte, e.g. `P.` or `S.`.
pub fn flags_to_string(flags: u8) -> String {
    let mut s = String::new();
    for (bit, c) in [
        (SYN, 'S'),
        (FIN, 'F'),
        (RST, 'R'),
        (PSH, 'P'),
        (ACK, '.'),
        (URG, 'U'),
        (ECE, 'E'),
        (CWR, 'W'),
    ] {
        if flags & bit != 0 {
            s.push(c);
        }
    }
    if s.is_empty() {
        s.push('-');
    }
    s
}

impl fmt::Display for WireOption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireOption::Eol => write!(f, "eol"),
            WireOption::Nop => write!(f, "nop"),
            WireOption::Mss { mss } => write!(f, "mss {mss}"),
            WireOption::WScale { shift } => write!(f, "wscale {shift}"),
            WireOption::SackOk => write!(f, "sackOK"),
            WireOption::Sack { blocks } => {
                write!(f, "sack")?;
                for (a, b) in blocks {
                    write!(f, " {a}:{b}")?;
                }
                Ok(())
            }
            WireOption::Timestamp { val, ecr } => write!(f, "TS val {val} ecr {ecr}"),
            WireOption::Md5 { digest } => write!(f, "md5 {}", hex(digest)),
            WireOption::FastOpen { cookie } if cookie.is_empty() => write!(f, "FO"),
            WireOption::FastOpen { cookie } => write!(f, "FO {}", hex(cookie)),
            WireOption::FastOpenExp { cookie } if cookie.is_empty() => write!(f, "FOEXP"),
            WireOption::FastOpenExp { cookie } => write!(f, "FOEXP {}", hex(cookie)),
            WireOption::Unknown { kind, data } => write!(f, "opt{kind}[{}]", data.len()),
        }
    }
}

/// Format in packetdrill style: `P. 1:1001(1000) ack 1 win 502 <nop,nop,TS val 1 ecr 2>`.
pub fn describe(
    flags: u8,
    seq: u32,
    len: usize,
    ack: Option<u32>,
    win: Option<u16>,
    opts: &[WireOption],
) -> String {
    let mut s = format!(
        "{} {}:{}({})",
        flags_to_string(flags),
        seq,
        seq.wrapping_add(len as u32),
        len
    );
    if let Some(a) = ack {
        s.push_str(&format!(" ack {a}"));
    }
    if let Some(w) = win {
        s.push_str(&format!(" win {w}"));
    }
    if !opts.is_empty() {
        let o: Vec<String> = opts.iter().map(|o| o.to_string()).collect();
        s.push_str(&format!(" <{}>", o.join(",")));
    }
    s
}

/// Options that take more than the 40 bytes a TCP header has room for (their padded length).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("TCP options too long: {0} bytes (max 40)")]
pub struct OptionsTooLong(pub usize);

/// An option whose length byte is below 2 or runs past the option area (its kind).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed TCP option kind {0}")]
pub struct MalformedOption(pub u8);

/// Serialize TCP options, padded with EOL (zero) bytes to a multiple of 4.
pub fn encode_options(opts: &[WireOption]) -> Result<Vec<u8>, OptionsTooLong> {
    let mut b = Vec::new();
    for o in opts {
        match o {
            WireOption::Eol => b.push(0),
            WireOption::Nop => b.push(1),
            WireOption::Mss { mss } => {
                b.extend_from_slice(&[2, 4]);
                b.extend_from_slice(&mss.to_be_bytes());
            }
            WireOption::WScale { shift } => b.extend_from_slice(&[3, 3, *shift]),
            WireOption::SackOk => b.extend_from_slice(&[4, 2]),
            WireOption::Sack { blocks } => {
                b.extend_from_slice(&[5, (2 + 8 * blocks.len()) as u8]);
                for (l, r) in blocks {
                    b.extend_from_slice(&l.to_be_bytes());
                    b.extend_from_slice(&r.to_be_bytes());
                }
            }
            WireOption::Timestamp { val, ecr } => {
                b.extend_from_slice(&[8, 10]);
                b.extend_from_slice(&val.to_be_bytes());
                b.extend_from_slice(&ecr.to_be_bytes());
            }
            WireOption::Md5 { digest } => {
                b.extend_from_slice(&[19, (2 + digest.len()) as u8]);
                b.extend_from_slice(digest);
            }
            WireOption::FastOpen { cookie } => {
                b.extend_from_slice(&[34, (2 + cookie.len()) as u8]);
                b.extend_from_slice(cookie);
            }
            WireOption::FastOpenExp { cookie } => {
                b.extend_from_slice(&[254, (4 + cookie.len()) as u8]);
                b.extend_from_slice(&FASTOPEN_EXP_MAGIC.to_be_bytes());
                b.extend_from_slice(cookie);
            }
            WireOption::Unknown { kind, data } => {
                b.push(*kind);
                b.push((data.len() + 2) as u8);
                b.extend_from_slice(data);
            }
        }
    }
    while b.len() % 4 != 0 {
        b.push(0);
    }
    if b.len() > 40 {
        return Err(OptionsTooLong(b.len()));
    }
    Ok(b)
}

/// Parse a TCP option area.
pub fn decode_options(mut b: &[u8]) -> Result<Vec<WireOption>, MalformedOption> {
    let mut out = Vec::new();
    while let Some(&kind) = b.first() {
        match kind {
            0 => {
                // EOL: the rest is padding.
                break;
            }
            1 => {
                out.push(WireOption::Nop);
                b = &b[1..];
            }
            _ => {
                if b.len() < 2 || (b[1] as usize) < 2 || b[1] as usize > b.len() {
                    return Err(MalformedOption(kind));
                }
                let len = b[1] as usize;
                let d = &b[2..len];
                let o = match (kind, len) {
                    (2, 4) => WireOption::Mss {
                        mss: u16::from_be_bytes([d[0], d[1]]),
                    },
                    (3, 3) => WireOption::WScale { shift: d[0] },
                    (4, 2) => WireOption::SackOk,
                    (5, l) if (l - 2) % 8 == 0 => WireOption::Sack {
                        blocks: d
                            .chunks_exact(8)
                            .map(|c| {
                                (
                                    u32::from_be_bytes([c[0], c[1], c[2], c[3]]),
                                    u32::from_be_bytes([c[4], c[5], c[6], c[7]]),
                                )
                            })
                            .collect(),
                    },
                    (8, 10) => WireOption::Timestamp {
                        val: u32::from_be_bytes([d[0], d[1], d[2], d[3]]),
                        ecr: u32::from_be_bytes([d[4], d[5], d[6], d[7]]),
                    },
                    (19, _) => WireOption::Md5 { digest: d.to_vec() },
                    (34, _) => WireOption::FastOpen { cookie: d.to_vec() },
                    (254, l)
                        if l >= 4 && u16::from_be_bytes([d[0], d[1]]) == FASTOPEN_EXP_MAGIC =>
                    {
                        WireOption::FastOpenExp {
                            cookie: d[2..].to_vec(),
                        }
                    }
                    _ => WireOption::Unknown {
                        kind,
                        data: d.to_vec(),
                    },
                };
                out.push(o);
                b = &b[len..];
            }
        }
    }
    Ok(out)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A script's cookie or digest (as written) that is neither hex bytes nor a `-D` definition.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{0}' is not an even number of hex digits (nor a -D definition)")]
pub struct NotHex(pub String);

/// The bytes of a hex cookie or digest as written in a script, `-D` definitions applied
/// (`TFO_COOKIE` → the defined hex string).
pub fn unhex(text: &str, defines: &dyn Fn(&str) -> Option<String>) -> Result<Vec<u8>, NotHex> {
    let t = defines(text).unwrap_or_else(|| text.to_string());
    if !t.len().is_multiple_of(2) || !t.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(NotHex(text.to_string()));
    }
    Ok((0..t.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&t[i..i + 2], 16).unwrap_or(0))
        .collect())
}

/// The flag byte of a script packet's flags.
pub fn flag_bits(f: &crate::ast::TcpFlags) -> u8 {
    let mut b = 0;
    for (on, bit) in [
        (f.syn, SYN),
        (f.fin, FIN),
        (f.rst, RST),
        (f.psh, PSH),
        (f.ack, ACK),
        (f.urg, URG),
        (f.ece, ECE),
        (f.cwr, CWR),
    ] {
        if on {
            b |= bit;
        }
    }
    b
}

/// A script option as it goes on the wire (sequence numbers and TS echo still in script space;
/// the caller maps them). `defines` resolves `-D` names used as cookies.
pub fn from_script(
    o: &crate::ast::TcpOption,
    defines: &dyn Fn(&str) -> Option<String>,
) -> Result<WireOption, NotHex> {
    use crate::ast::TcpOption as T;
    Ok(match o {
        T::Nop => WireOption::Nop,
        T::Eol => WireOption::Eol,
        T::Mss(v) => WireOption::Mss { mss: *v },
        T::WScale(v) => WireOption::WScale { shift: *v },
        T::SackOk => WireOption::SackOk,
        T::Sack(b) => WireOption::Sack { blocks: b.clone() },
        T::Timestamp { val, ecr } => WireOption::Timestamp {
            val: *val,
            ecr: *ecr,
        },
        T::Md5(d) => WireOption::Md5 {
            digest: unhex(d, defines)?,
        },
        T::FastOpen(c) => WireOption::FastOpen {
            cookie: c
                .as_deref()
                .map(|c| unhex(c, defines))
                .transpose()?
                .unwrap_or_default(),
        },
        T::FastOpenExp(c) => WireOption::FastOpenExp {
            cookie: c
                .as_deref()
                .map(|c| unhex(c, defines))
                .transpose()?
                .unwrap_or_default(),
        },
        T::AccEcn(fields) => accecn(fields),
    })
}

/// The AccECN option (kind 172 when the counters start with e0b, 174 with e1b; 3 bytes each),
/// as packetdrill's `new_tcp_accecn_option` lays it out.
fn accecn(fields: &[(crate::ast::AccEcnField, u32)]) -> WireOption {
    let kind = match fields.first() {
        Some((crate::ast::AccEcnField::E1b, _)) => 174,
        _ => 172,
    };
    let data = fields
        .iter()
        .flat_map(|(_, v)| v.to_be_bytes()[1..].to_vec())
        .collect();
    WireOption::Unknown { kind, data }
}
