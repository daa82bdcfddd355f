//! `trc graph`: files, exit codes, and a browser test of the HTML page (headless Chromium, as
//! installed by `.ci/run` from Debian's `chromium` package). Without Chromium the browser test
//! is skipped with a message, except under CI (`CI` set), where it fails.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use trc_testkit::trc;

fn tmpdir(name: &str) -> PathBuf {
    trc_testkit::fresh_dir(
        std::env::temp_dir().join(format!("trc-graph-test-{}-{name}", std::process::id())),
    )
}

/// The seed bug's graph: `I1-linux-6.15.{dot,html}` in a fresh directory.
fn seed_graph(name: &str) -> (PathBuf, String) {
    let dir = tmpdir(name);
    let (code, out, err) = trc!(&[
        "graph",
        "--profile",
        "linux-6.15",
        "--no-sack",
        "--property",
        "I1",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("shortest counterexample, 8 events"), "{out}");
    let html = std::fs::read_to_string(dir.join("I1-linux-6.15.html")).unwrap();
    (dir, html)
}

/// The JSON the page embeds.
fn page_data(html: &str) -> serde_json::Value {
    let start = html
        .find(r#"<script id="trc-data" type="application/json">"#)
        .expect("data block")
        + r#"<script id="trc-data" type="application/json">"#.len();
    let end = start + html[start..].find("</script>").unwrap();
    serde_json::from_str(&html[start..end]).unwrap()
}

#[test]
fn seed_bug_graph_files() {
    let (dir, html) = seed_graph("files");
    let data = page_data(&html);
    let path = data["path"].as_array().unwrap();
    assert_eq!(path.len(), 9, "8 events → 9 states");
    assert_eq!(data["profile"], "linux-6.15");
    // The last path state violates I1; every state carries all its fields.
    let last = &data["nodes"][8];
    assert!(
        last["violates"][0].as_str().unwrap().starts_with("I1:"),
        "{last}"
    );
    assert!(
        last["state"]["sender"]["segs"].is_array()
            && last["state"]["rcv"].is_object()
            && last["state"]["budget"].is_object()
    );
    // Neighbours are drawn and deduplicated (distinct fingerprints).
    let nodes = data["nodes"].as_array().unwrap();
    assert!(nodes.len() > path.len(), "depth 1 adds neighbours");
    let mut fps: Vec<&str> = nodes
        .iter()
        .map(|n| n["fingerprint"].as_str().unwrap())
        .collect();
    fps.sort();
    fps.dedup();
    assert_eq!(fps.len(), nodes.len());
    assert_self_contained(&html);
    assert_eq!(html.matches("class=\"node ").count(), nodes.len());
    assert_eq!(html.matches("<line class=\"path-edge\"").count(), 8);
    let dot = std::fs::read_to_string(dir.join("I1-linux-6.15.dot")).unwrap();
    assert!(
        dot.starts_with("// I1") && dot.contains("digraph trc {"),
        "{dot}"
    );
    assert_eq!(
        dot.matches("penwidth=2.5").count(),
        8,
        "8 path edges highlighted"
    );
    assert!(dot.contains("peripheries=2"), "violating state marked");
    // No temporary file left behind.
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn no_violation_draws_the_initial_states_and_bad_input_exits_2() {
    let dir = tmpdir("none");
    let (code, out, _) = trc!(&[
        "graph",
        "--profile",
        "linux-6.18",
        "--no-sack",
        "--property",
        "I1",
        "--segments",
        "4",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("no property violated"), "{out}");
    let html = std::fs::read_to_string(dir.join("init-linux-6.18.html")).unwrap();
    assert_eq!(page_data(&html)["path"].as_array().unwrap().len(), 1);
    assert!(dir.join("init-linux-6.18.dot").exists());
    let file = dir.join("init-linux-6.18.dot");
    let (code, _, err) = trc!(&["graph", "--out", file.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("not a directory"), "{err}");
    let (code, _, err) = trc!(&["graph", "--property", "I99", "--out", dir.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    let (code, _, _) = trc!(&[
        "graph",
        "--profile",
        "linux-0.1",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    let (code, _, _) = trc!(&["graph"]);
    assert_eq!(code, 2, "--out is required");
    let _ = std::fs::remove_dir_all(dir);
}

fn find_chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TRC_CHROMIUM") {
        return Some(p.into());
    }
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser", "google-chrome"] {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// `chromium --headless --dump-dom URL`: the DOM after the page's scripts ran.
fn dump_dom(chromium: &Path, url: &str, profile_dir: &Path) -> String {
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--virtual-time-budget=3000",
        ])
        .arg(format!("--user-data-dir={}", profile_dir.display()))
        .arg("--dump-dom")
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chromium");
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut s).unwrap();
        s
    });
    let t0 = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if t0.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within 90 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    reader.join().unwrap()
}

/// The text of the `<td>` following `data-field="FIELD"` in the dumped DOM.
fn field(dom: &str, name: &str) -> Option<String> {
    let i = dom.find(&format!("data-field=\"{name}\""))?;
    let rest = &dom[i..];
    let a = rest.find("<td>")? + 4;
    let b = a + rest[a..].find("</td>")?;
    Some(rest[a..b].to_string())
}

#[test]
fn browser_renders_path_and_state_details() {
    let Some(chromium) = find_chromium() else {
        if std::env::var_os("CI").is_some() {
            panic!(
                "CI is set but chromium is not installed (.ci/run installs Debian's `chromium`)"
            );
        }
        eprintln!("SKIPPED browser_renders_path_and_state_details: chromium not found (apt-get install -y chromium, or set TRC_CHROMIUM)");
        return;
    };
    let (dir, html) = seed_graph("browser");
    let data = page_data(&html);
    let page = dir.join("I1-linux-6.15.html");
    let profile = dir.join("chromium-profile");

    // Select path step 3 through the URL, as a click would.
    let url = format!("file://{}#select=3", page.display());
    let dom = dump_dom(&chromium, &url, &profile);
    assert!(
        dom.contains("data-ready=\"1\""),
        "the page's script did not finish:\n{}",
        &dom[..dom.len().min(2000)]
    );
    let s3 = &data["nodes"][3]["state"];
    assert!(
        dom.contains("id=\"details-title\">step 3 — state #3<"),
        "details title"
    );
    for (f, v) in [
        ("sender.cwnd", s3["sender"]["cwnd"].to_string()),
        ("sender.ssthresh", s3["sender"]["ssthresh"].to_string()),
        ("sender.snd_una", s3["sender"]["snd_una"].to_string()),
        ("sender.high_seq", s3["sender"]["high_seq"].to_string()),
        (
            "sender.ca_state",
            s3["sender"]["ca_state"].as_str().unwrap().to_string(),
        ),
        ("now", s3["now"].to_string()),
        ("budget.losses", s3["budget"]["losses"].to_string()),
    ] {
        assert_eq!(
            field(&dom, f).as_deref(),
            Some(v.as_str()),
            "field {f} in the details panel"
        );
    }
    // The path: 9 steps listed, step 3 current, path states and edges drawn, state 3 highlighted.
    assert_eq!(
        dom.matches("<li data-step=").count(),
        9,
        "9 path steps listed"
    );
    assert!(
        dom.contains("<li data-step=\"3\" class=\"current\">"),
        "step 3 is current in the list"
    );
    assert_eq!(
        dom.matches("class=\"node ").count(),
        data["nodes"].as_array().unwrap().len()
    );
    assert!(
        dom.contains("id=\"n3\"") && dom.contains("node ca-") && dom.contains(" path current\""),
        "state 3 highlighted as current"
    );
    assert!(dom.contains("id=\"step-label\">step 3 / 8<"), "step label");

    // The violating last step, through `#step=`.
    let dom = dump_dom(
        &chromium,
        &format!("file://{}#step=8", page.display()),
        &profile,
    );
    assert!(dom.contains("id=\"details-title\">step 8 — state #8<"));
    assert!(
        dom.contains("✗ violates I1: no undo after a real loss"),
        "violation shown"
    );
    assert_eq!(
        field(&dom, "sender.cwnd").unwrap(),
        data["nodes"][8]["state"]["sender"]["cwnd"].to_string()
    );

    // A neighbour (not on the path).
    let nbr = data["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["path_index"].is_null())
        .unwrap();
    let id = nbr["id"].as_u64().unwrap();
    let dom = dump_dom(
        &chromium,
        &format!("file://{}#select={id}", page.display()),
        &profile,
    );
    assert!(
        dom.contains(&format!("state #{id}<")) && dom.contains("neighbour (+1)"),
        "neighbour details"
    );
    assert!(dom.contains(" nbr selected\""), "neighbour highlighted");
    let _ = std::fs::remove_dir_all(dir);
}

/// `chromium --headless --screenshot=FILE URL`.
fn screenshot(chromium: &Path, url: &str, profile_dir: &Path, file: &Path) {
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--hide-scrollbars",
            "--window-size=1700,1100",
            "--virtual-time-budget=3000",
        ])
        .arg(format!("--user-data-dir={}", profile_dir.display()))
        .arg(format!("--screenshot={}", file.display()))
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("start chromium");
    assert!(out.success(), "chromium --screenshot failed");
}

/// Asserts the page is self-contained: it references no external resource.
fn assert_self_contained(html: &str) {
    if let Some(bad) = trc_viz::external_reference(html) {
        panic!("page references an external resource: {bad}");
    }
}

/// A screenshot of `url` in `shot` that is a PNG with something drawn; `what` names it.
fn assert_screenshot(chromium: &Path, url: &str, profile: &Path, shot: &Path, what: &str) {
    screenshot(chromium, url, profile, shot);
    let png = std::fs::read(shot).unwrap();
    assert!(
        png.len() > 10_000 && png.starts_with(b"\x89PNG"),
        "screenshot {}",
        shot.display()
    );
    eprintln!("screenshot of {what}: {}", shot.display());
}

/// The DOM of a copy of the page (`dir/click.html`) with a script that clicks the timeline's
/// point of step 3 once the page is ready.
fn dom_after_clicking_step_3(chromium: &Path, html: &str, dir: &Path, profile: &Path) -> String {
    let click = dir.join("click.html");
    let clicker = "<script>document.querySelector('#timeline .tl-cwnd[data-pstep=\"3\"]').dispatchEvent(new MouseEvent('click', {bubbles: true}));</script></body>";
    std::fs::write(&click, html.replacen("</body>", clicker, 1)).unwrap();
    dump_dom(chromium, &format!("file://{}", click.display()), profile)
}

/// The element tags with `class="CLASS"` (exactly) in the dumped DOM.
fn count_class(dom: &str, class: &str) -> usize {
    dom.matches(&format!("class=\"{class}\" ")).count()
}

#[test]
fn browser_draws_the_seed_bug_pictures_and_clicks_select_steps() {
    let Some(chromium) = find_chromium() else {
        if std::env::var_os("CI").is_some() {
            panic!(
                "CI is set but chromium is not installed (.ci/run installs Debian's `chromium`)"
            );
        }
        eprintln!("SKIPPED browser_draws_the_seed_bug_pictures_and_clicks_select_steps: chromium not found (apt-get install -y chromium, or set TRC_CHROMIUM)");
        return;
    };
    // The page `trc check --out` writes beside the script is the same page as `trc graph`'s.
    let dir = tmpdir("pictures");
    let (code, _, err) = trc!(&[
        "check",
        "--profile",
        "linux-6.15",
        "--no-sack",
        "--property",
        "I1",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains(".html"), "{err}");
    let page = dir.join("I1-linux-6.15.html");
    assert!(dir.join("I1-linux-6.15.pkt").is_file() && page.is_file());
    let html = std::fs::read_to_string(&page).unwrap();
    assert_self_contained(&html);
    let profile = dir.join("chromium-profile");
    let shot = dir.join("seed-bug-pictures.png");
    assert_screenshot(
        &chromium,
        &format!("file://{}#step=8", page.display()),
        &profile,
        &shot,
        "the seed bug's counterexample page",
    );

    let dom = dump_dom(
        &chromium,
        &format!("file://{}#step=8", page.display()),
        &profile,
    );
    assert!(dom.contains("data-ready=\"1\""));
    // What the acceptance asks to see: the drop of seg 1, the RTO, the retransmission of seg 1,
    // the undo at the violating step, and cwnd back to 5 there.
    assert!(
        dom.contains("class=\"tsd-drop\" data-pstep=\"1\" data-seg=\"1\""),
        "drop of seg 1"
    );
    assert!(
        dom.contains("class=\"tsd-timer\" data-pstep=\"2\" data-kind=\"rto\""),
        "RTO"
    );
    assert!(
        dom.contains("class=\"tsd-tx rtx\" data-pstep=\"2\" data-seg=\"1\""),
        "retransmission of seg 1"
    );
    assert!(
        dom.contains("class=\"tsd-undo\" data-pstep=\"8\""),
        "undo at step 8"
    );
    assert!(
        dom.contains("class=\"tl-cwnd\" data-pstep=\"7\" data-value=\"3\"")
            && dom.contains("class=\"tl-cwnd\" data-pstep=\"8\" data-value=\"5\""),
        "cwnd 3 → 5"
    );
    assert!(
        dom.contains("class=\"pic-viol\" data-pstep=\"8\""),
        "violating step marked"
    );
    // Counts: 6 original transmissions + 1 retransmission, 1 drop, 6 ACKs, 1 timer; a cwnd
    // point, an ssthresh point, a ca_state cell and a column per step (9).
    assert_eq!(count_class(&dom, "tsd-tx"), 6);
    assert_eq!(count_class(&dom, "tsd-tx rtx"), 1);
    assert_eq!(count_class(&dom, "tsd-drop"), 1);
    assert_eq!(count_class(&dom, "tsd-ack"), 6);
    assert_eq!(count_class(&dom, "tsd-timer"), 1);
    assert_eq!(count_class(&dom, "tl-cwnd"), 9);
    assert_eq!(count_class(&dom, "tl-ssthresh"), 9);
    assert_eq!(count_class(&dom, "tl-ca"), 9);
    assert_eq!(
        dom.matches("class=\"pic-col").count(),
        18,
        "9 columns in each picture"
    );
    // The current step's columns are shaded.
    assert_eq!(
        dom.matches("class=\"pic-col cur\" data-pstep=\"8\"")
            .count(),
        2,
        "step 8 shaded in both pictures"
    );

    // A click on the timeline's point of step 3 selects step 3 in the state view: a copy of the
    // page with a script that clicks it once the page is ready.
    let dom = dom_after_clicking_step_3(&chromium, &html, &dir, &profile);
    assert!(
        dom.contains("id=\"details-title\">step 3 — state #3<"),
        "the click selected step 3"
    );
    assert!(dom.contains("id=\"step-label\">step 3 / 8<"));
    assert_eq!(
        dom.matches("class=\"pic-col cur\" data-pstep=\"3\"")
            .count(),
        2
    );
}

/// The seed bug's kernel run as drawn: the write's flight of 5 (seg 1 dropped by the script), the
/// RTO and its retransmission of seg 1, four dupacks, the ACK of 5001 with seg 6 in answer, the ACK
/// of 6001: 8 columns (the model has a 9th, the drop, which a kernel run does not see apart).
fn assert_seed_run_drawn(dom: &str) {
    assert_eq!(count_class(dom, "tsd-tx"), 6, "6 originals");
    assert_eq!(count_class(dom, "tsd-tx rtx"), 1);
    assert!(
        dom.contains("class=\"tsd-tx rtx\" data-pstep=\"1\" data-seg=\"1:1001\""),
        "retransmission of seg 1 at the RTO"
    );
    assert!(
        dom.contains("class=\"tsd-drop\" data-pstep=\"0\" data-seg=\"1:1001\""),
        "the declared drop of seg 1"
    );
    assert_eq!(count_class(dom, "tsd-drop"), 1);
    assert!(
        dom.contains("class=\"tsd-timer\" data-pstep=\"1\" data-kind=\"rto\""),
        "RTO"
    );
    assert_eq!(count_class(dom, "tsd-timer"), 1);
    assert_eq!(count_class(dom, "tsd-ack"), 6);
    assert!(dom.contains("class=\"tsd-ack\" data-pstep=\"6\" data-ack=\"5001\""));
    assert!(
        dom.contains("class=\"tsd-tx\" data-pstep=\"6\" data-seg=\"5001:6001\""),
        "seg 6 answers the ACK of 5001"
    );
    assert_eq!(count_class(dom, "tl-cwnd"), 8);
    assert_eq!(count_class(dom, "tl-ca"), 8);
    assert_eq!(
        dom.matches("class=\"pic-col").count(),
        16,
        "8 columns in each picture"
    );
    assert!(
        dom.contains("class=\"tl-cwnd\" data-pstep=\"0\" data-value=\"5\"")
            && dom.contains("class=\"tl-cwnd\" data-pstep=\"1\" data-value=\"1\""),
        "cwnd 5, then 1 at the RTO"
    );
    assert!(dom.contains("class=\"tl-ca\" data-pstep=\"1\" data-state=\"Loss\""));
    assert_eq!(
        dom.matches("<tr data-step=").count(),
        8,
        "a table row per step"
    );
}

/// `trc kernel run --plot`: the seed bug's exported script (regressions/I1-linux-6.15-nosack)
/// on the running kernel, drawn from the run's trace by the counterexample page's renderer,
/// and F1's script, which the kernels here undo on (I1 violated from the kernel's behaviour).
/// Needs root, /dev/net/tun and Chromium; run it under the host-kernel lock.
#[test]
fn kernel_run_plot_draws_the_trace() {
    let why = trc_kernel::skip_reason().or_else(|| {
        find_chromium().is_none().then(|| {
            "chromium not found (apt-get install -y chromium, or set TRC_CHROMIUM)".to_string()
        })
    });
    if let Some(why) = why {
        if std::env::var_os("CI").is_some() && find_chromium().is_none() {
            panic!(
                "CI is set but chromium is not installed (.ci/run installs Debian's `chromium`)"
            );
        }
        eprintln!("SKIPPED kernel_run_plot_draws_the_trace: {why}");
        return;
    }
    let chromium = find_chromium().unwrap();
    let dir = tmpdir("kernel-plot");
    let page = dir.join("seed.html");
    let (code, out, err) = trc!(&[
        "kernel",
        "run",
        "counterexamples/regressions/I1-linux-6.15-nosack.pkt",
        "--plot",
        page.to_str().unwrap(),
    ]);
    // The script's asserts are linux-6.15's prediction: a kernel with d0fa59897e04 fails the last ones.
    assert!(code == 0 || code == 1, "exit {code}\n{out}\n{err}");
    assert!(err.contains("pictures in"), "{err}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert_self_contained(&html);
    let profile = dir.join("chromium-profile");
    let shot = dir.join("seed-bug-kernel-run.png");
    assert_screenshot(
        &chromium,
        &format!("file://{}", page.display()),
        &profile,
        &shot,
        "the seed bug's kernel run",
    );
    let dom = dump_dom(&chromium, &format!("file://{}", page.display()), &profile);
    assert!(
        dom.contains("data-ready=\"1\""),
        "the page's script did not finish"
    );
    assert_seed_run_drawn(&dom);
    // A click on the timeline's point of step 3 selects row 3 and shades its columns.
    let dom = dom_after_clicking_step_3(&chromium, &html, &dir, &profile);
    assert!(
        dom.contains("<tr data-step=\"3\" class=\"cur\">"),
        "the click selected step 3"
    );
    assert_eq!(
        dom.matches("class=\"pic-col cur\" data-pstep=\"3\"")
            .count(),
        2
    );

    // F1 (findings/i1-eifel-undo-after-real-loss): the kernel undoes after a real loss, and the
    // kernel check's I1 monitor marks that step.
    let page = dir.join("f1.html");
    let (code, out, err) = trc!(&[
        "kernel",
        "run",
        "counterexamples/findings/i1-eifel-undo-after-real-loss.pkt",
        "--plot",
        page.to_str().unwrap(),
    ]);
    assert!(code == 0 || code == 1, "exit {code}\n{out}\n{err}");
    let dom = dump_dom(&chromium, &format!("file://{}", page.display()), &profile);
    assert_eq!(count_class(&dom, "tsd-undo"), 1, "one undo (TCPLossUndo)");
    let undo_step = dom
        .split("class=\"tsd-undo\" data-pstep=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_string();
    assert!(
        dom.contains(&format!("class=\"pic-viol\" data-pstep=\"{undo_step}\"")),
        "I1 marked at the undo (step {undo_step})"
    );
    assert!(dom.contains("✗ I1"));
    assert!(
        count_class(&dom, "tsd-tx rtx") >= 2 && count_class(&dom, "tsd-timer") >= 1,
        "fast retransmits and the RTO"
    );
    shot_of(&chromium, &page, &profile, &dir.join("f1-kernel-run.png"));

    // Usage: several scripts without --kernel is refused before anything runs.
    let (code, _, err) = trc!(&[
        "kernel",
        "run",
        "counterexamples/kernel/tlp.pkt",
        "counterexamples/kernel/fr-sack.pkt",
        "--plot",
        dir.join("x").to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("several scripts need --kernel"), "{err}");
}

fn shot_of(chromium: &Path, page: &Path, profile: &Path, file: &Path) {
    screenshot(
        chromium,
        &format!("file://{}", page.display()),
        profile,
        file,
    );
    eprintln!("screenshot: {}", file.display());
}
