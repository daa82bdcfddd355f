//! Profiles: named kernels (and users' patches) as plain data.
//!
//! A profile is one choice per *decision point*, i.e. per place in the kernel where the
//! behaviour changed over time. Each decision point is an enum below, documented with the kernel
//! function and the commits that changed it; the sender's function for that kernel function
//! `match`es on it. Everything that is not a decision point is the Linux 6.18 machinery
//! (RACK-only SACK loss detection, PRR, F-RTO, TLP): a historical profile is "6.18 with these
//! decision points set as in that kernel", not a full replica of the old kernel (see
//! docs/reference/profiles.md).
//!
//! A user's profile file is TOML: `base = "linux-6.18"` plus any decision-point overrides,
//! e.g. `packet_delayed = "e37ab7"`.

use serde::{Deserialize, Serialize};

/// `tcp_packet_delayed()` (tcp_input.c): "was the ACKed data merely delayed, not lost?".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PacketDelayed {
    /// ≤ 5.1: `!retrans_stamp || ecr_before(retrans_stamp)` (original 2005 behaviour).
    Pre2019,
    /// bc9f38c8328e (v5.2): `retrans_stamp && ecr_before(retrans_stamp)`.
    Bc9f38,
    /// e37ab7373696 (v6.12-rc3): ecr test if stamp set, else true unless SYN_SENT.
    E37ab7,
    /// d0fa59897e04 (v6.16): as e37ab7 but a zero stamp of a non-SACK flow with
    /// `snd_una >= high_seq` (cleared by `tcp_is_non_sack_preventing_reopen`) is no evidence.
    D0fa59,
}

/// What the timestamp test of `tcp_packet_delayed()` (tcp_input.c) is taken to prove: finding
/// F1 (docs/findings/F1.md). The echo of a TSval older than `retrans_stamp` shows that the
/// segment the receiver echoed was an original; it says nothing about the episode's other
/// retransmitted segments.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum PacketDelayedScope {
    /// Every kernel up to 7.2 (the test as old as the 2005 code, RFC 3522 Eifel): the echo
    /// speaks for the whole episode, so `tcp_may_undo()` / `tcp_try_undo_partial()` undo it
    /// although another retransmitted segment was really lost (F1).
    #[default]
    Episode,
    /// The F1 fix (vm/kconfig/f1-fix.patch, not in any kernel): the echo counts only when the
    /// segment at the old `snd_una` that this ACK cumulatively ACKs was retransmitted and its
    /// retransmission is the only one of the episode not yet DSACKed (`undo_retrans <=` its
    /// packets, computed in `tcp_clean_rtx_queue()`); else only DSACKs (`undo_retrans == 0`)
    /// can undo.
    AckedHead,
    /// The F1 rework an independent review proposed (model only, not built as a patch: the model
    /// rejects it, properties/tests/f1_fix.rs): the echo
    /// counts for the undo only while every retransmission of the episode was of the segment at
    /// `snd_una` when it left (a flag set in `tcp_retransmit_skb()`, cleared in
    /// `tcp_init_undo()`), so that the delayed original the echo shows is the one segment the
    /// episode retransmitted. Applied where an undo is decided (`tcp_may_undo()`,
    /// `tcp_try_undo_partial()`'s undo); `tcp_packet_delayed()` itself, which
    /// `tcp_try_undo_partial()` also reads to record reordering, is unchanged.
    HeadOnly,
    /// The F1 fix proposed here (vm/kconfig/f1-fix-v2.patch, profile `linux-7.2-f1-fix-v2`):
    /// an echo older than `retrans_stamp` shows that no retransmission of the episode reached
    /// the receiver *in order* (it would have raised TS.Recent past `retrans_stamp`), and
    /// nothing about a copy that arrived out of order. So the echo proves the episode only if
    /// no retransmitted segment was SACKed since `tcp_init_undo()` (a flag set in
    /// `tcp_sacktag_one()`, cleared in `tcp_init_undo()`) and no retransmitted segment is still
    /// outstanding after the ACK (its copy may yet repair a loss). Applied where an undo is
    /// decided, as `head-only`; `tcp_packet_delayed()` is unchanged.
    SackedRetrans,
}

/// `tcp_rack_reo_timeout()` (tcp_recovery.c): which states RACK's reordering timer may move to
/// Recovery when it marks segments lost (finding F9, docs/findings.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum ReoTimeoutRecovery {
    /// Every kernel since RACK's reordering timer (v4.10) up to 7.2: any state but Recovery,
    /// Loss included, so in Loss `tcp_enter_recovery()` cuts ssthresh a second time in the
    /// RTO's window from the small Loss cwnd (F9).
    #[default]
    AnyButRecovery,
    /// The F9 fix (vm/kconfig/f9-fix.patch, not in any kernel): only from Open, Disorder and CWR;
    /// in Loss the timer's lost marks are retransmitted under Loss's own cwnd, as the ACK path
    /// does (which leaves Loss for Recovery only on a lost retransmission).
    NotFromLoss,
}

/// `tcp_send_loss_probe()` (tcp_output.c): whether a retransmitted probe counts in
/// `undo_retrans` (finding F11, docs/findings.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum TlpUndoRetrans {
    /// Every kernel up to 7.2: the probe goes out through `__tcp_retransmit_skb()`, which
    /// counts nothing, so when a Recovery ended without an undo (`undo_marker` still set) the
    /// probe copy's DSACK decrements the ended episode's `undo_retrans` and can undo it (F11).
    #[default]
    Uncounted,
    /// The F11 fix (vm/kconfig/f11-fix.patch, not in any kernel): while `undo_marker` is set
    /// the probe counts like `tcp_retransmit_skb()`'s retransmissions, so its DSACK cancels its
    /// own increment.
    CountedWhileUndoOpen,
}

/// `tcp_sacktag_write_queue()`: a DSACK block nested in the block before it (`next_dup`) after
/// that block's walk ran off the end of the retransmit queue (finding F3, docs/findings/F3.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum SacktagNestedDsack {
    /// Every kernel with the rb-tree retransmit queue up to 7.2: the NULL cursor sends
    /// `tcp_sacktag_skip()` back to the DSACK block's segment, which is walked again, and
    /// `tcp_sacktag_one()` decrements `undo_retrans` for it a second time (F3).
    #[default]
    WalkAgain,
    /// F3's proposed fix (not in any kernel): when the covering block's walk returned NULL, the
    /// DSACK block it already handled as `next_dup` is skipped.
    SkipAfterNull,
}

/// The "not yet reduced in this window" guard of `tcp_enter_loss()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EnterLossGuard {
    /// Old kernels: `state <= Disorder || snd_una == high_seq || (Loss && !icsk_retransmits)`.
    SndUnaEqHighSeq,
    /// Modern kernels: `state <= Disorder || !after(high_seq, snd_una) || (Loss && !icsk_retransmits)`.
    SndUnaGeHighSeq,
}

/// Which ACKs may perform a timestamp/DSACK undo in `tcp_process_loss()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LossUndoAcks {
    /// Before da34ac7626b5 (v4.2): any ACK processed in Loss may call `tcp_try_undo_loss(false)`.
    AnyAck,
    /// da34ac7626b5 "tcp: only undo on partial ACKs in CA_Loss": only ACKs advancing snd_una.
    SndUnaAdvanced,
}

/// Whether an ACK carrying a valid DSACK counts as a duplicate ACK in `tcp_ack()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DsackDupack {
    /// Before d9157f6806d1 (v5.18): a DSACK-only ACK is a dupack (F-RTO then declares the loss real).
    CountsAsDupack,
    /// d9157f6806d1 "tcp: fix F-RTO may not work correctly when receiving DSACK".
    NotDupack,
}

/// `tcp_init_undo()`: whether a TLP retransmission still in flight is counted in `undo_retrans`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InitUndoTlp {
    /// Before 0ec986ed7bab (v6.10): `undo_retrans = retrans_out` only.
    Ignore,
    /// 0ec986ed7bab "tcp: fix incorrect undo caused by DSACK of TLP retransmit".
    Count,
}

/// `tcp_cwnd_reduction()` (PRR) guards.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PrrGuards {
    /// 3759824da87b..8b8a321ff72c: runs on ACKs that delivered nothing, no `prior_cwnd` check,
    /// no forced fast retransmit (cwnd can reach 0; a later PRR run divides by `prior_cwnd == 0`).
    Pre8b8a321,
    /// 8b8a321ff72c "tcp: fix zero cwnd in tcp_cwnd_reduction" (v4.5) and later.
    Guarded,
}

/// Where `icsk_retransmits` (the per-episode RTO count that `tcp_enter_loss`'s guard reads) is
/// reset when an ACK makes progress in Loss.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RtoRetransReset {
    /// 3.10..3.16: only in `tcp_process_loss()` (on `recovered` or FLAG_DATA_ACKED), and not when
    /// F-RTO step 2b returned first; a second RTO then keeps the first one's ssthresh and undo state.
    InProcessLoss,
    /// 0c9ab09223fe "tcp: fix ssthresh and undo for consecutive short FRTO episodes" (Neal
    /// Cardwell, 2014-08-14; v3.17, stable 3.14.22) and later: `tcp_ack()` resets it on every
    /// ACK that advances snd_una (read in the stable queue's 3.14.22 copy of the commit;
    /// docs/kernel-bugs.md, the 2014 row).
    InTcpAck,
}

/// HyStart's clock (`bictcp_clock`): ms before the Dec 2019 series, `tcp_mstamp` µs since 5.6.
/// The ms clock stores `delay_min` as ms<<3, uses `delay_min >> 4` as the ACK-train threshold,
/// a 2 ms ACK spacing, and delay thresholds `clamp(delay_min >> 3, 4<<3, 16<<3)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum HystartClock {
    /// Before 5.6.
    Ms,
    /// "tcp_cubic: switch bictcp_clock() to usec resolution" (v5.6).
    #[default]
    Usec,
}

/// The TSO/GRO ACK-delay cushion (`hystart_ack_delay()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum HystartCushion {
    /// Before 42f3a8aaae66.
    None,
    /// 42f3a8aaae66 as posted (the seed series): added to `delay_min` when it drops.
    DelayMin,
    /// "tcp_cubic: refactor code to perform a divide only when needed" (v5.6): added to the
    /// ACK-train threshold only.
    #[default]
    Threshold,
}

/// Which samples lower HyStart's `curr_rtt` in a round.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum HystartCurrRtt {
    /// Before b344579ca847: only the first `HYSTART_MIN_SAMPLES` (8).
    First8,
    /// b344579ca847 "tcp_cubic: fix spurious HYSTART_DELAY exit upon drop in min RTT" (v5.8).
    #[default]
    AllSamples,
}

/// Where a HyStart round ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum HystartRoundReset {
    /// Before 4e1fddc98d25: in `cong_avoid`, only when cwnd-limited and in slow start.
    InCongAvoid,
    /// 4e1fddc98d25 (v5.16): in `hystart_update` (`after(snd_una, end_seq)`).
    #[default]
    InHystartUpdate,
}

/// Where the `cwnd >= hystart_low_window` check is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum HystartLowWindow {
    /// Before 25c1a9ca53db: in `cubictcp_acked`, so rounds are not tracked below the low window.
    InAcked,
    /// 25c1a9ca53db "tcp_cubic: fix incorrect HyStart round start detection" (v6.14): in
    /// `hystart_update`, after the round reset.
    #[default]
    AfterRoundReset,
}

/// CUBIC's `CA_EVENT_TX_START` handling (idle restart).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum CubicIdle {
    /// Before 30927520dbae (v4.3): the epoch is not shifted, the curve runs on during idle.
    NoShift,
    /// 30927520dbae "tcp_cubic better follow cubic curve after idle period": shifted by the idle
    /// time, unclamped.
    Shift,
    /// Shifted and then clamped to now: c2e7204d180f "tcp_cubic: do not set epoch_start in the
    /// future" (v4.3, a week after 30927520dbae).
    #[default]
    ShiftClamped,
}

/// A decision-point set. Plain data; `Hash`/`Eq` so it can live inside the checked model.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Short name (`linux-6.18`, or the user's file name).
    pub name: String,
    /// One line: which kernels this represents.
    pub description: String,
    pub packet_delayed: PacketDelayed,
    /// F1: what `tcp_packet_delayed()`'s timestamp test proves; absent in a file = `episode`
    /// (every kernel so far).
    #[serde(default)]
    pub packet_delayed_scope: PacketDelayedScope,
    /// F3: the nested DSACK after a walk that ran off the queue; absent in a file = `walk-again`.
    #[serde(default)]
    pub sacktag_nested_dsack: SacktagNestedDsack,
    /// F9: the states RACK's reordering timer moves to Recovery; absent in a file =
    /// `any-but-recovery` (every kernel so far).
    #[serde(default)]
    pub reo_timeout_recovery: ReoTimeoutRecovery,
    /// F11: whether a retransmitted TLP counts in `undo_retrans`; absent in a file =
    /// `uncounted` (every kernel so far).
    #[serde(default)]
    pub tlp_undo_retrans: TlpUndoRetrans,
    pub enter_loss_guard: EnterLossGuard,
    pub loss_undo_acks: LossUndoAcks,
    pub dsack_dupack: DsackDupack,
    pub init_undo_tlp: InitUndoTlp,
    pub prr_guards: PrrGuards,
    pub rto_retrans_reset: RtoRetransReset,
    /// b41b4cbd9655 (v6.12): `tcp_enter_recovery()` starts with `tcp_retrans_stamp_cleanup()`.
    pub enter_recovery_stamp_cleanup: bool,
    /// 686dc2db2a0f (v6.0): `tcp_try_undo_loss()` calls `tcp_is_non_sack_preventing_reopen()`.
    pub loss_undo_nonsack_hold: bool,
    /// 1236f22fbae1 (v4.18): non-SACK `tcp_clean_rtx_queue()` clears FLAG_ORIG_SACK_ACKED when
    /// retransmitted data was cumulatively ACKed.
    pub nonsack_orig_sack_fix: bool,
    /// CUBIC/HyStart decision points (the HyStart and CUBIC fixes listed in docs/reference/profiles.md);
    /// absent in a file = 6.18's value.
    #[serde(default)]
    pub hystart_clock: HystartClock,
    #[serde(default)]
    pub hystart_cushion: HystartCushion,
    /// 5.6 "make Hystart aware of pacing": the ACK-train threshold is halved only when not paced.
    #[serde(default = "yes")]
    pub hystart_pacing_aware: bool,
    #[serde(default)]
    pub hystart_curr_rtt: HystartCurrRtt,
    #[serde(default)]
    pub hystart_round_reset: HystartRoundReset,
    #[serde(default)]
    pub hystart_low_window: HystartLowWindow,
    #[serde(default)]
    pub cubic_idle: CubicIdle,
    /// Deliberate mutants, used only by tests to show that a property can fail. Exists only
    /// with the `mutants` cargo feature (enabled by test dev-dependencies, never by `trc`), and
    /// only tests' Rust code sets it: no file or JSON can (`cargo test --workspace` unifies the
    /// feature into the `trc` binary it builds for the CLI tests; that binary has the mutated
    /// branches but no way to switch one on).
    #[cfg(feature = "mutants")]
    #[serde(skip)]
    pub mutants: Vec<Mutant>,
}

/// Deliberately wrong behaviours (not any kernel), used by tests to show a property can fail.
/// Only with the `mutants` cargo feature: a build without it (the `trc` binary) has no mutant
/// code at all, and a profile file naming `mutants` is rejected as an unknown key.
#[cfg(feature = "mutants")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mutant {
    /// `tcp_undo_cwnd_reduction` restores `prior_cwnd` even when the current cwnd is larger.
    UndoCwndPriorOnly,
    /// `tcp_end_cwnd_reduction` never snaps cwnd to ssthresh.
    EndCwndNoSnap,
    /// `tcp_is_non_sack_preventing_reopen` never holds.
    NoNonSackHold,
    /// `tcp_enter_loss` cuts ssthresh on every RTO (no "once per window" guard).
    EnterLossAlwaysReduce,
    /// `tcp_sacktag_one` forgets `retrans_out -= 1` when it SACKs a lost retransmitted segment
    /// (breaks counter consistency).
    LeakRetransOut,
    /// CUBIC without the `cnt >= 2` floor of `bictcp_update`.
    CubicNoCntFloor,
    /// `cubictcp_recalc_ssthresh` without the `max(.., 2)`.
    CubicNoSsthreshFloor,
    /// `cubictcp_state` does not reset CUBIC on entering Loss.
    CubicNoLossReset,
    /// `tcp_process_loss` skips F-RTO's step-3b undo (never-retransmitted data (S)ACKed).
    FrtoNoUndo,
}

fn yes() -> bool {
    true
}

/// A named profile: `name`, one-line description, constructor.
pub struct Named {
    pub name: &'static str,
    pub build: fn() -> Profile,
}

impl Profile {
    /// Linux 6.18 (the kernel on our machines): every recovery fix of docs/reference/profiles.md present.
    pub fn linux_6_18() -> Profile {
        Profile {
            name: "linux-6.18".into(),
            description: "Linux 6.16+ incl. 6.18: d0fa59897e04 non-SACK packet_delayed fix, RACK-only SACK loss detection, HyStart after 25c1a9ca53db".into(),
            packet_delayed: PacketDelayed::D0fa59,
            packet_delayed_scope: PacketDelayedScope::Episode,
            sacktag_nested_dsack: SacktagNestedDsack::WalkAgain,
            reo_timeout_recovery: ReoTimeoutRecovery::AnyButRecovery,
            tlp_undo_retrans: TlpUndoRetrans::Uncounted,
            enter_loss_guard: EnterLossGuard::SndUnaGeHighSeq,
            loss_undo_acks: LossUndoAcks::SndUnaAdvanced,
            dsack_dupack: DsackDupack::NotDupack,
            init_undo_tlp: InitUndoTlp::Count,
            prr_guards: PrrGuards::Guarded,
            rto_retrans_reset: RtoRetransReset::InTcpAck,
            enter_recovery_stamp_cleanup: true,
            loss_undo_nonsack_hold: true,
            nonsack_orig_sack_fix: true,
            hystart_clock: HystartClock::Usec,
            hystart_cushion: HystartCushion::Threshold,
            hystart_pacing_aware: true,
            hystart_curr_rtt: HystartCurrRtt::AllSamples,
            hystart_round_reset: HystartRoundReset::InHystartUpdate,
            hystart_low_window: HystartLowWindow::AfterRoundReset,
            cubic_idle: CubicIdle::ShiftClamped,
            #[cfg(feature = "mutants")]
            mutants: vec![],
        }
    }

    /// linux-6.18 with the F1 fix (vm/kconfig/f1-fix.patch). 7.2's recovery code is 6.18's
    /// (checked on Debian's 7.2.13 in the VM, docs/findings.md), so this is also "7.2 + the fix".
    pub fn linux_7_2_f1_fix() -> Profile {
        Profile {
            name: "linux-7.2-f1-fix".into(),
            description: "linux-6.18 behaviour (= 7.2's recovery code) + the F1 fix of vm/kconfig/f1-fix.patch: tcp_packet_delayed's TS echo proves only the cumulatively ACKed head's retransmission, so it undoes only when that is the episode's one un-DSACKed retransmission".into(),
            packet_delayed_scope: PacketDelayedScope::AckedHead,
            ..Profile::linux_6_18()
        }
    }

    /// linux-6.18 with the F1 rework the review proposed (model only): the echo undoes only an
    /// episode that retransmitted nothing but the segment at `snd_una`.
    pub fn linux_7_2_f1_fix_head_only() -> Profile {
        Profile {
            name: "linux-7.2-f1-fix-head-only".into(),
            description: "linux-6.18 behaviour (= 7.2's recovery code) + the F1 rework an independent review proposed (model only; it loses multi-segment reordering undos and keeps an F1 form): a timestamp echo undoes only an episode whose retransmissions were all of the segment at snd_una".into(),
            packet_delayed_scope: PacketDelayedScope::HeadOnly,
            ..Profile::linux_6_18()
        }
    }

    /// linux-6.18 with the F1 fix proposed here (vm/kconfig/f1-fix-v2.patch): the echo proves
    /// an episode only if none of its retransmitted segments was SACKed or is still outstanding.
    pub fn linux_7_2_f1_fix_v2() -> Profile {
        Profile {
            name: "linux-7.2-f1-fix-v2".into(),
            description: "linux-6.18 behaviour (= 7.2's recovery code) + the F1 fix of vm/kconfig/f1-fix-v2.patch: a timestamp echo undoes an episode only if no retransmitted segment was SACKed during it and none is still outstanding".into(),
            packet_delayed_scope: PacketDelayedScope::SackedRetrans,
            ..Profile::linux_6_18()
        }
    }

    /// linux-6.18 with the F9 fix (vm/kconfig/f9-fix.patch): RACK's reordering timer no longer
    /// enters Recovery from Loss.
    pub fn linux_7_2_f9_fix() -> Profile {
        Profile {
            name: "linux-7.2-f9-fix".into(),
            description: "linux-6.18 behaviour (= 7.2's recovery code) + the F9 fix of vm/kconfig/f9-fix.patch: tcp_rack_reo_timeout enters Recovery only from Open, Disorder or CWR, never from Loss".into(),
            reo_timeout_recovery: ReoTimeoutRecovery::NotFromLoss,
            ..Profile::linux_6_18()
        }
    }

    /// linux-6.18 with the F11 fix (vm/kconfig/f11-fix.patch): a retransmitted TLP sent while
    /// `undo_marker` is set counts in `undo_retrans`.
    pub fn linux_7_2_f11_fix() -> Profile {
        Profile {
            name: "linux-7.2-f11-fix".into(),
            description: "linux-6.18 behaviour (= 7.2's recovery code) + the F11 fix of vm/kconfig/f11-fix.patch: a TLP retransmission sent while undo_marker is set counts in undo_retrans, so its own DSACK cannot undo an ended Recovery".into(),
            tlp_undo_retrans: TlpUndoRetrans::CountedWhileUndoOpen,
            ..Profile::linux_6_18()
        }
    }

    /// 6.12-rc3 .. 6.16-rc2 (and stable trees that took e37ab7373696 without d0fa59897e04, e.g. 6.6.85).
    pub fn linux_6_15() -> Profile {
        Profile {
            name: "linux-6.15".into(),
            description: "6.12-rc3..6.16-rc2: e37ab7373696 present, d0fa59897e04 absent (non-SACK spurious undo)".into(),
            packet_delayed: PacketDelayed::E37ab7,
            ..Profile::linux_6_18()
        }
    }

    /// 6.6.0 (before the 2024 series): bc9f38c8328e behaviour, before 0ec986ed7bab and b41b4cbd9655.
    pub fn linux_6_6() -> Profile {
        Profile {
            name: "linux-6.6".into(),
            description: "5.2..6.9 (e.g. 6.6.0): bc9f38c8328e packet_delayed, before 0ec986ed7bab and b41b4cbd9655".into(),
            packet_delayed: PacketDelayed::Bc9f38,
            init_undo_tlp: InitUndoTlp::Ignore,
            enter_recovery_stamp_cleanup: false,
            ..Profile::linux_6_18()
        }
    }

    /// 4.18..5.1: pre-2019 packet_delayed, before d9157f6806d1 and 686dc2db2a0f.
    pub fn linux_5_1() -> Profile {
        Profile {
            name: "linux-5.1".into(),
            description: "4.18..5.1: pre-2019 packet_delayed (stamp 0 = delayed), DSACK counts as dupack (pre-d9157f6806d1), no 686dc2db2a0f".into(),
            packet_delayed: PacketDelayed::Pre2019,
            dsack_dupack: DsackDupack::CountsAsDupack,
            init_undo_tlp: InitUndoTlp::Ignore,
            enter_recovery_stamp_cleanup: false,
            loss_undo_nonsack_hold: false,
            ..Profile::linux_6_18()
        }
    }

    /// 3.14: `icsk_retransmits` reset only in `tcp_process_loss` (before the 2014 change), Loss
    /// undo on any ACK (before da34ac7626b5), no 1236f22fbae1.
    pub fn linux_3_14() -> Profile {
        Profile {
            name: "linux-3.14".into(),
            description: "3.14 decision points: icsk_retransmits reset only in tcp_process_loss (pre-2014), Loss undo on any ACK (pre-da34ac7626b5), no 1236f22fbae1".into(),
            rto_retrans_reset: RtoRetransReset::InProcessLoss,
            loss_undo_acks: LossUndoAcks::AnyAck,
            nonsack_orig_sack_fix: false,
            ..Profile::linux_5_1()
        }
    }

    /// 6.18 with only da34ac7626b5 reverted.
    pub fn pre_da34ac() -> Profile {
        Profile {
            name: "pre-da34ac7626b5".into(),
            description: "6.18 with da34ac7626b5 reverted: Loss-state undo on any ACK".into(),
            loss_undo_acks: LossUndoAcks::AnyAck,
            ..Profile::linux_6_18()
        }
    }

    /// 6.18 with only d9157f6806d1 reverted.
    pub fn pre_d9157f() -> Profile {
        Profile {
            name: "pre-d9157f6806d1".into(),
            description:
                "6.18 with d9157f6806d1 reverted: a DSACK ACK counts as a dupack (F-RTO misjudges)"
                    .into(),
            dsack_dupack: DsackDupack::CountsAsDupack,
            ..Profile::linux_6_18()
        }
    }

    /// 6.18 with only 0ec986ed7bab reverted.
    pub fn pre_0ec986() -> Profile {
        Profile {
            name: "pre-0ec986ed7bab".into(),
            description:
                "6.18 with 0ec986ed7bab reverted: init_undo ignores an in-flight TLP retransmit"
                    .into(),
            init_undo_tlp: InitUndoTlp::Ignore,
            ..Profile::linux_6_18()
        }
    }

    /// 6.18 with only 8b8a321ff72c reverted.
    pub fn pre_8b8a321() -> Profile {
        Profile {
            name: "pre-8b8a321ff72c".into(),
            description:
                "6.18 PRR without 8b8a321ff72c's guards (4.4-era zero cwnd / divide by zero)".into(),
            prr_guards: PrrGuards::Pre8b8a321,
            ..Profile::linux_6_18()
        }
    }

    /// 6.18 with only 1236f22fbae1 reverted.
    pub fn pre_1236f22() -> Profile {
        Profile {
            name: "pre-1236f22fbae1".into(),
            description: "6.18 with 1236f22fbae1 reverted: bogus non-SACK F-RTO undo".into(),
            nonsack_orig_sack_fix: false,
            ..Profile::linux_6_18()
        }
    }

    /// 6.18 with only 25c1a9ca53db reverted (6.13 HyStart).
    pub fn pre_25c1a9() -> Profile {
        Profile {
            name: "pre-25c1a9ca53db".into(),
            description: "6.18 with 25c1a9ca53db reverted (HyStart of 5.16..6.13): low-window check before the round reset".into(),
            hystart_low_window: HystartLowWindow::InAcked,
            ..Profile::linux_6_18()
        }
    }

    /// 6.18 with only 4e1fddc98d25 reverted.
    pub fn pre_4e1fddc() -> Profile {
        Profile {
            name: "pre-4e1fddc98d25".into(),
            description: "6.18 with 4e1fddc98d25 reverted: HyStart round reset in cong_avoid, only when cwnd-limited".into(),
            hystart_round_reset: HystartRoundReset::InCongAvoid,
            ..Profile::linux_6_18()
        }
    }

    /// 6.18 with only b344579ca847 reverted.
    pub fn pre_b344579() -> Profile {
        Profile {
            name: "pre-b344579ca847".into(),
            description: "6.18 with b344579ca847 reverted: only the first 8 samples of a round lower curr_rtt".into(),
            hystart_curr_rtt: HystartCurrRtt::First8,
            ..Profile::linux_6_18()
        }
    }

    /// 5.6..5.7: the Dec 2019 usec series (the seed's), before b344579ca847, 4e1fddc98d25, 25c1a9ca53db.
    pub fn linux_5_6() -> Profile {
        Profile {
            name: "linux-5.6".into(),
            description: "5.6..5.7 HyStart: usec clock, pacing-aware ACK train, cushion in the threshold; first 8 samples only, round reset in cong_avoid, low-window check in acked".into(),
            hystart_curr_rtt: HystartCurrRtt::First8,
            hystart_round_reset: HystartRoundReset::InCongAvoid,
            hystart_low_window: HystartLowWindow::InAcked,
            ..Profile::linux_6_18()
        }
    }

    /// 4.3..5.5 HyStart: the ms clock.
    pub fn linux_5_5() -> Profile {
        Profile {
            name: "linux-5.5".into(),
            description: "pre-5.6 HyStart (4.3..5.5): ms clock (delay_min ms<<3, train threshold delay_min>>4, 2 ms ACK spacing), no cushion, not pacing-aware".into(),
            hystart_clock: HystartClock::Ms,
            hystart_cushion: HystartCushion::None,
            hystart_pacing_aware: false,
            ..Profile::linux_5_6()
        }
    }

    /// 6.18 with the pre-4.3 idle handling.
    pub fn pre_30927520() -> Profile {
        Profile {
            name: "pre-30927520dbae".into(),
            description: "6.18 with pre-4.3 CUBIC idle handling (30927520dbae reverted): no epoch shift after idle".into(),
            cubic_idle: CubicIdle::NoShift,
            ..Profile::linux_6_18()
        }
    }

    /// 6.18 with c2e7204d180f ("do not set epoch_start in the future", 2015) reverted.
    pub fn pre_epoch_clamp() -> Profile {
        Profile {
            name: "pre-epoch-clamp".into(),
            description: "6.18 without c2e7204d180f 'tcp_cubic: do not set epoch_start in the future' (v4.3): idle shift unclamped".into(),
            cubic_idle: CubicIdle::Shift,
            ..Profile::linux_6_18()
        }
    }

    /// All built-in profiles, default first.
    pub fn builtin() -> Vec<Profile> {
        vec![
            Profile::linux_6_18(),
            Profile::linux_6_15(),
            Profile::linux_6_6(),
            Profile::linux_7_2_f1_fix(),
            Profile::linux_7_2_f1_fix_head_only(),
            Profile::linux_7_2_f1_fix_v2(),
            Profile::linux_7_2_f9_fix(),
            Profile::linux_7_2_f11_fix(),
            Profile::linux_5_1(),
            Profile::linux_3_14(),
            Profile::pre_da34ac(),
            Profile::pre_d9157f(),
            Profile::pre_0ec986(),
            Profile::pre_8b8a321(),
            Profile::pre_1236f22(),
            Profile::linux_5_6(),
            Profile::linux_5_5(),
            Profile::pre_b344579(),
            Profile::pre_4e1fddc(),
            Profile::pre_25c1a9(),
            Profile::pre_30927520(),
            Profile::pre_epoch_clamp(),
        ]
    }

    /// A built-in profile by name.
    pub fn by_name(name: &str) -> Option<Profile> {
        Profile::builtin().into_iter().find(|p| p.name == name)
    }

    /// Whether a deliberate mutant is active (model code asks through [`mutant!`]).
    #[cfg(feature = "mutants")]
    pub fn has(&self, m: Mutant) -> bool {
        self.mutants.contains(&m)
    }
}

/// `mutant!(prof, Name)`: whether the deliberate mutant `Mutant::Name` is active in profile
/// `prof`. Without the `mutants` feature it is the constant `false` (and `Mutant` does not
/// exist), so the mutated branch compiles away.
#[cfg(feature = "mutants")]
macro_rules! mutant {
    ($prof:expr, $m:ident) => {
        $prof.has($crate::profile::Mutant::$m)
    };
}
#[cfg(not(feature = "mutants"))]
macro_rules! mutant {
    ($prof:expr, $m:ident) => {{
        let _ = &$prof;
        false
    }};
}
pub(crate) use mutant;

/// An error in a user's profile file, with the line where it was found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {message}")]
pub struct ProfileFileError {
    pub file: String,
    pub line: usize,
    pub message: String,
}

/// A user's profile file: a base profile plus decision-point overrides.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileFile {
    base: Option<toml::Spanned<String>>,
    name: Option<toml::Spanned<String>>,
    description: Option<String>,
    packet_delayed: Option<PacketDelayed>,
    packet_delayed_scope: Option<PacketDelayedScope>,
    sacktag_nested_dsack: Option<SacktagNestedDsack>,
    reo_timeout_recovery: Option<ReoTimeoutRecovery>,
    tlp_undo_retrans: Option<TlpUndoRetrans>,
    enter_loss_guard: Option<EnterLossGuard>,
    loss_undo_acks: Option<LossUndoAcks>,
    dsack_dupack: Option<DsackDupack>,
    init_undo_tlp: Option<InitUndoTlp>,
    prr_guards: Option<PrrGuards>,
    rto_retrans_reset: Option<RtoRetransReset>,
    enter_recovery_stamp_cleanup: Option<bool>,
    loss_undo_nonsack_hold: Option<bool>,
    nonsack_orig_sack_fix: Option<bool>,
    hystart_clock: Option<HystartClock>,
    hystart_cushion: Option<HystartCushion>,
    hystart_pacing_aware: Option<bool>,
    hystart_curr_rtt: Option<HystartCurrRtt>,
    hystart_round_reset: Option<HystartRoundReset>,
    hystart_low_window: Option<HystartLowWindow>,
    cubic_idle: Option<CubicIdle>,
}

fn line_of(src: &str, offset: usize) -> usize {
    src[..offset.min(src.len())]
        .bytes()
        .filter(|b| *b == b'\n')
        .count()
        + 1
}

/// Longest profile name.
pub const MAX_PROFILE_NAME: usize = 64;

/// A profile's name becomes part of file names (`trc check --out DIR` writes
/// `DIR/<property>-<profile>.pkt`): letters, digits, `.`, `_`, `+`, `-`, not starting with
/// `.` or `-`, at most [`MAX_PROFILE_NAME`] characters (so no `/`, no `..`).
pub fn check_profile_name(name: &str) -> Result<(), BadProfileName> {
    if name.is_empty() || name.len() > MAX_PROFILE_NAME {
        return Err(BadProfileName::Length);
    }
    if name.starts_with(['.', '-'])
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '+' | '-'))
    {
        return Err(BadProfileName::Characters);
    }
    Ok(())
}

/// Why a profile name cannot name files (the text follows "profile name `NAME` ").
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BadProfileName {
    #[error("must have 1 to {MAX_PROFILE_NAME} characters")]
    Length,
    #[error("may use only letters, digits, `.`, `_`, `+` and `-`, and not start with `.` or `-` (it names files)")]
    Characters,
}

/// Keys of a profile file that are not decision points.
const NOT_DECISION_POINTS: [&str; 3] = ["base", "name", "description"];

/// A profile file's base profile name (`base`, `linux-6.18` when absent) and the decision
/// points it overrides (its other keys, sorted), for a file [`parse_profile_file`]
/// accepts.
pub fn profile_file_base(src: &str) -> (String, Vec<String>) {
    let Ok(t) = toml::from_str::<toml::Table>(src) else {
        return ("linux-6.18".into(), Vec::new());
    };
    let base = t
        .get("base")
        .and_then(|v| v.as_str())
        .unwrap_or("linux-6.18")
        .to_string();
    let overrides = t
        .keys()
        .filter(|k| !NOT_DECISION_POINTS.contains(&k.as_str()))
        .cloned()
        .collect();
    (base, overrides)
}

/// Parses a user's profile file (TOML). `file` is used in error messages only.
pub fn parse_profile_file(src: &str, file: &str) -> Result<Profile, ProfileFileError> {
    let f: ProfileFile = toml::from_str(src).map_err(|e| ProfileFileError {
        file: file.into(),
        line: e.span().map(|s| line_of(src, s.start)).unwrap_or(1),
        message: e.message().trim().to_string(),
    })?;
    let base_name = f
        .base
        .as_ref()
        .map(|b| b.get_ref().clone())
        .unwrap_or_else(|| "linux-6.18".into());
    let mut p = Profile::by_name(&base_name).ok_or_else(|| {
        // The line of the `base` value itself (not of the first "base" anywhere in the file).
        let off = f.base.as_ref().map_or(0, |b| b.span().start);
        ProfileFileError {
            file: file.into(),
            line: line_of(src, off),
            message: format!(
                "unknown base profile `{base_name}` (known: {})",
                Profile::builtin()
                    .iter()
                    .map(|p| p.name.clone())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    })?;
    let stem = std::path::Path::new(file)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| file.into());
    let name_line = f.name.as_ref().map_or(1, |n| line_of(src, n.span().start));
    p.name = f.name.map(toml::Spanned::into_inner).unwrap_or(stem);
    if let Err(why) = check_profile_name(&p.name) {
        return Err(ProfileFileError {
            file: file.into(),
            line: name_line,
            message: format!("profile name `{}` {why}", p.name.escape_debug()),
        });
    }
    p.description = f
        .description
        .unwrap_or_else(|| format!("{base_name} with overrides from {file}"));
    if let Some(v) = f.packet_delayed {
        p.packet_delayed = v;
    }
    if let Some(v) = f.packet_delayed_scope {
        p.packet_delayed_scope = v;
    }
    if let Some(v) = f.sacktag_nested_dsack {
        p.sacktag_nested_dsack = v;
    }
    if let Some(v) = f.reo_timeout_recovery {
        p.reo_timeout_recovery = v;
    }
    if let Some(v) = f.tlp_undo_retrans {
        p.tlp_undo_retrans = v;
    }
    if let Some(v) = f.enter_loss_guard {
        p.enter_loss_guard = v;
    }
    if let Some(v) = f.loss_undo_acks {
        p.loss_undo_acks = v;
    }
    if let Some(v) = f.dsack_dupack {
        p.dsack_dupack = v;
    }
    if let Some(v) = f.init_undo_tlp {
        p.init_undo_tlp = v;
    }
    if let Some(v) = f.prr_guards {
        p.prr_guards = v;
    }
    if let Some(v) = f.rto_retrans_reset {
        p.rto_retrans_reset = v;
    }
    if let Some(v) = f.enter_recovery_stamp_cleanup {
        p.enter_recovery_stamp_cleanup = v;
    }
    if let Some(v) = f.loss_undo_nonsack_hold {
        p.loss_undo_nonsack_hold = v;
    }
    if let Some(v) = f.nonsack_orig_sack_fix {
        p.nonsack_orig_sack_fix = v;
    }
    if let Some(v) = f.hystart_clock {
        p.hystart_clock = v;
    }
    if let Some(v) = f.hystart_cushion {
        p.hystart_cushion = v;
    }
    if let Some(v) = f.hystart_pacing_aware {
        p.hystart_pacing_aware = v;
    }
    if let Some(v) = f.hystart_curr_rtt {
        p.hystart_curr_rtt = v;
    }
    if let Some(v) = f.hystart_round_reset {
        p.hystart_round_reset = v;
    }
    if let Some(v) = f.hystart_low_window {
        p.hystart_low_window = v;
    }
    if let Some(v) = f.cubic_idle {
        p.cubic_idle = v;
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_unique_and_default_first() {
        let all = Profile::builtin();
        assert_eq!(all[0].name, "linux-6.18");
        let mut names: Vec<_> = all.iter().map(|p| p.name.clone()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), all.len());
    }

    #[test]
    fn user_file_overrides_base() {
        let p = parse_profile_file(
            "base = \"linux-6.18\"\npacket_delayed = \"e37ab7\"\n",
            "mypatch.toml",
        )
        .unwrap();
        assert_eq!(p.name, "mypatch");
        assert_eq!(p.packet_delayed, PacketDelayed::E37ab7);
        assert_eq!(p.init_undo_tlp, InitUndoTlp::Count);
    }

    #[test]
    fn user_file_base_and_overrides() {
        let (b, o) =
            profile_file_base("base = \"linux-6.6\"\nname = \"x\"\ninit_undo_tlp = \"ignore\"\n");
        assert_eq!(
            (b.as_str(), o),
            ("linux-6.6", vec!["init_undo_tlp".to_string()])
        );
        assert_eq!(profile_file_base("").0, "linux-6.18");
    }

    #[test]
    fn user_file_errors_name_the_line() {
        let e = parse_profile_file(
            "base = \"linux-6.18\"\n\npacket_delayed = \"nope\"\n",
            "p.toml",
        )
        .unwrap_err();
        assert_eq!(e.line, 3, "{e}");
        assert!(e.to_string().starts_with("p.toml:3:"), "{e}");
        let e = parse_profile_file("base = \"linux-9\"\n", "p.toml").unwrap_err();
        assert!(e.message.contains("unknown base profile"), "{e}");
        let e = parse_profile_file("bogus = 1\n", "p.toml").unwrap_err();
        assert_eq!(e.line, 1);
    }

    /// `mutants` is an unknown key like any other, with or without the `mutants` feature (which
    /// `cargo test --workspace` unifies into every build of the model, the `trc` binary's too):
    /// rejected with the file's line.
    #[test]
    fn user_file_mutants_rejected() {
        let e = parse_profile_file(
            "base = \"linux-6.18\"\nmutants = [\"end-cwnd-no-snap\"]\n",
            "m.toml",
        )
        .unwrap_err();
        assert_eq!(e.line, 2, "{e}");
        assert!(
            e.to_string()
                .starts_with("m.toml:2: unknown field `mutants`"),
            "{e}"
        );
    }
}
