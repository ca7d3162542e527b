//! Runs the `warpscope` binary from integration tests.
#![allow(dead_code)]

use std::process::Command;

fn output(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_warpscope"))
        .args(args)
        .output()
        .expect("run warpscope")
}

/// Standard output and error of a run that must succeed.
pub fn ok(args: &[&str]) -> (String, String) {
    let out = output(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Standard error of a run that must fail.
pub fn fails(args: &[&str]) -> String {
    let out = output(args);
    assert!(!out.status.success(), "{args:?} should fail");
    String::from_utf8_lossy(&out.stderr).into_owned()
}
