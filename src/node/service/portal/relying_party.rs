//! The WebAuthn relying party (webauthn-rs) for people's passkeys: the
//! deployment's `passkey_rp_id` and `passkey_origin`, the ones every passkey
//! seal is judged against. A passkey must be ES256: the seals it makes are
//! verified as P-256 signatures (publishing section 2.1).

use svc_core::keys::{Jwk, VerifyingKey};
use svc_core::problem::Code;
use webauthn_rs::prelude::{COSEAlgorithm, COSEKeyType, ECDSACurve, Passkey, Url, Webauthn, WebauthnBuilder};

use crate::config::NodeConfig;
use crate::service::{Error, Result};

use svc_core::portal::CEREMONY_MS;

pub fn relying_party(config: &NodeConfig) -> Result<Webauthn> {
    let origin = Url::parse(&config.passkey_origin).map_err(|e| Error::internal(format!("passkey_origin: {e}")))?;
    WebauthnBuilder::new(&config.passkey_rp_id, &origin)
        .and_then(|b| {
            b.rp_name("svc business portal").timeout(std::time::Duration::from_millis(CEREMONY_MS as u64)).build()
        })
        .map_err(|e| Error::internal(format!("the passkey relying party: {e}")))
}

/// A refusal a person reads: the authenticator's answer did not hold.
pub fn refused(e: impl std::fmt::Display) -> Error {
    Error::detail(Code::PasskeyRefused, format!("the passkey's answer was refused: {e}"))
}

/// The P-256 public key of a passkey, as the business key it becomes.
pub fn public_key(passkey: &Passkey) -> Result<VerifyingKey> {
    let cose = passkey.get_public_key();
    let (COSEAlgorithm::ES256, COSEKeyType::EC_EC2(ec)) = (cose.type_, &cose.key) else {
        return Err(Error::detail(
            Code::PasskeyRefused,
            "this authenticator made a key other than ES256 (P-256); seals need a P-256 passkey",
        ));
    };
    if ec.curve != ECDSACurve::SECP256R1 {
        return Err(Error::detail(Code::PasskeyRefused, "a passkey's key is on the P-256 curve"));
    }
    let jwk = Jwk {
        kty: "EC".into(),
        crv: Some("P-256".into()),
        alg: None,
        x: Some(svc_core::b64::url_encode(&ec.x)),
        y: Some(svc_core::b64::url_encode(&ec.y)),
        public: None,
    };
    VerifyingKey::from_jwk(&jwk).map_err(|e| Error::detail(Code::PasskeyRefused, e.to_string()))
}
