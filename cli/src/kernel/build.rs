//! `trc kernel build`: the command line of `trc_vm::kbuild` (a kernel from Debian's source or a
//! tree, trc's fragment, patches; cached).

use crate::exit;
use clap::Args;
use std::io::IsTerminal as _;
use std::path::PathBuf;

/// Arguments of `trc kernel build`.
#[derive(Debug, Args)]
#[command(
    after_help = "SOURCE: debian:sid (linux-source-7.2), debian:trixie (6.12), debian:bookworm (6.1), through \
trc's private apt configuration under CACHE/apt, or a kernel tree (--source DIR). The configuration is tinyconfig \
plus trc's fragment (vm/kconfig/trc-minimal.config, built into trc; --config FILE for another), checked after \
olddefconfig for lost lines. The source is unpacked once into CACHE/kbuild/SOURCE/tree and built out of tree in \
one persistent directory per (source, configuration), CACHE/kbuild/SOURCE/out-CONFIG (its build.log has make's \
output), so a patched build after the base recompiles only what the patches touch. Patches (git format-patch or a \
plain diff, -p1) are checked with patch --dry-run before anything is built, applied for the build and reversed \
after it. Images are cached in CACHE/kimages/KEY by a hash of the source version, the configuration and the \
patches' contents: an identical request builds nothing. The first build of a tree takes about 25 minutes on 2 \
cores. Exit codes: 0 built (or cached), 1 the build failed (the log is named), 2 bad source, config or a patch \
that does not apply (its hunk is named; nothing built), 4 skipped (build tools missing: the apt-get command is \
printed; or --cached and the image is not in the cache)."
)]
pub struct BuildArgs {
    /// debian:sid, debian:trixie or debian:bookworm (default debian:sid).
    #[arg(value_name = "SOURCE", conflicts_with = "source")]
    pub spec: Option<String>,
    /// A kernel source tree instead of Debian's.
    #[arg(long, value_name = "DIR")]
    pub source: Option<PathBuf>,
    /// Patches to apply, in order.
    #[arg(long, value_name = "FILE", num_args = 1..)]
    pub patch: Vec<PathBuf>,
    /// A configuration fragment instead of trc's.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// make -j (default: the CPU count).
    #[arg(short = 'j', long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Cache directory (default $TRC_CACHE, $XDG_CACHE_HOME/trc or ~/.cache/trc).
    #[arg(long, value_name = "DIR")]
    pub cache: Option<PathBuf>,
    /// Print only the image's path on stdout (for scripts).
    #[arg(long)]
    pub print_path: bool,
    /// Build nothing: the image if it is in the cache, else exit 4.
    #[arg(long)]
    pub cached: bool,
}

/// Builds `req`, with progress on stderr (a live line on a terminal): the image.
pub fn build_with_progress(
    req: &trc_vm::kbuild::BuildRequest,
    what: &str,
) -> Result<trc_vm::kbuild::Built, trc_vm::Error> {
    let tty = std::io::stderr().is_terminal();
    let mut last = std::time::Instant::now() - std::time::Duration::from_secs(60);
    let mut live = false;
    let r = trc_vm::kbuild::build(req, &mut |p| match p {
        trc_vm::kbuild::Progress::Note(m) => {
            if live {
                eprintln!();
                live = false;
            }
            eprintln!("{what}: {m}")
        }
        trc_vm::kbuild::Progress::Compiled {
            done,
            total,
            elapsed_s,
        } => {
            let every = if tty { 1.0 } else { 60.0 };
            if last.elapsed().as_secs_f64() < every {
                return;
            }
            last = std::time::Instant::now();
            let left = if total > done && done > 20 {
                format!(
                    ", about {:.0} min left",
                    elapsed_s / done as f64 * (total - done) as f64 / 60.0
                )
            } else {
                String::new()
            };
            let of = if total > 0 {
                format!(" of about {total}")
            } else {
                String::new()
            };
            if tty {
                eprint!(
                    "\r{what}: compiled {done}{of} files, {:.0} s{left}   ",
                    elapsed_s
                );
                live = true;
            } else {
                eprintln!(
                    "{what}: compiled {done}{of} files, {:.0} s{left}",
                    elapsed_s
                );
            }
        }
    });
    if live {
        eprintln!();
    }
    r
}

pub fn main(args: BuildArgs) -> i32 {
    let what = "trc kernel build";
    let cache = args.cache.clone().unwrap_or_else(trc_vm::default_cache_dir);
    let source = match (&args.spec, &args.source) {
        (_, Some(d)) => d.display().to_string(),
        (Some(s), None) => s.clone(),
        (None, None) => "debian:sid".into(),
    };
    let req = match trc_vm::kbuild::BuildRequest::from_flags(
        &source,
        &args.patch,
        args.config.as_ref(),
        args.jobs,
        cache,
    ) {
        Ok(r) => r,
        Err(e) => return exit::of_vm_error(what, &e),
    };
    let res = if args.cached {
        match trc_vm::kbuild::find_cached(&req) {
            Ok(Some(b)) => Ok(b),
            Ok(None) => Err(trc_vm::Error::Missing(
                "not in the cache (--cached builds nothing; run `trc kernel build` without it)"
                    .into(),
            )),
            Err(e) => Err(e),
        }
    } else {
        build_with_progress(&req, what)
    };
    match res {
        Ok(b) => {
            if args.print_path {
                println!("{}", b.bzimage.display());
            } else {
                println!("image: {}", b.bzimage.display());
                println!("source: {}", b.source);
                println!("config: {}", b.config);
                for (n, h) in &b.patches {
                    println!("patch: {n} (sha256 {h})");
                }
                if b.cached {
                    println!("cached: nothing built");
                } else {
                    println!(
                        "built: {} files compiled in {:.1} s (log {})",
                        b.files_compiled,
                        b.build_s,
                        b.log.display()
                    );
                }
            }
            0
        }
        Err(e) => exit::of_vm_error(what, &e),
    }
}
