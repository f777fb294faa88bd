//! Reason codes shared by verifiers (publishing-verification section 4.2), plus
//! `key_event_missing`, which only verify gives.

use serde::{Deserialize, Serialize};

macro_rules! reasons {
    ($($variant:ident => $code:literal,)*) => {
        /// Why a signed artefact was refused.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum Reason { $($variant,)* }

        impl Reason {
            pub const ALL: &'static [Reason] = &[$(Reason::$variant,)*];

            pub fn as_str(self) -> &'static str {
                match self { $(Reason::$variant => $code,)* }
            }
        }
    };
}

reasons! {
    OutOfScope => "out_of_scope",
    KeyUnknown => "key_unknown",
    SignatureInvalid => "signature_invalid",
    HashMismatch => "hash_mismatch",
    InclusionInvalid => "inclusion_invalid",
    KeyMismatch => "key_mismatch",
    PayloadTypeMismatch => "payload_type_mismatch",
    EnvelopeMalformed => "envelope_malformed",
    VersionUnknown => "version_unknown",
    PayloadMalformed => "payload_malformed",
    RecordTypeMismatch => "record_type_mismatch",
    CertificateNotInForce => "certificate_not_in_force",
    CertificateWithdrawn => "certificate_withdrawn",
    CertificateUnknown => "certificate_unknown",
    AiPolicyVersionMismatch => "ai_policy_version_mismatch",
    KeyNotValid => "key_not_valid",
    KeyCompromised => "key_compromised",
    AiPolicyBitsMismatch => "ai_policy_bits_mismatch",
    EntitlementExpired => "entitlement_expired",
    EntitlementInvalid => "entitlement_invalid",
    PostQuantumRequired => "post_quantum_required",
    TrustChainBroken => "trust_chain_broken",
    RowSignatureInvalid => "row_signature_invalid",
    ProjectionUnknown => "projection_unknown",
    ReceiptCallerMismatch => "receipt_caller_mismatch",
    ReceiptRowMismatch => "receipt_row_mismatch",
    CheckpointInvalid => "checkpoint_invalid",
    ConsistencyInvalid => "consistency_invalid",
    KeyEventMissing => "key_event_missing",
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // rule: P4.2.57
    #[test]
    fn serde_name_is_the_code() {
        for reason in Reason::ALL {
            let json = serde_json::to_string(reason).unwrap();
            assert_eq!(json, format!("\"{}\"", reason.as_str()));
        }
        assert_eq!(Reason::ALL.len(), 29);
    }
}
