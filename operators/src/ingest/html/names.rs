//! What the strip asks of an element's name, answered by one table lookup: a set of flags, one
//! for each list of names below (HTML's special and formatting elements, the scopes' bounds, the
//! extraction's hidden and block elements, the landmarks, …).
//!
//! A name is asked about several times between its tag and its closing (the scanner's rules,
//! the extraction's, the landmarks'), and each question was a `matches!` over tens of strings.
//! Now the table is made from the lists when the crate is compiled, a name is looked up once
//! (packed into a `u128` with its length, hashed, compared whole), and each question is a bit.

/// A flag set: bits from the constants below.
pub(super) type Flags = u32;

/// HTML's special elements (html5ever's list).
pub(super) const SPECIAL: Flags = 1 << 0;
/// The formatting elements (the adoption agency's).
pub(super) const FORMATTING: Flags = 1 << 1;
/// The elements "generate implied end tags" closes.
pub(super) const IMPLIED_END: Flags = 1 << 2;
/// `h1` to `h6`.
pub(super) const HEADING: Flags = 1 << 3;
/// The boundaries of an element's default scope (html5ever's list, `select` in it).
pub(super) const BOUNDS_DEFAULT: Flags = 1 << 4;
/// The button scope's: the default's and `button`.
pub(super) const BOUNDS_BUTTON: Flags = 1 << 5;
/// The list item scope's: the default's, `ol` and `ul`.
pub(super) const BOUNDS_LIST_ITEM: Flags = 1 << 6;
/// The table scope's.
pub(super) const BOUNDS_TABLE: Flags = 1 << 7;
/// A cell, a row, a section or a table: what the table modes look for.
pub(super) const TABLE_ELEMENT: Flags = 1 << 8;
/// Void elements (no end tag, no content).
pub(super) const VOID: Flags = 1 << 9;
/// The body's start tags the byte scanner leaves to the parser.
pub(super) const GIVES_UP_IN_BODY: Flags = 1 << 10;
/// The extraction's hidden elements: nothing inside them is visible text.
pub(super) const HIDDEN: Flags = 1 << 11;
/// The extraction's block elements: a block of text ends at their start and their end.
pub(super) const BLOCK: Flags = 1 << 12;
/// `main`: the main content's landmark.
pub(super) const MAIN: Flags = 1 << 13;
/// `nav`: the page's chrome wherever it is.
pub(super) const NAV: Flags = 1 << 14;
/// `header`, `footer`, `aside`: the page's chrome outside the main content and sectioning
/// elements.
pub(super) const PAGE_CHROME: Flags = 1 << 15;
/// The sectioning elements: a `header` or `footer` inside one belongs to it.
pub(super) const SECTIONING: Flags = 1 << 16;
/// `title`.
pub(super) const TITLE: Flags = 1 << 17;
/// `pre`.
pub(super) const PRE: Flags = 1 << 18;

/// The lists, each with its flags.
const LISTS: &[(Flags, &[&str])] = &[
    (
        SPECIAL,
        &[
            "address",
            "applet",
            "area",
            "article",
            "aside",
            "base",
            "basefont",
            "bgsound",
            "blockquote",
            "body",
            "br",
            "button",
            "caption",
            "center",
            "col",
            "colgroup",
            "dd",
            "details",
            "dir",
            "div",
            "dl",
            "dt",
            "embed",
            "fieldset",
            "figcaption",
            "figure",
            "footer",
            "form",
            "frame",
            "frameset",
            "h1",
            "h2",
            "h3",
            "h4",
            "h5",
            "h6",
            "head",
            "header",
            "hgroup",
            "hr",
            "html",
            "iframe",
            "img",
            "input",
            "isindex",
            "li",
            "link",
            "listing",
            "main",
            "marquee",
            "menu",
            "meta",
            "nav",
            "noembed",
            "noframes",
            "noscript",
            "object",
            "ol",
            "p",
            "param",
            "plaintext",
            "pre",
            "script",
            "section",
            "select",
            "source",
            "style",
            "summary",
            "table",
            "tbody",
            "td",
            "template",
            "textarea",
            "tfoot",
            "th",
            "thead",
            "title",
            "tr",
            "track",
            "ul",
            "wbr",
            "xmp",
        ],
    ),
    (
        FORMATTING,
        &[
            "a", "b", "big", "code", "em", "font", "i", "nobr", "s", "small", "strike", "strong",
            "tt", "u",
        ],
    ),
    (IMPLIED_END, &["dd", "dt", "li", "option", "optgroup", "p", "rb", "rp", "rt", "rtc"]),
    (HEADING, &["h1", "h2", "h3", "h4", "h5", "h6"]),
    // The default scope's bounds bound the button and list item scopes too.
    (
        BOUNDS_DEFAULT | BOUNDS_BUTTON | BOUNDS_LIST_ITEM,
        &[
            "applet", "caption", "html", "table", "td", "th", "marquee", "object", "select",
            "template",
        ],
    ),
    (BOUNDS_BUTTON, &["button"]),
    (BOUNDS_LIST_ITEM, &["ol", "ul"]),
    (BOUNDS_TABLE, &["html", "table", "template"]),
    (TABLE_ELEMENT, &["td", "th", "tr", "tbody", "thead", "tfoot", "table"]),
    (
        VOID,
        &[
            "area", "br", "embed", "img", "keygen", "wbr", "input", "param", "source", "track",
            "hr", "base", "basefont", "bgsound", "link", "meta",
        ],
    ),
    (
        GIVES_UP_IN_BODY,
        &[
            "html",
            "body",
            "frameset",
            "noframes",
            "script",
            "style",
            "title",
            "plaintext",
            "applet",
            "marquee",
            "object",
            "image",
            "textarea",
            "xmp",
            "noembed",
            "select",
            "option",
            "optgroup",
            "rb",
            "rtc",
            "rp",
            "rt",
            "math",
            "svg",
            "caption",
            "col",
            "colgroup",
            "frame",
        ],
    ),
    (
        HIDDEN,
        &[
            "script", "style", "noscript", "template", "svg", "math", "head", "iframe", "object",
            "canvas", "select", "datalist", "button",
        ],
    ),
    (
        BLOCK,
        &[
            "p",
            "div",
            "li",
            "ul",
            "ol",
            "dl",
            "dt",
            "dd",
            "h1",
            "h2",
            "h3",
            "h4",
            "h5",
            "h6",
            "td",
            "th",
            "tr",
            "table",
            "thead",
            "tbody",
            "tfoot",
            "caption",
            "br",
            "hr",
            "pre",
            "blockquote",
            "section",
            "article",
            "aside",
            "header",
            "footer",
            "nav",
            "main",
            "figure",
            "figcaption",
            "form",
            "fieldset",
            "legend",
            "address",
            "details",
            "summary",
            "body",
            "html",
            "center",
            "menu",
            "option",
            "textarea",
            "label",
            "input",
            "img",
            "video",
            "audio",
        ],
    ),
    (MAIN, &["main"]),
    (NAV, &["nav", "aside"]),
    (PAGE_CHROME, &["header", "footer", "aside"]),
    (SECTIONING, &["article", "section", "aside", "nav"]),
    (TITLE, &["title"]),
    (PRE, &["pre"]),
];

/// The longest name a key holds (its 16th byte is the length).
const MAX_NAME: usize = 15;
const SLOT_BITS: u32 = 8;
const SLOTS: usize = 1 << SLOT_BITS;

/// A name's bytes and length in a `u128` (0 for none: a key is never 0, its length byte is not).
const fn key(name: &[u8]) -> u128 {
    if name.is_empty() || name.len() > MAX_NAME {
        return 0;
    }
    let mut bytes = [0u8; 16];
    let mut i = 0;
    while i < name.len() {
        bytes[i] = name[i];
        i += 1;
    }
    bytes[15] = name.len() as u8;
    u128::from_le_bytes(bytes)
}

const fn slot(key: u128) -> usize {
    let mixed = (key as u64) ^ ((key >> 64) as u64).rotate_left(29);
    (mixed.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - SLOT_BITS)) as usize
}

/// [`key`] of a name of 1 to [`MAX_NAME`] bytes, read with word loads (two that overlap where
/// the name is longer than a word), not a byte at a time or through a copy.
fn loaded_key(name: &[u8]) -> u128 {
    let len = name.len();
    debug_assert!((1..=MAX_NAME).contains(&len));
    let word = |at: usize| u64::from_le_bytes(name[at..at + 8].try_into().expect("8 bytes"));
    let half =
        |at: usize| u64::from(u32::from_le_bytes(name[at..at + 4].try_into().expect("4 bytes")));
    // The name's bytes from 0 in `low` and from 8 in `high`, zero-filled: the last word (or
    // half) read ends at the name's end, and shifting it right drops what the first one read.
    let (low, high) = match len {
        8..=15 => (word(0), (word(len - 8) >> 1) >> (8 * (16 - len) - 1)),
        4..=7 => (half(0) | ((half(len - 4) >> (8 * (8 - len))) << 32), 0),
        _ => (name.iter().rev().fold(0u64, |low, &b| low << 8 | u64::from(b)), 0),
    };
    u128::from(low) | u128::from(high) << 64 | (len as u128) << 120
}

/// Every listed name's key and flags, by linear probing from its hash's slot.
static TABLE: [(u128, Flags); SLOTS] = {
    let mut table = [(0u128, 0 as Flags); SLOTS];
    let mut list = 0;
    while list < LISTS.len() {
        let (flag, names) = LISTS[list];
        let mut n = 0;
        while n < names.len() {
            let key = key(names[n].as_bytes());
            assert!(key != 0, "a listed name is longer than a key holds");
            let mut at = slot(key);
            while table[at].0 != 0 && table[at].0 != key {
                at = (at + 1) % SLOTS;
            }
            table[at] = (key, table[at].1 | flag);
            n += 1;
        }
        list += 1;
    }
    table
};

/// The flags of an element's name (lowercase, as the tokenizer gives it): those of each list it
/// is in, 0 for a name in none.
pub(super) fn flags(name: &str) -> Flags {
    let name = name.as_bytes();
    if name.is_empty() || name.len() > MAX_NAME {
        return 0;
    }
    let key = loaded_key(name);
    let mut at = slot(key);
    loop {
        let (held, flags) = TABLE[at];
        if held == key {
            return flags;
        }
        if held == 0 {
            return 0;
        }
        at = (at + 1) % SLOTS;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The flags from the lists themselves: each list searched for the name.
    fn flags_from_the_lists(name: &str) -> Flags {
        LISTS
            .iter()
            .filter(|(_, names)| names.contains(&name))
            .fold(0, |flags, (flag, _)| flags | flag)
    }

    #[test]
    fn every_listed_name_and_its_near_misses_get_the_lists_flags() {
        let mut names: Vec<String> =
            LISTS.iter().flat_map(|(_, names)| names.iter().map(|n| n.to_string())).collect();
        let near: Vec<String> = names
            .iter()
            .flat_map(|n| {
                [
                    n.to_ascii_uppercase(),
                    format!("{n}x"),
                    n[..n.len() - 1].to_string(),
                    format!("x{n}"),
                    format!("{n}\0"),
                    format!("{n:\0<15}"),
                ]
            })
            .collect();
        names.extend(near);
        names.extend(
            ["", "span", "a-very-long-custom-element", "figcaptionfigcap", "é", "h7"]
                .map(String::from),
        );
        for name in &names {
            assert_eq!(flags(name), flags_from_the_lists(name), "{name:?}");
        }
        assert_eq!(
            flags("td"),
            SPECIAL | BOUNDS_DEFAULT | BOUNDS_BUTTON | BOUNDS_LIST_ITEM | TABLE_ELEMENT | BLOCK
        );
    }

    #[test]
    fn a_loaded_key_is_the_bytes_key() {
        let bytes: Vec<u8> = (1..=MAX_NAME as u8).map(|b| b.wrapping_mul(37) | 0x80).collect();
        for len in 1..=MAX_NAME {
            for from in 0..=MAX_NAME - len {
                let name = &bytes[from..from + len];
                assert_eq!(loaded_key(name), key(name), "{name:?}");
            }
        }
    }

    #[test]
    fn the_button_and_list_item_scopes_extend_the_default_one() {
        for (_, names) in LISTS {
            for name in *names {
                let f = flags(name);
                if f & BOUNDS_DEFAULT != 0 {
                    assert!(f & BOUNDS_BUTTON != 0 && f & BOUNDS_LIST_ITEM != 0, "{name}");
                }
                assert_eq!(
                    f & BOUNDS_BUTTON != 0,
                    f & BOUNDS_DEFAULT != 0 || *name == "button",
                    "{name}"
                );
                assert_eq!(
                    f & BOUNDS_LIST_ITEM != 0,
                    f & BOUNDS_DEFAULT != 0 || matches!(*name, "ol" | "ul"),
                    "{name}"
                );
            }
        }
    }

    proptest::proptest! {
        /// Any name, listed or not: the table's flags are the lists'.
        #[test]
        fn any_name_gets_the_lists_flags(name in "[a-z0-9\\-]{0,17}|(a|b|p|td|tr|th|h[1-7]|nav|main|pre|title|svg|select|template)[a-z]?") {
            proptest::prop_assert_eq!(flags(&name), flags_from_the_lists(&name), "{:?}", name);
        }
    }
}
