//! The client's errors: what fails on the caller's side of the protocol.
//! Each message is what an operator reads on the command line or in a log.

use std::path::PathBuf;

use axum::http::uri::InvalidUri;
use svc_core::Reason;
use svc_core::canonical::CanonicalError;
use svc_core::http_sig::SignError;
use svc_core::keys::Alg;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// A base URL that does not parse.
    #[error("{url}: {source}")]
    Url { url: String, source: InvalidUri },
    /// A base URL that is not `http://` or `https://` with a host.
    #[error("{url}: an http:// or https:// address with a host is expected")]
    NotHttp { url: String },
    /// The request got no answer: refused, reset or closed, or a server
    /// whose certificate is not believed. The base is kept as text: a `Uri`
    /// is three times larger, and every client result is as large as its
    /// error.
    #[error("{base}: {}", causes(source))]
    Transport { base: String, source: hyper_util::client::legacy::Error },
    /// A CA file that does not read, or holds no certificate rustls takes.
    #[error("{}: {detail}", .path.display())]
    Ca { path: PathBuf, detail: String },
    /// The answer's body broke off.
    #[error("{0}")]
    Body(#[source] hyper::Error),
    /// An answer outside 2xx, with its body as sent.
    #[error("{status} {path}: {body}")]
    Status { status: u16, path: String, body: String },
    /// A request that does not build (a method, URI or header out of range).
    #[error("{0}")]
    Request(#[from] axum::http::Error),
    /// A request the signature profile cannot carry.
    #[error("{0}")]
    Sign(#[from] SignError),
    /// A payload that is not canonical JSON.
    #[error("{0}")]
    Canonical(#[from] CanonicalError),
    /// The software passkey refused to seal.
    #[error("{0}")]
    Passkey(Reason),
    /// The random source gave no usable seed, time after time.
    #[error("could not draw a {} key", .0.as_str())]
    NoKeyDrawn(Alg),
    /// A file that does not read or write.
    #[error("{}: {source}", .path.display())]
    Io { path: PathBuf, source: std::io::Error },
    /// A key file that is not a key file's JSON.
    #[error("{}: {source}", .path.display())]
    KeyFileFormat { path: PathBuf, source: serde_json::Error },
    /// A key file whose key does not hold.
    #[error("{}: {source}", .path.display())]
    KeyFile { path: PathBuf, source: KeyFileError },
    /// A pinned anchors file that does not hold two root keys.
    #[error("{}: {detail}", .path.display())]
    Anchor { path: PathBuf, detail: String },
    /// A publishing run's input or state that cannot be used as it is.
    #[error("{}: {detail}", .path.display())]
    Publishing { path: PathBuf, detail: String },
    /// A value that does not encode as JSON.
    #[error("{0}")]
    Json(#[from] serde_json::Error),
}

/// Why a key file's contents do not make its key.
#[derive(Debug, thiserror::Error)]
pub enum KeyFileError {
    #[error("the key file's seed is not 32 bytes of base64url")]
    SeedNotDecoded,
    #[error("{0}")]
    Seed(#[from] svc_core::keys::KeyError),
    #[error("the key file's key_id does not match its seed")]
    KeyIdMismatch,
}

/// An error and its causes, each once, outermost first; a certificate the
/// client does not believe says how to make it believed.
fn causes(error: &hyper_util::client::legacy::Error) -> String {
    let mut said = vec![error.to_string()];
    let mut next = std::error::Error::source(error);
    let mut certificate = false;
    while let Some(cause) = next {
        let text = cause.to_string();
        certificate |= tls_error(cause).is_some_and(|e| {
            // Not a check of the project's own (a link certificate naming
            // another region): that one says what it found.
            matches!(e, rustls::Error::InvalidCertificate(c) if !matches!(c, rustls::CertificateError::Other(_)))
                || matches!(e, rustls::Error::NoCertificatesPresented)
        });
        if !said.iter().any(|s| s.contains(&text)) {
            said.push(text);
        }
        next = cause.source();
    }
    if certificate {
        said.push("the server's certificate is not believed: name the CA that issued it with --ca".into());
    }
    said.join(": ")
}

/// rustls's error, where a connector's error holds it: itself, or inside
/// I/O errors (one in another, whose `source` skips the error each wraps).
fn tls_error<'a>(cause: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    if let Some(tls) = cause.downcast_ref::<rustls::Error>() {
        return Some(tls);
    }
    let inner: &(dyn std::error::Error + 'static) = cause.downcast_ref::<std::io::Error>()?.get_ref()?;
    tls_error(inner)
}
