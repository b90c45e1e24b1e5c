//! The runner shared by `cargo xtask validate` and `cargo xtask demo`: a suite of cases under
//! `data/<suite>/`, each run through its pipeline (the stages tagged with the variant and the
//! case, and the untagged ones), then checked row by row against references that do not come
//! from the code under test. Prints the table, writes a Markdown report and one plot per case to
//! `data/<suite>/out/`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};

use crate::pipeline::{Outcome, Pipeline};
use crate::plot::{Series, draw};

/// One checked quantity.
pub struct Row {
    /// The case.
    pub case: &'static str,
    /// What is compared.
    pub quantity: String,
    /// The reference value.
    pub reference: f64,
    /// Where the reference comes from.
    pub source: String,
    /// The result of the run.
    pub result: f64,
    /// The largest accepted `|result - reference|`, relative to the reference, or absolute when
    /// the reference is 0.
    pub tolerance: f64,
}

impl Row {
    /// `|result - reference|`, relative unless the reference is 0.
    pub fn error(&self) -> f64 {
        let d = (self.result - self.reference).abs();
        if self.reference == 0.0 {
            d
        } else {
            d / self.reference.abs()
        }
    }

    /// Whether the row passes (a non-finite result never does).
    pub fn passes(&self) -> bool {
        self.result.is_finite() && self.error() <= self.tolerance
    }
}

/// What a case reports besides its rows.
pub struct Checked {
    pub rows: Vec<Row>,
    /// Markdown paragraphs: how the references were derived, what was measured.
    pub notes: Vec<String>,
    /// The plot: title, axis labels and curves.
    pub plot: (String, (String, String), Vec<Series>),
}

/// A case: its directory under the suite's (several cases may share one: their stages are
/// tagged with the case's name) and its check, given the directory and the variant.
pub struct Case {
    /// Its name (a stage tag, the plot's file name).
    pub name: &'static str,
    /// Its directory under the suite's.
    pub dir: &'static str,
    /// Reads the runs and compares them with the references.
    pub check: fn(&Path, &str) -> Result<Checked>,
}

/// A suite of cases.
pub struct Suite {
    /// Its directory under the data directory, and the report's title.
    pub dir: &'static str,
    /// The command that runs it (for the report).
    pub command: &'static str,
    /// The cases, in report order.
    pub cases: &'static [Case],
}

impl Suite {
    /// The case names, in report order.
    pub fn case_names(&self) -> Vec<&'static str> {
        self.cases.iter().map(|c| c.name).collect()
    }

    /// Runs the cases (all when `names` is empty) with the stage binaries on `path`, prints the
    /// table, writes the report and plots; `Ok(false)` when a row fails.
    pub fn run(
        &self,
        data: &Path,
        names: &[String],
        variant: &str,
        path: &[PathBuf],
    ) -> Result<bool> {
        let root = data.join(self.dir);
        let selected: Vec<&Case> = if names.is_empty() {
            self.cases.iter().collect()
        } else {
            names
                .iter()
                .map(|n| {
                    self.cases.iter().find(|c| c.name == n).with_context(|| {
                        format!(
                            "no case `{n}` in data/{} (cases: {})",
                            self.dir,
                            self.case_names().join(", ")
                        )
                    })
                })
                .collect::<Result<_>>()?
        };
        let out = root.join("out");
        let mut rows = Vec::new();
        let mut report = format!(
            "# Report of data/{} ({variant} variant)\n\nMade by `{}`. Each row compares a run with a reference that does not come from the code under test; the error is relative to the reference (absolute when the reference is 0).\n",
            self.dir, self.command
        );
        for case in selected {
            let dir = root.join(case.dir);
            let pipeline = Pipeline::read(&dir.join("pipeline.toml"))?;
            println!("{} {}: pipeline {}", self.dir, case.name, dir.display());
            let start = Instant::now();
            let tags = [variant, case.name];
            let timing = match pipeline.run(&dir, path, false, Some(&tags), &mut std::io::stdout())? {
                Outcome::Failed { stage, code } => {
                    bail!("{}: stage {stage} failed with exit code {code}", case.name)
                }
                Outcome::Done { ran: 0 } => "Every stage was up to date: nothing ran again (each run's own wall time is given below).".to_string(),
                Outcome::Done { ran } => format!(
                    "Pipeline wall time ({ran} stages that ran, including the solver): {:.1} s.",
                    start.elapsed().as_secs_f64()
                ),
            };
            let checked = (case.check)(&dir, variant)?;
            let (title, (x, y), series) = &checked.plot;
            let plot = out.join(format!("{}-{variant}.svg", case.name));
            draw(&plot, title, (x, y), series)?;
            report.push_str(&format!(
                "\n## {}\n\n![{}]({})\n\n{timing}\n\n",
                case.name,
                title,
                plot.file_name().expect("a file name").to_string_lossy()
            ));
            for n in &checked.notes {
                report.push_str(n);
                report.push_str("\n\n");
            }
            report.push_str(&table(&checked.rows));
            rows.extend(checked.rows);
        }
        let summary = table(&rows);
        println!("\n{summary}");
        report.push_str(&format!("\n## All rows\n\n{summary}"));
        let path = out.join(format!("report-{variant}.md"));
        std::fs::create_dir_all(&out)?;
        grain::atomic::write_file_atomically(&path, |w| w.write_all(report.as_bytes()))
            .with_context(|| format!("cannot write {}", path.display()))?;
        println!("report: {}", path.display());
        Ok(rows.iter().all(Row::passes))
    }
}

/// The rows as a Markdown table (a `|` in a cell, as in `|F / F_ref - 1|`, escaped so that
/// it does not split the cell).
fn table(rows: &[Row]) -> String {
    let cell = |text: &str| text.replace('|', "\\|");
    let mut t = String::from(
        "| case | quantity | reference | result | error | tolerance | |\n|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        t.push_str(&format!(
            "| {} | {} | {:.6} ({}) | {:.6} | {:.2e} | {:.0e} | {} |\n",
            r.case,
            cell(&r.quantity),
            r.reference,
            cell(&r.source),
            r.result,
            r.error(),
            r.tolerance,
            if r.passes() { "pass" } else { "FAIL" }
        ));
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every row of the table has the header's 7 cells, whatever its text holds.
    #[test]
    fn bars_in_a_cell_do_not_split_it() {
        let row = Row {
            case: "sphere",
            quantity: "largest |F / F_ref - 1| past 10 %".into(),
            reference: 0.0,
            source: "a | b".into(),
            result: 0.01,
            tolerance: 0.03,
        };
        let t = table(&[row]);
        for line in t.lines() {
            let cells = line.replace("\\|", "").matches('|').count() - 1;
            assert_eq!(cells, 7, "{line}");
        }
        assert!(t.contains("largest \\|F / F_ref - 1\\| past 10 %"), "{t}");
    }
}
