//! A software authenticator's passkey registration, so a bench can sign a
//! person in to the portal without a browser: the `none` attestation a
//! platform authenticator gives, over an ES256 key the bench holds.

use ciborium::Value as Cbor;
use serde_json::{Value, json};
use svc_core::keys::SigningKey;

/// `authenticatorData` flags: user present, user verified, attested
/// credential data included.
const CREATED: u8 = 0x01 | 0x04 | 0x40;

fn coordinate(text: Option<&str>) -> Vec<u8> {
    svc_core::b64::url_decode(text.expect("an EC key has x and y")).expect("base64url coordinate")
}

fn cbor(value: &Cbor) -> Vec<u8> {
    let mut bytes = Vec::new();
    ciborium::into_writer(value, &mut bytes).expect("CBOR");
    bytes
}

/// The `RegisterPublicKeyCredential` answering `options` (as the relying
/// party gave them) with `key` as the new passkey named `credential_id`.
pub fn register(key: &SigningKey, options: &Value, rp_id: &str, origin: &str, credential_id: &[u8]) -> Value {
    let jwk = key.verifying_key().to_jwk();
    let cose = Cbor::Map(vec![
        (Cbor::from(1), Cbor::from(2)),  // kty: EC2
        (Cbor::from(3), Cbor::from(-7)), // alg: ES256
        (Cbor::from(-1), Cbor::from(1)), // crv: P-256
        (Cbor::from(-2), Cbor::Bytes(coordinate(jwk.x.as_deref()))),
        (Cbor::from(-3), Cbor::Bytes(coordinate(jwk.y.as_deref()))),
    ]);
    let mut authenticator_data = svc_core::digest::sha256(rp_id.as_bytes()).to_vec();
    authenticator_data.push(CREATED);
    authenticator_data.extend_from_slice(&0u32.to_be_bytes());
    authenticator_data.extend_from_slice(&[0; 16]); // AAGUID: none given
    authenticator_data.extend_from_slice(&(credential_id.len() as u16).to_be_bytes());
    authenticator_data.extend_from_slice(credential_id);
    authenticator_data.extend_from_slice(&cbor(&cose));
    let attestation = Cbor::Map(vec![
        (Cbor::from("fmt"), Cbor::from("none")),
        (Cbor::from("attStmt"), Cbor::Map(Vec::new())),
        (Cbor::from("authData"), Cbor::Bytes(authenticator_data)),
    ]);
    let client_data = json!({
        "type": "webauthn.create",
        "challenge": options["publicKey"]["challenge"],
        "origin": origin,
        "crossOrigin": false,
    });
    let id = svc_core::b64::url_encode(credential_id);
    json!({
        "id": id,
        "rawId": id,
        "type": "public-key",
        "response": {
            "attestationObject": svc_core::b64::url_encode(&cbor(&attestation)),
            "clientDataJSON": svc_core::b64::url_encode(client_data.to_string().as_bytes()),
        },
        "extensions": {},
    })
}
