//! Connection phase packets: the server greeting (v10), the client's handshake response,
//! auth switch and more-data packets, and COM_CHANGE_USER.

use crate::io::{put_lenenc_bytes, Reader};
use crate::packet::{begin_packet, finish_packet};
use crate::{cap, WireError};
use bytes::{BufMut, BytesMut};

/// Length of the authentication scramble weir generates.
pub const SCRAMBLE_LEN: usize = 20;

/// The initial greeting a server sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Greeting {
    /// Server version string.
    pub server_version: String,
    /// Connection (thread) id.
    pub connection_id: u32,
    /// Full scramble (both parts, without the trailing NUL).
    pub scramble: Vec<u8>,
    /// Capabilities (low 32 bits).
    pub capabilities: u32,
    /// MariaDB extended capabilities (the upper 32 bits), 0 for MySQL.
    pub mariadb_capabilities: u32,
    /// Default collation id.
    pub collation: u8,
    /// Status flags.
    pub status: u16,
    /// Authentication plugin the server proposes.
    pub auth_plugin: String,
}

impl Greeting {
    /// Appends the greeting as packet 0.
    pub fn write(&self, out: &mut BytesMut) {
        let start = begin_packet(out, 0);
        out.put_u8(10);
        out.put_slice(self.server_version.as_bytes());
        out.put_u8(0);
        out.put_u32_le(self.connection_id);
        let (part1, part2) = self.scramble.split_at(self.scramble.len().min(8));
        out.put_slice(part1);
        out.put_u8(0);
        out.put_u16_le(self.capabilities as u16);
        out.put_u8(self.collation);
        out.put_u16_le(self.status);
        out.put_u16_le((self.capabilities >> 16) as u16);
        out.put_u8((self.scramble.len() + 1) as u8);
        out.put_slice(&[0u8; 6]);
        out.put_u32_le(self.mariadb_capabilities);
        out.put_slice(part2);
        out.put_u8(0);
        out.put_slice(self.auth_plugin.as_bytes());
        out.put_u8(0);
        finish_packet(out, start);
    }

    /// Parses a greeting payload; an ERR payload (0xFF) is returned as `Err(Ok(ErrInfo))`.
    pub fn parse(payload: &[u8]) -> Result<Greeting, WireError> {
        let mut r = Reader::new(payload);
        let proto = r.u8("protocol version")?;
        if proto != 10 {
            return Err(WireError::Invalid("unsupported protocol version"));
        }
        let server_version = String::from_utf8_lossy(r.nul_bytes("server version")?).into_owned();
        let connection_id = r.u32("connection id")?;
        let mut scramble = r.take(8, "scramble")?.to_vec();
        r.u8("filler")?;
        let mut capabilities = r.u16("capabilities")? as u32;
        let mut collation = 0;
        let mut status = 0;
        let mut mariadb_capabilities = 0;
        let mut auth_plugin = String::from("mysql_native_password");
        if !r.is_empty() {
            collation = r.u8("collation")?;
            status = r.u16("status")?;
            capabilities |= (r.u16("capabilities")? as u32) << 16;
            let data_len = r.u8("auth data length")? as usize;
            r.take(6, "reserved")?;
            let ext = r.u32("extended capabilities")?;
            if capabilities & cap::LONG_PASSWORD == 0 {
                mariadb_capabilities = ext;
            }
            if capabilities & cap::SECURE_CONNECTION != 0 {
                let n = data_len.saturating_sub(8).max(13);
                let part2 = r.take(n.min(r.remaining().len()), "scramble part 2")?;
                // The last byte of part 2 is a NUL terminator, not scramble.
                let part2 = part2.strip_suffix(&[0]).unwrap_or(part2);
                scramble.extend_from_slice(part2);
            }
            if capabilities & cap::PLUGIN_AUTH != 0 {
                auth_plugin = String::from_utf8_lossy(r.nul_or_eof_bytes()).into_owned();
            }
        }
        Ok(Greeting {
            server_version,
            connection_id,
            scramble,
            capabilities,
            mariadb_capabilities,
            collation,
            status,
            auth_plugin,
        })
    }
}

/// What a client answers to the greeting.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HandshakeResponse {
    /// Client capabilities.
    pub capabilities: u32,
    /// Largest packet the client accepts.
    pub max_packet: u32,
    /// Requested collation id.
    pub collation: u8,
    /// User name.
    pub username: String,
    /// Auth plugin response.
    pub auth_response: Vec<u8>,
    /// Initial schema, if any.
    pub database: Option<String>,
    /// Plugin used for `auth_response`.
    pub auth_plugin: Option<String>,
    /// Connection attributes.
    pub attributes: Vec<(String, String)>,
    /// MariaDB extended capabilities (see [`crate::mariadb_cap`]); 0 unless the response
    /// clears [`cap::LONG_PASSWORD`].
    pub mariadb_capabilities: u32,
}

/// Whether a handshake response payload is only an SSL request (TLS upgrade before the rest).
pub fn is_ssl_request(payload: &[u8]) -> bool {
    payload.len() == 32 && {
        let caps = u32::from_le_bytes([payload[0], payload[1], payload[2], payload[3]]);
        caps & cap::SSL != 0
    }
}

impl HandshakeResponse {
    /// Parses a HandshakeResponse41 payload.
    pub fn parse(payload: &[u8]) -> Result<HandshakeResponse, WireError> {
        let mut r = Reader::new(payload);
        let capabilities = r.u32("capabilities")?;
        if capabilities & cap::PROTOCOL_41 == 0 {
            return Err(WireError::Invalid("pre-4.1 clients are not supported"));
        }
        let max_packet = r.u32("max packet")?;
        let collation = r.u8("collation")?;
        r.take(19, "filler")?;
        let ext = r.u32("extended capabilities")?;
        // A client that keeps CLIENT_MYSQL talks plain MySQL: the bytes are filler then.
        let mariadb_capabilities = if capabilities & cap::LONG_PASSWORD == 0 {
            ext
        } else {
            0
        };
        let username = String::from_utf8_lossy(r.nul_bytes("user name")?).into_owned();
        let auth_response = if capabilities & cap::PLUGIN_AUTH_LENENC_CLIENT_DATA != 0 {
            r.lenenc_bytes("auth response")?.to_vec()
        } else if capabilities & cap::SECURE_CONNECTION != 0 {
            let n = r.u8("auth response length")? as usize;
            r.take(n, "auth response")?.to_vec()
        } else {
            r.nul_or_eof_bytes().to_vec()
        };
        let mut database = None;
        if capabilities & cap::CONNECT_WITH_DB != 0 && !r.is_empty() {
            let db = r.nul_or_eof_bytes();
            if !db.is_empty() {
                database = Some(String::from_utf8_lossy(db).into_owned());
            }
        }
        let mut auth_plugin = None;
        if capabilities & cap::PLUGIN_AUTH != 0 && !r.is_empty() {
            auth_plugin = Some(String::from_utf8_lossy(r.nul_or_eof_bytes()).into_owned());
        }
        let mut attributes = Vec::new();
        if capabilities & cap::CONNECT_ATTRS != 0 && !r.is_empty() {
            let attrs = r.lenenc_bytes("connection attributes")?;
            let mut a = Reader::new(attrs);
            while !a.is_empty() {
                let k = a.lenenc_bytes("attribute name")?;
                let v = a.lenenc_bytes("attribute value")?;
                attributes.push((
                    String::from_utf8_lossy(k).into_owned(),
                    String::from_utf8_lossy(v).into_owned(),
                ));
            }
        }
        Ok(HandshakeResponse {
            capabilities,
            max_packet,
            collation,
            username,
            auth_response,
            database,
            auth_plugin,
            attributes,
            mariadb_capabilities,
        })
    }

    /// Appends this response as packet `seq` (weir's backend side).
    pub fn write(&self, out: &mut BytesMut, seq: u8) {
        let start = begin_packet(out, seq);
        out.put_u32_le(self.capabilities);
        out.put_u32_le(self.max_packet);
        out.put_u8(self.collation);
        out.put_slice(&[0u8; 19]);
        out.put_u32_le(if self.capabilities & cap::LONG_PASSWORD == 0 {
            self.mariadb_capabilities
        } else {
            0
        });
        out.put_slice(self.username.as_bytes());
        out.put_u8(0);
        put_lenenc_bytes(out, &self.auth_response);
        if self.capabilities & cap::CONNECT_WITH_DB != 0 {
            out.put_slice(self.database.as_deref().unwrap_or("").as_bytes());
            out.put_u8(0);
        }
        if self.capabilities & cap::PLUGIN_AUTH != 0 {
            out.put_slice(self.auth_plugin.as_deref().unwrap_or("").as_bytes());
            out.put_u8(0);
        }
        if self.capabilities & cap::CONNECT_ATTRS != 0 {
            let mut attrs = BytesMut::new();
            for (k, v) in &self.attributes {
                put_lenenc_bytes(&mut attrs, k.as_bytes());
                put_lenenc_bytes(&mut attrs, v.as_bytes());
            }
            put_lenenc_bytes(out, &attrs);
        }
        finish_packet(out, start);
    }
}

/// Appends an auth switch request (0xFE, plugin name, plugin data).
pub fn write_auth_switch(out: &mut BytesMut, seq: u8, plugin: &str, data: &[u8]) {
    let start = begin_packet(out, seq);
    out.put_u8(0xfe);
    out.put_slice(plugin.as_bytes());
    out.put_u8(0);
    out.put_slice(data);
    finish_packet(out, start);
}

/// Parses an auth switch request payload into (plugin, data). The data is returned as sent:
/// scramble-based plugins follow it with a NUL, but others (client_ed25519) send raw bytes
/// that may themselves end in 0, so only the caller knows what to strip.
pub fn parse_auth_switch(payload: &[u8]) -> Result<(String, Vec<u8>), WireError> {
    let mut r = Reader::new(payload);
    r.u8("auth switch header")?;
    let plugin = String::from_utf8_lossy(r.nul_or_eof_bytes()).into_owned();
    Ok((plugin, r.rest().to_vec()))
}

/// Appends an auth-more-data packet (0x01 + data).
pub fn write_auth_more_data(out: &mut BytesMut, seq: u8, data: &[u8]) {
    let start = begin_packet(out, seq);
    out.put_u8(0x01);
    out.put_slice(data);
    finish_packet(out, start);
}

/// A COM_CHANGE_USER request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeUser {
    /// New user name.
    pub username: String,
    /// Auth response computed against the connection's original scramble.
    pub auth_response: Vec<u8>,
    /// New schema.
    pub database: Option<String>,
    /// New collation, when sent.
    pub collation: Option<u16>,
    /// Plugin used for the auth response.
    pub auth_plugin: Option<String>,
}

impl ChangeUser {
    /// Parses a COM_CHANGE_USER payload (command byte included).
    pub fn parse(payload: &[u8], client_caps: u32) -> Result<ChangeUser, WireError> {
        let mut r = Reader::new(payload);
        r.u8("command")?;
        let username = String::from_utf8_lossy(r.nul_bytes("user name")?).into_owned();
        let auth_response = if client_caps & cap::SECURE_CONNECTION != 0 {
            let n = r.u8("auth response length")? as usize;
            r.take(n, "auth response")?.to_vec()
        } else {
            r.nul_or_eof_bytes().to_vec()
        };
        let db = r.nul_or_eof_bytes();
        let database = (!db.is_empty()).then(|| String::from_utf8_lossy(db).into_owned());
        let mut collation = None;
        let mut auth_plugin = None;
        if r.remaining().len() >= 2 {
            collation = Some(r.u16("collation")?);
            if client_caps & cap::PLUGIN_AUTH != 0 && !r.is_empty() {
                auth_plugin = Some(String::from_utf8_lossy(r.nul_or_eof_bytes()).into_owned());
            }
        }
        Ok(ChangeUser {
            username,
            auth_response,
            database,
            collation,
            auth_plugin,
        })
    }
}

/// Reads a client's handshake response as a server does, refusing an SSL request (weir offers
/// no TLS yet; `who` names the listener in the message) and a malformed packet with the ERR
/// to send back.
pub fn accept_response(
    payload: &[u8],
    who: &str,
) -> Result<HandshakeResponse, crate::msg::ErrInfo> {
    let refuse = |message: String| {
        crate::msg::ErrInfo::new(crate::errcode::ER_HANDSHAKE_ERROR, "08S01", message)
    };
    if is_ssl_request(payload) {
        return Err(refuse(format!(
            "{who} does not offer TLS yet: connect without SSL (e.g. --ssl-mode=DISABLED)"
        )));
    }
    HandshakeResponse::parse(payload).map_err(|e| refuse(format!("Bad handshake: {e}")))
}

/// The "Access denied" error, worded as MySQL does.
pub fn access_denied(user: &str, host: &str, with_password: bool) -> crate::msg::ErrInfo {
    crate::msg::ErrInfo::new(
        crate::errcode::ER_ACCESS_DENIED_ERROR,
        "28000",
        format!(
            "Access denied for user '{user}'@'{host}' (using password: {})",
            if with_password { "YES" } else { "NO" }
        ),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn greeting_round_trip() {
        let g = Greeting {
            server_version: "8.0.36-weir".into(),
            connection_id: 42,
            scramble: (1..=20).collect(),
            capabilities: cap::PROTOCOL_41
                | cap::SECURE_CONNECTION
                | cap::PLUGIN_AUTH
                | cap::LONG_PASSWORD
                | cap::DEPRECATE_EOF,
            mariadb_capabilities: 0,
            collation: 45,
            status: 2,
            auth_plugin: "mysql_native_password".into(),
        };
        let mut out = BytesMut::new();
        g.write(&mut out);
        assert_eq!(Greeting::parse(&out[4..]).unwrap(), g);
    }

    #[test]
    fn response_round_trip() {
        let h = HandshakeResponse {
            capabilities: cap::PROTOCOL_41
                | cap::SECURE_CONNECTION
                | cap::PLUGIN_AUTH
                | cap::PLUGIN_AUTH_LENENC_CLIENT_DATA
                | cap::CONNECT_WITH_DB
                | cap::CONNECT_ATTRS,
            max_packet: 1 << 24,
            collation: 45,
            username: "app".into(),
            auth_response: vec![9; 20],
            database: Some("db1".into()),
            auth_plugin: Some("mysql_native_password".into()),
            attributes: vec![("_client_name".into(), "weir".into())],
            mariadb_capabilities: 0,
        };
        let mut out = BytesMut::new();
        h.write(&mut out, 1);
        assert_eq!(HandshakeResponse::parse(&out[4..]).unwrap(), h);
        // MariaDB's extended capabilities travel only without CLIENT_MYSQL.
        let mariadb = HandshakeResponse {
            mariadb_capabilities: crate::mariadb_cap::EXTENDED_METADATA,
            ..h.clone()
        };
        let mut out = BytesMut::new();
        mariadb.write(&mut out, 1);
        assert_eq!(HandshakeResponse::parse(&out[4..]).unwrap(), mariadb);
        assert_eq!(&out[4 + 28..4 + 32], &[8, 0, 0, 0]);
        let mysql = HandshakeResponse {
            capabilities: h.capabilities | cap::LONG_PASSWORD,
            ..mariadb
        };
        let mut out = BytesMut::new();
        mysql.write(&mut out, 1);
        let parsed = HandshakeResponse::parse(&out[4..]).unwrap();
        assert_eq!(parsed.mariadb_capabilities, 0);
    }

    proptest! {
        #[test]
        fn parsers_never_panic(data in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = HandshakeResponse::parse(&data);
            let _ = Greeting::parse(&data);
            let _ = ChangeUser::parse(&data, u32::MAX);
            let _ = parse_auth_switch(&data);
        }
    }
}
