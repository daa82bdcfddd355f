use stateright::Model;
use trc_model::profile::Profile;

fn load(n: &str) -> Profile {
    Profile::by_name(n).unwrap_or_else(|| {
        let f = format!("../vm/mutants/{n}.toml");
        trc_model::profile::parse_profile_file(&std::fs::read_to_string(&f).unwrap(), &f).unwrap()
    })
}

#[test]
fn scan_random() {
    let base = Profile::linux_6_18();
    let g = trc_diff::GenOptions::default();
    let targets = ["linux-3.14-retrans-reset", "linux-6.6", "linux-6.6-packet-delayed", "linux-6.6-stamp-cleanup", "pre-0ec986ed7bab", "pre-d9157f6806d1", "pre-1236f22fbae1", "pre-8b8a321ff72c", "linux-6.15"];
    let n: usize = std::env::var("N").ok().and_then(|v| v.parse().ok()).unwrap_or(200);
    for t in targets {
        let p = load(t);
        let mut hits = Vec::new();
        for i in 0..n {
            let sc = trc_diff::generate(&base, 7, i, &g);
            let mb = sc.model(&base);
            let mp = sc.model(&p);
            let (mut sb, mut sp) = (mb.init_states().swap_remove(0), mp.init_states().swap_remove(0));
            for (k, a) in sc.actions.iter().enumerate() {
                let nb = mb.next_state(&sb, *a).unwrap();
                let Some(np) = mp.next_state(&sp, *a) else { hits.push((i, k, "invalid")); break };
                let ob = (nb.sender.cwnd, nb.sender.ssthresh, nb.sender.ca_state as u8, nb.flight.len());
                let op = (np.sender.cwnd, np.sender.ssthresh, np.sender.ca_state as u8, np.flight.len());
                if ob != op { hits.push((i, k, "state")); break }
                sb = nb; sp = np;
            }
        }
        println!("{t}: {} of {n}: {:?}", hits.len(), hits.iter().take(6).collect::<Vec<_>>());
    }
}
