//! The method's settings: the method's sections of pipeline.toml, as the operators take them.

use serde::{Deserialize, Serialize};

use crate::candidates::fingerprint::FingerprintConfig;
use crate::candidates::minhash::MinhashConfig;
use crate::candidates::simhash::SimhashConfig;
use crate::candidates::CandidateConfig;
use crate::template::TemplateConfig;
use crate::verify::{VerifyConfig, VerifyMethod};

/// Which fingerprints feed the candidate stage (`[fingerprint] type = …`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Fingerprinting {
    /// Huang et al.'s bucketed sentence fingerprints (the default).
    Sentence(FingerprintConfig),
    /// MinHash of word shingles, LSH bands exchanged as keys.
    Minhash(MinhashConfig),
    /// SimHash of weighted word shingles, Hamming distance ≤ k through block tables.
    Simhash(SimhashConfig),
}

impl Default for Fingerprinting {
    fn default() -> Self {
        Fingerprinting::Sentence(FingerprintConfig::default())
    }
}

/// All settings of the method (the method's sections of pipeline.toml).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct MethodConfig {
    pub template: TemplateConfig,
    pub fingerprint: Fingerprinting,
    pub candidates: CandidateConfig,
    pub verify: VerifyConfig,
}

impl MethodConfig {
    /// Words per shingle the sentence stage must compute (0: none needed).
    pub fn shingling(&self) -> crate::ingest::sentence::Shingling {
        use crate::ingest::sentence::Shingling;
        match (&self.fingerprint, self.verify.method) {
            (_, VerifyMethod::Cosine) => Shingling::Terms,
            (Fingerprinting::Minhash(m), _) => Shingling::Words(m.shingle_words as usize),
            (Fingerprinting::Simhash(s), _) => Shingling::Words(s.shingle_words as usize),
            (Fingerprinting::Sentence(_), VerifyMethod::Jaccard) => Shingling::Words(5),
            (Fingerprinting::Sentence(_), _) => Shingling::None,
        }
    }

    /// The size over which per-sentence groups compare only the pairs whose sentences may
    /// reach τ (`groups::GroupSettings::sentence_groups_over`): `candidates.common_sentence_pages`
    /// with sentence fingerprints and the LCS verifier without the central trim (which compares
    /// other contents than the fragment filter sees), else never (`usize::MAX`).
    pub fn sentence_groups_over(&self) -> usize {
        let applies = matches!(self.fingerprint, Fingerprinting::Sentence(_))
            && self.verify.method == VerifyMethod::Lcs
            && self.verify.central_trim_share <= 0.0;
        if applies {
            self.candidates.common_sentence_pages as usize
        } else {
            usize::MAX
        }
    }

    /// τ in parts per million for short pages' prefix filter when the verifier is LCS
    /// resemblance (its bound is that of `2·L / (W(a) + W(b))`), 0 otherwise: every sentence.
    pub fn short_prefix_ppm(&self) -> u64 {
        match self.verify.method {
            VerifyMethod::Lcs => crate::verify::lcs::ppm(self.verify.threshold),
            _ => 0,
        }
    }
}
