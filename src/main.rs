use clap::Parser;

fn main() {
    svc::logs::init();
    let cli = svc::cli::Cli::parse();
    std::process::exit(svc::cli::run(cli));
}
