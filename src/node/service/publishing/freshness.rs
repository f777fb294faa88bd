//! How fresh a business expects its records of a type to be (retrieval
//! 2.4, R2.4.18): declared by the business for each collection its key's
//! mandate covers, replicated, and served on every row of that type as
//! `freshness_expectation`. The spec shows the member, not how it is
//! declared; these routes are ours (docs/REFERENCE.md).

use serde_json::{Value, json};
use svc_core::freshness::FreshnessExpectation;
use svc_core::ids::RecordType;
use svc_core::problem::Code;

use super::{BusinessCaller, writing_mandate};
use crate::actors::publisher::PublisherMsg;
use crate::region::parts::{HasAsTable, HasHome, HasRegistry};
use crate::replication::Change;
use crate::service::{Error, Result};
use svc_store::{cf, keys};

fn collection(name: &str) -> Result<RecordType> {
    RecordType::from_name(name).filter(|t| t.is_collection()).ok_or_else(|| {
        Error::detail(Code::RequestInvalid, "the record type is products, business_files, events, jobs or updates")
    })
}

fn declared(record_type: RecordType, expectation: Option<FreshnessExpectation>) -> Value {
    json!({"record_type": record_type.name(), "freshness_expectation": expectation})
}

/// `PUT` with a body declares (`{"cadence": …}`); `DELETE` (no body)
/// withdraws the declaration, and rows carry no member again.
pub async fn declare<R>(state: &R, caller: &BusinessCaller, type_name: &str, clear: bool) -> Result<Value>
where
    R: HasRegistry + HasHome + HasAsTable,
{
    let record_type = collection(type_name)?;
    writing_mandate(state, record_type, caller)?;
    let key = keys::freshness(&caller.key.business_uuid, record_type.name());
    let mut change = Change::new();
    let expectation = if clear {
        change.delete(cf::FRESHNESS, &key);
        None
    } else {
        let expectation = FreshnessExpectation::parse(&caller.body).map_err(|e| {
            Error::detail(
                Code::RequestInvalid,
                format!(
                    "the body is {{\"cadence\": hourly|daily|weekly|monthly|quarterly|yearly}} or \
                     {{\"cadence\": \"interval\", \"interval_hours\": 1 or more}}: {e}"
                ),
            )
        })?;
        // As JSON: postcard cannot read back an internally tagged enum.
        change.put(cf::FRESHNESS, &key, &serde_json::to_string(&expectation).map_err(Error::internal)?);
        Some(expectation)
    };
    let now = caller.now;
    state.home()?.publisher.call(|reply| PublisherMsg::Apply { change, now, reply }).await??;
    Ok(declared(record_type, expectation))
}

/// Every declaration of the business.
pub fn list(state: &impl HasRegistry, caller: &BusinessCaller) -> Result<Value> {
    let declared: Vec<Value> = state
        .registry()
        .freshness_expectations(&caller.key.business_uuid)?
        .into_iter()
        .map(|(record_type, expectation)| declared(record_type, Some(expectation)))
        .collect();
    Ok(json!({"freshness_expectations": declared}))
}
