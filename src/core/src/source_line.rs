//! The source line a consumer cites:
//! `svc-source/1 record=<id> origin=sha256:<hex> cert=sha256:<hex> served=<timestamp> verify=<url>`.

use crate::digest::is_sha256_form;
use crate::time::UnixMs;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceLine {
    pub record_id: String,
    pub origin: String,
    pub cert: String,
    pub served: UnixMs,
    pub verify: String,
}

impl SourceLine {
    /// `verify` is the public verify page of the record, with its origin.
    pub fn new(record_id: &str, origin: &str, cert: &str, served: UnixMs, verify_base: &str) -> Self {
        SourceLine {
            record_id: record_id.into(),
            origin: origin.into(),
            cert: cert.into(),
            served,
            verify: format!("{}/v1/verify/{record_id}?origin={origin}", verify_base.trim_end_matches('/')),
        }
    }

    pub fn render(&self) -> String {
        format!(
            "svc-source/1 record={} origin={} cert={} served={} verify={}",
            self.record_id,
            self.origin,
            self.cert,
            self.served.to_rfc3339_secs(),
            self.verify
        )
    }

    /// Parses a line; every member is required, in order, and well formed.
    pub fn parse(line: &str) -> Option<SourceLine> {
        let mut parts = line.split(' ');
        if parts.next()? != "svc-source/1" {
            return None;
        }
        let mut take = |name: &str| parts.next()?.strip_prefix(name)?.strip_prefix('=').map(str::to_owned);
        let record_id = take("record")?;
        let origin = take("origin")?;
        let cert = take("cert")?;
        let served = UnixMs::parse_rfc3339(&take("served")?)?;
        let verify = take("verify")?;
        if parts.next().is_some() || crate::ids::parse_record_id(&record_id).is_none() {
            return None;
        }
        if !is_sha256_form(&origin) || !is_sha256_form(&cert) {
            return None;
        }
        Some(SourceLine { record_id, origin, cert, served, verify })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // rule: R2.7.15
    #[test]
    fn renders_and_parses_the_exact_form() {
        let origin = format!("sha256:{}", "1".repeat(64));
        let cert = format!("sha256:{}", "2".repeat(64));
        let line = SourceLine::new(
            "svc_aaaaaaaaaaaaaaaaaaaaaaaaaa",
            &origin,
            &cert,
            UnixMs(1_793_534_400_000),
            "https://verify.example/",
        );
        let text = line.render();
        assert_eq!(
            text,
            format!(
                "svc-source/1 record=svc_aaaaaaaaaaaaaaaaaaaaaaaaaa origin={origin} cert={cert} \
served=2026-11-01T12:00:00Z verify=https://verify.example/v1/verify/svc_aaaaaaaaaaaaaaaaaaaaaaaaaa?origin={origin}"
            )
        );
        assert_eq!(SourceLine::parse(&text), Some(line));
        assert_eq!(SourceLine::parse(&text.replace("svc-source/1", "svc-source/2")), None);
        assert_eq!(SourceLine::parse(&text.replace("origin=sha256:1", "origin=sha256:x")), None);
        assert_eq!(SourceLine::parse(&format!("{text} extra=1")), None);
    }
}
