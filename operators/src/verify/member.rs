//! Group members and what a pair of them gives: a member's content and sorted keys, the
//! blocks a group repeats (a sample of its members, counted incrementally by `KeyTally`), the
//! sibling checks, an edge, and a pair's verdict (`pair_verdict`). Shared by the groups, the
//! repeated keys, the sibling rule and the edges operator, below all of them.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::ingest::page::{Content, PageId};
use crate::run::Runtime;
use crate::runtime::store::Kept;
use crate::verify::lcs::{self, Verdict};
use crate::verify::{self, VerifyConfig};

/// A page as a group holds it: ordered by length, then id. Groups hold an `Arc<Member>` (one
/// allocation per page, however many groups hold it). Equality and order are by length, id and
/// content hash, never by the content itself: consolidating a group's updates compares
/// members, and comparing whole contents would read every content. Two contents of one page
/// with the same 64-bit hash would count as one (probability 2^-64 per change).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Member {
    pub length: u64,
    pub id: PageId,
    /// `verify::content_hash`: the verdict cache's key.
    pub hash: u64,
    /// In the run's content store when it has one (`kept_in`): read by `content` when the
    /// member is verified against another page.
    content: Kept<Content>,
    /// The content's distinct sentence keys, sorted (`verify::distinct_sentence_keys`): what
    /// the groups' repeated blocks are counted on. A function of the content, so no part of
    /// the identity. A boxed slice, not an `Arc<Vec<_>>`: the member is shared whole
    /// (`Arc<Member>`), so its keys need no count of their own, and a boxed slice is one
    /// allocation of exactly their length.
    pub keys: Box<[u64]>,
    /// Each key's summed weight over the content's sentences (`lcs::key_weights`), parallel
    /// to `keys`: what the groups' pruning reads (`may_reach`), so it never reads the content.
    /// Empty where a sum passes `u16::MAX` (the pruning then sums them from the content).
    key_weights: Box<[u16]>,
}

impl Member {
    fn identity(&self) -> (u64, PageId, u64) {
        (self.length, self.id, self.hash)
    }
}

impl PartialEq for Member {
    fn eq(&self, other: &Self) -> bool {
        self.identity() == other.identity()
    }
}

impl Eq for Member {}

impl PartialOrd for Member {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Member {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.identity().cmp(&other.identity())
    }
}

impl std::hash::Hash for Member {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.identity().hash(state)
    }
}

impl Member {
    /// The bytes of its allocation, with its keys and its content's vectors (its sentences and
    /// words are the page's: `Content::vector_bytes`); a function of the member, so a member
    /// and its retraction count the same.
    pub fn bytes(&self) -> usize {
        use crate::runtime::footprint::{array, ARC_COUNTS};
        let content = match &self.content {
            Kept::Resident(content) => {
                ARC_COUNTS + std::mem::size_of::<Content>() + content.vector_bytes()
            }
            // The store's cache is counted apart.
            Kept::Stored(..) => 0,
        };
        ARC_COUNTS
            + std::mem::size_of::<Member>()
            + array::<u64>(self.keys.len())
            + array::<u16>(self.key_weights.len())
            + content
    }

    pub fn new(method: verify::VerifyMethod, id: PageId, content: Content) -> Self {
        let keys = verify::distinct_sentence_keys(&content).into_boxed_slice();
        let wide = lcs::key_weights(&content, &keys);
        let key_weights = wide.iter().map(|&w| u16::try_from(w)).collect::<Result<_, _>>();
        Member {
            key_weights: key_weights.unwrap_or_default(),
            length: verify::length(method, &content),
            id,
            hash: verify::content_hash(&content),
            content: Kept::Resident(Arc::new(content)),
            keys,
        }
    }

    /// `member` as `runtime`'s run keeps it: its content in the run's content store and its
    /// words in the word store, where the run has them and the content is in memory (a member
    /// made here, or one that came from another process).
    pub fn kept_in(member: Arc<Member>, runtime: &Runtime) -> Arc<Member> {
        let Kept::Resident(content) = &member.content else { return member };
        let words = runtime.words.is_some() && !content.words.is_stored();
        if runtime.contents.is_none() && !words {
            return member;
        }
        let mut content = Content::clone(content);
        content.words = std::mem::take(&mut content.words).stored_in(runtime.words.as_ref());
        let content = Kept::keep_in(Arc::new(content), runtime.contents.as_ref(), true);
        Arc::new(Member { content, ..Member::clone(&member) })
    }

    /// Whether the two members' sentences may reach resemblance `tau_ppm`
    /// (`lcs::keys_may_reach`), from their keys and key weights; `lengths`: a member's `length`
    /// is its content's weight (not under Jaccard, where the weights are summed).
    pub fn may_reach(&self, other: &Member, lengths: bool, tau_ppm: u64) -> bool {
        let wide = |m: &Member| {
            (m.key_weights.len() != m.keys.len()).then(|| lcs::key_weights(&m.content(), &m.keys))
        };
        let (wide_a, wide_b) = (wide(self), wide(other));
        let weight = |m: &Member, wide: &Option<Vec<u32>>| match (lengths, wide) {
            (true, _) => m.length,
            (false, Some(w)) => w.iter().map(|&w| w as u64).sum(),
            (false, None) => m.key_weights.iter().map(|&w| w as u64).sum(),
        };
        let (a, b) = ((weight(self, &wide_a), &*self.keys), (weight(other, &wide_b), &*other.keys));
        match (&wide_a, &wide_b) {
            (None, None) => lcs::keys_may_reach(
                (a.0, a.1, &*self.key_weights),
                (b.0, b.1, &*other.key_weights),
                tau_ppm,
            ),
            (Some(va), None) => {
                lcs::keys_may_reach((a.0, a.1, va), (b.0, b.1, &*other.key_weights), tau_ppm)
            }
            (None, Some(vb)) => {
                lcs::keys_may_reach((a.0, a.1, &*self.key_weights), (b.0, b.1, vb), tau_ppm)
            }
            (Some(va), Some(vb)) => lcs::keys_may_reach((a.0, a.1, va), (b.0, b.1, vb), tau_ppm),
        }
    }

    /// Its content, read from the content store (through its cache) when it is stored.
    pub fn content(&self) -> Arc<Content> {
        self.content.get()
    }
}

/// The sentences repeated in a group (each member's distinct keys, sorted): those on at least
/// `min_pages` of its pages, sorted. None when the group is smaller than `min_pages` (or
/// `min_pages` is 0: no sibling rule).
pub fn group_repeated_keys(keys: &[&[u64]], min_pages: u32) -> Option<Vec<u64>> {
    if min_pages == 0 || keys.len() < min_pages as usize {
        return None;
    }
    Some(verify::common_keys(keys, min_pages))
}

/// A group larger than this counts its repeated blocks on a sample of this many of its pages:
/// a change then recounts them only when it enters or leaves the sample (a chance of
/// `BLOCK_SAMPLE / pages`), not at every change over every page.
pub const BLOCK_SAMPLE: usize = 256;

/// A member's rank for the block sample: its content hash first (a uniform draw), then its
/// identity (a total order).
pub type SampleKey = (u64, u64, PageId);

pub fn sample_key(m: &Member) -> SampleKey {
    (m.hash, m.length, m.id)
}

/// The members a group's repeated blocks are counted on: all of them up to `BLOCK_SAMPLE`,
/// else the `BLOCK_SAMPLE` with the smallest `sample_key`; and, for a sample, its largest key.
pub fn block_sample<'a>(members: &[&'a Member]) -> (Vec<&'a Member>, Option<SampleKey>) {
    if members.len() <= BLOCK_SAMPLE {
        return (members.to_vec(), None);
    }
    let mut sample = members.to_vec();
    sample.select_nth_unstable_by_key(BLOCK_SAMPLE - 1, |m| sample_key(m));
    sample.truncate(BLOCK_SAMPLE);
    let bound = sample.iter().map(|m| sample_key(m)).max();
    (sample, bound)
}

/// The blocks a group repeats (`group_repeated_keys` over its `block_sample`), non-empty.
pub fn group_blocks(members: &[&Member], min_pages: u32) -> (Option<Vec<u64>>, Option<SampleKey>) {
    let (sample, bound) = block_sample(members);
    let keys: Vec<&[u64]> = sample.iter().map(|m| &*m.keys).collect();
    (group_repeated_keys(&keys, min_pages).filter(|c| !c.is_empty()), bound)
}

/// A group's repeated blocks from one change to the next, for a group whose block sample is
/// the whole group (at most `BLOCK_SAMPLE` pages, at least `min_pages`): how many members hold
/// each block, exactly, and for every other key a bound from above, in a counting filter. A
/// change adds and takes its pages' keys (a block's count, or the filter's slots), so a block
/// that falls below `min_pages` is known at once; a key that gained becomes a block only where
/// the filter's bound reaches `min_pages`, and only those keys are counted over the members.
///
/// The pages of a group of near-copies or siblings each hold a few keys of their own, which no
/// other member holds: counting them over every member (stopping once each is settled) would
/// be most of the blocks' cost. The filter settles them: a key's two slots are shared with few
/// other keys, none of them blocks (blocks are counted apart), so their bound stays below
/// `min_pages`.
///
/// Memory: a byte a slot, a slot for every 2 to 4 units of the filter's mass (the other keys'
/// counts, summed), 16 at least; two bytes a block. A key adds its count at two slots, so a
/// slot holds 4 to 8 units on average, mostly keys of one or a few pages: a page's own key
/// still settles (its bound, the lesser of its two slots, stays under `min_pages`, 16 by
/// default).
#[derive(Debug)]
pub struct KeyTally {
    /// How many members hold each block (the group's blocks, sorted: the same order).
    counts: Vec<u16>,
    /// Each other key's count added at its two slots (`slots`): the lesser of the two bounds
    /// the key's count from above. A slot that reaches 255 stays there (still a bound).
    filter: Box<[u8]>,
    /// The other keys' counts, summed: what the filter holds (a slot each twice).
    mass: u32,
    /// The filter's slots, at least (a power of two; a test's 1 puts every key at one slot).
    min_slots: u32,
    /// The keys counted over the members since the tally was made (those the filter could
    /// not settle).
    counted: u32,
}

/// What a change does to a group's blocks (`KeyTally::apply`).
#[derive(Debug, PartialEq, Eq)]
pub enum BlocksChange {
    /// The blocks are as they were.
    Same,
    /// The blocks after the change (empty: none).
    Now(Vec<u64>),
}

impl KeyTally {
    /// The bytes of its buffers beyond the struct.
    pub fn own_bytes(&self) -> usize {
        self.counts.capacity() * 2 + self.filter.len()
    }

    /// The filter's slots, at least.
    const MIN_SLOTS: u32 = 16;
    /// The filter's slots, at most (16 KB).
    const MAX_SLOTS: usize = 1 << 14;

    /// Counts a group's members (its block sample, the whole group) from scratch: its blocks,
    /// sorted (empty for none, as `group_blocks` gives them), and the tally.
    pub fn count(members: &[&Member], min_pages: u32) -> (Vec<u64>, KeyTally) {
        Self::count_with(members, min_pages, Self::MIN_SLOTS)
    }

    fn count_with(members: &[&Member], min_pages: u32, min_slots: u32) -> (Vec<u64>, KeyTally) {
        let counts = key_counts(members);
        let mut blocks: Vec<(u64, u32)> =
            counts.iter().filter(|&(_, &n)| n >= min_pages).map(|(&k, &n)| (k, n)).collect();
        blocks.sort_unstable();
        let mut tally = KeyTally {
            counts: blocks.iter().map(|&(_, n)| n as u16).collect(),
            filter: Box::new([]),
            mass: 0,
            min_slots,
            counted: 0,
        };
        let others: Vec<(u64, u32)> = counts.into_iter().filter(|&(_, n)| n < min_pages).collect();
        tally.fill(&others);
        (blocks.into_iter().map(|(k, _)| k).collect(), tally)
    }

    /// Fills the filter anew with the other keys' counts, sized for their mass.
    fn fill(&mut self, others: &[(u64, u32)]) {
        let mass: u32 = others.iter().map(|&(_, n)| n).sum();
        self.filter = vec![0u8; self.fit(mass)].into_boxed_slice();
        self.mass = 0;
        for &(key, n) in others {
            self.add(key, n);
        }
    }

    /// The filter's size for a mass: a slot for every 2 to 4 units.
    fn fit(&self, mass: u32) -> usize {
        (mass.div_ceil(4) as usize)
            .next_power_of_two()
            .clamp(self.min_slots as usize, Self::MAX_SLOTS)
    }

    /// A key's two slots.
    #[inline]
    fn slots(&self, key: u64) -> [usize; 2] {
        let mask = self.filter.len() - 1;
        let h = crate::runtime::hashing::mix64(key);
        [h as usize & mask, (h >> 32) as usize & mask]
    }

    #[inline]
    fn add(&mut self, key: u64, n: u32) {
        for s in self.slots(key) {
            let slot = &mut self.filter[s];
            if *slot != u8::MAX {
                *slot = (*slot as u32 + n).min(u8::MAX as u32) as u8;
            }
        }
        self.mass += n;
    }

    #[inline]
    fn take(&mut self, key: u64, n: u32) {
        for s in self.slots(key) {
            let slot = &mut self.filter[s];
            if *slot != u8::MAX {
                debug_assert!(*slot as u32 >= n, "a slot holds the counts added at it");
                *slot -= n as u8;
            }
        }
        self.mass -= n;
    }

    /// A bound from above on the count of a key that is not a block.
    #[inline]
    fn bound(&self, key: u64) -> u32 {
        let [a, b] = self.slots(key);
        self.filter[a].min(self.filter[b]) as u32
    }

    /// The blocks after a change, from `blocks` (the blocks before it, sorted, as the tally
    /// counted them) and the changed pages: `members` gives the members after the change (the
    /// whole group, at least `min_pages` of them; asked for only when keys are counted over
    /// them), `inserted` and `removed` the changed (each page's keys sorted and distinct, as
    /// `Member::keys`). The same blocks as `group_blocks` counts over the members.
    pub fn apply<'m>(
        &mut self,
        blocks: &[u64],
        members: impl Fn() -> Vec<&'m Member>,
        inserted: &[&Member],
        removed: &[&Member],
        min_pages: u32,
    ) -> BlocksChange {
        debug_assert_eq!(blocks.len(), self.counts.len(), "the tally counts these blocks");
        debug_assert!(min_pages > 0 && members().len() >= min_pages as usize);
        // The changed pages' keys, with how many of the inserted (less the removed) hold each.
        let mut changed: Vec<(u64, i32)> = inserted
            .iter()
            .flat_map(|m| m.keys.iter().map(|&k| (k, 1)))
            .chain(removed.iter().flat_map(|m| m.keys.iter().map(|&k| (k, -1))))
            .collect();
        changed.sort_unstable_by_key(|&(k, _)| k);
        let mut down: Vec<usize> = Vec::new();
        let mut gained: Vec<u64> = Vec::new();
        for run in changed.chunk_by(|a, b| a.0 == b.0) {
            let (key, change) = (run[0].0, run.iter().map(|c| c.1).sum::<i32>());
            if change == 0 {
                continue;
            }
            match blocks.binary_search(&key) {
                Ok(i) => {
                    let count = (self.counts[i] as i32 + change) as u16;
                    self.counts[i] = count;
                    if (count as u32) < min_pages {
                        down.push(i);
                    }
                }
                Err(_) if change > 0 => {
                    self.add(key, change as u32);
                    gained.push(key);
                }
                Err(_) => self.take(key, (-change) as u32),
            }
        }
        // The blocks that fell are other keys now.
        for &i in &down {
            self.add(blocks[i], self.counts[i] as u32);
        }
        // A key that gained is a block only if its bound reaches `min_pages`: those are
        // counted over the members (sorted, as `gained` is).
        gained.retain(|&k| self.bound(k) >= min_pages);
        let mut up: Vec<(u64, u16)> = Vec::new();
        if !gained.is_empty() {
            self.counted = self.counted.saturating_add(gained.len() as u32);
            let counts = count_keys(&members(), &gained);
            for (&key, &n) in gained.iter().zip(&counts) {
                if n >= min_pages {
                    self.take(key, n);
                    up.push((key, n as u16));
                }
            }
        }
        let change = if down.is_empty() && up.is_empty() {
            BlocksChange::Same
        } else {
            // The blocks that stay, and the keys that rose (not blocks before), in order.
            let mut next: Vec<(u64, u16)> = blocks
                .iter()
                .zip(&self.counts)
                .enumerate()
                .filter(|(i, _)| down.binary_search(i).is_err())
                .map(|(_, (&k, &n))| (k, n))
                .chain(up)
                .collect();
            next.sort_unstable();
            self.counts = next.iter().map(|&(_, n)| n).collect();
            BlocksChange::Now(next.into_iter().map(|(k, _)| k).collect())
        };
        // A filter far from its mass's size is filled again at its size: the group grew or
        // shrank by half or more since it was sized (a count of the members' keys).
        let fit = self.fit(self.mass);
        if fit > 2 * self.filter.len() || 4 * fit < self.filter.len() {
            let now: &[u64] = match &change {
                BlocksChange::Same => blocks,
                BlocksChange::Now(next) => next,
            };
            let others: Vec<(u64, u32)> = key_counts(&members())
                .into_iter()
                .filter(|(k, _)| now.binary_search(k).is_err())
                .collect();
            self.fill(&others);
        }
        change
    }
}

#[cfg(test)]
impl KeyTally {
    /// Panics unless the tally holds what it promises over `members`: `blocks` are the keys on
    /// at least `min_pages` of them with their counts, the filter bounds every other key's
    /// count from above, and its mass is their sum.
    fn check(&self, blocks: &[u64], members: &[&Member], min_pages: u32) {
        let counts = key_counts(members);
        let mut expected: Vec<(u64, u16)> =
            counts.iter().filter(|&(_, &n)| n >= min_pages).map(|(&k, &n)| (k, n as u16)).collect();
        expected.sort_unstable();
        let held: Vec<(u64, u16)> =
            blocks.iter().copied().zip(self.counts.iter().copied()).collect();
        assert_eq!(held, expected, "each block with its count");
        let others: Vec<(u64, u32)> = counts.into_iter().filter(|&(_, n)| n < min_pages).collect();
        for &(key, n) in &others {
            assert!(self.bound(key) >= n, "the filter bounds a key's count from above");
        }
        assert_eq!(self.mass, others.iter().map(|&(_, n)| n).sum::<u32>(), "the filter's mass");
        assert!(
            self.filter.len().is_power_of_two() && self.filter.len() >= self.min_slots as usize
        );
    }
}

/// How many of `members` hold each key (a member's keys are distinct).
fn key_counts(
    members: &[&Member],
) -> std::collections::HashMap<u64, u32, crate::runtime::hashing::Mixed> {
    verify::key_pages(members.iter().map(|m| &*m.keys))
}

/// How many of `members` hold each of `keys` (sorted, distinct), in their order.
fn count_keys(members: &[&Member], keys: &[u64]) -> Vec<u32> {
    // Most of a member's keys are not among them: a bit set of the keys lets them go by on
    // one predictable test, and only the keys that pass are looked up. (A merge of the two
    // sorted lists takes an unpredictable branch a key.)
    let filter = ChangedKeys::new(keys);
    let mut counts = vec![0u32; keys.len()];
    for member in members {
        for key in member.keys.iter() {
            if filter.may_hold(*key) {
                if let Ok(j) = keys.binary_search(key) {
                    counts[j] += 1;
                }
            }
        }
    }
    counts
}

/// A bit set over sorted keys (the keys `KeyTally::apply` counts over the members): `may_hold` is true for
/// every key among them and for few others (a key's low bits select its bit; the keys are
/// hashes), so a membership test costs a lookup only for the keys that pass.
struct ChangedKeys {
    bits: Vec<u64>,
    mask: u64,
}

impl ChangedKeys {
    fn new(keys: &[u64]) -> Self {
        // About 32 bits a key: a key not among them passes with chance ~1/32.
        let len = (keys.len() * 32).next_power_of_two().clamp(1 << 10, 1 << 20);
        let mut bits = vec![0u64; len / 64];
        let mask = len as u64 - 1;
        for key in keys {
            let bit = key & mask;
            bits[(bit >> 6) as usize] |= 1 << (bit & 63);
        }
        ChangedKeys { bits, mask }
    }

    #[inline]
    fn may_hold(&self, key: u64) -> bool {
        let bit = key & self.mask;
        self.bits[(bit >> 6) as usize] & (1 << (bit & 63)) != 0
    }
}

/// Siblings: of what `a` shares with `b`, most (by weight) is sentences in both pages'
/// repeated keys (`repeated_a`, `repeated_b`, sorted) or its host's template
/// (`Content::template_keys`). Decides a sibling candidate: a similar
/// pair whose own texts are different texts (`verify::own_texts_are_different_texts`), which
/// the groups the pair meets in alone cannot tell (a word band shared by two siblings).
pub fn siblings(a: &Content, repeated_a: &[u64], b: &Content, repeated_b: &[u64]) -> bool {
    siblings_by_keys(a, repeated_a, &verify::distinct_sentence_keys(b), repeated_b)
}

/// `siblings` with `b` given by its distinct sentence keys (a `Member` carries them).
pub fn siblings_by_keys(
    a: &Content,
    repeated_a: &[u64],
    b_keys: &[u64],
    repeated_b: &[u64],
) -> bool {
    let common = crate::runtime::sorted::intersect(repeated_a, repeated_b);
    verify::shares_mostly_common_with(a, b_keys, &common)
}

/// What verifying a group gives: its edges, and its sibling candidates (similar pairs whose
/// own texts differ), decided later with the pages' repeated keys (`siblings`).
#[derive(Debug, Default)]
pub struct GroupVerdicts {
    pub edges: Vec<Edge>,
    pub candidates: Vec<Edge>,
}

/// A verified pair: `longer` is within τ of `shorter` (the earlier in length order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Edge {
    pub shorter_length: u64,
    pub shorter: PageId,
    pub longer: PageId,
    pub similarity_ppm: u32,
}

/// What a pair of contents gives, before the group's repeated blocks are known: the verdict
/// and whether the two pages' own texts are different texts
/// (`verify::own_texts_are_different_texts`). A pure function of the two contents (cached).
pub type PairVerdict = (Verdict, bool);

/// A pair's verdict in the dataflow: Myers (`verify::compare`) and the pair part of the
/// sibling rule, computed for similar pairs only. Both take the members' sorted keys
/// (`Member::keys`) instead of sorting each content's again.
pub fn pair_verdict(config: &VerifyConfig, a: &Member, b: &Member) -> PairVerdict {
    let (ka, kb) = (&*a.keys, &*b.keys);
    let (ca, cb) = (a.content(), b.content());
    let (verdict, words_lcs) =
        verify::compare_keyed_words(config, &ca, &cb, Some((ka, kb)), lcs::ppm(config.threshold));
    let differ = matches!(verdict, Verdict::Similar(_))
        && verify::own_texts_are_different_texts_keyed(config, &ca, &cb, ka, kb, words_lcs);
    (verdict, differ)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::ingest::page::PageId;
    use crate::verify::lcs::{self, Verdict};
    use crate::verify::tests::{of_words, sentence};
    use crate::verify::{self, VerifyConfig, VerifyMethod};

    /// A page id of date and hash `n`.
    pub(crate) fn id(n: u64) -> PageId {
        PageId { date: n, hash: n }
    }

    /// A member of page `n` whose sentences are `keys`, each of weight 1.
    pub(crate) fn member(n: u64, keys: &[u64]) -> Member {
        let content =
            Content { sentences: keys.iter().map(|&k| (k, 1)).collect(), ..Default::default() };
        Member::new(VerifyMethod::Lcs, id(n), content)
    }

    /// The groups' pruning from a member's keys and key weights is the pruning from its
    /// content, repeated sentences and a key whose weight passes 16 bits included.
    #[test]
    fn members_may_reach_as_their_contents_do() {
        let mut rng = crate::testing::Rng(7);
        let heavy = Content {
            sentences: (0..3).map(|_| (9, 30_000)).chain([(1, 2)]).collect(),
            ..Default::default()
        };
        let mut contents = vec![heavy];
        for _ in 0..60 {
            let n = 1 + rng.below(12);
            let sentences = (0..n).map(|_| (rng.below(15), 1 + rng.below(4) as u16)).collect();
            contents.push(Content { sentences, ..Default::default() });
        }
        for method in [VerifyMethod::Lcs, VerifyMethod::Jaccard] {
            let members: Vec<Member> = contents
                .iter()
                .enumerate()
                .map(|(n, c)| Member::new(method, id(n as u64), c.clone()))
                .collect();
            assert!(
                members[0].key_weights.is_empty(),
                "a key over 16 bits: summed from the content"
            );
            for a in &members {
                for b in &members {
                    for tau in [500_000, 800_000, 950_000] {
                        let (ca, cb) = (a.content(), b.content());
                        assert_eq!(
                            a.may_reach(b, method != VerifyMethod::Jaccard, tau),
                            lcs::sentences_may_reach(&ca, &a.keys, &cb, &b.keys, tau),
                            "{:?} {:?}",
                            a.id,
                            b.id
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn a_tally_settles_a_pages_own_sentences_without_counting_them() {
        let page = |n: u64, extra: &[u64]| {
            let keys: Vec<u64> = (0..20)
                .map(|k| k + 1)
                .chain((0..5).map(|k| 1_000 * (n + 1) + k))
                .chain(extra.iter().copied())
                .collect();
            member(n, &keys)
        };
        // 60 siblings; pages 40..55 hold sentence 999 as well (15 of them).
        let all: Vec<Member> =
            (0..70).map(|n| page(n, if (40..55).contains(&n) { &[999] } else { &[] })).collect();
        let members =
            |range: std::ops::Range<usize>| -> Vec<&Member> { all[range].iter().collect() };
        let (blocks, mut tally) = KeyTally::count(&members(0..60), 16);
        assert_eq!(blocks, (1..=20).collect::<Vec<u64>>(), "the shared sentences are the blocks");
        for n in [60, 61, 62] {
            let after = members(0..n + 1);
            assert_eq!(
                tally.apply(&blocks, || after.clone(), &[&all[n]], &[], 16),
                BlocksChange::Same,
                "a sibling joins"
            );
            tally.check(&blocks, &after, 16);
        }
        let after = members(1..63);
        assert_eq!(
            tally.apply(&blocks, || after.clone(), &[], &[&all[0]], 16),
            BlocksChange::Same,
            "a sibling leaves"
        );
        assert_eq!(tally.counted, 0, "no page's own sentences were counted over the members");
        // A 16th page with sentence 999 makes it a block: it is counted, once.
        let extra = page(100, &[999]);
        let after: Vec<&Member> = all[1..63].iter().chain([&extra]).collect();
        let mut expected: Vec<u64> = (1..=20).collect();
        expected.push(999);
        assert_eq!(
            tally.apply(&blocks, || after.clone(), &[&extra], &[], 16),
            BlocksChange::Now(expected.clone())
        );
        assert_eq!(tally.counted, 1, "the sentence that reached min_pages, alone");
        tally.check(&expected, &after, 16);
    }

    proptest::proptest! {
        /// A group's blocks kept by its tally through a run of changes (`KeyTally::apply`) are
        /// the blocks counted from scratch (`group_blocks`) after each, and the tally holds
        /// what it promises (`KeyTally::check`): each block's count, a bound on every other
        /// key's, the filter's mass. Pages of few keys drawn from a small alphabet (so that
        /// counts cross `min_pages` both ways) or a larger one (a filter that grows and
        /// shrinks); insertions and removals at once; groups that cross `min_pages` in size,
        /// where the group drops its tally and counts again, as `Group` does. With `tiny`, the
        /// filter is one slot: every key that gains is counted over the members; with
        /// `collide`, every key has the same low bits, so each passes the counted keys' bit set
        /// (`ChangedKeys`) and the lookup alone tells them apart.
        #[test]
        fn blocks_kept_by_a_tally_are_the_blocks_from_scratch(
            pages in proptest::collection::vec(proptest::collection::vec(0u64..400, 0..8), 1..40),
            alphabet in proptest::sample::select(vec![6u64, 12, 400]),
            masks in proptest::collection::vec(proptest::collection::vec(proptest::bool::ANY, 40), 1..6),
            min_pages in 1u32..6,
            tiny in proptest::bool::ANY,
            collide in proptest::bool::ANY,
        ) {
            let key = |k: u64| if collide { (k % alphabet + 1) << 24 } else { k % alphabet };
            let all: Vec<Member> = pages
                .iter()
                .enumerate()
                .map(|(n, keys)| member(n as u64, &keys.iter().map(|&k| key(k)).collect::<Vec<_>>()))
                .collect();
            let pick = |mask: &[bool]| -> Vec<&Member> { all.iter().zip(mask).filter(|(_, &on)| on).map(|(m, _)| m).collect() };
            let min_slots = if tiny { 1 } else { KeyTally::MIN_SLOTS };
            let (mut old, mut blocks, mut tally): (Vec<&Member>, Vec<u64>, Option<KeyTally>) = (Vec::new(), Vec::new(), None);
            for mask in &masks {
                let new = pick(mask);
                let inserted: Vec<&Member> = new.iter().copied().filter(|m| !old.contains(m)).collect();
                let removed: Vec<&Member> = old.iter().copied().filter(|m| !new.contains(m)).collect();
                if new.len() < min_pages as usize {
                    (blocks, tally) = (Vec::new(), None);
                } else if let Some(tally) = tally.as_mut() {
                    match tally.apply(&blocks, || new.clone(), &inserted, &removed, min_pages) {
                        BlocksChange::Same => {}
                        BlocksChange::Now(next) => {
                            proptest::prop_assert_ne!(&next, &blocks, "a change reported is a change");
                            blocks = next;
                        }
                    }
                } else {
                    let (counted, fresh) = KeyTally::count_with(&new, min_pages, min_slots);
                    (blocks, tally) = (counted, Some(fresh));
                }
                let (expected, _) = group_blocks(&new, min_pages);
                proptest::prop_assert_eq!(Some(&blocks).filter(|b| !b.is_empty()), expected.as_ref());
                if let Some(tally) = &tally {
                    tally.check(&blocks, &new, min_pages);
                }
                old = new;
            }
        }

        /// `pair_verdict` with the members' sorted keys gives what the contents alone give:
        /// `verify::compare` and the sibling part, each sorting its own keys. Pages of shared,
        /// edited and own sentences (repeated ones too), with and without the central trim.
        #[test]
        fn pair_verdicts_with_member_keys_are_the_contents_verdicts(
            base in proptest::collection::vec(0u16..60, 1..30),
            choices in proptest::collection::vec(proptest::collection::vec(0u8..8, 30), 2..5),
            trim in proptest::bool::ANY,
        ) {
            // Each page is the base text with each sentence kept (most), edited (one word
            // changed), replaced by one of its own, or dropped; a kept sentence may repeat.
            let content = |page: usize| -> Content {
                let mut sentences = Vec::new();
                for (i, &seed) in base.iter().enumerate() {
                    match choices[page][i] {
                        0..=3 => sentences.push(sentence(seed)),
                        4 => {
                            let mut words = sentence(seed);
                            words[(seed % 12) as usize] = 2000 + page as u16;
                            sentences.push(words);
                        }
                        5 => sentences.push(sentence(1000 + 60 * page as u16 + i as u16)),
                        6 => {}
                        _ => sentences.extend([sentence(seed), sentence(seed)]),
                    }
                }
                of_words(&sentences)
            };
            let members: Vec<Member> =
                (0..choices.len()).map(|n| Member::new(VerifyMethod::Lcs, id(n as u64), content(n))).collect();
            let config = VerifyConfig {
                sibling_min_pages: 2,
                sibling_own_units: 2,
                central_trim_share: if trim { 0.3 } else { 0.0 },
                ..Default::default()
            };
            for a in &members {
                for b in &members {
                    let unkeyed = verify::compare(&config, &a.content(), &b.content(), lcs::ppm(config.threshold));
                    let differ = matches!(unkeyed, Verdict::Similar(_))
                        && verify::own_texts_are_different_texts(&config, &a.content(), &b.content());
                    proptest::prop_assert_eq!(pair_verdict(&config, a, b), (unkeyed, differ));
                }
            }
        }
    }
}
