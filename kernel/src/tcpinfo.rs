//! `struct tcp_info` (Linux 6.x `include/uapi/linux/tcp.h`) and field lookup by
//! packetdrill name (`tcpi_snd_cwnd`, ...).

use serde::{Deserialize, Serialize};

/// Layout of `struct tcp_info` as of Linux 6.7+ (fields after `tcpi_snd_wnd`
/// were appended over time; the kernel copies `min(optlen, sizeof)` bytes and
/// the rest stays zero).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct TcpInfoRaw {
    pub tcpi_state: u8,
    pub tcpi_ca_state: u8,
    pub tcpi_retransmits: u8,
    pub tcpi_probes: u8,
    pub tcpi_backoff: u8,
    pub tcpi_options: u8,
    /// `tcpi_snd_wscale : 4, tcpi_rcv_wscale : 4` (snd in the low nibble on x86).
    pub wscale_bits: u8,
    /// `tcpi_delivery_rate_app_limited:1, tcpi_fastopen_client_fail:2`.
    pub app_limited_bits: u8,

    pub tcpi_rto: u32,
    pub tcpi_ato: u32,
    pub tcpi_snd_mss: u32,
    pub tcpi_rcv_mss: u32,

    pub tcpi_unacked: u32,
    pub tcpi_sacked: u32,
    pub tcpi_lost: u32,
    pub tcpi_retrans: u32,
    pub tcpi_fackets: u32,

    pub tcpi_last_data_sent: u32,
    pub tcpi_last_ack_sent: u32,
    pub tcpi_last_data_recv: u32,
    pub tcpi_last_ack_recv: u32,

    pub tcpi_pmtu: u32,
    pub tcpi_rcv_ssthresh: u32,
    pub tcpi_rtt: u32,
    pub tcpi_rttvar: u32,
    pub tcpi_snd_ssthresh: u32,
    pub tcpi_snd_cwnd: u32,
    pub tcpi_advmss: u32,
    pub tcpi_reordering: u32,

    pub tcpi_rcv_rtt: u32,
    pub tcpi_rcv_space: u32,

    pub tcpi_total_retrans: u32,

    pub tcpi_pacing_rate: u64,
    pub tcpi_max_pacing_rate: u64,
    pub tcpi_bytes_acked: u64,
    pub tcpi_bytes_received: u64,
    pub tcpi_segs_out: u32,
    pub tcpi_segs_in: u32,

    pub tcpi_notsent_bytes: u32,
    pub tcpi_min_rtt: u32,
    pub tcpi_data_segs_in: u32,
    pub tcpi_data_segs_out: u32,

    pub tcpi_delivery_rate: u64,

    pub tcpi_busy_time: u64,
    pub tcpi_rwnd_limited: u64,
    pub tcpi_sndbuf_limited: u64,

    pub tcpi_delivered: u32,
    pub tcpi_delivered_ce: u32,

    pub tcpi_bytes_sent: u64,
    pub tcpi_bytes_retrans: u64,
    pub tcpi_dsack_dups: u32,
    pub tcpi_reord_seen: u32,

    pub tcpi_rcv_ooopack: u32,

    pub tcpi_snd_wnd: u32,
    pub tcpi_rcv_wnd: u32,

    pub tcpi_rehash: u32,

    pub tcpi_total_rto: u16,
    pub tcpi_total_rto_recoveries: u16,
    pub tcpi_total_rto_time: u32,
    /// The AccECN counters (Linux 6.18).
    pub tcpi_received_ce: u32,
    pub tcpi_delivered_e1_bytes: u32,
    pub tcpi_delivered_e0_bytes: u32,
    pub tcpi_delivered_ce_bytes: u32,
    pub tcpi_received_e1_bytes: u32,
    pub tcpi_received_e0_bytes: u32,
    pub tcpi_received_ce_bytes: u32,
    /// `tcpi_ecn_mode:2, tcpi_accecn_opt_seen:2, tcpi_accecn_fail_mode:4, tcpi_options2:24`.
    pub ecn_bits: u32,
    /// Room for fields newer kernels append.
    pub _tail: [u32; 8],
}

/// Where each field ends in the struct: a field is there only if the kernel returned that many
/// bytes (an older kernel returns a shorter `struct tcp_info`).
fn end_offset(name: &str) -> usize {
    use std::mem::offset_of;
    macro_rules! end {
        ($f:ident, $t:ty) => {
            offset_of!(TcpInfoRaw, $f) + std::mem::size_of::<$t>()
        };
    }
    match name {
        "tcpi_state"
        | "tcpi_ca_state"
        | "tcpi_retransmits"
        | "tcpi_probes"
        | "tcpi_backoff"
        | "tcpi_options"
        | "tcpi_snd_wscale"
        | "tcpi_rcv_wscale"
        | "tcpi_delivery_rate_app_limited" => 8,
        "tcpi_total_rto" | "tcpi_total_rto_recoveries" => end!(tcpi_total_rto_recoveries, u16),
        "tcpi_ecn_mode" | "tcpi_accecn_opt_seen" | "tcpi_accecn_fail_mode" | "tcpi_options2" => {
            end!(ecn_bits, u32)
        }
        "tcpi_received_ce" => end!(tcpi_received_ce, u32),
        "tcpi_delivered_e1_bytes" => end!(tcpi_delivered_e1_bytes, u32),
        "tcpi_delivered_e0_bytes" => end!(tcpi_delivered_e0_bytes, u32),
        "tcpi_delivered_ce_bytes" => end!(tcpi_delivered_ce_bytes, u32),
        "tcpi_received_e1_bytes" => end!(tcpi_received_e1_bytes, u32),
        "tcpi_received_e0_bytes" => end!(tcpi_received_e0_bytes, u32),
        "tcpi_received_ce_bytes" => end!(tcpi_received_ce_bytes, u32),
        "tcpi_total_rto_time" => end!(tcpi_total_rto_time, u32),
        "tcpi_rehash" => end!(tcpi_rehash, u32),
        "tcpi_snd_wnd" => end!(tcpi_snd_wnd, u32),
        "tcpi_rcv_wnd" => end!(tcpi_rcv_wnd, u32),
        "tcpi_rcv_ooopack" => end!(tcpi_rcv_ooopack, u32),
        "tcpi_bytes_sent" | "tcpi_bytes_retrans" | "tcpi_dsack_dups" | "tcpi_reord_seen" => {
            end!(tcpi_reord_seen, u32)
        }
        "tcpi_delivered" | "tcpi_delivered_ce" => end!(tcpi_delivered_ce, u32),
        "tcpi_busy_time" | "tcpi_rwnd_limited" | "tcpi_sndbuf_limited" => {
            end!(tcpi_sndbuf_limited, u64)
        }
        "tcpi_delivery_rate" => end!(tcpi_delivery_rate, u64),
        _ => end!(tcpi_data_segs_out, u32),
    }
}

impl TcpInfoRaw {
    /// Every `tcpi_*` name packetdrill binds that the kernel filled in (`len`: the length
    /// `getsockopt` returned), and the names it did not.
    pub fn values(&self, len: usize) -> (Vec<(&'static str, u64)>, Vec<&'static str>) {
        let mut have = Vec::with_capacity(trc_pkt::symbols::TCPI_FIELDS.len());
        let mut missing = Vec::new();
        for n in trc_pkt::symbols::TCPI_FIELDS {
            match self.get(n) {
                Some(v) if end_offset(n) <= len => have.push((*n, v as u64)),
                _ => missing.push(*n),
            }
        }
        (have, missing)
    }

    /// Value of a field by its packetdrill name; `None` for an unknown name.
    pub fn get(&self, name: &str) -> Option<i64> {
        let v: i64 = match name {
            "tcpi_state" => self.tcpi_state as i64,
            "tcpi_ca_state" => self.tcpi_ca_state as i64,
            "tcpi_retransmits" => self.tcpi_retransmits as i64,
            "tcpi_probes" => self.tcpi_probes as i64,
            "tcpi_backoff" => self.tcpi_backoff as i64,
            "tcpi_options" => self.tcpi_options as i64,
            "tcpi_snd_wscale" => (self.wscale_bits & 0x0f) as i64,
            "tcpi_rcv_wscale" => (self.wscale_bits >> 4) as i64,
            "tcpi_delivery_rate_app_limited" => (self.app_limited_bits & 1) as i64,
            "tcpi_fastopen_client_fail" => ((self.app_limited_bits >> 1) & 3) as i64,
            "tcpi_rto" => self.tcpi_rto as i64,
            "tcpi_ato" => self.tcpi_ato as i64,
            "tcpi_snd_mss" => self.tcpi_snd_mss as i64,
            "tcpi_rcv_mss" => self.tcpi_rcv_mss as i64,
            "tcpi_unacked" => self.tcpi_unacked as i64,
            "tcpi_sacked" => self.tcpi_sacked as i64,
            "tcpi_lost" => self.tcpi_lost as i64,
            "tcpi_retrans" => self.tcpi_retrans as i64,
            "tcpi_fackets" => self.tcpi_fackets as i64,
            "tcpi_last_data_sent" => self.tcpi_last_data_sent as i64,
            "tcpi_last_ack_sent" => self.tcpi_last_ack_sent as i64,
            "tcpi_last_data_recv" => self.tcpi_last_data_recv as i64,
            "tcpi_last_ack_recv" => self.tcpi_last_ack_recv as i64,
            "tcpi_pmtu" => self.tcpi_pmtu as i64,
            "tcpi_rcv_ssthresh" => self.tcpi_rcv_ssthresh as i64,
            "tcpi_rtt" => self.tcpi_rtt as i64,
            "tcpi_rttvar" => self.tcpi_rttvar as i64,
            "tcpi_snd_ssthresh" => self.tcpi_snd_ssthresh as i64,
            "tcpi_snd_cwnd" => self.tcpi_snd_cwnd as i64,
            "tcpi_advmss" => self.tcpi_advmss as i64,
            "tcpi_reordering" => self.tcpi_reordering as i64,
            "tcpi_rcv_rtt" => self.tcpi_rcv_rtt as i64,
            "tcpi_rcv_space" => self.tcpi_rcv_space as i64,
            "tcpi_total_retrans" => self.tcpi_total_retrans as i64,
            "tcpi_pacing_rate" => self.tcpi_pacing_rate as i64,
            "tcpi_max_pacing_rate" => self.tcpi_max_pacing_rate as i64,
            "tcpi_bytes_acked" => self.tcpi_bytes_acked as i64,
            "tcpi_bytes_received" => self.tcpi_bytes_received as i64,
            "tcpi_segs_out" => self.tcpi_segs_out as i64,
            "tcpi_segs_in" => self.tcpi_segs_in as i64,
            "tcpi_notsent_bytes" => self.tcpi_notsent_bytes as i64,
            "tcpi_min_rtt" => self.tcpi_min_rtt as i64,
            "tcpi_data_segs_in" => self.tcpi_data_segs_in as i64,
            "tcpi_data_segs_out" => self.tcpi_data_segs_out as i64,
            "tcpi_delivery_rate" => self.tcpi_delivery_rate as i64,
            "tcpi_busy_time" => self.tcpi_busy_time as i64,
            "tcpi_rwnd_limited" => self.tcpi_rwnd_limited as i64,
            "tcpi_sndbuf_limited" => self.tcpi_sndbuf_limited as i64,
            "tcpi_delivered" => self.tcpi_delivered as i64,
            "tcpi_delivered_ce" => self.tcpi_delivered_ce as i64,
            "tcpi_bytes_sent" => self.tcpi_bytes_sent as i64,
            "tcpi_bytes_retrans" => self.tcpi_bytes_retrans as i64,
            "tcpi_dsack_dups" => self.tcpi_dsack_dups as i64,
            "tcpi_reord_seen" => self.tcpi_reord_seen as i64,
            "tcpi_rcv_ooopack" => self.tcpi_rcv_ooopack as i64,
            "tcpi_snd_wnd" => self.tcpi_snd_wnd as i64,
            "tcpi_rcv_wnd" => self.tcpi_rcv_wnd as i64,
            "tcpi_rehash" => self.tcpi_rehash as i64,
            "tcpi_total_rto" => self.tcpi_total_rto as i64,
            "tcpi_total_rto_recoveries" => self.tcpi_total_rto_recoveries as i64,
            "tcpi_total_rto_time" => self.tcpi_total_rto_time as i64,
            "tcpi_received_ce" => self.tcpi_received_ce as i64,
            "tcpi_delivered_e1_bytes" => self.tcpi_delivered_e1_bytes as i64,
            "tcpi_delivered_e0_bytes" => self.tcpi_delivered_e0_bytes as i64,
            "tcpi_delivered_ce_bytes" => self.tcpi_delivered_ce_bytes as i64,
            "tcpi_received_e1_bytes" => self.tcpi_received_e1_bytes as i64,
            "tcpi_received_e0_bytes" => self.tcpi_received_e0_bytes as i64,
            "tcpi_received_ce_bytes" => self.tcpi_received_ce_bytes as i64,
            "tcpi_ecn_mode" => (self.ecn_bits & 3) as i64,
            "tcpi_accecn_opt_seen" => ((self.ecn_bits >> 2) & 3) as i64,
            "tcpi_accecn_fail_mode" => ((self.ecn_bits >> 4) & 0xf) as i64,
            "tcpi_options2" => (self.ecn_bits >> 8) as i64,
            _ => return None,
        };
        Some(v)
    }

    /// The recovery-relevant subset, for traces.
    pub fn summary(&self) -> TcpInfoSnapshot {
        TcpInfoSnapshot {
            state: self.tcpi_state,
            ca_state: self.tcpi_ca_state,
            ca_state_name: trc_pkt::symbols::ca_state_name(self.tcpi_ca_state as u64)
                .unwrap_or("?")
                .to_string(),
            snd_cwnd: self.tcpi_snd_cwnd,
            snd_ssthresh: self.tcpi_snd_ssthresh,
            unacked: self.tcpi_unacked,
            sacked: self.tcpi_sacked,
            lost: self.tcpi_lost,
            retrans: self.tcpi_retrans,
            total_retrans: self.tcpi_total_retrans,
            reordering: self.tcpi_reordering,
            retransmits: self.tcpi_retransmits,
            backoff: self.tcpi_backoff,
            rto_us: self.tcpi_rto,
            rtt_us: self.tcpi_rtt,
            rttvar_us: self.tcpi_rttvar,
            delivered: self.tcpi_delivered,
            dsack_dups: self.tcpi_dsack_dups,
            bytes_retrans: self.tcpi_bytes_retrans,
        }
    }
}

/// The fields a loss-recovery trace needs. (`Default`: all zero, for hand-made traces in tests.)
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TcpInfoSnapshot {
    pub state: u8,
    pub ca_state: u8,
    pub ca_state_name: String,
    pub snd_cwnd: u32,
    pub snd_ssthresh: u32,
    pub unacked: u32,
    pub sacked: u32,
    pub lost: u32,
    pub retrans: u32,
    pub total_retrans: u32,
    pub reordering: u32,
    pub retransmits: u8,
    pub backoff: u8,
    pub rto_us: u32,
    pub rtt_us: u32,
    pub rttvar_us: u32,
    pub delivered: u32,
    pub dsack_dups: u32,
    pub bytes_retrans: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    #[test]
    fn layout_matches_uapi_offsets() {
        // Offsets from include/uapi/linux/tcp.h (x86_64).
        assert_eq!(offset_of!(TcpInfoRaw, tcpi_rto), 8);
        assert_eq!(offset_of!(TcpInfoRaw, tcpi_unacked), 24);
        assert_eq!(offset_of!(TcpInfoRaw, tcpi_rtt), 68);
        assert_eq!(offset_of!(TcpInfoRaw, tcpi_snd_ssthresh), 76);
        assert_eq!(offset_of!(TcpInfoRaw, tcpi_snd_cwnd), 80);
        assert_eq!(offset_of!(TcpInfoRaw, tcpi_total_retrans), 100);
        assert_eq!(offset_of!(TcpInfoRaw, tcpi_pacing_rate), 104);
        assert_eq!(offset_of!(TcpInfoRaw, tcpi_segs_out), 136);
        assert_eq!(offset_of!(TcpInfoRaw, tcpi_delivery_rate), 160);
        assert_eq!(offset_of!(TcpInfoRaw, tcpi_delivered), 192);
        assert_eq!(offset_of!(TcpInfoRaw, tcpi_bytes_sent), 200);
        assert_eq!(offset_of!(TcpInfoRaw, tcpi_snd_wnd), 228);
        assert_eq!(offset_of!(TcpInfoRaw, tcpi_total_rto), 240);
        assert_eq!(offset_of!(TcpInfoRaw, tcpi_total_rto_time), 244);
        assert_eq!(offset_of!(TcpInfoRaw, tcpi_received_ce), 248);
        assert_eq!(offset_of!(TcpInfoRaw, ecn_bits), 276);
        assert!(size_of::<TcpInfoRaw>() >= 280);
    }

    #[test]
    fn every_named_field_resolves() {
        let t = TcpInfoRaw {
            tcpi_snd_cwnd: 7,
            tcpi_ca_state: 3,
            wscale_bits: 0x87,
            ..Default::default()
        };
        for n in trc_pkt::symbols::TCPI_FIELDS {
            assert!(t.get(n).is_some(), "{n}");
        }
        // A 6.1-sized struct (up to tcpi_rcv_wnd) lacks the newer names.
        let (have, missing) = t.values(236);
        let has = |n: &str| have.iter().any(|(k, _)| *k == n);
        assert!(has("tcpi_snd_cwnd") && has("tcpi_rcv_wnd"));
        assert!(missing.contains(&"tcpi_rehash") && missing.contains(&"tcpi_received_ce"));
        assert_eq!(
            t.values(std::mem::size_of::<TcpInfoRaw>()).1,
            Vec::<&str>::new()
        );
        assert_eq!(t.get("tcpi_snd_cwnd"), Some(7));
        assert_eq!(t.get("tcpi_snd_wscale"), Some(7));
        assert_eq!(t.get("tcpi_rcv_wscale"), Some(8));
        assert_eq!(t.get("tcpi_bogus"), None);
    }
}
