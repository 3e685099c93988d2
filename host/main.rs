//! `rustile`: the command-line front end. The grammar, its checks and the commands' bodies are
//! in [`rustile::cli`]; `rustile --help` lists the commands, `rustile <command> --help` their
//! options. Usage errors exit with 2, failures with 1.

use std::process::ExitCode;

use rustile::cli::{self, Cli, Command};

fn main() -> ExitCode {
    // Every argument is parsed and checked here, before any command opens the GPU.
    let cli = Cli::parse_checked();
    let result = match &cli.command {
        None => cli::suite::main_job(&cli::suite::RunArgs::default()),
        Some(Command::Run(a)) => cli::suite::main_job(a),
        Some(Command::Info(a)) => cli::suite::info(a),
        Some(Command::Validate(a)) => cli::suite::validate(a),
        Some(Command::Analyze(a)) => cli::suite::analyze(a),
        Some(Command::Fuzz(a)) => cli::fuzz::run(a),
        Some(Command::Bench(b)) => cli::bench::run(b),
        Some(Command::Compare(c)) => cli::bench::compare(c),
        Some(Command::Hgemm(h)) => rustile::hgemm::cli::main(h),
        Some(Command::PtxReport) => cli::suite::ptx_report(true),
        Some(Command::Report(a)) => rustile::report::run(a),
        Some(Command::Occupancy(a)) => rustile::occupancy::run(a),
        Some(Command::Orch(o)) => rustile::orch::cli::run(o),
        Some(Command::Family(f)) => f.run(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rustile: error: {e}");
            if cli::is_no_gpu(&e) {
                eprintln!("{}", cli::WITHOUT_GPU);
            }
            ExitCode::FAILURE
        }
    }
}
