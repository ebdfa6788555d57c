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

/// A run's stores, spill and footprint are its own: two runs at once in this process, one
/// with everything on disk and one in memory, write the clusters that two processes write.
#[test]
fn two_runs_at_once_in_one_process_give_the_clusters_of_two_processes() {
    use dupflow::config::PipelineConfig;
    use dupflow::dataflow::{self, Feed, RunOptions};
    use dupflow::source::Input;

    let dir = temp_dir("two-runs");
    let disk = "[run]\nwords = \"disk\"\npages = \"disk\"\nspill_after = 16\npage_cache_mb = 0\n";
    let memory = "[run]\nwords = \"memory\"\npages = \"memory\"\n";
    let (by_process, _) = run(&dir, "process-memory", memory, "2");
    let (by_process_disk, _) = run(&dir, "process-disk", disk, "2");
    assert!(by_process == by_process_disk, "the stores change no cluster");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/blog/hugo.warc.gz");
    let runs: Vec<_> = [("thread-memory", memory), ("thread-disk", disk)]
        .into_iter()
        .map(|(name, toml)| {
            let (out, fixture) = (dir.join(name), fixture.clone());
            std::thread::spawn(move || {
                let config = PipelineConfig::parse(toml, "the test").unwrap();
                let feed = Feed::Inputs(vec![Input::File(fixture)]);
                let mut options = RunOptions::new(feed, config, 2);
                options.out = Some(out.clone());
                let output = dataflow::run(options).expect("the run completes");
                let rows: Vec<_> = output.rows.iter().collect();
                dupflow::sink::write_clusters(&out.join("clusters.jsonl"), &rows).unwrap();
                (out, output)
            })
        })
        .collect();
    let outputs: Vec<_> = runs.into_iter().map(|run| run.join().unwrap()).collect();
    for (out, _) in &outputs {
        let clusters = std::fs::read_to_string(out.join("clusters.jsonl")).unwrap();
        assert!(clusters == by_process, "{}: clusters differ from a process's", out.display());
        assert_nothing_left(out);
    }
    let (memory, disk) = (&outputs[0].1, &outputs[1].1);
    assert!(memory.word_store.is_none() && memory.page_store.is_none());
    assert!(disk.word_store.is_some_and(|s| s.pages > 0), "the disk run's words are its own");
    assert!(disk.page_store.is_some_and(|s| s.pages > 0));
    // Each run's footprint is its own: the members of the run whose contents are on disk hold
    // less than the members of the run that holds them.
    use dupflow_operators::runtime::footprint::Structure;
    let members = |o: &dupflow::types::RunOutput| o.footprint.at_end(Structure::Members);
    assert!(
        members(disk) > 0 && members(disk) < members(memory),
        "{} vs {}",
        members(disk),
        members(memory)
    );
}
