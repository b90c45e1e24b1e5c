//! `cargo xtask plot`: columns of a CSV file as an SVG line plot (plotters), for reports.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use plotters::prelude::*;

/// What to plot.
#[derive(Debug, clap::Args)]
pub struct PlotArgs {
    /// The CSV file (header row; lines starting with `#` are comments).
    pub csv: PathBuf,
    /// Column for the horizontal axis.
    #[arg(long)]
    pub x: String,
    /// Column(s) for the vertical axis (repeat for several curves).
    #[arg(long, required = true)]
    pub y: Vec<String>,
    /// Plot title.
    #[arg(long, default_value = "")]
    pub title: String,
    /// Output SVG file.
    #[arg(long)]
    pub out: PathBuf,
}

/// Reads the named columns; errors name the file, the line and the column.
pub fn read_columns(path: &Path, names: &[&str]) -> Result<Vec<Vec<f64>>> {
    let mut reader = csv::ReaderBuilder::new()
        .comment(Some(b'#'))
        .trim(csv::Trim::All)
        .from_path(path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let header = reader
        .headers()
        .with_context(|| format!("{}: no header row", path.display()))?
        .clone();
    let index: Vec<usize> = names
        .iter()
        .map(|n| {
            header.iter().position(|h| h == *n).with_context(|| {
                format!(
                    "{}: no column `{n}` (columns: {})",
                    path.display(),
                    header.iter().collect::<Vec<_>>().join(", ")
                )
            })
        })
        .collect::<Result<_>>()?;
    let mut columns = vec![Vec::new(); names.len()];
    for record in reader.records() {
        let record = record.with_context(|| format!("{}: malformed row", path.display()))?;
        let line = record.position().map_or(0, |p| p.line());
        for (c, &i) in index.iter().enumerate() {
            let field = record.get(i).unwrap_or("");
            let value: f64 = field
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite())
                .with_context(|| {
                    format!(
                        "{}: line {line}: column `{}`: `{field}` is not a finite number",
                        path.display(),
                        names[c]
                    )
                })?;
            columns[c].push(value);
        }
    }
    if columns[0].len() < 2 {
        bail!("{}: need at least 2 data rows to plot", path.display());
    }
    Ok(columns)
}

fn range(values: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
        (a.min(v), b.max(v))
    });
    let pad = 0.05 * (hi - lo).max(f64::EPSILON);
    (lo - pad)..(hi + pad)
}

/// One curve of a plot.
pub struct Series {
    /// Its legend.
    pub name: String,
    /// Its points.
    pub points: Vec<(f64, f64)>,
    /// Whether the points are marked (data) or only joined (a reference curve).
    pub markers: bool,
}

/// Draws the columns of a CSV file.
pub fn plot(args: &PlotArgs) -> Result<()> {
    let mut names = vec![args.x.as_str()];
    names.extend(args.y.iter().map(String::as_str));
    let columns = read_columns(&args.csv, &names)?;
    let (x, ys) = columns.split_first().expect("x column");
    let series: Vec<Series> = args
        .y
        .iter()
        .zip(ys)
        .map(|(name, y)| Series {
            name: name.clone(),
            points: x.iter().copied().zip(y.iter().copied()).collect(),
            markers: true,
        })
        .collect();
    draw(
        &args.out,
        &args.title,
        (&args.x, &args.y.join(", ")),
        &series,
    )
}

/// Draws curves on one pair of axes (`desc`: the axes' labels) as SVG, written atomically.
pub fn draw(out: &Path, title: &str, desc: (&str, &str), series: &[Series]) -> Result<()> {
    if let Some(parent) = out.parent() {
        std::fs::create_dir_all(parent)?;
    }
    // plotters writes the file itself; render to a sibling and rename, so the output is atomic.
    let tmp = out.with_extension("svg.partial");
    {
        let root = SVGBackend::new(&tmp, (800, 560)).into_drawing_area();
        root.fill(&WHITE)?;
        let all = || series.iter().flat_map(|s| s.points.iter());
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 22))
            .margin(16)
            .x_label_area_size(48)
            .y_label_area_size(72)
            .build_cartesian_2d(range(all().map(|p| p.0)), range(all().map(|p| p.1)))?;
        chart
            .configure_mesh()
            .x_desc(desc.0)
            .y_desc(desc.1)
            .draw()?;
        for (i, s) in series.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            chart
                .draw_series(LineSeries::new(s.points.clone(), color.stroke_width(2)))?
                .label(&s.name)
                .legend(move |(px, py)| {
                    PathElement::new([(px, py), (px + 20, py)], color.stroke_width(2))
                });
            if s.markers {
                chart.draw_series(s.points.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
            }
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .border_style(BLACK)
            .background_style(WHITE)
            .draw()?;
        root.present()?;
    }
    std::fs::rename(&tmp, out).with_context(|| format!("cannot write {}", out.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plots_the_columns_and_names_bad_cells() {
        let dir = tempfile::tempdir().unwrap();
        let csv = dir.path().join("t.csv");
        std::fs::write(&csv, "# comment\neps,force\n0,0\n0.5,2\n1,3\n").unwrap();
        let out = dir.path().join("sub/t.svg");
        let args = PlotArgs {
            csv: csv.clone(),
            x: "eps".into(),
            y: vec!["force".into()],
            title: "t".into(),
            out: out.clone(),
        };
        plot(&args).unwrap();
        let svg = std::fs::read_to_string(&out).unwrap();
        assert!(
            svg.starts_with("<svg") && svg.contains("force"),
            "{}",
            &svg[..200.min(svg.len())]
        );
        assert!(!dir.path().join("sub/t.svg.partial").exists());

        std::fs::write(&csv, "eps,force\n0,0\n0.5,abc\n").unwrap();
        let e = format!("{:#}", plot(&args).unwrap_err());
        assert!(
            e.contains("line 3") && e.contains("`force`") && e.contains("`abc`"),
            "{e}"
        );
        let args = PlotArgs {
            y: vec!["energy".into()],
            ..args
        };
        let e = format!("{:#}", plot(&args).unwrap_err());
        assert!(e.contains("no column `energy`"), "{e}");
    }
}
