//! `struct tcp_info` field names as used by packetdrill's `%{ }%` blocks
//! (`tcpi_*`), and the symbolic constants that may appear on the right-hand
//! side of an assert.

use serde::{Deserialize, Serialize};

macro_rules! tcp_info_fields {
    ($( $variant:ident => $name:literal ),* $(,)?) => {
        /// A `struct tcp_info` field (Linux `include/uapi/linux/tcp.h`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum TcpInfoField {
            $( $variant, )*
        }

        impl TcpInfoField {
            /// Every known field, in declaration order.
            pub const ALL: &'static [TcpInfoField] = &[ $( TcpInfoField::$variant, )* ];

            /// The packetdrill name, e.g. `tcpi_snd_cwnd`.
            pub fn name(self) -> &'static str {
                match self {
                    $( TcpInfoField::$variant => $name, )*
                }
            }

            /// Look up a field by its packetdrill name (`tcpi_snd_cwnd`).
            pub fn from_name(name: &str) -> Option<TcpInfoField> {
                match name {
                    $( $name => Some(TcpInfoField::$variant), )*
                    _ => None,
                }
            }
        }
    };
}

tcp_info_fields! {
    State => "tcpi_state",
    CaState => "tcpi_ca_state",
    Retransmits => "tcpi_retransmits",
    Probes => "tcpi_probes",
    Backoff => "tcpi_backoff",
    Options => "tcpi_options",
    SndWscale => "tcpi_snd_wscale",
    RcvWscale => "tcpi_rcv_wscale",
    DeliveryRateAppLimited => "tcpi_delivery_rate_app_limited",
    Rto => "tcpi_rto",
    Ato => "tcpi_ato",
    SndMss => "tcpi_snd_mss",
    RcvMss => "tcpi_rcv_mss",
    Unacked => "tcpi_unacked",
    Sacked => "tcpi_sacked",
    Lost => "tcpi_lost",
    Retrans => "tcpi_retrans",
    Fackets => "tcpi_fackets",
    LastDataSent => "tcpi_last_data_sent",
    LastAckSent => "tcpi_last_ack_sent",
    LastDataRecv => "tcpi_last_data_recv",
    LastAckRecv => "tcpi_last_ack_recv",
    Pmtu => "tcpi_pmtu",
    RcvSsthresh => "tcpi_rcv_ssthresh",
    Rtt => "tcpi_rtt",
    Rttvar => "tcpi_rttvar",
    SndSsthresh => "tcpi_snd_ssthresh",
    SndCwnd => "tcpi_snd_cwnd",
    Advmss => "tcpi_advmss",
    Reordering => "tcpi_reordering",
    RcvRtt => "tcpi_rcv_rtt",
    RcvSpace => "tcpi_rcv_space",
    TotalRetrans => "tcpi_total_retrans",
    PacingRate => "tcpi_pacing_rate",
    MaxPacingRate => "tcpi_max_pacing_rate",
    BytesAcked => "tcpi_bytes_acked",
    BytesReceived => "tcpi_bytes_received",
    SegsOut => "tcpi_segs_out",
    SegsIn => "tcpi_segs_in",
    NotsentBytes => "tcpi_notsent_bytes",
    MinRtt => "tcpi_min_rtt",
    DataSegsIn => "tcpi_data_segs_in",
    DataSegsOut => "tcpi_data_segs_out",
    DeliveryRate => "tcpi_delivery_rate",
    BusyTime => "tcpi_busy_time",
    RwndLimited => "tcpi_rwnd_limited",
    SndbufLimited => "tcpi_sndbuf_limited",
    Delivered => "tcpi_delivered",
    DeliveredCe => "tcpi_delivered_ce",
    BytesSent => "tcpi_bytes_sent",
    BytesRetrans => "tcpi_bytes_retrans",
    DsackDups => "tcpi_dsack_dups",
    ReordSeen => "tcpi_reord_seen",
    RcvOoopack => "tcpi_rcv_ooopack",
    SndWnd => "tcpi_snd_wnd",
}

/// Value of a symbolic constant usable in asserts: the congestion-avoidance
/// states (`TCP_CA_Open`=0, `TCP_CA_Disorder`=1, `TCP_CA_CWR`=2,
/// `TCP_CA_Recovery`=3, `TCP_CA_Loss`=4) and the socket states for
/// `tcpi_state` (`TCP_ESTABLISHED`=1 ... `TCP_CLOSING`=11).
pub fn symbol_value(name: &str) -> Option<i64> {
    Some(match name {
        "TCP_CA_Open" => 0,
        "TCP_CA_Disorder" => 1,
        "TCP_CA_CWR" => 2,
        "TCP_CA_Recovery" => 3,
        "TCP_CA_Loss" => 4,
        "TCP_ESTABLISHED" => 1,
        "TCP_SYN_SENT" => 2,
        "TCP_SYN_RECV" => 3,
        "TCP_FIN_WAIT1" => 4,
        "TCP_FIN_WAIT2" => 5,
        "TCP_TIME_WAIT" => 6,
        "TCP_CLOSE" => 7,
        "TCP_CLOSE_WAIT" => 8,
        "TCP_LAST_ACK" => 9,
        "TCP_LISTEN" => 10,
        "TCP_CLOSING" => 11,
        _ => return None,
    })
}

/// Resolve an assert right-hand side to an integer.
pub fn py_value(v: &crate::ast::PyValue) -> Option<i64> {
    match v {
        crate::ast::PyValue::Int(i) => Some(*i),
        crate::ast::PyValue::Name(n) => symbol_value(n),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_names_round_trip() {
        for f in TcpInfoField::ALL {
            assert_eq!(TcpInfoField::from_name(f.name()), Some(*f));
        }
        assert_eq!(TcpInfoField::from_name("tcpi_snd_cwnd"), Some(TcpInfoField::SndCwnd));
        assert_eq!(TcpInfoField::from_name("tcpi_ca_state"), Some(TcpInfoField::CaState));
        assert_eq!(TcpInfoField::from_name("snd_cwnd"), None);
    }

    #[test]
    fn ca_state_constants() {
        assert_eq!(symbol_value("TCP_CA_Open"), Some(0));
        assert_eq!(symbol_value("TCP_CA_Disorder"), Some(1));
        assert_eq!(symbol_value("TCP_CA_CWR"), Some(2));
        assert_eq!(symbol_value("TCP_CA_Recovery"), Some(3));
        assert_eq!(symbol_value("TCP_CA_Loss"), Some(4));
        assert_eq!(symbol_value("TCP_CA_Bogus"), None);
    }
}
