#!/usr/bin/env bash
# weir's test command (what CI runs through .ci/run): formatting, lints, then every test of the
# workspace in release mode against real MariaDB servers started by the test kit.
#
# Needs cargo, mariadbd/mariadb-install-db (mariadb-server), the mariadb client, mysqlslap and
# sysbench; .ci/run installs them. Extra arguments go to `cargo test` (e.g. a test name filter).
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$WEIR_ROOT"
ensure_cargo

say "cargo fmt --all -- --check"
cargo fmt --all -- --check
say "cargo clippy --workspace --all-targets -- -D warnings"
cargo clippy --workspace --all-targets -- -D warnings
say "cargo test --workspace --release"
cargo test --workspace --release "$@"
say "all checks passed"
