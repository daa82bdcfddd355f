use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "trc", version, about = "Model checker for the Linux TCP sender's loss recovery")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Drive the real kernel with packetdrill-format scripts.
    #[command(subcommand)]
    Kernel(trc_kernel::KernelCommand),
}

fn main() {
    let cli = Cli::parse();
    let code = match cli.cmd {
        Cmd::Kernel(k) => trc_kernel::main(k),
    };
    std::process::exit(code);
}
