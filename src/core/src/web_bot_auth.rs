//! Web Bot Auth for the service's own outbound requests (the IETF
//! web-bot-auth architecture and HTTP message signatures directory drafts):
//! each request is signed with RFC 9421 over `@authority` and the
//! `Signature-Agent` member that names where the service's keys are, tagged
//! `web-bot-auth`; the key directory is a JWK set whose answer is itself
//! signed over the authority it was asked at. Nothing here is read from an
//! incoming request: a caller's `Signature-Agent` is never followed.

use serde_json::json;

use crate::b64;
use crate::keys::{SigningKey, VerifyingKey};

/// The tag of a signed outbound request.
pub const TAG: &str = "web-bot-auth";
/// The tag of the directory answer's signature.
pub const DIRECTORY_TAG: &str = "http-message-signatures-directory";
/// Where the directory is served.
pub const DIRECTORY_PATH: &str = "/.well-known/http-message-signatures-directory";
/// The directory's media type.
pub const DIRECTORY_MEDIA_TYPE: &str = "application/http-message-signatures-directory+json";
/// How long a request's signature is good for: one fetch.
pub const REQUEST_VALIDITY_S: i64 = 60;
/// How long the directory's signature is good for (it is signed per answer).
pub const DIRECTORY_VALIDITY_S: i64 = 24 * 3600;
/// The dictionary member of `Signature-Agent` the signature covers.
pub const AGENT_MEMBER: &str = "agent1";
/// The signature's label (any label works for a verifier; ours is fixed).
pub const LABEL: &str = "sig1";

/// The three headers an outbound request carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedHeaders {
    pub signature_agent: String,
    pub signature_input: String,
    pub signature: String,
}

fn quoted(text: &str) -> Option<String> {
    // An sf-string: printable ASCII, with `"` and `\` escaped.
    if !text.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        return None;
    }
    Some(format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\"")))
}

/// Signs a request to `authority` (the host, and the port when the URL
/// names one) for the agent whose directory is at `agent` (an https origin).
pub fn sign_request(
    key: &SigningKey,
    authority: &str,
    agent: &str,
    created_s: i64,
    nonce: &[u8; 32],
) -> Option<SignedHeaders> {
    let agent_value = quoted(agent)?;
    let params = format!(
        "(\"@authority\" \"signature-agent\";key=\"{AGENT_MEMBER}\");created={created_s};expires={};keyid={};alg=\"ed25519\";nonce={};tag=\"{TAG}\"",
        created_s + REQUEST_VALIDITY_S,
        quoted(&key.verifying_key().thumbprint())?,
        quoted(&b64::std_encode(nonce))?,
    );
    let base = format!(
        "\"@authority\": {}\n\"signature-agent\";key=\"{AGENT_MEMBER}\": {agent_value}\n\"@signature-params\": {params}",
        authority.to_ascii_lowercase()
    );
    Some(SignedHeaders {
        signature_agent: format!("{AGENT_MEMBER}={agent_value}"),
        signature_input: format!("{LABEL}={params}"),
        signature: format!("{LABEL}=:{}:", b64::std_encode(&key.sign(base.as_bytes()))),
    })
}

/// The directory's body: the service's outbound keys as a JWK set.
pub fn directory(keys: &[VerifyingKey]) -> Vec<u8> {
    let keys: Vec<_> = keys.iter().map(VerifyingKey::to_jwk).collect();
    json!({ "keys": keys }).to_string().into_bytes()
}

/// The directory answer's `Signature-Input` and `Signature`: each key
/// signs over the authority the directory was asked at (`@authority;req`).
pub fn sign_directory(key: &SigningKey, authority: &str, created_s: i64) -> Option<(String, String)> {
    let params = format!(
        "(\"@authority\";req);created={created_s};expires={};keyid={};alg=\"ed25519\";tag=\"{DIRECTORY_TAG}\"",
        created_s + DIRECTORY_VALIDITY_S,
        quoted(&key.verifying_key().thumbprint())?,
    );
    quoted(authority)?;
    let base = format!("\"@authority\";req: {}\n\"@signature-params\": {params}", authority.to_ascii_lowercase());
    Some((format!("binding0={params}"), format!("binding0=:{}:", b64::std_encode(&key.sign(base.as_bytes())))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::Alg;

    fn key() -> SigningKey {
        SigningKey::from_seed(Alg::Ed25519, &[5; 32]).unwrap()
    }

    // The signature base rebuilt by hand from the headers as a verifier
    // reads them (RFC 9421 §2.5), and checked under the public key.
    #[test]
    fn a_signed_request_verifies_over_its_authority_and_agent() {
        let headers =
            sign_request(&key(), "Images.Example:8443", "https://api.svc.example", 1_795_000_000, &[7; 32]).unwrap();
        assert_eq!(headers.signature_agent, "agent1=\"https://api.svc.example\"");
        let params = headers.signature_input.strip_prefix("sig1=").unwrap();
        assert!(params.contains(";created=1795000000;expires=1795000060;"), "{params}");
        assert!(params.ends_with(";tag=\"web-bot-auth\""), "{params}");
        assert!(params.contains(&format!("keyid=\"{}\"", key().verifying_key().thumbprint())));
        let base = format!(
            "\"@authority\": images.example:8443\n\"signature-agent\";key=\"agent1\": \"https://api.svc.example\"\n\"@signature-params\": {params}"
        );
        let signature = headers.signature.strip_prefix("sig1=:").and_then(|s| s.strip_suffix(':')).unwrap();
        let signature = b64::std_decode(signature).unwrap();
        assert!(key().verifying_key().verify(base.as_bytes(), &signature));
        assert!(!key().verifying_key().verify(base.replace("8443", "8444").as_bytes(), &signature));
        assert_eq!(sign_request(&key(), "a", "https://x\u{7f}", 1, &[0; 32]), None, "not an sf-string");
    }

    #[test]
    fn the_directory_lists_the_keys_and_its_answer_is_signed_over_the_authority() {
        let body: serde_json::Value = serde_json::from_slice(&directory(&[key().verifying_key()])).unwrap();
        assert_eq!(body["keys"][0]["kty"], "OKP");
        assert_eq!(body["keys"][0]["crv"], "Ed25519");
        assert!(body["keys"][0].get("d").is_none(), "never the private half");
        let (input, signature) = sign_directory(&key(), "api.svc.example", 1_795_000_000).unwrap();
        let params = input.strip_prefix("binding0=").unwrap();
        assert!(params.starts_with("(\"@authority\";req);created=1795000000;expires=1795086400;"));
        assert!(params.ends_with("tag=\"http-message-signatures-directory\""));
        let base = format!("\"@authority\";req: api.svc.example\n\"@signature-params\": {params}");
        let signature = b64::std_decode(signature.strip_prefix("binding0=:").unwrap().strip_suffix(':').unwrap());
        assert!(key().verifying_key().verify(base.as_bytes(), &signature.unwrap()));
    }
}
