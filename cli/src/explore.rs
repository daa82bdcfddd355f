//! `trc explore`: stateright's Explorer (its web UI and JSON API) on 127.0.0.1, on the model as
//! [`ExploreModel`] shows it (readable steps).

use crate::exit;
use clap::Args;
use stateright::{Checker, Model};
use trc_model::model::TcpModel;
use trc_viz::explorer::{ExploreModel, FORWARD};

#[derive(Args, Debug)]
pub struct ExploreArgs {
    #[command(flatten)]
    pub model: crate::args::ModelArgs,
    /// TCP port on 127.0.0.1.
    #[arg(long, default_value_t = 3000)]
    pub port: u16,
}

pub fn run_explore(a: ExploreArgs) -> i32 {
    let (cfg, profile) = match a.model.load() {
        Ok(x) => x,
        Err(e) => return exit::usage_error(&e),
    };
    let specs = match trc_properties::select(&a.model.properties) {
        Ok(s) => s,
        Err(e) => return exit::usage_error(&e),
    };
    if specs.len() > FORWARD.len() {
        return exit::usage_error(&format!(
            "trc explore supports at most {} properties at once",
            FORWARD.len()
        ));
    }
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], a.port));
    // stateright's server panics if it cannot bind: find out first, and learn the port the
    // system chose for `--port 0` (the URL printed is the one served).
    let addr = match std::net::TcpListener::bind(addr).and_then(|l| l.local_addr()) {
        Ok(bound) => bound,
        Err(e) => return exit::usage_error(&format!("cannot listen on {addr}: {e}")),
    };
    let model = ExploreModel(
        TcpModel::new(cfg, profile).with_properties(trc_properties::properties(&specs)),
    );
    println!(
        "trc explore: profile {} — Explorer on http://{addr}/ (Ctrl-C to stop)",
        model.0.profile.name
    );
    // Never returns in practice: stateright joins its server thread.
    let checker = model.checker().serve(addr);
    let _ = checker.unique_state_count();
    0
}
