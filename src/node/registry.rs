//! Typed reads of the registry: businesses, certificates, keys, mandates, AI
//! policies, companies, groups and blocks. Writes go through the publisher so
//! they replicate.

use svc_core::ids::RecordType;
use svc_core::time::UnixMs;

use svc_store::keys;
use svc_store::model::*;
use svc_store::{Store, StoreResult, cf};

#[derive(Clone)]
pub struct Registry {
    store: Store,
}

impl Registry {
    pub fn new(store: Store) -> Self {
        Registry { store }
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn business(&self, uuid: &str) -> StoreResult<Option<Business>> {
        self.store.get(cf::BUSINESSES, uuid.as_bytes())
    }

    pub fn businesses(&self) -> StoreResult<Vec<Business>> {
        Ok(self.store.scan_all(cf::BUSINESSES, &[])?.into_iter().map(|(_, b)| b).collect())
    }

    /// A business and what its records are validated against: its own
    /// brands, every other business's names and brands (the scope check),
    /// and the mandate's countries when a key publishes under one.
    pub fn validation_context(
        &self,
        business_uuid: &str,
        mandate_countries: Option<Vec<String>>,
    ) -> StoreResult<Option<(Business, svc_core::records::ValidationContext)>> {
        let businesses = self.businesses()?;
        let Some(business) = businesses.iter().find(|b| b.uuid == business_uuid).cloned() else { return Ok(None) };
        let other_brands = businesses
            .iter()
            .filter(|b| b.uuid != business_uuid)
            .flat_map(|b| std::iter::once(b.legal_name.clone()).chain(b.brands.iter().cloned()))
            .collect();
        let validation =
            svc_core::records::ValidationContext::new(business.brands.clone(), other_brands, mandate_countries);
        Ok(Some((business, validation)))
    }

    /// Every issuance of a business's certificate, oldest first.
    pub fn certificates(&self, business_uuid: &str) -> StoreResult<Vec<CertificateIssuance>> {
        let prefix = keys::prefix(&[business_uuid]);
        Ok(self.store.scan_all(cf::CERTIFICATES, &prefix)?.into_iter().map(|(_, c)| c).collect())
    }

    /// The issuance in force at `at`.
    pub fn certificate_in_force(&self, business_uuid: &str, at: UnixMs) -> StoreResult<Option<CertificateIssuance>> {
        let history = self.certificates(business_uuid)?;
        let core: Vec<_> = history.iter().map(CertificateIssuance::as_core).collect();
        let in_force = svc_core::seal::issuance_in_force(&core, at).map(|i| i.cert_id.clone());
        Ok(in_force.and_then(|id| history.into_iter().rev().find(|c| c.cert_id == id)))
    }

    /// Every issuance of a business's certificate, in the form the pure
    /// rules judge.
    pub fn certificate_history(&self, business_uuid: &str) -> StoreResult<Vec<svc_core::seal::Issuance>> {
        Ok(self.certificates(business_uuid)?.iter().map(CertificateIssuance::as_core).collect())
    }

    /// When a business key (integration key or passkey) was compromised, if ever.
    pub fn compromised_at(&self, key_id: &str) -> StoreResult<Option<UnixMs>> {
        let key = match self.integration_key(key_id)? {
            Some(key) => Some(key),
            None => self.passkey(key_id)?,
        };
        Ok(key.and_then(|k| k.compromised_at))
    }

    /// Whether `version`, a record of `business_uuid`, may be served at
    /// `now`: the certificate in force now and its sealing key's compromise
    /// decide (`svc_core::seal::serves`). A seal that cannot be read names
    /// no key and no time, and is not served.
    pub fn serves(&self, business_uuid: &str, version: &RecordVersion, now: UnixMs) -> StoreResult<bool> {
        let Some((key_id, sealed_at)) = version.sealed_by() else { return Ok(false) };
        let history = self.certificate_history(business_uuid)?;
        Ok(svc_core::seal::serves(&history, sealed_at, self.compromised_at(&key_id)?, now))
    }

    /// `sha256:` of the certificate envelope in force at `at` (the latest
    /// issued when none is), the form a source line names it by; empty for
    /// a business without one.
    pub fn certificate_digest(&self, business_uuid: &str, at: UnixMs) -> StoreResult<String> {
        let certificate = match self.certificate_in_force(business_uuid, at)? {
            Some(c) => Some(c),
            None => self.certificates(business_uuid)?.pop(),
        };
        Ok(certificate.map(|c| svc_core::digest::sha256_prefixed(&c.envelope)).unwrap_or_default())
    }

    pub fn integration_key(&self, key_id: &str) -> StoreResult<Option<BusinessKey>> {
        self.store.get(cf::INTEGRATION_KEYS, key_id.as_bytes())
    }

    /// The sandbox integration key whose one-hour bearer token this is,
    /// found by the token's digest.
    pub fn integration_key_by_bearer(&self, token: &str, now: UnixMs) -> StoreResult<Option<BusinessKey>> {
        let digest = svc_core::sandbox::bearer_digest(token);
        let Some(key_id) = self.store.get::<String>(cf::KEY_INDEX, &keys::sandbox_bearer(&digest))? else {
            return Ok(None);
        };
        Ok(self.integration_key(&key_id)?.filter(|k| {
            k.live_at(now)
                && k.sandbox
                    .as_ref()
                    .is_some_and(|c| svc_core::sandbox::bearer_accepted(token, &c.bearer_sha256, k.registered_at, now))
        }))
    }

    /// Every key of a business, integration keys and passkeys, oldest
    /// registered first, found through the business's index entries.
    pub fn business_keys(&self, business_uuid: &str) -> StoreResult<Vec<BusinessKey>> {
        let prefix = keys::business_key(business_uuid, "");
        let mut keys = Vec::new();
        for (entry, family) in self.store.scan_all::<String>(cf::KEY_INDEX, &prefix)? {
            let family = if family == cf::PASSKEYS.name() { cf::PASSKEYS } else { cf::INTEGRATION_KEYS };
            if let Some(key) = self.store.get::<BusinessKey>(family, &entry[prefix.len()..])? {
                keys.push(key);
            }
        }
        keys.sort_by(|a, b| (a.registered_at, &a.key_id).cmp(&(b.registered_at, &b.key_id)));
        Ok(keys)
    }

    /// Writes the index entries of every business key a store held before
    /// the index existed (a node's first start on this build): each node
    /// builds its own, and keys added since arrive with theirs.
    pub fn index_keys(store: &Store) -> StoreResult<usize> {
        if !store.scan::<String>(cf::KEY_INDEX, &[], None, 1)?.is_empty() {
            return Ok(0);
        }
        let mut batch = store.batch();
        let mut indexed = 0;
        for family in [cf::INTEGRATION_KEYS, cf::PASSKEYS] {
            for (_, key) in store.scan_all::<BusinessKey>(family, &[])? {
                for (entry, value) in index_entries(&key) {
                    batch.put(cf::KEY_INDEX, &entry, &value);
                }
                indexed += 1;
            }
        }
        batch.commit()?;
        Ok(indexed)
    }

    /// A business's key of either kind.
    pub fn business_key(&self, key_id: &str) -> StoreResult<Option<BusinessKey>> {
        match self.integration_key(key_id)? {
            Some(key) => Ok(Some(key)),
            None => self.passkey(key_id),
        }
    }

    pub fn passkey(&self, key_id: &str) -> StoreResult<Option<BusinessKey>> {
        self.store.get(cf::PASSKEYS, key_id.as_bytes())
    }

    /// The newest mandate of a key live at `now` that covers `record_type`.
    pub fn live_mandate(&self, key_id: &str, record_type: &str, now: UnixMs) -> StoreResult<Option<MandateRecord>> {
        Ok(self
            .mandates_of_key(key_id)?
            .into_iter()
            .filter(|m| m.live_at(now) && m.record_types.iter().any(|t| t == record_type))
            .max_by_key(|m| m.valid_from))
    }

    pub fn mandates_of_key(&self, key_id: &str) -> StoreResult<Vec<MandateRecord>> {
        let prefix = keys::prefix(&[key_id]);
        Ok(self.store.scan_all(cf::MANDATES, &prefix)?.into_iter().map(|(_, m)| m).collect())
    }

    /// Every key-custody statement of a business, oldest issued first.
    pub fn custody_statements(&self, business_uuid: &str) -> StoreResult<Vec<CustodyRecord>> {
        let prefix = keys::prefix(&[business_uuid]);
        Ok(self.store.scan_all(cf::CUSTODY, &prefix)?.into_iter().map(|(_, c)| c).collect())
    }

    /// Every sealed AI policy version of a business, oldest first.
    pub fn ai_policies(&self, business_uuid: &str) -> StoreResult<Vec<AiPolicyVersion>> {
        let prefix = keys::prefix(&[business_uuid]);
        Ok(self.store.scan_all(cf::AI_POLICIES, &prefix)?.into_iter().map(|(_, p)| p).collect())
    }

    /// The AI policy version in force at `at` (the newest live by then).
    pub fn ai_policy_at(&self, business_uuid: &str, at: UnixMs) -> StoreResult<Option<AiPolicyVersion>> {
        Ok(policy_in_force(&self.ai_policies(business_uuid)?, at).0.cloned())
    }

    pub fn company(&self, uuid: &str) -> StoreResult<Option<Company>> {
        self.store.get(cf::COMPANIES, uuid.as_bytes())
    }

    pub fn group(&self, group_id: &str) -> StoreResult<Option<Group>> {
        self.store.get(cf::GROUPS, group_id.as_bytes())
    }

    /// The sandbox corpus's own AI company, which no caller created.
    pub fn sandbox_corpus_company(&self) -> StoreResult<Option<String>> {
        self.store.get(cf::meta::SANDBOX_COMPANY, keys::meta::SANDBOX_COMPANY)
    }

    /// The sandbox corpus's own businesses, once named (no caller made them).
    pub fn sandbox_corpus_businesses(&self) -> StoreResult<Option<Vec<String>>> {
        self.store.get(cf::meta::SANDBOX_BUSINESSES, keys::meta::SANDBOX_BUSINESSES)
    }

    /// The UTC day a sandbox business last used the service (home), if it has.
    pub fn business_last_used(&self, business_uuid: &str) -> StoreResult<Option<UnixMs>> {
        self.store.get(cf::meta::BUSINESS_USED, &keys::business_used(business_uuid))
    }

    /// The Terms an AI company accepted last, if any.
    pub fn terms_accepted(&self, company_uuid: &str) -> StoreResult<Option<TermsAcceptance>> {
        self.store.get(cf::TERMS_ACCEPTED, company_uuid.as_bytes())
    }

    /// Every AI company.
    pub fn companies(&self) -> StoreResult<Vec<Company>> {
        Ok(self.store.scan_all(cf::COMPANIES, &[])?.into_iter().map(|(_, c)| c).collect())
    }

    /// The groups of an AI company.
    pub fn groups_of(&self, company_uuid: &str) -> StoreResult<Vec<Group>> {
        let groups: Vec<(Vec<u8>, Group)> = self.store.scan_all(cf::GROUPS, &[])?;
        Ok(groups.into_iter().map(|(_, g)| g).filter(|g| g.company_uuid == company_uuid).collect())
    }

    /// The last UTC day an AI company was billed a request, at any region
    /// (home counts the regions' reports too); `None` if never.
    pub fn last_billed_day(&self, company_uuid: &str) -> StoreResult<Option<UnixMs>> {
        let prefix = keys::prefix(&[company_uuid]);
        let last = self.store.at_or_before::<DayUsage>(cf::USAGE_DAYS, &keys::usage_day(company_uuid, "9999-12-31"))?;
        Ok(last
            .filter(|(k, _)| k.starts_with(&prefix))
            .and_then(|(k, _)| UnixMs::parse_date(std::str::from_utf8(&k[prefix.len()..]).ok()?)))
    }

    /// Every retrieval key registered, revoked ones included.
    pub fn retrieval_keys(&self) -> StoreResult<Vec<RetrievalKey>> {
        Ok(self.store.scan_all(cf::RETRIEVAL_KEYS, &[])?.into_iter().map(|(_, k)| k).collect())
    }

    /// The AI companies that opted in to the key directory, by uuid.
    pub fn directory_listings(&self) -> StoreResult<Vec<(String, DirectoryListing)>> {
        let listed: Vec<(Vec<u8>, DirectoryListing)> = self.store.scan_all(cf::DIRECTORY, &[])?;
        Ok(listed.into_iter().map(|(k, l)| (String::from_utf8_lossy(&k).into_owned(), l)).collect())
    }

    pub fn retrieval_key(&self, key_id: &str) -> StoreResult<Option<RetrievalKey>> {
        self.store.get(cf::RETRIEVAL_KEYS, key_id.as_bytes())
    }

    /// The sandbox retrieval key whose one-hour bearer token this is.
    pub fn retrieval_key_by_bearer(&self, token: &str, now: UnixMs) -> StoreResult<Option<RetrievalKey>> {
        let keys: Vec<(Vec<u8>, RetrievalKey)> = self.store.scan_all(cf::RETRIEVAL_KEYS, &[])?;
        Ok(keys.into_iter().map(|(_, k)| k).find(|k| {
            k.revoked_at.is_none_or(|r| now < r)
                && k.bearer_sha256
                    .as_deref()
                    .is_some_and(|d| svc_core::sandbox::bearer_accepted(token, d, k.registered_at, now))
        }))
    }

    /// Groups a business has blocked.
    pub fn blocks_of(&self, business_uuid: &str) -> StoreResult<Vec<Block>> {
        let prefix = keys::prefix(&[business_uuid]);
        Ok(self.store.scan_all(cf::BLOCKS, &prefix)?.into_iter().map(|(_, b)| b).collect())
    }

    pub fn blocks(&self, business_uuid: &str, group_id: &str) -> StoreResult<bool> {
        self.store.contains(cf::BLOCKS, &keys::block(business_uuid, group_id))
    }

    /// The freshness each record type of a business is declared to keep.
    pub fn freshness_expectations(
        &self,
        business_uuid: &str,
    ) -> StoreResult<Vec<(RecordType, svc_core::freshness::FreshnessExpectation)>> {
        let prefix = keys::prefix(&[business_uuid]);
        let declared: Vec<(Vec<u8>, String)> =
            self.store.scan(cf::FRESHNESS, &prefix, None, RecordType::COLLECTIONS.len())?;
        Ok(declared
            .into_iter()
            .filter_map(|(k, json)| {
                let name = std::str::from_utf8(&k[prefix.len()..]).ok()?;
                Some((RecordType::from_name(name)?, serde_json::from_str(&json).ok()?))
            })
            .collect())
    }

    /// What domain assurance last found of each domain of a business.
    pub fn domains(
        &self,
        business_uuid: &str,
    ) -> StoreResult<std::collections::BTreeMap<String, svc_core::assurance::DomainAssurance>> {
        let kept: Vec<(Vec<u8>, svc_core::assurance::DomainAssurance)> =
            self.store.scan(cf::DOMAINS, &keys::prefix(&[business_uuid]), None, 1_000)?;
        Ok(kept.into_iter().map(|(_, d)| (d.domain.clone(), d)).collect())
    }

    pub fn endpoints_suspension(&self, business_uuid: &str) -> StoreResult<Option<EndpointsSuspension>> {
        self.store.get(cf::ENDPOINTS, business_uuid.as_bytes())
    }

    /// The newest Terms version already in effect at `now`.
    pub fn terms_in_force(&self, now: UnixMs) -> StoreResult<Option<TermsVersion>> {
        Ok(self.terms()?.into_iter().filter(|t| t.effective_from <= now).max_by_key(|t| (t.effective_from, t.version)))
    }

    pub fn terms(&self) -> StoreResult<Vec<TermsVersion>> {
        Ok(self.store.scan_all(cf::TERMS, &[])?.into_iter().map(|(_, t)| t).collect())
    }

    pub fn record_head(&self, record_id: &str) -> StoreResult<Option<RecordHead>> {
        self.store.get(cf::RECORDS, record_id.as_bytes())
    }

    pub fn record_version(&self, record_id: &str, generation: u64) -> StoreResult<Option<RecordVersion>> {
        self.store.get(cf::VERSIONS, &keys::version(record_id, generation))
    }

    /// Record ids of a business's records of one type, in id order, from
    /// `after` (exclusive) on, at most `limit`.
    /// Every record id of a type a business has, when they are at most
    /// the catalogue's bound ([`StoreError::TooMany`] past it).
    pub fn all_catalogue_ids(&self, business_uuid: &str, record_type: &str) -> StoreResult<Vec<String>> {
        let prefix = keys::prefix(&[business_uuid, record_type]);
        let rows = self.store.scan_all(cf::CATALOGUE, &prefix)?;
        Ok(rows.into_iter().filter_map(|(k, ())| String::from_utf8(k[prefix.len()..].to_vec()).ok()).collect())
    }

    pub fn catalogue_ids(
        &self,
        business_uuid: &str,
        record_type: &str,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<String>> {
        let prefix = keys::prefix(&[business_uuid, record_type]);
        let from = after.map(|a| {
            let mut k = prefix.clone();
            k.extend_from_slice(a.as_bytes());
            k.push(0);
            k
        });
        let rows: Vec<(Vec<u8>, ())> = self.store.scan(cf::CATALOGUE, &prefix, from.as_deref(), limit)?;
        Ok(rows.into_iter().filter_map(|(k, _)| String::from_utf8(k[prefix.len()..].to_vec()).ok()).collect())
    }
}

/// The version of `versions` in force at `at` (the newest live by then),
/// and when a later version comes into force, if one will.
pub fn policy_in_force(versions: &[AiPolicyVersion], at: UnixMs) -> (Option<&AiPolicyVersion>, Option<UnixMs>) {
    let in_force = versions.iter().filter(|p| p.live_from <= at).max_by_key(|p| p.version);
    let next = versions
        .iter()
        .filter(|p| p.live_from > at && in_force.is_none_or(|f| p.version > f.version))
        .map(|p| p.live_from)
        .min();
    (in_force, next)
}

/// Sealing keys (passkeys and hosted keys) and integration keys live apart.
pub fn family_of(key: &BusinessKey) -> svc_store::Table<BusinessKey> {
    if key.purpose == KeyPurpose::Sealing { cf::PASSKEYS } else { cf::INTEGRATION_KEYS }
}

/// The index entries a business key is found by: its business, and a
/// sandbox key's bearer digest.
pub fn index_entries(key: &BusinessKey) -> Vec<(Vec<u8>, String)> {
    let mut entries = vec![(keys::business_key(&key.business_uuid, &key.key_id), family_of(key).name().to_owned())];
    if let Some(sandbox) = &key.sandbox {
        entries.push((keys::sandbox_bearer(&sandbox.bearer_sha256), key.key_id.clone()));
    }
    entries
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version(version: u64, live_from: i64) -> AiPolicyVersion {
        AiPolicyVersion {
            business_uuid: "b".into(),
            version,
            record_id: format!("ai_{version}"),
            bytes: vec![],
            seal: vec![],
            live_from: UnixMs(live_from),
        }
    }

    #[test]
    fn the_newest_live_version_is_in_force_until_a_later_one_goes_live() {
        let versions = [version(1, 100), version(2, 200), version(3, 300)];
        assert_eq!(policy_in_force(&versions, UnixMs(50)), (None, Some(UnixMs(100))));
        let (in_force, next) = policy_in_force(&versions, UnixMs(250));
        assert_eq!((in_force.map(|p| p.version), next), (Some(2), Some(UnixMs(300))));
        let (in_force, next) = policy_in_force(&versions, UnixMs(300));
        assert_eq!((in_force.map(|p| p.version), next), (Some(3), None));
        // An older version going live later never displaces a newer one.
        let versions = [version(1, 400), version(2, 200)];
        let (in_force, next) = policy_in_force(&versions, UnixMs(250));
        assert_eq!((in_force.map(|p| p.version), next), (Some(2), None));
    }
}
