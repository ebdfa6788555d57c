//! Any text as HTML: strip and sentence split must never panic, and split must keep every
//! non-space character of each block.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let html = String::from_utf8_lossy(data);
    let page = dupflow_operators::ingest::html::strip(&html);
    for block in &page.blocks {
        let pieces = dupflow_operators::ingest::sentence::split(block, 80);
        let joined: String = pieces.concat().chars().filter(|c| !c.is_whitespace()).collect();
        let original: String = block.chars().filter(|c| !c.is_whitespace()).collect();
        assert_eq!(joined, original);
    }
    let _ = dupflow_operators::ingest::sentence::split_page(&page.blocks, &Default::default());
});
