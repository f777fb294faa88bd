//! The business portal's use cases (publishing section 1, Path B): people
//! and their roles, passkey sign-in and sessions, and saves a person seals
//! with a passkey. The portal surface (`src/portal/`) adapts these; the
//! writes go through the publisher like every other.
//!
//! Nothing here names a person outside the portal: people, invitations and
//! sessions are home-only column families; a person's passkey is also a
//! business key (replicated, listed without a name).

pub mod campaigns;
pub mod company;
pub mod export;
pub mod hosted;
pub mod keys;
pub mod people;
pub mod pushes;
pub mod records;
pub mod relying_party;
pub mod saves;
pub mod sessions;

use svc_core::problem::Code;

use crate::region::parts::{HasClock, HasHome};
use crate::replication::Change;
use crate::service::{Error, Result};
use svc_store::model::PasskeyRole;

/// A signed-in person: who they are, for which business, in which role,
/// and the token their session's state changes carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signed {
    /// The business's uuid, or in the AI-company portal the company's.
    pub account_uuid: String,
    /// Whether the account is an AI company's.
    pub company: bool,
    pub person_id: String,
    pub name: String,
    pub role: PasskeyRole,
    /// The passkey the person signed in with: the one their saves ask for.
    pub key_id: String,
    pub csrf: String,
}

impl Signed {
    /// Refused unless the person holds one of `roles`.
    pub fn require(&self, roles: &[PasskeyRole], what: &str) -> Result<()> {
        if roles.contains(&self.role) {
            Ok(())
        } else {
            let names: Vec<&str> = roles.iter().map(|r| r.as_str()).collect();
            Err(Error::detail(Code::Forbidden, format!("{what} needs the role {}", names.join(" or "))))
        }
    }
}

/// The roles that may seal records and mandates.
pub const SEALERS: &[PasskeyRole] = &[PasskeyRole::Owner, PasskeyRole::Admin];

use crate::service::error::invalid;

/// Applies a change through the publisher, the one writer.
async fn apply(state: &(impl HasClock + HasHome), change: Change) -> Result<()> {
    crate::service::writes::apply(state, change).await.map(|_| ())
}

/// A fresh secret (32 random bytes, base64url) and its digest, the key it
/// is stored under: a stolen store holds no usable token.
fn secret() -> (String, Vec<u8>) {
    let token = svc_core::b64::url_encode(&svc_clock::random::<32>());
    let digest = digest(&token);
    (token, digest)
}

fn digest(token: &str) -> Vec<u8> {
    svc_core::digest::sha256(token.as_bytes()).to_vec()
}
