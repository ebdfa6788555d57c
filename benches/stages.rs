//! Per-stage throughput (criterion), on pages from the dev benchmark file
//! (../shared/bench/docs-dev.warc.gz) or, when it is absent, on the embedded default input.
//!
//! `cargo bench --bench stages` — reports bytes/s (decompressed WARC bytes for reading, HTML
//! bytes for strip, text bytes for sentence split) on one core.

use std::path::Path;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use dupflow::source::{self, http, Input};
use dupflow_operators::ingest::html;
use dupflow_operators::ingest::sentence::{self, SentenceConfig};
use dupflow_operators::verify::lcs;
use dupflow_operators::Content;

fn input() -> Input {
    let dev = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/bench/docs-dev.warc.gz");
    if dev.exists() {
        Input::File(dev)
    } else {
        eprintln!(
            "../shared/bench/docs-dev.warc.gz is absent: benchmarking the embedded default input"
        );
        dupflow::DEFAULT_INPUT
    }
}

/// Decoded HTML of the first `n` pages.
fn pages(n: usize) -> Vec<String> {
    let mut out = Vec::new();
    source::read_records(&input(), 64 << 20, |item| {
        if out.len() >= n {
            return;
        }
        if let Ok(record) = item {
            if let Ok((http::Outcome::Page(doc), _)) = http::interpret(&record, 2 << 20) {
                out.push(doc.html.into_owned());
            }
        }
    })
    .expect("input opens");
    out
}

fn read_and_decompress(c: &mut Criterion) {
    let input = input();
    let mut decoded = 0u64;
    let mut records = 0u64;
    source::read_records(&input, 64 << 20, |item| {
        if let Ok(r) = item {
            decoded += r.block.len() as u64;
            records += 1;
        }
    })
    .unwrap();
    let mut group = c.benchmark_group("read");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(decoded));
    group.bench_function(format!("frame+gunzip {records} records"), |b| {
        b.iter(|| {
            let mut n = 0u64;
            source::read_records(&input, 64 << 20, |item| n += item.is_ok() as u64).unwrap();
            n
        })
    });
    group.finish();
}

fn strip_and_split(c: &mut Criterion) {
    let docs = pages(300);
    let html_bytes: u64 = docs.iter().map(|d| d.len() as u64).sum();
    let mut group = c.benchmark_group("ingest");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(html_bytes));
    group.bench_function(format!("html strip {} pages", docs.len()), |b| {
        b.iter(|| docs.iter().map(|d| html::strip(d).blocks.len()).sum::<usize>())
    });
    // Baselines in the same run: the pages parsed by html5ever after `slim_tags` (the strip
    // before the byte scanner), and parsed with their attributes (no `slim_tags`).
    group.bench_function(format!("html strip, parsed {} pages", docs.len()), |b| {
        b.iter(|| docs.iter().map(|d| html::strip_parsed(d).blocks.len()).sum::<usize>())
    });
    group.bench_function(format!("html strip, attributes parsed {} pages", docs.len()), |b| {
        b.iter(|| docs.iter().map(|d| html::strip_reference(d).blocks.len()).sum::<usize>())
    });
    let stripped: Vec<Vec<String>> = docs.iter().map(|d| html::strip(d).blocks).collect();
    let text_bytes: u64 = stripped.iter().flatten().map(|b| b.len() as u64).sum();
    group.throughput(Throughput::Bytes(text_bytes));
    let config = SentenceConfig::default();
    group.bench_function(format!("sentence split+normalize+md5 {} pages", docs.len()), |b| {
        b.iter(|| {
            stripped
                .iter()
                .map(|blocks| sentence::split_page(blocks, &config).sentences.len())
                .sum::<usize>()
        })
    });
    group.finish();
}

fn verify(c: &mut Criterion) {
    let page = |seed: u64, n: u64| Content {
        sentences: (0..n).map(|i| (sentence::mix64(seed ^ i), 12)).collect(),
        shingles: Vec::new(),
        words: Default::default(),
        term_weights: Vec::new(),
        word_counts: Vec::new(),
        template_keys: Vec::new(),
        dominated: false,
    };
    let a = page(1, 300);
    let mut b = a.clone();
    b.sentences = a
        .sentences
        .compared()
        .enumerate()
        .map(|(i, (key, weight))| (if i % 10 == 0 { key ^ 1 } else { key }, weight))
        .collect();
    let shuffled = Content {
        sentences: a.sentences.compared().rev().collect(),
        shingles: Vec::new(),
        term_weights: Vec::new(),
        words: Default::default(),
        word_counts: Vec::new(),
        template_keys: Vec::new(),
        dominated: false,
    };
    let other = page(1 << 40, 300);
    let mut group = c.benchmark_group("verify");
    group.bench_function("myers lcs, 300 sentences, 10% changed", |bench| {
        bench.iter_batched(
            || (),
            |_| lcs::compare(&a, &b, lcs::ppm(0.4), 50_000),
            BatchSize::SmallInput,
        )
    });
    group
        .bench_function("myers lcs, 300 sentences, unrelated (fragment filter rejects)", |bench| {
            bench.iter(|| lcs::compare(&a, &other, lcs::ppm(0.4), 50_000))
        });
    group.bench_function(
        "myers lcs, 300 sentences, same sentences reversed (worst case)",
        |bench| bench.iter(|| lcs::compare(&a, &shuffled, lcs::ppm(0.4), 50_000)),
    );
    // Word level: 1,200 words, one word in twelve replaced (a name in every sentence), and
    // unrelated words (the bag filter rejects).
    let words: Vec<u16> = (0..1200).map(|i| sentence::mix64(i) as u16).collect();
    let renamed: Vec<u16> =
        words.iter().enumerate().map(|(i, &w)| if i % 12 == 3 { 7 } else { w }).collect();
    let unrelated: Vec<u16> = (0..1200).map(|i| sentence::mix64(i + (1 << 40)) as u16).collect();
    group.bench_function("myers words, 1,200 words, one in twelve replaced", |bench| {
        bench.iter(|| lcs::compare_words(&words, &renamed, lcs::ppm(0.8), 50_000))
    });
    group.bench_function("myers words, 1,200 words, unrelated (bag filter rejects)", |bench| {
        bench.iter(|| lcs::compare_words(&words, &unrelated, lcs::ppm(0.8), 50_000))
    });
    group.finish();
}

/// A group's repeated blocks as one page joins a group of 255 and leaves it again (up to 256,
/// the largest counted whole, `member::BLOCK_SAMPLE`): the group's tally takes the changed
/// page's keys (`member::KeyTally`), against the baseline of counting every member's keys from
/// scratch (`member::group_blocks`) at both changes. Pages of 60 distinct sentence keys: 20
/// from a block of 40 that the group repeats, 40 their own.
fn group_blocks(c: &mut Criterion) {
    use dupflow_operators::verify::member;
    use dupflow_operators::verify::member::{BlocksChange, KeyTally, Member};
    use dupflow_operators::verify::VerifyMethod;
    use dupflow_operators::PageId;
    let member = |n: u64| {
        let shared = (0..20).map(|i| (sentence::mix64(7 + (n * 13 + i * 7) % 40), 12));
        let own = (0..40).map(|i| (sentence::mix64((n << 20) ^ (i + 1000)), 12));
        let content = Content { sentences: shared.chain(own).collect(), ..Default::default() };
        Member::new(VerifyMethod::Lcs, PageId { date: n, hash: n }, content)
    };
    let all: Vec<Member> = (0..256).map(member).collect();
    let members: Vec<&Member> = all.iter().collect();
    let before: Vec<&Member> = members[1..].to_vec();
    let mut group = c.benchmark_group("group blocks");
    group.bench_function(
        "one page joins 255 and leaves: every member's keys counted (group_blocks)",
        |bench| {
            bench.iter(|| (member::group_blocks(&members, 16), member::group_blocks(&before, 16)))
        },
    );
    let (mut blocks, mut tally) = KeyTally::count(&before, 16);
    group.bench_function("one page joins 255 and leaves: the group's tally (KeyTally)", |bench| {
        bench.iter(|| {
            for (now, ins, rem) in
                [(&members, &members[..1], &[][..]), (&before, &[][..], &members[..1])]
            {
                if let BlocksChange::Now(next) = tally.apply(&blocks, || now.to_vec(), ins, rem, 16)
                {
                    blocks = next;
                }
            }
        })
    });
    group.finish();
}

/// The map of one page's entries (`dense::DenseMap`, the holders' and groups' entries that one
/// page holds) under a feed with retention: a window of 1,000,000 keys, each step inserts a new
/// key and removes the oldest, 10,000 steps an iteration. Against the `HashMap` (with the `Mixed`
/// hash) that held these entries before.
fn dense_map(c: &mut Criterion) {
    use dupflow_operators::runtime::dense::DenseMap;
    use std::collections::HashMap;
    const WINDOW: u64 = 1_000_000;
    const STEPS: u64 = 10_000;
    let key = |i: u64| sentence::mix64(i) | 1;
    let mut group = c.benchmark_group("dense map");
    group.throughput(Throughput::Elements(STEPS));
    // Fills a window with `op(key, Some(value))` (an insertion), then times steps of inserting
    // the next key and removing the oldest (`op(key, None)`).
    let mut window = |map: &str, op: &mut dyn FnMut(u64, Option<u64>)| {
        (0..WINDOW).for_each(|i| op(key(i), Some(i)));
        let mut next = WINDOW;
        group.bench_function(
            format!("a window of 1,000,000: insert one, remove the oldest ({map})"),
            |bench| {
                bench.iter(|| {
                    for _ in 0..STEPS {
                        op(key(next), Some(next));
                        op(key(next - WINDOW), None);
                        next += 1;
                    }
                })
            },
        );
    };
    let mut dense: DenseMap<u64> = DenseMap::default();
    window("DenseMap", &mut |k, v| {
        let _ = match v {
            Some(v) => dense.insert(k, v),
            None => dense.remove(k),
        };
    });
    drop(dense);
    let mut hash: HashMap<u64, u64, sentence::Mixed> = HashMap::default();
    window("HashMap", &mut |k, v| {
        let _ = match v {
            Some(v) => hash.insert(k, v),
            None => hash.remove(&k),
        };
    });
    group.finish();
}

criterion_group!(benches, read_and_decompress, strip_and_split, verify, group_blocks, dense_map);
criterion_main!(benches);
