//! Signed searches (retrieval 2.2–2.4): judged whole, run over the index
//! with the caller's group excluded inside the query, answered with rows
//! exactly as projected plus their serve-time members.

use std::collections::HashMap;
use std::time::Duration;

use svc_core::ids::RecordType;
use svc_core::problem::Problem;
use svc_core::receipt::Receipt;
use svc_core::search::PaidRows;
use svc_core::search::serve::{self, ServeTime};

use super::Bills;
use super::{Answer, Caller, Served, admit, deliver};
use crate::region::ServeTimes;
use crate::region::parts::{HasIndex, HasRegistry, HasServeTimes, HasSponsorships, HasStore};
use crate::region::sponsorships::{paid_rows, sponsored};
use crate::service::raw_json::RawObject;
use crate::service::{Error, Result};
use svc_clock::random;
use svc_store::model::UsageKind;

/// A search of one collection (`typed`), or of the one its body names.
pub async fn search<R>(state: &R, caller: &Caller, typed: Option<RecordType>) -> Result<Answer>
where
    R: Bills + HasStore + HasRegistry + HasIndex + HasServeTimes + HasSponsorships,
{
    let (now, arrived) = (caller.now, caller.arrived);
    let query = svc_core::search::judge(&caller.body, typed)
        .map_err(|refusal| Error::from(Problem::new(refusal.code).detail(refusal.detail)))?;
    let held = admit(state, caller, now).await?;
    let deadline = arrived + Duration::from_millis(state.config().search_budget_ms);
    let seq = ServeTimes::seq(state.store());
    let placed = state.sponsorships().at(state, seq)?;
    // `sponsored` is answered from the campaigns that mark rows, so the
    // filter and the marker cannot disagree.
    let (query, paid) = svc_core::search::split_paid(query);
    let within = paid_rows(&placed, paid, &query.country);
    // On this worker: a search takes a fraction of a millisecond and stops
    // at its budget. Handed to a blocking thread, it cost more in hand-offs,
    // and the OS time-sliced that thread against the workers (measured).
    let hits = state.index().search_within(&query, &caller.key.group_id, &within, deadline).map_err(Error::internal)?;

    let mut serve_times: HashMap<String, ServeTime> = HashMap::new();
    let mut rows: Vec<Vec<u8>> = Vec::with_capacity(hits.rows.len());
    let mut entries = Vec::with_capacity(hits.rows.len());
    for hit in &hits.rows {
        // Rows go out as the projection wrote them: read only their ids.
        let ids = serve::row_ids(&hit.ids).ok_or_else(|| Error::internal("an indexed row's ids do not read"))?;
        let marked = sponsored(&placed, &ids.record_id, &query.country);
        // The index matched paid rows by a hash of their ids; a collision is
        // not served as what the filter asked for.
        if (paid == PaidRows::Only && !marked) || (paid == PaidRows::Never && marked) {
            continue;
        }
        let at = match serve_times.get(ids.business_uuid.as_ref()) {
            Some(at) => *at,
            None => {
                let at = state.serve_times().of(state.registry(), seq, &ids.business_uuid, query.collection, now)?;
                serve_times.insert(ids.business_uuid.clone().into_owned(), at);
                at
            }
        };
        // A paid row is marked outside its signature, where it stands.
        let at = ServeTime { sponsored: marked, ..at };
        entries.push(serve::receipt_row_of(&ids, &at));
        rows.push(
            serve::serve_row_text(&hit.row, &at).ok_or_else(|| Error::internal("an indexed row is not an object"))?,
        );
    }
    let retrieval_id = svc_core::ids::retrieval_id(&random());
    let receipt = Receipt {
        retrieval_id: retrieval_id.clone(),
        served_at: now.to_rfc3339_millis(),
        region: state.config().region.clone(),
        request_hash: caller.request_hash(),
        country: Some(query.country.clone()),
        rows: entries,
        key_id: String::new(),
        caller_key_id: Some(caller.key.key_id.clone()),
        sandbox: state.config().environment.is_sandbox(),
    };
    let served = Served {
        kind: UsageKind::Search,
        billable: !rows.is_empty(),
        cost: svc_core::limits::search_cost(&query, rows.len()),
        country: Some(query.country.clone()),
        businesses: serve_times.into_keys().collect(),
    };
    let envelope = deliver(state, caller, held, receipt, served, now).await?;
    let mut body = RawObject::new();
    body.value("retrieval_id", &retrieval_id)?;
    body.value("collection", &query.collection.name())?;
    body.value("country", &query.country)?;
    body.raw_array("rows", rows.iter().map(Vec::as_slice));
    body.raw("receipt", &envelope);
    if hits.partial {
        body.value("partial", &true)?;
    }
    Ok(Answer { retrieval_id, body: body.close() })
}
