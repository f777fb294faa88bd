//! Passkey (WebAuthn ES256) signatures on DSSE envelopes.
//!
//! A person seals a mandate (and, in the portal, a record) with a passkey. The
//! browser cannot sign arbitrary bytes, so the DSSE message is bound through
//! the WebAuthn challenge: `challenge = base64url(SHA-256(PAE(type, payload)))`.
//! The envelope signature then carries the authenticator's output:
//!
//! * `sig`: standard base64 of the ASN.1 DER ECDSA signature over
//!   `authenticatorData || SHA-256(clientDataJSON)`, as WebAuthn produces it;
//! * `authenticatorData`, `clientDataJSON`: standard base64 of the raw bytes.
//!
//! [`verify_assertion`] checks all of it; [`assert`] is a software
//! authenticator for the CLI and tests. Signature counters are not judged
//! here (they need state): [`sign_count`] reads one for the caller.

use serde::Deserialize;

use crate::Reason;
use crate::b64;
use crate::digest::sha256;
use crate::dsse::{self, Envelope, pae};
use crate::keys::{SigningKey, VerifyingKey};

/// `authenticatorData` flag: the user was present.
pub const FLAG_USER_PRESENT: u8 = 0x01;
/// `authenticatorData` flag: the user was verified (PIN, biometrics).
pub const FLAG_USER_VERIFIED: u8 = 0x04;
/// rpIdHash (32) + flags (1) + signCount (4).
pub const MIN_AUTHENTICATOR_DATA: usize = 37;
/// The only `clientDataJSON.type` an assertion may carry.
pub const ASSERTION_TYPE: &str = "webauthn.get";

/// The WebAuthn challenge that binds a DSSE message: base64url (no padding)
/// of SHA-256 over the pre-authentication encoding.
pub fn challenge(payload_type: &str, payload: &[u8]) -> String {
    b64::url_encode(&sha256(&pae(payload_type, payload)))
}

/// The members of `clientDataJSON` we judge. Browsers add others (`topOrigin`,
/// padding members), so unknown members are ignored; a repeated member is
/// still refused by the derive, so no parser confusion can pick a second one.
#[derive(Deserialize)]
struct ClientData {
    #[serde(rename = "type")]
    kind: String,
    challenge: String,
    origin: String,
    #[serde(rename = "crossOrigin", default)]
    cross_origin: Option<bool>,
}

/// Why a `clientDataJSON` does not bind an assertion to a message here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unbound {
    /// Not a JSON object of client data.
    NotClientData,
    /// A registration, or another ceremony than an assertion.
    NotAnAssertion,
    /// Made for another message: a replayed or misdirected answer.
    OtherChallenge,
    /// Made on another site than the portal: the origin it names.
    OtherOrigin(String),
    /// Made inside a frame of another origin.
    CrossOrigin,
}

impl std::fmt::Display for Unbound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unbound::NotClientData => f.write_str("the answer's client data is not readable"),
            Unbound::NotAnAssertion => f.write_str("the answer is not a passkey signature (webauthn.get)"),
            Unbound::OtherChallenge => f.write_str("the answer was made for another save (a replayed answer)"),
            Unbound::OtherOrigin(o) => write!(f, "the answer was made on another site ({o}), not this portal"),
            Unbound::CrossOrigin => f.write_str("the answer was made inside a frame of another site"),
        }
    }
}

/// Whether `client_data_json` binds an assertion to this DSSE message on
/// `origin`: type, challenge, origin and no cross-origin frame, in that
/// order, so the first thing wrong is named.
pub fn binding(client_data_json: &[u8], payload_type: &str, payload: &[u8], origin: &str) -> Result<(), Unbound> {
    // serde would also read the struct from a JSON array; client data is an object.
    if client_data_json.first() != Some(&b'{') {
        return Err(Unbound::NotClientData);
    }
    let client: ClientData = serde_json::from_slice(client_data_json).map_err(|_| Unbound::NotClientData)?;
    if client.kind != ASSERTION_TYPE {
        return Err(Unbound::NotAnAssertion);
    }
    if client.challenge != challenge(payload_type, payload) {
        return Err(Unbound::OtherChallenge);
    }
    if client.origin != origin {
        return Err(Unbound::OtherOrigin(client.origin));
    }
    if client.cross_origin == Some(true) {
        return Err(Unbound::CrossOrigin);
    }
    Ok(())
}

/// Verifies one passkey signature of a DSSE envelope.
///
/// `key` must be the ES256 key the signature's `keyid` names (its RFC 7638
/// thumbprint); another algorithm or another key id is `key_mismatch`.
/// Undecodable parts (missing WebAuthn members, bad base64, JSON that is not
/// client data) are `envelope_malformed`; everything that decodes but does not
/// hold is `signature_invalid`. An assertion made inside a cross-origin frame
/// (`crossOrigin: true`) is refused: the portal never embeds its signing page.
pub fn verify_assertion(
    envelope_sig: &dsse::Signature,
    payload_type: &str,
    payload: &[u8],
    key: &VerifyingKey,
    rp_id: &str,
    origin: &str,
) -> Result<(), Reason> {
    let VerifyingKey::Es256(public) = key else {
        return Err(Reason::KeyMismatch);
    };
    if envelope_sig.keyid != key.thumbprint() {
        return Err(Reason::KeyMismatch);
    }
    let decode = |member: &Option<String>| member.as_deref().and_then(b64::std_decode).ok_or(Reason::EnvelopeMalformed);
    let authenticator_data = decode(&envelope_sig.authenticator_data)?;
    let client_data_json = decode(&envelope_sig.client_data_json)?;
    let der = b64::std_decode(&envelope_sig.sig).ok_or(Reason::EnvelopeMalformed)?;
    let signature = p256::ecdsa::Signature::from_der(&der).map_err(|_| Reason::EnvelopeMalformed)?;
    match binding(&client_data_json, payload_type, payload, origin) {
        Ok(()) => {}
        Err(Unbound::NotClientData) => return Err(Reason::EnvelopeMalformed),
        Err(_) => return Err(Reason::SignatureInvalid),
    }
    if authenticator_data.len() < MIN_AUTHENTICATOR_DATA {
        return Err(Reason::SignatureInvalid);
    }
    // The authenticator must have scoped the credential to our relying party,
    // and a person must have been present and verified.
    let flags = authenticator_data[32];
    let required = FLAG_USER_PRESENT | FLAG_USER_VERIFIED;
    if authenticator_data[..32] != sha256(rp_id.as_bytes()) || flags & required != required {
        return Err(Reason::SignatureInvalid);
    }

    let mut signed = authenticator_data;
    signed.extend_from_slice(&sha256(&client_data_json));
    // P-256 does not normalise S: authenticators emit high-S signatures too.
    if crate::keys::es256_verify(public, &signed, &signature) { Ok(()) } else { Err(Reason::SignatureInvalid) }
}

/// The signature counter an assertion reports, for the caller's clone check.
pub fn sign_count(envelope_sig: &dsse::Signature) -> Option<u32> {
    let data = envelope_sig.authenticator_data.as_deref().and_then(b64::std_decode)?;
    let bytes: [u8; 4] = data.get(33..37)?.try_into().ok()?;
    Some(u32::from_be_bytes(bytes))
}

/// A software authenticator: the passkey signature a browser would return for
/// this DSSE message, with user-present and user-verified set.
///
/// `authenticatorData` is `SHA-256(rp_id) || 0x05 || signCount (big-endian)`
/// and `clientDataJSON` is
/// `{"type":"webauthn.get","challenge":…,"origin":…,"crossOrigin":false}`.
/// Only an ES256 key can be a passkey here; another is `key_mismatch`.
pub fn assert(
    key: &SigningKey,
    rp_id: &str,
    origin: &str,
    payload_type: &str,
    payload: &[u8],
    sign_count: u32,
) -> Result<dsse::Signature, Reason> {
    answer(key, rp_id, origin, &challenge(payload_type, payload), sign_count)
}

/// A software authenticator's answer to a WebAuthn `challenge` (base64url,
/// as the relying party's options give it), as [`assert`] makes it.
pub fn answer(
    key: &SigningKey,
    rp_id: &str,
    origin: &str,
    challenge: &str,
    sign_count: u32,
) -> Result<dsse::Signature, Reason> {
    let SigningKey::Es256(private) = key else {
        return Err(Reason::KeyMismatch);
    };
    let mut authenticator_data = Vec::with_capacity(MIN_AUTHENTICATOR_DATA);
    authenticator_data.extend_from_slice(&sha256(rp_id.as_bytes()));
    authenticator_data.push(FLAG_USER_PRESENT | FLAG_USER_VERIFIED);
    authenticator_data.extend_from_slice(&sign_count.to_be_bytes());
    // serde_json escapes the origin exactly as JSON requires.
    let client_data_json = serde_json::json!({
        "type": ASSERTION_TYPE,
        "challenge": challenge,
        "origin": origin,
        "crossOrigin": false,
    })
    .to_string()
    .into_bytes();

    let mut signed = authenticator_data.clone();
    signed.extend_from_slice(&sha256(&client_data_json));
    use p256::ecdsa::signature::Signer;
    let signature: p256::ecdsa::Signature = private.sign(&signed);
    Ok(dsse::Signature {
        keyid: key.verifying_key().thumbprint(),
        sig: b64::std_encode(signature.to_der().as_bytes()),
        authenticator_data: Some(b64::std_encode(&authenticator_data)),
        client_data_json: Some(b64::std_encode(&client_data_json)),
    })
}

/// A DSSE envelope of `payload` signed by one passkey.
pub fn seal_with_passkey(
    key: &SigningKey,
    rp_id: &str,
    origin: &str,
    payload_type: &str,
    payload: &[u8],
    sign_count: u32,
) -> Result<Envelope, Reason> {
    let signature = assert(key, rp_id, origin, payload_type, payload, sign_count)?;
    Ok(Envelope {
        payload_type: payload_type.to_owned(),
        payload: b64::std_encode(payload),
        signatures: vec![signature],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::Alg;
    use proptest::prelude::*;

    const RP: &str = "portal.svc.example";
    const ORIGIN: &str = "https://portal.svc.example";
    const TYPE: &str = "application/vnd.service.mandate.v1+json";
    const PAYLOAD: &[u8] = b"{\"v\":1}";

    fn passkey(n: u8) -> SigningKey {
        SigningKey::from_seed(Alg::Es256, &[n; 32]).unwrap()
    }

    fn signed() -> (SigningKey, dsse::Signature) {
        let key = passkey(7);
        let sig = assert(&key, RP, ORIGIN, TYPE, PAYLOAD, 9).unwrap();
        (key, sig)
    }

    fn check(sig: &dsse::Signature, key: &SigningKey) -> Result<(), Reason> {
        verify_assertion(sig, TYPE, PAYLOAD, &key.verifying_key(), RP, ORIGIN)
    }

    /// The first thing wrong with a client data is the one named: a person
    /// reads why their passkey's answer was refused.
    #[test]
    fn binding_names_what_is_wrong() {
        let data = |kind: &str, challenge_of: &[u8], origin: &str, cross: bool| {
            serde_json::to_vec(&serde_json::json!({"type": kind, "challenge": challenge(TYPE, challenge_of),
                "origin": origin, "crossOrigin": cross}))
            .unwrap()
        };
        assert_eq!(binding(&data(ASSERTION_TYPE, PAYLOAD, ORIGIN, false), TYPE, PAYLOAD, ORIGIN), Ok(()));
        assert_eq!(binding(b"[1]", TYPE, PAYLOAD, ORIGIN), Err(Unbound::NotClientData));
        let create = data("webauthn.create", PAYLOAD, ORIGIN, false);
        assert_eq!(binding(&create, TYPE, PAYLOAD, ORIGIN), Err(Unbound::NotAnAssertion));
        let other = data(ASSERTION_TYPE, b"{\"v\":2}", "https://evil.example", false);
        assert_eq!(binding(&other, TYPE, PAYLOAD, ORIGIN), Err(Unbound::OtherChallenge));
        let elsewhere = data(ASSERTION_TYPE, PAYLOAD, "https://evil.example", false);
        assert_eq!(
            binding(&elsewhere, TYPE, PAYLOAD, ORIGIN),
            Err(Unbound::OtherOrigin("https://evil.example".into()))
        );
        assert!(Unbound::OtherOrigin("https://evil.example".into()).to_string().contains("evil.example"));
        let framed = data(ASSERTION_TYPE, PAYLOAD, ORIGIN, true);
        assert_eq!(binding(&framed, TYPE, PAYLOAD, ORIGIN), Err(Unbound::CrossOrigin));
    }

    /// Re-signs edited authenticator data and client data, so a test reaches
    /// the check it aims at rather than failing on the signature.
    fn resign(key: &SigningKey, authenticator_data: &[u8], client_data_json: &[u8]) -> dsse::Signature {
        let SigningKey::Es256(private) = key else { unreachable!() };
        let mut signed = authenticator_data.to_vec();
        signed.extend_from_slice(&sha256(client_data_json));
        use p256::ecdsa::signature::Signer;
        let signature: p256::ecdsa::Signature = private.sign(&signed);
        dsse::Signature {
            keyid: key.verifying_key().thumbprint(),
            sig: b64::std_encode(signature.to_der().as_bytes()),
            authenticator_data: Some(b64::std_encode(authenticator_data)),
            client_data_json: Some(b64::std_encode(client_data_json)),
        }
    }

    fn client_data(kind: &str, chal: &str, origin: &str) -> Vec<u8> {
        serde_json::json!({"type": kind, "challenge": chal, "origin": origin}).to_string().into_bytes()
    }

    fn auth_data(rp: &str, flags: u8) -> Vec<u8> {
        let mut data = sha256(rp.as_bytes()).to_vec();
        data.push(flags);
        data.extend_from_slice(&1u32.to_be_bytes());
        data
    }

    // rule: P2.1.3, P2.4.1
    #[test]
    fn software_passkey_round_trips() {
        let (key, sig) = signed();
        assert_eq!(check(&sig, &key), Ok(()));
        assert_eq!(sig.keyid, key.verifying_key().thumbprint());
        assert_eq!(sign_count(&sig), Some(9));
        // The signature is DER, as WebAuthn produces, not the raw r||s form.
        let der = b64::std_decode(&sig.sig).unwrap();
        assert_eq!(der[0], 0x30);
        let envelope = seal_with_passkey(&key, RP, ORIGIN, TYPE, PAYLOAD, 1).unwrap();
        assert_eq!(envelope.payload_bytes().unwrap(), PAYLOAD);
        assert_eq!(check(&envelope.signatures[0], &key), Ok(()));
    }

    // rule: P2.1.4
    #[test]
    fn challenge_is_over_the_pae() {
        let expected = b64::url_encode(&sha256(&pae(TYPE, PAYLOAD)));
        assert_eq!(challenge(TYPE, PAYLOAD), expected);
        let (_, sig) = signed();
        let client = b64::std_decode(sig.client_data_json.as_deref().unwrap()).unwrap();
        let value: serde_json::Value = serde_json::from_slice(&client).unwrap();
        assert_eq!(value["challenge"], expected);
        assert_eq!(value["type"], "webauthn.get");
        assert_eq!(value["crossOrigin"], false);
    }

    #[test]
    fn another_payload_or_type_is_refused() {
        let (key, sig) = signed();
        let vk = key.verifying_key();
        assert_eq!(verify_assertion(&sig, TYPE, b"{\"v\":2}", &vk, RP, ORIGIN), Err(Reason::SignatureInvalid));
        assert_eq!(verify_assertion(&sig, "other", PAYLOAD, &vk, RP, ORIGIN), Err(Reason::SignatureInvalid));
    }

    #[test]
    fn origin_and_rp_id_must_match() {
        let (key, sig) = signed();
        let vk = key.verifying_key();
        assert_eq!(
            verify_assertion(&sig, TYPE, PAYLOAD, &vk, RP, "https://evil.example"),
            Err(Reason::SignatureInvalid)
        );
        assert_eq!(verify_assertion(&sig, TYPE, PAYLOAD, &vk, "evil.example", ORIGIN), Err(Reason::SignatureInvalid));
    }

    #[test]
    fn client_data_type_and_cross_origin() {
        let key = passkey(3);
        let chal = challenge(TYPE, PAYLOAD);
        let create = resign(&key, &auth_data(RP, 0x05), &client_data("webauthn.create", &chal, ORIGIN));
        assert_eq!(check(&create, &key), Err(Reason::SignatureInvalid));
        let good = resign(&key, &auth_data(RP, 0x05), &client_data(ASSERTION_TYPE, &chal, ORIGIN));
        assert_eq!(check(&good, &key), Ok(()));
        let framed =
            serde_json::json!({"type": ASSERTION_TYPE, "challenge": chal, "origin": ORIGIN, "crossOrigin": true});
        let framed = resign(&key, &auth_data(RP, 0x05), framed.to_string().as_bytes());
        assert_eq!(check(&framed, &key), Err(Reason::SignatureInvalid));
        // Members browsers add are ignored; a repeated member is malformed.
        let extra =
            serde_json::json!({"type": ASSERTION_TYPE, "challenge": chal, "origin": ORIGIN, "topOrigin": ORIGIN});
        assert_eq!(check(&resign(&key, &auth_data(RP, 0x05), extra.to_string().as_bytes()), &key), Ok(()));
        let twice = format!(r#"{{"type":"webauthn.get","challenge":"{chal}","challenge":"x","origin":"{ORIGIN}"}}"#);
        assert_eq!(check(&resign(&key, &auth_data(RP, 0x05), twice.as_bytes()), &key), Err(Reason::EnvelopeMalformed));
        let array = serde_json::json!([ASSERTION_TYPE, chal, ORIGIN]).to_string();
        assert_eq!(check(&resign(&key, &auth_data(RP, 0x05), array.as_bytes()), &key), Err(Reason::EnvelopeMalformed));
    }

    #[test]
    fn user_present_and_verified_are_both_required() {
        let key = passkey(3);
        let client = client_data(ASSERTION_TYPE, &challenge(TYPE, PAYLOAD), ORIGIN);
        for (flags, ok) in [(0x05, true), (0x1d, true), (0x85, true), (0x01, false), (0x04, false), (0x00, false)] {
            let sig = resign(&key, &auth_data(RP, flags), &client);
            assert_eq!(check(&sig, &key).is_ok(), ok, "flags {flags:#04x}");
        }
        let mut short = auth_data(RP, 0x05);
        short.truncate(36);
        assert_eq!(check(&resign(&key, &short, &client), &key), Err(Reason::SignatureInvalid));
    }

    #[test]
    fn tampered_parts_are_refused() {
        let (key, sig) = signed();
        let mut data = b64::std_decode(sig.authenticator_data.as_deref().unwrap()).unwrap();
        data[36] ^= 1;
        let counter = dsse::Signature { authenticator_data: Some(b64::std_encode(&data)), ..sig.clone() };
        assert_eq!(check(&counter, &key), Err(Reason::SignatureInvalid));
        let other = passkey(8);
        let wrong_key = dsse::Signature { keyid: other.verifying_key().thumbprint(), ..sig.clone() };
        assert_eq!(check(&wrong_key, &other), Err(Reason::SignatureInvalid));
        assert_eq!(check(&sig, &other), Err(Reason::KeyMismatch));
    }

    #[test]
    fn raw_signatures_and_missing_parts_are_malformed() {
        let (key, sig) = signed();
        let raw = dsse::Signature { sig: b64::std_encode(&key.sign(b"x")), ..sig.clone() };
        assert_eq!(check(&raw, &key), Err(Reason::EnvelopeMalformed));
        let bare = dsse::Signature { authenticator_data: None, ..sig.clone() };
        assert_eq!(check(&bare, &key), Err(Reason::EnvelopeMalformed));
        let no_client = dsse::Signature { client_data_json: Some("@@".into()), ..sig.clone() };
        assert_eq!(check(&no_client, &key), Err(Reason::EnvelopeMalformed));
        let not_json = dsse::Signature { client_data_json: Some(b64::std_encode(b"[1]")), ..sig };
        assert_eq!(check(&not_json, &key), Err(Reason::EnvelopeMalformed));
    }

    // rule: P5.2
    #[test]
    fn only_es256_keys_are_passkeys() {
        let ed = SigningKey::from_seed(Alg::Ed25519, &[1; 32]).unwrap();
        assert_eq!(assert(&ed, RP, ORIGIN, TYPE, PAYLOAD, 0), Err(Reason::KeyMismatch));
        let (_, sig) = signed();
        let sig = dsse::Signature { keyid: ed.verifying_key().thumbprint(), ..sig };
        assert_eq!(verify_assertion(&sig, TYPE, PAYLOAD, &ed.verifying_key(), RP, ORIGIN), Err(Reason::KeyMismatch));
    }

    #[test]
    fn high_s_signatures_verify() {
        // Authenticators do not normalise S; the verifier must accept both.
        let (key, sig) = signed();
        let der = b64::std_decode(&sig.sig).unwrap();
        let low = p256::ecdsa::Signature::from_der(&der).unwrap();
        let (r, s) = low.split_scalars();
        let flipped = p256::ecdsa::Signature::from_scalars(r.to_bytes(), (-*s).to_bytes()).unwrap();
        let other = dsse::Signature { sig: b64::std_encode(flipped.to_der().as_bytes()), ..sig.clone() };
        assert_eq!(check(&sig, &key), Ok(()));
        assert_eq!(check(&other, &key), Ok(()));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn never_panics_on_arbitrary_parts(
            sig in ".{0,120}",
            data in proptest::collection::vec(any::<u8>(), 0..80),
            client in proptest::collection::vec(any::<u8>(), 0..200),
            raw_b64 in any::<bool>(),
        ) {
            let key = passkey(5);
            let sig = dsse::Signature {
                keyid: key.verifying_key().thumbprint(),
                sig: if raw_b64 { sig } else { b64::std_encode(sig.as_bytes()) },
                authenticator_data: Some(b64::std_encode(&data)),
                client_data_json: Some(b64::std_encode(&client)),
            };
            prop_assert!(check(&sig, &key).is_err());
            let _ = sign_count(&sig);
        }
    }
}
