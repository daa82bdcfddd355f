//! Parser, typed AST and writer for the packetdrill script subset used by
//! TCP loss-recovery tests (work in progress: AST first).

pub mod ast;
pub mod error;
pub mod tcpinfo;

pub use ast::*;
pub use error::ParseError;
pub use tcpinfo::{symbol_value, TcpInfoField};
