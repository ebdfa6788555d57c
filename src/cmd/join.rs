//! `dupflow normalize`, `dupflow exact-dedup` and `dupflow join`: records (one a line) prepared
//! for and joined by the exact similarity joins of `dupflow::join`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use super::{finish_output, lines, open_output, read_text};

/// Arguments of `dupflow normalize`.
#[derive(clap::Args)]
pub struct NormalizeArgs {
    /// Input file (`-`: stdin).
    pub input: PathBuf,
    /// Output file (`-`: stdout).
    pub output: PathBuf,
    #[arg(long, value_enum, default_value_t = CaseArg::Lower)]
    pub case: CaseArg,
}

/// `--case`: the letter case of normalized records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CaseArg {
    Lower,
    Upper,
}

impl From<CaseArg> for dupflow::join::text::Case {
    fn from(case: CaseArg) -> Self {
        match case {
            CaseArg::Lower => dupflow::join::text::Case::Lower,
            CaseArg::Upper => dupflow::join::text::Case::Upper,
        }
    }
}

pub fn normalize(args: NormalizeArgs) -> Result<ExitCode> {
    let NormalizeArgs { input, output, case } = args;
    let case = case.into();
    let text = read_text(&input)?;
    let mut out = open_output(Some(&output))?;
    finish_output((|| {
        for line in lines(&text) {
            writeln!(out, "{}", dupflow::join::text::normalize_line(line, case))?;
        }
        out.flush()
    })())
}

/// Arguments of `dupflow exact-dedup`.
#[derive(clap::Args)]
pub struct ExactDedupArgs {
    /// Input file (`-`: stdin).
    pub input: PathBuf,
    /// Output file (`-`: stdout).
    pub output: PathBuf,
}

pub fn exact_dedup(args: ExactDedupArgs) -> Result<ExitCode> {
    let ExactDedupArgs { input, output } = args;
    let text = read_text(&input)?;
    let (kept, dropped) = dupflow::join::text::exact_dedup(lines(&text));
    eprintln!("kept {} lines, dropped {dropped} exact duplicates", kept.len());
    let mut out = open_output(Some(&output))?;
    finish_output((|| {
        for line in kept {
            writeln!(out, "{line}")?;
        }
        out.flush()
    })())
}

/// The set measure of a join.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Measure {
    Jaccard,
    Cosine,
    Overlap,
    Dice,
}

/// Arguments of `dupflow join`.
#[derive(clap::Args)]
pub struct Args {
    /// Input file (`-`: stdin), one record a line.
    pub input: PathBuf,
    /// Set measure: records are sets of words (a word repeated k times is k tokens).
    #[arg(long, value_enum, default_value_t = Measure::Jaccard)]
    pub measure: Measure,
    /// Similarity threshold (for `overlap`: the number of shared tokens).
    #[arg(long, required_unless_present = "edit_distance")]
    pub threshold: Option<String>,
    /// allpairs | ppjoin | ppjoinplus (set measures, default ppjoinplus);
    /// allpairs-ed | edjoin-l | edjoin (edit distance, default edjoin).
    #[arg(long)]
    pub algorithm: Option<String>,
    /// PPJoin+ suffix filter depth.
    #[arg(long, default_value_t = 2)]
    pub max_depth: u32,
    /// Join by edit distance at most TAU over characters instead of a set measure.
    #[arg(long, value_name = "TAU", conflicts_with = "threshold")]
    pub edit_distance: Option<usize>,
    /// q-gram length for the edit-distance join.
    #[arg(long, default_value_t = 3)]
    pub q: usize,
    /// Edit distance: skip strings shorter than this (default q(TAU + 1), the shortest
    /// strings prefix filtering can handle; shorter ones are then compared directly).
    #[arg(long)]
    pub min_length: Option<usize>,
    /// Threads (default: one per core). The output does not depend on it.
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Write the pairs here instead of stdout.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
}

pub fn execute(args: Args) -> Result<ExitCode> {
    let Args {
        input,
        measure,
        threshold,
        algorithm,
        max_depth,
        edit_distance,
        q,
        min_length,
        threads,
        output,
    } = args;
    use dupflow::join::{edit, set, with_threads};
    let text = read_text(&input)?;
    let started = std::time::Instant::now();
    // Times: tokenizing, then the join itself (the input's memory is freed after).
    let (pairs, stats, prepared, joined, label, integer) = if let Some(tau) = edit_distance {
        let algorithm = edit::EdAlgorithm::parse(algorithm.as_deref().unwrap_or("edjoin"))?;
        let params = edit::EdParams::new(tau, q, min_length, algorithm)?;
        let (pairs, stats, prepared, joined) = with_threads(threads, || {
            let strings = edit::Strings::from_lines(lines(&text), &params);
            let prepared = started.elapsed();
            let (pairs, stats) = edit::join(&strings, &params);
            (pairs, stats, prepared, started.elapsed())
        })?;
        (
            pairs,
            stats,
            prepared,
            joined,
            format!(
                "{algorithm} edit distance <= {tau}, q = {q}, min length {}",
                params.min_length
            ),
            true,
        )
    } else {
        let measure = match measure {
            Measure::Jaccard => set::Measure::Jaccard,
            Measure::Cosine => set::Measure::Cosine,
            Measure::Overlap => set::Measure::Overlap,
            Measure::Dice => set::Measure::Dice,
        };
        let text_threshold = threshold.unwrap_or_default();
        let t = set::Threshold::parse(measure, &text_threshold)?;
        let algorithm =
            set::Algorithm::parse(algorithm.as_deref().unwrap_or("ppjoinplus"), max_depth)?;
        let (pairs, stats, prepared, joined) = with_threads(threads, || {
            let records = set::Records::from_lines(lines(&text));
            let prepared = started.elapsed();
            let (pairs, stats) = set::join(&records, t, algorithm);
            (pairs, stats, prepared, started.elapsed())
        })?;
        (
            pairs,
            stats,
            prepared,
            joined,
            format!("{algorithm} {} >= {text_threshold}", measure.name()),
            false,
        )
    };
    eprintln!("{label}: {}", stats.line(prepared, joined - prepared));
    let mut out = open_output(output.as_deref())?;
    finish_output((|| {
        for p in &pairs {
            if integer {
                writeln!(out, "{} {} {}", p.x, p.y, p.value)?;
            } else {
                writeln!(out, "{} {} {:.3}", p.x, p.y, p.value)?;
            }
        }
        out.flush()
    })())
}
