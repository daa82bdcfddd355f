//! A violated property's counterexample as a packetdrill script (`trc check --out`,
//! `--save-regressions`): the path the report shows, exported by `trc-trace`.

use crate::report::PropResult;
use crate::Error;
use trc_model::model::TcpModel;

/// The script, JSON and DOT of `p`'s counterexample (the one its report shows); an error when
/// `p` has none or the export fails.
pub fn export(model: &TcpModel, p: &PropResult) -> Result<trc_trace::export::Exported, Error> {
    let path = p
        .path
        .as_ref()
        .ok_or_else(|| Error::Write(format!("export of {}: no counterexample", p.id)))?;
    let statement = trc_properties::catalogue()
        .into_iter()
        .find(|s| s.id == p.id)
        .map(|s| s.statement)
        .unwrap_or("");
    let subject = trc_trace::export::Subject {
        id: &p.id,
        name: &p.name,
        statement,
    };
    trc_trace::export::export(
        model,
        path.init_index,
        &path.actions,
        subject,
        trc_trace::export::COUNTEREXAMPLE_GAP_MS,
    )
    .map_err(|e| Error::Write(format!("export of {}: {e}", p.id)))
}
