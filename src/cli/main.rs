use clap::Parser;

fn main() {
    svc::logs::init();
    let cli = svc::commands::Cli::parse();
    std::process::exit(svc::commands::run(cli));
}
