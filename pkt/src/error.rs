//! Parse errors.

use thiserror::Error;

/// A parse failure, displayed as `file:line:col: expected X, found Y`.
/// `line` and `col` are 1-based; `col` counts characters (not bytes).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{file}:{line}:{col}: expected {expected}, found {found}")]
pub struct ParseError {
    pub file: String,
    pub line: u32,
    pub col: u32,
    /// What the parser wanted, e.g. `"sequence number"`.
    pub expected: String,
    /// What it saw, e.g. `"'x'"` or `"end of line"`.
    pub found: String,
}
