//! A read region's fallback route: every request it does not serve itself
//! is handed to home (`service::ops::forward_to_home`).

use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};

use svc_node::region::Region;
use svc_node::service::ops;

pub async fn to_home(State(state): State<Region>, mut request: Request) -> Response {
    // Home's internal routes are for regions, over their own link: never a
    // way to reach home through a region's public port.
    if request.uri().path().starts_with("/internal/") {
        return svc_node::service::Error::new(svc_core::problem::Code::NotFound).into_response();
    }
    // Home reads the caller's address from here when it trusts this region.
    let peer = crate::forwarded::peer(request.extensions());
    crate::forwarded::forward_for(request.headers_mut(), peer);
    svc_node::trace::propagate(request.headers_mut());
    ops::forward_to_home(&state, request).await.into_response()
}
