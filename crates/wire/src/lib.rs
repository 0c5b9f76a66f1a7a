//! MySQL wire protocol: framing, handshake and auth packets, OK/ERR/EOF, reply boundaries.
//!
//! Pure bytes: no sockets, no configuration, no policy. Both the client-facing side and the
//! backend side of weir use this crate, so both speak exactly the same protocol.
#![forbid(unsafe_code)]

pub mod auth;
pub mod consts;
pub mod handshake;
pub mod io;
pub mod msg;
pub mod packet;
pub mod reply;

pub use consts::*;
pub use packet::{PacketHeader, MAX_PAYLOAD};

/// A packet that does not follow the protocol.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The packet ended before a field it must contain.
    #[error("malformed packet: truncated {0}")]
    Truncated(&'static str),
    /// A field holds a value the protocol does not allow.
    #[error("malformed packet: {0}")]
    Invalid(&'static str),
    /// A reply packet arrived where the protocol allows none of its kind.
    #[error("unexpected packet 0x{first:02x} in {state}")]
    Unexpected {
        /// First payload byte of the offending packet.
        first: u8,
        /// Where the reply parser was.
        state: &'static str,
    },
}
