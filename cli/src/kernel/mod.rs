//! `trc kernel run`: the command line of the real-kernel runner (the runner itself is the
//! `trc-kernel` library), on the running kernel or, with `--kernel`, on another one booted in
//! qemu (`trc-vm`); `trc kernel fetch` (a Debian kernel for `--kernel`); the hidden `trc
//! kernel guest` (the VM's `/init`).

pub mod build;
pub mod check;
pub mod packetdrill;
pub mod patch;
pub mod run;

use crate::exit;
use clap::{Args, Subcommand};
use std::path::PathBuf;

/// `trc kernel ...` subcommands.
#[derive(Debug, Subcommand)]
pub enum KernelCommand {
    /// Run packetdrill-format scripts against the running kernel, or (--kernel) another kernel in qemu.
    Run(Box<run::RunArgs>),
    /// Check the properties on a kernel's behaviour: run a suite of scenarios, judge each run
    /// with the property monitors, and compare it with the model's profile.
    Check(Box<check::CheckArgs>),
    /// Download and unpack a Debian kernel (cloud-amd64) for `trc kernel run --kernel`.
    Fetch(FetchArgs),
    /// Build a kernel for `--kernel` from Debian's linux-source (or a tree), trc's configuration
    /// and optional patches; incremental and cached.
    Build(build::BuildArgs),
    /// The VM's /init (pid 1 only): runs the scripts of the initramfs and powers off.
    #[command(hide = true)]
    Guest,
}

/// Arguments of `trc kernel fetch`.
#[derive(Debug, Args)]
#[command(
    after_help = "SPEC: debian:sid, debian:trixie, debian:bookworm, debian:VERSION-SUITE (debian:7.2-sid) or \
debian:VERSION (the newest of the three suites). The packages come through a private apt configuration under \
CACHE/apt (the mirror is read from this machine's apt sources; nothing of the machine's apt state changes) and are \
unpacked into CACHE/kernels/RELEASE, linked as CACHE/kernels/SPEC. Exit codes: 0 fetched, 1 failed, 2 bad SPEC, \
4 skipped (no apt, dpkg-deb or keyring)."
)]
pub struct FetchArgs {
    /// What to fetch.
    pub spec: String,
    /// Cache directory (default $TRC_CACHE, $XDG_CACHE_HOME/trc or ~/.cache/trc).
    #[arg(long, value_name = "DIR")]
    pub cache: Option<PathBuf>,
    /// Update the package lists even if they are less than a day old.
    #[arg(long)]
    pub refresh: bool,
    /// Download and unpack again even if the release is in the cache.
    #[arg(long)]
    pub force: bool,
}

/// Entry point used by the CLI; returns the process exit code.
pub fn main(cmd: KernelCommand) -> i32 {
    match cmd {
        KernelCommand::Run(args) if args.packetdrill.is_some() => packetdrill::cli(*args),
        KernelCommand::Run(args) if args.vm.kernel.is_some() => run::vm_cli(*args),
        KernelCommand::Run(args) => run::run_cli(*args),
        KernelCommand::Check(args) if !args.patch.is_empty() || args.against_kernel.is_some() => {
            patch::main(*args)
        }
        KernelCommand::Check(args) => check::check_cli(*args),
        KernelCommand::Fetch(args) => fetch_cli(args),
        KernelCommand::Build(args) => build::main(args),
        KernelCommand::Guest => trc_vm::guest::main(),
    }
}

fn fetch_cli(args: FetchArgs) -> i32 {
    let cache = args.cache.clone().unwrap_or_else(trc_vm::default_cache_dir);
    if !args.spec.starts_with("debian:") {
        eprintln!(
            "trc kernel fetch: {}: expected debian:SUITE, debian:VERSION-SUITE or debian:VERSION",
            args.spec
        );
        return exit::USAGE;
    }
    let o = trc_vm::FetchOptions {
        refresh: args.refresh,
        force: args.force,
    };
    match trc_vm::fetch_debian_kernel_with(&args.spec, &cache, &o, &mut |m| {
        eprintln!("trc kernel fetch: {m}")
    }) {
        Ok(img) => {
            let p = |x: &Option<PathBuf>| {
                x.as_ref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_else(|| "-".into())
            };
            println!("release: {}", img.release);
            if let (Some(s), Some(v)) = (&img.suite, &img.package_version) {
                println!("package: {} ({s})", v);
            }
            println!("vmlinuz: {}", img.vmlinuz.display());
            println!("modules: {}", p(&img.modules));
            println!("config: {}", p(&img.config));
            println!("System.map: {}", p(&img.system_map));
            0
        }
        Err(e) => exit::of_vm_error("trc kernel fetch", &e),
    }
}
