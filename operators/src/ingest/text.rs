//! Text canonicalization shared by the sentence stage and the cosine measure: NFKC, case
//! folding, punctuation separating words (or dropped, or `_`), white space collapsed.

use serde::{Deserialize, Serialize};
use unicode_normalization::{is_nfkc_quick, IsNormalized, UnicodeNormalization};

/// What normalization does with punctuation and symbols.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Punctuation {
    /// Drop them: `org.apache` is one word, `orgapache`.
    Remove,
    /// Replace each by `_` (the seed tool `txtformat`).
    Underscore,
    /// Separate words with them, as white space does (the default): `org.apache.commons` is
    /// three words, `Vec<T>` two, as a reader (or `\w+`) counts them; `_` stays inside a word
    /// (`add_executable` is one identifier, as `\w` has it). Sentences are equal as with
    /// `Remove` but for words a symbol joined (`can't` and `cant`), and a page's words, which
    /// word-level resemblance compares, are its words.
    #[default]
    Space,
}

/// Normalizes a sentence for hashing.
pub fn normalize(sentence: &str, punctuation: Punctuation) -> String {
    let mut out = String::new();
    normalize_into(sentence, punctuation, &mut out);
    out
}

/// `normalize` into `out` (cleared first), whose capacity is reused.
pub fn normalize_into(sentence: &str, punctuation: Punctuation, out: &mut String) {
    out.clear();
    let mut first = std::mem::take(out);
    first.reserve(sentence.len());
    *out = normalize_pass_into(sentence, punctuation, first);
    // Removing punctuation can bring a base letter and a combining mark together; one more
    // pass composes them, so that normalization is idempotent (tested).
    for _ in 0..2 {
        if out.is_ascii() || is_nfkc_quick(out.chars()) == IsNormalized::Yes {
            break;
        }
        *out = normalize_pass(out, punctuation);
    }
}

fn normalize_pass(sentence: &str, punctuation: Punctuation) -> String {
    normalize_pass_into(sentence, punctuation, String::with_capacity(sentence.len()))
}

/// One normalization pass, written into `text` (empty).
fn normalize_pass_into(sentence: &str, punctuation: Punctuation, text: String) -> String {
    debug_assert!(text.is_empty());
    let mut out = Collapsed { text, pending_space: false, punctuation };
    // NFKC is the identity on ASCII (most web text): ASCII goes byte by byte, and only the
    // pieces around non-ASCII characters go through NFKC. A normalization boundary
    // falls before every ASCII character: it is a starter (canonical combining class 0),
    // NFKC leaves it as it is, and it is never the second of a canonical composition. So NFKC
    // of the text is NFKC of its pieces cut before each ASCII character, joined, and
    // lowercasing is per character. A piece holding non-ASCII starts at the ASCII character
    // before it (`e` + U+0301 compose) and ends before the next ASCII character.
    let bytes = sentence.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        let Some(found) = bytes[at..].iter().position(|b| !b.is_ascii()) else {
            out.push_ascii_run(&sentence[at..]);
            break;
        };
        let first = at + found;
        let start = if first > at { first - 1 } else { first };
        out.push_ascii_run(&sentence[at..start]);
        let end = bytes[first..].iter().position(u8::is_ascii).map_or(bytes.len(), |k| first + k);
        sentence[start..end].nfkc().flat_map(char::to_lowercase).for_each(|c| out.push(c));
        at = end;
    }
    out.text
}

/// Builds normalized text: letters, digits and marks kept; punctuation and symbols dropped
/// (or `_`); runs of white space collapsed to one space, none at the ends.
struct Collapsed {
    text: String,
    pending_space: bool,
    punctuation: Punctuation,
}

impl Collapsed {
    #[cfg(test)]
    fn new(capacity: usize, punctuation: Punctuation) -> Self {
        Collapsed { text: String::with_capacity(capacity), pending_space: false, punctuation }
    }

    /// `push_ascii` of each byte of an ASCII text, a run of letters and digits at a time.
    fn push_ascii_run(&mut self, text: &str) {
        let bytes = text.as_bytes();
        let mut at = 0;
        while at < bytes.len() {
            if !bytes[at].is_ascii_alphanumeric() {
                self.push_ascii(bytes[at]);
                at += 1;
                continue;
            }
            let run = at;
            while at < bytes.len() && bytes[at].is_ascii_alphanumeric() {
                at += 1;
            }
            if self.pending_space {
                self.text.push(' ');
                self.pending_space = false;
            }
            let from = self.text.len();
            self.text.push_str(&text[run..at]);
            self.text[from..].make_ascii_lowercase();
        }
    }

    /// `push` of an ASCII character, lowercased (as `char::to_lowercase` does).
    fn push_ascii(&mut self, b: u8) {
        // `char::is_whitespace` on ASCII: tab, line feed, vertical tab, form feed, carriage
        // return and space.
        if matches!(b, b'\t'..=b'\r' | b' ') {
            self.space();
            return;
        }
        self.keep(b.is_ascii_alphanumeric(), b.to_ascii_lowercase() as char);
    }

    fn push(&mut self, c: char) {
        if c.is_whitespace() {
            self.space();
            return;
        }
        self.keep(c.is_alphanumeric() || is_mark(c), c);
    }

    fn space(&mut self) {
        self.pending_space = !self.text.is_empty();
    }

    /// A character that is not white space: kept when part of a `word` (and `_` with
    /// `Space`), else what `punctuation` makes of it.
    fn keep(&mut self, word: bool, c: char) {
        let kept = if word || (c == '_' && self.punctuation == Punctuation::Space) {
            c
        } else {
            match self.punctuation {
                Punctuation::Remove => return,
                Punctuation::Underscore => '_',
                Punctuation::Space => {
                    self.space();
                    return;
                }
            }
        };
        if self.pending_space {
            self.text.push(' ');
            self.pending_space = false;
        }
        self.text.push(kept);
    }
}

/// Combining marks stay: they are part of letters in many scripts (Devanagari, Thai, …).
fn is_mark(c: char) -> bool {
    matches!(c as u32, 0x0300..=0x036F | 0x0900..=0x0DFF | 0x0E00..=0x0E7F | 0x3099..=0x309A)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn ascii_fast_path_equals_the_general_path(s in "[ -~\t\n\x0b\x0c\r\x1c-\x1f]{0,80}") {
            for mode in [Punctuation::Remove, Punctuation::Underscore, Punctuation::Space] {
                let mut general = String::new();
                let mut pending = false;
                for c in s.nfkc().flat_map(char::to_lowercase) {
                    let word = c.is_alphanumeric() || (mode == Punctuation::Space && c == '_');
                    if c.is_whitespace() || (mode == Punctuation::Space && !word) { pending = !general.is_empty(); continue; }
                    let kept = if word { Some(c) } else if mode == Punctuation::Underscore { Some('_') } else { None };
                    if let Some(c) = kept { if pending { general.push(' '); pending = false; } general.push(c); }
                }
                let mut collapsed = Collapsed::new(s.len(), mode);
                s.chars().flat_map(char::to_lowercase).for_each(|c| collapsed.push(c));
                prop_assert_eq!(&collapsed.text, &general);
                prop_assert_eq!(normalize_pass(&s, mode), general);
            }
        }

        /// Mixed text (ASCII beside combining marks, compatibility forms, Hangul jamo, cased
        /// scripts, white space of both kinds): NFKC only on the pieces around non-ASCII is
        /// NFKC of the whole.
        #[test]
        fn pieces_around_non_ascii_normalize_as_the_whole(pieces in proptest::collection::vec(prop_oneof![
            "[ -~]{1,6}",
            Just("\u{301}".to_string()), Just("\u{308}\u{323}".to_string()), Just("\u{327}".to_string()),
            Just("\u{338}".to_string()), Just("\u{3099}".to_string()), Just("\u{93c}".to_string()),
            Just("ﬁ".to_string()), Just("½".to_string()), Just("Ａｂ".to_string()), Just("ℌ".to_string()),
            Just("\u{1100}".to_string()), Just("\u{1161}".to_string()), Just("\u{11a8}".to_string()),
            Just("Σ".to_string()), Just("İ".to_string()), Just("ẞ".to_string()), Just("\u{a0}".to_string()),
            Just("\u{2003}".to_string()), Just("’".to_string()), Just("—".to_string()), Just("か".to_string()),
            Just("\u{2126}".to_string()), Just("\u{212b}".to_string()), Just("é".to_string()),
        ], 0..12)) {
            let s: String = pieces.concat();
            for mode in [Punctuation::Remove, Punctuation::Underscore, Punctuation::Space] {
                let mut whole = Collapsed::new(s.len(), mode);
                s.nfkc().flat_map(char::to_lowercase).for_each(|c| whole.push(c));
                prop_assert_eq!(normalize_pass(&s, mode), whole.text);
            }
        }
    }
}
