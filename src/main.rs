//! The `dupflow` command line: parse, run, print the error chain, exit code.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use std::io::Write;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};

use dupflow::config::PipelineConfig;
use dupflow::dataflow::{self, RunOptions};
use dupflow::metrics::live::Live;
use dupflow::metrics::{self, progress, server, Registry};
use dupflow::{sink, source};

#[derive(Parser)]
#[command(name = "dupflow", version, about = "Streaming near-duplicate detection for web-crawl WARC output")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Cluster the pages of WARC inputs (files, directories, globs, `-` for stdin).
    /// With no input, runs on a small WARC compiled into the binary.
    Run {
        inputs: Vec<String>,
        /// pipeline.toml to use (defaults are built in).
        #[arg(long)]
        config: Option<PathBuf>,
        /// Worker threads per process (default: run.workers of the config).
        #[arg(long)]
        workers: Option<usize>,
        /// Directory for clusters.jsonl, changes.jsonl and revisits.jsonl.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Timely cluster mode: number of processes.
        #[arg(long, default_value_t = 1)]
        processes: usize,
        /// Timely cluster mode: this process's index.
        #[arg(long, default_value_t = 0)]
        process: usize,
        /// Timely cluster mode: file with one `host:port` per process.
        #[arg(long)]
        hostfile: Option<PathBuf>,
        /// Serve /metrics, the dashboard (/) and /api/... on this address (e.g. 127.0.0.1:9464;
        /// port 0 picks a free one, printed on stderr).
        #[arg(long)]
        metrics_address: Option<String>,
        /// Keep serving the endpoint this many seconds after the run ends.
        #[arg(long, default_value_t = 0)]
        linger: u64,
        /// No progress output.
        #[arg(long, short)]
        quiet: bool,
        /// Follow the inputs as a crawler writes them: a WARC file being written (complete
        /// records are read, the reader waits at a partial one), a directory where new WARC
        /// files appear, or `-`. Runs until SIGINT/SIGTERM, then closes the last epoch and
        /// writes the outputs.
        #[arg(long)]
        follow: bool,
        /// A file of URLs to retract (one a line, `#` comments), read as it grows.
        #[arg(long)]
        deletions: Option<PathBuf>,
        /// Checkpoint directory: state is saved there every `run.checkpoint_epochs` epochs and
        /// at the end; a run started with a directory holding a checkpoint resumes from it.
        #[arg(long)]
        checkpoint: Option<PathBuf>,
    },
    /// Check a pipeline.toml: unknown keys and invalid values are named.
    Validate { file: PathBuf },
    /// Print the pipeline's normalized sentences of the HTML pages of WARC inputs, one per line
    /// (input for record-level tools such as similarity joins).
    Sentences {
        #[arg(required = true)]
        inputs: Vec<String>,
        /// pipeline.toml whose [source] and [sentence] settings to use.
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Normalize records (one a line) as the similarity joins expect: NFKC, case folded,
    /// punctuation and symbols turned into `_`, white space collapsed.
    Normalize {
        /// Input file (`-`: stdin).
        input: PathBuf,
        /// Output file (`-`: stdout).
        output: PathBuf,
        #[arg(long, value_enum, default_value_t = dupflow::join::text::Case::Lower)]
        case: dupflow::join::text::Case,
    },
    /// Drop exact duplicate lines, keeping the first of each.
    ExactDedup {
        /// Input file (`-`: stdin).
        input: PathBuf,
        /// Output file (`-`: stdout).
        output: PathBuf,
    },
    /// Exact similarity self-join of the lines of a file: prints `line_x line_y value` (x > y,
    /// 1-based) for every pair at or above the threshold (set measures) or within the edit
    /// distance; statistics on stderr.
    Join {
        /// Input file (`-`: stdin), one record a line.
        input: PathBuf,
        /// Set measure: records are sets of words (a word repeated k times is k tokens).
        #[arg(long, value_enum, default_value_t = JoinMeasure::Jaccard)]
        measure: JoinMeasure,
        /// Similarity threshold (for `overlap`: the number of shared tokens).
        #[arg(long, required_unless_present = "edit_distance")]
        threshold: Option<String>,
        /// allpairs | ppjoin | ppjoinplus (set measures, default ppjoinplus);
        /// allpairs-ed | edjoin-l | edjoin (edit distance, default edjoin).
        #[arg(long)]
        algorithm: Option<String>,
        /// PPJoin+ suffix filter depth.
        #[arg(long, default_value_t = 2)]
        max_depth: u32,
        /// Join by edit distance at most TAU over characters instead of a set measure.
        #[arg(long, value_name = "TAU", conflicts_with = "threshold")]
        edit_distance: Option<usize>,
        /// q-gram length for the edit-distance join.
        #[arg(long, default_value_t = 3)]
        q: usize,
        /// Edit distance: skip strings shorter than this (default q(TAU + 1), the shortest
        /// strings prefix filtering can handle; shorter ones are then compared directly).
        #[arg(long)]
        min_length: Option<usize>,
        /// Threads (default: one per core). The output does not depend on it.
        #[arg(long, default_value_t = 0)]
        threads: usize,
        /// Write the pairs here instead of stdout.
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
    /// How much of a document already exists in a corpus: the share of its sentences found on
    /// corpus pages, the verdict against a threshold, the duplicated spans and the smallest set
    /// of corpus pages that covers them. Prints JSON.
    Check {
        /// The document: an HTML or text file, `-` for stdin, or the URL of a corpus page.
        /// Without one: the corpus's own distribution of shares (each page against the others).
        document: Option<String>,
        /// The corpus: WARC inputs (files, directories, globs).
        #[arg(long, required = true, num_args = 1..)]
        corpus: Vec<String>,
        /// Refuse the document when its share is above this.
        #[arg(long, default_value_t = 0.5)]
        threshold: f64,
        /// Derive the threshold from the corpus's own shares (Otsu's cut), instead of --threshold.
        #[arg(long)]
        adaptive: bool,
        /// With --adaptive: a cut per site (hosts with at least 20 pages).
        #[arg(long)]
        per_site: bool,
        /// pipeline.toml whose [source], [sentence] and [template] settings to use.
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Rank the HTML pages of WARC inputs by similarity to a reference text: TF-IDF cosine over
    /// canonical terms (stop words out, Snowball stems), or w-shingling.
    Similar {
        /// WARC inputs (files, directories, globs).
        #[arg(required = true)]
        inputs: Vec<String>,
        /// The reference: an HTML or text file (`-`: stdin).
        #[arg(long)]
        reference: PathBuf,
        /// How many pages to print.
        #[arg(long, default_value_t = 10)]
        top: usize,
        /// cosine (TF-IDF), resemblance or containment (w-shingles of the reference in the page).
        #[arg(long, value_enum, default_value_t = SimilarMeasure::Cosine)]
        measure: SimilarMeasure,
        /// Words per shingle for resemblance and containment.
        #[arg(long, default_value_t = 4)]
        shingle_words: usize,
        /// Language for stemming and stop words: auto (detected per text), en, ru, de, fr, es,
        /// or none.
        #[arg(long, default_value = "auto")]
        language: String,
        /// A synonym file: lines `form: word word …`.
        #[arg(long)]
        synonyms: Option<PathBuf>,
    },
    /// Score a clusters.jsonl against a truth file (the dev benchmark's JSON, or a pair file
    /// of `url_a url_b label` lines), as ../shared/bench/score.py does.
    Eval {
        #[arg(long)]
        truth: PathBuf,
        clusters: PathBuf,
        /// Pairwise figures per section (the URL's 4th path component).
        #[arg(long)]
        by_section: bool,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum SimilarMeasure {
    Cosine,
    Resemblance,
    Containment,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum JoinMeasure {
    Jaccard,
    Cosine,
    Overlap,
    Dice,
}

fn read_text(path: &std::path::Path) -> Result<String> {
    if path.as_os_str() == "-" {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin().lock(), &mut text).context("reading stdin")?;
        Ok(text)
    } else {
        let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        // Records are text; invalid UTF-8 bytes become U+FFFD rather than an error.
        Ok(String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
    }
}

fn open_output(path: Option<&std::path::Path>) -> Result<Box<dyn Write>> {
    Ok(match path {
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
        Some(p) if p.as_os_str() == "-" => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
        Some(p) => Box::new(std::io::BufWriter::new(std::fs::File::create(p).with_context(|| format!("creating {}", p.display()))?)),
    })
}

/// The pages of WARC inputs as the pipeline sees them (stripped, split; the newest capture of
/// each URL, or every capture with `source.recrawls = "keep"`).
fn corpus_pages(inputs: &[source::Input], config: &PipelineConfig) -> Result<Vec<dupflow_operators::Page>> {
    let mut held = source::current::CurrentPages::new(config.source.recrawls);
    for input in inputs {
        source::read_records(input, config.source.max_record_bytes, |item| {
            let Ok(record) = item else { return };
            let Ok((source::http::Outcome::Page(doc), _)) = source::http::interpret(&record, config.source.max_page_bytes as usize) else {
                return;
            };
            let (meta, html) = doc.into_parts();
            let stripped = dupflow_operators::html::strip(&html);
            let (page, _) = dupflow_operators::sentence::page_in(
                meta,
                &stripped.blocks,
                &config.sentence,
                dupflow_operators::sentence::Shingling::None,
                stripped.lang.as_deref(),
            );
            let _ = held.capture(page, 0);
        })?;
    }
    Ok(held.into_pages())
}

fn lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().map(|l| l.strip_suffix('\r').unwrap_or(l))
}

/// Writes lines, treating a closed pipe (`| head`) as the end, not an error.
fn finish_output(result: std::io::Result<()>) -> Result<ExitCode> {
    match result {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        Err(e) => Err(e.into()),
        Ok(()) => Ok(ExitCode::SUCCESS),
    }
}

fn main() -> ExitCode {
    // Logs go to stderr; DUPFLOW_LOG (e.g. `debug`, `dupflow=trace`) sets the level.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("DUPFLOW_LOG").unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    match real_main() {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::from(2)
        }
    }
}

fn real_main() -> Result<ExitCode> {
    match Cli::parse().command {
        Command::Eval { truth, clusters, by_section } => {
            let truth = dupflow::eval::Truth::load(&truth)?;
            let clusters = dupflow::eval::load_clusters(&clusters)?;
            print!("{}", dupflow::eval::score(&truth, &clusters, by_section));
            Ok(ExitCode::SUCCESS)
        }
        Command::Sentences { inputs, config } => {
            let config = match &config {
                Some(path) => PipelineConfig::load(path)?,
                None => PipelineConfig::default(),
            };
            let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
            let mut failure = None;
            for input in source::expand(&inputs)? {
                source::read_records(&input, config.source.max_record_bytes, |item| {
                    let Ok(record) = item else { return };
                    let Ok((source::http::Outcome::Page(doc), _)) = source::http::interpret(&record, config.source.max_page_bytes as usize)
                    else {
                        return;
                    };
                    let blocks = dupflow_operators::html::strip(&doc.html).blocks;
                    for sentence in dupflow_operators::sentence::split_page(&blocks, &config.sentence).sentences {
                        if failure.is_none() {
                            if let Err(e) = writeln!(stdout, "{}", sentence.normalized) {
                                failure = Some(e);
                            }
                        }
                    }
                })?;
            }
            stdout.flush()?;
            match failure {
                Some(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
                Some(e) => Err(e.into()),
                None => Ok(ExitCode::SUCCESS),
            }
        }
        Command::Normalize { input, output, case } => {
            let text = read_text(&input)?;
            let mut out = open_output(Some(&output))?;
            finish_output((|| {
                for line in lines(&text) {
                    writeln!(out, "{}", dupflow::join::text::normalize_line(line, case))?;
                }
                out.flush()
            })())
        }
        Command::ExactDedup { input, output } => {
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
        Command::Join { input, measure, threshold, algorithm, max_depth, edit_distance, q, min_length, threads, output } => {
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
                    format!("{algorithm} edit distance <= {tau}, q = {q}, min length {}", params.min_length),
                    true,
                )
            } else {
                let measure = match measure {
                    JoinMeasure::Jaccard => set::Measure::Jaccard,
                    JoinMeasure::Cosine => set::Measure::Cosine,
                    JoinMeasure::Overlap => set::Measure::Overlap,
                    JoinMeasure::Dice => set::Measure::Dice,
                };
                let text_threshold = threshold.unwrap_or_default();
                let t = set::Threshold::parse(measure, &text_threshold)?;
                let algorithm = set::Algorithm::parse(algorithm.as_deref().unwrap_or("ppjoinplus"), max_depth)?;
                let (pairs, stats, prepared, joined) = with_threads(threads, || {
                    let records = set::Records::from_lines(lines(&text));
                    let prepared = started.elapsed();
                    let (pairs, stats) = set::join(&records, t, algorithm);
                    (pairs, stats, prepared, started.elapsed())
                })?;
                (pairs, stats, prepared, joined, format!("{algorithm} {} >= {text_threshold}", measure.name()), false)
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
        Command::Check { document, corpus, threshold, adaptive, per_site, config } => {
            let config = match &config {
                Some(path) => PipelineConfig::load(path)?,
                None => PipelineConfig::default(),
            };
            let pages = corpus_pages(&source::expand(&corpus)?, &config)?;
            let index = dupflow::check::ShareIndex::new(pages, &config.template);
            let Some(document) = document else {
                let shares = index.corpus_shares();
                let (global, _) = dupflow::check::adaptive_thresholds(&shares, 20);
                let mut values: Vec<f64> = shares.iter().map(|&(_, s)| s).collect();
                values.sort_by(f64::total_cmp);
                let at = |q: f64| values.get(((values.len().max(1) - 1) as f64 * q).round() as usize).copied().unwrap_or(0.0);
                let count = |lo: f64, hi: f64| values.iter().filter(|&&v| v >= lo && (v < hi || hi > 1.0)).count();
                let bands: Vec<serde_json::Value> = (0..10)
                    .map(|b| {
                        let (lo, hi) = (b as f64 / 10.0, (b + 1) as f64 / 10.0 + if b == 9 { 1.0 } else { 0.0 });
                        serde_json::json!({"from": lo, "to": ((b + 1) as f64 / 10.0), "pages": count(lo, hi)})
                    })
                    .collect();
                let out = serde_json::json!({
                    "corpus_pages": values.len(),
                    "pages_at_least_half_duplicated": count(0.5, 2.0),
                    "pages_with_no_duplicated_sentence": count(0.0, 1e-12),
                    "median_share": at(0.5),
                    "p90_share": at(0.9),
                    "adaptive_threshold": global,
                    "histogram": bands,
                });
                println!("{}", serde_json::to_string_pretty(&out)?);
                return Ok(ExitCode::SUCCESS);
            };
            let (sentences, host, exclude) = match index.find(&document).and_then(|id| index.page(id).map(|p| (id, p))) {
                Some((id, page)) => (page.sentences.clone(), Some(page.host), Some(id)),
                None => {
                    let text = read_text(std::path::Path::new(&document))?;
                    (dupflow::check::document_sentences(&text, &config.sentence), None, None)
                }
            };
            let report = index.report(&sentences, host, exclude);
            let (threshold, rule) = if adaptive {
                let (global, per_host) = dupflow::check::adaptive_thresholds(&index.corpus_shares(), 20);
                match (per_site, host.and_then(|h| per_host.get(&h))) {
                    (true, Some(t)) => (*t, "adaptive (Otsu, this site)"),
                    _ => (
                        global.unwrap_or(threshold),
                        if global.is_some() { "adaptive (Otsu, corpus)" } else { "fixed (corpus too uniform for Otsu)" },
                    ),
                }
            } else {
                (threshold, "fixed")
            };
            let out = dupflow::check::answer(&document, &report, threshold, rule, index.len());
            println!("{}", serde_json::to_string_pretty(&out)?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Similar { inputs, reference, top, measure, shingle_words, language, synonyms } => {
            use dupflow_operators::cosine::{self, Canonicalizer, Idf, Language};
            let config = PipelineConfig::default();
            let synonyms = match &synonyms {
                Some(path) => std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?,
                None => String::new(),
            };
            let fixed = match language.as_str() {
                "auto" => None,
                "none" => Some(Language::Other),
                code => match Language::from_code(code) {
                    Language::Other => bail!("--language {code}: expected auto, en, ru, de, fr, es or none"),
                    l => Some(l),
                },
            };
            let mut canonicalizers: HashMap<Language, Canonicalizer> = HashMap::new();
            let mut terms_of = |text: &str| -> Vec<String> {
                let language = fixed.unwrap_or_else(|| Language::detect(text));
                canonicalizers.entry(language).or_insert_with(|| Canonicalizer::new(language).with_synonyms(&synonyms)).terms(text)
            };
            let text_of = |raw: &str| -> String {
                if raw.contains('<') && raw.contains('>') {
                    dupflow_operators::html::strip(raw).blocks.join("\n")
                } else {
                    raw.to_string()
                }
            };
            let reference_terms = terms_of(&text_of(&read_text(&reference)?));
            let mut pages: Vec<(String, Vec<String>)> = Vec::new();
            for input in source::expand(&inputs)? {
                source::read_records(&input, config.source.max_record_bytes, |item| {
                    let Ok(record) = item else { return };
                    if let Ok((source::http::Outcome::Page(doc), _)) =
                        source::http::interpret(&record, config.source.max_page_bytes as usize)
                    {
                        let terms = terms_of(&text_of(&doc.html));
                        pages.push((doc.url, terms));
                    }
                })?;
            }
            let mut scored: Vec<(f64, &str)> = match measure {
                SimilarMeasure::Cosine => {
                    let mut idf = Idf::default();
                    let counts: Vec<Vec<(u64, u32)>> = pages.iter().map(|(_, t)| cosine::term_counts(t)).collect();
                    counts.iter().for_each(|c| idf.update(c, 1));
                    let r = idf.vector(&cosine::term_counts(&reference_terms));
                    pages.iter().zip(&counts).map(|((url, _), c)| (cosine::cosine(&r, &idf.vector(c)), url.as_str())).collect()
                }
                SimilarMeasure::Resemblance | SimilarMeasure::Containment => {
                    let r = cosine::w_shingles(&reference_terms, shingle_words);
                    pages
                        .iter()
                        .map(|(url, t)| {
                            let p = cosine::w_shingles(t, shingle_words);
                            let v = if measure == SimilarMeasure::Resemblance {
                                cosine::resemblance(&r, &p)
                            } else {
                                cosine::containment(&r, &p)
                            };
                            (v, url.as_str())
                        })
                        .collect()
                }
            };
            scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
            let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
            finish_output((|| {
                for (score, url) in scored.iter().take(top) {
                    writeln!(stdout, "{score:.4} {url}")?;
                }
                stdout.flush()
            })())
        }
        Command::Validate { file } => {
            PipelineConfig::load(&file)?;
            println!("{}: ok", file.display());
            Ok(ExitCode::SUCCESS)
        }
        Command::Run {
            inputs,
            config,
            workers,
            out,
            processes,
            process,
            hostfile,
            metrics_address,
            linger,
            quiet,
            follow,
            deletions,
            checkpoint,
        } => {
            let config = match &config {
                Some(path) => PipelineConfig::load(path)?,
                None => PipelineConfig::default(),
            };
            let feed = if follow {
                if inputs.is_empty() {
                    bail!("--follow needs a file, a directory or `-` to follow");
                }
                let targets = inputs
                    .iter()
                    .map(|arg| match arg.as_str() {
                        "-" => dataflow::Followed::Stdin,
                        path if std::path::Path::new(path).is_dir() => dataflow::Followed::Dir(path.into()),
                        path => dataflow::Followed::File(path.into()),
                    })
                    .collect();
                dataflow::Feed::Follow(targets)
            } else if inputs.is_empty() {
                dataflow::Feed::Inputs(vec![dupflow::DEFAULT_INPUT])
            } else {
                dataflow::Feed::Inputs(source::expand(&inputs)?)
            };
            if checkpoint.is_some() && processes > 1 {
                bail!("--checkpoint works in one process (use --workers for threads)");
            }
            source::follow::install_stop_handler().context("installing the SIGINT/SIGTERM handler")?;
            if processes == 0 || process >= processes {
                bail!("--process must be below --processes");
            }
            let addresses = match (&hostfile, processes) {
                (_, 1) => Vec::new(),
                (Some(path), n) => {
                    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
                    let addresses: Vec<String> =
                        text.lines().map(str::trim).filter(|l| !l.is_empty()).take(n).map(str::to_string).collect();
                    if addresses.len() < n {
                        bail!("{} lists {} addresses, --processes is {n}", path.display(), addresses.len());
                    }
                    addresses
                }
                (None, n) => (0..n).map(|i| format!("127.0.0.1:{}", 2101 + i)).collect(),
            };
            let workers = workers.unwrap_or(config.run.workers);
            let metrics = Arc::new(Registry::default());
            let live = Arc::new(Live::new(metrics.clone(), config.metrics.cluster_alarm_pages));
            let address = metrics_address.unwrap_or_else(|| config.metrics.address.clone());
            if !address.is_empty() && process == 0 {
                // POST /api/check: the workers keep a sentence index of the pages they hold.
                *live.gate.lock().expect("gate") = Some(dupflow::check::Gate {
                    index: dupflow::check::ShareIndex::empty(&config.template),
                    sentence: config.sentence.clone(),
                });
                let bound = server::serve(&address, live.clone(), server::Limits::from_config(&config.metrics))?;
                tracing::info!("metrics on http://{bound}/metrics, dashboard on http://{bound}/");
            }
            let sampler = progress::start(live.clone(), quiet || process != 0);
            let names: Vec<String> = match &feed {
                dataflow::Feed::Inputs(inputs) => inputs.iter().map(|i| i.name()).collect(),
                _ => inputs.clone(),
            };
            let options = RunOptions {
                feed,
                config,
                workers,
                processes,
                process,
                addresses,
                live: live.clone(),
                out: out.clone(),
                deletions,
                checkpoint,
            };
            let output = dataflow::run(options)?;
            if process != 0 {
                sampler.stop();
                return Ok(ExitCode::SUCCESS);
            }
            let rows = output.rows.clone();
            if let Some(dir) = &out {
                sink::write_outputs(dir, &output, &rows).with_context(|| format!("writing to {}", dir.display()))?;
            }
            let summary = sink::summarize(&rows);
            let secs = output.elapsed.as_secs_f64();
            let pages = metrics.get(metrics::PAGES, "");
            let label = |m| metrics.by_label(m).iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ");
            tracing::info!(
                "read {} input(s): {}",
                names.len(),
                if names.len() <= 3 { names.join(", ") } else { format!("{} …", names[0]) }
            );
            println!("records:   {} ({})", metrics.total(metrics::RECORDS), label(metrics::RECORDS));
            println!(
                "pages:     {pages} in {secs:.2} s ({:.0} pages/s), {} revisits",
                pages as f64 / secs.max(1e-9),
                metrics.get(metrics::REVISITS, "")
            );
            println!(
                "clusters:  {} ({} with more than one page, holding {} pages; largest {})",
                summary.clusters, summary.multi_page_clusters, summary.pages_in_multi_page_clusters, summary.largest_cluster
            );
            let errors = metrics.total(metrics::RECORD_ERRORS) + metrics.total(metrics::DOCUMENT_ERRORS);
            if errors > 0 {
                println!("skipped as damaged: {errors} ({}; {})", label(metrics::RECORD_ERRORS), label(metrics::DOCUMENT_ERRORS));
            }
            let held = metrics.get(metrics::HELD_BYTES, "");
            if summary.pages > 0 {
                println!(
                    "held:      {:.1} MB of compact pages to retract or checkpoint ({} bytes a page)",
                    held as f64 / 1e6,
                    held / summary.pages as i64
                );
            }
            let updates = label(metrics::PAGE_UPDATES);
            if !updates.is_empty() {
                println!("updates:   {updates}");
            }
            {
                let mut latencies = live.latencies.lock().expect("latencies").clone();
                if !latencies.is_empty() {
                    latencies.sort_by(f32::total_cmp);
                    let at = |q: f64| latencies[((latencies.len() - 1) as f64 * q).round() as usize];
                    println!(
                        "latency:   record read → change written p50 {:.3} s, p99 {:.3} s over {} epochs{}",
                        at(0.5),
                        at(0.99),
                        output.epochs,
                        output.resumed_from.map(|e| format!(" (resumed at epoch {e})")).unwrap_or_default()
                    );
                }
            }
            let caps = label(metrics::CAPS);
            if !caps.is_empty() {
                println!("caps hit:  {caps}");
            }
            if let Some(dir) = &out {
                println!("wrote {}/clusters.jsonl, changes.jsonl, spans.jsonl, revisits.jsonl", dir.display());
            }
            // Outputs are on disk: the live view says "finished".
            live.finish();
            if linger > 0 && !address.is_empty() {
                tracing::info!("serving for {linger} more seconds");
                std::thread::sleep(std::time::Duration::from_secs(linger));
            }
            sampler.stop();
            Ok(ExitCode::SUCCESS)
        }
    }
}
