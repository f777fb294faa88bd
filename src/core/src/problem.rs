//! RFC 9457 problem details: every code of both specs and its HTTP status.
//!
//! Where the spec leaves a status "not shown", the choice is made here once
//! (and listed in docs/REFERENCE.md): authentication failures are 401, a malformed
//! or out-of-allow-list request is 400, a seal that fails is 422, and a `seq`
//! conflict is 409.

use serde::{Deserialize, Serialize};

use crate::time::UnixMs;

macro_rules! codes {
    ($($variant:ident => ($code:literal, $status:literal, $title:literal),)*) => {
        /// A stable problem `code`.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum Code { $($variant,)* }

        impl Code {
            pub const ALL: &'static [Code] = &[$(Code::$variant,)*];
            pub fn as_str(self) -> &'static str { match self { $(Code::$variant => $code,)* } }
            pub fn status(self) -> u16 { match self { $(Code::$variant => $status,)* } }
            pub fn title(self) -> &'static str { match self { $(Code::$variant => $title,)* } }
        }
    };
}

codes! {
    SignatureMissing => ("signature_missing", 401, "Request is not signed"),
    SignatureInvalid => ("signature_invalid", 401, "Request signature is invalid"),
    SignatureExpired => ("signature_expired", 401, "Request signature is outside its lifetime"),
    KeyUnknown => ("key_unknown", 401, "Key is not known"),
    DigestMismatch => ("digest_mismatch", 400, "Content-Digest does not match the body"),
    NonceReused => ("nonce_reused", 401, "Nonce was already used with this key"),
    FilterRequired => ("filter_required", 400, "Exactly one country clause is required"),
    SortRequired => ("sort_required", 400, "sort_by is required"),
    UnknownField => ("unknown_field", 400, "Field is not in the collection's allow-list"),
    OperatorNotAllowed => ("operator_not_allowed", 400, "Operator is not allowed on this field"),
    SortNotAllowed => ("sort_not_allowed", 400, "Sort key is not allowed"),
    RequestInvalid => ("request_invalid", 400, "Request is invalid"),
    RecordTooLarge => ("record_too_large", 413, "Body is over the limit"),
    TokenInvalid => ("token_invalid", 400, "Token or receipt was not issued to this caller"),
    AllowanceExhausted => ("allowance_exhausted", 402, "Prepaid allowance is spent"),
    RateLimited => ("rate_limited", 429, "Too many requests"),
    Unavailable => ("unavailable", 503, "Temporarily unavailable"),
    NotFound => ("not_found", 404, "Not found"),
    SourceNotAllowed => ("source_not_allowed", 403, "Request source is outside the mandate's allow-list"),
    SealInvalid => ("seal_invalid", 422, "Seal is invalid"),
    SeqNotIncreasing => ("seq_not_increasing", 409, "seq is not above the last accepted one"),
    CertificateWithdrawn => ("certificate_withdrawn", 422, "Certificate was withdrawn before the seal"),
    OutOfScope => ("out_of_scope", 403, "Outside the mandate's scope"),
    MethodNotAllowed => ("method_not_allowed", 405, "Method is not allowed here"),
    IdempotencyKeyReused => ("idempotency_key_reused", 422, "Idempotency-Key was used with another request"),
    Unauthorized => ("unauthorized", 401, "Operator credentials are missing or wrong"),
    SignInRequired => ("sign_in_required", 401, "Sign in to the portal first"),
    Forbidden => ("forbidden", 403, "The person's role does not allow this"),
    CsrfInvalid => ("csrf_invalid", 403, "The form's token is missing or wrong"),
    PasskeyRefused => ("passkey_refused", 422, "The passkey's answer does not hold"),
    Internal => ("internal", 500, "Internal error"),
    NotImplemented => ("not_implemented", 501, "Not built yet"),
}

/// An RFC 9457 problem body. `type` is a URN naming the code, so it is stable
/// and never needs to resolve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Problem {
    #[serde(rename = "type")]
    pub type_uri: String,
    pub title: String,
    pub status: u16,
    pub code: Code,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub detail: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub instance: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub retry_after_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub retry_after_seconds: Option<u64>,
    /// On `seal_invalid`: the AI policy version in force.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub ai_policy_version: Option<u64>,
    /// On `staging_unavailable` and similar 503s.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub reason: Option<String>,
}

impl Problem {
    pub fn new(code: Code) -> Self {
        Problem {
            type_uri: format!("urn:svc:problem:{}", code.as_str()),
            title: code.title().into(),
            status: code.status(),
            code,
            detail: None,
            instance: None,
            retry_after_ms: None,
            retry_after_seconds: None,
            ai_policy_version: None,
            reason: None,
        }
    }

    pub fn detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    pub fn instance(mut self, instance: impl Into<String>) -> Self {
        self.instance = Some(instance.into());
        self
    }

    /// Sets both retry members; the `Retry-After` header carries the seconds,
    /// rounded up so a client never retries early.
    pub fn retry_after_ms(mut self, ms: u64) -> Self {
        self.retry_after_ms = Some(ms);
        self.retry_after_seconds = Some(ms.div_ceil(1000).max(1));
        self
    }

    pub fn ai_policy_version(mut self, version: u64) -> Self {
        self.ai_policy_version = Some(version);
        self
    }

    pub fn reason(mut self, reason: impl Into<String>) -> Self {
        self.reason = Some(reason.into());
        self
    }

    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }
}

/// Until 5 October 2026 a declared body length over the limit answered `400`
/// `request_invalid`; from that day (00:00 UTC) it is `413` `record_too_large`.
pub const DECLARED_LENGTH_413_FROM: UnixMs = UnixMs(1_791_158_400_000);

pub fn declared_length_over_limit(now: UnixMs) -> Code {
    if now < DECLARED_LENGTH_413_FROM { Code::RequestInvalid } else { Code::RecordTooLarge }
}

#[cfg(test)]
mod tests {
    use super::*;

    // rule: R7.3, R7.7, R7.9, R7.11, R7.12, R7.13, R7.15, R7.17, P7.3, P7.6, R-NS-12, R-NS-13, R-NS-14, P-NS-16, P-NS-17, P-NS-18
    #[test]
    fn statuses_given_by_the_spec() {
        for (code, status) in [
            (Code::KeyUnknown, 401),
            (Code::RequestInvalid, 400),
            (Code::RecordTooLarge, 413),
            (Code::TokenInvalid, 400),
            (Code::AllowanceExhausted, 402),
            (Code::RateLimited, 429),
            (Code::Unavailable, 503),
            (Code::NotFound, 404),
            (Code::SourceNotAllowed, 403),
            (Code::SignatureMissing, 401),
            (Code::NonceReused, 401),
            (Code::DigestMismatch, 400),
            (Code::FilterRequired, 400),
            (Code::SortNotAllowed, 400),
            (Code::SealInvalid, 422),
            (Code::SeqNotIncreasing, 409),
            (Code::SignatureInvalid, 401),
            (Code::SignatureExpired, 401),
            (Code::SortRequired, 400),
            (Code::UnknownField, 400),
            (Code::OperatorNotAllowed, 400),
            (Code::CertificateWithdrawn, 422),
            (Code::OutOfScope, 403),
            (Code::MethodNotAllowed, 405),
            (Code::IdempotencyKeyReused, 422),
            (Code::Unauthorized, 401),
            (Code::Internal, 500),
            (Code::NotImplemented, 501),
            (Code::SignInRequired, 401),
            (Code::Forbidden, 403),
            (Code::CsrfInvalid, 403),
            (Code::PasskeyRefused, 422),
        ] {
            assert_eq!(code.status(), status, "{}", code.as_str());
        }
        for code in Code::ALL {
            assert_eq!(serde_json::to_value(code).unwrap(), code.as_str());
        }
        assert_eq!(Code::ALL.len(), 32, "a new code gets its status pinned above");
    }

    // rule: R7.1, R2.9.2, R2.9.3, R2.9.4, R2.9.5, R7.14
    #[test]
    fn problem_bodies_carry_their_members() {
        let p = Problem::new(Code::RateLimited).detail("slow down").instance("/v1/search").retry_after_ms(1500);
        let v = serde_json::to_value(&p).unwrap();
        assert_eq!(v["code"], "rate_limited");
        assert_eq!(v["status"], 429);
        assert_eq!(v["type"], "urn:svc:problem:rate_limited");
        assert_eq!(v["retry_after_ms"], 1500);
        assert_eq!(v["retry_after_seconds"], 2);
        assert_eq!(v["instance"], "/v1/search");
        let s = serde_json::to_value(Problem::new(Code::SealInvalid).ai_policy_version(4)).unwrap();
        assert_eq!(s["ai_policy_version"], 4);
    }

    // rule: R7.8, R9.13, R9.14
    #[test]
    fn declared_length_answer_changes_on_5_october_2026() {
        assert_eq!(DECLARED_LENGTH_413_FROM, UnixMs::parse_rfc3339("2026-10-05T00:00:00Z").unwrap());
        assert_eq!(declared_length_over_limit(DECLARED_LENGTH_413_FROM.minus(1)), Code::RequestInvalid);
        assert_eq!(declared_length_over_limit(DECLARED_LENGTH_413_FROM), Code::RecordTooLarge);
    }
}
