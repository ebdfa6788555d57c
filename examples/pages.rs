//! Prints each HTML page of a WARC as dupflow's sentence stage sees it, one JSON object a line:
//! `{"url", "host", "main_marked", "sentences": [[normalized, units], ...]}` (before template removal), for
//! studying the method outside the dataflow.
//! `cargo run --release --example pages WARC > pages.jsonl`
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let config = dupflow_operators::ingest::sentence::SentenceConfig::default();
    for input in dupflow::source::expand(&args).expect("inputs") {
        dupflow::source::read_records(&input, 64 << 20, |item| {
            let Ok(record) = item else { return };
            if let Ok((dupflow::source::http::Outcome::Page(doc), _)) = dupflow::source::http::interpret(&record, 2 << 20) {
                let stripped = dupflow_operators::ingest::html::strip(&doc.html);
                let sentences: Vec<(String, u32)> = dupflow_operators::ingest::sentence::split_page(&stripped.blocks, &config)
                    .sentences
                    .into_iter()
                    .map(|s| (s.normalized, s.units))
                    .collect();
                let host = doc.url.split('/').nth(2).unwrap_or("").to_string();
                println!(
                    "{}",
                    serde_json::json!({ "url": doc.url, "host": host, "main_marked": stripped.main_marked, "sentences": sentences })
                );
            }
        })
        .expect("open");
    }
}
