//! One connection to a MySQL/MariaDB server: connect and authenticate as a user, the session
//! state weir knows it holds, and simple commands. Routing and pooling live elsewhere.
#![forbid(unsafe_code)]

mod auth;
mod conn;
pub mod net;
mod stmts;

pub use conn::{
    BackendConn, ConnectParams, Credential, Endpoint, PreparedInfo, TextRows, BACKEND_BASE_CAPS,
    CORRECTNESS_CAPS,
};
pub use net::Stream;
pub use stmts::StmtCache;

use weir_wire::msg::ErrInfo;
use weir_wire::WireError;

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
