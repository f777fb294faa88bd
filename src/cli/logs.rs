//! The process's log: lines on stderr (around a progress line, if one is
//! shown), filtered by `SVC_LOG`; one JSON object a line when stderr is not
//! a terminal (systemd, Docker, CI) or with `SVC_LOG_FORMAT=json`, text at
//! a terminal or with `SVC_LOG_FORMAT=text`. A line written while a
//! request is served carries the request's span: its `trace_id` and
//! `span_id` (`svc_node::trace`).

use tracing::Subscriber;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;

/// Whether lines are JSON, from the environment and stderr.
pub fn json_wanted() -> bool {
    match std::env::var("SVC_LOG_FORMAT").as_deref() {
        Ok("json") => true,
        Ok("text") => false,
        _ => std::env::var_os("SVC_LOG_JSON").is_some() || !std::io::IsTerminal::is_terminal(&std::io::stderr()),
    }
}

/// JSON lines to `writer`, each with the current span's fields.
pub fn json<W>(filter: EnvFilter, writer: W) -> impl Subscriber + Send + Sync
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    tracing_subscriber::fmt()
        .json()
        .with_current_span(true)
        .with_span_list(false)
        .with_env_filter(filter)
        .with_writer(writer)
        .finish()
}

/// Installs the process's log.
pub fn init() {
    let filter = EnvFilter::try_from_env("SVC_LOG").unwrap_or_else(|_| "info".into());
    let writer = crate::commands::progress::Stderr;
    if json_wanted() {
        tracing::subscriber::set_global_default(json(filter, writer)).ok();
    } else {
        tracing_subscriber::fmt().with_env_filter(filter).with_writer(writer).init();
    }
}
