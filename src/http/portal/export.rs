//! The account export as a download: the archive is written by the use
//! case on a blocking thread into a pipe whose other end is the response
//! body, so it streams whatever its size; a failure part-way aborts the
//! body rather than ending it as if whole.

use axum::body::Body;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use futures::StreamExt;

use super::PageResult;
use super::session::Person;
use svc_node::region::Region;
use svc_node::service::portal::export;

/// The pipe between the archive writer and the body.
const PIPE: usize = 64 * 1024;

pub async fn download(State(state): State<Region>, person: Person) -> PageResult {
    let one_at_a_time = export::begin(&state, &person.0)?;
    let name = export::file_name(&state, &person.0);
    let (reader, writer) = tokio::io::duplex(PIPE);
    let out = tokio_util::io::SyncIoBridge::new(writer);
    let signed = person.0.clone();
    let written = tokio::task::spawn_blocking(move || {
        let _held = one_at_a_time;
        export::write_archive(&state, &signed, out)
    });
    let failed = futures::stream::once(async move {
        match written.await {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(std::io::Error::other(e.to_string())),
            Err(e) => Some(std::io::Error::other(e.to_string())),
        }
    })
    .filter_map(|failure| async move { failure.map(Err) });
    let body = Body::from_stream(tokio_util::io::ReaderStream::new(reader).chain(failed));
    let disposition = format!("attachment; filename=\"{name}\"");
    Ok(([(header::CONTENT_TYPE, "application/x-tar".to_owned()), (header::CONTENT_DISPOSITION, disposition)], body)
        .into_response())
}
