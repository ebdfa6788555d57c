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

/// Fingerprints that group pages: each fingerprint's pages are a group
/// (`candidates::fingerprint`, `candidates::minhash`).
#[derive(Clone, Debug, PartialEq)]
pub enum Grouping {
    /// Sentence and word fingerprints, with the short pages' prefix share (`short_prefix_ppm`).
    Sentence(FingerprintConfig, u64),
    /// MinHash LSH bands of the page's shingles.
    Minhash(MinhashConfig),
}

/// Where candidate sets come from: groups of a fingerprint, or SimHash's edges within a
/// Hamming distance (`candidates::simhash`).
#[derive(Clone, Debug, PartialEq)]
pub enum Candidates {
    Groups(Grouping),
    Simhash(SimhashConfig),
}

/// How pages become clusters, decided once from the settings (`MethodConfig::plan`).
#[derive(Clone, Debug, PartialEq)]
pub enum Plan {
    /// Connected clusters (or star clusters cut from them) verified along each fingerprint
    /// group, work per page bounded (`graph::bounded_clusters`).
    Bounded(Grouping),
    /// Whole candidate sets first, each then clustered by the verifier (the paper's leader
    /// rule; SimHash's edges with any clustering).
    Sets(Candidates),
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
    /// How the graph is built (`Plan`): the one place the fingerprinting and the clustering
    /// are matched.
    pub fn plan(&self) -> Plan {
        use crate::verify::Clustering;
        let grouping = match &self.fingerprint {
            Fingerprinting::Sentence(c) => Grouping::Sentence(c.clone(), self.short_prefix_ppm()),
            Fingerprinting::Minhash(c) => Grouping::Minhash(c.clone()),
            Fingerprinting::Simhash(c) => return Plan::Sets(Candidates::Simhash(c.clone())),
        };
        match self.verify.clustering {
            Clustering::Connected | Clustering::Star => Plan::Bounded(grouping),
            Clustering::Leader => Plan::Sets(Candidates::Groups(grouping)),
        }
    }

    /// Where candidate sets come from (`Plan::Sets`), whatever the clustering.
    pub fn candidates(&self) -> Candidates {
        match self.plan() {
            Plan::Bounded(grouping) => Candidates::Groups(grouping),
            Plan::Sets(candidates) => candidates,
        }
    }

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
