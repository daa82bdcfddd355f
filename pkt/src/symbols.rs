//! packetdrill's names: the symbolic constants of system-call expressions, the errno names, the
//! names a `%{ }%` block finds bound before it runs, and the `tcpi_*` fields of `struct
//! tcp_info`. One table for every backend (the kernel runner and the model replay).
//!
//! Values are Linux x86-64 ABI values (`<sys/socket.h>`, `<netinet/in.h>`, `<linux/tcp.h>`,
//! `<asm-generic/errno.h>`, `<fcntl.h>`, `<poll.h>`); the names are those packetdrill's symbol
//! tables know (its `symbols_linux.c` and `code.c`).

/// Symbolic constants usable in system-call arguments and results (`SOL_SOCKET`, `MSG_EOR`,
/// `TCP_INFINITE_SSTHRESH`, ...), errno names included.
pub fn syscall_constant(name: &str) -> Option<i64> {
    SYSCALL_CONSTANTS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| *v)
        .or_else(|| errno_value(name).map(i64::from))
}

/// The errno value of a name (`EAGAIN` → 11).
pub fn errno_value(name: &str) -> Option<i32> {
    ERRNOS.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
}

/// The name of an errno value (11 → `EAGAIN`; the first name of a shared value).
pub fn errno_name(value: i32) -> String {
    ERRNOS
        .iter()
        .find(|(_, v)| *v == value)
        .map(|(n, _)| n.to_string())
        .unwrap_or_else(|| format!("errno {value}"))
}

/// `icsk_ca_state` names as packetdrill binds them for Python (`TCP_CA_Open` ... `TCP_CA_Loss`).
pub const CA_STATES: [&str; 5] = [
    "TCP_CA_Open",
    "TCP_CA_Disorder",
    "TCP_CA_CWR",
    "TCP_CA_Recovery",
    "TCP_CA_Loss",
];

/// The name of a `tcpi_ca_state` value, if it is one.
pub fn ca_state_name(v: u64) -> Option<&'static str> {
    CA_STATES.get(usize::try_from(v).ok()?).copied()
}

/// The constants packetdrill binds before every `%{ }%` block (`code.c`): socket states, the
/// mixed-case congestion-avoidance states and the `tcpi_options` bits. (`TCP_INFINITE_SSTHRESH`
/// is not among them: scripts define it themselves.)
pub const PYTHON_CONSTANTS: &[(&str, u64)] = &[
    ("TCP_ESTABLISHED", 1),
    ("TCP_SYN_SENT", 2),
    ("TCP_SYN_RECV", 3),
    ("TCP_FIN_WAIT1", 4),
    ("TCP_FIN_WAIT2", 5),
    ("TCP_TIME_WAIT", 6),
    ("TCP_CLOSE", 7),
    ("TCP_CLOSE_WAIT", 8),
    ("TCP_LAST_ACK", 9),
    ("TCP_LISTEN", 10),
    ("TCP_CLOSING", 11),
    ("TCP_CA_Open", 0),
    ("TCP_CA_Disorder", 1),
    ("TCP_CA_CWR", 2),
    ("TCP_CA_Recovery", 3),
    ("TCP_CA_Loss", 4),
    ("TCPI_OPT_TIMESTAMPS", 1),
    ("TCPI_OPT_SACK", 2),
    ("TCPI_OPT_WSCALE", 4),
    ("TCPI_OPT_ECN", 8),
    ("TCPI_OPT_ECN_SEEN", 16),
    ("TCPI_OPT_SYN_DATA", 32),
    ("TCPI_OPT_USEC_TS", 64),
    ("TCPI_OPT_TFO_CHILD", 128),
];

/// Every `tcpi_*` name packetdrill binds for Python (`code.c`), in `struct tcp_info` order (Linux
/// 6.18's `include/uapi/linux/tcp.h`, whose AccECN counters end with a 32-bit word of bit fields:
/// `tcpi_ecn_mode`, `tcpi_accecn_opt_seen`, `tcpi_accecn_fail_mode`, `tcpi_options2`). Not
/// bound, as in packetdrill: `tcpi_fastopen_client_fail`.
pub const TCPI_FIELDS: &[&str] = &[
    "tcpi_state",
    "tcpi_ca_state",
    "tcpi_retransmits",
    "tcpi_probes",
    "tcpi_backoff",
    "tcpi_options",
    "tcpi_snd_wscale",
    "tcpi_rcv_wscale",
    "tcpi_delivery_rate_app_limited",
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
    "tcpi_received_ce",
    "tcpi_delivered_e1_bytes",
    "tcpi_delivered_e0_bytes",
    "tcpi_delivered_ce_bytes",
    "tcpi_received_e1_bytes",
    "tcpi_received_e0_bytes",
    "tcpi_received_ce_bytes",
    "tcpi_ecn_mode",
    "tcpi_accecn_opt_seen",
    "tcpi_accecn_fail_mode",
    "tcpi_options2",
];

/// Whether `name` is a `tcpi_*` field packetdrill binds.
pub fn is_tcpi_field(name: &str) -> bool {
    TCPI_FIELDS.contains(&name)
}

/// System-call constants (not errnos, see [`ERRNOS`]).
const SYSCALL_CONSTANTS: &[(&str, i64)] = &[
    ("NULL", 0),
    ("AF_UNSPEC", 0),
    ("AF_INET", 2),
    ("AF_INET6", 10),
    ("AF_PACKET", 17),
    ("PF_INET", 2),
    ("PF_INET6", 10),
    ("SOCK_STREAM", 1),
    ("SOCK_DGRAM", 2),
    ("SOCK_RAW", 3),
    ("SOCK_NONBLOCK", 0o4000),
    ("SOCK_CLOEXEC", 0o2000000),
    ("IPPROTO_IP", 0),
    ("IPPROTO_ICMP", 1),
    ("IPPROTO_TCP", 6),
    ("IPPROTO_UDP", 17),
    ("IPPROTO_IPV6", 41),
    ("IPPROTO_ICMPV6", 58),
    ("IPPROTO_RAW", 255),
    ("SOL_IP", 0),
    ("SOL_SOCKET", 1),
    ("SOL_TCP", 6),
    ("SOL_UDP", 17),
    ("SOL_IPV6", 41),
    ("SO_DEBUG", 1),
    ("SO_REUSEADDR", 2),
    ("SO_TYPE", 3),
    ("SO_ERROR", 4),
    ("SO_DONTROUTE", 5),
    ("SO_BROADCAST", 6),
    ("SO_SNDBUF", 7),
    ("SO_RCVBUF", 8),
    ("SO_KEEPALIVE", 9),
    ("SO_OOBINLINE", 10),
    ("SO_NO_CHECK", 11),
    ("SO_PRIORITY", 12),
    ("SO_LINGER", 13),
    ("SO_BSDCOMPAT", 14),
    ("SO_REUSEPORT", 15),
    ("SO_PASSCRED", 16),
    ("SO_PEERCRED", 17),
    ("SO_RCVLOWAT", 18),
    ("SO_SNDLOWAT", 19),
    ("SO_RCVTIMEO", 20),
    ("SO_SNDTIMEO", 21),
    ("SO_BINDTODEVICE", 25),
    ("SO_ATTACH_FILTER", 26),
    ("SO_DETACH_FILTER", 27),
    ("SO_PEERNAME", 28),
    ("SO_TIMESTAMP", 29),
    ("SO_ACCEPTCONN", 30),
    ("SO_PEERSEC", 31),
    ("SO_MARK", 36),
    ("SO_TIMESTAMPING", 37),
    ("SO_MAX_PACING_RATE", 47),
    ("SO_ZEROCOPY", 60),
    ("TCP_NODELAY", 1),
    ("TCP_MAXSEG", 2),
    ("TCP_CORK", 3),
    ("TCP_KEEPIDLE", 4),
    ("TCP_KEEPINTVL", 5),
    ("TCP_KEEPCNT", 6),
    ("TCP_SYNCNT", 7),
    ("TCP_LINGER2", 8),
    ("TCP_DEFER_ACCEPT", 9),
    ("TCP_WINDOW_CLAMP", 10),
    ("TCP_INFO", 11),
    ("TCP_QUICKACK", 12),
    ("TCP_CONGESTION", 13),
    ("TCP_MD5SIG", 14),
    ("TCP_COOKIE_TRANSACTIONS", 15),
    ("TCP_THIN_LINEAR_TIMEOUTS", 16),
    ("TCP_THIN_DUPACK", 17),
    ("TCP_USER_TIMEOUT", 18),
    ("TCP_FASTOPEN", 23),
    ("TCP_TIMESTAMP", 24),
    ("TCP_NOTSENT_LOWAT", 25),
    ("TCP_CC_INFO", 26),
    ("TCP_FASTOPEN_CONNECT", 30),
    ("TCP_FASTOPEN_KEY", 33),
    ("TCP_FASTOPEN_NO_COOKIE", 34),
    ("TCP_INQ", 36),
    ("TCP_CM_INQ", 36),
    ("TCP_TX_DELAY", 37),
    // Upper-case congestion-avoidance states and the infinite ssthresh: syscall expressions
    // only (Python gets the mixed-case names of `PYTHON_CONSTANTS`).
    ("TCP_CA_OPEN", 0),
    ("TCP_CA_DISORDER", 1),
    ("TCP_CA_CWR", 2),
    ("TCP_CA_RECOVERY", 3),
    ("TCP_CA_LOSS", 4),
    ("TCP_INFINITE_SSTHRESH", 0x7fff_ffff),
    ("IP_TOS", 1),
    ("IP_TTL", 2),
    ("IP_MTU_DISCOVER", 10),
    ("IP_RECVERR", 11),
    ("IP_MTU", 14),
    ("IP_FREEBIND", 15),
    ("IP_PMTUDISC_DONT", 0),
    ("IP_PMTUDISC_WANT", 1),
    ("IP_PMTUDISC_DO", 2),
    ("IP_PMTUDISC_PROBE", 3),
    ("IPV6_MTU_DISCOVER", 23),
    ("IPV6_MTU", 24),
    ("IPV6_RECVERR", 25),
    ("IPV6_HOPLIMIT", 52),
    ("IPV6_TCLASS", 67),
    ("MSG_OOB", 0x1),
    ("MSG_PEEK", 0x2),
    ("MSG_DONTROUTE", 0x4),
    ("MSG_CTRUNC", 0x8),
    ("MSG_PROXY", 0x10),
    ("MSG_TRUNC", 0x20),
    ("MSG_DONTWAIT", 0x40),
    ("MSG_EOR", 0x80),
    ("MSG_WAITALL", 0x100),
    ("MSG_FIN", 0x200),
    ("MSG_SYN", 0x400),
    ("MSG_CONFIRM", 0x800),
    ("MSG_RST", 0x1000),
    ("MSG_ERRQUEUE", 0x2000),
    ("MSG_NOSIGNAL", 0x4000),
    ("MSG_MORE", 0x8000),
    ("MSG_ZEROCOPY", 0x400_0000),
    ("MSG_FASTOPEN", 0x2000_0000),
    ("MSG_CMSG_CLOEXEC", 0x4000_0000),
    ("SHUT_RD", 0),
    ("SHUT_WR", 1),
    ("SHUT_RDWR", 2),
    ("O_RDONLY", 0),
    ("O_WRONLY", 1),
    ("O_RDWR", 2),
    ("O_CREAT", 0o100),
    ("O_EXCL", 0o200),
    ("O_NOCTTY", 0o400),
    ("O_TRUNC", 0o1000),
    ("O_APPEND", 0o2000),
    ("O_NONBLOCK", 0o4000),
    ("O_DSYNC", 0o10000),
    ("O_ASYNC", 0o20000),
    ("O_DIRECT", 0o40000),
    ("O_DIRECTORY", 0o200000),
    ("O_NOFOLLOW", 0o400000),
    ("O_CLOEXEC", 0o2000000),
    ("F_DUPFD", 0),
    ("F_GETFD", 1),
    ("F_SETFD", 2),
    ("F_GETFL", 3),
    ("F_SETFL", 4),
    ("F_GETLK", 5),
    ("F_SETLK", 6),
    ("F_SETLKW", 7),
    ("F_SETOWN", 8),
    ("F_GETOWN", 9),
    ("FD_CLOEXEC", 1),
    ("POLLIN", 0x1),
    ("POLLPRI", 0x2),
    ("POLLOUT", 0x4),
    ("POLLERR", 0x8),
    ("POLLHUP", 0x10),
    ("POLLNVAL", 0x20),
    ("POLLRDNORM", 0x40),
    ("POLLRDBAND", 0x80),
    ("POLLWRNORM", 0x100),
    ("POLLWRBAND", 0x200),
    ("POLLMSG", 0x400),
    ("POLLRDHUP", 0x2000),
    ("SIOCINQ", 0x541b),
    ("FIONREAD", 0x541b),
    ("EPOLLIN", 0x1),
    ("EPOLLPRI", 0x2),
    ("EPOLLOUT", 0x4),
    ("EPOLLERR", 0x8),
    ("EPOLLHUP", 0x10),
    ("EPOLLRDHUP", 0x2000),
    ("EPOLLET", 1 << 31),
    ("EPOLL_CTL_ADD", 1),
    ("EPOLL_CTL_DEL", 2),
    ("EPOLL_CTL_MOD", 3),
];

/// errno names and values (`<asm-generic/errno-base.h>`, `<asm-generic/errno.h>`); aliases
/// (`EWOULDBLOCK`, `ENOTSUP`) after the name they share a value with.
const ERRNOS: &[(&str, i32)] = &[
    ("EPERM", 1),
    ("ENOENT", 2),
    ("ESRCH", 3),
    ("EINTR", 4),
    ("EIO", 5),
    ("ENXIO", 6),
    ("E2BIG", 7),
    ("ENOEXEC", 8),
    ("EBADF", 9),
    ("ECHILD", 10),
    ("EAGAIN", 11),
    ("EWOULDBLOCK", 11),
    ("ENOMEM", 12),
    ("EACCES", 13),
    ("EFAULT", 14),
    ("ENOTBLK", 15),
    ("EBUSY", 16),
    ("EEXIST", 17),
    ("EXDEV", 18),
    ("ENODEV", 19),
    ("ENOTDIR", 20),
    ("EISDIR", 21),
    ("EINVAL", 22),
    ("ENFILE", 23),
    ("EMFILE", 24),
    ("ENOTTY", 25),
    ("ETXTBSY", 26),
    ("EFBIG", 27),
    ("ENOSPC", 28),
    ("ESPIPE", 29),
    ("EROFS", 30),
    ("EMLINK", 31),
    ("EPIPE", 32),
    ("EDOM", 33),
    ("ERANGE", 34),
    ("EDEADLK", 35),
    ("ENAMETOOLONG", 36),
    ("ENOLCK", 37),
    ("ENOSYS", 38),
    ("ENOTEMPTY", 39),
    ("ELOOP", 40),
    ("ENOMSG", 42),
    ("EIDRM", 43),
    ("ENOSTR", 60),
    ("ENODATA", 61),
    ("ETIME", 62),
    ("ENOSR", 63),
    ("ENOLINK", 67),
    ("EPROTO", 71),
    ("EBADMSG", 74),
    ("EOVERFLOW", 75),
    ("EILSEQ", 84),
    ("EUSERS", 87),
    ("ENOTSOCK", 88),
    ("EDESTADDRREQ", 89),
    ("EMSGSIZE", 90),
    ("EPROTOTYPE", 91),
    ("ENOPROTOOPT", 92),
    ("EPROTONOSUPPORT", 93),
    ("ESOCKTNOSUPPORT", 94),
    ("EOPNOTSUPP", 95),
    ("ENOTSUP", 95),
    ("EPFNOSUPPORT", 96),
    ("EAFNOSUPPORT", 97),
    ("EADDRINUSE", 98),
    ("EADDRNOTAVAIL", 99),
    ("ENETDOWN", 100),
    ("ENETUNREACH", 101),
    ("ENETRESET", 102),
    ("ECONNABORTED", 103),
    ("ECONNRESET", 104),
    ("ENOBUFS", 105),
    ("EISCONN", 106),
    ("ENOTCONN", 107),
    ("ESHUTDOWN", 108),
    ("ETOOMANYREFS", 109),
    ("ETIMEDOUT", 110),
    ("ECONNREFUSED", 111),
    ("EHOSTDOWN", 112),
    ("EHOSTUNREACH", 113),
    ("EALREADY", 114),
    ("EINPROGRESS", 115),
    ("ESTALE", 116),
    ("EDQUOT", 122),
    ("ECANCELED", 125),
    ("EOWNERDEAD", 130),
    ("ENOTRECOVERABLE", 131),
    ("ERFKILL", 132),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups() {
        assert_eq!(syscall_constant("SOL_SOCKET"), Some(1));
        assert_eq!(syscall_constant("MSG_EOR"), Some(0x80));
        assert_eq!(syscall_constant("TCP_INFINITE_SSTHRESH"), Some(0x7fff_ffff));
        assert_eq!(syscall_constant("EAGAIN"), Some(11));
        assert_eq!(
            syscall_constant("TCP_CA_Open"),
            None,
            "mixed case is Python's"
        );
        assert_eq!(errno_name(11), "EAGAIN");
        assert_eq!(errno_name(95), "EOPNOTSUPP");
        assert_eq!(errno_value("ENOTSUP"), Some(95));
        assert_eq!(ca_state_name(3), Some("TCP_CA_Recovery"));
        assert_eq!(ca_state_name(9), None);
        assert_eq!(TCPI_FIELDS.len(), 71);
        assert!(is_tcpi_field("tcpi_snd_cwnd") && !is_tcpi_field("snd_cwnd"));
        let mut names: Vec<&str> = SYSCALL_CONSTANTS.iter().map(|(n, _)| *n).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), SYSCALL_CONSTANTS.len(), "no name twice");
    }
}
