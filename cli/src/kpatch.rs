//! `trc kernel check --patch FILE... [--base SRC]` and `trc kernel check --kernel A
//! --against-kernel B`: two kernels on one plan, and what the change changed
//! (`trc_kcheck::patch`).

use crate::kernel::{
    check_inputs, make_plan, owned, resolve_kernel, vm_error, work_dir, CheckArgs,
};
use std::path::{Path, PathBuf};
use trc_kcheck::patch::{compare, CompareOptions, PatchReport};

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
        let req = crate::kbuild::request(&source, patches, None, args.jobs, cache.clone())
            .map_err(|e| vm_error(what, &e))?;
        let b = crate::kbuild::build_with_progress(&req, &format!("{what} ({label})"))
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
            return Err(2);
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
        return 2;
    }
    let (suites, mons, profile) = match check_inputs(&args) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("{what}: {e}");
            return 2;
        }
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
    let plan = match make_plan(&args, suites, mons, profile, &work, what) {
        Ok(p) => p,
        Err(rc) => return rc,
    };
    let mine = owned(plan.cases.len(), args.shard, what);
    let o = CompareOptions {
        rerun: !args.no_rerun,
    };
    let mut rep = match compare(&plan, &mine, &mut base, &mut patched, &o, &mut |m| {
        eprintln!("{what}: {m}")
    }) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{what}: {e}");
            return e.exit_code();
        }
    };
    let pages = match &args.out {
        Some(d) => d.join("pages"),
        None => std::env::temp_dir().join(format!("trc-kcheck-pages-{}", std::process::id())),
    };
    if let Err(e) = write_pages(&mut rep, &plan, &mine, &pages) {
        eprintln!("{what}: {e}");
        return 2;
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
    crate::kernel::finish(args.out.is_some(), &work, &v, rep.exit_code(), what)
}

/// One page per scenario whose behaviour changed: the base's and the patched kernel's pages
/// (time-sequence diagram, cwnd timeline, steps) side by side.
fn write_pages(
    rep: &mut PatchReport,
    plan: &trc_kcheck::run::Plan,
    mine: &[usize],
    dir: &Path,
) -> Result<(), String> {
    let changed: Vec<usize> = (0..rep.scenarios.len())
        .filter(|i| rep.scenarios[*i].changed())
        .collect();
    if changed.is_empty() {
        return Ok(());
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for i in changed {
        let (Some(b), Some(p)) = rep.runs[i].clone() else {
            continue;
        };
        let case = &plan.cases[mine[i]];
        let text = crate::read_source(&case.path)?;
        let stem = trc_trace::file_safe(&case.name.trim_end_matches(".pkt").replace('/', "-"));
        let title = case.path.display().to_string();
        for (side, r) in [("base", &b), ("patched", &p)] {
            let html =
                crate::pictures::kernel::page(r, &text, &format!("{title} on the {side} kernel"));
            let f = dir.join(format!("{stem}.{side}.html"));
            trc_vm::write_atomic(&f, html.as_bytes())
                .map_err(|e| format!("cannot write {}: {e}", f.display()))?;
        }
        let d = rep.scenarios[i]
            .difference
            .as_ref()
            .map(|d| format!("first difference at line {}: {}", d.line, d.what.join(", ")))
            .unwrap_or_default();
        let html = side_by_side(
            &case.name,
            &d,
            &format!("{stem}.base.html"),
            &format!("{stem}.patched.html"),
        );
        let f = dir.join(format!("{stem}.html"));
        trc_vm::write_atomic(&f, html.as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", f.display()))?;
        rep.scenarios[i].page = Some(f.display().to_string());
    }
    Ok(())
}

fn side_by_side(name: &str, diff: &str, base: &str, patched: &str) -> String {
    let esc = crate::pictures::esc;
    format!(
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{n}: base and patched kernel</title>
<style>body{{margin:0;font-family:sans-serif}}h1{{font-size:1.1em;margin:.5em}}p{{margin:.5em}}.two{{display:flex;gap:4px}}.two div{{flex:1}}iframe{{width:100%;height:92vh;border:1px solid #ccc}}</style></head>
<body><h1>{n}</h1><p>{d}</p><div class="two"><div><p>base</p><iframe src="{b}"></iframe></div><div><p>patched</p><iframe src="{p}"></iframe></div></div></body></html>
"#,
        n = esc(name),
        d = esc(diff),
        b = esc(base),
        p = esc(patched)
    )
}
