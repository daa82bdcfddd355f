//! A violated property's counterexample as a packetdrill script (`trc check --out`,
//! `--save-regressions`): the path the report shows, exported by `trc-trace`, written with its
//! JSON, DOT and page ([`Exports`]), each file said as a [`Note`].

use crate::report::PropResult;
use crate::{Error, Observer, Run};
use std::path::{Path, PathBuf};
use trc_engine::{Path as EnginePath, Verdict};
use trc_model::model::{Action, TcpModel};
use trc_trace::regress::Saved;
use trc_trace::upstream::Form;

/// The script, JSON and DOT of `p`'s counterexample (the one its report shows); an error when
/// `p` has none or the export fails.
pub fn export(model: &TcpModel, p: &PropResult) -> Result<trc_trace::export::Exported, Error> {
    let path = p
        .path
        .as_ref()
        .ok_or_else(|| Error::Write(format!("export of {}: no counterexample", p.id)))?;
    let statement = trc_properties::catalogue()
        .into_iter()
        .find(|s| s.id == p.id)
        .map(|s| s.statement)
        .unwrap_or("");
    let subject = trc_trace::export::Subject {
        id: &p.id,
        name: &p.name,
        statement,
    };
    trc_trace::export::export(
        model,
        path.init_index,
        &path.actions,
        subject,
        trc_trace::export::COUNTEREXAMPLE_GAP_MS,
    )
    .map_err(|e| Error::Write(format!("export of {}: {e}", p.id)))
}

/// Where `trc check` writes each violated property's counterexample — the one its report shows:
/// of the shortest failing signature, else the shortest.
pub struct Exports<'a> {
    /// `--out DIR`: the script in `form`, its JSON, DOT and page.
    pub out: Option<PathBuf>,
    pub form: Form,
    /// `--save-regressions`: the regression corpus the script is added to.
    pub corpus: Option<PathBuf>,
    /// Writes the counterexample page (`FILE`) of a property's path: `trc-viz` draws it, and it
    /// depends on this crate.
    pub page: &'a PageWriter,
}

/// Writes a property's counterexample page: the model, its path, the property and the file.
pub type PageWriter =
    dyn Fn(&TcpModel, &EnginePath<Action>, &PropResult, &Path) -> std::io::Result<()>;

/// What an export wrote or could not write ([`Observer::exported`]).
#[derive(Clone, Debug, PartialEq)]
pub enum Note {
    /// A script; its JSON, DOT and page beside it (named `stem` unless the form is trc's own).
    Wrote {
        script: PathBuf,
        stem: Option<String>,
        model_only: bool,
    },
    /// `--format` cannot express the counterexample of property `id` on `profile`.
    Unsupported {
        id: String,
        profile: String,
        form: Form,
        why: String,
    },
    /// Added to the regression corpus.
    Added(PathBuf),
    /// The corpus has the script already (as `entry`).
    AlreadyPresent {
        id: String,
        profile: String,
        entry: String,
    },
}

impl std::fmt::Display for Note {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Note::Wrote {
                script,
                stem,
                model_only,
            } => {
                let beside = stem.as_deref().unwrap_or("");
                let model_only = if *model_only {
                    " [model-only events: see its header]"
                } else {
                    ""
                };
                write!(
                    f,
                    "wrote {} (+ {beside}.json, .dot, .html){model_only}",
                    script.display()
                )
            }
            Note::Unsupported {
                id,
                profile,
                form,
                why,
            } => write!(f, "{id} on {profile}: no {} script: {why}", form.name()),
            Note::Added(file) => {
                write!(f, "added {} to the regression corpus", file.display())
            }
            Note::AlreadyPresent { id, profile, entry } => {
                write!(
                    f,
                    "{id} on {profile} already in the regression corpus ({entry})"
                )
            }
        }
    }
}

impl Exports<'_> {
    /// Whether anything is to be written.
    pub fn any(&self) -> bool {
        self.out.is_some() || self.corpus.is_some()
    }

    /// Exports `run`'s violated properties into `dir` (`None`: no `--out`) and the corpus.
    /// Returns how many scripts the form could not express.
    pub fn export(
        &self,
        run: &Run,
        dir: Option<&Path>,
        obs: &dyn Observer,
    ) -> Result<usize, Error> {
        if dir.is_none() && self.corpus.is_none() {
            return Ok(0);
        }
        let mut unsupported = 0;
        let model = &run.model;
        for p in &run.report.properties {
            let (Verdict::Violated, Some(path)) = (p.verdict, &p.path) else {
                continue;
            };
            let x = export(model, p)?;
            if let Some(dir) = dir {
                if !self.write_out(model, p, path, &x, dir, obs)? {
                    unsupported += 1;
                }
            }
            if let Some(corpus) = &self.corpus {
                let note = match trc_trace::regress::add(corpus, &x)
                    .map_err(|e| Error::Write(e.to_string()))?
                {
                    Saved::Added(f) => Note::Added(f),
                    Saved::AlreadyPresent(entry) => Note::AlreadyPresent {
                        id: p.id.clone(),
                        profile: model.profile.name.clone(),
                        entry,
                    },
                };
                obs.exported(&note);
            }
        }
        Ok(unsupported)
    }

    /// One counterexample into `dir`: the script in the form (false: the form cannot express
    /// it), its JSON, DOT and page.
    fn write_out(
        &self,
        model: &TcpModel,
        p: &PropResult,
        path: &EnginePath<Action>,
        x: &trc_trace::export::Exported,
        dir: &Path,
        obs: &dyn Observer,
    ) -> Result<bool, Error> {
        let written = trc_trace::write_export_as(dir, x, self.form)
            .map_err(|e| Error::Write(format!("{}: {e}", dir.display())))?;
        let script = match written {
            Ok(f) => f,
            Err(u) => {
                obs.exported(&Note::Unsupported {
                    id: p.id.clone(),
                    profile: model.profile.name.clone(),
                    form: self.form,
                    why: u.to_string(),
                });
                return Ok(false);
            }
        };
        // The counterexample page beside the JSON: what `trc graph` draws for it.
        let stem = trc_trace::file_safe(&format!("{}-{}", x.trace.property, x.trace.profile.name));
        let page = dir.join(format!("{stem}.html"));
        (self.page)(model, path, p, &page)
            .map_err(|e| Error::Write(format!("{}: {e}", page.display())))?;
        obs.exported(&Note::Wrote {
            script,
            stem: (self.form != Form::Trc).then_some(stem),
            model_only: !x.trace.kernel_runnable,
        });
        Ok(true)
    }
}

/// `--out DIR` is usable before the exploration starts (not after it): a directory, or one that
/// can be created.
pub fn out_dir_ok(dir: &Path) -> Result<(), Error> {
    if dir.exists() && !dir.is_dir() {
        return Err(Error::Write(format!(
            "--out {}: not a directory (--out names the directory the counterexamples go to)",
            dir.display()
        )));
    }
    std::fs::create_dir_all(dir).map_err(|e| Error::Write(format!("--out {}: {e}", dir.display())))
}

/// The export subdirectory of a bounds file when several are checked: its file stem.
pub fn config_label(path: Option<&Path>) -> String {
    path.and_then(|p| p.file_stem())
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "default".into())
}
