use clap::Parser;

fn main() {
    // Logs go to stderr, around a progress line if one is shown;
    // `SVC_LOG_JSON=1` switches to one JSON object a line.
    let filter = tracing_subscriber::EnvFilter::try_from_env("SVC_LOG").unwrap_or_else(|_| "info".into());
    if std::env::var_os("SVC_LOG_JSON").is_some() {
        tracing_subscriber::fmt().json().with_env_filter(filter).with_writer(svc::cli::progress::Stderr).init();
    } else {
        tracing_subscriber::fmt().with_env_filter(filter).with_writer(svc::cli::progress::Stderr).init();
    }
    let cli = svc::cli::Cli::parse();
    std::process::exit(svc::cli::run(cli));
}
