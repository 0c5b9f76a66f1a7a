//! Server side of the connection phase: greeting with a fresh scramble, checking the client's
//! proof against the configured user, auth switch when the client's plugin cannot be checked.

use crate::client::{ClientConn, ClientError};
use crate::{GlobalStats, Shared};
use std::sync::Arc;
use weir_backend::Credential;
use weir_config::{Password, User};
use weir_wire::auth::{self, AuthCheck, Secret, CACHING_SHA2_PASSWORD, NATIVE_PASSWORD};
use weir_wire::handshake::{write_auth_more_data, write_auth_switch, Greeting};
use weir_wire::msg::ErrInfo;
use weir_wire::{cap, errcode, status};

/// Capabilities weir offers clients. No SSL and no compression yet; CLIENT_DEPRECATE_EOF is
/// offered and translated per client.
pub const SERVER_CAPS: u32 = cap::LONG_PASSWORD
    | cap::FOUND_ROWS
    | cap::LONG_FLAG
    | cap::CONNECT_WITH_DB
    | cap::NO_SCHEMA
    | cap::LOCAL_FILES
    | cap::IGNORE_SPACE
    | cap::PROTOCOL_41
    | cap::INTERACTIVE
    | cap::TRANSACTIONS
    | cap::SECURE_CONNECTION
    | cap::MULTI_STATEMENTS
    | cap::MULTI_RESULTS
    | cap::PS_MULTI_RESULTS
    | cap::PLUGIN_AUTH
    | cap::CONNECT_ATTRS
    | cap::PLUGIN_AUTH_LENENC_CLIENT_DATA
    | cap::SESSION_TRACK
    | cap::DEPRECATE_EOF;

/// utf8mb4_general_ci: announced in the greeting and used when a client sends collation 0.
pub const DEFAULT_COLLATION: u8 = 45;

/// A successful login.
pub struct Login {
    /// The user.
    pub user: Arc<User>,
    /// Schema asked for at handshake.
    pub database: Option<String>,
    /// Collation asked for.
    pub collation: u8,
    /// Secret weir uses for backend logins.
    pub credential: Credential,
    /// Next sequence id to send.
    pub next_seq: u8,
}

/// Why a login failed: the error was already sent to the client unless it is `Io`.
pub enum LoginError {
    /// Sent an ERR; the connection is to be closed.
    Refused,
    /// The client went away or broke the protocol.
    Io(ClientError),
}

impl From<std::io::Error> for LoginError {
    fn from(e: std::io::Error) -> Self {
        LoginError::Io(ClientError::Io(e))
    }
}

impl From<ClientError> for LoginError {
    fn from(e: ClientError) -> Self {
        LoginError::Io(e)
    }
}

pub use weir_wire::handshake::access_denied;

/// Sends the greeting and authenticates the client.
pub async fn handshake(
    shared: &Shared,
    client: &mut ClientConn,
    connection_id: u32,
) -> Result<Login, LoginError> {
    let runtime = shared.runtime.load_full();
    let scramble = auth::new_scramble();
    client.scramble = scramble;
    let server_version = announced_version(&runtime.mysql.server_version);
    let (mut capabilities, mariadb_capabilities) = greeting_capabilities(&server_version);
    if !runtime.mysql.client_multi_statements {
        // mysql-client_multi_statements = false: not offered, and off for every client
        // whatever it asks (COM_SET_OPTION cannot turn it on either).
        capabilities &= !cap::MULTI_STATEMENTS;
    }
    if !runtime.mysql.enable_load_data_local_infile {
        // Not offered: a client's LOAD DATA LOCAL gets the server's refusal (the relay answers
        // a file request for a client without CLIENT_LOCAL_FILES with no file).
        capabilities &= !cap::LOCAL_FILES;
    }
    let sha2_fast_path = speaks_caching_sha2(&server_version);
    let greeting = Greeting {
        server_version,
        connection_id,
        scramble: scramble.to_vec(),
        capabilities,
        mariadb_capabilities,
        collation: DEFAULT_COLLATION,
        status: status::AUTOCOMMIT,
        auth_plugin: NATIVE_PASSWORD.into(),
    };
    greeting.write(&mut client.wbuf);
    client.flush_wbuf().await?;

    let cmd = match client.read_command(HANDSHAKE_RESPONSE_MAX).await {
        Ok(cmd) => cmd,
        Err(ClientError::TooLarge(n)) => {
            let e = ErrInfo::new(
                errcode::ER_HANDSHAKE_ERROR,
                "08S01",
                format!(
                    "Bad handshake: the handshake response is {n} bytes, more than the {} a \
                     login may take",
                    HANDSHAKE_RESPONSE_MAX
                ),
            );
            client.send_err(2, &e).await?;
            client
                .discard_input(n + 4, std::time::Duration::from_secs(1))
                .await;
            return Err(LoginError::Refused);
        }
        Err(e) => return Err(e.into()),
    };
    if cmd.last_seq != 1 {
        // The greeting was packet 0: anything else is not an answer to it (weir offers no
        // TLS, after whose SSL request the response would be packet 2).
        let e = ErrInfo::new(
            errcode::ER_NET_PACKETS_OUT_OF_ORDER,
            "08S01",
            format!(
                "Got packets out of order: the handshake response has sequence id {}, expected 1",
                cmd.last_seq
            ),
        );
        client.send_err(cmd.last_seq.wrapping_add(1), &e).await?;
        return Err(LoginError::Refused);
    }
    let payload = cmd.payload();
    let mut seq = cmd.last_seq.wrapping_add(1);
    let resp = match weir_wire::handshake::accept_response(&payload, "weir") {
        Ok(r) => r,
        Err(e) => {
            client.send_err(seq, &e).await?;
            return Err(LoginError::Refused);
        }
    };
    if resp.capabilities & cap::COMPRESS != 0 {
        // Not offered, yet the client would compress everything after the login: refuse now
        // rather than have both sides wait for packets the other cannot read.
        let e = ErrInfo::new(
            errcode::ER_HANDSHAKE_ERROR,
            "08S01",
            "Bad handshake: weir does not offer the compressed protocol; connect without compression",
        );
        client.send_err(seq, &e).await?;
        return Err(LoginError::Refused);
    }
    client.caps = resp.capabilities
        & SERVER_CAPS
        & (capabilities | !(cap::MULTI_STATEMENTS | cap::LOCAL_FILES));
    client.mariadb_caps = resp.mariadb_capabilities & mariadb_capabilities;
    let user = runtime.frontend_users.get(&resp.username).cloned();
    let Some(user) = user else {
        GlobalStats::inc(&shared.stats.access_denied_wrong_password);
        let e = access_denied(&resp.username, &client.host, !resp.auth_response.is_empty());
        client.send_err(seq, &e).await?;
        return Err(LoginError::Refused);
    };
    let mut plugin = resp
        .auth_plugin
        .clone()
        .unwrap_or_else(|| NATIVE_PASSWORD.to_string());
    let mut proof = resp.auth_response.clone();
    let mut switched = false;
    let stage1 = loop {
        match check_proof(sha2_fast_path, &plugin, &scramble, secret_of(&user), &proof) {
            AuthCheck::Ok(stage1) => {
                if plugin == CACHING_SHA2_PASSWORD {
                    write_auth_more_data(&mut client.wbuf, seq, &[auth::SHA2_FAST_AUTH_SUCCESS]);
                    client.flush_wbuf().await?;
                    seq = seq.wrapping_add(1);
                }
                break stage1;
            }
            AuthCheck::SwitchTo(p) if !switched => {
                switched = true;
                (seq, proof) = auth_switch(client, seq, p, &scramble).await?;
                plugin = p.to_string();
            }
            _ => {
                GlobalStats::inc(&shared.stats.access_denied_wrong_password);
                let e = access_denied(&resp.username, &client.host, !proof.is_empty());
                client.send_err(seq, &e).await?;
                return Err(LoginError::Refused);
            }
        }
    };
    let credential = backend_credential(shared, &user, stage1);
    let collation = if resp.collation == 0 {
        DEFAULT_COLLATION
    } else {
        resp.collation
    };
    // What the server refuses at login, refused at login too: accepted, every statement
    // of the session would fail (the schema or the charset cannot be brought to a backend).
    let refusal = client_charset_refused(u16::from(collation))
        .or_else(|| resp.database.as_deref().and_then(database_name_refused));
    if let Some(e) = refusal {
        client.send_err(seq, &e).await?;
        return Err(LoginError::Refused);
    }
    Ok(Login {
        user,
        database: resp.database.clone(),
        collation,
        credential,
        next_seq: seq,
    })
}

/// Checks a client's proof as the server weir presents itself as would: only a MySQL 8 or
/// later knows caching_sha2_password. A MariaDB or older MySQL switches such a client to
/// mysql_native_password, and MySQL Connector/J reads the fast-auth reply one byte off for
/// a version below 5.5.16 (MariaDB's `5.5.5-` prefix), failing every login.
/// `sha2_fast_path`: whether the announced version has caching_sha2_password
/// ([`speaks_caching_sha2`]).
fn check_proof(
    sha2_fast_path: bool,
    plugin: &str,
    scramble: &[u8],
    secret: auth::Secret<'_>,
    proof: &[u8],
) -> AuthCheck {
    if plugin == CACHING_SHA2_PASSWORD && !sha2_fast_path {
        return AuthCheck::SwitchTo(NATIVE_PASSWORD);
    }
    auth::check(plugin, scramble, secret, proof)
}

/// Whether a server announcing `version` has caching_sha2_password: MySQL 8.0 and later.
fn speaks_caching_sha2(version: &str) -> bool {
    let major: Option<u32> = version
        .split('.')
        .next()
        .and_then(|m| m.trim().parse().ok());
    !version.contains("MariaDB") && major.is_some_and(|m| m >= 8)
}

/// The server's refusal of a client character set it cannot parse statements in (ucs2,
/// utf16, utf16le, utf32), as ERROR 1231.
pub fn client_charset_refused(collation: u16) -> Option<ErrInfo> {
    let (charset, _) = weir_sql::collation_by_id(u32::from(collation))?;
    matches!(charset, "ucs2" | "utf16" | "utf16le" | "utf32").then(|| {
        ErrInfo::new(
            errcode::ER_WRONG_VALUE_FOR_VAR,
            "42000",
            format!("Variable 'character_set_client' can't be set to the value of '{charset}'"),
        )
    })
}

/// The server's refusal of a schema name over 64 characters, as ERROR 1102.
pub fn database_name_refused(db: &str) -> Option<ErrInfo> {
    (db.chars().count() > 64).then(|| {
        ErrInfo::new(
            errcode::ER_WRONG_DB_NAME,
            "42000",
            format!("Incorrect database name '{db}'"),
        )
    })
}

/// The largest handshake response weir reads (names, schema, attributes and proof).
const HANDSHAKE_RESPONSE_MAX: usize = 64 * 1024;

/// What a proof for `user` is checked against.
fn secret_of(user: &User) -> Secret<'_> {
    match &user.password {
        Password::Clear(p) => Secret::Clear(p.as_bytes()),
        Password::NativeHash(h) => Secret::NativeHash(h),
    }
}

/// Asks the client to authenticate again with `plugin` over `scramble`; the sequence id of
/// the next packet to send and the client's answer.
async fn auth_switch(
    client: &mut ClientConn,
    seq: u8,
    plugin: &str,
    scramble: &[u8; 20],
) -> Result<(u8, Vec<u8>), ClientError> {
    let mut data = scramble.to_vec();
    data.push(0);
    write_auth_switch(&mut client.wbuf, seq, plugin, &data);
    client.flush_wbuf().await?;
    let reply = client.read_command(64 * 1024).await?;
    Ok((reply.last_seq.wrapping_add(1), reply.payload().to_vec()))
}

/// The secret to log in to backends as `user` (its row for clients), after a client login that
/// proved `stage1` (`SHA1(password)`, with mysql_native_password). The password is the one of
/// the user's row for backends (`backend = 1`), which may differ from the client row's; a user
/// with no such row logs in to backends with its client row's password.
pub fn backend_credential(shared: &Shared, user: &User, stage1: Option<[u8; 20]>) -> Credential {
    let runtime = shared.runtime.load();
    let password = runtime
        .backend_users
        .get(&user.username)
        .map_or(&user.password, |row| &row.password);
    let hash = match password {
        Password::Clear(p) => return Credential::Clear(p.clone()),
        Password::NativeHash(hash) => hash,
    };
    // Only the hash is configured: mysql_native_password logs in with SHA1(password), which a
    // client's login reveals (or the client row's clear password gives), when it is the
    // password of the backend row's hash.
    let proven = stage1.or_else(|| match &user.password {
        Password::Clear(p) if !p.is_empty() => Some(auth::native_stage1(p.as_bytes())),
        _ => None,
    });
    let mut learned = shared.learned_stage1.lock();
    match proven.filter(|s1| auth::stage1_matches(s1, hash)) {
        Some(s1) => {
            learned.insert(user.username.clone(), s1);
            Credential::NativeStage1(s1)
        }
        None => match learned.get(&user.username) {
            Some(s1) if auth::stage1_matches(s1, hash) => Credential::NativeStage1(*s1),
            // Nothing proves this hash yet: the backend refuses the login, and the log says
            // why (see `checks` in weir-config for the warning at LOAD).
            _ => Credential::NativeStage1([0; 20]),
        },
    }
}

/// Re-authenticates for COM_CHANGE_USER as the server does: the auth data of the command is
/// checked against the greeting's scramble (where clients compute it); an auth switch, when
/// the plugin asks for one or the data does not match, carries that same scramble, since
/// libmariadb answers it with the bytes it already computed.
pub async fn change_user(
    shared: &Shared,
    client: &mut ClientConn,
    req: &weir_wire::handshake::ChangeUser,
    seq: u8,
) -> Result<(Arc<User>, Credential, u8), LoginError> {
    let runtime = shared.runtime.load_full();
    let scramble = client.scramble;
    let username = req.username.as_str();
    let mut seq = seq;
    let mut plugin = req
        .auth_plugin
        .clone()
        .unwrap_or_else(|| NATIVE_PASSWORD.to_string());
    let mut proof = req.auth_response.clone();
    let mut switched = false;
    let user = runtime.frontend_users.get(username).cloned();
    let sha2_fast_path = speaks_caching_sha2(&announced_version(&runtime.mysql.server_version));
    loop {
        let verdict = user
            .as_ref()
            .map(|u| check_proof(sha2_fast_path, &plugin, &scramble, secret_of(u), &proof));
        match (verdict, &user) {
            (Some(AuthCheck::Ok(stage1)), Some(user)) => {
                if plugin == CACHING_SHA2_PASSWORD {
                    write_auth_more_data(&mut client.wbuf, seq, &[auth::SHA2_FAST_AUTH_SUCCESS]);
                    client.flush_wbuf().await?;
                    seq = seq.wrapping_add(1);
                }
                let cred = backend_credential(shared, user, stage1);
                return Ok((user.clone(), cred, seq));
            }
            // One auth switch: to the plugin the check asks for, or to native password for
            // data that did not match (a client that computes it again then gets through).
            (verdict, _) if !switched => {
                switched = true;
                let to = match verdict {
                    Some(AuthCheck::SwitchTo(p)) => p,
                    _ => NATIVE_PASSWORD,
                };
                (seq, proof) = auth_switch(client, seq, to, &scramble).await?;
                plugin = to.to_string();
            }
            _ => {
                GlobalStats::inc(&shared.stats.access_denied_wrong_password);
                client
                    .send_err(
                        seq,
                        &access_denied(username, &client.host, !proof.is_empty()),
                    )
                    .await?;
                return Err(LoginError::Refused);
            }
        }
    }
}

/// The capabilities of weir's greeting for a server version: as MariaDB's own when the version
/// is a MariaDB one (no CLIENT_MYSQL; of the extended capabilities, the metadata the backends
/// offer, which weir relays untouched), else as MySQL's.
fn greeting_capabilities(server_version: &str) -> (u32, u32) {
    if !server_version.contains("MariaDB") {
        return (SERVER_CAPS, 0);
    }
    let relayed =
        weir_backend::backend_mariadb_capabilities() & weir_wire::mariadb_cap::EXTENDED_METADATA;
    (SERVER_CAPS & !cap::LONG_PASSWORD, relayed)
}

/// What weir announces before any backend server answered, when mysql-server_version is empty.
const FALLBACK_SERVER_VERSION: &str = "8.0.36";

/// The version in the greeting: mysql-server_version, or when it is empty the backends' own
/// (drivers choose collations, variable names and protocol features from it).
pub fn announced_version(configured: &str) -> String {
    if !configured.is_empty() {
        return configured.to_string();
    }
    weir_backend::backend_server_version()
        .map_or_else(|| FALLBACK_SERVER_VERSION.to_string(), |v| v.to_string())
}
