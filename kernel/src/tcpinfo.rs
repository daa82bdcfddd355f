//! `struct tcp_info` (Linux 6.x `include/uapi/linux/tcp.h`) and field lookup by
//! packetdrill name (`tcpi_snd_cwnd`, ...).

use serde::Serialize;
use std::collections::BTreeMap;

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
    /// Room for fields newer kernels append (AccECN counters in 6.18+).
    pub _tail: [u32; 16],
}

/// Names of the fields exposed to scripts, in struct order.
pub const FIELD_NAMES: &[&str] = &[
    "tcpi_state",
    "tcpi_ca_state",
    "tcpi_retransmits",
    "tcpi_probes",
    "tcpi_backoff",
    "tcpi_options",
    "tcpi_snd_wscale",
    "tcpi_rcv_wscale",
    "tcpi_delivery_rate_app_limited",
    "tcpi_fastopen_client_fail",
    "tcpi_rto",
    "tcpi_ato",
    "tcpi_snd_mss",
    "tcpi_rcv_mss",
    "tcpi_unacked",
    "tcpi_sacked",
    "tcpi_lost",
    "tcpi_retrans",
    "tcpi_fackets",
    "tcpi_last_data_sent",
    "tcpi_last_ack_sent",
    "tcpi_last_data_recv",
    "tcpi_last_ack_recv",
    "tcpi_pmtu",
    "tcpi_rcv_ssthresh",
    "tcpi_rtt",
    "tcpi_rttvar",
    "tcpi_snd_ssthresh",
    "tcpi_snd_cwnd",
    "tcpi_advmss",
    "tcpi_reordering",
    "tcpi_rcv_rtt",
    "tcpi_rcv_space",
    "tcpi_total_retrans",
    "tcpi_pacing_rate",
    "tcpi_max_pacing_rate",
    "tcpi_bytes_acked",
    "tcpi_bytes_received",
    "tcpi_segs_out",
    "tcpi_segs_in",
    "tcpi_notsent_bytes",
    "tcpi_min_rtt",
    "tcpi_data_segs_in",
    "tcpi_data_segs_out",
    "tcpi_delivery_rate",
    "tcpi_busy_time",
    "tcpi_rwnd_limited",
    "tcpi_sndbuf_limited",
    "tcpi_delivered",
    "tcpi_delivered_ce",
    "tcpi_bytes_sent",
    "tcpi_bytes_retrans",
    "tcpi_dsack_dups",
    "tcpi_reord_seen",
    "tcpi_rcv_ooopack",
    "tcpi_snd_wnd",
    "tcpi_rcv_wnd",
    "tcpi_rehash",
    "tcpi_total_rto",
    "tcpi_total_rto_recoveries",
    "tcpi_total_rto_time",
];

impl TcpInfoRaw {
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
            _ => return None,
        };
        Some(v)
    }

    /// The recovery-relevant subset, for traces.
    pub fn summary(&self) -> TcpInfoSnapshot {
        TcpInfoSnapshot {
            state: self.tcpi_state,
            ca_state: self.tcpi_ca_state,
            ca_state_name: ca_state_name(self.tcpi_ca_state as i64).to_string(),
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

    /// All named fields as a map (for `--json`).
    pub fn all_fields(&self) -> BTreeMap<String, i64> {
        FIELD_NAMES.iter().filter_map(|n| self.get(n).map(|v| (n.to_string(), v))).collect()
    }
}

/// The fields a loss-recovery trace needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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

pub fn ca_state_name(v: i64) -> &'static str {
    match v {
        0 => "TCP_CA_Open",
        1 => "TCP_CA_Disorder",
        2 => "TCP_CA_CWR",
        3 => "TCP_CA_Recovery",
        4 => "TCP_CA_Loss",
        _ => "?",
    }
}

/// Symbolic constants usable on the right-hand side of asserts.
pub fn symbol_value(name: &str) -> Option<i64> {
    if let Some(v) = trc_pkt::symbol_value(name) {
        return Some(v);
    }
    Some(match name {
        "TCPI_OPT_TIMESTAMPS" => 1,
        "TCPI_OPT_SACK" => 2,
        "TCPI_OPT_WSCALE" => 4,
        "TCPI_OPT_ECN" => 8,
        "TCPI_OPT_ECN_SEEN" => 16,
        "TCPI_OPT_SYN_DATA" => 32,
        "True" => 1,
        "False" => 0,
        _ => return None,
    })
}

/// Format a value: CA states by name, the rest as numbers.
pub fn format_value(field: &str, v: i64) -> String {
    if field == "tcpi_ca_state" {
        format!("{} ({v})", ca_state_name(v))
    } else {
        v.to_string()
    }
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
        assert!(size_of::<TcpInfoRaw>() >= 248);
    }

    #[test]
    fn every_named_field_resolves() {
        let t = TcpInfoRaw { tcpi_snd_cwnd: 7, tcpi_ca_state: 3, wscale_bits: 0x87, ..Default::default() };
        for n in FIELD_NAMES {
            assert!(t.get(n).is_some(), "{n}");
        }
        assert_eq!(t.get("tcpi_snd_cwnd"), Some(7));
        assert_eq!(t.get("tcpi_snd_wscale"), Some(7));
        assert_eq!(t.get("tcpi_rcv_wscale"), Some(8));
        assert_eq!(t.get("tcpi_bogus"), None);
        assert_eq!(format_value("tcpi_ca_state", 3), "TCP_CA_Recovery (3)");
        assert_eq!(symbol_value("TCP_CA_Loss"), Some(4));
    }
}
