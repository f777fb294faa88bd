//! Key files: a private key on the caller's disk. The file holds the 32-byte
//! seed (the key is derived from it) and, for convenience, the public JWK
//! and key id. It is written readable by its owner only.

use std::path::Path;

use serde::{Deserialize, Serialize};
use svc_core::keys::{Alg, Jwk, SigningKey};

use super::{ClientError, KeyFileError};

#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyFile {
    pub v: u64,
    pub alg: Alg,
    /// base64url of the 32-byte seed. Never logged, never sent.
    pub seed: String,
    pub key_id: String,
    pub jwk: Jwk,
}

/// The seed never reaches a log through `{:?}`.
impl std::fmt::Debug for KeyFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyFile").field("alg", &self.alg).field("key_id", &self.key_id).finish_non_exhaustive()
    }
}

impl KeyFile {
    pub fn from_key(key: &SigningKey) -> KeyFile {
        let public = key.verifying_key();
        KeyFile {
            v: 1,
            alg: key.alg(),
            seed: svc_core::b64::url_encode(&key.seed()),
            key_id: public.thumbprint(),
            jwk: public.to_jwk(),
        }
    }

    pub fn key(&self) -> Result<SigningKey, KeyFileError> {
        let seed: [u8; 32] = svc_core::b64::url_decode(&self.seed)
            .and_then(|s| s.try_into().ok())
            .ok_or(KeyFileError::SeedNotDecoded)?;
        let key = SigningKey::from_seed(self.alg, &seed)?;
        if key.verifying_key().thumbprint() != self.key_id {
            return Err(KeyFileError::KeyIdMismatch);
        }
        Ok(key)
    }
}

/// A new key of `alg` from the operating system's random source.
pub fn generate(alg: Alg) -> Result<SigningKey, ClientError> {
    // A P-256 seed outside the curve order is refused; draw again (rare).
    for _ in 0..8 {
        if let Ok(key) = SigningKey::from_seed(alg, &svc_clock::random::<32>()) {
            return Ok(key);
        }
    }
    Err(ClientError::NoKeyDrawn(alg))
}

/// A key file's JSON held elsewhere (an environment variable's value).
pub fn parse(text: &[u8], origin: &Path) -> Result<SigningKey, ClientError> {
    let file: KeyFile = serde_json::from_slice(text)
        .map_err(|source| ClientError::KeyFileFormat { path: origin.to_owned(), source })?;
    file.key().map_err(|source| ClientError::KeyFile { path: origin.to_owned(), source })
}

pub fn read(path: &Path) -> Result<SigningKey, ClientError> {
    let text = std::fs::read(path).map_err(|source| ClientError::Io { path: path.to_owned(), source })?;
    parse(&text, path)
}

/// Writes the key file, refusing to overwrite one, readable by its owner only.
pub fn write(path: &Path, key: &SigningKey) -> Result<KeyFile, ClientError> {
    use std::io::Write;
    let file = KeyFile::from_key(key);
    let text = serde_json::to_vec_pretty(&file)?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let io = |source| ClientError::Io { path: path.to_owned(), source };
    let mut out = options.open(path).map_err(io)?;
    out.write_all(&text).map_err(io)?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_file_round_trips_and_refuses_a_wrong_key_id() {
        let dir = tempfile::tempdir().unwrap();
        for alg in [Alg::Ed25519, Alg::Es256] {
            let key = generate(alg).unwrap();
            let path = dir.path().join(format!("{}.json", alg.as_str()));
            let written = write(&path, &key).unwrap();
            assert_eq!(read(&path).unwrap().verifying_key().thumbprint(), written.key_id);
            assert!(write(&path, &key).is_err(), "never overwrites a key file");
            let mut tampered = written.clone();
            tampered.key_id = "other".into();
            assert!(tampered.key().is_err());
        }
    }
}
