//! A read region's fallback route: every request it does not serve itself
//! is handed to home (`service::ops::forward_to_home`).

use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};

use crate::region::Region;
use crate::service::ops;

pub async fn to_home(State(state): State<Region>, request: Request) -> Response {
    ops::forward_to_home(&state, request).await.into_response()
}
