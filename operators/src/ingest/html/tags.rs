//! Tag lexing shared by the slimming pass and the scanner: tag ends, comments, the end tag of
//! an element read verbatim, and attribute mentions.

/// Whether a tag's attribute bytes hold `name` (lowercase ASCII), in any case: `role` (a
/// landmark may be among them), `lang`.
pub(super) fn mentions(attributes: &[u8], name: &[u8]) -> bool {
    let (lower, upper) = (name[0], name[0].to_ascii_uppercase());
    memchr::memchr2_iter(lower, upper, attributes)
        .any(|at| attributes.get(at..at + name.len()).is_some_and(|w| w.eq_ignore_ascii_case(name)))
}

pub(super) fn is_tag_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0c')
}

/// Where a tag's attributes end, following the tokenizer's attribute states from `at` (just past
/// the tag name): the index of its closing `>` and whether a `/` came right before it, or `None`
/// at the end of input (the tokenizer then drops the tag).
pub(super) fn tag_end(bytes: &[u8], at: usize) -> Option<(usize, bool)> {
    tag_end_and_names(bytes, at).map(|(gt, self_closing, _)| (gt, self_closing))
}

/// [`tag_end`], and whether the name of an attribute begins with `r` or `R` (the tokenizer's
/// names, as its states tell them from values): without one the tag has no `role`, and the
/// byte scanner does not look for it (`scan::role`).
pub(super) fn tag_end_and_names(bytes: &[u8], mut at: usize) -> Option<(usize, bool, bool)> {
    // The attribute states of the HTML tokenizer that matter for where a tag ends.
    #[derive(Clone, Copy)]
    enum State {
        BeforeName,
        Name,
        AfterName,
        BeforeValue,
        Quoted(u8),
        AfterQuoted,
        Unquoted,
        SelfClosing,
    }
    let mut state = State::BeforeName;
    let mut named_r = false;
    while at < bytes.len() {
        let b = bytes[at];
        state = match (state, b) {
            (State::BeforeName | State::AfterName | State::AfterQuoted, b'/') => State::SelfClosing,
            (State::Name, b'/') => State::SelfClosing,
            (State::SelfClosing, b'>') => return Some((at, true, named_r)),
            (State::SelfClosing, _) => {
                state = State::BeforeName;
                continue;
            }
            (
                State::BeforeName
                | State::Name
                | State::AfterName
                | State::BeforeValue
                | State::AfterQuoted
                | State::Unquoted,
                b'>',
            ) => return Some((at, false, named_r)),
            (State::BeforeName | State::AfterQuoted | State::Unquoted, b) if is_tag_space(b) => {
                State::BeforeName
            }
            (State::Name | State::AfterName, b) if is_tag_space(b) => State::AfterName,
            (State::BeforeValue, b) if is_tag_space(b) => State::BeforeValue,
            (State::Name | State::AfterName, b'=') => State::BeforeValue,
            (State::BeforeName | State::AfterName, _) => {
                // The only way into a name: its first byte.
                named_r |= b | 0x20 == b'r';
                State::Name
            }
            (State::AfterQuoted, _) => {
                state = State::BeforeName;
                continue;
            }
            (State::Name, _) => State::Name,
            (State::BeforeValue, b'"' | b'\'') => State::Quoted(b),
            (State::BeforeValue | State::Unquoted, _) => State::Unquoted,
            (State::Quoted(q), _) => {
                // A quoted value runs to its closing quote, whatever it holds.
                at += memchr::memchr(q, &bytes[at..])?;
                State::AfterQuoted
            }
        };
        at += 1;
    }
    None
}

/// Index just past the first `-->` or `--!>` at or after `from`: where a comment ends.
pub(super) fn comment_end(bytes: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    while let Some(found) = memchr::memmem::find(&bytes[at..], b"--") {
        let dashes = at + found;
        match bytes.get(dashes + 2..) {
            Some([b'>', ..]) => return Some(dashes + 3),
            Some([b'!', b'>', ..]) => return Some(dashes + 4),
            _ => at = dashes + 1,
        }
    }
    None
}

/// Index just past the appropriate end tag `</name` (followed by white space, `/` or `>`) at or
/// after `from`, through its `>`, as the tokenizer finds it in raw text.
pub(super) fn verbatim_end(bytes: &[u8], from: usize, name: &[u8]) -> Option<usize> {
    let mut at = from;
    while let Some(found) = memchr::memchr(b'<', &bytes[at..]) {
        let open = at + found;
        let end = open + 2 + name.len();
        if end < bytes.len()
            && bytes[open + 1] == b'/'
            && bytes[open + 2..end].eq_ignore_ascii_case(name)
            && (is_tag_space(bytes[end]) || matches!(bytes[end], b'/' | b'>'))
        {
            return tag_end(bytes, end).map(|(gt, _)| gt + 1);
        }
        at = open + 1;
    }
    None
}
