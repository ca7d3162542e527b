//! `warpscope`: the command-line front end. Parses arguments and runs one subcommand; with no
//! arguments it simulates a built-in kernel and prints the report.

mod cli;

use clap::Parser;

fn main() {
    let args = cli::Cli::parse();
    if let Err(e) = cli::run(args) {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}
