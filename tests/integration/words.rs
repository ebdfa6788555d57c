//! The stores (`run.words`, `run.pages`): pages' words, held pages and members' contents on
//! disk, read back through a cache, and the indexes' entries of one page spilled to disk
//! (`run.spill_after`), give the clusters that the same in memory gives, at 1 and 2
//! workers and with no cache at all (every read from the file); the run says what the stores
//! hold; the files leave nothing behind.

use std::path::Path;

use crate::common::{dupflow, temp_dir};

/// Runs the fixture blog crawl with `config` and `workers`; returns clusters.jsonl and stdout.
fn run(dir: &Path, name: &str, config: &str, workers: &str) -> (String, String) {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/blog/hugo.warc.gz");
    let toml = dir.join(format!("{name}.toml"));
    std::fs::write(&toml, config).unwrap();
    let out = dir.join(name);
    let output = dupflow()
        .args(["run", "--workers", workers, "--config"])
        .arg(&toml)
        .arg("--out")
        .arg(&out)
        .arg(&fixture)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let clusters = std::fs::read_to_string(out.join("clusters.jsonl")).unwrap();
    (clusters, String::from_utf8(output.stdout).unwrap())
}

/// A store's file is unlinked as soon as it is made: the output directory holds only the
/// outputs.
fn assert_nothing_left(out: &Path) {
    let left: Vec<_> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(left.is_empty(), "{}: {left:?}", out.display());
}

#[test]
fn words_on_disk_give_the_clusters_of_words_in_memory() {
    let dir = temp_dir("words");
    let (memory, summary) = run(&dir, "memory", "[run]\nwords = \"memory\"\n", "2");
    assert!(!summary.contains("words:"), "no store without one: {summary}");
    assert!(memory.lines().count() > 100);
    for (name, config, workers) in [
        ("disk-1", "[run]\nwords = \"disk\"\n", "1"),
        ("disk-2", "[run]\nwords = \"disk\"\n", "2"),
        ("uncached", "[run]\nwords = \"disk\"\nword_cache_mb = 0\n", "2"),
    ] {
        let (clusters, summary) = run(&dir, name, config, workers);
        assert!(clusters == memory, "{name}: clusters differ from words in memory");
        let line = summary.lines().find(|l| l.starts_with("words:")).unwrap_or_else(|| {
            panic!("{name}: the summary names the store: {summary}");
        });
        assert!(line.contains("MB on disk for"), "{line}");
        if name == "uncached" {
            assert!(line.contains(" 0.0% of "), "no cache, no hit: {line}");
        }
        assert_nothing_left(&dir.join(name));
    }
}

#[test]
fn pages_on_disk_give_the_clusters_of_pages_in_memory() {
    let dir = temp_dir("pages");
    let (memory, summary) = run(&dir, "memory", "[run]\npages = \"memory\"\n", "2");
    assert!(!summary.contains("stored:"), "no store without one: {summary}");
    let held = |summary: &str| -> u64 {
        let line = summary.lines().find(|l| l.starts_with("held:")).expect("a held: line");
        let at = line.find('(').unwrap() + 1;
        line[at..].split(' ').next().unwrap().parse().unwrap()
    };
    let in_memory = held(&summary);
    for (name, config, workers) in [
        ("pages-1", "[run]\npages = \"disk\"\n", "1"),
        ("pages-2", "[run]\npages = \"disk\"\n", "2"),
        ("pages-uncached", "[run]\npages = \"disk\"\npage_cache_mb = 0\n", "2"),
    ] {
        let (clusters, summary) = run(&dir, name, config, workers);
        assert!(clusters == memory, "{name}: clusters differ from pages in memory");
        let line = summary
            .lines()
            .find(|l| l.starts_with("stored:"))
            .unwrap_or_else(|| panic!("{name}: the summary names the stores: {summary}"));
        assert!(line.contains("held pages and members' contents"), "{line}");
        if name == "pages-uncached" {
            assert!(line.contains(" 0.0% of "), "no cache, no hit: {line}");
        }
        // Held pages on disk leave memory a small entry each.
        assert!(held(&summary) * 4 < in_memory, "{name}: {} vs {in_memory}", held(&summary));
        assert_nothing_left(&dir.join(name));
    }
}

#[test]
fn spilled_sentences_give_the_clusters_of_sentences_in_memory() {
    let dir = temp_dir("spill");
    let (memory, summary) = run(&dir, "memory", "[run]\npages = \"disk\"\n", "2");
    assert!(!summary.contains("spilled:"), "under its bound nothing spills: {summary}");
    for (name, config, workers) in [
        ("spill-1", "[run]\nspill_after = 16\n", "1"),
        ("spill-2", "[run]\nspill_after = 16\n", "2"),
        ("spill-uncached", "[run]\nspill_after = 1\npage_cache_mb = 0\n", "2"),
    ] {
        let (clusters, summary) = run(&dir, name, config, workers);
        assert!(clusters == memory, "{name}: clusters differ from sentences in memory");
        let line = summary
            .lines()
            .find(|l| l.starts_with("spilled:"))
            .unwrap_or_else(|| panic!("{name}: the summary names what spilled: {summary}"));
        assert!(line.contains("entries of one page"), "{line}");
        let runs: u64 =
            line.split(" in ").nth(1).and_then(|r| r.split(' ').next()).unwrap().parse().unwrap();
        assert!(runs > 10, "{name}: {line}");
        assert_nothing_left(&dir.join(name));
    }
}

#[test]
fn validate_names_a_word_store_directory_that_is_not_one_and_an_unknown_place() {
    let dir = temp_dir("words-validate");
    for (config, named) in [
        ("[run]\nword_store_dir = \"/nonexistent/words\"\n", "run.word_store_dir"),
        ("[run]\nwords = \"tape\"\n", "tape"),
        ("[run]\npages = \"tape\"\n", "tape"),
        ("[run]\nspill_after = 0\n", "run.spill_after"),
    ] {
        let toml = dir.join("bad.toml");
        std::fs::write(&toml, config).unwrap();
        let output = dupflow().arg("validate").arg(&toml).output().unwrap();
        assert!(!output.status.success(), "{config}");
        let text = String::from_utf8_lossy(&output.stderr).into_owned()
            + &String::from_utf8_lossy(&output.stdout);
        assert!(text.contains(named), "{config}: {text}");
    }
}
