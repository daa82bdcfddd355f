#!/bin/sh
# Namespace settings for trc's scripts: the values packetdrill's public gtests run with (their
# common/defaults.sh), written straight to /proc/sys in one pass (fast also in an emulated VM).
# It runs inside the script's own network namespace (trc kernel run, packetdrill-run), so it
# changes nothing on the host.
#
# Congestion control: a network namespace here cannot make cubic its default, so the scripts
# select it themselves (setsockopt TCP_CONGESTION on the listening socket).
set -e
p=/proc/sys/net/ipv4
w() { printf '%s\n' "$2" > "$p/$1"; }
w tcp_rmem "4096 540000 15728640"
w tcp_wmem "4096 262144 4194304"
w tcp_timestamps 1
w tcp_syn_retries 5
w tcp_synack_retries 5
w tcp_frto 2
w tcp_sack 1
w tcp_dsack 1
w tcp_reordering 3
w tcp_slow_start_after_idle 0
w tcp_early_retrans 4
w tcp_recovery 1
w tcp_tso_win_divisor 3
w tcp_ecn 0
w tcp_pacing_ss_ratio 200
w tcp_pacing_ca_ratio 120
w tcp_notsent_lowat 4294967295
w tcp_fastopen 460803
w tcp_fastopen_key a1a1a1a1-b2b2b2b2-c3c3c3c3-d4d4d4d4
w tcp_syncookies 1
# A plain FIFO on the tun device: no pacing by an fq default qdisc.
tc qdisc add dev tun0 root pfifo 2>/dev/null || tc qdisc replace dev tun0 root pfifo
