//! What the integration tests that drive real programs share: building an example, finding
//! a peer that `.ci/run` installs, and children that end with the test.
// Each test binary uses its own part of this module.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Child;
use std::sync::{Mutex, PoisonError};

/// A built example; cargo runs once per example and test binary.
pub(crate) fn example_binary(example: &str) -> PathBuf {
    static BUILT: Mutex<BTreeMap<String, PathBuf>> = Mutex::new(BTreeMap::new());
    let mut built = BUILT.lock().unwrap_or_else(PoisonError::into_inner);
    built
        .entry(example.to_owned())
        .or_insert_with(|| {
            let mut build = escargot::CargoBuild::new()
                .package("pi-examples")
                .example(example)
                .current_release();
            for (name, _) in std::env::vars_os() {
                if let Some(name) = name.to_str()
                    && describes_the_test_crate(name)
                {
                    build = build.env_remove(name);
                }
            }
            build
                .run()
                .unwrap_or_else(|error| panic!("cannot build example {example}: {error}"))
                .path()
                .to_owned()
        })
        .clone()
}

/// Whether `name` is one of the variables cargo gives a running test about its own crate:
/// passed on to the example's build, they would make build scripts that watch them (ring's
/// watches `CARGO_MANIFEST_DIR`) rebuild on every run.
fn describes_the_test_crate(name: &str) -> bool {
    name.starts_with("CARGO_PKG_")
        || name.starts_with("CARGO_BIN_")
        || matches!(
            name,
            "CARGO_MANIFEST_DIR"
                | "CARGO_MANIFEST_PATH"
                | "CARGO_CRATE_NAME"
                | "CARGO_PRIMARY_PACKAGE"
                | "CARGO_TARGET_TMPDIR"
                | "CARGO_RUSTC_CURRENT_DIR"
                | "OUT_DIR"
        )
}

/// The peer that `variable` points at, or `None` with a note saying why the test is
/// skipped. Under CI a missing peer fails the test: `.ci/run` installs every peer, so one
/// missing there is a broken setup, which a skip would hide.
pub(crate) fn installed(variable: &str, what: &str) -> Option<PathBuf> {
    let path = std::env::var_os(variable)
        .filter(|path| !path.is_empty())
        .map(PathBuf::from);
    let problem = match &path {
        Some(path) if path.is_file() => return Some(path.clone()),
        Some(path) => format!("{variable} is {}, which does not exist", path.display()),
        None => format!("{variable} is not set"),
    };
    let test = std::thread::current()
        .name()
        .unwrap_or("this test")
        .to_owned();
    let why =
        format!("{problem}, so {what} is not installed (.ci/run installs it and sets {variable})");
    assert!(
        std::env::var_os("CI").is_none(),
        "{test} cannot run under CI: {why}"
    );
    // Written to the real standard error: libtest would capture `eprintln!` and show
    // nothing for a passing test.
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "note: {test} skipped: {why}");
    None
}

/// The directory `variable` names, when it exists; else as [`installed`] says.
pub(crate) fn installed_dir(variable: &str, what: &str) -> Option<PathBuf> {
    match std::env::var_os(variable).map(PathBuf::from) {
        Some(path) if path.is_dir() => Some(path),
        _ => installed(variable, what),
    }
}

/// A child killed when the test ends, however it ends.
pub(crate) struct Killed(pub(crate) Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// nginx's master process: told to stop (SIGTERM), it stops its workers too; killed, it
/// would leave them running.
pub(crate) struct Nginx(pub(crate) Child);

impl Drop for Nginx {
    fn drop(&mut self) {
        if let Ok(pid) = i32::try_from(self.0.id()) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
        let _ = self.0.wait();
    }
}

/// A loopback port nothing listens on right now.
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port()
}
