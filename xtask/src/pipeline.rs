//! `cargo xtask pipeline <case>`: the stages of `data/<case>/pipeline.toml`, run in order with
//! Make semantics.
//!
//! The file lists stages; each has a `name`, a shell `command` (run by `sh -c` in the case
//! directory), and the `inputs` and `outputs` it reads and writes (paths relative to the case
//! directory; a path may be a directory, such as a bundle):
//!
//! ```toml
//! [[stage]]
//! name = "bake"
//! command = "levelset-bake sphere --radius 10 --spacing 1 --out out/sphere.grain"
//! inputs = []
//! outputs = ["out/sphere.grain"]
//! ```
//!
//! A stage runs when `--force` is given, when one of its outputs is missing, when an output is
//! older than an input (the oldest file of an output directory against the newest file of an
//! input directory), when the toolkit binary it runs (its command's first word, found in the
//! directories put in front of `PATH`, such as the workspace's `target/release`) was rebuilt
//! after an output (so a new version of a tool recomputes what it made), or when its command
//! line is not the one that last made its outputs (each success records it in
//! `<case>/.pipeline/<stage>.command`). Otherwise it is skipped. Every stage prints whether it runs or is skipped
//! and why. The first stage that fails stops the pipeline, and its exit code becomes the
//! pipeline's. A stage that exits 0 without writing a declared output is a failure too.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

use anyhow::{Context, Result, bail};
use serde::Deserialize;

/// The contents of `pipeline.toml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pipeline {
    /// The stages, in the order they run.
    #[serde(rename = "stage")]
    pub stages: Vec<Stage>,
}

/// One step of a pipeline.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stage {
    /// Shown in the log.
    pub name: String,
    /// Run by `sh -c` in the case directory.
    pub command: String,
    /// Files or directories the command reads.
    #[serde(default)]
    pub inputs: Vec<PathBuf>,
    /// Files or directories the command writes; at least one.
    pub outputs: Vec<PathBuf>,
    /// Variants the stage belongs to (such as `quick` or `full`): a run that selects tags runs
    /// the stages whose tags are all selected, and the untagged ones.
    #[serde(default)]
    pub tags: Vec<String>,
}

/// Why a stage runs.
#[derive(Debug, PartialEq)]
pub enum Reason {
    /// `--force` was given.
    Forced,
    /// This output does not exist.
    Missing(PathBuf),
    /// This output is older than this input.
    Stale {
        /// The input.
        input: PathBuf,
        /// The output.
        output: PathBuf,
    },
    /// The toolkit binary the stage runs is newer than this output.
    Tool {
        /// The binary.
        program: PathBuf,
        /// The output.
        output: PathBuf,
    },
    /// The command line differs from the one that made the outputs (or that one was not
    /// recorded).
    Command,
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reason::Forced => write!(f, "--force"),
            Reason::Missing(p) => write!(f, "output {} is missing", p.display()),
            Reason::Stale { input, output } => {
                write!(
                    f,
                    "input {} is newer than output {}",
                    input.display(),
                    output.display()
                )
            }
            Reason::Tool { program, output } => write!(
                f,
                "the program {} is newer than output {}",
                program.display(),
                output.display()
            ),
            Reason::Command => write!(f, "its command line is not the one that made its outputs"),
        }
    }
}

/// How a pipeline run ended.
#[derive(Debug, PartialEq)]
pub enum Outcome {
    /// Every stage ran or was up to date.
    Done {
        /// How many stages ran (the others were up to date).
        ran: usize,
    },
    /// A stage failed; the process should exit with this code.
    Failed {
        /// The stage's name.
        stage: String,
        /// Its exit code (128 + signal if it was killed).
        code: i32,
    },
}

impl Pipeline {
    /// Reads and checks a pipeline file.
    pub fn read(path: &Path) -> Result<Pipeline> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let pipeline: Pipeline = toml::from_str(&text)
            .with_context(|| format!("{}: invalid pipeline", path.display()))?;
        for (i, stage) in pipeline.stages.iter().enumerate() {
            if stage.outputs.is_empty() {
                bail!(
                    "{}: stage {} (`{}`) declares no outputs",
                    path.display(),
                    i + 1,
                    stage.name
                );
            }
        }
        Ok(pipeline)
    }

    /// Runs the stages in `case_dir`, with `path_prefix` put in front of `PATH` (where the
    /// workspace binaries are); `tags`: the selected tags (`None`: every stage). Log lines go
    /// to `log`.
    pub fn run(
        &self,
        case_dir: &Path,
        path_prefix: &[PathBuf],
        force: bool,
        tags: Option<&[&str]>,
        log: &mut dyn std::io::Write,
    ) -> Result<Outcome> {
        let mut path_var: Vec<PathBuf> = path_prefix.to_vec();
        path_var.extend(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        ));
        let path_var = std::env::join_paths(path_var)?;

        let selected = |stage: &&Stage| {
            tags.is_none_or(|t| stage.tags.iter().all(|s| t.contains(&s.as_str())))
        };
        let stages: Vec<&Stage> = self.stages.iter().filter(selected).collect();
        let mut ran = 0;
        for (i, stage) in stages.iter().enumerate() {
            let label = format!("[{}/{}] {}", i + 1, stages.len(), stage.name);
            let reason = if force {
                Some(Reason::Forced)
            } else {
                stage.reason(case_dir, path_prefix)?
            };
            let Some(reason) = reason else {
                writeln!(log, "{label}: skipped, up to date")?;
                continue;
            };
            writeln!(log, "{label}: runs, {reason}\n  $ {}", stage.command)?;
            log.flush()?;
            // The command is recorded only once it has succeeded: a failed or interrupted stage
            // runs again.
            let stamp = stage.stamp(case_dir);
            let _ = std::fs::remove_file(&stamp);
            let status = Command::new("sh")
                .arg("-c")
                .arg(&stage.command)
                .current_dir(case_dir)
                .env("PATH", &path_var)
                .status()
                .with_context(|| format!("{label}: cannot start `sh`"))?;
            if !status.success() {
                let code = status.code().unwrap_or_else(|| {
                    use std::os::unix::process::ExitStatusExt;
                    128 + status.signal().unwrap_or(0)
                });
                writeln!(log, "{label}: failed with exit code {code}; stopping")?;
                return Ok(Outcome::Failed {
                    stage: stage.name.clone(),
                    code,
                });
            }
            if let Some(missing) = stage.outputs.iter().find(|o| !case_dir.join(o).exists()) {
                writeln!(
                    log,
                    "{label}: exited 0 but did not write {}; stopping",
                    missing.display()
                )?;
                return Ok(Outcome::Failed {
                    stage: stage.name.clone(),
                    code: 1,
                });
            }
            std::fs::create_dir_all(stamp.parent().expect("in .pipeline"))?;
            std::fs::write(&stamp, &stage.command)
                .with_context(|| format!("cannot write {}", stamp.display()))?;
            ran += 1;
        }
        Ok(Outcome::Done { ran })
    }
}

impl Stage {
    /// Where the command line that last made this stage's outputs is recorded:
    /// `<case>/.pipeline/<stage>.command` (Make compares times only; like ninja, this also reruns
    /// a stage whose command was edited).
    fn stamp(&self, case_dir: &Path) -> PathBuf {
        case_dir
            .join(".pipeline")
            .join(format!("{}.command", self.name))
    }

    /// The toolkit binary this stage runs: its command's first word, found in one of
    /// `bin_dirs` (programs elsewhere on `PATH`, such as `cp`, are not tracked).
    fn tool(&self, bin_dirs: &[PathBuf]) -> Option<PathBuf> {
        let program = self.command.split_whitespace().next()?;
        if program.contains('/') {
            return None;
        }
        bin_dirs
            .iter()
            .map(|d| d.join(program))
            .find(|p| p.is_file())
    }

    /// Why this stage must run, or `None` when its outputs are up to date; `bin_dirs`: where
    /// the toolkit's binaries are ([`Stage::tool`]).
    pub fn reason(&self, case_dir: &Path, bin_dirs: &[PathBuf]) -> Result<Option<Reason>> {
        let mut oldest_output: Option<(SystemTime, &PathBuf)> = None;
        for output in &self.outputs {
            match mtime(&case_dir.join(output), Extreme::Oldest)? {
                None => return Ok(Some(Reason::Missing(output.clone()))),
                Some(t) if oldest_output.is_none_or(|(o, _)| t < o) => {
                    oldest_output = Some((t, output))
                }
                Some(_) => {}
            }
        }
        let (oldest, output) = oldest_output.expect("a stage has outputs");
        for input in &self.inputs {
            let newest = mtime(&case_dir.join(input), Extreme::Newest)?.with_context(|| {
                format!(
                    "stage `{}`: input {} does not exist (and no earlier stage wrote it)",
                    self.name,
                    input.display()
                )
            })?;
            if newest > oldest {
                return Ok(Some(Reason::Stale {
                    input: input.clone(),
                    output: output.clone(),
                }));
            }
        }
        if let Some(program) = self.tool(bin_dirs)
            && mtime(&program, Extreme::Newest)?.is_some_and(|t| t > oldest)
        {
            return Ok(Some(Reason::Tool {
                program,
                output: output.clone(),
            }));
        }
        if std::fs::read_to_string(self.stamp(case_dir))
            .ok()
            .as_deref()
            != Some(&self.command)
        {
            return Ok(Some(Reason::Command));
        }
        Ok(None)
    }
}

#[derive(Clone, Copy)]
enum Extreme {
    Oldest,
    Newest,
}

/// The modification time of a file, or the oldest/newest among the files below a directory;
/// an output directory with no file at all counts by its own time. `None` if the path does not
/// exist. (Empty subdirectories are not files: a run that leaves its `vtk/` empty must not look
/// as old as the day that directory was made.)
fn mtime(path: &Path, extreme: Extreme) -> Result<Option<SystemTime>> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot stat {}", path.display())),
    };
    match files_mtime(path, extreme)? {
        Some(t) => Ok(Some(t)),
        None => Ok(Some(meta.modified()?)),
    }
}

/// The time of a file, or the oldest/newest of the files below a directory (`None` if it holds
/// none).
fn files_mtime(path: &Path, extreme: Extreme) -> Result<Option<SystemTime>> {
    let meta =
        std::fs::metadata(path).with_context(|| format!("cannot stat {}", path.display()))?;
    if !meta.is_dir() {
        return Ok(Some(meta.modified()?));
    }
    let mut best: Option<SystemTime> = None;
    for entry in
        std::fs::read_dir(path).with_context(|| format!("cannot list {}", path.display()))?
    {
        if let Some(t) = files_mtime(&entry?.path(), extreme)? {
            best = Some(match (best, extreme) {
                (None, _) => t,
                (Some(b), Extreme::Oldest) => b.min(t),
                (Some(b), Extreme::Newest) => b.max(t),
            });
        }
    }
    Ok(best)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::time::Duration;

    /// Sets a file's modification time to `seconds` after an arbitrary epoch, so the test does
    /// not depend on the file system's timestamp resolution.
    fn set_time(path: &Path, seconds: u64) {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + seconds);
        fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(t)
            .unwrap();
    }

    /// a.txt -> [copy-a] -> b.txt -> [copy-b] -> c.txt ; x.txt -> [copy-x] -> y/ (a directory)
    /// Each command appends its name to ran.log so the test sees which stages ran.
    fn toy(dir: &Path) -> Pipeline {
        fs::write(dir.join("a.txt"), "a").unwrap();
        fs::write(dir.join("x.txt"), "x").unwrap();
        let toml = r#"
            [[stage]]
            name = "copy-a"
            command = "cp a.txt b.txt && echo copy-a >> ran.log"
            inputs = ["a.txt"]
            outputs = ["b.txt"]

            [[stage]]
            name = "copy-b"
            command = "cp b.txt c.txt && echo copy-b >> ran.log"
            inputs = ["b.txt"]
            outputs = ["c.txt"]

            [[stage]]
            name = "copy-x"
            command = "mkdir -p y && cp x.txt y/x.txt && echo copy-x >> ran.log"
            inputs = ["x.txt"]
            outputs = ["y"]
        "#;
        fs::write(dir.join("pipeline.toml"), toml).unwrap();
        Pipeline::read(&dir.join("pipeline.toml")).unwrap()
    }

    /// Runs the pipeline and returns (which stages ran, the log).
    fn run(p: &Pipeline, dir: &Path, force: bool) -> (Vec<String>, String, Outcome) {
        let _ = fs::remove_file(dir.join("ran.log"));
        let mut log = Vec::new();
        let outcome = p.run(dir, &[], force, None, &mut log).unwrap();
        let ran = fs::read_to_string(dir.join("ran.log")).unwrap_or_default();
        (
            ran.lines().map(String::from).collect(),
            String::from_utf8(log).unwrap(),
            outcome,
        )
    }

    /// Gives every file a distinct time in pipeline order, as if each was written in turn.
    fn settle(dir: &Path) {
        for (i, f) in ["a.txt", "x.txt", "b.txt", "c.txt", "y/x.txt"]
            .iter()
            .enumerate()
        {
            set_time(&dir.join(f), 10 * i as u64);
        }
    }

    /// Tagged stages run only when all their tags are selected; untagged stages always.
    #[test]
    fn selected_tags_choose_the_variant_stages() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let toml = r#"
            [[stage]]
            name = "common"
            command = "echo common >> ran.log && touch common"
            outputs = ["common"]
            [[stage]]
            name = "quick"
            tags = ["quick"]
            command = "echo quick >> ran.log && touch quick"
            outputs = ["quick"]
            [[stage]]
            name = "full-a"
            tags = ["full", "a"]
            command = "echo full-a >> ran.log && touch full-a"
            outputs = ["full-a"]
        "#;
        fs::write(d.join("pipeline.toml"), toml).unwrap();
        let p = Pipeline::read(&d.join("pipeline.toml")).unwrap();
        let ran = |tags: Option<&[&str]>| {
            let _ = fs::remove_file(d.join("ran.log"));
            p.run(d, &[], true, tags, &mut Vec::new()).unwrap();
            fs::read_to_string(d.join("ran.log")).unwrap()
        };
        assert_eq!(ran(Some(&["quick"])), "common\nquick\n");
        assert_eq!(ran(Some(&["full"])), "common\n");
        assert_eq!(ran(Some(&["full", "a"])), "common\nfull-a\n");
        assert_eq!(ran(None), "common\nquick\nfull-a\n");
    }

    #[test]
    fn touching_an_input_reruns_only_the_stages_downstream_of_it() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let p = toy(d);
        let (ran, log, outcome) = run(&p, d, false);
        assert_eq!(outcome, Outcome::Done { ran: 3 });
        assert_eq!(ran, ["copy-a", "copy-b", "copy-x"]);
        assert!(
            log.contains("[1/3] copy-a: runs, output b.txt is missing"),
            "{log}"
        );
        settle(d);

        let (ran, log, outcome) = run(&p, d, false);
        assert!(ran.is_empty(), "{ran:?}");
        assert_eq!(outcome, Outcome::Done { ran: 0 });
        assert_eq!(log.matches("skipped, up to date").count(), 3, "{log}");

        set_time(&d.join("x.txt"), 1000);
        let (ran, log, _) = run(&p, d, false);
        assert_eq!(ran, ["copy-x"]);
        assert!(
            log.contains("copy-x: runs, input x.txt is newer than output y"),
            "{log}"
        );
        settle(d);

        set_time(&d.join("a.txt"), 1000);
        let (ran, _, _) = run(&p, d, false);
        // copy-a rewrites b.txt (now), which makes c.txt stale in turn.
        assert_eq!(ran, ["copy-a", "copy-b"]);

        settle(d);
        set_time(&d.join("b.txt"), 1000);
        let (ran, _, _) = run(&p, d, false);
        assert_eq!(ran, ["copy-b"]);

        settle(d);
        fs::remove_file(d.join("c.txt")).unwrap();
        let (ran, log, _) = run(&p, d, false);
        assert_eq!(ran, ["copy-b"]);
        assert!(log.contains("output c.txt is missing"), "{log}");

        let (ran, log, _) = run(&p, d, true);
        assert_eq!(ran, ["copy-a", "copy-b", "copy-x"]);
        assert_eq!(log.matches("runs, --force").count(), 3, "{log}");
    }

    /// An edited command line reruns its stage (and only it) though every time is in order.
    #[test]
    fn an_edited_command_reruns_its_stage() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let p = toy(d);
        run(&p, d, false);
        settle(d);
        let text = fs::read_to_string(d.join("pipeline.toml")).unwrap();
        let edited = text.replacen("cp x.txt y/x.txt", "cp -p x.txt y/x.txt", 1);
        assert_ne!(edited, text);
        fs::write(d.join("pipeline.toml"), edited).unwrap();
        let p = Pipeline::read(&d.join("pipeline.toml")).unwrap();
        let (ran, log, _) = run(&p, d, false);
        assert_eq!(ran, ["copy-x"]);
        assert!(
            log.contains("copy-x: runs, its command line is not the one that made its outputs"),
            "{log}"
        );
        settle(d);
        let (ran, _, _) = run(&p, d, false);
        assert!(ran.is_empty(), "{ran:?}");
    }

    /// A toolkit binary rebuilt after a stage's outputs reruns the stage; one older does not.
    #[test]
    fn a_rebuilt_tool_reruns_the_stages_that_run_it() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let bin = d.join("bin");
        fs::create_dir(&bin).unwrap();
        let tool = bin.join("make-out");
        fs::write(&tool, "#!/bin/sh\necho made > out.txt\n").unwrap();
        fs::set_permissions(&tool, fs::Permissions::from_mode(0o755)).unwrap();
        let toml = r#"
            [[stage]]
            name = "make"
            command = "make-out && echo make >> ran.log"
            outputs = ["out.txt"]
        "#;
        fs::write(d.join("pipeline.toml"), toml).unwrap();
        let p = Pipeline::read(&d.join("pipeline.toml")).unwrap();
        let run = || {
            let _ = fs::remove_file(d.join("ran.log"));
            let mut log = Vec::new();
            p.run(d, std::slice::from_ref(&bin), false, None, &mut log)
                .unwrap();
            (
                fs::read_to_string(d.join("ran.log")).unwrap_or_default(),
                String::from_utf8(log).unwrap(),
            )
        };
        assert_eq!(run().0, "make\n");
        set_time(&tool, 10);
        set_time(&d.join("out.txt"), 20);
        assert_eq!(run().0, "");
        set_time(&tool, 30);
        let (ran, log) = run();
        assert_eq!(ran, "make\n");
        assert!(
            log.contains(&format!(
                "make: runs, the program {} is newer than output out.txt",
                tool.display()
            )),
            "{log}"
        );
    }

    #[test]
    fn directory_outputs_are_as_old_as_their_oldest_file() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let p = toy(d);
        run(&p, d, false);
        settle(d);
        fs::write(d.join("y/extra.txt"), "").unwrap();
        set_time(&d.join("y/extra.txt"), 5); // older than x.txt (10)
        let (ran, _, _) = run(&p, d, false);
        assert_eq!(ran, ["copy-x"]);
    }

    /// An empty directory left in an output (a run's `vtk/` with no files written) does not
    /// make the output look old: the stage stayed stale forever (found rerunning the full
    /// validations).
    #[test]
    fn empty_subdirectories_of_outputs_do_not_count() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let p = toy(d);
        run(&p, d, false);
        settle(d);
        fs::create_dir(d.join("y/vtk")).unwrap();
        let old = SystemTime::UNIX_EPOCH + Duration::from_secs(1_600_000_000);
        fs::File::open(d.join("y/vtk"))
            .unwrap()
            .set_modified(old)
            .unwrap();
        let (ran, _, _) = run(&p, d, false);
        assert!(ran.is_empty(), "{ran:?}");
    }

    #[test]
    fn first_failure_stops_the_pipeline_with_its_exit_code() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        fs::write(
            d.join("pipeline.toml"),
            r#"
            [[stage]]
            name = "ok"
            command = "echo ok >> ran.log && touch one"
            outputs = ["one"]
            [[stage]]
            name = "boom"
            command = "echo boom >> ran.log; exit 7"
            inputs = ["one"]
            outputs = ["two"]
            [[stage]]
            name = "never"
            command = "echo never >> ran.log && touch three"
            outputs = ["three"]
            "#,
        )
        .unwrap();
        let p = Pipeline::read(&d.join("pipeline.toml")).unwrap();
        let (ran, log, outcome) = run(&p, d, false);
        assert_eq!(ran, ["ok", "boom"]);
        assert_eq!(
            outcome,
            Outcome::Failed {
                stage: "boom".into(),
                code: 7
            }
        );
        assert!(
            log.contains("[2/3] boom: failed with exit code 7; stopping"),
            "{log}"
        );
    }

    #[test]
    fn a_stage_that_does_not_write_its_output_fails() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        fs::write(
            d.join("pipeline.toml"),
            "[[stage]]\nname = \"lazy\"\ncommand = \"true\"\noutputs = [\"out.txt\"]\n",
        )
        .unwrap();
        let p = Pipeline::read(&d.join("pipeline.toml")).unwrap();
        let (_, log, outcome) = run(&p, d, false);
        assert_eq!(
            outcome,
            Outcome::Failed {
                stage: "lazy".into(),
                code: 1
            }
        );
        assert!(log.contains("did not write out.txt"), "{log}");
    }

    #[test]
    fn bad_pipelines_are_refused_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let path = d.join("pipeline.toml");
        fs::write(
            &path,
            "[[stage]]\nname = \"a\"\ncommand = \"true\"\noutputs = []\n",
        )
        .unwrap();
        let e = format!("{:#}", Pipeline::read(&path).unwrap_err());
        assert!(e.contains("stage 1 (`a`) declares no outputs"), "{e}");
        fs::write(
            &path,
            "[[stage]]\nname = \"a\"\ncomand = \"true\"\noutputs = [\"o\"]\n",
        )
        .unwrap();
        let e = format!("{:#}", Pipeline::read(&path).unwrap_err());
        assert!(e.contains("pipeline.toml") && e.contains("comand"), "{e}");
        fs::write(
            &path,
            "[[stage]]\nname = \"a\"\ncommand = \"true\"\ninputs = [\"nope\"]\noutputs = [\"o\"]\n",
        )
        .unwrap();
        fs::write(d.join("o"), "").unwrap();
        let p = Pipeline::read(&path).unwrap();
        let e = format!(
            "{:#}",
            p.run(d, &[], false, None, &mut Vec::new()).unwrap_err()
        );
        assert!(e.contains("input nope does not exist"), "{e}");
    }
}
