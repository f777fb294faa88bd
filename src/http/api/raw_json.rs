//! JSON text answered as it was written (see `service::raw_json`).

/// A `200 application/json` answer of JSON text.
pub fn json_response(body: Vec<u8>) -> axum::response::Response {
    use axum::http::{HeaderValue, header};
    use axum::response::IntoResponse;
    let mut response = (axum::http::StatusCode::OK, body).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}
