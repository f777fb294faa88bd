//! Deliberate faults, to see each chaos invariant fail (chaos/README.md,
//! "Seeing each invariant fail"). They exist only in a build with the
//! `sabotage` feature, and only those named in `SVC_SABOTAGE`
//! (comma-separated) strike. A default build has none: `on` is `false` and
//! each guarded branch compiles away.

/// One deliberate fault, named after the invariant it breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sabotage {
    /// Readiness answers 503 once the process has run 10 s.
    UnreadyAfter10s,
    /// Home never bills a fetch.
    UnbilledFetches,
    /// The receipt folder leaves every tenth receipt out of its minute.
    UnfoldedReceipts,
    /// Read regions drop the nonces home's feed teaches them.
    NoNonceFanout,
    /// Each checkpoint is signed over a root with one bit flipped.
    ForkedCheckpoints,
    /// Every second live version a push writes is dropped from the write.
    LostVersions,
    /// A withdrawal answers as done and changes nothing.
    IgnoredWithdrawals,
    /// Read regions drop the blocks home replicates.
    IgnoredBlocks,
    /// Read regions drop every certificate issuance but an active one.
    IgnoredCertificates,
    /// Home leases a campaign's money as if it had four times its budget.
    UnboundedAdLeases,
}

impl Sabotage {
    pub const ALL: [Sabotage; 10] = [
        Sabotage::UnreadyAfter10s,
        Sabotage::UnbilledFetches,
        Sabotage::UnfoldedReceipts,
        Sabotage::NoNonceFanout,
        Sabotage::ForkedCheckpoints,
        Sabotage::LostVersions,
        Sabotage::IgnoredWithdrawals,
        Sabotage::IgnoredBlocks,
        Sabotage::IgnoredCertificates,
        Sabotage::UnboundedAdLeases,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Sabotage::UnreadyAfter10s => "unready-after-10s",
            Sabotage::UnbilledFetches => "unbilled-fetches",
            Sabotage::UnfoldedReceipts => "unfolded-receipts",
            Sabotage::NoNonceFanout => "no-nonce-fanout",
            Sabotage::ForkedCheckpoints => "forked-checkpoints",
            Sabotage::LostVersions => "lost-versions",
            Sabotage::IgnoredWithdrawals => "ignored-withdrawals",
            Sabotage::IgnoredBlocks => "ignored-blocks",
            Sabotage::IgnoredCertificates => "ignored-certificates",
            Sabotage::UnboundedAdLeases => "unbounded-ad-leases",
        }
    }

    /// The sabotages a `SVC_SABOTAGE` value names; an unknown name is an error.
    pub fn parse_list(text: &str) -> Result<Vec<Sabotage>, UnknownSabotage> {
        text.split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map(|n| Sabotage::ALL.into_iter().find(|s| s.name() == n).ok_or_else(|| UnknownSabotage(n.to_owned())))
            .collect()
    }
}

/// A `SVC_SABOTAGE` name no sabotage goes by.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown sabotage {0:?}")]
pub struct UnknownSabotage(pub String);

/// The sabotages this process runs with: none unless built with the
/// `sabotage` feature.
pub fn chosen() -> &'static [Sabotage] {
    #[cfg(feature = "sabotage")]
    {
        static CHOSEN: std::sync::OnceLock<Vec<Sabotage>> = std::sync::OnceLock::new();
        CHOSEN.get_or_init(|| match std::env::var("SVC_SABOTAGE") {
            Ok(text) => Sabotage::parse_list(&text).unwrap_or_else(|e| {
                eprintln!("SVC_SABOTAGE: {e}");
                std::process::exit(2)
            }),
            Err(_) => Vec::new(),
        })
    }
    #[cfg(not(feature = "sabotage"))]
    {
        &[]
    }
}

/// Whether `sabotage` strikes in this process.
#[inline(always)]
pub fn on(sabotage: Sabotage) -> bool {
    cfg!(feature = "sabotage") && chosen().contains(&sabotage)
}

/// The process's start, for `UnreadyAfter10s`.
pub fn started() -> std::time::Instant {
    static STARTED: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    *STARTED.get_or_init(std::time::Instant::now)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back_and_a_default_build_has_none() {
        assert_eq!(
            Sabotage::parse_list("lost-versions, no-nonce-fanout"),
            Ok(vec![Sabotage::LostVersions, Sabotage::NoNonceFanout])
        );
        assert!(Sabotage::parse_list("everything").is_err());
        for s in Sabotage::ALL {
            assert_eq!(Sabotage::parse_list(s.name()), Ok(vec![s]));
        }
        if !cfg!(feature = "sabotage") {
            assert!(chosen().is_empty() && Sabotage::ALL.iter().all(|s| !on(*s)), "a default build never sabotages");
        }
    }
}
