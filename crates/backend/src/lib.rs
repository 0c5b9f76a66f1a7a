//! One connection to a MySQL/MariaDB server: connect and authenticate as a user, the session
//! state weir knows it holds, and simple commands. Routing and pooling live elsewhere.
#![forbid(unsafe_code)]

mod auth;
mod conn;
pub mod net;
mod stmts;

pub use conn::{
    BackendConn, ConnectParams, Credential, Endpoint, PreparedInfo, TextRows, BACKEND_BASE_CAPS,
    CORRECTNESS_CAPS, SESSION_CAPS,
};
pub use net::Stream;
pub use stmts::StmtCache;

use weir_wire::msg::ErrInfo;
use weir_wire::WireError;

/// The version string of the server weir last connected to (pool or monitor).
static SERVER_VERSION: arc_swap::ArcSwapOption<String> = arc_swap::ArcSwapOption::const_empty();

/// The version the last backend server weir connected to announced, if any connected yet:
/// what weir announces to clients when mysql-server_version is empty, so that drivers see
/// the server they really talk to (MariaDB or MySQL, and which).
pub fn backend_server_version() -> Option<std::sync::Arc<String>> {
    SERVER_VERSION.load_full()
}

/// Client capabilities every pooled connection asks for, whatever the client it serves
/// negotiated, because weir gives a client without them what the server would:
/// CLIENT_SESSION_TRACK (state changes are left out of its OKs) and CLIENT_LOCAL_FILES (a file
/// request meant for it is answered with no file and the statement refused with the server's
/// error). Clients that differ only in these then share connections.
pub fn adapted_caps() -> u32 {
    use weir_wire::cap;
    cap::SESSION_TRACK | cap::LOCAL_FILES
}

/// The capabilities of a client that a pooled connection must have been opened with to serve
/// it: [`CORRECTNESS_CAPS`] less [`adapted_caps`].
pub fn pool_key_capabilities(client_caps: u32) -> u32 {
    client_caps & CORRECTNESS_CAPS & !adapted_caps()
}

/// The MariaDB extended capabilities (`weir_wire::mariadb_cap`) the last backend server weir
/// connected to offered; 0 for MySQL or before any connected.
static MARIADB_CAPABILITIES: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// The MariaDB extended capabilities the last backend server weir connected to offered: weir
/// offers clients those it relays, so that they get what the server would have given them.
pub fn backend_mariadb_capabilities() -> u32 {
    MARIADB_CAPABILITIES.load(std::sync::atomic::Ordering::Relaxed)
}

fn note_mariadb_capabilities(caps: u32) {
    MARIADB_CAPABILITIES.store(caps, std::sync::atomic::Ordering::Relaxed);
}

/// Whether the last backend server weir connected to is MariaDB.
static SERVER_IS_MARIADB: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// Whether the last backend server weir connected to is MariaDB (also before any connected):
/// a hint for per-statement choices where MariaDB and MySQL differ, one relaxed load.
pub fn backend_is_mariadb() -> bool {
    SERVER_IS_MARIADB.load(std::sync::atomic::Ordering::Relaxed)
}

fn note_server_version(version: &str) {
    SERVER_IS_MARIADB.store(
        version.contains("MariaDB"),
        std::sync::atomic::Ordering::Relaxed,
    );
    let known = SERVER_VERSION.load();
    if known.as_deref().map(String::as_str) != Some(version) {
        SERVER_VERSION.store(Some(std::sync::Arc::new(version.to_string())));
    }
}

/// Why talking to a backend failed.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The socket failed or was closed.
    #[error("backend i/o error: {0}")]
    Io(#[from] std::io::Error),
    /// The server did not answer in time.
    #[error("backend timed out after {0:?}")]
    Timeout(std::time::Duration),
    /// The server sent something the protocol does not allow.
    #[error("backend protocol error: {0}")]
    Protocol(#[from] WireError),
    /// The server answered with an error.
    #[error("backend error: {0}")]
    Server(ErrInfo),
    /// Authentication could not be carried out.
    #[error("backend authentication failed: {0}")]
    Auth(String),
}

impl BackendError {
    /// Whether the connection is still usable after this error (only a server ERR leaves it so).
    pub fn connection_usable(&self) -> bool {
        matches!(self, BackendError::Server(_))
    }
}
