//! The scanner's reading of bytes: attribute values, character references, the next `<`.

use super::super::{is_tag_space, mentions};

/// The first value of attribute `want` among a tag's attribute bytes, as the tokenizer reads
/// them; `Err` where it holds a character reference or a NUL (the scanner gives up).
pub(super) fn attribute<'a>(attributes: &'a [u8], want: &[u8]) -> Result<Option<&'a str>, ()> {
    if !mentions(attributes, want) {
        return Ok(None);
    }
    let len = attributes.len();
    let mut at = 0;
    loop {
        while at < len && (is_tag_space(attributes[at]) || attributes[at] == b'/') {
            at += 1;
        }
        if at >= len {
            return Ok(None);
        }
        if attributes[at] == b'=' {
            return Err(());
        }
        let name_start = at;
        while at < len && !is_tag_space(attributes[at]) && !matches!(attributes[at], b'/' | b'=') {
            at += 1;
        }
        let name = &attributes[name_start..at];
        while at < len && is_tag_space(attributes[at]) {
            at += 1;
        }
        let mut value: &[u8] = b"";
        if at < len && attributes[at] == b'=' {
            at += 1;
            while at < len && is_tag_space(attributes[at]) {
                at += 1;
            }
            if at < len && matches!(attributes[at], b'"' | b'\'') {
                let quote = attributes[at];
                let end = at + 1 + memchr::memchr(quote, &attributes[at + 1..]).ok_or(())?;
                value = &attributes[at + 1..end];
                at = end + 1;
            } else {
                let start = at;
                while at < len && !is_tag_space(attributes[at]) {
                    at += 1;
                }
                value = &attributes[start..at];
            }
        }
        if name.eq_ignore_ascii_case(want) {
            if value.contains(&b'&') || value.contains(&0) || value.contains(&b'\r') {
                return Err(());
            }
            return std::str::from_utf8(value).map(Some).map_err(|_| ());
        }
    }
}

/// A numeric character reference's character, as html5ever maps its value.
pub(super) fn numeric_reference(value: u32, too_big: bool) -> char {
    match value {
        _ if too_big || value > 0x10FFFF => '\u{fffd}',
        0 | 0xD800..=0xDFFF => '\u{fffd}',
        0x80..=0x9F => markup5ever::data::C1_REPLACEMENTS[(value - 0x80) as usize]
            .unwrap_or_else(|| char::from_u32(value).unwrap_or('\u{fffd}')),
        _ => char::from_u32(value).unwrap_or('\u{fffd}'),
    }
}

/// A word with 1 in each of its bytes.
pub(super) const ONES: u64 = u64::from_le_bytes([1; 8]);

/// The top bit of each byte of a word marked where the byte is zero: the lowest mark is the
/// first zero byte, a mark above it may be wrong, and there is a mark if and only if a byte is
/// zero. (A byte equal to `b` is a zero byte of the word XOR `ONES * b`.)
pub(super) fn zero_bytes(word: u64) -> u64 {
    word.wrapping_sub(ONES) & !word & (ONES << 7)
}

/// Whether `bytes` hold a `&`, a CR or a NUL. Most texts between two tags are short, where
/// `memchr3`'s setup costs more than the search: up to [`SHORT_TEXT`] bytes, eight at a time in
/// a word ([`zero_bytes`]).
pub(super) fn holds_reference_cr_or_nul(bytes: &[u8]) -> bool {
    let zero_byte = |word: u64| zero_bytes(word) != 0;
    if bytes.len() > SHORT_TEXT {
        return memchr::memchr3(b'&', b'\r', 0, bytes).is_some();
    }
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        let word = u64::from_le_bytes(word.try_into().expect("8 bytes"));
        if zero_byte(word)
            || zero_byte(word ^ (ONES * u64::from(b'&')))
            || zero_byte(word ^ (ONES * u64::from(b'\r')))
        {
            return true;
        }
    }
    words.remainder().iter().any(|&b| matches!(b, b'&' | b'\r' | 0))
}

/// The longest text [`holds_reference_cr_or_nul`] reads a word at a time.
pub(super) const SHORT_TEXT: usize = 64;

/// The first `<` at or after `at`. In generated documentation the next tag is most often a few
/// bytes away (`</a></span>`, `<td><a`), so the first 16 bytes are read two words at a time
/// before `memchr` takes the rest.
pub(super) fn next_lt(bytes: &[u8], at: usize) -> Option<usize> {
    let rest = &bytes[at..];
    if rest.len() >= 16 {
        for half in [0, 8] {
            let word = u64::from_le_bytes(rest[half..half + 8].try_into().expect("8 bytes"));
            let marks = zero_bytes(word ^ (ONES * u64::from(b'<')));
            if marks != 0 {
                return Some(at + half + marks.trailing_zeros() as usize / 8);
            }
        }
        return memchr::memchr(b'<', &rest[16..]).map(|found| at + 16 + found);
    }
    memchr::memchr(b'<', rest).map(|found| at + found)
}

/// Text as the tokenizer gives it: character references decoded, CR LF and CR read as LF.
/// `None` where it holds a NUL or a reference the scanner does not decode exactly.
pub(super) fn decode<'s>(raw: &'s str, out: &'s mut String) -> Option<&'s str> {
    let bytes = raw.as_bytes();
    if !holds_reference_cr_or_nul(bytes) {
        return Some(raw);
    }
    out.clear();
    let mut copied = 0;
    let mut at = 0;
    while let Some(found) = memchr::memchr3(b'&', b'\r', 0, &bytes[at..]) {
        let here = at + found;
        out.push_str(&raw[copied..here]);
        match bytes[here] {
            0 => return None,
            b'\r' => {
                out.push('\n');
                at = if bytes.get(here + 1) == Some(&b'\n') { here + 2 } else { here + 1 };
            }
            _ => match bytes.get(here + 1) {
                Some(b) if b.is_ascii_alphanumeric() => {
                    let mut end = here + 1;
                    while end < bytes.len() && bytes[end].is_ascii_alphanumeric() {
                        end += 1;
                    }
                    if bytes.get(end) != Some(&b';') {
                        return None;
                    }
                    let &(first, second) =
                        markup5ever::data::NAMED_ENTITIES.get(&raw[here + 1..=end])?;
                    if first == 0 {
                        return None;
                    }
                    out.push(char::from_u32(first)?);
                    if second != 0 {
                        out.push(char::from_u32(second)?);
                    }
                    at = end + 1;
                }
                Some(b'#') => {
                    let hex = matches!(bytes.get(here + 2), Some(b'x' | b'X'));
                    let start = here + 2 + usize::from(hex);
                    let mut end = start;
                    let (mut value, mut too_big) = (0u32, false);
                    while let Some(digit) = bytes
                        .get(end)
                        .and_then(|&b| (b as char).to_digit(if hex { 16 } else { 10 }))
                    {
                        match value
                            .checked_mul(if hex { 16 } else { 10 })
                            .and_then(|v| v.checked_add(digit))
                        {
                            Some(v) if v <= 0x10FFFF => value = v,
                            _ => too_big = true,
                        }
                        end += 1;
                    }
                    if end == start {
                        return None;
                    }
                    out.push(numeric_reference(value, too_big));
                    at = if bytes.get(end) == Some(&b';') { end + 1 } else { end };
                }
                _ => {
                    out.push('&');
                    at = here + 1;
                }
            },
        }
        copied = at;
    }
    out.push_str(&raw[copied..]);
    Some(out.as_str())
}
