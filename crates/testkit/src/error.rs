//! The one error type of the test kit: every variant says which server or tool failed and carries
//! the evidence (stderr, log tail) needed to understand a failure without rerunning it.

use std::path::PathBuf;
use std::time::Duration;

/// Everything that can go wrong while starting, driving or stopping test servers.
#[derive(Debug, thiserror::Error)]
pub enum TestkitError {
    /// A required executable (mariadbd, mariadb-install-db, mariadb) is not installed.
    #[error(
        "{name} not found: install {package} (apt-get install -y mariadb-server mariadb-client)"
    )]
    MissingBinary {
        /// Executable that was looked for.
        name: String,
        /// Debian package that provides it.
        package: &'static str,
    },
    /// A filesystem or process operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done, with the path involved.
        context: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// `mariadb-install-db` failed.
    #[error("mariadb-install-db failed for {datadir}: {output}")]
    InstallDb {
        /// Datadir being initialised.
        datadir: PathBuf,
        /// Tail of the tool's output.
        output: String,
    },
    /// A server did not start or exited during startup.
    #[error("server {server} failed to start: {reason}\n--- tail of {log} ---\n{log_tail}")]
    Start {
        /// Server name (primary, replica1, ...).
        server: String,
        /// Why startup was judged failed.
        reason: String,
        /// Path of the server's error log.
        log: PathBuf,
        /// Last lines of the error log.
        log_tail: String,
    },
    /// A statement run through the `mariadb` CLI failed.
    #[error("SQL on {server} failed ({status}): {sql}\nstderr: {stderr}")]
    Sql {
        /// Server name.
        server: String,
        /// The SQL text (shortened).
        sql: String,
        /// Exit status of the CLI.
        status: String,
        /// The CLI's stderr.
        stderr: String,
    },
    /// Something did not happen in time.
    #[error("timed out after {waited:?} waiting for {what}: {detail}")]
    Timeout {
        /// What was awaited.
        what: String,
        /// How long we waited.
        waited: Duration,
        /// State observed last (replica status, stderr tail...).
        detail: String,
    },
    /// Replication could not be set up or broke.
    #[error("replication on {server}: {detail}")]
    Replication {
        /// Replica name.
        server: String,
        /// Slave status or error text.
        detail: String,
    },
    /// A weir process failed to start or misbehaved.
    #[error("weir process: {reason}\n--- tail of {stderr_path} ---\n{stderr_tail}")]
    Weir {
        /// What went wrong.
        reason: String,
        /// Path of the captured stderr.
        stderr_path: PathBuf,
        /// Last lines of stderr.
        stderr_tail: String,
    },
    /// A configuration given to the kit is unusable.
    #[error("invalid testkit input: {0}")]
    Invalid(String),
}

impl TestkitError {
    /// Wraps an io::Error with what was being done.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        TestkitError::Io {
            context: context.into(),
            source,
        }
    }
}

/// Shorthand result type of the kit.
pub type Result<T, E = TestkitError> = std::result::Result<T, E>;
