//! The CI recipes of docs/guides/ci.md: the GitHub Actions workflow is valid YAML with the structure
//! Actions needs (jobs with steps, `needs` naming jobs, the shard matrix matching `SHARDS`),
//! and every `trc` subcommand and flag that it or the Slurm examples use exists (`trc SUB
//! --help` lists the flag).

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use yaml_rust2::{Yaml, YamlLoader};

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

fn read(rel: &str) -> String {
    std::fs::read_to_string(format!("{ROOT}/{rel}")).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Whether `before` ends with an MPI launcher and its options (`srun --mpi=pmix`, `mpirun -np 4`):
/// the command it starts comes next.
fn launched(before: &[String]) -> bool {
    let mut k = before.len();
    while k > 0 && before[k - 1].starts_with('-') {
        k -= 1;
    }
    // `mpirun -np 4`: an option's numeric value.
    if k > 1 && before[k - 1].chars().all(|c| c.is_ascii_digit()) && before[k - 2].starts_with('-')
    {
        k -= 2;
        while k > 0 && before[k - 1].starts_with('-') {
            k -= 1;
        }
    }
    k > 0 && matches!(before[k - 1].as_str(), "srun" | "mpirun" | "mpiexec")
}

/// `trc` invocations in shell text: (subcommand path, flags). A `trc` is a word that is `trc` or
/// ends in `/trc` at a command position (line start, after `|`, `;`, `&&`, `||`, `then`, `do`,
/// `)`, inside `--wrap "`, or after an MPI launcher: [`launched`]). `${{ ... }}` expressions and
/// line continuations are folded first.
fn trc_calls(text: &str) -> Vec<(Vec<String>, Vec<String>)> {
    let mut folded = String::new();
    let mut rest = text.replace("\\\n", " ");
    while let Some(i) = rest.find("${{") {
        folded.push_str(&rest[..i]);
        folded.push_str("EXPR");
        rest = rest[i..]
            .find("}}")
            .map(|j| rest[i + j + 2..].to_string())
            .unwrap_or_default();
    }
    folded.push_str(&rest);
    let mut calls = Vec::new();
    for line in folded.lines() {
        let line = line.trim();
        if line.starts_with('#') {
            continue;
        }
        let words: Vec<String> = line
            .split_whitespace()
            .map(|w| w.trim_matches('"').to_string())
            .collect();
        for (i, w) in words.iter().enumerate() {
            let is_trc = w == "trc" || w.ends_with("/trc");
            let at_command = i == 0
                || matches!(
                    words[i - 1].as_str(),
                    "|" | ";" | "&&" | "||" | "then" | "do" | ")" | "--wrap"
                )
                || words[i - 1].ends_with(')')
                || words[i - 1].ends_with(';')
                || launched(&words[..i]);
            if !is_trc || !at_command {
                continue;
            }
            let mut sub = Vec::new();
            let mut flags = Vec::new();
            for x in &words[i + 1..] {
                if matches!(x.as_str(), "|" | ";" | "&&" | "||" | ">" | ";;") || x.starts_with('>')
                {
                    break;
                }
                let ends = x.ends_with(';');
                let x = x.trim_end_matches(';');
                if let Some(f) = x.strip_prefix("--") {
                    flags.push(format!("--{}", f.split('=').next().unwrap()));
                } else if flags.is_empty()
                    && sub.len() < 2
                    && x.chars().all(|c| c.is_ascii_lowercase())
                    && !x.is_empty()
                {
                    // `kernel run`, `kernel fetch`: a second word only after `kernel`.
                    if sub.is_empty() || sub[0] == "kernel" {
                        sub.push(x.to_string());
                    }
                }
                if ends {
                    break;
                }
            }
            calls.push((sub, flags));
        }
    }
    calls
}

/// `trc SUB --help`, cached.
fn help(cache: &mut BTreeMap<Vec<String>, String>, sub: &[String]) -> String {
    cache
        .entry(sub.to_vec())
        .or_insert_with(|| {
            let out = Command::new(env!("CARGO_BIN_EXE_trc"))
                .args(sub)
                .arg("--help")
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "`trc {} --help` failed: {}",
                sub.join(" "),
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8_lossy(&out.stdout).into_owned()
        })
        .clone()
}

/// Every call's subcommand exists and lists each of its flags; returns the subcommands seen.
fn check_calls(what: &str, calls: &[(Vec<String>, Vec<String>)]) -> BTreeSet<String> {
    let mut cache = BTreeMap::new();
    let mut seen = BTreeSet::new();
    for (sub, flags) in calls {
        assert!(!sub.is_empty(), "{what}: a `trc` call without a subcommand");
        let h = help(&mut cache, sub);
        for f in flags {
            let listed = h
                .split(|c: char| c.is_whitespace() || c == ',' || c == '[' || c == ']')
                .any(|w| {
                    w == f || w.starts_with(&format!("{f}=")) || w.starts_with(&format!("{f}<"))
                });
            assert!(
                listed,
                "{what}: `trc {} {f}`: no such flag in `trc {} --help`:\n{h}",
                sub.join(" "),
                sub.join(" ")
            );
        }
        seen.insert(format!("{} {}", sub.join(" "), flags.join(" ")));
    }
    seen
}

#[test]
fn github_actions_workflow_is_valid_and_uses_existing_trc_commands() {
    let src = read("docs/examples/github-actions.yml");
    let docs = YamlLoader::load_from_str(&src)
        .expect("docs/examples/github-actions.yml is not valid YAML");
    assert_eq!(docs.len(), 1);
    let wf = &docs[0];
    assert!(wf["name"].as_str().is_some());
    assert!(!wf["on"].is_badvalue(), "no `on:` trigger");
    let jobs = wf["jobs"].as_hash().expect("jobs: a mapping");
    let names: BTreeSet<String> = jobs
        .keys()
        .map(|k| k.as_str().unwrap().to_string())
        .collect();
    let shards = wf["env"]["SHARDS"].as_i64().expect("env.SHARDS");
    let mut scripts = String::new();
    for (name, job) in jobs {
        let name = name.as_str().unwrap();
        assert!(
            job["runs-on"].as_str().is_some() || job["runs-on"].as_vec().is_some(),
            "{name}: no runs-on"
        );
        let needs: Vec<&str> = match &job["needs"] {
            Yaml::String(s) => vec![s.as_str()],
            Yaml::Array(a) => a.iter().map(|x| x.as_str().unwrap()).collect(),
            Yaml::BadValue => vec![],
            other => panic!("{name}: needs is {other:?}"),
        };
        for n in needs {
            assert!(names.contains(n), "{name} needs `{n}`, which is no job");
        }
        let steps = job["steps"]
            .as_vec()
            .unwrap_or_else(|| panic!("{name}: no steps"));
        assert!(!steps.is_empty());
        for s in steps {
            assert!(
                s["uses"].as_str().is_some() ^ s["run"].as_str().is_some(),
                "{name}: a step must have exactly one of uses/run: {s:?}"
            );
            if let Some(r) = s["run"].as_str() {
                scripts.push_str(r);
                scripts.push('\n');
            }
        }
        // A shard matrix that uses $SHARDS covers exactly 1..=SHARDS.
        if let Some(m) = job["strategy"]["matrix"]["shard"].as_vec() {
            let v: Vec<i64> = m.iter().map(|x| x.as_i64().unwrap()).collect();
            let uses_env = steps
                .iter()
                .any(|s| s["run"].as_str().is_some_and(|r| r.contains("/$SHARDS")));
            if uses_env {
                assert_eq!(
                    v,
                    (1..=shards).collect::<Vec<_>>(),
                    "{name}: matrix.shard must be 1..=SHARDS"
                );
            } else {
                // A job with its own literal N (`--shard EXPR/2`) lists 1..=N.
                let n = v.len() as i64;
                assert!(
                    steps.iter().any(|s| s["run"]
                        .as_str()
                        .is_some_and(|r| r.contains(&format!("/{n} ")))),
                    "{name}: matrix.shard {v:?} does not match its --shard N"
                );
                assert_eq!(v, (1..=n).collect::<Vec<_>>());
            }
        }
    }
    let calls = trc_calls(&scripts);
    let seen = check_calls("github-actions.yml", &calls);
    // The workflow does what docs/guides/ci.md says: sharded check, matrix and diff, merges, graphs,
    // the kernel corpus in qemu.
    for want in [
        "check ",
        "matrix ",
        "merge ",
        "graph ",
        "diff ",
        "kernel run ",
        "kernel fetch",
    ] {
        assert!(
            seen.iter().any(|s| s.starts_with(want)),
            "the workflow has no `trc {want}`: {seen:?}"
        );
    }
    for sub in ["check", "matrix", "diff"] {
        assert!(
            calls
                .iter()
                .any(|(s, f)| s[0] == sub && f.iter().any(|x| x == "--shard")),
            "no sharded `trc {sub}`"
        );
    }
    assert!(
        calls
            .iter()
            .any(|(s, f)| s[0] == "check" && f.iter().any(|x| x == "--out")),
        "check does not export counterexamples"
    );
    // The patch check: the base build (cached) and base against patched.
    assert!(
        seen.iter().any(|s| s.starts_with("kernel build")),
        "the workflow has no `trc kernel build`: {seen:?}"
    );
    assert!(
        calls
            .iter()
            .any(|(s, f)| s.len() == 2 && s[1] == "check" && f.iter().any(|x| x == "--patch")),
        "no `trc kernel check --patch`"
    );
    assert!(
        src.contains("~/.cache/trc/kbuild") && src.contains("actions/cache"),
        "the base build is not cached between runs"
    );
    assert!(src.contains("upload-artifact"), "no artifacts uploaded");
}

/// An example script of docs/examples: its text and its `trc` calls (checked to exist), after
/// `bash -n` accepts it.
fn example_script(name: &str) -> (String, BTreeSet<String>) {
    let src = read(&format!("docs/examples/{name}"));
    let out = Command::new("bash")
        .args(["-n", &format!("{ROOT}/docs/examples/{name}")])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "bash -n: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen = check_calls(name, &trc_calls(&src));
    (src, seen)
}

#[test]
fn slurm_example_uses_existing_trc_commands() {
    let (src, seen) = example_script("slurm-check.sh");
    assert!(
        seen.iter()
            .any(|s| s.starts_with("check ") && s.contains("--shard")),
        "{seen:?}"
    );
    assert!(seen.iter().any(|s| s.starts_with("merge")), "{seen:?}");
    assert!(src.contains("#SBATCH --array="));
}

#[test]
fn slurm_mpi_example_uses_existing_trc_commands() {
    let (src, seen) = example_script("slurm-mpi.sh");
    assert!(
        seen.iter()
            .any(|s| s.starts_with("check ") && s.contains("--mpi")),
        "{seen:?}"
    );
    assert!(src.contains("#SBATCH --nodes=") && src.contains("srun "));
}

#[test]
fn the_scanner_finds_calls_and_flags() {
    let calls = trc_calls("a && bin/trc check --reduce --shard ${{ matrix.shard }}/4 > x\nfoo trc bar\n  trc kernel run --kernel debian:sid f.pkt | tee\n--wrap \"trc merge out/*.json; trc merge --json a\"\nsrun --mpi=pmix trc check --mpi > o\nmpirun --allow-run-as-root -np 4 ./trc check --mpi --sack\nfoo -np 4 trc bar");
    let got: Vec<(String, String)> = calls
        .iter()
        .map(|(s, f)| (s.join(" "), f.join(" ")))
        .collect();
    assert_eq!(
        got,
        vec![
            ("check".into(), "--reduce --shard".into()),
            ("kernel run".into(), "--kernel".into()),
            ("merge".into(), "".into()),
            ("merge".into(), "--json".into()),
            ("check".into(), "--mpi".into()),
            ("check".into(), "--mpi --sack".into())
        ]
    );
}
