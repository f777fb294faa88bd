//! Signing and verifying keys (Ed25519, ES256 with raw r||s, ML-DSA-65), their
//! JWK forms and RFC 7638 thumbprints.
//!
//! Keys are made from 32-byte seeds the caller supplies, so this module never
//! draws randomness itself. Every signature scheme here is deterministic.

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::b64;
use ml_dsa::signature;

/// Signature algorithms svc accepts. The algorithm always comes from the
/// registered key, never from a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Alg {
    #[serde(rename = "Ed25519")]
    Ed25519,
    #[serde(rename = "ES256")]
    Es256,
    #[serde(rename = "ML-DSA-65")]
    MlDsa65,
}

impl Alg {
    pub fn as_str(self) -> &'static str {
        match self {
            Alg::Ed25519 => "Ed25519",
            Alg::Es256 => "ES256",
            Alg::MlDsa65 => "ML-DSA-65",
        }
    }
}

type MlDsaSigningKey = ml_dsa::SigningKey<ml_dsa::MlDsa65>;
type MlDsaVerifyingKey = ml_dsa::VerifyingKey<ml_dsa::MlDsa65>;

/// A private key. Debug output never shows key material.
#[derive(Clone)]
pub enum SigningKey {
    Ed25519(ed25519_dalek::SigningKey),
    Es256(p256::ecdsa::SigningKey),
    MlDsa65(Box<MlDsaSigningKey>),
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SigningKey({}, {})", self.alg().as_str(), self.verifying_key().thumbprint())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("seed is not a valid {0} private key")]
    BadSeed(&'static str),
    #[error("public key is malformed")]
    BadPublicKey,
    #[error("JWK is malformed or of an unsupported type")]
    BadJwk,
}

impl SigningKey {
    /// Derives a key from a 32-byte seed. For ES256 the seed is the scalar
    /// itself and must be in range (a uniformly random seed is, except with
    /// negligible probability).
    pub fn from_seed(alg: Alg, seed: &[u8; 32]) -> Result<Self, KeyError> {
        Ok(match alg {
            Alg::Ed25519 => SigningKey::Ed25519(ed25519_dalek::SigningKey::from_bytes(seed)),
            Alg::Es256 => {
                SigningKey::Es256(p256::ecdsa::SigningKey::from_slice(seed).map_err(|_| KeyError::BadSeed("P-256"))?)
            }
            Alg::MlDsa65 => {
                let seed = ml_dsa::Seed::from(*seed);
                SigningKey::MlDsa65(Box::new(MlDsaSigningKey::from_seed(&seed)))
            }
        })
    }

    pub fn alg(&self) -> Alg {
        match self {
            SigningKey::Ed25519(_) => Alg::Ed25519,
            SigningKey::Es256(_) => Alg::Es256,
            SigningKey::MlDsa65(_) => Alg::MlDsa65,
        }
    }

    /// The 32-byte seed this key was made from (for storing it).
    pub fn seed(&self) -> [u8; 32] {
        match self {
            SigningKey::Ed25519(k) => k.to_bytes(),
            SigningKey::Es256(k) => k.to_bytes().into(),
            SigningKey::MlDsa65(k) => k.to_seed().into(),
        }
    }

    /// Signs `msg`. ES256 signatures are the 64-byte raw `r || s` form.
    pub fn sign(&self, msg: &[u8]) -> Vec<u8> {
        use signature::Signer;
        match self {
            SigningKey::Ed25519(k) => k.sign(msg).to_bytes().to_vec(),
            SigningKey::Es256(k) => {
                let sig: p256::ecdsa::Signature = k.sign(msg);
                sig.to_bytes().to_vec()
            }
            SigningKey::MlDsa65(k) => {
                let sig: ml_dsa::Signature<ml_dsa::MlDsa65> = k.sign(msg);
                sig.encode().to_vec()
            }
        }
    }

    pub fn verifying_key(&self) -> VerifyingKey {
        match self {
            SigningKey::Ed25519(k) => VerifyingKey::Ed25519(k.verifying_key()),
            SigningKey::Es256(k) => VerifyingKey::Es256(*k.verifying_key()),
            SigningKey::MlDsa65(k) => {
                use signature::Keypair;
                VerifyingKey::MlDsa65(Box::new(k.verifying_key()))
            }
        }
    }
}

/// Whether `sig` is a valid ES256 signature of `msg` by `key`. Either
/// form of S verifies (authenticators do not normalise it).
pub fn es256_verify(key: &p256::ecdsa::VerifyingKey, msg: &[u8], sig: &p256::ecdsa::Signature) -> bool {
    let point = key.to_sec1_point(false);
    let public = ring::signature::UnparsedPublicKey::new(&ring::signature::ECDSA_P256_SHA256_FIXED, point.as_bytes());
    public.verify(msg, &sig.to_bytes()).is_ok()
}

/// A public key.
#[derive(Clone, PartialEq)]
pub enum VerifyingKey {
    Ed25519(ed25519_dalek::VerifyingKey),
    Es256(p256::ecdsa::VerifyingKey),
    MlDsa65(Box<MlDsaVerifyingKey>),
}

impl std::fmt::Debug for VerifyingKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "VerifyingKey({}, {})", self.alg().as_str(), self.thumbprint())
    }
}

impl VerifyingKey {
    pub fn alg(&self) -> Alg {
        match self {
            VerifyingKey::Ed25519(_) => Alg::Ed25519,
            VerifyingKey::Es256(_) => Alg::Es256,
            VerifyingKey::MlDsa65(_) => Alg::MlDsa65,
        }
    }

    /// Whether `sig` is a valid signature of `msg`. Ed25519 uses strict
    /// verification (no malleable or small-order forms).
    pub fn verify(&self, msg: &[u8], sig: &[u8]) -> bool {
        match self {
            VerifyingKey::Ed25519(k) => {
                ed25519_dalek::Signature::from_slice(sig).is_ok_and(|s| k.verify_strict(msg, &s).is_ok())
            }
            VerifyingKey::Es256(k) => p256::ecdsa::Signature::from_slice(sig).is_ok_and(|s| es256_verify(k, msg, &s)),
            VerifyingKey::MlDsa65(k) => {
                use signature::Verifier;
                ml_dsa::Signature::<ml_dsa::MlDsa65>::try_from(sig).is_ok_and(|s| k.verify(msg, &s).is_ok())
            }
        }
    }

    /// The key's public JWK (RFC 8037 `OKP`, RFC 7518 `EC`, and `AKP` for ML-DSA).
    pub fn to_jwk(&self) -> Jwk {
        match self {
            VerifyingKey::Ed25519(k) => Jwk {
                kty: "OKP".into(),
                crv: Some("Ed25519".into()),
                x: Some(b64::url_encode(k.as_bytes())),
                ..Jwk::default()
            },
            VerifyingKey::Es256(k) => {
                let point = k.to_sec1_point(false);
                Jwk {
                    kty: "EC".into(),
                    crv: Some("P-256".into()),
                    x: point.x().map(|x| b64::url_encode(x)),
                    y: point.y().map(|y| b64::url_encode(y)),
                    ..Jwk::default()
                }
            }
            VerifyingKey::MlDsa65(k) => Jwk {
                kty: "AKP".into(),
                alg: Some("ML-DSA-65".into()),
                public: Some(b64::url_encode(&k.encode())),
                ..Jwk::default()
            },
        }
    }

    pub fn from_jwk(jwk: &Jwk) -> Result<Self, KeyError> {
        let decode = |m: &Option<String>| m.as_deref().and_then(b64::url_decode).ok_or(KeyError::BadJwk);
        match (jwk.kty.as_str(), jwk.crv.as_deref(), jwk.alg.as_deref()) {
            ("OKP", Some("Ed25519"), _) => {
                let x: [u8; 32] = decode(&jwk.x)?.try_into().map_err(|_| KeyError::BadJwk)?;
                ed25519_dalek::VerifyingKey::from_bytes(&x)
                    .map(VerifyingKey::Ed25519)
                    .map_err(|_| KeyError::BadPublicKey)
            }
            ("EC", Some("P-256"), _) => {
                let (x, y) = (decode(&jwk.x)?, decode(&jwk.y)?);
                if x.len() != 32 || y.len() != 32 {
                    return Err(KeyError::BadJwk);
                }
                let mut sec1 = Vec::with_capacity(65);
                sec1.push(4);
                sec1.extend_from_slice(&x);
                sec1.extend_from_slice(&y);
                p256::ecdsa::VerifyingKey::from_sec1_bytes(&sec1)
                    .map(VerifyingKey::Es256)
                    .map_err(|_| KeyError::BadPublicKey)
            }
            ("AKP", None, Some("ML-DSA-65")) => {
                let raw = decode(&jwk.public)?;
                let encoded = ml_dsa::EncodedVerifyingKey::<ml_dsa::MlDsa65>::try_from(raw.as_slice())
                    .map_err(|_| KeyError::BadPublicKey)?;
                Ok(VerifyingKey::MlDsa65(Box::new(MlDsaVerifyingKey::decode(&encoded))))
            }
            _ => Err(KeyError::BadJwk),
        }
    }

    /// The key as a COSE_Key (RFC 9053), as a passkey presents it: a CBOR
    /// map `{1: 2 (EC2), 3: -7 (ES256), -1: 1 (P-256), -2: x, -3: y}`.
    /// P-256 keys only; the fixed shape needs no CBOR library.
    pub fn cose_key(&self) -> Option<Vec<u8>> {
        let VerifyingKey::Es256(key) = self else { return None };
        let point = key.to_sec1_point(false);
        let (x, y) = (point.x()?, point.y()?);
        let mut cose = vec![0xa5, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01, 0x21, 0x58, 0x20];
        cose.extend_from_slice(x);
        cose.extend_from_slice(&[0x22, 0x58, 0x20]);
        cose.extend_from_slice(y);
        Some(cose)
    }

    /// RFC 7638 thumbprint (base64url SHA-256 of the required members), the
    /// `keyid` of every key in svc.
    pub fn thumbprint(&self) -> String {
        self.to_jwk().thumbprint()
    }
}

/// A public JWK. Only the members svc uses; unknown members are ignored on read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Jwk {
    pub kty: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub crv: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub alg: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub x: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub y: Option<String>,
    #[serde(rename = "pub", skip_serializing_if = "Option::is_none", default)]
    pub public: Option<String>,
}

impl Jwk {
    /// RFC 7638: SHA-256 over the canonical JSON of the key type's required
    /// members only (`crv, kty, x` for OKP; `crv, kty, x, y` for EC;
    /// `alg, kty, pub` for AKP), base64url without padding.
    pub fn thumbprint(&self) -> String {
        let required = match self.kty.as_str() {
            "OKP" => json!({"crv": self.crv, "kty": self.kty, "x": self.x}),
            "EC" => json!({"crv": self.crv, "kty": self.kty, "x": self.x, "y": self.y}),
            _ => json!({"alg": self.alg, "kty": self.kty, "pub": self.public}),
        };
        b64::url_encode(&crate::digest::sha256(&crate::canonical::canonicalize(&required)))
    }
}

/// A signature to check: the key, the bytes signed, the signature.
#[derive(Debug, Clone)]
pub struct Signed {
    pub key: VerifyingKey,
    pub message: Vec<u8>,
    pub signature: Vec<u8>,
}

/// Checks many signatures, each answering what [`VerifyingKey::verify`]
/// answers for it. The Ed25519 ones are checked in one batch
/// (ed25519-dalek's batch verification, about half the work of checking
/// each alone at a few dozen); when the batch fails, each is checked alone,
/// to name the ones that do not hold. A weak key (of small order, under
/// which anyone could sign) never joins a batch.
///
/// One difference from checking alone, which only a key's holder can
/// bring about: a signature its holder made with a small-order component in
/// `R` fails strict verification, and may pass a batch (RFC 8032 allows
/// either equation). Nobody else can make a signature either way accepts.
pub fn verify_all(items: &[Signed]) -> Vec<bool> {
    let mut holds = vec![false; items.len()];
    let mut batch: Vec<(usize, &ed25519_dalek::VerifyingKey, ed25519_dalek::Signature)> = Vec::new();
    for (n, item) in items.iter().enumerate() {
        let signature = ed25519_dalek::Signature::from_slice(&item.signature);
        match (&item.key, signature) {
            (VerifyingKey::Ed25519(key), Ok(signature)) if !key.is_weak() => batch.push((n, key, signature)),
            _ => holds[n] = item.key.verify(&item.message, &item.signature),
        }
    }
    // A batch of one is checked alone, without the batch's vectors.
    let all_hold = batch.len() > 1 && {
        let messages: Vec<&[u8]> = batch.iter().map(|(n, _, _)| items[*n].message.as_slice()).collect();
        let signatures: Vec<ed25519_dalek::Signature> = batch.iter().map(|(_, _, s)| *s).collect();
        let keys: Vec<ed25519_dalek::VerifyingKey> = batch.iter().map(|(_, k, _)| **k).collect();
        ed25519_dalek::verify_batch(&messages, &signatures, &keys).is_ok()
    };
    for (n, _, _) in &batch {
        holds[*n] = all_hold || items[*n].key.verify(&items[*n].message, &items[*n].signature);
    }
    holds
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seed(n: u8) -> [u8; 32] {
        [n; 32]
    }

    #[test]
    fn every_algorithm_signs_and_verifies() {
        for alg in [Alg::Ed25519, Alg::Es256, Alg::MlDsa65] {
            let key = SigningKey::from_seed(alg, &seed(7)).unwrap();
            let public = key.verifying_key();
            let sig = key.sign(b"message");
            assert!(public.verify(b"message", &sig), "{alg:?}");
            assert!(!public.verify(b"messagf", &sig), "{alg:?}");
            // Deterministic: the same key signs the same bytes the same way.
            assert_eq!(sig, key.sign(b"message"));
            let other = SigningKey::from_seed(alg, &seed(8)).unwrap().verifying_key();
            assert!(!other.verify(b"message", &sig));
        }
    }

    // rule: R5.13
    #[test]
    fn es256_signatures_are_raw_r_and_s() {
        let key = SigningKey::from_seed(Alg::Es256, &seed(3)).unwrap();
        assert_eq!(key.sign(b"x").len(), 64);
    }

    #[test]
    fn jwk_round_trip_keeps_the_thumbprint() {
        for alg in [Alg::Ed25519, Alg::Es256, Alg::MlDsa65] {
            let public = SigningKey::from_seed(alg, &seed(9)).unwrap().verifying_key();
            let jwk = public.to_jwk();
            let back = VerifyingKey::from_jwk(&jwk).unwrap();
            assert_eq!(back.thumbprint(), public.thumbprint());
            assert_eq!(back.alg(), alg);
        }
    }

    #[test]
    fn malformed_jwks_are_refused() {
        let bad = Jwk { kty: "OKP".into(), crv: Some("Ed25519".into()), x: Some("AAAA".into()), ..Jwk::default() };
        assert_eq!(VerifyingKey::from_jwk(&bad), Err(KeyError::BadJwk));
        let rsa = Jwk { kty: "RSA".into(), ..Jwk::default() };
        assert_eq!(VerifyingKey::from_jwk(&rsa), Err(KeyError::BadJwk));
    }

    #[test]
    fn seed_round_trip() {
        for alg in [Alg::Ed25519, Alg::Es256, Alg::MlDsa65] {
            let key = SigningKey::from_seed(alg, &seed(5)).unwrap();
            assert_eq!(key.seed(), seed(5));
        }
    }

    fn signed(key: &SigningKey, message: &[u8]) -> Signed {
        Signed { key: key.verifying_key(), message: message.to_vec(), signature: key.sign(message) }
    }

    // Issue 51: signatures checked in a batch answer as each alone would.
    #[test]
    fn a_batch_names_the_signatures_that_do_not_hold() {
        let keys: Vec<SigningKey> = (0..9).map(|n| SigningKey::from_seed(Alg::Ed25519, &seed(n)).unwrap()).collect();
        let mut items: Vec<Signed> = keys.iter().map(|k| signed(k, b"GET /v1/search")).collect();
        assert_eq!(verify_all(&items), vec![true; 9], "a batch of good signatures");
        // A forged signature, another's, and an ES256 signature among them.
        items[2].signature[5] ^= 1;
        items[4].key = keys[5].verifying_key();
        items.push(signed(&SigningKey::from_seed(Alg::Es256, &seed(3)).unwrap(), b"x"));
        let mut es = signed(&SigningKey::from_seed(Alg::Es256, &seed(4)).unwrap(), b"x");
        es.message = b"y".to_vec();
        items.push(es);
        let expected: Vec<bool> = items.iter().map(|i| i.key.verify(&i.message, &i.signature)).collect();
        assert_eq!(verify_all(&items), expected);
        assert_eq!(expected.iter().filter(|h| !**h).count(), 3);
        assert_eq!(verify_all(&[]), Vec::<bool>::new());
    }

    // Issue 51, attack: under a key of small order (here the identity),
    // anyone can make R = sB, which satisfies the batch's equation for any
    // message; strict verification refuses the key, and so must the batch.
    #[test]
    fn a_forgery_under_a_weak_key_is_refused_in_a_batch() {
        let weak = ed25519_dalek::VerifyingKey::from_bytes(&{
            let mut identity = [0u8; 32];
            identity[0] = 1;
            identity
        })
        .unwrap();
        assert!(weak.is_weak());
        let s = ed25519_dalek::SigningKey::from_bytes(&[42; 32]);
        let mut forged = s.verifying_key().to_bytes().to_vec();
        forged.extend_from_slice(&s.to_scalar().to_bytes());
        let forgery = Signed { key: VerifyingKey::Ed25519(weak), message: b"anything".to_vec(), signature: forged };
        let mut items: Vec<Signed> =
            (0..4).map(|n| signed(&SigningKey::from_seed(Alg::Ed25519, &seed(n)).unwrap(), b"m")).collect();
        items.push(forgery.clone());
        assert_eq!(verify_all(&items), vec![true, true, true, true, false]);
        // What the batch equation alone would say of it.
        let (sig, key) = (ed25519_dalek::Signature::from_slice(&forgery.signature).unwrap(), weak);
        assert!(ed25519_dalek::verify_batch(&[b"anything", b"other"], &[sig, sig], &[key, key]).is_ok());
    }
}
