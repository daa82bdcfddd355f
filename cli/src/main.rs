//! `trc`: the command-line front end: argument parsing ([`args`] and each command's module),
//! printing, and exit codes ([`exit`]). The work is in the libraries (`trc-check`,
//! `trc-kcheck`, `trc-diff`, `trc-trace`, `trc-viz`, ...).

mod args;
mod bench;
mod check;
mod diff;
mod exit;
mod explore;
mod graph;
mod kernel;
mod merge;
mod progress;
mod replay;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "trc",
    version,
    about = "Model checker for the Linux TCP sender's loss recovery"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Explore every interleaving within the bounds and check the invariants.
    Check(check::CheckArgs),
    /// Check every profile against every property and print the table.
    Matrix(check::MatrixArgs),
    /// Compare stateright's BFS with our engine on the model (states/s, memory).
    Bench(bench::BenchArgs),
    /// Draw the explored state graph around a counterexample (DOT + self-contained HTML).
    Graph(graph::GraphArgs),
    /// Serve stateright's Explorer on 127.0.0.1 for interactive stepping (never returns).
    Explore(explore::ExploreArgs),
    /// Replay a packetdrill script on the model, checking its outbound segments and asserts.
    Replay(replay::ReplayArgs),
    /// Differential testing: random scenarios of the model's environment on the real kernel, compared step by step.
    Diff(diff::DiffArgs),
    /// Combine the JSON outputs of `--shard I/N` runs into the report one run would print.
    Merge(merge::MergeArgs),
    /// List the built-in profiles.
    Profiles,
    /// List the properties.
    Properties,
    /// Drive the real kernel with packetdrill-format scripts.
    #[command(subcommand)]
    Kernel(kernel::KernelCommand),
}

/// Prints a JSON value, pretty, on stdout.
pub fn print_json(v: &serde_json::Value) {
    println!(
        "{}",
        serde_json::to_string_pretty(v).expect("a JSON value prints")
    );
}

fn main() {
    // As the VM's /init (pid 1), trc is the guest side of `trc kernel run --kernel`, whatever its arguments.
    if std::process::id() == 1 {
        std::process::exit(trc_vm::guest::main());
    }
    let cli = Cli::parse();
    let code = match cli.cmd {
        Cmd::Check(a) => check::run_check(a),
        Cmd::Matrix(a) => check::run_matrix(a),
        Cmd::Bench(a) => bench::run_bench(a),
        Cmd::Graph(a) => graph::run_graph(a),
        Cmd::Explore(a) => explore::run_explore(a),
        Cmd::Replay(a) => replay::run_replay(a),
        Cmd::Diff(a) => diff::run_diff(a),
        Cmd::Merge(a) => merge::run_merge(a),
        Cmd::Profiles => {
            for p in trc_model::Profile::builtin() {
                println!("{:<20} {}", p.name, p.description);
            }
            exit::HOLDS
        }
        Cmd::Properties => {
            for s in trc_properties::catalogue() {
                println!("{:<4} {}\n     guards: {}", s.id, s.statement, s.guards);
            }
            exit::HOLDS
        }
        Cmd::Kernel(k) => kernel::main(k),
    };
    #[cfg(feature = "mpi")]
    trc_check::mpi::finish();
    std::process::exit(code);
}
