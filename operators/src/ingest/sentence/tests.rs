use super::*;
use proptest::prelude::*;

proptest! {
    /// The two `memchr3` searches find the terminators the character walk finds, and an
    /// ASCII word is an abbreviation as its lowercase is: the same sentences, on text dense
    /// in terminators, closers, abbreviations in any case, full-width terminators and other
    /// characters that share their lead bytes (E3, EF), and the Kelvin sign.
    #[test]
    fn the_searched_split_equals_the_char_by_char_walk(
        pieces in proptest::collection::vec(prop_oneof![
            "[a-zA-Z ]{1,5}", Just(". ".to_string()), Just(".".to_string()), Just("!".to_string()), Just("? ".to_string()),
            Just(";".to_string()), Just("; ".to_string()), Just(")".to_string()), Just("\"".to_string()), Just("’".to_string()),
            Just("e.g. ".to_string()), Just("ETC. ".to_string()), Just("Approx. ".to_string()), Just(" J. ".to_string()),
            Just("(fig. ".to_string()), Just("\u{212a}o. ".to_string()), Just("Dr. ".to_string()), Just("。".to_string()),
            Just("！".to_string()), Just("？".to_string()), Just("．".to_string()), Just("；".to_string()),
            Just("」".to_string()), Just("い".to_string()), Just("＄".to_string()), Just("é. ".to_string()),
            Just("\u{a0}".to_string()), Just("\n".to_string()),
        ], 0..40),
        semicolon in 0u32..12,
    ) {
        let block: String = pieces.concat();
        let mut out = Vec::new();
        split_into(&block, semicolon, &mut out);
        prop_assert_eq!(out, split_reference(&block, semicolon));
    }
}

#[test]
fn a_sentence_keeps_at_most_max_words_of_its_words() {
    let long = HashedSentence { normalized: "w ".repeat(40_000), md5: 0, key: 9, units: 40_000 };
    let short = HashedSentence { normalized: "a b c".into(), md5: 0, key: 10, units: 3 };
    let (sentences, words) = compact(&[long, short], &SentenceConfig::default());
    assert_eq!(sentences[0].words(), Sentence::MAX_WORDS);
    assert!(sentences[0].fingerprinted(), "the flag is not taken by the count");
    assert_eq!(sentences[1].words(), 3);
    assert_eq!(
        words.len(),
        Sentence::MAX_WORDS as usize + 3,
        "the words the sentences name, in order"
    );
}

#[test]
fn splits_on_terminators_but_not_numbers_or_abbreviations() {
    let s = split("Pi is 3.14 today. See e.g. the book! Is it? Yes", 80);
    assert_eq!(s, vec!["Pi is 3.14 today.", "See e.g. the book!", "Is it?", "Yes"]);
    let s = split("J. R. R. Tolkien wrote it. Done.", 80);
    assert_eq!(s, vec!["J. R. R. Tolkien wrote it.", "Done."]);
}

#[test]
fn stemmed_sentences_share_keys_across_inflections() {
    let meta = || PageMeta { id: PageId::default(), url: "".into(), host: 0, record_id: "".into() };
    let blocks = |t: &str| vec![t.to_string()];
    let plain = SentenceConfig::default();
    let stem = SentenceConfig { stem: true, language: "en".into(), ..Default::default() };
    let key = |config: &SentenceConfig, text: &str| {
        page_of(meta(), &blocks(text), config, Shingling::None).0.sentences[0].key
    };
    assert_ne!(key(&plain, "The runners were running home."), key(&plain, "A runner runs home."));
    assert_eq!(key(&stem, "The runners were running home."), key(&stem, "A runner runs home."));
    // The declared language wins over detection when "auto".
    let auto = SentenceConfig { stem: true, ..Default::default() };
    let (page, _) =
        page_in(meta(), &blocks("Книги в библиотеке."), &auto, Shingling::None, Some("ru"));
    let (other, _) =
        page_in(meta(), &blocks("Книгами библиотеки."), &auto, Shingling::None, Some("ru"));
    assert_eq!({ page.sentences[0].key }, { other.sentences[0].key });
    // Synonyms map words to one form before stemming.
    let file = std::env::temp_dir().join(format!("dupflow-synonyms-{}.txt", std::process::id()));
    std::fs::write(&file, "car: automobile auto\n").unwrap();
    let synonyms = SentenceConfig { synonyms: file.display().to_string(), ..stem.clone() };
    assert_eq!(key(&synonyms, "The automobile stopped."), key(&synonyms, "A car stopped."));
    assert_ne!(key(&stem, "The automobile stopped."), key(&stem, "A car stopped."));
    let _ = std::fs::remove_file(&file);
}

#[test]
fn splits_cjk_without_spaces() {
    let s = split("これはペンです。あれは本です！本当？", 80);
    assert_eq!(s, vec!["これはペンです。", "あれは本です！", "本当？"]);
    let s = split("这是一个句子。这是另一个。", 80);
    assert_eq!(s, vec!["这是一个句子。", "这是另一个。"]);
}

#[test]
fn splits_russian_and_korean() {
    let s = split("Это первое предложение. Это второе! 이것은 문장입니다. 그리고", 80);
    assert_eq!(s, vec!["Это первое предложение.", "Это второе!", "이것은 문장입니다.", "그리고"]);
}

#[test]
fn semicolon_splits_only_long_sentences() {
    assert_eq!(split("a; b", 80), vec!["a; b"]);
    let long = format!("{}; rest", "x".repeat(90));
    assert_eq!(split(&long, 80).len(), 2);
}

#[test]
fn closing_quotes_stay_with_their_sentence() {
    assert_eq!(split("He said \"stop.\" Then left.", 80), vec!["He said \"stop.\"", "Then left."]);
}

#[test]
fn normalizes_case_punctuation_width_and_space() {
    assert_eq!(normalize("  Hello,   WORLD!  ", Punctuation::Remove), "hello world");
    assert_eq!(normalize("Ｆｕｌｌ　ｗｉｄｔｈ", Punctuation::Remove), "full width");
    assert_eq!(normalize("a-b, c!", Punctuation::Underscore), "a_b_ c_");
    assert_eq!(
        normalize("org.apache.commons: Vec<T>!", Punctuation::Space),
        "org apache commons vec t"
    );
    assert_eq!(normalize("add_executable(<name>)", Punctuation::Space), "add_executable name");
    assert_eq!(normalize("« Ｆｕｌｌ—ｗｉｄｔｈ »", Punctuation::Space), "full width");
    assert_eq!(normalize("org.apache", Punctuation::Remove), "orgapache");
    assert_eq!(normalize("Привет, Мир!", Punctuation::Remove), "привет мир");
}

#[test]
fn units_count_cjk_heavier() {
    assert_eq!(units("abc", 3), 3);
    assert_eq!(units("日本語", 3), 9);
    assert_eq!(units("a b", 3), 2);
}

#[test]
fn hash_is_md5() {
    let (md5, key) = hash("");
    assert_eq!(format!("{md5:032x}"), "d41d8cd98f00b204e9800998ecf8427e");
    assert_eq!(key, u64::from_le_bytes([0xd4, 0x1d, 0x8c, 0xd9, 0x8f, 0x00, 0xb2, 0x04]));
}

#[test]
fn shingles_are_word_ngrams_and_cjk_characters_are_words() {
    let config = SentenceConfig::default();
    let page = split_page(&["one two three four"], &config);
    assert_eq!(shingles(&page.sentences, 2).len(), 3);
    assert_eq!(shingles(&page.sentences, 9).len(), 1);
    let cjk = split_page(&["日本語です"], &config);
    assert_eq!(shingles(&cjk.sentences, 1).len(), 5);
    assert!(shingles(&[], 3).is_empty());
}

#[test]
fn sentence_cap_keeps_the_head_and_the_tail_and_is_reported() {
    let blocks = vec!["One here. Two here. Three here.", "Four here. Five here."];
    let texts = |config: &SentenceConfig| -> (Vec<String>, bool) {
        let page = split_page(&blocks, config);
        (page.sentences.into_iter().map(|s| s.normalized).collect(), page.truncated)
    };
    let (kept, truncated) =
        texts(&SentenceConfig { max_sentences_per_page: 2, ..Default::default() });
    assert_eq!(kept, ["one here", "five here"]);
    assert!(truncated);
    let (kept, truncated) =
        texts(&SentenceConfig { max_sentences_per_page: 3, ..Default::default() });
    assert_eq!(kept, ["one here", "two here", "five here"], "the head takes the odd one");
    assert!(truncated);
    let (kept, truncated) =
        texts(&SentenceConfig { max_sentences_per_page: 4, ..Default::default() });
    assert_eq!(kept, ["one here", "two here", "four here", "five here"], "the tail in its order");
    assert!(truncated);
    let (kept, truncated) =
        texts(&SentenceConfig { max_sentences_per_page: 5, ..Default::default() });
    assert_eq!(kept.len(), 5);
    assert!(!truncated, "at the cap, nothing is dropped");
    // Sentences that normalize to nothing do not count.
    let page = split_page(
        &["One here. ... Two here."],
        &SentenceConfig { max_sentences_per_page: 2, ..Default::default() },
    );
    assert_eq!((page.sentences.len(), page.truncated), (2, false));
}

/// `split_page` the plain way, the reference of `each_sentence`: a `Vec` a block, a `String` a
/// sentence.
fn split_page_reference(blocks: &[String], config: &SentenceConfig) -> SplitPage {
    let hashed = |raw: &str| -> Option<HashedSentence> {
        let normalized = normalize(raw, config.punctuation);
        if normalized.is_empty() {
            return None;
        }
        let (md5, key) = hash(&normalized);
        let units = units(&normalized, config.cjk_char_units);
        Some(HashedSentence { normalized, md5, key, units })
    };
    let raw: Vec<&str> =
        blocks.iter().flat_map(|block| split(block, config.semicolon_split_chars)).collect();
    let cap = config.max_sentences_per_page as usize;
    let mut sentences: Vec<HashedSentence> = Vec::new();
    let mut next = 0;
    while next < raw.len() && sentences.len() < cap - cap / 2 {
        sentences.extend(hashed(raw[next]));
        next += 1;
    }
    let mut tail = Vec::new();
    let mut end = raw.len();
    while end > next && tail.len() < cap / 2 {
        end -= 1;
        tail.extend(hashed(raw[end]));
    }
    let truncated = raw[next..end].iter().any(|r| !normalize(r, config.punctuation).is_empty());
    sentences.extend(tail.into_iter().rev());
    SplitPage { sentences, truncated }
}

/// `is_abbreviation` by the word's lowercase, whatever its characters.
fn abbreviation_reference(before: &str) -> bool {
    let word = before.rsplit(|c: char| c.is_whitespace() || c == '(').next().unwrap_or("");
    let mut chars = word.chars();
    match chars.next() {
        None => false,
        Some(first) if chars.next().is_none() && first.is_alphabetic() && first.is_uppercase() => {
            true
        }
        Some(_) => ABBREVIATIONS.contains(&word.to_lowercase().as_str()),
    }
}

fn split_reference(block: &str, semicolon_split_chars: u32) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0usize;
    let mut iter = block.char_indices().peekable();
    while let Some((i, c)) = iter.next() {
        let end = i + c.len_utf8();
        let next = iter.peek().map(|&(_, n)| n);
        let boundary = match c {
            '。' | '！' | '？' | '．' => true,
            '.' | '!' | '?' => {
                // Closing quotes and brackets may stand between the terminator and the space.
                let after = block[end..].trim_start_matches(is_closing);
                let followed_by_space = after.chars().next().is_none_or(char::is_whitespace);
                followed_by_space && !(c == '.' && abbreviation_reference(&block[start..i]))
            }
            ';' | '；' => {
                let len = block[start..i].chars().count() as u32;
                len >= semicolon_split_chars && next.is_none_or(|n| n.is_whitespace() || c == '；')
            }
            _ => false,
        };
        if boundary {
            // Keep closing quotes and brackets with the sentence they close.
            let mut stop = end;
            while let Some(&(j, n)) = iter.peek() {
                if is_closing(n) {
                    stop = j + n.len_utf8();
                    iter.next();
                } else {
                    break;
                }
            }
            push_trimmed(&mut out, &block[start..stop]);
            start = stop;
        }
    }
    push_trimmed(&mut out, &block[start..]);
    out
}

proptest! {
    /// The dataflow's pages made without keeping each sentence's text are the pages made
    /// from `split_page`'s sentences: the same keys, weights, words and cap.
    #[test]
    fn a_compact_page_is_the_compact_of_its_split_page(
        blocks in proptest::collection::vec(proptest::collection::vec(proptest::sample::select(vec![
            "Word", "other", " ", "  ", "\n", ". ", "! ", "? ", "; ", "e.g. ", "3.14", ",", "-", "_", "日本語。", "é", "e\u{301}",
            "ﬁ", "Ａｂ", "\u{a0}", "a long clause that runs on and on for a while", "Mr. ", "(x) ", "\u{338}",
        ]), 0..16).prop_map(|pieces| pieces.concat()), 0..8),
        cap in 1u32..12,
        punctuation in proptest::sample::select(vec![Punctuation::Space, Punctuation::Remove, Punctuation::Underscore]),
        semicolon in 0u32..40,
    ) {
        let config = SentenceConfig { max_sentences_per_page: cap, punctuation, semicolon_split_chars: semicolon, ..SentenceConfig::default() };
        let split = split_page(&blocks, &config);
        let reference = split_page_reference(&blocks, &config);
        prop_assert_eq!(&split.sentences, &reference.sentences);
        prop_assert_eq!(split.truncated, reference.truncated);
        let (sentences, words) = compact(&split.sentences, &config);
        prop_assert_eq!(compact_page(&blocks, &config), (sentences, words, split.truncated));
        // Word shingles take the path through `split_page` (they read the sentences' text).
        let meta = || PageMeta { id: PageId::new(7, "u", "r"), url: "u".into(), host: 1, record_id: "r".into() };
        let (fast, fast_truncated) = page_in(meta(), &blocks, &config, Shingling::None, None);
        let (slow, slow_truncated) = page_in(meta(), &blocks, &config, Shingling::Words(3), None);
        prop_assert_eq!(fast_truncated, slow_truncated);
        prop_assert_eq!(&fast.sentences[..], &slow.sentences[..]);
        prop_assert_eq!(fast.words.to_vec(), slow.words.to_vec());
    }

    #[test]
    fn split_never_loses_a_non_space_character(block in "\\PC{0,200}") {
        let pieces = split(&block, 10);
        let joined: String = pieces.concat().chars().filter(|c| !c.is_whitespace()).collect();
        let original: String = block.chars().filter(|c| !c.is_whitespace()).collect();
        prop_assert_eq!(joined, original);
        prop_assert!(pieces.iter().all(|p| !p.trim().is_empty()));
    }

    /// The scan that jumps between terminator bytes splits as the char-by-char walk did.
    #[test]
    fn split_equals_the_char_by_char_walk(block in "([a-zA-Z0-9 ]{0,12}|[.!?;)\"'”»。！？．；]|e\\.g|Mr|J\\. |\\PC){0,40}", semi in 0u32..20) {
        prop_assert_eq!(split(&block, semi), split_reference(&block, semi));
    }

    #[test]
    fn units_of_ascii_count_what_the_general_path_counts(s in "[ -~\t\n\x0b\x0c\r]{0,80}") {
        let general: u32 = s.chars().filter(|c| !c.is_whitespace()).count() as u32;
        prop_assert_eq!(units(&s, 3), general);
    }

    /// The ASCII path splits words where the character walk does.
    #[test]
    fn ascii_word_hashes_equal_the_character_walk(s in "[ -~\t\n\x0b\x0c\r\x1c-\x1f]{0,80}") {
        let (mut fast, mut walk) = (Vec::new(), Vec::new());
        word_hashes(&s, &mut fast);
        word_hashes_chars(&s, &mut walk);
        prop_assert_eq!(&fast, &walk);
        let mut both = Vec::new();
        let general: u32 = s.chars().filter(|c| !c.is_whitespace()).count() as u32;
        prop_assert_eq!(units_and_words(&s, 3, &mut both), general);
        prop_assert_eq!(&both, &walk);
    }

    /// One pass or two, over any text: the same units and words.
    #[test]
    fn units_and_words_are_units_and_word_hashes(s in "([a-z ]{0,6}|\\PC){0,30}", cjk in 1u32..4) {
        let (mut one, mut two) = (Vec::new(), Vec::new());
        let units_one = units_and_words(&s, cjk, &mut one);
        word_hashes(&s, &mut two);
        prop_assert_eq!((units_one, one), (units(&s, cjk), two));
    }

    #[test]
    fn normalization_is_idempotent(s in "\\PC{0,100}") {
        for mode in [Punctuation::Remove, Punctuation::Underscore, Punctuation::Space] {
            let once = normalize(&s, mode);
            prop_assert_eq!(normalize(&once, mode), once.clone());
        }
    }

    #[test]
    fn normalization_is_idempotent_on_scripts(s in "[a-zA-Zа-яА-Я日本語한국어ﬁ①Ⅻ .,!?ß̈İ]{0,60}") {
        for mode in [Punctuation::Remove, Punctuation::Space] {
            let once = normalize(&s, mode);
            prop_assert_eq!(normalize(&once, mode), once.clone());
        }
    }
}
