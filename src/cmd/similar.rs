//! `dupflow similar`: pages of WARC inputs ranked by similarity to a reference text.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};

use dupflow::config::PipelineConfig;
use dupflow::source;

use super::{finish_output, read_text};

/// Arguments of `dupflow similar`.
#[derive(clap::Args)]
pub struct Args {
    /// WARC inputs (files, directories, globs).
    #[arg(required = true)]
    pub inputs: Vec<String>,
    /// The reference: an HTML or text file (`-`: stdin).
    #[arg(long)]
    pub reference: PathBuf,
    /// How many pages to print.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// cosine (TF-IDF), resemblance or containment (w-shingles of the reference in the page).
    #[arg(long, value_enum, default_value_t = Measure::Cosine)]
    pub measure: Measure,
    /// Words per shingle for resemblance and containment.
    #[arg(long, default_value_t = 4)]
    pub shingle_words: usize,
    /// Language for stemming and stop words: auto (detected per text), en, ru, de, fr, es,
    /// or none.
    #[arg(long, default_value = "auto")]
    pub language: String,
    /// A synonym file: lines `form: word word …`.
    #[arg(long)]
    pub synonyms: Option<PathBuf>,
}

pub fn execute(args: Args) -> Result<ExitCode> {
    let Args { inputs, reference, top, measure, shingle_words, language, synonyms } = args;
    use dupflow_operators::verify::cosine::{self, Canonicalizer, Idf, Language};
    let config = PipelineConfig::default();
    let synonyms = match &synonyms {
        Some(path) => {
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?
        }
        None => String::new(),
    };
    let fixed = match language.as_str() {
        "auto" => None,
        "none" => Some(Language::Other),
        code => match Language::from_code(code) {
            Language::Other => {
                bail!("--language {code}: expected auto, en, ru, de, fr, es or none")
            }
            l => Some(l),
        },
    };
    let mut canonicalizers: HashMap<Language, Canonicalizer> = HashMap::new();
    let mut terms_of = |text: &str| -> Vec<String> {
        let language = fixed.unwrap_or_else(|| Language::detect(text));
        canonicalizers
            .entry(language)
            .or_insert_with(|| Canonicalizer::new(language).with_synonyms(&synonyms))
            .terms(text)
    };
    let text_of = |raw: &str| -> String {
        if raw.contains('<') && raw.contains('>') {
            dupflow_operators::ingest::html::strip_with(raw, config.sentence.landmarks)
                .blocks
                .join("\n")
        } else {
            raw.to_string()
        }
    };
    let reference_terms = terms_of(&text_of(&read_text(&reference)?));
    let mut pages: Vec<(String, Vec<String>)> = Vec::new();
    let inputs = source::expand(&inputs)?;
    let max = config.source.max_record_bytes;
    super::read_all_records(&inputs, max, "reading the pages", |item| {
        let Ok(record) = item else { return };
        if let Ok((source::http::Outcome::Page(doc), _)) =
            source::http::interpret(&record, config.source.max_page_bytes as usize)
        {
            let terms = terms_of(&text_of(&doc.html));
            pages.push((doc.url, terms));
        }
    })?;
    let mut scored: Vec<(f64, &str)> = match measure {
        Measure::Cosine => {
            let mut idf = Idf::default();
            let counts: Vec<Vec<(u64, u32)>> =
                pages.iter().map(|(_, t)| cosine::term_counts(t)).collect();
            counts.iter().for_each(|c| idf.update(c, 1));
            let r = idf.vector(&cosine::term_counts(&reference_terms));
            pages
                .iter()
                .zip(&counts)
                .map(|((url, _), c)| (cosine::cosine(&r, &idf.vector(c)), url.as_str()))
                .collect()
        }
        Measure::Resemblance | Measure::Containment => {
            let r = cosine::w_shingles(&reference_terms, shingle_words);
            pages
                .iter()
                .map(|(url, t)| {
                    let p = cosine::w_shingles(t, shingle_words);
                    let v = if measure == Measure::Resemblance {
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

/// How `dupflow similar` scores a page.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Measure {
    Cosine,
    Resemblance,
    Containment,
}
