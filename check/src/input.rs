//! The files a check reads: profile files and the baseline, with `file:line` errors.

use std::path::Path;
use trc_model::profile::parse_profile_file;
use trc_model::Profile;
use trc_properties::baseline::Baseline;

/// Resolves `--profile`: a built-in name, else a file.
pub fn load_profile(arg: &str) -> Result<Profile, String> {
    load_profile_info(arg).map(|(p, _)| p)
}

/// What a profile file says beside its decision points: its base and the decision points it
/// overrides.
#[derive(Debug, Clone)]
pub struct FileInfo {
    pub base: String,
    pub overrides: Vec<String>,
}

/// [`load_profile`], with the file's [`FileInfo`] (`None` for a built-in profile).
pub fn load_profile_info(arg: &str) -> Result<(Profile, Option<FileInfo>), String> {
    if let Some(p) = Profile::by_name(arg) {
        return Ok((p, None));
    }
    let path = Path::new(arg);
    if !path.exists() {
        return Err(format!(
            "unknown profile `{arg}`: not a built-in profile ({}) and no such file",
            Profile::builtin()
                .iter()
                .map(|p| p.name.clone())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let src = trc_files::read_source(path)?;
    let p = parse_profile_file(&src, arg).map_err(|e| e.to_string())?;
    let (base, overrides) = trc_model::profile::profile_file_base(&src);
    Ok((p, Some(FileInfo { base, overrides })))
}

/// The baseline file's accepted findings; `None` when the file does not exist (not an error: a
/// check outside the repository is legitimate, but the caller should say that no finding is
/// accepted, see [`missing_baseline_note`]).
pub fn load_baseline(p: &Path) -> Result<Option<Baseline>, String> {
    if !p.exists() {
        return Ok(None);
    }
    trc_files::read_toml(p).map(Some)
}

/// The note for a baseline file that does not exist: a silent empty baseline would turn every
/// accepted finding into a failure.
pub fn missing_baseline_note(p: &Path) -> String {
    format!("note: no baseline file {}: no finding is accepted (run from the repository root or pass --baseline FILE)", p.display())
}
