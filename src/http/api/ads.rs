//! The ad routes (retrieval 4.1, 4.2): bodies up to 64 KiB, signed like
//! every retrieval route. A confirmation whose token or receipt names
//! another region is sent on there before anything is checked or claimed,
//! so that region judges it against its own record.

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, RawQuery, Request, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use super::auth::retrieval_caller;
use super::body::read_limited;
use super::raw_json::json_response;
use svc_clock::monotonic;
use svc_node::region::Region;
use svc_node::service::ads::{confirm, images, pool};
use svc_node::service::{Result, ops};

pub fn routes() -> Router<Region> {
    Router::new()
        .route("/v1/ads/pool", post(|s, r| ad_route(s, r, Route::Pool)))
        .route("/v1/ads/render", post(|s, r| ad_route(s, r, Route::Render)))
        .route("/v1/ads/click", post(|s, r| ad_route(s, r, Route::Click)))
        .route("/v1/ads/images/{sha256}", get(image))
}

#[derive(serde::Deserialize)]
struct ImageLink {
    expires: i64,
    sig: String,
}

/// An ad image through its signed link: cached by the browser only as long
/// as the link is good, never sniffed as another type.
async fn image(State(state): State<Region>, Path(sha256): Path<String>, RawQuery(query): RawQuery) -> Result<Response> {
    let link: ImageLink = serde_urlencoded::from_str(query.as_deref().unwrap_or_default()).map_err(|_| {
        svc_node::service::Error::detail(svc_core::problem::Code::RequestInvalid, "an image link has expires and sig")
    })?;
    let image = images::image(&state, &sha256, link.expires, &link.sig)?;
    let left = (link.expires - state.clock.now().0.div_euclid(1000)).max(0);
    Ok((
        [
            (header::CONTENT_TYPE, image.content_type),
            (header::CACHE_CONTROL, format!("private, max-age={left}")),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff".to_owned()),
        ],
        image.bytes,
    )
        .into_response())
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Route {
    Pool,
    Render,
    Click,
}

async fn ad_route(State(state): State<Region>, request: Request, route: Route) -> Response {
    answer(&state, request, route).await.unwrap_or_else(IntoResponse::into_response)
}

async fn answer(state: &Region, request: Request, route: Route) -> Result<Response> {
    let (arrived, now) = (monotonic(), state.clock.now());
    let (mut parts, body) = request.into_parts();
    let body = read_limited(&parts.headers, body, svc_core::ads::MAX_BODY, now).await?;
    if route != Route::Pool
        && let Some(region) = confirm::serving_region(&body)
        && region != state.config.region
    {
        let peer = crate::forwarded::peer(&parts.extensions);
        crate::forwarded::forward_for(&mut parts.headers, peer);
        return ops::forward_to_peer(state, &region, Request::from_parts(parts, Body::from(body))).await;
    }
    let caller = retrieval_caller(state, &parts, body, now, arrived).await?;
    let idempotency_key =
        || confirm::idempotency_key(parts.headers.get("idempotency-key").and_then(|v| v.to_str().ok()));
    let body = match route {
        Route::Pool => pool::pool(state, &caller).await?.body,
        Route::Render => confirm::render(state, &caller, idempotency_key()?).await?,
        Route::Click => confirm::click(state, &caller, idempotency_key()?).await?,
    };
    Ok(json_response(body))
}
