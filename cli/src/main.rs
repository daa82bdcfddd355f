//! `trc`: the command-line front end. Exit codes: 0 all properties hold (or the command
//! succeeded), 1 a property is violated (outside the baseline) or a script failed, 2 usage or
//! input error, 3 incomplete (a script run with something not checked; a check stopped early by
//! `--max-memory` with no violation), 4 kernel tests skipped (no root / tun).

mod bench;
mod check;
mod conn;
mod coverage;
mod diff;
mod explore;
mod graph;
mod graph_html;
mod impact;
mod kbuild;
mod kernel;
mod kpatch;
mod output;
mod pictures;
mod replay;
mod shard;
mod sweep;

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use trc_model::config::{CcKind, Config, SackMode};

#[derive(Parser)]
#[command(
    name = "trc",
    version,
    about = "Model checker for the Linux TCP sender's loss recovery"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Explore every interleaving within the bounds and check the invariants.
    Check(check::CheckArgs),
    /// Check every profile against every property and print the table.
    Matrix(check::MatrixArgs),
    /// Compare stateright's BFS with our engine on the model (states/s, memory).
    Bench(bench::BenchArgs),
    /// Draw the explored state graph around a counterexample (DOT + self-contained HTML).
    Graph(graph::GraphArgs),
    /// Serve stateright's Explorer on 127.0.0.1 for interactive stepping (never returns).
    Explore(explore::ExploreArgs),
    /// Replay a packetdrill script on the model, checking its outbound segments and asserts.
    Replay(replay::ReplayArgs),
    /// Differential testing: random scenarios of the model's environment on the real kernel, compared step by step.
    Diff(diff::DiffArgs),
    /// Exhaustively check CUBIC's integer arithmetic (cubic_root, bictcp_update) against exact arithmetic.
    Sweep(sweep::SweepArgs),
    /// Combine the JSON outputs of `--shard I/N` runs into the report one run would print.
    Merge(shard::MergeArgs),
    /// List the built-in profiles.
    Profiles,
    /// List the properties.
    Properties,
    /// Drive the real kernel with packetdrill-format scripts.
    #[command(subcommand)]
    Kernel(kernel::KernelCommand),
}

/// What to check: the profile, the properties and the bounds (shared by `check`, `graph`, `explore`).
#[derive(Args, Clone, Debug)]
pub struct ModelArgs {
    /// Profile: a built-in name (see `trc profiles`) or a TOML file (base profile + overrides).
    #[arg(long, default_value = "linux-6.18")]
    pub profile: String,
    /// Only these properties (ids, e.g. I1 I2); default all.
    #[arg(long = "property", value_name = "ID")]
    pub properties: Vec<String>,
    #[command(flatten)]
    pub bounds: BoundArgs,
}

impl ModelArgs {
    /// The configuration and the profile, or a usage error (`file:line: message` for files).
    pub fn load(&self) -> Result<(Config, trc_model::Profile), String> {
        Ok((self.bounds.config()?, check::load_profile(&self.profile)?))
    }
}

/// Exploration bounds and options shared by `check` and `matrix`.
#[derive(Args, Clone, Debug)]
#[command(
    mut_arg("sack", |a| a.help("Explore only SACK connections (default: both)")),
    mut_arg("no_sack", |a| a.help("Explore only non-SACK connections (default: both)")),
    mut_arg("ts", |a| a.help("Timestamps on (default)")),
    mut_arg("no_ts", |a| a.help("Timestamps off"))
)]
pub struct BoundArgs {
    /// TOML file with a `Config` (bounds and options); flags override it. `trc check` takes
    /// several (one check per file, in order; the unit of `--shard`).
    #[arg(long, value_name = "FILE")]
    pub config: Vec<PathBuf>,
    /// Segments written by the application at the start.
    #[arg(long)]
    pub segments: Option<u16>,
    /// Extra one-segment application writes the environment may perform.
    #[arg(long)]
    pub writes: Option<u16>,
    /// Initial congestion window (route initcwnd; kernel default 10).
    #[arg(long)]
    pub initcwnd: Option<u32>,
    /// Transmissions the network may drop.
    #[arg(long)]
    pub losses: Option<u8>,
    /// ACKs the network may lose.
    #[arg(long)]
    pub ack_losses: Option<u8>,
    /// Older in-flight packets a delivery may overtake.
    #[arg(long)]
    pub reorder: Option<u8>,
    /// RTO expiries allowed.
    #[arg(long)]
    pub rtos: Option<u8>,
    /// TLP expiries allowed.
    #[arg(long)]
    pub tlps: Option<u8>,
    /// Times the host queue may fill (TSQ).
    #[arg(long)]
    pub tsq: Option<u8>,
    /// ACKs that may carry ECE (implies --ecn).
    #[arg(long)]
    pub ece: Option<u8>,
    /// ACKs the network may hold back and deliver after a newer one (ACK reordering: the
    /// sender gets them below snd_una). Default 0.
    #[arg(long)]
    pub old_acks: Option<u8>,
    /// Model time horizon in ms.
    #[arg(long)]
    pub horizon_ms: Option<u32>,
    /// Path RTT in ms.
    #[arg(long)]
    pub rtt_ms: Option<u32>,
    /// SACK and timestamps of the explored connections (default: both SACK modes, timestamps on).
    #[command(flatten)]
    pub conn: conn::ConnFlags,
    /// F-RTO off (tcp_frto=0).
    #[arg(long)]
    pub no_frto: bool,
    /// TLP off (tcp_early_retrans=0).
    #[arg(long)]
    pub no_tlp: bool,
    /// DSACK off at the receiver.
    #[arg(long)]
    pub no_dsack: bool,
    /// ECN negotiated.
    #[arg(long)]
    pub ecn: bool,
    /// Congestion control: cubic (default) or reno.
    #[arg(long, value_parser = ["cubic", "reno"])]
    pub cc: Option<String>,
}

impl BoundArgs {
    /// The configuration: defaults, then the config file, then the flags (one `--config` at
    /// most: only `trc check` takes several, see [`BoundArgs::configs`]).
    pub fn config(&self) -> Result<Config, String> {
        if self.config.len() > 1 {
            return Err(format!(
                "--config given {} times: only `trc check` takes several bounds files",
                self.config.len()
            ));
        }
        self.config_from(self.config.first().map(|p| p.as_path()))
    }

    /// Every `--config` file's configuration with the flags applied, in order (the defaults
    /// and the flags when there is none), each with the file.
    pub fn configs(&self) -> Result<Vec<(Option<PathBuf>, Config)>, String> {
        if self.config.is_empty() {
            return Ok(vec![(None, self.config_from(None)?)]);
        }
        self.config
            .iter()
            .map(|p| Ok((Some(p.clone()), self.config_from(Some(p))?)))
            .collect()
    }

    /// Defaults, then `file`, then the flags.
    fn config_from(&self, file: Option<&std::path::Path>) -> Result<Config, String> {
        let mut file_src = None;
        let mut c = match file {
            Some(p) => {
                let src = read_source(p)?;
                let c = toml::from_str::<Config>(&src).map_err(|e| toml_error(p, &src, &e))?;
                file_src = Some((p, src));
                c
            }
            None => Config::default(),
        };
        // The `Config` fields a flag set, with the flag (an error about such a field names the
        // flag, not the config file's line, whose value the flag replaced).
        let mut from_flag: Vec<(&str, &str)> = Vec::new();
        macro_rules! set {
            ($f:ident, $g:ident, $flag:literal) => {
                if let Some(v) = self.$f {
                    c.$g = v;
                    from_flag.push((stringify!($g), $flag));
                }
            };
        }
        set!(segments, segments, "--segments");
        set!(writes, extra_writes, "--writes");
        set!(initcwnd, initcwnd, "--initcwnd");
        set!(losses, max_losses, "--losses");
        set!(ack_losses, max_ack_losses, "--ack-losses");
        set!(reorder, max_reorder, "--reorder");
        set!(rtos, max_rtos, "--rtos");
        set!(tlps, max_tlps, "--tlps");
        set!(tsq, max_tsq, "--tsq");
        set!(ece, max_ece, "--ece");
        set!(old_acks, max_old_acks, "--old-acks");
        set!(horizon_ms, horizon_ms, "--horizon-ms");
        set!(rtt_ms, rtt_ms, "--rtt-ms");
        match self.conn.sack() {
            Some(true) => c.sack = SackMode::Sack,
            Some(false) => c.sack = SackMode::NoSack,
            None => {}
        }
        if let Some(ts) = self.conn.ts() {
            c.timestamps = ts;
        }
        if self.no_frto {
            c.frto = false;
        }
        if self.no_tlp {
            c.tlp = false;
        }
        if self.no_dsack {
            c.dsack = false;
        }
        if self.ecn || self.ece.unwrap_or(0) > 0 {
            c.ecn = true;
        }
        if let Some(cc) = &self.cc {
            c.cc = if cc == "reno" {
                CcKind::Reno
            } else {
                CcKind::Cubic
            };
        }
        c.validate().map_err(|e| {
            let msg = format!("impossible bounds: {e}");
            // Every message starts with the offending field's name: name the flag that set it, or
            // point at its line in the config file when the file sets it (otherwise it is a
            // default).
            let key: String = e
                .to_string()
                .chars()
                .take_while(|ch| ch.is_ascii_lowercase() || *ch == '_')
                .collect();
            if let Some((_, flag)) = from_flag.iter().find(|(field, _)| *field == key) {
                return format!("{flag}: {msg}");
            }
            match file_src
                .as_ref()
                .and_then(|(p, src)| config_key_line(src, &key).map(|l| (p, l)))
            {
                Some((p, line)) => format!("{}:{line}: {msg}", p.display()),
                None => msg,
            }
        })?;
        Ok(c)
    }
}

/// The 1-based line of a top-level `key = ...` assignment in a TOML source.
fn config_key_line(src: &str, key: &str) -> Option<usize> {
    if key.is_empty() {
        return None;
    }
    src.lines()
        .position(|l| {
            l.trim_start()
                .strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with('='))
        })
        .map(|i| i + 1)
}

/// `file:line: message` for a TOML error (line of the error's span start, 1-based).
pub fn toml_error(file: &std::path::Path, src: &str, e: &toml::de::Error) -> String {
    let line = e
        .span()
        .map(|s| src[..s.start.min(src.len())].matches('\n').count() + 1)
        .unwrap_or(1);
    format!("{}:{line}: {}", file.display(), e.message().trim())
}

/// A script's, profile's or config file's text, or `file: why` (unreadable, or not UTF-8 —
/// with the line of the first bad byte).
pub fn read_source(path: &std::path::Path) -> Result<String, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let line = e.as_bytes()[..at].iter().filter(|b| **b == b'\n').count() + 1;
        format!("{}:{line}: not valid UTF-8", path.display())
    })
}

/// Most worker threads `--threads` takes: 4 per core (at least 4, at most 256). More only cost
/// memory and time to create (`--threads 100000` spent minutes creating threads).
pub fn max_threads() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (4 * cores).clamp(4, 256)
}

/// `--threads N`: 0 (all cores) up to [`max_threads`].
pub fn threads_value(s: &str) -> Result<usize, String> {
    let n: usize = s
        .parse()
        .map_err(|_| format!("`{s}` is not a number of threads"))?;
    let max = max_threads();
    if n > max {
        return Err(format!(
            "at most {max} threads (4 per core on this machine); 0 uses every core"
        ));
    }
    Ok(n)
}

/// Why the script's `%{ }%` blocks could not be evaluated here (no python3 on PATH), if they could not.
pub fn python_problem(script: &trc_pkt::Script) -> Option<String> {
    if !script
        .statements
        .iter()
        .any(|s| matches!(s.kind, trc_pkt::StatementKind::Python(_)))
    {
        return None;
    }
    let py = script
        .options
        .iter()
        .find(|o| o.name == "code_command")
        .and_then(|o| o.value.clone())
        .unwrap_or_else(|| "python3".into());
    // Looked up, not started: the interpreter is the script's choice (`--code_command`), and
    // nothing of a script runs before (or outside) the run itself.
    match find_program(&py) {
        Some(_) => None,
        None => Some(format!("the script has %{{ }}% blocks and `{py}` cannot be run: packetdrill evaluates them with python3, so install it")),
    }
}

/// The executable `name` names: a path as given, or the first match on `PATH`.
fn find_program(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    let runnable = |p: &std::path::Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if name.contains('/') {
        let p = PathBuf::from(name);
        return runnable(&p).then_some(p);
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| runnable(p))
}

fn main() {
    // As the VM's /init (pid 1), trc is the guest side of `trc kernel run --kernel`, whatever its arguments.
    if std::process::id() == 1 {
        std::process::exit(trc_vm::guest::main());
    }
    let cli = Cli::parse();
    let code = match cli.cmd {
        Cmd::Check(a) => check::run_check(a),
        Cmd::Matrix(a) => check::run_matrix(a),
        Cmd::Bench(a) => bench::run_bench(a),
        Cmd::Graph(a) => graph::run_graph(a),
        Cmd::Explore(a) => explore::run_explore(a),
        Cmd::Replay(a) => replay::run_replay(a),
        Cmd::Diff(a) => diff::run_diff(a),
        Cmd::Merge(a) => shard::run_merge(a),
        Cmd::Sweep(a) => sweep::run_sweep(a),
        Cmd::Profiles => {
            for p in trc_model::Profile::builtin() {
                println!("{:<20} {}", p.name, p.description);
            }
            0
        }
        Cmd::Properties => {
            for s in trc_properties::catalogue() {
                println!("{:<4} {}\n     guards: {}", s.id, s.statement, s.guards);
            }
            0
        }
        Cmd::Kernel(k) => kernel::main(k),
    };
    std::process::exit(code);
}
