//! Helpers shared by the VM-facing CLI tests (`kernel_vm.rs`, `kernel_modules.rs`).
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The workspace root (the tests run `trc` from there, so `counterexamples/...` resolves).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A fresh scratch directory under the target's test temporary directory.
pub fn scratch(name: &str) -> PathBuf {
    trc_testkit::scratch!(name)
}
