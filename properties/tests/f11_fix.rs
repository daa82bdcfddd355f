//! The F11 fix (`linux-7.2-f11-fix`, `tlp_undo_retrans = "counted-while-undo-open"`;
//! vm/kconfig/f11-fix.patch): a TLP retransmission sent while an ended Recovery's `undo_marker`
//! is still set counts in `undo_retrans`, so its DSACK no longer undoes that Recovery (RC-B').
//! F11's forms (the undo in Disorder, by `tcp_sacktag_one()`'s DSACK and by `tcp_check_dsack()`'s
//! counting below `snd_una`) are gone, and no property gains a signature linux-6.18 lacks.

use trc_model::config::SackMode;
use trc_model::profile::Profile;
use trc_model::Config;

mod common;
use common::{all_signatures, cfg, signatures};

/// F11's kernel-runnable bounds (docs/findings.md): SACK, two segments and three writes, no TSQ.
fn f11_bounds() -> Config {
    Config {
        segments: 2,
        extra_writes: 3,
        max_tsq: 0,
        ..cfg(SackMode::Sack, true)
    }
}

/// At F11's bounds its signature (the undo in Disorder) is gone on the fix; at the bounds of
/// its forgotten-DSACK form (`--segments 8 --tsq 0 --losses 2`) that form is gone. What keeps
/// a Disorder signature there is RC-B (a copy sent before the episode, which this fix does not
/// touch), not a TLP sent after a Recovery ended.
#[test]
fn f11_gone_on_the_fix() {
    let (plain, forgotten) = (
        "I1:tcp_try_undo_dsack:Disorder:undo-retrans-zero",
        "I1:tcp_try_undo_dsack:Disorder:undo-retrans-zero+dsack-forgotten",
    );
    let base = signatures(&f11_bounds(), Profile::linux_6_18(), "I1");
    assert!(base.contains_key(plain), "F11 on linux-6.18: {base:?}");
    let fix = signatures(&f11_bounds(), Profile::linux_7_2_f11_fix(), "I1");
    assert!(!fix.contains_key(plain), "{fix:?}");
    let wide = Config {
        segments: 8,
        max_tsq: 0,
        max_losses: 2,
        ..cfg(SackMode::Sack, true)
    };
    assert!(signatures(&wide, Profile::linux_6_18(), "I1").contains_key(forgotten));
    assert!(!signatures(&wide, Profile::linux_7_2_f11_fix(), "I1").contains_key(forgotten));
}

/// Nothing new: at F11's bounds and the default bounds (both SACK modes), every signature of
/// every property on the fix is one linux-6.18 has.
#[test]
fn no_new_signature() {
    for c in [
        f11_bounds(),
        cfg(SackMode::Sack, true),
        cfg(SackMode::NoSack, true),
    ] {
        let base = all_signatures(&c, Profile::linux_6_18());
        let fix = all_signatures(&c, Profile::linux_7_2_f11_fix());
        let new: Vec<_> = fix.difference(&base).collect();
        assert!(
            new.is_empty(),
            "{:?} segments {}: new on the fix {new:?}",
            c.sack,
            c.segments
        );
    }
}
