//! Real Helm 3 and 4 (target/tools/helm3 and helm4, from scripts/install-test-tools), each run
//! with homes of its own under a directory the test owns: Helm 3 cannot read the plugins or
//! repositories Helm 4 writes, and neither may read the user's.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The Helm `version` binary; a missing one fails with what to run.
pub fn helm_bin(version: u8) -> PathBuf {
    let bin = super::probe::root().join(format!("target/tools/helm{version}"));
    assert!(
        bin.is_file(),
        "{} is missing: run scripts/install-test-tools",
        bin.display()
    );
    bin
}

/// Make `home`'s data, plugin, config and cache directories.
pub fn make_homes(home: &Path) {
    for d in ["data/plugins", "config", "cache"] {
        std::fs::create_dir_all(home.join(d)).unwrap();
    }
}

/// A command running Helm `version` with its homes under `home` (made here when missing):
/// `HELM_DATA_HOME`, `HELM_PLUGINS` (`data/plugins`), `HELM_CONFIG_HOME`, `HELM_CACHE_HOME`.
pub fn helm_command(version: u8, home: &Path) -> Command {
    make_homes(home);
    let mut cmd = Command::new(helm_bin(version));
    cmd.env("HELM_DATA_HOME", home.join("data"))
        .env("HELM_PLUGINS", home.join("data/plugins"))
        .env("HELM_CONFIG_HOME", home.join("config"))
        .env("HELM_CACHE_HOME", home.join("cache"));
    cmd
}
