//! A text's canonical terms, for the TF-IDF cosine (`verify::cosine`) and for the sentence
//! stage's stemmed sentence keys (`[sentence] stem`): NFKC, lowercase, punctuation removed; stop
//! words and function words removed; words stemmed with Snowball; optional synonyms mapped to
//! one form; a word repeated right after itself collapsed. The language is fixed or detected per
//! text (whatlang); English, Russian, German, French and Spanish have a stemmer and stop words,
//! other languages are lowercased and split only.

use std::collections::{HashMap, HashSet};

use rust_stemmers::{Algorithm, Stemmer};
use serde::{Deserialize, Serialize};

use crate::ingest::text::{normalize, Punctuation};

/// The language of a text, for stemming and stop words.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    English,
    Russian,
    German,
    French,
    Spanish,
    /// No stemmer or stop words: lowercase words.
    Other,
}

impl Language {
    /// From an ISO 639-1 code or an HTML `lang` value (`en-GB` → English).
    pub fn from_code(code: &str) -> Language {
        match code.split(['-', '_']).next().unwrap_or("").to_ascii_lowercase().as_str() {
            "en" => Language::English,
            "ru" => Language::Russian,
            "de" => Language::German,
            "fr" => Language::French,
            "es" => Language::Spanish,
            _ => Language::Other,
        }
    }

    /// Detected from the text (whatlang's trigram model).
    pub fn detect(text: &str) -> Language {
        match whatlang::detect_lang(text) {
            Some(whatlang::Lang::Eng) => Language::English,
            Some(whatlang::Lang::Rus) => Language::Russian,
            Some(whatlang::Lang::Deu) => Language::German,
            Some(whatlang::Lang::Fra) => Language::French,
            Some(whatlang::Lang::Spa) => Language::Spanish,
            _ => Language::Other,
        }
    }

    fn code(self) -> Option<&'static str> {
        match self {
            Language::English => Some("en"),
            Language::Russian => Some("ru"),
            Language::German => Some("de"),
            Language::French => Some("fr"),
            Language::Spanish => Some("es"),
            Language::Other => None,
        }
    }

    fn algorithm(self) -> Option<Algorithm> {
        match self {
            Language::English => Some(Algorithm::English),
            Language::Russian => Some(Algorithm::Russian),
            Language::German => Some(Algorithm::German),
            Language::French => Some(Algorithm::French),
            Language::Spanish => Some(Algorithm::Spanish),
            Language::Other => None,
        }
    }
}

/// Turns text into canonical terms for one language.
pub struct Canonicalizer {
    language: Language,
    stemmer: Option<Stemmer>,
    stop: HashSet<String>,
    synonyms: HashMap<String, String>,
}

impl Canonicalizer {
    pub fn new(language: Language) -> Canonicalizer {
        let stop = language
            .code()
            .and_then(stop_words::lookup)
            .map(|words| words.iter().map(|w| normalize(w, Punctuation::Remove)).collect())
            .unwrap_or_default();
        Canonicalizer {
            language,
            stemmer: language.algorithm().map(Stemmer::create),
            stop,
            synonyms: HashMap::new(),
        }
    }

    /// Maps words to one form before stemming: each line `form: word word …` (or
    /// `form word word`), read as normalized words.
    pub fn with_synonyms(mut self, text: &str) -> Canonicalizer {
        for line in text.lines() {
            let line = line.split('#').next().unwrap_or("");
            let mut words = line
                .split(|c: char| c.is_whitespace() || c == ':' || c == ',')
                .filter(|w| !w.is_empty());
            let Some(form) = words.next() else { continue };
            let form = normalize(form, Punctuation::Remove);
            for word in words {
                self.synonyms.insert(normalize(word, Punctuation::Remove), form.clone());
            }
        }
        self
    }

    pub fn language(&self) -> Language {
        self.language
    }

    /// The canonical terms of a text, in order.
    pub fn terms(&self, text: &str) -> Vec<String> {
        let normalized = normalize(text, Punctuation::Remove);
        let mut out: Vec<String> = Vec::new();
        for word in normalized.split_whitespace() {
            let word = self.synonyms.get(word).map(String::as_str).unwrap_or(word);
            if self.stop.contains(word) {
                continue;
            }
            let term = match &self.stemmer {
                Some(s) => s.stem(word).into_owned(),
                None => word.to_string(),
            };
            if out.last() != Some(&term) {
                out.push(term);
            }
        }
        out
    }
}
