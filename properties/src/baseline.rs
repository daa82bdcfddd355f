//! The baseline: violation mechanisms (signatures, [`crate::signature`]) confirmed as real kernel
//! behaviour (docs/findings.md), which `trc check` and `trc kernel check` report without failing.
//! The file is `baseline.toml` at the repository's top; the command line reads it.

use serde::{Deserialize, Serialize};

/// A baseline entry: a violation *mechanism* (its signature) confirmed as real kernel behaviour.
/// It is reported without failing the check, on every profile and SACK mode where it occurs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Accepted {
    /// `PROPERTY:FUNCTION:STATE:EVIDENCE`, as `trc check` prints it.
    pub signature: String,
    /// The finding's name in docs/findings.md (`F1`).
    pub finding: String,
    pub reason: String,
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    #[serde(default)]
    pub accepted: Vec<Accepted>,
}

/// The accepted entry of `signature`, if any.
pub fn find<'a>(accepted: &'a [Accepted], signature: &str) -> Option<&'a Accepted> {
    accepted.iter().find(|a| a.signature == signature)
}
