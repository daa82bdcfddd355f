//! Prints the path of packetdrill built by testkit from ../shared/vendor (`--tun-capture`: the
//! variant for kernels without packet sockets), for scripts such as vm/mutants/kernel-bugs.sh.
fn main() {
    let tun = std::env::args().any(|a| a == "--tun-capture");
    let r = if tun {
        trc_testkit::packetdrill_binary_tun_capture()
    } else {
        trc_testkit::packetdrill_binary()
    };
    match r {
        Ok(p) => println!("{}", p.display()),
        Err(e) => {
            eprintln!("packetdrill-path: {e}");
            std::process::exit(4);
        }
    }
}
