//! The work lists of `trc check` and `trc matrix` in their canonical order: the units `--shard`
//! splits and `trc merge` combines.

use trc_model::config::SackMode;
use trc_model::Config;

/// One unit of `trc check`'s work list: a bounds file, a SACK mode (the two halves of
/// `SackMode::Both` are disjoint state spaces), and a property group.
#[derive(Clone, Debug)]
pub struct CheckUnit {
    pub config: usize,
    pub sack: SackMode,
    /// Property ids, in the selection's order.
    pub group: Vec<String>,
    /// Printed name, also the export subdirectory under `--out` (e.g. `no-sack`, `c1-sack-g2`).
    pub label: String,
}

/// The SACK halves a configuration explores: both halves of `Both` (SACK first, as the
/// model's initial states), else its one mode.
pub fn sack_modes(c: &Config) -> Vec<SackMode> {
    match c.sack {
        SackMode::Both => vec![SackMode::Sack, SackMode::NoSack],
        m => vec![m],
    }
}

/// `sack` or `no-sack`.
pub fn sack_label(m: SackMode) -> &'static str {
    if m == SackMode::Sack {
        "sack"
    } else {
        "no-sack"
    }
}

/// The property groups of a selection: the properties sharing the ghost fields they read, and
/// only with `--reduce` (each group's reduced space is then smaller than the whole selection's);
/// without it every group would explore the same states, so the selection is one group.
fn property_groups(ids: &[String], reduce: bool) -> Vec<Vec<String>> {
    if !reduce {
        return vec![ids.to_vec()];
    }
    let mut g: Vec<(trc_model::reduce::GhostSet, Vec<String>)> = Vec::new();
    for id in ids {
        let reads = trc_properties::ghost_reads(id);
        match g.iter_mut().find(|(r, _)| *r == reads) {
            Some((_, v)) => v.push(id.clone()),
            None => g.push((reads, vec![id.clone()])),
        }
    }
    g.into_iter().map(|(_, v)| v).collect()
}

/// The work list of `trc check` in its canonical order: bounds files, then SACK modes, then
/// property groups.
pub fn check_work_list(configs: &[Config], ids: &[String], reduce: bool) -> Vec<CheckUnit> {
    let groups = property_groups(ids, reduce);
    let mut units = Vec::new();
    for (ci, c) in configs.iter().enumerate() {
        for m in sack_modes(c) {
            for (gi, g) in groups.iter().enumerate() {
                let mut label = String::new();
                if configs.len() > 1 {
                    label.push_str(&format!("c{ci}-"));
                }
                label.push_str(sack_label(m));
                if groups.len() > 1 {
                    label.push_str(&format!("-g{gi}"));
                }
                units.push(CheckUnit {
                    config: ci,
                    sack: m,
                    group: g.clone(),
                    label,
                });
            }
        }
    }
    units
}

/// The work list of `trc matrix`: profiles, then SACK modes (both halves of `Both`).
pub fn matrix_work_list(profiles: usize, cfg: &Config) -> Vec<(usize, SackMode)> {
    let modes = sack_modes(cfg);
    (0..profiles)
        .flat_map(|p| modes.iter().map(move |m| (p, *m)))
        .collect()
}
