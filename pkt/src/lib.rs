//! Parser, typed AST and writer for the subset of the
//! [packetdrill](https://github.com/google/packetdrill) script language used
//! by Linux TCP loss-recovery tests.
//!
//! ```
//! let script = trc_pkt::parse("+0 > P. 1:1001(1000) ack 1\n", "demo.pkt").unwrap();
//! assert_eq!(trc_pkt::write(&script), "+0 > P. 1:1001(1000) ack 1\n");
//! ```
//!
//! # API
//! * [`parse`]`(src, file_name) -> Result<`[`Script`]`, `[`ParseError`]`>`;
//!   errors display as `file:line:col: expected X, found Y`. The parser
//!   never panics, whatever the input.
//! * [`write`]`(&Script) -> String`: canonical text. For every accepted
//!   script, `parse(write(parse(s)))` equals `parse(s)` up to positions
//!   (compare with [`Script::without_positions`]).
//! * [`engine::run`]: the one script engine — packetdrill's meaning of a script (time and
//!   tolerance, sequence and TS mapping, outbound matching with TSO merging, system-call
//!   results, `%{ }%` blocks by Python) over an [`engine::Backend`]: the kernel runner
//!   (`trc-kernel`) or the model replay (`trc-trace`). [`report`] holds the per-line results and
//!   the verdict rule, [`time`] the clock, [`python`] the Python evaluation, [`symbols`] the
//!   names (constants, errnos, `tcpi_*` fields), [`wire`] TCP flags and options as carried.
//!
//! # Supported subset
//! As in packetdrill, the script is free-form: whitespace and newlines only
//! separate tokens, and `//` and `/* */` comments are ignored.
//!
//! * **Times** (stored as integer microseconds, so exact): absolute `0`,
//!   `.1`, `1.5`; relative `+0`, `+.020`; ranges `.1~.2` and `+.01~+.02`;
//!   `*`. Ranges and `*` are only accepted on outbound packets (as in
//!   packetdrill). More than six fractional digits are rejected unless the
//!   extra digits are zero. Only the first and the last statement may be
//!   untimed, and only if they are shell commands: packetdrill's init
//!   command (e.g. a leading `` `../common/defaults.sh` ``) and cleanup
//!   command.
//! * **TCP segments**: `<` (inbound) / `>` (outbound), optional IP ECN
//!   marker `[noecn]`, `[ect0]`, `[ect1]`, `[ect01]` (outbound only), `[ce]`;
//!   flags from `S F R P U E W` optionally followed by `.` (ACK), or `.`
//!   alone, or `-` for none; `seq:end(len)` with `end == seq + len`;
//!   optional `ack N`, `win N`, `urg N` in that order; optional options
//!   `<mss N,sackOK,nop,wscale N,TS val N ecr N,sack A:B C:D,eol>` or
//!   `<...>` (outbound only).
//! * **System calls**: `name(args) = result [ERRNO [(note)]]`, optionally
//!   blocking `start...end name(...)`. Any call name is accepted (socket,
//!   setsockopt, bind, listen, accept, write, close, getsockopt, fcntl,
//!   read, ...). Argument/result expressions: `...`, integers (decimal,
//!   negative, `0x` hex), symbolic words (`SOL_SOCKET`), strings
//!   (`"cubic"`), `A|B` bit-or, arrays `[1]`, structs `{...}` /
//!   `{l_onoff=1, l_linger=0}`, calls `htons(8080)`.
//! * **Shell commands** in backticks, verbatim, possibly spanning lines.
//! * **`%{ ... }%` blocks**: Python code, kept verbatim (spaces and tabs
//!   at both ends stripped, as packetdrill does); evaluated by [`python`].
//! * **`--name[=value]` option lines** before the first event (kept in
//!   [`Script::options`]; [`engine::Settings`] interprets them).
//! * **Init and cleanup commands**: only the first and the last statement
//!   may be untimed, and only if they are shell commands.
//! * TCP options also `md5 HEX`, `FO [COOKIE]`, `FOEXP [COOKIE]`; an option
//!   list must pad the header to a multiple of 4 bytes (at most 40), and an
//!   inbound packet must give `win`, as packetdrill requires.
//!
//! # Rejected (with a `ParseError`)
//! UDP/ICMP packets, encapsulation prefixes (`ipv4`,
//! `gre`, `mpls`), explicit ports, `tos`/`flowlabel`/`ttl` IP info, AccECN
//! `ack_and_ace` flags and the AccECN option, fuzz clauses,
//! negative or over-precise times, numbers out of range for their field
//! (e.g. `win` > 65535, `mss` > 65535, `wscale` > 255), inconsistent
//! `seq:end(len)`, `<...>` and `[ect01]` on inbound packets, and expression
//! nesting deeper than 64 levels.
#![forbid(unsafe_code)]

pub mod ast;
pub mod engine;
pub mod error;
mod lexer;
mod parser;
pub mod python;
pub mod report;
pub mod symbols;
pub mod time;
pub mod wire;
pub mod writer;

pub use ast::*;
pub use error::ParseError;
pub use parser::parse;
pub use writer::write;
