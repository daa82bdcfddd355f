//! IPv4 + TCP segment building, parsing and checksums (no root needed).

use serde::Serialize;
use std::net::Ipv4Addr;
pub use trc_pkt::wire::*;

/// A parsed or to-be-built TCP/IPv4 segment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Segment {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub sport: u16,
    pub dport: u16,
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
    pub win: u16,
    pub urg_ptr: u16,
    /// IP TOS byte (ECN bits in the low 2 bits).
    pub tos: u8,
    pub options: Vec<WireOption>,
    pub payload_len: usize,
}

impl Segment {
    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
    /// Sequence space consumed by this segment (payload + SYN + FIN).
    pub fn seq_len(&self) -> u32 {
        self.payload_len as u32 + self.has(SYN) as u32 + self.has(FIN) as u32
    }
    pub fn timestamp(&self) -> Option<(u32, u32)> {
        self.options.iter().find_map(|o| match o {
            WireOption::Timestamp { val, ecr } => Some((*val, *ecr)),
            _ => None,
        })
    }
}

/// Internet checksum (RFC 1071) over `data`, starting from partial sum `init`.
pub fn ones_complement_sum(data: &[u8], init: u32) -> u32 {
    let mut sum = init;
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum += u16::from_be_bytes([c[0], c[1]]) as u32;
    }
    if let [last] = chunks.remainder() {
        sum += (*last as u32) << 8;
    }
    sum
}

pub fn fold_checksum(mut sum: u32) -> u16 {
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Checksum of an IPv4 header (checksum field included: 0 when valid).
pub fn ipv4_header_checksum(hdr: &[u8]) -> u16 {
    fold_checksum(ones_complement_sum(hdr, 0))
}

/// TCP checksum with the IPv4 pseudo header, over `tcp` (header + payload).
pub fn tcp_checksum(src: Ipv4Addr, dst: Ipv4Addr, tcp: &[u8]) -> u16 {
    let mut pseudo = [0u8; 12];
    pseudo[0..4].copy_from_slice(&src.octets());
    pseudo[4..8].copy_from_slice(&dst.octets());
    pseudo[9] = 6;
    pseudo[10..12].copy_from_slice(&(tcp.len() as u16).to_be_bytes());
    fold_checksum(ones_complement_sum(tcp, ones_complement_sum(&pseudo, 0)))
}

/// Why a segment has no IPv4 datagram.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    #[error(transparent)]
    Options(#[from] OptionsTooLong),
    /// Over an IPv4 datagram's 65535 bytes (the total).
    #[error("segment too large: {0} bytes")]
    TooLarge(usize),
}

/// Build a complete IPv4 datagram carrying `seg` with a zero-filled payload,
/// with correct IP and TCP checksums.
pub fn build_ipv4_tcp(seg: &Segment, ip_id: u16) -> Result<Vec<u8>, BuildError> {
    let opts = encode_options(&seg.options)?;
    let tcp_len = 20 + opts.len() + seg.payload_len;
    let total = 20 + tcp_len;
    if total > 65535 {
        return Err(BuildError::TooLarge(total));
    }
    let mut p = vec![0u8; total];
    p[0] = 0x45;
    p[1] = seg.tos;
    p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    p[4..6].copy_from_slice(&ip_id.to_be_bytes());
    p[6] = 0x40; // DF
    p[8] = 64;
    p[9] = 6;
    p[12..16].copy_from_slice(&seg.src.octets());
    p[16..20].copy_from_slice(&seg.dst.octets());
    let c = ipv4_header_checksum(&p[..20]);
    p[10..12].copy_from_slice(&c.to_be_bytes());
    {
        let t = &mut p[20..];
        t[0..2].copy_from_slice(&seg.sport.to_be_bytes());
        t[2..4].copy_from_slice(&seg.dport.to_be_bytes());
        t[4..8].copy_from_slice(&seg.seq.to_be_bytes());
        t[8..12].copy_from_slice(&seg.ack.to_be_bytes());
        t[12] = (((20 + opts.len()) / 4) as u8) << 4;
        t[13] = seg.flags;
        t[14..16].copy_from_slice(&seg.win.to_be_bytes());
        t[18..20].copy_from_slice(&seg.urg_ptr.to_be_bytes());
        t[20..20 + opts.len()].copy_from_slice(&opts);
    }
    let c = tcp_checksum(seg.src, seg.dst, &p[20..]);
    p[36..38].copy_from_slice(&c.to_be_bytes());
    Ok(p)
}

/// Why a captured frame is not a TCP/IPv4 segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseOutcome {
    NotIpv4,
    NotTcp(u8),
    Malformed(String),
}

/// Parse an IPv4 datagram carrying TCP. Outbound TCP checksums are not
/// verified (the kernel may leave them partial for offload); the IP header
/// checksum is checked.
pub fn parse_ipv4_tcp(p: &[u8]) -> Result<Segment, ParseOutcome> {
    if p.len() < 20 || p[0] >> 4 != 4 {
        return Err(ParseOutcome::NotIpv4);
    }
    let ihl = (p[0] & 0x0f) as usize * 4;
    if ihl < 20 || p.len() < ihl {
        return Err(ParseOutcome::Malformed("bad IPv4 header length".into()));
    }
    if p[9] != 6 {
        return Err(ParseOutcome::NotTcp(p[9]));
    }
    if ipv4_header_checksum(&p[..ihl]) != 0 {
        return Err(ParseOutcome::Malformed("bad IPv4 header checksum".into()));
    }
    let total = u16::from_be_bytes([p[2], p[3]]) as usize;
    if total < ihl + 20 || total > p.len() {
        return Err(ParseOutcome::Malformed(format!(
            "bad IPv4 total length {total} (frame {})",
            p.len()
        )));
    }
    let t = &p[ihl..total];
    let doff = (t[12] >> 4) as usize * 4;
    if doff < 20 || doff > t.len() {
        return Err(ParseOutcome::Malformed("bad TCP data offset".into()));
    }
    let options =
        decode_options(&t[20..doff]).map_err(|e| ParseOutcome::Malformed(e.to_string()))?;
    Ok(Segment {
        src: Ipv4Addr::new(p[12], p[13], p[14], p[15]),
        dst: Ipv4Addr::new(p[16], p[17], p[18], p[19]),
        sport: u16::from_be_bytes([t[0], t[1]]),
        dport: u16::from_be_bytes([t[2], t[3]]),
        seq: u32::from_be_bytes([t[4], t[5], t[6], t[7]]),
        ack: u32::from_be_bytes([t[8], t[9], t[10], t[11]]),
        flags: t[13],
        win: u16::from_be_bytes([t[14], t[15]]),
        urg_ptr: u16::from_be_bytes([t[18], t[19]]),
        tos: p[1],
        options,
        payload_len: t.len() - doff,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Segment {
        Segment {
            src: Ipv4Addr::new(192, 0, 2, 1),
            dst: Ipv4Addr::new(192, 168, 0, 1),
            sport: 40000,
            dport: 8080,
            seq: 0xdeadbeef,
            ack: 12345,
            flags: ACK | PSH,
            win: 257,
            urg_ptr: 0,
            tos: 0,
            options: vec![
                WireOption::Nop,
                WireOption::Nop,
                WireOption::Timestamp { val: 100, ecr: 200 },
                WireOption::Nop,
                WireOption::Nop,
                WireOption::Sack {
                    blocks: vec![(1001, 2001), (3001, 4001)],
                },
            ],
            payload_len: 7,
        }
    }

    #[test]
    fn rfc1071_example() {
        // Example from RFC 1071 section 3: sum of 0001 f203 f4f5 f6f7 = 2ddf0 -> ddf2, complement 220d.
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(fold_checksum(ones_complement_sum(&data, 0)), 0x220d);
        // Odd length pads with zero.
        assert_eq!(fold_checksum(ones_complement_sum(&[0xff], 0)), !0xff00u16);
    }

    #[test]
    fn build_then_parse_round_trips_and_checksums_verify() {
        let s = sample();
        let p = build_ipv4_tcp(&s, 7).unwrap();
        assert_eq!(p.len(), 20 + 20 + 32 + 7);
        assert_eq!(ipv4_header_checksum(&p[..20]), 0);
        // A correct TCP checksum sums to zero including the pseudo header.
        assert_eq!(tcp_checksum(s.src, s.dst, &p[20..]), 0);
        let q = parse_ipv4_tcp(&p).unwrap();
        assert_eq!(q, s);
        assert_eq!(q.timestamp(), Some((100, 200)));
    }

    #[test]
    fn known_syn_checksum() {
        // A SYN with MSS: recompute checksum independently by zeroing the field.
        let s = Segment {
            src: Ipv4Addr::new(10, 0, 0, 1),
            dst: Ipv4Addr::new(10, 0, 0, 2),
            sport: 1,
            dport: 2,
            seq: 0,
            ack: 0,
            flags: SYN,
            win: 65535,
            urg_ptr: 0,
            tos: 0,
            options: vec![WireOption::Mss { mss: 1460 }],
            payload_len: 0,
        };
        let mut p = build_ipv4_tcp(&s, 0).unwrap();
        let stored = u16::from_be_bytes([p[36], p[37]]);
        p[36] = 0;
        p[37] = 0;
        assert_eq!(tcp_checksum(s.src, s.dst, &p[20..]), stored);
        assert_ne!(stored, 0);
    }

    #[test]
    fn option_padding_and_limits() {
        assert_eq!(
            encode_options(&[WireOption::WScale { shift: 7 }]).unwrap(),
            vec![3, 3, 7, 0]
        );
        let too_many = vec![WireOption::Sack {
            blocks: vec![(1, 2); 5],
        }];
        assert!(encode_options(&too_many).is_err());
    }

    #[test]
    fn parse_rejects_garbage() {
        assert_eq!(parse_ipv4_tcp(&[]), Err(ParseOutcome::NotIpv4));
        assert_eq!(parse_ipv4_tcp(&[0x60; 40]), Err(ParseOutcome::NotIpv4));
        let mut p = build_ipv4_tcp(&sample(), 1).unwrap();
        p[9] = 17;
        assert!(matches!(
            parse_ipv4_tcp(&p),
            Err(ParseOutcome::NotTcp(17)) | Err(ParseOutcome::Malformed(_))
        ));
        let mut p = build_ipv4_tcp(&sample(), 1).unwrap();
        p[40 + 3] = 0xff; // TS option length runs past the option area
        assert!(parse_ipv4_tcp(&p).is_err());
        // Truncated frames never panic.
        let p = build_ipv4_tcp(&sample(), 1).unwrap();
        for n in 0..p.len() {
            let _ = parse_ipv4_tcp(&p[..n]);
        }
    }

    #[test]
    fn describe_formats_like_packetdrill() {
        assert_eq!(
            describe(PSH | ACK, 1, 1000, Some(1), None, &[]),
            "P. 1:1001(1000) ack 1"
        );
        assert_eq!(
            describe(
                SYN | ACK,
                0,
                0,
                Some(1),
                None,
                &[
                    WireOption::Mss { mss: 1460 },
                    WireOption::Nop,
                    WireOption::WScale { shift: 8 }
                ]
            ),
            "S. 0:0(0) ack 1 <mss 1460,nop,wscale 8>"
        );
    }
}
