//! The docs cannot drift from the program: the README's quick start runs as written (on the
//! embedded sample), every `--flag` that README.md and docs/ give a dupflow command exists in
//! that command, the README stays a user's page of at most 300 lines, and the project speaks in
//! the present tense (no work periods or issue numbers in docs, code, tests or benches).

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{dupflow, temp_dir};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// README.md and every file of docs/, by name.
fn docs() -> BTreeMap<String, String> {
    let mut docs = BTreeMap::from([("README.md".to_string(), read(&root().join("README.md")))]);
    for entry in std::fs::read_dir(root().join("docs")).unwrap().flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "md") {
            docs.insert(format!("docs/{}", entry.file_name().to_string_lossy()), read(&path));
        }
    }
    docs
}

/// The lines of the fenced code blocks of `text` (from `from`'s heading to the next `## `).
fn code_lines(text: &str, section: Option<&str>) -> Vec<String> {
    let mut lines = Vec::new();
    let (mut inside, mut fence) = (section.is_none(), false);
    for line in text.lines() {
        if let Some(section) = section {
            if line.starts_with("## ") {
                inside = line.trim_start_matches("## ").starts_with(section);
            }
        }
        if line.starts_with("```") {
            fence = !fence;
            continue;
        }
        if inside && fence {
            lines.push(line.to_string());
        }
    }
    lines
}

/// A shell line without its trailing comment.
fn command_of(line: &str) -> String {
    match line.find("  #") {
        Some(at) => line[..at].trim().to_string(),
        None => line.trim().to_string(),
    }
}

fn has(tool: &str) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {tool}"))
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn the_readme_quick_start_runs_as_written() {
    let dir = temp_dir("quick-start");
    std::fs::create_dir_all(dir.join("crawl")).unwrap();
    std::fs::copy(root().join("fixtures/default.warc.gz"), dir.join("crawl/sample.warc.gz"))
        .unwrap();
    let lines = code_lines(&read(&root().join("README.md")), Some("Quick start"));
    assert!(
        lines.iter().any(|l| l.starts_with("dupflow run")),
        "the quick start runs dupflow: {lines:?}"
    );
    let bin = env!("CARGO_BIN_EXE_dupflow");
    let mut ran = 0;
    // A URL of the sample in a cluster of several pages, for the line that asks for one.
    let mut sample_url = None;
    for line in lines.iter().map(|l| command_of(l)).filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        if line.starts_with("dupflow run --follow") {
            // A crawl being written: runs until stopped; Ctrl-C (SIGINT) stops it cleanly.
            let args: Vec<&str> = line.split_whitespace().skip(1).collect();
            let mut child = Command::new(bin)
                .args(&args)
                .current_dir(&dir)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let started = Instant::now();
            while !dir.join("out/changes.jsonl").exists()
                && started.elapsed() < Duration::from_secs(30)
            {
                std::thread::sleep(Duration::from_millis(50));
            }
            std::thread::sleep(Duration::from_millis(1500));
            assert!(Command::new("kill")
                .arg("-INT")
                .arg(child.id().to_string())
                .status()
                .unwrap()
                .success());
            let status = child.wait().unwrap();
            assert!(status.success(), "{line}: a stopped follower exits 0, got {status}");
            assert!(
                dir.join("state/checkpoint.json").exists(),
                "{line}: the checkpoint is written"
            );
            ran += 1;
            continue;
        }
        if let Some(rest) = line.strip_prefix("dupflow ") {
            let out = Command::new("sh")
                .arg("-c")
                .arg(format!("'{bin}' {rest}"))
                .current_dir(&dir)
                .output()
                .unwrap();
            assert!(out.status.success(), "{line}: {}", String::from_utf8_lossy(&out.stderr));
            ran += 1;
            continue;
        }
        if line.contains("jq ") || line.starts_with("c=") {
            if !has("jq") {
                common::skip(
                    "a README jq line",
                    &format!("jq is not installed; not running `{line}`"),
                );
                continue;
            }
            let url = sample_url.get_or_insert_with(|| {
                let text = read(&dir.join("out/clusters.jsonl"));
                text.lines()
                    .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
                    .find(|v| v["size"].as_u64().unwrap() > 1)
                    .map(|v| v["url"].as_str().unwrap().to_string())
                    .expect("the sample has a cluster of several pages")
            });
            let script = line.replace("https://example.org/a", url);
            // The two lines of one example (a variable, then its use) run together.
            let script = if script.starts_with("c=") {
                script
            } else {
                format!("c=$(jq -r 'select(.url == \"{url}\") | .cluster' out/clusters.jsonl); {script}")
            };
            let out = Command::new("bash")
                .arg("-c")
                .arg(format!("set -o pipefail; {script}"))
                .current_dir(&dir)
                .output()
                .unwrap();
            assert!(out.status.success(), "{line}: {}", String::from_utf8_lossy(&out.stderr));
            if !line.starts_with("c=") {
                assert!(!out.stdout.is_empty(), "{line}: prints something on the sample");
            }
            ran += 1;
            continue;
        }
        panic!("a quick-start line this test does not know how to run: {line}");
    }
    assert!(ran >= 3, "ran {ran} lines");
    for file in [
        "out/clusters.jsonl",
        "out/changes.jsonl",
        "deduped/removed.jsonl",
        "deduped/sample.warc.gz",
    ] {
        assert!(dir.join(file).exists(), "{file} is written");
    }
}

/// Every long flag of each dupflow command, from its `--help`.
fn cli_flags() -> BTreeMap<String, BTreeSet<String>> {
    let help =
        |args: &[&str]| String::from_utf8(dupflow().args(args).output().unwrap().stdout).unwrap();
    let flags_of = |text: &str| -> BTreeSet<String> {
        text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .filter(|w| w.starts_with("--") && w.len() > 2)
            .map(str::to_string)
            .collect()
    };
    let top = help(&["--help"]);
    let mut commands = BTreeMap::new();
    let mut in_commands = false;
    for line in top.lines() {
        if line.starts_with("Commands:") {
            in_commands = true;
            continue;
        }
        if in_commands {
            match line.split_whitespace().next() {
                Some(name) if line.starts_with("  ") && !line.starts_with("   ") => {
                    commands.insert(name.to_string(), flags_of(&help(&[name, "--help"])));
                }
                _ if !line.starts_with(' ') => in_commands = false,
                _ => {}
            }
        }
    }
    assert!(commands.contains_key("run") && commands.contains_key("dedup"), "{commands:?}");
    commands
}

#[test]
fn every_flag_the_docs_give_a_dupflow_command_exists() {
    let commands = cli_flags();
    let all: BTreeSet<&String> = commands.values().flatten().collect();
    let mut wrong = Vec::new();
    for (name, text) in docs() {
        // Code lines and inline code that run dupflow: each flag must be its command's.
        let inline = text
            .split('`')
            .skip(1)
            .step_by(2)
            .filter(|s| s.starts_with("dupflow "))
            .map(str::to_string);
        for line in code_lines(&text, None).into_iter().chain(inline) {
            let words: Vec<&str> = line.split_whitespace().collect();
            let Some(at) = words.iter().position(|w| *w == "dupflow" || w.ends_with("/dupflow"))
            else {
                continue;
            };
            let Some(command) = words.get(at + 1).filter(|c| commands.contains_key(**c)) else {
                continue;
            };
            for word in &words[at + 2..] {
                if word.starts_with('#') || *word == "|" || *word == ">" || *word == "&&" {
                    break;
                }
                let flag = word.trim_start_matches('[').split(['=', ']', '|']).next().unwrap_or("");
                if flag.starts_with("--") && flag.len() > 2 && !commands[*command].contains(flag) {
                    wrong.push(format!("{name}: `dupflow {command}` has no {flag}: {line}"));
                }
            }
        }
        // Flags named in prose (`--follow`): each must be some command's, or another tool's that
        // the docs name.
        let others = [
            "--workspace",
            "--locked",
            "--release",
            "--test",
            "--nocapture",
            "--bench",
            "--profile",
            "--features",
            "--all-targets",
            "--all",
            "--path",
            "--rounds",
            "--parts",
            "--write",
            "--recursive",
            "--warc-file",
            "--warc-max-size",
            "--minutes",
            "--share",
            "--rate",
            "--rating",
            "--rating-probe",
            "--over",
            "--guess",
            "--window",
            "--epoch-ms",
            "--pages",
            "--stream",
            "--check",
            "--tokens",
            "--help",
        ];
        for span in text.split('`').skip(1).step_by(2) {
            let span = span.trim();
            if span.starts_with("--") && !span.contains(' ') {
                let flag = span.split(['=', '[']).next().unwrap();
                if !all.contains(&flag.to_string()) && !others.contains(&flag) {
                    wrong.push(format!("{name}: `{span}` is no dupflow flag"));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "flags the docs name that the CLI does not have:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_readme_is_a_users_page_with_every_topic_one_link_away() {
    let readme = read(&root().join("README.md"));
    assert!(readme.lines().count() <= 300, "README.md has {} lines", readme.lines().count());
    let lines: Vec<&str> = readme.lines().collect();
    assert_eq!(
        lines.iter().position(|l| *l == "## Two commands"),
        lines.iter().position(|l| l.starts_with("## ")),
        "the two commands come first"
    );
    for doc in docs().keys().filter(|d| d.starts_with("docs/")) {
        assert!(readme.contains(&format!("({doc})")), "README.md links {doc}");
    }
    // Every relative link of the docs resolves.
    for (name, text) in docs() {
        let base = root().join(&name).parent().unwrap().to_path_buf();
        for part in text.split("](").skip(1) {
            let target = part.split(')').next().unwrap().split('#').next().unwrap();
            if target.is_empty() || target.starts_with("http") {
                continue;
            }
            assert!(base.join(target).exists(), "{name}: the link {target} resolves");
        }
    }
}

/// `word` as a whole word in `line`, case-insensitive.
fn has_word(line: &str, word: &str) -> bool {
    let lower = line.to_lowercase();
    lower.match_indices(word).any(|(at, _)| {
        let before = lower[..at].chars().next_back();
        let after = lower[at + word.len()..].chars().next();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
            && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().to_string();
        if path.is_dir() {
            if !["target", "node_modules", "__pycache__", "proptest-regressions"]
                .contains(&name.as_str())
            {
                walk(&path, out);
            }
        } else if ["rs", "md", "py", "sh", "toml", "pyi", "html", "cc"]
            .iter()
            .any(|e| name.ends_with(&format!(".{e}")))
        {
            out.push(path);
        }
    }
}

#[test]
fn the_project_speaks_in_the_present_tense() {
    let mut files = vec![root().join("README.md")];
    for dir in
        ["docs", "src", "operators/src", "benches", "tests", "python", "examples", "fixtures"]
    {
        walk(&root().join(dir), &mut files);
    }
    // The words sought, spelt here in pieces so that this file does not hold them.
    let (one, many) = (["ses", "sion"].concat(), ["ses", "sions"].concat());
    let mut found = Vec::new();
    for file in &files {
        let Ok(text) = std::fs::read_to_string(file) else { continue };
        for (n, line) in text.lines().enumerate() {
            // timely's API names (an output's method that gives its data a time, the handle it gives,
            // an `InputSession`) are not history: they are taken out before the words are sought.
            let mut plain = line.to_string();
            for api in [".X(", "X.give", "let mut X", "drop(X)"] {
                plain = plain.replace(&api.replace('X', &one), "");
            }
            let issue = plain
                .to_lowercase()
                .match_indices(["iss", "ue "].concat().as_str())
                .any(|(at, w)| plain[at + w.len()..].starts_with(|c: char| c.is_ascii_digit()));
            if has_word(&plain, &one) || has_word(&plain, &many) || issue {
                found.push(format!(
                    "{}:{}: {}",
                    file.strip_prefix(root()).unwrap().display(),
                    n + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(
        found.is_empty(),
        "history in the project's text (it belongs in CHANGELOG.md or git log):\n{}",
        found.join("\n")
    );
}
