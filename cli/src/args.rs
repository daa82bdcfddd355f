//! The arguments several commands share: what to check (`ModelArgs`: profile, properties,
//! bounds), the bounds themselves (`BoundArgs` → `Config`), the connection flags (`ConnFlags`:
//! SACK and timestamps, each forced on, off, or left to the command's default; each command
//! words their help for what they mean to it with `mut_arg`), `--threads` and `--shard`.

use clap::Args;
use std::path::{Path, PathBuf};
use trc_model::config::{CcKind, Config, SackMode};

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
    pub fn load(&self) -> Result<(Config, trc_model::Profile), trc_check::Error> {
        Ok((
            self.bounds.config()?,
            trc_check::load_profile(&self.profile)?,
        ))
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
    pub conn: ConnFlags,
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
    /// Learn srtt, rttvar, the RTO and min_rtt from every RTT sample (tcp_rtt_estimator); off:
    /// the fixed RTT of --rtt-ms (trc replay and trc diff always learn).
    #[arg(long)]
    pub rtt_estimator: bool,
    /// Congestion control: cubic (default) or reno.
    #[arg(long, value_parser = ["cubic", "reno"])]
    pub cc: Option<String>,
}

impl BoundArgs {
    /// The configuration: defaults, then the config file, then the flags (one `--config` at
    /// most: only `trc check` takes several, see [`BoundArgs::configs`]).
    pub fn config(&self) -> Result<Config, trc_check::Error> {
        if self.config.len() > 1 {
            return Err(trc_check::Error::Input(format!(
                "--config given {} times: only `trc check` takes several bounds files",
                self.config.len()
            )));
        }
        self.config_from(self.config.first().map(|p| p.as_path()))
    }

    /// Every `--config` file's configuration with the flags applied, in order (the defaults
    /// and the flags when there is none), each with the file.
    pub fn configs(&self) -> Result<Vec<(Option<PathBuf>, Config)>, trc_check::Error> {
        if self.config.is_empty() {
            return Ok(vec![(None, self.config_from(None)?)]);
        }
        self.config
            .iter()
            .map(|p| Ok((Some(p.clone()), self.config_from(Some(p))?)))
            .collect()
    }

    /// Defaults, then `file`, then the flags.
    fn config_from(&self, file: Option<&Path>) -> Result<Config, trc_check::Error> {
        trc_check::input::bounds(file, |c| self.apply(c))
    }

    /// Sets the `Config` fields the flags give; returns them, each with its flag (an error about
    /// such a field names the flag, not the config file's line, whose value the flag replaced).
    fn apply(&self, c: &mut Config) -> Vec<(&'static str, &'static str)> {
        let mut from_flag: Vec<(&'static str, &'static str)> = Vec::new();
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
        if self.rtt_estimator {
            c.rtt_estimator = true;
        }
        if let Some(cc) = &self.cc {
            c.cc = if cc == "reno" {
                CcKind::Reno
            } else {
                CcKind::Cubic
            };
        }
        from_flag
    }
}

/// `--threads N`: 0 (all cores) up to 4 per core.
pub use trc_check::run::threads_value;

/// `--ranks N`: 1 up to as many as `--threads` allows (each rank is a thread).
pub fn ranks_value(s: &str) -> Result<usize, String> {
    let max = trc_check::run::max_threads();
    match s.parse::<usize>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(format!(
            "expected 1 to {max} ranks (4 per core on this machine), got `{s}`"
        )),
    }
}

/// `A:B`, two whole numbers (`--rtt-fall AT:BY`, `--then IDLE:SEGMENTS`).
pub fn ms_pair(s: &str) -> Result<(u32, u32), String> {
    let (a, b) = s
        .split_once(':')
        .ok_or_else(|| format!("expected A:B (two whole numbers), got {s:?}"))?;
    let num = |x: &str| {
        x.trim()
            .parse::<u32>()
            .map_err(|_| format!("expected A:B (two whole numbers), got {s:?}"))
    };
    Ok((num(a)?, num(b)?))
}

/// `--shard I/N`.
pub fn shard(s: &str) -> Result<trc_check::shard::Shard, trc_check::shard::BadShard> {
    trc_check::shard::parse_shard(s)
}

#[derive(Args, Clone, Debug, Default)]
pub struct ConnFlags {
    /// SACK connections only.
    #[arg(long, conflicts_with = "no_sack")]
    pub sack: bool,
    /// Non-SACK connections only.
    #[arg(long)]
    pub no_sack: bool,
    /// Connections with timestamps only.
    #[arg(long, conflicts_with = "no_ts")]
    pub ts: bool,
    /// Connections without timestamps only.
    #[arg(long)]
    pub no_ts: bool,
}

impl ConnFlags {
    /// `Some(true)` for `--sack`, `Some(false)` for `--no-sack`, `None` if neither.
    pub fn sack(&self) -> Option<bool> {
        pick(self.sack, self.no_sack)
    }

    /// `Some(true)` for `--ts`, `Some(false)` for `--no-ts`, `None` if neither.
    pub fn ts(&self) -> Option<bool> {
        pick(self.ts, self.no_ts)
    }
}

fn pick(on: bool, off: bool) -> Option<bool> {
    if on {
        Some(true)
    } else if off {
        Some(false)
    } else {
        None
    }
}
