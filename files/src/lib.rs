//! `trc-files`: the files trc reads from its users and the files it writes.
//!
//! * Input: [`read_source`] (a script, profile, bounds or baseline file as UTF-8, or a [`ReadError`]:
//!   `file:line: why`) and [`toml_error`] (a TOML error as `file:line: message`), so every
//!   command reports bad input the same way.
//! * Output: [`write_atomic`] and [`write_json_atomic`], the one atomic writer: the content goes
//!   to a temporary file in the target's directory (`tempfile`), is synced, and is renamed over
//!   the target (`persist`): a reader sees the old file or the new one, never a part. A
//!   temporary file is removed when the write fails.
#![forbid(unsafe_code)]

use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

/// Why a user's file could not be read: its message names the file, and the line where there is
/// one (`file: why`, `file:line: why`).
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file cannot be read (missing, a directory, no permission).
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The file is not UTF-8: `line` holds its first bad byte.
    #[error("{}:{line}: not valid UTF-8", path.display())]
    Utf8 { path: PathBuf, line: usize },
    /// The file is not the TOML its reader wants (syntax, or an unknown or mistyped key).
    #[error("{}:{line}: {message}", path.display())]
    Toml {
        path: PathBuf,
        line: usize,
        message: String,
    },
}

/// An I/O error on a file or directory, named: `path: why`.
#[derive(Debug, thiserror::Error)]
#[error("{}: {source}", path.display())]
pub struct PathError {
    pub path: PathBuf,
    pub source: std::io::Error,
}

/// For `map_err`: an I/O error on `path` as a [`PathError`].
pub fn at(path: &Path) -> impl FnOnce(std::io::Error) -> PathError + '_ {
    move |source| PathError {
        path: path.to_path_buf(),
        source,
    }
}

/// A script's, profile's or config file's text, or `file: why` (unreadable, or not UTF-8 — with
/// the line of the first bad byte).
pub fn read_source(path: &Path) -> Result<String, ReadError> {
    let bytes = std::fs::read(path).map_err(|source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let line = e.as_bytes()[..at].iter().filter(|b| **b == b'\n').count() + 1;
        ReadError::Utf8 {
            path: path.to_path_buf(),
            line,
        }
    })
}

/// `file:line: message` for a TOML error (line of the error's span start, 1-based).
pub fn toml_error(file: &Path, src: &str, e: &toml::de::Error) -> ReadError {
    let line = e
        .span()
        .map(|s| src[..s.start.min(src.len())].matches('\n').count() + 1)
        .unwrap_or(1);
    ReadError::Toml {
        path: file.to_path_buf(),
        line,
        message: e.message().trim().to_string(),
    }
}

/// Reads and parses a TOML file: its value, or `file:line: why`.
pub fn read_toml<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, ReadError> {
    let src = read_source(path)?;
    toml::from_str(&src).map_err(|e| toml_error(path, &src, &e))
}

/// Writes `contents` to `path` atomically: a temporary file in the same directory, synced, then
/// renamed over `path` (an existing file is replaced whole or not at all).
pub fn write_atomic(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let base = path
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    // `.NAME.tmp-PID-RANDOM`: hidden, and [`remove_stale_tmp`] knows whose it is. Mode 0666
    // before the umask, as `File::create` makes files (tempfile's own default is 0600).
    let mut f = tempfile::Builder::new()
        .prefix(&format!(".{base}.tmp-{}-", std::process::id()))
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(dir)?;
    f.write_all(contents)?;
    f.as_file().sync_all()?;
    f.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// `value` as pretty JSON (with a final newline), written with [`write_atomic`].
pub fn write_json_atomic<T: serde::Serialize>(path: &Path, value: &T) -> std::io::Result<()> {
    let mut text = serde_json::to_string_pretty(value).map_err(std::io::Error::other)?;
    text.push('\n');
    write_atomic(path, text.as_bytes())
}

/// Removes the temporary files ([`write_atomic`]'s `.NAME.tmp-PID-...`, and the `.NAME.tmp-PID`
/// of older trc versions) that a trc killed between create and rename left in `dir`: those whose
/// process is gone (Linux: no `/proc/PID`). Returns how many it removed.
pub fn remove_stale_tmp(dir: &Path) -> usize {
    if !Path::new("/proc/self").exists() {
        return 0;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some((_, rest)) = name.strip_prefix('.').and_then(|n| n.rsplit_once(".tmp-")) else {
            continue;
        };
        let Ok(pid) = rest.split('-').next().unwrap_or("").parse::<u32>() else {
            continue;
        };
        if pid != std::process::id()
            && !Path::new("/proc").join(pid.to_string()).exists()
            && std::fs::remove_file(e.path()).is_ok()
        {
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_whole_and_leaves_nothing_else() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("out.txt");
        write_atomic(&p, b"first").unwrap();
        write_atomic(&p, b"second").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"second");
        let names: Vec<_> = std::fs::read_dir(d.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "only the target is left");
        // A directory that does not exist: an error, nothing written.
        assert!(write_atomic(&d.path().join("no/such/x"), b"x").is_err());
    }

    #[test]
    fn atomic_write_keeps_the_usual_mode() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("page.html");
        write_atomic(&p, b"x").unwrap();
        let reference = d.path().join("plain");
        std::fs::File::create(&reference).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(
            mode(&p),
            mode(&reference),
            "as File::create under this umask"
        );
    }

    #[test]
    fn read_source_names_the_line_of_bad_utf8() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("s.pkt");
        std::fs::write(&p, b"ok\nok\n\xff\n").unwrap();
        let e = read_source(&p).unwrap_err();
        assert!(matches!(e, ReadError::Utf8 { line: 3, .. }), "{e:?}");
        assert!(e.to_string().ends_with("s.pkt:3: not valid UTF-8"), "{e}");
    }

    #[test]
    fn toml_errors_name_the_line() {
        let p = Path::new("b.toml");
        let src = "a = 1\nb = \n";
        let e = toml::from_str::<toml::Value>(src).unwrap_err();
        let e = toml_error(p, src, &e);
        assert!(matches!(e, ReadError::Toml { line: 2, .. }), "{e:?}");
        assert!(e.to_string().starts_with("b.toml:2:"), "{e}");
    }
}
