//! The files a check reads: profile files and the baseline, with `file:line` errors.

use crate::Error;
use std::path::Path;
use trc_model::profile::parse_profile_file;
use trc_model::{Config, Profile};
use trc_properties::baseline::Baseline;

/// Resolves `--profile`: a built-in name, else a file.
pub fn load_profile(arg: &str) -> Result<Profile, Error> {
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
pub fn load_profile_info(arg: &str) -> Result<(Profile, Option<FileInfo>), Error> {
    if let Some(p) = Profile::by_name(arg) {
        return Ok((p, None));
    }
    let path = Path::new(arg);
    if !path.exists() {
        return Err(Error::UnknownProfile {
            name: arg.to_string(),
            builtin: Profile::builtin().into_iter().map(|p| p.name).collect(),
        });
    }
    let src = trc_files::read_source(path)?;
    let p = parse_profile_file(&src, arg)?;
    let (base, overrides) = trc_model::profile::profile_file_base(&src);
    Ok((p, Some(FileInfo { base, overrides })))
}

/// The baseline file's accepted findings; `None` when the file does not exist (not an error: a
/// check outside the repository is legitimate, but the caller should say that no finding is
/// accepted, see [`missing_baseline_note`]).
pub fn load_baseline(p: &Path) -> Result<Option<Baseline>, Error> {
    if !p.exists() {
        return Ok(None);
    }
    Ok(Some(trc_files::read_toml(p)?))
}

/// The note for a baseline file that does not exist: a silent empty baseline would turn every
/// accepted finding into a failure.
pub fn missing_baseline_note(p: &Path) -> String {
    format!("note: no baseline file {}: no finding is accepted (run from the repository root or pass --baseline FILE)", p.display())
}

/// A bounds file's configuration (the defaults without one) with `flags` applied, validated.
/// `flags` sets the fields the command line gives and returns them, each with its flag: an
/// impossible bound names that flag, else its line in the file (`file:line`), else it is a default.
pub fn bounds(
    file: Option<&Path>,
    flags: impl FnOnce(&mut Config) -> Vec<(&'static str, &'static str)>,
) -> Result<Config, Error> {
    let mut file_src = None;
    let mut c = match file {
        Some(p) => {
            let src = trc_files::read_source(p)?;
            let c =
                toml::from_str::<Config>(&src).map_err(|e| trc_files::toml_error(p, &src, &e))?;
            file_src = Some((p, src));
            c
        }
        None => Config::default(),
    };
    let from_flag = flags(&mut c);
    c.validate().map_err(|source| {
        // Every message starts with the offending field's name: name the flag that set it, or
        // point at its line in the config file when the file sets it (otherwise it is a
        // default).
        let key: String = source
            .to_string()
            .chars()
            .take_while(|ch| ch.is_ascii_lowercase() || *ch == '_')
            .collect();
        let at = match from_flag.iter().find(|(field, _)| *field == key) {
            Some((_, flag)) => Some(flag.to_string()),
            None => file_src
                .as_ref()
                .and_then(|(p, src)| config_key_line(src, &key).map(|l| (p, l)))
                .map(|(p, line)| format!("{}:{line}", p.display())),
        };
        Error::Bounds { at, source }
    })?;
    Ok(c)
}

/// The 1-based line of a top-level `key = ...` assignment in a TOML source.
fn config_key_line(src: &str, key: &str) -> Option<usize> {
    if key.is_empty() {
        return None;
    }
    src.lines()
        .position(|l| {
            l.trim_start()
                .strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with('='))
        })
        .map(|i| i + 1)
}
