//! Compile-time shape errors, each with a readable `.stderr` snapshot.
//!
//! Post-monomorphization errors (const asserts) only show in a full build, which trybuild runs
//! only when the group also has a `pass` case: keep the pass cases in the same `TestCases`.

use std::process::Command;

/// The compiler the `.stderr` snapshots were made with (pinned in `rust-toolchain.toml`).
const SNAPSHOT_RUSTC: &str = "rustc 1.95.0 ";

/// Diagnostics change between compiler versions, so other toolchains skip the snapshots.
fn snapshot_rustc() -> bool {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    Command::new(rustc)
        .arg("--version")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).starts_with(SNAPSHOT_RUSTC))
}

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    if snapshot_rustc() {
        t.compile_fail("fail/*.rs");
    } else {
        eprintln!("skipping compile-fail snapshots: they were made with {SNAPSHOT_RUSTC}");
    }
    t.pass("pass/*.rs");
}
