//! The F9 fix (`linux-7.2-f9-fix`, `reo_timeout_recovery = "not-from-loss"`; vm/kconfig/f9-fix.patch):
//! RACK's reordering timer no longer enters Recovery from Loss, so F9's second ssthresh cut in
//! the RTO's window is gone (I2 holds where linux-6.18 violates it), and no property gains a
//! signature linux-6.18 does not have.

use trc_model::config::SackMode;
use trc_model::profile::Profile;
use trc_model::Config;

mod common;
use common::{all_signatures, cfg, signatures};

/// F9's bounds: `configs/d9157f-frto-dsack-tlp.toml` (SACK, no timestamps, two segments and
/// three writes, no loss, TLP on, no TSQ), where linux-6.18's I2 counterexample is the confirmed
/// F9 script's.
fn f9_bounds() -> Config {
    let src = include_str!("../../configs/d9157f-frto-dsack-tlp.toml");
    toml::from_str(src).expect("configs/d9157f-frto-dsack-tlp.toml")
}

#[test]
fn f9_gone_on_the_fix() {
    let base = signatures(&f9_bounds(), Profile::linux_6_18(), "I2");
    assert!(
        base.contains_key(
            "I2:tcp_enter_recovery:from-Loss:after-tcp_enter_loss:icsk_retransmits-0"
        ),
        "F9 on linux-6.18: {base:?}"
    );
    let fix = signatures(&f9_bounds(), Profile::linux_7_2_f9_fix(), "I2");
    assert!(fix.is_empty(), "I2 holds on the fix: {fix:?}");
}

/// Nothing new: at F9's bounds and at the default bounds (both SACK modes, with a TLP and two
/// RTOs too), every signature of every property on the fix is one linux-6.18 has.
#[test]
fn no_new_signature() {
    let mut bounds = vec![f9_bounds()];
    for sack in [SackMode::Sack, SackMode::NoSack] {
        bounds.push(cfg(sack, true));
        bounds.push(Config {
            max_rtos: 2,
            max_tlps: 1,
            ..cfg(sack, true)
        });
    }
    for c in &bounds {
        let base = all_signatures(c, Profile::linux_6_18());
        let fix = all_signatures(c, Profile::linux_7_2_f9_fix());
        let new: Vec<_> = fix.difference(&base).collect();
        assert!(
            new.is_empty(),
            "{:?} rtos {}: new on the fix {new:?}",
            c.sack,
            c.max_rtos
        );
    }
}
