//! Client side of authentication against a backend, for every plugin the server may ask for.

use crate::{BackendError, Credential};
use mysql_common::auth::plugins::{AuthProc, ChallengeResponsePlugin, Context, Response};
use mysql_common::packets::AuthPlugin;
use weir_wire::auth::{native_scramble_from_stage1, NATIVE_PASSWORD};

struct Ctx<'a> {
    pass: &'a [u8],
    scramble: &'a [u8],
    unix: bool,
}

impl Context for &Ctx<'_> {
    fn pass(&self) -> &[u8] {
        self.pass
    }
    fn is_ipc_transport(&self) -> bool {
        self.unix
    }
    fn is_tls_transport(&self) -> bool {
        false
    }
    fn scramble(&self) -> &[u8] {
        self.scramble
    }
    fn server_key_pem(&self) -> Option<&[u8]> {
        None
    }
}

/// One plugin's conversation with the server.
pub(crate) enum Exchange {
    /// mysql_native_password from `SHA1(password)` when the clear password is unknown.
    NativeStage1,
    /// Any plugin mysql_common implements, from the clear password.
    Proc {
        proc_: Box<AuthProc>,
        scramble: Vec<u8>,
    },
}

impl Exchange {
    /// Starts `plugin`; returns the exchange and the first response to send.
    pub(crate) fn start(
        plugin: &str,
        scramble: &[u8],
        cred: &Credential,
        unix: bool,
    ) -> Result<(Exchange, Vec<u8>), BackendError> {
        match cred {
            Credential::NativeStage1(s1) => {
                if plugin != NATIVE_PASSWORD {
                    return Err(BackendError::Auth(format!(
                        "the server asks for {plugin}, but only the mysql_native_password hash of \
                         this user is known to weir: configure the clear-text password"
                    )));
                }
                let scr = scramble.get(..20).ok_or_else(|| {
                    BackendError::Auth("server scramble shorter than 20 bytes".into())
                })?;
                Ok((
                    Exchange::NativeStage1,
                    native_scramble_from_stage1(scr, s1).to_vec(),
                ))
            }
            Credential::Clear(pass) => {
                let mut proc_ = AuthProc::init(&AuthPlugin::from_bytes(plugin.as_bytes()))
                    .map_err(|e| BackendError::Auth(e.to_string()))?;
                // Scramble-based plugins use 20 bytes (a trailing NUL may follow); others, such
                // as client_ed25519's 32-byte nonce, take the data whole.
                let scramble = match plugin {
                    NATIVE_PASSWORD | "caching_sha2_password" | "sha256_password" => {
                        scramble.get(..20).unwrap_or(scramble).to_vec()
                    }
                    _ => scramble.to_vec(),
                };
                let ctx = Ctx {
                    pass: pass.as_bytes(),
                    scramble: &scramble,
                    unix,
                };
                let resp = proc_
                    .run(&ctx, &scramble)
                    .map_err(|e| BackendError::Auth(format!("{plugin}: {e}")))?;
                let first = resp.data().map(<[u8]>::to_vec).unwrap_or_default();
                Ok((
                    Exchange::Proc {
                        proc_: Box::new(proc_),
                        scramble,
                    },
                    first,
                ))
            }
        }
    }

    /// Answers an auth-more-data challenge; `None` means nothing is to be sent.
    pub(crate) fn more(
        &mut self,
        challenge: &[u8],
        cred: &Credential,
        unix: bool,
    ) -> Result<Option<Vec<u8>>, BackendError> {
        match self {
            Exchange::NativeStage1 => Err(BackendError::Auth(
                "unexpected auth-more-data for mysql_native_password".into(),
            )),
            Exchange::Proc { proc_, scramble } => {
                let pass = match cred {
                    Credential::Clear(p) => p.as_bytes(),
                    Credential::NativeStage1(_) => &[],
                };
                let ctx = Ctx {
                    pass,
                    scramble,
                    unix,
                };
                match proc_.run(&ctx, challenge) {
                    Ok(Response::Next { packet }) | Ok(Response::Last { packet }) => Ok(packet),
                    Err(e) => Err(BackendError::Auth(e.to_string())),
                }
            }
        }
    }
}
