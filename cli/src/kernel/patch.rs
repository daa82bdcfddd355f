//! `trc kernel check --patch FILE... [--base SRC]` and `trc kernel check --kernel A
//! --against-kernel B`: two kernels on one plan, and what the change changed
//! (`trc_kcheck::patch`).

use super::check::{finish, make_plan, work_dir, CheckArgs};
use crate::exit::{self, of_vm_error as vm_error};
use std::path::PathBuf;
use trc_kcheck::patch::{compare, CompareOptions};
use trc_vm::flags::resolve_kernel;

/// The two images: (base, patched), built or named.
fn images(
    args: &CheckArgs,
    what: &str,
) -> Result<(trc_vm::KernelImage, trc_vm::KernelImage, Vec<String>), i32> {
    let cache = args.vm.cache_dir();
    if let Some(b) = &args.against_kernel {
        let k = args
            .vm
            .kernel
            .as_deref()
            .expect("clap: --against-kernel requires --kernel");
        let base = resolve_kernel(b, None, &cache).map_err(|e| vm_error(what, &e))?;
        let patched = resolve_kernel(k, args.vm.modules.as_deref(), &cache)
            .map_err(|e| vm_error(what, &e))?;
        return Ok((
            base,
            patched,
            vec![format!("base: {b}"), format!("patched: {k}")],
        ));
    }
    let source = args.base.clone().unwrap_or_else(|| "debian:sid".into());
    let build = |patches: &[PathBuf], label: &str| -> Result<trc_vm::kbuild::Built, i32> {
        let req = trc_vm::kbuild::BuildRequest::from_flags(
            &source,
            patches,
            None,
            args.jobs,
            cache.clone(),
        )
        .map_err(|e| vm_error(what, &e))?;
        let b = super::build::build_with_progress(&req, &format!("{what} ({label})"))
            .map_err(|e| vm_error(what, &e))?;
        let how = if b.cached {
            "cached".to_string()
        } else {
            format!(
                "built in {:.1} s, {} files compiled",
                b.build_s, b.files_compiled
            )
        };
        eprintln!("{what}: {label} kernel: {} ({how})", b.bzimage.display());
        Ok(b)
    };
    // The patched build first: a patch that does not apply stops before the base is built.
    for p in &args.patch {
        if !p.is_file() {
            eprintln!("{what}: {}: no such patch file", p.display());
            return Err(exit::USAGE);
        }
    }
    let patched = build(&args.patch, "patched")?;
    let base = build(&[], "base")?;
    let img = |b: &trc_vm::kbuild::Built| {
        trc_vm::KernelImage::from_files(&b.bzimage, None).map_err(|e| vm_error(what, &e))
    };
    let names: Vec<String> = args.patch.iter().map(|p| p.display().to_string()).collect();
    Ok((
        img(&base)?,
        img(&patched)?,
        vec![
            format!("base: {}", base.source),
            format!("patched: {} + {}", patched.source, names.join(" ")),
        ],
    ))
}

pub fn main(args: CheckArgs) -> i32 {
    let what = "trc kernel check";
    if args.shard.is_some() {
        eprintln!("{what}: --shard with --patch/--against-kernel: not supported yet (run the comparison in one job)");
        return exit::USAGE;
    }
    let req = match args.request() {
        Ok(r) => r,
        Err(e) => return exit::bad_input(what, &e),
    };
    if let Err(e) = trc_vm::host::find_qemu(None) {
        return vm_error(what, &e);
    }
    let (base_img, patched_img, desc) = match images(&args, what) {
        Ok(x) => x,
        Err(rc) => return rc,
    };
    let cache = args.vm.cache_dir();
    let vm = |img: &trc_vm::KernelImage, name: &str| {
        let mut t = trc_vm::target::Vm::new(img, args.vm.spec(img, cache.clone()));
        t.name = Some(format!("{name} {}", img.release));
        t
    };
    let (mut base, mut patched) = (vm(&base_img, "base"), vm(&patched_img, "patched"));
    let (work, _cleanup) = match work_dir(args.out.as_deref(), what) {
        Ok(w) => w,
        Err(rc) => return rc,
    };
    let t0 = std::time::Instant::now();
    let plan = match make_plan(&req, &work, what) {
        Ok(p) => p,
        Err(rc) => return rc,
    };
    let mine = req.owned(&plan);
    let o = CompareOptions {
        rerun: !args.no_rerun,
    };
    let mut cached;
    let base_t: &mut dyn trc_kernel::target::Target = match &args.base_runs {
        Some(dir) => {
            cached = trc_kcheck::basecache::FirstBatchCache::new(
                &mut base,
                dir,
                &trc_kcheck::basecache::identity(
                    &base_img.vmlinuz,
                    &args.vm.spec(&base_img, cache.clone()).options,
                ),
            );
            &mut cached
        }
        None => &mut base,
    };
    let mut rep = match compare(&plan, &mine, base_t, &mut patched, &o, &mut |m| {
        eprintln!("{what}: {m}")
    }) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{what}: {e}");
            return exit::of_target_error(&e);
        }
    };
    let pages = match &args.out {
        Some(d) => d.join("pages"),
        None => std::env::temp_dir().join(format!("trc-kcheck-pages-{}", std::process::id())),
    };
    if let Err(e) = trc_viz::patch_pages(&mut rep, &plan, &mine, &pages) {
        eprintln!("{what}: {e}");
        return exit::USAGE;
    }
    let mut v = serde_json::to_value(&rep).unwrap_or_default();
    v["kernels"] = serde_json::json!(desc);
    v["seconds"] = serde_json::json!(t0.elapsed().as_secs_f64());
    if args.json {
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
    } else {
        for d in &desc {
            println!("{d}");
        }
        print!("{}", rep.render());
        println!("total: {:.1} s", t0.elapsed().as_secs_f64());
    }
    finish(
        args.out.is_some(),
        &work.join("report.json"),
        &v,
        rep.outcome(),
        what,
    )
}
