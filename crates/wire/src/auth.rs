//! Credential checks for the server side (weir authenticating its clients) and the
//! scramble computations both sides share.
//!
//! weir knows either the clear-text password or the mysql_native_password hash
//! (`SHA1(SHA1(password))`) of each user. It never accepts a login by default: every check
//! compares the client's proof with one computed from the stored secret, in constant time.

use rand::RngCore;
use sha1::{Digest as _, Sha1};
use sha2::Sha256;

/// Name of the mysql_native_password plugin.
pub const NATIVE_PASSWORD: &str = "mysql_native_password";
/// Name of the caching_sha2_password plugin.
pub const CACHING_SHA2_PASSWORD: &str = "caching_sha2_password";
/// caching_sha2_password "fast auth success" byte, sent in an auth-more-data packet.
pub const SHA2_FAST_AUTH_SUCCESS: u8 = 0x03;

/// A fresh random scramble of 20 printable-safe bytes (no NUL, no '$'), from the thread's
/// cryptographically secure generator (seeded and periodically reseeded from the OS: no
/// system call per connection).
pub fn new_scramble() -> [u8; 20] {
    let mut s = [0u8; 20];
    rand::thread_rng().fill_bytes(&mut s);
    for b in &mut s {
        // Clients treat the scramble as a C string in places: keep it in 1..=127 and away from NUL.
        *b = (*b & 0x7f).max(1);
        if *b == b'$' {
            *b = b'%';
        }
    }
    s
}

fn sha1(parts: &[&[u8]]) -> [u8; 20] {
    let mut h = Sha1::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().into()
}

fn sha256(parts: &[&[u8]]) -> [u8; 32] {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().into()
}

fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// `SHA1(password)`: what a mysql_native_password client proves knowledge of.
pub fn native_stage1(password: &[u8]) -> [u8; 20] {
    sha1(&[password])
}

/// `SHA1(SHA1(password))`: the stored mysql_native_password hash.
pub fn native_stage2(password: &[u8]) -> [u8; 20] {
    sha1(&[&native_stage1(password)])
}

/// Whether `stage1` is `SHA1(password)` for the stored hash `stage2 = SHA1(SHA1(password))`.
pub fn stage1_matches(stage1: &[u8; 20], stage2: &[u8; 20]) -> bool {
    ct_eq(&sha1(&[stage1]), stage2)
}

/// The client proof for mysql_native_password, from `SHA1(password)`.
pub fn native_scramble_from_stage1(scramble: &[u8], stage1: &[u8; 20]) -> [u8; 20] {
    let stage2 = sha1(&[stage1]);
    let mask = sha1(&[scramble, &stage2]);
    let mut out = [0u8; 20];
    for i in 0..20 {
        out[i] = stage1[i] ^ mask[i];
    }
    out
}

/// Checks a mysql_native_password proof against the stored hash `SHA1(SHA1(password))`.
///
/// On success returns `SHA1(password)`, which lets weir log in to backends as this user even
/// when only the hash is configured.
pub fn verify_native(scramble: &[u8], stage2: &[u8; 20], proof: &[u8]) -> Option<[u8; 20]> {
    if proof.len() != 20 {
        return None;
    }
    let mask = sha1(&[scramble, stage2]);
    let mut stage1 = [0u8; 20];
    for i in 0..20 {
        stage1[i] = proof[i] ^ mask[i];
    }
    ct_eq(&sha1(&[&stage1]), stage2).then_some(stage1)
}

/// The caching_sha2_password fast-path proof:
/// `XOR(SHA256(pw), SHA256(SHA256(SHA256(pw)), scramble))`.
pub fn sha2_scramble(scramble: &[u8], password: &[u8]) -> [u8; 32] {
    let p1 = sha256(&[password]);
    let p2 = sha256(&[&p1]);
    let mask = sha256(&[&p2, scramble]);
    let mut out = [0u8; 32];
    for i in 0..32 {
        out[i] = p1[i] ^ mask[i];
    }
    out
}

/// Checks a caching_sha2_password fast-path proof against the clear-text password.
pub fn verify_sha2(scramble: &[u8], password: &[u8], proof: &[u8]) -> bool {
    if password.is_empty() {
        return proof.is_empty();
    }
    ct_eq(&sha2_scramble(scramble, password), proof)
}

/// The stored secret of a user, as far as authentication needs it.
#[derive(Debug, Clone, Copy)]
pub enum Secret<'a> {
    /// Clear-text password.
    Clear(&'a [u8]),
    /// `SHA1(SHA1(password))`.
    NativeHash(&'a [u8; 20]),
}

/// Outcome of checking a client's auth response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthCheck {
    /// Proof accepted; carries `SHA1(password)` when it could be learned (native plugin).
    Ok(Option<[u8; 20]>),
    /// Wrong password.
    Denied,
    /// This plugin cannot be checked with the stored secret: switch the client to another.
    SwitchTo(&'static str),
}

/// Checks `proof`, produced by `plugin` over `scramble`, against `secret`.
pub fn check(plugin: &str, scramble: &[u8], secret: Secret<'_>, proof: &[u8]) -> AuthCheck {
    match (plugin, secret) {
        (NATIVE_PASSWORD, Secret::Clear(pw)) => {
            if pw.is_empty() {
                return if proof.is_empty() {
                    AuthCheck::Ok(None)
                } else {
                    AuthCheck::Denied
                };
            }
            match verify_native(scramble, &native_stage2(pw), proof) {
                Some(s1) => AuthCheck::Ok(Some(s1)),
                None => AuthCheck::Denied,
            }
        }
        (NATIVE_PASSWORD, Secret::NativeHash(h)) => match verify_native(scramble, h, proof) {
            Some(s1) => AuthCheck::Ok(Some(s1)),
            None => AuthCheck::Denied,
        },
        (CACHING_SHA2_PASSWORD, Secret::Clear(pw)) => {
            if verify_sha2(scramble, pw, proof) {
                AuthCheck::Ok(None)
            } else {
                AuthCheck::Denied
            }
        }
        _ => AuthCheck::SwitchTo(NATIVE_PASSWORD),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn native_accepts_right_and_refuses_wrong() {
        let s = new_scramble();
        let proof = native_scramble_from_stage1(&s, &native_stage1(b"secret"));
        assert_eq!(
            check(NATIVE_PASSWORD, &s, Secret::Clear(b"secret"), &proof),
            AuthCheck::Ok(Some(native_stage1(b"secret")))
        );
        let h = native_stage2(b"secret");
        assert!(matches!(
            check(NATIVE_PASSWORD, &s, Secret::NativeHash(&h), &proof),
            AuthCheck::Ok(_)
        ));
        assert_eq!(
            check(NATIVE_PASSWORD, &s, Secret::Clear(b"other"), &proof),
            AuthCheck::Denied
        );
        assert_eq!(
            check(NATIVE_PASSWORD, &s, Secret::Clear(b"secret"), &[]),
            AuthCheck::Denied
        );
    }

    #[test]
    fn sha2_fast_path() {
        let s = new_scramble();
        let proof = sha2_scramble(&s, b"pw");
        assert_eq!(
            check(CACHING_SHA2_PASSWORD, &s, Secret::Clear(b"pw"), &proof),
            AuthCheck::Ok(None)
        );
        assert_eq!(
            check(CACHING_SHA2_PASSWORD, &s, Secret::Clear(b"px"), &proof),
            AuthCheck::Denied
        );
        let h = native_stage2(b"pw");
        assert_eq!(
            check(CACHING_SHA2_PASSWORD, &s, Secret::NativeHash(&h), &proof),
            AuthCheck::SwitchTo(NATIVE_PASSWORD)
        );
    }

    #[test]
    fn scrambles_are_fresh_and_nul_free() {
        let a = new_scramble();
        let b = new_scramble();
        assert_ne!(a, b);
        assert!(a.iter().all(|&x| x != 0));
    }
}
