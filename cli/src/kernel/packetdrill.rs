//! `trc kernel run --kernel K --packetdrill BIN --packetdrill-tree DIR [--packetdrill-runner F]`:
//! real packetdrill (or runner F, e.g. ksft_runner.sh) on the scripts in the VM, a line for each.

use super::run::RunArgs;
use crate::exit;
use crate::exit::of_vm_error as vm_error;

/// The command: exit 0 when every script passed, 1 when one failed, 3 when one has no result.
pub fn cli(args: RunArgs) -> i32 {
    let what = "trc kernel run --packetdrill";
    let (Some(bin), Some(tree)) = (&args.packetdrill, &args.packetdrill_tree) else {
        return exit::usage_error(&format!(
            "{what}: needs --packetdrill BIN and --packetdrill-tree DIR"
        ));
    };
    if let Err(e) = args.vm.validate() {
        return exit::usage_error(&format!("{what}: {e}"));
    }
    let (img, spec) = match args
        .vm
        .kernel_vm(args.vm.kernel.as_deref().unwrap_or_default())
    {
        Ok(v) => v,
        Err(e) => return vm_error(what, &e),
    };
    let mut pd_args = trc_vm::packetdrill::run_all_ipv4_args();
    for d in &args.defines {
        pd_args.push("-D".into());
        pd_args.push(d.clone());
    }
    let setup = trc_vm::packetdrill::Setup {
        binary: bin.clone(),
        tree: tree.clone(),
        args: pd_args,
        runner: args.packetdrill_runner.clone(),
    };
    let n = args.files.len();
    let mut progress = |e: &trc_vm::Event| {
        if let Some(l) = e.line(&img.release, n) {
            eprintln!("{what}: {l}");
        }
    };
    let run = match trc_vm::packetdrill::run_in_vm_with(&spec, &setup, &args.files, &mut progress) {
        Ok(r) => r,
        Err(e) => return vm_error(what, &e),
    };
    for s in &run.scripts {
        match &s.outcome {
            trc_vm::ScriptOutcome::Exited { output } => {
                println!("{}\t{}", s.rc, s.name);
                if (s.rc != 0 || setup.runner.is_some()) && args.verbose {
                    for l in output.lines() {
                        println!("    {l}");
                    }
                }
            }
            _ => println!("-\t{}\t(no result from the VM)", s.name),
        }
    }
    let passed = run.scripts.iter().filter(|s| s.rc == 0).count();
    println!(
        "kernel: {}; {} scripts: {passed} passed, {} failed; {:.1} s wall",
        if run.release.is_empty() {
            img.release.as_str()
        } else {
            run.release.as_str()
        },
        n,
        n - passed,
        run.total.wall_s
    );
    if let Err(rc) = super::run::console_and_json(what, &args, &run) {
        return rc;
    }
    if !run.complete {
        exit::INCOMPLETE
    } else if passed < n {
        exit::VIOLATED
    } else {
        exit::HOLDS
    }
}
