//! The newc writer against GNU cpio, both ways: what trc writes, `cpio -i` extracts; what
//! `cpio -o -H newc` writes, trc's reader parses. Skipped without the `cpio` tool.

use std::path::Path;
use std::process::{Command, Stdio};
use trc_vm::cpio;
use trc_vm::initramfs::{Data, Tree};

fn have_cpio() -> bool {
    Command::new("cpio")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn fresh(name: &str) -> std::path::PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn gnu_cpio_extracts_what_we_write() {
    if !have_cpio() {
        eprintln!("skipped: no cpio tool");
        return;
    }
    let mut t = Tree::new();
    t.file(
        "usr/bin/hello",
        0o755,
        1_600_000_000,
        Data::Bytes(b"#!/bin/sh\necho hi\n".to_vec()),
    )
    .unwrap();
    t.file(
        "t/kernel/x.pkt",
        0o644,
        0,
        Data::Bytes(b"0 socket(...) = 3\n".to_vec()),
    )
    .unwrap();
    t.file("t/common/defaults.sh", 0o755, 0, Data::Bytes(Vec::new()))
        .unwrap();
    let big: Vec<u8> = (0..100_003u32).map(|i| (i * 7 % 251) as u8).collect();
    t.file("data/big", 0o600, 0, Data::Bytes(big.clone()))
        .unwrap();
    t.symlink("bin", "usr/bin").unwrap();
    t.dir("tmp", 0o1777).unwrap();
    let archive = t.write_cpio(Vec::new()).unwrap();

    let list = Command::new("cpio")
        .args(["-it", "--quiet"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = feed(list, &archive);
    let names: Vec<&str> = std::str::from_utf8(&out).unwrap().lines().collect();
    assert_eq!(
        names,
        t.names().iter().map(String::as_str).collect::<Vec<_>>()
    );

    let dir = fresh("cpio-extract");
    let x = Command::new("cpio")
        .args(["-idm", "--quiet", "--no-absolute-filenames"])
        .current_dir(&dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    feed(x, &archive);
    assert_eq!(
        std::fs::read(dir.join("usr/bin/hello")).unwrap(),
        b"#!/bin/sh\necho hi\n"
    );
    assert_eq!(std::fs::read(dir.join("data/big")).unwrap(), big);
    assert_eq!(
        std::fs::read_link(dir.join("bin")).unwrap(),
        Path::new("usr/bin")
    );
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let m = std::fs::metadata(dir.join("usr/bin/hello")).unwrap();
    assert_eq!(m.permissions().mode() & 0o7777, 0o755);
    assert_eq!(m.mtime(), 1_600_000_000);
    assert_eq!(
        std::fs::metadata(dir.join("data/big"))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777,
        0o600
    );
    assert!(dir.join("t/common/defaults.sh").is_file());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn we_read_what_gnu_cpio_writes() {
    if !have_cpio() {
        eprintln!("skipped: no cpio tool");
        return;
    }
    let dir = fresh("cpio-source");
    std::fs::create_dir_all(dir.join("a/b")).unwrap();
    std::fs::write(dir.join("a/b/f"), b"contents\n").unwrap();
    std::fs::write(dir.join("a/odd"), b"12345").unwrap();
    std::os::unix::fs::symlink("b/f", dir.join("a/l")).unwrap();
    let c = Command::new("cpio")
        .args(["-o", "-H", "newc", "--quiet"])
        .current_dir(&dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let archive = feed(c, b"a\na/b\na/b/f\na/odd\na/l\n");
    let e = cpio::read(&archive).unwrap();
    let names: Vec<&str> = e.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["a", "a/b", "a/b/f", "a/odd", "a/l"]);
    assert_eq!(e[2].data, b"contents\n");
    assert_eq!(e[3].data, b"12345");
    assert_eq!(e[4].mode & cpio::S_IFMT, cpio::S_IFLNK);
    assert_eq!(e[4].data, b"b/f");
    let _ = std::fs::remove_dir_all(&dir);
}

fn feed(mut child: std::process::Child, input: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let w = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().unwrap();
    w.join().unwrap().unwrap();
    assert!(
        out.status.success(),
        "cpio failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}
